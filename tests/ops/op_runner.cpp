// The op-case runner (op_runner.h): seeded inputs, a case on one backend, the comparisons.
#include "ops/op_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "core/bf16.h"
#include "core/fp16.h"
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

// Activations stored in bf16 / fp16 (a backend's activation dtype): the values they can hold
// (round_to below, at the matching precision), and their bits.
bool lowp(trt::DType act) { return act == trt::DType::BF16 || act == trt::DType::F16; }
trt::Precision precision_of(trt::DType act) {
    return act == trt::DType::BF16  ? trt::Precision::Bf16
           : act == trt::DType::F16 ? trt::Precision::Fp16
                                    : trt::Precision::Fp32;
}
uint16_t narrow_act(trt::DType act, float x) {
    return act == trt::DType::BF16 ? trt::float_to_bf16(x) : trt::float_to_fp16(x);
}
float widen_act(trt::DType act, uint16_t b) {
    return act == trt::DType::BF16 ? trt::bf16_to_float(b) : trt::fp16_to_float(b);
}

// A case's initial tensors, as both sides of a comparison receive them.
struct Initial {
    std::vector<std::vector<float>> f;
    std::vector<std::vector<int32_t>> ids;
};

// p: the precision the backend under test computes in (its operands are rounded to it);
// act: its activation dtype (bf16 activations hold bf16 values from the start).
Initial initial_values(const OpCase& c, trt::Precision p, trt::DType act) {
    Initial in;
    in.f.resize(c.tensors.size());
    in.ids.resize(c.tensors.size());
    for (size_t i = 0; i < c.tensors.size(); i++) {
        const TensorSpec& t = c.tensors[i];
        const uint32_t seed = seed_of(c.op + "/" + c.shape + "/" + t.name);
        if (t.ids_below > 0) {
            in.ids[i] = ref::random_ints(t.count, seed, t.ids_below);
            if (t.fill_ids) t.fill_ids(in.ids[i]);
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
        if (t.act && lowp(act))
            for (auto& x : v) x = round_to(x, precision_of(act));
        in.f[i] = std::move(v);
    }
    return in;
}

// What an op left in its written tensors (empty vectors for inputs).
using Results = std::vector<std::vector<float>>;

bool lowp_on(const TensorSpec& t, const trt::Backend& be) {
    return t.act && lowp(be.activation_dtype());
}

size_t bytes_of(const TensorSpec& t, const trt::Backend& be) {
    if (lowp_on(t, be)) return t.count * sizeof(uint16_t);
    return t.count * (t.ids_below > 0 ? sizeof(int32_t) : sizeof(float));
}

Results run_on(const OpCase& c, trt::Backend& be, const Initial& init) {
    be.reserve(c.dims);
    DeviceTensors dt;
    dt.p.assign(c.tensors.size(), nullptr);
    dt.dtype.assign(c.tensors.size(), trt::DType::F32);
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
            if (lowp_on(t, be)) dt.dtype[i] = be.activation_dtype();
            if (t.param) {
                TRT_CHECK(t.ids_below == 0 && !t.act, "op case: a parameter must be fp32");
                dt.p[i] = static_cast<float*>(params) + next_param;
                next_param += t.count;
            } else {
                dt.p[i] = be.alloc(std::max<size_t>(bytes_of(t, be), 4), "op case tensor");
                owned.push_back(dt.p[i]);
            }
            std::vector<uint16_t> narrow;
            const void* src = t.ids_below > 0 ? static_cast<const void*>(init.ids[i].data())
                                              : static_cast<const void*>(init.f[i].data());
            if (lowp_on(t, be)) {  // exact: the values were rounded to that dtype already
                narrow.resize(t.count);
                for (size_t k = 0; k < t.count; k++)
                    narrow[k] = narrow_act(be.activation_dtype(), init.f[i][k]);
                src = narrow.data();
            }
            // Into the registered buffer after register_params: the working copy follows.
            if (t.count) be.copy_to_device(dt.p[i], src, bytes_of(t, be));
        }
        c.run(be, dt);
        be.synchronize();
        Results out(c.tensors.size());
        for (size_t i = 0; i < c.tensors.size(); i++) {
            const TensorSpec& t = c.tensors[i];
            if (t.use == Use::In) continue;
            TRT_CHECK(t.ids_below == 0, "op case: an op writes ids");
            out[i].resize(t.count);
            if (!t.count) continue;
            if (lowp_on(t, be)) {
                std::vector<uint16_t> narrow(t.count);
                be.copy_to_host(narrow.data(), dt.p[i], bytes_of(t, be));
                for (size_t k = 0; k < t.count; k++)
                    out[i][k] = widen_act(be.activation_dtype(), narrow[k]);
            } else {
                be.copy_to_host(out[i].data(), dt.p[i], bytes_of(t, be));
            }
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
// A bf16 (fp16) activation is rounded where the op stores it: half an ulp (2^-9, fp16 2^-11
// relative) per element bounds it; 4e-3 (fp16 1e-3) over the tensor leaves room for the fp32
// math before it. An accumulator stored in low precision rounds pre-fill + increment
// together, so it is judged on the total (an op that dropped the pre-fill is still off by
// the whole pre-fill).
double storage_tolerance(trt::DType act) { return act == trt::DType::BF16 ? 4e-3 : 1e-3; }

// storage: the tensor is an activation held in `storage` (F32: not rounded by storage).
template <typename W>
Check check_of(const TensorSpec& t, double tol, const std::vector<float>& got, const W& want,
               const std::vector<float>& pre, trt::DType storage = trt::DType::F32) {
    Check k;
    k.tensor = t.use == Use::Accum ? t.name + " (+=)" : t.name;
    const bool rounded = lowp(storage);
    k.tol = rounded ? std::max(tol, storage_tolerance(storage)) : tol;
    const bool on_increment = t.use == Use::Accum && !rounded;
    k.error = relative_error(got, want, on_increment ? &pre : nullptr);
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
    const trt::DType act = be.activation_dtype();
    const Initial init = initial_values(c, precision_of(act), act);
    const Results got = run_on(c, be, init);
    // The double reference of the big cases takes a while: once per case, activation dtype
    // and process (a suite checks each case at several thread counts).
    static std::map<std::pair<const OpCase*, trt::DType>, HostTensors> expected;
    const auto key = std::make_pair(&c, act);
    auto it = expected.find(key);
    if (it == expected.end()) {
        HostTensors h;
        h.f.resize(c.tensors.size());
        h.ids = init.ids;
        for (size_t i = 0; i < c.tensors.size(); i++)
            h.f[i].assign(init.f[i].begin(), init.f[i].end());
        c.reference(h);
        it = expected.emplace(key, std::move(h)).first;
    }
    const HostTensors& h = it->second;
    std::vector<Check> checks;
    for_each_written(c, [&](size_t i, const TensorSpec& t) {
        checks.push_back(check_of(t, c.tol.fp32, got[i], h.f[i], init.f[i],
                                  t.act ? act : trt::DType::F32));
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
                                const Results& want, double tol, bool all_bitwise,
                                trt::DType act) {
    std::vector<Check> checks;
    for_each_written(c, [&](size_t i, const TensorSpec& t) {
        Check k = check_of(t, tol, got[i], want[i], init.f[i], t.act ? act : trt::DType::F32);
        k.bitwise = all_bitwise || t.bitwise;
        k.same_bits = bitwise_equal(got[i], want[i]);
        checks.push_back(k);
    });
    return checks;
}

}  // namespace

std::vector<Check> against_backend(const OpCase& c, trt::Backend& be, trt::Precision p,
                                   trt::Backend& oracle) {
    TRT_CHECK(oracle.activation_dtype() == be.activation_dtype(),
              "op case: the oracle must store activations as the backend under test does");
    const trt::DType act = be.activation_dtype();
    const Initial init = initial_values(c, p, act);
    const Results want = run_on(c, oracle, init);
    const Results got = run_on(c, be, init);
    return compare_runs(c, init, got, want, c.tol.at(p), false, act);
}

std::vector<Check> run_to_run(const OpCase& c, trt::Backend& be, trt::Precision p) {
    const Initial init = initial_values(c, p, be.activation_dtype());
    const Results first = run_on(c, be, init);
    const Results second = run_on(c, be, init);
    return compare_runs(c, init, second, first, 0.0, true, trt::DType::F32);
}

}  // namespace opcase
