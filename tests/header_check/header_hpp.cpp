// The C++ wrapper header alone (built with -std=c++17 -Wall -Wextra -pedantic -Werror).
#include <trainrt/trainrt.hpp>

#include <type_traits>

static_assert(std::is_base_of<std::runtime_error, trainrt::Error>::value,
              "trainrt::Error is a std::runtime_error");
static_assert(!std::is_copy_constructible<trainrt::Session>::value, "Session is move-only");
static_assert(std::is_nothrow_move_constructible<trainrt::Session>::value, "Session moves");
static_assert(!std::is_copy_constructible<trainrt::Config>::value, "Config is move-only");
static_assert(std::is_nothrow_move_constructible<trainrt::Config>::value, "Config moves");
static_assert(!std::is_copy_constructible<trainrt::ChatTemplate>::value, "ChatTemplate is move-only");
static_assert(std::is_nothrow_move_constructible<trainrt::ChatTemplate>::value,
              "ChatTemplate moves");

int trainrt_header_hpp_check();
int trainrt_header_hpp_check() {
    trainrt::SampleOptions o;
    return static_cast<int>(o.top_k);
}
