// src/chat: what the engine refuses (at parse time, naming the construct and its line), syntax
// and runtime errors (with the template's name and line), and the limits that keep a hostile
// template from hanging, crashing or exhausting memory.
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "io/json_min.h"

namespace {

using trt::Status;
using trt::chat::Template;

// Parsing (and rendering, when parse succeeds) src must fail with `status` and a message
// holding every fragment.
void expect_error(const std::string& src, Status status, const std::vector<std::string>& fragments) {
    SCOPED_TRACE(src.substr(0, 120));
    try {
        Template::parse(src, "bad.jinja").render(trt::json::parse(R"({"messages": [{"role": "user"}]})", "ctx"));
        FAIL() << "no error";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        for (const auto& f : fragments)
            EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "want '" << f << "' in: " << e.what();
    }
}

TEST(ChatErrors, UnsupportedConstructsAreRefusedAtParseTimeWithTheirLine) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{% include 'x.jinja' %}", "'{% include %}' statement"},
        {"{% extends 'base' %}", "'{% extends %}' statement"},
        {"{% import 'm' as m %}", "'{% import %}' statement"},
        {"{% from 'm' import x %}", "'{% from %}' statement"},
        {"{% block b %}{% endblock %}", "'{% block %}' statement"},
        {"{% call m() %}x{% endcall %}", "'{% call %}' statement"},
        {"{% with a = 1 %}{% endwith %}", "'{% with %}' statement"},
        {"{% do x %}", "'{% do %}' statement"},
        {"{% frobnicate %}", "unknown statement '{% frobnicate %}'"},
        {"{{ x | xmlattr }}", "the filter 'xmlattr'"},
        {"{{ x | batch(2) }}", "the filter 'batch'"},
        {"{% filter center %}x{% endfilter %}", "the filter 'center'"},
        {"{{ x is frob }}", "the test 'frob'"},
        {"{% for x in y recursive %}{% endfor %}", "the recursive for loop"},
        {"{{ f(*args) }}", "'*args' / '**kwargs'"},
    };
    for (const auto& c : cases) {
        // On line 3: the message must say so (origin:line).
        SCOPED_TRACE(c.first);
        try {
            Template::parse("a\n\n" + c.first, "tpl.jinja");
            FAIL() << "parsed";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), Status::Unsupported) << e.what();
            const std::string msg = e.what();
            EXPECT_EQ(msg.rfind("tpl.jinja:3: ", 0), 0u) << msg;
            EXPECT_NE(msg.find(c.second), std::string::npos) << msg;
            EXPECT_NE(msg.find("not supported by this runtime's template engine"), std::string::npos) << msg;
        }
    }
}

TEST(ChatErrors, SyntaxErrorsAreFormatErrorsWithTheLine) {
    expect_error("x\n{% if true %}unclosed", Status::Format, {"bad.jinja:2", "endif"});
    expect_error("{{ 1 + }}", Status::Format, {"bad.jinja:1", "template syntax error"});
    expect_error("{{ 'unterminated }}", Status::Format, {"unterminated string"});
    expect_error("\n\n{% endif %}", Status::Format, {"bad.jinja:3", "'endif'"});
    expect_error("{% break %}", Status::Format, {"outside of a for loop"});
    expect_error("{# never closed", Status::Format, {"unclosed comment"});
    expect_error("{{ 99999999999999999999 }}", Status::Format, {"beyond 64 bits"});
    expect_error(std::string("{{ '\xff' }}"), Status::Format, {"not valid UTF-8"});
}

TEST(ChatErrors, RuntimeErrorsNameTheTemplateAndLine) {
    expect_error("\n{{ raise_exception('roles must alternate') }}", Status::InvalidArgument,
                 {"bad.jinja:2: roles must alternate"});
    expect_error("{{ messages[0].content.strip() }}", Status::InvalidArgument, {"bad.jinja:1", "no attribute 'content'"});
    expect_error("{{ 'a' + 1 }}", Status::InvalidArgument, {"can only concatenate str"});
    expect_error("{{ 1 // 0 }}", Status::InvalidArgument, {"division or modulo by zero"});
    expect_error("{{ 1 < 'a' }}", Status::InvalidArgument, {"'<' not supported"});
    expect_error("{% set l = [1] %}{% set l.x = 2 %}", Status::InvalidArgument, {"non-namespace object"});
    expect_error("{{ [1].append(2) }}", Status::InvalidArgument, {"'append' of 'list' object is unsafe"});
    expect_error("{{ {'a': 1}.update({}) }}", Status::InvalidArgument, {"'update' of 'dict' object is unsafe"});
    expect_error("{% for x in none %}{% endfor %}", Status::InvalidArgument, {"'NoneType' object is not iterable"});
    expect_error("{{ (1 if false).x }}", Status::InvalidArgument, {"inline if-expression on line 1"});
}

TEST(ChatErrors, LimitsStopHostileTemplates) {
    // Output size.
    expect_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", Status::InvalidArgument,
                 {"template limit"});
    // One huge string, by repetition and by doubling.
    expect_error("{{ 'x' * 100000000 }}", Status::InvalidArgument, {"template limit"});
    expect_error("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                 Status::InvalidArgument, {"template limit"});
    // Lists: one long one, a doubling one, copies of a big string.
    expect_error("{{ [1] * 100000000 }}", Status::InvalidArgument, {"template limit"});
    expect_error("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                 Status::InvalidArgument, {"template limit"});
    expect_error("{% set s = 'x' * 1000000 %}{{ ([s] * 100000) | length }}", Status::InvalidArgument,
                 {"template limit"});
    // Loop iterations, range length (as Jinja's sandbox), quadratic work.
    expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 Status::InvalidArgument, {"loop iterations"});
    expect_error("{{ range(1000000) | length }}", Status::InvalidArgument, {"MAX_RANGE"});
    expect_error("{% set ns = namespace(l=range(50000) | list) %}{% for i in range(50000) %}"
                 "{% set ns.m = ns.l + [i] %}{% endfor %}",
                 Status::InvalidArgument, {"template limit"});
    // Recursion: macros, nesting of values, nesting of the template itself.
    expect_error("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}", Status::InvalidArgument, {"macro calls nested"});
    expect_error("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}"
                 "{{ ns.l }}",
                 Status::InvalidArgument, {"nested deeper"});
    expect_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", Status::Format, {"nesting deeper"});
    std::string blocks;
    for (int k = 0; k < 500; ++k) blocks += "{% if true %}";
    expect_error(blocks, Status::Format, {"nesting deeper"});
    // A value built as a DAG is tiny in memory but huge to walk: printing, comparing and
    // tojson are bounded by the work budget.
    const std::string dag = "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(30) %}"
                            "{% set ns.a = [ns.a, ns.a, ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b, ns.b, ns.b] %}"
                            "{% endfor %}";
    expect_error(dag + "{{ ns.a }}", Status::InvalidArgument, {"template limit"});
    expect_error(dag + "{{ ns.a == ns.b }}", Status::InvalidArgument, {"template limit"});
    expect_error(dag + "{{ ns.a | tojson }}", Status::InvalidArgument, {"template limit"});
    // Integers stay 64-bit: an overflow is an error, not a wrong number.
    expect_error("{{ 9223372036854775807 + 1 }}", Status::InvalidArgument, {"integer overflow"});
}

}  // namespace
