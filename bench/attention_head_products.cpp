// Attention's per-head products on one thread (issue 42): what src/backend/cpu/cpu_attention.cpp
// runs per query block of 64 rows over n keys of a 64-wide head — fp32 by oneDNN's dnnl_sgemm
// (the fp32 mode), bf16 by a oneDNN matmul primitive on strided views of the stored qkv (the
// bf16 mode), and bf16 on dense operands (a head's K/V copied out: which implementation oneDNN
// picks then). Also the cost of making a primitive's memory objects per call, which
// OnednnGemm::prepare avoids by binding them once per thread slot.
//   g++ -O2 -std=c++17 bench/attention_head_products.cpp -o /tmp/ahp -ldnnl && OMP_NUM_THREADS=1
//   /tmp/ahp
// Output: markdown on stdout; µs per product, the median of 5 batches of 2000 after a warm-up.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "dnnl.hpp"

namespace {

using dt = dnnl::memory::data_type;

dnnl::memory::desc matrix(int rows, int cols, int ld, bool trans, dt type) {
    return trans ? dnnl::memory::desc({rows, cols}, type, {1, ld})
                 : dnnl::memory::desc({rows, cols}, type, {ld, 1});
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Median of 5 batches of `reps` calls of fn, in µs per call.
template <typename Fn>
double time_us(Fn&& fn, int reps = 2000) {
    for (int i = 0; i < 100; i++) fn();
    std::vector<double> t;
    for (int b = 0; b < 5; b++) {
        const double t0 = now();
        for (int i = 0; i < reps; i++) fn();
        t.push_back((now() - t0) / reps * 1e6);
    }
    std::sort(t.begin(), t.end());
    return t[2];
}

struct Product {
    const char* name;
    int m, n, k, lda, ldb, ldc;
    bool ta, tb;
};

}  // namespace

int main() {
    const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const int T = 256, hs = 64, W = 3 * 384;               // GPT-2 `small`'s qkv row
    std::vector<uint16_t> act((size_t)T * W * 2, 0x3f80);  // bf16 1.0
    std::vector<float> actf((size_t)T * W * 2, 1.0f), out((size_t)T * W);
    std::printf(
        "| product | keys n | sgemm fp32 µs | bf16 strided µs (impl) | bf16 dense µs (impl) "
        "| bf16 strided, memory objects per call µs |\n|---|---|---|---|---|---|\n");
    for (int n = 64; n <= T; n += 64) {
        // Q·Kᵀ (scores), P·V (out), Pᵀ·dO (dV): as cpu_attention.cpp's BlockProducts.
        const Product strided[] = {{"Q·Kᵀ", 64, n, hs, W, W, T, false, true},
                                   {"P·V", 64, hs, n, T, W, W, false, false},
                                   {"Pᵀ·dO", n, hs, 64, T, W, W, true, false}};
        const Product dense[] = {{"Q·Kᵀ", 64, n, hs, hs, hs, T, false, true},
                                 {"P·V", 64, hs, n, T, hs, hs, false, false},
                                 {"Pᵀ·dO", n, hs, 64, T, hs, hs, true, false}};
        for (int i = 0; i < 3; i++) {
            const Product& p = strided[i];
            const double sg = time_us([&] {
                dnnl_sgemm(p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', p.m, p.n, p.k, 1.0f, actf.data(),
                           p.lda, actf.data() + (size_t)T * W, p.ldb, 0.0f, out.data(), p.ldc);
            });
            double us[2], per_call = 0;
            std::string impl[2];
            for (int d = 0; d < 2; d++) {
                const Product& q = d == 0 ? strided[i] : dense[i];
                dnnl::primitive_attr attr;
                attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
                const auto a = matrix(q.m, q.k, q.lda, q.ta, dt::bf16);
                const auto b = matrix(q.k, q.n, q.ldb, q.tb, dt::bf16);
                const auto c = matrix(q.m, q.n, q.ldc, false, dt::f32);
                const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, eng);
                const dnnl::matmul prim(pd);
                std::vector<uint8_t> scratch(pd.scratchpad_desc().get_size() + 1);
                impl[d] = pd.impl_info_str();
                std::unordered_map<int, dnnl::memory> args{
                    {DNNL_ARG_SRC, dnnl::memory(a, eng, act.data())},
                    {DNNL_ARG_WEIGHTS, dnnl::memory(b, eng, act.data() + (size_t)T * W)},
                    {DNNL_ARG_DST, dnnl::memory(c, eng, out.data())},
                    {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), eng, scratch.data())}};
                us[d] = time_us([&] {
                    prim.execute(strm, args);
                    strm.wait();
                });
                if (d == 0)
                    per_call = time_us([&] {
                        std::unordered_map<int, dnnl::memory> fresh{
                            {DNNL_ARG_SRC, dnnl::memory(a, eng, act.data())},
                            {DNNL_ARG_WEIGHTS, dnnl::memory(b, eng, act.data() + (size_t)T * W)},
                            {DNNL_ARG_DST, dnnl::memory(c, eng, out.data())},
                            {DNNL_ARG_SCRATCHPAD,
                             dnnl::memory(pd.scratchpad_desc(), eng, scratch.data())}};
                        prim.execute(strm, fresh);
                        strm.wait();
                    });
            }
            std::printf("| %s %dx%dx%d | %d | %.2f | %.2f (%s) | %.2f (%s) | %.2f |\n", p.name, p.m,
                        p.n, p.k, n, sg, us[0], impl[0].c_str(), us[1], impl[1].c_str(), per_call);
        }
    }
}
