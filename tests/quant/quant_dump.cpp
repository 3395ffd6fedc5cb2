// The quantiser of lora.base_dtype (core/base_quant.h) from the command line, for the numpy
// reference (nf4_reference.py) to check element for element:
//   quant_dump tables OUT              OUT.book (16 fp32), OUT.map (256 fp32)
//   quant_dump TYPE DQ COLS IN OUT ROWS...
//       IN: fp32 values, the tensors one after another (each ROWS x COLS); they form one
//       matrix of TYPE (nf4 | int8 | bf16), DQ 0/1 (nf4's double quantisation). Writes
//       OUT.data, OUT.scales, OUT.scale_codes, OUT.scales2, OUT.parts (per tensor: row_end,
//       element0, block0, block2_0 as int64, then offset as fp32 widened to fp64) and
//       OUT.deq (the matrix dequantised to fp32 by dequantise_tile).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/base_quant.h"

namespace {

template <typename T>
void write(const std::string& path, const T* p, size_t n) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n * sizeof(T)));
    if (!f) {
        std::fprintf(stderr, "quant_dump: cannot write %s\n", path.c_str());
        std::exit(1);
    }
}

int usage() {
    std::fprintf(
        stderr, "usage: quant_dump tables OUT | quant_dump nf4|int8|bf16 DQ COLS IN OUT ROWS...\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace trt;
    if (argc == 3 && std::string(argv[1]) == "tables") {
        write(std::string(argv[2]) + ".book", kNf4CodeBook, 16);
        write(std::string(argv[2]) + ".map", kDynamicMap, 256);
        return 0;
    }
    if (argc < 7) return usage();
    const std::string type_name = argv[1];
    const BaseDType type = type_name == "nf4"    ? BaseDType::Nf4
                           : type_name == "int8" ? BaseDType::Int8
                           : type_name == "bf16" ? BaseDType::Bf16
                                                 : BaseDType::Fp32;
    const bool dq = std::atoi(argv[2]) != 0;
    const int cols = std::atoi(argv[3]);
    std::vector<float> x;
    {
        std::ifstream f(argv[4], std::ios::binary | std::ios::ate);
        if (!f) return usage();
        const size_t bytes = static_cast<size_t>(f.tellg());
        x.assign(bytes / 4, 0.0f);
        f.seekg(0);
        f.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(bytes));
    }
    const std::string out = argv[5];
    QuantisedMatrix m(type, dq, cols);
    size_t at = 0;
    for (int i = 6; i < argc; i++) {
        const int rows = std::atoi(argv[i]);
        if (at + static_cast<size_t>(rows) * cols > x.size()) return usage();
        m.append(x.data() + at, rows);
        at += static_cast<size_t>(rows) * cols;
    }
    write(out + ".data", m.data().data(), m.data().size());
    write(out + ".scales", m.scales().data(), m.scales().size());
    write(out + ".scale_codes", m.scale_codes().data(), m.scale_codes().size());
    write(out + ".scales2", m.scales2().data(), m.scales2().size());
    const QuantWeight w = m.host_view();
    std::vector<double> parts;
    for (int p = 0; p < w.parts; p++) {
        const QuantPart& q = w.part[p];
        for (double v : {double(q.row_end), double(q.element0), double(q.block0),
                         double(q.block2_0), double(q.offset)})
            parts.push_back(v);
    }
    write(out + ".parts", parts.data(), parts.size());
    std::vector<float> deq(static_cast<size_t>(m.rows()) * cols);
    dequantise_tile(w, 0, m.rows(), 0, cols, deq.data(), static_cast<size_t>(cols));
    write(out + ".deq", deq.data(), deq.size());
    return 0;
}
