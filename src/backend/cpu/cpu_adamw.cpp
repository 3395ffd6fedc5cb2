// The optimizer's kernels: sum of squares (for the global grad norm) and AdamW.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

double sum_squares(const float* x, size_t n, int threads) {
    // Static partition into `threads` parts; each part sums in double with a fixed set of
    // 8 interleaved accumulators; parts are combined in order. No reduction by whichever
    // thread finishes first, so the result is bitwise reproducible.
    const size_t parts = (size_t)threads;
    std::vector<double> partial(parts, 0.0);
    parallel_for(parts, team(n, threads), [&](size_t part) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        size_t i = i0;
        for (; i + 8 <= i1; i += 8)
            for (int j = 0; j < 8; j++) {
                const double d = x[i + j];
                acc[j] += d * d;
            }
        for (; i < i1; i++) {
            const double d = x[i];
            acc[0] += d * d;
        }
        partial[part] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                        ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    });
    double total = 0.0;
    for (size_t p = 0; p < parts; p++) total += partial[p];
    return total;
}

TRT_CPU_CLONES static void adamw_kernel(float* __restrict params, const float* __restrict grads,
                                        float* __restrict m, float* __restrict v, size_t n,
                                        float decay, float beta1, float beta2, float one_m_b1,
                                        float one_m_b2, float step_size, float bc2_sqrt,
                                        float eps, float scale) {
    for (size_t i = 0; i < n; i++) {
        const float g = grads[i] * scale;
        const float mi = m[i] * beta1 + one_m_b1 * g;
        const float vi = v[i] * beta2 + one_m_b2 * g * g;
        m[i] = mi;
        v[i] = vi;
        const float denom = std::sqrt(vi) / bc2_sqrt + eps;
        params[i] = params[i] * decay - step_size * mi / denom;
    }
}

static constexpr size_t kAdamWSerialBelow = 16384;

void adamw_update(float* params, const float* grads, float* m, float* v, size_t n,
                  const AdamWParams& p, int threads) {
    // torch.optim.AdamW, PyTorch 1.13 single-tensor path. Python computes the scalars in
    // double; the tensor ops then use them as float.
    const double lr = p.lr, b1 = p.beta1, b2 = p.beta2;
    const double bc1 = 1.0 - std::pow(b1, (double)p.step);
    const double bc2 = 1.0 - std::pow(b2, (double)p.step);
    const float decay = (float)(1.0 - lr * (double)p.weight_decay);
    const float beta1 = p.beta1, beta2 = p.beta2;
    const float one_m_b1 = (float)(1.0 - b1), one_m_b2 = (float)(1.0 - b2);
    const float step_size = (float)(lr / bc1);
    const float bc2_sqrt = (float)std::sqrt(bc2);
    const float eps = p.eps, scale = p.grad_scale;
    // Elementwise, so the partition cannot change the result. The optimizer calls this once
    // per tensor; biases and layernorm parameters (a few hundred floats) are not worth
    // waking the thread team for.
    if (n < kAdamWSerialBelow) {
        adamw_kernel(params, grads, m, v, n, decay, beta1, beta2, one_m_b1, one_m_b2,
                     step_size, bc2_sqrt, eps, scale);
        return;
    }
    const size_t parts = (size_t)threads * kPartsPerThread;
    parallel_for(parts, team(n, threads), [&](size_t part) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        adamw_kernel(params + i0, grads + i0, m + i0, v + i0, i1 - i0, decay, beta1, beta2,
                     one_m_b1, one_m_b2, step_size, bc2_sqrt, eps, scale);
    });
}

void adamw_update_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                     float* m_scale, float* v_scale, const Q8Tables& tables, size_t n,
                     const ParamSegments& seg, const AdamWParams& base, int threads) {
    // adamw_update's scalars; the decay per segment.
    const double lr = base.lr, b1 = base.beta1, b2 = base.beta2;
    const double bc1 = 1.0 - std::pow(b1, (double)base.step);
    const double bc2 = 1.0 - std::pow(b2, (double)base.step);
    const float one_m_b1 = (float)(1.0 - b1), one_m_b2 = (float)(1.0 - b2);
    const float step_size = (float)(lr / bc1);
    const float bc2_sqrt = (float)std::sqrt(bc2);
    const int64_t blocks = q8_blocks((int64_t)n);
    parallel_for(blocks, team(n, threads), [&](int64_t b) {
        const size_t i0 = (size_t)b * kQ8Block, i1 = std::min(n, i0 + kQ8Block);
        // The block's moments decoded, updated in place by adamw_kernel (the fp32 state's
        // arithmetic, piece by piece of the segments it crosses), then encoded.
        float m[kQ8Block], v[kQ8Block];
        for (size_t i = i0; i < i1; i++) {
            m[i - i0] = q8_decode_m(tables, m8[i], m_scale[b]);
            v[i - i0] = q8_decode_v(tables, v8[i], v_scale[b]);
        }
        int32_t sg = 0;
        while ((size_t)seg.ends[sg] <= i0) sg++;
        for (size_t i = i0; i < i1;) {
            const size_t end = std::min(i1, (size_t)seg.ends[sg]);
            const float decay = (float)(1.0 - lr * (double)seg.weight_decay[sg]);
            adamw_kernel(params + i, grads + i, m + (i - i0), v + (i - i0), end - i, decay,
                         base.beta1, base.beta2, one_m_b1, one_m_b2, step_size, bc2_sqrt,
                         base.eps, base.grad_scale);
            i = end;
            sg++;
        }
        float m_max = 0.0f, v_max = 0.0f;
        for (size_t k = 0; k < i1 - i0; k++) {
            m_max = std::max(m_max, std::fabs(m[k]));
            v_max = std::max(v_max, v[k]);
        }
        m_scale[b] = m_max;
        v_scale[b] = v_max;
        for (size_t i = i0; i < i1; i++) {
            m8[i] = q8_encode_m(tables, m[i - i0], m_max);
            v8[i] = q8_encode_v(tables, v[i - i0], v_max);
        }
    });
}

}  // namespace trt::cpu
