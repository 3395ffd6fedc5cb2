// The CPU backend's low-precision modes (runtime.precision = "bf16" or "fp16"): activations
// and their gradients are stored in bf16 (fp16), every op computes in fp32, and matmuls see
// bf16 (fp16) operands — the activations as stored, the weights through a rounded working
// copy of the registered fp32 master parameters — with fp32 accumulation. These are the
// rounding points of the CUDA bf16/fp16 path (docs/PRECISION.md), so these modes are its CPU
// twin. fp16 is for that: a slow path whose dynamic loss scaling the session already does.
//
// Matmuls in bf16 run one of two ways, with the same rounding points: on a CPU with native
// bf16 (AVX-512 BF16, AMX) through oneDNN (cpu_onednn_gemm.h) on the stored bf16 activations and
// a bf16 working copy of the weights, fp32 accumulation, the output rounded once; elsewhere
// (and under accel.cpu_matmul = "openblas") by the widening below, through OpenBLAS sgemm on
// an fp32-held rounded working copy. The two differ only in the order of the fp32 sums.
//
// How: a decorator over the fp32 CPU backend (LowpBackend, below). Each op converts a chunk of
// rows of its low-precision inputs into fp32 scratch, runs the fp32 kernel of cpu_ops.h on the
// chunk and rounds its outputs back (round to nearest even); the norms, SwiGLU and the
// standalone GELU do the same per thread on cache-sized blocks of rows (by_row_blocks), and
// attention on bf16 values with oneDNN runs on the stored values (cpu_ops.h).
// Chunks and blocks are a fixed number of rows for a shape (never dependent on the thread
// count): results are reproducible and the conversions cost a pass over memory, not a second
// copy of the activations. Every op's rows are independent, or (the parameter gradients)
// accumulate with +=, so chunking changes no result beyond the order of those sums; the
// norms' backward sums in 128-row blocks as the fp32 kernels do, so theirs are the fp32 op's
// bits (test_cpu_lowp_rows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_onednn_gemm.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/op_dispatch.h"

namespace trt::cpu {

// n elements of `dtype` (BF16 or F16), split over `threads` threads when n is large.
// Narrowing rounds to nearest even (fp16: past 65504 to infinity).
void widen_lowp(DType dtype, float* dst, const uint16_t* src, size_t n, int threads);
void narrow_lowp(DType dtype, uint16_t* dst, const float* src, size_t n, int threads);

// The CPU backend in bf16/fp16: a decorator over the fp32 CPU backend (make_cpu_backend builds
// it). Memory, the batches and the optimizer step are the fp32 backend's (forwarded as
// OpDispatch forwards them); the ops on activations are overridden here, each one the fp32
// kernel of cpu_ops.h on fp32 chunks or blocks of rows; writes into the master parameters refresh
// the working copy the matmuls read. A composed op (backend_composed.h) runs its composition over
// these ops.
class LowpBackend final : public OpDispatch {
public:
    // fp32: the CPU backend in fp32, whose memory, threads and non-activation ops this one
    // uses. dtype: BF16 or F16, what activations are stored in. Scratch and the working copy
    // are allocated from fp32 (counted in bytes_in_use). onednn_matmuls (BF16 only): matmuls
    // through oneDNN on bf16 operands (the caller checked OnednnGemm::availability()).
    // onednn_sgemm: attention's per-head fp32 products by oneDNN's sgemm (cpu_ops.h).
    // matmul_note: accel_status's word on the matmuls (oneDNN's implementation, or why not).
    LowpBackend(std::unique_ptr<Backend> fp32, DType dtype, bool onednn_matmuls, bool onednn_sgemm,
                std::string matmul_note);
    ~LowpBackend() override;
    LowpBackend(const LowpBackend&) = delete;
    LowpBackend& operator=(const LowpBackend&) = delete;

    DType activation_dtype() const override { return dtype_; }
    AccelStatus accel_status() const override;
    std::vector<OpChoice> op_choices() const override;  // the fp32 backend's, then its own

    // ---- memory: the working copy follows every write into the registered master
    // parameters (copy_to_device, zero, the optimizer step) and goes with the buffer.
    void free(void* ptr) override;
    void copy_to_device(void* dst, const void* src, size_t bytes) override;
    void zero(void* ptr, size_t bytes) override;
    // The fp32 master parameters whose rounded working copy the matmuls read.
    void register_params(const float* params, size_t n) override;
    // Bytes of working copy per parameter: 2 (bf16, for oneDNN) or 4 (fp32-held, for sgemm).
    size_t working_copy_bytes(size_t n) const override { return n * (gemm_ ? 2 : sizeof(float)); }
    size_t op_scratch_bytes(const ModelDims& dims) const override {
        return planned_scratch_floats(dims) * sizeof(float);
    }
    // The fp32 backend's AdamW, then the working copy refreshed (even if the step throws).
    void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                    const ParamSegments& seg, const AdamWConfig& hp, const StepScalars* s) override;
    void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8, float* m_scale,
                       float* v_scale, const Q8Tables* tables, size_t n, const ParamSegments& seg,
                       const AdamWConfig& hp, const StepScalars* s) override;

    // ---- the ops on activations (backend_ops.def), by chunks of rows
    void encoder_forward(Act out, const int32_t* inputs, const float* wte, const float* wpe, int B,
                         int T, int C, const int32_t* pos) override;
    void encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* inputs, int B,
                          int T, int C, const int32_t* pos) override;
    void layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp, const float* w,
                           const float* b, int N, int C) override;
    void layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout, ConstAct inp,
                            const float* w, const float* mean, const float* rstd, int N,
                            int C) override;
    void residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd, ConstAct a,
                                    ConstAct b, const float* bb, const float* w, const float* bias,
                                    int N, int C) override;
    void rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N, int C,
                         float eps) override;
    void rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp, const float* w,
                          const float* rstd, int N, int C) override;
    void residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a, ConstAct b,
                                  const float* w, int N, int C, float eps) override;
    void matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias, int N, int K,
                        int M, WeightLayout layout) override;
    void matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout, ConstAct inp,
                         const float* weight, int N, int K, int M, WeightLayout layout) override;
    void matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight, const float* bias,
                             int N, int K, int M) override;
    // A quantised weight: widened chunks of rows through the fp32 kernels, the dequantised
    // tiles rounded to dtype_ (the operand's one rounding, as the working copy's).
    void qencoder_forward(Act out, const int32_t* inputs, const QuantWeight& wte, const float* wpe,
                          int B, int T, int C, const int32_t* pos) override;
    void qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight, const float* bias, int N,
                         int K, int M) override;
    void qmatmul_backward(Act dinp, float* dbias, ConstAct dout, const QuantWeight& weight, int N,
                          int K, int M) override;
    void gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout, int N,
                            int M) override;
    void attention_forward(Act out, float* saved, ConstAct qkv,
                           const AttentionShape& shape) override;
    void attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                            const float* saved, const AttentionShape& shape) override;
    // bf16 attention on the stored values needs the bf16 tiles and head accumulators too.
    size_t attention_scratch_floats(const AttentionShape& shape) const override;
    void attention_cached_forward(Act out, ConstAct qkv, float* k_cache, float* v_cache, int pos0,
                                  int max_T, const AttentionShape& shape) override;
    void rope_forward(Act qkv, const float* cos, const float* sin, int pos0,
                      const AttentionShape& shape) override;
    void rope_backward(Act dqkv, const float* cos, const float* sin, int pos0,
                       const AttentionShape& shape) override;
    void swiglu_forward(Act out, ConstAct inp, int N, int F) override;
    void swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N, int F) override;
    void gelu_forward(Act out, ConstAct inp, size_t n) override;
    void add_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) override;
    void copy_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) override;
    void dropout(Act out, ConstAct in, size_t n, const DropoutMask& m) override;
    void classifier_forward_backward(Act logits, float* losses, const int32_t* targets, int N,
                                     int V, int Vp, float dloss, bool write_grad,
                                     const StepScalars* scalars) override;
    // The row widened, then the fp32 backend's draw.
    void draw_token(int32_t* out, ConstAct logits, int V, const TokenDraw& draw) override;
    // The composed ops: their composition over the ops above (OpDispatch would hand them to
    // the fp32 backend, whose fused kernels take fp32 activations).
#define TRT_OP(name, params, args)
#define TRT_OP_COMPOSED(name, params, args) \
    void name params override { Backend::name args; }
#include "backend/backend_ops.def"
#undef TRT_OP_COMPOSED
#undef TRT_OP

    // Rows a chunk holds: a fixed budget of fp32 scratch over the floats of one row of every
    // tensor, at least min_rows, in whole units (a sequence of T rows for ops with
    // positions), at least one unit, at most rows_total. Depends on the shapes only.
    static size_t chunk_rows(size_t row_floats, size_t unit, size_t rows_total,
                             size_t min_rows);
    // Tests: every chunk holds `rows` rows (rounded to whole units, at least one; 0 = the
    // policy above), so small cases run the multi-chunk offsets. Process-wide.
    static void set_chunk_rows_for_tests(size_t rows);
    // Output columns per block of a matmul with a [M, K] weight whose chunk of rows would not
    // fit the scratch budget (the output head), else M. Depends on the shapes only.
    static size_t column_block(size_t K, size_t M, WeightLayout layout);
    // Tests: every such matmul (any M) runs in blocks of `cols` columns (0 = the policy).
    static void set_column_block_for_tests(size_t cols);
    // Tests: a quantised weight's bf16 panels on the oneDNN path hold `extent` rows (forward)
    // or columns (backward) (0 = the policy: about 8 Mi values, multiples of 64).
    static void set_panel_extent_for_tests(size_t extent);
    // The scratch (floats) the model's ops of these dims will grow it to: the largest chunk
    // of rows any of them widens, or row-block loop's team of blocks and partial sums (a
    // memory estimate's; Backend::op_scratch_bytes).
    size_t planned_scratch_floats(const ModelDims& d) const;

private:
    struct RowArg;
    void unregister_if(const void* freed);
    // [dst, dst + bytes) was written: refresh the working copy where it overlaps the master.
    void params_written(const void* dst, size_t bytes);
    template <size_t K, typename Fn>
    void by_rows(size_t rows_total, size_t unit, const RowArg (&args)[K], Fn&& fn,
                 size_t min_rows = 64);  // 64: row ops
    // Row-independent ops: cache-sized blocks of rows over the threads, each widened, run on
    // its thread (fn(r0, rows, f, threads = 1)) and rounded back (cpu_lowp.cpp).
    // A row-block loop's geometry and scratch (cpu_lowp.cpp), for the loops and the plan.
    struct RowBlocks {
        size_t block, blocks, per_slot, scratch_floats;
        int team;
    };
    RowBlocks row_blocks(size_t rows_total, size_t row_floats, size_t max_rows,
                         size_t sum_floats) const;
    template <size_t K>
    size_t row_floats_of(const RowArg (&args)[K]) const;
    template <size_t K, typename Kernel>
    void row_block_loop(const RowBlocks& g, size_t rows_total, const RowArg (&args)[K], float* base,
                        Kernel&& kernel);
    template <size_t K, typename Fn>
    void by_row_blocks(size_t rows_total, const RowArg (&args)[K], Fn&& fn);
    // ... and with sums over the rows into fp32 dst[k] [widths[k]] (+=), in the fp32 kernels'
    // own grouping: fn(r0, rows, f, sums, threads = 1), sums[k] the block's zeroed partials.
    template <size_t K, size_t S, typename Fn>
    void by_row_blocks_summed(size_t rows_total, const RowArg (&args)[K], float* const (&dst)[S],
                              const size_t (&widths)[S], Fn&& fn);
    float* scratch(size_t floats);
    // rows × width elements of `a` from row r0 (strided: a.ld) to contiguous fp32 and back,
    // on `threads` threads.
    void widen_rows(const RowArg& a, size_t r0, size_t rows, float* f, int threads) const;
    void narrow_rows(const RowArg& a, size_t r0, size_t rows, const float* f, int threads) const;
    template <size_t K>
    void widen_args(const RowArg (&args)[K], size_t r0, size_t rows, float* at, float* (&f)[K],
                    int threads) const;
    template <size_t K>
    void narrow_args(const RowArg (&args)[K], size_t r0, size_t rows, float* const (&f)[K],
                     int threads) const;
    // Rows of an attention chunk: enough whole sequences to give every thread a head.
    size_t attention_min_rows(int T, int NH) const;
    // Attention on the stored bf16 values by oneDNN's bf16 matmuls (cpu_ops.h), where the
    // matmuls run so; else the fp32 kernel on widened chunks, P and dS rounded in bf16 mode.
    bool bf16_attention() const { return gemm_ != nullptr; }
    cpu::AttentionProducts attention_products() const {
        return {onednn_sgemm_, dtype_ == DType::BF16};
    }
    // A matmul operand read from parameters (weights, and biases: a bias is added to the fp32
    // product as rounded, like cuBLASLt's bf16 bias epilogue, docs/PRECISION.md): its place in
    // the working copy when it lies in the registered master, else (a caller's own buffer) a
    // rounded copy in that slot's scratch. Null stays null.
    struct RoundedCopy {
        float* data = nullptr;
        size_t floats = 0;
    };
    const float* parameter_operand(const float* p, size_t count, RoundedCopy& slot);
    const float* weight_operand(const float* w, size_t count) {
        return parameter_operand(w, count, weight_tmp_);
    }
    const float* bias_operand(const float* b, size_t count) {
        return parameter_operand(b, count, bias_tmp_);
    }

    float round(float x) const;  // to the nearest value of dtype_

    // The oneDNN matmuls (gemm_ set): bf16 operands as stored, weights from working16_.
    void onednn_matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias,
                               int N, int K, int M, WeightLayout layout);
    void onednn_matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                                ConstAct inp, const float* weight, int N, int K, int M,
                                WeightLayout layout);
    // A quantised weight's matmuls on oneDNN's bf16 kernels: the weight dequantised into bf16
    // panels in scratch (forward: whole output rows; backward: whole input columns, so each
    // output is one product's full sum, rounded once).
    void onednn_qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight, const float* bias,
                                int N, int K, int M);
    void onednn_qmatmul_backward(Act dinp, float* dbias, ConstAct dout, const QuantWeight& weight,
                                 int N, int K, int M);
    void onednn_matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                                    const float* bias, int N, int K, int M);
    // A weight as bf16: its place in working16_, or (a caller's own buffer) a rounded copy.
    const uint16_t* weight16(const float* w, size_t count);

    Backend& mem_;  // the fp32 backend: where scratch and the working copy live
    int threads_;
    DType dtype_;
    std::string matmul_note_;
    float* scratch_ = nullptr;
    size_t scratch_floats_ = 0;
    RoundedCopy weight_tmp_, bias_tmp_;
    const float* master_ = nullptr;  // the registered fp32 parameters
    size_t master_n_ = 0;
    float* working_ = nullptr;       // [master_n_] the master rounded to dtype_, kept as fp32
    // oneDNN mode instead of working_: [master_n_] the master as bf16, and the gemm.
    uint16_t* working16_ = nullptr;
    uint16_t* weight16_tmp_ = nullptr;
    size_t weight16_tmp_n_ = 0;
    std::unique_ptr<OnednnGemm> gemm_;
    bool onednn_sgemm_ = false;
};

}  // namespace trt::cpu
