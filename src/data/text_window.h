// A text file read forward block by block, for cutting it into pieces without holding it
// whole: the bytes between the last release_before() and the furthest byte asked for are in
// memory, nothing else (prepare_text.cpp).
#pragma once
#include <cstdint>
#include <string>

namespace trt {

class TextWindow {
public:
    // size: the file's size when it was checked; a file that then ends sooner is Error(Io).
    TextWindow(const std::string& path, uint64_t size, size_t block_bytes);
    ~TextWindow();
    TextWindow(const TextWindow&) = delete;
    TextWindow& operator=(const TextWindow&) = delete;

    uint64_t size() const { return size_; }
    // The byte at file offset p (released_ <= p < size()), loading blocks up to it.
    char at(uint64_t p);
    // The bytes [a, b) (released_ <= a <= b <= size()).
    std::string take(uint64_t a, uint64_t b);
    // No later call reads a byte before p.
    void release_before(uint64_t p);

private:
    void load_through(uint64_t p);  // until byte p is in memory

    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
    size_t block_bytes_ = 0;
    std::string buf_;        // file bytes [start_, start_ + buf_.size())
    uint64_t start_ = 0;
    uint64_t released_ = 0;  // bytes before it may be dropped from buf_
};

}  // namespace trt
