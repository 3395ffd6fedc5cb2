#include "io/sha256.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRT_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/error.h"

namespace trt {

namespace {

// First 32 bits of the fractional parts of the cube roots of the first 64 primes.
constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One block, straight from FIPS 180-4 §6.2.2.
void compress_portable(uint32_t state[8], const uint8_t* p) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)  // the message is big-endian
        w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
               (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
        const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
        const uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        const uint32_t ch = (e & f) ^ (~e & g);
        const uint32_t t1 = h + S1 + ch + kK[i] + w[i];
        const uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        const uint32_t t2 = S0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

#if TRT_SHA256_X86
// The SHA-NI block function (after Intel's reference and Jeffrey Walton's public-domain
// sha256-x86). The state is kept as ABEF/CDGH, the layout sha256rnds2 works on; each group
// of 4 rounds adds K, runs two rnds2, and the msg1/msg2 pair extends the schedule 4 words
// ahead, rotating through four registers.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_shani(uint32_t state[8],
                                                                 const uint8_t* p, size_t n) {
    const __m128i kMask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));
    __m128i st1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));
    tmp = _mm_shuffle_epi32(tmp, 0xB1);         // CDAB
    st1 = _mm_shuffle_epi32(st1, 0x1B);         // EFGH
    __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);  // ABEF
    st1 = _mm_blend_epi16(st1, tmp, 0xF0);       // CDGH
    for (; n > 0; --n, p += 64) {
        const __m128i save0 = st0, save1 = st1;
        __m128i w[4];
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {  // rounds 4g .. 4g+3
            if (g < 4)
                w[g] = _mm_shuffle_epi8(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), kMask);
            __m128i msg = _mm_add_epi32(
                w[g % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kK[4 * g])));
            st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
            if (g >= 3 && g <= 14) {  // finish schedule words 4(g+1) .. 4(g+1)+3
                const __m128i t = _mm_alignr_epi8(w[g % 4], w[(g + 3) % 4], 4);
                w[(g + 1) % 4] = _mm_sha256msg2_epu32(_mm_add_epi32(w[(g + 1) % 4], t), w[g % 4]);
            }
            msg = _mm_shuffle_epi32(msg, 0x0E);
            st0 = _mm_sha256rnds2_epu32(st0, st1, msg);
            if (g >= 1 && g <= 12) w[(g + 3) % 4] = _mm_sha256msg1_epu32(w[(g + 3) % 4], w[g % 4]);
        }
        st0 = _mm_add_epi32(st0, save0);
        st1 = _mm_add_epi32(st1, save1);
    }
    tmp = _mm_shuffle_epi32(st0, 0x1B);         // FEBA
    st1 = _mm_shuffle_epi32(st1, 0xB1);         // DCHG
    st0 = _mm_blend_epi16(tmp, st1, 0xF0);      // DCBA
    st1 = _mm_alignr_epi8(st1, tmp, 8);         // HGFE
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), st0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), st1);
}
#endif

}  // namespace

bool sha256_hw_available() {
#if TRT_SHA256_X86
    static const bool available = [] {
        unsigned a, b, c, d;
        if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
        const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
        return ssse3 && sse41 && (b & (1u << 29));
    }();
    return available;
#else
    return false;
#endif
}

Sha256::Sha256(Engine engine)
    // First 32 bits of the fractional parts of the square roots of the first 8 primes.
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
         0x5be0cd19},
      buf_{},
      hw_(engine == Engine::Auto && sha256_hw_available()) {}

void Sha256::compress(const uint8_t* blocks, size_t n) {
#if TRT_SHA256_X86
    if (hw_) {
        compress_shani(h_, blocks, n);
        return;
    }
#endif
    for (; n > 0; --n, blocks += 64) compress_portable(h_, blocks);
}

void Sha256::update(const void* data, size_t len) {
    TRT_CHECK(!finished_, "Sha256::update after finish");
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += len;
    if (buf_len_ > 0) {  // top up a partial block first
        const size_t take = std::min(len, size_t{64} - buf_len_);
        std::memcpy(buf_ + buf_len_, p, take);
        buf_len_ += take;
        p += take;
        len -= take;
        if (buf_len_ < 64) return;
        compress(buf_, 1);
        buf_len_ = 0;
    }
    const size_t blocks = len / 64;
    if (blocks) compress(p, blocks);
    p += blocks * 64;
    len -= blocks * 64;
    if (len) std::memcpy(buf_, p, len);
    buf_len_ = len;
}

Sha256::Digest Sha256::finish() {
    TRT_CHECK(!finished_, "Sha256::finish called twice");
    finished_ = true;
    // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits (big-endian).
    const uint64_t bits = total_ * 8;
    buf_[buf_len_++] = 0x80;
    if (buf_len_ > 56) {
        std::memset(buf_ + buf_len_, 0, 64 - buf_len_);
        compress(buf_, 1);
        buf_len_ = 0;
    }
    std::memset(buf_ + buf_len_, 0, 56 - buf_len_);
    for (int i = 0; i < 8; ++i) buf_[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    compress(buf_, 1);
    Digest out;
    for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<uint8_t>(h_[i] >> (24 - 8 * k));
    return out;
}

std::string to_hex(const Sha256::Digest& d) {
    static const char kHex[] = "0123456789abcdef";
    std::string s;
    s.reserve(64);
    for (uint8_t b : d) {
        s.push_back(kHex[b >> 4]);
        s.push_back(kHex[b & 15]);
    }
    return s;
}

std::string sha256_hex(const void* data, size_t len) {
    Sha256 h;
    h.update(data, len);
    return to_hex(h.finish());
}

std::string sha256_file_hex(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(Status::Io, "cannot open '", path, "' to hash it: ", std::strerror(errno));
    // A small file (config.json, state.json) gets a buffer of its size, not the full chunk:
    // a checkpoint's manifest hashes several such files on every load.
    struct stat st {};
    size_t want = kSha256FileBuffer;
    if (::fstat(fd, &st) == 0 && st.st_size >= 0 && static_cast<uint64_t>(st.st_size) < want)
        want = static_cast<size_t>(st.st_size) + 1;  // + 1: the read that sees the end
    std::vector<uint8_t> buf(want);
    Sha256 h;
    for (;;) {
        const ssize_t r = ::read(fd, buf.data(), buf.size());
        if (r < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            fail(Status::Io, "cannot read '", path, "' to hash it: ", std::strerror(e));
        }
        if (r == 0) break;
        h.update(buf.data(), static_cast<size_t>(r));
    }
    ::close(fd);
    return to_hex(h.finish());
}

}  // namespace trt
