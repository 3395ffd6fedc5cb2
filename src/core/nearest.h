// "Did you mean …?": the closest of a list of names to a misspelt one, for error messages
// (config keys, tensor names).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trt {

// Edit distance counting an adjacent transposition as one edit ("modle" -> "model": 1).
size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within a small edit distance (1 to 3, growing with the word), or "".
// A word much longer than every candidate is nowhere near one: no suggestion.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace trt
