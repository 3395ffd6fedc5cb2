// cuDNN backend-API graph building and execution (cudnn_graph.h).
#include "backend/cuda/cudnn_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"

namespace trt::cuda::cudnn {
namespace {

// Every tensor is declared 16-byte aligned: the variant pack pointers are (ctx.scratch and the
// model's activation views are 64+ byte aligned, and every offset inside is a multiple of 16),
// which lets the engines use vectorized loads.
constexpr int64_t kTensorAlignment = 16;

std::string last_error(const CudnnApi& api) {
    char buf[1024] = {0};
    api.GetLastErrorString(buf, sizeof buf);
    return buf;
}

// "3, 5": engine ids for messages.
std::string engine_list(const std::vector<int64_t>& ids) {
    std::string out;
    for (int64_t id : ids) out += cat(out.empty() ? "" : ", ", id);
    return out;
}

}  // namespace

std::string status_text(const CudnnApi& api, cudnnStatus_t s, const char* what) {
    std::string text = cat("cuDNN error ", api.GetErrorString(s), " in ", what);
    const std::string detail = last_error(api);
    if (!detail.empty()) text += ": " + detail;
    return text;
}

void fail_status(const CudnnApi& api, cudnnStatus_t s, const char* what) {
    fail(s == CUDNN_STATUS_ALLOC_FAILED ? Status::OutOfMemory : Status::Device,
         status_text(api, s, what));
}

// ---------------------------------------------------------------- Descriptor

Descriptor::Descriptor(const CudnnApi& api, cudnnBackendDescriptorType_t type) : api_(&api) {
    check(api, api.BackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
}

Descriptor::~Descriptor() {
    if (d_) api_->BackendDestroyDescriptor(d_);  // status ignored: a destructor never throws
}

Descriptor& Descriptor::operator=(Descriptor&& o) noexcept {
    if (this != &o) {
        if (d_) api_->BackendDestroyDescriptor(d_);
        api_ = o.api_;
        d_ = o.d_;
        o.d_ = nullptr;
    }
    return *this;
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     int64_t count, const void* values) {
    const cudnnStatus_t s = api_->BackendSetAttribute(d_, name, type, count, values);
    if (s != CUDNN_STATUS_SUCCESS) {
        const std::string what = cat("cudnnBackendSetAttribute(attribute ", static_cast<int>(name),
                                     ")");
        fail_status(*api_, s, what.c_str());
    }
}

void Descriptor::finalize(const char* what) { check(*api_, api_->BackendFinalize(d_), what); }

cudnnStatus_t Descriptor::try_finalize() const { return api_->BackendFinalize(d_); }

// ---------------------------------------------------------------- OpGraph

OpGraph::~OpGraph() {
    // Plans before configs before the graph before its operations before their tensors.
    while (!owned_.empty()) owned_.pop_back();
}

cudnnBackendDescriptor_t OpGraph::keep(Descriptor d) {
    owned_.push_back(std::move(d));
    return owned_.back().get();
}

Tensor OpGraph::make_tensor(int64_t uid, const Dims& dims, const Dims& strides,
                            cudnnDataType_t type, bool is_virtual, bool by_value) {
    Descriptor d(*api_, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    d.set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
    d.set_i64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kTensorAlignment);
    const bool v = is_virtual;
    d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
    if (by_value) {
        const bool b = true;
        d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &b);
    }
    d.finalize("tensor descriptor");
    Tensor t;
    t.desc = keep(std::move(d));
    t.uid = uid;
    t.dims = dims;
    t.strides = strides;
    t.type = type;
    return t;
}

Tensor OpGraph::tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type) {
    TRT_CHECK(uid > 0 && uid < kFirstVirtualUid, "cuDNN tensor uid ", uid, " out of range");
    return make_tensor(uid, dims, strides, type, false, false);
}

Tensor OpGraph::scalar(int64_t uid, cudnnDataType_t type) {
    TRT_CHECK(uid > 0 && uid < kFirstVirtualUid, "cuDNN scalar uid ", uid, " out of range");
    return make_tensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, type, false, true);
}

Tensor OpGraph::virt(const Dims& dims, const Dims& strides, cudnnDataType_t type) {
    return make_tensor(next_virtual_uid_++, dims, strides, type, true, false);
}

void OpGraph::matmul(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor* m_override,
                     const Tensor* n_override, const Tensor* k_override) {
    Descriptor mm(*api_, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // fp32 accumulation
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    mm.finalize("matmul descriptor");
    const cudnnBackendDescriptor_t mmd = keep(std::move(mm));

    Descriptor op(*api_, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mmd);
    if (m_override) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m_override->desc);
    if (n_override) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n_override->desc);
    if (k_override) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k_override->desc);
    op.finalize("matmul operation");
    ops_.push_back(keep(std::move(op)));
}

void OpGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Tensor& x,
                        const Tensor* b, const Tensor* t, const Tensor& y, int64_t axis) {
    Descriptor pw(*api_, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    if (axis >= 0) pw.set_i64(CUDNN_ATTR_POINTWISE_AXIS, axis);
    pw.finalize("pointwise descriptor");
    const cudnnBackendDescriptor_t pwd = keep(std::move(pw));

    Descriptor op(*api_, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pwd);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x.desc);
    if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b->desc);
    if (t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t->desc);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y.desc);
    op.finalize("pointwise operation");
    ops_.push_back(keep(std::move(op)));
}

void OpGraph::reduction(cudnnReduceTensorOp_t op_kind, const Tensor& x, const Tensor& y) {
    Descriptor red(*api_, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    red.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op_kind);
    red.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    red.finalize("reduction descriptor");
    const cudnnBackendDescriptor_t redd = keep(std::move(red));

    Descriptor op(*api_, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, redd);
    op.finalize("reduction operation");
    ops_.push_back(keep(std::move(op)));
}

void OpGraph::reshape(const Tensor& x, const Tensor& y) {
    Descriptor op(*api_, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x.desc);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y.desc);
    op.finalize("reshape operation");
    ops_.push_back(keep(std::move(op)));
}

bool OpGraph::finalize(std::string* why) {
    if (!graph_tried_) {
        graph_tried_ = true;
        Descriptor graph(*api_, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
        if (handle_) graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
        graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  static_cast<int64_t>(ops_.size()), ops_.data());
        if (const cudnnStatus_t s = graph.try_finalize(); s == CUDNN_STATUS_SUCCESS)
            graph_ = keep(std::move(graph));
        else
            graph_why_ = "the operation graph was rejected: " +
                         status_text(*api_, s, "graph finalize");
    }
    if (!graph_) *why = graph_why_;
    return graph_ != nullptr;
}

const std::vector<OpGraph::EngineChoice>& OpGraph::engine_choices(std::string* why) {
    if (choices_made_) {
        if (choices_.empty()) *why = choices_why_;
        return choices_;
    }
    choices_made_ = true;
    if (!finalize(why)) {
        choices_why_ = *why;
        return choices_;
    }
    const cudnnBackendDescriptor_t g = graph_;

    std::string notes;  // what each heuristics mode said, for the "none" message
    const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    for (cudnnBackendHeurMode_t mode : modes) {
        const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "heuristics A" : "fallback list";
        Descriptor heur(*api_, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
        heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
        if (device_props_) heur.set_desc(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, device_props_);
        if (const cudnnStatus_t s = heur.try_finalize(); s != CUDNN_STATUS_SUCCESS) {
            notes += cat(notes.empty() ? "" : "; ", mode_name, ": ",
                         status_text(*api_, s, "heuristics finalize"));
            continue;
        }
        int64_t count = 0;
        check(*api_,
              api_->BackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "engine heuristics result count");
        if (count <= 0) {
            notes += cat(notes.empty() ? "" : "; ", mode_name, ": no engine");
            continue;
        }
        std::vector<cudnnBackendDescriptor_t> raw;
        for (int64_t i = 0; i < count; ++i)
            raw.push_back(keep(Descriptor(*api_, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)));
        int64_t got = 0;
        check(*api_,
              api_->BackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
              "engine heuristics results");
        for (int64_t i = 0; i < std::min(got, count); ++i) {
            // The engine behind the config: its global index and numerical notes.
            EngineChoice c;
            c.config = raw[i];
            Descriptor engine(*api_, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
            cudnnBackendDescriptor_t engine_raw = engine.get();
            int64_t n = 0;
            if (api_->BackendGetAttribute(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                          &engine_raw) == CUDNN_STATUS_SUCCESS) {
                api_->BackendGetAttribute(engine_raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                          CUDNN_TYPE_INT64, 1, &n, &c.engine);
                cudnnBackendNumericalNote_t found[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
                int64_t num = 0;
                if (api_->BackendGetAttribute(engine_raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                              CUDNN_TYPE_NUMERICAL_NOTE,
                                              CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &num,
                                              found) != CUDNN_STATUS_SUCCESS)
                    c.nondeterministic = true;  // unknown: promise nothing
                num = std::min<int64_t>(num, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
                for (int64_t k = 0; k < num; ++k)
                    c.nondeterministic |= found[k] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
            } else {
                c.nondeterministic = true;
            }
            keep(std::move(engine));
            choices_.push_back(c);
        }
        keep(std::move(heur));
    }
    if (choices_.empty()) {
        choices_why_ = cat("no cuDNN engine supports the graph (",
                           notes.empty() ? "the heuristics offered none" : notes, ")");
        *why = choices_why_;
    }
    return choices_;
}

bool OpGraph::plan(bool require_deterministic, std::string* why, PlanReport* report) {
    TRT_CHECK(!plan_, "cuDNN operation graph planned twice");
    PlanReport local;
    PlanReport& r = report ? *report : local;
    r = PlanReport{};
    const std::vector<EngineChoice>& choices = engine_choices(why);
    if (choices.empty()) return false;  // *why: no engine supports the graph at all
    for (const EngineChoice& c : choices) {
        r.offered.push_back(c.engine);
        if (c.nondeterministic) r.nondeterministic.push_back(c.engine);
    }
    std::string rejected;  // why each candidate was passed over, for the failure message
    auto note = [&rejected](const std::string& s) {
        if (rejected.size() < 1500) rejected += (rejected.empty() ? "" : "; ") + s;
    };
    for (const EngineChoice& c : choices) {
        if (require_deterministic && c.nondeterministic) {
            r.skipped.push_back(c.engine);
            continue;
        }
        Descriptor plan(*api_, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        if (handle_) plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
        if (device_props_) plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, device_props_);
        plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, c.config);
        if (const cudnnStatus_t s = plan.try_finalize(); s != CUDNN_STATUS_SUCCESS) {
            r.failed.push_back(c.engine);
            note(cat("engine ", c.engine, ": ", status_text(*api_, s, "plan finalize")));
            continue;
        }
        int64_t n = 0, ws = 0;
        check(*api_,
              api_->BackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, &n, &ws),
              "plan workspace size");
        plan_ = keep(std::move(plan));  // destroyed first: kept last
        workspace_ = std::max<int64_t>(ws, 0);
        engine_index_ = c.engine;
        plan_nondeterministic_ = c.nondeterministic;
        r.engine = c.engine;
        r.engine_nondeterministic = c.nondeterministic;
        return true;
    }
    const std::string allow = "set accel.deterministic = false to allow them";
    if (!r.skipped.empty() && r.failed.empty()) {
        *why = cat("the GPU offers only nondeterministic cuDNN engines for this shape (engines ",
                   engine_list(r.skipped), "); ", allow);
    } else if (!r.skipped.empty()) {
        *why = cat("no deterministic cuDNN engine could be planned (", rejected,
                   ") and the nondeterministic engines ", engine_list(r.skipped),
                   " were skipped; ", allow);
    } else {
        *why = cat("no cuDNN engine could be planned: ", rejected);
    }
    return false;
}

void OpGraph::execute(const int64_t* uids, void* const* ptrs, int64_t n, void* workspace) const {
    TRT_CHECK(plan_, "cuDNN graph executed before a plan was chosen");
    Descriptor pack(*api_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize("variant pack");
    check(*api_, api_->BackendExecute(handle_, plan_, pack.get()), "cudnnBackendExecute");
}

}  // namespace trt::cuda::cudnn
