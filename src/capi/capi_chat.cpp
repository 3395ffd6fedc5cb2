// C API: chat templates (trainrt.h, "chat templates"). The handle holds an immutable parsed
// template, so these calls take no busy guard.
#include <string>

#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/json_argument.h"
#include "chat/chat_template.h"
#include "chat/end_of_turn.h"
#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"

struct trainrt_chat_template {
    trt::chat::FolderTemplate tmpl;
    std::string folder;
};


using namespace trt;

extern "C" {

TRAINRT_API trainrt_status trainrt_chat_template_load(trainrt_chat_template** out,
                                                      const char* folder, const char* name) {
    return capi::guarded("trainrt_chat_template_load", [&] {
        capi::require(out, "trainrt_chat_template_load", "out");
        capi::require(folder, "trainrt_chat_template_load", "folder");
        *out = new trainrt_chat_template{chat::load_folder_template(folder, name ? name : ""),
                                         folder};
        return TRAINRT_OK;
    });
}

TRAINRT_API void trainrt_chat_template_destroy(trainrt_chat_template* tmpl) { delete tmpl; }

}  // extern "C"

namespace {

// The conversation and variables of a render call, rendered (fn names the entry point).
chat::Rendered render_call(const char* fn, const trainrt_chat_template* tmpl,
                           const char* conversation_json, int32_t add_generation_prompt,
                           const char* vars_json) {
    capi::require(tmpl, fn, "tmpl");
    capi::require(conversation_json, fn, "conversation_json");
    const json::Value conv = capi::parse_json_argument(conversation_json, fn, "conversation_json");
    const json::Value* messages = &conv;
    const json::Value* tools = nullptr;
    if (conv.is_object()) {
        messages = conv.find("messages");
        if (!messages)
            fail(Status::InvalidArgument, fn, ": the conversation object has no \"messages\" "
                 "list");
        tools = conv.find("tools");
        if (tools && tools->kind == json::Value::Kind::Null) tools = nullptr;
    }
    if (!messages->is_array())
        fail(Status::InvalidArgument, fn, ": the messages must be a list, not ",
             messages->kind_name());
    json::Value vars;
    if (vars_json) {
        vars = capi::parse_json_argument(vars_json, fn, "vars_json");
        if (!vars.is_object())
            fail(Status::InvalidArgument, fn, ": vars_json must be a JSON object, not ",
                 vars.kind_name());
    }
    const json::Value ctx = chat::make_context(tmpl->tmpl, *messages, tools,
                                               add_generation_prompt != 0,
                                               vars_json ? &vars : nullptr);
    return tmpl->tmpl.tmpl.render(ctx);
}

}  // namespace

extern "C" {

TRAINRT_API trainrt_status trainrt_chat_template_render(char* buf, size_t cap, size_t* needed,
                                                        const trainrt_chat_template* tmpl,
                                                        const char* conversation_json,
                                                        int32_t add_generation_prompt,
                                                        const char* vars_json) {
    const char* fn = "trainrt_chat_template_render";
    return capi::guarded(fn, [&] {
        capi::copy_string(buf, cap, needed,
                          render_call(fn, tmpl, conversation_json, add_generation_prompt,
                                      vars_json).text,
                          fn);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_chat_template_generation_spans(
    size_t* ranges, size_t cap, size_t* needed, const trainrt_chat_template* tmpl,
    const char* conversation_json, int32_t add_generation_prompt, const char* vars_json) {
    const char* fn = "trainrt_chat_template_generation_spans";
    return capi::guarded(fn, [&] {
        if (ranges == nullptr && cap != 0)
            fail(Status::InvalidArgument, fn, ": ranges is NULL but cap is ", cap);
        const chat::Rendered r =
            render_call(fn, tmpl, conversation_json, add_generation_prompt, vars_json);
        const size_t n = 2 * r.generation_spans.size();
        for (size_t i = 0; i < r.generation_spans.size(); ++i) {
            if (2 * i < cap) ranges[2 * i] = r.generation_spans[i].first;
            if (2 * i + 1 < cap) ranges[2 * i + 1] = r.generation_spans[i].second;
        }
        if (needed != nullptr) *needed = n;
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_chat_template_stop_ids(int32_t* ids, size_t cap,
                                                          size_t* needed,
                                                          const trainrt_chat_template* tmpl,
                                                          const trainrt_tokenizer* tokenizer) {
    const char* fn = "trainrt_chat_template_stop_ids";
    return capi::guarded(fn, [&] {
        capi::require(tmpl, fn, "tmpl");
        capi::require(tokenizer, fn, "tokenizer");
        if (ids == nullptr && cap != 0)
            fail(Status::InvalidArgument, fn, ": ids is NULL but cap is ", cap);
        const std::vector<int32_t> stop = chat::end_of_turn_ids(tmpl->folder, tokenizer->tokenizer);
        for (size_t i = 0; i < stop.size() && i < cap; ++i) ids[i] = stop[i];
        if (needed != nullptr) *needed = stop.size();
        return TRAINRT_OK;
    });
}

}  // extern "C"
