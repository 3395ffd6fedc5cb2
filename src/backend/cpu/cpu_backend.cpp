// CpuBackend: host memory (64-byte aligned, zero-filled, tracked) and dispatch to the op
// kernels in the sibling cpu_*.cpp files.
#include <cblas.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backend/backend.h"
#include "backend/cpu/cpu_lowp.h"
#include "backend/cpu/cpu_onednn_matmul.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_topology.h"
#include "core/error.h"

namespace trt {
namespace {

constexpr size_t kAlign = 64;  // one cache line / an AVX-512 vector

// accel.cpu_matmul: whether matmuls of `in` operands (F32, BF16) go through oneDNN.
// auto: where oneDNN's kernel is the fast kind (OnednnGemm::fast: fp32 brgemm on AVX-512,
// bf16 on the CPU's own bf16 instructions); onednn: wherever oneDNN has one; openblas:
// never. `note`: oneDNN's implementation, or why not (for the log line).
struct OnednnChoice {
    bool use = false;
    std::string note;
};
OnednnChoice choose_onednn(CpuMatmul matmul, DType in) {
    if (matmul == CpuMatmul::Openblas) return {false, "accel.cpu_matmul = \"openblas\""};
    std::string impl;
    const std::string why = cpu::OnednnGemm::availability(in, &impl);
    if (!why.empty()) return {false, why};
    if (matmul == CpuMatmul::Auto && !cpu::OnednnGemm::fast(in, impl))
        return {false,
                cat("oneDNN's ", in == DType::BF16 ? "bf16" : "fp32", " matmul here is ", impl,
                    in == DType::BF16 ? " (no native bf16 on this CPU: an emulation)"
                                      : " (no AVX-512: no faster than OpenBLAS)",
                    "; accel.cpu_matmul = \"onednn\" takes it anyway")};
    return {true, impl};
}

class CpuBackend final : public Backend, public OptimizerStep {
public:
    BackendCaps capabilities() const override {
        BackendCaps c;  // host memory, deterministic, fused classifier (the defaults)
        c.cached_attention = true;
        return c;
    }
    // fp32_matmuls: false for the fp32 half of a bf16/fp16 backend (cpu_lowp.h), whose
    // matmuls the decorator runs.
    CpuBackend(int threads, CpuMatmul matmul, bool fp32_matmuls) : threads_(threads) {
        if (threads_ <= 0) {  // runtime.threads = 0: one per physical core (cpu_topology.h)
            const cpu::CpuTopology t = cpu::this_machine();
            threads_ = cpu::default_threads(t);
            threads_note_ = cat("auto: ", cpu::describe_default_threads(t));
        }
        // fp32 products (the fp32 matmuls, and attention's per-head ones in every precision)
        // by oneDNN where its fp32 kernels are the faster (or asked for).
        const OnednnChoice fp32 = choose_onednn(matmul, DType::F32);
        onednn_sgemm_ = fp32.use;
        matmul_note_ = fp32.note;
        if (fp32_matmuls && onednn_sgemm_) gemm_ = std::make_unique<cpu::OnednnGemm>();
        // Our parallel loops run on the pool (cpu_pool.h) with teams of threads_; OpenBLAS and
        // oneDNN are made single-threaded by each kernel that calls them, on the calling
        // thread (cpu_threads.h) — not here, once, on the thread that created the session:
        // OpenMP's thread count is per thread, and a session may be driven from any thread.
    }
    ~CpuBackend() override {
        gemm_.reset();
        for (auto& kv : sizes_) std::free(kv.first);
    }
    bool onednn_sgemm() const { return onednn_sgemm_; }
    AccelStatus accel_status() const override {
        AccelStatus st;
        const std::string native = native_bf16_flags();
        if (!native.empty()) st.precision_note = cat("this CPU has native bf16 (", native, ")");
        st.cpu_matmul = gemm_ ? "onednn" : "openblas";
        st.cpu_matmul_note = matmul_note_;
        if (onednn_sgemm_) st.cpu_matmul_note += "; attention's products by oneDNN's sgemm";
        st.threads_note = threads_note_;
        return st;
    }
    std::vector<OpChoice> op_choices() const override {
        std::vector<OpChoice> out;
        if (gemm_) cpu::append_op_choices(*gemm_, out);
        return out;
    }

    const char* name() const override { return "cpu"; }
    bool supports(OpKind, const ModelDims&, Precision) const override { return true; }
    OptimizerStep* optimizer_step() override { return this; }
    int num_threads() const override { return threads_; }
    // The processor's model name (for logs and benchmark reports), "cpu" when unknown.
    std::string device_name() const override {
        const std::string model = cpuinfo_field("model name");
        return model.empty() ? "cpu" : model;
    }

    // ---- memory
    void* alloc(size_t bytes, const char* what) override {
        // aligned_alloc needs a size that is a multiple of the alignment (and > 0 so every
        // allocation is a distinct pointer).
        size_t rounded = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
        if (rounded < bytes)
            fail(Status::OutOfMemory, "cpu alloc of ", what, ": ", bytes, " bytes overflows");
        void* p = std::aligned_alloc(kAlign, rounded);
        if (!p)
            fail(Status::OutOfMemory, "cpu alloc of ", what, ": out of memory allocating ",
                 bytes, " bytes (", bytes_in_use(), " bytes already in use)");
        cpu::zero_bytes(p, rounded, threads_);
        std::lock_guard<std::mutex> lock(mu_);
        sizes_[p] = bytes;
        in_use_ += bytes;
        return p;
    }
    void free(void* ptr) override {
        if (!ptr) return;
        {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = sizes_.find(ptr);
            TRT_CHECK(it != sizes_.end(), "cpu free of a pointer this backend did not allocate");
            in_use_ -= it->second;
            sizes_.erase(it);
        }
        std::free(ptr);
    }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }
    void zero(void* ptr, size_t bytes) override { cpu::zero_bytes(ptr, bytes, threads_); }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }
    void synchronize() override {}  // every op is synchronous on the host
    size_t bytes_in_use() const override {
        std::lock_guard<std::mutex> lock(mu_);
        return in_use_;
    }

    // ---- ops: the fp32 kernels of cpu_ops.h (bf16/fp16: cpu_lowp.h decorates this backend).
    void encoder_forward(Act out, const int32_t* inputs, const float* wte, const float* wpe, int B,
                         int T, int C, const int32_t* pos) override {
        cpu::encoder_forward(f32(out), inputs, wte, wpe, B, T, C, threads_, pos);
    }
    void encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* inputs, int B,
                          int T, int C, const int32_t* pos) override {
        cpu::encoder_backward(dwte, dwpe, f32(dout), inputs, B, T, C, threads_, pos);
    }
    void layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp, const float* w,
                           const float* b, int N, int C) override {
        cpu::layernorm_forward(f32(out), mean, rstd, f32(inp), w, b, N, C, threads_);
    }
    void layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout, ConstAct inp,
                            const float* w, const float* mean, const float* rstd, int N,
                            int C) override {
        cpu::layernorm_backward(f32(dinp), dw, db, f32(dout), f32(inp), w, mean, rstd, N, C,
                                threads_);
    }
    void matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias, int N, int K,
                        int M, WeightLayout layout) override {
        if (gemm_)
            return cpu::onednn_matmul_forward(*gemm_, f32(out), f32(inp), weight, bias, N, K, M,
                                              layout, threads_);
        cpu::matmul_forward(f32(out), f32(inp), weight, bias, N, K, M, layout, threads_);
    }
    void matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout, ConstAct inp,
                         const float* weight, int N, int K, int M, WeightLayout layout) override {
        if (gemm_)
            return cpu::onednn_matmul_backward(*gemm_, f32(dinp), dweight, dbias, f32(dout),
                                               f32(inp), weight, N, K, M, layout, threads_);
        cpu::matmul_backward(f32(dinp), dweight, dbias, f32(dout), f32(inp), weight, N, K, M,
                             layout, threads_);
    }
    void qencoder_forward(Act out, const int32_t* inputs, const QuantWeight& wte, const float* wpe,
                          int B, int T, int C, const int32_t* pos) override {
        cpu::qencoder_forward(f32(out), inputs, wte, wpe, B, T, C, threads_, pos);
    }
    void qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight, const float* bias, int N,
                         int K, int M) override {
        cpu::qmatmul_forward(f32(out), f32(inp), weight, bias, N, K, M, threads_, DType::F32);
    }
    void qmatmul_backward(Act dinp, float* dbias, ConstAct dout, const QuantWeight& weight, int N,
                          int K, int M) override {
        cpu::qmatmul_backward(f32(dinp), dbias, f32(dout), weight, N, K, M, threads_, DType::F32);
    }
    size_t attention_saved_floats(const AttentionShape& a) const override {
        return cpu::attention_saved_floats(a.B, a.T, a.width(), a.NH, a.NKV);
    }
    size_t attention_scratch_floats(const AttentionShape& a) const override {
        return cpu::attention_scratch_floats(a.B, a.T, a.width(), a.NH, a.NKV, threads_);
    }
    // Under dropout P' is drawn again from the mask: saved's second half (attention_forward)
    // stays unused here.
    void attention_forward(Act out, float* saved, ConstAct qkv, const AttentionShape& a) override {
        const DropoutMask* m = a.drops() ? &a.dropout : nullptr;
        cpu::attention_forward(f32(out), saved, f32(qkv), a.B, a.T, a.width(), a.NH, a.NKV,
                               threads_, {onednn_sgemm_, false}, m, a.window, a.pos);
    }
    void attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                            const float* saved, const AttentionShape& a) override {
        const DropoutMask* m = a.drops() ? &a.dropout : nullptr;
        cpu::attention_backward(f32(dqkv), scratch, f32(dout), f32(qkv), saved, a.B, a.T, a.width(),
                                a.NH, a.NKV, threads_, {onednn_sgemm_, false}, m, a.window, a.pos);
    }
    void attention_cached_forward(Act out, ConstAct qkv, float* k_cache, float* v_cache, int pos0,
                                  int max_T, const AttentionShape& a) override {
        if (a.pos) pos0 = a.pos[0];  // a decode step's position, in (host) backend memory
        cpu::attention_cached_forward(f32(out), f32(qkv), k_cache, v_cache, pos0, a.T, a.NH, a.NKV,
                                      a.hs, max_T, threads_, a.window);
    }
    void rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N, int C,
                         float eps) override {
        cpu::rmsnorm_forward(f32(out), rstd, f32(inp), w, N, C, eps, threads_);
    }
    void rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp, const float* w,
                          const float* rstd, int N, int C) override {
        cpu::rmsnorm_backward(f32(dinp), dw, f32(dout), f32(inp), w, rstd, N, C, threads_);
    }
    void residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a, ConstAct b,
                                  const float* w, int N, int C, float eps) override {
        cpu::residual_rmsnorm_forward(f32(res_out), f32(out), rstd, f32(a), f32(b), w, N, C,
                                      eps, threads_);
    }
    void qk_norm_forward(Act qkv, Act pre, float* rstd, const float* wq, const float* wk,
                         Act scratch, float eps, const AttentionShape& a) override {
        cpu::qk_norm_forward(f32(qkv), f32(pre), rstd, wq, wk, a.B * a.T, a.NH, a.NKV, a.hs, eps,
                             threads_);
    }
    void rope_forward(Act qkv, const float* cos, const float* sin, int pos0,
                      const AttentionShape& a) override {
        cpu::rope_forward(f32(qkv), cos, sin, a.B, a.T, a.NH, a.NKV, a.hs, pos0, threads_, a.pos);
    }
    void rope_backward(Act dqkv, const float* cos, const float* sin, int pos0,
                       const AttentionShape& a) override {
        cpu::rope_backward(f32(dqkv), cos, sin, a.B, a.T, a.NH, a.NKV, a.hs, pos0, threads_, a.pos);
    }
    void swiglu_forward(Act out, ConstAct inp, int N, int F) override {
        cpu::swiglu_forward(f32(out), f32(inp), N, F, threads_);
    }
    void swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N, int F) override {
        cpu::swiglu_backward(f32(dinp), f32(inp), f32(dout), N, F, threads_);
    }
    void residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd, ConstAct a,
                                    ConstAct b, const float* bb, const float* w, const float* bias,
                                    int N, int C) override {
        cpu::residual_layernorm_forward(f32(res_out), f32(out), mean, rstd, f32(a), f32(b), bb,
                                        w, bias, N, C, threads_);
    }
    void matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight, const float* bias,
                             int N, int K, int M) override {
        if (gemm_)
            return cpu::onednn_matmul_gelu_forward(*gemm_, f32(pre), f32(out), f32(inp), weight,
                                                   bias, N, K, M, threads_);
        cpu::matmul_gelu_forward(f32(pre), f32(out), f32(inp), weight, bias, N, K, M, threads_);
    }
    void gelu_forward(Act out, ConstAct inp, size_t n) override {
        cpu::gelu_forward(f32(out), f32(inp), n, threads_);
    }
    void add_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) override {
        cpu::add_columns(f32(out), f32(in), scale, N, W, c0, M, threads_);
    }
    void copy_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) override {
        cpu::copy_columns(f32(out), f32(in), scale, N, W, c0, M, threads_);
    }
    void dropout(Act out, ConstAct in, size_t n, const DropoutMask& m) override {
        cpu::dropout(f32(out), f32(in), n, m, threads_);
    }
    void gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout, int N,
                            int M) override {
        cpu::gelu_backward_bias(f32(dinp), dbias, f32(inp), f32(dout), N, M, threads_);
    }
    void classifier_forward_backward(Act logits, float* losses, const int32_t* targets, int N,
                                     int V, int Vp, float dloss, bool write_grad,
                                     const StepScalars* scalars) override {
        if (scalars) dloss *= scalars->loss_scale;
        cpu::classifier_forward_backward(f32(logits), losses, targets, N, V, Vp, dloss,
                                         write_grad, threads_);
    }

    void draw_token(int32_t* out, ConstAct logits, int V, const TokenDraw& draw) override {
        const float* row = f32(logits);
        for (int i = 0; i < V; ++i)
            if (!std::isfinite(row[i])) {
                out[0] = 0;
                out[1] = 1;
                return;
            }
        TokenDraw d = draw;
        if (d.index_at) d.index = *d.index_at;  // (host) backend memory
        out[0] = draw_token_on_host(row, V, d);
        out[1] = 0;
    }

    // ---- the step on StepScalars (host memory: every read-back is ready at once)
    void begin_step(StepScalars* s, float lr, int64_t step) override {
        cpu::begin_step(s, lr, step);
    }
    void accumulate_loss(StepScalars* s, const float* losses, size_t n) override {
        cpu::accumulate_loss(s, losses, n);
    }
    void grad_norm_clip(StepScalars* s, const float* grads, size_t n, float max_norm) override {
        cpu::grad_norm_clip(s, grads, n, max_norm, threads_);
    }
    void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                    const ParamSegments& seg, const AdamWConfig& hp,
                    const StepScalars* s) override {
        cpu::adamw_step(params, grads, m, v, n, seg, hp, s, threads_);
    }
    void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8, float* m_scale,
                       float* v_scale, const Q8Tables* tables, size_t n, const ParamSegments& seg,
                       const AdamWConfig& hp, const StepScalars* s) override {
        cpu::adamw_step_q8(params, grads, m8, v8, m_scale, v_scale, *tables, n, seg, hp, s,
                           threads_);
    }
    void end_step(StepScalars* s, const LossScalePolicy& policy) override {
        cpu::end_step(s, policy);
    }
    void read_scalars_async(int slot, const StepScalars* s) override {
        slots_.at(check_slot(slot)) = *s;
    }
    bool scalars_ready(int slot) override { return check_slot(slot) >= 0; }
    StepScalars read_scalars(int slot) override { return slots_.at(check_slot(slot)); }

    // ---- batches
    void load_rows(int32_t* inputs, int32_t* targets, const int32_t* host_rows, int B,
                   int T) override {
        cpu::load_rows(inputs, targets, host_rows, B, T);
    }
    void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions,
                    const int32_t* host_inputs, const int32_t* host_targets,
                    const int32_t* host_positions, int B, int T) override {
        cpu::load_batch(inputs, targets, positions, host_inputs, host_targets, host_positions,
                        B, T);
    }
    void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       const int64_t* start, int B, int T) override {
        cpu::sample_window(inputs, targets, data, *start, B, T);
    }
    void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       uint64_t seed, const StepScalars* s, int64_t micro_step, int B,
                       int T, int64_t row0) override {
        cpu::sample_random(inputs, targets, data, seed, s->step, micro_step, B, T, row0);
    }
    // Backend memory is host memory: the "upload" is a copy, in program order.
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }
    // The ops have run: the read-back is a copy into the slot, done at once.
    bool read_back_async(int slot, const void* src, size_t bytes) override {
        std::memcpy(readback_.at(check_readback(slot, bytes)).data(), src, bytes);
        return true;
    }
    void read_back(int slot, void* dst, size_t bytes) override {
        std::memcpy(dst, readback_.at(check_readback(slot, bytes)).data(), bytes);
    }

private:
    // The value of the first /proc/cpuinfo line starting with `key` ("" if none).
    static std::string cpuinfo_field(const char* key) {
        std::ifstream in("/proc/cpuinfo");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind(key, 0) != 0) continue;
            const size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size())
                return line.substr(colon + 2);
        }
        return "";
    }
    // The CPU's native bf16 features ("avx512_bf16 amx_bf16"), "" if none.
    static std::string native_bf16_flags() {
        const std::string flags = " " + cpuinfo_field("flags") + " ";
        std::string found;
        for (const char* f : {"avx512_bf16", "amx_bf16"})
            if (flags.find(cat(" ", f, " ")) != std::string::npos)
                found += found.empty() ? std::string(f) : cat(" ", f);
        return found;
    }
    // The fp32 buffer behind a view (fp32 mode); a view of another dtype is a caller's bug.
    static float* f32(Act a) {
        TRT_CHECK(a.dtype == DType::F32, "cpu backend in fp32: an activation view is not fp32");
        return static_cast<float*>(a.data);
    }
    static const float* f32(ConstAct a) {
        TRT_CHECK(a.dtype == DType::F32, "cpu backend in fp32: an activation view is not fp32");
        return static_cast<const float*>(a.data);
    }
    static int check_slot(int slot) {
        TRT_CHECK(slot >= 0 && slot < kScalarSlots, "scalar read-back slot ", slot,
                  " outside [0, ", kScalarSlots, ")");
        return slot;
    }

    int threads_;
    std::array<StepScalars, kScalarSlots> slots_{};
    std::array<std::array<uint8_t, kReadbackBytes>, kReadbackSlots> readback_{};
    mutable std::mutex mu_;
    std::unordered_map<void*, size_t> sizes_;  // live allocation -> requested bytes
    size_t in_use_ = 0;
    std::unique_ptr<cpu::OnednnGemm> gemm_;  // fp32 matmuls through oneDNN; null: OpenBLAS
    bool onednn_sgemm_ = false;  // fp32 products by oneDNN (attention's, and gemm_ in fp32)
    std::string matmul_note_;
    std::string threads_note_;  // how runtime.threads = 0 was resolved (accel_status)    //
                                // oneDNN's fp32 implementation, or why not (accel_status)
};

}  // namespace

// fp32: the backend itself; bf16/fp16: the fp32 backend under the low-precision decorator.
std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision,
                                          CpuMatmul matmul) {
    if (precision == Precision::Fp32) return std::make_unique<CpuBackend>(threads, matmul, true);
    if (precision != Precision::Bf16 && precision != Precision::Fp16)  // the factory resolves auto
        fail(Status::Unsupported, "the cpu backend computes in fp32, bf16 or fp16, not ",
             "tf32/auto");
    auto fp32 = std::make_unique<CpuBackend>(threads, matmul, false);
    const bool sgemm = fp32->onednn_sgemm();
    if (precision == Precision::Fp16)
        return std::make_unique<cpu::LowpBackend>(
            std::move(fp32), DType::F16, false, sgemm,
            "fp16 is a test twin: its matmuls are OpenBLAS sgemm on widened operands");
    const OnednnChoice bf16 = choose_onednn(matmul, DType::BF16);
    return std::make_unique<cpu::LowpBackend>(std::move(fp32), DType::BF16, bf16.use, sgemm,
                                              bf16.note);
}

}  // namespace trt
