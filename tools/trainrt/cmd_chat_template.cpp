// `trainrt chat-template`: renders a conversation with a model folder's chat template, as
// transformers' apply_chat_template does (src/chat). The engine is compiled into the tool
// (like src/core/nearest.cpp): the library does not export it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "cli_common.h"
#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"

namespace trainrt_cli {

const char* const kChatTemplateHelp =
    "usage: trainrt chat-template --tokenizer FOLDER [--add-generation-prompt] [--template NAME]\n"
    "                             [--var NAME=JSON]... (CONVERSATION.json | --jsonl FILE)\n"
    "                             [--spans] [--bench N]\n"
    "\n"
    "Renders a conversation with the model folder's chat template (FOLDER/chat_template.jinja,\n"
    "else tokenizer_config.json's \"chat_template\"; --template NAME picks one of a named list)\n"
    "exactly as transformers' apply_chat_template renders it, and prints the text to stdout\n"
    "and nothing else. CONVERSATION.json is {\"messages\": [...], \"tools\": [...]} or a bare\n"
    "list of messages. The template sees the folder's special tokens (bos_token, eos_token,\n"
    "...), messages, tools, add_generation_prompt and each --var NAME=JSON (e.g.\n"
    "--var enable_thinking=false). docs/CHAT_TEMPLATES.md lists what templates may use.\n"
    "  --jsonl FILE   one conversation object per line (optionally with\n"
    "                 \"add_generation_prompt\": bool); prints one JSON string per line, the\n"
    "                 rendered text, or {\"error\": \"...\"} for a line whose render fails\n"
    "  --spans        with --jsonl: {\"text\": ..., \"spans\": [[begin, end], ...]} per line, the\n"
    "                 byte ranges written inside {% generation %} blocks\n"
    "  --bench N      render the conversation(s) N times on one thread; print the rate\n"
    "Exit status: 0 ok, 1 error (a --jsonl line's error is data, not a failure), 2 bad usage.\n";

namespace {

int chat_error(const std::string& message) {
    std::fprintf(stderr, "trainrt: chat-template failed: %s\n", message.c_str());
    return 1;
}

struct Conversation {
    trt::json::Value messages;
    trt::json::Value tools;
    bool has_tools = false;
    int add_generation_prompt = -1;  // -1: the command line's
};

Conversation conversation_of(const trt::json::Value& v, const std::string& where) {
    Conversation c;
    if (v.is_array()) {
        c.messages = v;
        return c;
    }
    if (!v.is_object())
        trt::fail(trt::Status::InvalidArgument, where, ": a conversation is an object with \"messages\" "
                  "or a list of messages, got ", v.kind_name());
    const trt::json::Value* m = v.find("messages");
    if (!m || !m->is_array())
        trt::fail(trt::Status::InvalidArgument, where, ": \"messages\" must be a list of messages");
    c.messages = *m;
    if (const trt::json::Value* t = v.find("tools"); t && t->kind != trt::json::Value::Kind::Null) {
        c.tools = *t;
        c.has_tools = true;
    }
    if (const trt::json::Value* g = v.find("add_generation_prompt")) {
        if (g->kind != trt::json::Value::Kind::Bool)
            trt::fail(trt::Status::InvalidArgument, where, ": \"add_generation_prompt\" must be true or false");
        c.add_generation_prompt = g->b ? 1 : 0;
    }
    return c;
}

}  // namespace

int cmd_chat_template(int argc, char** argv) {
    auto usage = [](const std::string& message) {
        return usage_error("chat-template", message, kChatTemplateHelp);
    };
    const std::vector<std::string> options = {"--tokenizer", "--add-generation-prompt", "--template",
                                              "--var", "--jsonl", "--spans", "--bench"};
    std::string folder, name, jsonl, conversation_path;
    bool add_generation_prompt = false, spans = false;
    long long bench = 0;
    std::vector<std::string> vars;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--", 0) != 0) {
            if (!conversation_path.empty()) return usage("one CONVERSATION.json only");
            conversation_path = a;
            continue;
        }
        if (std::find(options.begin(), options.end(), a) == options.end())
            return usage(unknown_option(a, options));
        if (a == "--add-generation-prompt") { add_generation_prompt = true; continue; }
        if (a == "--spans") { spans = true; continue; }
        if (i + 1 >= argc) return usage("option '" + a + "' needs a value");
        const std::string v = argv[++i];
        if (a == "--tokenizer") folder = v;
        else if (a == "--template") name = v;
        else if (a == "--var") vars.push_back(v);
        else if (a == "--jsonl") jsonl = v;
        else if (a == "--bench") {
            char* end = nullptr;
            bench = std::strtoll(v.c_str(), &end, 10);
            if (*end != '\0' || bench < 1 || bench > 1000000000LL) return usage("bad --bench '" + v + "'");
        }
    }
    if (folder.empty()) return usage("chat-template needs --tokenizer FOLDER");
    if (conversation_path.empty() == jsonl.empty())
        return usage("give either CONVERSATION.json or --jsonl FILE");
    if (spans && jsonl.empty()) return usage("--spans goes with --jsonl");

    try {
        trt::json::Value extra;
        extra.kind = trt::json::Value::Kind::Object;
        for (const std::string& v : vars) {
            const size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0) return usage("--var takes NAME=JSON, got '" + v + "'");
            extra.obj.push_back({v.substr(0, eq), trt::json::parse(v.substr(eq + 1), "--var " + v.substr(0, eq))});
        }
        const trt::chat::FolderTemplate ft = trt::chat::load_folder_template(folder, name);

        std::vector<Conversation> conversations;
        std::vector<std::string> line_errors;  // --jsonl: a line that is not a conversation
        if (!jsonl.empty()) {
            std::ifstream in(jsonl, std::ios::binary);
            if (!in) return chat_error("cannot read " + jsonl);
            std::string line;
            size_t n = 0;
            while (std::getline(in, line)) {
                ++n;
                if (line.empty()) continue;
                const std::string where = jsonl + ":" + std::to_string(n);
                try {
                    conversations.push_back(conversation_of(trt::json::parse(line, where), where));
                    line_errors.emplace_back();
                } catch (const trt::Error& e) {
                    conversations.emplace_back();
                    line_errors.push_back(e.what());
                }
            }
        } else {
            const std::string text = trt::read_small_file(conversation_path, size_t(1) << 30);
            conversations.push_back(conversation_of(trt::json::parse(text, conversation_path), conversation_path));
            line_errors.emplace_back();
        }

        auto context_of = [&](const Conversation& c) {
            const bool agp = c.add_generation_prompt < 0 ? add_generation_prompt : c.add_generation_prompt == 1;
            return trt::chat::make_context(ft, c.messages, c.has_tools ? &c.tools : nullptr, agp, &extra);
        };

        if (bench > 0) {
            std::vector<trt::json::Value> contexts;
            for (size_t k = 0; k < conversations.size(); ++k)
                if (line_errors[k].empty()) contexts.push_back(context_of(conversations[k]));
            if (contexts.empty()) return chat_error("no conversation to render");
            size_t bytes = 0, failed = 0;
            const auto t0 = std::chrono::steady_clock::now();
            for (long long r = 0; r < bench; ++r) {
                try {
                    bytes += ft.tmpl.render(contexts[static_cast<size_t>(r) % contexts.size()]).text.size();
                } catch (const trt::Error&) {
                    ++failed;
                }
            }
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("%lld renders (%zu failed) of %zu conversation(s) in %.3f s: %.0f conversations/s, "
                        "%.1f MB/s of text\n", bench, failed, contexts.size(), s, s > 0 ? bench / s : 0.0,
                        s > 0 ? bytes / 1e6 / s : 0.0);
            return 0;
        }

        if (jsonl.empty()) {
            const trt::chat::Rendered r = ft.tmpl.render(context_of(conversations[0]));
            std::fwrite(r.text.data(), 1, r.text.size(), stdout);
            return std::fflush(stdout) == 0 ? 0 : chat_error("cannot write to stdout");
        }
        for (size_t k = 0; k < conversations.size(); ++k) {
            std::string out;
            try {
                if (!line_errors[k].empty()) trt::fail(trt::Status::InvalidArgument, line_errors[k]);
                const trt::chat::Rendered r = ft.tmpl.render(context_of(conversations[k]));
                if (spans) {
                    out = "{\"text\": " + trt::json::quote(r.text) + ", \"spans\": [";
                    for (size_t s = 0; s < r.generation_spans.size(); ++s)
                        out += (s ? ", [" : "[") + std::to_string(r.generation_spans[s].first) + ", " +
                               std::to_string(r.generation_spans[s].second) + "]";
                    out += "]}";
                } else {
                    out = trt::json::quote(r.text);
                }
            } catch (const trt::Error& e) {
                std::string msg = e.what();
                if (!trt::json::valid_utf8(msg)) msg = "(error message is not UTF-8)";
                out = "{\"error\": " + trt::json::quote(msg) + "}";
            }
            out += '\n';
            std::fwrite(out.data(), 1, out.size(), stdout);
        }
        return std::fflush(stdout) == 0 ? 0 : chat_error("cannot write to stdout");
    } catch (const trt::Error& e) {
        return chat_error(e.what());
    } catch (const std::bad_alloc&) {
        return chat_error("out of memory");
    }
}

}  // namespace trainrt_cli
