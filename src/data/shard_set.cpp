// ShardSet and the prepare commit (shard_set.h).
#include "data/shard_set.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.h"
#include "data/shard_manifest.h"

namespace trt {

namespace {
constexpr int64_t kMaxShardTokens = std::numeric_limits<int32_t>::max();  // the header's count
constexpr int kMaxShards = 1000000;  // six digits
constexpr int64_t kHeaderBytes = 1024;

// What a prepare writes into its folder (besides the lock): its temporary files' final names.
bool prepare_output(const std::string& name) {
    return is_prepared_shard_name(name) || name == kShardManifestFile;
}
}  // namespace

struct ShardSet::File {
    std::string path;
    AtomicFile file;
    int64_t count = 0;
    explicit File(const std::string& p) : path(p), file(p) {}
};

ShardSet::ShardSet(const std::string& dir, const std::string& name, int token_bytes,
                   int64_t shard_tokens)
    : dir_(dir), name_(name), token_bytes_(token_bytes), shard_tokens_(shard_tokens) {
    if (shard_tokens < 0 || shard_tokens > kMaxShardTokens)
        fail(Status::InvalidArgument, "prepare: shard_tokens = ", shard_tokens, " is outside [0, ",
             kMaxShardTokens, "] (0 = one file per split)");
    if (token_bytes != 2 && token_bytes != 4)
        fail(Status::InvalidArgument, "prepare: token_bytes must be 2 or 4, got ", token_bytes);
    open_next();
}

ShardSet::~ShardSet() = default;

void ShardSet::open_next() {
    std::string file = name_ + ".bin";
    if (shard_tokens_ > 0) {
        if (static_cast<int>(files_.size()) >= kMaxShards)
            fail(Status::InvalidArgument, "prepare: more than ", kMaxShards, " ", name_,
                 " shards; give a larger shard size");
        char suffix[32];
        std::snprintf(suffix, sizeof suffix, "_%06d.bin", static_cast<int>(files_.size()));
        file = name_ + suffix;
    }
    files_.push_back(std::make_unique<File>(path_join(dir_, file)));
    const int32_t header[256] = {};
    files_.back()->file.write(header, sizeof header);
}

void ShardSet::append(const uint32_t* ids, size_t count) {
    const int64_t limit = shard_tokens_ > 0 ? shard_tokens_ : kMaxShardTokens;
    size_t done = 0;
    while (done < count) {
        File& f = *files_.back();
        if (f.count == limit) {
            if (shard_tokens_ == 0)
                fail(Status::InvalidArgument, "prepare: '", f.path, "' would hold more than "
                     "2^31 - 1 tokens (one shard's limit); give a shard size (trainrt prepare "
                     "--shard-tokens N, options.shard_tokens) to write numbered shards");
            open_next();
            continue;
        }
        const size_t n = static_cast<size_t>(
            std::min<int64_t>(limit - f.count, static_cast<int64_t>(count - done)));
        if (token_bytes_ == 4) {
            f.file.write(ids + done, n * 4);
        } else {
            narrow_.assign(ids + done, ids + done + n);  // every id fits (the caller's width)
            f.file.write(narrow_.data(), n * 2);
        }
        f.count += static_cast<int64_t>(n);
        total_ += static_cast<int64_t>(n);
        done += n;
    }
}

std::vector<std::string> ShardSet::names() const {
    std::vector<std::string> out;
    for (const auto& f : files_) out.push_back(std::filesystem::path(f->path).filename().string());
    return out;
}

std::vector<int64_t> ShardSet::counts() const {
    std::vector<int64_t> out;
    for (const auto& f : files_) out.push_back(f->count);
    return out;
}

void ShardSet::finish() {
    for (auto& f : files_) {
        const int32_t header[3] = {token_bytes_ == 2 ? 20240520 : 20240801,
                                   token_bytes_ == 2 ? 1 : 7, static_cast<int32_t>(f->count)};
        f->file.write_at(0, header, sizeof header);
        f->file.close_synced();
    }
}

std::unique_ptr<DirLock> open_prepare_folder(const std::string& dir) {
    auto lock = std::make_unique<DirLock>(
        dir, "prepare out_dir",
        "Two prepares into one folder would mix their shards, or leave one run's tokens "
        "under the other's report of success",
        LockFile::Remove);
    remove_orphan_temps(dir, prepare_output);
    return lock;
}

void commit_prepared(const std::string& dir, const std::vector<ShardSet*>& sets,
                     const tok::TokenizerIdentity& tokenizer,
                     const std::function<void(const std::string&)>& before_rename) {
    ShardManifest m;
    m.tokenizer = tokenizer;
    std::set<std::string> mine;
    for (ShardSet* s : sets) {
        s->finish();
        m.token_bytes = s->token_bytes_;
        for (const auto& f : s->files_) {
            const std::string name = std::filesystem::path(f->path).filename().string();
            m.shards.push_back({name, s->name_, f->count,
                                static_cast<uint64_t>(kHeaderBytes + f->count * s->token_bytes_)});
            mine.insert(name);
        }
    }
    // From here until the last step the folder is marked unfinished.
    write_shard_manifest(dir, m);
    for (ShardSet* s : sets)
        for (auto& f : s->files_) {
            if (before_rename) before_rename(std::filesystem::path(f->path).filename().string());
            f->file.commit();
        }
    // Shards an earlier run wrote and this one did not (another shard size, or numbered
    // shards then and one file now): a glob over the folder must find this run's only.
    bool removed = false;
    for (const DirEntry& e : list_dir(dir)) {
        if (e.kind == PathKind::Directory || !is_prepared_shard_name(e.name) || mine.count(e.name))
            continue;
        const std::string path = path_join(dir, e.name);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            fail(Status::Io, "prepare: cannot remove '", path, "', a shard of an earlier run: ",
                 std::strerror(errno));
        removed = true;
    }
    if (removed) fsync_dir(dir);
    m.complete = true;
    write_shard_manifest(dir, m);
}

}  // namespace trt
