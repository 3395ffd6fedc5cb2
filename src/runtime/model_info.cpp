#include "runtime/model_info.h"

#include <cstdio>

#include "backend/cudnn_attention_sizes.h"
#include "core/error.h"
#include "model/activations.h"
#include "model/lora.h"
#include "model/quantised_base.h"
#include "model/trainable.h"
#include "runtime/optimizer.h"
#include "runtime/perf.h"

namespace trt {

ModelInfo model_info(const ModelSpec& spec, int B, int T, const Backend& backend,
                     const AttentionSizing* attention, const std::vector<std::string>& trainable,
                     Recompute recompute, StateDType state, HeadChunking head) {
    ParamTable table(spec);
    table.set_trainable(trainable_flags(table, trainable));
    const int64_t N = static_cast<int64_t>(B) * T;
    ModelInfo m;
    m.parameters = static_cast<int64_t>(table.num_params());
    m.trainable_parameters = static_cast<int64_t>(table.num_trainable_params());
    m.flops_per_token = flops_per_token(m.parameters, spec.L, spec.C, T);  // 6N + 6·L·C·T
    // Buffers hold the padded vocabulary matrices ([Vp, C]): parameters, gradients, m and v.
    const int64_t stored = static_cast<int64_t>(table.total());
    // The fp32 master, and the low-precision working copy the matmuls read (bf16/fp16); a
    // quantised base (lora.base_dtype) in its own bytes beside them.
    m.bytes_parameters =
        stored * 4 + static_cast<int64_t>(backend.working_copy_bytes(static_cast<size_t>(stored))) +
        static_cast<int64_t>(QuantisedBase::planned_bytes(table));
    // Gradients and moments of the trainable tensors (Decoder, AdamW), and the [2C] the
    // frozen norms' gradients are discarded into.
    m.bytes_optimizer = static_cast<int64_t>(table.grad_total()) * 4 +
                        static_cast<int64_t>(AdamW::moment_bytes(table, state)) +
                        (table.all_trainable() ? 0 : 2 * int64_t{spec.C} * 4);
    // The Decoder's own plan (model/activations.h), counted without allocating, plus the
    // token ids and the RoPE tables.
    const AttentionShape shape = spec.attention_shape(B, T);
    const size_t saved =
        attention ? attention->saved_floats : backend.attention_saved_floats(shape);
    const size_t scratch =
        attention ? attention->scratch_floats : backend.attention_scratch_floats(shape);
    const int head_rows = head_chunk_rows(
        table.padded_vocab(), B * T, head.rows,
        head_chunk_logits(
            table, head.logits > 0 ? head.logits : backend.capabilities().head_chunk_logits));
    const size_t acts = lay_out_activations(spec, B, T, saved, scratch, backend.activation_dtype(),
                                            recompute, nullptr, nullptr, head_rows);
    const int64_t rope = spec.learned_positions() ? 0 : int64_t{spec.maxT} * spec.hs();
    // The ops' own scratch (the CPU's low-precision row chunks), at the Decoder's dims.
    m.bytes_activations = static_cast<int64_t>(acts) + rope * 4 + 2 * N * 4 +
                          static_cast<int64_t>(attention ? attention->op_scratch_bytes : 0) +
                          static_cast<int64_t>(backend.op_scratch_bytes(model_dims(table, B, T)));
    m.bytes_total = m.bytes_parameters + m.bytes_optimizer + m.bytes_activations;
    return m;
}

ModelInfo run_model_info(const RunConfig& r, const RunResolution& res) {
    TRT_CHECK(r.train.batch_size > 0, "run_model_info needs a number of rows, not \"auto\"");
    const ModelSpec shape = run_model_spec(r);
    const auto backend = make_cpu_backend(static_cast<int>(r.runtime.threads),
                                          res.sizing_precision, r.accel.cpu_matmul);
    const int B = static_cast<int>(r.train.batch_size), T = static_cast<int>(r.train.seq_len);
    // cuDNN attention keeps O and the softmax statistics instead of the T×T matrices the
    // matmul path keeps: sized as the CUDA backend sizes it. Where cuDNN then refuses the
    // shape, the run falls back and needs more than this.
    AttentionSizing cudnn;
    if (res.cudnn_attention_sizes) {
        cudnn.saved_floats = cudnn_sizes::saved_floats(B, T, shape.C, shape.NH);
        cudnn.scratch_floats = cudnn_sizes::scratch_floats(B, T, shape.C, shape.NH);
        cudnn.op_scratch_bytes =
            cudnn_sizes::op_scratch_bytes_without_workspace(B, T, shape.C, shape.NH);
    }
    ModelInfo m =
        model_info(shape, B, T, *backend, res.cudnn_attention_sizes ? &cudnn : nullptr,
                   r.train.trainable, r.train.recompute, r.optim.state_dtype,
                   HeadChunking{static_cast<int>(r.accel.head_chunk_rows), res.head_chunk_logits});
    if (res.cuda) {  // CUDA's working copy in place of the sizing CPU backend's
        const size_t n = ParamTable(shape).total();
        const int64_t working =
            static_cast<int64_t>(res.cuda_working_copy_bytes_per_param * n) -
            static_cast<int64_t>(backend->working_copy_bytes(n));
        m.bytes_parameters += working;
        m.bytes_total += working;
    }
    return m;
}

std::string model_summary(const ModelSpec& spec) {
    const ParamTable table(spec);
    // The decoder's parts, by slot: what each tensor is for, whatever the family calls it.
    struct Part {
        const char* name;
        int64_t count = 0;
    } parts[] = {{"embeddings"}, {"attention"}, {"MLP"}, {"norms"}, {"output head"}};
    std::vector<const ParamTensor*> all;  // a quantised base's tensors too
    for (const ParamTensor& t : table.tensors()) all.push_back(&t);
    for (const ParamTensor& t : table.quantised_tensors()) all.push_back(&t);
    for (const ParamTensor* tp : all) {
        const ParamTensor& t = *tp;
        int part = 2;
        switch (t.slot) {
            case Slot::TokenEmbedding: case Slot::PositionEmbedding: part = 0; break;
            case Slot::Qkv: case Slot::QkvBias: case Slot::Q: case Slot::K: case Slot::V:
            case Slot::QBias: case Slot::KBias: case Slot::VBias:
            case Slot::AttnOut: case Slot::AttnOutBias: part = 1; break;
            case Slot::AttnNorm: case Slot::AttnNormBias: case Slot::MlpNorm:
            case Slot::MlpNormBias: case Slot::FinalNorm: case Slot::FinalNormBias:
            case Slot::QNorm: case Slot::KNorm: part = 3; break;
            case Slot::Head: part = 4; break;
            default: part = 2;  // Gate, Up, UpBias, Down, DownBias
        }
        parts[part].count += static_cast<int64_t>(t.numel);
    }
    const double total = static_cast<double>(table.num_params());
    std::string out = cat("architecture: ", describe(spec), "\nparameters by part:\n");
    for (const Part& p : parts) {
        if (p.count == 0 && std::string(p.name) == "output head") {
            out += "  output head     tied to the token embedding\n";
            continue;
        }
        char line[96];
        std::snprintf(line, sizeof line, "  %-15s %14lld  %5.1f%%\n", p.name,
                      static_cast<long long>(p.count), 100.0 * static_cast<double>(p.count) / total);
        out += line;
    }
    return out;
}

}  // namespace trt
