// The tests ({% if x is name(args) %}), with Jinja2 3.1's semantics (jinja_builtins.h).
#include "chat/jinja_builtins.h"

#include <string>
#include <unordered_map>

#include "chat/jinja_case.h"
#include "chat/jinja_render.h"
#include "core/error.h"

namespace trt::chat {

namespace {

using TestFn = bool (*)(Evaluator&, const Value&, CallArgs&);

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

}  // namespace

bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
    auto it = tests().find(name);
    if (it == tests().end()) ev.error(args.line, cat("no test named '", name, "'"));
    return it->second(ev, value, args);
}

}  // namespace trt::chat
