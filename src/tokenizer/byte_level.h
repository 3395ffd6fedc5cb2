// GPT-2's byte-level alphabet: each of the 256 byte values stands for one printable Unicode
// character (bytes that print as themselves keep their code point; the others, 0-32, 127-160
// and 173, take U+0100 upwards in order), so BPE works on text that can hold any bytes.
#pragma once
#include <string>
#include <string_view>

namespace trt::tok {

// piece's bytes as byte-level characters, UTF-8 encoded (appended to out).
void to_byte_chars(std::string_view piece, std::string& out);

// The bytes a byte-level token stands for (appended to out); false if the token holds a
// character outside the alphabet.
bool from_byte_chars(std::string_view token, std::string& out);

}  // namespace trt::tok
