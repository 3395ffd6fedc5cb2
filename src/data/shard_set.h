// The token shards of one split (train or val) as prepare writes them, in llm.c's format
// (a 1 KiB header, then uint16 or uint32 ids): one file NAME.bin, or with shard_tokens > 0
// NAME_000000.bin, NAME_000001.bin, ... of at most shard_tokens ids each (a document may run
// on into the next shard, as in llm.c's own shards). Every file is written under a temporary
// name of its own (io/fs_util.h) and only commit_prepared() gives the splits' files their
// names, as one set: an error before that leaves no shard.
//
// A prepare holds its folder for its whole run (open_prepare_folder: the folder's lock, and
// the temporary files of an earlier, killed prepare removed) and commits both splits with
// commit_prepared(), which keeps prepare.json (data/shard_manifest.h) so that readers of a
// glob never take an unfinished or mixed set of shards for a whole one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/dir_lock.h"
#include "io/fs_util.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {

class ShardSet {
public:
    // token_bytes: 2 or 4. shard_tokens: 0 (one file) or 1 .. 2^31 - 1.
    ShardSet(const std::string& dir, const std::string& name, int token_bytes,
             int64_t shard_tokens);
    ShardSet(const ShardSet&) = delete;
    ShardSet& operator=(const ShardSet&) = delete;
    ~ShardSet();

    void append(const uint32_t* ids, size_t n);
    void append(const std::vector<uint32_t>& ids) { append(ids.data(), ids.size()); }
    void append_one(uint32_t id) { append(&id, 1); }
    int64_t count() const { return total_; }
    int shards() const { return static_cast<int>(files_.size()); }
    const std::string& name() const { return name_; }
    int token_bytes() const { return token_bytes_; }
    // Each file's name, in order.
    std::vector<std::string> names() const;
    // Each file's token count, in order.
    std::vector<int64_t> counts() const;

private:
    friend void commit_prepared(const std::string&, const std::vector<ShardSet*>&,
                                const tok::TokenizerIdentity&,
                                const std::function<void(const std::string&)>&);
    struct File;
    void open_next();
    void finish();  // headers written, files fsynced and closed (not yet renamed)

    std::string dir_, name_;
    int token_bytes_;
    int64_t shard_tokens_;
    int64_t total_ = 0;
    std::vector<std::unique_ptr<File>> files_;
    std::vector<uint16_t> narrow_;
};

// Takes dir's lock for a prepare (Error(Busy) naming the folder and the run that holds it)
// and removes the temporary files an earlier prepare left there when it was killed.
std::unique_ptr<DirLock> open_prepare_folder(const std::string& dir);

// Publishes the sets' shards in dir as one set (all sets share dir and token width), made
// with `tokenizer` (recorded in prepare.json):
//   1. every file is made durable under its temporary name;
//   2. prepare.json is written with "complete": false, listing the new set (it replaces the
//      old manifest in one step, before any old shard is replaced);
//   3. each file is renamed to its name (before_rename(name) first: a test hook);
//   4. prepare-named shards of an earlier run that this set does not hold are removed;
//   5. prepare.json is written with "complete": true.
// A kill before step 2 leaves the folder as it was (and orphan temporary files); after it,
// readers refuse the folder until a prepare finishes there.
void commit_prepared(const std::string& dir, const std::vector<ShardSet*>& sets,
                     const tok::TokenizerIdentity& tokenizer,
                     const std::function<void(const std::string&)>& before_rename = {});

}  // namespace trt
