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

namespace trt {

namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian; a big-endian host would need byte swapping"
#endif

// write(2) all of buf, retrying short writes and EINTR. Returns errno on failure, else 0.
int write_all(int fd, const void* buf, size_t n) {
    const char* p = static_cast<const char*>(buf);
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return 0;
}

std::vector<unsigned char> read_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(Status::Io, "cannot open text file '", path, "': ", std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd);
        fail(Status::Io, "text file '", path, "' is a directory");
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

    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(Status::Io, "cannot create '", tmp, "': ", std::strerror(errno));
    // Any failure from here on: close, remove the partial tmp file, report.
    auto abort_with = [&](const char* what, int err, bool close_fd) {
        if (close_fd) ::close(fd);
        ::unlink(tmp.c_str());
        fail(Status::Io, "cannot ", what, " '", tmp, "': ", std::strerror(err));
    };

    int err = write_all(fd, header, sizeof header);
    if (err) abort_with("write", err, true);
    if (token_bytes == 4) {
        err = write_all(fd, tokens, static_cast<size_t>(n) * 4);
    } else {
        // Narrow to uint16 in bounded chunks.
        std::vector<uint16_t> chunk;
        constexpr int64_t kChunk = int64_t{1} << 20;
        for (int64_t begin = 0; begin < n && !err; begin += kChunk) {
            const int64_t m = std::min(kChunk, n - begin);
            chunk.resize(static_cast<size_t>(m));
            for (int64_t i = 0; i < m; ++i) chunk[i] = static_cast<uint16_t>(tokens[begin + i]);
            err = write_all(fd, chunk.data(), static_cast<size_t>(m) * 2);
        }
    }
    if (err) abort_with("write", err, true);
    if (::fsync(fd) != 0) abort_with("fsync", errno, true);
    if (::close(fd) != 0) abort_with("close", errno, false);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        fail(Status::Io, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(e));
    }
    // Make the rename itself durable.
    std::string parent = std::filesystem::path(path).parent_path().string();
    if (parent.empty()) parent = ".";
    const int dfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail(Status::Io, "cannot open directory '", parent, "': ", std::strerror(errno));
    if (::fsync(dfd) != 0) {
        const int e = errno;
        ::close(dfd);
        fail(Status::Io, "cannot fsync directory '", parent, "': ", std::strerror(e));
    }
    ::close(dfd);
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
