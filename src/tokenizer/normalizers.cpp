// Normalizer (normalizers.h): reading the steps, and applying them in order.
#include "tokenizer/normalizers.h"

#include "tokenizer/nfc.h"

namespace trt::tok {

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0;;) {
        const size_t hit = text.find(from, i);
        if (hit == std::string_view::npos) {
            out.append(text.substr(i));
            return out;
        }
        out.append(text.substr(i, hit - i));
        out.append(to);
        i = hit + from.size();
    }
}

Normalizer Normalizer::from_json(const JsonReader& r, const json::Value* v,
                                 const std::string& path) {
    Normalizer n;
    if (v) n.read(r, *v, path);
    return n;
}

void Normalizer::read(const JsonReader& r, const json::Value& v, const std::string& path) {
    const std::string type = r.type(v, path);
    if (type == "Sequence") {
        const json::Value* list = r.member(v, "normalizers");
        if (!list || !list->is_array()) r.bad(path + ".normalizers", "must be an array");
        for (size_t k = 0; k < list->arr.size(); k++)
            read(r, list->arr[k], path + ".normalizers[" + std::to_string(k) + "]");
    } else if (type == "NFC") {
        steps_.push_back({Kind::Nfc, "", ""});
    } else if (type == "Replace") {
        const json::Value* content = r.member(v, "content");
        if (!content) r.bad(path + ".content", "is missing");
        steps_.push_back({Kind::Replace, r.literal_pattern(v, path),
                          r.string(*content, path + ".content")});
    } else if (type == "Prepend") {
        const json::Value* prepend = r.member(v, "prepend");
        if (!prepend) r.bad(path + ".prepend", "is missing");
        steps_.push_back({Kind::Prepend, "", r.string(*prepend, path + ".prepend")});
    } else {
        r.unsupported(path, "\"" + type + "\" is not supported (NFC, Replace with a String "
                            "pattern, Prepend, or a Sequence of them)");
    }
}

std::string Normalizer::apply(std::string_view text) const {
    std::string s(text);
    for (const Step& step : steps_) {
        switch (step.kind) {
            case Kind::Nfc: s = to_nfc(s); break;
            case Kind::Replace: s = replace_all(s, step.from, step.to); break;
            case Kind::Prepend:  // as Hugging Face's: an empty text stays empty
                if (!s.empty()) s.insert(0, step.to);
                break;
        }
    }
    return s;
}

std::string Normalizer::describe() const {
    std::string d;
    for (const Step& step : steps_) {
        const char* name = step.kind == Kind::Nfc ? "nfc" : step.kind == Kind::Replace ? "replace"
                                                                                       : "prepend";
        // Lengths first, so no two step lists read alike.
        d += std::string(name) + ":" + std::to_string(step.from.size()) + ":" + step.from + ":" +
             std::to_string(step.to.size()) + ":" + step.to + ";";
    }
    return d;
}

}  // namespace trt::tok
