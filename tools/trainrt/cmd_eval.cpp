// `trainrt eval`: a model's mean loss and perplexity (its exp) on data.val — sampled windows
// (train.eval_batches), or with --whole every token once — or on a text file tokenized in
// memory (--text). The model is a config's (its latest checkpoint, model.init_from, or the
// random initial model), a checkpoint's, or a Hugging Face folder's; the line says which.
// Public C API only.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_common.h"

namespace trainrt_cli {

const char* const kEvalHelp =
    "usage: trainrt eval CONFIG [--set KEY=VALUE]... [--checkpoint PATH] [--whole]\n"
    "       trainrt eval [CONFIG | CHECKPOINT | HF_DIR] --text FILE [--tokenizer PATH] [--set ...]\n"
    "\n"
    "Prints the mean loss (nats/token) and the perplexity, exp(loss), of a model:\n"
    "  val loss L | ppl P | N tokens ... | weights: WHERE\n"
    "The weights: with CONFIG, the checkpoint at PATH, else train.out_dir's latest checkpoint,\n"
    "else model.init_from (a Hugging Face folder or file), else the random initial model;\n"
    "a CHECKPOINT folder (or a folder with `latest`) evaluates its weights under its own\n"
    "config; an HF_DIR (config.json + model.safetensors, e.g. `trainrt export`'s) its weights\n"
    "under the default config and --set (data.val, train.seq_len, train.batch_size...).\n"
    "What is scored:\n"
    "  (default)    train.eval_batches windows of train.batch_size x train.seq_len from the\n"
    "               start of data.val (train.eval_mode = \"sampled\")\n"
    "  --whole      every token of data.val but the first, exactly once (as\n"
    "               train.eval_mode = \"whole\"): its shards read as one stream, cut into\n"
    "               disjoint windows of train.seq_len targets, train.batch_size windows per\n"
    "               forward, the last window at its own shorter length; never wraps\n"
    "  --text FILE  the text of FILE (read whole), tokenized in memory as `trainrt prepare`\n"
    "               lays out one text file — with a tokenizer: its end-of-text token, then\n"
    "               the text's ids; without: one id per byte (a byte-level model) — and\n"
    "               scored whole like --whole (data.train and data.val are not read). The\n"
    "               tokenizer: --tokenizer PATH (a tokenizer.json/.model or a folder), else\n"
    "               the run's data.tokenizer (an HF_DIR's own tokenizer). With no model\n"
    "               argument, --tokenizer HF_DIR is the model too:\n"
    "               trainrt eval --text FILE --tokenizer HF_DIR\n"
    "Equal figures: `eval --text F` and `prepare --text F --val-fraction 1` + `eval --whole`.\n";

namespace {

bool is_dir(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
}

enum class Target { Config, Checkpoint, HfFolder };

// A folder with `latest` or a checkpoint's state.json is a checkpoint (a checkpoint is an HF
// export too, but has more: its optimizer state and run config); another folder with
// config.json a Hugging Face model; anything else a config file.
Target kind_of(const std::string& p) {
    if (!is_dir(p)) return Target::Config;
    if (exists(p + "/latest") || exists(p + "/state.json")) return Target::Checkpoint;
    return exists(p + "/config.json") ? Target::HfFolder : Target::Config;
}

std::string toml_string(const std::string& s) {
    std::string q = "\"";
    for (const char ch : s) {
        if (ch == '"' || ch == '\\') q += '\\';
        q += ch;
    }
    return q + "\"";
}

int usage(const std::string& message) { return usage_error("eval", message, kEvalHelp); }

// Sets key = value on config; false after printing the error.
bool set(trainrt_config* config, const char* key, const std::string& toml) {
    const trainrt_status st = trainrt_config_set(config, key, toml.c_str());
    if (st != TRAINRT_OK) fail_status((std::string("setting ") + key).c_str(), st);
    return st == TRAINRT_OK;
}

bool get_string(trainrt_config* config, const char* key, std::string& out) {
    return fetch_string(out, key, [&](char* b, size_t c, size_t* n) {
        return trainrt_config_get_string(b, c, n, config, key);
    });
}

}  // namespace

int cmd_eval(int argc, char** argv) {
    bool whole = false;
    std::string text_path, tokenizer;
    std::vector<char*> rest;
    bool positional = false;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--whole") {
            whole = true;
        } else if (a == "--text" || a == "--tokenizer") {
            if (i + 1 >= argc) return usage("option '" + a + "' needs a value");
            (a == "--text" ? text_path : tokenizer) = argv[++i];
        } else {
            if (a == "--set" || a == "--checkpoint") {
                rest.push_back(argv[i]);
                if (i + 1 < argc) rest.push_back(argv[++i]);
                continue;
            }
            if (a.empty() || a[0] != '-') positional = true;
            rest.push_back(argv[i]);
        }
    }
    const bool text_mode = !text_path.empty();
    if (!tokenizer.empty() && !text_mode) return usage("--tokenizer goes with --text FILE");
    if (text_mode && whole)
        return usage("--whole and --text exclude each other (--text is scored whole)");
    // `eval --text F --tokenizer HF_DIR`: the folder is the model too.
    std::string implied;
    if (text_mode && !positional) {
        if (tokenizer.empty() || kind_of(tokenizer) != Target::HfFolder)
            return usage("--text needs a model: CONFIG, CHECKPOINT or a Hugging Face folder "
                         "(or --tokenizer HF_DIR, whose model is then evaluated)");
        implied = tokenizer;
        rest.push_back(&implied[0]);
    }
    RunArgs args;
    std::string error;
    if (!parse_run_args(static_cast<int>(rest.size()), rest.data(), kCheckpoint, args, error,
                        {"--whole", "--text", "--tokenizer"}))
        return usage(error);
    const Target target = kind_of(args.config_path);
    if (target != Target::Config && !args.checkpoint.empty())
        return usage("--checkpoint goes with CONFIG; " + args.config_path + " is a " +
                     (target == Target::Checkpoint ? "checkpoint" : "model folder") +
                     " already");

    // The config, and where the weights come from.
    trainrt_config* config = nullptr;
    std::string checkpoint;
    trainrt_status st = TRAINRT_OK;
    if (target == Target::Config) {
        config = load_config(args);
        if (config == nullptr) return 1;
        if (!pick_checkpoint(config, args.checkpoint, checkpoint)) {
            trainrt_config_destroy(config);
            return 1;
        }
    } else {
        st = target == Target::Checkpoint
                 ? trainrt_config_from_checkpoint(&config, args.config_path.c_str())
                 : trainrt_config_create(&config);
        if (st != TRAINRT_OK)
            return fail_status(("reading " + args.config_path).c_str(), st);
        // Evaluation reads no train data; the checkpoint's or the folder's weights. --set
        // first: a folder's context may be shorter than the default train.seq_len.
        bool ok = set(config, "data.train", "\"\"");
        for (const auto& kv : args.sets)
            ok = ok && set(config, kv.first.c_str(), as_toml_value(kv.second));
        if (target == Target::Checkpoint) {
            checkpoint = args.config_path;
        } else if (ok && !set(config, "model.init_from", toml_string(args.config_path))) {
            std::fprintf(stderr, "trainrt: eval: %s is evaluated under the default config and "
                         "--set (e.g. --set train.seq_len=N for a short context)\n",
                         args.config_path.c_str());
            ok = false;
        }
        if (!ok) {
            trainrt_config_destroy(config);
            return 1;
        }
    }
    std::string init_from, eval_mode;
    int64_t seed = 0, vocab = 0, T = 0, B = 0, batches = 0;
    bool ok = get_string(config, "model.init_from", init_from) &&
              get_string(config, "train.eval_mode", eval_mode);
    trainrt_config_get_int(&seed, config, "model.seed");
    trainrt_config_get_int(&vocab, config, "model.vocab_size");
    trainrt_config_get_int(&T, config, "train.seq_len");
    trainrt_config_get_int(&B, config, "train.batch_size");
    trainrt_config_get_int(&batches, config, "train.eval_batches");
    if (text_mode && tokenizer.empty()) ok = ok && get_string(config, "data.tokenizer", tokenizer);
    whole = whole || eval_mode == "whole";
    // --text reads neither split; --whole takes a val split of any size; nothing is written.
    if (ok && text_mode) ok = set(config, "data.train", "\"\"") && set(config, "data.val", "\"\"");
    if (ok && whole && !text_mode) ok = set(config, "train.eval_mode", "\"whole\"");
    if (ok) ok = set(config, "train.out_dir", "\"\"") && set(config, "train.checkpoint_every", "0");
    if (!ok) {
        trainrt_config_destroy(config);
        return 1;
    }
    if (text_mode && tokenizer.empty() && vocab != 256) {
        trainrt_config_destroy(config);
        std::fprintf(stderr, "trainrt: eval --text: this model has %lld tokens, not bytes (256): "
                     "give the tokenizer it was trained with (--tokenizer PATH: a "
                     "tokenizer.json/.model or a model folder)\n", (long long)vocab);
        return 1;
    }
    const std::string weights =
        !checkpoint.empty()  ? checkpoint + " (checkpoint)"
        : !init_from.empty() ? init_from + (is_dir(init_from) ? " (Hugging Face folder)"
                                                              : " (model.init_from file)")
                             : "initial model (random, model.seed " + std::to_string(seed) + ")";
    // An eval prints its one line: the session's start-up account (model, init, the
    // acceleration line) is for runs that train; warnings and errors still show.
    trainrt_config_set_log(config, log_to_stderr, nullptr, TRAINRT_LOG_WARN);
    trainrt_session* session = create_session(config);
    if (session == nullptr) return 1;
    if (!checkpoint.empty()) {
        st = trainrt_session_load(session, checkpoint.c_str());
        if (st != TRAINRT_OK) {
            trainrt_session_destroy(session);
            return fail_status(("loading " + checkpoint).c_str(), st);
        }
    }

    if (!whole && !text_mode) {
        double loss = 0;
        st = trainrt_session_eval(&loss, session);
        trainrt_session_destroy(session);
        if (st != TRAINRT_OK) return fail_status("eval", st);
        // (train.batch_size = "auto" reads 0 here: the session resolved it.)
        const std::string sampled =
            B > 0 ? std::to_string(batches * B * T) + " tokens sampled (train.eval_batches " +
                        std::to_string(batches) + " x " + std::to_string(B) + " x " +
                        std::to_string(T) + ")"
                  : "train.eval_batches " + std::to_string(batches) + " windows sampled";
        std::printf("val loss %.6f | ppl %.4f | %s | weights: %s\n", loss, std::exp(loss),
                    sampled.c_str(), weights.c_str());
        return 0;
    }
    trainrt_eval_result r = TRAINRT_EVAL_RESULT_INIT;
    if (text_mode) {
        std::ifstream f(text_path, std::ios::binary);
        if (!f || is_dir(text_path)) {
            trainrt_session_destroy(session);
            std::fprintf(stderr, "trainrt: eval --text: cannot read '%s'\n", text_path.c_str());
            return 1;
        }
        const std::string text((std::istreambuf_iterator<char>(f)),
                               std::istreambuf_iterator<char>());
        st = trainrt_session_eval_text(&r, session, text.data(), text.size(),
                                       tokenizer.empty() ? nullptr : tokenizer.c_str());
    } else {
        st = trainrt_session_eval_whole(&r, session);
    }
    trainrt_session_destroy(session);
    if (st != TRAINRT_OK) return fail_status(text_mode ? "eval --text" : "eval --whole", st);
    std::printf("%s loss %.6f | ppl %.4f | %lld tokens, %s (%lld windows of <= %lld) | "
                "weights: %s\n",
                text_mode ? "text" : "val", r.loss, r.perplexity, (long long)r.tokens,
                text_mode ? ("all of " + text_path).c_str() : "the whole split",
                (long long)r.windows, (long long)T, weights.c_str());
    return 0;
}

}  // namespace trainrt_cli
