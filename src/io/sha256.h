// SHA-256 (FIPS 180-4), self-contained so checkpoint manifests need no crypto library.
// Used for integrity (detecting torn or damaged files), not for authenticity.
// On x86-64 CPUs with the SHA extensions (CPUID 7.EBX[29]) blocks are compressed with them
// (~10x faster: a GPT-2 124M checkpoint is 1.5 GB to hash on every write and every read);
// elsewhere a portable implementation is used. Both give identical digests.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace trt {

class Sha256 {
public:
    using Digest = std::array<uint8_t, 32>;

    enum class Engine { Auto, Portable };  // Portable: tests compare both paths

    explicit Sha256(Engine engine = Engine::Auto);
    void update(const void* data, size_t len);  // any number of calls, any chunk sizes
    Digest finish();                            // the object must not be reused afterwards

private:
    void compress(const uint8_t* blocks, size_t n);  // n consecutive 64-byte blocks
    uint32_t h_[8];
    uint8_t buf_[64];
    size_t buf_len_ = 0;
    uint64_t total_ = 0;  // bytes hashed so far
    bool finished_ = false;
    bool hw_ = false;  // use the SHA-NI block function
};

// True if this CPU has the instructions the accelerated path needs.
bool sha256_hw_available();

// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256::Digest& d);

// Hex digest of an in-memory buffer.
std::string sha256_hex(const void* data, size_t len);

// Bytes read per read(2) call when hashing a file; memory use is this buffer only (a smaller
// file gets a buffer of its own size).
constexpr size_t kSha256FileBuffer = size_t{1} << 18;

// Hex digest of a file's contents, read in kSha256FileBuffer chunks (files of any size).
// Error(Io) naming the file if it cannot be opened or read.
std::string sha256_file_hex(const std::string& path);

}  // namespace trt
