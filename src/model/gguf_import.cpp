#include "model/gguf_import.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/error.h"
#include "io/gguf_reader.h"
#include "io/safetensors.h"
#include "model/gguf_model.h"
#include "model/quantised_base.h"
#include "model/rope_tables.h"

namespace trt {
namespace {

// How a table tensor sits in the file: its GGUF entry, and what undoes the export's layout.
struct FilePlacement {
    const gguf::TensorEntry* entry = nullptr;
    bool transposed = false;  // GPT-2's Conv1D: the file holds [out, in], the table [in, out]
    int qk_head = 0;          // > 0: Llama/Mistral q/k rows reordered within heads of this size
};

// Rows [r0, r0 + n) of `t` in the table's (HF's) layout into out[n * cols]. A transposed
// tensor (GPT-2's Conv1D) is read whole once, into `whole` (kept across the pieces of a QLoRA
// tensor, empty until the first piece): GPT-2 sizes.
void read_table_rows(const gguf::Reader& f, const FilePlacement& p, const ParamTensor& t,
                     int64_t r0, int64_t n, float* out, std::vector<float>& whole) {
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const int64_t cols = static_cast<int64_t>(t.numel) / rows;
    if (p.transposed) {  // the file's [cols, rows], read once, then the rows wanted
        if (whole.size() != t.numel) {
            whole.resize(t.numel);
            f.read_rows(*p.entry, 0, p.entry->rows(), whole.data());
        }
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < cols; c++) out[r * cols + c] = whole[c * rows + r0 + r];
        return;
    }
    if (p.qk_head > 0 && t.shape.size() == 1) {  // a q/k bias: its elements reordered
        std::vector<float> file(t.numel);
        f.read_rows(*p.entry, 0, 1, file.data());
        for (int64_t i = 0; i < cols; i++) out[i] = file[gguf_qk_row(i, p.qk_head)];
        return;
    }
    if (p.qk_head > 0) {
        for (int64_t r = 0; r < n; r++)
            f.read_rows(*p.entry, gguf_qk_row(r0 + r, p.qk_head), 1, out + r * cols);
        return;
    }
    if (t.shape.size() == 1) {
        f.read_rows(*p.entry, 0, 1, out);
        return;
    }
    f.read_rows(*p.entry, r0, n, out);
}

// llama.cpp's converter writes GPT-2's tied head as a copy (output.weight): it must be one.
void check_gpt2_head_copy(const gguf::Reader& f, const std::string& path) {
    const gguf::TensorEntry* head = f.find_tensor("output.weight");
    const gguf::TensorEntry* embd = f.find_tensor("token_embd.weight");
    if (!head || !embd) return;
    std::vector<float> a(head->ne[0]), b(head->ne[0]);
    for (uint64_t r = 0; head->ne == embd->ne && r < head->rows(); r++) {
        f.read_rows(*head, r, 1, a.data());
        f.read_rows(*embd, r, 1, b.data());
        if (a != b) break;
        if (r + 1 == head->rows()) return;
    }
    fail(Status::Format, "model.init_from = '", path,
         "': output.weight differs from "
         "token_embd.weight; libtrainrt's GPT-2 ties its head to the token embedding");
}

// A Llama 3 model's rope_freqs (pair i's factor = base / scaled frequency, as llama.cpp
// divides by it) against what the config's model.rope_scaling gives.
void check_rope_freqs(const gguf::Reader& f, const ModelSpec& s) {
    const gguf::TensorEntry* e = f.find_tensor("rope_freqs.weight");
    const bool llama3 = s.rope_scaling.kind == RopeScaling::Llama3;
    if (!e && !llama3) return;
    const std::string& path = f.source_name();
    if (!e)
        fail(Status::Format, "model.init_from = '", path,
             "': the config asks for Llama 3 RoPE scaling (model.rope_scaling = \"llama3\") but "
             "the file has no rope_freqs tensor, so llama.cpp runs it unscaled; set "
             "model.rope_scaling = \"none\" or use the file of the scaled model");
    const int half = s.hs() / 2;
    if (e->ne.size() != 1 || e->ne[0] != static_cast<uint64_t>(half))
        fail(Status::Format, "model.init_from = '", path, "': rope_freqs has shape ",
             shape_text(e->shape()), "; a head size of ", s.hs(), " needs [", half, "]");
    std::vector<float> file(static_cast<size_t>(half));
    f.read_rows(*e, 0, 1, file.data());
    const std::vector<float> base = rope_inv_freq(s.hs(), s.rope_theta);
    const std::vector<float> scaled = rope_inv_freq(s.hs(), s.rope_theta, s.rope_scaling);
    for (int i = 0; i < half; i++) {
        const float want = base[i] / scaled[i];
        if (!(std::fabs(file[i] - want) <= 1e-4f * std::fabs(want)))
            fail(Status::Format, "model.init_from = '", path,
                 "': the file's rope_freqs (Llama 3 "
                 "RoPE scaling) gives pair ",
                 i, " the factor ", file[i], ", the config's ",
                 llama3 ? "model.rope_scaling keys " : "model.rope_scaling = \"none\" ", want,
                 "; set model.rope_scaling = \"llama3\" and rope_scaling_factor, "
                 "rope_low_freq_factor, rope_high_freq_factor, rope_original_context to the "
                 "model's config.json values");
    }
}

}  // namespace

void load_gguf_weights(const ParamTable& table, const std::string& path, float* host,
                       const QuantisedSink& sink) {
    TRT_CHECK(table.quantised_tensors().empty() || sink,
              "loading a quantised base needs a QuantisedSink");
    const gguf::Reader f = gguf::Reader::open(path);
    const ModelSpec& s = table.spec();
    const std::string arch = f.string("general.architecture", "");
    if (arch != gguf_architecture(s))
        fail(Status::Format, "model.init_from = '", path, "': a GGUF file of architecture '", arch,
             "', but the config's model is ", describe(s), " (llama.cpp's '", gguf_architecture(s),
             "'); remove the model.* keys that contradict the file");
    // Every tensor placed and checked (names, shapes, nothing unexpected, rope_freqs) before a
    // value is decoded: a wrong file is refused before minutes of reading an 8B model.
    struct Wanted {
        const ParamTensor* t;
        bool quantised;
        FilePlacement p;
    };
    std::vector<Wanted> wanted;
    std::set<std::string> used;
    const auto place = [&](const ParamTensor& t, bool quantised) {
        if (t.role == ParamRole::LoraA || t.role == ParamRole::LoraB) return;
        const std::string name = gguf_tensor_name(t);
        FilePlacement p;
        p.entry = f.find_tensor(name);
        if (!p.entry)
            fail(Status::Format, "model.init_from = '", path, "': tensor '", name, "' (", t.name,
                 ") is missing (the config asks for a ", describe(s),
                 "; check [model] matches the file)");
        p.transposed = t.role == ParamRole::Linear && t.shape.size() == 2 &&
                       s.linear_layout() == WeightLayout::InOut;
        if (gguf_reorders_qk(s) && (t.slot == Slot::Q || t.slot == Slot::K ||
                                    t.slot == Slot::QBias || t.slot == Slot::KBias)) {
            if (s.hs() % 2 != 0)
                fail(Status::Unsupported, "model.init_from = '", path, "': an odd head size (",
                     s.hs(), ") has no RoPE pairs");
            p.qk_head = s.hs();
        }
        const std::vector<int64_t> want =
            p.transposed ? std::vector<int64_t>{t.shape[1], t.shape[0]} : t.shape;
        if (p.entry->shape() != want)
            fail(Status::Format, "model.init_from = '", path, "': tensor '", name, "' has shape ",
                 shape_text(p.entry->shape()), " but the config's model needs ", shape_text(want),
                 " (remove the model.* keys that contradict the file)");
        wanted.push_back({&t, quantised, p});
        used.insert(name);
    };
    for (const ParamTensor& t : table.tensors()) place(t, false);
    for (const ParamTensor& t : table.quantised_tensors()) place(t, true);
    check_rope_freqs(f, s);
    used.insert("rope_freqs.weight");
    if (s.arch == ModelArch::Gpt2) {
        check_gpt2_head_copy(f, path);
        used.insert("output.weight");
    }
    for (const gguf::TensorEntry& e : f.tensors())
        if (!used.count(e.name))
            fail(Status::Format, "model.init_from = '", path, "': unexpected tensor '", e.name,
                 "' (the file holds a different model than [model] describes: ", describe(s), ")");

    std::vector<float> piece, whole;
    for (const Wanted& w : wanted) {
        const ParamTensor& t = *w.t;
        const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
        whole.clear();
        if (!w.quantised) {
            read_table_rows(f, w.p, t, 0, rows, host + t.offset, whole);
            continue;
        }
        // A piece of rows at a time: never the whole tensor in fp32 (but GPT-2's transposed).
        const int64_t per = QuantisedBase::rows_per_piece(t);
        const size_t cols = t.numel / static_cast<size_t>(rows);
        for (int64_t r = 0; r < rows; r += per) {
            const int64_t n = std::min(per, rows - r);
            piece.resize(static_cast<size_t>(n) * cols);
            read_table_rows(f, w.p, t, r, n, piece.data(), whole);
            sink(t, piece.data(), r, n);
        }
    }
    table.clear_padding(host);
}

}  // namespace trt
