// fuzz_safetensors: a .safetensors file (src/io/safetensors.cpp, src/io/json_min.cpp), as
// model.init_from, checkpoints and exports read it.
//
// Input: the file's bytes. It is parsed twice — SafetensorsFile::from_bytes (in memory) and
// SafetensorsFile::open (the mmap path every caller uses, fed through a memfd) — and both
// must agree: accepted or refused alike, with the same tensors. For an accepted file every
// tensor's data is touched and every float tensor converted with read_f32 (which must
// refuse the integer dtypes cleanly). The reader promises that offsets were validated, so
// ASan catches any read outside the file.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

namespace {

bool is_float(trt::DType d) {
    return d == trt::DType::F32 || d == trt::DType::BF16 || d == trt::DType::F16 ||
           d == trt::DType::F64;
}

// Reads every tensor of an accepted file; returns a checksum so nothing is optimised away.
uint32_t read_all(const trt::SafetensorsFile& f) {
    uint32_t sum = 0;
    std::vector<float> out;
    for (const trt::TensorInfo& t : f.tensors()) {
        if (f.find(t.name) != &t) fuzz::die("find() does not return the listed tensor " + t.name);
        const uint8_t* p = f.data(t);
        for (uint64_t i = 0; i < t.end - t.begin; ++i) sum += p[i];
        const int64_t n = t.numel();
        if (n < 0 || static_cast<uint64_t>(n) * trt::dtype_size(t.dtype) != t.end - t.begin)
            fuzz::die("accepted tensor " + t.name + " whose size does not match its shape");
        out.assign(static_cast<size_t>(n), 0.0f);
        try {
            f.read_f32(t, out.data());
            if (!is_float(t.dtype)) fuzz::die("read_f32 accepted an integer tensor");
        } catch (const trt::Error& e) {
            // An integer tensor must be refused as Format. A float tensor the parser accepted
            // may only be refused for its values (a policy on non-finite weights, say), never
            // as malformed or "not from this file".
            const trt::Status st = e.status();
            if (is_float(t.dtype) ? st == trt::Status::Format || st == trt::Status::InvalidArgument ||
                                        st == trt::Status::Internal
                                  : st != trt::Status::Format)
                fuzz::die(std::string("read_f32: wrong refusal of an accepted tensor: ") + e.what());
        }
    }
    for (const auto& kv : f.metadata()) sum += static_cast<uint32_t>(kv.first.size() + kv.second.size());
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static fuzz::MemFile mem("fuzz.safetensors");
    bool ok_bytes = false, ok_file = false;
    std::vector<std::string> names_bytes, names_file;
    uint32_t sum_bytes = 0, sum_file = 0;
    try {
        const trt::SafetensorsFile f =
            trt::SafetensorsFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz");
        for (const trt::TensorInfo& t : f.tensors()) names_bytes.push_back(t.name);
        sum_bytes = read_all(f);
        ok_bytes = true;
    } catch (const trt::Error& e) {
        fuzz::refused("SafetensorsFile::from_bytes", e);
    }
    try {
        const trt::SafetensorsFile f = trt::SafetensorsFile::open(mem.set(data, size));
        for (const trt::TensorInfo& t : f.tensors()) names_file.push_back(t.name);
        sum_file = read_all(f);
        ok_file = true;
    } catch (const trt::Error& e) {
        fuzz::refused("SafetensorsFile::open", e);
    }
    if (ok_bytes != ok_file || names_bytes != names_file || sum_bytes != sum_file)
        fuzz::die("from_bytes and open disagree on the same bytes");
    return 0;
}
