// The op-case table: every model op of the Backend interface (backend.h) at the shapes worth
// checking, written once and run by both op suites (ggml test-backend-ops style):
//   tests/unit/cpu/test_op_cases.cpp   the CPU backend against the double reference
//                                      (reference_ops.h), for 1, 2 and 3 threads;
//   tests/gpu/cuda_op_cases_test.cpp   the CUDA backend against the CPU backend, for each
//                                      CUDA precision.
// A case names the op and its shape, lists its tensors (what each holds and whether the op
// reads it, overwrites it, accumulates into it or rewrites it in place), says how to issue
// the op on any backend and what the double reference expects, and carries its tolerance per
// precision. The runner (op_runner.h) does the rest: seeded inputs, NaN poison in outputs,
// random pre-fill in accumulators (judged on the increment), rounding of matmul operands for
// a bf16/fp16 backend, the comparisons.
//
// Add a case here when you add an op (ARCHITECTURE.md "Extending"); both suites pick it up.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"

namespace opcase {

using Vec = std::vector<double>;

// What an op does with a tensor.
enum class Use {
    In,     // read only
    Out,    // overwritten: poisoned with NaN first, so an element the op skips fails
    Accum,  // +=: pre-filled with random values, judged on what the op added
    InOut,  // rewritten in place from its random initial values
};

struct TensorSpec {
    std::string name;
    size_t count = 0;  // elements (float, or int32 for ids)
    Use use = Use::In;
    float lo = -1.0f, hi = 1.0f;  // initial values uniform in [lo, hi), never exactly 0
    int32_t ids_below = 0;        // > 0: int32 ids in [0, ids_below) instead of floats
    // A matrix-product operand: rounded to bf16/fp16 when the backend under test computes in
    // that precision, so that it and its fp32 oracle see the same values (TESTING.md).
    bool operand = false;
    // A parameter: placed (at an offset that breaks 32-byte alignment) inside one buffer given
    // to register_params, written after registering, so a bf16/fp16 backend reads its working
    // copy, as the model's weights are read.
    bool param = false;
    // Backends must agree bit for bit (an output of single IEEE operations).
    bool bitwise = false;
    // An activation (an Act / ConstAct argument of backend.h): held in the backend's
    // activation dtype. Set by the table from the op's signature, never by a case.
    bool act = false;
    // Rewrites the seeded initial values (tables with fixed contents, garbage in padding).
    std::function<void(std::vector<float>&)> fill;
    // The same for ids (documents' positions: a fixed layout of examples; targets marked
    // ignored, trt::kIgnoredTarget).
    std::function<void(std::vector<int32_t>&)> fill_ids;
};

// Bound on ‖got − want‖ / ‖want‖ (accumulators: over the increment) by the precision the
// backend under test computes in. Against the double reference (CPU suite) fp32 applies.
struct Tolerance {
    double fp32 = 1e-5, tf32 = 1e-5, lowp = 1e-5;
    double at(trt::Precision p) const;
};
// Ops without a matrix product compute in fp32 under every precision.
extern const Tolerance kFp32Math;
// Matrix products (matmul, matmul+gelu, attention): tf32 2e-3, bf16/fp16 1e-2 forward and
// 2e-2 backward, both sides fed the same rounded operands.
extern const Tolerance kMatmulForward;
extern const Tolerance kMatmulBackward;

// A case's tensors on the host, in double for the reference (ids apart). Before the
// reference runs, each holds its initial values (NaN for Out tensors); the reference
// replaces every output with the values it expects (accumulators: pre-fill + increment).
struct HostTensors {
    std::vector<Vec> f;                     // [tensor] floats as doubles (empty for ids)
    std::vector<std::vector<int32_t>> ids;  // [tensor] ids (empty for floats)
};

// A tensor in a backend's memory, as a case's run() passes it: to an activation parameter
// (Act / ConstAct) it goes as a view in its dtype, to a float* parameter as the pointer (an
// fp32 tensor only: a bf16 activation passed as float* is a bug in the case, and throws).
struct TensorRef {
    void* p;
    trt::DType dtype;
    operator trt::Act() const { return {p, dtype}; }
    operator trt::ConstAct() const { return {p, dtype}; }
    operator float*() const;
};

// The tensors of a case in one backend's memory, in the order of OpCase::tensors.
struct DeviceTensors {
    std::vector<void*> p;
    std::vector<trt::DType> dtype;
    TensorRef f(size_t i) const { return {p[i], dtype[i]}; }
    // f(i), or a null pointer / view when the case leaves the optional tensor out.
    TensorRef f_if(bool present, size_t i) const {
        return {present ? p[i] : nullptr, dtype[i]};
    }
    const int32_t* ids(size_t i) const { return static_cast<const int32_t*>(p[i]); }
};

struct OpCase {
    std::string op;     // backend.h name, e.g. "layernorm_backward"
    std::string shape;  // e.g. "N=33 C=385"; with op, unique in the table
    std::vector<TensorSpec> tensors;
    trt::ModelDims dims;  // what the backend reserves before the case
    Tolerance tol;
    // A model-sized shape (GPT-2 small's widths) kept for the CUDA kernels' tiling and
    // multi-block paths: checked against another backend only, since its double reference
    // takes seconds (the CPU suite checks it across thread counts).
    bool large = false;
    // Issues the op on a backend. May allocate what the op needs besides its tensors (saved
    // attention state, scratch, StepScalars) and must free it before returning.
    std::function<void(trt::Backend&, const DeviceTensors&)> run;
    // Writes the expected outputs into h (see HostTensors).
    std::function<void(HostTensors& h)> reference;

    // "layernorm_backward_N33_C385": a GoogleTest-safe name.
    std::string name() const;
};

// The table, built once.
const std::vector<OpCase>& all_cases();
// The distinct ops of the table, in table order (the suites run one test per op).
std::vector<std::string> op_names();
// The backend_ops.def op a case issues (false: the name is not one of them).
bool op_kind(const std::string& op, trt::OpKind* out);

}  // namespace opcase
