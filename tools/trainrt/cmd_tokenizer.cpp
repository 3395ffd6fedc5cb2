// `trainrt tokenizer train`: a byte-level BPE tokenizer trained on the user's text, written as
// a Hugging Face tokenizer.json (trainrt_tokenizer_train). Public C API only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_common.h"

namespace trainrt_cli {

const char* const kTokenizerHelp =
    "usage: trainrt tokenizer train --vocab-size N --text FILE... --out PATH\n"
    "                               [--min-frequency F] [--special TOKEN]... [--no-special]\n"
    "                               [--force]\n"
    "\n"
    "Trains a byte-level BPE tokenizer (GPT-2's pre-tokenizer and byte alphabet: any text\n"
    "round-trips) on the text files and writes it to PATH as a Hugging Face tokenizer.json,\n"
    "for `trainrt prepare --tokenizer PATH`, data.tokenizer and the Hugging Face libraries.\n"
    "N counts every token: the special tokens (ids 0.., default <|endoftext|>; --special\n"
    "adds one, the first one replacing the default; --no-special: none), the 256 bytes and\n"
    "one token per merge, the most frequent pair first, while a pair occurs at least F times\n"
    "(default 2). An existing PATH is kept unless --force. The same text gives the same file.\n";

int cmd_tokenizer(int argc, char** argv) {
    if (argc < 1 || std::strcmp(argv[0], "train") != 0) {
        return usage_error("tokenizer",
                           argc < 1 ? std::string("tokenizer needs a subcommand: train")
                                    : "unknown subcommand '" + std::string(argv[0]) +
                                          "' (the one subcommand is train)" +
                                          did_you_mean(argv[0], {"train"}),
                           kTokenizerHelp);
    }
    auto usage = [](const std::string& message) {
        return usage_error("tokenizer", message, kTokenizerHelp);
    };
    std::vector<std::string> texts, specials;
    std::string out;
    long long vocab = 0, min_frequency = 2;
    bool no_special = false, force = false;
    const std::vector<std::string> options = {"--text",       "--out",        "--special",
                                              "--vocab-size", "--min-frequency",
                                              "--no-special", "--force"};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (std::find(options.begin(), options.end(), a) == options.end())
            return usage(unknown_option(a, options));
        if (a == "--no-special") { no_special = true; continue; }
        if (a == "--force") { force = true; continue; }
        if (i + 1 >= argc) return usage("option '" + a + "' needs a value");
        auto number = [&](long long& v, long long lo, long long hi) {
            char* end = nullptr;
            v = std::strtoll(argv[++i], &end, 10);
            return *end == '\0' && v >= lo && v <= hi;
        };
        if (a == "--text") {
            while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0)
                texts.push_back(argv[++i]);
        } else if (a == "--out") {
            out = argv[++i];
        } else if (a == "--special") {
            specials.push_back(argv[++i]);
        } else if (a == "--vocab-size") {
            if (!number(vocab, 1, 0x7FFFFFFF))
                return usage(std::string("bad --vocab-size '") + argv[i] + "'");
        } else if (a == "--min-frequency") {
            if (!number(min_frequency, 1, (1LL << 62)))
                return usage(std::string("bad --min-frequency '") + argv[i] + "'");
        }
    }
    if (texts.empty() || out.empty() || vocab == 0)
        return usage("tokenizer train needs --vocab-size N, --text FILE... and --out PATH");
    if (no_special && !specials.empty())
        return usage("--no-special and --special exclude each other");

    std::vector<const char*> inputs, special_ptrs;
    for (const std::string& t : texts) inputs.push_back(t.c_str());
    for (const std::string& s : specials) special_ptrs.push_back(s.c_str());
    trainrt_tokenizer_train_options o = TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT;
    o.vocab_size = static_cast<int32_t>(vocab);
    o.min_frequency = min_frequency;
    o.overwrite = force ? 1 : 0;
    static const char* const kNone[1] = {nullptr};
    if (no_special) {
        o.special_tokens = kNone;  // non-NULL with n = 0: no special tokens
        o.n_special_tokens = 0;
    } else if (!specials.empty()) {
        o.special_tokens = special_ptrs.data();
        o.n_special_tokens = special_ptrs.size();
    }
    trainrt_tokenizer_train_result r = TRAINRT_TOKENIZER_TRAIN_RESULT_INIT;
    const auto t0 = std::chrono::steady_clock::now();
    const trainrt_status st =
        trainrt_tokenizer_train(&r, inputs.data(), inputs.size(), out.c_str(), &o);
    if (st != TRAINRT_OK) return fail_status("tokenizer train", st);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("wrote %s: vocab_size %d (%d merges%s)\n", out.c_str(), r.vocab_size, r.merges,
                r.vocab_size < vocab ? "; no pair left at --min-frequency" : "");
    std::printf("%.1f MB of text, %lld pieces (%lld distinct), %.1f s = %.1f MB/s\n",
                r.bytes / 1e6, (long long)r.pieces, (long long)r.distinct_pieces, s,
                s > 0 ? r.bytes / 1e6 / s : 0.0);
    return 0;
}

}  // namespace trainrt_cli
