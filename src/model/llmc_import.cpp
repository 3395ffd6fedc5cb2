#include "model/llmc_import.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

// The file is little-endian int32 / fp32 / bf16, read with memcpy.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "llm.c import assumes a little-endian host");

namespace trt {

namespace {

// An open file descriptor closed on scope exit, so every error path releases it.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Stored values per tensor, in file order, for a header (uint64; dims are validated to keep
// every product far below 2^64 first).
struct Sizes {
    uint64_t wte, wpe, LC, LC3, LCC, LC4, LC4C, C;
    uint64_t total() const {
        // wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb lnfw lnfb
        return wte + wpe + LC + LC + 3 * LCC + LC3 + LCC + LC + LC + LC + LC4C + LC4 + LC4C + LC +
               C + C;
    }
};

Sizes sizes_of(const LlmcHeader& h) {
    const uint64_t L = static_cast<uint64_t>(h.L), C = static_cast<uint64_t>(h.C);
    Sizes s;
    s.wte = static_cast<uint64_t>(h.Vp) * C;
    s.wpe = static_cast<uint64_t>(h.maxT) * C;
    s.LC = L * C;
    s.LC3 = 3 * L * C;
    s.LCC = L * C * C;
    s.LC4 = 4 * L * C;
    s.LC4C = 4 * L * C * C;
    s.C = C;
    return s;
}

// Reads n values (fp32 or bf16) starting at src into dst.
void read_values(const uint8_t* src, size_t n, bool bf16, float* dst) {
    if (!bf16) {
        std::memcpy(dst, src, n * 4);
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;  // bf16 is the top half of fp32
        std::memcpy(dst + i, &bits, 4);
    }
}

// llm.c stores a linear weight as nn.Linear (out, in); HF Conv1D wants (in, out):
// dst[i * out + o] = src[o * in + i].
void read_transposed(const uint8_t* src, size_t out, size_t in, bool bf16, float* dst) {
    const size_t esz = bf16 ? 2 : 4;
    for (size_t o = 0; o < out; ++o) {
        const uint8_t* row = src + o * in * esz;
        for (size_t i = 0; i < in; ++i) {
            float f;
            read_values(row + i * esz, 1, bf16, &f);
            dst[i * out + o] = f;
        }
    }
}

}  // namespace

// Every open here is O_NONBLOCK: a FIFO named as a checkpoint must not wait for a writer
// (it is then refused as not a regular file, or fails the magic check).
bool is_llmc_checkpoint(const std::string& path) {
    Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f.fd < 0) return false;
    int32_t magic = 0;
    return ::pread(f.fd, &magic, 4, 0) == 4 && magic == kLlmcModelMagic;
}

LlmcHeader read_llmc_header(const std::string& path) {
    const std::string where = cat("llm.c checkpoint '", path, "': ");
    Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f.fd < 0) fail(Status::Io, "cannot open llm.c checkpoint '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
        fail(Status::Io, "cannot read llm.c checkpoint '", path, "': not a regular file");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size < kLlmcHeaderBytes)
        fail(Status::Format, where, "file is ", size, " bytes, too short for the ",
             kLlmcHeaderBytes, "-byte header");
    int32_t hdr[256];
    if (::pread(f.fd, hdr, sizeof hdr, 0) != static_cast<ssize_t>(sizeof hdr))
        fail(Status::Io, "cannot read the header of llm.c checkpoint '", path, "': ",
             std::strerror(errno));
    if (hdr[0] != kLlmcModelMagic)
        fail(Status::Format, where, "bad magic ", hdr[0], " (expected ", kLlmcModelMagic,
             "; this is not an llm.c model checkpoint)");
    if (hdr[1] != kLlmcVersionF32 && hdr[1] != kLlmcVersionBF16)
        fail(Status::Format, where, "unsupported version ", hdr[1], " (expected ",
             kLlmcVersionF32, " for fp32 or ", kLlmcVersionBF16, " for bf16 parameters)");
    LlmcHeader h;
    h.version = hdr[1];
    h.maxT = hdr[2];
    h.V = hdr[3];
    h.L = hdr[4];
    h.NH = hdr[5];
    h.C = hdr[6];
    h.Vp = hdr[7];
    const struct {
        const char* name;
        int32_t value;
    } dims[] = {{"max_seq_len", h.maxT}, {"vocab_size", h.V}, {"num_layers", h.L},
                {"num_heads", h.NH},     {"channels", h.C},   {"padded_vocab_size", h.Vp}};
    for (const auto& d : dims)
        if (d.value < 1) fail(Status::Format, where, "header ", d.name, " = ", d.value, " is not positive");
    if (h.Vp < h.V)
        fail(Status::Format, where, "padded_vocab_size ", h.Vp, " is smaller than vocab_size ", h.V);
    // Bound the parameter count before multiplying in 64 bits: 2^40 values is beyond any
    // model this library trains, and keeps every product below 2^64.
    const long double C = h.C;
    const long double n = (static_cast<long double>(h.Vp) + h.maxT) * C + 2 * C +
                          static_cast<long double>(h.L) * (12 * C * C + 13 * C);
    if (n > static_cast<long double>(uint64_t{1} << 40))
        fail(Status::Format, where, "header dims give ", static_cast<double>(n),
             " parameters, more than any supported model; the header is damaged");
    const uint64_t esz = h.version == kLlmcVersionBF16 ? 2 : 4;
    const uint64_t values = sizes_of(h).total();
    const uint64_t expected = kLlmcHeaderBytes + values * esz;
    if (size != expected)
        fail(Status::Format, where, "file is ", size, " bytes but the header describes ",
             expected, " (", kLlmcHeaderBytes, "-byte header + ", values, " parameters x ", esz,
             " bytes); the file is ", size < expected ? "truncated" : "longer than its header says",
             "; re-download or re-export it");
    return h;
}

void load_llmc_gpt2(const ParamTable& table, const std::string& path, float* host) {
    const LlmcHeader h = read_llmc_header(path);
    const ModelSpec& want = table.spec();
    if (want.arch != ModelArch::Gpt2 || want.F != 4 * want.C)
        fail(Status::Config, "llm.c checkpoint '", path, "' holds a GPT-2 (d_ff = 4 * d_model), "
             "but the config describes a ", arch_name(want),
             want.arch == ModelArch::Gpt2 ? " with another d_ff" : "",
             "; set model.arch = \"gpt2\" and model.d_ff = 0");
    std::string diff;
    const auto check = [&](const char* file_name, int32_t have, const char* key, int cfg) {
        if (have == cfg) return;
        if (!diff.empty()) diff += ", ";
        diff += cat(file_name, " = ", have, " (the config has model.", key, " = ", cfg, ")");
    };
    check("vocab_size", h.V, "vocab_size", want.V);
    check("max_seq_len", h.maxT, "context_length", want.maxT);
    check("num_layers", h.L, "n_layer", want.L);
    check("num_heads", h.NH, "n_head", want.NH);
    check("channels", h.C, "d_model", want.C);
    if (!diff.empty())
        fail(Status::Config, "llm.c checkpoint '", path, "' does not match the configured model: it has ",
             diff, "; set these model.* keys to the checkpoint's values");

    Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f.fd < 0) fail(Status::Io, "cannot open llm.c checkpoint '", path, "': ", std::strerror(errno));
    const bool bf16 = h.version == kLlmcVersionBF16;
    const size_t esz = bf16 ? 2 : 4;
    const size_t file_size = kLlmcHeaderBytes + sizes_of(h).total() * esz;
    // mmap: the kernel pages the file in as the copy walks it, no second full-size buffer.
    void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (map == MAP_FAILED)
        fail(Status::Io, "cannot mmap llm.c checkpoint '", path, "': ", std::strerror(errno));
    struct Unmap {
        void* p;
        size_t n;
        ~Unmap() { ::munmap(p, n); }
    } unmap{map, file_size};

    const uint8_t* p = static_cast<const uint8_t*>(map) + kLlmcHeaderBytes;
    const size_t L = static_cast<size_t>(h.L), C = static_cast<size_t>(h.C);
    // Consumes n stored values into dst (nullptr: skip).
    const auto take = [&](size_t n, float* dst) {
        if (dst) read_values(p, n, bf16, dst);
        p += n * esz;
    };
    const auto take_t = [&](size_t out, size_t in, float* dst) {
        read_transposed(p, out, in, bf16, dst);
        p += out * in * esz;
    };
    const auto at = [&](const ParamTensor& t) { return host + t.offset; };

    // wte: the first V rows; the Vp - V padding rows follow and are skipped.
    take(static_cast<size_t>(h.V) * C, at(table.at(Slot::TokenEmbedding)));
    take(static_cast<size_t>(h.Vp - h.V) * C, nullptr);
    take(static_cast<size_t>(h.maxT) * C, at(table.at(Slot::PositionEmbedding)));
    // Each per-layer tensor is stacked over the L layers; llm.c's matmul weights are
    // [out, in], HF GPT-2's Conv1D [in, out] (take_t transposes).
    const auto per_layer = [&](Slot slot, size_t n) {
        for (size_t l = 0; l < L; ++l) take(n, at(table.at(slot, static_cast<int>(l))));
    };
    const auto per_layer_t = [&](Slot slot, size_t out, size_t in) {
        for (size_t l = 0; l < L; ++l) take_t(out, in, at(table.at(slot, static_cast<int>(l))));
    };
    per_layer(Slot::AttnNorm, C);
    per_layer(Slot::AttnNormBias, C);
    per_layer_t(Slot::Qkv, 3 * C, C);
    per_layer(Slot::QkvBias, 3 * C);
    per_layer_t(Slot::AttnOut, C, C);
    per_layer(Slot::AttnOutBias, C);
    per_layer(Slot::MlpNorm, C);
    per_layer(Slot::MlpNormBias, C);
    per_layer_t(Slot::Up, 4 * C, C);
    per_layer(Slot::UpBias, 4 * C);
    per_layer_t(Slot::Down, C, 4 * C);
    per_layer(Slot::DownBias, C);
    take(C, at(table.at(Slot::FinalNorm)));
    take(C, at(table.at(Slot::FinalNormBias)));
    table.clear_padding(host);
    TRT_CHECK(p == static_cast<const uint8_t*>(map) + file_size, "llm.c import consumed ",
              p - static_cast<const uint8_t*>(map), " of ", file_size, " bytes");
}

}  // namespace trt
