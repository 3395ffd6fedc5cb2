// What each op of backend_ops.def and step_ops.def costs, from its arguments alone: the
// arithmetic of the products (FLOPs) and the least memory traffic of every op (bytes). The
// profiler (op_profiler.h) divides them by the measured times into GFLOP/s and GB/s; a
// roofline reads the same numbers (issue 43).
//
// One function per op, with the op's own parameters (declared from the .def lists, so an op
// without a cost function does not link). The counting rules:
//   flops  the products only — matmuls (2·N·K·M each) and attention (attention_flops); the
//          row ops' few FLOPs per element are not counted (they are bound by memory);
//   bytes  each tensor the op reads counted once, each it writes once, and one it
//          accumulates into (+=) or changes in place twice; activations at their dtype
//          (Act::dtype), weights, gradients and optimizer state as the fp32 the op is
//          handed; scratch a backend may use, and re-reads a kernel may make, are not
//          counted (the figure is what a perfect kernel would move);
//   label  the matmuls' shape ("matmul fwd 768x2304 (OutIn)") and attention's variant
//          ("attention bwd (dropout)"), so rows of the same op with different costs stay
//          apart; "" = the op's name.
#pragma once
#include <string>

#include "backend/backend.h"

namespace trt {

struct OpCost {
    std::string label;  // "" = op_name()
    double flops = 0;
    double bytes = 0;
};

namespace op_cost {
#define TRT_OP(name, params, args) OpCost name params;
#include "backend/backend_ops.def"
#include "backend/step_ops.def"
#undef TRT_OP
}  // namespace op_cost

// FLOPs of causal attention as counted here: each query's keys (the lower triangle with its
// diagonal, cut by a sliding window; documents' shorter spans are not counted), 2 products
// forward (Q·Kᵀ, P·V) and 4 backward, 2·hs FLOPs per (query, key) pair and product, per head.
double attention_flops(const AttentionShape& a, bool backward);

}  // namespace trt
