// llm.c model checkpoint import: synthetic v3 (fp32) and v5 (bf16) files written here from a
// known ParamTable buffer (with the (in,out) -> (out,in) transposition done independently of
// the loader), loaded back and compared exactly; then every malformed case.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/model_weights.h"
#include "model/llmc_import.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

const ModelSpec kShape = gpt2_spec(13, 8, 2, 2, 8);  // V, maxT, L, NH, C
constexpr int kVp = 16;

std::string tmp_path(const std::string& name) {
    fs::create_directories(TRAINRT_TEST_TMP "/llmc_import");
    return TRAINRT_TEST_TMP "/llmc_import/" + name;
}

std::vector<float> random_params(const ParamTable& t) {
    std::vector<float> p(t.total());
    init_random(t, 7, p.data());
    // Non-trivial biases and LayerNorm params, so a mixed-up tensor order cannot pass.
    for (size_t i = 0; i < p.size(); ++i)
        if (p[i] == 0.0f || p[i] == 1.0f) p[i] += 0.001f * static_cast<float>(i % 97);
    t.clear_padding(p.data());  // not part of the model: no file carries it
    return p;
}

// bf16 by truncation: the test needs exactly representable values, not a rounding rule.
uint16_t to_bf16_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
}
float bf16_value(float f) {
    const uint32_t u = static_cast<uint32_t>(to_bf16_bits(f)) << 16;
    float out;
    std::memcpy(&out, &u, 4);
    return out;
}

// The llm.c file for (table, p): values in llm.c order, weights as (out, in).
std::string llmc_bytes(const ParamTable& t, const std::vector<float>& p, int version,
                       int32_t magic = kLlmcModelMagic) {
    const ModelSpec& s = t.spec();
    const int C = s.C;
    std::vector<float> vals;
    const auto append = [&](const ParamTensor& pt) {
        vals.insert(vals.end(), p.begin() + pt.offset, p.begin() + pt.offset + pt.numel);
    };
    // HF Conv1D weight [in][out] -> llm.c [out][in].
    const auto append_t = [&](const ParamTensor& pt) {
        const int64_t in = pt.shape[0], out = pt.shape[1];
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i) vals.push_back(p[pt.offset + i * out + o]);
    };
    append(t.at(Slot::TokenEmbedding));
    for (int k = 0; k < (kVp - s.V) * C; ++k) vals.push_back(1234.5f);  // padding rows
    append(t.at(Slot::PositionEmbedding));
    const Slot order[] = {Slot::AttnNorm, Slot::AttnNormBias, Slot::Qkv,     Slot::QkvBias,
                          Slot::AttnOut,  Slot::AttnOutBias,  Slot::MlpNorm, Slot::MlpNormBias,
                          Slot::Up,       Slot::UpBias,       Slot::Down,    Slot::DownBias};
    for (Slot bp : order)
        for (int l = 0; l < s.L; ++l) {
            const ParamTensor& pt = t.at(bp, l);
            if (pt.shape.size() == 2) append_t(pt);
            else append(pt);
        }
    append(t.at(Slot::FinalNorm));
    append(t.at(Slot::FinalNormBias));

    int32_t hdr[256] = {};
    hdr[0] = magic;
    hdr[1] = version;
    hdr[2] = s.maxT;
    hdr[3] = s.V;
    hdr[4] = s.L;
    hdr[5] = s.NH;
    hdr[6] = C;
    hdr[7] = kVp;
    std::string out(reinterpret_cast<const char*>(hdr), sizeof hdr);
    if (version == 5) {
        for (float f : vals) {
            const uint16_t b = to_bf16_bits(f);
            out.append(reinterpret_cast<const char*>(&b), 2);
        }
    } else {
        out.append(reinterpret_cast<const char*>(vals.data()), vals.size() * 4);
    }
    return out;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string error_of(const std::function<void()>& f, Status want) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), want) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no trt::Error thrown";
    return "";
}

#define EXPECT_HAS(msg, needle) \
    EXPECT_NE((msg).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (msg)

}  // namespace

TEST(LlmcImport, Fp32RoundTripIsExact) {
    const ParamTable t(kShape);
    const std::vector<float> p = random_params(t);
    const std::string path = tmp_path("v3.bin");
    write_file(path, llmc_bytes(t, p, 3));
    const LlmcHeader h = read_llmc_header(path);
    EXPECT_EQ(h.version, 3);
    EXPECT_EQ(h.Vp, kVp);
    std::vector<float> out(t.total(), -1.0f);
    load_llmc_gpt2(t, path, out.data());
    EXPECT_EQ(out, p);
}

TEST(LlmcImport, Bf16WidensExactly) {
    const ParamTable t(kShape);
    const std::vector<float> p = random_params(t);
    const std::string path = tmp_path("v5.bin");
    write_file(path, llmc_bytes(t, p, 5));
    std::vector<float> out(t.total(), -1.0f);
    load_llmc_gpt2(t, path, out.data());
    for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(out[i], bf16_value(p[i])) << "element " << i;
}

TEST(LlmcImport, LoadInitWeightsDispatchesOnContent) {
    const ParamTable t(kShape);
    const std::vector<float> p = random_params(t);
    const std::string llmc = tmp_path("dispatch.bin");  // names say nothing about the format
    const std::string st = tmp_path("dispatch.bin2");
    write_file(llmc, llmc_bytes(t, p, 3));
    std::vector<TensorToWrite> ts;
    for (const ParamTensor& pt : t.tensors()) ts.push_back({pt.name, DType::F32, pt.shape, p.data() + pt.offset});
    write_safetensors(st, ts);
    EXPECT_TRUE(is_llmc_checkpoint(llmc));
    EXPECT_FALSE(is_llmc_checkpoint(st));
    std::vector<float> a(t.total()), b(t.total());
    load_init_weights(t, llmc, a.data());
    load_init_weights(t, st, b.data());
    EXPECT_EQ(a, p);
    EXPECT_EQ(b, p);
}

TEST(LlmcImport, TruncatedFileRefused) {
    const ParamTable t(kShape);
    const std::string bytes = llmc_bytes(t, random_params(t), 3);
    const std::string path = tmp_path("truncated.bin");
    write_file(path, bytes.substr(0, bytes.size() - 4));
    std::vector<float> out(t.total());
    const std::string msg = error_of([&] { load_llmc_gpt2(t, path, out.data()); }, Status::Format);
    EXPECT_HAS(msg, path);
    EXPECT_HAS(msg, "truncated");
    EXPECT_HAS(msg, std::to_string(bytes.size() - 4) + " bytes");
    EXPECT_HAS(msg, "describes " + std::to_string(bytes.size()));
}

TEST(LlmcImport, OverlongAndHeaderOnlyFilesRefused) {
    const ParamTable t(kShape);
    const std::string bytes = llmc_bytes(t, random_params(t), 5);
    const std::string path = tmp_path("long.bin");
    write_file(path, bytes + "xx");
    std::string msg = error_of([&] { read_llmc_header(path); }, Status::Format);
    EXPECT_HAS(msg, "longer than its header says");
    write_file(path, bytes.substr(0, 100));
    msg = error_of([&] { read_llmc_header(path); }, Status::Format);
    EXPECT_HAS(msg, "too short");
}

TEST(LlmcImport, WrongMagicAndVersionRefused) {
    const ParamTable t(kShape);
    const std::vector<float> p = random_params(t);
    const std::string path = tmp_path("bad_header.bin");
    write_file(path, llmc_bytes(t, p, 3, 20240520));  // a token-shard magic
    EXPECT_FALSE(is_llmc_checkpoint(path));
    std::string msg = error_of([&] { read_llmc_header(path); }, Status::Format);
    EXPECT_HAS(msg, "bad magic 20240520");
    for (int version : {1, 4, 6}) {
        write_file(path, llmc_bytes(t, p, version));
        msg = error_of([&] { read_llmc_header(path); }, Status::Format);
        EXPECT_HAS(msg, "unsupported version " + std::to_string(version));
    }
    EXPECT_EQ(error_of([&] { read_llmc_header(tmp_path("missing.bin")); }, Status::Io).empty(), false);
}

TEST(LlmcImport, PaddedVocabSmallerThanVocabRefused) {
    const ParamTable t(kShape);
    std::string bytes = llmc_bytes(t, random_params(t), 3);
    const int32_t vp = kShape.V - 1;
    std::memcpy(&bytes[7 * 4], &vp, 4);
    const std::string path = tmp_path("vp.bin");
    write_file(path, bytes);
    const std::string msg = error_of([&] { read_llmc_header(path); }, Status::Format);
    EXPECT_HAS(msg, "padded_vocab_size 12 is smaller than vocab_size 13");
}

TEST(LlmcImport, ShapeMismatchNamesConfigKeys) {
    const ParamTable file_table(kShape);
    const std::string path = tmp_path("shape.bin");
    write_file(path, llmc_bytes(file_table, random_params(file_table), 3));
    std::vector<float> out(1 << 16);
    // A model with one more layer and another head count.
    const ParamTable other(gpt2_spec(13, 8, 3, 4, 8));
    std::string msg = error_of([&] { load_llmc_gpt2(other, path, out.data()); }, Status::Config);
    EXPECT_HAS(msg, path);
    EXPECT_HAS(msg, "num_layers = 2 (the config has model.n_layer = 3)");
    EXPECT_HAS(msg, "num_heads = 2 (the config has model.n_head = 4)");
    EXPECT_EQ(msg.find("vocab_size"), std::string::npos) << msg;
    const ParamTable other2(gpt2_spec(50, 16, 2, 2, 16));
    msg = error_of([&] { load_llmc_gpt2(other2, path, out.data()); }, Status::Config);
    EXPECT_HAS(msg, "vocab_size = 13 (the config has model.vocab_size = 50)");
    EXPECT_HAS(msg, "max_seq_len = 8 (the config has model.context_length = 16)");
    EXPECT_HAS(msg, "channels = 8 (the config has model.d_model = 16)");
}

// A NaN or inf anywhere in an llm.c file is refused by model.init_from, naming the file and
// the tensor (issue 15: a NaN once reached the kernels and fast_expf's undefined behaviour).
TEST(LlmcImport, NonFiniteWeightsAreRefusedNamingFileAndTensor) {
    const ParamTable t(kShape);
    const ParamTensor& target = t.at(Slot::Up, 1);
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity()}) {
        for (const int version : {3, 5}) {  // fp32 and bf16 files
            std::vector<float> p = random_params(t);
            p[target.offset + 3] = bad;
            const std::string path = tmp_path("nonfinite_v" + std::to_string(version) + ".bin");
            write_file(path, llmc_bytes(t, p, version));
            std::vector<float> out(t.total());
            const std::string msg =
                error_of([&] { load_init_weights(t, path, out.data()); }, Status::NonFinite);
            EXPECT_HAS(msg, "model.init_from '" + path + "'");
            EXPECT_HAS(msg, "tensor '" + target.name + "' holds ");
            EXPECT_HAS(msg, std::isnan(bad) ? "nan at element 3" : "inf at element 3");
            EXPECT_HAS(msg, "llm.c checkpoint");
        }
    }
}
