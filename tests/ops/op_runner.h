// Runs an op case (op_cases.h) on a backend and measures it: against the double reference
// (the CPU suite) or against an oracle backend (the CUDA suite: the CPU backend). Each
// returns one Check per tensor the op writes; the suites turn them into expectations.
#pragma once
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "ops/op_cases.h"

namespace opcase {

struct Check {
    std::string tensor;  // the tensor's name, "(+=)" appended for accumulators
    double error = 0;    // ‖got − want‖ / ‖want‖ (accumulators: / ‖increment‖); inf on NaN
    double tol = 0;
    bool bitwise = false;  // the case requires bitwise equality (only against a backend)
    bool same_bits = false;
    bool passed() const { return error <= tol && (!bitwise || same_bits); }
    std::string describe() const;  // "out: 3.1e-07 (tolerance 1e-05)"
};

// The backend against the double reference fed the same inputs; tolerance tol.fp32. A
// backend with bf16 activations gets them (and its matmul weights) rounded to bf16, and each
// bf16 activation it writes is held to the rounding of its storage (4e-3) instead.
std::vector<Check> against_reference(const OpCase& c, trt::Backend& be);

// `be`, computing in precision p, against `oracle` (fp32 math, the same activation dtype)
// fed the same inputs (matmul operands rounded to p); tolerance tol.at(p).
std::vector<Check> against_backend(const OpCase& c, trt::Backend& be, trt::Precision p,
                                   trt::Backend& oracle);

// The case twice on `be` (computing in p) with the same inputs: every written tensor must
// come out with the same bits (no atomics, fixed-order reductions: backend.h's promise).
std::vector<Check> run_to_run(const OpCase& c, trt::Backend& be, trt::Precision p);

// x rounded to the nearest bf16 / fp16 value (ties to even), kept as float: what the CUDA
// backend's operand casts produce. Identity for fp32 / tf32 and for non-finite values.
float round_to(float x, trt::Precision p);
bool low_precision(trt::Precision p);

}  // namespace opcase
