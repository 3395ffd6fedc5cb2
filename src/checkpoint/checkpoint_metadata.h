// The user's key/value metadata a session carries and its checkpoints save (state.json's
// "metadata"; docs/FORMATS.md §4): the limits, checked where it is set and where it is read.
#pragma once
#include <cctype>
#include <cstddef>
#include <string>

#include "core/error.h"
#include "io/json_min.h"

namespace trt {

inline constexpr size_t kMaxMetadataKeys = 256;
inline constexpr size_t kMaxMetadataKeyBytes = 128;
inline constexpr size_t kMaxMetadataValueBytes = 64 << 10;
// All of it as state.json holds it (JSON-escaped: a control character takes 6 bytes), so a
// checkpoint always stays within what its reader accepts (64 MiB for state.json).
inline constexpr size_t kMaxMetadataJsonBytes = 16 << 20;

// The bytes an entry takes in state.json's "metadata" object: "key": "value", escaped.
inline size_t metadata_entry_json_bytes(const std::string& key, const std::string& value) {
    return json::quote(key).size() + json::quote(value).size() + 4;
}

// What is wrong with the entry, or "" when it is within the rules: keys of 1-128 bytes of
// [A-Za-z0-9_.-], values valid UTF-8 without NUL of at most 64 KiB (value nullptr: a removal,
// key only).
inline std::string metadata_entry_problem(const std::string& key, const std::string* value) {
    if (key.empty() || key.size() > kMaxMetadataKeyBytes)
        return cat("a metadata key must be 1 to ", kMaxMetadataKeyBytes, " bytes long (got ",
                   key.size(), ")");
    for (char c : key)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
            return cat("metadata key '", key, "' may only hold letters, digits, '_', '.' and '-'");
    if (value && value->size() > kMaxMetadataValueBytes)
        return cat("the value of metadata key '", key, "' is ", value->size(),
                   " bytes; at most ", kMaxMetadataValueBytes, " are kept");
    if (value && !json::valid_utf8(*value))
        return cat("the value of metadata key '", key, "' is not valid UTF-8");
    // (JSON can escape one; C strings, and so trainrt_session_get_metadata's caller, end there.)
    if (value && value->find('\0') != std::string::npos)
        return cat("the value of metadata key '", key, "' holds a NUL character at byte ",
                   value->find('\0'), "; a value is a C string and cannot contain one");
    return {};
}

// What is wrong with a run id (state.json's "run", the metrics.jsonl run it continues;
// docs/FORMATS.md §4, §5), or "" when it is 1-64 bytes of [A-Za-z0-9_.-].
inline std::string run_id_problem(const std::string& id) {
    if (id.empty() || id.size() > 64)
        return cat("a run id must be 1 to 64 bytes long (got ", id.size(), ")");
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
            return "a run id may only hold letters, digits, '_', '.' and '-'";
    return {};
}

// Error(InvalidArgument) "<what>: <problem>" for an entry outside the rules.
inline void check_metadata_entry(const char* what, const std::string& key,
                                 const std::string* value) {
    const std::string problem = metadata_entry_problem(key, value);
    if (!problem.empty()) fail(Status::InvalidArgument, what, ": ", problem);
}

}  // namespace trt
