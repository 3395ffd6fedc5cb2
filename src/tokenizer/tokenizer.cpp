// Tokenizer (tokenizer.h): the format told from the file, and the argument checks every
// format shares.
#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "io/fs_util.h"
#include "tokenizer/hf_bpe_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

// tokenizer.json files of large vocabularies run to tens of MB (Llama 3: 9 MB); SentencePiece
// models to a few (Gemma: 4 MB).
constexpr size_t kMaxTokenizerBytes = size_t(256) << 20;

}  // namespace

TokenizerFormat detect_tokenizer_format(std::string_view head, const std::string& source) {
    const size_t first = head.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && head[first] == '{') return TokenizerFormat::HfJson;
    // A ModelProto begins with its field 1 (repeated pieces), length-delimited: tag 0x0a.
    if (!head.empty() && head[0] == '\x0a') return TokenizerFormat::SentencePiece;
    fail(Status::Format, source, ": neither a Hugging Face tokenizer.json (JSON) nor a "
         "SentencePiece model (tokenizer.model)", head.empty() ? ": the file is empty" : "",
         " (a tiktoken file, as Llama 3's original/tokenizer.model, is not read: use the "
         "model's tokenizer.json)");
}

Tokenizer Tokenizer::from_file(const std::string& path) {
    const std::string bytes = read_small_file(path, kMaxTokenizerBytes);
    if (detect_tokenizer_format(bytes, path) == TokenizerFormat::SentencePiece)
        return Tokenizer(sentencepiece_from_bytes(bytes, path), TokenizerFormat::SentencePiece);
    return from_json(bytes, path);
}

Tokenizer Tokenizer::from_json(std::string_view text, const std::string& source) {
    return Tokenizer(HfBpeTokenizer::from_json(text, source), TokenizerFormat::HfJson);
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
    if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
        fail(Status::InvalidArgument, "tokenizer: the text is not valid UTF-8 (byte ", bad, ")");
    return model_->encode(text);
}

std::string Tokenizer::decode(const std::vector<uint32_t>& ids) const {
    const uint32_t limit = model_->id_limit();
    for (uint32_t id : ids)
        if (id >= limit)
            fail(Status::InvalidArgument, "tokenizer: id ", id, " is out of range (ids below ",
                 limit, ")");
    return model_->decode(ids);
}

}  // namespace trt::tok
