// fuzz_chat_template: the chat template engine (src/chat/chat_template.h): a model folder's
// Jinja2 source is someone else's text.
//
// Input: the template source. It is parsed (a refusal must be a trt::Error: Format or
// Unsupported) and rendered over a fixed small conversation (a refusal must be a trt::Error:
// InvalidArgument) under small limits, so a hostile template stops quickly instead of timing
// the fuzzer out. A render that succeeds must give valid UTF-8 and generation spans inside the
// text, in order, not overlapping.
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "io/json_min.h"

namespace {

const trt::json::Value& context() {
    static const trt::json::Value ctx = trt::json::parse(R"({
        "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hé {{x}} 你好 😀\n"},
            {"role": "assistant", "content": "<think>\nhm\n</think>\n\nOK",
             "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
            {"role": "tool", "content": "42"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "documents": null
    })", "fuzz/context");
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    trt::chat::Template t;
    try {
        t = trt::chat::Template::parse(source, "fuzz.jinja");
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::Format && e.status() != trt::Status::Unsupported)
            fuzz::die(std::string("parse: unexpected status: ") + e.what());
        fuzz::refused("parse", e);
        return 0;
    }
    trt::chat::Limits limits;
    limits.max_output = 1u << 20;
    limits.max_items = 1u << 16;
    limits.max_iterations = 20000;
    limits.max_work = 16u << 20;
    limits.max_call_depth = 16;
    limits.max_depth = 256;
    trt::chat::Rendered r;
    try {
        r = t.render(context(), limits);
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::InvalidArgument)
            fuzz::die(std::string("render: unexpected status: ") + e.what());
        fuzz::refused("render", e);
        return 0;
    }
    if (!trt::json::valid_utf8(r.text)) fuzz::die("render: the text is not valid UTF-8");
    size_t end = 0;
    for (const auto& span : r.generation_spans) {
        if (span.first < end || span.second < span.first || span.second > r.text.size())
            fuzz::die("render: generation spans out of order or outside the text");
        end = span.second;
    }
    if (!r.generation_spans.empty() && !t.has_generation_blocks())
        fuzz::die("render: generation spans from a template without generation blocks");
    return 0;
}
