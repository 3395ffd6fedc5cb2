// The cos/sin tables of rotary position embeddings (backend.h rope_forward), built once on
// the host so every backend rotates by the same values. HF Llama's convention: for pair i of
// a head of size hs, inv_freq[i] = 1 / theta^(2i / hs) and the angle at position p is
// p * inv_freq[i], both in fp32 as transformers computes them; cos and sin of that fp32
// angle are taken in double and rounded once.
#pragma once
#include <vector>

namespace trt {

struct RopeTables {
    std::vector<float> cos, sin;  // [max_pos, hs/2] each
};

RopeTables make_rope_tables(int max_pos, int hs, float theta);

}  // namespace trt
