// TokenDataset: mmap + validation of llm.c token shards (docs/FORMATS.md §1).
#include "data/token_dataset.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "data/shard_manifest.h"
#include "io/file_sniff.h"

namespace trt {

namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian; a big-endian host would need byte swapping"
#endif

constexpr int64_t kHeaderBytes = 1024;

// "; it is plain text: tokenize it first …" for a file that is something else entirely.
std::string foreign_file_hint(const std::string& path, const uint8_t* head, size_t n) {
    const std::string kind = sniff_file_kind(head, n);
    if (kind.empty()) return "";
    if (kind == "an llm.c token shard")  // the header is right: the file is cut short
        return " (its header is an llm.c shard's: the file looks truncated; prepare it again)";
    if (kind == "plain text" || kind.rfind("JSON", 0) == 0)
        return cat(" (it is ", kind, "): tokenize text first, e.g. `trainrt prepare --text ",
                   path, " --out DIR` (add --tokenizer for a BPE vocabulary), then point "
                   "data.train / data.val at DIR/train.bin and DIR/val.bin");
    return cat(" (it is ", kind, ")");
}
constexpr int32_t kMagicU16 = 20240520, kVersionU16 = 1;
constexpr int32_t kMagicU32 = 20240801, kVersionU32 = 7;

bool has_glob_chars(const std::string& s) {
    return s.find_first_of("*?[") != std::string::npos;
}

// Shard paths for a pattern: a glob expands (sorted by bytes, not locale), a plain path is itself.
std::vector<std::string> expand_pattern(const std::string& pattern) {
    if (!has_glob_chars(pattern)) return {pattern};
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> paths;
    if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty()))
        fail(Status::Io, "dataset pattern '", pattern, "' matches no files");
    if (rc != 0)
        fail(Status::Io, "dataset pattern '", pattern, "': glob failed (",
             rc == GLOB_NOSPACE ? "out of memory" : "read error", ")");
    std::sort(paths.begin(), paths.end());
    return paths;
}

// max over p[0, n): a branch-free loop the compiler vectorizes.
template <typename Tok>
Tok max_token(const Tok* p, int64_t n) {
    Tok m = 0;
    for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
    return m;
}

struct MappedShard {
    std::string path;
    void* map = nullptr;  // whole file, read-only MAP_PRIVATE
    size_t map_bytes = 0;
    int token_bytes = 0;  // 2 or 4
    int64_t ntok = 0;

    MappedShard() = default;
    MappedShard(const MappedShard&) = delete;
    MappedShard& operator=(const MappedShard&) = delete;
    ~MappedShard() {
        if (map) ::munmap(map, map_bytes);
    }
    const unsigned char* body() const {
        return static_cast<const unsigned char*>(map) + kHeaderBytes;
    }
};

// Maps s.path and checks header and size (not the ids). Throws Io / Format.
void map_shard(MappedShard& s) {
    const std::string& path = s.path;
    // O_NONBLOCK: a FIFO must not wait for a writer before fstat refuses it below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(Status::Io, "cannot open token shard '", path, "': ", std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail(Status::Io, "cannot stat token shard '", path, "': ", std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(Status::Io, "token shard '", path, "' is ",
             S_ISDIR(st.st_mode) ? "a directory" : "not a regular file",
             "; expected an llm.c .bin shard");
    }
    const int64_t size = static_cast<int64_t>(st.st_size);
    if (size < kHeaderBytes) {
        uint8_t head[kHeaderBytes];
        const ssize_t got = ::pread(fd, head, sizeof head, 0);
        ::close(fd);
        fail(Status::Format, "token shard '", path, "' is ", size,
             " bytes, shorter than the 1024-byte header; not an llm.c token shard",
             foreign_file_hint(path, head, got > 0 ? static_cast<size_t>(got) : 0));
    }
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (map == MAP_FAILED)
        fail(Status::Io, "cannot mmap token shard '", path, "': ", std::strerror(map_errno));
    s.map = map;
    s.map_bytes = static_cast<size_t>(size);

    int32_t header[3];
    std::memcpy(header, map, sizeof header);
    const int32_t magic = header[0], version = header[1];
    if (magic == kMagicU16) {
        s.token_bytes = 2;
        if (version != kVersionU16)
            fail(Status::Format, "token shard '", path, "': magic ", magic,
                 " (uint16 tokens) needs version ", kVersionU16, ", header says ", version);
    } else if (magic == kMagicU32) {
        s.token_bytes = 4;
        if (version != kVersionU32)
            fail(Status::Format, "token shard '", path, "': magic ", magic,
                 " (uint32 tokens) needs version ", kVersionU32, ", header says ", version);
    } else {
        // The value itself is not quoted: the path may lead (a link, a wrong glob) to a file
        // that is no shard at all, whose bytes do not belong in an error message or a log.
        fail(Status::Format, "token shard '", path, "': it does not begin with an llm.c "
             "shard's magic number (", kMagicU16, " for uint16 or ", kMagicU32,
             " for uint32 tokens); not an llm.c token shard",
             foreign_file_hint(path, static_cast<const uint8_t*>(map),
                               std::min<size_t>(s.map_bytes, 4096)));
    }
    // int32 field: a negative value is a uint32 count >= 2^31.
    if (header[2] < 0)
        fail(Status::Format, "token shard '", path, "': header token count ",
             static_cast<uint32_t>(header[2]), " (int32 ", header[2],
             ") is out of range [0, 2^31)");
    s.ntok = header[2];
    const int64_t expected = kHeaderBytes + s.ntok * s.token_bytes;
    if (size != expected)
        fail(Status::Format, "token shard '", path, "': ",
             size < expected ? "truncated" : "trailing bytes", ": header says ", s.ntok,
             " tokens of ", s.token_bytes, " bytes, so the file should be ", expected,
             " bytes, but it is ", size);
}

// Every id < vocab_size. A chunked max scan is the fast path; only on failure is the
// first bad id located, so the error points at it.
template <typename Tok>
void check_ids(const MappedShard& s, const Tok* p, int64_t vocab_size, const std::string& advice) {
    if (vocab_size > static_cast<int64_t>(std::numeric_limits<Tok>::max())) return;
    const Tok limit = static_cast<Tok>(vocab_size);  // ids must be < limit
    constexpr int64_t kChunk = int64_t{1} << 20;
    for (int64_t begin = 0; begin < s.ntok; begin += kChunk) {
        const int64_t n = std::min(kChunk, s.ntok - begin);
        if (max_token(p + begin, n) < limit) continue;
        for (int64_t i = begin; i < begin + n; ++i) {
            if (p[i] >= limit)
                fail(Status::Format, "token shard '", s.path, "': token ", i, " (byte offset ",
                     kHeaderBytes + i * static_cast<int64_t>(sizeof(Tok)), ") has id ",
                     static_cast<uint64_t>(p[i]), " >= vocab_size ", vocab_size, "; ",
                     advice.empty() ? "set model.vocab_size above the largest id or re-tokenize"
                                    : advice);
        }
    }
}

}  // namespace

struct TokenDataset::Shard : MappedShard {};

TokenDataset::TokenDataset() = default;
TokenDataset::TokenDataset(TokenDataset&&) noexcept = default;
TokenDataset& TokenDataset::operator=(TokenDataset&&) noexcept = default;
TokenDataset::~TokenDataset() = default;

TokenDataset TokenDataset::open(const std::string& pattern, int64_t vocab_size,
                                const std::string& too_large_advice) {
    // ids are handed out as int32, so every valid id must fit one.
    if (vocab_size <= 0 || vocab_size > std::numeric_limits<int32_t>::max())
        fail(Status::InvalidArgument, "TokenDataset::open: vocab_size must be in [1, 2^31), got ",
             vocab_size);
    if (pattern.empty()) fail(Status::InvalidArgument, "TokenDataset::open: empty path");
    TokenDataset ds;
    const std::vector<std::string> paths = expand_pattern(pattern);
    // A folder prepare wrote holds exactly the set its manifest lists (data/shard_manifest.h).
    check_prepared_shards(pattern, paths);
    for (const std::string& path : paths) {
        auto shard = std::make_unique<Shard>();
        shard->path = path;
        map_shard(*shard);
        // Validation reads the whole file once, front to back.
        ::madvise(shard->map, shard->map_bytes, MADV_SEQUENTIAL);
        if (shard->token_bytes == 2)
            check_ids(*shard, reinterpret_cast<const uint16_t*>(shard->body()), vocab_size,
                      too_large_advice);
        else
            check_ids(*shard, reinterpret_cast<const uint32_t*>(shard->body()), vocab_size,
                      too_large_advice);
        ::madvise(shard->map, shard->map_bytes, MADV_NORMAL);  // sampling is random access
        ds.shards_.push_back(std::move(shard));
    }
    return ds;
}

size_t TokenDataset::num_shards() const { return shards_.size(); }

const std::string& TokenDataset::shard_path(size_t shard) const {
    if (shard >= shards_.size())
        fail(Status::InvalidArgument, "shard index ", shard, " out of range (", shards_.size(),
             " shards)");
    return shards_[shard]->path;
}

int64_t TokenDataset::shard_tokens(size_t shard) const {
    if (shard >= shards_.size())
        fail(Status::InvalidArgument, "shard index ", shard, " out of range (", shards_.size(),
             " shards)");
    return shards_[shard]->ntok;
}

int64_t TokenDataset::total_tokens() const {
    int64_t total = 0;
    for (const auto& s : shards_) total += s->ntok;
    return total;
}

void TokenDataset::check_range(const char* what, size_t shard, int64_t offset, int64_t n,
                               const void* out) const {
    if (shard >= shards_.size())
        fail(Status::InvalidArgument, what, ": shard index ", shard, " out of range (",
             shards_.size(), " shards)");
    const Shard& s = *shards_[shard];
    // Written so nothing overflows: offset + n <= ntok  <=>  n <= ntok - offset.
    if (offset < 0 || n < 0 || offset > s.ntok || n > s.ntok - offset)
        fail(Status::InvalidArgument, what, ": range [", offset, ", ", offset, " + ", n,
             ") outside shard '", s.path, "' of ", s.ntok, " tokens");
    if (n > 0 && out == nullptr) fail(Status::InvalidArgument, what, ": null output");
}

void TokenDataset::copy_tokens(size_t shard, int64_t offset, int64_t n, int32_t* out) const {
    check_range("copy_tokens", shard, offset, n, out);
    const Shard& s = *shards_[shard];
    if (s.token_bytes == 2) {
        const uint16_t* p = reinterpret_cast<const uint16_t*>(s.body()) + offset;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(p[i]);
    } else {
        // ids < vocab_size <= INT32_MAX were validated at open.
        const uint32_t* p = reinterpret_cast<const uint32_t*>(s.body()) + offset;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(p[i]);
    }
}

void TokenDataset::copy_tokens_u16(size_t shard, int64_t offset, int64_t n,
                                   uint16_t* out) const {
    check_range("copy_tokens_u16", shard, offset, n, out);
    const Shard& s = *shards_[shard];
    if (s.token_bytes == 2) {
        const uint16_t* p = reinterpret_cast<const uint16_t*>(s.body()) + offset;
        std::copy(p, p + n, out);
        return;
    }
    const uint32_t* p = reinterpret_cast<const uint32_t*>(s.body()) + offset;
    for (int64_t i = 0; i < n; ++i) {
        if (p[i] > 0xFFFFu)
            fail(Status::InvalidArgument, "copy_tokens_u16: token id ", p[i], " at token ",
                 offset + i, " of '", s.path, "' does not fit 16 bits");
        out[i] = static_cast<uint16_t>(p[i]);
    }
}

}  // namespace trt
