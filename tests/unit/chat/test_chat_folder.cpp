// src/chat/chat_template.h: finding a model folder's template (chat_template.jinja, a string or
// a named list in tokenizer_config.json), its special tokens, and the context transformers
// gives the template.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "io/json_min.h"

namespace {

namespace fs = std::filesystem;
using trt::chat::load_folder_template;
using trt::chat::make_context;

std::string folder(const std::string& name) {
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/chat_folder/" + name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

trt::json::Value J(const std::string& s) { return trt::json::parse(s, "test"); }

TEST(ChatFolder, TokenizerConfigStringAndSpecialTokens) {
    const std::string dir = folder("string");
    write(dir + "/tokenizer_config.json",
          R"({"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false}, "eos_token": "</s>",
              "unk_token": null, "pad_token": "<pad>", "additional_special_tokens": ["<x>", {"content": "<y>"}],
              "model_max_length": 1000000000000000019884624838656,
              "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}{{ tools is none }}{{ additional_special_tokens | join }}"})");
    const auto ft = load_folder_template(dir);
    EXPECT_NE(ft.origin.find("tokenizer_config.json"), std::string::npos);
    EXPECT_EQ(ft.special_tokens.find("bos_token")->s, "<s>");
    EXPECT_EQ(ft.special_tokens.find("unk_token"), nullptr);
    const auto ctx = make_context(ft, J(R"([{"role": "user", "content": "hi"}])"), nullptr, false, nullptr);
    EXPECT_EQ(ft.tmpl.render(ctx).text, "<s>hi</s>True<x><y>");
}

TEST(ChatFolder, ChatTemplateJinjaWinsAndNamedListsPick) {
    const std::string dir = folder("jinja");
    write(dir + "/tokenizer_config.json",
          R"({"chat_template": [{"name": "default", "template": "D{{ add_generation_prompt }}"},
                                {"name": "tool_use", "template": "T{{ tools | length }}{{ x }}"}]})");
    EXPECT_EQ(load_folder_template(dir).tmpl.render(make_context(load_folder_template(dir), J("[]"), nullptr, true, nullptr)).text,
              "DTrue");
    const auto tool = load_folder_template(dir, "tool_use");
    const auto tools = J(R"([{"name": "f"}, {"name": "g"}])");
    const auto vars = J(R"({"x": "!"})");
    EXPECT_EQ(tool.tmpl.render(make_context(tool, J("[]"), &tools, false, &vars)).text, "T2!");
    try {
        load_folder_template(dir, "nope");
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no chat template named 'nope' (it has: default, tool_use)"),
                  std::string::npos) << e.what();
    }
    write(dir + "/chat_template.jinja", "J\n");
    const auto ft = load_folder_template(dir);
    EXPECT_NE(ft.origin.find("chat_template.jinja"), std::string::npos);
    EXPECT_EQ(ft.tmpl.render(make_context(ft, J("[]"), nullptr, false, nullptr)).text, "J");
}

TEST(ChatFolder, ErrorsNameTheFile) {
    const std::string dir = folder("errors");
    try {
        load_folder_template(dir);
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
    }
    write(dir + "/chat_template.jinja", "ok\n{{ x | frob }}");
    try {
        load_folder_template(dir);
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Unsupported);
        EXPECT_NE(std::string(e.what()).find("chat_template.jinja:2: the filter 'frob'"), std::string::npos) << e.what();
    }
    // Extra variables cannot replace what the conversation sets.
    write(dir + "/chat_template.jinja", "x");
    const auto ft = load_folder_template(dir);
    const auto vars = J(R"({"messages": 1})");
    EXPECT_THROW(make_context(ft, J("[]"), nullptr, false, &vars), trt::Error);
}

}  // namespace
