// jinja_builtins: the filters, tests, globals and methods (str/dict) a template may call, with
// Jinja2 3.1's (and transformers') semantics. The parser asks which names exist so unknown
// ones are refused before anything renders. One file each: jinja_filters.cpp,
// jinja_tests.cpp, jinja_methods.cpp, jinja_globals.cpp.
#pragma once
#include <string>

#include "chat/jinja_value.h"

namespace trt::chat {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// filter(value, args); throws Error(InvalidArgument) "line N: ..." on a bad call.
Value apply_filter(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args);
bool apply_test(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args);
// obj.name for str/dict/list methods (a bound Function), or an Undefined when none.
Value method_of(const Value& obj, const std::string& name, int line);
// The globals: range, namespace, dict, raise_exception, strftime_now.
Value global_function(const std::string& name);

}  // namespace trt::chat
