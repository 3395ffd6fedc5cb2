#include "chat/chat_template.h"

#include <sys/stat.h>

#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_render.h"
#include "core/error.h"
#include "io/fs_util.h"

namespace trt::chat {

namespace {

constexpr size_t kMaxTemplateFile = 16u << 20;

bool is_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);  // follows links (HF cache)
}

}  // namespace

// The special tokens transformers' special_tokens_map holds: strings, AddedToken -> content.
json::Value special_tokens_of(const json::Value& config) {
    json::Value out;
    out.kind = json::Value::Kind::Object;
    auto as_text = [](const json::Value& v, std::string& s) {
        if (v.is_string()) { s = v.s; return true; }
        if (v.is_object()) {
            const json::Value* c = v.find("content");
            if (c && c->is_string()) { s = c->s; return true; }
        }
        return false;
    };
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                            "cls_token", "mask_token"}) {
        const json::Value* v = config.find(key);
        std::string s;
        if (v && as_text(*v, s)) {
            json::Value str;
            str.kind = json::Value::Kind::String;
            str.s = s;
            out.obj.push_back({key, std::move(str)});
        }
    }
    const json::Value* extra = config.find("additional_special_tokens");
    if (extra && extra->is_array()) {
        json::Value list;
        list.kind = json::Value::Kind::Array;
        for (const auto& e : extra->arr) {
            json::Value str;
            str.kind = json::Value::Kind::String;
            if (as_text(e, str.s)) list.arr.push_back(std::move(str));
        }
        out.obj.push_back({"additional_special_tokens", std::move(list)});
    }
    return out;
}

Template Template::parse(std::string_view source, const std::string& origin) {
    Template t;
    t.origin_ = origin;
    t.program_ = std::make_shared<const Program>(parse_program(tokenize(source, origin), origin));
    return t;
}

bool Template::has_generation_blocks() const { return program_ && program_->has_generation; }

Rendered Template::render(const json::Value& context) const { return render(context, Limits{}); }

Rendered Template::render(const json::Value& context, const Limits& limits) const {
    if (!program_) fail(Status::InvalidArgument, "chat template: render on an empty Template");
    if (!context.is_object())
        fail(Status::InvalidArgument, origin_, ": the template context must be a JSON object, got ",
             context.kind_name());
    auto root = std::make_shared<Scope>();
    root->vars.reserve(context.obj.size());
    for (const auto& m : context.obj) root->set(m.key, from_json(m.value));
    Rendered r;
    Evaluator ev(*program_, limits);
    try {
        ev.render(root, r.text, r.generation_spans);
    } catch (const Error& e) {
        // Runtime errors carry "line N: ..."; the template's name goes in front.
        const std::string msg = e.what();
        if (e.status() == Status::InvalidArgument && msg.rfind("line ", 0) == 0) {
            const size_t colon = msg.find(':');
            throw Error(e.status(), origin_ + ":" + msg.substr(5, colon - 5) + ":" + msg.substr(colon + 1));
        }
        if (e.status() == Status::InvalidArgument) throw Error(e.status(), origin_ + ": " + msg);
        throw;
    }
    return r;
}

FolderTemplate load_folder_template(const std::string& folder, const std::string& name) {
    FolderTemplate ft;
    const std::string config_path = path_join(folder, "tokenizer_config.json");
    const std::string jinja_path = path_join(folder, "chat_template.jinja");
    json::Value config;
    config.kind = json::Value::Kind::Object;
    const bool have_config = is_file(config_path);
    if (have_config)
        config = json::parse_lenient_numbers(read_small_file(config_path, kMaxTemplateFile), config_path);
    if (!config.is_object()) fail(Status::Format, config_path, ": expected a JSON object");
    ft.special_tokens = special_tokens_of(config);

    if (is_file(jinja_path)) {
        ft.origin = jinja_path;
        ft.source_text = read_small_file(jinja_path, kMaxTemplateFile);
    } else {
        const json::Value* ct = have_config ? config.find("chat_template") : nullptr;
        if (!ct || ct->kind == json::Value::Kind::Null)
            fail(Status::InvalidArgument, folder, ": no chat template (neither chat_template.jinja nor a "
                 "\"chat_template\" in tokenizer_config.json); this model folder cannot render conversations");
        if (ct->is_string()) {
            if (!name.empty() && name != "default")
                fail(Status::InvalidArgument, config_path, ": the chat template is a single string; there "
                     "is no template named '", name, "'");
            ft.source_text = ct->s;
            ft.origin = config_path + " (chat_template)";
        } else if (ct->is_array()) {
            const std::string want = name.empty() ? "default" : name;
            std::string names;
            for (const auto& e : ct->arr) {
                const json::Value* n = e.is_object() ? e.find("name") : nullptr;
                const json::Value* t = e.is_object() ? e.find("template") : nullptr;
                if (!n || !n->is_string() || !t || !t->is_string())
                    fail(Status::Format, config_path, ": \"chat_template\" list entries must be "
                         "{\"name\": string, \"template\": string}");
                names += (names.empty() ? "" : ", ") + n->s;
                if (n->s == want && ft.origin.empty()) {
                    ft.source_text = t->s;
                    ft.origin = config_path + " (chat_template '" + want + "')";
                }
            }
            if (ft.origin.empty())
                fail(Status::InvalidArgument, config_path, ": no chat template named '", want,
                     "' (it has: ", names, ")");
        } else {
            fail(Status::Format, config_path, ": \"chat_template\" must be a string or a list, got ",
                 ct->kind_name());
        }
    }
    ft.tmpl = Template::parse(ft.source_text, ft.origin);
    return ft;
}

json::Value make_context(const FolderTemplate& t, const json::Value& messages, const json::Value* tools,
                         bool add_generation_prompt, const json::Value* extra_vars) {
    json::Value ctx = t.special_tokens;
    ctx.kind = json::Value::Kind::Object;
    auto put = [&ctx](const std::string& key, json::Value v) {
        for (auto& m : ctx.obj)
            if (m.key == key) { m.value = std::move(v); return; }
        ctx.obj.push_back({key, std::move(v)});
    };
    if (extra_vars && extra_vars->kind != json::Value::Kind::Null) {
        if (!extra_vars->is_object())
            fail(Status::InvalidArgument, "chat template variables must be a JSON object, got ",
                 extra_vars->kind_name());
        for (const auto& m : extra_vars->obj) {
            if (m.key == "messages" || m.key == "tools" || m.key == "documents" ||
                m.key == "add_generation_prompt")
                fail(Status::InvalidArgument, "chat template variable '", m.key,
                     "' is set by the conversation itself; it cannot be given as an extra variable");
            put(m.key, m.value);
        }
    }
    put("messages", messages);
    // transformers passes tools=None and documents=None when there are none.
    put("tools", tools ? *tools : json::Value{});
    put("documents", json::Value{});
    json::Value agp;
    agp.kind = json::Value::Kind::Bool;
    agp.b = add_generation_prompt;
    put("add_generation_prompt", agp);
    return ctx;
}

}  // namespace trt::chat
