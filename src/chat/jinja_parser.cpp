#include "chat/jinja_parser.h"

#include <cstdlib>
#include <set>

#include "chat/jinja_builtins.h"
#include "core/error.h"

namespace trt::chat {

namespace {

// Nesting of expressions and blocks; a hostile template cannot overflow the parser's stack
// (nor the evaluator's: it walks the same tree).
constexpr int kMaxNesting = 128;

class Parser {
public:
    Parser(const std::vector<Token>& t, const std::string& origin) : t_(t), origin_(origin) {}

    Program run() {
        Program p;
        std::string end;
        p.body = parse_body({}, end);
        p.has_generation = has_generation_;
        return p;
    }

private:
    const std::vector<Token>& t_;
    const std::string& origin_;
    size_t k_ = 0;
    int depth_ = 0;
    int loops_ = 0;
    bool has_generation_ = false;

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > kMaxNesting)
                p.syntax(cat("nesting deeper than ", kMaxNesting, " levels"));
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& cur() const { return t_[k_]; }
    const Token& peek(size_t n = 1) const { return t_[std::min(k_ + n, t_.size() - 1)]; }
    [[noreturn]] void syntax(const std::string& what) const {
        fail(Status::Format, origin_, ":", cur().line, ": template syntax error: ", what);
    }
    [[noreturn]] void unsupported(const std::string& what, int line) const {
        fail(Status::Unsupported, origin_, ":", line, ": ", what,
             " is not supported by this runtime's template engine (docs/CHAT_TEMPLATES.md "
             "lists what is); use a chat template without it");
    }
    std::string describe(const Token& tk) const {
        switch (tk.type) {
            case Token::Type::Eof: return "end of template";
            case Token::Type::BlockEnd: return "'%}'";
            case Token::Type::VarEnd: return "'}}'";
            case Token::Type::Data: return "template text";
            case Token::Type::String: return "a string";
            default: return "'" + tk.text + "'";
        }
    }
    bool is_op(const char* op) const { return cur().type == Token::Type::Op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == Token::Type::Name && cur().text == n; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        ++k_;
        return true;
    }
    bool skip_name(const char* n) {
        if (!is_name(n)) return false;
        ++k_;
        return true;
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) syntax(cat("expected '", op, "', got ", describe(cur())));
    }
    std::string expect_name() {
        if (cur().type != Token::Type::Name) syntax("expected a name, got " + describe(cur()));
        return t_[k_++].text;
    }
    void expect_block_end() {
        if (cur().type != Token::Type::BlockEnd) syntax("expected '%}', got " + describe(cur()));
        ++k_;
    }

    // ------------------------------------------------------------ statements

    // Statements until a block tag named in `ends` (left unconsumed after its name: `end` gets
    // it) or the end of the template (only allowed with no ends).
    Body parse_body(const std::set<std::string>& ends, std::string& end) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& tk = cur();
            if (tk.type == Token::Type::Eof) {
                if (!ends.empty()) {
                    std::string list;
                    for (const auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
                    syntax("unexpected end of template; expected " + list);
                }
                return body;
            }
            if (tk.type == Token::Type::Data) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Text;
                s->line = tk.line;
                s->text = tk.text;
                body.push_back(std::move(s));
                ++k_;
                continue;
            }
            if (tk.type == Token::Type::VarBegin) {
                ++k_;
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Print;
                s->line = tk.line;
                s->expr = parse_tuple(true);
                if (cur().type != Token::Type::VarEnd)
                    syntax("expected '}}', got " + describe(cur()));
                ++k_;
                body.push_back(std::move(s));
                continue;
            }
            if (tk.type != Token::Type::BlockBegin) syntax("unexpected " + describe(tk));
            ++k_;
            const Token& nt = cur();
            if (nt.type != Token::Type::Name) syntax("expected a tag name after '{%'");
            if (ends.count(nt.text)) {
                end = nt.text;
                ++k_;
                return body;
            }
            body.push_back(parse_statement());
        }
    }

    // The statement whose tag name is the current token (after '{%').
    StmtPtr parse_statement() {
        const Token& nt = cur();
        const std::string tag = nt.text;
        const int line = nt.line;
        ++k_;
        auto s = std::make_unique<Stmt>();
        s->line = line;
        if (tag == "if") parse_if(*s);
        else if (tag == "for") parse_for(*s);
        else if (tag == "set") parse_set(*s);
        else if (tag == "macro") parse_macro(*s);
        else if (tag == "filter") parse_filter_block(*s);
        else if (tag == "generation") parse_generation(*s);
        else if (tag == "break" || tag == "continue") parse_loop_control(*s, tag);
        else if (tag == "include" || tag == "extends" || tag == "import" || tag == "from" ||
                 tag == "block" || tag == "call" || tag == "with" || tag == "autoescape" ||
                 tag == "do" || tag == "trans")
            unsupported("the '{% " + tag + " %}' statement", line);
        else if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
            --k_;
            syntax("unexpected '" + tag + "' (no open block it closes)");
        } else {
            unsupported("the unknown statement '{% " + tag + " %}'", line);
        }
        return s;
    }

    // {% if %} ... {% elif %} ... {% else %} ... {% endif %}
    void parse_if(Stmt& s) {
        s.kind = Stmt::Kind::If;
        std::string end = "elif";
        while (end == "elif") {
            s.conds.push_back(parse_tuple(false));
            expect_block_end();
            s.bodies.push_back(parse_body({"elif", "else", "endif"}, end));
        }
        if (end == "else") {
            expect_block_end();
            s.else_body = parse_body({"endif"}, end);
        }
        expect_block_end();
    }

    // {% for target in items if cond %} ... {% else %} ... {% endfor %}
    void parse_for(Stmt& s) {
        s.kind = Stmt::Kind::For;
        s.target = parse_target(false);
        if (!skip_name("in")) syntax("expected 'in' in a for loop, got " + describe(cur()));
        s.expr = parse_tuple(false, true);
        if (skip_name("if")) s.cond = parse_expression(true);
        if (is_name("recursive")) unsupported("the recursive for loop", s.line);
        expect_block_end();
        ++loops_;
        std::string end;
        s.bodies.push_back(parse_body({"else", "endfor"}, end));
        --loops_;
        if (end == "else") {
            expect_block_end();
            s.else_body = parse_body({"endfor"}, end);
        }
        expect_block_end();
    }

    // {% set target = value %}, or the block form {% set name | filters %} ... {% endset %}.
    void parse_set(Stmt& s) {
        s.target = parse_target(true);
        if (skip_op("=")) {
            s.kind = Stmt::Kind::Set;
            s.expr = parse_tuple(true);
            expect_block_end();
            return;
        }
        s.kind = Stmt::Kind::SetBlock;
        if (!s.target.attr.empty() || s.target.tuple) syntax("a block set takes one name");
        if (is_op("|")) s.filter = parse_filters(nullptr);
        expect_block_end();
        s.bodies.push_back(parse_body_outside_loops("endset"));
        expect_block_end();
    }

    // {% macro name(param, param=default) %} ... {% endmacro %}
    void parse_macro(Stmt& s) {
        s.kind = Stmt::Kind::Macro;
        s.name = expect_name();
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            s.params.push_back(expect_name());
            s.defaults.push_back(skip_op("=") ? parse_expression(true) : nullptr);
        }
        expect_op(")");
        expect_block_end();
        s.bodies.push_back(parse_body_outside_loops("endmacro"));
        if (cur().type == Token::Type::Name) ++k_;  // {% endmacro name %}
        expect_block_end();
    }

    // A body a break or continue cannot leave (a macro's, a block set's): the loops around it
    // do not count inside.
    Body parse_body_outside_loops(const char* end_tag) {
        std::string end;
        const int saved = loops_;
        loops_ = 0;
        Body body = parse_body({end_tag}, end);
        loops_ = saved;
        return body;
    }

    // {% filter f | g %} ... {% endfilter %}
    void parse_filter_block(Stmt& s) {
        s.kind = Stmt::Kind::FilterBlock;
        s.filter = parse_filters(nullptr, /*leading_pipe=*/false);
        expect_block_end();
        std::string end;
        s.bodies.push_back(parse_body({"endfilter"}, end));
        expect_block_end();
    }

    // {% generation %} ... {% endgeneration %} (transformers' assistant-mask extension)
    void parse_generation(Stmt& s) {
        s.kind = Stmt::Kind::Generation;
        has_generation_ = true;
        expect_block_end();
        std::string end;
        s.bodies.push_back(parse_body({"endgeneration"}, end));
        expect_block_end();
    }

    // {% break %} / {% continue %}, inside a for loop only.
    void parse_loop_control(Stmt& s, const std::string& tag) {
        if (loops_ == 0) syntax("'" + tag + "' outside of a for loop");
        s.kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
        expect_block_end();
    }

    Target parse_target(bool allow_attr) {
        Target t;
        t.names.push_back(expect_name());
        if (allow_attr && skip_op(".")) {
            t.attr = expect_name();
            return t;
        }
        while (skip_op(",")) {
            t.tuple = true;
            if (cur().type != Token::Type::Name) break;
            t.names.push_back(expect_name());
        }
        return t;
    }

    // ------------------------------------------------------------ expressions

    ExprPtr node(Expr::Kind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // Expressions separated by commas: a tuple (Jinja's parse_tuple).
    ExprPtr parse_tuple(bool with_condexpr, bool stop_at_if = false) {
        const int line = cur().line;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) {
                if (!skip_op(",")) break;
                is_tuple = true;
                if (at_tuple_end(stop_at_if)) break;
            }
            items.push_back(with_condexpr ? parse_expression(true) : parse_or());
        }
        if (!is_tuple) return std::move(items[0]);
        auto e = node(Expr::Kind::Tuple, line);
        e->kids = std::move(items);
        return e;
    }
    bool at_tuple_end(bool stop_at_if) const {
        const Token& tk = cur();
        if (tk.type == Token::Type::VarEnd || tk.type == Token::Type::BlockEnd) return true;
        if (tk.type == Token::Type::Op && (tk.text == ")" || tk.text == "]" || tk.text == "}" || tk.text == "="))
            return true;
        return stop_at_if && tk.type == Token::Type::Name && (tk.text == "if" || tk.text == "recursive");
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        if (!with_condexpr) return parse_or();
        ExprPtr e = parse_or();
        while (is_name("if")) {
            const int line = cur().line;
            ++k_;
            auto c = node(Expr::Kind::CondExpr, line);
            c->kids.push_back(parse_or());
            c->kids.push_back(std::move(e));
            c->kids.push_back(skip_name("else") ? parse_expression(true) : nullptr);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr l = parse_and();
        while (is_name("or")) {
            auto e = node(Expr::Kind::Or, cur().line);
            ++k_;
            e->kids.push_back(std::move(l));
            e->kids.push_back(parse_and());
            l = std::move(e);
        }
        return l;
    }
    ExprPtr parse_and() {
        ExprPtr l = parse_not();
        while (is_name("and")) {
            auto e = node(Expr::Kind::And, cur().line);
            ++k_;
            e->kids.push_back(std::move(l));
            e->kids.push_back(parse_not());
            l = std::move(e);
        }
        return l;
    }
    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            auto e = node(Expr::Kind::Not, cur().line);
            ++k_;
            e->kids.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        const int line = cur().line;
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            const Token& tk = cur();
            if (tk.type == Token::Type::Op && (tk.text == "==" || tk.text == "!=" || tk.text == "<" ||
                                                tk.text == "<=" || tk.text == ">" || tk.text == ">=")) {
                op = tk.text;
                ++k_;
            } else if (is_name("in")) {
                op = "in";
                ++k_;
            } else if (is_name("not") && peek().type == Token::Type::Name && peek().text == "in") {
                op = "not in";
                k_ += 2;
            } else {
                break;
            }
            if (!cmp) {
                cmp = node(Expr::Kind::Compare, line);
                cmp->kids.push_back(std::move(first));
            }
            cmp->ops.push_back(op);
            cmp->kids.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }
    ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
        auto e = node(Expr::Kind::Binary, line);
        e->name = op;
        e->kids.push_back(std::move(l));
        e->kids.push_back(std::move(r));
        return e;
    }
    ExprPtr parse_math1() {
        ExprPtr l = parse_concat();
        while (is_op("+") || is_op("-")) {
            const std::string op = cur().text;
            const int line = cur().line;
            ++k_;
            l = binary(op, std::move(l), parse_concat(), line);
        }
        return l;
    }
    ExprPtr parse_concat() {
        ExprPtr l = parse_math2();
        while (is_op("~")) {
            const int line = cur().line;
            ++k_;
            l = binary("~", std::move(l), parse_math2(), line);
        }
        return l;
    }
    ExprPtr parse_math2() {
        ExprPtr l = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const std::string op = cur().text;
            const int line = cur().line;
            ++k_;
            l = binary(op, std::move(l), parse_pow(), line);
        }
        return l;
    }
    ExprPtr parse_pow() {
        ExprPtr l = parse_unary(true);
        while (is_op("**")) {
            const int line = cur().line;
            ++k_;
            l = binary("**", std::move(l), parse_unary(true), line);
        }
        return l;
    }
    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = node(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, cur().line);
            ++k_;
            e->kids.push_back(parse_unary(false));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& tk = cur();
        const int line = tk.line;
        switch (tk.type) {
            case Token::Type::Name: {
                ++k_;
                auto c = node(Expr::Kind::Const, line);
                if (tk.text == "true" || tk.text == "True") c->value = Value::boolean(true);
                else if (tk.text == "false" || tk.text == "False") c->value = Value::boolean(false);
                else if (tk.text == "none" || tk.text == "None") c->value = Value::none();
                else {
                    c->kind = Expr::Kind::Name;
                    c->name = tk.text;
                }
                return c;
            }
            case Token::Type::String: {
                std::string s;
                while (cur().type == Token::Type::String) s += t_[k_++].text;  // 'a' 'b' == 'ab'
                auto c = node(Expr::Kind::Const, line);
                c->value = Value::string(std::move(s));
                return c;
            }
            case Token::Type::Int: {
                ++k_;
                errno = 0;
                char* end = nullptr;
                const long long v = std::strtoll(tk.text.c_str(), &end, 10);
                if (errno == ERANGE) syntax("integer literal " + tk.text + " is beyond 64 bits");
                auto c = node(Expr::Kind::Const, line);
                c->value = Value::integer(v);
                return c;
            }
            case Token::Type::Float: {
                ++k_;
                auto c = node(Expr::Kind::Const, line);
                c->value = Value::real(std::strtod(tk.text.c_str(), nullptr));
                return c;
            }
            case Token::Type::Op:
                if (tk.text == "(") {
                    ++k_;
                    if (skip_op(")")) {
                        auto e = node(Expr::Kind::Tuple, line);
                        return e;
                    }
                    ExprPtr e = parse_tuple(true);
                    expect_op(")");
                    return e;
                }
                if (tk.text == "[") {
                    ++k_;
                    auto e = node(Expr::Kind::List, line);
                    while (!is_op("]")) {
                        if (!e->kids.empty()) expect_op(",");
                        if (is_op("]")) break;
                        e->kids.push_back(parse_expression(true));
                    }
                    expect_op("]");
                    return e;
                }
                if (tk.text == "{") {
                    ++k_;
                    auto e = node(Expr::Kind::Dict, line);
                    while (!is_op("}")) {
                        if (!e->kids.empty()) expect_op(",");
                        if (is_op("}")) break;
                        e->kids.push_back(parse_expression(true));
                        expect_op(":");
                        e->kids.push_back(parse_expression(true));
                    }
                    expect_op("}");
                    return e;
                }
                break;
            default: break;
        }
        syntax("unexpected " + describe(tk));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const int line = cur().line;
            if (is_op(".")) {
                ++k_;
                auto a = node(Expr::Kind::Attr, line);
                if (cur().type == Token::Type::Name) {
                    a->name = t_[k_++].text;
                } else if (cur().type == Token::Type::Int) {
                    a->kind = Expr::Kind::Item;  // foo.0 is foo[0]
                    auto c = node(Expr::Kind::Const, line);
                    c->value = Value::integer(std::strtoll(t_[k_++].text.c_str(), nullptr, 10));
                    a->kids.push_back(std::move(e));
                    a->kids.push_back(std::move(c));
                    e = std::move(a);
                    continue;
                } else {
                    syntax("expected an attribute name after '.'");
                }
                a->kids.push_back(std::move(e));
                e = std::move(a);
            } else if (is_op("[")) {
                ++k_;
                e = parse_subscript(std::move(e), line);
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr obj, int line) {
        ExprPtr parts[3];
        bool slice = false;
        int idx = 0;
        while (!is_op("]")) {
            if (is_op(":")) {
                if (idx >= 2) syntax("a slice takes at most start:stop:step");
                slice = true;
                ++k_;
                ++idx;
                continue;
            }
            if (parts[idx]) syntax("expected ']' or ':', got " + describe(cur()));
            parts[idx] = parse_tuple(true);
        }
        expect_op("]");
        if (!slice) {
            if (!parts[0]) syntax("empty subscript");
            auto e = node(Expr::Kind::Item, line);
            e->kids.push_back(std::move(obj));
            e->kids.push_back(std::move(parts[0]));
            return e;
        }
        auto e = node(Expr::Kind::Slice, line);
        e->kids.push_back(std::move(obj));
        for (auto& p : parts) e->kids.push_back(std::move(p));
        return e;
    }

    // ( args ) into e->args / kw_names / kw_args.
    void parse_args(Expr& e) {
        expect_op("(");
        bool any = false;
        while (!is_op(")")) {
            if (any) expect_op(",");
            if (is_op(")")) break;
            any = true;
            if (is_op("*") || is_op("**")) unsupported("'*args' / '**kwargs' in a call", cur().line);
            if (cur().type == Token::Type::Name && peek().type == Token::Type::Op && peek().text == "=") {
                e.kw_names.push_back(t_[k_].text);
                k_ += 2;
                e.kw_args.push_back(parse_expression(true));
            } else {
                if (!e.kw_names.empty()) syntax("a positional argument after a keyword argument");
                e.args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr fn) {
        auto e = node(Expr::Kind::Call, cur().line);
        e->kids.push_back(std::move(fn));
        parse_args(*e);
        return e;
    }

    std::string dotted_name() {
        std::string n = expect_name();
        while (is_op(".")) {
            ++k_;
            n += "." + expect_name();
        }
        return n;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                e = parse_filters(std::move(e));
            } else if (is_name("is")) {
                e = parse_test(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    // | name(args) | name ... ; subject null for filter blocks and set blocks.
    ExprPtr parse_filters(ExprPtr subject, bool leading_pipe = true) {
        bool first = true;
        while (first ? (!leading_pipe || is_op("|")) : is_op("|")) {
            if (!first || leading_pipe) ++k_;
            first = false;
            const int line = cur().line;
            const std::string name = dotted_name();
            if (!is_known_filter(name)) unsupported("the filter '" + name + "'", line);
            auto f = node(Expr::Kind::Filter, line);
            f->name = name;
            f->kids.push_back(std::move(subject));
            if (is_op("(")) parse_args(*f);
            subject = std::move(f);
        }
        return subject;
    }

    ExprPtr parse_test(ExprPtr subject) {
        const int line = cur().line;
        ++k_;  // is
        auto t = node(Expr::Kind::Test, line);
        t->negate = skip_name("not");
        t->name = dotted_name();
        if (!is_known_test(t->name)) unsupported("the test '" + t->name + "'", line);
        t->kids.push_back(std::move(subject));
        const Token& tk = cur();
        if (is_op("(")) {
            parse_args(*t);
        } else if ((tk.type == Token::Type::Name || tk.type == Token::Type::String ||
                    tk.type == Token::Type::Int || tk.type == Token::Type::Float ||
                    (tk.type == Token::Type::Op && (tk.text == "[" || tk.text == "{"))) &&
                   !(tk.type == Token::Type::Name &&
                     (tk.text == "else" || tk.text == "or" || tk.text == "and"))) {
            if (is_name("is")) syntax("you cannot chain multiple tests with 'is'");
            t->args.push_back(parse_postfix(parse_primary()));
        }
        return t;
    }
};

}  // namespace

Program parse_program(const std::vector<Token>& tokens, const std::string& origin) {
    return Parser(tokens, origin).run();
}

}  // namespace trt::chat
