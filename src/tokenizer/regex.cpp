// Regex (regex.h): a recursive-descent parser to a small tree, compiled to instructions for a
// backtracking machine (a stack of alternatives to resume; registers for the empty-loop check,
// restored on backtracking). Look-ahead and atomic groups run their sub-program as a nested
// match.
#include "tokenizer/regex.h"

#include <memory>

#include "core/error.h"

namespace trt::tok {
namespace {

constexpr uint32_t kInfinite = 0xFFFFFFFFu;

struct Node {
    enum class Kind { Empty, Char, Any, Class, Concat, Alt, Repeat, Look, Atomic, Bol, Eol,
                      TextStart, TextEnd } kind = Kind::Empty;
    char32_t c = 0;
    bool icase = false;
    uint32_t cls = 0;
    uint32_t min = 0, max = 0;
    enum class Mode { Greedy, Lazy, Possessive } mode = Mode::Greedy;
    bool negate = false;  // Look
    std::vector<std::unique_ptr<Node>> kids;
};
using NodePtr = std::unique_ptr<Node>;

NodePtr make(Node::Kind k) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    return n;
}

class Parser {
public:
    Parser(std::string_view pattern, const std::string& source, std::vector<Regex::Class>& classes)
        : source_(source), classes_(classes) {
        if (invalid_utf8_at(pattern) != std::string_view::npos)
            fail(Status::Format, source_, ": the regex is not valid UTF-8");
        for (size_t i = 0; i < pattern.size();) {
            const Decoded d = decode_utf8(pattern, i);
            cps_.push_back(d.cp);
            i += d.len;
        }
    }

    NodePtr parse() {
        NodePtr n = alternation(false);
        if (pos_ < cps_.size()) malformed("an unmatched ')'");
        return n;
    }

private:
    [[noreturn]] void malformed(const std::string& what) const {
        fail(Status::Format, source_, ": regex: ", what, " at character ", pos_);
    }
    [[noreturn]] void unsupported(const std::string& what) const {
        fail(Status::Unsupported, source_, ": regex: ", what, " at character ", pos_,
             " is not supported (see src/tokenizer/regex.h for what is)");
    }
    bool at_end() const { return pos_ >= cps_.size(); }
    char32_t peek(size_t ahead = 0) const {
        return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0;
    }
    bool eat(char32_t c) {
        if (!at_end() && cps_[pos_] == c) {
            pos_++;
            return true;
        }
        return false;
    }

    NodePtr alternation(bool icase) {
        bool scope = icase;  // (?i) turns it on to the end of the group, across '|'
        std::vector<NodePtr> alts;
        alts.push_back(concatenation(scope));
        while (eat('|')) alts.push_back(concatenation(scope));
        if (alts.size() == 1) return std::move(alts[0]);
        NodePtr n = make(Node::Kind::Alt);
        n->kids = std::move(alts);
        return n;
    }

    NodePtr concatenation(bool& icase_scope) {
        NodePtr n = make(Node::Kind::Concat);
        while (!at_end() && peek() != '|' && peek() != ')') {
            // (?i) switches case-insensitivity on for the rest of the enclosing group.
            if (peek() == '(' && peek(1) == '?' && peek(2) == 'i' && peek(3) == ')') {
                pos_ += 4;
                icase_scope = true;
                continue;
            }
            NodePtr atom = this->atom(icase_scope);
            n->kids.push_back(quantified(std::move(atom)));
        }
        return n;
    }

    // A quantifier after an atom, if there is one.
    NodePtr quantified(NodePtr atom) {
        uint32_t min = 0, max = 0;
        const size_t start = pos_;
        if (eat('*')) min = 0, max = kInfinite;
        else if (eat('+')) min = 1, max = kInfinite;
        else if (eat('?')) min = 0, max = 1;
        else if (peek() == '{' && counted(min, max)) {}
        else return atom;
        if (atom->kind == Node::Kind::Bol || atom->kind == Node::Kind::Eol ||
            atom->kind == Node::Kind::Look) {
            pos_ = start;
            unsupported("a quantifier on an anchor or look-ahead");
        }
        NodePtr r = make(Node::Kind::Repeat);
        r->min = min;
        r->max = max;
        if (eat('?')) r->mode = Node::Mode::Lazy;
        else if (eat('+')) r->mode = Node::Mode::Possessive;
        r->kids.push_back(std::move(atom));
        if (peek() == '*' || peek() == '+' || peek() == '?') malformed("a repeated quantifier");
        return r;
    }

    // {m} {m,} {m,n}; false (nothing consumed) when the brace is not a quantifier (a literal).
    bool counted(uint32_t& min, uint32_t& max) {
        size_t p = pos_ + 1;
        const auto number = [&](uint32_t& v) {
            const size_t begin = p;
            uint64_t n = 0;
            while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
                n = n * 10 + (cps_[p] - '0');
                if (n > 100000) n = 100000;
                p++;
            }
            v = static_cast<uint32_t>(n);
            return p > begin;
        };
        if (!number(min)) return false;
        max = min;
        if (p < cps_.size() && cps_[p] == ',') {
            p++;
            if (!number(max)) max = kInfinite;
        }
        if (p >= cps_.size() || cps_[p] != '}') return false;
        if (max < min) malformed("a {m,n} with n < m");
        if (min > 1000 || (max != kInfinite && max > 1000)) unsupported("a count above 1000");
        pos_ = p + 1;
        return true;
    }

    NodePtr atom(bool icase) {
        const char32_t c = peek();
        if (c == '(') return group(icase);
        if (c == '[') {
            pos_++;
            NodePtr n = make(Node::Kind::Class);
            n->cls = char_class();
            n->icase = icase;
            return n;
        }
        if (c == '*' || c == '+' || c == '?') malformed("a quantifier with nothing before it");
        pos_++;
        if (c == '.') return make(Node::Kind::Any);
        if (c == '^') return make(Node::Kind::Bol);
        if (c == '$') return make(Node::Kind::Eol);
        if (c == '\\') return escape(icase);
        NodePtr n = make(Node::Kind::Char);
        n->c = c;
        n->icase = icase;
        return n;
    }

    NodePtr group(bool icase) {
        pos_++;  // (
        NodePtr n;
        if (eat('?')) {
            if (eat(':')) {
                n = alternation(icase);
            } else if (peek() == 'i' && peek(1) == ':') {
                pos_ += 2;
                n = alternation(true);
            } else if (peek() == '-' && peek(1) == 'i' && peek(2) == ':') {
                pos_ += 3;
                n = alternation(false);
            } else if (eat('=') || (peek() == '!')) {
                const bool negate = eat('!');
                n = make(Node::Kind::Look);
                n->negate = negate;
                n->kids.push_back(alternation(icase));
            } else if (eat('>')) {
                n = make(Node::Kind::Atomic);
                n->kids.push_back(alternation(icase));
            } else if (peek() == 'P' && peek(1) == '<') {
                pos_ += 2;
                skip_name();
                n = alternation(icase);
            } else if (peek() == '<' && peek(1) != '=' && peek(1) != '!') {
                pos_++;
                skip_name();
                n = alternation(icase);
            } else {
                unsupported("this group kind (look-behind, flags other than i, ...)");
            }
        } else {
            n = alternation(icase);  // a capturing group: only its match matters here
        }
        if (!eat(')')) malformed("a '(' without its ')'");
        return n;
    }

    void skip_name() {
        while (!at_end() && peek() != '>') pos_++;
        if (!eat('>')) malformed("a group name without its '>'");
    }

    uint32_t hex(size_t digits) {
        uint32_t v = 0;
        for (size_t k = 0; k < digits; k++) {
            const char32_t h = peek();
            int d = h >= '0' && h <= '9' ? int(h - '0') : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                    : h >= 'A' && h <= 'F' ? int(h - 'A' + 10) : -1;
            if (d < 0) malformed("a bad hexadecimal escape");
            v = v * 16 + static_cast<uint32_t>(d);
            pos_++;
        }
        return v;
    }

    // After a backslash: one code point (literal), or a class item (kind set), as an escape
    // means inside and outside brackets alike. Returns true for a class item.
    bool escape_item(char32_t& literal, Regex::ClassItem& item) {
        if (at_end()) malformed("a '\\' at the end");
        const char32_t c = cps_[pos_++];
        switch (c) {
            case 'n': literal = '\n'; return false;
            case 'r': literal = '\r'; return false;
            case 't': literal = '\t'; return false;
            case 'f': literal = '\f'; return false;
            case 'v': literal = '\v'; return false;
            case 'a': literal = 7; return false;
            case 'e': literal = 27; return false;
            case '0': literal = 0; return false;
            case 'x':
                if (eat('{')) {
                    uint32_t v = 0;
                    size_t n = 0;
                    while (!at_end() && peek() != '}' && n < 8) v = v * 16 + hex(1), n++;
                    if (!eat('}') || n == 0) malformed("a bad \\x{...} escape");
                    literal = v;
                } else {
                    literal = hex(2);
                }
                if (literal > 0x10FFFF || (literal >= 0xD800 && literal <= 0xDFFF))
                    malformed("an escape beyond Unicode");
                return false;
            case 'u':
                literal = hex(4);
                if (literal >= 0xD800 && literal <= 0xDFFF) unsupported("a surrogate escape");
                return false;
            case 's': case 'S':
                item = {Regex::ClassItem::Kind::Space, c == 'S'};
                return true;
            case 'd': case 'D':
                item = {Regex::ClassItem::Kind::Digit, c == 'D'};
                return true;
            case 'w': case 'W':
                item = {Regex::ClassItem::Kind::Word, c == 'W'};
                return true;
            case 'p': case 'P': {
                std::string name;
                if (eat('{')) {
                    bool negated = eat('^');
                    while (!at_end() && peek() != '}') {
                        if (peek() >= 0x80) malformed("a bad property name");
                        name += static_cast<char>(cps_[pos_++]);
                    }
                    if (!eat('}')) malformed("a \\p{ without its '}'");
                    item.negated = (c == 'P') != negated;
                } else {
                    if (at_end() || peek() >= 0x80) malformed("a bad property name");
                    name += static_cast<char>(cps_[pos_++]);
                    item.negated = c == 'P';
                }
                item.kind = Regex::ClassItem::Kind::Category;
                if (!category_named(name, item.category))
                    unsupported("the property \\p{" + name + "}");
                return true;
            }
            default: break;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '1' && c <= '9'))
            unsupported(std::string("the escape \\") + static_cast<char>(c));
        literal = c;  // escaped punctuation (or any other non-alphanumeric) stands for itself
        return false;
    }

    NodePtr escape(bool icase) {
        if (peek() == 'A' || peek() == 'z') {
            return make(cps_[pos_++] == 'A' ? Node::Kind::TextStart : Node::Kind::TextEnd);
        }
        char32_t literal = 0;
        Regex::ClassItem item{};
        if (escape_item(literal, item)) {
            NodePtr n = make(Node::Kind::Class);
            Regex::Class cls;
            cls.items.push_back(item);
            n->cls = add_class(std::move(cls));
            n->icase = icase;
            return n;
        }
        NodePtr n = make(Node::Kind::Char);
        n->c = literal;
        n->icase = icase;
        return n;
    }

    uint32_t add_class(Regex::Class c) {
        classes_.push_back(std::move(c));
        return static_cast<uint32_t>(classes_.size() - 1);
    }

    // After '[': the items up to ']'.
    uint32_t char_class() {
        Regex::Class cls;
        cls.negated = eat('^');
        bool first = true;
        while (true) {
            if (at_end()) malformed("a '[' without its ']'");
            char32_t c = cps_[pos_];
            if (c == ']' && !first) {
                pos_++;
                break;
            }
            first = false;
            if (c == '[') {
                if (peek(1) == ':') unsupported("a POSIX class [:...:]");
                unsupported("a nested class");
            }
            if (c == '&' && peek(1) == '&') unsupported("a class intersection &&");
            pos_++;
            char32_t lo = c;
            if (c == '\\') {
                Regex::ClassItem item{};
                if (escape_item(lo, item)) {
                    cls.items.push_back(item);
                    continue;
                }
            }
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
                pos_++;  // -
                char32_t hi = cps_[pos_++];
                if (hi == '\\') {
                    Regex::ClassItem item{};
                    if (escape_item(hi, item)) malformed("a range that ends in a class");
                }
                if (hi < lo) malformed("a range out of order");
                cls.items.push_back({Regex::ClassItem::Kind::Range, false, lo, hi});
                continue;
            }
            cls.items.push_back({Regex::ClassItem::Kind::Range, false, lo, lo});
        }
        return add_class(std::move(cls));
    }

    const std::string& source_;
    std::vector<Regex::Class>& classes_;
    std::vector<char32_t> cps_;
    size_t pos_ = 0;
};

bool nullable(const Node& n) {
    switch (n.kind) {
        case Node::Kind::Char: case Node::Kind::Any: case Node::Kind::Class: return false;
        case Node::Kind::Concat:
            for (const NodePtr& k : n.kids)
                if (!nullable(*k)) return false;
            return true;
        case Node::Kind::Alt:
            for (const NodePtr& k : n.kids)
                if (nullable(*k)) return true;
            return false;
        case Node::Kind::Repeat: return n.min == 0 || nullable(*n.kids[0]);
        case Node::Kind::Atomic: return nullable(*n.kids[0]);
        default: return true;
    }
}

class Compiler {
public:
    Compiler(std::vector<Regex::Inst>& prog, uint32_t& registers, const std::string& source)
        : prog_(prog), registers_(registers), source_(source) {}

    void emit(const Node& n) {
        if (prog_.size() > Regex::kMaxProgram)
            fail(Status::Unsupported, source_, ": regex: the pattern compiles to more than ",
                 Regex::kMaxProgram, " instructions (counted repeats of large groups)");
        using K = Node::Kind;
        switch (n.kind) {
            case K::Empty: break;
            case K::Char: push({Regex::Op::Char, n.icase, n.c}); break;
            case K::Any: push({Regex::Op::Any}); break;
            case K::Class: push({Regex::Op::Class, n.icase, 0, n.cls}); break;
            case K::Bol: push({Regex::Op::Bol}); break;
            case K::Eol: push({Regex::Op::Eol}); break;
            case K::TextStart: push({Regex::Op::TextStart}); break;
            case K::TextEnd: push({Regex::Op::TextEnd}); break;
            case K::Concat:
                for (const NodePtr& k : n.kids) emit(*k);
                break;
            case K::Alt: {
                std::vector<uint32_t> jumps;
                for (size_t i = 0; i < n.kids.size(); i++) {
                    if (i + 1 < n.kids.size()) {
                        const uint32_t split = push({Regex::Op::Split});
                        prog_[split].x = here();
                        emit(*n.kids[i]);
                        jumps.push_back(push({Regex::Op::Jmp}));
                        prog_[split].y = here();
                    } else {
                        emit(*n.kids[i]);
                    }
                }
                for (uint32_t j : jumps) prog_[j].x = here();
                break;
            }
            case K::Look: case K::Atomic: {
                const uint32_t at = push({n.kind == K::Look ? Regex::Op::Look : Regex::Op::Atomic,
                                          n.negate});
                emit(*n.kids[0]);
                push({Regex::Op::Match});
                prog_[at].x = here();
                break;
            }
            case K::Repeat: repeat(n); break;
        }
    }

private:
    uint32_t here() const { return static_cast<uint32_t>(prog_.size()); }
    uint32_t push(Regex::Inst i) {
        prog_.push_back(i);
        return here() - 1;
    }
    // A Split whose preferred branch is the next instruction (greedy) or `other` (lazy).
    uint32_t split(bool lazy) {
        const uint32_t s = push({Regex::Op::Split});
        if (lazy) prog_[s].y = s + 1;
        else prog_[s].x = s + 1;
        return s;
    }
    void set_exit(uint32_t s, bool lazy, uint32_t exit) {
        if (lazy) prog_[s].x = exit;
        else prog_[s].y = exit;
    }

    void repeat(const Node& n) {
        if (n.mode == Node::Mode::Possessive) {  // an atomic group around the greedy repeat
            const uint32_t at = push({Regex::Op::Atomic});
            const Node& body = *n.kids[0];
            for (uint32_t k = 0; k < n.min; k++) emit(body);
            tail(body, n.min, n.max, false);
            push({Regex::Op::Match});
            prog_[at].x = here();
            return;
        }
        const Node& body = *n.kids[0];
        for (uint32_t k = 0; k < n.min; k++) emit(body);
        tail(body, n.min, n.max, n.mode == Node::Mode::Lazy);
    }

    // The optional part of a repeat: max - min more (or any number of) bodies.
    void tail(const Node& body, uint32_t min, uint32_t max, bool lazy) {
        if (max == kInfinite) {
            const bool empty_ok = nullable(body);
            const uint32_t reg = empty_ok ? registers_++ : 0;
            const uint32_t loop = split(lazy);
            if (empty_ok) push({Regex::Op::Mark, false, 0, reg});
            emit(body);
            if (empty_ok) push({Regex::Op::Progress, false, 0, reg});
            const uint32_t back = push({Regex::Op::Jmp});
            prog_[back].x = loop;
            set_exit(loop, lazy, here());
            return;
        }
        std::vector<uint32_t> splits;
        for (uint32_t k = min; k < max; k++) {
            splits.push_back(split(lazy));
            emit(body);
        }
        for (uint32_t s : splits) set_exit(s, lazy, here());
    }

    std::vector<Regex::Inst>& prog_;
    uint32_t& registers_;
    const std::string& source_;
};

// Simple case folding for what case-insensitive groups in tokenizer patterns hold.
char32_t fold(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';   // ſ LATIN SMALL LETTER LONG S
    if (c == 0x212A) return 'k';  // K KELVIN SIGN
    return c;
}

bool is_word(char32_t c) {
    return is_letter(c) || in_category(Category::M, c) || in_category(Category::Nd, c) ||
           in_category(Category::Pc, c);
}

}  // namespace

Regex::Regex(std::string_view pattern, const std::string& source) : pattern_(pattern) {
    Parser parser(pattern, source, classes_);
    const NodePtr tree = parser.parse();
    Compiler compiler(prog_, registers_, source);
    compiler.emit(*tree);
    prog_.push_back({Op::Match});
}

bool Regex::class_has(const Class& c, char32_t cp, bool icase) const {
    const auto has = [&](char32_t v) {
        for (const ClassItem& i : c.items) {
            bool in = false;
            switch (i.kind) {
                case ClassItem::Kind::Range: in = v >= i.first && v <= i.last; break;
                case ClassItem::Kind::Category: in = in_category(i.category, v); break;
                case ClassItem::Kind::Space: in = is_space(v); break;
                case ClassItem::Kind::Digit: in = in_category(Category::Nd, v); break;
                case ClassItem::Kind::Word: in = is_word(v); break;
            }
            if (in != i.negated) return true;
        }
        return false;
    };
    bool in = has(cp);
    if (!in && icase) {
        const char32_t f = fold(cp);
        in = (f != cp && has(f)) || (f >= 'a' && f <= 'z' && has(f - 32)) ||
             (f == 's' && has(0x17F)) || (f == 'k' && has(0x212A));
    }
    return in != c.negated;
}

bool Regex::match_at(std::string_view text, size_t start, uint32_t pc, size_t& end,
                     uint64_t& steps, uint64_t limit) const {
    // A frame resumes an alternative (pc, pos), or (restore) puts a register back.
    struct Frame {
        uint32_t pc;
        bool restore;
        size_t pos;
    };
    std::vector<Frame> stack;
    std::vector<size_t> reg(registers_, SIZE_MAX);
    size_t pos = start;
    const size_t n = text.size();
    while (true) {
        bool ok = true;
        if (++steps > limit)
            fail(Status::Unsupported, "tokenizer: the regex \"", pattern_, "\" took more than ",
                 limit, " steps on a text of ", n, " bytes (it backtracks catastrophically)");
        const Inst& in = prog_[pc];
        switch (in.op) {
            case Op::Char: {
                if (pos >= n) { ok = false; break; }
                const Decoded d = decode_utf8(text, pos);
                ok = d.cp == in.c || (in.flag && fold(d.cp) == fold(in.c));
                if (ok) pos += d.len, pc++;
                break;
            }
            case Op::Any: {
                if (pos >= n || text[pos] == '\n') { ok = false; break; }
                pos += decode_utf8(text, pos).len;
                pc++;
                break;
            }
            case Op::Class: {
                if (pos >= n) { ok = false; break; }
                const Decoded d = decode_utf8(text, pos);
                ok = class_has(classes_[in.x], d.cp, in.flag);
                if (ok) pos += d.len, pc++;
                break;
            }
            case Op::Split:
                stack.push_back({in.y, false, pos});
                pc = in.x;
                break;
            case Op::Jmp: pc = in.x; break;
            case Op::Match: end = pos; return true;
            case Op::Bol: ok = pos == 0 || text[pos - 1] == '\n'; pc++; break;
            case Op::Eol: ok = pos == n || text[pos] == '\n'; pc++; break;
            case Op::TextStart: ok = pos == 0; pc++; break;
            case Op::TextEnd: ok = pos == n; pc++; break;
            case Op::Look: {
                size_t e = 0;
                ok = match_at(text, pos, pc + 1, e, steps, limit) != in.flag;
                pc = in.x;
                break;
            }
            case Op::Atomic: {
                size_t e = 0;
                ok = match_at(text, pos, pc + 1, e, steps, limit);
                pos = e;
                pc = in.x;
                break;
            }
            case Op::Mark:
                stack.push_back({in.x, true, reg[in.x]});
                reg[in.x] = pos;
                pc++;
                break;
            case Op::Progress: ok = reg[in.x] != pos; pc++; break;
        }
        while (!ok) {
            if (stack.empty()) return false;
            const Frame f = stack.back();
            stack.pop_back();
            if (f.restore) {
                reg[f.pc] = f.pos;
                continue;
            }
            pc = f.pc;
            pos = f.pos;
            ok = true;
        }
    }
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
    uint64_t steps = 0;
    const uint64_t limit = kBaseSteps + kStepsPerByte * text.size();
    for (size_t pos = 0; pos <= text.size();) {
        size_t end = 0;
        if (match_at(text, pos, 0, end, steps, limit)) {
            out.emplace_back(pos, end);
            if (end > pos) {
                pos = end;
                continue;
            }
        }
        if (pos == text.size()) break;
        pos += decode_utf8(text, pos).len;
    }
}

}  // namespace trt::tok
