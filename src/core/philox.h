// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
// a counter-based RNG, identical on host and device, so the CPU and CUDA samplers draw the
// same batches from the same (seed, step, micro-step, row) with no state to carry.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TRT_HOST_DEVICE __host__ __device__
#else
#define TRT_HOST_DEVICE
#endif

namespace trt {

struct Philox4x32 {
    uint32_t v[4];
};

TRT_HOST_DEVICE inline uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
    const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
    *hi = static_cast<uint32_t>(p >> 32);
    return static_cast<uint32_t>(p);
}

// counter = (c0, c1, c2, c3), key = (k0, k1); ten rounds.
TRT_HOST_DEVICE inline Philox4x32 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                                uint32_t c3, uint32_t k0, uint32_t k1) {
    constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
    constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, hi1;
        const uint32_t lo0 = philox_mulhilo(kMul0, c0, &hi0);
        const uint32_t lo1 = philox_mulhilo(kMul1, c2, &hi1);
        const uint32_t n0 = hi1 ^ c1 ^ k0;
        const uint32_t n1 = lo1;
        const uint32_t n2 = hi0 ^ c3 ^ k1;
        const uint32_t n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += kWeyl0;
        k1 += kWeyl1;
    }
    return Philox4x32{{c0, c1, c2, c3}};
}

}  // namespace trt
