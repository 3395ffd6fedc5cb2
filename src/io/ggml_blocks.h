// ggml's tensor element types as GGUF stores them (docs/FORMATS.md "GGUF"): the type ids, the
// bytes a row takes, and the encoders from fp32. Pure functions, no I/O.
//
//   F32   4 bytes an element, little-endian IEEE.
//   F16   2 bytes, IEEE binary16, rounded to nearest even (core/fp16.h).
//   BF16  2 bytes, the upper half of the fp32, rounded to nearest even (core/bf16.h).
//   Q8_0  blocks of 32 elements along a row: an fp16 scale d = max|x| / 127 then 32 int8
//         q = round(x / d) (half away from zero, as ggml's reference quantiser's roundf), so
//         x ≈ d·q; a block of zeros has d = 0 and q = 0. 34 bytes a block. A row's length
//         must be a multiple of 32 (llama.cpp reads blocks along ne[0], the innermost dim).
#pragma once
#include <cstddef>
#include <cstdint>

namespace trt::gguf {

// ggml_type ids (ggml.h): only the ones this writer produces.
enum class TensorType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, BF16 = 30 };

inline constexpr size_t kQ8Block = 32;       // elements a Q8_0 block holds
inline constexpr size_t kQ8BlockBytes = 34;  // its fp16 scale + 32 int8

const char* type_name(TensorType t);  // "F32", "F16", "Q8_0", "BF16"
// Elements a row of `t` must be a multiple of (1, or 32 for Q8_0).
size_t block_elements(TensorType t);
// Bytes `n` elements of `t` take; n a multiple of block_elements(t).
uint64_t encoded_bytes(TensorType t, uint64_t n);

// Encodes src[n] (n a multiple of block_elements(t)) into dst[encoded_bytes(t, n)].
void encode(TensorType t, const float* src, size_t n, uint8_t* dst);

// One Q8_0 block: src[32] into dst[34] (the scale first, little-endian fp16).
void encode_q8_0_block(const float* src, uint8_t* dst);

}  // namespace trt::gguf
