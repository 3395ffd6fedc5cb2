// QuantisedBase (model/quantised_base.h): the tensors a QLoRA table keeps apart, grouped as
// the decoder multiplies them, and the same bytes whatever pieces and order the loader hands
// them in; the estimate of its bytes is what it takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "model/lora.h"
#include "model/model_weights.h"
#include "model/quantised_base.h"

using namespace trt;

namespace {

// Llama with every linear adapted and its base in `dtype`: d_ff 96, so down_proj's NF4 blocks
// cross its rows.
ModelSpec qlora_llama(BaseDType dtype, bool tied) {
    ModelSpec s = llama_spec(61, 16, 2, 4, 2, 64, 96, tied);
    LoraConfig l;
    l.rank = 4;
    l.target_modules = {"all-linear"};
    l.base_dtype = dtype;
    s.lora = lora_spec(l, s);
    return s;
}

std::vector<float> values_of(const ParamTensor& t, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 0.02f);
    std::vector<float> v(t.numel);
    for (float& x : v) x = d(rng);
    return v;
}

// Every matrix of a base dequantised on the host (the CPU backend's memory is the host's).
std::vector<float> dequantised(const QuantisedBase& q, Slot slot, int layer) {
    const QuantWeight* w = q.weight(slot, layer);
    EXPECT_NE(w, nullptr);
    if (!w) return {};
    std::vector<float> out(static_cast<size_t>(w->rows) * w->cols);
    dequantise_tile(*w, 0, w->rows, 0, w->cols, out.data(), static_cast<size_t>(w->cols));
    return out;
}

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

TEST(QuantisedBase, TheTableKeepsTheLinearsAndVocabularyApart) {
    const ParamTable table(qlora_llama(BaseDType::Nf4, false));
    const ParamTable fp32(unquantised_spec(table.spec()));
    // 7 linears a block, the embedding and the head.
    EXPECT_EQ(table.quantised_tensors().size(), 2u * 7u + 2u);
    EXPECT_EQ(table.num_params(), fp32.num_params());
    EXPECT_EQ(table.get(Slot::Q, 0), nullptr);
    ASSERT_NE(table.quantised(Slot::Q, 0), nullptr);
    EXPECT_EQ(table.quantised(Slot::Q, 0)->name, "model.layers.0.self_attn.q_proj.weight");
    EXPECT_NE(table.get(Slot::AttnNorm, 0), nullptr);  // norms stay in the flat buffer
    EXPECT_NE(table.lora_a(Slot::Q, 0), nullptr);
    for (const ParamTensor& t : table.tensors()) EXPECT_FALSE(quantised_role(t.role)) << t.name;
    // What leaves the flat buffer is exactly the quantised tensors (and the vocabulary padding).
    size_t apart = 0;
    for (const ParamTensor& t : table.quantised_tensors())
        apart += t.numel + fp32.find(t.name)->padding;
    EXPECT_EQ(fp32.total() - table.total(), apart);
}

TEST(QuantisedBase, PiecesAndOrderDoNotChangeABit) {
    for (BaseDType dtype : {BaseDType::Nf4, BaseDType::Int8, BaseDType::Bf16}) {
        const ParamTable table(qlora_llama(dtype, true));
        const auto be = make_cpu_backend(1);
        QuantisedBase whole(*be, table), pieces(*be, table);
        std::vector<const ParamTensor*> order;
        for (const ParamTensor& t : table.quantised_tensors()) order.push_back(&t);
        uint32_t seed = 1;
        for (const ParamTensor* t : order) whole.set(*t, values_of(*t, seed++).data(), "test");
        // The same values, each tensor in pieces of 2 rows (whole NF4 blocks for widths 64
        // and 96), the tensors of every fused matrix in reverse.
        std::reverse(order.begin(), order.end());
        for (const ParamTensor* t : order) {
            const std::vector<float> v =
                values_of(*t, 1 + static_cast<uint32_t>(t - table.quantised_tensors().data()));
            const size_t cols = static_cast<size_t>(t->shape[1]);
            for (int64_t r = 0; r < t->shape[0]; r += 2) {
                const int64_t n = std::min<int64_t>(2, t->shape[0] - r);
                pieces.set_rows(*t, v.data() + static_cast<size_t>(r) * cols, r, n, "test");
            }
        }
        whole.upload();
        pieces.upload();
        EXPECT_EQ(whole.bytes(), QuantisedBase::planned_bytes(table));
        EXPECT_EQ(pieces.bytes(), whole.bytes());
        for (int layer = 0; layer < 2; ++layer)
            for (Slot slot : {Slot::Q, Slot::AttnOut, Slot::Gate, Slot::Down})
                EXPECT_TRUE(
                    bits_equal(dequantised(whole, slot, layer), dequantised(pieces, slot, layer)))
                    << to_string(dtype) << " slot " << static_cast<int>(slot) << " layer " << layer;
        EXPECT_TRUE(bits_equal(dequantised(whole, Slot::TokenEmbedding, -1),
                               dequantised(pieces, Slot::TokenEmbedding, -1)));
        // The fused [q; k; v]: q's rows first, each tensor its own blocks (3 NF4 parts).
        const QuantWeight* qkv = whole.weight(Slot::Q, 0);
        EXPECT_EQ(qkv->rows, table.spec().qkv_width());
        if (dtype == BaseDType::Nf4) EXPECT_EQ(qkv->parts, 3);
        // The vocabulary matrix: bf16, padded with zero rows to Vp.
        const QuantWeight* wte = whole.weight(Slot::TokenEmbedding);
        EXPECT_EQ(wte->type, BaseDType::Bf16);
        EXPECT_EQ(wte->rows, table.padded_vocab());
        const std::vector<float> emb = dequantised(whole, Slot::TokenEmbedding, -1);
        for (size_t i = static_cast<size_t>(61) * 64; i < emb.size(); ++i)
            ASSERT_EQ(emb[i], 0.0f) << "padding element " << i;
    }
}

TEST(QuantisedBase, AMissingTensorOrRowIsAnInternalError) {
    const ParamTable table(qlora_llama(BaseDType::Nf4, true));
    const auto be = make_cpu_backend(1);
    QuantisedBase q(*be, table);
    const ParamTensor& first = table.quantised_tensors().front();
    const std::vector<float> v = values_of(first, 1);
    q.set_rows(first, v.data(), 0, 2, "test");
    EXPECT_THROW(q.set_rows(first, v.data(), 4, 2, "test"), Error);  // rows skipped
    EXPECT_THROW(q.upload(), Error);
}

// quant_element (core/base_quant.h: the CUDA kernels' element-by-element dequantisation) is
// dequantise_tile's arithmetic: every element of every matrix, every format, NF4 with and
// without double quantisation, the fused matrices' parts and down_proj's blocks across rows.
TEST(QuantisedBase, OneElementAtATimeIsTheTilesValue) {
    struct Format {
        BaseDType dtype;
        bool double_quant;
    };
    for (const Format f : {Format{BaseDType::Nf4, true}, Format{BaseDType::Nf4, false},
                           Format{BaseDType::Int8, false}, Format{BaseDType::Bf16, false}}) {
        ModelSpec spec = qlora_llama(f.dtype, false);
        spec.lora.double_quant = f.double_quant;
        const ParamTable table(spec);
        const auto be = make_cpu_backend(1);
        QuantisedBase q(*be, table);
        uint32_t seed = 7;
        for (const ParamTensor& t : table.quantised_tensors())
            q.set(t, values_of(t, seed++).data(), "test");
        q.upload();
        for (int layer = 0; layer < 2; ++layer)
            for (Slot slot : {Slot::Q, Slot::AttnOut, Slot::Gate, Slot::Down, Slot::TokenEmbedding,
                              Slot::Head}) {
                const bool vocab = slot == Slot::TokenEmbedding || slot == Slot::Head;
                const QuantWeight* w = q.weight(slot, vocab ? -1 : layer);
                ASSERT_NE(w, nullptr) << static_cast<int>(slot);
                if (!vocab)
                    EXPECT_EQ(w->double_quant(), f.dtype == BaseDType::Nf4 && f.double_quant);
                const std::vector<float> tile = dequantised(q, slot, vocab ? -1 : layer);
                for (int r = 0; r < w->rows; ++r)
                    for (int c = 0; c < w->cols; ++c) {
                        const float e = quant_element(*w, r, c, kNf4CodeBook, kDynamicMap);
                        const float t = tile[static_cast<size_t>(r) * w->cols + c];
                        ASSERT_EQ(std::memcmp(&e, &t, 4), 0)
                            << to_string(f.dtype) << (f.double_quant ? " dq" : "") << " slot "
                            << static_cast<int>(slot) << " [" << r << ", " << c << "]: " << e
                            << " vs " << t;
                    }
            }
    }
}
