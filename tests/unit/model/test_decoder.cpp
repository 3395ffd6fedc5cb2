// The decoder orchestration, for every family (GPT-2; Llama with multi-head and grouped-query
// attention, tied and untied head): backward agrees with finite differences of forward
// (through every op and the residual stream), and gradients accumulate across micro-batches.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/decoder.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "runtime/optimizer.h"

using namespace trt;

namespace {

struct Case {
    const char* name;
    ModelSpec spec;
};

ModelSpec qwen2_spec(int V, int maxT, int L, int NH, int NKV, int C, int F, bool tied) {
    ModelSpec s = llama_spec(V, maxT, L, NH, NKV, C, F, tied);
    s.arch = ModelArch::Qwen2;
    return s;
}

// Llama 3.1's RoPE scaling with a band narrow enough that hs 8's four pairs fall in all
// three regions (kept, blended, divided).
ModelSpec llama3_rope_spec() {
    ModelSpec s = llama_spec(9, 6, 2, 1, 1, 8, 12, false);
    s.rope_scaling = {RopeScaling::Llama3, 8.0f, 1.0f, 4.0f, 64};
    return s;
}

// An explicit head_dim (Qwen3's): 4 heads of 6 over d_model 8, so the attention is 24 wide.
ModelSpec head_dim_spec() {
    ModelSpec s = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
    s.head_dim = 6;
    return s;
}

// Qwen3: per-head q/k RMSNorm before RoPE, with its head_dim.
ModelSpec qwen3_spec() {
    ModelSpec s = head_dim_spec();
    s.arch = ModelArch::Qwen3;
    return s;
}

// Mistral with a sliding window of 3 over T 5: each query sees its last 3 keys.
ModelSpec mistral_window_spec() {
    ModelSpec s = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
    s.arch = ModelArch::Mistral;
    s.sliding_window = 3;
    return s;
}

const Case kCases[] = {
    {"gpt2", gpt2_spec(9, 6, 2, 2, 8)},
    {"mistral_window", mistral_window_spec()},
    {"qwen3_head_dim", qwen3_spec()},
    {"llama_head_dim", head_dim_spec()},
    {"qwen2_gqa_tied", qwen2_spec(9, 6, 2, 4, 2, 8, 12, true)},
    {"llama3_rope_scaling", llama3_rope_spec()},
    {"llama_mha_untied", llama_spec(9, 6, 2, 2, 2, 8, 12, false)},
    {"llama_gqa_untied", llama_spec(9, 6, 2, 4, 2, 8, 12, false)},
    {"llama_mqa_tied", llama_spec(9, 6, 2, 4, 1, 8, 12, true)},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct Fixture {
    ModelSpec shape;
    int B = 2, T = 5;
    std::unique_ptr<Backend> be = make_cpu_backend(1);
    Decoder model;
    std::vector<int32_t> inputs, targets;

    explicit Fixture(const ModelSpec& spec, std::vector<std::string> trainable = {},
                     int head_chunk_rows = 0)
        : shape(spec), model(*be, spec, B, T, options(std::move(trainable), head_chunk_rows)) {
        std::mt19937 rng(3);
        std::vector<float> p(model.table().total());
        init_random(model.table(), 11, p.data());
        // Non-trivial norm params and biases so every gradient path is exercised.
        std::normal_distribution<float> n(0.0f, 0.1f);
        for (const ParamTensor& t : model.table().tensors())
            if (t.shape.size() == 1)
                for (size_t i = 0; i < t.numel; ++i) p[t.offset + i] += n(rng);
        for (float& x : p) x *= 5.0f;  // larger weights: less softmax saturation noise
        std::copy(p.begin(), p.end(), model.params());
        std::uniform_int_distribution<int> tok(0, shape.V - 1);
        for (int i = 0; i < B * T; ++i) {
            inputs.push_back(tok(rng));
            targets.push_back(tok(rng));
        }
    }
    double loss() {
        model.forward(inputs.data(), targets.data(), B, T);
        return model.mean_loss(B, T);
    }
    static DecoderOptions options(std::vector<std::string> trainable, int head_chunk_rows) {
        DecoderOptions o(std::move(trainable));
        o.head_chunk_rows = head_chunk_rows;
        return o;
    }
};

class DecoderModel : public ::testing::TestWithParam<Case> {};

// The analytic gradient `grad` (of the whole flat parameter buffer) against central
// differences of `loss` along 4 random unit directions; the parameters are restored after.
void expect_directional_derivatives(Fixture& f, const std::vector<float>& grad,
                                    const std::function<double()>& loss) {
    const size_t n = f.model.table().total();
    const std::vector<float> base(f.model.params(), f.model.params() + n);
    std::mt19937 rng(5);
    std::normal_distribution<double> dist(0.0, 1.0);
    for (int trial = 0; trial < 4; ++trial) {
        std::vector<double> d(n);
        double dn = 0;
        for (double& x : d) { x = dist(rng); dn += x * x; }
        dn = std::sqrt(dn);
        double analytic = 0;
        for (size_t i = 0; i < n; ++i) { d[i] /= dn; analytic += d[i] * grad[i]; }
        // Small enough that curvature (the weights are scaled up) does not dominate, large
        // enough that fp32 rounding of the loss (~3e-7 / 2h) stays far below the tolerance.
        const double h = 2e-3;
        auto at = [&](double s) {
            for (size_t i = 0; i < n; ++i) f.model.params()[i] = float(base[i] + s * d[i]);
            return loss();
        };
        const double numeric = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(analytic, numeric, 2e-3 * std::fabs(numeric) + 2e-4)
            << "trial " << trial << ": analytic " << analytic << " numeric " << numeric;
    }
    std::copy(base.begin(), base.end(), f.model.params());
}

}  // namespace

// The chunked head (Decoder::head_loss): 10 rows in chunks of 3, 3, 3 and 1 give the losses,
// logits and gradients of the whole batch at once (up to the order of the head's sums), with
// a logits buffer of 3 rows; and its gradient matches finite differences.
TEST_P(DecoderModel, ChunkedHeadEqualsTheWholeBatch) {
    Fixture whole(GetParam().spec), chunked(GetParam().spec, {}, 3);
    const int N = whole.B * whole.T;
    const size_t Vp = static_cast<size_t>(whole.model.table().padded_vocab());
    EXPECT_EQ(whole.model.activation_bytes() - chunked.model.activation_bytes(),
              (static_cast<size_t>(N) - 3) * Vp * sizeof(float));
    const size_t n = whole.model.table().total();
    std::vector<std::vector<float>> grads, logits;
    std::vector<double> losses;
    for (Fixture* f : {&whole, &chunked}) {
        f->model.zero_grads();
        f->model.forward_backward(f->inputs.data(), f->targets.data(), f->B, f->T, 1.0f / N);
        losses.push_back(f->model.mean_loss(f->B, f->T));
        grads.emplace_back(f->model.grads(), f->model.grads() + n);
        f->model.forward(f->inputs.data(), f->targets.data(), f->B, f->T);
        logits.emplace_back(static_cast<size_t>(N) * f->shape.V);
        f->model.copy_logits_to_host(logits.back().data(), 0, N, f->shape.V);
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-6 * std::fabs(losses[0]));
    for (size_t i = 0; i < logits[0].size(); ++i)
        ASSERT_NEAR(logits[0][i], logits[1][i], 1e-5 * (1 + std::fabs(logits[0][i]))) << i;
    for (size_t i = 0; i < n; ++i)
        ASSERT_NEAR(grads[0][i], grads[1][i], 1e-5 * (1 + std::fabs(grads[0][i]))) << i;
    // Rows from the middle of a chunk, across a chunk boundary.
    std::vector<float> rows(4 * static_cast<size_t>(chunked.shape.V));
    chunked.model.copy_logits_to_host(rows.data(), 2, 4, chunked.shape.V);
    for (size_t i = 0; i < rows.size(); ++i)
        ASSERT_NEAR(rows[i], logits[1][2 * static_cast<size_t>(chunked.shape.V) + i],
                    1e-5 * (1 + std::fabs(rows[i]))) << i;
    expect_directional_derivatives(chunked, grads[1], [&] { return chunked.loss(); });
}

// An evaluation pass leaves its last chunk's logits in the buffer and copy_logits_to_host reads
// them there; rows it does not hold are recomputed; a training pass leaves dlogits there, so
// the copy after it recomputes (the same values: the weights did not change).
TEST_P(DecoderModel, LogitsLeftByTheForwardAreTheRecomputedOnes) {
    Fixture whole(GetParam().spec), chunked(GetParam().spec, {}, 3);
    for (Fixture* f : {&whole, &chunked}) {
        const int N = f->B * f->T;
        const size_t V = static_cast<size_t>(f->shape.V);
        auto close = [&](const std::vector<float>& a, const std::vector<float>& b,
                         const char* what) {
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i)
                ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(a[i]))) << what << " " << i;
        };
        f->model.forward(f->inputs.data(), f->targets.data(), f->B, f->T);
        std::vector<float> all(static_cast<size_t>(N) * V), again(all.size());
        f->model.copy_logits_to_host(all.data(), 0, N, f->shape.V);
        // Row by row from the last: the held rows first, then recomputed ones.
        for (int r = N - 1; r >= 0; --r)
            f->model.copy_logits_to_host(again.data() + static_cast<size_t>(r) * V, r, 1,
                                         f->shape.V);
        close(all, again, "row by row");
        f->model.zero_grads();
        f->model.forward_backward(f->inputs.data(), f->targets.data(), f->B, f->T, 1.0f / N);
        f->model.copy_logits_to_host(again.data(), 0, N, f->shape.V);
        close(all, again, "after a training pass");
    }
}

TEST_P(DecoderModel, BackwardMatchesDirectionalFiniteDifferences) {
    Fixture f(GetParam().spec);
    const size_t n = f.model.table().total();
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                             1.0f / static_cast<float>(f.B * f.T));
    const std::vector<float> grad(f.model.grads(), f.model.grads() + n);
    expect_directional_derivatives(f, grad, [&] { return f.loss(); });
}

// Documents (packed examples, backend.h): rows of two examples each, positions restarting at
// 0 ([0 1 | 0 1 2] and [0 | 0 1 2 3]: an example of one token). The loss is still a function
// of the parameters whose gradient the backward computes, through the per-example attention,
// RoPE angles and wpe rows.
TEST_P(DecoderModel, BackwardWithDocumentsMatchesDirectionalFiniteDifferences) {
    Fixture f(GetParam().spec);
    const std::vector<int32_t> pos = {0, 1, 0, 1, 2, 0, 0, 1, 2, 3};
    ASSERT_EQ(pos.size(), static_cast<size_t>(f.B * f.T));
    int32_t* dpos = f.model.positions_buffer();
    f.be->copy_to_device(dpos, pos.data(), pos.size() * sizeof(int32_t));
    const size_t n = f.model.table().total();
    // The documents change the loss (else this would only repeat the test without them).
    const double whole_rows = f.loss();
    f.model.forward(f.inputs.data(), f.targets.data(), f.B, f.T, dpos);
    EXPECT_NE(f.model.mean_loss(f.B, f.T), whole_rows);
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                             1.0f / static_cast<float>(f.B * f.T), nullptr, 0, dpos);
    const std::vector<float> grad(f.model.grads(), f.model.grads() + n);
    expect_directional_derivatives(f, grad, [&] {
        f.model.forward(f.inputs.data(), f.targets.data(), f.B, f.T, dpos);
        return f.model.mean_loss(f.B, f.T);
    });
}

TEST_P(DecoderModel, GradientsAccumulateOverMicroBatches) {
    Fixture f(GetParam().spec);
    const size_t n = f.model.table().total();
    const float scale = 0.5f / static_cast<float>(f.B * f.T);
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T, scale);
    const std::vector<float> once(f.model.grads(), f.model.grads() + n);
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T, scale);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(f.model.grads()[i], 2 * once[i], 1e-6f + 1e-5f * std::fabs(once[i]));
    f.model.zero_grads();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(f.model.grads()[i], 0.0f);
}

TEST_P(DecoderModel, SmallerMicroBatchThanAllocatedIsConsistent) {
    Fixture f(GetParam().spec);
    // Row 0 alone must give the same per-row loss as row 0 inside the full batch.
    f.model.forward(f.inputs.data(), f.targets.data(), 1, f.T);
    const double one = f.model.mean_loss(1, f.T);
    std::vector<int32_t> in2(f.inputs), tg2(f.targets);
    f.model.forward(in2.data(), tg2.data(), f.B, f.T);
    const int Vp = f.model.table().padded_vocab();  // logits rows are Vp wide
    std::vector<float> logits(static_cast<size_t>(f.B * f.T * Vp));
    f.model.copy_logits_to_host(logits.data(), 0, static_cast<size_t>(f.B * f.T), Vp);
    double row0 = 0;
    for (int t = 0; t < f.T; ++t) {
        const float* l = logits.data() + t * Vp;
        double mx = l[0];
        for (int v = 1; v < f.shape.V; ++v) mx = std::max(mx, double(l[v]));
        double z = 0;
        for (int v = 0; v < f.shape.V; ++v) z += std::exp(l[v] - mx);
        row0 += std::log(z) + mx - l[f.targets[t]];
    }
    EXPECT_NEAR(one, row0 / f.T, 1e-5);
}

// The vocabulary is padded (9 -> 128 here, 50257 -> 50304 for GPT-2) for aligned classifier
// matmuls: the padding rows of the embedding and an untied head get no gradient, so AdamW
// leaves them at exactly 0, and the padding logits carry no gradient.
TEST_P(DecoderModel, VocabPaddingRowsStayZero) {
    Fixture f(GetParam().spec);
    const ParamTable& t = f.model.table();
    ASSERT_EQ(t.padded_vocab(), 128);
    std::vector<size_t> padding;  // every padding float of the flat buffer
    for (const ParamTensor& pt : t.tensors())
        for (size_t i = 0; i < pt.padding; ++i) padding.push_back(pt.offset + pt.numel + i);
    ASSERT_EQ(padding.size(), (f.shape.tied ? 1u : 2u) * (128 - 9) * 8);
    for (size_t i : padding) ASSERT_EQ(f.model.params()[i], 0.0f) << i;
    OptimConfig o;
    o.lr = 0.1;
    o.weight_decay = 0.5;
    AdamW adam(*f.be, t, o, false);
    StepScalars sc;
    for (int64_t step = 1; step <= 3; ++step) {
        f.model.zero_grads();
        f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                                 1.0f / static_cast<float>(f.B * f.T));
        for (size_t i : padding) ASSERT_EQ(f.model.grads()[i], 0.0f) << i;
        // The padding columns of every row's logits are 0 (the head's padding rows are).
        const int V = f.shape.V, Vp = t.padded_vocab();
        std::vector<float> logits(static_cast<size_t>(f.B * f.T * Vp));
        f.model.copy_logits_to_host(logits.data(), 0, static_cast<size_t>(f.B * f.T), Vp);
        for (int n = 0; n < f.B * f.T; ++n)
            for (int v = V; v < Vp; ++v) ASSERT_EQ(logits[n * Vp + v], 0.0f);
        trt::optimizer_step_of(*f.be).begin_step(&sc, 0.1f, step);
        adam.update(f.model.params(), f.model.grads(), &sc);
        ASSERT_EQ(sc.nonfinite, 0);
    }
    for (size_t i : padding) ASSERT_EQ(f.model.params()[i], 0.0f) << i;
    // The real parameters did move.
    EXPECT_NE(f.model.params()[0], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderModel, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// model.dropout and lora.dropout: a training pass drops with masks fixed by (step, micro-step),
// so the loss it differentiates is a deterministic function of the parameters: the backward
// must match its finite differences through every dropout site (embeddings, attention
// probabilities, both residual branches, the adapters' inputs).
class DecoderDropout : public ::testing::TestWithParam<Case> {};

TEST_P(DecoderDropout, BackwardMatchesFiniteDifferencesThroughTheMasks) {
    ModelSpec spec = GetParam().spec;
    spec.dropout = 0.25f;
    LoraConfig lc;
    lc.rank = 2;
    lc.alpha = 4.0;
    lc.dropout = 0.3;
    lc.target_modules = {"all-linear"};
    spec.lora = lora_spec(lc, spec);
    // Everything trains (the base too), so every gradient path is checked.
    Fixture f(spec, {"*"});
    std::mt19937 rng(9);
    std::normal_distribution<float> n(0.0f, 0.05f);  // small: the update stays a perturbation
    for (const ParamTensor& t : f.model.table().tensors())
        if (t.role == ParamRole::LoraA || t.role == ParamRole::LoraB)
            for (size_t i = 0; i < t.numel; ++i) f.model.params()[t.offset + i] = n(rng);
    StepScalars sc;
    sc.step = 3;
    const uint32_t micro = 1;
    const size_t np = f.model.table().total(), ng = f.model.table().grad_total();
    ASSERT_EQ(np, ng);
    // The masks matter: the training loss differs from the evaluation loss, and from the
    // next micro-step's.
    f.model.forward_training(f.inputs.data(), f.targets.data(), f.B, f.T, &sc, micro);
    const double train_loss = f.model.mean_loss(f.B, f.T);
    const double eval_loss = f.loss();
    f.model.forward_training(f.inputs.data(), f.targets.data(), f.B, f.T, &sc, micro + 1);
    EXPECT_NE(train_loss, eval_loss);
    EXPECT_NE(train_loss, f.model.mean_loss(f.B, f.T));
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                             1.0f / static_cast<float>(f.B * f.T), &sc, micro);
    EXPECT_DOUBLE_EQ(f.model.mean_loss(f.B, f.T), train_loss);
    const std::vector<float> grad(f.model.grads(), f.model.grads() + ng);
    expect_directional_derivatives(f, grad, [&] {
        f.model.forward_training(f.inputs.data(), f.targets.data(), f.B, f.T, &sc, micro);
        return f.model.mean_loss(f.B, f.T);
    });
}

TEST_P(DecoderDropout, ATrainingPassThatDropsNeedsTheStepScalars) {
    ModelSpec spec = GetParam().spec;
    spec.dropout = 0.1f;
    Fixture f(spec);
    EXPECT_THROW(f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T, 1.0f),
                 Error);
    f.model.forward(f.inputs.data(), f.targets.data(), f.B, f.T);  // evaluation never drops
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderDropout, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Documents: a row packing example A (5 tokens) and example B (9 tokens), positions
// [0..4, 0..8], gives each of their positions the loss it has alone at the start of its own
// row (A in row 0, B in row 1, each padded at the end), for GPT-2 (wpe rows), Llama with
// grouped-query attention (RoPE angles) and Mistral's sliding window (inside an example).
struct PackCase {
    const char* name;
    ModelSpec spec;
    Recompute recompute;
};
void PrintTo(const PackCase& c, std::ostream* os) { *os << c.name; }

ModelSpec mistral_window16_spec() {
    ModelSpec s = llama_spec(9, 16, 2, 4, 2, 8, 12, false);
    s.arch = ModelArch::Mistral;
    s.sliding_window = 3;
    return s;
}

class DecoderDocuments : public ::testing::TestWithParam<PackCase> {};

TEST_P(DecoderDocuments, PackedExamplesLoseAsTheyDoAlone) {
    const ModelSpec spec = GetParam().spec;
    const int B = 2, T = 14, LA = 5, LB = 9;
    std::unique_ptr<Backend> be = make_cpu_backend(2);
    Decoder model(*be, spec, B, T, DecoderOptions({}, GetParam().recompute));
    std::vector<float> p(model.table().total());
    init_random(model.table(), 11, p.data());
    for (float& x : p) x *= 5.0f;
    std::copy(p.begin(), p.end(), model.params());
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> tok(0, spec.V - 1);
    std::vector<int32_t> a_in(LA), a_tg(LA), b_in(LB), b_tg(LB);
    for (int i = 0; i < LA; ++i) a_in[i] = tok(rng), a_tg[i] = tok(rng);
    for (int i = 0; i < LB; ++i) b_in[i] = tok(rng), b_tg[i] = tok(rng);
    // Alone: A in row 0, B in row 1, each padded at the end with token 1 (never compared).
    std::vector<int32_t> alone_in(B * T, 1), alone_tg(B * T, 1);
    std::copy(a_in.begin(), a_in.end(), alone_in.begin());
    std::copy(a_tg.begin(), a_tg.end(), alone_tg.begin());
    std::copy(b_in.begin(), b_in.end(), alone_in.begin() + T);
    std::copy(b_tg.begin(), b_tg.end(), alone_tg.begin() + T);
    // Packed: row 0 = A then B; row 1 = B then A (the other order, so both rows are checked).
    std::vector<int32_t> packed_in, packed_tg, pos;
    auto append = [&](const std::vector<int32_t>& in, const std::vector<int32_t>& tg) {
        packed_in.insert(packed_in.end(), in.begin(), in.end());
        packed_tg.insert(packed_tg.end(), tg.begin(), tg.end());
        for (size_t i = 0; i < in.size(); ++i) pos.push_back(static_cast<int32_t>(i));
    };
    append(a_in, a_tg);
    append(b_in, b_tg);
    append(b_in, b_tg);
    append(a_in, a_tg);
    ASSERT_EQ(pos.size(), static_cast<size_t>(B * T));

    model.forward(alone_in.data(), alone_tg.data(), B, T);
    const std::vector<float> alone(model.losses(), model.losses() + B * T);
    be->load_batch(model.inputs_buffer(), model.targets_buffer(), model.positions_buffer(),
                   packed_in.data(), packed_tg.data(), pos.data(), B, T);
    // An evaluation pass, and a training pass (whose backward must take them too).
    for (bool train : {false, true}) {
        if (train) {
            model.zero_grads();
            model.forward_backward(model.inputs_buffer(), model.targets_buffer(), B, T,
                                   1.0f / (B * T), nullptr, 0, model.positions_buffer());
        } else {
            model.forward(model.inputs_buffer(), model.targets_buffer(), B, T,
                          model.positions_buffer());
        }
        const float* packed = model.losses();
        auto expect_same = [&](int packed_at, int alone_at, int n) {
            for (int i = 0; i < n; ++i) {
                const double want = alone[alone_at + i], got = packed[packed_at + i];
                EXPECT_LE(std::fabs(got - want), 1e-6 * std::fabs(want))
                    << (train ? "training" : "evaluation") << " pass, packed position "
                    << packed_at + i << ": " << got << " alone " << want;
            }
        };
        expect_same(0, 0, LA);          // row 0: A
        expect_same(LA, T, LB);         // row 0: B
        expect_same(T, T, LB);          // row 1: B
        expect_same(T + LB, 0, LA);     // row 1: A
    }
}

INSTANTIATE_TEST_SUITE_P(
    Families, DecoderDocuments,
    ::testing::Values(PackCase{"gpt2", gpt2_spec(9, 16, 2, 2, 8), Recompute::None},
                      PackCase{"llama_gqa", llama_spec(9, 16, 2, 4, 2, 8, 12, false),
                               Recompute::None},
                      PackCase{"llama_gqa_recompute", llama_spec(9, 16, 2, 4, 2, 8, 12, false),
                               Recompute::Block},
                      PackCase{"mistral_window", mistral_window16_spec(), Recompute::None}),
    [](const ::testing::TestParamInfo<PackCase>& i) { return i.param.name; });
