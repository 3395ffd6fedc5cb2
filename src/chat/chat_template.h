// chat_template: a model folder's chat template (Jinja2 source), parsed once and rendered as
// Hugging Face transformers renders it in apply_chat_template: byte for byte the same text,
// plus the byte ranges written inside {% generation %} blocks (return_assistant_tokens_mask).
// docs/CHAT_TEMPLATES.md lists what the engine supports and what it refuses.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json_min.h"

namespace trt::chat {

struct Program;

// What one render may use; past a limit the render stops with Error(InvalidArgument) naming it.
// The defaults are far above what real chat templates need and far below what would hang or
// exhaust a training process.
struct Limits {
    size_t max_output = 64u << 20;         // bytes of any one string or the output
    size_t max_items = 1u << 20;           // elements of one list (range(), list * n, ...)
    uint64_t max_iterations = 1u << 20;    // for-loop iterations in one render, all loops
    int max_call_depth = 32;               // nested macro calls
    int max_depth = 512;                   // nested statements + expressions + calls (the stack)
    uint64_t max_work = 1ull << 30;        // bytes of strings and lists made in one render
};

struct Rendered {
    std::string text;
    // byte ranges [begin, end) of text written inside each {% generation %} ... {% endgeneration %}
    std::vector<std::pair<size_t, size_t>> generation_spans;
};

class Template {  // parsed once, rendered many times; render is const and thread-safe
public:
    // Error(Format) on a syntax error, Error(Unsupported) on a construct this engine refuses;
    // both "<origin>:<line>: ...".
    static Template parse(std::string_view source, const std::string& origin);
    // context: the JSON object of variables. Error(InvalidArgument) "<origin>:<line>: ..." on a
    // runtime error (raise_exception, an undefined value used, a type error, a limit).
    Rendered render(const json::Value& context) const;
    Rendered render(const json::Value& context, const Limits& limits) const;
    bool has_generation_blocks() const;
    const std::string& origin() const { return origin_; }

private:
    std::shared_ptr<const Program> program_;
    std::string origin_;
};

// The model folder's template: <folder>/chat_template.jinja if present, else tokenizer_config.json's
// "chat_template" (a string, or a list of {"name","template"}: `name` picks one, default "default").
// Errors name the file. Also returns the special tokens transformers passes to the template.
struct FolderTemplate {
    Template tmpl;
    std::string source_text;
    std::string origin;
    // object: bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token (the
    // ones set, as strings; AddedToken objects -> their "content"), additional_special_tokens
    json::Value special_tokens;
};
FolderTemplate load_folder_template(const std::string& folder, const std::string& name = "");

// The special tokens of a tokenizer_config.json document, as FolderTemplate::special_tokens
// holds them (an object of the ones set, as strings).
json::Value special_tokens_of(const json::Value& tokenizer_config);

// context = special tokens + {"messages": ..., "tools": ... (only when given),
// "add_generation_prompt": bool} + extra variables (an object; they override the others).
json::Value make_context(const FolderTemplate& t, const json::Value& messages, const json::Value* tools,
                         bool add_generation_prompt, const json::Value* extra_vars);

}  // namespace trt::chat
