// Helpers shared by the C API tests (they see only the public header).
#pragma once
#include <trainrt/trainrt.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

inline std::string last_error() { return trainrt_last_error_message(); }

// True when `word` occurs in `text` as a whole identifier (not inside trainrt_config_set).
inline bool names(const std::string& text, const std::string& word) {
    const std::regex re("(^|[^A-Za-z0-9_])" + word + "($|[^A-Za-z0-9_])");
    return std::regex_search(text, re);
}

// A NULL argument must give INVALID_ARGUMENT and a message naming the argument.
#define EXPECT_NULL_ARG(call, arg)                                                   \
    do {                                                                             \
        const trainrt_status st_ = (call);                                           \
        EXPECT_EQ(st_, TRAINRT_ERR_INVALID_ARGUMENT) << #call;                       \
        const std::string msg_ = trainrt_last_error_message();                       \
        EXPECT_TRUE(names(msg_, arg)) << #call << ": message does not name '" << arg \
                                      << "': " << msg_;                              \
    } while (0)

// ---------------------------------------------------------------- scratch files

// A fresh folder for the running test under TRAINRT_TEST_TMP.
inline std::string scratch_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/capi/" +
                            info->test_suite_name() + "." + info->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}


// Pseudo-random ids in [0, vocab).
inline std::vector<uint16_t> lcg_tokens(size_t n, uint32_t seed, int vocab) {
    std::vector<uint16_t> out(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        out[i] = static_cast<uint16_t>((x >> 8) % static_cast<uint32_t>(vocab));
    }
    return out;
}

// An llm.c uint16 shard (FORMATS.md §1): 256 int32 header [magic, version, ntok, 0...], then
// the ids. ntok_field < 0: the real count.
inline void write_shard(const std::string& path, const std::vector<uint16_t>& tokens,
                 int32_t magic = 20240520, int32_t version = 1, int64_t ntok_field = -1) {
    int32_t header[256] = {};
    header[0] = magic;
    header[1] = version;
    header[2] = static_cast<int32_t>(ntok_field < 0 ? static_cast<int64_t>(tokens.size())
                                                    : ntok_field);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    ASSERT_TRUE(f.good()) << path;
}

// ---------------------------------------------------------------- tokenizers

// GPT-2's byte alphabet, UTF-8: byte b stands for itself when printable, else U+0100 onward.
inline std::string tokenizer_byte_char(int b) {
    static int shifted[256];
    static const bool init = [] {
        int next = 256;
        for (int k = 0; k < 256; k++) {
            const bool keep = (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE;
            shifted[k] = keep ? k : next++;
        }
        return true;
    }();
    (void)init;
    const int c = shifted[b];
    std::string s;
    if (c < 0x80) {
        if (c == '"' || c == '\\') s += '\\';
        s += static_cast<char>(c);
    } else {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
}

// A byte-level BPE tokenizer.json written by the tests: bytes have ids 0..255; "he" 256, "ll" 257, "hell" 258, "hello" 259; "<|eot|>" 300.
inline std::string tiny_tokenizer_json() {
    std::string vocab;
    for (int b = 0; b < 256; b++) vocab += "\"" + tokenizer_byte_char(b) + "\": " + std::to_string(b) + ", ";
    vocab += R"("he": 256, "ll": 257, "hell": 258, "hello": 259)";
    return R"({"added_tokens": [{"id": 300, "content": "<|eot|>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {)" + vocab + R"(}, "merges": ["h e", "l l", "he ll", "hell o"]}})";
}

// A chat template that wraps each message as <|role|>content<|eot|> and opens the assistant's
// turn with <|assistant|> (no quotes: it sits in JSON as is). Prefix rendering holds for it,
// so prepare's assistant mask is exact.
inline constexpr const char* kTinyChatTemplate =
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

// A model folder in dir: tiny_tokenizer_json() and a tokenizer_config.json with that chat
// template and eos_token "<|eot|>" (id 300); `config_json` replaces the config when given.
inline void write_chat_folder(const std::string& dir, const std::string& config_json = "") {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/tokenizer.json") << tiny_tokenizer_json();
    std::ofstream(dir + "/tokenizer_config.json")
        << (config_json.empty() ? std::string(R"({"eos_token": "<|eot|>", "chat_template": ")") +
                                      kTinyChatTemplate + "\"}"
                                : config_json);
}

// ---------------------------------------------------------------- sessions

// A one-layer GPT-2 (V 32, C 16) over train.bin / val.bin, constant lr, one thread: the base
// config of the session and misuse tests, which vary it with trainrt_config_set.
inline constexpr const char* kTinyGpt2Toml = R"(
[model]
vocab_size = 32
context_length = 16
n_layer = 1
n_head = 2
d_model = 16

[data]
train = "train.bin"
val = "val.bin"

[train]
batch_size = 2
seq_len = 8
steps = 1000
eval_every = 0
eval_batches = 2

[optim]
lr = 0.01
schedule = "constant"

[runtime]
threads = 1
log_every = 1
)";


inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// key = value pairs applied with trainrt_config_set.
using ConfigSets = std::vector<std::pair<std::string, std::string>>;

// Fixture base: a scratch folder for the test, and sessions opened from TOML text (paths
// relative to that folder), all destroyed when the test ends.
class CapiSessionTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = scratch_dir(); }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
    }

    // The config, `sets` applied, logging quiet; nullptr (and a failed expectation) on error.
    trainrt_config* config_from(const std::string& toml, const ConfigSets& sets = {}) {
        trainrt_config* c = nullptr;
        EXPECT_EQ(trainrt_config_from_string(&c, toml.c_str(), dir_.c_str()), TRAINRT_OK)
            << last_error();
        if (c == nullptr) return nullptr;
        for (const auto& kv : sets)
            EXPECT_EQ(trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()), TRAINRT_OK)
                << kv.first << ": " << last_error();
        trainrt_config_set_log(c, nullptr, nullptr, TRAINRT_LOG_ERROR);
        return c;
    }

    // A session of that config, destroyed at the end of the test (or by close).
    trainrt_session* open_from(const std::string& toml, const ConfigSets& sets = {}) {
        trainrt_config* c = config_from(toml, sets);
        if (c == nullptr) return nullptr;
        trainrt_session* s = nullptr;
        EXPECT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        if (s != nullptr) sessions_.push_back(s);
        return s;
    }

    // Destroys s now (releasing its train.out_dir).
    void close(trainrt_session* s) {
        sessions_.erase(std::find(sessions_.begin(), sessions_.end(), s));
        trainrt_session_destroy(s);
    }

    // One step; a failed expectation if it fails.
    static trainrt_step_result step_result(trainrt_session* s) {
        trainrt_step_result r;
        trainrt_step_result_init(&r);
        EXPECT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
        return r;
    }

    std::string dir_;
    std::vector<trainrt_session*> sessions_;
};
