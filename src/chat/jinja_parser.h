// jinja_parser: tokens to the statement tree, with Jinja2's grammar and operator precedence.
// What this runtime does not implement (include, extends, import, block, call, unknown
// filters and tests, ...) is refused here, at parse time, naming the construct and its line.
#pragma once
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace trt::chat {

struct Program {
    Body body;
    bool has_generation = false;
};

// Throws Error(Status::Format) on a syntax error, Error(Status::Unsupported) on a construct
// this engine refuses; both "<origin>:<line>: ...".
Program parse_program(const std::vector<Token>& tokens, const std::string& origin);

}  // namespace trt::chat
