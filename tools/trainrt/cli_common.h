// Helpers the trainrt commands share (main.cpp, cmd_bench.cpp): argument parsing for
// CONFIG [--set K=V]..., config loading, sessions, error printing, the stderr log sink.
// Public C API only.
#pragma once
#include <trainrt/trainrt.h>

#include <string>
#include <utility>
#include <vector>

namespace trainrt_cli {

// Prints "trainrt: WHAT failed (STATUS): last error" to stderr; returns 1.
int fail_status(const char* what, trainrt_status status);

// A usage error, kept short: "trainrt COMMAND: MESSAGE", the command's usage lines (the
// "usage:" block at the top of its help text) and where the full help is; returns 2.
// command "" (no command, or an unknown one): the message and a pointer to `trainrt --help`.
int usage_error(const std::string& command, const std::string& message, const char* help);

// "unknown option '--stpes'; did you mean '--steps'?": the closest of the command's own
// options (and --help) by the config keys' matcher (src/core/nearest.h); no hint when none
// is near. An "--opt=value" given is matched by its name.
std::string unknown_option(const std::string& given, const std::vector<std::string>& options);
// "; did you mean 'X'?" for the closest of names, or "".
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names);

// The live progress line on a terminal (train): log lines end it first.
bool stderr_is_tty();
// False on the ranks of a data-parallel run other than 0 (known once a session exists):
// they print errors only, rank 0 speaks for the run.
bool is_lead_rank();
void mark_progress_line_open();
void end_progress_line();
// The log sink of every command: "[trainrt] warning: ..." on stderr.
void log_to_stderr(int32_t level, const char* message, void* payload);

// A --set value: TOML as given, except a bare word (not a number, bool, array, string,
// table) is quoted so paths and enum names need no shell gymnastics.
std::string as_toml_value(const std::string& v);

struct RunArgs {
    std::string config_path;
    std::vector<std::pair<std::string, std::string>> sets;
    long long steps = 0;
    bool fresh = false;
    std::string checkpoint;
};

// Which options beyond CONFIG and --set a command takes.
enum RunOption { kSteps = 1, kFresh = 2, kCheckpoint = 4 };

// Parses CONFIG [--set K=V]... plus the options in `allowed`. more: the options a command
// takes out before calling this (bench's --warmup, ...), for the "did you mean" of an
// unknown one.
bool parse_run_args(int argc, char** argv, int allowed, RunArgs& out, std::string& error,
                    const std::vector<std::string>& more = {});

// Loads the config and applies --set (log sink: stderr, INFO); NULL after printing the error.
trainrt_config* load_config(const RunArgs& args);

// Session from a config (consumed: destroyed here); NULL after printing the error.
trainrt_session* create_session(trainrt_config* config);

// A session holding a checkpoint's weights, for commands that do not train (no data
// needed); NULL after printing the error.
trainrt_session* open_checkpoint(const std::string& path, int32_t log_level);

// The checkpoint a command should start from: `explicit_path` if given, else out_dir's
// latest (or "" when out_dir is empty or holds none). False after printing an error.
bool pick_checkpoint(trainrt_config* config, const std::string& explicit_path, std::string& out);

// "1.5 MiB": bytes for people (info, plan).
std::string human_bytes(double bytes);
// text into path through path.tmp and a rename, so a half-written file never has the name;
// false (the .tmp removed) when any step fails.
bool write_file_replacing(const std::string& path, const std::string& text);

// `trainrt bench` (cmd_bench.cpp); argv holds the arguments after the command name.
int cmd_bench(int argc, char** argv);
// `trainrt eval` (cmd_eval.cpp): loss and perplexity on data.val or a text file.
int cmd_eval(int argc, char** argv);
extern const char* const kEvalHelp;
// `trainrt plan` (cmd_plan.cpp): memory by component, and the largest micro-batch.
int cmd_plan(int argc, char** argv);
// `trainrt tokenizer train` (cmd_tokenizer.cpp), and its help text.
int cmd_tokenizer(int argc, char** argv);
extern const char* const kTokenizerHelp;
// `trainrt chat-template` (cmd_chat_template.cpp): a conversation through a chat template.
int cmd_chat_template(int argc, char** argv);
extern const char* const kChatTemplateHelp;
// `trainrt chat` and `trainrt sample --chat` (cmd_chat.cpp), and chat's help text.
int cmd_chat(int argc, char** argv);
int sample_chat(int argc, char** argv);
extern const char* const kChatHelp;

// A (buf, cap, needed) string from the C API; false after printing the error.
template <typename Fn>
bool fetch_string(std::string& out, const char* what, Fn&& call) {
    size_t needed = 0;
    trainrt_status st = call(nullptr, 0, &needed);
    if (st == TRAINRT_OK) {
        std::string text(needed + 1, '\0');
        st = call(&text[0], text.size(), &needed);
        text.resize(needed);
        out = text;
    }
    if (st != TRAINRT_OK) {
        fail_status(what, st);
        return false;
    }
    return true;
}

}  // namespace trainrt_cli
