// Helpers shared by the fuzz targets (tests/fuzz, docs/FUZZING.md).
//
// Readers that only take a path get the input as a file: either a memfd reached through
// /proc/self/fd/N (no file system at all; fine for readers that open() and fstat()), or a
// file in a per-process scratch directory (for readers that lstat() the path or list a
// folder). The scratch directory lives on /dev/shm when it is writable (tmpfs: the fsyncs of
// the library's writers cost nothing there), else in $TMPDIR or /tmp; TRAINRT_FUZZ_TMP
// overrides. It is removed when the process exits.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fuzz {

// Aborts with a message: a property the target checks (not a parser error) does not hold.
[[noreturn]] inline void die(const std::string& what) {
    std::fprintf(stderr, "fuzz target check failed: %s\n", what.c_str());
    std::abort();
}

// A parser's clean refusal (trt::Error): silent, unless FUZZ_VERBOSE is set (to see why a seed
// stops where it does: FUZZ_VERBOSE=1 ./fuzz_x corpus/fuzz_x/*).
inline void refused(const char* what, const std::exception& e) {
    static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "  %s refused: %s\n", what, e.what());
}

// The per-process scratch directory, created on first use, removed at exit. (Held by a
// pointer that is never freed: the exit handler must not see a destroyed string.)
inline const std::string& scratch_dir(const char* target) {
    static const std::string* dir = [target] {
        std::string base;
        if (const char* t = std::getenv("TRAINRT_FUZZ_TMP"); t && *t) base = t;
        else if (::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
        else if (const char* t2 = std::getenv("TMPDIR"); t2 && *t2) base = t2;
        else base = "/tmp";
        auto* d = new std::string(base + "/trainrt-" + target + "-" + std::to_string(::getpid()));
        std::filesystem::remove_all(*d);
        std::filesystem::create_directories(*d);
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(scratch_dir(nullptr), ec);
        });
        return d;
    }();
    return *dir;
}

// Writes bytes to path (plain write, no fsync: scratch files need no durability).
inline void write_file(const std::string& path, std::string_view bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) die("cannot create " + path);
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
        die("cannot write " + path);
    std::fclose(f);
}

// One memfd per process, rewritten for every input; path() is /proc/self/fd/N.
class MemFile {
public:
    explicit MemFile(const char* name) {
        fd_ = ::memfd_create(name, MFD_CLOEXEC);
        if (fd_ < 0) die("memfd_create failed");
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    const std::string& set(const uint8_t* data, size_t size) {
        if (::ftruncate(fd_, 0) != 0) die("ftruncate failed");
        size_t done = 0;
        while (done < size) {
            const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
            if (n <= 0) die("pwrite to memfd failed");
            done += static_cast<size_t>(n);
        }
        return path_;
    }

private:
    int fd_ = -1;
    std::string path_;
};

// Splits input at every occurrence of sep (a marker the dictionary also holds), keeping at
// most max_parts parts (the last one keeps any further markers).
inline std::vector<std::string_view> split(std::string_view in, std::string_view sep,
                                           size_t max_parts) {
    std::vector<std::string_view> parts;
    while (parts.size() + 1 < max_parts) {
        const size_t at = in.find(sep);
        if (at == std::string_view::npos) break;
        parts.push_back(in.substr(0, at));
        in.remove_prefix(at + sep.size());
    }
    parts.push_back(in);
    return parts;
}

}  // namespace fuzz
