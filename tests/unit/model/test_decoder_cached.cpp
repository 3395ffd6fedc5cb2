// Decoder::forward_cached (generation with a KV cache) against the plain forward: for every
// family (GPT-2 learned positions; Llama rotary with multi-head, grouped- and multi-query
// attention, tied and untied head) in fp32 and bf16, a prefill of a few tokens and then one
// token at a time give, at every position, the logits the whole-prefix forward gives for its
// last row. The cache survives between calls and is rebuilt after release_kv_cache().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <vector>

#include "model/decoder.h"
#include "model/model_weights.h"

using namespace trt;

namespace {

struct Case {
    const char* name;
    ModelSpec spec;
    Precision precision;
};

// Mistral with a sliding window of 5 over 12 positions: the cached rows attend the window's
// keys only, as the whole-prefix forward does.
ModelSpec mistral_window_spec() {
    ModelSpec s = llama_spec(19, 12, 2, 4, 2, 16, 24, false);
    s.arch = ModelArch::Mistral;
    s.sliding_window = 5;
    return s;
}

const Case kCases[] = {
    {"mistral_window_fp32", mistral_window_spec(), Precision::Fp32},
    {"mistral_window_bf16", mistral_window_spec(), Precision::Bf16},
    {"gpt2_fp32", gpt2_spec(19, 12, 2, 2, 16), Precision::Fp32},
    {"gpt2_bf16", gpt2_spec(19, 12, 2, 2, 16), Precision::Bf16},
    {"llama_mha_untied_fp32", llama_spec(19, 12, 2, 2, 2, 16, 24, false), Precision::Fp32},
    {"llama_gqa_fp32", llama_spec(19, 12, 2, 4, 2, 16, 24, false), Precision::Fp32},
    {"llama_mqa_tied_bf16", llama_spec(19, 12, 2, 4, 1, 16, 24, true), Precision::Bf16},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DecoderCached : public ::testing::TestWithParam<Case> {};

// Logits of the last row of inputs[0, t) by the plain forward.
std::vector<float> forward_last(Decoder& m, const std::vector<int32_t>& inputs, int t, int V) {
    std::vector<int32_t> targets(static_cast<size_t>(t), 0);
    m.forward(inputs.data(), targets.data(), 1, t);
    std::vector<float> row(static_cast<size_t>(V));
    m.copy_logits_to_host(row.data(), static_cast<size_t>(t - 1), 1, static_cast<size_t>(V));
    return row;
}

std::vector<float> cached_last(Decoder& m, const std::vector<int32_t>& inputs, int pos0, int n,
                               int V) {
    m.forward_cached(inputs.data() + pos0, pos0, n);
    std::vector<float> row(static_cast<size_t>(V));
    m.copy_logits_to_host(row.data(), static_cast<size_t>(n - 1), 1, static_cast<size_t>(V));
    return row;
}

// max |got - want| / max |want|.
double rel_diff(const std::vector<float>& got, const std::vector<float>& want) {
    double d = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        d = std::max(d, std::fabs(static_cast<double>(got[i]) - want[i]));
        scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
    }
    return d / std::max(scale, 1e-30);
}

TEST_P(DecoderCached, EveryPositionMatchesTheWholePrefixForward) {
    const Case& c = GetParam();
    const ModelSpec& s = c.spec;
    const int T = s.maxT, V = s.V;
    const std::unique_ptr<Backend> be = make_cpu_backend(1, c.precision);
    Decoder m(*be, s, 1, T);
    std::vector<float> p(m.table().total());
    init_random(m.table(), 5, p.data());
    std::mt19937 rng(9);
    std::normal_distribution<float> noise(0.0f, 0.1f);
    for (const ParamTensor& t : m.table().tensors())  // non-trivial norms and biases
        if (t.shape.size() == 1)
            for (size_t i = 0; i < t.numel; ++i) p[t.offset + i] += noise(rng);
    for (float& x : p) x *= 4.0f;  // peaked softmaxes: positions matter
    m.table().clear_padding(p.data());
    be->copy_to_device(m.params(), p.data(), p.size() * sizeof(float));  // + working copy
    std::uniform_int_distribution<int> tok(0, V - 1);
    std::vector<int32_t> inputs(static_cast<size_t>(T));
    for (int32_t& x : inputs) x = tok(rng);

    std::vector<std::vector<float>> want;
    for (int t = 1; t <= T; ++t) want.push_back(forward_last(m, inputs, t, V));
    const double tol = c.precision == Precision::Fp32 ? 2e-5 : 3e-2;
    for (int prefill : {1, 3, T}) {
        SCOPED_TRACE(testing::Message() << "prefill " << prefill);
        m.release_kv_cache();
        EXPECT_LE(rel_diff(cached_last(m, inputs, 0, prefill, V), want[prefill - 1]), tol);
        for (int pos = prefill; pos < T; ++pos)
            EXPECT_LE(rel_diff(cached_last(m, inputs, pos, 1, V), want[pos]), tol)
                << "position " << pos;
    }
    // A second token run over a kept cache: positions 4.. again (rows before stay valid).
    EXPECT_LE(rel_diff(cached_last(m, inputs, 4, T - 4, V), want[T - 1]), tol);
    m.release_kv_cache();
    EXPECT_THROW(m.forward_cached(inputs.data(), T - 1, 2), Error);  // past max_seq()
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderCached, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
