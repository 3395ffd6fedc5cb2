#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

bool prints_as_itself(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The alphabet's characters are U+0000..U+0143 (256 + 68 shifted bytes).
constexpr char32_t kAlphabetEnd = 256 + 68;

struct Alphabet {
    std::array<char32_t, 256> char_of{};
    std::array<std::string, 256> utf8_of;  // char_of[b], UTF-8 encoded
    std::array<int16_t, kAlphabetEnd> byte_of_char;  // -1: not in the alphabet
    Alphabet() {
        byte_of_char.fill(-1);
        char32_t next = 256;
        for (int b = 0; b < 256; b++) {
            char_of[b] = prints_as_itself(b) ? static_cast<char32_t>(b) : next++;
            const char32_t c = char_of[b];
            byte_of_char[c] = static_cast<int16_t>(b);
            std::string& u = utf8_of[b];
            if (c < 0x80) {
                u.push_back(static_cast<char>(c));
            } else {  // all below U+0800: two bytes
                u.push_back(static_cast<char>(0xC0 | (c >> 6)));
                u.push_back(static_cast<char>(0x80 | (c & 0x3F)));
            }
        }
    }
    // The byte a character stands for, or -1.
    int byte_of(char32_t c) const { return c < kAlphabetEnd ? byte_of_char[c] : -1; }
};

const Alphabet& alphabet() {
    static const Alphabet a;
    return a;
}

}  // namespace

void to_byte_chars(std::string_view piece, std::string& out) {
    const Alphabet& a = alphabet();
    for (unsigned char b : piece) out += a.utf8_of[b];
}

bool from_byte_chars(std::string_view token, std::string& out) {
    const Alphabet& a = alphabet();
    for (size_t i = 0; i < token.size();) {
        const Decoded d = decode_utf8(token, i);
        const int b = a.byte_of(d.cp);
        if (b < 0) return false;
        out.push_back(static_cast<char>(b));
        i += d.len;
    }
    return true;
}

}  // namespace trt::tok
