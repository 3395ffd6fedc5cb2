// What a file that is not the expected format looks like, from its first bytes, so an error
// can say "this is a config.json" or "this is text: run trainrt prepare" instead of only
// "bad magic".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace trt {

// A short phrase naming a recognised kind ("JSON text (a config.json?)", "plain text", "a
// zip archive (PyTorch's pytorch_model.bin / .pt)", "a Python pickle", "a GGUF file
// (llama.cpp)", "a safetensors file", "an llm.c token shard", "an llm.c checkpoint"), or ""
// when nothing matches. bytes: the file's first n bytes (n may be 0).
std::string sniff_file_kind(const uint8_t* bytes, size_t n);

}  // namespace trt
