// TokenDataset: llm.c token shards (docs/FORMATS.md §1), memory-mapped and fully validated.
// A dataset is one shard path or a glob of them, taken in sorted path order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trt {

class TokenDataset {
public:
    // pattern: a path or a glob ("data/train_*.bin"). Validates header, size and every token
    // id < vocab_size. Throws Error(Io) (missing/unreadable; no match for a glob) or
    // Error(Format) naming the file and byte offset of the fault. too_large_advice: what an
    // id >= vocab_size error tells the reader to do ("" = raise model.vocab_size or
    // re-tokenize; a caller whose vocabulary is fixed says otherwise).
    static TokenDataset open(const std::string& pattern, int64_t vocab_size,
                             const std::string& too_large_advice = "");

    TokenDataset();
    TokenDataset(TokenDataset&&) noexcept;
    TokenDataset& operator=(TokenDataset&&) noexcept;
    ~TokenDataset();

    size_t num_shards() const;
    const std::string& shard_path(size_t shard) const;
    int64_t shard_tokens(size_t shard) const;
    int64_t total_tokens() const;
    // out[i] = token (shard, offset + i), i < n; the range must lie inside the shard.
    void copy_tokens(size_t shard, int64_t offset, int64_t n, int32_t* out) const;
    // The same as uint16 (for a resident copy); every id must be < 65536 — true whenever
    // the dataset was opened with vocab_size <= 65536. Throws Error(InvalidArgument) if not.
    void copy_tokens_u16(size_t shard, int64_t offset, int64_t n, uint16_t* out) const;

private:
    void check_range(const char* what, size_t shard, int64_t offset, int64_t n,
                     const void* out) const;
    struct Shard;
    std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace trt
