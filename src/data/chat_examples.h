// Chat examples: one line of chat JSONL -> the text the model trains on (the model folder's
// chat template, rendered as transformers renders it: chat/chat_template.h) and which bytes
// of it are targets; then ids and a loss mask (data/example_set.h) that agree token for token.
//
// A line is {"messages": [{"role", "content", ...}, ...], "tools": [...]?} or
// {"prompt": P, "completion": C} with P, C both strings (text: P + C + the EOS token, no
// template) or both message lists (TRL's conversational prompt-completion: the template
// renders P with the generation prompt, then P + C).
//
// Which bytes are targets (LossMask):
//   assistant  (default for "messages") every assistant turn, from the end of the generation
//              prompt the template writes before it to the end of its turn, the end-of-turn
//              token included (whitespace after the turn's last token is not);
//   completion (default for prompt-completion) the completion; for "messages", the last
//              assistant turn only;
//   all        every token but the first (trailing whitespace included).
// The spans come from the template's {% generation %} blocks when it has them, else from
// prefix rendering: turn i begins where render(messages[:i], add_generation_prompt) ends and
// ends where render(messages[:i+1]) ends, each of which must be a prefix of the whole render.
// A template where they are not (Qwen3 drops the reasoning of turns before the last user
// message) makes the conversation one example per assistant turn instead: messages[:i+1]
// rendered as the model sees it at that turn, only turn i a target (the per-turn form). A
// template that renders the same with and without add_generation_prompt (a base model's, which
// always opens a new assistant turn) is refused for the assistant and completion masks (a
// prompt-completion line of messages too): the end of a turn cannot be told from it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"

namespace trt {

enum class LossMask { Default, Assistant, Completion, All };

// "assistant", "completion", "all" (Error(InvalidArgument) naming the choices otherwise).
LossMask parse_loss_mask(const std::string& s);

struct ChatText {
    std::string text;
    std::vector<std::pair<size_t, size_t>> targets;  // byte ranges [begin, end), in order
};

struct ChatOptions {
    LossMask mask = LossMask::Default;
    const json::Value* extra_vars = nullptr;  // more template variables (an object), or null
};

// The examples of one JSON line (`where` = "file:line" for errors): one, or one per assistant
// turn in the per-turn form (*per_turn set true then). Error(InvalidArgument) naming `where`
// for a line of another shape or a template that refuses it.
std::vector<ChatText> chat_texts(const chat::FolderTemplate& tmpl, const json::Value& line,
                                 const ChatOptions& options, const std::string& where,
                                 bool* per_turn);

// ids and mask values (kMaskTarget, kMaskBegins) of one example: the text encoded whole, and
// each target byte range must be whole tokens of that encoding (the text before each range
// edge encodes to a prefix of the ids): else Error(InvalidArgument) naming `where` and the byte.
void encode_chat_text(const tok::Tokenizer& t, const ChatText& c, const std::string& where,
                      std::vector<uint32_t>& ids, std::vector<uint8_t>& mask);

}  // namespace trt
