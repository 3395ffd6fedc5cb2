// jinja_args: reading a builtin's call arguments (filters, str methods, globals), with the
// errors Jinja2 / Python give for a missing or mistyped one. Inline: every builtin call runs
// them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/jinja_render.h"
#include "chat/jinja_value.h"
#include "core/error.h"

namespace trt::chat {

// The argument at position `pos` or keyword `name`, or nullptr.
inline const Value* arg(const CallArgs& a, size_t pos, const char* name) {
    if (pos < a.pos.size()) return &a.pos[pos];
    return a.kwarg(name);
}

inline void check_arity(Evaluator& ev, const CallArgs& a, size_t max_pos, const char* what) {
    if (a.pos.size() > max_pos)
        ev.error(a.line, cat(what, "() takes at most ", max_pos, " positional argument(s), got ",
                             a.pos.size()));
}

inline const std::string& need_string(Evaluator& ev, const Value& v, int line, const char* what) {
    if (v.is_undefined()) ev.undefined_error(v, line);
    if (!v.is_string()) ev.error(line, cat(what, ": expected a string, got ", v.type_name()));
    return v.s;
}

inline int64_t need_int(Evaluator& ev, const Value& v, int line, const char* what) {
    if (v.is_undefined()) ev.undefined_error(v, line);
    if (!v.is_integral()) ev.error(line, cat(what, ": expected an integer, got ", v.type_name()));
    return v.as_int();
}

}  // namespace trt::chat
