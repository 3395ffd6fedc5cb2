// The GGUF export's tokenizer half (runtime/gguf_export.h), read back by the test's GGUF
// reader: a byte-level BPE tokenizer.json (the synthetic one of tests/tokenizer) as llama.cpp's
// "gpt2" model with its folder's special tokens and chat template, and a SentencePiece model
// trained here as its "llama" model with scores and piece types; the token list padded to the
// model's vocab_size; no tokenizer; a tokenizer larger than the model. The model half and real
// tokenizers: test_gguf_model.cpp and tests/gguf/gguf_export.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf_test_reader.h"
#include "model/lora.h"
#include "runtime/gguf_export.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer
#include "tokenizer/tokenizer_files.h"

#ifdef TRAINRT_HAVE_SENTENCEPIECE
#include <sentencepiece_trainer.h>
#endif

namespace fs = std::filesystem;

namespace trt {
namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "gguf_export" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> strings(const gguf_test::Value& v) {
    std::vector<std::string> out;
    for (const gguf_test::Value& x : v.items) out.push_back(x.s);
    return out;
}

const char* kTemplate = "{% for m in messages %}{{ m['content'] }}<|end|>{% endfor %}";

}  // namespace

// The synthetic BPE (263 ids: the 256 byte characters, 6 merged tokens, <|end|> special at 261)
// under a GPT-2 model of vocab_size 300.
TEST(GgufExport, ByteLevelBpeIsLlamaCppsGpt2Model) {
    const std::string dir = test_dir();
    write(dir + "/tokenizer.json", synthetic::tokenizer_json());
    write(dir + "/tokenizer_config.json",
          std::string(R"({"eos_token": {"content": "<|end|>"}, "bos_token": null,
                          "add_bos_token": false, "chat_template": ")") +
              kTemplate + "\"}");
    const tok::TokenizerFiles files = tok::find_tokenizer_files(dir, "test");
    const ParamTable table(gpt2_spec(300, 8, 1, 2, 32));
    const std::vector<float> params(table.total(), 0.25f);
    const GgufExportResult r =
        export_gguf(dir + "/m.gguf", table, params.data(), gguf::TensorType::F16, &files, "tiny");
    EXPECT_TRUE(r.notes.empty());
    const gguf_test::File f = gguf_test::read_file(dir + "/m.gguf");
    EXPECT_EQ(r.tensors, f.tensors.size());
    EXPECT_EQ(f.kv.at("general.name").s, "tiny");
    EXPECT_EQ(f.kv.at("general.file_type").u, 1u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.model").s, "gpt2");
    EXPECT_EQ(f.kv.at("tokenizer.ggml.pre").s, "gpt-2");
    const std::vector<std::string> tokens = strings(f.kv.at("tokenizer.ggml.tokens"));
    ASSERT_EQ(tokens.size(), 300u);
    EXPECT_EQ(tokens[static_cast<size_t>('a')], "a");
    EXPECT_EQ(tokens[32], synthetic::byte_char(' '));  // the byte-level form: "Ġ"
    EXPECT_EQ(tokens[259], "hello");
    EXPECT_EQ(tokens[261], "<|end|>");
    EXPECT_EQ(tokens[263], "[PAD263]");  // no id 263 in the tokenizer: padding
    EXPECT_EQ(tokens[299], "[PAD299]");
    const gguf_test::Value& types = f.kv.at("tokenizer.ggml.token_type");
    EXPECT_EQ(types.item_type, 5u);    // INT32, as llama.cpp reads it
    EXPECT_EQ(types.items[97].i, 1);   // NORMAL
    EXPECT_EQ(types.items[261].i, 3);  // CONTROL
    EXPECT_EQ(types.items[263].i, 5);  // UNUSED
    EXPECT_EQ(strings(f.kv.at("tokenizer.ggml.merges")),
              (std::vector<std::string>{"h e", "l l", "he ll", "hell o",
                                        synthetic::byte_char(' ') + " h"}));
    EXPECT_EQ(f.kv.at("tokenizer.ggml.eos_token_id").type, 4u);  // UINT32
    EXPECT_EQ(f.kv.at("tokenizer.ggml.eos_token_id").u, 261u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.bos_token_id").u, 261u);  // null in the config: the eos
    EXPECT_EQ(f.kv.count("tokenizer.ggml.eot_token_id"), 0u);  // the eos ends turns
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_bos_token").type, 7u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_bos_token").u, 0u);
    EXPECT_EQ(f.kv.at("tokenizer.chat_template").s, kTemplate);
    EXPECT_EQ(f.kv.count("tokenizer.ggml.scores"), 0u);

    // generation_config.json's end-of-turn list: the first that is not the eos is the eot.
    write(dir + "/generation_config.json", R"({"eos_token_id": [261, 259]})");
    export_gguf(dir + "/m2.gguf", table, params.data(), gguf::TensorType::F16, &files, "");
    const gguf_test::File g = gguf_test::read_file(dir + "/m2.gguf");
    EXPECT_EQ(g.kv.at("tokenizer.ggml.eot_token_id").u, 259u);
    EXPECT_EQ(g.kv.at("tokenizer.ggml.token_type").items[259].i, 3);  // made CONTROL
    EXPECT_EQ(g.kv.count("general.name"), 0u);

    // A config naming a token the tokenizer lacks is refused, as prepare refuses it.
    write(dir + "/tokenizer_config.json", R"({"eos_token": "<|eot_id|>"})");
    EXPECT_THROW(
        export_gguf(dir + "/m3.gguf", table, params.data(), gguf::TensorType::F16, &files, ""),
        Error);
    EXPECT_FALSE(fs::exists(dir + "/m3.gguf"));
}

// A tokenizer.json alone (as `trainrt tokenizer train` writes it, before an export adds its
// config): no BOS added (nothing here ever added one), and with no end-of-text token among
// <|endoftext|>, <|end_of_text|>, </s> a note says which id llama.cpp takes.
TEST(GgufExport, ATokenizerWithoutConfigAddsNoBosAndSaysWhatEndsText) {
    const std::string dir = test_dir();
    write(dir + "/tokenizer.json", synthetic::tokenizer_json());
    const tok::TokenizerFiles files = tok::find_tokenizer_files(dir, "test");
    const ParamTable table(gpt2_spec(300, 8, 1, 2, 32));
    const std::vector<float> params(table.total(), 0.0f);
    const GgufExportResult r =
        export_gguf(dir + "/m.gguf", table, params.data(), gguf::TensorType::F32, &files, "");
    const gguf_test::File f = gguf_test::read_file(dir + "/m.gguf");
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_bos_token").type, 7u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_bos_token").u, 0u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_eos_token").u, 0u);
    EXPECT_EQ(f.kv.count("tokenizer.ggml.eos_token_id"), 0u);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("id 11"), std::string::npos) << r.notes[0];
}

// Another pre-tokenizer than the three llama.cpp names: "default", with a note. No tokenizer:
// "no_vocab", with a note. More ids than the model's rows: refused before anything is written.
TEST(GgufExport, WhatLlamaCppCannotTakeIsNotedOrRefused) {
    const std::string dir = test_dir();
    synthetic::Spec spec;
    spec.pre_tokenizer = R"({"type": "ByteLevel", "add_prefix_space": false,
                             "trim_offsets": true, "use_regex": false})";
    write(dir + "/tokenizer.json", synthetic::tokenizer_json(spec));
    const tok::TokenizerFiles files = tok::find_tokenizer_files(dir, "test");
    const ParamTable table(gpt2_spec(300, 8, 1, 2, 32));
    const std::vector<float> params(table.total(), 0.0f);
    GgufExportResult r =
        export_gguf(dir + "/a.gguf", table, params.data(), gguf::TensorType::F32, &files, "");
    ASSERT_EQ(r.notes.size(), 2u);  // and no end-of-text token (the test above)
    EXPECT_NE(r.notes[1].find("pre-tokenizer"), std::string::npos) << r.notes[1];
    EXPECT_EQ(gguf_test::read_file(dir + "/a.gguf").kv.at("tokenizer.ggml.pre").s, "default");

    r = export_gguf(dir + "/b.gguf", table, params.data(), gguf::TensorType::F32, nullptr, "");
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("no tokenizer"), std::string::npos);
    const gguf_test::File b = gguf_test::read_file(dir + "/b.gguf");
    EXPECT_EQ(b.kv.at("tokenizer.ggml.model").s, "no_vocab");
    EXPECT_EQ(b.kv.at("gpt2.vocab_size").u, 300u);  // what sizes llama.cpp's embedding then
    EXPECT_EQ(b.kv.count("tokenizer.ggml.tokens"), 0u);

    const ParamTable small(gpt2_spec(256, 8, 1, 2, 32));
    const std::vector<float> p2(small.total(), 0.0f);
    try {
        export_gguf(dir + "/c.gguf", small, p2.data(), gguf::TensorType::F32, &files, "");
        FAIL() << "263 ids exported into 256 rows";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("vocab_size is 256"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir + "/c.gguf"));
    EXPECT_THROW(parse_gguf_type("q4_0"), Error);
    EXPECT_EQ(parse_gguf_type("q8_0"), gguf::TensorType::Q8_0);
}

// A SentencePiece model (Llama 2's settings: BPE, byte fallback; <unk> 0, <s> 1, </s> 2) under
// a Llama model of vocab_size 512: llama.cpp's "llama" model, the pieces with their scores and
// types, the model's own special ids, padding ids at the converter's score.
TEST(GgufExport, SentencePieceIsLlamaCppsLlamaModel) {
#ifndef TRAINRT_HAVE_SENTENCEPIECE
    GTEST_SKIP() << "built without SentencePiece";
#else
    const std::string dir = test_dir();
    std::string text;
    {
        std::ifstream in(std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    write(dir + "/train.txt", text.substr(0, 100000));
    const auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + dir + "/train.txt --model_prefix=" + dir + "/tokenizer" +
        " --vocab_size=500 --model_type=bpe --byte_fallback=true --split_digits=true"
        " --normalization_rule_name=identity --remove_extra_whitespaces=false"
        " --character_coverage=1.0 --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1"
        " --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    const tok::TokenizerFiles files = tok::find_tokenizer_files(dir + "/tokenizer.model", "test");
    const ParamTable table(llama_spec(512, 8, 1, 2, 2, 32, 64, true));
    const std::vector<float> params(table.total(), 0.0f);
    const GgufExportResult r =
        export_gguf(dir + "/m.gguf", table, params.data(), gguf::TensorType::BF16, &files, "");
    EXPECT_TRUE(r.notes.empty());
    const gguf_test::File f = gguf_test::read_file(dir + "/m.gguf");
    EXPECT_EQ(f.kv.at("tokenizer.ggml.model").s, "llama");
    EXPECT_EQ(f.kv.at("tokenizer.ggml.pre").s, "default");
    EXPECT_EQ(f.kv.count("tokenizer.ggml.merges"), 0u);
    const std::vector<std::string> tokens = strings(f.kv.at("tokenizer.ggml.tokens"));
    ASSERT_EQ(tokens.size(), 512u);
    EXPECT_EQ(tokens[0], "<unk>");
    EXPECT_EQ(tokens[1], "<s>");
    EXPECT_EQ(tokens[2], "</s>");
    EXPECT_EQ(tokens[3], "<0x00>");
    EXPECT_EQ(tokens[500], "[PAD500]");
    const gguf_test::Value& types = f.kv.at("tokenizer.ggml.token_type");
    EXPECT_EQ(types.items[0].i, 2);  // UNKNOWN
    EXPECT_EQ(types.items[1].i, 3);  // CONTROL
    EXPECT_EQ(types.items[2].i, 3);
    EXPECT_EQ(types.items[3].i, 6);        // BYTE
    EXPECT_EQ(types.items[3 + 256].i, 1);  // the first merged piece: NORMAL
    EXPECT_EQ(types.items[500].i, 5);
    const gguf_test::Value& scores = f.kv.at("tokenizer.ggml.scores");
    ASSERT_EQ(scores.items.size(), 512u);
    EXPECT_LT(scores.items[300].f, scores.items[260].f);  // BPE pieces by rank
    EXPECT_EQ(scores.items[511].f, -1000.0);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.bos_token_id").u, 1u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.eos_token_id").u, 2u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.unknown_token_id").u, 0u);
    EXPECT_EQ(f.kv.at("tokenizer.ggml.add_bos_token").u, 0u);  // not llama.cpp's SPM default
    EXPECT_EQ(f.kv.at("general.file_type").u, 32u);  // MOSTLY_BF16
    EXPECT_EQ(f.tensor("token_embd.weight").type, 30u);
    EXPECT_EQ(f.tensor("blk.0.attn_norm.weight").type, 0u);  // norms stay F32
#endif
}

}  // namespace trt

namespace trt {

// --gguf-lora: a LoRA run's adapters as llama.cpp's adapter file. Llama with head size 8 and
// every linear adapted: the keys llama.cpp checks (general.type, adapter.type, alpha as
// FLOAT32), a pair per adapted linear under the base tensor's name, A [r, in] and B [out, r]
// as stored (ne reversed), q's and k's B rows in ggml's RoPE order, the rest as they are.
TEST(GgufExport, LoraAdapterIsLlamaCppsAdapterFile) {
    const std::string dir = test_dir();
    ModelSpec s = llama_spec(64, 16, 2, 2, 1, 16, 24, true);  // hs 8
    LoraConfig l;
    l.rank = 4;
    l.alpha = 12.0;
    l.target_modules = {"all-linear"};
    s.lora = lora_spec(l, s);
    const ParamTable table(s);
    std::vector<float> params(table.total());
    for (size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i % 1000) * 1e-3f;
    const GgufExportResult r =
        export_gguf_lora(dir + "/a.gguf", table, params.data(), gguf::TensorType::F32, "a");
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes.back().find("--lora"), std::string::npos) << r.notes.back();
    const gguf_test::File f = gguf_test::read_file(dir + "/a.gguf");
    EXPECT_EQ(f.kv.at("general.type").s, "adapter");
    EXPECT_EQ(f.kv.at("general.architecture").s, "llama");
    EXPECT_EQ(f.kv.at("adapter.type").s, "lora");
    EXPECT_EQ(f.kv.at("adapter.lora.alpha").type, 6u);  // FLOAT32: llama.cpp asserts it
    EXPECT_EQ(f.kv.at("adapter.lora.alpha").f, 12.0);
    EXPECT_EQ(f.tensors.size(), 2u * 7u * 2u);  // 7 linears a block, 2 blocks, A and B
    const ParamTensor* qa = table.lora_a(Slot::Q, 1);
    ASSERT_NE(qa, nullptr);
    const ParamTensor& qb = *(qa + 1);
    EXPECT_EQ(f.tensor("blk.1.attn_q.weight.lora_a").ne, (std::vector<uint64_t>{16, 4}));
    EXPECT_EQ(f.tensor("blk.1.attn_q.weight.lora_b").ne, (std::vector<uint64_t>{4, 16}));
    EXPECT_EQ(f.tensor("blk.0.ffn_down.weight.lora_a").ne, (std::vector<uint64_t>{24, 4}));
    const std::vector<float> a = f.values("blk.1.attn_q.weight.lora_a");
    EXPECT_TRUE(
        std::equal(a.begin(), a.end(), params.begin() + static_cast<ptrdiff_t>(qa->offset)));
    // B's rows: head h's row 2i + j is HF's row j * 4 + i (head size 8: pairs (i, i + 4)).
    const std::vector<float> b = f.values("blk.1.attn_q.weight.lora_b");
    const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    for (int h = 0; h < 2; ++h)
        for (int row = 0; row < 8; ++row)
            for (int c = 0; c < 4; ++c)
                ASSERT_EQ(b[static_cast<size_t>((h * 8 + row) * 4 + c)],
                          params[qb.offset + static_cast<size_t>((h * 8 + order[row]) * 4 + c)])
                    << "head " << h << " row " << row;
    const ParamTensor* vb = table.lora_a(Slot::V, 0) + 1;
    const std::vector<float> v = f.values("blk.0.attn_v.weight.lora_b");
    EXPECT_TRUE(
        std::equal(v.begin(), v.end(), params.begin() + static_cast<ptrdiff_t>(vb->offset)));

    // No adapters: refused, nothing written.
    const ParamTable plain(llama_spec(64, 16, 2, 2, 1, 16, 24, true));
    const std::vector<float> p2(plain.total(), 0.0f);
    EXPECT_THROW(export_gguf_lora(dir + "/b.gguf", plain, p2.data(), gguf::TensorType::F32, ""),
                 Error);
    EXPECT_FALSE(fs::exists(dir + "/b.gguf"));
}

}  // namespace trt
