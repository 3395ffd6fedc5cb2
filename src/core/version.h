// The library version as a string, built from the public header's numbers so the two can
// never disagree.
#pragma once
#include <trainrt/trainrt.h>

#define TRT_VERSION_STR2(x) #x
#define TRT_VERSION_STR(x) TRT_VERSION_STR2(x)

namespace trt {
constexpr const char* kVersionString = TRT_VERSION_STR(TRAINRT_VERSION_MAJOR) "." TRT_VERSION_STR(
    TRAINRT_VERSION_MINOR) "." TRT_VERSION_STR(TRAINRT_VERSION_PATCH);
}  // namespace trt
