// C API tests of the model's tensors through trainrt_session_param_* / *_params (list, read,
// write — the working copy of a bf16 run follows) and of the user metadata checkpoints carry.
// A tiny GPT-2 (V 32, T_max 16, L1 H2 C16; B 2, T 8, one thread). Public header only.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Sets = std::vector<std::pair<std::string, std::string>>;

struct Tensor {
    std::string name;
    trainrt_param_info info;
};

class CapiParams : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        write_shard(dir_ + "/train.bin", lcg_tokens(4096, 1, 32));
        write_shard(dir_ + "/val.bin", lcg_tokens(512, 2, 32));
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
    }
    trainrt_session* make_session(const Sets& sets = {}) {
        trainrt_config* c = nullptr;
        if (trainrt_config_from_string(&c, kTinyGpt2Toml, dir_.c_str()) != TRAINRT_OK) {
            ADD_FAILURE() << last_error();
            return nullptr;
        }
        for (const auto& kv : sets)
            if (trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()) != TRAINRT_OK)
                ADD_FAILURE() << kv.first << ": " << last_error();
        trainrt_session* s = nullptr;
        const trainrt_status st = trainrt_session_create(&s, c);
        trainrt_config_destroy(c);
        if (st != TRAINRT_OK) {
            ADD_FAILURE() << "session_create: " << last_error();
            return nullptr;
        }
        sessions_.push_back(s);
        return s;
    }
    static std::vector<Tensor> tensors(trainrt_session* s) {
        int64_t n = 0;
        EXPECT_EQ(trainrt_session_param_count(&n, nullptr, s), TRAINRT_OK) << last_error();
        std::vector<Tensor> out;
        for (int64_t i = 0; i < n; ++i) {
            Tensor t;
            trainrt_param_info_init(&t.info);
            size_t needed = 0;
            EXPECT_EQ(trainrt_session_param_info(&t.info, nullptr, 0, &needed, s, i), TRAINRT_OK);
            t.name.assign(needed + 1, '\0');
            EXPECT_EQ(trainrt_session_param_info(&t.info, &t.name[0], t.name.size(), &needed, s, i),
                      TRAINRT_OK);
            t.name.resize(needed);
            out.push_back(t);
        }
        return out;
    }
    static std::vector<float> read(trainrt_session* s, const char* name = nullptr) {
        size_t n = 0;
        if (name) {
            for (const Tensor& t : tensors(s))
                if (t.name == name) n = static_cast<size_t>(t.info.numel);
        } else {
            int64_t numel = 0;
            EXPECT_EQ(trainrt_session_param_count(nullptr, &numel, s), TRAINRT_OK);
            n = static_cast<size_t>(numel);
        }
        std::vector<float> out(n);
        EXPECT_EQ(trainrt_session_read_params(out.data(), n, s, name), TRAINRT_OK) << last_error();
        return out;
    }
    static double eval(trainrt_session* s) {
        double loss = 0;
        EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_OK) << last_error();
        return loss;
    }
    static std::string metadata(trainrt_session* s, const char* key, int32_t* found) {
        size_t needed = 0;
        EXPECT_EQ(trainrt_session_get_metadata(nullptr, 0, &needed, found, s, key), TRAINRT_OK);
        std::string v(needed + 1, '\0');
        EXPECT_EQ(trainrt_session_get_metadata(&v[0], v.size(), &needed, found, s, key),
                  TRAINRT_OK);
        v.resize(needed);
        return v;
    }

    std::string dir_;
    std::vector<trainrt_session*> sessions_;
};

}  // namespace

TEST_F(CapiParams, TheTensorsTileTheFlatBufferInTableOrderWithTheirHfNamesAndShapes) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    int64_t count = 0, numel = 0;
    ASSERT_EQ(trainrt_session_param_count(&count, &numel, s), TRAINRT_OK);
    const std::vector<Tensor> ts = tensors(s);
    ASSERT_EQ(static_cast<int64_t>(ts.size()), count);
    // GPT-2, one layer: wte, wpe, 12 block tensors, ln_f weight and bias (the head is tied).
    EXPECT_EQ(count, 16);
    std::map<std::string, const Tensor*> by_name;
    int64_t offset = 0;
    for (const Tensor& t : ts) {
        EXPECT_TRUE(by_name.emplace(t.name, &t).second) << t.name << " listed twice";
        EXPECT_EQ(t.info.offset, offset) << t.name;
        int64_t product = 1;
        for (int d = 0; d < t.info.ndim; ++d) product *= t.info.shape[d];
        for (int d = t.info.ndim; d < 4; ++d) EXPECT_EQ(t.info.shape[d], 0) << t.name;
        EXPECT_EQ(product, t.info.numel) << t.name;
        EXPECT_EQ(t.info.trainable, 1) << t.name;
        offset += t.info.numel;
    }
    EXPECT_EQ(offset, numel);
    const Tensor& wte = *by_name.at("wte.weight");
    EXPECT_EQ(wte.info.role, TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING);
    EXPECT_EQ(wte.info.ndim, 2);
    EXPECT_EQ(wte.info.shape[0], 32);
    EXPECT_EQ(wte.info.shape[1], 16);
    EXPECT_EQ(wte.info.layer, -1);
    EXPECT_EQ(by_name.at("wpe.weight")->info.role, TRAINRT_PARAM_ROLE_POSITION_EMBEDDING);
    const Tensor& qkv = *by_name.at("h.0.attn.c_attn.weight");
    EXPECT_EQ(qkv.info.role, TRAINRT_PARAM_ROLE_LINEAR);
    EXPECT_EQ(qkv.info.shape[0], 16);  // Conv1D: [in, out]
    EXPECT_EQ(qkv.info.shape[1], 48);
    EXPECT_EQ(qkv.info.layer, 0);
    EXPECT_EQ(by_name.at("h.0.attn.c_attn.bias")->info.role, TRAINRT_PARAM_ROLE_LINEAR_BIAS);
    EXPECT_EQ(by_name.at("ln_f.weight")->info.role, TRAINRT_PARAM_ROLE_NORM);
    EXPECT_EQ(by_name.at("ln_f.bias")->info.role, TRAINRT_PARAM_ROLE_NORM_BIAS);
    // The flat buffer is the named tensors back to back.
    const std::vector<float> flat = read(s);
    ASSERT_EQ(static_cast<int64_t>(flat.size()), numel);
    for (const Tensor& t : ts) {
        const std::vector<float> one = read(s, t.name.c_str());
        ASSERT_EQ(static_cast<int64_t>(one.size()), t.info.numel);
        EXPECT_EQ(std::memcmp(one.data(), flat.data() + t.info.offset, one.size() * sizeof(float)),
                  0) << t.name;
    }
    // An older caller's shorter struct gets only its bytes.
    trainrt_param_info old;
    std::memset(&old, 0x5a, sizeof old);
    old.struct_size = 16;
    old.version = 1;
    ASSERT_EQ(trainrt_session_param_info(&old, nullptr, 0, nullptr, s, 0), TRAINRT_OK);
    EXPECT_EQ(old.struct_size, 16u);
    EXPECT_EQ(old.ndim, 2);
    EXPECT_EQ(old.shape[0], 0x5a5a5a5a5a5a5a5a);
}

TEST_F(CapiParams, WritingATensorChangesTheLossAndWritingItBackRestoresItBitForBit) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    const double before = eval(s);
    const std::vector<float> wte = read(s, "wte.weight");
    std::vector<float> scaled = wte;
    for (float& x : scaled) x *= 3.0f;
    ASSERT_EQ(trainrt_session_write_params(s, "wte.weight", scaled.data(), scaled.size()),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(read(s, "wte.weight"), scaled);
    EXPECT_NE(eval(s), before);
    ASSERT_EQ(trainrt_session_write_params(s, "wte.weight", wte.data(), wte.size()), TRAINRT_OK);
    const double restored = eval(s);
    EXPECT_EQ(std::memcmp(&restored, &before, sizeof before), 0) << restored << " vs " << before;
}

// bf16 runs multiply a bf16 working copy of the weights: a write must refresh it, so a
// session given another session's weights evaluates exactly as that session does.
TEST_F(CapiParams, AWriteReachesTheBf16WorkingCopy) {
    for (const char* precision : {"fp32", "bf16"}) {
        SCOPED_TRACE(precision);
        const Sets sets = {{"runtime.precision", std::string("\"") + precision + "\""}};
        trainrt_session* a = make_session(sets);
        Sets other = sets;
        other.push_back({"model.seed", "99"});
        trainrt_session* b = make_session(other);
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        ASSERT_EQ(trainrt_session_step(nullptr, b), TRAINRT_OK);
        const double b_loss = eval(b);
        const std::vector<float> wb = read(b);
        ASSERT_NE(read(a), wb);
        ASSERT_EQ(trainrt_session_write_params(a, nullptr, wb.data(), wb.size()), TRAINRT_OK)
            << last_error();
        const double a_loss = eval(a);
        EXPECT_EQ(std::memcmp(&a_loss, &b_loss, sizeof a_loss), 0) << a_loss << " vs " << b_loss;
    }
}

// Federated averaging: two sessions train on their own data, their weights are averaged and
// written back to both, which then hold the same weights and evaluate the same.
TEST_F(CapiParams, FederatedAveragingOfTwoSessions) {
    trainrt_session* a = make_session({{"data.seed", "1"}});
    trainrt_session* b = make_session({{"data.seed", "2"}});
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(trainrt_session_step(nullptr, a), TRAINRT_OK);
        ASSERT_EQ(trainrt_session_step(nullptr, b), TRAINRT_OK);
    }
    const std::vector<float> wa = read(a), wb = read(b);
    ASSERT_NE(wa, wb);
    std::vector<float> avg(wa.size());
    for (size_t i = 0; i < wa.size(); ++i) avg[i] = 0.5f * (wa[i] + wb[i]);
    for (trainrt_session* s : {a, b})
        ASSERT_EQ(trainrt_session_write_params(s, nullptr, avg.data(), avg.size()), TRAINRT_OK);
    EXPECT_EQ(read(a), avg);
    EXPECT_EQ(read(b), avg);
    const double la = eval(a), lb = eval(b);
    EXPECT_EQ(std::memcmp(&la, &lb, sizeof la), 0);
    // Training goes on from the averaged weights (the moments were kept).
    trainrt_step_result r;
    trainrt_step_result_init(&r);
    ASSERT_EQ(trainrt_session_step(&r, a), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_sync(&r, a), TRAINRT_OK);
    EXPECT_EQ(r.step, 4);
    EXPECT_TRUE(std::isfinite(r.loss));
}

TEST_F(CapiParams, ASaveAtTheSameStepAfterAWriteHoldsTheNewWeights) {
    const std::string out = dir_ + "/run";
    trainrt_session* s = make_session({{"train.out_dir", "\"" + out + "\""}});
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, nullptr), TRAINRT_OK) << last_error();
    std::vector<float> w = read(s, "ln_f.bias");
    for (float& x : w) x += 0.25f;
    ASSERT_EQ(trainrt_session_write_params(s, "ln_f.bias", w.data(), w.size()), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_set_metadata(s, "round", "7"), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, nullptr), TRAINRT_OK) << last_error();
    trainrt_session* t = make_session({{"train.out_dir", "\"" + out + "\""}});
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(trainrt_session_load(t, out.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(read(t, "ln_f.bias"), w);
    int32_t found = 0;
    EXPECT_EQ(metadata(t, "round", &found), "7");
    EXPECT_EQ(found, 1);
}

// A frozen tensor of a fine-tune is left out of its checkpoints while it holds
// model.init_from's values; once written, checkpoints must store it.
TEST_F(CapiParams, AWrittenFrozenTensorIsStoredByLaterCheckpoints) {
    trainrt_session* base = make_session();
    ASSERT_NE(base, nullptr);
    const std::string hf = dir_ + "/base-hf";
    ASSERT_EQ(trainrt_session_export(base, hf.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    const Sets sets = {{"model.init_from", "\"" + hf + "\""},
                       {"train.trainable", "[\"ln_f.*\"]"}};
    trainrt_session* s = make_session(sets);
    ASSERT_NE(s, nullptr);
    const std::vector<Tensor> ts = tensors(s);
    for (const Tensor& t : ts)
        EXPECT_EQ(t.info.trainable, t.name.rfind("ln_f.", 0) == 0 ? 1 : 0) << t.name;
    std::vector<float> wpe = read(s, "wpe.weight");
    for (float& x : wpe) x = -x;
    ASSERT_EQ(trainrt_session_write_params(s, "wpe.weight", wpe.data(), wpe.size()), TRAINRT_OK);
    const std::string ckpt = dir_ + "/ckpt";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    trainrt_session* t = make_session(sets);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(trainrt_session_load(t, ckpt.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(read(t, "wpe.weight"), wpe);
}

TEST_F(CapiParams, MetadataIsSortedSavedAndReplacedByLoad) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    int32_t found = -1;
    EXPECT_EQ(metadata(s, "client", &found), "");
    EXPECT_EQ(found, 0);
    ASSERT_EQ(trainrt_session_set_metadata(s, "client", "hospital-3"), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_set_metadata(s, "a.round", "12"), TRAINRT_OK);
    const std::string utf8 = "\xc3\xa9t\xc3\xa9 \"quoted\"\n\\tab";
    ASSERT_EQ(trainrt_session_set_metadata(s, "note_1", utf8.c_str()), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_set_metadata(s, "gone", "x"), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_set_metadata(s, "gone", nullptr), TRAINRT_OK);
    int64_t n = 0;
    ASSERT_EQ(trainrt_session_metadata_count(&n, s), TRAINRT_OK);
    ASSERT_EQ(n, 3);
    std::vector<std::string> keys;
    for (int64_t i = 0; i < n; ++i) {
        char buf[64];
        size_t needed = 0;
        ASSERT_EQ(trainrt_session_metadata_key(buf, sizeof buf, &needed, s, i), TRAINRT_OK);
        keys.emplace_back(buf, needed);
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"a.round", "client", "note_1"}));
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    const std::string ckpt = dir_ + "/ckpt";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK);
    // A session with metadata of its own gets the checkpoint's instead.
    trainrt_session* t = make_session();
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(trainrt_session_set_metadata(t, "mine", "1"), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_load(t, ckpt.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(metadata(t, "note_1", &found), utf8);
    EXPECT_EQ(metadata(t, "client", &found), "hospital-3");
    EXPECT_EQ(metadata(t, "mine", &found), "");
    EXPECT_EQ(found, 0);
    // A checkpoint without metadata (every earlier one) empties it.
    trainrt_session* u = make_session();
    ASSERT_NE(u, nullptr);
    const std::string plain = dir_ + "/plain";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, u, plain.c_str()), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_load(t, plain.c_str()), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_metadata_count(&n, t), TRAINRT_OK);
    EXPECT_EQ(n, 0);
}
