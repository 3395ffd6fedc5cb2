// prepare: byte-level tokenization into llm.c shards, written atomically.
#include "data/prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "io/fs_util.h"

namespace trt {

namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian; a big-endian host would need byte swapping"
#endif

// The most text one prepare reads: one token per byte, and a shard holds < 2^31 tokens.
constexpr size_t kMaxTextBytes = static_cast<size_t>(std::numeric_limits<int32_t>::max());

std::vector<unsigned char> read_file(const std::string& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(Status::Io, "cannot open text file '", path, "': ", std::strerror(errno));
    // Regular files only: a device (/dev/zero) or a FIFO would be read without end.
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool dir = S_ISDIR(st.st_mode);
        ::close(fd);
        fail(Status::Io, "text file '", path, "' is ",
             dir ? "a directory" : "not a regular file (a device, FIFO or socket)");
    }
    std::vector<unsigned char> bytes;
    unsigned char buf[1 << 16];
    for (;;) {
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            fail(Status::Io, "cannot read text file '", path, "': ", std::strerror(e));
        }
        if (r == 0) break;
        // A shard holds fewer than 2^31 tokens: stop reading a file that grows past that.
        if (bytes.size() + static_cast<size_t>(r) > kMaxTextBytes) {
            ::close(fd);
            fail(Status::InvalidArgument, "prepare: text file '", path, "' has more than ",
                 kMaxTextBytes, " bytes; a shard holds fewer than 2^31 tokens");
        }
        bytes.insert(bytes.end(), buf, buf + r);
    }
    ::close(fd);
    return bytes;
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

    // path.tmp, fsync, rename, fsync the folder; a failure removes the partial file.
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
    if (!(val_fraction >= 0.0 && val_fraction < 1.0))  // also rejects NaN
        fail(Status::InvalidArgument, "prepare: val_fraction must be in [0, 1), got ",
             val_fraction);
    const std::vector<unsigned char> bytes = read_file(text_path);
    const int64_t n = static_cast<int64_t>(bytes.size());
    if (n == 0) fail(Status::InvalidArgument, "prepare: text file '", text_path, "' is empty");
    if (n > std::numeric_limits<int32_t>::max())
        fail(Status::InvalidArgument, "prepare: text file '", text_path, "' has ", n,
             " bytes; a shard holds fewer than 2^31 tokens");
    const int64_t n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
    if (val_fraction > 0.0 && n_val == 0)
        fail(Status::InvalidArgument, "prepare: text file '", text_path, "' (", n,
             " bytes) is too short for val_fraction ", val_fraction,
             ": the validation split would be empty; use more text or val_fraction 0");
    if (n_val >= n)  // only reachable through rounding with val_fraction near 1
        fail(Status::InvalidArgument, "prepare: val_fraction ", val_fraction,
             " leaves no training tokens");
    const int64_t n_train = n - n_val;

    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec)
        fail(Status::Io, "prepare: cannot create output directory '", out_dir, "': ",
             ec.message());
    if (!std::filesystem::is_directory(out_dir, ec))
        fail(Status::Io, "prepare: output path '", out_dir, "' is not a directory");

    // Each byte is one token id in [0, 256).
    const std::vector<uint32_t> tokens(bytes.begin(), bytes.end());
    const std::filesystem::path dir(out_dir);
    write_shard((dir / "train.bin").string(), tokens.data(), n_train, 2);
    // With val_fraction 0 an empty val.bin is still written, so a stale one cannot linger.
    write_shard((dir / "val.bin").string(), tokens.data() + n_train, n_val, 2);
    return PrepareResult{n_train, n_val};
}

}  // namespace trt
