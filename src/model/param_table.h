// ParamTable: every GPT-2 parameter as a named view into ONE flat fp32 buffer, in a fixed
// order (wte, wpe, then each block in HF order, then ln_f). Grads and AdamW m/v use the same
// table over their own flat buffers, so the optimizer and checkpoints stream one buffer each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace trt {

struct GptShape {
    int V = 0;     // vocab_size
    int maxT = 0;  // context_length (rows of wpe)
    int L = 0;     // n_layer
    int NH = 0;    // n_head
    int C = 0;     // d_model
};

// The model section's shape. The config's bounds (config/size_limits.h) keep every field an
// int and every product of them addressable.
inline GptShape gpt_shape(const ModelConfig& m) {
    GptShape s;
    s.V = static_cast<int>(m.vocab_size);
    s.maxT = static_cast<int>(m.context_length);
    s.L = static_cast<int>(m.n_layer);
    s.NH = static_cast<int>(m.n_head);
    s.C = static_cast<int>(m.d_model);
    return s;
}

struct ParamTensor {
    std::string name;            // Hugging Face GPT-2 name, e.g. "h.0.attn.c_attn.weight"
    std::vector<int64_t> shape;  // as in HF files (Conv1D weights are [in, out])
    size_t offset = 0;           // in floats, into the flat buffer
    size_t numel = 0;
    bool decay = false;          // weight decay applies (tensors with >= 2 dims)
};

// Index of each tensor of one block, in table order.
enum BlockParam {
    kLn1W, kLn1B, kQkvW, kQkvB, kAttProjW, kAttProjB,
    kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB, kBlockParams
};

// The vocabulary rounded up to a multiple of kVocabPadding (GPT-2: 50257 -> 50304), so the
// classifier matmul's rows stay aligned for tensor-core kernels (llm.c's padded vocab).
inline constexpr int kVocabPadding = 128;
inline int padded_vocab(int V) { return (V + kVocabPadding - 1) / kVocabPadding * kVocabPadding; }

class ParamTable {
public:
    explicit ParamTable(const GptShape& shape);
    const GptShape& shape() const { return shape_; }
    const std::vector<ParamTensor>& tensors() const { return tensors_; }
    // Floats in the flat buffer: the parameters plus wte's padding rows [V, Vp) that follow
    // wte (always zero: no token reads them, their logits get no gradient, so AdamW keeps
    // them at 0). The buffer's wte is a [Vp, C] matrix for the classifier matmul; every file
    // (checkpoint, HF export, llm.c import) sees only the [V, C] tensor.
    size_t total() const { return total_; }
    size_t num_params() const { return num_params_; }  // the model's parameters (no padding)
    int padded_vocab() const { return Vp_; }
    // The padding rows' floats in a flat buffer: [padding_begin(), + padding_size()).
    size_t padding_begin() const { return tensors_[0].offset + tensors_[0].numel; }
    size_t padding_size() const { return total_ - num_params_; }
    // Sets the padding rows of a flat host buffer to 0: every loader and initialiser ends
    // with it, so the invariant "padding is zero" never depends on the caller's buffer.
    void clear_padding(float* host) const;

    const ParamTensor& wte() const { return tensors_[0]; }
    const ParamTensor& wpe() const { return tensors_[1]; }
    const ParamTensor& block(int layer, BlockParam p) const {
        return tensors_[2 + static_cast<size_t>(layer) * kBlockParams + p];
    }
    const ParamTensor& lnf_w() const { return tensors_[tensors_.size() - 2]; }
    const ParamTensor& lnf_b() const { return tensors_[tensors_.size() - 1]; }
    const ParamTensor* find(const std::string& name) const;

private:
    GptShape shape_;
    std::vector<ParamTensor> tensors_;
    size_t total_ = 0;
    size_t num_params_ = 0;
    int Vp_ = 0;
};

}  // namespace trt
