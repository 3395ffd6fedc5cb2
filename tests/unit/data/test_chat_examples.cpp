// Chat examples (data/chat_examples.h) on handwritten templates and the synthetic byte-level
// tokenizer, no network: the target spans of the assistant, completion and all masks, both
// prompt-completion forms, {% generation %} blocks, the per-turn form, the base-template
// refusal, span edges the tokenizer merges across (refused) or tokenizes otherwise alone
// (kept), and prepare_chat's error paths (file:line named, nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/chat_examples.h"
#include "data/example_set.h"
#include "data/prepare_chat.h"
#include "data_test_util.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer

namespace fs = std::filesystem;
using trt::ChatText;
using trt::LossMask;

namespace {

// ChatML-like, every piece a string so no whitespace control is involved. The synthetic
// tokenizer's special token <|end|> (261) ends each turn; "\n" follows it.
const char* const kChatml =
    "{% for m in messages %}{{ '<|' + m.role + '|>' + m.content + '<|end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}";

trt::chat::FolderTemplate folder_template(const std::string& source) {
    trt::chat::FolderTemplate t;
    t.tmpl = trt::chat::Template::parse(source, "test.jinja");
    t.source_text = source;
    t.origin = "test.jinja";
    t.special_tokens = trt::json::parse(R"({"eos_token": "<|end|>"})", "specials");
    return t;
}

std::vector<ChatText> texts(const std::string& source, const std::string& line, LossMask mask,
                            bool* per_turn = nullptr) {
    bool pt = false;
    trt::ChatOptions o;
    o.mask = mask;
    const trt::chat::FolderTemplate t = folder_template(source);
    auto out = trt::chat_texts(t, trt::json::parse(line, "line"), o, "f.jsonl:7", &pt);
    if (per_turn) *per_turn = pt;
    return out;
}

// The target bytes of c, one string per span.
std::vector<std::string> target_strings(const ChatText& c) {
    std::vector<std::string> out;
    for (const auto& s : c.targets) out.push_back(c.text.substr(s.first, s.second - s.first));
    return out;
}

const trt::tok::Tokenizer& tokenizer() {
    static const trt::tok::Tokenizer t =
        trt::tok::Tokenizer::from_json(synthetic::tokenizer_json(), "synthetic");
    return t;
}

// The ids whose mask is a target.
std::vector<uint32_t> target_ids(const ChatText& c, const trt::tok::Tokenizer& t = tokenizer()) {
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    trt::encode_chat_text(t, c, "f.jsonl:7", ids, mask);
    EXPECT_EQ(ids.size(), mask.size());
    EXPECT_EQ(mask.at(0), trt::kMaskBegins);
    std::vector<uint32_t> out;
    for (size_t k = 0; k < ids.size(); ++k) {
        EXPECT_LE(mask[k], 2u);
        if (k > 0) EXPECT_NE(mask[k], trt::kMaskBegins);
        if (mask[k] == trt::kMaskTarget) out.push_back(ids[k]);
    }
    return out;
}

// One line: prepare_chat reads it as a JSON line too.
const char* const kTwoTurns = R"({"messages": [{"role": "system", "content": "be brief"}, )"
    R"({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, )"
    R"({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hell"}]})";

}  // namespace

TEST(ChatExamples, AssistantMaskMarksEachTurnThroughItsEndTokenNotTheNewline) {
    bool per_turn = true;
    const auto c = texts(kChatml, kTwoTurns, LossMask::Default, &per_turn);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_FALSE(per_turn);
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{"hello<|end|>", "hell<|end|>"}));
    EXPECT_EQ(target_ids(c[0]), (std::vector<uint32_t>{259, 261, 258, 261}));
}

TEST(ChatExamples, CompletionMaskMarksTheLastAssistantTurnOnly) {
    const auto c = texts(kChatml, kTwoTurns, LossMask::Completion);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{"hell<|end|>"}));
    EXPECT_EQ(target_ids(c[0]), (std::vector<uint32_t>{258, 261}));
}

TEST(ChatExamples, AllMaskMarksEveryTokenButTheFirst) {
    const auto c = texts(kChatml, kTwoTurns, LossMask::All);
    ASSERT_EQ(c.size(), 1u);
    ASSERT_EQ(c[0].targets.size(), 1u);
    EXPECT_EQ(c[0].targets[0], std::make_pair(size_t(0), c[0].text.size()));
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    trt::encode_chat_text(tokenizer(), c[0], "f.jsonl:7", ids, mask);
    EXPECT_EQ(mask[0], trt::kMaskBegins);
    for (size_t k = 1; k < mask.size(); ++k) EXPECT_EQ(mask[k], trt::kMaskTarget) << k;
}

TEST(ChatExamples, PromptCompletionStringsAreTextThenTheEosToken) {
    const char* line = R"({"prompt": "hi", "completion": " hello"})";
    const auto c = texts(kChatml, line, LossMask::Default);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].text, "hi hello<|end|>");
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{" hello<|end|>"}));
    EXPECT_EQ(target_ids(c[0]), (std::vector<uint32_t>{32, 259, 261}));
    EXPECT_EQ(target_strings(texts(kChatml, line, LossMask::All)[0]),
              (std::vector<std::string>{"hi hello<|end|>"}));
    expect_error([&] { texts(kChatml, line, LossMask::Assistant); },
                 trt::Status::InvalidArgument, {"f.jsonl:7", "needs \"messages\""});
}

TEST(ChatExamples, PromptCompletionMessagesRenderThePromptWithTheGenerationPrompt) {
    const char* line = R"({"prompt": [{"role": "user", "content": "hi"}],
                           "completion": [{"role": "assistant", "content": "hello"}]})";
    const auto c = texts(kChatml, line, LossMask::Default);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].text, "<|user|>hi<|end|>\n<|assistant|>hello<|end|>\n");
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{"hello<|end|>"}));
    // The all mask is every byte, the newline after the last turn's end token included (it
    // was cut off as for the completion mask).
    const auto all = texts(kChatml, line, LossMask::All);
    EXPECT_EQ(target_strings(all[0]), (std::vector<std::string>{all[0].text}));
    expect_error([&] { texts(kChatml, R"({"prompt": "hi", "completion": []})", LossMask::Default); },
                 trt::Status::InvalidArgument, {"f.jsonl:7", "both be strings or both be lists"});
}

TEST(ChatExamples, GenerationBlocksGiveTheSpansThemselves) {
    // The end token outside the block: prefix rendering would have included it.
    const char* gen =
        "{% for m in messages %}{% if m.role == 'assistant' %}{{ '<|assistant|>' }}"
        "{% generation %}{{ m.content }}{% endgeneration %}{{ '<|end|>\\n' }}"
        "{% else %}{{ '<|' + m.role + '|>' + m.content + '<|end|>\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}";
    bool per_turn = true;
    const auto c = texts(gen, kTwoTurns, LossMask::Assistant, &per_turn);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_FALSE(per_turn);
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{"hello", "hell"}));
    EXPECT_EQ(target_ids(c[0]), (std::vector<uint32_t>{259, 258}));
    EXPECT_EQ(target_strings(texts(gen, kTwoTurns, LossMask::Completion)[0]),
              (std::vector<std::string>{"hell"}));
}

TEST(ChatExamples, PrefixesThatDoNotHoldGiveOneExamplePerAssistantTurn) {
    // Like Qwen3 dropping earlier reasoning: an assistant turn renders otherwise once it is
    // not the last message.
    const char* drops =
        "{% for m in messages %}{% if m.role == 'assistant' %}"
        "{{ '<|assistant|>' + (m.content if loop.last else 'ok') + '<|end|>\\n' }}"
        "{% else %}{{ '<|' + m.role + '|>' + m.content + '<|end|>\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}";
    bool per_turn = false;
    const auto c = texts(drops, kTwoTurns, LossMask::Assistant, &per_turn);
    EXPECT_TRUE(per_turn);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].text, "<|system|>be brief<|end|>\n<|user|>hi<|end|>\n<|assistant|>hello<|end|>\n");
    EXPECT_EQ(target_strings(c[0]), (std::vector<std::string>{"hello<|end|>"}));
    EXPECT_NE(c[1].text.find("<|assistant|>ok<|end|>"), std::string::npos);
    EXPECT_EQ(target_strings(c[1]), (std::vector<std::string>{"hell<|end|>"}));
    const auto last = texts(drops, kTwoTurns, LossMask::Completion, &per_turn);
    EXPECT_TRUE(per_turn);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].text, c[1].text);
    // All: the whole rendering, one example.
    EXPECT_EQ(texts(drops, kTwoTurns, LossMask::All, &per_turn).size(), 1u);
    EXPECT_FALSE(per_turn);
}

TEST(ChatExamples, ABaseTemplateIsRefusedWhereTheEndOfATurnMatters) {
    const char* base =
        "{% for m in messages %}{{ '<|' + m.role + '|>' + m.content + '<|end|>\\n' }}{% endfor %}"
        "{{ '<|assistant|>' }}";
    for (LossMask m : {LossMask::Assistant, LossMask::Completion})
        expect_error([&] { texts(base, kTwoTurns, m); }, trt::Status::InvalidArgument,
                     {"f.jsonl:7", "same text with and without add_generation_prompt",
                      "the all loss mask"});
    // A prompt-completion line of messages too: its completion would end with the next
    // assistant header.
    expect_error([&] {
        texts(base, R"({"prompt": [{"role": "user", "content": "hi"}],
                        "completion": [{"role": "assistant", "content": "hello"}]})",
              LossMask::Completion);
    }, trt::Status::InvalidArgument, {"f.jsonl:7", "same text with and without add_generation_prompt"});
    EXPECT_EQ(texts(base, kTwoTurns, LossMask::All).size(), 1u);
}

TEST(ChatExamples, NoAssistantTurnOrARefusingTemplateNamesTheLine) {
    expect_error([&] { texts(kChatml, R"({"messages": [{"role": "user", "content": "hi"}]})",
                             LossMask::Assistant); },
                 trt::Status::InvalidArgument, {"f.jsonl:7", "no assistant message"});
    expect_error([&] { texts("{{ raise_exception('roles must alternate') }}", kTwoTurns,
                             LossMask::All); },
                 trt::Status::InvalidArgument, {"f.jsonl:7", "roles must alternate"});
}

TEST(ChatExamples, ATokenAcrossASpanEdgeIsRefusedNamingTheByte) {
    // " hx": the space before the turn merges with "h" (Ġh = 260), so no token edge falls
    // where the turn begins.
    const char* spaced =
        "{% for m in messages %}{{ '<|' + m.role + '|> ' + m.content + '<|end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|> ' }}{% endif %}";
    const auto ok = texts(spaced, R"({"messages": [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "hello"}]})", LossMask::Assistant);
    EXPECT_EQ(target_ids(ok[0]), (std::vector<uint32_t>{259, 261}));  // " hello" is Ġ, hello
    const auto bad = texts(spaced, R"({"messages": [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "hx"}]})", LossMask::Assistant);
    const size_t edge = bad[0].text.find("hx");
    ASSERT_EQ(bad[0].targets.at(0).first, edge);
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    expect_error([&] { trt::encode_chat_text(tokenizer(), bad[0], "f.jsonl:7", ids, mask); },
                 trt::Status::InvalidArgument,
                 {"f.jsonl:7", "joins bytes across the edge", "at byte " + std::to_string(edge)});
    // An edge inside a merged token, at the end of a span.
    ChatText inside{"hello", {{0, 3}}};
    expect_error([&] { trt::encode_chat_text(tokenizer(), inside, "f.jsonl:7", ids, mask); },
                 trt::Status::InvalidArgument, {"at byte 3"});
}

TEST(ChatExamples, AnEdgeThatIsATokenEdgeIsKeptWhereThePieceAloneEncodesOtherwise) {
    // Llama 3's pre-tokenizer and a merge "<h" (263): alone, "<hx" is one pre-token and
    // "<h" merges; after "!" the "<" joins the punctuation ("!<", "hx") and stays a token of its
    // own. The edge after "!" is a token edge of the whole (DeepSeek V3 shows this with an
    // emoji before "<html>"): the mask follows it, nothing is refused.
    synthetic::Spec spec;
    spec.pre_tokenizer = synthetic::cl100k_pre_tokenizer();
    spec.extra_merges = {"< h"};
    std::string json = synthetic::tokenizer_json(spec);
    const std::string hel = R"("hel": 262)";
    json.replace(json.find(hel), hel.size(), R"("hel": 262, "<h": 263)");
    const trt::tok::Tokenizer t = trt::tok::Tokenizer::from_json(json, "synthetic-cl100k");
    ASSERT_EQ(t.encode("<hx"), (std::vector<uint32_t>{263, 'x'}));
    ChatText c{"!<hx", {{1, 4}}};
    std::vector<uint32_t> ids;
    std::vector<uint8_t> mask;
    trt::encode_chat_text(t, c, "f.jsonl:7", ids, mask);
    EXPECT_EQ(ids, (std::vector<uint32_t>{'!', '<', 'h', 'x'}));
    EXPECT_EQ(mask, (std::vector<uint8_t>{2, 1, 1, 1}));
}

// ---------------------------------------------------------------- prepare_chat

namespace {

std::string chat_folder(const std::string& dir, const std::string& source = kChatml) {
    const std::string folder = dir + "/model";
    fs::create_directories(folder);
    write_text(folder + "/tokenizer.json", synthetic::tokenizer_json());
    write_text(folder + "/tokenizer_config.json",
               R"({"eos_token": "<|end|>", "chat_template": )" + trt::json::quote(source) + "}");
    return folder;
}

const char* const kGood = R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})";

// Nothing of a split: no shard, mask or manifest.
void expect_nothing_written(const std::string& out) {
    if (!fs::exists(out)) return;
    for (const auto& e : fs::directory_iterator(out)) {
        const std::string name = e.path().filename().string();
        EXPECT_TRUE(name.find(".bin") == std::string::npos && name != "prepare.json")
            << "left behind: " << name;
    }
}

}  // namespace

TEST(PrepareChat, WritesShardsAndMasks) {
    const std::string dir = fresh_test_dir("prepare_chat");
    trt::PrepareChatOptions o;
    o.tokenizer = chat_folder(dir);
    write_text(dir + "/a.jsonl", std::string(kGood) + "\n\n" + kTwoTurns + "\n");
    const trt::PrepareChatResult r = trt::prepare_chat({dir + "/a.jsonl"}, dir + "/out", o);
    EXPECT_EQ(r.conversations, 2);
    EXPECT_EQ(r.examples, 2);
    EXPECT_EQ(r.per_turn, 0);
    EXPECT_EQ(r.target_tokens, 6);  // hello<|end|>, hello<|end|>, hell<|end|>
    for (const char* f : {"train.bin", "val.bin", "mask_train.bin", "mask_val.bin", "prepare.json"})
        EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
}

TEST(PrepareChat, ALineItCannotUseIsNamedByFileAndLineAndNothingIsWritten) {
    const std::string dir = fresh_test_dir("prepare_chat");
    trt::PrepareChatOptions o;
    o.tokenizer = chat_folder(dir);
    const std::string a = dir + "/a.jsonl", b = dir + "/b.jsonl";
    write_text(a, std::string(kGood) + "\n" + kGood + "\n");
    struct Case {
        std::string line, needle;
        LossMask mask;
    };
    const std::vector<Case> cases = {
        {R"({"messages": "hi"})", "non-empty list", LossMask::Default},
        {R"([1, 2])", "expected a JSON object", LossMask::Default},
        {R"({"messages": [{"role": "user", "content": "hi"})", "", LossMask::Default},  // bad JSON
        {R"({"messages": [{"content": "hi"}]})", "needs a string \"role\"", LossMask::Default},
        {R"({"prompt": "a", "completion": "b"})", "needs \"messages\"", LossMask::Assistant},
        {R"({"messages": [{"role": "user", "content": "hi"}]})", "no assistant message",
         LossMask::Completion},
        {R"({"messages": [{"role": "assistant", "content": "hx"}], "tools": 3})", "\"tools\" must be a list",
         LossMask::Default},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.line);
        // The bad line is the second line of the second file, after a blank line.
        write_text(b, "\n" + c.line + "\n" + kGood + "\n");
        o.mask = c.mask;
        const std::string out = dir + "/out";
        std::vector<std::string> needles{b + ":2"};
        if (!c.needle.empty()) needles.push_back(c.needle);
        expect_error([&] { trt::prepare_chat({a, b}, out, o); },
                     c.needle.empty() ? trt::Status::Format : trt::Status::InvalidArgument, needles);
        expect_nothing_written(out);
    }
}

TEST(PrepareChat, ATokenAcrossASpanEdgeFailsTheRunNamingTheLine) {
    const std::string dir = fresh_test_dir("prepare_chat");
    trt::PrepareChatOptions o;
    o.tokenizer = chat_folder(dir,
        "{% for m in messages %}{{ '<|' + m.role + '|> ' + m.content + '<|end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|> ' }}{% endif %}");
    write_text(dir + "/a.jsonl", std::string(kGood) + "\n" +
               R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hx"}]})" + "\n");
    expect_error([&] { trt::prepare_chat({dir + "/a.jsonl"}, dir + "/out", o); },
                 trt::Status::InvalidArgument, {dir + "/a.jsonl:2", "joins bytes across the edge"});
    expect_nothing_written(dir + "/out");
}
