#include "backend/cpu/cpu_lowp.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_gelu.h"
#include "backend/cpu/cpu_onednn_matmul.h"
#include "backend/cpu/cpu_ops.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"

namespace trt::cpu {
namespace {

// Below this many elements a conversion runs on the calling thread.
constexpr size_t kParallelConvert = size_t{1} << 16;
// fp32 scratch per chunk: 4 Mi floats (16 MiB) fits a server's L3 and keeps every chunk of a
// GPT-2 small step at 1000+ rows (matmuls stay efficient).
constexpr size_t kScratchBudget = size_t{1} << 22;
// fp32 floats of one thread's block in by_row_blocks: 128 KiB, within any server core's L2;
// by_row_blocks_summed's: 2 MiB (128 rows of a norm's backward up to C = 1365).
constexpr size_t kBlockBudget = size_t{1} << 15;
constexpr size_t kSummedBlockBudget = size_t{1} << 19;
// Rows a block may hold: by_row_blocks' cache budget; a summed loop's kRowBlock (the fp32
// kernels' grouping) within its larger budget.
size_t block_rows(size_t row_floats) {
    return std::max<size_t>(1, kBlockBudget / std::max<size_t>(row_floats, 1));
}
size_t summed_block_rows(size_t row_floats) {
    return std::clamp<size_t>(kSummedBlockBudget / std::max<size_t>(row_floats, 1), 1,
                              (size_t)kRowBlock);
}
// Matmul chunks are taller: each chunk re-reads the weight (and the weight gradient), which
// for the output head is [Vp, C] — 1024 rows keep that traffic a few percent of the product.
constexpr size_t kMinMatmulChunkRows = 1024;
// A matmul whose chunk of kMinMatmulChunkRows rows would not fit the budget (the output head:
// M = Vp ≈ 50k) runs over blocks of output columns instead (column_block), each block at least
// this wide so its GEMM stays efficient.
constexpr size_t kMinColumnBlock = 256;
// A quantised weight's bf16 panel on the oneDNN path (onednn_qmatmul_*): about 8 Mi values
// (16 MiB) of `total` rows (forward) or columns (backward) whose other extent is `other`, in
// whole multiples of 64, at least 64, at most total. The panel lives in scratch().
constexpr size_t kPanelValues = size_t{1} << 23;
std::atomic<size_t> g_test_panel_extent{0};  // LowpBackend::set_panel_extent_for_tests
size_t panel_extent(size_t total, size_t other) {
    if (const size_t forced = g_test_panel_extent.load())
        return std::min(forced, std::max<size_t>(total, 1));
    size_t e = kPanelValues / std::max<size_t>(other, 1);
    e = std::max<size_t>(64, e / 64 * 64);
    return std::min(e, std::max<size_t>(total, 1));
}
size_t panel_floats(size_t total, size_t other) {  // scratch() floats of one panel
    return (panel_extent(total, other) * other + 1) / 2;
}

TRT_CPU_CLONES void widen_range(float* __restrict dst, const uint16_t* __restrict src,
                                size_t n) {
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = static_cast<uint32_t>(src[i]) << 16;
}

TRT_CPU_CLONES void narrow_range(uint16_t* __restrict dst, const float* __restrict src,
                                 size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = float_to_bf16(src[i]);
}

// fp16: the bit-exact conversions of core/fp16.h, element by element (a test twin: speed is
// not its point).
void widen_range_fp16(float* __restrict dst, const uint16_t* __restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = fp16_to_float(src[i]);
}
void narrow_range_fp16(uint16_t* __restrict dst, const float* __restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = float_to_fp16(src[i]);
}

template <typename Fn>
void split_parallel(size_t n, int threads, Fn fn) {
    if (n < kParallelConvert || threads <= 1) {
        fn(size_t{0}, n);
        return;
    }
    const size_t parts = (size_t)threads * kPartsPerThread;
    parallel_for(parts, threads, [&](size_t part) {
        size_t a, b;
        split_range(n, parts, part, &a, &b);
        fn(a, b);
    });
}

// fn(r) for every row r < rows of `width` elements, over the threads when there is enough.
template <typename Fn>
void for_rows(size_t rows, size_t width, int threads, Fn fn) {
    if (rows * width < kParallelConvert || threads <= 1) {
        for (size_t r = 0; r < rows; r++) fn(r);
        return;
    }
    parallel_for(rows, threads, fn);
}

}  // namespace

void widen_lowp(DType dtype, float* dst, const uint16_t* src, size_t n, int threads) {
    split_parallel(n, threads, [&](size_t a, size_t b) {
        if (dtype == DType::BF16)
            widen_range(dst + a, src + a, b - a);
        else
            widen_range_fp16(dst + a, src + a, b - a);
    });
}

void narrow_lowp(DType dtype, uint16_t* dst, const float* src, size_t n, int threads) {
    split_parallel(n, threads, [&](size_t a, size_t b) {
        if (dtype == DType::BF16)
            narrow_range(dst + a, src + a, b - a);
        else
            narrow_range_fp16(dst + a, src + a, b - a);
    });
}

// One tensor of a row-chunked op: `width` low-precision elements per row. In: widened before the
// kernel; Out: rounded back after it; InOut (accumulators, in-place ops): both.
enum class Dir { In, Out, InOut };
// ld: elements between rows in memory when the op sees only `width` of them (a block of
// columns); 0 = width (contiguous rows).
struct LowpBackend::RowArg {
    const void* data;  // bf16 / fp16, or null (the op skips this tensor)
    DType dtype;
    size_t width;
    Dir dir;
    size_t ld = 0;
    RowArg(ConstAct v, size_t w, size_t ld_ = 0)
        : data(v.data), dtype(v.dtype), width(w), dir(Dir::In), ld(ld_) {}
    RowArg(Act v, size_t w, Dir d, size_t ld_ = 0)
        : data(v.data), dtype(v.dtype), width(w), dir(d), ld(ld_) {}
    size_t stride() const { return ld ? ld : width; }
};

// rows × width elements between fp32 `f` (contiguous) and the low-precision rows of `a`
// starting at row r0 (strided by a.stride()).
void LowpBackend::widen_rows(const RowArg& a, size_t r0, size_t rows, float* f, int threads) const {
    const uint16_t* src = static_cast<const uint16_t*>(a.data) + r0 * a.stride();
    if (a.stride() == a.width) {
        widen_lowp(dtype_, f, src, rows * a.width, threads);
        return;
    }
    for_rows(rows, a.width, threads, [&](size_t r) {
        widen_lowp(dtype_, f + r * a.width, src + r * a.stride(), a.width, 1);
    });
}
void LowpBackend::narrow_rows(const RowArg& a, size_t r0, size_t rows, const float* f,
                              int threads) const {
    uint16_t* dst = const_cast<uint16_t*>(static_cast<const uint16_t*>(a.data)) + r0 * a.stride();
    if (a.stride() == a.width) {
        narrow_lowp(dtype_, dst, f, rows * a.width, threads);
        return;
    }
    for_rows(rows, a.width, threads, [&](size_t r) {
        narrow_lowp(dtype_, dst + r * a.stride(), f + r * a.width, a.width, 1);
    });
}

// An op's tensors for rows [r0, r0 + rows), laid out one after another from `at` (f[i]; null
// for an absent tensor), its inputs widened; and its outputs rounded back. On `threads`.
template <size_t K>
void LowpBackend::widen_args(const RowArg (&args)[K], size_t r0, size_t rows, float* at,
                             float* (&f)[K], int threads) const {
    for (size_t i = 0; i < K; i++) {
        const RowArg& a = args[i];
        f[i] = nullptr;
        if (!a.data) continue;
        f[i] = at;
        at += rows * a.width;
        if (a.dir != Dir::Out) widen_rows(a, r0, rows, f[i], threads);
    }
}
template <size_t K>
void LowpBackend::narrow_args(const RowArg (&args)[K], size_t r0, size_t rows, float* const (&f)[K],
                              int threads) const {
    for (size_t i = 0; i < K; i++) {
        const RowArg& a = args[i];
        if (a.data && a.dir != Dir::In) narrow_rows(a, r0, rows, f[i], threads);
    }
}

LowpBackend::LowpBackend(std::unique_ptr<Backend> fp32, DType dtype, bool onednn_matmuls,
                         bool onednn_sgemm, std::string matmul_note)
    : OpDispatch(std::move(fp32)),
      mem_(inner()),
      threads_(inner().num_threads()),
      dtype_(dtype),
      matmul_note_(std::move(matmul_note)),
      onednn_sgemm_(onednn_sgemm) {
    TRT_CHECK(inner().activation_dtype() == DType::F32, "LowpBackend: over an fp32 backend only");
    TRT_CHECK(dtype == DType::BF16 || dtype == DType::F16, "LowpBackend: bf16 or fp16 only");
    TRT_CHECK(!onednn_matmuls || dtype == DType::BF16, "LowpBackend: oneDNN matmuls are bf16 only");
    if (onednn_matmuls) gemm_ = std::make_unique<OnednnGemm>();
}

// oneDNN's implementation of a typical per-head attention product (64 query rows by 256 keys of
// a 64-wide head, Q·Kᵀ read in place from a 3·768-wide qkv row), once per process: on
// Sapphire Rapids it says whether attention reaches AMX (the products are shape-dependent;
// this one is the log line's sample).
static const std::string& attention_impl() {
    static const std::string impl = [] {
        GemmShape g;
        g.in = DType::BF16, g.m = 64, g.n = 256, g.k = 64;
        g.lda = g.ldb = 3 * 768, g.ldc = 256, g.b_trans = true, g.out = GemmOut::F32;
        return OnednnGemm::implementation(g);
    }();
    return impl;
}

std::vector<OpChoice> LowpBackend::op_choices() const {
    std::vector<OpChoice> out = inner().op_choices();
    if (gemm_) append_op_choices(*gemm_, out);
    return out;
}

AccelStatus LowpBackend::accel_status() const {
    AccelStatus st = inner().accel_status();
    if (dtype_ == DType::F16)
        st.precision_note =
            "fp16 activations and matmul operands, fp32 math, dynamic loss scaling: the "
            "CUDA fp16 path's twin, element-by-element conversions (slow; for tests)";
    else
        st.precision_note =
            cat("bf16 activations and matmul operands, fp32 accumulation and math (rounded as "
                "the CUDA bf16 path)",
                gemm_ ? "; matmuls on the bf16 values"
                      : "; matmuls by OpenBLAS sgemm on widened operands: not faster than fp32");
    st.cpu_matmul = gemm_ ? "onednn" : "openblas";
    st.cpu_matmul_note = matmul_note_;
    if (bf16_attention())
        st.cpu_matmul_note +=
            cat("; attention's products by oneDNN on the bf16 values (", attention_impl(), ")");
    else if (onednn_sgemm_)
        st.cpu_matmul_note += "; attention's products by oneDNN's sgemm";
    return st;
}

// ---- memory: writes into the master refresh the working copy; freeing it unregisters it

void LowpBackend::free(void* ptr) {
    unregister_if(ptr);
    OpDispatch::free(ptr);
}
void LowpBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
    OpDispatch::copy_to_device(dst, src, bytes);
    params_written(dst, bytes);
}
void LowpBackend::zero(void* ptr, size_t bytes) {
    OpDispatch::zero(ptr, bytes);
    params_written(ptr, bytes);
}

// After an AdamW step the working copy follows the master, even if the step throws half-way
// (a scope guard).
namespace {
struct WorkingCopyRefresh {
    std::function<void()> refresh;
    ~WorkingCopyRefresh() { refresh(); }
};
}  // namespace

void LowpBackend::adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                             const ParamSegments& seg, const AdamWConfig& hp,
                             const StepScalars* s) {
    const WorkingCopyRefresh r{[&] { params_written(params, n * sizeof(float)); }};
    OpDispatch::adamw_step(params, grads, m, v, n, seg, hp, s);
}
void LowpBackend::adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                                float* m_scale, float* v_scale, const Q8Tables* tables, size_t n,
                                const ParamSegments& seg, const AdamWConfig& hp,
                                const StepScalars* s) {
    const WorkingCopyRefresh r{[&] { params_written(params, n * sizeof(float)); }};
    OpDispatch::adamw_step_q8(params, grads, m8, v8, m_scale, v_scale, tables, n, seg, hp, s);
}

float LowpBackend::round(float x) const {
    return dtype_ == DType::BF16 ? round_to_bf16(x) : round_to_fp16(x);
}

LowpBackend::~LowpBackend() {
    mem_.free(scratch_);
    mem_.free(weight_tmp_.data);
    mem_.free(bias_tmp_.data);
    mem_.free(working_);
    mem_.free(working16_);
    mem_.free(weight16_tmp_);
}

static std::atomic<size_t> g_test_chunk_rows{0};
static std::atomic<size_t> g_test_column_block{0};

void LowpBackend::set_chunk_rows_for_tests(size_t rows) { g_test_chunk_rows = rows; }
void LowpBackend::set_column_block_for_tests(size_t cols) { g_test_column_block = cols; }
void LowpBackend::set_panel_extent_for_tests(size_t extent) { g_test_panel_extent = extent; }

size_t LowpBackend::column_block(size_t K, size_t M, WeightLayout layout) {
    // Only [M, K] weights: a block of output columns is then a contiguous block of its rows.
    if (layout != WeightLayout::OutIn) return M;
    if (const size_t forced = g_test_column_block.load()) return std::min(M, forced);
    const size_t per_row = kScratchBudget / kMinMatmulChunkRows;  // floats of a chunk row
    if (K + M <= per_row) return M;
    return std::min(M, std::max(kMinColumnBlock, per_row > K ? per_row - K : 0));
}

size_t LowpBackend::chunk_rows(size_t row_floats, size_t unit, size_t rows_total, size_t min_rows) {
    size_t rows = std::max(min_rows, kScratchBudget / std::max<size_t>(row_floats, 1));
    if (const size_t forced = g_test_chunk_rows.load()) rows = forced;
    rows = std::max(unit, rows / unit * unit);
    return std::min(rows, rows_total);
}

size_t LowpBackend::planned_scratch_floats(const ModelDims& d) const {
    if (d.B <= 0 || d.T <= 0 || d.C <= 0 || d.NH <= 0) return 0;
    const size_t N = (size_t)d.B * d.T, T = (size_t)d.T, C = (size_t)d.C;
    const size_t NKV = d.NKV > 0 ? (size_t)d.NKV : (size_t)d.NH;
    const size_t F = d.F > 0 ? (size_t)d.F : 4 * C;
    const size_t A = (size_t)dims_attention_width(d);   // the heads side by side
    const size_t W = A + 2 * NKV * (A / d.NH);           // a qkv row
    const size_t UP = d.gated_mlp ? 2 * F : F;           // the up projection's output
    const size_t Vp = ((size_t)d.V + 127) / 128 * 128;   // the padded vocabulary (param_table)
    const WeightLayout lin = d.gated_mlp ? WeightLayout::OutIn : WeightLayout::InOut;
    size_t most = 0;
    auto chunk = [&](size_t row_floats, size_t unit, size_t min_rows, size_t rows = 0) {
        rows = rows ? rows : N;
        most = std::max(most, chunk_rows(row_floats, unit, rows, min_rows) * row_floats);
    };
    // Row ops: the classifier; GELU's backward under fp16, or without a bias gradient (bf16
    // sums one in place).
    chunk(Vp, 1, 64);
    // Whole sequences (by_rows with unit T): the encoder (plain or quantised) and its
    // backward, [T, C] at least; RoPE on the qkv rows, [T, W] at least (the gated families are
    // the rotary ones; GPT-2 has learned positions).
    chunk(C, T, 64);
    if (d.gated_mlp) chunk(W, T, 64);
    // The ops in row blocks (by_row_blocks*), each by its own geometry: the norms and their
    // residual fusions (2C, 4C a row); SwiGLU (3F, 5F) or the standalone GELU (LoRA on the up
    // projection: elements as rows of 2); the norms' backward (3C, and dw, db); Qwen3's q/k
    // norms over N·NH rows of one head (2 hs; backward 3 hs and dw), counted for every model
    // (ModelDims does not say which has them; small beside the rest).
    auto blocks = [&](size_t rows, size_t row) {
        most = std::max(most, row_blocks(rows, row, block_rows(row), 0).scratch_floats);
    };
    auto summed = [&](size_t rows, size_t row, size_t sums) {
        most = std::max(most, row_blocks(rows, row, summed_block_rows(row), sums).scratch_floats);
    };
    const size_t hs = (size_t)dims_head_size(d), NHrows = N * (size_t)d.NH;
    blocks(N, 2 * C);
    blocks(N, 4 * C);
    if (d.gated_mlp) {
        blocks(N, 3 * F);
        blocks(N, 5 * F);
    } else {
        blocks(N * F, 2);
    }
    summed(N, 3 * C, 2 * C);
    blocks(NHrows, 2 * hs);
    summed(NHrows, 3 * hs, hs);
    if (!d.gated_mlp && (dtype_ != DType::BF16 || d.frozen_up_bias)) chunk(3 * F, 1, 64);
    if (d.attention_dropout) chunk(2, 1, 64, N * C);  // elementwise dropout of [N, C]
    // Attention (but on the bf16 values, where it widens nothing).
    if (!bf16_attention()) {
        const size_t att = attention_min_rows(d.T, d.NH);
        chunk(A + W, T, att);      // attention forward: out, qkv
        chunk(2 * W + A, T, att);  // backward: dqkv, dout, qkv
    }
    struct Linear {
        size_t K, M;
        WeightLayout layout;
    };
    const Linear linears[] = {{C, W, lin}, {A, C, lin}, {C, UP, lin}, {F, C, lin},
                              {C, Vp, WeightLayout::OutIn}};
    for (const Linear& l : linears) {
        // oneDNN reads bf16 rows in place (only GELU's fp32 accumulator); a quantised base's
        // matmuls there take a bf16 panel of the weight (forward: rows, backward: columns).
        if (gemm_ && d.quantised_base) {
            most = std::max({most, panel_floats(l.M, l.K), panel_floats(l.K, l.M)});
            continue;
        }
        if (gemm_) {
            if (!d.gated_mlp && l.K == C && l.M == F) chunk(l.M, 1, kMinMatmulChunkRows);
            continue;
        }
        const size_t mb = column_block(l.K, l.M, l.layout);
        chunk(l.K + mb, 1, kMinMatmulChunkRows);                                   // forward
        chunk(mb >= l.M ? 2 * l.K + l.M : 3 * l.K + mb, 1, kMinMatmulChunkRows);  // backward
        if (!d.gated_mlp && l.K == C && l.M == F) chunk(2 * l.M + l.K, 1, kMinMatmulChunkRows);
    }
    return most;
}

float* LowpBackend::scratch(size_t floats) {
    if (floats > scratch_floats_) {
        mem_.free(scratch_);
        scratch_ = nullptr;  // alloc may throw: never keep a freed pointer
        scratch_floats_ = 0;
        scratch_ = static_cast<float*>(mem_.alloc(floats * sizeof(float), "low-precision scratch"));
        scratch_floats_ = floats;
    }
    return scratch_;
}

template <size_t K, typename Fn>
void LowpBackend::by_rows(size_t rows_total, size_t unit, const RowArg (&args)[K], Fn&& fn,
                          size_t min_rows) {
    if (rows_total == 0) return;
    const size_t row_floats = row_floats_of(args);
    const size_t chunk = chunk_rows(row_floats, unit, rows_total, min_rows);
    float* base = scratch(std::max<size_t>(chunk * row_floats, 1));
    for (size_t r0 = 0; r0 < rows_total; r0 += chunk) {
        const size_t rows = std::min(chunk, rows_total - r0);
        float* f[K];
        widen_args(args, r0, rows, base, f, threads_);
        fn(r0, rows, f);
        narrow_args(args, r0, rows, f, threads_);
    }
}

// A row-block loop over rows_total rows of row_floats (every tensor's): blocks of at most
// max_rows rows (the tests' forced chunk size instead, when set), a team no larger than the
// blocks (each thread's scratch holds one block; none for a small op), and the scratch: the
// team's blocks, then sum_floats of partial sums per block. by_row_blocks* run by it and the
// memory plan counts by it, so the two cannot drift apart.
LowpBackend::RowBlocks LowpBackend::row_blocks(size_t rows_total, size_t row_floats,
                                               size_t max_rows, size_t sum_floats) const {
    RowBlocks g;
    g.block = max_rows;
    if (const size_t forced = g_test_chunk_rows.load()) g.block = forced;
    g.block = std::clamp<size_t>(g.block, 1, std::max<size_t>(rows_total, 1));
    g.blocks = (rows_total + g.block - 1) / g.block;
    g.team = (int)std::max<size_t>(
        1, std::min<size_t>(g.blocks, (size_t)team(rows_total * row_floats, threads_)));
    g.per_slot = g.block * row_floats;
    g.scratch_floats = (size_t)g.team * g.per_slot + g.blocks * sum_floats;
    return g;
}
// The floats of one row over every tensor of an op (checking each is of this mode's dtype).
template <size_t K>
size_t LowpBackend::row_floats_of(const RowArg (&args)[K]) const {
    size_t row_floats = 0;
    for (const RowArg& a : args) {
        TRT_CHECK(!a.data || a.dtype == dtype_,
                  "cpu backend in low precision: an activation view of another dtype");
        if (a.data) row_floats += a.width;
    }
    return row_floats;
}

// The loop of by_row_blocks*: block bi's rows widened into its thread's part of `base`,
// kernel(bi, r0, rows, f) on them, the outputs rounded back.
template <size_t K, typename Kernel>
void LowpBackend::row_block_loop(const RowBlocks& g, size_t rows_total, const RowArg (&args)[K],
                                 float* base, Kernel&& kernel) {
    parallel_for_slots(g.blocks, g.team, [&](size_t bi, int slot) {
        const size_t r0 = bi * g.block, rows = std::min(g.block, rows_total - r0);
        float* f[K];
        // (slot % team: a team of one runs as its caller's slot, here slot 0's part)
        widen_args(args, r0, rows, base + (size_t)(slot % g.team) * g.per_slot, f, 1);
        kernel(bi, r0, rows, f);
        narrow_args(args, r0, rows, f, 1);
    });
}

// Ops whose rows are independent of each other (no sum over rows): blocks of rows small
// enough for a thread's own cache (kBlockBudget floats over every tensor), the blocks spread
// over the threads, each widened, run by the fp32 kernel on that thread alone (fn's `threads`:
// 1) and rounded back. The same bits as by_rows (a row's result depends on that row only),
// without by_rows' three trips of a whole chunk through memory (widen, kernel, narrow: about
// 5x the bytes of the op itself on bf16 rows) and with one parallel region instead of three
// per chunk.
template <size_t K, typename Fn>
void LowpBackend::by_row_blocks(size_t rows_total, const RowArg (&args)[K], Fn&& fn) {
    if (rows_total == 0) return;
    const size_t row_floats = row_floats_of(args);
    const RowBlocks g = row_blocks(rows_total, row_floats, block_rows(row_floats), 0);
    float* base = scratch(std::max<size_t>(g.scratch_floats, 1));
    row_block_loop(g, rows_total, args, base,
                   [&](size_t, size_t r0, size_t rows, float** f) { fn(r0, rows, f, 1); });
}

// The same for row ops that also sum over their rows into fp32 parameter gradients (dst[k]
// [widths[k]] +=): blocks of kRowBlock rows (cpu_common.h), each block's kernel summing into
// its own zeroed partials (fn's sums[k]), then dst[k] += the blocks' partials added in block
// order — the grouping of the fp32 kernels' own column sums (norm_backward_job), so the sums
// are the fp32 op's on the widened rows, bit for bit. Where 128 rows of every tensor would
// pass kSummedBlockBudget (a norm's backward from C = 1366 on), blocks of fewer rows: the sums
// grouped by those blocks (the same for every thread count, not the fp32 op's bits).
template <size_t K, size_t S, typename Fn>
void LowpBackend::by_row_blocks_summed(size_t rows_total, const RowArg (&args)[K],
                                       float* const (&dst)[S], const size_t (&widths)[S], Fn&& fn) {
    if (rows_total == 0) return;
    const size_t row_floats = row_floats_of(args);
    size_t sum_floats = 0;
    for (size_t w : widths) sum_floats += w;
    const RowBlocks g =
        row_blocks(rows_total, row_floats, summed_block_rows(row_floats), sum_floats);
    const size_t blocks = g.blocks;
    float* base = scratch(std::max<size_t>(g.scratch_floats, 1));
    float* partials = base + (size_t)g.team * g.per_slot;  // [blocks][S sums of widths[k]]
    std::fill_n(partials, blocks * sum_floats, 0.0f);
    row_block_loop(g, rows_total, args, base, [&](size_t bi, size_t r0, size_t rows, float** f) {
        float* sums[S];
        float* p = partials + bi * sum_floats;
        for (size_t k = 0; k < S; p += widths[k], k++) sums[k] = dst[k] ? p : nullptr;
        fn(r0, rows, f, sums, 1);
    });
    size_t at = 0;
    for (size_t k = 0; k < S; at += widths[k], k++) {
        if (!dst[k]) continue;
        for (size_t j = 0; j < widths[k]; j++) {
            float sum = partials[at + j];
            for (size_t b = 1; b < blocks; b++) sum += partials[b * sum_floats + at + j];
            dst[k][j] += sum;
        }
    }
}

// ---- the working copy

void LowpBackend::register_params(const float* params, size_t n) {
    mem_.free(working_);
    mem_.free(working16_);
    working_ = nullptr;
    working16_ = nullptr;
    master_ = nullptr;
    master_n_ = 0;
    if (!params || n == 0) return;
    if (gemm_)
        working16_ = static_cast<uint16_t*>(mem_.alloc(n * 2, "bf16 working weights"));
    else
        working_ = static_cast<float*>(
            mem_.alloc(n * sizeof(float), "low-precision working weights"));
    master_ = params;
    master_n_ = n;
    params_written(params, n * sizeof(float));
}

void LowpBackend::unregister_if(const void* freed) {
    if (freed && freed == master_) register_params(nullptr, 0);
}

void LowpBackend::params_written(const void* dst, size_t bytes) {
    if (!master_ || bytes == 0) return;
    const char* lo = static_cast<const char*>(dst);
    const char* hi = lo + bytes;
    const char* mlo = reinterpret_cast<const char*>(master_);
    const char* mhi = reinterpret_cast<const char*>(master_ + master_n_);
    if (hi <= mlo || lo >= mhi) return;
    // Whole floats touched by the write (a write may start or end inside one).
    const size_t i0 = static_cast<size_t>(std::max(lo, mlo) - mlo) / sizeof(float);
    const size_t i1 =
        (static_cast<size_t>(std::min(hi, mhi) - mlo) + sizeof(float) - 1) / sizeof(float);
    split_parallel(i1 - i0, threads_, [&](size_t a, size_t b) {
        if (working16_)
            narrow_range(working16_ + i0 + a, master_ + i0 + a, b - a);
        else
            for (size_t i = i0 + a; i < i0 + b; i++) working_[i] = round(master_[i]);
    });
}

const uint16_t* LowpBackend::weight16(const float* w, size_t count) {
    if (master_ && working16_ && w >= master_ && w + count <= master_ + master_n_)
        return working16_ + (w - master_);
    if (count > weight16_tmp_n_) {
        mem_.free(weight16_tmp_);
        weight16_tmp_ = nullptr;
        weight16_tmp_n_ = 0;
        weight16_tmp_ = static_cast<uint16_t*>(mem_.alloc(count * 2, "bf16 operand"));
        weight16_tmp_n_ = count;
    }
    narrow_lowp(DType::BF16, weight16_tmp_, w, count, threads_);
    return weight16_tmp_;
}

const float* LowpBackend::parameter_operand(const float* p, size_t count, RoundedCopy& slot) {
    if (!p) return nullptr;
    if (master_ && working_ && p >= master_ && p + count <= master_ + master_n_)
        return working_ + (p - master_);
    if (count > slot.floats) {
        mem_.free(slot.data);
        slot = RoundedCopy{};
        slot.data = static_cast<float*>(mem_.alloc(count * sizeof(float), "low-precision operand"));
        slot.floats = count;
    }
    for (size_t i = 0; i < count; i++) slot.data[i] = round(p[i]);
    return slot.data;
}

// ---- ops: each is its fp32 kernel (cpu_ops.h) on fp32 chunks (by_rows) or blocks of rows
// (by_row_blocks*).

void LowpBackend::encoder_forward(Act out, const int32_t* inputs, const float* wte,
                                  const float* wpe, int B, int T, int C, const int32_t* pos) {
    const RowArg args[] = {{out, (size_t)C, Dir::Out}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        cpu::encoder_forward(f[0], inputs + r0, wte, wpe, (int)(rows / T), T, C, threads_,
                             pos != nullptr ? pos + r0 : nullptr);
    });
}

void LowpBackend::encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* inputs,
                                   int B, int T, int C, const int32_t* pos) {
    const RowArg args[] = {{dout, (size_t)C}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        cpu::encoder_backward(dwte, dwpe, f[0], inputs + r0, (int)(rows / T), T, C, threads_,
                              pos != nullptr ? pos + r0 : nullptr);
    });
}

void LowpBackend::layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp, const float* w,
                                    const float* b, int N, int C) {
    const RowArg args[] = {{out, (size_t)C, Dir::Out}, {inp, (size_t)C}};
    by_row_blocks((size_t)N, args, [&](size_t r0, size_t rows, float** f, int threads) {
        cpu::layernorm_forward(f[0], mean + r0, rstd + r0, f[1], w, b, (int)rows, C, threads);
    });
}

void LowpBackend::layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout, ConstAct inp,
                                     const float* w, const float* mean, const float* rstd, int N,
                                     int C) {
    const RowArg args[] = {{dinp, (size_t)C, Dir::InOut}, {dout, (size_t)C}, {inp, (size_t)C}};
    float* const sums[] = {dw, db};
    const size_t widths[] = {(size_t)C, (size_t)C};
    by_row_blocks_summed((size_t)N, args, sums, widths,
                         [&](size_t r0, size_t rows, float** f, float** acc, int threads) {
                             cpu::layernorm_backward(f[0], acc[0], acc[1], f[1], f[2], w, mean + r0,
                                                     rstd + r0, (int)rows, C, threads);
                         });
}

void LowpBackend::residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd,
                                             ConstAct a, ConstAct b, const float* bb,
                                             const float* w, const float* bias, int N, int C) {
    const RowArg args[] = {{res_out, (size_t)C, Dir::Out},
                           {out, (size_t)C, Dir::Out},
                           {a, (size_t)C},
                           {b, (size_t)C}};
    by_row_blocks((size_t)N, args, [&](size_t r0, size_t rows, float** f, int threads) {
        cpu::residual_layernorm_forward(f[0], f[1], mean + r0, rstd + r0, f[2], f[3], bb, w, bias,
                                        (int)rows, C, threads);
    });
}

void LowpBackend::rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N, int C,
                                  float eps) {
    const RowArg args[] = {{out, (size_t)C, Dir::Out}, {inp, (size_t)C}};
    by_row_blocks((size_t)N, args, [&](size_t r0, size_t rows, float** f, int threads) {
        cpu::rmsnorm_forward(f[0], rstd + r0, f[1], w, (int)rows, C, eps, threads);
    });
}

void LowpBackend::rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp, const float* w,
                                   const float* rstd, int N, int C) {
    const RowArg args[] = {{dinp, (size_t)C, Dir::InOut}, {dout, (size_t)C}, {inp, (size_t)C}};
    float* const sums[] = {dw};
    const size_t widths[] = {(size_t)C};
    by_row_blocks_summed((size_t)N, args, sums, widths,
                         [&](size_t r0, size_t rows, float** f, float** acc, int threads) {
                             cpu::rmsnorm_backward(f[0], acc[0], f[1], f[2], w, rstd + r0,
                                                   (int)rows, C, threads);
                         });
}

void LowpBackend::residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a,
                                           ConstAct b, const float* w, int N, int C, float eps) {
    const RowArg args[] = {{res_out, (size_t)C, Dir::Out},
                           {out, (size_t)C, Dir::Out},
                           {a, (size_t)C},
                           {b, (size_t)C}};
    by_row_blocks((size_t)N, args, [&](size_t r0, size_t rows, float** f, int threads) {
        cpu::residual_rmsnorm_forward(f[0], f[1], rstd + r0, f[2], f[3], w, (int)rows, C, eps,
                                      threads);
    });
}

// A wide output (column_block < M: the output head) runs block by block of output columns:
// out[:, j0:j0+n] = inp · W[j0:j0+n, :]ᵀ, each block's rows rounded where they are stored.
void LowpBackend::matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias,
                                 int N, int K, int M, WeightLayout layout) {
    if (gemm_ && N > 0 && K > 0 && M > 0)
        return onednn_matmul_forward(out, inp, weight, bias, N, K, M, layout);
    const float* W = weight_operand(weight, (size_t)K * M);
    const float* Bs = bias_operand(bias, (size_t)M);
    const size_t mb = column_block((size_t)K, (size_t)M, layout);
    for (size_t j0 = 0; j0 < (size_t)M; j0 += mb) {
        const size_t n = std::min(mb, (size_t)M - j0);
        const float* Wj = j0 ? W + j0 * K : W;  // j0 > 0 only for [M, K] weights
        const RowArg args[] = {{out.at(j0), n, Dir::Out, (size_t)M}, {inp, (size_t)K}};
        by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
            cpu::matmul_forward(f[0], f[1], Wj, Bs ? Bs + j0 : nullptr, (int)rows, K, (int)n,
                                layout, threads_);
        }, kMinMatmulChunkRows);
    }
}

void LowpBackend::matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                                  ConstAct inp, const float* weight, int N, int K, int M,
                                  WeightLayout layout) {
    if (gemm_ && N > 0 && K > 0 && M > 0)
        return onednn_matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout);
    const float* W = weight_operand(weight, (size_t)K * M);
    const size_t mb = column_block((size_t)K, (size_t)M, layout);
    if (mb >= (size_t)M) {
        const RowArg args[] = {{dinp, (size_t)K, Dir::Out}, {dout, (size_t)M}, {inp, (size_t)K}};
        by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
            cpu::matmul_backward(f[0], dweight, dbias, f[1], f[2], W, (int)rows, K, M, layout,
                                 threads_);
        }, kMinMatmulChunkRows);
        return;
    }
    // Blocks of dout's columns (a [M, K] weight): dweight rows j0.. and dbias[j0..] get their
    // block's products; dinp = Σ over blocks of dout[:, block] · W[block, :], summed in fp32
    // and rounded once per chunk of rows.
    const size_t Kz = (size_t)K;
    const size_t row_floats = 3 * Kz + mb;  // inp, the dinp sum, one block's dinp, dout block
    const size_t chunk = chunk_rows(row_floats, 1, (size_t)N, kMinMatmulChunkRows);
    float* base = scratch(std::max<size_t>(chunk * row_floats, 1));
    const RowArg inp_arg{inp, Kz};
    const RowArg dinp_arg{dinp, Kz, Dir::Out};
    for (size_t r0 = 0; r0 < (size_t)N; r0 += chunk) {
        const size_t rows = std::min(chunk, (size_t)N - r0);
        float* x = base;             // [rows, K]
        float* sum = x + rows * Kz;  // [rows, K]
        float* part = sum + rows * Kz;
        float* dy = part + rows * Kz;  // [rows, n]
        if (inp) widen_rows(inp_arg, r0, rows, x, threads_);
        if (dinp) std::fill(sum, sum + rows * Kz, 0.0f);
        for (size_t j0 = 0; j0 < (size_t)M; j0 += mb) {
            const size_t n = std::min(mb, (size_t)M - j0);
            widen_rows(RowArg{dout.at(j0), n, (size_t)M}, r0, rows, dy, threads_);
            cpu::matmul_backward(dinp ? part : nullptr, dweight ? dweight + j0 * Kz : nullptr,
                                 dbias ? dbias + j0 : nullptr, dy, inp ? x : nullptr, W + j0 * Kz,
                                 (int)rows, K,
                                 (int)n, layout, threads_);
            if (dinp)
                for_rows(rows, Kz, threads_, [&](size_t r) {
                    for (size_t k = 0; k < Kz; k++) sum[r * Kz + k] += part[r * Kz + k];
                });
        }
        if (dinp) narrow_rows(dinp_arg, r0, rows, sum, threads_);
    }
}

void LowpBackend::qencoder_forward(Act out, const int32_t* inputs, const QuantWeight& wte,
                                   const float* wpe, int B, int T, int C, const int32_t* pos) {
    const RowArg args[] = {{out, (size_t)C, Dir::Out}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        cpu::qencoder_forward(f[0], inputs + r0, wte, wpe, (int)(rows / T), T, C, threads_,
                              pos != nullptr ? pos + r0 : nullptr);
    });
}

// As matmul_forward / matmul_backward (a wide output head in blocks of output columns, so the
// scratch stays what the plan counts), each block's weight rows dequantised and rounded to
// dtype_ inside the fp32 kernel.
void LowpBackend::qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight,
                                  const float* bias, int N, int K, int M) {
    if (gemm_ && N > 0 && K > 0 && M > 0)
        return onednn_qmatmul_forward(out, inp, weight, bias, N, K, M);
    const float* Bs = bias_operand(bias, (size_t)M);
    const size_t mb = column_block((size_t)K, (size_t)M, WeightLayout::OutIn);
    for (size_t j0 = 0; j0 < (size_t)M; j0 += mb) {
        const size_t n = std::min(mb, (size_t)M - j0);
        const RowArg args[] = {{out.at(j0), n, Dir::Out, (size_t)M}, {inp, (size_t)K}};
        by_rows((size_t)N, 1, args,
                [&](size_t, size_t rows, float** f) {
                    cpu::qmatmul_rows_forward(f[0], n, f[1], weight, (int)j0, (int)(j0 + n),
                                              Bs ? Bs + j0 : nullptr, (int)rows, K, threads_,
                                              dtype_);
                },
                kMinMatmulChunkRows);
    }
}

void LowpBackend::qmatmul_backward(Act dinp, float* dbias, ConstAct dout, const QuantWeight& weight,
                                   int N, int K, int M) {
    if (gemm_ && N > 0 && K > 0 && M > 0)
        return onednn_qmatmul_backward(dinp, dbias, dout, weight, N, K, M);
    const size_t mb = column_block((size_t)K, (size_t)M, WeightLayout::OutIn);
    if (mb >= (size_t)M) {
        const RowArg args[] = {{dinp, (size_t)K, Dir::Out}, {dout, (size_t)M}};
        by_rows((size_t)N, 1, args,
                [&](size_t, size_t rows, float** f) {
                    cpu::qmatmul_backward(dinp ? f[0] : nullptr, dbias, f[1], weight, (int)rows, K,
                                          M, threads_, dtype_);
                },
                kMinMatmulChunkRows);
        return;
    }
    // dinp = Σ over blocks of dout[:, block] · W[block, :], summed in fp32 and rounded once
    // per chunk of rows; dbias[block] gets its block's column sums.
    const size_t Kz = (size_t)K;
    const size_t row_floats = 2 * Kz + mb;  // the dinp sum, one block's dinp, dout block
    const size_t chunk = chunk_rows(row_floats, 1, (size_t)N, kMinMatmulChunkRows);
    float* base = scratch(std::max<size_t>(chunk * row_floats, 1));
    const RowArg dinp_arg{dinp, Kz, Dir::Out};
    for (size_t r0 = 0; r0 < (size_t)N; r0 += chunk) {
        const size_t rows = std::min(chunk, (size_t)N - r0);
        float* sum = base;              // [rows, K]
        float* part = sum + rows * Kz;  // [rows, K]
        float* dy = part + rows * Kz;   // [rows, n]
        if (dinp) std::fill(sum, sum + rows * Kz, 0.0f);
        for (size_t j0 = 0; j0 < (size_t)M; j0 += mb) {
            const size_t n = std::min(mb, (size_t)M - j0);
            widen_rows(RowArg{dout.at(j0), n, (size_t)M}, r0, rows, dy, threads_);
            if (dbias)
                cpu::matmul_backward(nullptr, nullptr, dbias + j0, dy, nullptr, nullptr, (int)rows,
                                     K, (int)n, WeightLayout::OutIn, threads_);
            if (!dinp) continue;
            cpu::qmatmul_rows_backward(part, dy, n, weight, (int)j0, (int)(j0 + n), (int)rows, K,
                                       threads_, dtype_);
            for_rows(rows, Kz, threads_, [&](size_t r) {
                for (size_t k = 0; k < Kz; k++) sum[r * Kz + k] += part[r * Kz + k];
            });
        }
        if (dinp) narrow_rows(dinp_arg, r0, rows, sum, threads_);
    }
}

void LowpBackend::matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                                      const float* bias, int N, int K, int M) {
    if (gemm_ && N > 0 && K > 0 && M > 0)
        return onednn_matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M);
    const float* W = weight_operand(weight, (size_t)K * M);
    const float* Bs = bias_operand(bias, (size_t)M);
    const RowArg args[] = {{pre, (size_t)M, Dir::Out}, {out, (size_t)M, Dir::Out},
                           {inp, (size_t)K}};
    by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
        cpu::matmul_gelu_forward(f[0], f[1], f[2], W, Bs, (int)rows, K, M, threads_);
    }, kMinMatmulChunkRows);
}

// ---- the oneDNN matmuls (bf16 with native instructions): no widening, no column blocks —
// the products read the stored bf16 rows and the bf16 working copy and write bf16 (or add to
// the fp32 weight gradient) themselves. Same rounding points as the widened path above.

namespace {

const uint16_t* bf16_of(ConstAct v) {
    TRT_CHECK(!v.data || v.dtype == DType::BF16, "cpu backend in bf16: a view of another dtype");
    return static_cast<const uint16_t*>(v.data);
}
uint16_t* bf16_of(Act v) {
    TRT_CHECK(!v.data || v.dtype == DType::BF16, "cpu backend in bf16: a view of another dtype");
    return static_cast<uint16_t*>(v.data);
}

// acc[j] += dout[n, j] for j < w, rows n in order (row stride M), bf16 widened exactly.
TRT_CPU_CLONES void column_sums_bf16(double* __restrict acc, const uint16_t* __restrict dout,
                                     int N, int M, int w) {
    for (int n = 0; n < N; n++) {
        const uint16_t* __restrict row = dout + (size_t)n * M;
        for (int j = 0; j < w; j++) acc[j] += bf16_to_float(row[j]);
    }
}

// dbias[M] += the column sums of the stored bf16 dout [N, M] (the bias gradient of the oneDNN
// matmul backwards, plain and quantised).
void bias_grad_bf16(float* dbias, const uint16_t* dout, int N, int M, int threads) {
    column_sums_into(dbias, N, M, threads, [&](size_t j0, int w, size_t r0, int rows, double* acc) {
        column_sums_bf16(acc, dout + r0 * M + j0, rows, M, w);
    });
}

// Columns [0, w) of rows [0, N) (row stride M): di = round(gelu'(x)·go), acc[j] += the
// unrounded product, rows in order (the fp32 kernel's gelu_backward_cols on bf16 storage).
TRT_CPU_CLONES void gelu_backward_cols_bf16(uint16_t* __restrict di, double* __restrict acc,
                                            const uint16_t* __restrict x,
                                            const uint16_t* __restrict go, int N, int M, int w) {
    const ExpLimits lim = exp_limits();
    for (int n = 0; n < N; n++) {
        const size_t o = (size_t)n * M;
        for (int j = 0; j < w; j++) {
            const float d = gelu_grad(bf16_to_float(x[o + j]), lim) * bf16_to_float(go[o + j]);
            di[o + j] = float_to_bf16(d);
            acc[j] += d;
        }
    }
}

// x[j] = gelu(x[j]) for j < n (vectorised; the same gelu_value as every other GELU).
TRT_CPU_CLONES void gelu_in_place(float* __restrict x, size_t n, ExpLimits lim) {
    for (size_t j = 0; j < n; j++) x[j] = gelu_value(x[j], lim);
}

}  // namespace

void LowpBackend::onednn_matmul_forward(Act out, ConstAct inp, const float* weight,
                                        const float* bias, int N, int K, int M,
                                        WeightLayout layout) {
    const uint16_t* W = weight16(weight, (size_t)K * M);
    const float* Bs = bias_operand(bias, (size_t)M);
    GemmShape s = linear_forward(DType::BF16, N, K, M, layout == WeightLayout::OutIn);
    s.bias = Bs != nullptr;
    // out[N, M] = round(inp[N, K] · W + bias)
    gemm_->run(s, bf16_of(inp), W, bf16_of(out), Bs, threads_);
}

void LowpBackend::onednn_matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                                         ConstAct inp, const float* weight, int N, int K, int M,
                                         WeightLayout layout) {
    const bool outin = layout == WeightLayout::OutIn;
    const uint16_t* dy = bf16_of(dout);
    const uint16_t* x = bf16_of(inp);
    if (dinp.data)  // dinp = round(dout · Wᵀ), W as its layout says
        gemm_->run(linear_dinp(DType::BF16, N, K, M, outin), dy,
                   weight16(weight, (size_t)K * M), bf16_of(dinp), nullptr, threads_);
    if (dweight) {
        TRT_CHECK(x, "matmul_backward: dweight without the layer's input");
        const auto ab = weight_grad_operands(x, dy, outin);  // dW += (fp32)
        gemm_->run(linear_dweight(DType::BF16, N, K, M, outin), ab.first, ab.second, dweight,
                   nullptr, threads_);
    }
    if (dbias) bias_grad_bf16(dbias, dy, N, M, threads_);
}

// pre = round(inp · W + bias), out = round(gelu(inp · W + bias)): the product lands in fp32
// scratch a chunk of rows at a time, GELU reads it unrounded (as the widened path does).
void LowpBackend::onednn_matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                                             const float* bias, int N, int K, int M) {
    const uint16_t* W = weight16(weight, (size_t)K * M);
    const float* Bs = bias_operand(bias, (size_t)M);
    const uint16_t* x = bf16_of(inp);
    uint16_t* p16 = bf16_of(pre);
    uint16_t* o16 = bf16_of(out);
    const size_t chunk = chunk_rows((size_t)M, 1, (size_t)N, kMinMatmulChunkRows);
    float* acc = scratch(chunk * (size_t)M);
    const ExpLimits lim = exp_limits();
    for (size_t r0 = 0; r0 < (size_t)N; r0 += chunk) {
        const size_t rows = std::min(chunk, (size_t)N - r0);
        GemmShape s = linear_forward(DType::BF16, (int)rows, K, M, false);
        s.out = GemmOut::F32;
        s.bias = Bs != nullptr;
        gemm_->run(s, x + r0 * K, W, acc, Bs, threads_);
        for_rows(rows, (size_t)M, threads_, [&](size_t r) {
            float* a = acc + r * M;
            narrow_range(p16 + (r0 + r) * M, a, (size_t)M);
            gelu_in_place(a, (size_t)M, lim);
            narrow_range(o16 + (r0 + r) * M, a, (size_t)M);
        });
    }
}

// out[:, j0:j0+n] = round(inp · panelᵀ + bias[j0:]), panel = W[j0:j0+n, :] in bf16: each output
// is one product's sum, rounded once, as the widened path's (cpu_qmatmul.cpp).
void LowpBackend::onednn_qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight,
                                         const float* bias, int N, int K, int M) {
    TRT_CHECK(weight.rows == M && weight.cols == K, "qmatmul_forward: a [", weight.rows, ", ",
              weight.cols, "] weight for a [", M, ", ", K, "] product");
    const float* Bs = bias_operand(bias, (size_t)M);
    const size_t R = panel_extent((size_t)M, (size_t)K);
    uint16_t* panel = reinterpret_cast<uint16_t*>(scratch(panel_floats((size_t)M, (size_t)K)));
    const uint16_t* x = bf16_of(inp);
    uint16_t* o = bf16_of(out);
    for (size_t j0 = 0; j0 < (size_t)M; j0 += R) {
        const size_t n = std::min(R, (size_t)M - j0);
        cpu::dequantise_panel_bf16(weight, (int)j0, (int)(j0 + n), 0, K, panel, (size_t)K,
                                   threads_);
        GemmShape s = linear_forward(DType::BF16, N, K, (int)n, /*outin=*/true);
        s.ldc = M;
        s.bias = Bs != nullptr;
        gemm_->run(s, x, panel, o + j0, Bs ? Bs + j0 : nullptr, threads_);
    }
}

// dinp[:, k0:k0+kc] = round(dout · panel), panel = W[:, k0:k0+kc] in bf16 (all M rows: the
// whole sum in one product); dbias += column sums of the stored dout.
void LowpBackend::onednn_qmatmul_backward(Act dinp, float* dbias, ConstAct dout,
                                          const QuantWeight& weight, int N, int K, int M) {
    TRT_CHECK(weight.rows == M && weight.cols == K, "qmatmul_backward: a [", weight.rows, ", ",
              weight.cols, "] weight for a [", M, ", ", K, "] product");
    const uint16_t* dy = bf16_of(dout);
    if (dinp.data) {
        const size_t Kc = panel_extent((size_t)K, (size_t)M);
        uint16_t* panel = reinterpret_cast<uint16_t*>(scratch(panel_floats((size_t)K, (size_t)M)));
        uint16_t* di = bf16_of(dinp);
        for (size_t k0 = 0; k0 < (size_t)K; k0 += Kc) {
            const size_t kc = std::min(Kc, (size_t)K - k0);
            cpu::dequantise_panel_bf16(weight, 0, M, (int)k0, (int)(k0 + kc), panel, kc, threads_);
            GemmShape s;  // [N, kc] = dout[N, M] · panel[M, kc], into dinp's columns k0..
            s.in = DType::BF16;
            s.m = N, s.n = (int)kc, s.k = M;
            s.lda = M, s.ldb = (int)kc, s.ldc = K;
            gemm_->run(s, dy, panel, di + k0, nullptr, threads_);
        }
    }
    if (dbias) bias_grad_bf16(dbias, dy, N, M, threads_);
}

// bf16 with a bias gradient (the fc layer's backward): one column pass over the stored bf16
// rows, as the fp32 kernel does it (cpu_elementwise.cpp) — each dinp rounded once, the bias
// gradient summed from the unrounded values — with no fp32 copies of the three tensors.
void LowpBackend::gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout, int N,
                                     int M) {
    if (dtype_ == DType::BF16 && dbias && N > 0 && M > 0) {
        uint16_t* di = bf16_of(dinp);
        const uint16_t* x = bf16_of(inp);
        const uint16_t* go = bf16_of(dout);
        column_sums_into(dbias, N, M, threads_,
                         [&](size_t j0, int w, size_t r0, int rows, double* acc) {
                             const size_t o = r0 * M + j0;
                             gelu_backward_cols_bf16(di + o, acc, x + o, go + o, rows, M, w);
                         });
        return;
    }
    const RowArg args[] = {{dinp, (size_t)M, Dir::Out}, {inp, (size_t)M}, {dout, (size_t)M}};
    by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
        cpu::gelu_backward_bias(f[0], dbias, f[1], f[2], (int)rows, M, threads_);
    });
}

// Attention works on whole sequences: a chunk is a run of them, and the saved softmax state
// ([B, NH, T, 2], b-major) of sequence b starts at b·per_seq; its dropout mask elements at
// b·NH·T·T (the [B,NH,T,T] stream of backend.h). The fp32 kernel spreads a chunk's
// (sequence, head) pairs over the threads, so a chunk holds at least ceil(threads / NH)
// sequences: one sequence of NH < threads heads would leave threads idle.
size_t LowpBackend::attention_min_rows(int T, int NH) const {
    const size_t seqs = ((size_t)std::max(threads_, 1) + (size_t)NH - 1) / (size_t)NH;
    return seqs * (size_t)T;
}

// The chunk's mask: the [B,NH,T,T] stream from sequence seq0 on.
static DropoutMask chunk_mask(const DropoutMask* mask, size_t seq0, int T, int NH) {
    DropoutMask m = mask != nullptr ? *mask : DropoutMask{};
    m.index0 += seq0 * (size_t)NH * T * T;
    return m;
}

void LowpBackend::attention_forward(Act out, float* saved, ConstAct qkv,
                                    const AttentionShape& shape) {
    const int B = shape.B, T = shape.T, C = shape.width(), NH = shape.NH, NKV = shape.NKV;
    const int window = shape.window;
    const int32_t* pos = shape.pos;
    // Under dropout P' is drawn again from the mask: saved's second half stays unused here.
    const DropoutMask* mask = shape.drops() ? &shape.dropout : nullptr;
    if (bf16_attention()) {  // on the stored values, no chunks
        TRT_CHECK(out.dtype == DType::BF16 && qkv.dtype == DType::BF16,
                  "attention_forward: bf16 activations expected");
        cpu::attention_forward_bf16(*gemm_, static_cast<uint16_t*>(out.data), saved,
                                    static_cast<const uint16_t*>(qkv.data), B, T, C, NH, NKV,
                                    threads_, mask, window, pos);
        return;
    }
    const size_t W = (size_t)C / NH * (NH + 2 * NKV);
    const size_t per_seq = cpu::attention_saved_floats(1, T, C, NH, NKV);
    const RowArg args[] = {{out, (size_t)C, Dir::Out}, {qkv, W}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        const size_t seq0 = r0 / T;
        const DropoutMask m = chunk_mask(mask, seq0, T, NH);
        cpu::attention_forward(f[0], saved + seq0 * per_seq, f[1], (int)(rows / T), T, C, NH, NKV,
                               threads_, attention_products(), mask != nullptr ? &m : nullptr,
                               window, pos != nullptr ? pos + r0 : nullptr);
    }, attention_min_rows(T, NH));
}

// One sequence of n rows, in one chunk (the caches are fp32 and indexed by position).
void LowpBackend::attention_cached_forward(Act out, ConstAct qkv, float* k_cache, float* v_cache,
                                           int pos0, int max_T, const AttentionShape& shape) {
    const int n = shape.T, NH = shape.NH, NKV = shape.NKV, hs = shape.hs, window = shape.window;
    if (shape.pos) pos0 = shape.pos[0];  // a decode step's position, in (host) backend memory
    const size_t C = (size_t)NH * hs, W = (size_t)hs * (NH + 2 * NKV);
    const RowArg args[] = {{out, C, Dir::Out}, {qkv, W}};
    by_rows((size_t)n, (size_t)n, args,
            [&](size_t, size_t, float** f) {
                cpu::attention_cached_forward(f[0], f[1], k_cache, v_cache, pos0, n, NH, NKV, hs,
                                              max_T, threads_, window, dtype_ == DType::BF16);
            },
            (size_t)n);
}

void LowpBackend::attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                                     const float* saved, const AttentionShape& shape) {
    const int B = shape.B, T = shape.T, C = shape.width(), NH = shape.NH, NKV = shape.NKV;
    const int window = shape.window;
    const int32_t* pos = shape.pos;
    const DropoutMask* mask = shape.drops() ? &shape.dropout : nullptr;
    if (bf16_attention()) {
        TRT_CHECK(
            dqkv.dtype == DType::BF16 && dout.dtype == DType::BF16 && qkv.dtype == DType::BF16,
            "attention_backward: bf16 activations expected");
        cpu::attention_backward_bf16(*gemm_, static_cast<uint16_t*>(dqkv.data), scratch,
                                     static_cast<const uint16_t*>(dout.data),
                                     static_cast<const uint16_t*>(qkv.data), saved, B, T, C, NH,
                                     NKV, threads_, mask, window, pos);
        return;
    }
    const size_t W = (size_t)C / NH * (NH + 2 * NKV);
    const size_t per_seq = cpu::attention_saved_floats(1, T, C, NH, NKV);
    const RowArg args[] = {{dqkv, W, Dir::Out}, {dout, (size_t)C}, {qkv, W}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        const size_t seq0 = r0 / T;
        const DropoutMask m = chunk_mask(mask, seq0, T, NH);
        // scratch was sized for B sequences; a chunk of fewer needs less of it.
        cpu::attention_backward(f[0], scratch, f[1], f[2], saved + seq0 * per_seq, (int)(rows / T),
                                T, C, NH, NKV, threads_, attention_products(),
                                mask != nullptr ? &m : nullptr, window,
                                pos != nullptr ? pos + r0 : nullptr);
    }, attention_min_rows(T, NH));
}

size_t LowpBackend::attention_scratch_floats(const AttentionShape& a) const {
    if (bf16_attention())
        return cpu::attention_bf16_scratch_floats(a.B, a.T, a.width(), a.NH, a.NKV, threads_);
    return inner().attention_scratch_floats(a);
}

void LowpBackend::rope_forward(Act qkv, const float* cos, const float* sin, int pos0,
                               const AttentionShape& shape) {
    const int B = shape.B, T = shape.T, NH = shape.NH, NKV = shape.NKV, hs = shape.hs;
    const int32_t* pos = shape.pos;
    const RowArg args[] = {{qkv, (size_t)(NH + 2 * NKV) * hs, Dir::InOut}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        cpu::rope_forward(f[0], cos, sin, (int)(rows / T), T, NH, NKV, hs, pos0, threads_,
                          pos != nullptr ? pos + r0 : nullptr);
    });
}

void LowpBackend::rope_backward(Act dqkv, const float* cos, const float* sin, int pos0,
                                const AttentionShape& shape) {
    const int B = shape.B, T = shape.T, NH = shape.NH, NKV = shape.NKV, hs = shape.hs;
    const int32_t* pos = shape.pos;
    const RowArg args[] = {{dqkv, (size_t)(NH + 2 * NKV) * hs, Dir::InOut}};
    by_rows((size_t)B * T, (size_t)T, args, [&](size_t r0, size_t rows, float** f) {
        cpu::rope_backward(f[0], cos, sin, (int)(rows / T), T, NH, NKV, hs, pos0, threads_,
                           pos != nullptr ? pos + r0 : nullptr);
    });
}

void LowpBackend::gelu_forward(Act out, ConstAct inp, size_t n) {
    const RowArg args[] = {{out, 1, Dir::Out}, {inp, 1}};
    by_row_blocks(n, args, [&](size_t, size_t rows, float** f, int threads) {
        cpu::gelu_forward(f[0], f[1], rows, threads);
    });
}

// The slice is a strided block of the wider rows (RowArg's ld): widened, added, rounded once.
void LowpBackend::add_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) {
    const RowArg args[] = {{out.at((size_t)c0), (size_t)M, Dir::InOut, (size_t)W},
                           {in, (size_t)M}};
    by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
        cpu::add_columns(f[0], f[1], scale, (int)rows, M, 0, M, threads_);
    });
}

void LowpBackend::copy_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) {
    const RowArg args[] = {{out, (size_t)M, Dir::Out}, {in.at((size_t)c0), (size_t)M, (size_t)W}};
    by_rows((size_t)N, 1, args, [&](size_t, size_t rows, float** f) {
        cpu::copy_columns(f[0], f[1], scale, (int)rows, M, 0, M, threads_);
    });
}

// A chunk of rows starting at r0 is the stream's elements from index0 + r0.
void LowpBackend::dropout(Act out, ConstAct in, size_t n, const DropoutMask& m) {
    const RowArg args[] = {{out, 1, Dir::Out}, {in, 1}};
    by_rows(n, 1, args, [&](size_t r0, size_t rows, float** f) {
        DropoutMask chunk = m;
        chunk.index0 += r0;
        cpu::dropout(f[0], f[1], rows, chunk, threads_);
    });
}

void LowpBackend::swiglu_forward(Act out, ConstAct inp, int N, int F) {
    const RowArg args[] = {{out, (size_t)F, Dir::Out}, {inp, 2 * (size_t)F}};
    by_row_blocks((size_t)N, args, [&](size_t, size_t rows, float** f, int threads) {
        cpu::swiglu_forward(f[0], f[1], (int)rows, F, threads);
    });
}

void LowpBackend::swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N, int F) {
    const RowArg args[] = {{dinp, 2 * (size_t)F, Dir::Out}, {inp, 2 * (size_t)F},
                           {dout, (size_t)F}};
    by_row_blocks((size_t)N, args, [&](size_t, size_t rows, float** f, int threads) {
        cpu::swiglu_backward(f[0], f[1], f[2], (int)rows, F, threads);
    });
}

void LowpBackend::classifier_forward_backward(Act logits, float* losses, const int32_t* targets,
                                              int N, int V, int Vp, float dloss, bool write_grad,
                                              const StepScalars* scalars) {
    if (scalars) dloss *= scalars->loss_scale;
    // Without the gradient the logits are only read: nothing to round back.
    const RowArg args[] = {{logits, (size_t)Vp, write_grad ? Dir::InOut : Dir::In}};
    by_rows((size_t)N, 1, args, [&](size_t r0, size_t rows, float** f) {
        cpu::classifier_forward_backward(f[0], losses + r0, targets + r0, (int)rows, V, Vp,
                                         dloss, write_grad, threads_);
    });
}

}  // namespace trt::cpu

namespace trt::cpu {

void LowpBackend::draw_token(int32_t* out, ConstAct logits, int V, const TokenDraw& draw) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(V));
    widen_lowp(dtype_, row.data(), static_cast<const uint16_t*>(logits.data), row.size(), 1);
    inner().draw_token(out, ConstAct(row.data()), V, draw);
}

}  // namespace trt::cpu
