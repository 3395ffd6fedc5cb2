#include "io/fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc >= 2.28)
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace trt {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

int write_all(int fd, const void* buf, size_t len) {
    const auto* p = static_cast<const uint8_t*>(buf);
    while (len > 0) {
        // Linux writes at most ~2 GiB per call; chunk so large tensors need several calls.
        const size_t chunk = std::min<size_t>(len, size_t{1} << 30);
        const ssize_t w = ::write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        len -= static_cast<size_t>(w);
    }
    return 0;
}

std::string strip_trailing_slashes(const std::string& path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

std::string parent_dir(const std::string& path) {
    const std::string p = strip_trailing_slashes(path);
    const size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return p.substr(0, slash);
}

std::string path_join(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (a.back() == '/') return a + b;
    return a + "/" + b;
}

void fsync_path(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(Status::Io, "cannot open '", path, "' to fsync: ", errno_text(errno));
    const int rc = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0) fail(Status::Io, "cannot fsync '", path, "': ", errno_text(e));
}

void fsync_dir(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(Status::Io, "cannot open directory '", dir, "' to fsync: ", errno_text(errno));
    const int rc = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0) fail(Status::Io, "cannot fsync directory '", dir, "': ", errno_text(e));
}

// ---------------------------------------------------------------------------- AtomicFile

namespace {

constexpr const char* kTempInfix = ".tmp.";
constexpr size_t kTempRandomDigits = 16;
// A temporary name keeps at most this much of the final name, so it stays under NAME_MAX
// (255) with the dot, the infix, a pid and the random digits.
constexpr size_t kTempNameKeep = 200;

uint64_t random_u64() {
    uint64_t r = 0;
    ssize_t got;
    do got = ::getrandom(&r, sizeof r, 0);
    while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof r)) {
        // No getrandom (very old kernels): the clock and a counter are unique enough, since
        // O_EXCL catches a collision and the name is then drawn again.
        static std::atomic<uint64_t> counter{0};
        timespec ts {};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (static_cast<uint64_t>(ts.tv_sec) * 1000000007u + static_cast<uint64_t>(ts.tv_nsec)) ^
            (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    }
    return r;
}

// ".NAME.tmp.<pid>.<16 hex digits>" beside `path`.
std::string fresh_temp_path(const std::string& path) {
    const std::string p = strip_trailing_slashes(path);
    const size_t slash = p.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "" : p.substr(0, slash + 1);
    const std::string name = p.substr(slash == std::string::npos ? 0 : slash + 1);
    char tail[64];
    std::snprintf(tail, sizeof tail, "%s%ld.%016llx", kTempInfix, static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(random_u64()));
    return dir + "." + name.substr(0, kTempNameKeep) + tail;
}

}  // namespace

std::string atomic_temp_target(const std::string& name) {
    // From the end: 16 hex digits, '.', the pid's digits, ".tmp.", NAME, and a leading '.'.
    if (name.size() < 1 + 1 + 5 + 1 + 1 + kTempRandomDigits || name[0] != '.') return "";
    const size_t hex = name.size() - kTempRandomDigits;
    for (size_t i = hex; i < name.size(); ++i)
        if (!std::isxdigit(static_cast<unsigned char>(name[i])) ||
            std::isupper(static_cast<unsigned char>(name[i])))
            return "";
    if (name[hex - 1] != '.') return "";
    size_t pid = hex - 1;
    while (pid > 0 && std::isdigit(static_cast<unsigned char>(name[pid - 1]))) --pid;
    if (pid == hex - 1) return "";  // no digits
    const size_t infix = std::strlen(kTempInfix);
    if (pid < 1 + 1 + infix || name.compare(pid - infix, infix, kTempInfix) != 0) return "";
    return name.substr(1, pid - infix - 1);
}

size_t remove_orphan_temps(const std::string& dir,
                           const std::function<bool(const std::string&)>& owned) {
    size_t removed = 0;
    for (const DirEntry& e : list_dir(dir)) {
        if (e.kind != PathKind::File) continue;  // links, folders: never ours
        std::string target = atomic_temp_target(e.name);
        if (target.empty() && e.name.size() > 4 &&
            e.name.compare(e.name.size() - 4, 4, ".tmp") == 0)
            target = e.name.substr(0, e.name.size() - 4);  // the fixed name of earlier versions
        if (target.empty() || !owned(target)) continue;
        const std::string path = path_join(dir, e.name);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            fail(Status::Io, "cannot remove the leftover temporary file '", path, "': ",
                 errno_text(errno));
        ++removed;
    }
    if (removed > 0) fsync_dir(dir);
    return removed;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    // A name of our own, created exclusively: a concurrent writer of the same path gets
    // another, and O_NOFOLLOW refuses a link planted there (O_EXCL alone already refuses to
    // create through one). O_NONBLOCK: a FIFO at the name fails at once instead of waiting.
    for (int attempt = 0;; ++attempt) {
        tmp_ = fresh_temp_path(path_);
        fd_ = ::open(tmp_.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (fd_ >= 0) break;
        if (errno != EEXIST || attempt == 8)
            fail(Status::Io, "cannot create '", tmp_, "' (to write '", path_, "'): ",
                 errno_text(errno));
    }
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());  // an error unwound past us
}

void AtomicFile::abort_with(const char* what, int err) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    fail(Status::Io, "cannot ", what, " '", tmp_, "' (to write '", path_, "'): ",
         errno_text(err));
}

void AtomicFile::write(const void* data, size_t len) {
    if (fd_ < 0) fail(Status::Internal, "AtomicFile '", path_, "' written after it was closed");
    if (const int e = write_all(fd_, data, len)) abort_with("write", e);
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t len) {
    if (fd_ < 0) fail(Status::Internal, "AtomicFile '", path_, "' written after it was closed");
    const char* p = static_cast<const char*>(data);
    while (len > 0) {
        const ssize_t n = ::pwrite(fd_, p, len, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            abort_with("write", errno);
        }
        p += n;
        len -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
    }
}

void AtomicFile::close_synced() {
    if (committed_ || fd_ < 0) fail(Status::Internal, "AtomicFile '", path_, "' closed twice");
    // fsync before rename: otherwise a crash could leave the new name pointing at a file
    // whose data never reached the disk.
    if (::fsync(fd_) != 0) abort_with("fsync", errno);
    const int rc = ::close(fd_);
    const int close_err = errno;
    fd_ = -1;
    if (rc != 0) {
        ::unlink(tmp_.c_str());
        fail(Status::Io, "cannot close '", tmp_, "' (to write '", path_, "'): ",
             errno_text(close_err));
    }
}

void AtomicFile::commit() {
    if (committed_) fail(Status::Internal, "AtomicFile '", path_, "' committed twice");
    if (fd_ >= 0) close_synced();
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp_.c_str());
        committed_ = true;  // nothing left to remove
        fail(Status::Io, "cannot rename '", tmp_, "' to '", path_, "': ", errno_text(e));
    }
    committed_ = true;
    fsync_dir(parent_dir(path_));
}

void write_file_atomic(const std::string& path, std::string_view content) {
    AtomicFile f(path);
    f.write(content.data(), content.size());
    f.commit();
}

namespace {

// Opens a regular file for reading; Error(Io) naming it otherwise. Returns the descriptor and
// sets `size`.
int open_regular_file(const std::string& path, uint64_t& size) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(Status::Io, "cannot open '", path, "': ", errno_text(errno));
    // Regular files only: a device (/dev/zero) or a FIFO would be read without end.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool dir = S_ISDIR(st.st_mode);
        ::close(fd);
        fail(Status::Io, "cannot read '", path, "': ",
             dir ? "it is a directory" : "not a regular file (a device, FIFO or socket)");
    }
    size = static_cast<uint64_t>(st.st_size);
    return fd;
}

// Appends up to `limit` bytes from fd to out, stopping at one past it (so a caller can tell
// that the file holds more). Closes fd on error.
void read_up_to(int fd, const std::string& path, size_t limit, std::string& out) {
    char buf[1 << 16];
    while (out.size() <= limit) {
        const size_t want = std::min(sizeof buf, limit + 1 - out.size());
        const ssize_t r = ::read(fd, buf, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            fail(Status::Io, "cannot read '", path, "': ", errno_text(e));
        }
        if (r == 0) break;
        out.append(buf, static_cast<size_t>(r));
    }
}

}  // namespace

std::string read_small_file(const std::string& path, size_t max_bytes) {
    uint64_t size = 0;
    const int fd = open_regular_file(path, size);
    if (size > max_bytes) {
        ::close(fd);
        fail(Status::Format, "'", path, "' is ", size, " bytes; at most ", max_bytes,
             " are expected for this file");
    }
    std::string out;
    read_up_to(fd, path, max_bytes, out);
    ::close(fd);
    if (out.size() > max_bytes)  // grew after fstat
        fail(Status::Format, "'", path, "' is larger than the ", max_bytes,
             " bytes expected for this file");
    return out;
}

std::string read_file_head(const std::string& path, size_t max_bytes) {
    uint64_t size = 0;
    const int fd = open_regular_file(path, size);
    std::string out;
    read_up_to(fd, path, max_bytes, out);
    ::close(fd);
    if (out.size() > max_bytes) out.resize(max_bytes);
    return out;
}

// ---------------------------------------------------------------------------- directories

PathKind path_kind(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return PathKind::Missing;
        fail(Status::Io, "cannot stat '", path, "': ", errno_text(errno));
    }
    if (S_ISREG(st.st_mode)) return PathKind::File;
    if (S_ISDIR(st.st_mode)) return PathKind::Directory;
    return PathKind::Other;
}

void make_dirs(const std::string& path) {
    if (path.empty()) fail(Status::InvalidArgument, "cannot create a directory with an empty path");
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    // create_directories reports an error for an existing non-directory; also check the
    // result so a dangling link or a race surfaces here rather than at the first write.
    struct stat st {};
    if (ec || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        fail(Status::Io, "cannot create directory '", path, "': ",
             ec ? ec.message() : std::string("a non-directory is in the way"));
}

void remove_tree(const std::string& path) {
    const std::string p = strip_trailing_slashes(path);
    if (p.empty() || p == "/" || p == "." || p == ".." ||
        (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0) ||
        (p.size() >= 2 && p.compare(p.size() - 2, 2, "/.") == 0))
        fail(Status::InvalidArgument, "refusing to remove '", path,
             "': not a specific file or directory");
    // std::filesystem::remove_all uses symlink_status: links are unlinked, never followed.
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
    if (ec) fail(Status::Io, "cannot remove '", p, "': ", ec.message());
}

void rename_no_replace(const std::string& from, const std::string& to) {
    int rc = ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
        // File systems without RENAME_NOREPLACE: check, then rename. The gap is only a
        // problem with two concurrent writers of one name, which callers already exclude.
        if (path_kind(to) != PathKind::Missing)
            fail(Status::Io, "cannot rename '", from, "' to '", to, "': the target exists");
        rc = ::rename(from.c_str(), to.c_str());
    }
    if (rc != 0) {
        const int e = errno;
        fail(Status::Io, "cannot rename '", from, "' to '", to, "': ",
             e == EEXIST ? std::string("the target exists") : errno_text(e));
    }
    fsync_dir(parent_dir(to));
}

std::vector<DirEntry> list_dir(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) fail(Status::Io, "cannot list directory '", dir, "': ", errno_text(errno));
    std::vector<DirEntry> out;
    for (;;) {
        errno = 0;
        const dirent* e = ::readdir(d);
        if (!e) {
            const int err = errno;
            ::closedir(d);
            if (err) fail(Status::Io, "cannot list directory '", dir, "': ", errno_text(err));
            break;
        }
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        PathKind kind;
        try {
            kind = path_kind(path_join(dir, name));
        } catch (...) {
            ::closedir(d);
            throw;
        }
        if (kind == PathKind::Missing) continue;  // removed while we listed
        out.push_back({name, kind});
    }
    std::sort(out.begin(), out.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return out;
}

}  // namespace trt
