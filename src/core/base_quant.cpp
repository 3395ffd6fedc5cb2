#include "core/base_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base_quant_tables.h"
#include "core/bf16.h"
#include "core/error.h"

namespace trt {

const char* to_string(BaseDType t) {
    switch (t) {
        case BaseDType::Fp32: return "fp32";
        case BaseDType::Bf16: return "bf16";
        case BaseDType::Int8: return "int8";
        case BaseDType::Nf4: return "nf4";
    }
    return "?";
}

const float kNf4CodeBook[16] = {TRT_NF4_CODE_BOOK};

const float kDynamicMap[256] = {TRT_DYNAMIC_MAP_VALUES};

int nearest_code(const float* values, int n, float scaled) {
    int code = 0;
    for (int k = 0; k + 1 < n; k++) {
        const float mid = (values[k] + values[k + 1]) / 2.0f;  // fp32, as bitsandbytes'
        code += scaled > mid;
    }
    return code;
}

// The NF4 code of x · fp32(1 / absmax), by the midpoints of the code book (computed once).
namespace {
struct Nf4Midpoints {
    float mid[15];
    Nf4Midpoints() {
        for (int k = 0; k < 15; k++) mid[k] = (kNf4CodeBook[k] + kNf4CodeBook[k + 1]) / 2.0f;
    }
    int code(float scaled) const {
        int c = 0;
        for (int k = 0; k < 15; k++) c += scaled > mid[k];
        return c;
    }
};
const Nf4Midpoints& nf4_midpoints() {
    static const Nf4Midpoints m;
    return m;
}
}  // namespace

void nf4_quantise(const float* x, size_t n, uint8_t* codes, float* absmax) {
    const Nf4Midpoints& mids = nf4_midpoints();
    std::fill(codes, codes + nf4_code_bytes(n), uint8_t{0});
    for (size_t b = 0; b < nf4_blocks(n); b++) {
        const size_t e0 = b * kNf4Block, e1 = std::min(n, e0 + kNf4Block);
        float amax = 0.0f;
        for (size_t e = e0; e < e1; e++) amax = std::max(amax, std::fabs(x[e]));
        absmax[b] = amax;
        // A block too small for its reciprocal (absmax below FLT_MIN: 1/absmax overflows) is
        // quantised as a zero block.
        const float inv = amax > 0.0f ? 1.0f / amax : 0.0f;
        const bool zero = !(amax > 0.0f) || !std::isfinite(inv);
        for (size_t e = e0; e < e1; e++) {
            const int code = zero ? kNf4Zero : mids.code(x[e] * inv);
            codes[e >> 1] |= static_cast<uint8_t>((e & 1) ? code : code << 4);
        }
    }
    if (n & 1) codes[n >> 1] |= static_cast<uint8_t>(kNf4Zero);  // the missing odd element: 0
}

void nf4_double_quantise(const float* absmax, size_t nb, uint8_t* codes, float* absmax2,
                         float* offset) {
    double sum = 0.0;
    for (size_t i = 0; i < nb; i++) sum += absmax[i];
    const float mean = nb ? static_cast<float>(sum / static_cast<double>(nb)) : 0.0f;
    *offset = mean;
    for (size_t b = 0; b < nf4_dq_blocks(nb); b++) {
        const size_t i0 = b * kNf4DqBlock, i1 = std::min(nb, i0 + kNf4DqBlock);
        float amax = 0.0f;
        for (size_t i = i0; i < i1; i++) amax = std::max(amax, std::fabs(absmax[i] - mean));
        absmax2[b] = amax;
        const float inv = amax > 0.0f ? 1.0f / amax : 0.0f;
        const bool zero = !(amax > 0.0f) || !std::isfinite(inv);  // as an NF4 block above
        for (size_t i = i0; i < i1; i++)
            codes[i] = static_cast<uint8_t>(
                zero ? kDynamicMapZero : nearest_code(kDynamicMap, 256, (absmax[i] - mean) * inv));
    }
}

void int8_quantise_rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scale) {
    for (size_t r = 0; r < rows; r++) {
        const float* row = w + r * cols;
        float s = 0.0f;
        for (size_t c = 0; c < cols; c++) s = std::max(s, std::fabs(row[c]));
        scale[r] = s;
        const float k = s > 0.0f ? 127.0f / s : 0.0f;
        const bool zero = !std::isfinite(k);  // a row too small for 127 / s: as a zero row
        for (size_t c = 0; c < cols; c++)  // nearbyint: the default mode, half to even
            q[r * cols + c] = zero ? int8_t{0} : static_cast<int8_t>(std::nearbyint(row[c] * k));
    }
}

namespace {

// Elements [e0, e1) of one NF4 part into out (consecutive).
void nf4_run(const QuantWeight& w, const QuantPart& p, size_t e0, size_t e1, float* out) {
    const uint8_t* codes = static_cast<const uint8_t*>(w.data);
    const float* book = kNf4CodeBook;
    size_t e = e0;
    while (e < e1) {
        const size_t block = e / kNf4Block;  // within the part
        const size_t end = std::min(e1, (block + 1) * kNf4Block);
        const size_t b = p.block0 + block;
        const float absmax =
            w.double_quant() ? nf4_dq_absmax(kDynamicMap, w.scale_codes[b],
                                             w.scales2[p.block2_0 + block / kNf4DqBlock], p.offset)
                             : w.scales[b];
        for (; e < end; e++) *out++ = nf4_value(book, codes, p.element0 + e, absmax);
    }
}

}  // namespace

void dequantise_tile(const QuantWeight& w, int r0, int r1, int k0, int k1, float* out, size_t ld) {
    const size_t cols = static_cast<size_t>(w.cols), width = static_cast<size_t>(k1 - k0);
    for (int r = r0; r < r1; r++) {
        float* o = out + static_cast<size_t>(r - r0) * ld;
        const size_t at = static_cast<size_t>(r) * cols + static_cast<size_t>(k0);
        switch (w.type) {
            case BaseDType::Fp32:
                std::memcpy(o, static_cast<const float*>(w.data) + at, width * sizeof(float));
                break;
            case BaseDType::Bf16: {
                const uint16_t* src = static_cast<const uint16_t*>(w.data) + at;
                for (size_t k = 0; k < width; k++) o[k] = bf16_to_float(src[k]);
                break;
            }
            case BaseDType::Int8: {
                const int8_t* src = static_cast<const int8_t*>(w.data) + at;
                const float s = w.scales[r];
                for (size_t k = 0; k < width; k++) o[k] = int8_value(src[k], s);
                break;
            }
            case BaseDType::Nf4: {
                int first = 0;
                const QuantPart& p = w.part[quant_part_of(w, r, &first)];
                const size_t e0 = static_cast<size_t>(r - first) * cols + static_cast<size_t>(k0);
                nf4_run(w, p, e0, e0 + width, o);
                break;
            }
        }
    }
}

QuantisedMatrix::QuantisedMatrix(BaseDType type, bool double_quant, int cols)
    : type_(type), double_quant_(type == BaseDType::Nf4 && double_quant), cols_(cols) {
    TRT_CHECK(cols > 0, "QuantisedMatrix: ", cols, " columns");
}

void QuantisedMatrix::reserve(int rows) {
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols_);
    switch (type_) {
        case BaseDType::Fp32:
            data_.reserve(4 * n);
            break;
        case BaseDType::Bf16:
            data_.reserve(2 * n);
            break;
        case BaseDType::Int8:
            data_.reserve(n);
            scales_.reserve(static_cast<size_t>(rows));
            break;
        case BaseDType::Nf4:
            data_.reserve(nf4_code_bytes(n) + QuantWeight::kMaxParts);
            break;
    }
}

void QuantisedMatrix::begin(int rows) {
    TRT_CHECK(!open_ && rows > 0, "QuantisedMatrix::begin: ", rows, " rows",
              open_ ? " while a tensor is open" : "");
    if (type_ == BaseDType::Nf4) {
        TRT_CHECK(parts_ < QuantWeight::kMaxParts, "QuantisedMatrix: more than ",
                  QuantWeight::kMaxParts, " NF4 tensors in one matrix");
        QuantPart& p = part_[parts_++];
        p.element0 = data_.size() * 2;  // every tensor starts on a byte
        tensor_absmax_.clear();
    }
    tensor_rows_ = rows;
    tensor_done_ = 0;
    open_ = true;
}

void QuantisedMatrix::add_rows(const float* w, int rows) {
    TRT_CHECK(open_ && rows > 0 && tensor_done_ + rows <= tensor_rows_,
              "QuantisedMatrix::add_rows: ", rows, " rows past the tensor's ", tensor_rows_);
    const size_t cols = static_cast<size_t>(cols_);
    const size_t n = static_cast<size_t>(rows) * cols;
    const size_t at = data_.size();
    switch (type_) {
        case BaseDType::Fp32:
            data_.resize(at + n * 4);
            std::memcpy(data_.data() + at, w, n * 4);
            break;
        case BaseDType::Bf16: {
            data_.resize(at + n * 2);
            uint16_t* d = reinterpret_cast<uint16_t*>(data_.data() + at);
            for (size_t i = 0; i < n; i++) d[i] = float_to_bf16(w[i]);
            break;
        }
        case BaseDType::Int8: {
            const size_t row0 = static_cast<size_t>(rows_ + tensor_done_);
            data_.resize(at + n);
            scales_.resize(row0 + static_cast<size_t>(rows));
            int8_quantise_rows(w, static_cast<size_t>(rows), cols,
                               reinterpret_cast<int8_t*>(data_.data() + at), scales_.data() + row0);
            break;
        }
        case BaseDType::Nf4: {
            const size_t done = static_cast<size_t>(tensor_done_) * cols;
            TRT_CHECK(done % kNf4Block == 0, "QuantisedMatrix::add_rows: an NF4 piece of ", done,
                      " elements is not whole blocks");
            const size_t blocks = tensor_absmax_.size();
            tensor_absmax_.resize(blocks + nf4_blocks(n));
            data_.resize(at + nf4_code_bytes(n));
            nf4_quantise(w, n, data_.data() + at, tensor_absmax_.data() + blocks);
            break;
        }
    }
    tensor_done_ += rows;
}

void QuantisedMatrix::end() {
    TRT_CHECK(open_ && tensor_done_ == tensor_rows_, "QuantisedMatrix::end: ", tensor_done_,
              " of the tensor's ", tensor_rows_, " rows added");
    if (type_ == BaseDType::Nf4) {
        QuantPart& p = part_[parts_ - 1];
        const std::vector<float>& absmax = tensor_absmax_;
        if (!double_quant_) {
            p.block0 = scales_.size();
            scales_.insert(scales_.end(), absmax.begin(), absmax.end());
        } else {
            p.block0 = scale_codes_.size();
            p.block2_0 = scales2_.size();
            scale_codes_.resize(p.block0 + absmax.size());
            scales2_.resize(p.block2_0 + nf4_dq_blocks(absmax.size()));
            nf4_double_quantise(absmax.data(), absmax.size(), scale_codes_.data() + p.block0,
                                scales2_.data() + p.block2_0, &p.offset);
        }
        p.row_end = rows_ + tensor_rows_;
        std::vector<float>().swap(tensor_absmax_);
    }
    rows_ += tensor_rows_;
    open_ = false;
}

QuantWeight QuantisedMatrix::view(const void* data, const float* scales, const uint8_t* scale_codes,
                                  const float* scales2) const {
    QuantWeight w;
    w.type = type_;
    w.rows = rows_;
    w.cols = cols_;
    w.data = data;
    w.scales = scales;
    if (double_quant_) {
        w.scales = nullptr;
        w.scale_codes = scale_codes;
        w.scales2 = scales2;
    }
    w.parts = type_ == BaseDType::Nf4 ? parts_ : 1;
    for (int i = 0; i < w.parts && type_ == BaseDType::Nf4; i++) w.part[i] = part_[i];
    return w;
}

}  // namespace trt
