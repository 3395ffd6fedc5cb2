// A reader for the flat JSON objects of metrics.jsonl (docs/FORMATS.md §5), for
// `trainrt report`: {"key": scalar, ...}, a scalar being a string, a number, true, false or
// null. Nested objects and arrays are skipped over (their keys read as Kind::Other), so a
// later writer may add them without breaking the reader. Numbers also accept NaN, Infinity
// and -Infinity, which some JSON writers emit for non-finite floats.
#pragma once
#include <map>
#include <string>

namespace trainrt_cli {

struct JsonValue {
    enum Kind { Null, Bool, Number, String, Other } kind = Null;
    double number = 0;  // Number (and Bool as 0/1)
    std::string text;   // String
};

using JsonObject = std::map<std::string, JsonValue>;

// Parses `line` as one JSON object (whitespace around it allowed); false with `error` saying
// what is wrong and where (a byte column) otherwise. A repeated key keeps its last value.
bool parse_flat_object(const std::string& line, JsonObject& out, std::string& error);

// A number member, NaN if absent, null, or not a number.
double number_or_nan(const JsonObject& o, const char* key);
// A string member, `fallback` if absent or not a string.
std::string string_or(const JsonObject& o, const char* key, const std::string& fallback);

}  // namespace trainrt_cli
