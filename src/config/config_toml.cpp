// Config: TOML text -> validated RunConfig. The only translation unit that includes toml++.
//
// Shape: one static table of key descriptors (the key table, config_keys.h) drives parsing,
// validation, the typed getters, get_string's TOML text and dump(), so they cannot drift apart.
//
// State: a Config keeps its source text and the values given to set(), not a toml::table.
// toml++ drops source regions when a node is copied, and we want every error - including one
// found while re-validating after set() or in a copied Config - to name file:line:col. So each
// change re-parses the text (configs are tiny), lays the set() values over it, and validates
// the whole; a failure throws before anything is assigned, leaving the Config unchanged.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/config_keys.h"
#include "config/gguf_model_config.h"
#include "config/hf_model_config.h"
#include "config/size_limits.h"
#include "config/toml_guard.h"
#include "core/error.h"
#include "core/nearest.h"
#include "core/quote.h"
#include "io/fs_util.h"

namespace trt {

using namespace config_keys;

namespace {

// The largest config file read (from_file): far above any real config, small enough that a
// wrong path (a data shard, a device) fails at once.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

namespace fs = std::filesystem;

// Source path given to the nodes parsed from set() values; such nodes have no file position.
constexpr const char* kSetSource = "\x01trainrt-set";

// ------------------------------------------------------------------ text helpers

// Shortest text that reads back as the same double, in TOML float syntax.
std::string fmt_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    // Plain notation for everyday magnitudes (0.0003, 1000.0), exponents for the rest (1e-8).
    char buf[400];
    const double mag = std::fabs(v);
    const bool plain = mag == 0.0 || (mag >= 1e-5 && mag < 1e16);
    const auto res = plain ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                           : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string s(buf, res.ptr);
    const size_t e = s.find('e');
    if (e != std::string::npos) {  // "1e-08" -> "1e-8", "1e+20" -> "1e20"
        std::string mant = s.substr(0, e), exp = s.substr(e + 1);
        std::string sign;
        if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
            if (exp[0] == '-') sign = "-";
            exp.erase(0, 1);
        }
        const size_t nz = exp.find_first_not_of('0');
        exp = nz == std::string::npos ? "0" : exp.substr(nz);
        return mant + "e" + sign + exp;
    }
    if (s.find('.') == std::string::npos) s += ".0";
    return s;
}

std::string quote(std::string_view s) { return quote_string(s); }

std::string expectation(const KeyDesc& d) {
    auto bound = [](const char* op, double v) {
        const bool whole = v == std::floor(v) && std::fabs(v) < 1e15;
        return cat(" ", op, " ", whole ? std::to_string(static_cast<int64_t>(v)) : fmt_double(v));
    };
    switch (d.type) {
        case KType::Int:
            if (d.imax != kI64Max)
                return cat("an integer in [", d.imin, ", ", d.imax, "]",
                           d.auto_ok ? " or \"auto\"" : "");
            return cat("an integer >= ", d.imin);
        case KType::Seed: return "a non-negative integer";
        case KType::Float: {
            std::string s = "a finite number";
            if (!std::isnan(d.fmin)) s += bound(d.fmin_excl ? ">" : ">=", d.fmin);
            if (!std::isnan(d.fmin) && !std::isnan(d.fmax)) s += " and";
            if (!std::isnan(d.fmax)) s += bound(d.fmax_excl ? "<" : "<=", d.fmax);
            return s;
        }
        case KType::Bool: return "true or false";
        case KType::Path: return "a string (a path; \"\" for none)";
        case KType::Enum: {
            std::string s = "one of ";
            const auto names = enum_names(d);
            for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + quote(names[i]);
            return s;
        }
        case KType::Betas: return "an array of 2 numbers [beta1, beta2], each in [0, 1)";
        case KType::Names:
            return cat("an array of at most ", kMaxNames, " non-empty strings of at most ",
                       kMaxNameBytes, " bytes ([] for none)");
    }
    return "?";
}

const char* type_noun(KType t) {
    switch (t) {
        case KType::Int:
        case KType::Seed: return "an integer";
        case KType::Float: return "a float";
        case KType::Bool: return "a boolean";
        case KType::Path:
        case KType::Enum: return "a string";
        case KType::Betas: return "an array of 2 floats";
        case KType::Names: return "an array of strings";
    }
    return "?";
}

const char* node_noun(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a float";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::array: return "an array";
        case toml::node_type::table: return "a table";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        default: return "nothing";
    }
}

// "an integer (-1)", "a string (\"x\")", "an array".
std::string describe(const toml::node& n) {
    if (auto v = n.as_integer()) return cat("an integer (", v->get(), ")");
    if (auto v = n.as_floating_point()) return cat("a float (", fmt_double(v->get()), ")");
    if (auto v = n.as_boolean()) return cat("a boolean (", v->get() ? "true" : "false", ")");
    if (auto v = n.as_string()) return cat("a string (", quote(v->get()), ")");
    if (auto v = n.as_array()) return cat("an array of ", v->size(), " elements");
    return node_noun(n);
}

// ------------------------------------------------------------------ problems

struct Problem {
    bool positioned = false;
    std::string file;
    uint32_t line = 0, column = 0;
    std::string message;  // "key: what is wrong; what to do"
};

class Problems {
public:
    explicit Problems(std::string fallback_source) : fallback_(std::move(fallback_source)) {}

    void add(const toml::source_region* where, std::string message) {
        Problem p;
        p.message = std::move(message);
        if (where && where->begin.line > 0) {
            const std::string file = where->path ? *where->path : fallback_;
            if (file != kSetSource) {
                p.positioned = true;
                p.file = file;
                p.line = where->begin.line;
                p.column = where->begin.column;
            }
        }
        list_.push_back(std::move(p));
    }

    // Throws the first problem in source order (then set() values and defaults).
    void throw_if_any() const {
        if (list_.empty()) return;
        const auto first = std::min_element(
            list_.begin(), list_.end(), [](const Problem& a, const Problem& b) {
                if (a.positioned != b.positioned) return a.positioned;
                return std::tie(a.line, a.column) < std::tie(b.line, b.column);
            });
        std::string msg;
        if (first->positioned) msg = cat(first->file, ":", first->line, ":", first->column, ": ");
        msg += first->message;
        if (list_.size() > 1)
            msg += cat(" (and ", list_.size() - 1, " more problem", list_.size() > 2 ? "s" : "",
                       " in this config)");
        throw Error(Status::Config, msg);
    }

private:
    std::string fallback_;
    std::vector<Problem> list_;
};

// ------------------------------------------------------------------ parsing

std::string hex_code_point(char32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04X", static_cast<unsigned>(cp));
    return buf;
}

// toml++ on untrusted text, in the three steps of config/toml_guard.h. Returns false and
// fills `problem` (line:column and what) on a syntax error.
bool parse_guarded(std::string_view text, const std::string& source_name, toml::table& out,
                   TomlGuardProblem& problem) {
    problem = toml_guard(text);
    if (!problem.what.empty()) return false;
    try {
        const bool has_non_ascii = std::any_of(text.begin(), text.end(), [](char c) {
            return static_cast<unsigned char>(c) >= 0x80;
        });
        if (has_non_ascii) {
            const std::string shadow = toml_ascii_shadow(text);
            try {
                (void)toml::parse(shadow, source_name);
            } catch (const toml::parse_error& e) {
                const auto& b = e.source().begin;
                const TomlChar at = toml_char_at(text, b.line, b.column);
                problem.line = b.line, problem.column = b.column;
                problem.what = e.description();
                if (at.code_point >= 0x80) {
                    // toml++ saw the '@' standing in for this character: name the real one.
                    for (size_t k = problem.what.find('@'); k != std::string::npos;
                         k = problem.what.find('@', k + at.bytes.size()))
                        problem.what.replace(k, 1, at.bytes);
                    problem.what += cat(" (U+", hex_code_point(at.code_point),
                                        "; TOML allows non-ASCII characters only as text inside "
                                        "strings and comments)");
                }
                return false;
            }
        }
        out = toml::parse(text, source_name);
        return true;
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        problem.line = b.line, problem.column = b.column, problem.what = e.description();
        return false;
    }
}

// Parses a whole document; syntax errors become Error(Config) with file:line:col.
toml::table parse_text(std::string_view text, const std::string& source_name) {
    toml::table doc;
    if (TomlGuardProblem p; !parse_guarded(text, source_name, doc, p))
        fail(Status::Config, source_name, ":", p.line, ":", p.column,
             ": TOML syntax error: ", p.what);
    return doc;
}

// model.rope_scaling's keys: each means something for some kinds of scaling only, and
// llama3's blend needs its band (transformers' _compute_llama3_parameters). While
// rope_scaling is "none" they are not read, and may be set ahead of it: Config::set validates
// after every key, so "llama3" can only be set once its rope_original_context is.
template <class Where>
void rope_scaling_rules(const ModelConfig& m, Where where, Problems& problems) {
    const bool linear = m.rope_scaling == RopeScaling::Linear;
    const bool llama3 = m.rope_scaling == RopeScaling::Llama3;
    const auto only = [&](bool used, bool at_default, const char* key, const char* kinds) {
        if (m.rope_scaling != RopeScaling::None && !used && !at_default)
            problems.add(where(key, "model.rope_scaling"),
                         cat(key, ": given while model.rope_scaling = \"",
                             to_string(m.rope_scaling), "\"; it is read with ", kinds, " only"));
    };
    only(linear || llama3, m.rope_scaling_factor == 1.0, "model.rope_scaling_factor",
         "\"linear\" and \"llama3\"");
    only(llama3, m.rope_low_freq_factor == 1.0, "model.rope_low_freq_factor", "\"llama3\"");
    only(llama3, m.rope_high_freq_factor == 4.0, "model.rope_high_freq_factor", "\"llama3\"");
    only(llama3, m.rope_original_context == 0, "model.rope_original_context", "\"llama3\"");
    if (!llama3) return;
    if (m.rope_original_context == 0)
        problems.add(where("model.rope_original_context", "model.rope_scaling"),
                     "model.rope_original_context: model.rope_scaling = \"llama3\" needs the "
                     "pretraining context (original_max_position_embeddings: 8192 for Llama 3.1 "
                     "and 3.2)");
    if (!(m.rope_high_freq_factor > m.rope_low_freq_factor))
        problems.add(where("model.rope_high_freq_factor", "model.rope_low_freq_factor"),
                     cat("model.rope_high_freq_factor: ", m.rope_high_freq_factor,
                         " must be above model.rope_low_freq_factor (", m.rope_low_freq_factor,
                         "); Llama 3.1 uses 4 and 1"));
}

// Cross-key rules of the model family (model/family.h): what each family can express.
// `where(a, b)` gives the source of whichever key was written.
template <class Where>
void model_family_rules(const RunConfig& r, Where where, Problems& problems) {
    const ModelConfig& m = r.model;
    if (m.n_kv_head > 0 && m.n_head % m.n_kv_head != 0)
        problems.add(where("model.n_kv_head", "model.n_head"),
                     cat("model.n_kv_head: ", m.n_kv_head, " does not divide model.n_head (",
                         m.n_head, "); each key/value head serves n_head / n_kv_head query "
                         "heads"));
    if (m.arch == ModelArch::Gpt2) {
        const char* family = "; GPT-2 has no such switch (set model.arch = \"llama\" for it)";
        if (m.n_kv_head != 0 && m.n_kv_head != m.n_head)
            problems.add(where("model.n_kv_head", "model.arch"),
                         cat("model.n_kv_head: grouped-query attention (", m.n_kv_head,
                             " key/value heads for ", m.n_head, ")", family));
        if (!m.tie_embeddings)
            problems.add(where("model.tie_embeddings", "model.arch"),
                         cat("model.tie_embeddings: GPT-2's output head is always its token "
                             "embedding", family));
        if (m.rope_theta != 10000.0)
            problems.add(where("model.rope_theta", "model.arch"),
                         cat("model.rope_theta: GPT-2 has learned positions, not RoPE", family));
        if (m.norm_eps != 1e-5)
            problems.add(where("model.norm_eps", "model.arch"),
                         cat("model.norm_eps: GPT-2's LayerNorm epsilon is 1e-5 "
                             "(layer_norm_epsilon of every GPT-2)", family));
        if (m.rope_scaling != RopeScaling::None)
            problems.add(where("model.rope_scaling", "model.arch"),
                         cat("model.rope_scaling: GPT-2 has learned positions, not RoPE", family));
        if (m.head_dim != 0 && m.head_dim * m.n_head != m.d_model)
            problems.add(where("model.head_dim", "model.arch"),
                         cat("model.head_dim: GPT-2's heads are d_model / n_head wide", family));
    } else if (m.head_dim != 0) {
        if (m.head_dim % 2 != 0)
            problems.add(where("model.head_dim", "model.arch"),
                         cat("model.head_dim = ", m.head_dim,
                             " is odd; RoPE rotates pairs, so the head size must be even"));
        if (m.head_dim * m.n_head > limits::kMaxWidth)
            problems.add(where("model.head_dim", "model.n_head"),
                         cat("model.head_dim * model.n_head = ", m.head_dim * m.n_head,
                             " is above ", limits::kMaxWidth, ", the widest attention supported"));
    } else if (m.n_head >= 1 && m.d_model % m.n_head == 0 && (m.d_model / m.n_head) % 2 != 0) {
        problems.add(where("model.d_model", "model.n_head"),
                     cat("model.d_model / model.n_head = ", m.d_model / m.n_head,
                         " is odd; RoPE rotates pairs, so the head size must be even"));
    }
    rope_scaling_rules(m, where, problems);
    if (m.sliding_window != 0 && m.arch != ModelArch::Mistral)
        problems.add(where("model.sliding_window", "model.arch"),
                     cat("model.sliding_window: the ", to_string(m.arch), " family attends to "
                         "its whole context; only model.arch = \"mistral\" has a sliding window"));
    // [lora] keys that mean something only with adapters (which modules exist, and whether
    // the rank fits them, is the model's to say: model/lora.h, when the session starts).
    const LoraConfig& l = r.lora;
    if (l.rank == 0 && !l.target_modules.empty())
        problems.add(where("lora.target_modules", "lora.rank"),
                     "lora.target_modules: given while lora.rank = 0 (no adapters); set "
                     "lora.rank (e.g. 8) to train LoRA adapters");
    if (l.rank == 0 && !l.init_from.empty())
        problems.add(where("lora.init_from", "lora.rank"),
                     "lora.init_from: an adapter folder needs lora.rank set to its r "
                     "(adapter_config.json's \"r\")");
    if (l.rank == 0 && l.base_dtype != BaseDType::Fp32)
        problems.add(where("lora.base_dtype", "lora.rank"),
                     cat("lora.base_dtype = \"", to_string(l.base_dtype),
                         "\": a quantised base is frozen, so only LoRA adapters could train; "
                         "set lora.rank (e.g. 16) and lora.target_modules (\"all-linear\" is "
                         "QLoRA's choice)"));
}

// Lexically normal ("configs/../../out/x" -> "../out/x"): every message, log line and stored
// config then shows the path a person would write. Relative stays relative; no symlink is
// followed (the folder may not exist yet).
std::string resolve_path(const std::string& base_dir, const std::string& p) {
    if (p.empty()) return p;
    const fs::path path(p);
    if (base_dir.empty() || path.is_absolute()) return path.lexically_normal().string();
    return (fs::path(base_dir) / path).lexically_normal().string();
}

// A TOML number (integer or float) as a double; nothing for any other node.
std::optional<double> number(const toml::node& x) {
    if (auto v = x.as_integer()) return static_cast<double>(v->get());
    if (auto v = x.as_floating_point()) return v->get();
    return std::nullopt;
}

// Reads one key's node into a RunConfig, one step per value type: each adds a problem (and
// leaves `out`) when the node does not fit.
class ValueReader {
public:
    ValueReader(const KeyDesc& d, Problems& problems)
        : d_(d), problems_(problems), key_(d.path()) {}

    void read(const toml::node& n, RunConfig& out) const {
        switch (d_.type) {
            case KType::Int: return read_int(n, out);
            case KType::Seed: {
                const auto v = n.as_integer();
                if (!v || v->get() < 0) return bad(n, describe(n));
                d_.u64(out) = static_cast<uint64_t>(v->get());
                return;
            }
            case KType::Float: {
                const auto v = number(n);
                if (!v || !float_ok(*v)) return bad(n, describe(n));
                d_.f64(out) = *v;
                return;
            }
            case KType::Bool: {
                const auto v = n.as_boolean();
                if (!v) return bad(n, describe(n));
                d_.b(out) = v->get();
                return;
            }
            case KType::Path: return read_path(n, out);
            case KType::Enum: return read_enum(n, out);
            case KType::Betas: return read_betas(n, out);
            case KType::Names: return read_names(n, out);
        }
    }

private:
    void bad(const toml::node& at, const std::string& got, const std::string& extra = "") const {
        problems_.add(&at.source(),
                      cat(key_, ": expected ", expectation(d_), ", got ", got, extra));
    }
    bool float_ok(double v) const {
        if (!std::isfinite(v)) return false;
        if (!std::isnan(d_.fmin) && (d_.fmin_excl ? !(v > d_.fmin) : !(v >= d_.fmin)))
            return false;
        if (!std::isnan(d_.fmax) && (d_.fmax_excl ? !(v < d_.fmax) : !(v <= d_.fmax)))
            return false;
        return true;
    }
    // TOML strings may hold "\u0000", C strings end there: data.train = "x\u0000y" would
    // open x. Refused rather than cut.
    bool has_nul(const toml::node& at, const std::string& v, const std::string& which) const {
        const size_t nul = v.find('\0');
        if (nul == std::string::npos) return false;
        problems_.add(&at.source(), cat(key_, which, ": the string holds a NUL character (\\u0000) "
                                        "at byte ", nul, "; paths and names cannot contain one"));
        return true;
    }

    void read_int(const toml::node& n, RunConfig& out) const {
        const auto v = n.as_integer();
        if (d_.auto_ok && n.as_string() && n.as_string()->get() == "auto") {
            d_.i64(out) = 0;
            return;
        }
        if (!v) {
            const auto f = n.as_floating_point();
            const bool whole = f && std::isfinite(f->get()) && f->get() == std::floor(f->get());
            return bad(n, describe(n), whole ? " (integers are written without '.0')" : "");
        }
        if (v->get() < d_.imin || v->get() > d_.imax) return bad(n, describe(n));
        d_.i64(out) = v->get();
    }

    void read_path(const toml::node& n, RunConfig& out) const {
        const auto v = n.as_string();
        if (!v) return bad(n, describe(n), n.is_boolean() || n.is_number() ? " (quote it)" : "");
        if (has_nul(n, v->get(), "")) return;
        d_.str(out) = v->get();
    }

    void read_enum(const toml::node& n, RunConfig& out) const {
        const auto v = n.as_string();
        if (!v) return bad(n, describe(n));
        const auto names = enum_names(d_);
        for (size_t i = 0; i < names.size(); ++i) {
            if (names[i] == v->get()) {
                d_.eset(out, static_cast<int>(i));
                return;
            }
        }
        const std::string near = nearest(v->get(), names);
        return bad(n, describe(n), near.empty() ? "" : cat("; did you mean ", quote(near), "?"));
    }

    void read_betas(const toml::node& n, RunConfig& out) const {
        const auto a = n.as_array();
        if (!a || a->size() != 2) return bad(n, describe(n));
        double b[2];
        for (size_t i = 0; i < 2; ++i) {
            const toml::node& e = *a->get(i);
            const auto v = number(e);
            if (!v || !float_ok(*v)) return bad(e, cat(describe(e), " as element ", i));
            b[i] = *v;
        }
        d_.f64(out) = b[0];
        d_.f64b(out) = b[1];
    }

    void read_names(const toml::node& n, RunConfig& out) const {
        const auto a = n.as_array();
        if (!a || a->size() > kMaxNames) return bad(n, describe(n));
        std::vector<std::string> names;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node& e = *a->get(i);
            const auto v = e.as_string();
            if (!v || v->get().empty() || v->get().size() > kMaxNameBytes)
                return bad(e, cat(describe(e), " as element ", i));
            if (has_nul(e, v->get(), cat(" (element ", i, ")"))) return;
            names.push_back(v->get());
        }
        d_.names(out) = std::move(names);
    }

    const KeyDesc& d_;
    Problems& problems_;
    const std::string key_;
};

// Converts one node into `out`, adding a problem (and leaving `out`) when it does not fit.
void apply_value(const KeyDesc& d, const toml::node& n, RunConfig& out, Problems& problems) {
    ValueReader(d, problems).read(n, out);
}

// Reports sections and keys that are not in the key table (with a suggestion when one is near).
void check_unknown(const toml::table& doc, Problems& problems) {
    const auto& secs = sections();
    for (auto&& [sk, sv] : doc) {
        const std::string sname(sk.str());
        if (std::find(secs.begin(), secs.end(), sname) == secs.end()) {
            std::string hint;
            if (!sv.is_table()) {
                // A key at top level: maybe it belongs in a section.
                for (const KeyDesc& d : keys())
                    if (sname == d.name) {
                        hint = cat("; keys belong in a section: did you mean ", d.path(),
                                   " (under [", d.section, "])?");
                        break;
                    }
            }
            if (hint.empty()) {
                const std::string near = nearest(sname, secs);
                if (!near.empty()) hint = cat("; did you mean [", near, "]?");
            }
            std::string list;
            for (size_t i = 0; i < secs.size(); ++i) list += (i ? ", [" : "[") + secs[i] + "]";
            problems.add(&sk.source(), cat(sname, ": unknown ", sv.is_table() ? "section" : "key",
                                           hint, " (sections are ", list, ")"));
            continue;
        }
        const toml::table* tbl = sv.as_table();
        if (!tbl) {
            problems.add(&sv.source(), cat(sname, ": expected a table (a [", sname,
                                           "] section), got ", describe(sv)));
            continue;
        }
        std::vector<std::string> names;
        for (const KeyDesc& d : keys())
            if (sname == d.section) names.emplace_back(d.name);
        for (auto&& [k, v] : *tbl) {
            (void)v;
            const std::string kname(k.str());
            if (find_key(sname, kname)) continue;
            std::string hint;
            const std::string near = nearest(kname, names);
            if (!near.empty()) {
                hint = cat("; did you mean '", near, "'?");
            } else {
                for (const KeyDesc& d : keys())
                    if (kname == d.name) {
                        hint = cat("; did you mean ", d.path(), " (under [", d.section, "])?");
                        break;
                    }
            }
            if (hint.empty()) hint = cat(" (see docs/CONFIG.md for the keys of [", sname, "])");
            problems.add(&k.source(), cat(sname, ".", kname, ": unknown key", hint));
        }
    }
}

// Parses the value text given to set() ("0.9", "[0.9, 0.95]", "\"x\"") as a one-key table.
toml::table parse_set_value(const KeyDesc& d, const std::string& value) {
    const std::string key = d.path();
    const bool stringy = d.type == KType::Path || d.type == KType::Enum;
    const std::string hint = stringy ? cat("; strings need quotes, e.g. ", key, "=", quote(value))
                                     : "";
    toml::table t;
    const std::string doc = "v = " + value;
    if (TomlGuardProblem p; !parse_guarded(doc, std::string(kSetSource), t, p))
        fail(Status::Config, key, ": cannot parse the value '", value, "' as a TOML value (",
             p.what, ")", hint);
    if (t.size() != 1 || !t.contains("v"))
        fail(Status::Config, key, ": the value '", value, "' is not a single TOML value", hint);
    return t;
}

}  // namespace

// ------------------------------------------------------------------ Config

namespace {

std::string value_text(const KeyDesc& d, const RunConfig& rc);  // below

// What a GGUF file cannot say, so a config's value is not a contradiction: Llama 3's RoPE
// blend parameters (the file holds only their result, which loading the weights checks), a
// Mistral's sliding window, and "mistral" for a file of llama.cpp's llama architecture.
bool gguf_silent_on(const std::string& name, const RunConfig& r, const RunConfig& file) {
    if (name == "rope_low_freq_factor" || name == "rope_high_freq_factor" ||
        name == "rope_original_context" || name == "sliding_window")
        return true;
    return name == "arch" && r.model.arch == ModelArch::Mistral &&
           file.model.arch == ModelArch::Llama;
}

// model.init_from naming a folder (a Hugging Face model or a libtrainrt checkpoint) or a GGUF
// file: its config.json, or the file's metadata, decides the model's family and shape.
// [model] keys the config did not write take the folder's values; keys it wrote must agree,
// else a problem at the key saying which value the folder has. (docs/CONFIG.md, "Hugging Face
// model folders", "GGUF files".)
void merge_model_folder(RunConfig& r, const std::string& base_dir,
                        const std::map<const KeyDesc*, const toml::node*>& given,
                        Problems& problems) {
    const std::string resolved = resolve_path(base_dir, r.model.init_from);
    const bool gguf_file = !r.model.init_from.empty() && gguf::is_gguf_file(resolved);
    const std::string path = gguf_file ? resolved : hf_folder_config_path(resolved);
    // A folder without config.json gives no shape: [model] stands, and loading the weights
    // says what the folder lacks.
    if (path.empty() || path_kind(path) == PathKind::Missing) return;
    const char* what = gguf_file ? "GGUF file's metadata" : "model folder's config.json";
    // Its tokenizer is the run's, unless data.tokenizer names one (resolved with the other
    // paths below, like model.init_from itself).
    // (A tokenizer.json, or a SentencePiece tokenizer.model; src/tokenizer/tokenizer_files.h
    // says which one a folder with both stands for.)
    const std::filesystem::path folder_dir(resolved);
    std::error_code ec;
    if (!gguf_file && !given.count(find_key("data.tokenizer")) && r.data.tokenizer.empty() &&
        (std::filesystem::is_regular_file(folder_dir / "tokenizer.json", ec) ||
         std::filesystem::is_regular_file(folder_dir / "tokenizer.model", ec)))
        r.data.tokenizer = r.model.init_from;
    const toml::node* init_node = given.count(find_key("model.init_from"))
                                      ? given.at(find_key("model.init_from"))
                                      : nullptr;
    RunConfig folder;
    try {
        folder.model = gguf_file ? parse_gguf_model_config(gguf::Reader::open(path))
                                 : parse_hf_model_config(read_small_file(path, 1 << 20), path);
    } catch (const Error& e) {
        problems.add(init_node ? &init_node->source() : nullptr,
                     cat("model.init_from: the ", what, " cannot be used: ", e.what()));
        return;
    }
    // Effective values, so that n_kv_head = 0 (= n_head) and d_ff = 0 (= 4 d_model) agree
    // with a folder that spells them out.
    const auto effective = [](const KeyDesc& d, const RunConfig& c) {
        const std::string name = d.name;
        if (name == "n_kv_head" && c.model.n_kv_head == 0) return std::to_string(c.model.n_head);
        if (name == "d_ff" && c.model.d_ff == 0) return std::to_string(4 * c.model.d_model);
        if (name == "head_dim" && c.model.head_dim == 0 && c.model.n_head > 0)
            return std::to_string(c.model.d_model / c.model.n_head);
        return value_text(d, c);
    };
    for (const KeyDesc& d : keys()) {
        const std::string name = d.name;
        if (std::string(d.section) != "model" || name == "init_from" || name == "seed" ||
            name == "dropout")  // a training choice, not the folder's shape
            continue;
        if (auto it = given.find(&d); it != given.end()) {
            if (effective(d, r) != effective(d, folder) &&
                !(gguf_file && gguf_silent_on(name, r, folder)))
                problems.add(
                    &it->second->source(),
                    cat("model.", name, " = ", value_text(d, r), " contradicts the ", what, " (",
                        path, "), which gives ", effective(d, folder), "; remove model.", name,
                        " to take the ", gguf_file ? "file" : "folder", "'s value"));
            continue;
        }
        switch (d.type) {
            case KType::Int: d.i64(r) = d.i64(folder); break;
            case KType::Float: d.f64(r) = d.f64(folder); break;
            case KType::Bool: d.b(r) = d.b(folder); break;
            case KType::Enum: d.eset(r, d.eget(folder)); break;
            default: TRT_CHECK(false, "model.", name, " has no folder merge rule");
        }
    }
}

}  // namespace

struct Config::Impl {
    std::string text;                                  // the document as loaded
    std::string source_name = "<string>";              // used in messages
    std::string base_dir;                              // anchors relative paths
    std::vector<std::pair<std::string, std::string>> sets;  // set() values, key order of first set
    RunConfig run;                                     // the validated result

    // Parses text + sets and validates the whole; throws Error(Config) on any problem.
    RunConfig build() const {
        const toml::table doc = parse_text(text, source_name);
        Problems problems(source_name);
        check_unknown(doc, problems);

        std::vector<toml::table> set_docs;
        set_docs.reserve(sets.size());
        std::map<const KeyDesc*, const toml::node*> set_nodes;
        for (const auto& [key, value] : sets) {
            const KeyDesc* d = find_key(key);
            TRT_CHECK(d, "set() stored an unknown key ", key);
            set_docs.push_back(parse_set_value(*d, value));
            set_nodes[d] = set_docs.back().get("v");
        }

        RunConfig r;
        std::map<const KeyDesc*, const toml::node*> given;  // for cross-key positions
        for (const KeyDesc& d : keys()) {
            const toml::node* n = nullptr;
            if (auto it = set_nodes.find(&d); it != set_nodes.end()) {
                n = it->second;
            } else if (const toml::table* sec = doc.get_as<toml::table>(d.section)) {
                n = sec->get(d.name);
            }
            if (!n) continue;
            given[&d] = n;
            apply_value(d, *n, r, problems);
        }
        merge_model_folder(r, base_dir, given, problems);

        // Cross-key rules; the error names the first key and sits where either was written.
        auto where = [&](const char* a, const char* b) -> const toml::source_region* {
            for (const char* k : {a, b}) {
                auto it = given.find(find_key(k));
                if (it != given.end()) return &it->second->source();
            }
            return nullptr;
        };
        if (r.model.n_head >= 1 && r.model.d_model >= 1 && r.model.head_dim == 0 &&
            r.model.d_model % r.model.n_head != 0)
            problems.add(where("model.d_model", "model.n_head"),
                         cat("model.d_model: ", r.model.d_model,
                             " is not divisible by model.n_head (", r.model.n_head,
                             "); expected a multiple of n_head (d_model = n_head * head_dim), "
                             "or model.head_dim set"));
        model_family_rules(r, where, problems);
        if (r.train.seq_len > r.model.context_length)
            problems.add(where("train.seq_len", "model.context_length"),
                         cat("train.seq_len: ", r.train.seq_len,
                             " is longer than model.context_length (", r.model.context_length,
                             "); expected train.seq_len <= model.context_length"));
        if (r.optim.min_lr > r.optim.lr)
            problems.add(where("optim.min_lr", "optim.lr"),
                         cat("optim.min_lr: ", fmt_double(r.optim.min_lr),
                             " is above optim.lr (", fmt_double(r.optim.lr),
                             "); expected 0 <= optim.min_lr <= optim.lr"));
        // Sizes formed from several keys (rows per micro-batch, memory): only once each key
        // is in its own range, so the products below are of bounded numbers.
        problems.throw_if_any();
        if (const std::string size = limits::size_problem(r); !size.empty())
            problems.add(where("train.batch_size", "model.d_model"), size);
        problems.throw_if_any();

        for (const KeyDesc& d : keys())
            if (d.type == KType::Path) d.str(r) = resolve_path(base_dir, d.str(r));
        return r;
    }
};

namespace {

// The resolved value of one key as TOML text.
std::string value_text(const KeyDesc& d, const RunConfig& rc) {
    RunConfig& r = const_cast<RunConfig&>(rc);  // accessors are shared with parsing; read only
    switch (d.type) {
        case KType::Int: return d.is_auto(r) ? "\"auto\"" : std::to_string(d.i64(r));
        case KType::Seed: return std::to_string(d.u64(r));
        case KType::Float: return fmt_double(d.f64(r));
        case KType::Bool: return d.b(r) ? "true" : "false";
        case KType::Path: return quote(d.str(r));
        case KType::Enum: return quote(d.ename(d.eget(r)));
        case KType::Betas: return cat("[", fmt_double(d.f64(r)), ", ", fmt_double(d.f64b(r)), "]");
        case KType::Names: {
            std::string out = "[";
            for (const std::string& n : d.names(r)) out += (out.size() > 1 ? ", " : "") + quote(n);
            return out + "]";
        }
    }
    return "";
}

// A key as an error message shows it: whole when short, else its start and its length (a
// megabyte-long key would otherwise become a megabyte-long message).
std::string shown_key(const std::string& key) {
    constexpr size_t kShown = 64;
    if (key.size() <= 2 * kShown) return key;
    return cat(key.substr(0, kShown), "... (", key.size(), " bytes)");
}

const KeyDesc& getter_key(const std::string& key) {
    const KeyDesc* d = find_key(key);
    if (!d) {
        const std::string near = nearest(key, all_paths());
        fail(Status::Config, "unknown config key '", shown_key(key), "'",
             near.empty() ? std::string(" (keys are dotted paths like \"optim.lr\"; see docs/CONFIG.md)")
                          : cat("; did you mean '", near, "'?"));
    }
    return *d;
}

[[noreturn]] void wrong_type(const KeyDesc& d, const char* wanted) {
    fail(Status::Config, "config key '", d.path(), "' is ", type_noun(d.type), ", not ", wanted,
         "; use the getter of its type (get_string works for every key)");
}

std::string strip_trailing_slash(std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

}  // namespace

Config::Config() : impl_(std::make_unique<Impl>()) {}

Config Config::from_file(const std::string& path) {
    std::string text;
    try {
        text = read_small_file(path, kMaxConfigBytes);
    } catch (const Error& e) {
        if (e.status() != Status::Format) throw;  // Io: missing, unreadable, not a regular file
        fail(Status::Config, "config file '", path, "' is larger than ", kMaxConfigBytes,
             " bytes (", kMaxConfigBytes / 1024 / 1024,
             " MiB): is it really a run config? A config is a TOML file of a few KiB");
    }

    std::error_code ec;
    fs::path abs = fs::absolute(fs::path(path), ec);
    if (ec) abs = fs::path(path);
    std::string base = strip_trailing_slash(abs.parent_path().lexically_normal().string());
    return from_string(text, base, path);
}

Config Config::from_string(std::string_view toml, const std::string& base_dir,
                           const std::string& source_name) {
    Config c;
    c.impl_->text.assign(toml.data(), toml.size());
    c.impl_->source_name = source_name.empty() ? "<string>" : source_name;
    c.impl_->base_dir = base_dir;
    c.impl_->run = c.impl_->build();
    return c;
}

// A moved-from Config (impl_ == nullptr) copies as another moved-from one.
Config::Config(const Config& o) : impl_(o.impl_ ? std::make_unique<Impl>(*o.impl_) : nullptr) {}
Config& Config::operator=(const Config& o) {
    if (this != &o) impl_ = o.impl_ ? std::make_unique<Impl>(*o.impl_) : nullptr;
    return *this;
}
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

void Config::set(const std::string& key, const std::string& toml_value) {
    TRT_CHECK(impl_, "use of a moved-from Config");
    const KeyDesc* d = find_key(key);
    if (!d) {
        const std::string near = nearest(key, all_paths());
        fail(Status::Config, "cannot set '", shown_key(key), "': unknown config key",
             near.empty() ? std::string(" (keys are dotted paths like \"optim.lr\"; see docs/CONFIG.md)")
                          : cat("; did you mean '", near, "'?"));
    }
    parse_set_value(*d, toml_value);  // a value that does not parse fails here, naming the key

    Impl next = *impl_;
    const std::string canonical = d->path();
    auto it = std::find_if(next.sets.begin(), next.sets.end(),
                           [&](const auto& kv) { return kv.first == canonical; });
    if (it != next.sets.end())
        it->second = toml_value;
    else
        next.sets.emplace_back(canonical, toml_value);
    next.run = next.build();
    *impl_ = std::move(next);
}

int64_t Config::get_int(const std::string& key) const {
    const KeyDesc& d = getter_key(key);
    RunConfig& r = const_cast<RunConfig&>(run());
    if (d.type == KType::Int) return d.i64(r);
    if (d.type == KType::Seed) {
        const uint64_t v = d.u64(r);
        if (v > static_cast<uint64_t>(kI64Max))
            fail(Status::Config, "config key '", key, "' = ", v, " does not fit in int64; use get_string");
        return static_cast<int64_t>(v);
    }
    wrong_type(d, "an integer");
}

double Config::get_double(const std::string& key) const {
    const KeyDesc& d = getter_key(key);
    RunConfig& r = const_cast<RunConfig&>(run());
    if (d.type == KType::Float) return d.f64(r);
    if (d.type == KType::Int) return static_cast<double>(d.i64(r));
    if (d.type == KType::Seed) return static_cast<double>(d.u64(r));
    wrong_type(d, "a number");
}

bool Config::get_bool(const std::string& key) const {
    const KeyDesc& d = getter_key(key);
    if (d.type == KType::Bool) return d.b(const_cast<RunConfig&>(run()));
    wrong_type(d, "a boolean");
}

std::string Config::get_string(const std::string& key) const {
    const KeyDesc& d = getter_key(key);
    RunConfig& r = const_cast<RunConfig&>(run());
    if (d.type == KType::Path) return d.str(r);
    if (d.type == KType::Enum) return d.ename(d.eget(r));
    return value_text(d, r);
}

std::string Config::dump() const {
    const RunConfig& r = run();
    std::string out = "# libtrainrt run config: every key, resolved (docs/CONFIG.md)\n";
    const char* section = nullptr;
    for (const KeyDesc& d : keys()) {
        if (!section || std::strcmp(section, d.section) != 0) {
            out += cat(section ? "\n" : "", "[", d.section, "]\n");
            section = d.section;
        }
        out += cat(d.name, " = ", value_text(d, r), "\n");
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> Config::loss_entries() const {
    const RunConfig& r = run();
    std::vector<std::pair<std::string, std::string>> out;
    for (const KeyDesc& d : keys())
        if (d.losses == kLoss) out.emplace_back(d.path(), value_text(d, r));
    return out;
}

std::map<std::string, std::string> dump_entries(const std::string& dump) {
    std::map<std::string, std::string> out;
    std::string section;
    size_t at = 0;
    while (at < dump.size()) {
        size_t end = dump.find('\n', at);
        if (end == std::string::npos) end = dump.size();
        const std::string line = dump.substr(at, end - at);
        at = end + 1;
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == '[') {
            section = line.substr(1, line.find(']') - 1);
            continue;
        }
        const size_t eq = line.find(" = ");
        if (eq != std::string::npos) out[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
    }
    return out;
}

bool key_affects_losses(const std::string& key) {
    const KeyDesc& d = getter_key(key);
    TRT_CHECK(d.losses == kLoss || d.losses == kNoLoss, "config key '", key,
              "' has no affects_losses in the key table");
    return d.losses == kLoss;
}

const RunConfig& Config::run() const {
    TRT_CHECK(impl_, "use of a moved-from Config");
    return impl_->run;
}

const std::string& Config::base_dir() const {
    TRT_CHECK(impl_, "use of a moved-from Config");
    return impl_->base_dir;
}

}  // namespace trt
