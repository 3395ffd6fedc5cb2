// Metaspace, the SentencePiece convention of tokenizer.json: spaces are written as a visible
// replacement character ("▁", U+2581), a word may get one in front (prepend_scheme), and the
// text may be cut before each one (split). The decoder turns them back into spaces and drops
// the one prepended to the first token.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "io/json_min.h"
#include "tokenizer/json_reader.h"

namespace trt::tok {

struct Metaspace {
    enum class Prepend { Always, First, Never };
    std::string replacement = "\xE2\x96\x81";  // ▁
    Prepend prepend = Prepend::Always;
    bool split = true;  // the pre-tokenizer cuts before each replacement (MergedWithNext)

    // From a {"type": "Metaspace", ...} object: replacement, prepend_scheme ("always", "first",
    // "never") or the older add_prefix_space, split.
    static Metaspace from_json(const JsonReader& r, const json::Value& v, const std::string& path);

    // The pre-tokenizer on one piece: spaces replaced, the replacement prepended where the
    // scheme says (`at_start`: the piece begins the text given to encode, for "first"), then
    // cut before each replacement when split is set. Appends the pieces to out.
    void pre_tokenize(std::string_view piece, bool at_start, std::vector<std::string>& out) const;
    // The decoder on the tokens (in place): replacements become spaces, except in the first
    // token, where they are dropped unless the scheme is "never".
    void decode(std::vector<std::string>& tokens) const;

    std::string describe() const;
};

}  // namespace trt::tok
