// DirLock: one writer per folder. An advisory flock(2) on <dir>/trainrt.lock, held for the
// object's life; the kernel drops it when the process dies (kill -9 included), so a lock is
// never stale. The file keeps the holder's pid and host so a refused run can name them.
// Two sessions in one process conflict too (each lock is its own open file description).
// flock is advisory and local: a folder on NFS may not be protected (docs/FORMATS.md).
// A holder may remove the lock file when it is done (LockFile::Remove: folders that are
// handed on, such as an exported model); a run that opened the file just before it was
// removed sees, once it holds the lock, that the name is gone or another file, and retries.
#pragma once
#include <string>

namespace trt {

enum class LockFile { Keep, Remove };

class DirLock {
public:
    // Creates dir if needed and takes its lock; Error(Busy) naming dir, the holder's pid
    // and what to do when another process (or session) holds it; Error(Io) when the lock
    // file cannot be created. `purpose` names who asks ("train.out_dir"); `clash` says what
    // two runs in the folder would do to each other. With LockFile::Remove the lock file is
    // removed when the lock is released (not after a kill: the next holder reuses it).
    DirLock(const std::string& dir, const std::string& purpose,
            const std::string& clash = "Two runs in one folder would overwrite each other's "
                                       "checkpoints and metrics",
            LockFile file = LockFile::Keep);
    ~DirLock();
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;

    const std::string& dir() const { return dir_; }
    static constexpr const char* kFileName = "trainrt.lock";

private:
    std::string dir_, path_;
    int fd_ = -1;
    bool remove_ = false;
};

}  // namespace trt
