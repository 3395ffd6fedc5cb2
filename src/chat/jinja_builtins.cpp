#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unordered_map>

#include "chat/jinja_case.h"
#include "chat/jinja_render.h"
#include "core/error.h"

namespace trt::chat {

namespace {

using FilterFn = Value (*)(Evaluator&, const Value&, CallArgs&);
using TestFn = bool (*)(Evaluator&, const Value&, CallArgs&);

// ------------------------------------------------------------------ argument helpers

// The argument at position `pos` or keyword `name`, or nullptr.
const Value* arg(const CallArgs& a, size_t pos, const char* name) {
    if (pos < a.pos.size()) return &a.pos[pos];
    return a.kwarg(name);
}

void check_arity(Evaluator& ev, const CallArgs& a, size_t max_pos, const char* what) {
    if (a.pos.size() > max_pos)
        ev.error(a.line, cat(what, "() takes at most ", max_pos, " positional argument(s), got ",
                             a.pos.size()));
}

const std::string& need_string(Evaluator& ev, const Value& v, int line, const char* what) {
    if (v.is_undefined()) ev.undefined_error(v, line);
    if (!v.is_string()) ev.error(line, cat(what, ": expected a string, got ", v.type_name()));
    return v.s;
}

int64_t need_int(Evaluator& ev, const Value& v, int line, const char* what) {
    if (v.is_undefined()) ev.undefined_error(v, line);
    if (!v.is_integral()) ev.error(line, cat(what, ": expected an integer, got ", v.type_name()));
    return v.as_int();
}

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

// ------------------------------------------------------------------ string helpers

std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
    if (count < 0) count = std::numeric_limits<int64_t>::max();
    std::string out;
    if (old.empty()) {
        const auto chars = utf8_chars(s);
        int64_t done = 0;
        for (const auto& c : chars) {
            if (done < count) { out += rep; ++done; }
            out += c;
        }
        if (done < count) out += rep;
        return out;
    }
    size_t b = 0;
    int64_t done = 0;
    while (done < count) {
        const size_t k = s.find(old, b);
        if (k == std::string::npos) break;
        out.append(s, b, k - b);
        out += rep;
        b = k + old.size();
        ++done;
    }
    out.append(s, b, std::string::npos);
    return out;
}

List py_split(Evaluator& ev, const std::string& s, const Value* sep, int64_t maxsplit, int line) {
    List out;
    if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
    if (!sep || sep->is_none()) {
        // Runs of whitespace; no empty strings.
        const auto chars = utf8_chars(s);
        size_t k = 0;
        int64_t splits = 0;
        while (k < chars.size()) {
            auto space = [&](size_t i) {
                size_t p = 0;
                const std::string& c = chars[i];
                uint32_t cp = static_cast<unsigned char>(c[0]);
                if (c.size() > 1) {
                    cp = c.size() == 2 ? (cp & 0x1F) : c.size() == 3 ? (cp & 0x0F) : (cp & 0x07);
                    for (p = 1; p < c.size(); ++p) cp = (cp << 6) | (static_cast<unsigned char>(c[p]) & 0x3F);
                }
                return is_py_space(cp);
            };
            while (k < chars.size() && space(k)) ++k;
            if (k >= chars.size()) break;
            std::string word;
            if (splits >= maxsplit) {
                std::string rest;
                for (size_t i = k; i < chars.size(); ++i) rest += chars[i];
                out.push_back(Value::string(std::move(rest)));  // the rest keeps its trailing spaces
                break;
            }
            while (k < chars.size() && !space(k)) word += chars[k++];
            out.push_back(Value::string(std::move(word)));
            ++splits;
        }
        return out;
    }
    const std::string& d = need_string(ev, *sep, line, "split");
    if (d.empty()) ev.error(line, "empty separator");
    size_t b = 0;
    int64_t splits = 0;
    while (splits < maxsplit) {
        const size_t k = s.find(d, b);
        if (k == std::string::npos) break;
        out.push_back(Value::string(s.substr(b, k - b)));
        b = k + d.size();
        ++splits;
    }
    out.push_back(Value::string(s.substr(b)));
    return out;
}

// Python's str.splitlines() (the separators Jinja's indent filter splits on).
std::vector<std::string> py_splitlines(const std::string& s) {
    std::vector<std::string> lines;
    std::string cur;
    size_t k = 0;
    auto flush = [&]() { lines.push_back(std::move(cur)); cur.clear(); };
    while (k < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        if (c == '\r') {
            flush();
            k += (k + 1 < s.size() && s[k + 1] == '\n') ? 2 : 1;
        } else if (c == '\n' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)) {
            flush();
            ++k;
        } else if (c == 0xC2 && k + 1 < s.size() && static_cast<unsigned char>(s[k + 1]) == 0x85) {
            flush();
            k += 2;
        } else if (c == 0xE2 && k + 2 < s.size() && static_cast<unsigned char>(s[k + 1]) == 0x80 &&
                   (static_cast<unsigned char>(s[k + 2]) == 0xA8 || static_cast<unsigned char>(s[k + 2]) == 0xA9)) {
            flush();
            k += 3;
        } else {
            cur += s[k++];
        }
    }
    if (!cur.empty()) lines.push_back(std::move(cur));
    return lines;
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

Value dict_items(const Value& v) {
    List items;
    for (const auto& kv : v.dict->items)
        items.push_back(Value::make_list({Value::string(kv.first), kv.second}, true));
    return Value::make_list(std::move(items));
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

// ------------------------------------------------------------------ tests

const Value& test_arg(Evaluator& ev, const CallArgs& a, const char* test) {
    if (a.pos.empty()) ev.error(a.line, cat("the test '", test, "' needs an argument"));
    return a.pos[0];
}

bool t_defined(Evaluator&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Evaluator&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Evaluator&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Evaluator&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_number(Evaluator&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Int; }
bool t_float(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Float; }
bool t_boolean(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Bool; }
bool t_true(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Bool && v.b; }
bool t_false(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Bool && !v.b; }
bool t_mapping(Evaluator&, const Value& v, CallArgs&) { return v.is_dict() && !v.dict->is_namespace; }
bool t_iterable(Evaluator&, const Value& v, CallArgs&) {
    return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace);
}
bool t_sequence(Evaluator&, const Value& v, CallArgs&) {
    return v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace);
}
bool t_callable(Evaluator&, const Value& v, CallArgs&) { return v.type == Value::Type::Function; }
// Jinja: value % 2 == 0 / == 1, value % num == 0 (Python's %: floats too).
bool t_even(Evaluator& ev, const Value& v, CallArgs& a) {
    return equals(ev.binary("%", v, Value::integer(2), a.line), Value::integer(0));
}
bool t_odd(Evaluator& ev, const Value& v, CallArgs& a) {
    return equals(ev.binary("%", v, Value::integer(2), a.line), Value::integer(1));
}
bool t_divisibleby(Evaluator& ev, const Value& v, CallArgs& a) {
    return equals(ev.binary("%", v, test_arg(ev, a, "divisibleby"), a.line), Value::integer(0));
}
bool t_eq(Evaluator& ev, const Value& v, CallArgs& a) { return equals(v, test_arg(ev, a, "eq")); }
bool t_ne(Evaluator& ev, const Value& v, CallArgs& a) { return !equals(v, test_arg(ev, a, "ne")); }
bool ordered(Evaluator& ev, const Value& v, CallArgs& a, const char* op) {
    const Value& o = test_arg(ev, a, op);
    if (v.is_undefined()) ev.undefined_error(v, a.line);
    const int c = compare(v, o, a.line);
    const std::string s = op;
    return s == "lt" ? c < 0 : s == "le" ? c <= 0 : s == "gt" ? c > 0 : c >= 0;
}
bool t_lt(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, v, a, "lt"); }
bool t_le(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, v, a, "le"); }
bool t_gt(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, v, a, "gt"); }
bool t_ge(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, v, a, "ge"); }
bool t_in(Evaluator& ev, const Value& v, CallArgs& a) { return ev.contains(test_arg(ev, a, "in"), v, a.line); }
bool t_sameas(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value& o = test_arg(ev, a, "sameas");
    // Python `is`: singletons (None, True/False) by value; containers by identity.
    if (v.type != o.type) return false;
    switch (v.type) {
        case Value::Type::None: case Value::Type::Undefined: return true;
        case Value::Type::Bool: return v.b == o.b;
        case Value::Type::List: return v.list == o.list;
        case Value::Type::Dict: return v.dict == o.dict;
        case Value::Type::Function: return v.fn == o.fn;
        case Value::Type::Int: return v.i == o.i && v.i >= -5 && v.i <= 256;  // CPython's small ints
        default: return false;
    }
}
bool t_lower(Evaluator&, const Value& v, CallArgs&) { return py_islower(to_str(v)); }
bool t_upper(Evaluator&, const Value& v, CallArgs&) { return py_isupper(to_str(v)); }

const std::unordered_map<std::string, TestFn>& tests() {
    static const std::unordered_map<std::string, TestFn> m = {
        {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},
        {"string", t_string},     {"number", t_number},       {"integer", t_integer},
        {"float", t_float},       {"mapping", t_mapping},     {"iterable", t_iterable},
        {"sequence", t_sequence}, {"boolean", t_boolean},     {"true", t_true},
        {"false", t_false},       {"even", t_even},           {"odd", t_odd},
        {"divisibleby", t_divisibleby}, {"eq", t_eq},         {"equalto", t_eq},
        {"==", t_eq},             {"ne", t_ne},               {"!=", t_ne},
        {"lt", t_lt},             {"lessthan", t_lt},         {"<", t_lt},
        {"le", t_le},             {"<=", t_le},               {"gt", t_gt},
        {"greaterthan", t_gt},    {">", t_gt},                {"ge", t_ge},
        {">=", t_ge},             {"in", t_in},               {"sameas", t_sameas},
        {"callable", t_callable}, {"lower", t_lower},         {"upper", t_upper},
    };
    return m;
}

// ------------------------------------------------------------------ methods

Value unsafe(const Value& obj, const std::string& name) {
    return Value::undefined(cat("access to attribute '", name, "' of '", obj.type_name(),
                                "' object is unsafe (the template environment is immutable)"));
}

Value string_method(const std::string& s, const std::string& name) {
    using F = std::function<Value(Evaluator&, CallArgs&)>;
    auto strip = [s](bool l, bool r) -> F {
        return [s, l, r](Evaluator& ev, CallArgs& a) {
            const Value* chars = arg(a, 0, "chars");
            if (chars && !chars->is_none()) {
                const std::string cs = need_string(ev, *chars, a.line, "strip");
                return Value::string(py_strip(s, &cs, l, r));
            }
            return Value::string(py_strip(s, nullptr, l, r));
        };
    };
    F f;
    if (name == "strip") f = strip(true, true);
    else if (name == "lstrip") f = strip(true, false);
    else if (name == "rstrip") f = strip(false, true);
    else if (name == "split") {
        f = [s](Evaluator& ev, CallArgs& a) {
            const Value* sep = arg(a, 0, "sep");
            const Value* maxsplit = arg(a, 1, "maxsplit");
            return Value::make_list(py_split(ev, s, sep, maxsplit ? need_int(ev, *maxsplit, a.line, "split") : -1, a.line));
        };
    } else if (name == "startswith" || name == "endswith") {
        const bool start = name == "startswith";
        f = [s, start](Evaluator& ev, CallArgs& a) {
            if (a.pos.empty()) ev.error(a.line, "startswith/endswith need an argument");
            auto match = [&](const std::string& p) {
                return p.size() <= s.size() &&
                       (start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
            };
            const Value& p = a.pos[0];
            if (p.is_list() && p.tuple) {
                for (const Value& x : *p.list)
                    if (match(need_string(ev, x, a.line, "startswith"))) return Value::boolean(true);
                return Value::boolean(false);
            }
            return Value::boolean(match(need_string(ev, p, a.line, "startswith")));
        };
    } else if (name == "replace") {
        f = [s](Evaluator& ev, CallArgs& a) {
            if (a.pos.size() < 2) ev.error(a.line, "replace() needs the old and the new string");
            const int64_t count = a.pos.size() > 2 ? need_int(ev, a.pos[2], a.line, "replace") : -1;
            std::string out = py_replace(s, need_string(ev, a.pos[0], a.line, "replace"),
                                         need_string(ev, a.pos[1], a.line, "replace"), count);
            ev.check_size(out.size(), a.line);
            return Value::string(std::move(out));
        };
    } else if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        f = [s, name](Evaluator&, CallArgs&) {
            return Value::string(name == "upper" ? py_upper(s) : name == "lower" ? py_lower(s)
                                 : name == "title" ? py_title(s) : py_capitalize(s));
        };
    } else if (name == "find" || name == "rfind" || name == "count" || name == "index") {
        f = [s, name](Evaluator& ev, CallArgs& a) {
            if (a.pos.empty()) ev.error(a.line, name + "() needs an argument");
            const std::string& sub = need_string(ev, a.pos[0], a.line, "find");
            if (name == "count") {
                if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
                int64_t n = 0;
                for (size_t k = s.find(sub); k != std::string::npos; k = s.find(sub, k + sub.size())) ++n;
                return Value::integer(n);
            }
            const size_t k = name == "rfind" ? s.rfind(sub) : s.find(sub);
            if (k == std::string::npos) {
                if (name == "index") ev.error(a.line, "substring not found");
                return Value::integer(-1);
            }
            return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, k))));
        };
    } else if (name == "join") {
        f = [s](Evaluator& ev, CallArgs& a) {
            if (a.pos.empty()) ev.error(a.line, "join() needs an argument");
            std::string out;
            bool first = true;
            for (const Value& item : ev.iterate(a.pos[0], a.line)) {
                if (!first) out += s;
                first = false;
                out += need_string(ev, item, a.line, "join");
                ev.check_length(out.size(), a.line);
            }
            ev.check_size(out.size(), a.line);
            return Value::string(std::move(out));
        };
    } else if (name == "splitlines") {
        f = [s](Evaluator&, CallArgs&) {
            List out;
            for (auto& l : py_splitlines(s)) out.push_back(Value::string(std::move(l)));
            return Value::make_list(std::move(out));
        };
    } else if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
        f = [s, name](Evaluator&, CallArgs&) {
            if (s.empty()) return Value::boolean(false);
            for (const char ch : s) {
                const auto c = static_cast<unsigned char>(ch);
                const bool ok = name == "isdigit" ? std::isdigit(c) != 0
                              : name == "isspace" ? std::isspace(c) != 0
                              : name == "isalpha" ? std::isalpha(c) != 0 : std::isalnum(c) != 0;
                if (!ok) return Value::boolean(false);
            }
            return Value::boolean(true);
        };
    } else {
        return Value::undefined(cat("'str object' has no attribute '", name, "'"));
    }
    return Value::function("str." + name, std::move(f));
}

}  // namespace

std::string percent_format(Evaluator& ev, const std::string& fmt, const Value& args, int line) {
    // Python's printf-style formatting: 'a %s b %d' % (x, y).
    List items;
    const bool mapping = args.is_dict() && !args.dict->is_namespace;
    if (args.is_list() && args.tuple) items = *args.list;
    else items.push_back(args);
    size_t next = 0;
    std::string out;
    auto take = [&]() -> const Value& {
        if (next >= items.size()) ev.error(line, "not enough arguments for format string");
        return items[next++];
    };
    for (size_t k = 0; k < fmt.size(); ++k) {
        if (fmt[k] != '%') { out += fmt[k]; continue; }
        if (++k >= fmt.size()) ev.error(line, "incomplete format");
        if (fmt[k] == '%') { out += '%'; continue; }
        if (fmt[k] == '(') ev.error(line, "%(name) formats are not supported by this runtime's template engine");
        std::string flags;
        while (k < fmt.size() && std::string("-+ #0").find(fmt[k]) != std::string::npos) flags += fmt[k++];
        std::string width, prec;
        while (k < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[k]))) width += fmt[k++];
        bool has_prec = false;
        if (k < fmt.size() && fmt[k] == '.') {
            has_prec = true;
            ++k;
            while (k < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[k]))) prec += fmt[k++];
        }
        if (k >= fmt.size()) ev.error(line, "incomplete format");
        if (width.size() > 4 || prec.size() > 4) ev.error(line, "a format width or precision over 9999");
        const char type = fmt[k];
        const Value& v = take();
        std::string piece;
        if (type == 's' || type == 'r' || type == 'a') {
            piece = type == 's' ? to_str(v) : repr(v);
            if (has_prec) {
                const auto chars = utf8_chars(piece);
                const size_t n = std::min(chars.size(), static_cast<size_t>(std::atoi(prec.c_str())));
                piece.clear();
                for (size_t c = 0; c < n; ++c) piece += chars[c];
            }
            const size_t w = static_cast<size_t>(std::atoi(width.c_str())), len = utf8_length(piece);
            if (len < w) {
                if (flags.find('-') != std::string::npos) piece += std::string(w - len, ' ');
                else piece = std::string(w - len, ' ') + piece;
            }
        } else if (std::string("diuxXofFeEgG").find(type) != std::string::npos) {
            if (!v.is_number())
                ev.error(line, cat("%", type, " format: a real number is required, not ", v.type_name()));
            std::string spec = "%" + flags + width + (has_prec ? "." + prec : std::string());
            char buf[10240];
            if (std::string("diuxXo").find(type) != std::string::npos) {
                const int64_t x = v.type == Value::Type::Float ? static_cast<int64_t>(v.f) : v.as_int();
                if (v.type == Value::Type::Float && (type == 'x' || type == 'X' || type == 'o'))
                    ev.error(line, cat("%", type, " format: an integer is required, not float"));
                spec += std::string("ll") + (type == 'i' || type == 'u' ? 'd' : type);
                std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(x));
            } else {
                spec += type;
                std::snprintf(buf, sizeof buf, spec.c_str(), v.as_double());
            }
            piece = buf;
        } else {
            ev.error(line, cat("unsupported format character '", type, "'"));
        }
        out += piece;
        ev.check_length(out.size(), line);
    }
    if (next < items.size() && !mapping)
        ev.error(line, "not all arguments converted during string formatting");
    ev.check_size(out.size(), line);
    return out;
}

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }
bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

Value apply_filter(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) ev.error(args.line, cat("no filter named '", name, "'"));
    return it->second(ev, value, args);
}

bool apply_test(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
    auto it = tests().find(name);
    if (it == tests().end()) ev.error(args.line, cat("no test named '", name, "'"));
    return it->second(ev, value, args);
}

Value method_of(const Value& obj, const std::string& name, int line) {
    if (obj.is_string()) return string_method(obj.s, name);
    if (obj.is_list()) {
        if (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
            name == "remove" || name == "reverse" || name == "sort" || name == "clear")
            return unsafe(obj, name);
        if (name == "index" || name == "count") {
            auto list = obj.list;
            return Value::function("list." + name, [list, name](Evaluator& ev, CallArgs& a) {
                if (a.pos.empty()) ev.error(a.line, name + "() needs an argument");
                int64_t n = 0;
                for (size_t k = 0; k < list->size(); ++k) {
                    if (!equals((*list)[k], a.pos[0])) continue;
                    if (name == "index") return Value::integer(static_cast<int64_t>(k));
                    ++n;
                }
                if (name == "index") ev.error(a.line, "value is not in list");
                return Value::integer(n);
            });
        }
        return Value::undefined();
    }
    if (obj.is_dict() && !obj.dict->is_namespace) {
        if (name == "pop" || name == "popitem" || name == "update" || name == "setdefault" || name == "clear")
            return unsafe(obj, name);
        auto d = obj.dict;
        if (name == "items")
            return Value::function("dict.items", [obj](Evaluator&, CallArgs&) { return dict_items(obj); });
        if (name == "keys" || name == "values") {
            const bool keys = name == "keys";
            return Value::function("dict." + name, [d, keys](Evaluator&, CallArgs&) {
                List out;
                for (const auto& kv : d->items) out.push_back(keys ? Value::string(kv.first) : kv.second);
                return Value::make_list(std::move(out));
            });
        }
        if (name == "get")
            return Value::function("dict.get", [d](Evaluator& ev, CallArgs& a) {
                if (a.pos.empty()) ev.error(a.line, "get expected at least 1 argument, got 0");
                const Value* v = a.pos[0].is_string() ? d->find(a.pos[0].s) : nullptr;
                if (v) return *v;
                return a.pos.size() > 1 ? a.pos[1] : Value::none();
            });
        if (name == "copy")
            return Value::function("dict.copy", [d](Evaluator&, CallArgs&) {
                Value c = Value::make_dict();
                c.dict->items = d->items;
                return c;
            });
        return Value::undefined();
    }
    (void)line;
    return Value::undefined();
}

Value global_function(const std::string& name) {
    if (name == "range")
        return Value::function("range", [](Evaluator& ev, CallArgs& a) {
            check_arity(ev, a, 3, "range");
            if (a.pos.empty()) ev.error(a.line, "range expected at least 1 argument, got 0");
            int64_t start = 0, stop, step = 1;
            if (a.pos.size() == 1) {
                stop = need_int(ev, a.pos[0], a.line, "range");
            } else {
                start = need_int(ev, a.pos[0], a.line, "range");
                stop = need_int(ev, a.pos[1], a.line, "range");
                if (a.pos.size() == 3) step = need_int(ev, a.pos[2], a.line, "range");
            }
            if (step == 0) ev.error(a.line, "range() arg 3 must not be zero");
            const double count = step > 0 ? std::ceil((static_cast<double>(stop) - start) / step)
                                          : std::ceil((static_cast<double>(start) - stop) / -static_cast<double>(step));
            // Jinja's sandbox refuses ranges over MAX_RANGE (100000) the same way.
            if (count > 100000)
                ev.error(a.line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
            ev.check_items(count > 0 ? static_cast<size_t>(count) : 0, a.line);
            List items;
            for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) items.push_back(Value::integer(v));
            return Value::make_list(std::move(items));
        });
    if (name == "namespace" || name == "dict")
        return Value::function(name, [name](Evaluator& ev, CallArgs& a) {
            Value d = Value::make_dict();
            d.dict->is_namespace = name == "namespace";
            if (d.dict->is_namespace) ev.track_namespace(d.dict);
            for (const Value& p : a.pos) {
                if (!p.is_dict() || p.dict->is_namespace)
                    ev.error(a.line, name + "() takes keyword arguments or one mapping");
                for (const auto& kv : p.dict->items) d.dict->set(kv.first, kv.second);
            }
            for (const auto& kv : a.kw) d.dict->set(kv.first, kv.second);
            return d;
        });
    if (name == "raise_exception")
        return Value::function(name, [](Evaluator& ev, CallArgs& a) -> Value {
            ev.error(a.line, a.pos.empty() ? std::string("raise_exception() called") : to_str(a.pos[0]));
        });
    if (name == "strftime_now")
        return Value::function(name, [](Evaluator& ev, CallArgs& a) {
            if (a.pos.empty()) ev.error(a.line, "strftime_now() needs a format");
            const std::string& fmt = need_string(ev, a.pos[0], a.line, "strftime_now");
            const std::time_t now = std::time(nullptr);
            std::tm tm{};
            localtime_r(&now, &tm);
            std::string buf(256 + fmt.size() * 8, '\0');
            const size_t n = std::strftime(&buf[0], buf.size(), fmt.c_str(), &tm);
            buf.resize(n);
            return Value::string(std::move(buf));
        });
    return Value::undefined();
}

}  // namespace trt::chat
