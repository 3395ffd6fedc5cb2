// The methods of str, list and dict a template may call (jinja_builtins.h); the sandbox's
// refusal of the mutating ones.
#include "chat/jinja_builtins.h"

#include <cctype>
#include <functional>
#include <string>

#include "chat/jinja_args.h"
#include "chat/jinja_case.h"
#include "chat/jinja_render.h"
#include "chat/jinja_str_ops.h"
#include "core/error.h"

namespace trt::chat {

namespace {

Value unsafe(const Value& obj, const std::string& name) {
    return Value::undefined(cat("access to attribute '", name, "' of '", obj.type_name(),
                                "' object is unsafe (the template environment is immutable)"));
}

// A str method bound to its string: each maker below returns the body of one method (or of a
// family that differs only in a name or a flag).
using StrMethod = std::function<Value(Evaluator&, CallArgs&)>;

// strip / lstrip / rstrip(chars)
StrMethod strip_method(const std::string& s, bool l, bool r) {
    return [s, l, r](Evaluator& ev, CallArgs& a) {
        const Value* chars = arg(a, 0, "chars");
        if (chars && !chars->is_none()) {
            const std::string cs = need_string(ev, *chars, a.line, "strip");
            return Value::string(py_strip(s, &cs, l, r));
        }
        return Value::string(py_strip(s, nullptr, l, r));
    };
}

// split(sep, maxsplit)
StrMethod split_method(const std::string& s) {
    return [s](Evaluator& ev, CallArgs& a) {
        const Value* sep = arg(a, 0, "sep");
        const Value* maxsplit = arg(a, 1, "maxsplit");
        return Value::make_list(py_split(ev, s, sep, maxsplit ? need_int(ev, *maxsplit, a.line, "split") : -1, a.line));
    };
}

// startswith / endswith(prefix or tuple of prefixes)
StrMethod affix_method(const std::string& s, bool start) {
    return [s, start](Evaluator& ev, CallArgs& a) {
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
}

// replace(old, new, count)
StrMethod replace_method(const std::string& s) {
    return [s](Evaluator& ev, CallArgs& a) {
        if (a.pos.size() < 2) ev.error(a.line, "replace() needs the old and the new string");
        const int64_t count = a.pos.size() > 2 ? need_int(ev, a.pos[2], a.line, "replace") : -1;
        std::string out = py_replace(s, need_string(ev, a.pos[0], a.line, "replace"),
                                     need_string(ev, a.pos[1], a.line, "replace"), count);
        ev.check_size(out.size(), a.line);
        return Value::string(std::move(out));
    };
}

// upper / lower / title / capitalize
StrMethod case_method(const std::string& s, const std::string& name) {
    return [s, name](Evaluator&, CallArgs&) {
        return Value::string(name == "upper" ? py_upper(s) : name == "lower" ? py_lower(s)
                             : name == "title" ? py_title(s) : py_capitalize(s));
    };
}

// find / rfind / index (a position in characters) and count(sub)
StrMethod search_method(const std::string& s, const std::string& name) {
    return [s, name](Evaluator& ev, CallArgs& a) {
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
}

// join(strings), s between them
StrMethod join_method(const std::string& s) {
    return [s](Evaluator& ev, CallArgs& a) {
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
}

// splitlines()
StrMethod splitlines_method(const std::string& s) {
    return [s](Evaluator&, CallArgs&) {
        List out;
        for (auto& l : py_splitlines(s)) out.push_back(Value::string(std::move(l)));
        return Value::make_list(std::move(out));
    };
}

// isdigit / isspace / isalpha / isalnum (ASCII classes)
StrMethod class_method(const std::string& s, const std::string& name) {
    return [s, name](Evaluator&, CallArgs&) {
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
}

// s.name as a bound Function, or an Undefined saying str has no such attribute.
Value string_method(const std::string& s, const std::string& name) {
    StrMethod f;
    if (name == "strip") f = strip_method(s, true, true);
    else if (name == "lstrip") f = strip_method(s, true, false);
    else if (name == "rstrip") f = strip_method(s, false, true);
    else if (name == "split") f = split_method(s);
    else if (name == "startswith" || name == "endswith") f = affix_method(s, name == "startswith");
    else if (name == "replace") f = replace_method(s);
    else if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
        f = case_method(s, name);
    else if (name == "find" || name == "rfind" || name == "count" || name == "index")
        f = search_method(s, name);
    else if (name == "join") f = join_method(s);
    else if (name == "splitlines") f = splitlines_method(s);
    else if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum")
        f = class_method(s, name);
    else
        return Value::undefined(cat("'str object' has no attribute '", name, "'"));
    return Value::function("str." + name, std::move(f));
}

}  // namespace

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

}  // namespace trt::chat
