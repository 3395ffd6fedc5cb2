// Rotary position embedding, HF Llama convention (rotate_half: element i pairs with
// i + hs/2, not with its neighbour), in place on the Q and K heads of qkv
// [B,T,(NH+2NKV)hs]; the V heads are never touched. The cos/sin tables [max_pos, hs/2] come
// from the model, so every backend rotates by the same values. Pure per-element work: rows
// split statically, no reduction, results independent of the thread count.
#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace trt::cpu {

// One row's `heads` head vectors (consecutive, hs = 2·half floats each), rotated by the
// angle pair (c, s) of this position: forward x' = R x, backward d' = Rᵀ d (sign of s).
TRT_CPU_CLONES static void rope_row(float* x, const float* __restrict c,
                                    const float* __restrict s, int heads, int half,
                                    bool transpose) {
    for (int hd = 0; hd < heads; hd++) {
        float* __restrict lo = x + (size_t)hd * 2 * half;  // x[0, half)
        float* __restrict hi = lo + half;                   // x[half, hs)
        if (!transpose) {
            for (int i = 0; i < half; i++) {
                const float a = lo[i], b = hi[i];
                lo[i] = a * c[i] - b * s[i];
                hi[i] = b * c[i] + a * s[i];
            }
        } else {
            for (int i = 0; i < half; i++) {
                const float a = lo[i], b = hi[i];
                lo[i] = a * c[i] + b * s[i];
                hi[i] = b * c[i] - a * s[i];
            }
        }
    }
}

static void rope_apply(float* qkv /*[B,T,(NH+2NKV)hs] inout*/, const float* cos,
                       const float* sin /*[max_pos, hs/2]*/, int B, int T, int NH, int NKV,
                       int hs, int pos0, bool transpose, int threads, const int32_t* pos) {
    TRT_CHECK(hs > 0 && hs % 2 == 0 && (pos != nullptr || pos0 >= 0), "rope: hs=", hs,
              " pos0=", pos0);
    const int half = hs / 2;
    const int W = (NH + 2 * NKV) * hs;  // qkv row
    const int heads = NH + NKV;         // Q then K heads: the first (NH+NKV)·hs of a row
    const int N = B * T;
    parallel_for(N, team((size_t)N * heads * hs, threads), [&](int n) {
        // Row n = b*T + t has position pos0 + t, or its example's pos[n] (documents).
        const size_t p = pos != nullptr ? (size_t)pos[n] : (size_t)pos0 + n % T;
        rope_row(qkv + (size_t)n * W, cos + p * half, sin + p * half, heads, half, transpose);
    });
}

void rope_forward(float* qkv /*[B,T,(NH+2NKV)hs] inout*/, const float* cos /*[max_pos,hs/2]*/,
                  const float* sin /*[max_pos,hs/2]*/, int B, int T, int NH, int NKV, int hs,
                  int pos0, int threads, const int32_t* pos) {
    rope_apply(qkv, cos, sin, B, T, NH, NKV, hs, pos0, false, threads, pos);
}

// The rotation is orthogonal, so its backward is the rotation by -angle (transpose).
void rope_backward(float* dqkv /*[B,T,(NH+2NKV)hs] inout*/, const float* cos,
                   const float* sin, int B, int T, int NH, int NKV, int hs, int pos0,
                   int threads, const int32_t* pos) {
    rope_apply(dqkv, cos, sin, B, T, NH, NKV, hs, pos0, true, threads, pos);
}

}  // namespace trt::cpu
