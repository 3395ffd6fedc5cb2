// BoundedLines: a file's lines for JSON-lines readers (prepare --jsonl, prepare --chat), with a
// bound on a line's length that holds before the line is read whole.
#pragma once
#include <cstring>
#include <istream>
#include <string>
#include <vector>

namespace trt {

// A file's lines, read in blocks: a line over the bound is refused by its size as soon as
// that many bytes come without a newline, not read whole first (a line of gigabytes would
// otherwise be in memory, or fail to be, before its length was looked at).
class BoundedLines {
public:
    explicit BoundedLines(std::istream& in) : in_(in), buf_(size_t(1) << 20) {}
    // The next line, without its '\n', into line (false at the end; a last line without a
    // newline counts). More than max bytes of it: *too_long, and line holds max of them.
    bool next(std::string& line, size_t max, bool* too_long) {
        line.clear();
        *too_long = false;
        for (bool any = false;; any = true) {
            if (pos_ == end_ && !fill()) return any;
            const char* at = buf_.data() + pos_;
            const char* nl = static_cast<const char*>(std::memchr(at, '\n', end_ - pos_));
            const size_t n = nl ? static_cast<size_t>(nl - at) : end_ - pos_;
            if (n > max - line.size()) {
                line.append(at, max - line.size());
                *too_long = true;
                return true;
            }
            line.append(at, n);
            pos_ += n;
            if (nl) {
                ++pos_;
                return true;
            }
        }
    }

private:
    bool fill() {
        in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
        pos_ = 0;
        end_ = static_cast<size_t>(in_.gcount());
        return end_ > 0;
    }
    std::istream& in_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
};

}  // namespace trt
