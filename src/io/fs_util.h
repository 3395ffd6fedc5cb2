// fs_util: the few POSIX file-system operations that durable writers need, in one place so
// every writer (safetensors, token shards, checkpoints, the `latest` pointer) gets the same
// crash-safety rules:
//   * a file is written to a temporary name of its own in NAME's folder (".NAME.tmp.<pid>.<16
//     hex digits>", created with O_EXCL | O_NOFOLLOW: a concurrent writer of NAME or a link
//     planted there is never followed or clobbered), fsynced, closed, then renamed over NAME,
//     and the parent directory is fsynced so the rename itself survives a power cut;
//   * on any failure the partial temporary file is removed and Error(Io) carries the errno
//     text; one left by a killed process is an orphan that remove_orphan_temps() recognises.
// All errors are trt::Error(Status::Io) naming the path and the operation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trt {

// write(2) all of buf, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, const void* buf, size_t len);

// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/". Trailing slashes of `path` are ignored.
std::string parent_dir(const std::string& path);
// a + "/" + b without doubling a trailing slash of a; "" + b = b.
std::string path_join(const std::string& a, const std::string& b);
// Drops trailing slashes ("out/" -> "out") except for "/" itself.
std::string strip_trailing_slashes(const std::string& path);

// Opens `path` and fsyncs it (a regular file or a directory).
void fsync_path(const std::string& path);
// fsyncs a directory, so entries created or renamed in it are durable.
void fsync_dir(const std::string& dir);

// A file being written atomically: bytes go to a fresh temporary file beside `path` (see
// above; mode 0644); commit() fsyncs, closes, renames it over `path` and fsyncs the parent
// directory. Destroying an uncommitted writer (an exception on the way) closes and removes the
// temporary file, so no partial file is left behind.
class AtomicFile {
public:
    explicit AtomicFile(std::string path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    void write(const void* data, size_t len);
    // Overwrites bytes already written (a header whose counts are known only at the end).
    void write_at(uint64_t offset, const void* data, size_t len);
    // fsyncs and closes the temporary file without renaming it yet (a writer of several files
    // makes all of them durable before it publishes the first); commit() then only renames.
    void close_synced();
    void commit();
    const std::string& path() const { return path_; }
    const std::string& tmp_path() const { return tmp_; }

private:
    [[noreturn]] void abort_with(const char* what, int err);
    std::string path_, tmp_;
    int fd_ = -1;
    bool committed_ = false;
};

// The final name an AtomicFile temporary name stands for (".a.bin.tmp.123.0123456789abcdef"
// -> "a.bin"), or "" when `name` is not one.
std::string atomic_temp_target(const std::string& name);

// Removes from `dir` the temporary files that writers killed before their commit left behind
// (kill -9, a power cut): AtomicFile's names, and the fixed "NAME.tmp" of earlier versions,
// whose NAME `owned` accepts. Regular files only; anything else is never touched. The caller
// holds the folder's lock (io/dir_lock.h), so no live writer's file is removed. Returns how
// many were removed.
size_t remove_orphan_temps(const std::string& dir,
                           const std::function<bool(const std::string&)>& owned);

// A small file (JSON, a pointer, a manifest) replaced atomically with `content`.
void write_file_atomic(const std::string& path, std::string_view content);

// Reads a whole regular file; Error(Io) if unreadable or not a regular file (a FIFO is refused,
// never waited on), Error(Format) if larger than max_bytes
// (the bound keeps a hostile or wrong path from being slurped into memory).
std::string read_small_file(const std::string& path, size_t max_bytes);
// The first max_bytes of a regular file (all of it when shorter), with read_small_file's
// checks: enough to tell a file's format.
std::string read_file_head(const std::string& path, size_t max_bytes);

// mkdir -p: creates `path` and missing parents (mode 0755). An existing directory is fine;
// an existing non-directory is Error(Io).
void make_dirs(const std::string& path);

// What lstat says about a path; symbolic links are reported as Other, never followed.
enum class PathKind { Missing, File, Directory, Other };
PathKind path_kind(const std::string& path);

// Removes `path` and, if it is a directory, everything below it. Symbolic links are removed
// themselves, never followed, so a link inside the tree cannot make this delete files
// elsewhere. A missing path is fine. Refuses "", "/", "." and ".." (Error(InvalidArgument))
// as a guard against a caller bug wiping far more than intended.
void remove_tree(const std::string& path);

// Renames from -> to, failing with Error(Io) if `to` already exists (RENAME_NOREPLACE where
// the file system supports it, so two writers cannot clobber each other), then fsyncs the
// parent directory of `to`.
void rename_no_replace(const std::string& from, const std::string& to);

struct DirEntry {
    std::string name;
    PathKind kind;  // from lstat: links are Other
};
// Entries of a directory except "." and "..", sorted by name (byte order).
std::vector<DirEntry> list_dir(const std::string& dir);

}  // namespace trt
