// fuzz_gguf: a GGUF file as model.init_from names it (someone's llama.cpp model file): the
// reader (io/gguf_reader.h), the metadata as [model] keys (config/gguf_model_config.h), then
// the weights into the table those keys give (model/gguf_import.h), once into the flat buffer
// and once as a QLoRA base (nf4, every linear adapted) whose pieces must stay inside their
// tensors.
//
// Input: the file's bytes, through a memfd (the reader takes a path and maps it). Every tensor
// the reader accepted and can decode is read whole (ASan sees a read past the mapping). A
// model of more than kMaxParams floats stops after the config: a session would allocate it,
// which is not a parser's fault.
#include <cstdint>
#include <string>
#include <vector>

#include "config/gguf_model_config.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "io/gguf_reader.h"
#include "model/gguf_import.h"
#include "model/lora.h"
#include "model/param_table.h"

namespace {

constexpr size_t kMaxParams = size_t{1} << 20;

// The refusals a reader of untrusted bytes may give; anything else is a bug.
void expect_clean(const char* what, const trt::Error& e) {
    const trt::Status st = e.status();
    if (st != trt::Status::Format && st != trt::Status::Unsupported && st != trt::Status::Io)
        fuzz::die(std::string(what) + " gave an unexpected status: " + e.what());
    fuzz::refused(what, e);
}

void load(const trt::ParamTable& table, const std::string& path) {
    std::vector<float> host(table.total(), -1.0f);
    const trt::QuantisedSink sink = [&](const trt::ParamTensor& t, const float* v, int64_t row0,
                                        int64_t rows) {
        if (row0 < 0 || rows <= 0 || row0 + rows > t.shape[0])
            fuzz::die("a piece of rows outside its tensor: " + t.name);
        volatile float sum = 0;  // every value handed over is readable
        const size_t cols = t.numel / static_cast<size_t>(t.shape[0]);
        for (size_t i = 0; i < static_cast<size_t>(rows) * cols; i++) sum = sum + v[i];
    };
    try {
        trt::load_gguf_weights(table, path, host.data(), sink);
    } catch (const trt::Error& e) {
        expect_clean("load_gguf_weights", e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static fuzz::MemFile mem("fuzz.gguf");
    const std::string& path = mem.set(data, size);
    (void)trt::gguf::is_gguf_file(path);
    trt::gguf::Reader reader;
    try {
        reader = trt::gguf::Reader::open(path);
    } catch (const trt::Error& e) {
        expect_clean("Reader::open", e);
        return 0;
    }
    std::vector<float> values;
    for (const trt::gguf::TensorEntry& t : reader.tensors()) {
        if (t.numel() > (uint64_t{1} << 20)) continue;  // (the reader bounds every tensor)
        values.resize(static_cast<size_t>(t.numel()));
        try {
            reader.read_rows(t, 0, t.rows(), values.data());
        } catch (const trt::Error& e) {  // only a type it cannot decode may be refused
            if (e.status() != trt::Status::Unsupported)
                fuzz::die(std::string("read_rows of a bounded tensor: ") + e.what());
        }
    }
    trt::ModelConfig mc;
    try {
        mc = trt::parse_gguf_model_config(reader);
    } catch (const trt::Error& e) {
        expect_clean("parse_gguf_model_config", e);
        return 0;
    }
    trt::ModelSpec spec;
    try {
        spec = trt::model_spec(mc);
    } catch (const trt::Error& e) {
        expect_clean("model_spec", e);
        return 0;
    }
    {
        const trt::ParamTable table(spec);
        if (table.num_params() > kMaxParams) return 0;
        load(table, path);
    }
    trt::LoraConfig l;
    l.rank = 2;
    l.target_modules = {"all-linear"};
    l.base_dtype = trt::BaseDType::Nf4;
    spec.lora = trt::lora_spec(l, spec);
    load(trt::ParamTable(spec), path);
    return 0;
}
