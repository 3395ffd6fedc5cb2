// jinja_str_ops: Python's str operations that both the filters and the str methods run
// (replace, split, splitlines), and the `%` operator's printf-style formatting.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace trt::chat {

// str.replace(old, rep, count); count < 0: all.
std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count);
// str.split(sep, maxsplit); sep null or None: runs of whitespace. maxsplit < 0: no limit.
List py_split(Evaluator& ev, const std::string& s, const Value* sep, int64_t maxsplit, int line);
// Python's str.splitlines() (the separators Jinja's indent filter splits on).
std::vector<std::string> py_splitlines(const std::string& s);
// Python's `fmt % args` (printf-style: %s %r %d %i %f %e %g %x %o with flags, width,
// precision); other conversions are refused with an error.
std::string percent_format(Evaluator& ev, const std::string& fmt, const Value& args, int line);

}  // namespace trt::chat
