#include "runtime/gguf_export.h"

#include <filesystem>
#include <set>

#include "chat/chat_template.h"
#include "chat/end_of_turn.h"
#include "core/error.h"
#include "io/fs_util.h"
#include "io/gguf_writer.h"
#include "io/json_min.h"
#include "model/gguf_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace trt {
namespace {

// llama.cpp's general.file_type (LLAMA_FTYPE_*) of a file of mostly `t`.
uint32_t file_type(gguf::TensorType t) {
    switch (t) {
        case gguf::TensorType::F32:
            return 0;
        case gguf::TensorType::F16:
            return 1;
        case gguf::TensorType::Q4_0:  // MOSTLY_Q4_0 (this export never writes it)
            return 2;
        case gguf::TensorType::Q8_0:
            return 7;
        case gguf::TensorType::BF16:
            return 32;
    }
    return 0;
}

// llama.cpp's tokenizer.ggml.pre for a byte-level BPE's split regex (vocab_table.h).
const char* pre_tokenizer_name(const std::string& split_rule) {
    if (split_rule == "gpt2") return "gpt-2";
    if (split_rule == "cl100k") return "llama-bpe";
    if (split_rule == "cl100k-single-digits") return "qwen2";
    return "";
}

// What llama.cpp's converter takes for a special token whatever the file says: <|...|>.
bool looks_special(const std::string& t) {
    return t.size() >= 4 && t.compare(0, 2, "<|") == 0 && t.compare(t.size() - 2, 2, "|>") == 0;
}

constexpr size_t kMaxConfigFile = size_t{64} << 20;

// Token texts llama.cpp takes for an end of turn (its eot guess) and for an end of generation
// whatever the ids say (llama-vocab.cpp's lists; docs/FORMATS.md section 6).
bool known_end_of_turn(const std::string& t) {
    for (const char* e : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<EOT>",
                          "<|endoftext|>", "<|end_of_text|>"})
        if (t == e) return true;
    return false;
}
bool stops_llama_cpp(const std::string& t) {
    return known_end_of_turn(t) || t == "</s>" || t == "<|eom_id|>" || t == "<eos>";
}

bool has_chat_template(const std::string& folder, const json::Value& config) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path_join(folder, "chat_template.jinja"), ec)) return true;
    const json::Value* t = config.is_object() ? config.find("chat_template") : nullptr;
    return t && t->kind != json::Value::Kind::Null;
}

void add_tokenizer(gguf::Writer& w, const ModelSpec& spec, const tok::TokenizerFiles& files,
                   std::vector<std::string>& notes) {
    const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(files.path);
    tok::VocabTable vt = tokenizer.vocab_table();
    const std::string folder = parent_dir(files.path);
    json::Value config;
    if (!files.tokenizer_config.empty()) {
        config = json::parse_lenient_numbers(
            read_small_file(files.tokenizer_config, kMaxConfigFile), files.tokenizer_config);
    }
    const size_t V = static_cast<size_t>(spec.V);
    if (vt.tokens.size() > V)
        fail(Status::InvalidArgument, "GGUF export: the tokenizer '", files.path, "' has ",
             vt.tokens.size(), " ids and the model's vocab_size is ", V,
             "; llama.cpp needs one token per row of the embedding");
    const bool spm = vt.model == tok::VocabTable::Model::SentencePiece;
    if (vt.model == tok::VocabTable::Model::CharacterBpe)
        fail(Status::Unsupported, "GGUF export: '", files.path,
             "' is a BPE over characters (a "
             "SentencePiece model's tokenizer.json conversion), which llama.cpp reads only as "
             "the SentencePiece model: give the folder's tokenizer.model as data.tokenizer");

    if (!spm && vt.merges.empty())
        fail(Status::Unsupported, "GGUF export: '", files.path,
             "' has no merges, and "
             "llama.cpp's BPE tokenizer (\"gpt2\") refuses a vocabulary without them");

    // Special ids: tokenizer_config.json's tokens, else the model file's own (SentencePiece's).
    // A token the config names and the tokenizer lacks is refused, as prepare refuses it.
    const json::Value special =
        config.is_object() ? chat::special_tokens_of(config) : json::Value{};
    const auto id_of = [&](const char* key, int32_t fallback) -> int32_t {
        const json::Value* v = special.is_object() ? special.find(key) : nullptr;
        if (!v || !v->is_string()) return fallback;
        uint32_t id = 0;
        if (!tokenizer.find(v->s, id))
            fail(Status::Format, "GGUF export: ", files.tokenizer_config, " names ", key, " \"",
                 v->s, "\", which the tokenizer '", files.path, "' does not have");
        return static_cast<int32_t>(id);
    };
    // The eos is the token prepare opened every document with when the config names none
    // (tok::default_end_of_text): without it llama.cpp would take id 11 (BPE) or 2 (SPM).
    int32_t eos_default = vt.eos;
    if (uint32_t id = 0; eos_default < 0 && tokenizer.find(tok::default_end_of_text(tokenizer), id))
        eos_default = static_cast<int32_t>(id);
    const int32_t eos = id_of("eos_token", eos_default);
    if (eos < 0)
        notes.push_back(
            cat("the tokenizer names no end-of-text token (tokenizer_config.json's "
                "eos_token, or one of <|endoftext|>, <|end_of_text|>, </s>): "
                "llama.cpp will take id ",
                spm ? 2 : 11, " for its eos"));
    // GPT-2's convention (and this project's tokenizer_config_json): a BPE's bos is its eos.
    const int32_t bos = id_of("bos_token", spm ? vt.bos : eos);
    const int32_t unk = id_of("unk_token", vt.unk), pad = id_of("pad_token", -1);
    // The end-of-turn ids (generation_config.json's list, else the eos): CONTROL, so that
    // llama.cpp keeps them whole.
    std::vector<int32_t> turn_ends;
    try {
        turn_ends = chat::end_of_turn_ids(folder, tokenizer);
    } catch (const Error& e) {
        if (e.status() != Status::InvalidArgument) throw;  // none named: only the eos then
    }

    std::vector<std::string> tokens(V);
    std::vector<int32_t> types(V);
    for (size_t id = 0; id < V; id++) {
        const bool used = id < vt.tokens.size() && !vt.tokens[id].empty() &&
                          vt.kinds[id] != tok::TokenKind::Unused;
        tokens[id] = used ? vt.tokens[id] : cat("[PAD", id, "]");
        tok::TokenKind kind = used ? vt.kinds[id] : tok::TokenKind::Unused;
        if (kind == tok::TokenKind::UserDefined && looks_special(tokens[id]))
            kind = tok::TokenKind::Control;
        types[id] = static_cast<int32_t>(kind);
    }
    for (int32_t id : turn_ends)
        if (id >= 0 && static_cast<size_t>(id) < V)
            types[id] = static_cast<int32_t>(tok::TokenKind::Control);
    std::set<std::string> seen;
    for (const std::string& t : tokens)
        if (!seen.insert(t).second)
            fail(Status::Format, "GGUF export: the token \"", t, "\" of '", files.path,
                 "' stands for two ids; llama.cpp needs every token text once");

    w.add_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
    std::string pre = spm ? "default" : pre_tokenizer_name(vt.split_rule);
    if (pre.empty()) {
        pre = "default";
        notes.push_back(
            cat("the tokenizer's pre-tokenizer is none llama.cpp names (it knows "
                "GPT-2's, Llama 3's and Qwen2's): tokenizer.ggml.pre is \"default\", "
                "and llama.cpp may split some text otherwise than this tokenizer"));
    }
    w.add_string("tokenizer.ggml.pre", pre);
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_i32s("tokenizer.ggml.token_type", types);
    if (spm) {
        vt.scores.resize(V, -1000.0f);  // the converter's score for padding ids
        w.add_f32s("tokenizer.ggml.scores", vt.scores);
    } else if (!vt.merges.empty()) {
        w.add_strings("tokenizer.ggml.merges", vt.merges);
    }
    const auto add_id = [&](const char* key, int32_t id) {
        if (id >= 0) w.add_u32(key, static_cast<uint32_t>(id));
    };
    add_id("tokenizer.ggml.bos_token_id", bos);
    add_id("tokenizer.ggml.eos_token_id", eos);
    add_id("tokenizer.ggml.unknown_token_id", unk);
    add_id("tokenizer.ggml.padding_token_id", pad);
    // llama.cpp stops at eos, eot, eom and at tokens whose text it knows as an end: the
    // turn ends beyond those are named in a note. eot: the first turn end that is not the eos,
    // one llama.cpp knows as an end of turn first (Llama 3.1's list puts <|end_of_text|> first).
    int32_t eot = -1, eom = -1;
    for (int pass = 0; pass < 2 && eot < 0; pass++)
        for (int32_t id : turn_ends)
            if (id != eos && tokens[id] != "<|eom_id|>" &&
                (pass == 1 || known_end_of_turn(tokens[id]))) {
                eot = id;
                break;
            }
    for (int32_t id : turn_ends)
        if (tokens[id] == "<|eom_id|>") eom = id;
    add_id("tokenizer.ggml.eot_token_id", eot);
    add_id("tokenizer.ggml.eom_token_id", eom);
    std::string unheard;
    for (int32_t id : turn_ends)
        if (id != eos && id != eot && id != eom && !stops_llama_cpp(tokens[id]))
            unheard += cat(unheard.empty() ? "" : ", ", id, " \"", tokens[id], "\"");
    if (!unheard.empty())
        notes.push_back(
            cat("llama.cpp does not stop at these end-of-turn tokens of the folder "
                "(GGUF holds one eos, one eot, one eom): ",
                unheard));
    // BOS: what training did. This project's encode adds no BOS (a chat template writes one
    // where the model expects it), so add_bos is the config's, else false; llama.cpp's
    // default (true for Llama 3's "llama-bpe" and for SentencePiece) would prepend a token the
    // model never saw there.
    for (const char* flag : {"add_bos_token", "add_eos_token"}) {
        const json::Value* v = config.is_object() ? config.find(flag) : nullptr;
        const bool on = v && v->kind == json::Value::Kind::Bool && v->b;
        w.add_bool(std::string("tokenizer.ggml.") + flag, on);
    }
    if (has_chat_template(folder, config))
        w.add_string("tokenizer.chat_template", chat::load_folder_template(folder).source_text);
}

}  // namespace

gguf::TensorType parse_gguf_type(const std::string& name) {
    if (name == "f32") return gguf::TensorType::F32;
    if (name == "f16") return gguf::TensorType::F16;
    if (name == "bf16") return gguf::TensorType::BF16;
    if (name == "q8_0") return gguf::TensorType::Q8_0;
    fail(Status::InvalidArgument, "GGUF type '", name, "': use f32, f16, bf16 or q8_0");
}

namespace {

// The model's tensors in `type` (1-D, norm and position tensors F32; a matrix whose rows are
// not whole Q8_0 blocks F16, as llama.cpp's converter writes them, noted).
void add_tensors(gguf::Writer& w, const GgufModel& model, gguf::TensorType type,
                 std::vector<std::string>& notes) {
    std::vector<std::string> as_f16;
    for (const GgufModelTensor& t : model.tensors) {
        gguf::TensorType tt = t.keep_f32 ? gguf::TensorType::F32 : type;
        if (tt == gguf::TensorType::Q8_0 && t.shape.back() % 32 != 0) {
            tt = gguf::TensorType::F16;  // llama.cpp's converter does the same
            as_f16.push_back(t.name);
        }
        w.add_tensor(t.name, t.shape, tt, t.values());
    }
    if (!as_f16.empty()) {
        std::string list;
        for (const std::string& n : as_f16) list += (list.empty() ? "" : ", ") + n;
        notes.push_back(
            cat(as_f16.size(), " matri", as_f16.size() == 1 ? "x" : "ces",
                " with rows that are not whole Q8_0 blocks of 32 written as F16: ", list));
    }
}

}  // namespace

GgufExportResult export_gguf(const std::string& path, const ParamTable& table, const float* params,
                             gguf::TensorType type, const tok::TokenizerFiles* tokenizer,
                             const std::string& name) {
    if (path.empty()) fail(Status::InvalidArgument, "GGUF export: an empty file name");
    const ModelSpec& spec = table.spec();
    GgufModel model = gguf_model(table, params);
    GgufExportResult result;
    result.notes = model.notes;
    gguf::Writer w;
    add_gguf_hyperparameters(w, spec);  // general.architecture first
    w.add_string("general.type", "model");
    if (!name.empty()) w.add_string("general.name", name);
    w.add_u32("general.file_type", file_type(type));
    w.add_u32("general.quantization_version", 2);
    if (tokenizer) {
        add_tokenizer(w, spec, *tokenizer, result.notes);
    } else {
        w.add_string("tokenizer.ggml.model", "no_vocab");
        result.notes.push_back(
            "no tokenizer (the run had no data.tokenizer): the file says \"no_vocab\"; "
            "llama.cpp runs the model on token ids only and cannot turn text into ids");
    }
    add_tensors(w, model, type, result.notes);
    w.write(path);
    result.tensors = w.tensor_count();
    return result;
}

GgufExportResult export_gguf_lora(const std::string& path, const ParamTable& table,
                                  const float* params, gguf::TensorType type,
                                  const std::string& name) {
    if (path.empty()) fail(Status::InvalidArgument, "GGUF export: an empty file name");
    const ModelSpec& spec = table.spec();
    const GgufModel model = gguf_lora_adapter(table, params);
    GgufExportResult result;
    gguf::Writer w;
    w.add_string("general.architecture", model.architecture);
    w.add_string("general.type", "adapter");
    if (!name.empty()) w.add_string("general.name", name);
    w.add_u32("general.file_type", file_type(type));
    w.add_u32("general.quantization_version", 2);
    w.add_string("adapter.type", "lora");
    w.add_f32("adapter.lora.alpha", spec.lora.alpha);  // llama.cpp: FLOAT32, scale alpha / r
    add_tensors(w, model, type, result.notes);
    result.notes.push_back(
        cat("an adapter: llama.cpp applies it to the model this run trained "
            "on (its base), as a GGUF of its own: llama-cli -m BASE.gguf "
            "--lora ",
            path));
    w.write(path);
    result.tensors = w.tensor_count();
    return result;
}

}  // namespace trt
