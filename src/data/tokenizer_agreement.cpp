// The tokenizer agreement check (tokenizer_agreement.h).
#include "data/tokenizer_agreement.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "data/shard_manifest.h"
#include "io/fs_util.h"

namespace trt {
namespace {

// What one part of the run says about its tokenizer: `text` for messages, whether known or not.
struct Claim {
    std::optional<tok::TokenizerIdentity> id;
    std::string text;
};

std::string base_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One claim per folder of the datasets' shards, in order of first use, naming the keys that
// read it. A shard not named as prepare names them is not the manifest's (check_prepared_shards
// holds the same rule): its tokenizer is unknown.
std::vector<Claim> shard_claims(const RunTokenizers& run) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::string>> keys;  // folder -> keys
    std::map<std::string, bool> foreign;                   // folder -> a non-prepare shard
    for (const auto& [key, data] : run.datasets) {
        if (!data) continue;
        for (size_t s = 0; s < data->num_shards(); ++s) {
            const std::string& path = data->shard_path(s);
            const std::string dir = parent_dir(path);
            if (!keys.count(dir)) order.push_back(dir);
            std::vector<std::string>& k = keys[dir];
            if (std::find(k.begin(), k.end(), key) == k.end()) k.push_back(key);
            if (!is_prepared_shard_name(base_name(path))) foreign[dir] = true;
        }
    }
    std::vector<Claim> claims;
    for (const std::string& dir : order) {
        std::string who;
        for (const std::string& k : keys[dir]) who += who.empty() ? k : ", " + k;
        who = cat(who, ": the shards in '", dir, "'");
        const std::string manifest = path_join(dir, kShardManifestFile);
        Claim c;
        if (foreign[dir]) {
            c.text = cat(who, " were not all written by trainrt prepare (no tokenizer recorded)");
        } else if (const std::optional<ShardManifest> m = read_shard_manifest(dir); !m) {
            c.text = cat(who, " record no tokenizer (no ", manifest, ")");
        } else if (!m->tokenizer) {
            c.text = cat(who, " record no tokenizer (", manifest, " was written by an older "
                         "trainrt prepare)");
        } else {
            c.id = m->tokenizer;
            c.text = cat(who, " were made with ", c.id->describe(), " (", manifest, ")");
        }
        claims.push_back(std::move(c));
    }
    return claims;
}

// model.init_from's tokenizer, if it is a folder holding one.
Claim folder_claim(const RunTokenizers& run) {
    namespace fs = std::filesystem;
    if (run.init_from.empty()) return {std::nullopt, "model.init_from is not set"};
    std::error_code ec;
    const fs::path dir(run.init_from);
    if (!fs::is_directory(dir, ec) || (!fs::is_regular_file(dir / "tokenizer.json", ec) &&
                                       !fs::is_regular_file(dir / "tokenizer.model", ec)))
        return {std::nullopt, cat("model.init_from '", run.init_from, "' holds no tokenizer")};
    // data.tokenizer defaults to the folder: the same path is loaded once.
    const tok::TokenizerIdentity id =
        run.data_tokenizer_identity && run.data_tokenizer == run.init_from
            ? *run.data_tokenizer_identity
            : tok::load_tokenizer_identity(run.init_from, "model.init_from");
    return {id, cat("model.init_from holds ", id.describe())};
}

Claim data_tokenizer_claim(const RunTokenizers& run) {
    if (run.data_tokenizer.empty()) return {std::nullopt, "data.tokenizer is not set"};
    const tok::TokenizerIdentity id =
        run.data_tokenizer_identity
            ? *run.data_tokenizer_identity
            : tok::load_tokenizer_identity(run.data_tokenizer, "data.tokenizer");
    return {id, cat("data.tokenizer is ", id.describe())};
}

}  // namespace

void check_tokenizer_agreement(const RunTokenizers& run, bool enforce, const Logger& log) {
    const std::vector<Claim> shards = shard_claims(run);
    std::vector<Claim> claims = shards;
    claims.push_back(data_tokenizer_claim(run));
    claims.push_back(folder_claim(run));

    const tok::TokenizerIdentity* first = nullptr;
    bool differ = false;
    for (const Claim& c : claims) {
        if (!c.id) continue;
        if (!first) first = &*c.id;
        else if (!tok::same_tokenizer(*first, *c.id)) differ = true;
    }
    if (!differ) {
        std::string unknown;
        for (const Claim& c : shards)
            if (!c.id) unknown += cat(unknown.empty() ? "" : "; ", c.text);
        if (!unknown.empty() && first)
            log.info("tokenizer not checked: ", unknown, " (prepare the data again to have it "
                     "checked against ", first->describe(), ")");
        return;
    }
    std::string parts;
    for (const Claim& c : claims) parts += cat(parts.empty() ? "" : "; ", c.text);
    const std::string what = cat(
        "the data and the tokenizers disagree: ", parts, ". Token ids mean nothing without the "
        "tokenizer that made them: trained with another's, the model learns the wrong text "
        "without an error");
    if (!enforce) {
        log.warn("data.tokenizer_check = false: going on although ", what);
        return;
    }
    fail(Status::Config, what, ". Prepare the data again with the model's tokenizer "
         "(trainrt prepare --tokenizer PATH), or point data.tokenizer (and model.init_from) at "
         "the tokenizer the data was prepared with; if you know they agree, set "
         "data.tokenizer_check = false");
}

}  // namespace trt
