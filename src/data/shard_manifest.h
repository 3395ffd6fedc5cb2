// prepare.json: the manifest of a folder that prepare wrote (docs/FORMATS.md §1, "The
// manifest"). It lists every shard of both splits with its token count and size, so a reader
// of a glob ("data/train_*.bin") can tell the set prepare committed from a mix: shards of an
// earlier run, one missing, or a prepare killed while it replaced them. prepare writes it with
// "complete": false before the first new shard takes its name, and with "complete": true
// last; a reader refuses a folder whose manifest is unfinished or does not match. A folder
// without a manifest (prepared before it existed, or shards written by other tools) is read
// as it always was.
//
// It also names the tokenizer that made the shards ("tokenizer": kind, digest, vocabulary
// size, the path given; tokenizer/tokenizer_identity.h), so a session can refuse data of
// another tokenizer (data/tokenizer_agreement.h). Manifests written before have none: the
// tokenizer is then unknown.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_identity.h"

namespace trt {

inline constexpr const char* kShardManifestFile = "prepare.json";

struct ManifestShard {
    std::string name;   // "train_000003.bin": a file in the manifest's folder
    std::string split;  // "train" or "val"
    int64_t tokens = 0;
    uint64_t bytes = 0;  // 1024 + tokens * token_bytes
};

struct ShardManifest {
    bool complete = false;
    int token_bytes = 2;
    std::vector<ManifestShard> shards;
    // The tokenizer the shards were made with; nullopt: not recorded (an older prepare).
    std::optional<tok::TokenizerIdentity> tokenizer;
};

// Whether `name` is one prepare writes: train.bin, val.bin, train_NNNNNN.bin, val_NNNNNN.bin.
// Only such files are held to the manifest; others in the folder are not prepare's.
bool is_prepared_shard_name(const std::string& name);

// Writes dir/prepare.json atomically.
void write_shard_manifest(const std::string& dir, const ShardManifest& m);
// dir/prepare.json, or nullopt when there is none; Error(Format) naming it when it is not a
// manifest this version reads.
std::optional<ShardManifest> read_shard_manifest(const std::string& dir);

// Checks the shard paths that a dataset path or glob (`pattern`) gave against the manifest
// of each folder they lie in: Error(Format) naming the folder, the shard and what to do
// (prepare again) when the folder's prepare is unfinished, a prepare-named file matched is
// not listed or has another size, or a listed shard that the pattern would match is missing.
void check_prepared_shards(const std::string& pattern, const std::vector<std::string>& paths);

}  // namespace trt
