// Metaspace (metaspace.h), as Hugging Face's tokenizers (Rust) define it. (The JavaScript
// oracle ignores `split`; no tokenizer it checks uses Metaspace.)
#include "tokenizer/metaspace.h"

#include "tokenizer/normalizers.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {

Metaspace Metaspace::from_json(const JsonReader& r, const json::Value& v, const std::string& path) {
    Metaspace m;
    m.replacement = r.string_or(v, "replacement", m.replacement, path);
    // One character, as HF's reader insists (a char in Rust).
    if (m.replacement.empty() || invalid_utf8_at(m.replacement) != std::string_view::npos ||
        static_cast<size_t>(decode_utf8(m.replacement, 0).len) != m.replacement.size())
        r.bad(path + ".replacement", "must be one character, not \"" + m.replacement + "\"");
    if (const json::Value* scheme = r.member(v, "prepend_scheme")) {
        const std::string s = r.string(*scheme, path + ".prepend_scheme");
        if (s == "always") m.prepend = Prepend::Always;
        else if (s == "first") m.prepend = Prepend::First;
        else if (s == "never") m.prepend = Prepend::Never;
        else r.bad(path + ".prepend_scheme", "must be \"always\", \"first\" or \"never\", not \"" + s + "\"");
    } else {
        m.prepend = r.boolean(v, "add_prefix_space", true, path) ? Prepend::Always : Prepend::Never;
    }
    m.split = r.boolean(v, "split", true, path);
    return m;
}

void Metaspace::pre_tokenize(std::string_view piece, bool at_start,
                             std::vector<std::string>& out) const {
    std::string s = replace_all(piece, " ", replacement);
    const bool starts = s.compare(0, replacement.size(), replacement) == 0;
    if (!starts && (prepend == Prepend::Always || (prepend == Prepend::First && at_start)))
        s.insert(0, replacement);
    if (!split) {
        if (!s.empty()) out.push_back(std::move(s));
        return;
    }
    // MergedWithNext: each replacement starts a piece.
    size_t begin = 0;
    for (size_t hit = s.find(replacement, 1); hit != std::string::npos;
         hit = s.find(replacement, hit + replacement.size())) {
        if (hit > begin) out.push_back(s.substr(begin, hit - begin));
        begin = hit;
    }
    if (begin < s.size()) out.push_back(s.substr(begin));
}

void Metaspace::decode(std::vector<std::string>& tokens) const {
    // As Hugging Face's decoder: every replacement in the first token is dropped (not only a
    // leading one) unless the scheme is "never"; so "▁▁" first decodes to "".
    for (size_t i = 0; i < tokens.size(); i++)
        tokens[i] = replace_all(tokens[i], replacement,
                                i == 0 && prepend != Prepend::Never ? "" : " ");
}

std::string Metaspace::describe() const {
    return "metaspace:" + replacement + ":" +
           (prepend == Prepend::Always ? "always" : prepend == Prepend::First ? "first" : "never") +
           (split ? ":split" : ":whole");
}

}  // namespace trt::tok
