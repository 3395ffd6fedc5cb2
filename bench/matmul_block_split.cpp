// What splitting a product into blocks costs (issue 42): libtrainrt's CPU matmuls
// (src/backend/cpu/cpu_onednn_gemm.cpp, OnednnGemm::run) cut each product into
// parts = min(2 x threads, extent / 32) blocks along the longer output side, and run every block
// as its own single-threaded oneDNN matmul; each block packs its share of the other operand
// again. With the rows fixed and the threads growing, the blocks shrink while their packing
// does not — work that does not parallelize. This times, on ONE thread, the same product run
// whole and run as P blocks one after another (the team's total work at P / 2 threads), so the
// overhead a thread count brings is measured without needing its cores:
//   overhead(P) = time(P blocks, serially) / time(1 block)
// plus, for the largest P, a 2-D split (row groups x column groups) that packs each operand
// fewer times. fp32, plain row-major layouts as the library passes them; products of a training
// step at the `small` model (N 2048, C 384) and a 124M-class one (N 4096, C 768).
//   g++ -O2 -std=c++17 matmul_block_split.cpp -ldnnl   (bench/matmul_block_split.sh)
// Output: markdown on stdout; the median of --reps runs per cell after one warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dnnl.hpp"

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

// C[m,n] (+)= op(A)[m,k] · op(B)[k,n]; lda/ldb/ldc are the row strides of the stored matrices.
struct Gemm {
    const char* name;
    long m, n, k;
    bool ta, tb;      // A stored [k,m] / B stored [n,k]
    bool accumulate;  // C += (the weight gradient)
};

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, long m, long n, long k, long lda,
                                     long ldb, long ldc, bool ta, bool tb, bool acc) {
    const dnnl::memory::desc a({m, k}, dt::f32, ta ? dims{1, lda} : dims{lda, 1});
    const dnnl::memory::desc b({k, n}, dt::f32, tb ? dims{1, ldb} : dims{ldb, 1});
    const dnnl::memory::desc c({m, n}, dt::f32, dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (acc) {
        dnnl::post_ops po;
        po.append_sum(1.0f);
        attr.set_post_ops(po);
    }
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(eng, a, b, c, attr);
#else
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, eng);
#endif
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The product as R row groups x C column groups of blocks, run one after another.
struct Split {
    int rows, cols;
};

struct Runner {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    std::map<std::string, dnnl::matmul> cache;

    double run(const Gemm& g, Split sp, std::vector<float>& A, std::vector<float>& B,
               std::vector<float>& C, int reps) {
        // Stored shapes: A [m,k] or [k,m]; B [k,n] or [n,k]; C [m,n].
        const long lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n, ldc = g.n;
        struct Blk {
            dnnl::matmul prim;
            dnnl::memory a, b, c;
        };
        std::vector<Blk> blocks;
        for (int r = 0; r < sp.rows; ++r)
            for (int c = 0; c < sp.cols; ++c) {
                const long m0 = g.m * r / sp.rows, m1 = g.m * (r + 1) / sp.rows;
                const long n0 = g.n * c / sp.cols, n1 = g.n * (c + 1) / sp.cols;
                const long bm = m1 - m0, bn = n1 - n0;
                const std::string key = std::to_string(bm) + "x" + std::to_string(bn) + g.name;
                auto pd = make_pd(eng, bm, bn, g.k, lda, ldb, ldc, g.ta, g.tb, g.accumulate);
                if (!cache.count(key)) cache.emplace(key, dnnl::matmul(pd));
                float* a = A.data() + (g.ta ? m0 : m0 * lda);
                float* b = B.data() + (g.tb ? n0 * ldb : n0);
                float* cc = C.data() + m0 * ldc + n0;
                blocks.push_back({cache.at(key), dnnl::memory(pd.src_desc(), eng, a),
                                  dnnl::memory(pd.weights_desc(), eng, b),
                                  dnnl::memory(pd.dst_desc(), eng, cc)});
            }
        std::vector<double> times;
        for (int rep = 0; rep <= reps; ++rep) {  // rep 0: warm-up
            const double t0 = now_ms();
            for (Blk& b : blocks)
                b.prim.execute(strm,
                               {{DNNL_ARG_SRC, b.a}, {DNNL_ARG_WEIGHTS, b.b}, {DNNL_ARG_DST, b.c}});
            strm.wait();
            if (rep > 0) times.push_back(now_ms() - t0);
        }
        std::sort(times.begin(), times.end());
        return times[times.size() / 2];
    }
};

// The library's split: along the longer output side, P blocks.
Split library_split(const Gemm& g, int parts) {
    return g.m >= g.n ? Split{parts, 1} : Split{1, parts};
}

// The 2-D split of P blocks whose packing is least: R x C = P with R·|B| + C·|A| smallest.
Split two_d_split(const Gemm& g, int parts) {
    Split best{parts, 1};
    double best_cost = 1e300;
    for (int r = 1; r <= parts; ++r) {
        if (parts % r) continue;
        const int c = parts / r;
        if (g.m / r < 32 || g.n / c < 32) continue;
        const double cost = double(r) * g.k * g.n + double(c) * g.k * g.m;
        if (cost < best_cost) best_cost = cost, best = {r, c};
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    for (int i = 1; i + 1 < argc; ++i)
        if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[++i]));
    // Products of one layer's training step (fwd: out = inp·W; dinp = dout·Wᵀ; dW += inpᵀ·dout).
    auto layer = [](std::vector<Gemm>& v, long N, long K, long M, const char* tag) {
        static std::vector<std::string> names;
        names.push_back(std::string(tag) + " fwd");
        v.push_back({names.back().c_str(), N, M, K, false, false, false});
        names.push_back(std::string(tag) + " dinp");
        v.push_back({names.back().c_str(), N, K, M, false, true, false});
        names.push_back(std::string(tag) + " dW");
        v.push_back({names.back().c_str(), K, M, N, true, false, true});
    };
    std::vector<Gemm> gemms;
    gemms.reserve(64);
    layer(gemms, 2048, 384, 1152, "small qkv 384x1152");
    layer(gemms, 2048, 384, 1536, "small fc 384x1536");
    layer(gemms, 2048, 1536, 384, "small proj 1536x384");
    layer(gemms, 4096, 768, 2304, "124M qkv 768x2304");
    layer(gemms, 4096, 768, 3072, "124M fc 768x3072");
    layer(gemms, 4096, 3072, 768, "124M proj 3072x768");
    const int parts[] = {1, 2, 4, 8, 16, 32, 64};

    std::printf("| product (m x n x k) | 1 block ms |");
    for (int p : parts)
        if (p > 1) std::printf(" %d blocks |", p);
    std::printf(" 32 as 2-D |\n|---|---|");
    for (int p : parts)
        if (p > 1) std::printf("---|");
    std::printf("---|\n");
    Runner run;
    for (const Gemm& g : gemms) {
        std::vector<float> A(g.m * g.k, 0.5f), B(g.k * g.n, 0.25f), C(g.m * g.n, 0.0f);
        const double base = run.run(g, {1, 1}, A, B, C, reps);
        std::printf("| %s (%ld x %ld x %ld) | %.2f |", g.name, g.m, g.n, g.k, base);
        for (int p : parts) {
            if (p == 1) continue;
            const Split sp = library_split(g, p);
            if ((sp.rows > 1 ? g.m : g.n) / p < 32) {
                std::printf(" - |");
                continue;
            }
            std::printf(" %.2fx |", run.run(g, sp, A, B, C, reps) / base);
        }
        const Split sp = two_d_split(g, 32);
        std::printf(" %.2fx (%dx%d) |\n", run.run(g, sp, A, B, C, reps) / base, sp.rows, sp.cols);
        std::fflush(stdout);
    }
    return 0;
}
