// Chat examples: rendering, target spans and the token mask (data/chat_examples.h).
#include "data/chat_examples.h"

#include <algorithm>

#include "core/error.h"
#include "data/example_set.h"

namespace trt {

namespace {

using json::Value;

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

Value array_of(std::vector<Value>::const_iterator a, std::vector<Value>::const_iterator b) {
    Value v;
    v.kind = Value::Kind::Array;
    v.arr.assign(a, b);
    return v;
}

std::string role_of(const Value& m, const std::string& where, size_t i) {
    if (!m.is_object())
        fail(Status::InvalidArgument, where, ": messages[", i, "] must be an object, not ",
             m.kind_name());
    const Value* r = m.find("role");
    if (!r || !r->is_string())
        fail(Status::InvalidArgument, where, ": messages[", i, "] needs a string \"role\" "
             "(system, user, assistant or tool)");
    return r->s;
}

// Whitespace after a turn's last token (the "\n" Qwen and Gemma write after their end-of-turn
// token) is not something the model must learn to emit: generation stops at the token.
size_t trim_end(const std::string& text, size_t begin, size_t end) {
    while (end > begin && (text[end - 1] == '\n' || text[end - 1] == ' ' ||
                           text[end - 1] == '\t' || text[end - 1] == '\r'))
        --end;
    return end;
}

// A template that writes the generation prompt whatever add_generation_prompt says (a base
// model's, such as Llama 3's) ends every rendering with the next assistant header, so prefix
// rendering would make that header part of each turn's targets.
[[noreturn]] void refuse_base_template(const chat::FolderTemplate& tmpl, const std::string& where) {
    fail(Status::InvalidArgument, where, ": the chat template (", tmpl.origin, ") renders the "
         "same text with and without add_generation_prompt (it always opens a new assistant "
         "turn, as base models' templates do), so where an assistant turn ends cannot be told; "
         "use the instruct model's template (--template NAME, or its folder) or the all loss "
         "mask");
}

struct Renderer {
    const chat::FolderTemplate& tmpl;
    const Value* tools;
    const ChatOptions& options;
    const std::string& where;

    chat::Rendered render(const Value& messages, bool add_generation_prompt) const {
        const Value ctx =
            chat::make_context(tmpl, messages, tools, add_generation_prompt, options.extra_vars);
        try {
            return tmpl.tmpl.render(ctx);
        } catch (const Error& e) {
            fail(e.status(), where, ": the chat template (", tmpl.origin, ") refused the "
                 "conversation: ", e.what());
        }
    }
};

// The line's "tools" (null or absent: none), a list.
const Value* tools_of(const Value& line, const std::string& where) {
    const Value* tools = line.find("tools");
    if (tools && tools->kind == Value::Kind::Null) tools = nullptr;
    if (tools && !tools->is_array())
        fail(Status::InvalidArgument, where, ": \"tools\" must be a list, not ", tools->kind_name());
    return tools;
}

// A prompt-completion line: both strings (no template: prompt + completion + the EOS token) or
// both lists of messages (the prompt rendered with the generation prompt, then the whole).
ChatText prompt_completion_text(const Renderer& r, const Value& prompt, const Value& completion) {
    const std::string& where = r.where;
    const LossMask mode = r.options.mask == LossMask::Default ? LossMask::Completion : r.options.mask;
    if (mode == LossMask::Assistant)
        fail(Status::InvalidArgument, where, ": the assistant loss mask needs \"messages\"; "
             "a prompt-completion line takes completion or all");
    ChatText c;
    size_t split = 0;
    if (prompt.is_string() && completion.is_string()) {
        const Value* eos = r.tmpl.special_tokens.find("eos_token");
        c.text = prompt.s + completion.s + (eos && eos->is_string() ? eos->s : "");
        split = prompt.s.size();
    } else if (prompt.is_array() && completion.is_array()) {
        const std::string head = r.render(prompt, true).text;
        Value all = prompt;
        all.arr.insert(all.arr.end(), completion.arr.begin(), completion.arr.end());
        c.text = r.render(all, false).text;
        // As for "messages": a base template's rendering ends with the next assistant
        // header, which would end the completion's targets.
        if (mode == LossMask::Completion && r.render(all, true).text == c.text)
            refuse_base_template(r.tmpl, where);
        if (!starts_with(c.text, head))
            fail(Status::InvalidArgument, where, ": the chat template renders the prompt "
                 "(with the generation prompt) as something that does not begin the whole "
                 "conversation, so the completion's bytes cannot be told; give \"messages\" "
                 "with the assistant loss mask instead");
        split = head.size();
    } else {
        fail(Status::InvalidArgument, where, ": \"prompt\" and \"completion\" must both be "
             "strings or both be lists of messages");
    }
    c.targets = {mode == LossMask::All ? std::make_pair(size_t(0), c.text.size())
                                       : std::make_pair(split, trim_end(c.text, split, c.text.size()))};
    return c;
}

// Prefix rendering: each assistant turn's span, from the end of render(messages[:i], with the
// generation prompt) to the end of render(messages[:i+1]), appended to whole.targets. False
// (targets incomplete) when a turn's prefixes do not begin the whole render.
bool prefix_targets(const Renderer& r, const std::vector<Value>& msgs,
                    const std::vector<size_t>& turns, ChatText& whole) {
    for (size_t i : turns) {
        const Value before = array_of(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i));
        const Value upto = array_of(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i + 1));
        std::string head, through;
        try {
            head = i == 0 ? std::string() : r.render(before, true).text;
            through = r.render(upto, false).text;
        } catch (const Error&) {
            return false;  // e.g. a template that insists on a last user message
        }
        if (!starts_with(whole.text, through) || !starts_with(through, head)) return false;
        whole.targets.push_back({head.size(), trim_end(through, head.size(), through.size())});
    }
    return true;
}

// The per-turn form: messages[:i+1] rendered for each assistant turn i, only turn i a target
// (under the completion mask, the last turn only).
std::vector<ChatText> per_turn_texts(const Renderer& r, const std::vector<Value>& msgs,
                                     const std::vector<size_t>& turns, LossMask mode) {
    std::vector<ChatText> out;
    for (size_t k = 0; k < turns.size(); ++k) {
        const size_t i = turns[k];
        if (mode == LossMask::Completion && k + 1 != turns.size()) continue;
        const Value before = array_of(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i));
        const Value upto = array_of(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i + 1));
        ChatText c;
        c.text = r.render(upto, false).text;
        const std::string head = i == 0 ? std::string() : r.render(before, true).text;
        if (!starts_with(c.text, head))
            fail(Status::InvalidArgument, r.where, ": the chat template renders messages[:", i,
                 "] with the generation prompt as something that does not begin its rendering "
                 "of messages[:", i + 1, "], so assistant turn ", i, "'s bytes cannot be told "
                 "(a template with {% generation %} blocks marks them itself)");
        c.targets = {{head.size(), trim_end(c.text, head.size(), c.text.size())}};
        out.push_back(std::move(c));
    }
    return out;
}

// A "messages" line: the whole conversation with its targets (from {% generation %} blocks,
// else prefix rendering), or the per-turn form where prefixes do not hold.
std::vector<ChatText> conversation_texts(const Renderer& r, const Value& messages,
                                         bool* per_turn) {
    const std::string& where = r.where;
    if (!messages.is_array() || messages.arr.empty())
        fail(Status::InvalidArgument, where, ": \"messages\" must be a non-empty list");
    const std::vector<Value>& msgs = messages.arr;
    std::vector<size_t> turns;  // indices of the assistant messages
    for (size_t i = 0; i < msgs.size(); ++i)
        if (role_of(msgs[i], where, i) == "assistant") turns.push_back(i);
    const LossMask mode = r.options.mask == LossMask::Default ? LossMask::Assistant : r.options.mask;

    ChatText whole;
    const chat::Rendered full = r.render(messages, false);
    whole.text = full.text;
    if (mode == LossMask::All) {
        whole.targets = {{0, whole.text.size()}};
        return {whole};
    }
    if (turns.empty())
        fail(Status::InvalidArgument, where, ": the conversation has no assistant message, so "
             "nothing is a target under the ", mode == LossMask::Assistant ? "assistant" :
             "completion", " loss mask (use the all mask to train on every token)");
    const bool generation_blocks = r.tmpl.tmpl.has_generation_blocks();
    if (!generation_blocks && r.render(messages, true).text == whole.text)
        refuse_base_template(r.tmpl, where);
    if (generation_blocks) {
        if (full.generation_spans.empty())
            fail(Status::InvalidArgument, where, ": the chat template has {% generation %} "
                 "blocks but wrote nothing inside one for this conversation");
        whole.targets = full.generation_spans;
        if (mode == LossMask::Completion) whole.targets = {whole.targets.back()};
        return {whole};
    }
    // Any turn whose prefixes do not begin the whole render sends the conversation to the
    // per-turn form.
    if (prefix_targets(r, msgs, turns, whole)) {
        if (mode == LossMask::Completion) whole.targets = {whole.targets.back()};
        return {whole};
    }
    *per_turn = true;
    return per_turn_texts(r, msgs, turns, mode);
}

}  // namespace

LossMask parse_loss_mask(const std::string& s) {
    if (s == "assistant") return LossMask::Assistant;
    if (s == "completion") return LossMask::Completion;
    if (s == "all") return LossMask::All;
    fail(Status::InvalidArgument, "loss mask '", s, "': expected assistant, completion or all");
}

std::vector<ChatText> chat_texts(const chat::FolderTemplate& tmpl, const Value& line,
                                 const ChatOptions& options, const std::string& where,
                                 bool* per_turn) {
    *per_turn = false;
    if (!line.is_object())
        fail(Status::InvalidArgument, where, ": expected a JSON object with \"messages\", or "
             "\"prompt\" and \"completion\"; got ", line.kind_name());
    const Renderer r{tmpl, tools_of(line, where), options, where};
    const Value* messages = line.find("messages");
    const Value* prompt = line.find("prompt");
    const Value* completion = line.find("completion");
    if (messages) return conversation_texts(r, *messages, per_turn);
    if (!prompt || !completion)
        fail(Status::InvalidArgument, where, ": expected \"messages\" (a list of messages), "
             "or \"prompt\" and \"completion\"");
    return {prompt_completion_text(r, *prompt, *completion)};
}

void encode_chat_text(const tok::Tokenizer& t, const ChatText& c, const std::string& where,
                      std::vector<uint32_t>& ids, std::vector<uint8_t>& mask) {
    ids = t.encode(c.text);
    mask.assign(ids.size(), 0);
    std::vector<size_t> edges{0};  // alternate: outside, target, outside, ...
    for (const auto& s : c.targets) {
        if (s.first > s.second || s.second > c.text.size() || s.first < edges.back())
            fail(Status::Internal, where, ": target spans out of order");
        edges.push_back(s.first);
        edges.push_back(s.second);
    }
    edges.push_back(c.text.size());
    // before[e]: how many of the ids encode the bytes before edges[e]. Usually the pieces
    // between edges, encoded one by one, give the whole's ids, which puts every edge between
    // two tokens in one encode of the text.
    std::vector<size_t> before(edges.size(), 0);
    bool pieces_hold = true;
    for (size_t e = 0, at = 0; e + 1 < edges.size() && pieces_hold; ++e) {
        const std::vector<uint32_t> piece =
            t.encode(std::string_view(c.text).substr(edges[e], edges[e + 1] - edges[e]));
        pieces_hold = at + piece.size() <= ids.size() &&
                      std::equal(piece.begin(), piece.end(),
                                 ids.begin() + static_cast<std::ptrdiff_t>(at));
        at += piece.size();
        before[e + 1] = at;
    }
    if (!pieces_hold || before.back() != ids.size()) {
        // A piece can encode otherwise alone while its edge is still a token edge of the whole
        // (DeepSeek V3's pre-tokenizer keeps "<" with an emoji before it, where "<html" alone
        // is one token): then the bytes before the edge encode to a prefix of the whole's ids.
        for (size_t e = 1; e < edges.size(); ++e) {
            if (edges[e] == edges[e - 1] || edges[e] == c.text.size()) {
                before[e] = edges[e] == c.text.size() ? ids.size() : before[e - 1];
                continue;
            }
            const std::vector<uint32_t> head =
                t.encode(std::string_view(c.text).substr(0, edges[e]));
            if (head.size() > ids.size() || head.size() < before[e - 1] ||
                !std::equal(head.begin(), head.end(), ids.begin()))
                fail(Status::InvalidArgument, where, ": the tokenizer joins bytes across the "
                     "edge of a target span at byte ", edges[e], " of the rendered text into "
                     "one token, so the loss mask cannot follow the span exactly; the example "
                     "is refused rather than masked wrongly (the all mask has no edges)");
            before[e] = head.size();
        }
    }
    for (size_t e = 1; e + 1 < edges.size(); e += 2)
        std::fill(mask.begin() + static_cast<std::ptrdiff_t>(before[e]),
                  mask.begin() + static_cast<std::ptrdiff_t>(before[e + 1]),
                  static_cast<uint8_t>(kMaskTarget));
    if (!ids.empty()) mask[0] = static_cast<uint8_t>(kMaskBegins);
}

}  // namespace trt
