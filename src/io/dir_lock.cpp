#include "io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "io/fs_util.h"

namespace trt {
namespace {

std::string errno_message(int e) { return std::strerror(e); }

// "pid 1234 on host x" from a lock file's content (written by the holder), or a fallback.
std::string holder_of(int fd) {
    char buf[256] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // keep messages one line
    return text.empty() ? std::string("another process (its pid is not yet written)") : text;
}

}  // namespace

DirLock::DirLock(const std::string& dir, const std::string& purpose, const std::string& clash,
                 LockFile file)
    : dir_(dir), path_(path_join(dir, kFileName)), remove_(file == LockFile::Remove) {
    try {
        make_dirs(dir);
    } catch (const Error& e) {
        throw Error(e.status(), cat(purpose, ": ", e.what()));
    }
    const std::string& path = path_;
    for (int attempt = 0;; ++attempt) {
        // O_NOFOLLOW: a link planted in the folder cannot make the holder write elsewhere.
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd_ < 0)
            fail(Status::Io, purpose, " '", dir, "': cannot open its lock file '", path, "': ",
                 errno_message(errno));
        int r;
        do r = ::flock(fd_, LOCK_EX | LOCK_NB);
        while (r != 0 && errno == EINTR);
        if (r != 0) {
            const int e = errno;
            const std::string holder = e == EWOULDBLOCK ? holder_of(fd_) : "";
            ::close(fd_);
            fd_ = -1;
            if (e == EWOULDBLOCK)
                fail(Status::Busy, purpose, " '", dir, "' is in use by another run (", holder,
                     ", holding '", path, "'); wait for that run to end or stop it, or give "
                     "this run another ", purpose, ". ", clash);
            fail(Status::Io, purpose, " '", dir, "': cannot lock '", path, "': ",
                 errno_message(e));
        }
        // Locked, but is it still the file at that name? A holder that removes its lock file
        // on release may have done so after we opened it: then lock the new file instead.
        struct stat held {}, named {};
        if (::fstat(fd_, &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino)
            break;
        ::close(fd_);
        fd_ = -1;
        if (attempt == 100)
            fail(Status::Io, purpose, " '", dir, "': its lock file '", path,
                 "' keeps being replaced; is another program removing it?");
    }
    // Ours: record who holds it (best effort; the lock itself is what protects the folder).
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string who = cat("pid ", ::getpid(), " on ", host[0] ? host : "this host", "\n");
    if (::ftruncate(fd_, 0) == 0) (void)::pwrite(fd_, who.data(), who.size(), 0);
}

DirLock::~DirLock() {
    if (fd_ < 0) return;
    // Closing the descriptor releases the lock. The file is removed first, while still held,
    // only where asked: a run that opened it meanwhile notices (see the constructor).
    if (remove_) ::unlink(path_.c_str());
    ::close(fd_);
}

}  // namespace trt
