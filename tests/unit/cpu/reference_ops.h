// Naive double-precision reference implementations of every CPU backend op, forward and
// analytic backward, written plainly and independently of src/backend/cpu (textbook
// formulas, explicit loops, no shared code). The tests prove these against central finite
// differences, then hold the fp32 kernels against them. Also: the small test helpers
// (seeded random data, relative error).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/dropout_mask.h"

namespace ref {

using Vec = std::vector<double>;

// ------------------------------------------------------------------ test helpers

// Fresh seeded values uniform in [lo, hi) — never zeros by construction of the tests.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

inline std::vector<int32_t> random_ints(size_t n, uint32_t seed, int32_t hi /*exclusive*/) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int32_t> dist(0, hi - 1);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

// Prints a measured error so the run's log shows the figures, not just pass/fail.
inline void report(const std::string& what, double err) {
    std::printf("[  relerr  ] %-40s %.3e\n", what.c_str(), err);
}

inline Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// ‖got − want‖ / ‖want‖ over the whole tensor; NaN anywhere gives +inf (never passes).
template <typename A, typename B>
inline double rel_error(const A& got, const B& want) {
    if (got.size() != want.size()) return INFINITY;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < got.size(); i++) {
        const double g = got[i], w = want[i];
        if (std::isnan(g) || std::isnan(w)) return INFINITY;
        num += (g - w) * (g - w);
        den += w * w;
    }
    return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Central finite differences of a scalar function of x, in double.
inline Vec finite_diff(const std::function<double(const Vec&)>& f, Vec x, double h = 1e-5) {
    Vec g(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        const double x0 = x[i];
        x[i] = x0 + h;
        const double fp = f(x);
        x[i] = x0 - h;
        const double fm = f(x);
        x[i] = x0;
        g[i] = (fp - fm) / (2.0 * h);
    }
    return g;
}

inline double dot(const Vec& a, const Vec& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
    return s;
}

// ------------------------------------------------------------------ encoder

// Documents (backend.h): pos [B*T] (empty: positions t) gives row (b, t) its position.
inline int position_of(const std::vector<int32_t>* pos, int b, int t, int T) {
    return pos != nullptr && !pos->empty() ? (*pos)[(size_t)b * T + t] : t;
}

// out[b,t,:] = wte[inputs[b,t],:] + wpe[p,:], p = t or pos[b,t]; an empty wpe means no
// position term (rotary models).
inline Vec encoder_forward(const std::vector<int32_t>& inputs, const Vec& wte, const Vec& wpe,
                           int B, int T, int C, const std::vector<int32_t>* pos = nullptr) {
    Vec out((size_t)B * T * C);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                out[((size_t)b * T + t) * C + c] =
                    wte[(size_t)inputs[b * T + t] * C + c] +
                    (wpe.empty() ? 0.0 : wpe[(size_t)position_of(pos, b, t, T) * C + c]);
    return out;
}

// Gradients (fresh, not accumulated) of wte [V,C] and wpe [T,C].
inline void encoder_backward(const Vec& dout, const std::vector<int32_t>& inputs, int B,
                             int T, int C, int V, Vec& dwte, Vec& dwpe,
                             const std::vector<int32_t>* pos = nullptr) {
    dwte.assign((size_t)V * C, 0.0);
    dwpe.assign((size_t)T * C, 0.0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                const double g = dout[((size_t)b * T + t) * C + c];
                dwte[(size_t)inputs[b * T + t] * C + c] += g;
                dwpe[(size_t)position_of(pos, b, t, T) * C + c] += g;
            }
}

// ------------------------------------------------------------------ layernorm

constexpr double kLnEps = 1e-5;

inline Vec layernorm_forward(const Vec& inp, const Vec& w, const Vec& b, int N, int C,
                             Vec* mean_out = nullptr, Vec* rstd_out = nullptr) {
    Vec out((size_t)N * C);
    if (mean_out) mean_out->assign(N, 0.0);
    if (rstd_out) rstd_out->assign(N, 0.0);
    for (int n = 0; n < N; n++) {
        const double* x = &inp[(size_t)n * C];
        double mu = 0.0;
        for (int i = 0; i < C; i++) mu += x[i];
        mu /= C;
        double var = 0.0;  // biased
        for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        var /= C;
        const double rs = 1.0 / std::sqrt(var + kLnEps);
        for (int i = 0; i < C; i++) out[(size_t)n * C + i] = (x[i] - mu) * rs * w[i] + b[i];
        if (mean_out) (*mean_out)[n] = mu;
        if (rstd_out) (*rstd_out)[n] = rs;
    }
    return out;
}

// Textbook (Ioffe & Szegedy) chain rule through var and mean; fresh gradients.
inline void layernorm_backward(const Vec& dout, const Vec& inp, const Vec& w, int N, int C,
                               Vec& dinp, Vec& dw, Vec& db) {
    dinp.assign((size_t)N * C, 0.0);
    dw.assign(C, 0.0);
    db.assign(C, 0.0);
    for (int n = 0; n < N; n++) {
        const double* x = &inp[(size_t)n * C];
        const double* dy = &dout[(size_t)n * C];
        double mu = 0.0;
        for (int i = 0; i < C; i++) mu += x[i];
        mu /= C;
        double var = 0.0;
        for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        var /= C;
        const double rs = 1.0 / std::sqrt(var + kLnEps);
        double dvar = 0.0, dmu = 0.0;
        for (int i = 0; i < C; i++) {
            const double dxhat = dy[i] * w[i];
            dvar += dxhat * (x[i] - mu) * -0.5 * std::pow(var + kLnEps, -1.5);
            dmu += -dxhat * rs;
            dw[i] += dy[i] * (x[i] - mu) * rs;
            db[i] += dy[i];
        }
        double mean_dev = 0.0;
        for (int i = 0; i < C; i++) mean_dev += -2.0 * (x[i] - mu);
        dmu += dvar * mean_dev / C;
        for (int i = 0; i < C; i++)
            dinp[(size_t)n * C + i] = dy[i] * w[i] * rs + dvar * 2.0 * (x[i] - mu) / C + dmu / C;
    }
}

// ------------------------------------------------------------------ matmul

// Element W(k, m) of the logical [K,M] matrix, whatever the storage layout.
inline double weight_at(const Vec& W, int k, int m, int K, int M, trt::WeightLayout layout) {
    return layout == trt::WeightLayout::InOut ? W[(size_t)k * M + m] : W[(size_t)m * K + k];
}

inline Vec matmul_forward(const Vec& inp, const Vec& W, const Vec* bias, int N, int K, int M,
                          trt::WeightLayout layout) {
    Vec out((size_t)N * M);
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            double s = bias ? (*bias)[m] : 0.0;
            for (int k = 0; k < K; k++) s += inp[(size_t)n * K + k] * weight_at(W, k, m, K, M, layout);
            out[(size_t)n * M + m] = s;
        }
    return out;
}

// Fresh gradients; dW in the weight's storage layout.
inline void matmul_backward(const Vec& dout, const Vec& inp, const Vec& W, int N, int K, int M,
                            trt::WeightLayout layout, Vec& dinp, Vec& dW, Vec& dbias) {
    dinp.assign((size_t)N * K, 0.0);
    dW.assign((size_t)K * M, 0.0);
    dbias.assign(M, 0.0);
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            const double g = dout[(size_t)n * M + m];
            dbias[m] += g;
            for (int k = 0; k < K; k++) {
                dinp[(size_t)n * K + k] += g * weight_at(W, k, m, K, M, layout);
                const size_t wi = layout == trt::WeightLayout::InOut ? (size_t)k * M + m
                                                                     : (size_t)m * K + k;
                dW[wi] += inp[(size_t)n * K + k] * g;
            }
        }
}

// ------------------------------------------------------------------ attention

// Causal attention with NH query heads and NKV key/value heads (NKV divides NH; NKV == NH is
// multi-head attention). qkv [B,T,(NH+2NKV)hs], hs = C/NH: head h of Q at column h*hs, kv
// head j of K at C + j*hs, of V at C + (NKV + j)*hs; query head h uses kv head h/(NH/NKV).
// Returns out [B,T,C]; att (if given) [B,NH,T,T] with zeros above the diagonal. keep (if
// given) [B,NH,T,T]: attention dropout's multipliers (0 or 1/(1-p)) on the probabilities.
// window > 0: query t sees key s only where t - s < window (transformers' sliding window),
// tested per pair; lse (if given) [B,NH,T]: each row's log-sum-exp of its scaled scores.
// pos (documents, if given and not empty) [B,T]: query t also sees key s only where
// s >= t - pos[b,t] (its own example).
inline Vec attention_forward(const Vec& qkv, int B, int T, int C, int NH, int NKV,
                             Vec* att_out = nullptr, const Vec* keep = nullptr, int window = 0,
                             Vec* lse = nullptr, const std::vector<int32_t>* pos = nullptr) {
    const int hs = C / NH, G = NH / NKV, W = C + 2 * NKV * hs;
    const double scale = 1.0 / std::sqrt((double)hs);
    Vec out((size_t)B * T * C, 0.0);
    if (att_out) att_out->assign((size_t)B * NH * T * T, 0.0);
    if (lse) lse->assign((size_t)B * NH * T, 0.0);
    int cur_b = 0;  // the sequence of the row being computed (seen's documents)
    auto seen = [&](int t, int s) {
        return s <= t && (window <= 0 || t - s < window) &&
               s >= t - position_of(pos, cur_b, t, T);
    };
    auto Q = [&](int b, int t, int h, int i) { return qkv[((size_t)b * T + t) * W + h * hs + i]; };
    auto K = [&](int b, int t, int h, int i) { return qkv[((size_t)b * T + t) * W + C + (h / G) * hs + i]; };
    auto V = [&](int b, int t, int h, int i) { return qkv[((size_t)b * T + t) * W + C + (NKV + h / G) * hs + i]; };
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                cur_b = b;
                const double unseen = -std::numeric_limits<double>::infinity();
                Vec score(t + 1, unseen);
                for (int s = 0; s <= t; s++) {
                    if (!seen(t, s)) continue;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) d += Q(b, t, h, i) * K(b, s, h, i);
                    score[s] = d * scale;
                }
                double mx = unseen;
                for (double x : score) mx = std::max(mx, x);
                double z = 0.0;
                for (double x : score) z += std::exp(x - mx);  // exp(-inf) = 0: unseen keys
                if (lse) (*lse)[((size_t)b * NH + h) * T + t] = mx + std::log(z);
                for (int s = 0; s <= t; s++) {
                    const double p = std::exp(score[s] - mx) / z;
                    const size_t e = (((size_t)b * NH + h) * T + t) * T + s;
                    if (att_out) (*att_out)[e] = p;
                    const double pd = keep ? p * (*keep)[e] : p;
                    for (int i = 0; i < hs; i++)
                        out[((size_t)b * T + t) * C + h * hs + i] += pd * V(b, s, h, i);
                }
            }
    return out;
}

// dqkv (fresh); a K/V head's gradient sums over the query heads that read it.
// Unseen keys (a window's) have p = 0, so their gradients are 0 through the same sums.
inline Vec attention_backward(const Vec& dout, const Vec& qkv, int B, int T, int C, int NH,
                              int NKV, const Vec* keep = nullptr, int window = 0,
                              const std::vector<int32_t>* pos = nullptr) {
    const int hs = C / NH, G = NH / NKV, W = C + 2 * NKV * hs;
    const double scale = 1.0 / std::sqrt((double)hs);
    Vec att;
    attention_forward(qkv, B, T, C, NH, NKV, &att, nullptr, window, nullptr, pos);
    Vec dqkv(qkv.size(), 0.0);
    // block 0: Q head h; 1: K of query head h's kv head; 2: V of it.
    auto idx = [&](int b, int t, int block, int h, int i) {
        const int col = block == 0 ? h * hs : C + ((block - 1) * NKV + h / G) * hs;
        return ((size_t)b * T + t) * W + col + i;
    };
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double* p = &att[(((size_t)b * NH + h) * T + t) * T];
                const double* dy = &dout[((size_t)b * T + t) * C + h * hs];
                const double* kp = keep ? &(*keep)[(((size_t)b * NH + h) * T + t) * T] : nullptr;
                // out[t] = sum_s p[s] k[s] v[s] (k: the dropout multiplier, 1 without)
                Vec dp(t + 1, 0.0);
                for (int s = 0; s <= t; s++) {
                    const double ks = kp ? kp[s] : 1.0;
                    for (int i = 0; i < hs; i++) {
                        dp[s] += dy[i] * qkv[idx(b, s, 2, h, i)] * ks;
                        dqkv[idx(b, s, 2, h, i)] += p[s] * ks * dy[i];
                    }
                }
                // softmax Jacobian: dscore[s] = sum_r p[r] (delta_rs - p[s]) dp[r]
                for (int s = 0; s <= t; s++) {
                    double ds = 0.0;
                    for (int r = 0; r <= t; r++) ds += dp[r] * p[r] * ((r == s ? 1.0 : 0.0) - p[s]);
                    // score[s] = scale * q[t]·k[s]
                    for (int i = 0; i < hs; i++) {
                        dqkv[idx(b, t, 0, h, i)] += ds * scale * qkv[idx(b, s, 1, h, i)];
                        dqkv[idx(b, s, 1, h, i)] += ds * scale * qkv[idx(b, t, 0, h, i)];
                    }
                }
            }
    return dqkv;
}

// Dropout's multipliers (0, or 1/(1-p) computed in float as the backends do) of elements
// [index0, index0 + n) of a site's stream (core/dropout_mask.h), drawn here element by element.
inline Vec dropout_multipliers(size_t n, float p, uint64_t seed, int64_t step,
                               uint32_t micro_step, uint32_t site, uint64_t index0 = 0) {
    Vec k(n);
    const uint32_t threshold = trt::dropout_threshold(p);
    for (size_t j = 0; j < n; j++) {
        const uint64_t i = index0 + j;
        const trt::Philox4x32 u = trt::dropout_uniforms(seed, step, micro_step, site, i / 4);
        k[j] = u.v[i % 4] >= threshold ? (double)trt::dropout_scale(p) : 0.0;
    }
    return k;
}

// ------------------------------------------------------------------ gelu (tanh approx)

inline double gelu(double x) {
    const double k = std::sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

inline double gelu_grad(double x) {
    const double k = std::sqrt(2.0 / 3.14159265358979323846);
    const double u = k * (x + 0.044715 * x * x * x);
    const double ch = std::cosh(u);
    return 0.5 * (1.0 + std::tanh(u)) + 0.5 * x * (k * (1.0 + 3.0 * 0.044715 * x * x)) / (ch * ch);
}

// ------------------------------------------------------------------ rmsnorm (LlamaRMSNorm)

// out = x / sqrt(mean(x²) + eps) * w per row; rstd (if given) = 1/sqrt(mean(x²) + eps).
inline Vec rmsnorm_forward(const Vec& inp, const Vec& w, int N, int C, double eps,
                           Vec* rstd_out = nullptr) {
    Vec out((size_t)N * C);
    if (rstd_out) rstd_out->assign(N, 0.0);
    for (int n = 0; n < N; n++) {
        const double* x = &inp[(size_t)n * C];
        double ms = 0.0;
        for (int i = 0; i < C; i++) ms += x[i] * x[i];
        ms /= C;
        const double rs = 1.0 / std::sqrt(ms + eps);
        for (int i = 0; i < C; i++) out[(size_t)n * C + i] = x[i] * rs * w[i];
        if (rstd_out) (*rstd_out)[n] = rs;
    }
    return out;
}

// Chain rule through ms = mean(x²): dms = sum_i dy_i w_i x_i · (−1/2)(ms + eps)^(−3/2),
// dx_i = dy_i w_i rs + dms · 2 x_i / C. Fresh gradients.
inline void rmsnorm_backward(const Vec& dout, const Vec& inp, const Vec& w, int N, int C,
                             double eps, Vec& dinp, Vec& dw) {
    dinp.assign((size_t)N * C, 0.0);
    dw.assign(C, 0.0);
    for (int n = 0; n < N; n++) {
        const double* x = &inp[(size_t)n * C];
        const double* dy = &dout[(size_t)n * C];
        double ms = 0.0;
        for (int i = 0; i < C; i++) ms += x[i] * x[i];
        ms /= C;
        const double rs = 1.0 / std::sqrt(ms + eps);
        double dms = 0.0;
        for (int i = 0; i < C; i++) {
            dms += dy[i] * w[i] * x[i] * -0.5 * std::pow(ms + eps, -1.5);
            dw[i] += dy[i] * x[i] * rs;
        }
        for (int i = 0; i < C; i++)
            dinp[(size_t)n * C + i] = dy[i] * w[i] * rs + dms * 2.0 * x[i] / C;
    }
}

// ------------------------------------------------------------------ rope (HF rotate_half)

// HF LlamaRotaryEmbedding tables: inv_freq[i] = theta^(−2i/hs), cos/sin[p, i] of p·inv_freq[i],
// [max_pos, hs/2] (HF concatenates the half table with itself; the ops take one half).
inline void rope_tables(int max_pos, int hs, double theta, Vec& cos_t, Vec& sin_t) {
    const int half = hs / 2;
    cos_t.assign((size_t)max_pos * half, 0.0);
    sin_t.assign((size_t)max_pos * half, 0.0);
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            const double a = p * std::pow(theta, -2.0 * i / hs);
            cos_t[(size_t)p * half + i] = std::cos(a);
            sin_t[(size_t)p * half + i] = std::sin(a);
        }
}

// HF apply_rotary_pos_emb on one head vector x [hs] at position p:
// x·cos_full + rotate_half(x)·sin_full, cos_full = cat(cos[p], cos[p]),
// rotate_half(x) = cat(−x[half:], x[:half]).
inline Vec rope_head(const Vec& x, const double* c, const double* s, int hs) {
    const int half = hs / 2;
    Vec rh(hs), y(hs);
    for (int i = 0; i < half; i++) {
        rh[i] = -x[i + half];
        rh[i + half] = x[i];
    }
    for (int i = 0; i < hs; i++) y[i] = x[i] * c[i % half] + rh[i] * s[i % half];
    return y;
}

// Rotates the Q and K heads of qkv [B,T,(NH+2NKV)hs] (attention layout) at positions
// pos0 + t (or pos[b,t]: documents); V copied unchanged.
inline Vec rope_forward(const Vec& qkv, const Vec& cos_t, const Vec& sin_t, int B, int T,
                        int NH, int NKV, int hs, int pos0,
                        const std::vector<int32_t>* pos = nullptr) {
    const int half = hs / 2, W = (NH + 2 * NKV) * hs;
    Vec out = qkv;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH + NKV; h++) {
                const size_t o = ((size_t)b * T + t) * W + (size_t)h * hs;
                const size_t p =
                    (size_t)(pos != nullptr ? (*pos)[(size_t)b * T + t] : pos0 + t) * half;
                Vec y = rope_head(Vec(qkv.begin() + o, qkv.begin() + o + hs), &cos_t[p],
                                  &sin_t[p], hs);
                for (int i = 0; i < hs; i++) out[o + i] = y[i];
            }
    return out;
}

// The chain rule of rope_head: dx = dy·cos_full + rotate_halfᵀ(dy·sin_full), with
// rotate_halfᵀ(v) = cat(v[half:], −v[:half]). V's gradient passes through.
inline Vec rope_backward(const Vec& dqkv, const Vec& cos_t, const Vec& sin_t, int B, int T,
                         int NH, int NKV, int hs, int pos0,
                         const std::vector<int32_t>* pos = nullptr) {
    const int half = hs / 2, W = (NH + 2 * NKV) * hs;
    Vec dx = dqkv;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH + NKV; h++) {
                const size_t o = ((size_t)b * T + t) * W + (size_t)h * hs;
                const size_t p = pos != nullptr ? (*pos)[(size_t)b * T + t] : pos0 + t;
                const double* c = &cos_t[p * half];
                const double* s = &sin_t[p * half];
                Vec ds(hs);
                for (int i = 0; i < hs; i++) ds[i] = dqkv[o + i] * s[i % half];
                for (int i = 0; i < hs; i++) {
                    const double rt = i < half ? ds[i + half] : -ds[i - half];
                    dx[o + i] = dqkv[o + i] * c[i % half] + rt;
                }
            }
    return dx;
}

// ------------------------------------------------------------------ swiglu

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu(double x) { return x * sigmoid(x); }
inline double silu_grad(double x) { return sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))); }

// inp [N, 2F] = [gate | up]; out [N, F] = silu(gate) * up.
inline Vec swiglu_forward(const Vec& inp, int N, int F) {
    Vec out((size_t)N * F);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < F; j++)
            out[(size_t)n * F + j] =
                silu(inp[(size_t)n * 2 * F + j]) * inp[(size_t)n * 2 * F + F + j];
    return out;
}

// dinp [N, 2F]: d gate = dout * up * silu'(gate), d up = dout * silu(gate).
inline Vec swiglu_backward(const Vec& dout, const Vec& inp, int N, int F) {
    Vec dinp((size_t)N * 2 * F);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < F; j++) {
            const double g = inp[(size_t)n * 2 * F + j], u = inp[(size_t)n * 2 * F + F + j];
            const double dy = dout[(size_t)n * F + j];
            dinp[(size_t)n * 2 * F + j] = dy * u * silu_grad(g);
            dinp[(size_t)n * 2 * F + F + j] = dy * silu(g);
        }
    return dinp;
}

// ------------------------------------------------------------------ classifier

// losses[n] = logsumexp(logits[n, :V]) - logits[n, target]; dlogits = dloss (p - onehot),
// 0 in the padded columns. logits rows have Vp columns. A target of -1 is ignored: loss 0,
// a gradient row of 0.
inline void classifier(const Vec& logits, const std::vector<int32_t>& targets, int N, int V,
                       int Vp, double dloss, Vec& losses, Vec& dlogits) {
    losses.assign(N, 0.0);
    dlogits.assign((size_t)N * Vp, 0.0);
    for (int n = 0; n < N; n++) {
        if (targets[n] == -1) continue;
        const double* x = &logits[(size_t)n * Vp];
        double mx = x[0];
        for (int i = 1; i < V; i++) mx = std::max(mx, x[i]);
        double z = 0.0;
        for (int i = 0; i < V; i++) z += std::exp(x[i] - mx);
        const double lse = mx + std::log(z);
        losses[n] = lse - x[targets[n]];
        for (int i = 0; i < V; i++)
            dlogits[(size_t)n * Vp + i] = dloss * (std::exp(x[i] - lse) - (i == targets[n] ? 1.0 : 0.0));
    }
}

}  // namespace ref
