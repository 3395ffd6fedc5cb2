// src/chat: rendering — Jinja2's whitespace rules, Python printing, undefined values, scoping,
// loops, macros, filters, the {% generation %} spans. The full byte-for-byte comparison with
// Python's Jinja2 is tests/chat/chat_oracle_test.py; these pin the rules one by one.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "chat/chat_template.h"
#include "core/error.h"
#include "io/json_min.h"

namespace {

using trt::chat::Template;

std::string render(const std::string& src, const std::string& ctx = "{}") {
    return Template::parse(src, "t.jinja").render(trt::json::parse(ctx, "ctx")).text;
}

TEST(ChatRender, TrimBlocksAndLstripBlocks) {
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: the indentation before it.
    EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\n  {# c #}\n y"), "  x\n y");
    // Not after {{ }}, and `+` keeps what the rules would remove.
    EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
    EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
    EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
    // `-` strips every whitespace character on its side, newlines included.
    EXPECT_EQ(render("a \n {{- 'b' -}} \n c"), "abc");
    EXPECT_EQ(render("a {%- if true -%} b {%- endif -%} c"), "abc");
    // One trailing newline of the template is dropped; \r\n becomes \n.
    EXPECT_EQ(render("a\n"), "a");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("a\r\nb"), "a\nb");
    EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(ChatRender, PrintsValuesAsPythonStr) {
    EXPECT_EQ(render("{{ true }} {{ False }} {{ none }} {{ 3 }} {{ 1.0 }} {{ 1e-5 }} {{ 1e16 }} {{ 0.1 + 0.2 }}"),
              "True False None 3 1.0 1e-05 1e+16 0.30000000000000004");
    EXPECT_EQ(render("{{ ['a', \"b'\", 1.5, none, true] }}"), "['a', \"b'\", 1.5, None, True]");
    EXPECT_EQ(render("{{ {'k': (1,)} }} {{ (1, 2) }} {{ () }}"), "{'k': (1,)} (1, 2) ()");
    EXPECT_EQ(render("{{ 3 / 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}"), "1.5 -4 2 0.5 3.0");
    EXPECT_EQ(render("{{ '\\x41\\u00e9\\n' }}"), "A\xC3\xA9\n");
}

TEST(ChatRender, UndefinedIsEmptyFalsyAndRaisesOnUse) {
    EXPECT_EQ(render("[{{ nope }}]{{ nope is defined }}{% for x in nope %}x{% endfor %}{{ nope|length }}"),
              "[]False0");
    EXPECT_EQ(render("{{ m.missing is defined }}{{ none.x }}", R"({"m": {}})"), "False");
    try {
        render("{{ nope.attr }}");
        FAIL() << "rendered";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("t.jinja:1: 'nope' is undefined"), std::string::npos) << e.what();
    }
}

TEST(ChatRender, ScopesAsJinja) {
    // A loop body is a fresh scope each iteration; if blocks are not scopes.
    EXPECT_EQ(render("{% set x = 5 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}"), "51525");
    EXPECT_EQ(render("{% if true %}{% set y = 2 %}{% endif %}{{ y }}"), "2");
    // namespace() attributes are shared; set ns.attr works from inside loops.
    EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
              "6");
    // Macros see the variables of the scope they were defined in at call time.
    EXPECT_EQ(render("{% macro m(a, b='B') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{% set c = 'C' %}{{ m(1) }}{{ m(b=2, a=0) }}"),
              "1BC02C");
}

TEST(ChatRender, Loops) {
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
                     "{{ loop.last }}{{ loop.length }}{{ loop.cycle('a', 'b') }}|{% endfor %}"),
              "103TrueFalse3a|212FalseFalse3b|321FalseTrue3a|");
    EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}"),
              "1/2:2 2/2:4 ");
    EXPECT_EQ(render("{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}"
                     "{% endif %}{{ i }}{% endfor %}"),
              "023");
    EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in [1, 1, 2, 1] %}{{ loop.changed(x) }}{% endfor %}"), "TrueFalseTrueTrue");
    EXPECT_EQ(render("{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}{{ v }}{% endfor %}"), "b1a2");
    EXPECT_EQ(render("{% for m in messages[::-1] %}{{ m }}{% endfor %}", R"({"messages": [1, 2, 3]})"), "321");
}

TEST(ChatRender, FiltersAndMethods) {
    EXPECT_EQ(render("{{ '  x \\n' | trim }}|{{ 'a</think>\\n\\nb'.split('</think>')[-1].lstrip('\\n') }}"), "x|b");
    EXPECT_EQ(render("{{ {'b': [1, {'c': none}], 'a': 1.5} | tojson }}"), R"({"b": [1, {"c": null}], "a": 1.5})");
    EXPECT_EQ(render("{{ {'b': 1, 'a': 'é'} | tojson(indent=2, sort_keys=true) }}"), "{\n  \"a\": \"é\",\n  \"b\": 1\n}");
    EXPECT_EQ(render("{{ {'b': 1, 'C': 3, 'a': 2} | dictsort }}"), "[('a', 2), ('b', 1), ('C', 3)]");
    EXPECT_EQ(render("{{ m | selectattr('role', 'equalto', 'user') | map(attribute='c') | join(',') }}",
                     R"({"m": [{"role": "user", "c": 1}, {"role": "bot", "c": 2}, {"role": "user", "c": 3}]})"),
              "1,3");
    EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2, first=true) }}"), "  a\n  b\n\n  c");
    EXPECT_EQ(render("{% filter upper %}ab{{ 'c' }}{% endfilter %}{% set s | trim %}  x  {% endset %}[{{ s }}]"), "ABC[x]");
    EXPECT_EQ(render("{{ x | default('d') }}{{ '' | default('e', true) }}{{ [3, 1, 2] | sort | join }}{{ 'Straße' | upper }}"),
              "de123STRASSE");
    EXPECT_EQ(render("{{ '%s=%d' % ('n', 3) }}"), "n=3");
}

TEST(ChatRender, GenerationSpansAreTheBytesWrittenInside) {
    const Template t = Template::parse(
        "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}{{ m.content }}!"
        "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
        "gen.jinja");
    EXPECT_TRUE(t.has_generation_blocks());
    EXPECT_FALSE(Template::parse("{{ 1 }}", "x").has_generation_blocks());
    const auto r = t.render(trt::json::parse(
        R"({"messages": [{"role": "user", "content": "hé"}, {"role": "assistant", "content": "ça"},
                         {"role": "user", "content": "x"}, {"role": "assistant", "content": ""}]})",
        "ctx"));
    EXPECT_EQ(r.text, "<user>hé<assistant>ça!<user>x<assistant>!");
    ASSERT_EQ(r.generation_spans.size(), 2u);
    EXPECT_EQ(r.text.substr(r.generation_spans[0].first, r.generation_spans[0].second - r.generation_spans[0].first), "ça!");
    EXPECT_EQ(r.generation_spans[1].first, r.text.size() - 1);
    EXPECT_EQ(r.generation_spans[1].second, r.text.size());
}

TEST(ChatRender, JinjaQuirksFoundByDifferentialFuzzing) {
    // Unicode spaces separate tokens in tags and are stripped by `-`, as Python's \s.
    EXPECT_EQ(render("{{\u00a0'x'\u3000}}{%- if true -%}\u3000 y{% endif %}"), "xy");
    // lstrip_blocks applies before {% endraw %} too.
    EXPECT_EQ(render("{% raw %}a\n  {% endraw %}b"), "a\nb");
    // Slicing a non-sequence raises, unless Jinja's compiler folded a constant subject.
    EXPECT_EQ(render("[{{ (1)[::-1] }}]"), "[]");
    EXPECT_THROW(render("{{ n[1:] }}", R"({"n": 1})"), trt::Error);
    EXPECT_THROW(render("{{ d[1:] }}", R"({"d": {}})"), trt::Error);
    // even/odd/divisibleby are Python's %: floats work.
    EXPECT_EQ(render("{{ 3.0 is even }}{{ 3.0 is odd }}{{ 4.5 is divisibleby 1.5 }}"), "FalseTrueTrue");
    // map/select of a false value are empty; indent wants a string.
    EXPECT_EQ(render("{{ false | selectattr('x') | list }}{{ none | map('upper') | list }}"), "[][]");
    EXPECT_THROW(render("{{ 7 | indent }}"), trt::Error);
}

TEST(ChatRender, CyclesARenderMakesDoNotOutliveIt) {
    // A macro is held by the scope it closes over, a namespace can hold itself: both are
    // reference cycles the evaluator breaks when the render ends (the sanitizer build's leak
    // check fails here otherwise).
    EXPECT_EQ(render("{% macro m(x) %}[{{ x }}]{% endmacro %}{% set ns = namespace() %}{% set ns.self = ns %}"
                     "{% set ns.m = m %}{{ ns.self.m(1) }}{% for i in [1] %}{% macro k() %}{{ i }}{% endmacro %}"
                     "{{ k() }}{% endfor %}{% for i in [1, 2] %}{{ loop.changed(loop) }}{% endfor %}"),
              "[1]1TrueTrue");
}

TEST(ChatRender, RenderIsConstAndThreadSafe) {
    const Template t = Template::parse("{% for m in messages %}{{ m | upper }}{% endfor %}{{ n }}", "t");
    std::vector<std::thread> threads;
    std::vector<std::string> out(4);
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int r = 0; r < 200; ++r)
                out[k] = t.render(trt::json::parse(R"({"messages": ["a", "b"], "n": )" + std::to_string(k) + "}", "c")).text;
        });
    for (auto& th : threads) th.join();
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out[k], "AB" + std::to_string(k));
}

}  // namespace
