// The op-case runner (op_runner.h): seeded inputs, a case on one backend, the comparisons.
#include "ops/op_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.h"
#include "cpu/reference_ops.h"

namespace opcase {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// Registered parameters start this many floats into their buffer: 24 bytes in fp32, 12 in
// bf16/fp16, so no 16- or 32-byte alignment of a working copy can be assumed.
constexpr size_t kParamOffset = 6;

// FNV-1a: a seed per (case, tensor) that does not move when cases are added elsewhere.
uint32_t seed_of(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char ch : s) {
        h ^= ch;
        h *= 16777619u;
    }
    return h;
}

// A case's initial tensors, as both sides of a comparison receive them.
struct Initial {
    std::vector<std::vector<float>> f;
    std::vector<std::vector<int32_t>> ids;
};

Initial initial_values(const OpCase& c, trt::Precision p) {
    Initial in;
    in.f.resize(c.tensors.size());
    in.ids.resize(c.tensors.size());
    for (size_t i = 0; i < c.tensors.size(); i++) {
        const TensorSpec& t = c.tensors[i];
        const uint32_t seed = seed_of(c.op + "/" + c.shape + "/" + t.name);
        if (t.ids_below > 0) {
            in.ids[i] = ref::random_ints(t.count, seed, t.ids_below);
            continue;
        }
        if (t.use == Use::Out) {
            in.f[i].assign(t.count, kNaN);
            continue;
        }
        auto v = ref::random_floats(t.count, seed, t.lo, t.hi);
        for (auto& x : v)
            if (x == 0.0f) x = t.hi * 0.5f;
        if (t.fill) t.fill(v);
        if (t.operand && low_precision(p))
            for (auto& x : v) x = round_to(x, p);
        in.f[i] = std::move(v);
    }
    return in;
}

// What an op left in its written tensors (empty vectors for inputs).
using Results = std::vector<std::vector<float>>;

size_t bytes_of(const TensorSpec& t) {
    return t.count * (t.ids_below > 0 ? sizeof(int32_t) : sizeof(float));
}

Results run_on(const OpCase& c, trt::Backend& be, const Initial& init) {
    be.reserve(c.dims);
    DeviceTensors dt;
    dt.p.assign(c.tensors.size(), nullptr);
    void* params = nullptr;
    std::vector<void*> owned;
    auto release = [&] {
        for (void* q : owned) be.free(q);
        be.free(params);
    };
    try {
        size_t n_params = kParamOffset;
        for (const TensorSpec& t : c.tensors)
            if (t.param) n_params += t.count;
        if (n_params > kParamOffset) {
            params = be.alloc(n_params * sizeof(float), "op case parameters");
            be.register_params(static_cast<const float*>(params), n_params);
        }
        size_t next_param = kParamOffset;
        for (size_t i = 0; i < c.tensors.size(); i++) {
            const TensorSpec& t = c.tensors[i];
            if (t.param) {
                TRT_CHECK(t.ids_below == 0, "op case: ids cannot be parameters");
                dt.p[i] = static_cast<float*>(params) + next_param;
                next_param += t.count;
            } else {
                dt.p[i] = be.alloc(std::max<size_t>(bytes_of(t), 4), "op case tensor");
                owned.push_back(dt.p[i]);
            }
            const void* src = t.ids_below > 0 ? static_cast<const void*>(init.ids[i].data())
                                              : static_cast<const void*>(init.f[i].data());
            // Into the registered buffer after register_params: the working copy follows.
            if (t.count) be.copy_to_device(dt.p[i], src, bytes_of(t));
        }
        c.run(be, dt);
        be.synchronize();
        Results out(c.tensors.size());
        for (size_t i = 0; i < c.tensors.size(); i++) {
            const TensorSpec& t = c.tensors[i];
            if (t.use == Use::In) continue;
            TRT_CHECK(t.ids_below == 0, "op case: an op writes ids");
            out[i].resize(t.count);
            if (t.count) be.copy_to_host(out[i].data(), dt.p[i], bytes_of(t));
        }
        release();
        return out;
    } catch (...) {
        release();
        throw;
    }
}

// ‖got − want‖ / ‖want‖, or for an accumulator ‖got − want‖ / ‖want − pre‖ (a large pre-fill
// cannot hide an error in what the op added). NaN anywhere in got or want: inf.
template <typename W>
double relative_error(const std::vector<float>& got, const W& want,
                      const std::vector<float>* pre) {
    if (got.size() != want.size()) return INFINITY;
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double g = got[i], w = want[i];
        if (std::isnan(g) || std::isnan(w)) return INFINITY;
        num += (g - w) * (g - w);
        const double base = pre ? w - (double)(*pre)[i] : w;
        den += base * base;
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return std::sqrt(num / den);
}

// Calls f(index, spec) for every tensor the op writes.
template <typename F>
void for_each_written(const OpCase& c, F&& f) {
    for (size_t i = 0; i < c.tensors.size(); i++)
        if (c.tensors[i].use != Use::In) f(i, c.tensors[i]);
}

// One written tensor's check; `pre` is its initial content (the pre-fill of an accumulator).
template <typename W>
Check check_of(const TensorSpec& t, double tol, const std::vector<float>& got, const W& want,
               const std::vector<float>& pre) {
    Check k;
    k.tensor = t.use == Use::Accum ? t.name + " (+=)" : t.name;
    k.tol = tol;
    k.error = relative_error(got, want, t.use == Use::Accum ? &pre : nullptr);
    return k;
}

}  // namespace

bool low_precision(trt::Precision p) {
    return p == trt::Precision::Bf16 || p == trt::Precision::Fp16;
}

float round_to(float x, trt::Precision p) {
    if (!low_precision(p) || !std::isfinite(x) || x == 0.0f) return x;
    int e = 0;
    std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    int exp2 = e - 1;   // x = m * 2^exp2, m in [1, 2)
    const int mant_bits = p == trt::Precision::Bf16 ? 7 : 10;
    if (p == trt::Precision::Fp16 && exp2 < -14) exp2 = -14;  // fp16 subnormals
    const float q = std::ldexp(1.0f, exp2 - mant_bits);       // spacing at x
    return std::nearbyint(x / q) * q;                          // exact scaling, RNE
}

double Tolerance::at(trt::Precision p) const {
    if (p == trt::Precision::Tf32) return tf32;
    if (low_precision(p)) return lowp;
    return fp32;
}

std::string Check::describe() const {
    std::ostringstream s;
    s << tensor << ": " << error << " (tolerance " << tol << ")";
    if (bitwise) s << (same_bits ? ", bitwise equal" : ", NOT bitwise equal (required)");
    return s.str();
}

std::vector<Check> against_reference(const OpCase& c, trt::Backend& be) {
    const Initial init = initial_values(c, trt::Precision::Fp32);
    const Results got = run_on(c, be, init);
    // The double reference of the big cases takes a while: once per case and process (a
    // suite checks each case at several thread counts).
    static std::map<const OpCase*, HostTensors> expected;
    auto it = expected.find(&c);
    if (it == expected.end()) {
        HostTensors h;
        h.f.resize(c.tensors.size());
        h.ids = init.ids;
        for (size_t i = 0; i < c.tensors.size(); i++)
            h.f[i].assign(init.f[i].begin(), init.f[i].end());
        c.reference(h);
        it = expected.emplace(&c, std::move(h)).first;
    }
    const HostTensors& h = it->second;
    std::vector<Check> checks;
    for_each_written(c, [&](size_t i, const TensorSpec& t) {
        checks.push_back(check_of(t, c.tol.fp32, got[i], h.f[i], init.f[i]));
    });
    return checks;
}

namespace {

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Checks of `got` against `want` (two runs of the case); bitwise when `all_bitwise`, else
// where the case says so.
std::vector<Check> compare_runs(const OpCase& c, const Initial& init, const Results& got,
                                const Results& want, double tol, bool all_bitwise) {
    std::vector<Check> checks;
    for_each_written(c, [&](size_t i, const TensorSpec& t) {
        Check k = check_of(t, tol, got[i], want[i], init.f[i]);
        k.bitwise = all_bitwise || t.bitwise;
        k.same_bits = bitwise_equal(got[i], want[i]);
        checks.push_back(k);
    });
    return checks;
}

}  // namespace

std::vector<Check> against_backend(const OpCase& c, trt::Backend& be, trt::Precision p,
                                   trt::Backend& oracle) {
    const Initial init = initial_values(c, p);
    const Results want = run_on(c, oracle, init);
    const Results got = run_on(c, be, init);
    return compare_runs(c, init, got, want, c.tol.at(p), false);
}

std::vector<Check> run_to_run(const OpCase& c, trt::Backend& be, trt::Precision p) {
    const Initial init = initial_values(c, p);
    const Results first = run_on(c, be, init);
    const Results second = run_on(c, be, init);
    return compare_runs(c, init, second, first, 0.0, true);
}

}  // namespace opcase
