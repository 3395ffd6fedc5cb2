// fuzz_chat_jsonl: one line of chat JSONL through `prepare --chat`'s examples
// (data/chat_examples.h): someone else's conversations, rendered and masked.
//
// Input: a selector byte, then the line. The selector picks one of three fixed small templates
// (prefix rendering, ChatML-like; one that renders an earlier assistant turn otherwise, for
// the per-turn form; one with {% generation %} blocks) and the loss mask (default,
// assistant, completion, all). The line is parsed (a refusal must be a trt::Error: Format),
// then chat_texts and encode_chat_text with the synthetic byte-level tokenizer
// (tests/tokenizer/synthetic_tokenizer.h) refuse with InvalidArgument or give examples whose
// target spans lie inside the text, in order, and whose mask has one value per id: the first
// token begins the example (2), the others are 0 or 1, all 1 under the all mask.
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "core/error.h"
#include "data/chat_examples.h"
#include "data/example_set.h"
#include "fuzz_util.h"
#include "io/json_min.h"
#include "tokenizer/synthetic_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

const char* const kTemplates[] = {
    // Prefix rendering.
    "{% for m in messages %}{{ '<|' + m.role + '|>' }}{{ m.content if m.content is string else "
    "m.content | tojson }}{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}"
    "{{ '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}",
    // An assistant turn renders otherwise once it is not the last message (as Qwen3 drops the
    // reasoning of earlier turns): the per-turn form.
    "{% for m in messages %}{% if m.role == 'assistant' %}{{ '<|assistant|>' + (m.content | "
    "string if loop.last else 'ok') + '<|end|>\\n' }}{% else %}{{ '<|' + m.role | string + '|>' "
    "+ m.content | string + '<|end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}",
    // {% generation %} blocks.
    "{% for m in messages %}{% if m.role == 'assistant' %}{{ '<|assistant|>' }}{% generation %}"
    "{{ m.content | string | trim }}<|end|>{% endgeneration %}{{ '\\n' }}{% else %}"
    "{{ '<|' + m.role | string + '|>' + m.content | string + '<|end|>\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}",
};

const trt::chat::FolderTemplate& folder_template(size_t which) {
    static const auto make = [](const char* source) {
        trt::chat::FolderTemplate t;
        t.tmpl = trt::chat::Template::parse(source, "fuzz.jinja");
        t.source_text = source;
        t.origin = "fuzz.jinja";
        t.special_tokens = trt::json::parse(R"({"eos_token": "<|end|>", "bos_token": "<s>"})", "fuzz");
        return t;
    };
    static const trt::chat::FolderTemplate t[] = {make(kTemplates[0]), make(kTemplates[1]),
                                                  make(kTemplates[2])};
    return t[which];
}

const trt::tok::Tokenizer& tokenizer() {
    static const trt::tok::Tokenizer t =
        trt::tok::Tokenizer::from_json(synthetic::tokenizer_json(), "synthetic");
    return t;
}

void check_example(const trt::ChatText& c, trt::LossMask mask_mode) {
    size_t end = 0;
    for (const auto& s : c.targets) {
        if (s.first < end || s.second < s.first || s.second > c.text.size())
            fuzz::die("chat_texts: target spans out of order or outside the text");
        end = s.second;
    }
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    try {
        trt::encode_chat_text(tokenizer(), c, "fuzz:1", ids, mask);
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::InvalidArgument)
            fuzz::die(std::string("encode_chat_text: unexpected status: ") + e.what());
        fuzz::refused("encode_chat_text", e);
        return;
    }
    if (ids.size() != mask.size()) fuzz::die("encode_chat_text: one mask value per id broken");
    for (size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] >= tokenizer().id_limit()) fuzz::die("encode_chat_text: an id beyond id_limit()");
        const uint8_t want_first = static_cast<uint8_t>(trt::kMaskBegins);
        if (k == 0 ? mask[k] != want_first : mask[k] > trt::kMaskTarget)
            fuzz::die("encode_chat_text: a mask value out of place");
        if (k > 0 && mask_mode == trt::LossMask::All && mask[k] != trt::kMaskTarget)
            fuzz::die("encode_chat_text: the all mask left a token out");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const unsigned selector = data[0];
    const std::string_view line(reinterpret_cast<const char*>(data + 1), size - 1);
    trt::json::Value v;
    try {
        v = trt::json::parse(line, "fuzz:1");
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::Format)
            fuzz::die(std::string("json: unexpected status: ") + e.what());
        fuzz::refused("json", e);
        return 0;
    }
    static const trt::LossMask kMasks[] = {trt::LossMask::Default, trt::LossMask::Assistant,
                                           trt::LossMask::Completion, trt::LossMask::All};
    trt::ChatOptions options;
    options.mask = kMasks[(selector / 3) % 4];
    bool per_turn = false;
    std::vector<trt::ChatText> texts;
    try {
        texts = trt::chat_texts(folder_template(selector % 3), v, options, "fuzz:1", &per_turn);
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::InvalidArgument)
            fuzz::die(std::string("chat_texts: unexpected status: ") + e.what());
        fuzz::refused("chat_texts", e);
        return 0;
    }
    if (texts.empty()) fuzz::die("chat_texts: no example and no refusal");
    if (per_turn && options.mask == trt::LossMask::All)
        fuzz::die("chat_texts: the per-turn form under the all mask");
    for (const trt::ChatText& c : texts) check_example(c, options.mask);
    return 0;
}
