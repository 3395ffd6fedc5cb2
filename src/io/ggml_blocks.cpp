#include "io/ggml_blocks.h"

#include <cmath>
#include <cstring>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"

namespace trt::gguf {
namespace {

void put_u16(uint8_t* dst, uint16_t v) {  // little-endian, whatever the host
    dst[0] = static_cast<uint8_t>(v & 0xFF);
    dst[1] = static_cast<uint8_t>(v >> 8);
}

uint16_t get_u16(const uint8_t* src) {
    return static_cast<uint16_t>(src[0] | (static_cast<uint16_t>(src[1]) << 8));
}

}  // namespace

const char* type_name(TensorType t) {
    switch (t) {
        case TensorType::F32:
            return "F32";
        case TensorType::F16:
            return "F16";
        case TensorType::Q4_0:
            return "Q4_0";
        case TensorType::Q8_0:
            return "Q8_0";
        case TensorType::BF16:
            return "BF16";
    }
    return "?";
}

size_t block_elements(TensorType t) {
    return t == TensorType::Q8_0 ? kQ8Block : t == TensorType::Q4_0 ? kQ4Block : 1;
}

uint64_t encoded_bytes(TensorType t, uint64_t n) {
    switch (t) {
        case TensorType::F32:
            return n * 4;
        case TensorType::F16:
        case TensorType::BF16:
            return n * 2;
        case TensorType::Q8_0:
            return n / kQ8Block * kQ8BlockBytes;
        case TensorType::Q4_0:
            return n / kQ4Block * kQ4BlockBytes;
    }
    fail(Status::Internal, "gguf: no size for tensor type ", static_cast<uint32_t>(t));
}

void encode_q8_0_block(const float* src, uint8_t* dst) {
    float amax = 0.0f;
    for (size_t i = 0; i < kQ8Block; i++) amax = std::fmax(amax, std::fabs(src[i]));
    // The scale as computed in fp32; stored as fp16. q uses the fp32 reciprocal, as ggml's
    // reference quantiser does, so the stored d·q can differ from x by slightly more than d/2.
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_u16(dst, float_to_fp16(d));
    for (size_t i = 0; i < kQ8Block; i++) {
        const float q = std::round(src[i] * id);  // half away from zero; |q| <= 127
        dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
}

void encode(TensorType t, const float* src, size_t n, uint8_t* dst) {
    TRT_CHECK(n % block_elements(t) == 0, "gguf: ", n, " elements are not whole ", type_name(t),
              " blocks");
    switch (t) {
        case TensorType::F32:
            for (size_t i = 0; i < n; i++) {
                uint32_t u;
                std::memcpy(&u, &src[i], 4);
                for (int b = 0; b < 4; b++) dst[4 * i + b] = static_cast<uint8_t>(u >> (8 * b));
            }
            return;
        case TensorType::F16:
            for (size_t i = 0; i < n; i++) put_u16(dst + 2 * i, float_to_fp16(src[i]));
            return;
        case TensorType::BF16:
            for (size_t i = 0; i < n; i++) put_u16(dst + 2 * i, float_to_bf16(src[i]));
            return;
        case TensorType::Q8_0:
            for (size_t b = 0; b < n / kQ8Block; b++)
                encode_q8_0_block(src + b * kQ8Block, dst + b * kQ8BlockBytes);
            return;
        case TensorType::Q4_0:
            break;
    }
    fail(Status::Internal, "gguf: no encoder for tensor type ", type_name(t));
}

void decode(TensorType t, const uint8_t* src, size_t n, float* dst) {
    TRT_CHECK(n % block_elements(t) == 0, "gguf: ", n, " elements are not whole ", type_name(t),
              " blocks");
    switch (t) {
        case TensorType::F32:
            for (size_t i = 0; i < n; i++) {
                const uint32_t u = static_cast<uint32_t>(get_u16(src + 4 * i)) |
                                   static_cast<uint32_t>(get_u16(src + 4 * i + 2)) << 16;
                std::memcpy(&dst[i], &u, 4);
            }
            return;
        case TensorType::F16:
            for (size_t i = 0; i < n; i++) dst[i] = fp16_to_float(get_u16(src + 2 * i));
            return;
        case TensorType::BF16:
            for (size_t i = 0; i < n; i++) dst[i] = bf16_to_float(get_u16(src + 2 * i));
            return;
        case TensorType::Q8_0:
            for (size_t b = 0; b < n / kQ8Block; b++) {
                const uint8_t* blk = src + b * kQ8BlockBytes;
                const float d = fp16_to_float(get_u16(blk));
                for (size_t i = 0; i < kQ8Block; i++)
                    dst[b * kQ8Block + i] = static_cast<float>(static_cast<int8_t>(blk[2 + i])) * d;
            }
            return;
        case TensorType::Q4_0:
            for (size_t b = 0; b < n / kQ4Block; b++) {
                const uint8_t* blk = src + b * kQ4BlockBytes;
                const float d = fp16_to_float(get_u16(blk));
                float* out = dst + b * kQ4Block;
                for (size_t j = 0; j < kQ4Block / 2; j++) {
                    out[j] = static_cast<float>((blk[2 + j] & 0x0F) - 8) * d;
                    out[j + kQ4Block / 2] = static_cast<float>((blk[2 + j] >> 4) - 8) * d;
                }
            }
            return;
    }
    fail(Status::Internal, "gguf: no decoder for tensor type ", static_cast<uint32_t>(t));
}

}  // namespace trt::gguf
