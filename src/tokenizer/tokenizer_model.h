// What every tokenizer format implements (Hugging Face byte-level BPE: hf_bpe_tokenizer.h;
// SentencePiece: sentencepiece_tokenizer.h). Callers use the Tokenizer of tokenizer.h, which
// picks the format and checks the arguments common to all (UTF-8 text, ids in range).
// Immutable once loaded: encode and decode may run on many threads at once.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab_table.h"

namespace trt::tok {

class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;
    // text: valid UTF-8 (checked by Tokenizer). No BOS/EOS are added.
    virtual std::vector<uint32_t> encode(std::string_view text) const = 0;
    // ids: each below id_limit() (checked by Tokenizer).
    virtual std::string decode(const std::vector<uint32_t>& ids) const = 0;
    virtual uint32_t id_limit() const = 0;  // max id + 1
    // The id of a token (vocabulary entry, added or control token), if there is one.
    virtual bool find(std::string_view token, uint32_t& id) const = 0;
    // The model's own end-of-text token, "" when the format does not name one.
    virtual std::string eos_token() const = 0;
    // Whether text cut just before a line that starts with a letter (after a line ending in
    // printable ASCII) encodes, piece by piece, to what the whole text does. prepare cuts long
    // files there to encode them on all cores.
    virtual bool splits_at_line_starts() const = 0;
    // What defines this tokenizer's behaviour, written canonically (tokenizer_identity.h):
    // equal for two files that tokenize alike however they are written, different when an id,
    // a token or a merge differs. Its digest names the tokenizer in prepare.json.
    virtual std::string identity_content() const = 0;
    // The vocabulary as data (vocab_table.h), for a file that carries the tokenizer inside it.
    virtual VocabTable vocab_table() const = 0;
};

}  // namespace trt::tok
