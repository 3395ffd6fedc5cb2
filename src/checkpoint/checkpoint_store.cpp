// A run's folder of checkpoints: step_NNNNNNNN/ directories, the `latest` pointer, and
// retention (docs/FORMATS.md §4).
#include <algorithm>
#include <cinttypes>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"
#include "io/fs_util.h"

namespace trt {

using namespace ckpt;

namespace {

// A single directory entry name: `latest` must never point outside out_dir.
bool valid_entry_name(const std::string& s) {
    if (s.empty() || s == "." || s.find("..") != std::string::npos) return false;
    for (unsigned char c : s)
        if (c == '/' || c < 0x20 || c == 0x7f) return false;
    return true;
}

// "step_<digits>" (suffix "") or "step_<digits>.tmp" (suffix ".tmp"): the step, or -1.
int64_t parse_step_name(const std::string& name, const std::string& suffix) {
    const std::string prefix = "step_";
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return -1;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18) return -1;  // would not fit int64; not ours
    int64_t step = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return -1;
        step = step * 10 + (c - '0');
    }
    return step;
}

bool is_checkpoint_dir(const std::string& path) {
    return path_kind(path) == PathKind::Directory &&
           path_kind(path_join(path, kManifestFile)) == PathKind::File;
}

// The name in <out_dir>/latest, "" if there is no such file; Error(Format) if malformed.
std::string read_latest_name(const std::string& out_dir) {
    const std::string p = path_join(out_dir, kLatestFile);
    const PathKind kind = path_kind(p);
    if (kind == PathKind::Missing) return "";
    if (kind != PathKind::File)
        fail(Status::Format, "'", p, "' is not a regular file; it should name the newest checkpoint");
    const std::string text = read_small_file(p, 4096);
    const std::string name = !text.empty() && text.back() == '\n' ? text.substr(0, text.size() - 1) : "";
    if (!valid_entry_name(name))
        fail(Status::Format, "'", p,
             "' does not hold one checkpoint directory name and a newline (e.g. "
             "'step_00001234'); fix it or delete it and pass a checkpoint directory instead");
    return name;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
    if (step < 0) fail(Status::InvalidArgument, "checkpoint step ", step, " is negative");
    char buf[32];
    std::snprintf(buf, sizeof buf, "step_%08" PRId64, step);
    return buf;
}

std::string latest_checkpoint(const std::string& out_dir) {
    const std::string name = read_latest_name(out_dir);
    return name.empty() ? "" : path_join(strip_trailing_slashes(out_dir), name);
}

void set_latest_checkpoint(const std::string& out_dir, const std::string& name) {
    if (!valid_entry_name(name))
        fail(Status::InvalidArgument, "set_latest_checkpoint: '", name,
             "' is not a directory name inside '", out_dir, "' (no '/' or '..')");
    const std::string target = path_join(out_dir, name);
    if (path_kind(target) != PathKind::Directory)
        fail(Status::InvalidArgument, "set_latest_checkpoint: '", target,
             "' is not a directory; write the checkpoint before pointing latest at it");
    write_file_atomic(path_join(out_dir, kLatestFile), name + "\n");
}

std::string resolve_checkpoint(const std::string& path_arg) {
    const std::string path = strip_trailing_slashes(path_arg);
    const PathKind kind = path_kind(path);
    if (kind == PathKind::Missing)
        fail(Status::Io, "checkpoint path '", path, "' does not exist");
    if (kind != PathKind::Directory)
        fail(Status::Io, "checkpoint path '", path,
             "' is not a directory; pass a checkpoint directory or a run's out_dir");
    if (path_kind(path_join(path, kManifestFile)) == PathKind::File) return path;
    const std::string name = read_latest_name(path);
    if (name.empty())
        fail(Status::Io, "'", path, "' is neither a checkpoint directory (no ", kManifestFile,
             ") nor a run directory with a '", kLatestFile, "' file");
    const std::string target = path_join(path, name);
    if (!is_checkpoint_dir(target))
        fail(Status::Format, "'", path_join(path, kLatestFile), "' names '", name, "' but '", target,
             "' is not a checkpoint directory (missing, or no ", kManifestFile,
             "); pass an existing checkpoint directory instead");
    return target;
}

void write_or_replace_checkpoint(const std::string& dir_arg, const ParamTable& table,
                                 const float* params, const float* m, const float* v,
                                 const CheckpointState& state) {
    const std::string dir = strip_trailing_slashes(dir_arg);
    if (path_kind(dir) == PathKind::Missing) {
        write_checkpoint(dir, table, params, m, v, state);
        return;
    }
    const std::string fresh = dir + ".new", old = dir + ".old";
    remove_tree(fresh);
    remove_tree(old);
    write_checkpoint(fresh, table, params, m, v, state);
    if (std::rename(dir.c_str(), old.c_str()) != 0)
        fail(Status::Io, "cannot move aside '", dir, "': ", std::strerror(errno));
    if (std::rename(fresh.c_str(), dir.c_str()) != 0)
        fail(Status::Io, "cannot rename '", fresh, "' to '", dir, "': ", std::strerror(errno));
    fsync_dir(parent_dir(dir));  // both renames durable before the old copy goes
    try {
        remove_tree(old);
    } catch (const Error&) {
        // The new checkpoint is in place; a leftover .old is pruned later (prune_checkpoints).
    }
}

void prune_checkpoints(const std::string& out_dir_arg, int64_t keep_last) {
    const std::string out_dir = strip_trailing_slashes(out_dir_arg);
    if (keep_last < 0)
        fail(Status::InvalidArgument, "prune_checkpoints: keep_last ", keep_last,
             " is negative (0 keeps all)");
    // Read first: if `latest` is unreadable we cannot know what must survive, so stop.
    const std::string latest = read_latest_name(out_dir);
    // A writer of `latest` killed before its rename leaves a temporary file of its own name.
    remove_orphan_temps(out_dir, [](const std::string& name) { return name == kLatestFile; });

    struct Found {
        int64_t step;
        std::string name;
    };
    std::vector<Found> checkpoints;
    for (const DirEntry& e : list_dir(out_dir)) {
        if (e.kind != PathKind::Directory) continue;  // files and links are never ours to remove
        const std::string path = path_join(out_dir, e.name);
        // A crashed writer's leftovers (one writer per out_dir): step_N.tmp from
        // write_checkpoint, step_N.new(.tmp) / step_N.old from a session replacing step_N.
        if (parse_step_name(e.name, ".tmp") >= 0 || parse_step_name(e.name, ".new") >= 0 ||
            parse_step_name(e.name, ".new.tmp") >= 0 || parse_step_name(e.name, ".old") >= 0) {
            remove_tree(path);
            continue;
        }
        const int64_t step = parse_step_name(e.name, "");
        // Only complete checkpoints count: a step_* directory without a manifest is not one
        // we wrote, so it is left alone.
        if (step >= 0 && is_checkpoint_dir(path)) checkpoints.push_back({step, e.name});
    }
    if (keep_last == 0) return;
    std::sort(checkpoints.begin(), checkpoints.end(), [](const Found& a, const Found& b) {
        return a.step != b.step ? a.step > b.step : a.name > b.name;
    });
    for (size_t i = static_cast<size_t>(keep_last); i < checkpoints.size(); ++i)
        if (checkpoints[i].name != latest) remove_tree(path_join(out_dir, checkpoints[i].name));
}

}  // namespace trt
