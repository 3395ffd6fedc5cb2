// TextWindow (text_window.h).
#include "data/text_window.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace trt {

TextWindow::TextWindow(const std::string& path, uint64_t size, size_t block_bytes)
    : path_(path), size_(size), block_bytes_(std::max<size_t>(block_bytes, 1)) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(Status::Io, "prepare: cannot open '", path, "': ", std::strerror(errno));
}

TextWindow::~TextWindow() {
    if (fd_ >= 0) ::close(fd_);
}

void TextWindow::load_through(uint64_t p) {
    if (p >= size_ || p < released_)
        fail(Status::Internal, "prepare: byte ", p, " of '", path_, "' asked for outside [",
             released_, ", ", size_, ")");
    while (start_ + buf_.size() <= p) {
        // Drop what was released, once it is most of the buffer (amortized: no quadratic erase).
        const uint64_t drop = released_ - start_;
        if (drop > 0 && drop >= buf_.size() / 2) {
            buf_.erase(0, static_cast<size_t>(drop));
            start_ = released_;
        }
        const size_t want = static_cast<size_t>(
            std::min<uint64_t>(block_bytes_, size_ - (start_ + buf_.size())));
        const size_t old = buf_.size();
        buf_.resize(old + want);
        size_t got = 0;
        while (got < want) {
            const ssize_t r = ::read(fd_, &buf_[old + got], want - got);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) fail(Status::Io, "prepare: cannot read '", path_, "': ", std::strerror(errno));
            if (r == 0)
                fail(Status::Io, "prepare: '", path_, "' ended at byte ", start_ + old + got,
                     " while being read (it was ", size_, " bytes): was it changed meanwhile?");
            got += static_cast<size_t>(r);
        }
    }
}

char TextWindow::at(uint64_t p) {
    load_through(p);
    return buf_[static_cast<size_t>(p - start_)];
}

std::string TextWindow::take(uint64_t a, uint64_t b) {
    if (b == a) return std::string();
    load_through(b - 1);
    return buf_.substr(static_cast<size_t>(a - start_), static_cast<size_t>(b - a));
}

void TextWindow::release_before(uint64_t p) { released_ = std::max(released_, p); }

}  // namespace trt
