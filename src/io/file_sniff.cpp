#include "io/file_sniff.h"

#include <cstring>

namespace trt {

namespace {

int32_t le32(const uint8_t* p) {
    return static_cast<int32_t>(uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                                uint32_t{p[3]} << 24);
}

// Mostly printable ASCII or UTF-8 continuation/lead bytes, no NULs: text.
bool looks_like_text(const uint8_t* p, size_t n) {
    if (n == 0) return false;
    size_t odd = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t c = p[i];
        if (c == 0) return false;
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') ++odd;
    }
    return odd * 100 <= n;  // a stray control character or two
}

}  // namespace

std::string sniff_file_kind(const uint8_t* p, size_t n) {
    if (n >= 4 && std::memcmp(p, "PK\x03\x04", 4) == 0)
        return "a zip archive (PyTorch's pytorch_model.bin / .pt: convert it to safetensors)";
    if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
        return "a Python pickle (PyTorch's older .bin / .pt: convert it to safetensors)";
    if (n >= 4 && std::memcmp(p, "GGUF", 4) == 0) return "a GGUF file (llama.cpp)";
    if (n >= 4) {
        const int32_t magic = le32(p);
        if (magic == 20240520 || magic == 20240801) return "an llm.c token shard";
        if (magic == 20240326) return "an llm.c checkpoint";
    }
    if (n >= 10) {  // 8-byte little-endian header length, then '{'
        uint64_t len = 0;
        for (int k = 7; k >= 0; --k) len = (len << 8) | p[k];
        if (p[8] == '{' && len >= 2 && len < (uint64_t{1} << 32)) return "a safetensors file";
    }
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) ++i;
    if (i < n && (p[i] == '{' || p[i] == '[') && looks_like_text(p, n))
        return "JSON text (a config.json or tokenizer.json?)";
    if (looks_like_text(p, n)) return "plain text";
    return "";
}

}  // namespace trt
