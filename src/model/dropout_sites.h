// Where the decoder drops (model.dropout, lora.dropout) and the site number each place keys
// its masks with (core/dropout_mask.h): part of the mask's definition, so the PyTorch
// reference (tests/reference/reference_common.py) numbers them the same way. Never renumber.
#pragma once
#include <cstdint>

#include "model/param_table.h"

namespace trt {

enum class DropoutPlace : uint32_t {
    AttentionProbs = 0,  // [B, NH, T, T] element ((b·NH + h)·T + t)·T + s
    AttentionOut = 1,    // [N, C] the attention branch (c_proj | o_proj output, bias incl.)
    MlpOut = 2,          // [N, C] the MLP branch (mlp.c_proj | down_proj output, bias incl.)
    LoraInput = 3,       // [N, in] an adapter's input; + the linear's Slot (below)
};

// The embeddings' site is 0; block `layer`'s sites are 1 + 32·layer + place, and an adapter's
// 1 + 32·layer + 3 + slot (slots < Slot::kLayerSlots <= 28).
constexpr uint32_t kEmbeddingDropoutSite = 0;
inline uint32_t dropout_site(int layer, DropoutPlace place, Slot slot = Slot(0)) {
    static_assert(static_cast<int>(Slot::kLayerSlots) <= 28, "sites per layer");
    const uint32_t extra = place == DropoutPlace::LoraInput ? static_cast<uint32_t>(slot) : 0;
    return 1 + 32 * static_cast<uint32_t>(layer) + static_cast<uint32_t>(place) + extra;
}

}  // namespace trt
