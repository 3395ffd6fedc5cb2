// A whole regular file mapped read-only, for the readers of multi-GB weight files
// (safetensors, GGUF): pages come in as they are read, and release() gives a range back after
// it was copied, so a model read a tensor at a time never holds more than a tensor of the file
// in its resident memory (the pages stay in the page cache).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace trt {

class MappedFile {
public:
    // Error(Io) naming the path: it cannot be opened, is not a regular file (a FIFO is refused
    // without waiting for a writer), or cannot be mapped. An empty file maps to nothing
    // (data() null, size() 0).
    static MappedFile open(const std::string& path);

    MappedFile() = default;
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    // The pages over [p, p + n) (inside the mapping) are no longer needed by this process.
    void release(const uint8_t* p, size_t n) const;

private:
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace trt
