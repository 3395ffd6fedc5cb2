// The filters ({{ x | name(args) }}), with Jinja2 3.1's semantics (jinja_builtins.h).
#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "chat/jinja_args.h"
#include "chat/jinja_case.h"
#include "chat/jinja_render.h"
#include "chat/jinja_str_ops.h"
#include "core/error.h"

namespace trt::chat {

namespace {

using FilterFn = Value (*)(Evaluator&, const Value&, CallArgs&);

// Jinja's make_attrgetter: "a.b.0" looked up item by item.
Value get_path(Evaluator& ev, const Value& obj, const std::string& path, int line) {
    Value cur = obj;
    size_t b = 0;
    while (true) {
        const size_t e = path.find('.', b);
        const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        cur = ev.get_item(cur, numeric ? Value::integer(std::atoll(part.c_str())) : Value::string(part), line);
        if (e == std::string::npos) return cur;
        b = e + 1;
    }
}

// The key filters sort and compare by: the attribute, lower-cased unless case_sensitive.
Value sort_key(Evaluator& ev, const Value& v, const Value* attribute, bool case_sensitive, int line) {
    Value k = attribute && !attribute->is_none() ? get_path(ev, v, to_str(*attribute), line) : v;
    if (!case_sensitive && k.is_string()) k = Value::string(py_lower(k.s));
    return k;
}

void sort_values(Evaluator& ev, std::vector<std::pair<Value, Value>>& keyed, bool reverse, int line) {
    // Python's sort is stable; reverse=True keeps equal items in their order too.
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? compare(y.first, x.first, line) < 0 : compare(x.first, y.first, line) < 0;
    });
}

int64_t length_of(Evaluator& ev, const Value& v, int line) {
    switch (v.type) {
        case Value::Type::Undefined: return 0;
        case Value::Type::String: return static_cast<int64_t>(utf8_length(v.s));
        case Value::Type::List: return static_cast<int64_t>(v.list->size());
        case Value::Type::Dict:
            if (!v.dict->is_namespace) return static_cast<int64_t>(v.dict->items.size());
            break;
        default: break;
    }
    ev.error(line, cat("object of type '", v.type_name(), "' has no len()"));
}

// ------------------------------------------------------------------ filters

Value f_trim(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* chars = arg(a, 0, "chars");
    std::string cs;
    if (chars && !chars->is_none()) cs = need_string(ev, *chars, a.line, "trim");
    return Value::string(py_strip(to_str(v), chars && !chars->is_none() ? &cs : nullptr, true, true));
}

Value f_tojson(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* ind = arg(a, 0, "indent");
    const Value* sep = a.kwarg("separators");
    const Value* sk = a.kwarg("sort_keys");
    int indent = -1;
    std::string indent_str;
    if (ind && !ind->is_none()) {
        if (ind->is_string()) { indent_str = ind->s; indent = 0; }
        else indent = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(need_int(ev, *ind, a.line, "tojson"), 64)));
    }
    std::string item_sep = indent >= 0 ? "," : ", ", key_sep = ": ";
    if (sep && !sep->is_none()) {
        if (!sep->is_list() || sep->list->size() != 2)
            ev.error(a.line, "tojson: separators must be an (item, key) pair");
        item_sep = need_string(ev, (*sep->list)[0], a.line, "tojson");
        key_sep = need_string(ev, (*sep->list)[1], a.line, "tojson");
    }
    std::string out = to_json(v, indent, indent_str, item_sep, key_sep, sk && sk->truthy(), a.line);
    ev.check_size(out.size(), a.line);
    return Value::string(std::move(out));
}

Value f_length(Evaluator& ev, const Value& v, CallArgs& a) { return Value::integer(length_of(ev, v, a.line)); }

Value f_list(Evaluator& ev, const Value& v, CallArgs& a) { return Value::make_list(ev.iterate(v, a.line)); }

Value f_join(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* d = arg(a, 0, "d");
    const Value* attribute = arg(a, 1, "attribute");
    const std::string sep = d ? to_str(*d) : "";
    std::string out;
    bool first = true;
    for (const Value& item : ev.iterate(v, a.line)) {
        if (!first) out += sep;
        first = false;
        out += to_str(attribute && !attribute->is_none() ? get_path(ev, item, to_str(*attribute), a.line) : item);
        ev.check_length(out.size(), a.line);
    }
    ev.check_size(out.size(), a.line);
    return Value::string(std::move(out));
}

Value f_upper(Evaluator&, const Value& v, CallArgs&) { return Value::string(py_upper(to_str(v))); }
Value f_lower(Evaluator&, const Value& v, CallArgs&) { return Value::string(py_lower(to_str(v))); }
Value f_capitalize(Evaluator&, const Value& v, CallArgs&) { return Value::string(py_capitalize(to_str(v))); }

Value f_title(Evaluator&, const Value& v, CallArgs&) { return Value::string(jinja_title(to_str(v))); }

Value f_default(Evaluator&, const Value& v, CallArgs& a) {
    const Value* d = arg(a, 0, "default_value");
    const Value* boolean = arg(a, 1, "boolean");
    const bool use = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    if (!use) return v;
    return d ? *d : Value::string("");
}

Value f_first(Evaluator& ev, const Value& v, CallArgs& a) {
    const List items = ev.iterate(v, a.line);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Evaluator& ev, const Value& v, CallArgs& a) {
    const List items = ev.iterate(v, a.line);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_replace(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* old = arg(a, 0, "old");
    const Value* rep = arg(a, 1, "new");
    const Value* count = arg(a, 2, "count");
    if (!old || !rep) ev.error(a.line, "replace() needs the old and the new string");
    std::string out = py_replace(to_str(v), to_str(*old), to_str(*rep),
                                 count && !count->is_none() ? need_int(ev, *count, a.line, "replace") : -1);
    ev.check_size(out.size(), a.line);
    return Value::string(std::move(out));
}

Value f_items(Evaluator& ev, const Value& v, CallArgs& a) {
    if (v.is_undefined()) return Value::make_list();
    if (!v.is_dict() || v.dict->is_namespace) ev.error(a.line, cat("items: expected a mapping, got ", v.type_name()));
    return dict_items(v);
}

Value f_dictsort(Evaluator& ev, const Value& v, CallArgs& a) {
    if (!v.is_dict() || v.dict->is_namespace) ev.error(a.line, cat("dictsort: expected a mapping, got ", v.type_name()));
    const Value* cs = arg(a, 0, "case_sensitive");
    const Value* by = arg(a, 1, "by");
    const Value* rev = arg(a, 2, "reverse");
    const bool by_value = by && to_str(*by) == "value";
    if (by && !by_value && to_str(*by) != "key") ev.error(a.line, "You can only sort by either \"key\" or \"value\"");
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& kv : v.dict->items) {
        Value k = sort_key(ev, by_value ? kv.second : Value::string(kv.first), nullptr, cs && cs->truthy(), a.line);
        keyed.emplace_back(std::move(k), Value::make_list({Value::string(kv.first), kv.second}, true));
    }
    sort_values(ev, keyed, rev && rev->truthy(), a.line);
    List out;
    for (auto& p : keyed) out.push_back(std::move(p.second));
    return Value::make_list(std::move(out));
}

Value f_sort(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* rev = arg(a, 0, "reverse");
    const Value* cs = arg(a, 1, "case_sensitive");
    const Value* attribute = arg(a, 2, "attribute");
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : ev.iterate(v, a.line))
        keyed.emplace_back(sort_key(ev, item, attribute, cs && cs->truthy(), a.line), item);
    sort_values(ev, keyed, rev && rev->truthy(), a.line);
    List out;
    for (auto& p : keyed) out.push_back(std::move(p.second));
    return Value::make_list(std::move(out));
}

Value f_unique(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* cs = arg(a, 0, "case_sensitive");
    const Value* attribute = arg(a, 1, "attribute");
    List out, seen;
    for (const Value& item : ev.iterate(v, a.line)) {
        Value k = sort_key(ev, item, attribute, cs && cs->truthy(), a.line);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
        seen.push_back(std::move(k));
        out.push_back(item);
    }
    return Value::make_list(std::move(out));
}

Value min_max(Evaluator& ev, const Value& v, CallArgs& a, bool want_max) {
    const Value* cs = arg(a, 0, "case_sensitive");
    const Value* attribute = arg(a, 1, "attribute");
    const List items = ev.iterate(v, a.line);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = sort_key(ev, items[0], attribute, cs && cs->truthy(), a.line);
    for (size_t k = 1; k < items.size(); ++k) {
        Value key = sort_key(ev, items[k], attribute, cs && cs->truthy(), a.line);
        const int c = compare(key, best_key, a.line);
        if (want_max ? c > 0 : c < 0) { best = k; best_key = std::move(key); }
    }
    return items[best];
}
Value f_min(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, false); }
Value f_max(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, true); }

Value f_sum(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* attribute = arg(a, 0, "attribute");
    const Value* start = arg(a, 1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const Value& item : ev.iterate(v, a.line))
        total = ev.binary("+", total, attribute && !attribute->is_none() ? get_path(ev, item, to_str(*attribute), a.line) : item, a.line);
    return total;
}

Value f_reverse(Evaluator& ev, const Value& v, CallArgs& a) {
    if (v.is_string()) {
        auto chars = utf8_chars(v.s);
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value::string(std::move(out));
    }
    List items = ev.iterate(v, a.line);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
}

Value f_string(Evaluator&, const Value& v, CallArgs&) {
    if (v.is_string()) return v;
    return Value::string(to_str(v));
}

bool parse_py_int(const std::string& text, int base, int64_t& out) {
    std::string s = py_strip(text, nullptr, true, true);
    std::string digits;
    for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '_' && k > 0 && k + 1 < s.size() && s[k - 1] != '_' && std::isalnum(static_cast<unsigned char>(s[k + 1])) &&
            std::isalnum(static_cast<unsigned char>(s[k - 1])))
            continue;
        digits += s[k];
    }
    if (digits.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, base);
    if (*end != '\0' || errno == ERANGE || !std::isalnum(static_cast<unsigned char>(digits.back()))) return false;
    out = v;
    return true;
}

bool parse_py_float(const std::string& text, double& out) {
    const std::string s = py_strip(text, nullptr, true, true);
    if (s.empty()) return false;
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (*end != '\0') return false;
    if (s.find_first_of("xXpP") != std::string::npos) return false;  // strtod's hex floats
    out = d;
    return true;
}

Value f_int(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* dflt = arg(a, 0, "default");
    const Value* base = arg(a, 1, "base");
    const Value fallback = dflt ? *dflt : Value::integer(0);
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.type == Value::Type::Float) {
        if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return fallback;
        return Value::integer(static_cast<int64_t>(v.f));
    }
    if (v.is_string()) {
        int64_t r;
        if (parse_py_int(v.s, base ? static_cast<int>(need_int(ev, *base, a.line, "int")) : 10, r))
            return Value::integer(r);
        double d;
        if (parse_py_float(v.s, d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value::integer(static_cast<int64_t>(d));
    }
    return fallback;
}

Value f_float(Evaluator&, const Value& v, CallArgs& a) {
    const Value* dflt = arg(a, 0, "default");
    if (v.is_number()) return Value::real(v.as_double());
    double d;
    if (v.is_string() && parse_py_float(v.s, d)) return Value::real(d);
    return dflt ? *dflt : Value::real(0.0);
}

Value f_abs(Evaluator& ev, const Value& v, CallArgs& a) {
    if (v.type == Value::Type::Float) return Value::real(std::fabs(v.f));
    const int64_t x = need_int(ev, v, a.line, "abs");
    if (x == std::numeric_limits<int64_t>::min()) ev.error(a.line, "integer overflow");
    return Value::integer(x < 0 ? -x : x);
}

Value f_round(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* prec = arg(a, 0, "precision");
    const Value* method = arg(a, 1, "method");
    const int64_t p = prec ? need_int(ev, *prec, a.line, "round") : 0;
    const std::string m = method ? to_str(*method) : "common";
    if (m != "common" && m != "ceil" && m != "floor")
        ev.error(a.line, "method must be common, ceil or floor");
    if (!v.is_number()) ev.error(a.line, cat("round: expected a number, got ", v.type_name()));
    if (p < 0 || p > 300) ev.error(a.line, "round: this runtime supports precisions 0..300");
    if (m == "common") {
        if (v.is_integral()) return Value::integer(v.as_int());
        if (!std::isfinite(v.f)) return v;
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(p), v.f);  // correctly rounded, ties to even
        return Value::real(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(p));
    const double x = v.as_double() * scale;
    return Value::real((m == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_indent(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* width = arg(a, 0, "width");
    const Value* first = arg(a, 1, "first");
    const Value* blank = arg(a, 2, "blank");
    std::string ind = "    ";
    if (width) {
        if (width->is_string()) ind = width->s;
        else ind = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(need_int(ev, *width, a.line, "indent"), 1 << 16))), ' ');
    }
    if (!v.is_string())  // Jinja 3.1 appends "\n" to the value: only a string takes it
        ev.error(a.line, cat("unsupported operand type(s) for +=: '", v.type_name(), "' and 'str'"));
    const std::string s = v.s + "\n";  // Jinja's quirk for splitlines
    const auto lines = py_splitlines(s);
    std::string rv;
    if (blank && blank->truthy()) {
        for (size_t k = 0; k < lines.size(); ++k) {
            if (k) rv += "\n" + ind;
            rv += lines[k];
        }
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t k = 1; k < lines.size(); ++k) {
            rv += "\n";
            if (!lines[k].empty()) rv += ind + lines[k];
        }
    }
    if (first && first->truthy()) rv = ind + rv;
    ev.check_size(rv.size(), a.line);
    return Value::string(std::move(rv));
}

Value f_safe(Evaluator&, const Value& v, CallArgs&) {
    Value r = Value::string(to_str(v));
    r.markup = true;
    return r;
}

Value f_escape(Evaluator&, const Value& v, CallArgs&) {
    if (v.is_string() && v.markup) return v;
    std::string out;
    for (const char c : to_str(v)) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    Value r = Value::string(std::move(out));
    r.markup = true;
    return r;
}

Value f_wordcount(Evaluator&, const Value& v, CallArgs&) {
    // Jinja: len(re.findall(r"\w+", s)); ASCII word characters plus any non-ASCII byte run.
    const std::string s = to_str(v);
    int64_t n = 0;
    bool in_word = false;
    for (const char c : s) {
        const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (static_cast<unsigned char>(c) & 0x80);
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

// map / select / reject / selectattr / rejectattr
Value f_map(Evaluator& ev, const Value& v, CallArgs& a) {
    List out;
    const List items = v.truthy() ? ev.iterate(v, a.line) : List{};  // Jinja: `if value:`
    if (const Value* attribute = a.kwarg("attribute")) {
        const Value* dflt = a.kwarg("default");
        for (const Value& item : items) {
            Value r = get_path(ev, item, to_str(*attribute), a.line);
            if (r.is_undefined() && dflt) r = *dflt;
            out.push_back(std::move(r));
        }
        return Value::make_list(std::move(out));
    }
    if (a.pos.empty()) ev.error(a.line, "map requires a filter argument");
    const std::string name = need_string(ev, a.pos[0], a.line, "map");
    if (!is_known_filter(name)) ev.error(a.line, cat("No filter named '", name, "' (or it is not supported by this runtime)"));
    CallArgs rest;
    rest.line = a.line;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    for (const Value& item : items) {
        CallArgs copy = rest;
        out.push_back(apply_filter(ev, name, item, copy));
    }
    return Value::make_list(std::move(out));
}

Value select_impl(Evaluator& ev, const Value& v, CallArgs& a, bool by_attr, bool keep) {
    size_t next = 0;
    std::string attribute;
    if (by_attr) {
        if (a.pos.empty()) ev.error(a.line, "selectattr/rejectattr need an attribute name");
        attribute = to_str(a.pos[next++]);
    }
    std::string test;
    if (next < a.pos.size()) {
        test = need_string(ev, a.pos[next++], a.line, "select");
        if (!is_known_test(test)) ev.error(a.line, cat("No test named '", test, "' (or it is not supported by this runtime)"));
    }
    CallArgs rest;
    rest.line = a.line;
    rest.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(next), a.pos.end());
    rest.kw = a.kw;
    List out;
    if (!v.truthy()) return Value::make_list();  // Jinja: `if value:`
    for (const Value& item : ev.iterate(v, a.line)) {
        const Value subject = by_attr ? get_path(ev, item, attribute, a.line) : item;
        bool ok;
        if (test.empty()) {
            ok = subject.truthy();
        } else {
            CallArgs copy = rest;
            ok = apply_test(ev, test, subject, copy);
        }
        if (ok == keep) out.push_back(item);
    }
    return Value::make_list(std::move(out));
}
Value f_select(Evaluator& ev, const Value& v, CallArgs& a) { return select_impl(ev, v, a, false, true); }
Value f_reject(Evaluator& ev, const Value& v, CallArgs& a) { return select_impl(ev, v, a, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, CallArgs& a) { return select_impl(ev, v, a, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, CallArgs& a) { return select_impl(ev, v, a, true, false); }

const std::unordered_map<std::string, FilterFn>& filters() {
    static const std::unordered_map<std::string, FilterFn> m = {
        {"trim", f_trim},         {"tojson", f_tojson},       {"length", f_length},
        {"count", f_length},      {"list", f_list},           {"join", f_join},
        {"upper", f_upper},       {"lower", f_lower},         {"capitalize", f_capitalize},
        {"title", f_title},       {"default", f_default},     {"d", f_default},
        {"first", f_first},       {"last", f_last},           {"replace", f_replace},
        {"items", f_items},       {"dictsort", f_dictsort},   {"map", f_map},
        {"select", f_select},     {"reject", f_reject},       {"selectattr", f_selectattr},
        {"rejectattr", f_rejectattr}, {"string", f_string},   {"int", f_int},
        {"float", f_float},       {"abs", f_abs},             {"round", f_round},
        {"indent", f_indent},     {"unique", f_unique},       {"sort", f_sort},
        {"reverse", f_reverse},   {"safe", f_safe},           {"e", f_escape},
        {"escape", f_escape},     {"min", f_min},             {"max", f_max},
        {"sum", f_sum},           {"wordcount", f_wordcount},
    };
    return m;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) ev.error(args.line, cat("no filter named '", name, "'"));
    return it->second(ev, value, args);
}

}  // namespace trt::chat
