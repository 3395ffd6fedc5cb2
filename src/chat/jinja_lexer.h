// jinja_lexer: template source to tokens, with Jinja2's whitespace rules as transformers sets
// them (trim_blocks, lstrip_blocks, `-`/`+` markers, newline normalization, the one trailing
// newline dropped) applied here, so the parser sees the final literal text.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trt::chat {

struct Token {
    enum class Type { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
    Type type;
    std::string text;  // Data: the literal text; Name/Op: itself; String: the decoded value;
                       // Int/Float: the digits (underscores removed)
    int line;
};

// Throws Error(Status::Format) "<origin>:<line>: ..." on a lexical error.
std::vector<Token> tokenize(std::string_view source, const std::string& origin);

}  // namespace trt::chat
