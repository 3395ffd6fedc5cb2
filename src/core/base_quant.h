// lora.base_dtype: the frozen base of a LoRA run kept in fewer bits (QLoRA, Dettmers et al.
// 2023, as bitsandbytes implements it): the number formats (how a weight's values become
// codes and scales, and how one element comes back) and a quantised matrix as the backends'
// ops read it (QuantWeight). Where a run keeps its quantised base: model/quantised_base.h.
//
//   nf4   4-bit NormalFloat. A tensor [out, in] is flattened row-major (in fastest) and cut
//         into blocks of kNf4Block consecutive elements (the last one may be partial; a block
//         crosses a row boundary when in % 64 != 0, as bitsandbytes' do). Each block keeps its
//         largest magnitude (absmax, fp32) and each element the index of the nearest of the 16
//         code-book values to x · fp32(1 / absmax): the number of the 15 fp32 midpoints
//         between neighbouring values that it is strictly above (a tie goes down). Two codes a
//         byte, the even element in the HIGH nibble. A block of zeros: absmax 0, codes 7 (the
//         code book's 0). Dequantised: fp32(value[code] · absmax), rounded once to the compute
//         dtype.
//         Double quantisation (QLoRA's, bitsandbytes' compress_statistics): the absmax of a
//         tensor minus their mean (offset = the fp64 mean rounded to fp32) in blocks of
//         kNf4DqBlock, each block's largest magnitude (absmax2, fp32) and a code per absmax, the
//         nearest value of bitsandbytes' signed 8-bit dynamic map (kDynamicMap) to
//         centred · fp32(1 / absmax2), ties down. absmax = fp32(fp32(map[code] · absmax2) +
//         offset). A block of equal absmax: absmax2 0, codes 127 (the map's 0).
//   int8  per output row: s = max |W[o, :]| (fp32), q = round-half-even(W · fp32(127 / s)) in
//         [-127, 127]; dequantised fp32(q · s) · fp32(1 / 127) — bitsandbytes' int8 weight
//         formula, without LLM.int8's outlier columns or quantised activations. A zero row:
//         s = 0, q = 0.
//   bf16  the weight rounded to nearest even (exact for a bf16 checkpoint).
// The bytes a weight takes: NF4 0.5625 per element (0.5159 with double quantisation), int8
// 1 + 4 / in, bf16 2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/float_bits.h"

#if defined(__CUDACC__)
#define TRT_QUANT_HD __host__ __device__
#else
#define TRT_QUANT_HD
#endif

namespace trt {

enum class BaseDType : uint8_t { Fp32, Bf16, Int8, Nf4 };
const char* to_string(BaseDType t);  // "fp32", "bf16", "int8", "nf4"

constexpr int kNf4Block = 64;     // elements per absmax
constexpr int kNf4DqBlock = 256;  // absmax per second-level scale
constexpr int kNf4Zero = 7;       // the code of 0.0
constexpr int kDynamicMapZero = 127;

// The NF4 code book (bitsandbytes' get_4bit_type("nf4"): N(0, 1) quantiles, 7 negative, 0 and
// 8 positive, divided by the largest), in code order, each exactly an fp32 value. A macro so
// CUDA kernels can put the same list in constant memory.
#define TRT_NF4_CODE_BOOK                                                                       \
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,                   \
        -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,              \
        0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f, \
        0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f
extern const float kNf4CodeBook[16];
// bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), sorted:
// [0] -0.99296874, [127] 0, [255] 1 (tests/quant/nf4_reference.py builds it again).
extern const float kDynamicMap[256];

// The nearest code of `scaled` among `n` sorted values: the number of fp32 midpoints
// fp32(v[k] + v[k+1]) / 2 it is strictly above (ties go to the lower code).
int nearest_code(const float* values, int n, float scaled);

// ---- quantising (host, once, on load)
// n elements of x into NF4: codes [ceil(n / 2)] (an odd n's last low nibble is 7), absmax
// [nf4_blocks(n)].
inline size_t nf4_blocks(size_t n) { return (n + kNf4Block - 1) / kNf4Block; }
inline size_t nf4_code_bytes(size_t n) { return (n + 1) / 2; }
void nf4_quantise(const float* x, size_t n, uint8_t* codes, float* absmax);
// The double quantisation of one tensor's nb absmax: codes [nb], absmax2
// [nf4_dq_blocks(nb)], *offset.
inline size_t nf4_dq_blocks(size_t nb) { return (nb + kNf4DqBlock - 1) / kNf4DqBlock; }
void nf4_double_quantise(const float* absmax, size_t nb, uint8_t* codes, float* absmax2,
                         float* offset);
// rows x cols of w into int8: q [rows * cols], scale [rows].
void int8_quantise_rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scale);

// ---- one element back (host and device)
TRT_QUANT_HD inline float nf4_value(const float* code_book, const uint8_t* codes, size_t e,
                                    float absmax) {
    const uint8_t byte = codes[e >> 1];
    const int code = (e & 1) ? (byte & 0x0F) : (byte >> 4);
#if defined(__CUDA_ARCH__)
    return __fmul_rn(code_book[code], absmax);  // a rounded product: never part of an FMA
#else
    return code_book[code] * absmax;
#endif
}
TRT_QUANT_HD inline float nf4_dq_absmax(const float* dynamic_map, uint8_t code, float absmax2,
                                        float offset) {
    // Rounded to fp32 before the offset is added: never one fused multiply-add.
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(dynamic_map[code], absmax2), offset);
#else
    const float scaled = dynamic_map[code] * absmax2;
    return scaled + offset;
#endif
}
constexpr float kInt8Step = 1.0f / 127.0f;  // fp32(1 / 127)
TRT_QUANT_HD inline float int8_value(int8_t q, float scale) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(__fmul_rn(static_cast<float>(q), scale), kInt8Step);  // never in an FMA
#else
    const float product = static_cast<float>(q) * scale;
    return product * kInt8Step;
#endif
}

// ---- a quantised matrix, as the ops read one (backend_ops.def: qmatmul_*, qencoder_forward)
// Always the [out, in] orientation (nn.Linear's; GPT-2's Conv1D weights are transposed before
// quantising, as bitsandbytes does), rows = out. A fused matmul's weight (Llama's q/k/v_proj,
// gate/up_proj) is its tensors one after another: rows concatenate, and an NF4 weight keeps
// each tensor's own blocks (QuantPart), as each was quantised alone.

// One quantised tensor of an NF4 weight: rows [previous part's row_end, row_end). Its
// elements e = (row - first row) * cols + column sit at element0 + e of the packed codes
// (element0 even: a tensor starts on a byte), its blocks at block0 + e / kNf4Block of the
// absmax (or their codes), their second-level blocks at block2_0 + that / kNf4DqBlock, with
// the tensor's own offset.
struct QuantPart {
    int row_end = 0;
    size_t element0 = 0;
    size_t block0 = 0;
    size_t block2_0 = 0;
    float offset = 0.0f;
};

struct QuantWeight {
    static constexpr int kMaxParts = 3;
    BaseDType type = BaseDType::Fp32;
    int rows = 0, cols = 0;         // [out, in]
    const void* data = nullptr;     // fp32 / bf16 / int8 [rows, cols]; nf4: packed codes
    const float* scales = nullptr;  // int8: [rows] s; nf4 without double quantisation: absmax
    // nf4 with double quantisation (scales null): a code per block (of kDynamicMap) and the
    // second-level absmax per kNf4DqBlock blocks. The code book and the map are constants of
    // every backend (core/base_quant.h).
    const uint8_t* scale_codes = nullptr;
    const float* scales2 = nullptr;
    int parts = 1;  // nf4: the tensors, in row order
    QuantPart part[kMaxParts];

    TRT_QUANT_HD bool double_quant() const { return type == BaseDType::Nf4 && scales == nullptr; }
    // Bytes of backend memory the weight reads (its codes and scales; not the shared tables).
    size_t bytes() const {
        const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
        switch (type) {
            case BaseDType::Fp32: return n * 4;
            case BaseDType::Bf16: return n * 2;
            case BaseDType::Int8: return n + static_cast<size_t>(rows) * 4;
            case BaseDType::Nf4: break;
        }
        const QuantPart& last = part[parts - 1];
        const int first_row = parts > 1 ? part[parts - 2].row_end : 0;
        const size_t last_n = static_cast<size_t>(last.row_end - first_row) * cols;
        const size_t blocks = last.block0 + nf4_blocks(last_n);
        const size_t codes = nf4_code_bytes(last.element0 + last_n);
        if (!double_quant()) return codes + blocks * 4;
        return codes + blocks + (last.block2_0 + nf4_dq_blocks(nf4_blocks(last_n))) * 4;
    }
};

// The part of an NF4 weight holding row r, and the part's first row.
TRT_QUANT_HD inline int quant_part_of(const QuantWeight& w, int r, int* first_row) {
    int p = 0;
    while (p + 1 < w.parts && r >= w.part[p].row_end) p++;
    *first_row = p ? w.part[p - 1].row_end : 0;
    return p;
}

// One element w[r, c] dequantised to fp32, for a kernel that reads w's arrays where they are
// (the CUDA tiles; code_book and dynamic_map: kNf4CodeBook and kDynamicMap where that kernel
// keeps them). The same arithmetic as dequantise_tile, element by element.
TRT_QUANT_HD inline float quant_element(const QuantWeight& w, int r, int c, const float* code_book,
                                        const float* dynamic_map) {
    const size_t at = static_cast<size_t>(r) * static_cast<size_t>(w.cols) + static_cast<size_t>(c);
    switch (w.type) {
        case BaseDType::Fp32:
            return static_cast<const float*>(w.data)[at];
        case BaseDType::Bf16: {
            // bf16: the high half of an fp32 (core/bf16.h's bf16_to_float, for both sides).
            const uint16_t b = static_cast<const uint16_t*>(w.data)[at];
            return bits_float(static_cast<uint32_t>(b) << 16);
        }
        case BaseDType::Int8:
            return int8_value(static_cast<const int8_t*>(w.data)[at], w.scales[r]);
        case BaseDType::Nf4:
            break;
    }
    int first = 0;
    const QuantPart& p = w.part[quant_part_of(w, r, &first)];
    const size_t e = static_cast<size_t>(r - first) * static_cast<size_t>(w.cols) +
                     static_cast<size_t>(c);  // within the part
    const size_t block = e / kNf4Block;
    const float absmax = w.double_quant()
                             ? nf4_dq_absmax(dynamic_map, w.scale_codes[p.block0 + block],
                                             w.scales2[p.block2_0 + block / kNf4DqBlock], p.offset)
                             : w.scales[p.block0 + block];
    return nf4_value(code_book, static_cast<const uint8_t*>(w.data), p.element0 + e, absmax);
}

// Rows [r0, r1) x columns [k0, k1) of w, dequantised to fp32, into out (row stride ld). Host
// memory only (the CPU backend's tiles; tests and file writers).
void dequantise_tile(const QuantWeight& w, int r0, int r1, int k0, int k1, float* out, size_t ld);

// ---- building one on the host (on load; tests)
// A matrix's bytes in host memory, built a tensor at a time (each quantised alone), and its
// view once they sit in some memory (host_view: right here). A tensor may come in pieces of
// rows (begin, add_rows..., end: a large one never held whole in fp32); an NF4 piece but the
// last must hold whole blocks (a multiple of 64 elements).
class QuantisedMatrix {
public:
    QuantisedMatrix(BaseDType type, bool double_quant, int cols);
    void append(const float* w /*[rows, cols]*/, int rows) {
        begin(rows);
        add_rows(w, rows);
        end();
    }
    void begin(int rows);
    void add_rows(const float* w /*[rows, cols]*/, int rows);
    void end();
    // Room for a matrix of `rows` rows in all (its pieces then never reallocate it).
    void reserve(int rows);
    BaseDType type() const { return type_; }
    int rows() const { return rows_; }
    int cols() const { return cols_; }
    const std::vector<uint8_t>& data() const { return data_; }
    const std::vector<float>& scales() const { return scales_; }
    const std::vector<uint8_t>& scale_codes() const { return scale_codes_; }
    const std::vector<float>& scales2() const { return scales2_; }
    // The view with its arrays at these addresses (each null where the format has none).
    QuantWeight view(const void* data, const float* scales, const uint8_t* scale_codes,
                     const float* scales2) const;
    QuantWeight host_view() const {
        return view(data_.data(), scales_.empty() ? nullptr : scales_.data(),
                    scale_codes_.empty() ? nullptr : scale_codes_.data(),
                    scales2_.empty() ? nullptr : scales2_.data());
    }

private:
    BaseDType type_;
    bool double_quant_;
    int rows_ = 0, cols_;
    std::vector<uint8_t> data_;
    std::vector<float> scales_;
    std::vector<uint8_t> scale_codes_;
    std::vector<float> scales2_;
    int parts_ = 0;
    QuantPart part_[QuantWeight::kMaxParts];
    int tensor_rows_ = 0, tensor_done_ = 0;  // the tensor being added: its rows, rows so far
    bool open_ = false;
    std::vector<float> tensor_absmax_;  // NF4: the tensor's absmax, until end()
};

}  // namespace trt
