// The defaults of the ops backend_ops.def enters as TRT_OP_COMPOSED: each built from other ops
// of the interface, so it runs, with their numerics, on every backend that has those; a backend
// with a faster kernel for it (a fusion) overrides it. The op-case table checks the op the same
// way whichever runs. Inline, like the rest of Backend: the CUDA module implements Backend and
// must not link the core library. Included at the end of backend.h.
//
// Why an op starts composed: a fusion the model needs everywhere at once, whose kernel each
// backend writes when it pays (and, on a GPU, when a loan has verified it: docs/GPU_CHECK.md);
// until then the backend runs the composition it already runs today.
#pragma once
#include "backend/backend.h"
