// CpuBackend: host memory (64-byte aligned, zero-filled, tracked) and dispatch to the op
// kernels in the sibling cpu_*.cpp files.
#include <cblas.h>
#include <omp.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <mutex>
#include <unordered_map>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace trt {
namespace {

constexpr size_t kAlign = 64;  // one cache line / an AVX-512 vector

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {
        if (threads_ < 1) threads_ = 1;
        // Our regions pass num_threads(threads_); OpenBLAS's count is set by each kernel that
        // calls it, on the calling thread (cpu_threads.h) — not here, once, on the thread that
        // created the session: OpenMP's thread count is per thread, and a session may be
        // driven from any thread.
    }
    ~CpuBackend() override {
        for (auto& kv : sizes_) std::free(kv.first);
    }

    const char* name() const override { return "cpu"; }
    int num_threads() const override { return threads_; }
    // The processor's model name (for logs and benchmark reports), "cpu" when unknown.
    std::string device_name() const override {
        std::ifstream in("/proc/cpuinfo");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("model name", 0) != 0) continue;
            const size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size())
                return line.substr(colon + 2);
        }
        return "cpu";
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
        std::memset(p, 0, rounded);
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
    void zero(void* ptr, size_t bytes) override {
        if (bytes) std::memset(ptr, 0, bytes);
    }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }
    void synchronize() override {}  // every op is synchronous on the host
    size_t bytes_in_use() const override {
        std::lock_guard<std::mutex> lock(mu_);
        return in_use_;
    }

    // ---- ops
    void encoder_forward(float* out, const int32_t* inputs, const float* wte, const float* wpe,
                         int B, int T, int C) override {
        cpu::encoder_forward(out, inputs, wte, wpe, B, T, C, threads_);
    }
    void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inputs,
                          int B, int T, int C) override {
        cpu::encoder_backward(dwte, dwpe, dout, inputs, B, T, C, threads_);
    }
    void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                           const float* w, const float* b, int N, int C) override {
        cpu::layernorm_forward(out, mean, rstd, inp, w, b, N, C, threads_);
    }
    void layernorm_backward(float* dinp, float* dw, float* db, const float* dout,
                            const float* inp, const float* w, const float* mean,
                            const float* rstd, int N, int C) override {
        cpu::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, threads_);
    }
    void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int N, int K, int M, WeightLayout layout) override {
        cpu::matmul_forward(out, inp, weight, bias, N, K, M, layout, threads_);
    }
    void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, int N, int K, int M,
                         WeightLayout layout) override {
        cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout,
                             threads_);
    }
    size_t attention_saved_floats(int B, int T, int C, int NH, int NKV) const override {
        return cpu::attention_saved_floats(B, T, C, NH, NKV);
    }
    void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C,
                           int NH, int NKV) override {
        cpu::attention_forward(out, saved, qkv, B, T, C, NH, NKV, threads_);
    }
    size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV) const override {
        return cpu::attention_scratch_floats(B, T, C, NH, NKV, threads_);
    }
    void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                            const float* saved, int B, int T, int C, int NH,
                            int NKV) override {
        cpu::attention_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV, threads_);
    }
    void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N,
                         int C, float eps) override {
        cpu::rmsnorm_forward(out, rstd, inp, w, N, C, eps, threads_);
    }
    void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp,
                          const float* w, const float* rstd, int N, int C) override {
        cpu::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C, threads_);
    }
    void residual_rmsnorm_forward(float* res_out, float* out, float* rstd, const float* a,
                                  const float* b, const float* w, int N, int C,
                                  float eps) override {
        cpu::residual_rmsnorm_forward(res_out, out, rstd, a, b, w, N, C, eps, threads_);
    }
    void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int NH,
                      int NKV, int hs, int pos0) override {
        cpu::rope_forward(qkv, cos, sin, B, T, NH, NKV, hs, pos0, threads_);
    }
    void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int NH,
                       int NKV, int hs, int pos0) override {
        cpu::rope_backward(dqkv, cos, sin, B, T, NH, NKV, hs, pos0, threads_);
    }
    void swiglu_forward(float* out, const float* inp, int N, int F) override {
        cpu::swiglu_forward(out, inp, N, F, threads_);
    }
    void swiglu_backward(float* dinp, const float* inp, const float* dout, int N,
                         int F) override {
        cpu::swiglu_backward(dinp, inp, dout, N, F, threads_);
    }
    void residual_layernorm_forward(float* res_out, float* out, float* mean, float* rstd,
                                    const float* a, const float* b, const float* bb,
                                    const float* w, const float* bias, int N, int C) override {
        cpu::residual_layernorm_forward(res_out, out, mean, rstd, a, b, bb, w, bias, N, C,
                                        threads_);
    }
    void matmul_gelu_forward(float* pre, float* out, const float* inp, const float* weight,
                             const float* bias, int N, int K, int M) override {
        cpu::matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M, threads_);
    }
    void gelu_backward_bias(float* dinp, float* dbias, const float* inp, const float* dout,
                            int N, int M) override {
        cpu::gelu_backward_bias(dinp, dbias, inp, dout, N, M, threads_);
    }
    void classifier_forward_backward(float* logits, float* losses, const int32_t* targets,
                                     int N, int V, int Vp, float dloss, bool write_grad,
                                     const StepScalars* scalars) override {
        if (scalars) dloss *= scalars->loss_scale;
        cpu::classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss, write_grad,
                                         threads_);
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
    void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       const int64_t* start, int B, int T) override {
        cpu::sample_window(inputs, targets, data, *start, B, T);
    }
    void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                       uint64_t seed, const StepScalars* s, int64_t micro_step, int B,
                       int T) override {
        cpu::sample_random(inputs, targets, data, seed, s->step, micro_step, B, T);
    }
    // Backend memory is host memory: the "upload" is a copy, in program order.
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        if (bytes) std::memcpy(dst, src, bytes);
    }

private:
    static int check_slot(int slot) {
        TRT_CHECK(slot >= 0 && slot < kScalarSlots, "scalar read-back slot ", slot,
                  " outside [0, ", kScalarSlots, ")");
        return slot;
    }

    int threads_;
    std::array<StepScalars, kScalarSlots> slots_{};
    mutable std::mutex mu_;
    std::unordered_map<void*, size_t> sizes_;  // live allocation -> requested bytes
    size_t in_use_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
    return std::make_unique<CpuBackend>(threads);
}

}  // namespace trt
