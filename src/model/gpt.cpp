#include "model/gpt.h"

#include "core/error.h"

namespace trt {

Gpt::Gpt(Backend& backend, const GptShape& shape, int B, int T)
    : be_(backend), table_(shape), B_(B), T_(T) {
    const size_t N = static_cast<size_t>(B) * T;
    const size_t C = shape.C, Vp = table_.padded_vocab(), L = shape.L;
    // The backend sizes its scratch first: which attention path it takes (and so how much it
    // saves for the backward) can depend on the shapes (cuDNN plans are built here).
    be_.reserve(ModelDims{B, T, shape.C, shape.NH, shape.V, shape.L});
    const size_t att_saved = be_.attention_saved_floats(B, T, shape.C, shape.NH);
    const size_t att_scratch = be_.attention_scratch_floats(B, T, shape.C, shape.NH);

    // Carve every activation out of one allocation: first count, then assign.
    struct Slot { float** ptr; size_t n; };
    std::vector<Slot> slots;
    layers_.resize(L);
    slots.push_back({&encoded_, N * C});
    for (Layer& l : layers_) {
        slots.insert(slots.end(), {
            {&l.ln1, N * C}, {&l.ln1_mean, N}, {&l.ln1_rstd, N}, {&l.qkv, N * 3 * C},
            {&l.atty, N * C}, {&l.att_saved, att_saved}, {&l.attproj, N * C},
            {&l.residual2, N * C}, {&l.ln2, N * C}, {&l.ln2_mean, N}, {&l.ln2_rstd, N},
            {&l.fch, N * 4 * C}, {&l.fch_gelu, N * 4 * C}, {&l.fcproj, N * C},
            {&l.residual3, N * C}});
    }
    slots.insert(slots.end(), {
        {&lnf_, N * C}, {&lnf_mean_, N}, {&lnf_rstd_, N}, {&logits_, N * Vp}, {&losses_, N},
        {&dresidual_, N * C}, {&dln_, N * C}, {&datty_, N * C}, {&dqkv_, N * 3 * C},
        {&dfch_, N * 4 * C}, {&dfch_gelu_, N * 4 * C}, {&att_scratch_, att_scratch}});
    // Round each view up to 16 floats (64 bytes) so every view stays aligned.
    for (const Slot& s : slots) act_floats_ += (s.n + 15) / 16 * 16;

    params_ = static_cast<float*>(be_.alloc(table_.total() * sizeof(float), "parameters"));
    grads_ = static_cast<float*>(be_.alloc(table_.total() * sizeof(float), "gradients"));
    acts_ = static_cast<float*>(be_.alloc(act_floats_ * sizeof(float), "activations"));
    inputs_ = static_cast<int32_t*>(be_.alloc(N * sizeof(int32_t), "input ids"));
    targets_ = static_cast<int32_t*>(be_.alloc(N * sizeof(int32_t), "target ids"));
    be_.register_params(params_, table_.total());
    float* cursor = acts_;
    for (const Slot& s : slots) {
        *s.ptr = cursor;
        cursor += (s.n + 15) / 16 * 16;
    }
    host_losses_.resize(N);
}

Gpt::~Gpt() {
    be_.free(params_);
    be_.free(grads_);
    be_.free(acts_);
    be_.free(inputs_);
    be_.free(targets_);
}

void Gpt::zero_grads() { be_.zero(grads_, table_.total() * sizeof(float)); }

void Gpt::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
    run_forward(inputs, targets, B, T, 0.0f, false, nullptr);
}

void Gpt::forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T,
                           float dloss_scale, const StepScalars* scalars) {
    run_forward(inputs, targets, B, T, dloss_scale, true, scalars);
    run_backward(inputs, B, T);
}

void Gpt::run_forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                      float dloss_scale, bool write_grad, const StepScalars* scalars) {
    TRT_CHECK(B >= 1 && B <= B_ && T >= 1 && T <= T_, "micro-batch ", B, "x", T,
              " exceeds the allocated ", B_, "x", T_);
    const GptShape& s = table_.shape();
    const int N = B * T, C = s.C, V = s.V, NH = s.NH;

    be_.encoder_forward(encoded_, inputs, p(table_.wte()), p(table_.wpe()), B, T, C);
    // Every residual add is fused with the layernorm that follows it, and the attn/mlp
    // projections feeding the residual leave their bias to that fused op:
    //   residual2 = residual + attproj + b_attproj ; ln2 = LN(residual2)
    //   residual3 = residual2 + fcproj + b_fcproj  ; ln1 of the next block (or ln_f) = LN(residual3)
    if (s.L > 0)
        be_.layernorm_forward(layers_[0].ln1, layers_[0].ln1_mean, layers_[0].ln1_rstd,
                              encoded_, p(table_.block(0, kLn1W)), p(table_.block(0, kLn1B)),
                              N, C);
    else
        be_.layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, encoded_, p(table_.lnf_w()),
                              p(table_.lnf_b()), N, C);
    const float* residual = encoded_;  // [N, C]
    for (int i = 0; i < s.L; ++i) {
        Layer& a = layers_[i];
        auto w = [&](BlockParam bp) { return p(table_.block(i, bp)); };
        // a.ln1 = LN1(block input) was written above (block 0) or by the previous block.
        be_.matmul_forward(a.qkv, a.ln1, w(kQkvW), w(kQkvB), N, C, 3 * C, WeightLayout::InOut);
        be_.attention_forward(a.atty, a.att_saved, a.qkv, B, T, C, NH);
        be_.matmul_forward(a.attproj, a.atty, w(kAttProjW), nullptr, N, C, C,
                           WeightLayout::InOut);
        be_.residual_layernorm_forward(a.residual2, a.ln2, a.ln2_mean, a.ln2_rstd, residual,
                                       a.attproj, w(kAttProjB), w(kLn2W), w(kLn2B), N, C);
        be_.matmul_gelu_forward(a.fch, a.fch_gelu, a.ln2, w(kFcW), w(kFcB), N, C, 4 * C);
        be_.matmul_forward(a.fcproj, a.fch_gelu, w(kFcProjW), nullptr, N, 4 * C, C,
                           WeightLayout::InOut);
        const bool last = i + 1 == s.L;
        Layer* next = last ? nullptr : &layers_[i + 1];
        be_.residual_layernorm_forward(
            a.residual3, last ? lnf_ : next->ln1, last ? lnf_mean_ : next->ln1_mean,
            last ? lnf_rstd_ : next->ln1_rstd, a.residual2, a.fcproj, w(kFcProjB),
            last ? p(table_.lnf_w()) : p(table_.block(i + 1, kLn1W)),
            last ? p(table_.lnf_b()) : p(table_.block(i + 1, kLn1B)), N, C);
        residual = a.residual3;
    }
    // Tied output projection: logits [N, Vp] = lnf · wteᵀ, wte stored [Vp, C] (rows >= V are
    // zero padding); the classifier reads the first V columns and zeroes the others' grads.
    const int Vp = table_.padded_vocab();
    be_.matmul_forward(logits_, lnf_, p(table_.wte()), nullptr, N, C, Vp, WeightLayout::OutIn);
    be_.classifier_forward_backward(logits_, losses_, targets, N, V, Vp, dloss_scale,
                                    write_grad, scalars);
}

// Gradients flow through one residual buffer: layernorm_backward adds its input gradient
// into dresidual_, and every block's two residual branches read the same buffer.
void Gpt::run_backward(const int32_t* inputs, int B, int T) {
    const GptShape& s = table_.shape();
    const int N = B * T, C = s.C, NH = s.NH, L = s.L;
    const size_t NC = static_cast<size_t>(N) * C;

    const float* last_residual = L > 0 ? layers_[L - 1].residual3 : encoded_;
    // logits_ now holds dlogits [N, Vp] (zero in the padding columns).
    be_.matmul_backward(dln_, g(table_.wte()), nullptr, logits_, lnf_, p(table_.wte()), N, C,
                        table_.padded_vocab(), WeightLayout::OutIn);
    be_.zero(dresidual_, NC * sizeof(float));
    be_.layernorm_backward(dresidual_, g(table_.lnf_w()), g(table_.lnf_b()), dln_, last_residual,
                           p(table_.lnf_w()), lnf_mean_, lnf_rstd_, N, C);
    for (int i = L - 1; i >= 0; --i) {
        Layer& a = layers_[i];
        const float* residual = i == 0 ? encoded_ : layers_[i - 1].residual3;
        auto w = [&](BlockParam bp) { return p(table_.block(i, bp)); };
        auto dw = [&](BlockParam bp) { return g(table_.block(i, bp)); };
        // dresidual_ = d residual3 = d residual2 (skip) = d fcproj (branch).
        be_.matmul_backward(dfch_gelu_, dw(kFcProjW), dw(kFcProjB), dresidual_, a.fch_gelu,
                            w(kFcProjW), N, 4 * C, C, WeightLayout::InOut);
        // The fc bias gradient is summed in the GELU backward pass.
        be_.gelu_backward_bias(dfch_, dw(kFcB), a.fch, dfch_gelu_, N, 4 * C);
        be_.matmul_backward(dln_, dw(kFcW), nullptr, dfch_, a.ln2, w(kFcW), N, C, 4 * C,
                            WeightLayout::InOut);
        be_.layernorm_backward(dresidual_, dw(kLn2W), dw(kLn2B), dln_, a.residual2, w(kLn2W),
                               a.ln2_mean, a.ln2_rstd, N, C);
        // dresidual_ = d residual2 = d residual (skip) = d attproj (branch).
        be_.matmul_backward(datty_, dw(kAttProjW), dw(kAttProjB), dresidual_, a.atty,
                            w(kAttProjW), N, C, C, WeightLayout::InOut);
        be_.attention_backward(dqkv_, att_scratch_, datty_, a.qkv, a.att_saved, B, T, C, NH);
        be_.matmul_backward(dln_, dw(kQkvW), dw(kQkvB), dqkv_, a.ln1, w(kQkvW), N, C, 3 * C,
                            WeightLayout::InOut);
        be_.layernorm_backward(dresidual_, dw(kLn1W), dw(kLn1B), dln_, residual, w(kLn1W),
                               a.ln1_mean, a.ln1_rstd, N, C);
    }
    be_.encoder_backward(g(table_.wte()), g(table_.wpe()), dresidual_, inputs, B, T, C);
}

double Gpt::mean_loss(int B, int T) {
    const size_t N = static_cast<size_t>(B) * T;
    be_.copy_to_host(host_losses_.data(), losses_, N * sizeof(float));
    double sum = 0.0;
    for (size_t i = 0; i < N; ++i) sum += host_losses_[i];
    return sum / static_cast<double>(N);
}

}  // namespace trt
