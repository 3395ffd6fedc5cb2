// The cos/sin tables of rotary position embeddings (backend.h rope_forward), built once on
// the host so every backend rotates by the same values — the one definition of RoPE's
// frequencies. HF Llama's convention: for pair i of a head of size hs, inv_freq[i] =
// 1 / theta^(2i / hs), then the rope_scaling of the config (transformers'
// modeling_rope_utils: "linear" divides every frequency by the factor; "llama3" divides those
// whose wavelength is above original/low_freq_factor, keeps those below
// original/high_freq_factor and blends linearly between), all in fp32 as transformers computes
// them; the angle at position p is p * inv_freq[i] in fp32, and its cos and sin are taken in
// double and rounded once.
#pragma once
#include <vector>

#include "config/run_config.h"

namespace trt {

// How RoPE's frequencies are stretched for contexts beyond the pretraining one (config.json's
// rope_scaling). kind None: plain RoPE.
struct RopeScalingSpec {
    RopeScaling kind = RopeScaling::None;
    float factor = 1.0f;            // linear, llama3: the stretch
    float low_freq_factor = 1.0f;   // llama3: wavelengths above original / low are divided
    float high_freq_factor = 4.0f;  // llama3: wavelengths below original / high are kept
    int original_context = 0;       // llama3: original_max_position_embeddings
    bool operator==(const RopeScalingSpec& o) const {
        return kind == o.kind && factor == o.factor && low_freq_factor == o.low_freq_factor &&
               high_freq_factor == o.high_freq_factor && original_context == o.original_context;
    }
    bool operator!=(const RopeScalingSpec& o) const { return !(*this == o); }
};

struct RopeTables {
    std::vector<float> cos, sin;  // [max_pos, hs/2] each
};

// inv_freq [hs/2]: the rotation per position of each pair, scaling applied.
std::vector<float> rope_inv_freq(int hs, float theta, const RopeScalingSpec& scaling = {});
RopeTables make_rope_tables(int max_pos, int hs, float theta, const RopeScalingSpec& scaling = {});

}  // namespace trt
