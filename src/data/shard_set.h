// The token shards of one split (train or val) as prepare writes them, in llm.c's format
// (a 1 KiB header, then uint16 or uint32 ids): one file NAME.bin, or with shard_tokens > 0
// NAME_000000.bin, NAME_000001.bin, ... of at most shard_tokens ids each (a document may run
// on into the next shard, as in llm.c's own shards). Every file is written under a temporary
// name and renamed by commit(); an error before that leaves no shard. commit() also removes
// this split's shards of an earlier run that this one did not write (NAME.bin, NAME_*.bin),
// so a glob over the folder finds this run's shards only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/fs_util.h"

namespace trt {

class ShardSet {
public:
    // token_bytes: 2 or 4. shard_tokens: 0 (one file) or 1 .. 2^31 - 1.
    ShardSet(const std::string& dir, const std::string& name, int token_bytes,
             int64_t shard_tokens);
    ShardSet(const ShardSet&) = delete;
    ShardSet& operator=(const ShardSet&) = delete;
    ~ShardSet();

    void append(const std::vector<uint32_t>& ids);
    void append_one(uint32_t id) { append(std::vector<uint32_t>{id}); }
    int64_t count() const { return total_; }
    int shards() const { return static_cast<int>(files_.size()); }
    // Each file's name, in order.
    std::vector<std::string> names() const;
    void commit();

private:
    struct File;
    void open_next();

    std::string dir_, name_;
    int token_bytes_;
    int64_t shard_tokens_;
    int64_t total_ = 0;
    std::vector<std::unique_ptr<File>> files_;
    std::vector<uint16_t> narrow_;
};

}  // namespace trt
