// Decoder (decoders.h), step by step as Hugging Face's tokenizers (Rust) define each.
#include "tokenizer/decoders.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// ByteFallback: runs of <0xNN> tokens become the text of their bytes; a run that is not valid
// UTF-8 becomes one U+FFFD per byte (as HF's decoder does).
void byte_fallback(std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    std::string bytes;
    size_t run = 0;
    const auto flush = [&] {
        if (run == 0) return;
        if (invalid_utf8_at(bytes) == std::string::npos) {
            out.push_back(bytes);
        } else {
            for (size_t k = 0; k < run; k++) out.push_back("\xEF\xBF\xBD");
        }
        bytes.clear();
        run = 0;
    };
    for (std::string& t : tokens) {
        unsigned char b = 0;
        if (byte_fallback_token(t, b)) {
            bytes.push_back(static_cast<char>(b));
            run++;
            continue;
        }
        flush();
        out.push_back(std::move(t));
    }
    flush();
    tokens.swap(out);
}

// Strip: up to `start` leading and `stop` trailing copies of `content` off each token.
void strip(std::vector<std::string>& tokens, const std::string& content, uint32_t start,
           uint32_t stop) {
    for (std::string& t : tokens) {
        size_t begin = 0, end = t.size();
        for (uint32_t k = 0; k < start && end - begin >= content.size() &&
                             t.compare(begin, content.size(), content) == 0; k++)
            begin += content.size();
        for (uint32_t k = 0; k < stop && end - begin >= content.size() &&
                             t.compare(end - content.size(), content.size(), content) == 0; k++)
            end -= content.size();
        t = t.substr(begin, end - begin);
    }
}

}  // namespace

bool byte_fallback_token(const std::string& token, unsigned char& byte) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return false;
    const int hi = hex_digit(token[3]), lo = hex_digit(token[4]);
    if (hi < 0 || lo < 0) return false;
    byte = static_cast<unsigned char>(hi * 16 + lo);
    return true;
}

Decoder Decoder::from_json(const JsonReader& r, const json::Value* v, const std::string& path) {
    Decoder d;
    if (v) d.read(r, *v, path);
    return d;
}

void Decoder::read(const JsonReader& r, const json::Value& v, const std::string& path) {
    const std::string type = r.type(v, path);
    Step s{Kind::Fuse, "", "", "", 0, 0, Metaspace{}};
    if (type == "Sequence") {
        const json::Value* list = r.member(v, "decoders");
        if (!list || !list->is_array()) r.bad(path + ".decoders", "must be an array");
        for (size_t k = 0; k < list->arr.size(); k++)
            read(r, list->arr[k], path + ".decoders[" + std::to_string(k) + "]");
        return;
    } else if (type == "ByteLevel") {
        s.kind = Kind::ByteLevel;
    } else if (type == "Replace") {
        s.kind = Kind::Replace;
        const json::Value* content = r.member(v, "content");
        if (!content) r.bad(path + ".content", "is missing");
        s.from = r.literal_pattern(v, path);
        s.to = r.string(*content, path + ".content");
    } else if (type == "ByteFallback") {
        s.kind = Kind::ByteFallback;
    } else if (type == "Fuse") {
        s.kind = Kind::Fuse;
    } else if (type == "Strip") {
        s.kind = Kind::Strip;
        s.content = r.string_or(v, "content", " ", path);
        if (s.content.empty() || invalid_utf8_at(s.content) != std::string::npos ||
            static_cast<size_t>(decode_utf8(s.content, 0).len) != s.content.size())
            r.bad(path + ".content", "must be one character, not \"" + s.content + "\"");
        s.start = r.count(v, "start", 0, path);
        s.stop = r.count(v, "stop", 0, path);
    } else if (type == "Metaspace") {
        s.kind = Kind::Metaspace;
        s.metaspace = Metaspace::from_json(r, v, path);
    } else {
        r.unsupported(path, "\"" + type + "\" is not supported (ByteLevel, Replace, ByteFallback, "
                            "Fuse, Strip, Metaspace, or a Sequence of them)");
    }
    steps_.push_back(std::move(s));
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
    for (const Step& s : steps_) {
        switch (s.kind) {
            case Kind::ByteLevel:
                for (std::string& t : tokens) {
                    std::string bytes;
                    if (from_byte_chars(t, bytes)) t = std::move(bytes);
                }
                break;
            case Kind::Replace:
                for (std::string& t : tokens) t = replace_all(t, s.from, s.to);
                break;
            case Kind::ByteFallback: byte_fallback(tokens); break;
            case Kind::Fuse: {
                std::string all;
                for (const std::string& t : tokens) all += t;
                tokens.assign(1, std::move(all));
                break;
            }
            case Kind::Strip: strip(tokens, s.content, s.start, s.stop); break;
            case Kind::Metaspace: s.metaspace.decode(tokens); break;
        }
    }
    std::string out;
    for (const std::string& t : tokens) out += t;
    return out;
}

std::string Decoder::describe() const {
    std::string d;
    for (const Step& s : steps_) {
        switch (s.kind) {
            case Kind::ByteLevel: d += "bytelevel"; break;
            case Kind::Replace:
                d += "replace:" + std::to_string(s.from.size()) + ":" + s.from + ":" +
                     std::to_string(s.to.size()) + ":" + s.to;
                break;
            case Kind::ByteFallback: d += "bytefallback"; break;
            case Kind::Fuse: d += "fuse"; break;
            case Kind::Strip:
                d += "strip:" + s.content + ":" + std::to_string(s.start) + ":" +
                     std::to_string(s.stop);
                break;
            case Kind::Metaspace: d += s.metaspace.describe(); break;
        }
        d += ";";
    }
    return d;
}

}  // namespace trt::tok
