// The pre-tokenizer of a tokenizer.json as a pipeline: the steps cut the (normalized) text into
// the pieces BPE sees. ByteLevel (an optional prefix space and GPT-2's regex), Split (a String
// or a regex, with each of Hugging Face's delimiter behaviours and invert), Digits, Metaspace,
// and Sequences of them. Regexes run on the engine of regex.h, except the GPT-2 and cl100k
// ones, which keep their hand-written scanners (pretokenizer.h; test_regex.cpp checks the two
// agree).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/json_min.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/metaspace.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/regex.h"

namespace trt::tok {

// What becomes of a Split pattern's matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Applies a behaviour to `matches` (non-overlapping [start, end) byte ranges of piece, in order;
// empty ones allowed): appends the resulting non-empty pieces as offsets into piece. With
// invert, the text between matches is what the behaviour treats as the delimiters.
void split_by_matches(std::string_view piece,
                      const std::vector<std::pair<size_t, size_t>>& matches,
                      SplitBehavior behavior, bool invert,
                      std::vector<std::pair<size_t, size_t>>& out);

class PreTokenizer {
public:
    PreTokenizer() = default;  // none: each text between added tokens is one piece
    // From tokenizer.json's "pre_tokenizer" (nullptr: none). Refuses, naming the path, what it
    // does not implement.
    static PreTokenizer from_json(const JsonReader& r, const json::Value* v,
                                  const std::string& path);

    // Whether a ByteLevel step is in it: BPE then works on bytes (the byte-level alphabet).
    bool byte_level() const;
    // True when this is one of the byte-level layouts the fast scanner path implements
    // (ByteLevel with its regex; or Split(known regex, Isolated) then ByteLevel without one and
    // without a prefix space): sets the rule and the prefix space.
    bool fast_rule(SplitRule& rule, bool& prefix_space) const;

    // Appends the pieces of text. at_start: text begins the string given to encode
    // (Metaspace's prepend_scheme "first").
    void run(std::string_view text, bool at_start, std::vector<std::string>& pieces) const;

    // A canonical description for the tokenizer's identity.
    std::string describe() const;

private:
    struct Step {
        enum class Kind { ByteLevel, Split, Digits, Metaspace } kind = Kind::ByteLevel;
        bool add_prefix_space = false;  // ByteLevel
        bool use_regex = false;         // ByteLevel: split with GPT-2's regex
        std::string literal;            // Split with a String pattern
        bool has_rule = false;          // Split with a regex the scanners know: rule
        SplitRule rule = SplitRule::Gpt2;
        std::shared_ptr<const Regex> engine;  // Split with any other regex
        bool individual_digits = false;  // Digits
        std::string regex;              // the regex as written (for describe)
        SplitBehavior behavior = SplitBehavior::Isolated;
        bool invert = false;
        Metaspace metaspace;
    };
    void read(const JsonReader& r, const json::Value& v, const std::string& path);
    std::vector<Step> steps_;  // in order, Sequences flattened
};

}  // namespace trt::tok
