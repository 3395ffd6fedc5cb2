// Shared by the op-level GPU tests (tests/gpu/cuda_*_test.cpp): creating the CUDA backend (or
// skipping with the loader's reason), buffers that live on both backends at once, poisoning,
// rounding to bf16/fp16, comparisons that print the measured error, and the tolerances.
//
// Every test here compares the CUDA backend with the CPU backend (make_cpu_backend), which
// tests/unit/cpu holds against a double-precision reference. A test that cannot get a CUDA
// backend (no module, no device: trt::Error Unsupported) is SKIPPED with the loader's
// message; any other failure to create one (a stale module: VersionMismatch, a device
// error) FAILS. With TRAINRT_REQUIRE_CUDA=1 in the environment (scripts/gpu-check.sh sets
// it) a missing backend fails too, so a GPU run can never pass by skipping.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "config/run_config.h"
#include "core/error.h"
#include "cpu/reference_ops.h"
#include "ops/op_runner.h"

namespace trt {
// GoogleTest prints a test's parameter with this (found by ADL): "bf16", not "4-byte object".
inline void PrintTo(Precision p, std::ostream* os) { *os << to_string(p); }
}  // namespace trt

namespace gpu {

// ---------------------------------------------------------------- tolerances (TESTING.md)
// Relative error ‖cuda − cpu‖ / ‖cpu‖ over a whole tensor (NaN anywhere never passes), the
// values of the op-case table (tests/ops/op_cases.h). Ops without a matrix product run in
// fp32 under every precision: kTolFp32.
constexpr double kTolFp32 = 1e-5;
// Double-precision reductions (sum_squares, grad norm, loss sum) against a long double sum.
constexpr double kTolDoubleSum = 1e-12;

inline bool lowp(trt::Precision p) { return opcase::low_precision(p); }

// Matrix-product ops (matmul, matmul+gelu, attention), by the backend's precision: tf32 2e-3;
// bf16/fp16 1e-2 forward, 2e-2 backward, both backends fed the same rounded inputs
// (TESTING.md), so the error left is the kernel's own.
inline double matmul_tol(trt::Precision p, bool backward) {
    return (backward ? opcase::kMatmulBackward : opcase::kMatmulForward).at(p);
}

inline const char* pname(trt::Precision p) { return trt::to_string(p); }

// ---------------------------------------------------------------- the CUDA backend

inline bool cuda_required() {
    const char* e = std::getenv("TRAINRT_REQUIRE_CUDA");
    return e && *e && std::strcmp(e, "0") != 0;
}

// The CUDA backend for `precision`, or nullptr with `why` (and `skip` = the reason is "no
// CUDA here", not a defect).
// accel: the switches under test (cuDNN attention, epilogues, unfused classifier).
inline std::unique_ptr<trt::Backend> try_cuda(trt::Precision precision, std::string& why,
                                              bool& skip, const trt::AccelOptions& accel = {}) {
    trt::BackendOptions o;
    o.precision = precision;
    o.device = 0;
    o.accel = accel;
    o.threads = 0;
    try {
        auto be = trt::load_cuda_backend(o);
        if (!be) {
            why = "load_cuda_backend returned null";
            skip = false;
        }
        return be;
    } catch (const trt::Error& e) {
        why = e.what();
        skip = e.status() == trt::Status::Unsupported && !cuda_required();
        if (e.status() == trt::Status::Unsupported && cuda_required())
            why += " (TRAINRT_REQUIRE_CUDA is set: a missing CUDA backend is a failure)";
    }
    return nullptr;
}

// In a void function (test body or SetUp): `var` = the CUDA backend, or skip / fail.
#define TRT_CUDA_BACKEND_OR_SKIP(var, precision) \
    TRT_CUDA_BACKEND_WITH_OR_SKIP(var, precision, ::trt::AccelOptions{})
// The same with the accel switches under test.
#define TRT_CUDA_BACKEND_WITH_OR_SKIP(var, precision, accel)                               \
    do {                                                                                   \
        std::string trt_why_;                                                              \
        bool trt_skip_ = false;                                                            \
        var = ::gpu::try_cuda(precision, trt_why_, trt_skip_, accel);                      \
        if (!var) {                                                                        \
            if (trt_skip_) GTEST_SKIP() << "no CUDA backend: " << trt_why_;                \
            FAIL() << "the CUDA backend could not be created: " << trt_why_;               \
        }                                                                                  \
    } while (0)

// ModelDims that make a backend reserve scratch for every shape of a test: the largest B,
// T, C and NH of its cases (C rounded up to a multiple of NH) and the largest V.
struct Cover {
    trt::ModelDims d{};
    Cover& add(int B, int T, int C, int NH = 1, int V = 1) {
        d.B = std::max(d.B, B);
        d.T = std::max(d.T, T);
        d.C = std::max(d.C, C);
        d.NH = std::max(d.NH, NH);
        d.V = std::max(d.V, V);
        d.L = 1;
        return *this;
    }
    // A matrix product [N,K]·[K,M]: rows N, widths K and M (C >= max(K, M) covers every
    // scratch shape derived from C, 3C, 4C).
    Cover& matmul(int N, int K, int M) { return add(1, N, std::max(K, M), 1, M); }
    // Key/value heads and the MLP width of ModelDims (0, the default, means NH and 4C: the
    // multi-head sizes, which bound the grouped-query ones of the same B, T, C, NH).
    Cover& kv_heads(int NKV) {
        d.NKV = NKV;
        return *this;
    }
    Cover& mlp_width(int F) {
        d.F = std::max(d.F, F);
        return *this;
    }
    trt::ModelDims dims() const {
        trt::ModelDims out = d;
        if (out.NH < 1) out.NH = 1;
        out.C = (out.C + out.NH - 1) / out.NH * out.NH;
        return out;
    }
};

// ---------------------------------------------------------------- data

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Seeded uniform values in [lo, hi), never exactly zero.
inline std::vector<float> rnd(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    auto v = ref::random_floats(n, seed, lo, hi);
    for (auto& x : v)
        if (x == 0.0f) x = hi * 0.5f;
    return v;
}

inline std::vector<int32_t> rnd_ids(size_t n, uint32_t seed, int32_t hi) {
    return ref::random_ints(n, seed, hi);
}

// x rounded to the nearest bf16 / fp16 value (ties to even), kept as float (op_runner.h).
inline float round_to(float x, trt::Precision p) { return opcase::round_to(x, p); }

inline std::vector<float> rounded(std::vector<float> v, trt::Precision p) {
    for (auto& x : v) x = round_to(x, p);
    return v;
}

// ---------------------------------------------------------------- buffers on both backends

// side 0 = the CPU backend, side 1 = the CUDA backend.
constexpr int kCpu = 0, kCuda = 1;

class Twin {
public:
    Twin() = default;
    Twin(trt::Backend& cpu, trt::Backend& cuda, size_t bytes) : bytes_(bytes) {
        be_[0] = &cpu;
        be_[1] = &cuda;
        for (int s = 0; s < 2; s++) p_[s] = be_[s]->alloc(bytes ? bytes : 1, "gpu test buffer");
    }
    ~Twin() { release(); }
    Twin(Twin&& o) noexcept { *this = std::move(o); }
    Twin& operator=(Twin&& o) noexcept {
        if (this != &o) {
            release();
            for (int s = 0; s < 2; s++) {
                be_[s] = o.be_[s];
                p_[s] = o.p_[s];
                o.p_[s] = nullptr;
            }
            bytes_ = o.bytes_;
        }
        return *this;
    }
    Twin(const Twin&) = delete;
    Twin& operator=(const Twin&) = delete;

    void* raw(int s) const { return p_[s]; }
    float* f(int s) const { return static_cast<float*>(p_[s]); }
    int32_t* i(int s) const { return static_cast<int32_t*>(p_[s]); }
    template <typename T>
    T* as(int s) const { return static_cast<T*>(p_[s]); }
    size_t bytes() const { return bytes_; }

    // The same host bytes into both sides.
    void set(const void* host, size_t bytes) {
        for (int s = 0; s < 2; s++) be_[s]->copy_to_device(p_[s], host, bytes);
    }
    template <typename T>
    void set(const std::vector<T>& v) {
        EXPECT_LE(v.size() * sizeof(T), bytes_);
        set(v.data(), v.size() * sizeof(T));
    }
    // NaN everywhere (the poison for outputs an op must overwrite).
    void poison() { set(std::vector<float>(bytes_ / sizeof(float), kNaN)); }

    template <typename T>
    std::vector<T> get(int s, size_t n) const {
        std::vector<T> v(n);
        be_[s]->synchronize();
        if (n) be_[s]->copy_to_host(v.data(), p_[s], n * sizeof(T));
        return v;
    }

private:
    void release() {
        for (int s = 0; s < 2; s++)
            if (p_[s]) be_[s]->free(p_[s]);
        p_[0] = p_[1] = nullptr;
    }
    trt::Backend* be_[2] = {nullptr, nullptr};
    void* p_[2] = {nullptr, nullptr};
    size_t bytes_ = 0;
};

// ---------------------------------------------------------------- comparisons

// ‖got − want‖ / ‖want − pre‖: an accumulated (+=) result judged against the increment, so a
// large pre-fill cannot hide an error in what the op added.
inline double accum_error(const std::vector<float>& got, const std::vector<float>& want,
                          const std::vector<float>& pre) {
    if (got.size() != want.size() || want.size() != pre.size()) return INFINITY;
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) {
        if (std::isnan(got[i]) || std::isnan(want[i])) return INFINITY;
        const double d = (double)got[i] - (double)want[i];
        const double inc = (double)want[i] - (double)pre[i];
        num += d * d;
        den += inc * inc;
    }
    return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Fixture base: one CPU and one CUDA backend; helpers that run an op on both.
class CudaVsCpu : public ::testing::Test {
protected:
    // Creates both backends (skips / fails when there is no CUDA backend).
    void open(trt::Precision p) {
        precision_ = p;
        TRT_CUDA_BACKEND_OR_SKIP(cuda_, p);
        cpu_ = trt::make_cpu_backend(4);  // ctest runs several of these at once
    }
    void reserve(const Cover& c) {
        cpu_->reserve(c.dims());
        cuda_->reserve(c.dims());
    }
    // Random matmul operands, rounded to the precision so both backends see the same values.
    std::vector<float> in(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) const {
        return rounded(rnd(n, seed, lo, hi), precision_);
    }
    // The matmul tolerance of the precision under test (TESTING.md).
    double tol(bool backward) const { return matmul_tol(precision_, backward); }
    trt::Backend& be(int s) { return s == kCpu ? *cpu_ : *cuda_; }

    Twin alloc(size_t bytes) { return Twin(*cpu_, *cuda_, bytes); }
    template <typename T>
    Twin up(const std::vector<T>& v) {
        Twin t(*cpu_, *cuda_, v.size() * sizeof(T));
        t.set(v);
        return t;
    }
    Twin nan_floats(size_t n) {
        Twin t(*cpu_, *cuda_, n * sizeof(float));
        t.poison();
        return t;
    }
    // NaN-filled attention state for (B, T, C, NH, NKV): each backend saves and scratches what
    // its own attention needs, so the larger of the two sizes.
    Twin attention_saved(int B, int T, int C, int NH, int NKV) {
        return nan_floats(std::max(
            cpu_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
            cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV))));
    }
    Twin attention_scratch(int B, int T, int C, int NH, int NKV) {
        return nan_floats(std::max(
            cpu_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
            cuda_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV))));
    }
    // Runs f(backend, side) on the CPU, then on CUDA.
    template <typename F>
    void both(F&& f) {
        f(*cpu_, kCpu);
        f(*cuda_, kCuda);
        cuda_->synchronize();
    }

    std::string tag(const std::string& what) const {
        return what + " [" + pname(precision_) + "]";
    }
    // ‖cuda − cpu‖ / ‖cpu‖ of n floats of t, printed, expected <= tol.
    double expect_close(const std::string& what, const Twin& t, size_t n, double tol) {
        const auto c = t.get<float>(kCpu, n), g = t.get<float>(kCuda, n);
        const double e = ref::rel_error(g, c);
        ref::report(tag(what), e);
        EXPECT_LE(e, tol) << tag(what) << " (tolerance " << tol << ")";
        return e;
    }
    // For += outputs pre-filled with `pre` on both sides.
    double expect_close_accum(const std::string& what, const Twin& t,
                              const std::vector<float>& pre, double tol) {
        const auto c = t.get<float>(kCpu, pre.size()), g = t.get<float>(kCuda, pre.size());
        const double e = accum_error(g, c, pre);
        ref::report(tag(what + " (+=)"), e);
        EXPECT_LE(e, tol) << tag(what) << " (tolerance " << tol << ")";
        return e;
    }
    template <typename T>
    void expect_equal(const std::string& what, const Twin& t, size_t n) {
        const auto c = t.get<T>(kCpu, n), g = t.get<T>(kCuda, n);
        size_t diff = 0, first = n;
        for (size_t k = 0; k < n; k++)
            if (std::memcmp(&c[k], &g[k], sizeof(T)) != 0) {
                if (first == n) first = k;
                ++diff;
            }
        EXPECT_EQ(diff, 0u) << tag(what) << ": " << diff << " of " << n
                            << " elements differ, first at " << first;
    }

    trt::Precision precision_ = trt::Precision::Fp32;
    std::unique_ptr<trt::Backend> cpu_, cuda_;
};

// Parameterized over the CUDA backend's precision.
class CudaOpsP : public CudaVsCpu, public ::testing::WithParamInterface<trt::Precision> {
protected:
    void SetUp() override { open(GetParam()); }
};

inline std::string precision_param_name(const ::testing::TestParamInfo<trt::Precision>& info) {
    return pname(info.param);
}

}  // namespace gpu
