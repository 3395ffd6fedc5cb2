// A small, owning layer over cuDNN's backend (graph) API, enough to express an operation graph
// of 4-D tensors (matmul, pointwise, reduction, reshape), pick an execution plan for it and run
// it. No cudnn_frontend: every descriptor is built here through the CudnnApi table
// (cudnn_loader.h), so nothing links against cuDNN.
//
// Errors: calls that must succeed throw trt::Error(Device) naming the call, cuDNN's status and
// its last error message; plan selection reports "no engine" as a return value with a reason,
// since that is an expected outcome (the caller falls back to another path).
#pragma once
#include <cudnn_graph.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cudnn_loader.h"

namespace trt::cuda::cudnn {

// "cuDNN error CUDNN_STATUS_... in <what>: <cuDNN's last error message>".
std::string status_text(const CudnnApi& api, cudnnStatus_t s, const char* what);
[[noreturn]] void fail_status(const CudnnApi& api, cudnnStatus_t s, const char* what);
inline void check(const CudnnApi& api, cudnnStatus_t s, const char* what) {
    if (s != CUDNN_STATUS_SUCCESS) fail_status(api, s, what);
}

// One backend descriptor, destroyed with its owner. Move-only.
class Descriptor {
public:
    Descriptor(const CudnnApi& api, cudnnBackendDescriptorType_t type);
    ~Descriptor();
    Descriptor(Descriptor&& o) noexcept : api_(o.api_), d_(o.d_) { o.d_ = nullptr; }
    Descriptor& operator=(Descriptor&& o) noexcept;
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;

    cudnnBackendDescriptor_t get() const { return d_; }
    void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
             const void* values);
    void set_desc(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value) {
        set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
    }
    void set_i64(cudnnBackendAttributeName_t name, int64_t value) {
        set(name, CUDNN_TYPE_INT64, 1, &value);
    }
    void finalize(const char* what);
    cudnnStatus_t try_finalize() const;

private:
    const CudnnApi* api_;
    cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::array<int64_t, 4>;

// A tensor as the graph sees it (the descriptor is owned by the OpGraph that made it).
struct Tensor {
    cudnnBackendDescriptor_t desc = nullptr;
    int64_t uid = 0;
    Dims dims{}, strides{};
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
};

// An operation graph, then the execution plan chosen for it. Owns every descriptor it made
// and keeps them all alive as long as the plan (cuDNN may refer back into them); destroys
// them in reverse order of creation.
class OpGraph {
public:
    OpGraph(const CudnnApi& api, cudnnHandle_t handle) : api_(&api), handle_(handle) {}
    ~OpGraph();
    OpGraph(const OpGraph&) = delete;
    OpGraph& operator=(const OpGraph&) = delete;

    // ---- tensors. uid < kFirstVirtualUid for tensors bound in the variant pack.
    static constexpr int64_t kFirstVirtualUid = 1000;
    // In device memory: the variant pack binds a device pointer to uid.
    Tensor tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type);
    // A [1,1,1,1] scalar passed by value: the variant pack binds a host pointer to uid.
    Tensor scalar(int64_t uid, cudnnDataType_t type);
    // Never materialised (lives inside a fused kernel).
    Tensor virt(const Dims& dims, const Dims& strides, cudnnDataType_t type);
    Tensor virt_like(const Tensor& shape_of, cudnnDataType_t type) {
        return virt(shape_of.dims, shape_of.strides, type);
    }

    // ---- operations (each appends to the graph; inputs must already exist)
    // c = a · b over the last two dims (batched over the first two); optional per-batch
    // M / N / K overrides ([B,1,1,1] int32 tensors, for padded sequences).
    void matmul(const Tensor& a, const Tensor& b, const Tensor& c,
                const Tensor* m_override = nullptr, const Tensor* n_override = nullptr,
                const Tensor* k_override = nullptr);
    // y = mode(x [, b [, t]]) with broadcasting; axis for GEN_INDEX (-1: none).
    void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Tensor& x,
                   const Tensor* b, const Tensor* t, const Tensor& y, int64_t axis = -1);
    // y = op over the dims where y has extent 1.
    void reduction(cudnnReduceTensorOp_t op, const Tensor& x, const Tensor& y);
    // y = x seen through y's dims and strides (a transpose when the strides swap).
    void reshape(const Tensor& x, const Tensor& y);

    // Finalizes the operation graph (cuDNN checks its structure: shapes, broadcasts, types);
    // idempotent. Needs no device. false + *why if cuDNN rejects it.
    bool finalize(std::string* why);

    // Plan for a device described by a CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR instead of the
    // handle's (cuDNN >= 9.8 "deviceless" planning; the CPU test uses it). Before any
    // engine_choices()/plan().
    void use_device_properties(cudnnBackendDescriptor_t props) { device_props_ = props; }

    // The engine configurations cuDNN's heuristics offer for the graph (mode A, then the
    // fallback list; every one has passed the engines' support checks), with the facts plan()
    // selects on. Finalizes the graph on the first call; empty + *why when there are none.
    struct EngineChoice {
        cudnnBackendDescriptor_t config = nullptr;
        int64_t engine = -1;            // global engine index, for logs
        bool nondeterministic = false;  // CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
    };
    const std::vector<EngineChoice>& engine_choices(std::string* why);

    // What plan() saw, so a caller can tell "no engine at all" from "only nondeterministic
    // engines were offered" (accel.deterministic = false would allow those).
    struct PlanReport {
        std::vector<int64_t> offered;           // every engine choice, in heuristic order
        std::vector<int64_t> nondeterministic;  // the offered ones marked NONDETERMINISTIC
        std::vector<int64_t> skipped;           // passed over for that (require_deterministic)
        std::vector<int64_t> failed;            // whose plan did not finalize
        int64_t engine = -1;                    // the one planned, -1 if none
        bool engine_nondeterministic = false;
        // No plan, and nondeterministic engines were skipped: allowing them might give one.
        bool blocked_by_determinism() const { return engine < 0 && !skipped.empty(); }
    };

    // Takes the first engine choice whose plan finalizes and, with require_deterministic,
    // whose engine is not marked nondeterministic. false + *why when there is none; *why then
    // says whether nondeterministic engines were skipped (naming them and the setting that
    // allows them) or no engine exists at all. *report (optional) gets the details either way.
    bool plan(bool require_deterministic, std::string* why, PlanReport* report = nullptr);
    bool plan_nondeterministic() const { return plan_nondeterministic_; }
    bool planned() const { return plan_ != nullptr; }
    int64_t workspace_bytes() const { return workspace_; }
    int64_t engine_index() const { return engine_index_; }

    // Runs the plan on the handle's current stream. uids/ptrs: every non-virtual tensor of the
    // graph (device pointers; host pointers for scalars). Throws Error(Device).
    void execute(const int64_t* uids, void* const* ptrs, int64_t n, void* workspace) const;

private:
    cudnnBackendDescriptor_t keep(Descriptor d);
    Tensor make_tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type,
                       bool is_virtual, bool by_value);

    const CudnnApi* api_;
    cudnnHandle_t handle_;
    std::vector<Descriptor> owned_;
    std::vector<cudnnBackendDescriptor_t> ops_;
    int64_t next_virtual_uid_ = kFirstVirtualUid;
    cudnnBackendDescriptor_t graph_ = nullptr;  // the finalized operation graph
    std::string graph_why_;
    bool graph_tried_ = false;
    cudnnBackendDescriptor_t device_props_ = nullptr;
    bool choices_made_ = false;
    std::vector<EngineChoice> choices_;
    std::string choices_why_;
    cudnnBackendDescriptor_t plan_ = nullptr;
    int64_t workspace_ = 0;
    int64_t engine_index_ = -1;
    bool plan_nondeterministic_ = false;
};

}  // namespace trt::cuda::cudnn
