// fuzz_tokenizer: Hugging Face tokenizer.json files and the text they encode (src/tokenizer).
//
// Input: a mode byte, then the payload.
//   mode < 128: the payload is a tokenizer.json. A refusal must be a trt::Error; a tokenizer
//     that loads must encode a fixed mixed text (or refuse it with a trt::Error: a character
//     with no token and no unk_token) to ids below id_limit() that decode. (Not every
//     tokenizer that loads is lossless: a Split that removes text, a Replace normalizer.)
//   mode >= 128: the payload is text for three fixed tokenizers (the GPT-2 and the cl100k
//     pre-tokenizer over tests/tokenizer/synthetic_tokenizer.h's vocabulary, and its
//     SentencePiece-style one: Prepend + Replace normalizers, byte_fallback, Strip decoder).
//     Invalid UTF-8 must be refused with InvalidArgument; valid text must round-trip through
//     decode (for the SentencePiece-style one, text without "▁" or its added tokens, which
//     it cannot give back), and every id must be below id_limit(). Valid text also goes
//     through to_nfc (the NFC normalizer), whose result must be valid UTF-8 and its own NFC.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/nfc.h"
#include "tokenizer/synthetic_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace {

using trt::tok::Tokenizer;

void check_round_trip(const Tokenizer& t, std::string_view text, const char* what) {
    const std::vector<uint32_t> ids = t.encode(text);
    for (uint32_t id : ids)
        if (id >= t.id_limit()) fuzz::die(std::string(what) + ": an id beyond id_limit()");
    if (t.decode(ids) != text) fuzz::die(std::string(what) + ": decode(encode(text)) != text");
}

enum class Fixed { Gpt2, Cl100k, SentencePiece };

const Tokenizer& fixed(Fixed which) {
    static const Tokenizer gpt2 = Tokenizer::from_json(synthetic::tokenizer_json(), "gpt2");
    static const Tokenizer cl = [] {
        synthetic::Spec s;
        s.pre_tokenizer = synthetic::cl100k_pre_tokenizer();
        s.ignore_merges = true;
        return Tokenizer::from_json(synthetic::tokenizer_json(s), "cl100k");
    }();
    static const Tokenizer sp = Tokenizer::from_json(synthetic::sp_tokenizer_json(), "sp");
    return which == Fixed::Gpt2 ? gpt2 : which == Fixed::Cl100k ? cl : sp;
}

// What the SentencePiece-style tokenizer cannot give back: ▁ (it stands for a space) and its
// added tokens (the text after one gets a ▁ of its own).
bool sp_lossless(std::string_view text) {
    for (const char* s : {"\xE2\x96\x81", "<s>", "</s>", "<unk>"})
        if (text.find(s) != std::string_view::npos) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] < 128) {
        try {
            const Tokenizer t = Tokenizer::from_json(payload, "fuzz/tokenizer.json");
            const std::vector<uint32_t> ids =
                t.encode("Hello world, it's 12345 <|end|> \xE6\x97\xA5\xE6\x9C\xAC  \n\tx");
            for (uint32_t id : ids)
                if (id >= t.id_limit()) fuzz::die("loaded tokenizer: an id beyond id_limit()");
            (void)t.decode(ids);
        } catch (const trt::Error& e) {
            fuzz::refused("tokenizer.json", e);
        }
        return 0;
    }
    const bool valid = trt::tok::invalid_utf8_at(payload) == std::string_view::npos;
    if (valid) {
        const std::string nfc = trt::tok::to_nfc(payload);
        if (trt::tok::invalid_utf8_at(nfc) != std::string_view::npos)
            fuzz::die("to_nfc wrote invalid UTF-8");
        if (trt::tok::to_nfc(nfc) != nfc) fuzz::die("to_nfc is not idempotent");
    }
    for (Fixed which : {Fixed::Gpt2, Fixed::Cl100k, Fixed::SentencePiece}) {
        const char* name = which == Fixed::Gpt2 ? "gpt2" : which == Fixed::Cl100k ? "cl100k" : "sp";
        try {
            if (which == Fixed::SentencePiece && valid && !sp_lossless(payload)) {
                const std::vector<uint32_t> ids = fixed(which).encode(payload);
                for (uint32_t id : ids)
                    if (id >= fixed(which).id_limit()) fuzz::die("sp: an id beyond id_limit()");
                (void)fixed(which).decode(ids);
                continue;
            }
            check_round_trip(fixed(which), payload, name);
            if (!valid) fuzz::die("invalid UTF-8 was encoded");
        } catch (const trt::Error& e) {
            if (valid || e.status() != trt::Status::InvalidArgument)
                fuzz::die(std::string("refused: ") + e.what());
        }
    }
    return 0;
}
