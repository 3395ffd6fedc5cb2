// A tokenizer's vocabulary as data, for the files that carry a tokenizer inside them (GGUF:
// runtime/gguf_export.cpp): every id's token text and kind, the merges of a BPE and the
// scores of a SentencePiece model. What the tokenizer does stays in the tokenizer; this is
// only what it holds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trt::tok {

// The kinds of token, numbered as SentencePiece's ModelProto and llama.cpp's GGUF number them.
enum class TokenKind : int32_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,      // special: never produced from text by the BPE (<|endoftext|>, <s>)
    UserDefined = 4,  // an added token that is plain text
    Unused = 5,       // an id nothing uses
    Byte = 6,         // SentencePiece's <0xNN> byte fallback pieces
};

struct VocabTable {
    enum class Model {
        ByteLevelBpe,   // tokenizer.json over the byte-level alphabet (GPT-2, Llama 3, Qwen)
        CharacterBpe,   // tokenizer.json over characters (Llama 2's conversion, byte_fallback)
        SentencePiece,  // tokenizer.model
    } model = Model::ByteLevelBpe;
    std::vector<std::string> tokens;  // by id: the text as the file writes it ("" unused)
    std::vector<TokenKind> kinds;     // by id
    std::vector<float> scores;        // by id (SentencePiece), else empty
    std::vector<std::string> merges;  // "left right" in rank order (BPE), else empty
    // The byte-level pre-tokenizer's regex when it is one of the known ones ("gpt2", "cl100k",
    // "cl100k-single-digits"), "" for any other pre-tokenizer.
    std::string split_rule;
    // Ids the model file itself names (SentencePiece's unk/bos/eos; a BPE's unk_token), or -1.
    int32_t unk = -1, bos = -1, eos = -1;
};

}  // namespace trt::tok
