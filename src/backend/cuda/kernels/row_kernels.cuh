// The launch layout the per-row norm kernels share (layernorm.cu, rmsnorm.cu): one warp per
// row, kWarps rows per block, and two flavours picked by K, a template argument:
//   K > 0: the row is held in registers, K values per lane at c = lane + 32*i (C <= 32*K);
//   K == 0: any C, the row is re-read from global memory (L1/L2) for each pass.
// Both flavours compute the same thing in the same order (per-lane sums in c order, then a
// warp butterfly, reduce.cuh), so the flavour changes speed, not bits.
#pragma once
#include <type_traits>

namespace trt::cuda::rows {

constexpr int kWarps = 8;  // rows per block: one warp per row
constexpr int kThreads = kWarps * 32;

inline int blocks(int N) { return (N + kWarps - 1) / kWarps; }

// Values per lane for the register flavour; 0 = generic. A forward holds one array per lane,
// a backward two, hence its lower limit. (K = 64 takes ~146 registers, one block per SM, but
// each lane has 64 independent loads in flight; capping it at 128 registers spills.)
inline int forward_k(int C) {
    const int per_lane = (C + 31) / 32;
    if (per_lane <= 8) return 8;
    if (per_lane <= 16) return 16;
    if (per_lane <= 32) return 32;
    if (per_lane <= 64) return 64;
    return 0;
}
inline int backward_k(int C) {
    const int per_lane = (C + 31) / 32;
    if (per_lane <= 8) return 8;
    if (per_lane <= 16) return 16;
    if (per_lane <= 32) return 32;
    return 0;
}

// Calls launch(std::integral_constant<int, K>{}) for the K of forward_k(C) (forward) or
// backward_k(C): the caller's kernel<decltype(k)::value><<<...>>> is instantiated for every
// flavour once, here, instead of in a switch per launch site.
template <class Launch>
void for_forward_k(int C, Launch&& launch) {
    switch (forward_k(C)) {
        case 8: launch(std::integral_constant<int, 8>{}); break;
        case 16: launch(std::integral_constant<int, 16>{}); break;
        case 32: launch(std::integral_constant<int, 32>{}); break;
        case 64: launch(std::integral_constant<int, 64>{}); break;
        default: launch(std::integral_constant<int, 0>{}); break;
    }
}
template <class Launch>
void for_backward_k(int C, Launch&& launch) {
    switch (backward_k(C)) {
        case 8: launch(std::integral_constant<int, 8>{}); break;
        case 16: launch(std::integral_constant<int, 16>{}); break;
        case 32: launch(std::integral_constant<int, 32>{}); break;
        default: launch(std::integral_constant<int, 0>{}); break;
    }
}

}  // namespace trt::cuda::rows
