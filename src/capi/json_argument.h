// A JSON document the caller passes as a string argument (a conversation, template
// variables). Text that does not parse is the caller's mistake, so it is
// TRAINRT_ERR_INVALID_ARGUMENT naming the entry point and the argument, not the
// TRAINRT_ERR_FORMAT json::parse gives for a corrupt file.
#pragma once
#include <string>

#include "core/error.h"
#include "io/json_min.h"

namespace trt::capi {

inline json::Value parse_json_argument(const char* text, const char* fn, const char* argument) {
    try {
        return json::parse(text, argument);
    } catch (const Error& e) {
        if (e.status() != Status::Format) throw;
        fail(Status::InvalidArgument, fn, ": ", argument, " is not JSON: ", e.what());
    }
}

}  // namespace trt::capi
