// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical
// composition), the "NFC" normalizer of tokenizer.json files (Qwen2, Qwen2.5). Tables from
// scripts/gen-nfc-tables.mjs (nfc_tables.inc), checked there against JavaScript's
// String.prototype.normalize, which the tokenizer oracle test (tests/tokenizer) compares
// whole tokenizers with.
#pragma once
#include <string>
#include <string_view>

namespace trt::tok {

// NFC of text (valid UTF-8). ASCII runs are copied as they are.
std::string to_nfc(std::string_view text);

}  // namespace trt::tok
