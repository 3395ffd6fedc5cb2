// `trainrt chat` and `trainrt sample --chat`: talking to a fine-tuned model the way it was
// trained (README, "Instruction tuning"): the conversation is rendered with its tokenizer
// folder's chat template and the generation prompt, and each reply ends at the folder's
// end-of-turn ids (generation_config.json eos_token_id, else tokenizer_config.json
// eos_token). Public C API only.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "cli_common.h"
#include "io/json_min.h"

namespace trainrt_cli {

namespace {

struct Message {
    std::string role, content;
};

std::string conversation_json(const std::vector<Message>& messages) {
    std::string j = "{\"messages\": [";
    for (size_t i = 0; i < messages.size(); ++i)
        j += (i ? ", " : "") + std::string("{\"role\": ") + trt::json::quote(messages[i].role) +
             ", \"content\": " + trt::json::quote(messages[i].content) + "}";
    return j + "]}";
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct ChatArgs {
    std::string checkpoint, tokenizer, template_name, system, vars, message;
    double tokens = 512, temperature = 0.7, top_k = 0, seed = 1337;
};

// A checkpoint with its tokenizer, chat template and end-of-turn ids.
class ChatModel {
public:
    ~ChatModel() {
        trainrt_session_destroy(session_);
        trainrt_tokenizer_destroy(tokenizer_);
        trainrt_chat_template_destroy(template_);
    }

    bool open(const ChatArgs& a) {
        std::string folder = a.tokenizer;
        if (folder.empty()) {  // the run's data.tokenizer, recorded in the checkpoint
            trainrt_config* stored = nullptr;
            trainrt_status st = trainrt_config_from_checkpoint(&stored, a.checkpoint.c_str());
            if (st != TRAINRT_OK) return fail_status(("reading checkpoint " + a.checkpoint).c_str(), st) == 0;
            const bool ok = fetch_string(folder, "data.tokenizer", [&](char* b, size_t c, size_t* n) {
                return trainrt_config_get_string(b, c, n, stored, "data.tokenizer");
            });
            trainrt_config_destroy(stored);
            if (!ok) return false;
            if (folder.empty()) {
                std::fprintf(stderr, "trainrt: the checkpoint records no tokenizer "
                             "(data.tokenizer): give the model folder with --tokenizer DIR\n");
                return false;
            }
        }
        trainrt_status st = trainrt_tokenizer_load(&tokenizer_, folder.c_str());
        if (st != TRAINRT_OK) return fail_status("loading the tokenizer", st) == 0;
        // The template lives beside the tokenizer file, in its model folder.
        if (!is_directory(folder)) {
            const size_t slash = folder.find_last_of('/');
            folder = slash == std::string::npos ? "." : folder.substr(0, slash);
        }
        st = trainrt_chat_template_load(&template_, folder.c_str(),
                                        a.template_name.empty() ? nullptr : a.template_name.c_str());
        if (st != TRAINRT_OK) return fail_status(("loading the chat template of " + folder).c_str(), st) == 0;
        size_t n = 0;
        st = trainrt_chat_template_stop_ids(nullptr, 0, &n, template_, tokenizer_);
        stop_.resize(n);
        if (st == TRAINRT_OK)
            st = trainrt_chat_template_stop_ids(stop_.data(), stop_.size(), &n, template_, tokenizer_);
        if (st != TRAINRT_OK) return fail_status("finding the end-of-turn tokens", st) == 0;
        session_ = open_checkpoint(a.checkpoint, TRAINRT_LOG_WARN);
        return session_ != nullptr;
    }

    // The assistant's reply to the conversation so far; false after printing the error.
    bool reply(const std::vector<Message>& messages, const ChatArgs& a, std::string& text) {
        std::string prompt;
        const std::string conv = conversation_json(messages);
        if (!fetch_string(prompt, "rendering the chat template", [&](char* b, size_t c, size_t* n) {
                return trainrt_chat_template_render(b, c, n, template_, conv.c_str(), 1,
                                                    a.vars.empty() ? nullptr : a.vars.c_str());
            }))
            return false;
        size_t needed = 0;
        trainrt_status st =
            trainrt_tokenizer_encode(nullptr, 0, &needed, tokenizer_, prompt.data(), prompt.size());
        std::vector<int32_t> ids(needed);
        if (st == TRAINRT_OK)
            st = trainrt_tokenizer_encode(ids.data(), ids.size(), &needed, tokenizer_,
                                          prompt.data(), prompt.size());
        if (st != TRAINRT_OK) return fail_status("encoding the conversation", st) == 0;
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.temperature = a.temperature;
        o.top_k = static_cast<int32_t>(a.top_k);
        o.seed = static_cast<uint64_t>(a.seed);
        o.stop_ids = stop_.data();
        o.n_stop_ids = stop_.size();
        std::vector<int32_t> out(static_cast<size_t>(a.tokens));
        size_t n = 0;
        st = trainrt_session_generate(&n, out.data(), out.size(), session_, ids.data(), ids.size(),
                                      out.size(), &o);
        if (st != TRAINRT_OK) return fail_status("generating the reply", st) == 0;
        out.resize(n);
        if (!out.empty() && std::find(stop_.begin(), stop_.end(), out.back()) != stop_.end())
            out.pop_back();  // the end-of-turn token is not part of the reply's text
        return fetch_string(text, "decoding the reply", [&](char* b, size_t c, size_t* m) {
            return trainrt_tokenizer_decode(b, c, m, tokenizer_, out.data(), out.size());
        });
    }

private:
    trainrt_session* session_ = nullptr;
    trainrt_tokenizer* tokenizer_ = nullptr;
    trainrt_chat_template* template_ = nullptr;
    std::vector<int32_t> stop_;
};

// Parses the options both commands take; false with `error` set.
bool parse_chat_args(int argc, char** argv, bool one_message, ChatArgs& a, std::string& error) {
    std::vector<std::string> names = {"--system", "--tokens", "--temperature", "--top-k",
                                      "--seed",   "--tokenizer", "--template", "--vars"};
    if (one_message) names.push_back("--chat");
    for (int i = 0; i < argc; ++i) {
        const std::string o = argv[i];
        if (std::find(names.begin(), names.end(), o) != names.end()) {
            if (i + 1 >= argc) {
                error = "option '" + o + "' needs a value";
                return false;
            }
            const char* v = argv[++i];
            double* number = o == "--tokens" ? &a.tokens : o == "--temperature" ? &a.temperature
                             : o == "--top-k" ? &a.top_k : o == "--seed" ? &a.seed : nullptr;
            if (number) {
                char* end = nullptr;
                *number = std::strtod(v, &end);
                if (end == v || *end != '\0' || *number < 0) {
                    error = "option '" + o + "' needs a non-negative number, got '" + v + "'";
                    return false;
                }
            } else if (o == "--system") a.system = v;
            else if (o == "--tokenizer") a.tokenizer = v;
            else if (o == "--template") a.template_name = v;
            else if (o == "--vars") a.vars = v;
            else if (o == "--chat") a.message = v;
        } else if (!o.empty() && o[0] == '-') {
            error = unknown_option(o, names);
            return false;
        } else if (a.checkpoint.empty()) {
            a.checkpoint = o;
        } else {
            error = "unexpected argument '" + o + "'";
            return false;
        }
    }
    if (a.checkpoint.empty()) {
        error = "needs a CHECKPOINT (directory or train.out_dir)";
        return false;
    }
    if (a.tokens < 1 || a.tokens != static_cast<double>(static_cast<long long>(a.tokens)) ||
        a.top_k != static_cast<double>(static_cast<int>(a.top_k)) ||
        a.seed != static_cast<double>(static_cast<long long>(a.seed))) {
        error = "--tokens (>= 1), --top-k and --seed need whole numbers";
        return false;
    }
    return true;
}

}  // namespace

const char* const kChatHelp =
    "usage: trainrt chat CHECKPOINT [--system TEXT] [--tokens N] [--temperature T]\n"
    "                    [--top-k K] [--seed S] [--tokenizer DIR] [--template NAME]\n"
    "                    [--vars JSON]\n"
    "\n"
    "A conversation with a fine-tuned model: each line read from stdin is the user's turn; the\n"
    "reply (at most N tokens, default 512) is printed on stdout as one block, followed by an\n"
    "empty line. The conversation is rendered with the chat template of the model folder\n"
    "(--tokenizer, else the run's data.tokenizer) with the generation prompt, and a reply ends\n"
    "at the folder's end-of-turn ids (generation_config.json eos_token_id, else\n"
    "tokenizer_config.json eos_token). --vars: more template variables as a JSON object\n"
    "({\"enable_thinking\": false}). Temperature 0.7 by default (0 = greedy). Ends at the end\n"
    "of input. One turn without the loop: trainrt sample CHECKPOINT --chat MESSAGE.\n";

int cmd_chat(int argc, char** argv) {
    ChatArgs a;
    std::string error;
    if (!parse_chat_args(argc, argv, false, a, error)) return usage_error("chat", error, kChatHelp);
    ChatModel model;
    if (!model.open(a)) return 1;
    std::vector<Message> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    const bool tty = ::isatty(STDIN_FILENO) != 0;
    std::string line;
    for (;;) {
        if (tty) std::fputs("you> ", stderr);
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        messages.push_back({"user", line});
        std::string text;
        if (!model.reply(messages, a, text)) return 1;
        messages.push_back({"assistant", text});
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fputs("\n\n", stdout);
        std::fflush(stdout);
    }
    return 0;
}

int sample_chat(int argc, char** argv) {
    ChatArgs a;
    a.tokens = 256;
    std::string error;
    if (!parse_chat_args(argc, argv, true, a, error)) return usage_error("sample", error, nullptr);
    ChatModel model;
    if (!model.open(a)) return 1;
    std::vector<Message> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.message});
    std::string text;
    if (!model.reply(messages, a, text)) return 1;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
}

}  // namespace trainrt_cli
