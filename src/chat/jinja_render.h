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

#include "chat/chat_template.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_value.h"

namespace trt::chat {


struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;
    const Value* find(const std::string& name) const;
    void set(const std::string& name, Value v);
};

class Evaluator {
public:
    Evaluator(const Program& program, const Limits& limits);
    // Breaks the reference cycles a render can make (a macro held by the scope it closes over,
    // a namespace holding itself), so nothing it built outlives it.
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;
    // namespace() objects: the one mutable container, hence the one way to a cycle.
    void track_namespace(const std::shared_ptr<Dict>& d) { namespaces_.push_back(d); }
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
    std::vector<std::shared_ptr<Dict>> namespaces_;
    std::vector<std::shared_ptr<Function>> macros_;
    WorkMeter meter_;  // strings and lists made, values walked: Limits::max_work

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
    // The expression kinds eval() hands on.
    Value eval_slice(const Expr& e);
    Value eval_sign(const Expr& e);
    Value eval_compare(const Expr& e);
    Value eval_dict(const Expr& e);
    // binary()'s operator groups and its errors.
    Value plus(const Value& a, const Value& b, bool ints, bool nums, int line);
    Value times(const Value& a, const Value& b, bool ints, bool nums, int line);
    Value int_divmod(const std::string& op, int64_t x, int64_t y, int line) const;
    Value float_divmod(const std::string& op, double x, double y, int line) const;
    [[noreturn]] void unsupported_operands(const std::string& op, const Value& a, const Value& b,
                                           int line) const;
    [[noreturn]] void integer_overflow(const std::string& op, int line) const;

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
