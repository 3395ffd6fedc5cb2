// `trainrt chat-template`: renders a conversation with a model folder's chat template, as
// transformers' apply_chat_template does, through the C API (trainrt_chat_template_*). The
// JSON reader (src/io/json_min.cpp, std only) is compiled in to read --jsonl lines' own
// add_generation_prompt and to quote the output.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_common.h"
#include "core/error.h"
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

std::string last_error() {
    const char* e = trainrt_last_error_message();
    return e ? e : "";
}

// A conversation as the C API takes it (its JSON text) and its own add_generation_prompt.
struct Conversation {
    std::string json;
    int add_generation_prompt = -1;  // -1: the command line's
    std::string error;               // --jsonl: a line that is not a conversation
};

// A --jsonl line: an object or a list; an object may say add_generation_prompt.
Conversation conversation_of(const std::string& text, const std::string& where) {
    Conversation c;
    c.json = text;
    try {
        const trt::json::Value v = trt::json::parse(text, where);
        const trt::json::Value* m = v.is_object() ? v.find("messages") : nullptr;
        if (!v.is_object() && !v.is_array()) {
            c.error = where + ": a conversation is an object with \"messages\" or a list of "
                      "messages, got " + v.kind_name();
        } else if (v.is_object() && (!m || !m->is_array())) {
            c.error = where + ": \"messages\" must be a list of messages";
        } else if (const trt::json::Value* g = v.is_object() ? v.find("add_generation_prompt")
                                                              : nullptr) {
            if (g->kind != trt::json::Value::Kind::Bool)
                c.error = where + ": \"add_generation_prompt\" must be true or false";
            else
                c.add_generation_prompt = g->b ? 1 : 0;
        }
    } catch (const trt::Error& e) {
        c.error = e.what();
    }
    return c;
}

// The JSON object of --var NAME=JSON (each value checked here, so its error names it).
bool vars_object(const std::vector<std::string>& vars, std::string& out, std::string& error) {
    out = "{";
    for (const std::string& v : vars) {
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) {
            error = "--var takes NAME=JSON, got '" + v + "'";
            return false;
        }
        try {
            trt::json::parse(v.substr(eq + 1), "--var " + v.substr(0, eq));
        } catch (const trt::Error& e) {
            error = e.what();
            return false;
        }
        out += (out.size() > 1 ? ", " : "") + trt::json::quote(v.substr(0, eq)) + ": " +
               v.substr(eq + 1);
    }
    out += "}";
    return true;
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
    std::string var_json, error;
    if (!vars_object(vars, var_json, error)) return usage(error);

    trainrt_chat_template* tmpl = nullptr;
    if (trainrt_chat_template_load(&tmpl, folder.c_str(), name.empty() ? nullptr : name.c_str()) !=
        TRAINRT_OK)
        return chat_error(last_error());
    struct Release {
        trainrt_chat_template* t;
        ~Release() { trainrt_chat_template_destroy(t); }
    } release{tmpl};

    std::vector<Conversation> conversations;
    if (!jsonl.empty()) {
        std::ifstream in(jsonl, std::ios::binary);
        if (!in) return chat_error("cannot read " + jsonl);
        std::string line;
        size_t n = 0;
        while (std::getline(in, line)) {
            ++n;
            if (!line.empty()) conversations.push_back(conversation_of(line, jsonl + ":" + std::to_string(n)));
        }
    } else {
        std::ifstream in(conversation_path, std::ios::binary);
        if (!in) return chat_error("cannot read " + conversation_path);
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        conversations.push_back(conversation_of(text, conversation_path));
        if (!conversations[0].error.empty()) return chat_error(conversations[0].error);
    }
    const auto agp = [&](const Conversation& c) {
        return c.add_generation_prompt < 0 ? add_generation_prompt : c.add_generation_prompt == 1;
    };
    const char* vj = vars.empty() ? nullptr : var_json.c_str();
    // c rendered into text (false: the library's error). One call when the text fits the
    // buffer kept between calls (a second, larger, when it did not).
    std::string text, buf(size_t(1) << 16, '\0');
    const auto render = [&](const Conversation& c) {
        size_t need = 0;
        trainrt_status st = trainrt_chat_template_render(&buf[0], buf.size(), &need, tmpl,
                                                         c.json.c_str(), agp(c), vj);
        if (st == TRAINRT_OK && need + 1 > buf.size()) {
            buf.resize(need + 1);
            st = trainrt_chat_template_render(&buf[0], buf.size(), &need, tmpl, c.json.c_str(),
                                              agp(c), vj);
        }
        if (st != TRAINRT_OK) return false;
        text.assign(buf.data(), need);
        return true;
    };

    if (bench > 0) {
        std::vector<const Conversation*> ok;
        for (const Conversation& c : conversations)
            if (c.error.empty()) ok.push_back(&c);
        if (ok.empty()) return chat_error("no conversation to render");
        size_t bytes = 0, failed = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (long long r = 0; r < bench; ++r) {
            if (render(*ok[static_cast<size_t>(r) % ok.size()])) bytes += text.size();
            else ++failed;
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%lld renders (%zu failed) of %zu conversation(s) in %.3f s: %.0f conversations/s, "
                    "%.1f MB/s of text (through trainrt_chat_template_render: JSON in, text out)\n",
                    bench, failed, ok.size(), s, s > 0 ? bench / s : 0.0,
                    s > 0 ? bytes / 1e6 / s : 0.0);
        return 0;
    }
    if (jsonl.empty()) {
        if (!render(conversations[0])) return chat_error(last_error());
        std::fwrite(text.data(), 1, text.size(), stdout);
        return std::fflush(stdout) == 0 ? 0 : chat_error("cannot write to stdout");
    }
    for (const Conversation& c : conversations) {
        std::string out;
        std::string msg = c.error;
        if (msg.empty() && !render(c)) msg = last_error();
        std::vector<size_t> ranges;
        if (msg.empty() && spans) {
            size_t n = 0;
            trainrt_status st = trainrt_chat_template_generation_spans(
                nullptr, 0, &n, tmpl, c.json.c_str(), agp(c), vj);
            ranges.resize(n);
            if (st == TRAINRT_OK)
                st = trainrt_chat_template_generation_spans(ranges.data(), ranges.size(), &n, tmpl,
                                                            c.json.c_str(), agp(c), vj);
            if (st != TRAINRT_OK) msg = last_error();
        }
        if (!msg.empty()) {
            if (!trt::json::valid_utf8(msg)) msg = "(error message is not UTF-8)";
            out = "{\"error\": " + trt::json::quote(msg) + "}";
        } else if (spans) {
            out = "{\"text\": " + trt::json::quote(text) + ", \"spans\": [";
            for (size_t k = 0; k + 1 < ranges.size(); k += 2)
                out += (k ? ", [" : "[") + std::to_string(ranges[k]) + ", " +
                       std::to_string(ranges[k + 1]) + "]";
            out += "]}";
        } else {
            out = trt::json::quote(text);
        }
        out += '\n';
        std::fwrite(out.data(), 1, out.size(), stdout);
    }
    return std::fflush(stdout) == 0 ? 0 : chat_error("cannot write to stdout");
}

}  // namespace trainrt_cli
