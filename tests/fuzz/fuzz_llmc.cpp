// fuzz_llmc: an llm.c model checkpoint (src/model/llmc_import.cpp), what model.init_from reads
// when a file starts with the llm.c magic.
//
// Input: the file's bytes, fed through a memfd (the reader takes a path and mmaps it).
//   1. is_llmc_checkpoint and read_llmc_header;
//   2. for a header that passed, load_llmc_gpt2 into a ParamTable with the header's dims (the
//      way a config matching the file loads it: every tensor is copied and transposed), then
//      require_finite as model.init_from does; and once into a table with a different n_layer
//      (must be refused before any read).
// The header check bounds the file size exactly, so the host buffer is at most about twice
// the input; ASan catches any read past the mapping.
#include <cstdint>
#include <climits>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/finite_check.h"
#include "model/llmc_import.h"
#include "model/param_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static fuzz::MemFile mem("fuzz.llmc");
    const std::string& path = mem.set(data, size);
    (void)trt::is_llmc_checkpoint(path);
    trt::LlmcHeader h;
    try {
        h = trt::read_llmc_header(path);
    } catch (const trt::Error& e) {
        fuzz::refused("read_llmc_header", e);
        return 0;
    }
    trt::ModelSpec shape = trt::gpt2_spec(h.V, h.maxT, h.L, h.NH, h.C);
    const trt::ParamTable table(shape);
    if (table.num_params() > size)  // each stored value takes 2 or 4 bytes of the input
        fuzz::die("read_llmc_header accepted a header describing more values than the file holds");
    std::vector<float> host(table.total(), -1.0f);
    try {
        trt::load_llmc_gpt2(table, path, host.data());
    } catch (const trt::Error& e) {
        // The header check promises the layout; only the values may still be refused (a
        // policy on non-finite weights, say), never the structure.
        const trt::Status st = e.status();
        if (st == trt::Status::Format || st == trt::Status::InvalidArgument ||
            st == trt::Status::Internal || st == trt::Status::Config || st == trt::Status::Io)
            fuzz::die(std::string("load_llmc_gpt2 refused a file whose header passed: ") + e.what());
        return 0;
    }
    const trt::ParamTensor& wte = table.at(trt::Slot::TokenEmbedding);
    for (size_t i = wte.offset + wte.numel; i < wte.offset + wte.numel + wte.padding; ++i)
        if (host[i] != 0.0f) fuzz::die("wte padding rows are not zero after the import");
    try {  // what model.init_from does next
        trt::require_finite(table, host.data(), "fuzz.llmc", "fuzzing");
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::NonFinite) fuzz::die(std::string("require_finite: ") + e.what());
    }

    if (h.L < INT32_MAX) {
        shape.L = h.L + 1;
        const trt::ParamTable other(shape);
        try {
            trt::load_llmc_gpt2(other, path, host.data());  // host is too small: must not be touched
            fuzz::die("load_llmc_gpt2 accepted a table with another n_layer");
        } catch (const trt::Error& e) {
            if (e.status() != trt::Status::Config)
                fuzz::die(std::string("wrong refusal of a mismatched table: ") + e.what());
        }
    }
    return 0;
}
