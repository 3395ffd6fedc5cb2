#include "model/model_info.h"

#include "runtime/perf.h"

namespace trt {

ModelInfo model_info(const GptShape& shape, int B, int T, const Backend& backend) {
    const ParamTable table(shape);
    const int64_t N = static_cast<int64_t>(B) * T;
    const int64_t C = shape.C, L = shape.L;
    ModelInfo m;
    m.parameters = static_cast<int64_t>(table.num_params());
    const int64_t Vp = table.padded_vocab();
    m.flops_per_token = flops_per_token(m.parameters, L, C, T);  // 6N + 6·L·C·T
    // Buffers hold the padded wte ([Vp, C]): parameters, gradients, m and v.
    const int64_t stored = static_cast<int64_t>(table.total());
    m.bytes_parameters = stored * 4;
    m.bytes_optimizer = 3 * stored * 4;
    // Per layer: ln1, atty, attproj, residual2, ln2, fcproj, residual3 (C each), qkv (3C),
    // fch, fch_gelu (4C each), four LN statistics; then encoded, ln_f, logits, losses and the
    // backward scratch (dresidual, dln, datty: C; dqkv: 3C; dfch, dfch_gelu: 4C).
    const int64_t per_layer = N * (7 * C + 3 * C + 8 * C + 4) +
                              static_cast<int64_t>(backend.attention_saved_floats(
                                  B, T, shape.C, shape.NH));
    const int64_t rest = N * (C + C + 2 + Vp + 1) + N * (3 * C + 3 * C + 8 * C) +
                         static_cast<int64_t>(backend.attention_scratch_floats(
                             B, T, shape.C, shape.NH));
    m.bytes_activations = (L * per_layer + rest) * 4 + 2 * N * 4;  // + token ids
    m.bytes_total = m.bytes_parameters + m.bytes_optimizer + m.bytes_activations;
    return m;
}

}  // namespace trt
