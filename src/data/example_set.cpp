// ExampleSet: token shards + loss-mask shards -> examples (data/example_set.h).
#include "data/example_set.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/error.h"
#include "io/fs_util.h"

namespace trt {

namespace {

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

std::string file_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string mask_shard_path(const std::string& token_shard) {
    const size_t slash = token_shard.find_last_of('/');
    if (slash == std::string::npos) return "mask_" + token_shard;
    return path_join(token_shard.substr(0, slash), "mask_" + file_name(token_shard));
}

bool has_loss_masks(const TokenDataset& tokens) {
    size_t with = 0;
    std::string missing;
    for (size_t s = 0; s < tokens.num_shards(); ++s) {
        const std::string m = mask_shard_path(tokens.shard_path(s));
        if (file_exists(m)) ++with;
        else if (missing.empty()) missing = m;
    }
    if (with != 0 && with != tokens.num_shards())
        fail(Status::Format, "the dataset's shards are partly prepared with loss masks: '",
             missing, "' is missing beside its shard, while other shards have theirs; run "
             "`trainrt prepare --chat` into the folder again");
    return with != 0;
}

ExampleSet ExampleSet::open(const TokenDataset& tokens, int64_t max_tokens) {
    ExampleSet set;
    set.tokens_ = &tokens;
    int64_t start = 0;
    for (size_t s = 0; s < tokens.num_shards(); ++s) {
        const std::string path = mask_shard_path(tokens.shard_path(s));
        // Values 0..3 only (kMaskTarget | kMaskBegins): TokenDataset checks each against 4.
        set.masks_.push_back(TokenDataset::open(
            path, 4, "prepare the data again with `trainrt prepare --chat`"));
        if (set.masks_.back().total_tokens() != tokens.shard_tokens(s))
            fail(Status::Format, "'", path, "' holds ", set.masks_.back().total_tokens(),
                 " mask values, but its token shard '", tokens.shard_path(s), "' holds ",
                 tokens.shard_tokens(s), " tokens; run `trainrt prepare --chat` again");
        set.shard_start_.push_back(start);
        start += tokens.shard_tokens(s);
    }
    // One pass over the masks, a block at a time: an example runs from a kMaskBegins token to
    // the next one (or the end).
    std::vector<int32_t> block(size_t(1) << 16);
    Example cur;
    bool open_example = false;
    auto close = [&](int64_t end) {
        if (!open_example) return;
        const int64_t len = end - cur.begin;
        if (len > max_tokens) {
            // The cut example's count is of the targets it keeps.
            std::vector<int32_t> ids(static_cast<size_t>(max_tokens));
            std::vector<uint8_t> mask(static_cast<size_t>(max_tokens));
            set.read(cur.begin, static_cast<int32_t>(max_tokens), ids.data(), mask.data());
            cur.targets = static_cast<int32_t>(
                std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m & kMaskTarget; }));
            cur.length = static_cast<int32_t>(max_tokens);
            ++set.truncated_;
        } else {
            cur.length = static_cast<int32_t>(len);
        }
        if (cur.targets == 0) ++set.dropped_;
        else set.examples_.push_back(cur);
        open_example = false;
    };
    for (size_t s = 0; s < set.masks_.size(); ++s) {
        const int64_t n = set.masks_[s].total_tokens();
        for (int64_t off = 0; off < n; off += static_cast<int64_t>(block.size())) {
            const int64_t len = std::min<int64_t>(n - off, static_cast<int64_t>(block.size()));
            set.masks_[s].copy_tokens(0, off, len, block.data());
            for (int64_t i = 0; i < len; ++i) {
                const uint32_t m = static_cast<uint32_t>(block[static_cast<size_t>(i)]);
                const int64_t pos = set.shard_start_[s] + off + i;
                if (m & kMaskBegins) {
                    if (m & kMaskTarget)
                        fail(Status::Format, "'", set.masks_[s].shard_path(0), "': the token at ",
                             off + i, " both begins an example and is a target (an example's "
                             "first token has nothing before it to predict it from); run "
                             "`trainrt prepare --chat` again");
                    close(pos);
                    cur = Example{pos, 0, 0};
                    open_example = true;
                } else if (!open_example) {
                    fail(Status::Format, "'", set.masks_[s].shard_path(0), "': the first token "
                         "does not begin an example (mask value ", m, " at 0); the file is not "
                         "a loss mask `trainrt prepare --chat` wrote");
                } else if (m & kMaskTarget) {
                    // Counted while within the row's length; a cut example recounts in close.
                    ++cur.targets;
                }
            }
        }
    }
    close(start);
    if (set.examples_.empty())
        fail(Status::Config, "the dataset '", tokens.num_shards() ? tokens.shard_path(0) : "",
             "' has no example with a target to train on (", set.dropped_, " examples have "
             "none: check the loss-mask choice of `trainrt prepare --chat`)");
    return set;
}

void ExampleSet::read(int64_t begin, int32_t n, int32_t* ids, uint8_t* mask) const {
    std::vector<int32_t> m(static_cast<size_t>(n));
    int32_t done = 0;
    while (done < n) {
        const int64_t pos = begin + done;
        // The shard holding pos: the last one starting at or before it.
        const size_t s = static_cast<size_t>(
            std::upper_bound(shard_start_.begin(), shard_start_.end(), pos) -
            shard_start_.begin() - 1);
        const int64_t off = pos - shard_start_[s];
        const int32_t len = static_cast<int32_t>(
            std::min<int64_t>(n - done, tokens_->shard_tokens(s) - off));
        if (len <= 0) fail(Status::Internal, "ExampleSet::read past the end of the data");
        tokens_->copy_tokens(s, off, len, ids + done);
        masks_[s].copy_tokens(0, off, len, m.data() + done);
        done += len;
    }
    for (int32_t i = 0; i < n; ++i) mask[i] = static_cast<uint8_t>(m[static_cast<size_t>(i)]);
}

}  // namespace trt
