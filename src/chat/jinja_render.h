// jinja_render: the evaluator. Walks a parsed Program over a root scope of variables and
// writes the output, recording the byte ranges written inside {% generation %} blocks.
// Everything a hostile template could grow without bound is capped (Limits) with a clear
// error instead of a hang, a crash or an exhausted memory.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_value.h"

namespace trt::chat {

struct Limits {
    size_t max_output = 64u << 20;         // bytes of any one string or the output
    size_t max_items = 1u << 20;           // elements of one list (range(), list * n, ...)
    uint64_t max_iterations = 1u << 20;    // for-loop iterations in one render, all loops
    int max_call_depth = 32;               // nested macro calls
    int max_depth = 512;                   // nested statements + expressions + calls (the stack)
    uint64_t max_work = 1ull << 30;        // bytes of strings and lists made in one render
};

struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;
    const Value* find(const std::string& name) const;
    void set(const std::string& name, Value v);
};

class Evaluator {
public:
    Evaluator(const Program& program, const Limits& limits);
    // Renders with `root` as the outermost scope; fills text and the generation spans.
    // Runtime errors: Error(Status::InvalidArgument) "line N: message" (Template::render adds
    // the origin).
    void render(std::shared_ptr<Scope> root, std::string& text,
                std::vector<std::pair<size_t, size_t>>& spans);

    [[noreturn]] void error(int line, const std::string& message) const;
    const Limits& limits() const { return limits_; }
    // A string/list of `n` bytes/items may be created (else an error naming the limit).
    void check_size(size_t n, int line) const;
    // Only the length limit, no work charged (a string growing in a loop: charge it once).
    void check_length(size_t n, int line) const;
    void check_items(size_t n, int line) const;
    // Calls a template callable (macro, global, method).
    Value call(const Value& fn, CallArgs& args, int line);

private:
    enum class Flow { Normal, Break, Continue };

    const Program& program_;
    Limits limits_;
    std::shared_ptr<Scope> scope_;
    std::string* out_ = nullptr;
    std::string* top_ = nullptr;
    std::vector<std::pair<size_t, size_t>>* spans_ = nullptr;
    uint64_t iterations_ = 0;
    int call_depth_ = 0;
    int depth_ = 0;
    mutable uint64_t work_ = 0;

    struct DepthGuard {
        Evaluator& ev;
        DepthGuard(Evaluator& e, int line);
        ~DepthGuard() { --ev.depth_; }
    };
    // Counts n bytes of work (strings and lists made, copied); errors past max_work.
    void charge(uint64_t n, int line) const;

    Flow exec(const Body& body);
    Flow exec_stmt(const Stmt& s);
    void exec_for(const Stmt& s, Flow& flow);
    void emit(const std::string& s, int line);
    std::string capture(const Body& body, std::shared_ptr<Scope> scope);
    void assign(const Target& t, const Value& v, int line);
    Value apply_filter_chain(const Expr& chain, Value subject);
    Value make_macro(const Stmt& s);

public:
    Value eval(const Expr& e);
    Value lookup(const std::string& name) const;
    Value get_attr(const Value& obj, const std::string& name, int line);
    Value get_item(const Value& obj, const Value& key, int line);
    // The items a for loop / list() / join see: list items, dict keys, string characters.
    List iterate(const Value& v, int line) const;
    // Python `a op b` for + - * / // % ** ~.
    Value binary(const std::string& op, const Value& a, const Value& b, int line);
    bool contains(const Value& container, const Value& item, int line) const;
    // Raises the error an Undefined carries (using it where a value is needed).
    [[noreturn]] void undefined_error(const Value& u, int line) const;
    CallArgs eval_args(const Expr& e);
};

}  // namespace trt::chat
