// The column reductions (cpu_common.h: bias and norm parameter gradients, cut into kColChunk
// columns x kRowBlock rows) give the same bits at any thread count — the parts depend on the
// shape only — and the blocks' partial sums add up to the whole column's sum (checked in
// double against a direct sum, to one float rounding). Shapes with several row blocks, a partial
// last block, a partial last column chunk, and fewer rows than one block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_common.h"

namespace {

using trt::Backend;

std::vector<float> wave(size_t n, float phase) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::sin(0.37f * static_cast<float>(i) + phase) + 0.01f * static_cast<float>(i % 7);
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
    int N, C;
};
constexpr Shape kShapes[] = {{1000, 384}, {257, 300}, {128, 256}, {5, 40}, {2048, 64}};

// Every parameter gradient and input gradient of the ops with a column reduction, at
// `threads` threads.
std::vector<std::vector<float>> run_all(int threads, Shape s) {
    const size_t N = s.N, C = s.C, NC = N * C;
    std::unique_ptr<Backend> be = trt::make_cpu_backend(threads);
    const std::vector<float> inp = wave(NC, 0.1f), dout = wave(NC, 0.7f), w = wave(C, 1.3f),
                             b = wave(C, 2.1f);
    std::vector<float> out(NC), mean(N), rstd(N);
    std::vector<std::vector<float>> r;
    // layernorm: dinp (+=), dw, db
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), s.N,
                          s.C);
    std::vector<float> dinp(NC, 0.5f), dw(C, 0.25f), db(C, -0.25f);
    be->layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                           mean.data(), rstd.data(), s.N, s.C);
    r.insert(r.end(), {dinp, dw, db});
    // rmsnorm: dinp (+=), dw
    be->rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), s.N, s.C, 1e-5f);
    std::vector<float> rdinp(NC, 0.5f), rdw(C, 0.25f);
    be->rmsnorm_backward(rdinp.data(), rdw.data(), dout.data(), inp.data(), w.data(), rstd.data(),
                         s.N, s.C);
    r.insert(r.end(), {rdinp, rdw});
    // gelu backward with the bias gradient: dinp (overwritten), dbias (+=)
    std::vector<float> gdinp(NC), gdb(C, 0.125f);
    be->gelu_backward_bias(gdinp.data(), gdb.data(), inp.data(), dout.data(), s.N, s.C);
    r.insert(r.end(), {gdinp, gdb});
    // a matmul's bias gradient alone (no product)
    std::vector<float> mdb(C, -0.125f);
    be->matmul_backward(nullptr, nullptr, mdb.data(), dout.data(), inp.data(), w.data(), s.N, 1,
                        s.C, trt::WeightLayout::InOut);
    r.push_back(mdb);
    return r;
}

TEST(CpuColumnReductions, SameBitsAtAnyThreadCount) {
    for (const Shape s : kShapes) {
        SCOPED_TRACE("N " + std::to_string(s.N) + " C " + std::to_string(s.C));
        const auto one = run_all(1, s);
        for (int threads : {2, 3, 7, 16}) {
            const auto many = run_all(threads, s);
            ASSERT_EQ(many.size(), one.size());
            for (size_t i = 0; i < one.size(); ++i)
                EXPECT_TRUE(same_bits(one[i], many[i]))
                    << "output " << i << ", " << threads << " threads";
        }
    }
}

// The blocked sums are the column sums: dbias of a matmul (no product) against a direct sum
// in double, to float rounding.
TEST(CpuColumnReductions, BlockedSumsAreTheColumnSums) {
    for (const Shape s : kShapes) {
        SCOPED_TRACE("N " + std::to_string(s.N) + " C " + std::to_string(s.C));
        const std::vector<float> dout = wave(static_cast<size_t>(s.N) * s.C, 0.7f);
        std::unique_ptr<Backend> be = trt::make_cpu_backend(3);
        std::vector<float> db(s.C, 0.0f);
        const std::vector<float> w(s.C, 1.0f);
        be->matmul_backward(nullptr, nullptr, db.data(), dout.data(), dout.data(), w.data(), s.N, 1,
                            s.C, trt::WeightLayout::InOut);
        for (int j = 0; j < s.C; ++j) {
            double want = 0;
            for (int n = 0; n < s.N; ++n) want += dout[static_cast<size_t>(n) * s.C + j];
            // One float rounding of the sum (its double parts add in another order: far
            // below a float's ulp).
            const float f = static_cast<float>(want);
            const double ulp = std::nextafter(std::fabs(f), INFINITY) - std::fabs(f);
            EXPECT_NEAR(db[j], want, ulp) << "column " << j;
        }
    }
    EXPECT_EQ(trt::cpu::row_blocks(0), 1u);
    EXPECT_EQ(trt::cpu::row_blocks(trt::cpu::kRowBlock), 1u);
    EXPECT_EQ(trt::cpu::row_blocks(trt::cpu::kRowBlock + 1), 2u);
}

// A product split by its output columns (a weight gradient whose rows are fewer than its
// columns) into blocks that start on 16-column boundaries, the last one partial (200 columns:
// 13 lines of 16), at 1 to 8 threads: every block lands where it belongs (against a direct
// sum in double). Bitwise equality across thread counts is not promised for the products
// (OpenBLAS's kernels round differently at different block widths; docs/CONFIG.md).
TEST(CpuColumnReductions, ColumnBlocksOfAProductAreWholeLines) {
    const int N = 96, K = 40, M = 200;
    const std::vector<float> inp = wave(static_cast<size_t>(N) * K, 0.3f),
                             dout = wave(static_cast<size_t>(N) * M, 0.9f),
                             w = wave(static_cast<size_t>(K) * M, 1.7f);
    std::vector<double> want(static_cast<size_t>(K) * M, 0.0);
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < M; ++j)
            for (int n = 0; n < N; ++n)
                want[static_cast<size_t>(k) * M + j] +=
                    static_cast<double>(inp[static_cast<size_t>(n) * K + k]) *
                    dout[static_cast<size_t>(n) * M + j];
    for (trt::CpuMatmul matmul : {trt::CpuMatmul::Openblas, trt::CpuMatmul::Onednn}) {
        SCOPED_TRACE(matmul == trt::CpuMatmul::Onednn ? "onednn" : "openblas");
        for (int threads : {1, 2, 3, 5, 8}) {
            SCOPED_TRACE(std::to_string(threads) + " threads");
            std::unique_ptr<Backend> be;
            try {
                be = trt::make_cpu_backend(threads, trt::Precision::Fp32, matmul);
            } catch (const std::exception&) {
                GTEST_SKIP() << "oneDNN is not in this build or CPU";
            }
            std::vector<float> dw(static_cast<size_t>(K) * M, 0.0f);
            be->matmul_backward(nullptr, dw.data(), nullptr, dout.data(), inp.data(), w.data(), N,
                                K, M, trt::WeightLayout::InOut);
            for (size_t i = 0; i < dw.size(); ++i)
                ASSERT_NEAR(dw[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "element " << i;
        }
    }
}

}  // namespace
