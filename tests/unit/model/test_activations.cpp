// The activation plan's layout (model/activations.h), pinned: where every buffer lands and the
// bytes the plan spans, for each recompute mode, with Qwen3's q/k norms, dropout and LoRA.
// The numbers are what the plan gave before issue 41 cut lay_out_activations into steps; a
// change to them moves every buffer of a running model, so it must be deliberate.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/activations.h"
#include "model/param_table.h"

namespace trt {
namespace {

// Every buffer's offset from base, in the plan's struct order, then the bytes it spans.
std::vector<uint64_t> layout(const ModelSpec& s, Recompute recompute, DType act) {
    char* const base = reinterpret_cast<char*>(uintptr_t{1} << 40);
    Activations a;
    const size_t used = lay_out_activations(s, 2, 5, 96, 40, act, recompute, base, &a, 3);
    std::vector<uint64_t> out;
    const auto at = [&](const void* p) { out.push_back(static_cast<uint64_t>(static_cast<const char*>(p) - base)); };
    const auto act_at = [&](const Act& v) { at(v.data); };
    act_at(a.encoded);
    for (const LayerActivations& l : a.layers) {
        act_at(l.ln1), at(l.ln1_mean), at(l.ln1_rstd), act_at(l.qkv), act_at(l.qk_pre);
        at(l.qk_rstd), act_at(l.atty), at(l.att_saved), act_at(l.attproj), act_at(l.residual2);
        act_at(l.ln2), at(l.ln2_mean), at(l.ln2_rstd), act_at(l.mlp_pre), act_at(l.mlp_act);
        act_at(l.fcproj), act_at(l.residual3);
    }
    act_at(a.lnf), at(a.lnf_mean), at(a.lnf_rstd), act_at(a.logits), at(a.losses);
    act_at(a.dresidual), act_at(a.dln), act_at(a.datty), act_at(a.dqkv), act_at(a.dmlp_pre);
    act_at(a.dmlp_act), at(a.att_scratch), act_at(a.qk_tmp), act_at(a.dqk_pre);
    act_at(a.lora_mid), act_at(a.lora_dmid), act_at(a.lora_wide), act_at(a.lora_x);
    out.push_back(used);
    return out;
}

// FNV-1a over the offsets: one number per case to pin.
uint64_t digest(const std::vector<uint64_t>& v) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t x : v) {
        h ^= x;
        h *= 1099511628211ull;
    }
    return h;
}

ModelSpec qwen3_lora_spec() {
    ModelSpec s = llama_spec(11, 8, 2, 4, 2, 8, 12, false);
    s.arch = ModelArch::Qwen3;
    s.head_dim = 6;
    s.dropout = 0.1f;
    s.lora.rank = 2;
    s.lora.alpha = 4.0f;
    s.lora.dropout = 0.05f;
    s.lora.targets.assign(static_cast<size_t>(s.L) * static_cast<size_t>(Slot::kLayerSlots), 0);
    s.lora.targets[static_cast<size_t>(Slot::Qkv)] = 1;
    s.lora.targets[static_cast<size_t>(Slot::kLayerSlots) + static_cast<size_t>(Slot::Down)] = 1;
    return s;
}

TEST(ActivationPlan, LayoutIsPinnedForEveryRecomputeMode) {
    const ModelSpec gpt2 = gpt2_spec(13, 8, 3, 2, 8);
    const ModelSpec qwen3 = qwen3_lora_spec();
    const uint64_t got[] = {
        digest(layout(gpt2, Recompute::None, DType::F32)),
        digest(layout(gpt2, Recompute::Mlp, DType::F32)),
        digest(layout(gpt2, Recompute::Block, DType::BF16)),
        digest(layout(qwen3, Recompute::None, DType::BF16)),
        digest(layout(qwen3, Recompute::Mlp, DType::F32)),
        digest(layout(qwen3, Recompute::Block, DType::F32)),
    };
    const uint64_t want[] = {5131634092936404433ull, 2893887438709483473ull,
                             8335817704414438225ull, 3198240606229074091ull,
                             6452051191448988075ull, 5164950376776096107ull};
    for (size_t k = 0; k < 6; ++k) EXPECT_EQ(got[k], want[k]) << "case " << k;
}

TEST(ActivationPlan, BlockRecomputeSharesOneAttentionHalfAcrossBlocks) {
    Activations a;
    lay_out_activations(gpt2_spec(13, 8, 3, 2, 8), 2, 5, 96, 40, DType::F32, Recompute::Block,
                        reinterpret_cast<void*>(uintptr_t{1} << 40), &a, 3);
    ASSERT_EQ(a.layers.size(), 3u);
    for (const LayerActivations& l : a.layers) {
        EXPECT_EQ(l.qkv.data, a.layers[0].qkv.data);
        EXPECT_EQ(l.ln2_rstd, a.layers[0].ln2_rstd);
        EXPECT_EQ(l.mlp_act.data, a.layers[0].mlp_act.data);
    }
    // What a block keeps is its own.
    EXPECT_NE(a.layers[1].ln1.data, a.layers[0].ln1.data);
    EXPECT_NE(a.layers[1].residual3.data, a.layers[0].residual3.data);
}

// The head's rows per chunk: the key when set (capped at the rows there are), else about the
// backend's logits per chunk in whole groups of 64 rows. GPT-2 at B 64 x T 1024 (Vp 50304):
// 103 chunks of 640 rows on the CPU, 7 of 10,624 on a device (backend.h's arithmetic).
TEST(HeadChunkRows, TheKeyOrTheBackendsLogitsPerChunk) {
    EXPECT_EQ(head_chunk_rows(50304, 65536, 0, kHostHeadChunkLogits), 640);
    EXPECT_EQ(head_chunk_rows(50304, 65536, 0, kDeviceHeadChunkLogits), 10624);
    EXPECT_EQ(head_chunk_rows(128256, 16384, 0, kHostHeadChunkLogits), 256);  // Llama 3
    EXPECT_EQ(head_chunk_rows(128256, 16384, 0, kDeviceHeadChunkLogits), 4160);
    EXPECT_EQ(head_chunk_rows(50304, 65536, 1000, kHostHeadChunkLogits), 1000);  // the key
    EXPECT_EQ(head_chunk_rows(50304, 300, 1000, kHostHeadChunkLogits), 300);     // capped at N
    EXPECT_EQ(head_chunk_rows(50304, 300, 0, kDeviceHeadChunkLogits), 300);      // one chunk
    EXPECT_EQ(head_chunk_rows(64, 500, 0, 64 * 10), 10);      // under 64 rows: not rounded
    EXPECT_EQ(head_chunk_rows(64, 500, 0, 64 * 100), 64);     // rounded down to 64
    EXPECT_EQ(head_chunk_rows(1 << 26, 500, 0, 1 << 25), 1);  // at least one row
}

}  // namespace
}  // namespace trt
