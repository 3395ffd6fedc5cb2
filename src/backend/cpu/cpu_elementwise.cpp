// Elementwise ops and the embedding encoder: memory-bound loops, parallel over the outer
// index (cpu_common.h, parallel_for), contiguous inner loops that vectorise.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_dropout.h"
#include "backend/cpu/cpu_gelu.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

void encoder_forward(float* out /*[N,C]*/, const int32_t* inputs /*[N]*/,
                     const float* wte /*[V,C]*/, const float* wpe /*[>=T,C] or null*/, int B,
                     int T, int C, int threads, const int32_t* pos) {
    const int N = B * T;
    parallel_for(N, team((size_t)N * C, threads), [&](int n) {
        float* __restrict o = out + (size_t)n * C;
        const float* __restrict e = wte + (size_t)inputs[n] * C;
        if (!wpe) {  // rotary models: positions enter in the attention, not here
            for (int c = 0; c < C; c++) o[c] = e[c];
            return;
        }
        // Row n's position: n % T, or its example's pos[n] (documents).
        const float* __restrict p = wpe + (size_t)(pos != nullptr ? pos[n] : n % T) * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    });
}

void encoder_backward(float* dwte /*[V,C] += or null*/, float* dwpe /*[>=T,C] += or null*/,
                      const float* dout /*[N,C]*/, const int32_t* inputs /*[N]*/, int B,
                      int T, int C, int threads, const int32_t* pos) {
    if (!dwte && !dwpe) return;
    // A token may repeat, so rows of dwte would race if split by n. Split by channel instead:
    // each part owns columns [c0, c1) of every row and walks n in order (deterministic), in
    // whole 64-byte lines (16 floats) so that no two parts write one cache line (at 16
    // threads x 4 parts a 384-wide row would give 6 columns a part).
    const int N = B * T;
    constexpr size_t kLine = 16;
    const size_t lines = ((size_t)C + kLine - 1) / kLine;
    const size_t parts = std::min(lines, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * C, threads), [&](size_t part) {
        size_t l0, l1;
        split_range(lines, parts, part, &l0, &l1);
        const size_t c0 = l0 * kLine, c1 = std::min((size_t)C, l1 * kLine);
        const size_t w = c1 - c0;
        for (int n = 0; n < N; n++) {
            const float* __restrict g = dout + (size_t)n * C + c0;
            if (!dwpe) {  // no position table
                float* __restrict e = dwte + (size_t)inputs[n] * C + c0;
                for (size_t j = 0; j < w; j++) e[j] += g[j];
                continue;
            }
            float* __restrict p = dwpe + (size_t)(pos != nullptr ? pos[n] : n % T) * C + c0;
            if (!dwte) {  // a frozen token embedding (train.trainable)
                for (size_t j = 0; j < w; j++) p[j] += g[j];
                continue;
            }
            float* __restrict e = dwte + (size_t)inputs[n] * C + c0;
            for (size_t j = 0; j < w; j++) {
                e[j] += g[j];
                p[j] += g[j];
            }
        }
    });
}

TRT_CPU_CLONES static void gelu_forward_kernel(float* __restrict out,
                                               const float* __restrict inp, size_t n) {
    const ExpLimits lim = exp_limits();
    for (size_t i = 0; i < n; i++) out[i] = gelu_value(inp[i], lim);
}

TRT_CPU_CLONES static void gelu_backward_kernel(float* __restrict dinp,
                                                const float* __restrict inp,
                                                const float* __restrict dout, size_t n) {
    const ExpLimits lim = exp_limits();
    for (size_t i = 0; i < n; i++) dinp[i] = gelu_grad(inp[i], lim) * dout[i];
}

// Columns [0, w) (w <= kColChunk) of rows [0, N) (row stride M): di = gelu'(x)·go and
// acc[j] += di[n, j] in row order (double: N can be thousands of rows).
TRT_CPU_CLONES static void gelu_backward_cols(float* __restrict di, double* __restrict acc,
                                              const float* __restrict x,
                                              const float* __restrict go, int N, int M,
                                              int w) {
    const ExpLimits lim = exp_limits();
    for (int n = 0; n < N; n++) {
        const size_t o = (size_t)n * M;
        for (int j = 0; j < w; j++) {
            const float d = gelu_grad(x[o + j], lim) * go[o + j];
            di[o + j] = d;
            acc[j] += d;
        }
    }
}

void zero_bytes(void* ptr, size_t bytes, int threads) {
    constexpr size_t kChunk = size_t{64} << 10;  // bytes per part
    const size_t chunks = (bytes + kChunk - 1) / kChunk;
    char* p = static_cast<char*>(ptr);
    parallel_for(chunks, team(bytes / sizeof(float), threads), [&](size_t c) {
        const size_t at = c * kChunk;
        std::memset(p + at, 0, std::min(kChunk, bytes - at));
    });
}

void gelu_forward(float* out, const float* inp, size_t n, int threads) {
    const size_t parts = std::max<size_t>(1, std::min(n, (size_t)threads * kPartsPerThread));
    parallel_for(parts, team(n, threads), [&](size_t part) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        gelu_forward_kernel(out + i0, inp + i0, i1 - i0);
    });
}

void gelu_backward(float* dinp /*overwritten*/, const float* inp, const float* dout, size_t n,
                   int threads) {
    const size_t parts = std::max<size_t>(1, std::min(n, (size_t)threads * kPartsPerThread));
    parallel_for(parts, team(n, threads), [&](size_t part) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        gelu_backward_kernel(dinp + i0, inp + i0, dout + i0, i1 - i0);
    });
}

void gelu_backward_bias(float* dinp /*[N,M] overwritten*/, float* dbias /*[M] += or null*/,
                        const float* inp /*[N,M]*/, const float* dout /*[N,M]*/, int N, int M,
                        int threads) {
    if (!dbias) {
        gelu_backward(dinp, inp, dout, (size_t)N * M, threads);
        return;
    }
    // Column split (column_sums_into): the fc bias gradient is summed in the same pass.
    column_sums_into(dbias, N, M, threads, [&](size_t j0, int w, size_t r0, int rows, double* acc) {
        const size_t o = r0 * M + j0;
        gelu_backward_cols(dinp + o, acc, inp + o, dout + o, rows, M, w);
    });
}

void add_columns(float* out, const float* in, float scale, int N, int W, int c0, int M,
                 int threads) {
    parallel_for(N, team((size_t)N * M, threads), [&](int n) {
        float* __restrict o = out + (size_t)n * W + c0;
        const float* __restrict x = in + (size_t)n * M;
        for (int j = 0; j < M; j++) o[j] += scale * x[j];
    });
}

// Philox4x32-10 of 16 consecutive groups at once, into u[4g + lane] (element order): the
// rounds of core/philox.h on arrays of 64-bit lanes holding 32-bit values, which the compiler
// turns into vector code (32x32 -> 64-bit products); the same bits as one group at a time.
TRT_CPU_CLONES static void philox16(uint32_t u[64], uint64_t g0, uint32_t c1, uint32_t c2,
                                    uint32_t c3, uint32_t k0, uint32_t k1) {
    constexpr uint64_t m32 = 0xFFFFFFFFu;
    uint64_t x0[16], x1[16], x2[16], x3[16];
    for (int g = 0; g < 16; g++) {
        x0[g] = (g0 + static_cast<uint64_t>(g)) & m32;
        x1[g] = c1;
        x2[g] = c2;
        x3[g] = c3;
    }
    uint64_t key0 = k0, key1 = k1;
    for (int round = 0; round < 10; round++) {
        for (int g = 0; g < 16; g++) {
            const uint64_t p0 = uint64_t{0xD2511F53u} * x0[g];
            const uint64_t p1 = uint64_t{0xCD9E8D57u} * x2[g];
            const uint64_t n0 = (p1 >> 32) ^ x1[g] ^ key0;
            const uint64_t n2 = (p0 >> 32) ^ x3[g] ^ key1;
            x1[g] = p1 & m32;
            x3[g] = p0 & m32;
            x0[g] = n0;
            x2[g] = n2;
        }
        key0 = (key0 + 0x9E3779B9u) & m32;
        key1 = (key1 + 0xBB67AE85u) & m32;
    }
    for (int g = 0; g < 16; g++) {
        u[4 * g] = static_cast<uint32_t>(x0[g]);
        u[4 * g + 1] = static_cast<uint32_t>(x1[g]);
        u[4 * g + 2] = static_cast<uint32_t>(x2[g]);
        u[4 * g + 3] = static_cast<uint32_t>(x3[g]);
    }
}

// The mask of 64 elements applied: dst[k] = src[k] · scale where u[k] clears the threshold.
TRT_CPU_CLONES static void apply64(float* dst, const float* src, const uint32_t* u,
                                   uint32_t threshold, float scale) {
    for (int k = 0; k < 64; k++) dst[k] = u[k] >= threshold ? src[k] * scale : 0.0f;
}

void dropout_span(const DropoutDraw& d, float* dst, const float* src, size_t n, uint64_t i) {
    const uint32_t k0 = static_cast<uint32_t>(d.seed);
    const uint32_t k1 = static_cast<uint32_t>(d.seed >> 32) ^ kDropoutKeySalt;
    const uint32_t c3 = static_cast<uint32_t>(d.step);
    size_t j = 0;
    auto one_group = [&](size_t until) {  // element by element up to `until` (< 4 of them)
        while (j < until) {
            const uint64_t e = i + j;
            const Philox4x32 u = dropout_uniforms(d.seed, d.step, d.micro_step, d.site, e >> 2);
            for (unsigned lane = static_cast<unsigned>(e & 3); lane < 4 && j < until; ++lane, ++j)
                dst[j] = u.v[lane] >= d.threshold ? src[j] * d.scale : 0.0f;
        }
    };
    one_group(std::min<size_t>(n, (4 - (i & 3)) & 3));  // up to a group boundary
    uint32_t u[64];
    while (n - j >= 64) {  // 16 whole groups
        philox16(u, (i + j) >> 2, d.site, d.micro_step, c3, k0, k1);
        apply64(dst + j, src + j, u, d.threshold, d.scale);
        j += 64;
    }
    one_group(n);
}

void dropout(float* out, const float* in, size_t n, const DropoutMask& m, int threads) {
    const DropoutDraw draw(m);
    draw.check(n);
    // Chunks of whole Philox groups (a multiple of 4 from a group start).
    constexpr size_t kChunk = 4096;
    const int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
    parallel_for(chunks, team(n, threads), [&](int64_t c) {
        const size_t j0 = static_cast<size_t>(c) * kChunk;
        const size_t len = j0 + kChunk < n ? kChunk : n - j0;
        draw.apply(out + j0, in + j0, len, j0);
    });
}

void copy_columns(float* out, const float* in, float scale, int N, int W, int c0, int M,
                  int threads) {
    parallel_for(N, team((size_t)N * M, threads), [&](int n) {
        float* __restrict o = out + (size_t)n * M;
        const float* __restrict x = in + (size_t)n * W + c0;
        for (int j = 0; j < M; j++) o[j] = scale * x[j];
    });
}

}  // namespace trt::cpu
