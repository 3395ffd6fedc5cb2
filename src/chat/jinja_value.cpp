#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace trt::chat {

Value Value::make_list(List items, bool is_tuple) {
    Value v;
    v.type = Type::List;
    v.tuple = is_tuple;
    v.list = std::make_shared<List>(std::move(items));
    return v;
}

Value Value::make_dict() {
    Value v;
    v.type = Type::Dict;
    v.dict = std::make_shared<Dict>();
    return v;
}

Value Value::function(std::string name, std::function<Value(Evaluator&, CallArgs&)> body) {
    Value v;
    v.type = Type::Function;
    v.fn = std::make_shared<Function>(Function{std::move(name), std::move(body)});
    return v;
}

bool Value::truthy() const {
    switch (type) {
        case Type::Undefined: case Type::None: return false;
        case Type::Bool: return b;
        case Type::Int: return i != 0;
        case Type::Float: return f != 0.0;
        case Type::String: return !s.empty();
        case Type::List: return !list->empty();
        case Type::Dict: return dict->is_namespace || !dict->items.empty();
        case Type::Function: return true;
    }
    return false;
}

const char* Value::type_name() const {
    switch (type) {
        case Type::Undefined: return "Undefined";
        case Type::None: return "NoneType";
        case Type::Bool: return "bool";
        case Type::Int: return "int";
        case Type::Float: return "float";
        case Type::String: return "str";
        case Type::List: return tuple ? "tuple" : "list";
        case Type::Dict: return dict->is_namespace ? "Namespace" : "dict";
        case Type::Function: return "function";
    }
    return "?";
}

const Value* Dict::find(std::string_view key) const {
    for (const auto& kv : items)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

void Dict::set(std::string key, Value v) {
    for (auto& kv : items)
        if (kv.first == key) { kv.second = std::move(v); return; }
    items.emplace_back(std::move(key), std::move(v));
}

Value dict_items(const Value& dict) {
    List items;
    for (const auto& kv : dict.dict->items)
        items.push_back(Value::make_list({Value::string(kv.first), kv.second}, true));
    return Value::make_list(std::move(items));
}

const Value* CallArgs::kwarg(std::string_view name) const {
    for (const auto& kv : kw)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

// ------------------------------------------------------------------ work meter

namespace {
thread_local WorkMeter* t_meter = nullptr;

// Value::~Value's pending containers: the lists and dicts no other value shares, released one
// at a time by the outermost destructor on this thread (a nested one only queues its own).
struct Releases {
    std::vector<std::shared_ptr<List>> lists;
    std::vector<std::shared_ptr<Dict>> dicts;
    bool draining = false;
};
thread_local Releases t_releases;
}  // namespace

Value::~Value() {
    if (!list && !dict) return;
    Releases& r = t_releases;
    try {  // (a failed push_back leaves the pointer here: released the recursive way)
        if (list && list.use_count() == 1) r.lists.push_back(std::move(list));
        if (dict && dict.use_count() == 1) r.dicts.push_back(std::move(dict));
    } catch (...) {
        return;
    }
    if (r.draining) return;  // the outermost destructor releases them
    r.draining = true;
    while (!r.lists.empty() || !r.dicts.empty()) {
        // Dropping the last reference destroys the container's values, each of which only
        // queues its own sole containers here: the recursion is one level deep.
        if (!r.lists.empty()) {
            std::shared_ptr<List> l = std::move(r.lists.back());
            r.lists.pop_back();
            l.reset();
        } else {
            std::shared_ptr<Dict> d = std::move(r.dicts.back());
            r.dicts.pop_back();
            d.reset();
        }
    }
    r.draining = false;
}

WorkMeterScope::WorkMeterScope(WorkMeter* m) : saved_(t_meter) { t_meter = m; }
WorkMeterScope::~WorkMeterScope() { t_meter = saved_; }

void charge_work(uint64_t n) {
    if (!t_meter) return;
    t_meter->used += n;
    if (t_meter->used > t_meter->limit)
        fail(Status::InvalidArgument, "the render made or walked more than ", t_meter->limit,
             " bytes of strings and values (this runtime's template limit)");
}

// ------------------------------------------------------------------ UTF-8

namespace {

// Decodes the code point at s[i] (the text is valid UTF-8: json_min and the template loader
// check) and advances i.
uint32_t next_cp(std::string_view s, size_t& i) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + n > s.size()) n = 1;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    return cp;
}

// Python's str.isprintable() is false for these (the categories Cc, Cf, Zs/Zl/Zp but space,
// and the unassigned); the ranges below are the ones chat text can plausibly carry.
bool py_printable(uint32_t cp) {
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF || cp == 0x061C ||
        cp == 0x180E || (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xD800 && cp <= 0xDFFF) ||
        (cp >= 0xE000 && cp <= 0xF8FF) || cp == 0xFFFE || cp == 0xFFFF)
        return false;
    return true;
}

}  // namespace

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (const char ch : s)
        if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
    return n;
}

std::vector<std::string> utf8_chars(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        const size_t b = i;
        next_cp(s, i);
        out.emplace_back(s.substr(b, i - b));
    }
    return out;
}

bool is_py_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::vector<uint32_t> set;
    if (chars) {
        size_t k = 0;
        while (k < chars->size()) set.push_back(next_cp(*chars, k));
    }
    auto strip_cp = [&](uint32_t cp) {
        return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_py_space(cp);
    };
    size_t b = 0, e = s.size();
    if (left) {
        while (b < e) {
            size_t k = b;
            if (!strip_cp(next_cp(s, k))) break;
            b = k;
        }
    }
    if (right) {
        while (e > b) {
            size_t start = e - 1;
            while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
            size_t k = start;
            if (!strip_cp(next_cp(s, k))) break;
            e = start;
        }
    }
    return std::string(s.substr(b, e - b));
}

// ------------------------------------------------------------------ printing

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);  // "-1.2345e+05": the shortest digits that read back
    std::string sign;
    if (sci[0] == '-') { sign = "-"; sci.erase(0, 1); }
    const size_t epos = sci.find('e');
    const int exp = std::atoi(sci.c_str() + epos + 1);
    std::string digits;
    for (size_t k = 0; k < epos; ++k)
        if (sci[k] != '.') digits += sci[k];
    if (exp < -4 || exp >= 16) {
        std::string m = digits.substr(0, 1);
        if (digits.size() > 1) m += "." + digits.substr(1);
        char e[16];
        std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        return sign + m + e;
    }
    std::string out;
    if (exp < 0) {
        out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
        out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return sign + out;
}

namespace {

std::string repr_string(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char q = has_single && !has_double ? '"' : '\'';
    std::string out(1, q);
    size_t i = 0;
    while (i < s.size()) {
        const size_t b = i;
        const uint32_t cp = next_cp(s, i);
        char e[16];
        if (cp == static_cast<uint32_t>(q) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!py_printable(cp)) {
            if (cp < 0x100) std::snprintf(e, sizeof e, "\\x%02x", cp);
            else if (cp < 0x10000) std::snprintf(e, sizeof e, "\\u%04x", cp);
            else std::snprintf(e, sizeof e, "\\U%08x", cp);
            out += e;
        } else {
            out.append(s.substr(b, i - b));
        }
    }
    out += q;
    return out;
}

}  // namespace

namespace {

// Values a template builds can nest without bound ({% set ns.x = [ns.x] %} in a loop) and
// repeat one big string many times: the recursive walks below stop at these.
constexpr int kMaxValueDepth = 256;
constexpr size_t kMaxText = 64u << 20;  // = Limits::max_output

[[noreturn]] void too_deep() {
    fail(Status::InvalidArgument, "a value nested deeper than ", kMaxValueDepth,
         " levels (this runtime's template limit)");
}

void repr_into(std::string& out, const Value& v, int depth) {
    if (depth > kMaxValueDepth) too_deep();
    charge_work(kNodeCost);
    if (out.size() > kMaxText)
        fail(Status::InvalidArgument, "a value's text is over this runtime's template limit of ",
             kMaxText, " bytes");
    switch (v.type) {
        case Value::Type::String: out += repr_string(v.s); return;
        case Value::Type::List: {
            out += v.tuple ? "(" : "[";
            for (size_t k = 0; k < v.list->size(); ++k) {
                if (k) out += ", ";
                repr_into(out, (*v.list)[k], depth + 1);
            }
            if (v.tuple && v.list->size() == 1) out += ",";
            out += v.tuple ? ")" : "]";
            return;
        }
        case Value::Type::Dict: {
            out += v.dict->is_namespace ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& kv : v.dict->items) {
                if (!first) out += ", ";
                first = false;
                out += repr_string(kv.first);
                out += ": ";
                repr_into(out, kv.second, depth + 1);
            }
            out += v.dict->is_namespace ? "}>" : "}";
            return;
        }
        case Value::Type::Undefined: out += "Undefined"; return;
        default: out += to_str(v); return;
    }
}

bool equals_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxValueDepth) too_deep();
    charge_work(kNodeCost);
    if (a.is_number() && b.is_number()) {
        if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
        return a.as_double() == b.as_double();
    }
    if (a.type != b.type) return false;
    switch (a.type) {
        case Value::Type::Undefined: case Value::Type::None: return true;
        case Value::Type::String: return a.s == b.s;
        case Value::Type::List:
            if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
            if (a.list == b.list) return true;
            for (size_t k = 0; k < a.list->size(); ++k)
                if (!equals_at((*a.list)[k], (*b.list)[k], depth + 1)) return false;
            return true;
        case Value::Type::Dict:
            if (a.dict->is_namespace || b.dict->is_namespace) return a.dict == b.dict;
            if (a.dict->items.size() != b.dict->items.size()) return false;
            if (a.dict == b.dict) return true;
            for (const auto& kv : a.dict->items) {
                const Value* o = b.dict->find(kv.first);
                if (!o || !equals_at(kv.second, *o, depth + 1)) return false;
            }
            return true;
        case Value::Type::Function: return a.fn == b.fn;
        default: return false;
    }
}

int compare_at(const Value& a, const Value& b, int line, int depth) {
    if (depth > kMaxValueDepth) too_deep();
    charge_work(kNodeCost);
    if (a.is_number() && b.is_number()) {
        if (a.is_integral() && b.is_integral())
            return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
        const double x = a.as_double(), y = b.as_double();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.s.compare(b.s);  // UTF-8 byte order = code point order
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
        const size_t n = std::min(a.list->size(), b.list->size());
        for (size_t k = 0; k < n; ++k) {
            if (equals_at((*a.list)[k], (*b.list)[k], depth + 1)) continue;
            return compare_at((*a.list)[k], (*b.list)[k], line, depth + 1);
        }
        return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
    }
    fail(Status::InvalidArgument, "line ", line, ": '<' not supported between instances of '",
         a.type_name(), "' and '", b.type_name(), "'");
}

}  // namespace

std::string repr(const Value& v) {
    std::string out;
    repr_into(out, v, 0);
    return out;
}

std::string to_str(const Value& v) {
    switch (v.type) {
        case Value::Type::Undefined: return "";
        case Value::Type::None: return "None";
        case Value::Type::Bool: return v.b ? "True" : "False";
        case Value::Type::Int: return std::to_string(v.i);
        case Value::Type::Float: return float_repr(v.f);
        case Value::Type::String: return v.s;
        case Value::Type::Function: return "<function " + v.fn->name + ">";
        default: return repr(v);
    }
}

// ------------------------------------------------------------------ comparison

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

int compare(const Value& a, const Value& b, int line) { return compare_at(a, b, line, 0); }

size_t approx_bytes(const Value& v, int depth) {
    if (depth > kMaxValueDepth) too_deep();
    charge_work(kNodeCost);
    size_t n = sizeof(Value) + v.s.size();
    if (v.type == Value::Type::List)
        for (const auto& e : *v.list) n += approx_bytes(e, depth + 1);
    if (v.type == Value::Type::Dict)
        for (const auto& kv : v.dict->items) n += kv.first.size() + approx_bytes(kv.second, depth + 1);
    return n;
}

// ------------------------------------------------------------------ JSON

Value from_json(const json::Value& j) {
    switch (j.kind) {
        case json::Value::Kind::Null: return Value::none();
        case json::Value::Kind::Bool: return Value::boolean(j.b);
        case json::Value::Kind::Int: return Value::integer(j.i);
        case json::Value::Kind::Uint: return Value::real(static_cast<double>(j.u));
        case json::Value::Kind::Double: return Value::real(j.d);
        case json::Value::Kind::String: return Value::string(j.s);
        case json::Value::Kind::Array: {
            List items;
            items.reserve(j.arr.size());
            for (const auto& e : j.arr) items.push_back(from_json(e));
            return Value::make_list(std::move(items));
        }
        case json::Value::Kind::Object: {
            Value d = Value::make_dict();
            d.dict->items.reserve(j.obj.size());
            for (const auto& m : j.obj) d.dict->items.emplace_back(m.key, from_json(m.value));
            return d;
        }
    }
    return Value::none();
}

namespace {

// json.dumps(ensure_ascii=False) string: only ", \ and the C0 controls are escaped.
void json_string(std::string& out, std::string_view s) {
    static const char* hex = "0123456789abcdef";
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 0xF];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

struct JsonWriter {
    int indent;
    std::string indent_unit;
    std::string item_sep, key_sep;
    bool sort_keys;
    int line;
    std::string out;

    void newline(int depth) {
        out += '\n';
        for (int k = 0; k < depth; ++k) out += indent_unit;
    }
    void write(const Value& v, int depth) {
        if (depth > kMaxValueDepth)
            fail(Status::InvalidArgument, "line ", line, ": tojson: nesting deeper than ", kMaxValueDepth);
        charge_work(kNodeCost);
        if (out.size() > kMaxText)
            fail(Status::InvalidArgument, "line ", line, ": tojson: the text is over this runtime's "
                 "template limit of ", kMaxText, " bytes");
        switch (v.type) {
            case Value::Type::None: out += "null"; return;
            case Value::Type::Bool: out += v.b ? "true" : "false"; return;
            case Value::Type::Int: out += std::to_string(v.i); return;
            case Value::Type::Float:
                if (std::isnan(v.f)) out += "NaN";
                else if (std::isinf(v.f)) out += v.f < 0 ? "-Infinity" : "Infinity";
                else out += float_repr(v.f);
                return;
            case Value::Type::String: json_string(out, v.s); return;
            case Value::Type::List: {
                if (v.list->empty()) { out += "[]"; return; }
                out += '[';
                for (size_t k = 0; k < v.list->size(); ++k) {
                    if (k) out += item_sep;
                    if (indent >= 0) newline(depth + 1);
                    write((*v.list)[k], depth + 1);
                }
                if (indent >= 0) newline(depth);
                out += ']';
                return;
            }
            case Value::Type::Dict: {
                if (v.dict->is_namespace) break;
                if (v.dict->items.empty()) { out += "{}"; return; }
                std::vector<const std::pair<std::string, Value>*> items;
                for (const auto& kv : v.dict->items) items.push_back(&kv);
                if (sort_keys)
                    std::stable_sort(items.begin(), items.end(),
                                     [](auto* a, auto* b) { return a->first < b->first; });
                out += '{';
                for (size_t k = 0; k < items.size(); ++k) {
                    if (k) out += item_sep;
                    if (indent >= 0) newline(depth + 1);
                    json_string(out, items[k]->first);
                    out += key_sep;
                    write(items[k]->second, depth + 1);
                }
                if (indent >= 0) newline(depth);
                out += '}';
                return;
            }
            default: break;
        }
        fail(Status::InvalidArgument, "line ", line, ": tojson: Object of type ", v.type_name(),
             " is not JSON serializable");
    }
};

}  // namespace

std::string to_json(const Value& v, int indent, const std::string& indent_str,
                    const std::string& item_sep, const std::string& key_sep, bool sort_keys,
                    int line) {
    JsonWriter w{indent, indent_str.empty() && indent > 0 ? std::string(indent, ' ') : indent_str,
                 item_sep, key_sep, sort_keys, line, {}};
    w.write(v, 0);
    return std::move(w.out);
}

}  // namespace trt::chat
