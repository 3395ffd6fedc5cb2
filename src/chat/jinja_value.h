// jinja_value: the values a chat template computes with, modelled on the Python objects
// Jinja2 hands around (None, bool, int, float, str, list/tuple, dict, namespace, callables,
// Undefined), with Python's printing (str/repr), truthiness, equality and ordering, since
// byte-identical output with transformers depends on exactly those.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json_min.h"

namespace trt::chat {

struct Value;
struct Dict;
struct Function;
class Evaluator;

using List = std::vector<Value>;

struct Value {
    enum class Type : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
    Type type = Type::Undefined;
    bool tuple = false;      // List: a Python tuple (prints with parentheses)
    bool markup = false;     // String: a Markup (|safe, |escape); prints the same
    bool b = false;
    int64_t i = 0;
    double f = 0.0;
    std::string s;           // String; Undefined: the name or expression it came from (for errors)
    std::shared_ptr<List> list;
    std::shared_ptr<Dict> dict;      // Dict (also a namespace(): Dict::is_namespace)
    std::shared_ptr<Function> fn;

    Value() = default;
    Value(const Value&) = default;
    Value(Value&&) noexcept = default;
    Value& operator=(const Value&) = default;
    Value& operator=(Value&&) noexcept = default;
    // Releases nested lists and dicts without recursing: a template can nest values as deep as
    // its loop allows ({% set ns.l = [ns.l] %} a million times), deeper than the stack.
    ~Value();

    static Value undefined(std::string hint = "") {
        Value v;
        v.s = std::move(hint);
        return v;
    }
    static Value none() { Value v; v.type = Type::None; return v; }
    static Value boolean(bool x) { Value v; v.type = Type::Bool; v.b = x; return v; }
    static Value integer(int64_t x) { Value v; v.type = Type::Int; v.i = x; return v; }
    static Value real(double x) { Value v; v.type = Type::Float; v.f = x; return v; }
    static Value string(std::string x) { Value v; v.type = Type::String; v.s = std::move(x); return v; }
    static Value make_list(List items = {}, bool is_tuple = false);
    static Value make_dict();
    static Value function(std::string name,
                          std::function<Value(Evaluator&, struct CallArgs&)> body);

    bool is_undefined() const { return type == Type::Undefined; }
    bool is_none() const { return type == Type::None; }
    bool is_string() const { return type == Type::String; }
    bool is_list() const { return type == Type::List; }
    bool is_dict() const { return type == Type::Dict; }
    bool is_number() const { return type == Type::Int || type == Type::Float || type == Type::Bool; }
    bool is_integral() const { return type == Type::Int || type == Type::Bool; }
    int64_t as_int() const { return type == Type::Bool ? (b ? 1 : 0) : i; }
    double as_double() const { return type == Type::Float ? f : static_cast<double>(as_int()); }

    bool truthy() const;
    // Python's type name ("str", "int", "list", "dict", "NoneType", "Undefined", ...).
    const char* type_name() const;
};

struct Dict {
    std::vector<std::pair<std::string, Value>> items;  // insertion order, as Python dicts
    bool is_namespace = false;                           // jinja2 namespace(): attribute-settable

    const Value* find(std::string_view key) const;
    void set(std::string key, Value v);
};

// Python's dict.items() of a Dict value: (key, value) tuples in insertion order.
Value dict_items(const Value& dict);

struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    int line = 0;
    // The keyword argument `name`, or nullptr.
    const Value* kwarg(std::string_view name) const;
};

struct Function {
    std::string name;
    std::function<Value(Evaluator&, CallArgs&)> body;
};

// The work budget of the render running on this thread (Evaluator sets it): the recursive walks
// below (printing, equality, ordering, JSON) charge each node they visit, so a value built
// as a DAG ({% set a = [a, a, a, a] %} twenty times) cannot make one of them run for hours.
struct WorkMeter {
    uint64_t used = 0;
    uint64_t limit = 0;
};
class WorkMeterScope {
public:
    explicit WorkMeterScope(WorkMeter* m);
    ~WorkMeterScope();
    WorkMeterScope(const WorkMeterScope&) = delete;
    WorkMeterScope& operator=(const WorkMeterScope&) = delete;

private:
    WorkMeter* saved_;
};
// Adds n to the current meter; Error(InvalidArgument) past its limit.
void charge_work(uint64_t n);
constexpr uint64_t kNodeCost = 16;  // work units per value visited by a walk

// Python str(v): the text {{ v }} prints.
std::string to_str(const Value& v);
// Python repr(v) (strings quoted as Python quotes them).
std::string repr(const Value& v);
// Python float repr: the shortest text that reads back to d ("1.0", "1e-05", "inf").
std::string float_repr(double d);
// Python ==.
bool equals(const Value& a, const Value& b);
// Python <: -1, 0, 1; throws Error(InvalidArgument) where Python raises TypeError.
int compare(const Value& a, const Value& b, int line);
// Roughly the memory v holds (strings and containers, recursively): bounds copies.
size_t approx_bytes(const Value& v, int depth = 0);
// JSON (io/json_min) to a template value, and back for tojson.
Value from_json(const json::Value& j);
// json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as transformers' tojson does.
// indent < 0: none (one line); indent_str is used when non-empty (a string indent).
std::string to_json(const Value& v, int indent, const std::string& indent_str,
                    const std::string& item_sep, const std::string& key_sep, bool sort_keys,
                    int line);

// Unicode helpers on UTF-8 text (Python str semantics where the templates meet them).
size_t utf8_length(std::string_view s);                 // code points
std::vector<std::string> utf8_chars(std::string_view s);  // one string per code point
bool is_py_space(uint32_t cp);                          // str.isspace()
// str.strip()/lstrip()/rstrip() with chars (nullptr: whitespace).
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace trt::chat
