// Whether a run's parts name one tokenizer: the shards (each folder's prepare.json records
// the tokenizer prepare used: data/shard_manifest.h), data.tokenizer, and the model.init_from
// folder's tokenizer. Ids mean nothing without their tokenizer: data prepared with another
// BPE whose ids fit the vocabulary trains without an error, and only the loss says something
// is off. So a session refuses a run whose known identities differ, naming all of them, unless
// data.tokenizer_check is false. Unknown identities (shards prepared before prepare.json named
// the tokenizer, or by other tools; no data.tokenizer; a folder without a tokenizer) are not
// compared.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "data/token_dataset.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {

struct RunTokenizers {
    // The datasets opened, with the key that named each ("data.train", "data.val").
    std::vector<std::pair<std::string, const TokenDataset*>> datasets;
    std::string data_tokenizer;  // data.tokenizer as configured ("" = none)
    // Its identity, when the caller loaded it already (else it is loaded here).
    std::optional<tok::TokenizerIdentity> data_tokenizer_identity;
    std::string init_from;  // model.init_from ("" = none); only a folder can hold a tokenizer
};

// Compares the identities that are known. When they differ: with `enforce`, Error(Config)
// naming each (path, kind, short digest) and what to do; without, one WARN saying the same, and
// the run goes on. Shard folders whose tokenizer is unknown get one INFO line when there was
// something to compare them with.
void check_tokenizer_agreement(const RunTokenizers& run, bool enforce, const Logger& log);

}  // namespace trt
