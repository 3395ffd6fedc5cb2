// GPT-2 init and Hugging Face safetensors loading, incl. every mismatch the loader refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/model_weights.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

const ModelSpec kShape = gpt2_spec(13, 8, 2, 2, 8);

std::string tmp_path(const std::string& name) {
    fs::create_directories(TRAINRT_TEST_TMP "/gpt_weights");
    return TRAINRT_TEST_TMP "/gpt_weights/" + name;
}

std::vector<float> random_params(const ParamTable& t, uint64_t seed) {
    std::vector<float> p(t.total());
    init_random(t, seed, p.data());
    return p;
}

// Writes the table's tensors under HF names, with optional renames / extras / omissions.
void write_hf(const std::string& path, const ParamTable& t, const std::vector<float>& p,
              const std::string& prefix = "", const std::string& skip = "",
              std::vector<TensorToWrite> extra = {}, DType dtype = DType::F32) {
    std::vector<TensorToWrite> ts;
    for (const ParamTensor& pt : t.tensors()) {
        if (pt.name == skip) continue;
        ts.push_back({prefix + pt.name, dtype, pt.shape, p.data() + pt.offset});
    }
    for (auto& e : extra) ts.push_back(e);
    write_safetensors(path, ts);
}

std::string load_error(const std::string& path, const ParamTable& t) {
    std::vector<float> out(t.total());
    try {
        load_hf_weights(t, path, out.data());
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Format);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GptInit, DeterministicGpt2Statistics) {
    ParamTable t(gpt2_spec(64, 32, 2, 2, 64));
    const std::vector<float> a = random_params(t, 42), b = random_params(t, 42),
                             c = random_params(t, 43);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    const ParamTensor& wte = t.at(Slot::TokenEmbedding);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < wte.numel; ++i) {
        sum += a[wte.offset + i];
        sq += double(a[wte.offset + i]) * a[wte.offset + i];
    }
    const double mean = sum / wte.numel, stddev = std::sqrt(sq / wte.numel - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.002);
    EXPECT_NEAR(stddev, 0.02, 0.001);
    const ParamTensor& proj = t.at(Slot::Down, 1);  // residual projection: 0.02 / sqrt(2L)
    sq = 0;
    for (size_t i = 0; i < proj.numel; ++i) sq += double(a[proj.offset + i]) * a[proj.offset + i];
    EXPECT_NEAR(std::sqrt(sq / proj.numel), 0.01, 0.0007);
    EXPECT_EQ(a[t.at(Slot::AttnNorm, 0).offset], 1.0f);
    EXPECT_EQ(a[t.at(Slot::AttnNormBias, 0).offset], 0.0f);
    EXPECT_EQ(a[t.at(Slot::QkvBias, 0).offset + 5], 0.0f);
}

TEST(GptLoad, RoundTripsF32AndAcceptsPrefixAndBuffers) {
    ParamTable t(kShape);
    const std::vector<float> p = random_params(t, 1);
    const float bias_buffer[4] = {1, 0, 1, 1};
    const std::string path = tmp_path("prefixed.safetensors");
    write_hf(path, t, p, "transformer.", "",
             {{"h.0.attn.bias", DType::F32, {2, 2}, bias_buffer},
              {"lm_head.weight", DType::F32, t.at(Slot::TokenEmbedding).shape, p.data()}});
    std::vector<float> out(t.total());
    load_hf_weights(t, path, out.data());
    EXPECT_EQ(out, p);
}

TEST(GptLoad, AcceptsBf16) {
    ParamTable t(kShape);
    const std::vector<float> p = random_params(t, 2);
    const std::string path = tmp_path("bf16.safetensors");
    write_hf(path, t, p, "", "", {}, DType::BF16);
    std::vector<float> out(t.total());
    load_hf_weights(t, path, out.data());
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(out[i], p[i], std::fabs(p[i]) / 128 + 1e-30);
}

TEST(GptLoad, MissingTensorNamesItAndTheKey) {
    ParamTable t(kShape);
    const std::string path = tmp_path("missing.safetensors");
    write_hf(path, t, random_params(t, 3), "", "h.1.ln_2.bias");
    const std::string msg = load_error(path, t);
    EXPECT_NE(msg.find("h.1.ln_2.bias"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.init_from"), std::string::npos) << msg;
}

TEST(GptLoad, ShapeMismatchNamesBothShapes) {
    ParamTable small(kShape);
    ModelSpec wider = kShape;
    wider.C = 16;
    ParamTable t(wider);
    const std::string path = tmp_path("narrow.safetensors");
    write_hf(path, small, random_params(small, 4));
    const std::string msg = load_error(path, t);
    EXPECT_NE(msg.find("wte.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[13, 8]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[13, 16]"), std::string::npos) << msg;
}

TEST(GptLoad, ExtraLayerIsRefused) {
    ModelSpec deeper = kShape;
    deeper.L = 3;
    ParamTable big(deeper), t(kShape);
    const std::string path = tmp_path("deeper.safetensors");
    write_hf(path, big, random_params(big, 5));
    const std::string msg = load_error(path, t);
    EXPECT_NE(msg.find("unexpected tensor 'h.2."), std::string::npos) << msg;
}

TEST(GptLoad, MissingFileIsIoError) {
    ParamTable t(kShape);
    std::vector<float> out(t.total());
    try {
        load_hf_weights(t, tmp_path("does-not-exist.safetensors"), out.data());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
    }
}

// model.init_from must hold finite weights: a NaN / inf is refused naming file, tensor and
// element, for F32 and BF16 files alike (safetensors stores them without complaint).
TEST(GptLoad, NonFiniteWeightsAreRefusedNamingFileAndTensor) {
    ParamTable t(kShape);
    const ParamTensor& target = t.at(Slot::AttnOut, 0);
    const float inf = std::numeric_limits<float>::infinity();
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), inf, -inf}) {
        for (const DType dtype : {DType::F32, DType::BF16}) {
            std::vector<float> p = random_params(t, 4);
            p[target.offset + 5] = bad;
            const std::string path = tmp_path("nonfinite.safetensors");
            write_hf(path, t, p, "", "", {}, dtype);
            std::vector<float> out(t.total());
            try {
                load_init_weights(t, path, out.data());
                ADD_FAILURE() << "loaded " << bad;
            } catch (const Error& e) {
                EXPECT_EQ(e.status(), Status::NonFinite);
                const std::string msg = e.what();
                EXPECT_NE(msg.find("model.init_from '" + path + "'"), std::string::npos) << msg;
                EXPECT_NE(msg.find("tensor '" + target.name + "' holds " +
                                   (std::isnan(bad) ? "nan" : bad > 0 ? "inf" : "-inf") +
                                   " at element 5 of "),
                          std::string::npos) << msg;
            }
        }
    }
}
