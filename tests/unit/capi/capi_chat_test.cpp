// Chat through the public header only (issue 40): a model folder's chat template loaded and
// rendered (trainrt_chat_template_*), its stop ids from generation_config.json (a number or a
// list) or tokenizer_config.json's eos_token, trainrt_session_generate ending at a stop id,
// and trainrt_prepare_text with chat = 1 writing the loss masks. The folder is written by the
// test: the tiny byte-level tokenizer (capi_test_util.h) and a template that wraps each
// message as <|role|>content<|eot|>. The engine itself is tested in tests/unit/chat.
#include <trainrt/trainrt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"

namespace fs = std::filesystem;

namespace {

std::string render(const trainrt_chat_template* t, const char* conversation, int32_t add_prompt,
                   const char* vars = nullptr) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_chat_template_render(nullptr, 0, &needed, t, conversation, add_prompt,
                                           vars),
              TRAINRT_OK)
        << last_error();
    std::string text(needed + 1, '\0');
    EXPECT_EQ(trainrt_chat_template_render(&text[0], text.size(), &needed, t, conversation,
                                           add_prompt, vars),
              TRAINRT_OK)
        << last_error();
    text.resize(needed);
    return text;
}

std::vector<int32_t> stop_ids(const std::string& folder, const trainrt_tokenizer* tok) {
    trainrt_chat_template* t = nullptr;
    EXPECT_EQ(trainrt_chat_template_load(&t, folder.c_str(), nullptr), TRAINRT_OK) << last_error();
    size_t needed = 0;
    EXPECT_EQ(trainrt_chat_template_stop_ids(nullptr, 0, &needed, t, tok), TRAINRT_OK)
        << last_error();
    std::vector<int32_t> ids(needed);
    EXPECT_EQ(trainrt_chat_template_stop_ids(ids.data(), ids.size(), &needed, t, tok), TRAINRT_OK)
        << last_error();
    trainrt_chat_template_destroy(t);
    return ids;
}

// The ids of an llm.c shard (uint16, 256-int32 header; FORMATS.md §1).
std::vector<uint16_t> read_shard(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    int32_t header[256] = {};
    f.read(reinterpret_cast<char*>(header), sizeof header);
    std::vector<uint16_t> ids(static_cast<size_t>(header[2]));
    f.read(reinterpret_cast<char*>(ids.data()),
           static_cast<std::streamsize>(ids.size() * sizeof(uint16_t)));
    EXPECT_TRUE(f.good()) << path;
    return ids;
}

const char* const kConversation =
    R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})";

TEST(CapiChat, RendersAFolderTemplateAsAListOrAnObjectWithVariables) {
    const std::string dir = scratch_dir();
    write_chat_folder(dir);
    trainrt_chat_template* t = nullptr;
    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(render(t, kConversation, 0), "<|user|>hi<|eot|><|assistant|>yo<|eot|>");
    const char* list = R"([{"role": "user", "content": "hi"}])";
    EXPECT_EQ(render(t, list, 1), "<|user|>hi<|eot|><|assistant|>");
    EXPECT_EQ(render(t, list, 0), "<|user|>hi<|eot|>");
    // A short buffer gets the NUL-terminated prefix and the full size.
    char buf[6] = "xxxxx";
    size_t needed = 0;
    ASSERT_EQ(trainrt_chat_template_render(buf, sizeof buf, &needed, t, list, 0, nullptr),
              TRAINRT_OK);
    EXPECT_EQ(needed, std::strlen("<|user|>hi<|eot|>"));
    EXPECT_STREQ(buf, "<|use");
    trainrt_chat_template_destroy(t);

    // Named templates (a list in tokenizer_config.json), extra variables and the folder's
    // special tokens as variables; a template that raises is INVALID_ARGUMENT with its text.
    write_chat_folder(dir, R"({"eos_token": "<|eot|>", "chat_template": [)"
                           R"({"name": "default", "template": "{{ eos_token }}"},)"
                           R"({"name": "greet", "template": "{{ greeting }} {{ messages[0].content }}"},)"
                           R"({"name": "raise", "template": "{{ raise_exception('no ' + messages[0].role) }}"}]})");
    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(render(t, list, 0), "<|eot|>");
    trainrt_chat_template_destroy(t);
    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), "greet"), TRAINRT_OK) << last_error();
    EXPECT_EQ(render(t, list, 0, R"({"greeting": "hey"})"), "hey hi");
    trainrt_chat_template_destroy(t);
    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), "raise"), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_chat_template_render(nullptr, 0, &needed, t, list, 0, nullptr),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("no user"), std::string::npos) << last_error();
    trainrt_chat_template_destroy(t);
}

TEST(CapiChat, StopIdsComeFromGenerationConfigElseTheEosToken) {
    const std::string dir = scratch_dir();
    write_chat_folder(dir);
    trainrt_tokenizer* tok = nullptr;
    ASSERT_EQ(trainrt_tokenizer_load(&tok, dir.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(stop_ids(dir, tok), (std::vector<int32_t>{300}));  // eos_token "<|eot|>"
    std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": 10})";
    EXPECT_EQ(stop_ids(dir, tok), (std::vector<int32_t>{10}));
    std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": [300, 10, 259]})";
    EXPECT_EQ(stop_ids(dir, tok), (std::vector<int32_t>{300, 10, 259}));
    // A short array gets the first ids and the full count.
    trainrt_chat_template* t = nullptr;
    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), nullptr), TRAINRT_OK) << last_error();
    int32_t two[2] = {-1, -1};
    size_t needed = 0;
    ASSERT_EQ(trainrt_chat_template_stop_ids(two, 2, &needed, t, tok), TRAINRT_OK);
    EXPECT_EQ(needed, 3u);
    EXPECT_EQ(two[0], 300);
    EXPECT_EQ(two[1], 10);
    trainrt_chat_template_destroy(t);
    // generation_config.json without eos_token_id: tokenizer_config's eos_token (an
    // AddedToken object here).
    std::ofstream(dir + "/generation_config.json") << R"({"do_sample": true})";
    write_chat_folder(dir, R"({"eos_token": {"content": "<|eot|>"}, "chat_template": "x"})");
    EXPECT_EQ(stop_ids(dir, tok), (std::vector<int32_t>{300}));
    trainrt_tokenizer_destroy(tok);
}

class CapiGenerate : public CapiSessionTest {};

// Greedy generation is deterministic: the first id it emits, given as the stop id, ends the
// reply after one token; other stop ids leave sample's ids unchanged up to where one occurs.
TEST_F(CapiGenerate, StopsAfterAStopIdAndOtherwiseMatchesSample) {
    write_shard(dir_ + "/train.bin", lcg_tokens(4096, 1, 32));
    write_shard(dir_ + "/val.bin", lcg_tokens(512, 2, 32));
    trainrt_session* s = open_from(kTinyGpt2Toml);
    ASSERT_NE(s, nullptr);
    for (int i = 0; i < 3; ++i) step_result(s);
    const int32_t prompt[] = {3, 17, 8};
    trainrt_sample_options o;
    trainrt_sample_options_init(&o);
    EXPECT_EQ(o.version, 2u);
    EXPECT_EQ(o.stop_ids, nullptr);
    EXPECT_EQ(o.n_stop_ids, 0u);
    o.temperature = 0.0;
    std::vector<int32_t> sampled(6, -1);
    ASSERT_EQ(trainrt_session_sample(sampled.data(), sampled.size(), s, prompt, 3, 6, &o),
              TRAINRT_OK)
        << last_error();

    const int32_t first = sampled[0];
    o.stop_ids = &first;
    o.n_stop_ids = 1;
    std::vector<int32_t> out(6, -1);
    size_t n = 0;
    ASSERT_EQ(trainrt_session_generate(&n, out.data(), out.size(), s, prompt, 3, 6, &o),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(out[0], first);
    EXPECT_EQ(out[1], -1) << "written past the stop id";

    // A stop id the greedy reply never emits: all max_new ids, sample's own.
    int32_t absent = 0;
    while (std::find(sampled.begin(), sampled.end(), absent) != sampled.end()) ++absent;
    o.stop_ids = &absent;
    ASSERT_EQ(trainrt_session_generate(&n, out.data(), out.size(), s, prompt, 3, 6, &o),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 6u);
    EXPECT_EQ(out, sampled);
    // No options: as sample with its defaults (n_new ids).
    ASSERT_EQ(trainrt_session_generate(&n, out.data(), out.size(), s, prompt, 3, 4, nullptr),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 4u);
}

TEST(CapiPrepareChat, WritesTokensAndTheAssistantMask) {
    const std::string dir = scratch_dir();
    const std::string model = dir + "/model", out = dir + "/out", chat = dir + "/chat.jsonl";
    write_chat_folder(model);
    std::ofstream(chat) << kConversation << "\n";
    const char* inputs[] = {chat.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = model.c_str();
    o.chat = 1;
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    ASSERT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    // "<|user|>" 8 bytes, "hi" 2, <|eot|>, "<|assistant|>" 13, "yo" 2, <|eot|>: 27 tokens.
    EXPECT_EQ(r.documents, 1);
    EXPECT_EQ(r.examples, 1);
    EXPECT_EQ(r.per_turn, 0);
    EXPECT_EQ(r.train_tokens, 27);
    EXPECT_EQ(r.target_tokens, 3);  // y, o, <|eot|>
    EXPECT_EQ(r.vocab_size, 301);
    EXPECT_EQ(r.token_bytes, 2);
    const std::vector<uint16_t> tokens = read_shard(out + "/train.bin");
    const std::vector<uint16_t> mask = read_shard(out + "/mask_train.bin");
    ASSERT_EQ(tokens.size(), 27u);
    ASSERT_EQ(mask.size(), 27u);
    EXPECT_EQ(tokens[10], 300);
    EXPECT_EQ(tokens[24], 'y');
    EXPECT_EQ(tokens[26], 300);
    std::vector<uint16_t> want(27, 0);
    want[0] = 2;  // begins the example
    want[24] = want[25] = want[26] = 1;
    EXPECT_EQ(mask, want);

    // TRAINRT_LOSS_MASK_ALL: every token but the first; a version-2 result struct gets only
    // its own fields.
    o.loss_mask = TRAINRT_LOSS_MASK_ALL;
    trainrt_prepare_result v2;
    std::memset(&v2, 0x7f, sizeof v2);
    v2.struct_size = offsetof(trainrt_prepare_result, examples);
    v2.version = 2;
    ASSERT_EQ(trainrt_prepare_text(&v2, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    EXPECT_EQ(v2.train_tokens, 27);
    EXPECT_EQ(v2.train_shards, 1);
    EXPECT_EQ(v2.examples, 0x7f7f7f7f7f7f7f7f) << "a field past struct_size was written";
    std::vector<uint16_t> all(27, 1);
    all[0] = 2;
    EXPECT_EQ(read_shard(out + "/mask_train.bin"), all);
}

}  // namespace
