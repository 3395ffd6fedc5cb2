// A SentencePiece model (tokenizer.model: Llama 2, TinyLlama, Mistral, Gemma style; BPE or
// unigram), encoded and decoded by Google's own library (Debian's libsentencepiece), so ids
// are exactly spm_encode's. Built only with TRAINRT_SENTENCEPIECE (CMakeLists.txt); without
// it, loading one is refused with Error(Unsupported) saying so.
//
// SentencePiece semantics, not transformers': text is normalized as the model says (its
// normalizer spec, the dummy prefix "▁"), and a control token's text in the input ("</s>")
// is plain text, never its id. Decode drops control tokens.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer_model.h"

namespace trt::tok {

// Whether this build reads SentencePiece models.
bool sentencepiece_supported();

// From the bytes of a .model file (a serialized ModelProto; `source` names it in errors).
// Error(Format) when they are not a model SentencePiece accepts, naming its reason.
std::shared_ptr<const TokenizerModel> sentencepiece_from_bytes(std::string_view bytes,
                                                               const std::string& source);

}  // namespace trt::tok
