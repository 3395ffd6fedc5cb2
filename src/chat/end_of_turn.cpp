// The ids a chat reply ends with (chat/end_of_turn.h).
#include "chat/end_of_turn.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace trt::chat {

namespace {

bool read_file(const std::string& path, std::string& text) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (st.st_size > (int64_t(64) << 20))
        fail(Status::Format, "'", path, "' is ", st.st_size, " bytes: not a model folder's "
             "config file (at most 64 MiB)");
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(Status::Io, "cannot read '", path, "'");
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}

}  // namespace

std::vector<int32_t> end_of_turn_ids(const std::string& folder, const tok::Tokenizer& tokenizer) {
    std::vector<int32_t> ids;
    const auto add = [&](const json::Value& v, const std::string& where) {
        int64_t id = -1;
        if (!v.get_i64(id) || id < 0 || id >= static_cast<int64_t>(tokenizer.id_limit()))
            fail(Status::InvalidArgument, where, ": eos_token_id ", v.is_integer() ? "" : "must "
                 "be an id or a list of ids; ", "the tokenizer's ids run to ",
                 tokenizer.id_limit() - 1);
        ids.push_back(static_cast<int32_t>(id));
    };
    std::string text;
    const std::string gen = path_join(folder, "generation_config.json");
    if (read_file(gen, text)) {
        const json::Value doc = json::parse_lenient_numbers(text, gen);
        const json::Value* e = doc.is_object() ? doc.find("eos_token_id") : nullptr;
        if (e && e->is_array())
            for (const json::Value& v : e->arr) add(v, gen);
        else if (e && e->kind != json::Value::Kind::Null)
            add(*e, gen);
        if (!ids.empty()) return ids;
    }
    const std::string cfg = path_join(folder, "tokenizer_config.json");
    if (read_file(cfg, text)) {
        const json::Value doc = json::parse_lenient_numbers(text, cfg);
        const json::Value* e = doc.is_object() ? doc.find("eos_token") : nullptr;
        if (e && e->is_object()) e = e->find("content");
        if (e && e->is_string()) {
            uint32_t id = 0;
            if (!tokenizer.find(e->s, id))
                fail(Status::InvalidArgument, cfg, ": eos_token '", e->s, "' is not a token of "
                     "the folder's tokenizer");
            return {static_cast<int32_t>(id)};
        }
    }
    fail(Status::InvalidArgument, "the model folder '", folder, "' names no end-of-turn token: "
         "neither generation_config.json's eos_token_id nor tokenizer_config.json's eos_token; "
         "add one of them (generation would not know where a reply ends)");
}

void write_generation_config(const tok::TokenizerFiles& files, const std::string& out_dir) {
    const std::string folder = parent_dir(files.path);
    std::string text;
    if (read_file(path_join(folder, "generation_config.json"), text)) return;  // copied as is
    bool has_template = read_file(path_join(folder, "chat_template.jinja"), text);
    if (!has_template && read_file(path_join(folder, "tokenizer_config.json"), text)) {
        const json::Value doc = json::parse_lenient_numbers(text, "tokenizer_config.json");
        const json::Value* t = doc.is_object() ? doc.find("chat_template") : nullptr;
        has_template = t && t->kind != json::Value::Kind::Null;
    }
    if (!has_template) return;
    std::vector<int32_t> ids;
    try {
        ids = end_of_turn_ids(folder, tok::Tokenizer::from_file(files.path));
    } catch (const Error&) {
        return;  // no end-of-turn token named: nothing to write
    }
    std::string j = "{\n  \"eos_token_id\": [";
    for (size_t i = 0; i < ids.size(); ++i) j += (i ? ", " : "") + std::to_string(ids[i]);
    write_file_atomic(path_join(out_dir, "generation_config.json"), j + "]\n}\n");
}

}  // namespace trt::chat
