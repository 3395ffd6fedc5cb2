// C API: the model's tensors as fp32 (trainrt_session_param_* / *_params) and the user's
// metadata (trainrt_session_*_metadata) — thin wrappers over runtime/session_params.cpp.
#include <cstring>
#include <iterator>

#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/versioned.h"

using namespace trt;
using capi::guarded;
using capi::fill_versioned;
using capi::require;

namespace {

int32_t c_role(ParamRole role) {
    switch (role) {
        case ParamRole::TokenEmbedding: return TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING;
        case ParamRole::PositionEmbedding: return TRAINRT_PARAM_ROLE_POSITION_EMBEDDING;
        case ParamRole::Norm: return TRAINRT_PARAM_ROLE_NORM;
        case ParamRole::NormBias: return TRAINRT_PARAM_ROLE_NORM_BIAS;
        case ParamRole::Linear: return TRAINRT_PARAM_ROLE_LINEAR;
        case ParamRole::LinearBias: return TRAINRT_PARAM_ROLE_LINEAR_BIAS;
        case ParamRole::Head: return TRAINRT_PARAM_ROLE_HEAD;
        case ParamRole::LoraA: return TRAINRT_PARAM_ROLE_LORA_A;
        case ParamRole::LoraB: return TRAINRT_PARAM_ROLE_LORA_B;
    }
    fail(Status::Internal, "trainrt_session_param_info: a tensor role without a C constant");
}

}  // namespace

extern "C" {

TRAINRT_API void trainrt_param_info_init(trainrt_param_info* info) {
    if (info == nullptr) return;
    *info = trainrt_param_info TRAINRT_PARAM_INFO_INIT;
}

TRAINRT_API trainrt_status trainrt_session_param_count(int64_t* out_tensors, int64_t* out_numel,
                                                       trainrt_session* session) {
    return guarded("trainrt_session_param_count", [&] {
        require(session, "trainrt_session_param_count", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_param_count");
        const ParamTable& table = session->session->param_table();
        int64_t numel = 0;
        for (const ParamTensor& t : table.tensors()) numel += static_cast<int64_t>(t.numel);
        if (out_tensors) *out_tensors = static_cast<int64_t>(table.tensors().size());
        if (out_numel) *out_numel = numel;
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_param_info(trainrt_param_info* out, char* name_buf,
                                                      size_t cap, size_t* needed,
                                                      trainrt_session* session, int64_t index) {
    return guarded("trainrt_session_param_info", [&] {
        require(out, "trainrt_session_param_info", "out");
        require(session, "trainrt_session_param_info", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_param_info");
        const std::vector<ParamTensor>& tensors = session->session->param_table().tensors();
        if (index < 0 || index >= static_cast<int64_t>(tensors.size()))
            fail(Status::InvalidArgument, "trainrt_session_param_info: index ", index,
                 " is out of range; the model has ", tensors.size(),
                 " tensors (trainrt_session_param_count)");
        int64_t offset = 0;
        for (int64_t i = 0; i < index; ++i) offset += static_cast<int64_t>(tensors[i].numel);
        const ParamTensor& t = tensors[static_cast<size_t>(index)];
        if (t.shape.size() > 4)
            fail(Status::Internal, "trainrt_session_param_info: tensor '", t.name, "' has ",
                 t.shape.size(), " dimensions");
        trainrt_param_info full{};
        full.struct_size = sizeof full;
        full.version = TRAINRT_PARAM_INFO_VERSION;
        full.role = c_role(t.role);
        full.ndim = static_cast<int32_t>(t.shape.size());
        for (size_t d = 0; d < t.shape.size(); ++d) full.shape[d] = t.shape[d];
        full.numel = static_cast<int64_t>(t.numel);
        full.offset = offset;
        full.layer = t.layer;
        full.trainable = t.trainable ? 1 : 0;
        // The struct is checked before the name is copied: a bad struct changes nothing.
        if (out->struct_size < 2 * sizeof(uint32_t))
            fail(Status::InvalidArgument, "trainrt_session_param_info: out->struct_size = ",
                 out->struct_size, " is too small; initialise it with trainrt_param_info_init()");
        capi::copy_string(name_buf, cap, needed, t.name, "trainrt_session_param_info");
        fill_versioned(out, full, "trainrt_session_param_info");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_read_params(float* out, size_t count,
                                                       trainrt_session* session,
                                                       const char* name) {
    return guarded("trainrt_session_read_params", [&] {
        require(out, "trainrt_session_read_params", "out");
        require(session, "trainrt_session_read_params", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_read_params");
        session->session->read_params(name, out, count);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_write_params(trainrt_session* session, const char* name,
                                                        const float* values, size_t count) {
    return guarded("trainrt_session_write_params", [&] {
        require(session, "trainrt_session_write_params", "session");
        require(values, "trainrt_session_write_params", "values");
        capi::BusyGuard busy(session->busy, "trainrt_session_write_params");
        session->session->write_params(name, values, count);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_set_metadata(trainrt_session* session,
                                                        const char* key, const char* value) {
    return guarded("trainrt_session_set_metadata", [&] {
        require(session, "trainrt_session_set_metadata", "session");
        require(key, "trainrt_session_set_metadata", "key");
        capi::BusyGuard busy(session->busy, "trainrt_session_set_metadata");
        if (value) {
            const std::string v(value);
            session->session->set_metadata(key, &v);
        } else {
            session->session->set_metadata(key, nullptr);
        }
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_get_metadata(char* buf, size_t cap, size_t* needed,
                                                        int32_t* found, trainrt_session* session,
                                                        const char* key) {
    return guarded("trainrt_session_get_metadata", [&] {
        require(session, "trainrt_session_get_metadata", "session");
        require(key, "trainrt_session_get_metadata", "key");
        capi::BusyGuard busy(session->busy, "trainrt_session_get_metadata");
        const auto& md = session->session->metadata();
        const auto it = md.find(key);
        capi::copy_string(buf, cap, needed, it == md.end() ? std::string() : it->second,
                          "trainrt_session_get_metadata");
        if (found) *found = it == md.end() ? 0 : 1;
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_metadata_count(int64_t* out, trainrt_session* session) {
    return guarded("trainrt_session_metadata_count", [&] {
        require(out, "trainrt_session_metadata_count", "out");
        require(session, "trainrt_session_metadata_count", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_metadata_count");
        *out = static_cast<int64_t>(session->session->metadata().size());
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_metadata_key(char* buf, size_t cap, size_t* needed,
                                                        trainrt_session* session, int64_t index) {
    return guarded("trainrt_session_metadata_key", [&] {
        require(session, "trainrt_session_metadata_key", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_metadata_key");
        const auto& md = session->session->metadata();
        if (index < 0 || index >= static_cast<int64_t>(md.size()))
            fail(Status::InvalidArgument, "trainrt_session_metadata_key: index ", index,
                 " is out of range; the session has ", md.size(),
                 " metadata keys (trainrt_session_metadata_count)");
        auto it = md.begin();
        std::advance(it, index);
        capi::copy_string(buf, cap, needed, it->first, "trainrt_session_metadata_key");
        return TRAINRT_OK;
    });
}

}  // extern "C"
