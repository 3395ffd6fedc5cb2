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
//   Q4_0  (read only) blocks of 32: an fp16 scale d then 16 bytes; byte j holds element j in
//         its low nibble and element j + 16 in its high one, each as q + 8 (q in -8..7), so
//         x = d·q. 18 bytes a block.
#pragma once
#include <cstddef>
#include <cstdint>

namespace trt::gguf {

// ggml_type ids (ggml.h): the ones this writer produces, and Q4_0, which the reader decodes.
enum class TensorType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, BF16 = 30 };

inline constexpr size_t kQ8Block = 32;       // elements a Q8_0 block holds
inline constexpr size_t kQ8BlockBytes = 34;  // its fp16 scale + 32 int8
inline constexpr size_t kQ4Block = 32;       // elements a Q4_0 block holds
inline constexpr size_t kQ4BlockBytes = 18;  // its fp16 scale + 16 bytes of nibbles

const char* type_name(TensorType t);  // "F32", "F16", "Q4_0", "Q8_0", "BF16"
// Elements a row of `t` must be a multiple of (1, or 32 for Q8_0 and Q4_0).
size_t block_elements(TensorType t);
// Bytes `n` elements of `t` take; n a multiple of block_elements(t).
uint64_t encoded_bytes(TensorType t, uint64_t n);

// Encodes src[n] (n a multiple of block_elements(t)) into dst[encoded_bytes(t, n)]; every
// type but Q4_0 (which nothing here writes).
void encode(TensorType t, const float* src, size_t n, uint8_t* dst);

// Decodes src[encoded_bytes(t, n)] into dst[n] (n a multiple of block_elements(t)): exactly
// the values ggml's dequantisers give (an fp16 scale widened, times the integer, in fp32).
void decode(TensorType t, const uint8_t* src, size_t n, float* dst);

// One Q8_0 block: src[32] into dst[34] (the scale first, little-endian fp16).
void encode_q8_0_block(const float* src, uint8_t* dst);

}  // namespace trt::gguf
