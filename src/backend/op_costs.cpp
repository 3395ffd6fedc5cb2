// The cost of every op (op_costs.h), in the order of backend_ops.def and step_ops.def.
#include "backend/op_costs.h"

#include <cstdio>

namespace trt {
namespace {

constexpr double kF32 = 4, kI32 = 4;

// Bytes of `elements` values of an activation (its dtype); 0 for a null one.
double act(ConstAct a, double elements) {
    return a ? elements * static_cast<double>(float_dtype_size(a.dtype)) : 0.0;
}
// Bytes of `elements` fp32 values behind p; 0 for a null pointer.
double f32(const void* p, double elements) { return p ? elements * kF32 : 0.0; }

std::string matmul_label(const char* pass, int K, int M, WeightLayout layout) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "matmul %s %dx%d%s", pass, K, M,
                  layout == WeightLayout::OutIn ? " (OutIn)" : "");
    return buf;
}

std::string attention_label(const char* pass, const AttentionShape& a) {
    return std::string("attention ") + pass + (a.drops() ? " (dropout)" : "");
}

// Query rows and key/value rows of one attention call: N = B·T positions.
double q_elems(const AttentionShape& a) { return double(a.B) * a.T * a.NH * a.hs; }
double qk_elems(const AttentionShape& a) { return double(a.B) * a.T * (a.NH + a.NKV) * a.hs; }
double qkv_elems(const AttentionShape& a) { return double(a.B) * a.T * a.qkv_width(); }

}  // namespace

double attention_flops(const AttentionShape& a, bool backward) {
    // (query, key) pairs: query t sees min(t + 1, window) keys (documents not counted).
    const double T = a.T, w = a.window > 0 && a.window < a.T ? a.window : T;
    const double pairs = w * (w + 1) / 2.0 + (T - w) * w;
    const double products = backward ? 4.0 : 2.0;
    return products * 2.0 * a.B * pairs * a.width();
}

namespace op_cost {

OpCost zero(void* /*ptr*/, size_t bytes) { return {"", 0, double(bytes)}; }

OpCost encoder_forward(Act out, const int32_t* /*inputs*/, const float* wte, const float* wpe,
                       int B, int T, int C, const int32_t* pos) {
    const double N = double(B) * T;
    return {"", 0,
            N * kI32 + (pos ? N * kI32 : 0) + f32(wte, N * C) + f32(wpe, N * C) + act(out, N * C)};
}

OpCost encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* /*inputs*/, int B,
                        int T, int C, const int32_t* pos) {
    const double N = double(B) * T;
    return {"", 0,
            act(dout, N * C) + N * kI32 + (pos ? N * kI32 : 0) + 2 * f32(dwte, N * C) +
                2 * f32(dwpe, N * C)};
}

// The quantised rows read: a row's share of the weight's bytes.
OpCost qencoder_forward(Act out, const int32_t* /*inputs*/, const QuantWeight& wte,
                        const float* wpe, int B, int T, int C, const int32_t* pos) {
    const double N = double(B) * T;
    const double row_bytes = wte.rows ? double(wte.bytes()) / wte.rows : 0.0;
    return {"", 0,
            N * kI32 + (pos ? N * kI32 : 0) + N * row_bytes + f32(wpe, N * C) + act(out, N * C)};
}

OpCost layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp, const float* w,
                         const float* b, int N, int C) {
    return {"", 0,
            act(inp, double(N) * C) + f32(w, C) + f32(b, C) + act(out, double(N) * C) +
                f32(mean, N) + f32(rstd, N)};
}

OpCost layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout, ConstAct inp,
                          const float* w, const float* mean, const float* rstd, int N, int C) {
    const double NC = double(N) * C;
    return {"", 0,
            act(dout, NC) + act(inp, NC) + 2 * act(dinp, NC) + 2 * f32(dw, C) + 2 * f32(db, C) +
                f32(w, C) + f32(mean, N) + f32(rstd, N)};
}

OpCost matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias, int N, int K,
                      int M, WeightLayout layout) {
    return {matmul_label("fwd", K, M, layout), 2.0 * N * K * M,
            act(inp, double(N) * K) + f32(weight, double(K) * M) + f32(bias, M) +
                act(out, double(N) * M)};
}

// The input gradient and the weight gradient are one product each, when asked for.
OpCost matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout, ConstAct inp,
                       const float* weight, int N, int K, int M, WeightLayout layout) {
    const double products = (dinp ? 1 : 0) + (dweight ? 1 : 0);
    double bytes = act(dout, double(N) * M) + 2 * f32(dbias, M);
    if (dinp) bytes += f32(weight, double(K) * M) + act(dinp, double(N) * K);
    if (dweight) bytes += act(inp, double(N) * K) + 2 * f32(dweight, double(K) * M);
    return {matmul_label("bwd", K, M, layout), 2.0 * N * K * M * products, bytes};
}

std::string qmatmul_label(const char* pass, int K, int M, const QuantWeight& w) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "qmatmul %s %dx%d (%s)", pass, K, M, to_string(w.type));
    return buf;
}

// The weight's bytes as stored (its dequantised tiles stay in cache).
OpCost qmatmul_forward(Act out, ConstAct inp, const QuantWeight& weight, const float* bias, int N,
                       int K, int M) {
    return {
        qmatmul_label("fwd", K, M, weight), 2.0 * N * K * M,
        act(inp, double(N) * K) + double(weight.bytes()) + f32(bias, M) + act(out, double(N) * M)};
}

OpCost qmatmul_backward(Act dinp, float* dbias, ConstAct dout, const QuantWeight& weight, int N,
                        int K, int M) {
    double bytes = act(dout, double(N) * M) + 2 * f32(dbias, M);
    if (dinp) bytes += double(weight.bytes()) + act(dinp, double(N) * K);
    return {qmatmul_label("bwd", K, M, weight), dinp ? 2.0 * N * K * M : 0.0, bytes};
}

// The backend's saved statistics are its own business (attention_saved_floats): not counted.
OpCost attention_forward(Act out, float* /*saved*/, ConstAct qkv, const AttentionShape& a) {
    return {attention_label("fwd", a), attention_flops(a, false),
            act(qkv, qkv_elems(a)) + act(out, q_elems(a))};
}

OpCost attention_backward(Act dqkv, float* /*scratch*/, ConstAct dout, ConstAct qkv,
                          const float* /*saved*/, const AttentionShape& a) {
    return {attention_label("bwd", a), attention_flops(a, true),
            act(dout, q_elems(a)) + act(qkv, qkv_elems(a)) + act(dqkv, qkv_elems(a))};
}

// The new rows' queries against every cached key up to their own (a window cuts them).
OpCost attention_cached_forward(Act out, ConstAct qkv, float* /*k_cache*/, float* /*v_cache*/,
                                int pos0, int /*max_T*/, const AttentionShape& a) {
    double pairs = 0;
    for (int t = 0; t < a.T; ++t) {
        const double keys = pos0 + t + 1.0;
        pairs += a.window > 0 && a.window < keys ? a.window : keys;
    }
    const double kv_row = double(a.NKV) * a.hs;
    const double cache_read = 2 * kF32 * kv_row * (pos0 + a.T);
    return {"", 2 * 2.0 * pairs * a.width(),
            act(qkv, double(a.T) * a.qkv_width()) + act(out, double(a.T) * a.width()) + cache_read +
                2 * kF32 * kv_row * a.T};
}

OpCost rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N, int C,
                       float /*eps*/) {
    return {"", 0, act(inp, double(N) * C) + f32(w, C) + act(out, double(N) * C) + f32(rstd, N)};
}

OpCost rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp, const float* w,
                        const float* rstd, int N, int C) {
    const double NC = double(N) * C;
    return {"", 0,
            act(dout, NC) + act(inp, NC) + 2 * act(dinp, NC) + 2 * f32(dw, C) + f32(w, C) +
                f32(rstd, N)};
}

OpCost residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a, ConstAct b,
                                const float* w, int N, int C, float /*eps*/) {
    const double NC = double(N) * C;
    return {"", 0,
            act(a, NC) + act(b, NC) + f32(w, C) + act(res_out, NC) + act(out, NC) + f32(rstd, N)};
}

// q and k changed in place, their heads saved; the composed default's scratch not counted.
OpCost qk_norm_forward(Act qkv, Act pre, float* rstd, const float* wq, const float* wk,
                       Act /*scratch*/, float /*eps*/, const AttentionShape& a) {
    const double rows = double(a.B) * a.T * (a.NH + a.NKV);
    return {"", 0,
            2 * act(qkv, qk_elems(a)) + act(pre, qk_elems(a)) + f32(rstd, rows) + f32(wq, a.hs) +
                f32(wk, a.hs)};
}

// q and k rotated in place; one cos and one sin row of hs/2 per position.
OpCost rope_forward(Act qkv, const float* /*cos*/, const float* /*sin*/, int /*pos0*/,
                    const AttentionShape& a) {
    return {"", 0, 2 * act(qkv, qk_elems(a)) + 2 * kF32 * double(a.T) * (a.hs / 2)};
}

OpCost rope_backward(Act dqkv, const float* cos, const float* sin, int pos0,
                     const AttentionShape& a) {
    return rope_forward(dqkv, cos, sin, pos0, a);
}

OpCost swiglu_forward(Act out, ConstAct inp, int N, int F) {
    return {"", 0, act(inp, 2.0 * N * F) + act(out, double(N) * F)};
}

OpCost swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N, int F) {
    return {"", 0, act(inp, 2.0 * N * F) + act(dout, double(N) * F) + act(dinp, 2.0 * N * F)};
}

OpCost residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd, ConstAct a,
                                  ConstAct b, const float* bb, const float* w, const float* bias,
                                  int N, int C) {
    const double NC = double(N) * C;
    return {"", 0,
            act(a, NC) + act(b, NC) + f32(bb, C) + f32(w, C) + f32(bias, C) + act(res_out, NC) +
                act(out, NC) + f32(mean, N) + f32(rstd, N)};
}

OpCost matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight, const float* bias,
                           int N, int K, int M) {
    const double NM = double(N) * M;
    return {matmul_label("fwd+gelu", K, M, WeightLayout::InOut), 2.0 * N * K * M,
            act(inp, double(N) * K) + f32(weight, double(K) * M) + f32(bias, M) + act(pre, NM) +
                act(out, NM)};
}

OpCost gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout, int N, int M) {
    const double NM = double(N) * M;
    return {"", 0, act(inp, NM) + act(dout, NM) + act(dinp, NM) + 2 * f32(dbias, M)};
}

OpCost gelu_forward(Act out, ConstAct inp, size_t n) {
    return {"", 0, act(inp, double(n)) + act(out, double(n))};
}

OpCost add_columns(Act out, ConstAct in, float /*scale*/, int N, int /*W*/, int /*c0*/, int M) {
    return {"", 0, act(in, double(N) * M) + 2 * act(out, double(N) * M)};
}

OpCost copy_columns(Act out, ConstAct in, float /*scale*/, int N, int /*W*/, int /*c0*/, int M) {
    return {"", 0, act(in, double(N) * M) + act(out, double(N) * M)};
}

// The mask is drawn from a counter, not read.
OpCost dropout(Act out, ConstAct in, size_t n, const DropoutMask& /*m*/) {
    return {"", 0, act(in, double(n)) + act(out, double(n))};
}

// The V real columns of each row read, and written back as the gradient when asked.
OpCost classifier_forward_backward(Act logits, float* losses, const int32_t* /*targets*/, int N,
                                   int V, int /*Vp*/, float /*dloss*/, bool write_grad,
                                   const StepScalars* /*scalars*/) {
    const double NV = double(N) * V;
    return {"", 0, act(logits, NV) * (write_grad ? 2 : 1) + N * kI32 + f32(losses, N)};
}

// The row read once, the id and the flag written.
OpCost draw_token(int32_t* /*out*/, ConstAct logits, int V, const TokenDraw& /*draw*/) {
    return {"", 0, act(logits, double(V)) + 2 * kI32};
}

OpCost load_rows(int32_t* /*inputs*/, int32_t* /*targets*/, const int32_t* /*host_rows*/, int B,
                 int T) {
    return {"", 0, kI32 * (double(B) * (T + 1) + 2.0 * B * T)};
}

OpCost load_batch(int32_t* /*inputs*/, int32_t* /*targets*/, int32_t* positions,
                  const int32_t* /*host_inputs*/, const int32_t* /*host_targets*/,
                  const int32_t* host_positions, int B, int T) {
    const double arrays = 2 + (positions && host_positions ? 1 : 0);
    return {"", 0, 2 * kI32 * arrays * B * T};
}

OpCost sample_window(int32_t* /*inputs*/, int32_t* /*targets*/, const DeviceTokens& /*data*/,
                     const int64_t* /*start*/, int B, int T) {
    return {"", 0, kI32 * (double(B) * (T + 1) + 2.0 * B * T)};
}

OpCost sample_random(int32_t* /*inputs*/, int32_t* /*targets*/, const DeviceTokens& /*data*/,
                     uint64_t /*seed*/, const StepScalars* /*s*/, int64_t /*micro_step*/, int B,
                     int T, int64_t /*row0*/) {
    return {"", 0, kI32 * (double(B) * (T + 1) + 2.0 * B * T)};
}

// ---- step_ops.def
OpCost begin_step(StepScalars* /*s*/, float /*lr*/, int64_t /*step*/) { return {}; }

OpCost accumulate_loss(StepScalars* /*s*/, const float* losses, size_t n) {
    return {"", 0, f32(losses, double(n))};
}

OpCost grad_norm_clip(StepScalars* /*s*/, const float* grads, size_t n, float /*max_norm*/) {
    return {"", 0, f32(grads, double(n))};
}

// params, m and v read and written, grads read (a bf16/fp16 working copy's refresh is the
// backend's: not counted).
OpCost adamw_step(float* /*params*/, const float* /*grads*/, float* /*m*/, float* /*v*/, size_t n,
                  const ParamSegments& /*seg*/, const AdamWConfig& /*hp*/,
                  const StepScalars* /*s*/) {
    return {"", 0, 7 * kF32 * double(n)};
}

// params read and written, grads read, the 8-bit moments read and written (their per-block
// scales are a few bytes per block: not counted).
OpCost adamw_step_q8(float* /*params*/, const float* /*grads*/, uint8_t* /*m8*/, uint8_t* /*v8*/,
                     float* /*m_scale*/, float* /*v_scale*/, const Q8Tables* /*tables*/, size_t n,
                     const ParamSegments& /*seg*/, const AdamWConfig& /*hp*/,
                     const StepScalars* /*s*/) {
    return {"", 0, (3 * kF32 + 4) * double(n)};
}

OpCost end_step(StepScalars* /*s*/, const LossScalePolicy& /*policy*/) { return {}; }

}  // namespace op_cost
}  // namespace trt
