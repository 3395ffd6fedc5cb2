// Versioned structs across the C ABI: every struct begins with struct_size and version, and
// the library touches only the bytes the caller's struct_size covers, so fields can be
// appended without breaking hosts compiled against an older header.
#pragma once
#include <cstring>

#include "core/error.h"

namespace trt::capi {

// Output: fills only the fields the caller's struct_size covers.
template <typename T>
void fill_versioned(T* out, const T& full, const char* function) {
    if (out->struct_size < 2 * sizeof(uint32_t))
        fail(Status::InvalidArgument, function, ": struct_size = ", out->struct_size,
             " is too small; initialise the struct with its _init() function or _INIT macro");
    const size_t n = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
    const uint32_t caller_size = out->struct_size;
    std::memcpy(out, &full, n);
    out->struct_size = caller_size;
}

// Input: the caller's fields over `defaults`; fields past the caller's struct_size keep
// their defaults.
template <typename T>
T read_versioned(const T* in, const T& defaults, const char* function) {
    T out = defaults;
    if (in == nullptr) return out;
    if (in->struct_size < 2 * sizeof(uint32_t))
        fail(Status::InvalidArgument, function, ": options->struct_size = ", in->struct_size,
             " is too small; initialise the struct with its _init() function or _INIT macro");
    const size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
    std::memcpy(&out, in, n);
    out.struct_size = sizeof(T);
    return out;
}

}  // namespace trt::capi
