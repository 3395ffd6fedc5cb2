// CudnnAttention for a module built without the cuDNN 9 headers (CMakeLists.txt: only this
// file is compiled then, instead of cudnn_*.cpp): create() says why and the backend keeps the
// matmul attention. The other members are unreachable, since no object is ever created.
#include "backend/cuda/cudnn_attention.h"

#include "core/error.h"

namespace trt::cuda {

struct CudnnAttention::ShapePlans {};

std::unique_ptr<CudnnAttention> CudnnAttention::create(int, Precision, bool, DeviceAlloc,
                                                       DeviceFree, std::string* why) {
    if (why)
        *why = "this libtrainrt-cuda was built without the cuDNN 9 headers (cudnn_graph.h); "
               "rebuild with them (TRAINRT_CUDNN_INCLUDE_DIR) to use accel.attention = \"cudnn\"";
    return nullptr;
}

CudnnAttention::~CudnnAttention() = default;

[[noreturn]] static void unreachable(const char* what) {
    fail(Status::Internal, what, ": cuDNN attention is not built into this module");
}

bool CudnnAttention::prepare(const CudaCtx&, int, int, int, int, std::string*, int, int) {
    unreachable("CudnnAttention::prepare");
}
bool CudnnAttention::prepared(int, int, int, int, int, int) const { return false; }
void CudnnAttention::set_call_budget(size_t, size_t) {}
std::array<int, 4> CudnnAttention::plan_shape(const CudaCtx&, int, int, int, int, int, int) const {
    unreachable("CudnnAttention::plan_shape");
}
bool CudnnAttention::prepare_call(const CudaCtx&, int, int, int, int, std::string*, int, int) {
    unreachable("CudnnAttention::prepare_call");
}
bool CudnnAttention::serves(const CudaCtx&, int, int, int, int, int, int) const { return false; }
size_t CudnnAttention::saved_floats(int, int, int, int) { return 0; }
size_t CudnnAttention::scratch_floats(int, int, int, int) { return 0; }
size_t CudnnAttention::call_saved_floats(int, int, int, int, int, int) const { return 0; }
size_t CudnnAttention::call_scratch_floats(int, int, int, int, int, int) const { return 0; }
size_t CudnnAttention::ctx_scratch_bytes(int, int, int, int, int, int) const {
    unreachable("CudnnAttention::ctx_scratch_bytes");
}
void CudnnAttention::forward(const CudaCtx&, Act, float*, ConstAct, int, int, int, int, int, int) {
    unreachable("CudnnAttention::forward");
}
void CudnnAttention::backward(const CudaCtx&, Act, float*, ConstAct, ConstAct, const float*, int,
                              int, int, int, int, int) {
    unreachable("CudnnAttention::backward");
}
std::string CudnnAttention::library() const { return "none"; }
bool CudnnAttention::nondeterministic_in_use() const { return false; }
std::vector<OpChoice> CudnnAttention::plan_choices() const { return {}; }

}  // namespace trt::cuda
