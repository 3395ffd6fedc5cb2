// MANIFEST.sha256: the integrity record of a checkpoint directory. Written last, so a
// directory with a valid manifest was completely written; verified first, so no byte of a
// damaged or half-copied checkpoint is trusted.
#include <algorithm>
#include <map>

#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"
#include "io/fs_util.h"
#include "io/sha256.h"

namespace trt::ckpt {

namespace {

// A manifest of a few files is ~100 bytes a line; this bound only stops a wrong path from
// being slurped.
constexpr size_t kMaxManifestBytes = 1 << 20;

bool is_hex64(const std::string& s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// A plain file name inside the checkpoint directory: no path, not hidden, printable.
bool is_plain_name(const std::string& s) {
    if (s.empty() || s[0] == '.' || s == kManifestFile) return false;
    for (unsigned char c : s)
        if (c == '/' || c < 0x20 || c == 0x7f) return false;
    return true;
}

}  // namespace

std::string corrupt_prefix(const std::string& dir) {
    return cat("corrupt checkpoint '", dir, "': ");
}

void write_manifest(const std::string& dir, std::vector<std::string> files) {
    std::sort(files.begin(), files.end());
    std::string text;
    for (const std::string& f : files) {
        TRT_CHECK(is_plain_name(f), "manifest entry '", f, "'");
        text += sha256_file_hex(path_join(dir, f)) + "  " + f + "\n";
    }
    write_file_atomic(path_join(dir, kManifestFile), text);
}

std::set<std::string> verify_manifest(const std::string& dir) {
    const std::string bad = corrupt_prefix(dir);
    const std::string manifest_path = path_join(dir, kManifestFile);
    if (path_kind(manifest_path) != PathKind::File)
        fail(Status::Format, bad, kManifestFile,
             " is missing (the checkpoint was not completely written, or was copied without "
             "it); use another checkpoint");
    std::string text;
    try {
        text = read_small_file(manifest_path, kMaxManifestBytes);
    } catch (const Error& e) {
        fail(Status::Format, bad, kManifestFile, " cannot be read: ", e.what());
    }

    // Parse every line before hashing anything, so a malformed manifest fails fast.
    std::map<std::string, std::string> listed;  // name -> expected hex
    size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
        ++line_no;
        const size_t nl = text.find('\n', pos);
        if (nl == std::string::npos)
            fail(Status::Format, bad, kManifestFile, " line ", line_no,
                 " does not end with a newline (the file is truncated)");
        const std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        const std::string hex = line.substr(0, 64);
        const std::string name = line.size() > 66 ? line.substr(66) : "";
        if (line.size() <= 66 || !is_hex64(hex) || line.compare(64, 2, "  ") != 0 ||
            !is_plain_name(name))
            fail(Status::Format, bad, kManifestFile, " line ", line_no,
                 " is malformed (expected '<64 lower-case hex digits>  <file name>')");
        if (!listed.emplace(name, hex).second)
            fail(Status::Format, bad, kManifestFile, " lists ", name, " twice");
    }

    for (const auto& [name, expected] : listed) {
        const std::string path = path_join(dir, name);
        const PathKind kind = path_kind(path);
        if (kind == PathKind::Missing)
            fail(Status::Format, bad, name, " is listed in ", kManifestFile,
                 " but missing; restore it or use another checkpoint");
        if (kind != PathKind::File)
            fail(Status::Format, bad, name, " is not a regular file");
        const std::string actual = sha256_file_hex(path);
        if (actual != expected)
            fail(Status::Format, bad, name, " has SHA-256 ", actual, " but ", kManifestFile,
                 " records ", expected,
                 " (the file was damaged or modified after it was written); restore it or use "
                 "another checkpoint");
    }

    // A file nobody listed is either an interrupted copy or a foreign edit: refuse rather
    // than guess. Hidden files (editor or NFS artefacts) and subdirectories are ignored.
    for (const DirEntry& e : list_dir(dir)) {
        if (e.kind != PathKind::File || e.name[0] == '.' || e.name == kManifestFile) continue;
        if (!listed.count(e.name))
            fail(Status::Format, bad, e.name, " is not listed in ", kManifestFile,
                 " (an unexpected file in the checkpoint directory); remove it if it does not "
                 "belong there");
    }

    std::set<std::string> names;
    for (const auto& kv : listed) names.insert(kv.first);
    return names;
}

void require_checkpoint_files(const std::string& dir, const std::set<std::string>& listed) {
    for (const char* f : {kModelFile, kConfigFile, kOptimizerFile, kStateFile})
        if (!listed.count(f))
            fail(Status::Format, corrupt_prefix(dir), f, " is missing (", kManifestFile,
                 " does not list it); use another checkpoint");
}

}  // namespace trt::ckpt
