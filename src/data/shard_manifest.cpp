// prepare.json (shard_manifest.h).
#include "data/shard_manifest.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"

namespace trt {

namespace {

constexpr const char* kFormat = "trainrt-prepare";
constexpr int64_t kVersion = 1;
// Two splits of at most 10^6 shards, ~100 bytes a line.
constexpr size_t kMaxManifestBytes = size_t(256) << 20;

std::string base_name(const std::string& path) {
    const std::string p = strip_trailing_slashes(path);
    const size_t slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

const json::Value& member(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value* v = obj.find(key);
    if (!v) fail(Status::Format, where, ": the key \"", key, "\" is missing");
    return *v;
}

// What to do about a folder whose shards do not match its manifest.
std::string prepare_again(const std::string& dir) {
    return cat("run trainrt prepare into '", dir, "' again (or point the dataset at a folder "
               "that prepare finished)");
}

// "tokenizer": {"kind", "digest", "vocab_size", "source"?}.
tok::TokenizerIdentity read_identity(const json::Value& v, const std::string& path) {
    const std::string where = cat(path, ": \"tokenizer\"");
    if (!v.is_object()) fail(Status::Format, where, " must be an object");
    tok::TokenizerIdentity id;
    const json::Value& kind = member(v, "kind", where);
    const json::Value& digest = member(v, "digest", where);
    if (!kind.is_string() || kind.s.empty())
        fail(Status::Format, where, ": \"kind\" must be a non-empty string");
    if (!digest.is_string() || digest.s.size() != 7 + 64 ||
        digest.s.compare(0, 7, "sha256:") != 0 ||
        digest.s.find_first_not_of("0123456789abcdef", 7) != std::string::npos)
        fail(Status::Format, where, ": \"digest\" must be \"sha256:\" and 64 lower-case hex "
             "digits");
    if (!member(v, "vocab_size", where).get_i64(id.vocab_size) || id.vocab_size < 1)
        fail(Status::Format, where, ": \"vocab_size\" must be a positive integer");
    if (const json::Value* source = v.find("source")) {
        if (!source->is_string()) fail(Status::Format, where, ": \"source\" must be a string");
        id.source = source->s;
    }
    id.kind = kind.s;
    id.digest = digest.s;
    return id;
}

}  // namespace

bool is_prepared_shard_name(const std::string& name) {
    // mask_*: the loss masks beside a --chat prepare's shards (data/example_set.h).
    for (const char* split : {"train", "val", "mask_train", "mask_val"}) {
        const std::string s = split;
        if (name == s + ".bin") return true;
        // split + "_" + six digits + ".bin"
        if (name.size() == s.size() + 1 + 6 + 4 && name.compare(0, s.size() + 1, s + "_") == 0 &&
            name.compare(name.size() - 4, 4, ".bin") == 0 &&
            std::all_of(name.begin() + static_cast<std::ptrdiff_t>(s.size() + 1),
                        name.end() - 4, [](char c) { return c >= '0' && c <= '9'; }))
            return true;
    }
    return false;
}

void write_shard_manifest(const std::string& dir, const ShardManifest& m) {
    std::string text = cat("{\n  \"format\": \"", kFormat, "\",\n  \"version\": ", kVersion,
                           ",\n  \"complete\": ", m.complete ? "true" : "false",
                           ",\n  \"token_bytes\": ", m.token_bytes);
    if (m.tokenizer) {
        const tok::TokenizerIdentity& t = *m.tokenizer;
        text += cat(",\n  \"tokenizer\": {\"kind\": ", json::quote(t.kind), ", \"digest\": ",
                    json::quote(t.digest), ", \"vocab_size\": ", t.vocab_size);
        // A path that is not UTF-8 cannot be a JSON string; it only informs, so it is left out.
        if (!t.source.empty() && json::valid_utf8(t.source))
            text += cat(", \"source\": ", json::quote(t.source));
        text += "}";
    }
    text += ",\n  \"shards\": [";
    for (size_t i = 0; i < m.shards.size(); ++i) {
        const ManifestShard& s = m.shards[i];
        text += cat(i ? "," : "", "\n    {\"name\": ", json::quote(s.name), ", \"split\": ",
                    json::quote(s.split), ", \"tokens\": ", s.tokens, ", \"bytes\": ", s.bytes,
                    "}");
    }
    text += "\n  ]\n}\n";
    write_file_atomic(path_join(dir, kShardManifestFile), text);
}

std::optional<ShardManifest> read_shard_manifest(const std::string& dir) {
    const std::string path = path_join(dir, kShardManifestFile);
    if (path_kind(path) == PathKind::Missing) return std::nullopt;
    const json::Value doc = json::parse(read_small_file(path, kMaxManifestBytes), path);
    if (!doc.is_object()) fail(Status::Format, path, ": expected a JSON object");
    const json::Value* format = doc.find("format");
    if (!format || !format->is_string() || format->s != kFormat)
        fail(Status::Format, path, ": not a trainrt prepare manifest (\"format\" is not \"",
             kFormat, "\"); a file of this name marks a folder that trainrt prepare wrote, "
             "so rename or remove it");
    int64_t version = 0;
    if (!member(doc, "version", path).get_i64(version) || version < 1)
        fail(Status::Format, path, ": \"version\" must be a positive integer");
    if (version > kVersion)
        fail(Status::Format, path, ": manifest version ", version, " was written by a newer "
             "trainrt (this one reads version ", kVersion, "); upgrade trainrt or prepare again");
    ShardManifest m;
    const json::Value& complete = member(doc, "complete", path);
    if (complete.kind != json::Value::Kind::Bool)
        fail(Status::Format, path, ": \"complete\" must be true or false");
    m.complete = complete.b;
    int64_t token_bytes = 0;
    if (!member(doc, "token_bytes", path).get_i64(token_bytes) ||
        (token_bytes != 2 && token_bytes != 4))
        fail(Status::Format, path, ": \"token_bytes\" must be 2 or 4");
    m.token_bytes = static_cast<int>(token_bytes);
    const json::Value& shards = member(doc, "shards", path);
    if (!shards.is_array()) fail(Status::Format, path, ": \"shards\" must be an array");
    for (size_t i = 0; i < shards.arr.size(); ++i) {
        const json::Value& e = shards.arr[i];
        const std::string where = cat(path, ": shards[", i, "]");
        if (!e.is_object()) fail(Status::Format, where, ": expected an object");
        ManifestShard s;
        const json::Value& name = member(e, "name", where);
        const json::Value& split = member(e, "split", where);
        if (!name.is_string() || !is_prepared_shard_name(name.s))
            fail(Status::Format, where, ": \"name\" must be a shard name prepare writes "
                 "(train.bin, val_000001.bin, ...)");
        if (!split.is_string()) fail(Status::Format, where, ": \"split\" must be a string");
        s.name = name.s;
        s.split = split.s;
        if (!member(e, "tokens", where).get_i64(s.tokens) || s.tokens < 0 ||
            !member(e, "bytes", where).get_u64(s.bytes))
            fail(Status::Format, where, ": \"tokens\" and \"bytes\" must be integers >= 0");
        m.shards.push_back(std::move(s));
    }
    if (const json::Value* t = doc.find("tokenizer")) m.tokenizer = read_identity(*t, path);
    return m;
}

void check_prepared_shards(const std::string& pattern, const std::vector<std::string>& paths) {
    const bool glob = pattern.find_first_of("*?[") != std::string::npos;
    const std::string name_pattern = base_name(pattern);
    // The prepare-named files matched, by folder.
    std::map<std::string, std::vector<std::string>> matched;
    for (const std::string& p : paths) {
        const std::string name = base_name(p);
        if (is_prepared_shard_name(name)) matched[parent_dir(p)].push_back(name);
    }
    for (const auto& [dir, names] : matched) {
        const std::optional<ShardManifest> m = read_shard_manifest(dir);
        if (!m) continue;  // not written by a prepare that keeps a manifest: read as before
        const std::string manifest = path_join(dir, kShardManifestFile);
        if (!m->complete)
            fail(Status::Format, "dataset '", pattern, "': the folder '", dir, "' holds an "
                 "unfinished prepare ('", manifest, "' says \"complete\": false): a prepare "
                 "into it stopped while it replaced the shards, so they may mix two runs' "
                 "tokens; ", prepare_again(dir));
        std::map<std::string, const ManifestShard*> listed;
        for (const ManifestShard& s : m->shards) listed[s.name] = &s;
        for (const std::string& name : names) {
            const std::string path = path_join(dir, name);
            const auto it = listed.find(name);
            if (it == listed.end())
                fail(Status::Format, "dataset '", pattern, "': '", path, "' is not one of the "
                     "shards '", manifest, "' lists: it is left from another run or was put "
                     "there by hand, and would mix into this prepare's set; ",
                     prepare_again(dir), ", or remove the file");
            struct stat st {};
            // An unreadable or odd file is left to the shard reader, which names the fault.
            if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                static_cast<uint64_t>(st.st_size) != it->second->bytes)
                fail(Status::Format, "dataset '", pattern, "': '", path, "' is ", st.st_size,
                     " bytes, but '", manifest, "' lists it with ", it->second->bytes,
                     " bytes (", it->second->tokens, " tokens): it was replaced or cut after "
                     "prepare wrote it; ", prepare_again(dir));
        }
        if (!glob) continue;
        for (const ManifestShard& s : m->shards)
            if (::fnmatch(name_pattern.c_str(), s.name.c_str(), FNM_PERIOD) == 0 &&
                std::find(names.begin(), names.end(), s.name) == names.end())
                fail(Status::Format, "dataset '", pattern, "': '", path_join(dir, s.name),
                     "', one of the shards '", manifest, "' lists, is missing, so the set "
                     "is incomplete; ", prepare_again(dir));
    }
}

}  // namespace trt
