// fuzz_regex: the regex engine of pre-tokenizer patterns (src/tokenizer/regex.h).
//
// Input: a pattern, a NUL byte, then a text (no NUL: the whole input is the pattern, and the
// text is a fixed mixed one). A pattern that does not compile must be refused with a trt::Error
// (Format or Unsupported); one that compiles must search valid UTF-8 text to matches in order,
// not overlapping, inside the text and on character boundaries, or stop with Unsupported (the
// step limit). Invalid UTF-8 text is skipped (the tokenizer refuses it before any regex).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_classes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    const std::string_view pattern = input.substr(0, nul);
    const std::string_view text =
        nul == std::string_view::npos
            ? std::string_view("Hello world, it's 12345 don't \xE6\x97\xA5\xE6\x9C\xAC  \n\tx\xC2\xA0y")
            : input.substr(nul + 1);
    trt::tok::Regex re;
    try {
        re = trt::tok::Regex(pattern, "fuzz/regex");
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::Format && e.status() != trt::Status::Unsupported)
            fuzz::die(std::string("compile: unexpected status: ") + e.what());
        fuzz::refused("regex", e);
        return 0;
    }
    if (trt::tok::invalid_utf8_at(text) != std::string_view::npos) return 0;
    std::vector<std::pair<size_t, size_t>> m;
    try {
        re.find_all(text, m);
    } catch (const trt::Error& e) {
        if (e.status() != trt::Status::Unsupported)
            fuzz::die(std::string("search: unexpected status: ") + e.what());
        return 0;
    }
    const auto boundary = [&](size_t i) {
        return i == text.size() || (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    };
    size_t prev_end = 0;
    for (size_t k = 0; k < m.size(); k++) {
        const auto [start, end] = m[k];
        if (start > end || end > text.size()) fuzz::die("a match outside the text");
        if (!boundary(start) || !boundary(end)) fuzz::die("a match inside a character");
        if (start < prev_end || (k > 0 && start == m[k - 1].first))
            fuzz::die("matches out of order or overlapping");
        prev_end = end;
    }
    return 0;
}
