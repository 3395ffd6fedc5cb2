// ShardSet (shard_set.h).
#include "data/shard_set.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <regex>

#include "core/error.h"

namespace trt {

namespace {
constexpr int64_t kMaxShardTokens = std::numeric_limits<int32_t>::max();  // the header's count
constexpr int kMaxShards = 1000000;  // six digits
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

void ShardSet::append(const std::vector<uint32_t>& ids) {
    const int64_t limit = shard_tokens_ > 0 ? shard_tokens_ : kMaxShardTokens;
    size_t done = 0;
    while (done < ids.size()) {
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
            std::min<int64_t>(limit - f.count, static_cast<int64_t>(ids.size() - done)));
        if (token_bytes_ == 4) {
            f.file.write(ids.data() + done, n * 4);
        } else {
            narrow_.assign(ids.begin() + static_cast<std::ptrdiff_t>(done),
                           ids.begin() + static_cast<std::ptrdiff_t>(done + n));
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

void ShardSet::commit() {
    for (auto& f : files_) {
        const int32_t header[3] = {token_bytes_ == 2 ? 20240520 : 20240801,
                                   token_bytes_ == 2 ? 1 : 7, static_cast<int32_t>(f->count)};
        f->file.write_at(0, header, sizeof header);
        f->file.commit();
    }
    // Shards of this split that an earlier run wrote and this one did not.
    const std::vector<std::string> mine = names();
    const std::regex ours(name_ + R"((_[0-9]{6})?\.bin)");  // name_: "train" or "val"
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
        const std::string n = e.path().filename().string();
        if (std::regex_match(n, ours) && std::find(mine.begin(), mine.end(), n) == mine.end())
            std::filesystem::remove(e.path(), ec);
    }
}

}  // namespace trt
