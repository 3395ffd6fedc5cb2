// prepare: byte-level tokenization into llm.c shards, written atomically.
#include "data/prepare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "data/shard_set.h"
#include "io/fs_util.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {

namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian; a big-endian host would need byte swapping"
#endif

// The most text one prepare reads: one token per byte, and a shard holds < 2^31 tokens.
constexpr size_t kMaxTextBytes = static_cast<size_t>(std::numeric_limits<int32_t>::max());

// The text file's bytes; read_small_file refuses devices and FIFOs before reading.
std::string read_text(const std::string& path) {
    try {
        return read_small_file(path, kMaxTextBytes);
    } catch (const Error& e) {
        if (e.status() != Status::Format) throw;
        fail(Status::InvalidArgument, "prepare: text file '", path, "' has more than ",
             kMaxTextBytes, " bytes; a shard holds fewer than 2^31 tokens");
    }
}

}  // namespace

void write_shard(const std::string& path, const uint32_t* tokens, int64_t n, int token_bytes) {
    if (token_bytes != 2 && token_bytes != 4)
        fail(Status::InvalidArgument, "write_shard '", path, "': token_bytes must be 2 or 4, got ",
             token_bytes);
    if (n < 0 || n > std::numeric_limits<int32_t>::max())
        fail(Status::InvalidArgument, "write_shard '", path, "': token count ", n,
             " out of range [0, 2^31)");
    if (n > 0 && tokens == nullptr)
        fail(Status::InvalidArgument, "write_shard '", path, "': null tokens");
    if (token_bytes == 2) {
        for (int64_t i = 0; i < n; ++i)
            if (tokens[i] > 0xffffu)
                fail(Status::InvalidArgument, "write_shard '", path, "': token ", i, " has id ",
                     tokens[i], ", which does not fit uint16; write a uint32 shard (token_bytes 4)");
    }

    int32_t header[256] = {};
    header[0] = token_bytes == 2 ? 20240520 : 20240801;
    header[1] = token_bytes == 2 ? 1 : 7;
    header[2] = static_cast<int32_t>(n);

    // A temporary file, fsync, rename, fsync the folder; a failure removes the partial file.
    AtomicFile file(path);
    file.write(header, sizeof header);
    if (token_bytes == 4) {
        file.write(tokens, static_cast<size_t>(n) * 4);
    } else {
        // Narrow to uint16 in bounded chunks.
        std::vector<uint16_t> chunk;
        constexpr int64_t kChunk = int64_t{1} << 20;
        for (int64_t begin = 0; begin < n; begin += kChunk) {
            const int64_t m = std::min(kChunk, n - begin);
            chunk.resize(static_cast<size_t>(m));
            for (int64_t i = 0; i < m; ++i) chunk[i] = static_cast<uint16_t>(tokens[begin + i]);
            file.write(chunk.data(), static_cast<size_t>(m) * 2);
        }
    }
    file.commit();
}

PrepareResult prepare_bytes(const std::string& text_path, const std::string& out_dir,
                            double val_fraction) {
    if (!(val_fraction >= 0.0 && val_fraction <= 1.0))  // also rejects NaN
        fail(Status::InvalidArgument, "prepare: val_fraction must be in [0, 1], got ",
             val_fraction);
    const std::string text = read_text(text_path);
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(text.data());
    const int64_t n = static_cast<int64_t>(text.size());
    if (n == 0) fail(Status::InvalidArgument, "prepare: text file '", text_path, "' is empty");
    if (n > std::numeric_limits<int32_t>::max())
        fail(Status::InvalidArgument, "prepare: text file '", text_path, "' has ", n,
             " bytes; a shard holds fewer than 2^31 tokens");
    const int64_t n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
    if (val_fraction > 0.0 && n_val == 0)
        fail(Status::InvalidArgument, "prepare: text file '", text_path, "' (", n,
             " bytes) is too short for val_fraction ", val_fraction,
             ": the validation split would be empty; use more text or val_fraction 0");
    // 1 asks for an evaluation-only folder (an empty train.bin); below 1 (rounding near 1)
    // an empty training split is a surprise.
    if (n_val >= n && val_fraction < 1.0)
        fail(Status::InvalidArgument, "prepare: val_fraction ", val_fraction,
             " leaves no training tokens (1 makes an evaluation-only folder on purpose)");
    const int64_t n_train = n - n_val;

    // The folder's lock for the whole write, and both files committed as one set with the
    // folder's manifest (data/shard_set.h), as prepare_text does.
    const std::unique_ptr<DirLock> lock = open_prepare_folder(out_dir);
    // Each byte is one token id in [0, 256).
    const std::vector<uint32_t> tokens(bytes, bytes + n);  // unsigned: bytes 128..255 stay positive
    ShardSet train(out_dir, "train", 2, 0), val(out_dir, "val", 2, 0);
    train.append(tokens.data(), static_cast<size_t>(n_train));
    // With val_fraction 0 an empty val.bin is still written, so a stale one cannot linger.
    val.append(tokens.data() + n_train, static_cast<size_t>(n_val));
    commit_prepared(out_dir, {&train, &val}, tok::bytes_identity());
    return PrepareResult{n_train, n_val};
}

}  // namespace trt
