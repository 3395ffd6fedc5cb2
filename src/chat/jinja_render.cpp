#include "chat/jinja_render.h"

#include <cmath>
#include <limits>

#include "chat/jinja_builtins.h"
#include "chat/jinja_str_ops.h"
#include "core/error.h"

namespace trt::chat {

const Value* Scope::find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get())
        for (const auto& kv : s->vars)
            if (kv.first == name) return &kv.second;
    return nullptr;
}

void Scope::set(const std::string& name, Value v) {
    for (auto& kv : vars)
        if (kv.first == name) { kv.second = std::move(v); return; }
    vars.emplace_back(name, std::move(v));
}

Evaluator::Evaluator(const Program& program, const Limits& limits)
    : program_(program), limits_(limits) {}

Evaluator::~Evaluator() {
    for (auto& d : namespaces_) d->items.clear();
    for (auto& f : macros_) f->body = nullptr;
}

void Evaluator::error(int line, const std::string& message) const {
    fail(Status::InvalidArgument, "line ", line, ": ", message);
}

Evaluator::DepthGuard::DepthGuard(Evaluator& e, int line) : ev(e) {
    if (++ev.depth_ > ev.limits_.max_depth) {
        --ev.depth_;
        ev.error(line, cat("the template nests statements, expressions and macro calls deeper than ",
                           ev.limits_.max_depth, " (this runtime's template limit)"));
    }
}

void Evaluator::charge(uint64_t n, int line) const {
    try {
        charge_work(n);
    } catch (const Error&) {
        error(line, cat("the render made or walked more than ", limits_.max_work,
                        " bytes of strings and values (this runtime's template limit)"));
    }
}

void Evaluator::check_size(size_t n, int line) const {
    charge(n, line);
    if (n > limits_.max_output)
        error(line, cat("a string of ", n, " bytes is over this runtime's template limit of ",
                        limits_.max_output, " bytes"));
}

void Evaluator::check_length(size_t n, int line) const {
    if (n > limits_.max_output)
        error(line, cat("a string of ", n, " bytes is over this runtime's template limit of ",
                        limits_.max_output, " bytes"));
}

void Evaluator::check_items(size_t n, int line) const {
    charge(static_cast<uint64_t>(n) * sizeof(Value), line);
    if (n > limits_.max_items)
        error(line, cat("a list of ", n, " items is over this runtime's template limit of ",
                        limits_.max_items, " items"));
}

void Evaluator::undefined_error(const Value& u, int line) const {
    error(line, u.s.empty() ? std::string("a value is undefined") : u.s);
}

void Evaluator::render(std::shared_ptr<Scope> root, std::string& text,
                       std::vector<std::pair<size_t, size_t>>& spans) {
    meter_.limit = limits_.max_work;
    WorkMeterScope meter(&meter_);
    scope_ = std::move(root);
    out_ = top_ = &text;
    spans_ = &spans;
    exec(program_.body);
}

void Evaluator::emit(const std::string& s, int line) {
    charge(s.size(), line);
    if (out_->size() + s.size() > limits_.max_output)
        error(line, cat("the output exceeds this runtime's template limit of ", limits_.max_output,
                        " bytes"));
    out_->append(s);
}

std::string Evaluator::capture(const Body& body, std::shared_ptr<Scope> scope) {
    std::string buf;
    std::string* saved_out = out_;
    auto saved_scope = scope_;
    out_ = &buf;
    scope_ = std::move(scope);
    try {
        exec(body);
    } catch (...) {
        out_ = saved_out;
        scope_ = saved_scope;
        throw;
    }
    out_ = saved_out;
    scope_ = saved_scope;
    return buf;
}

Evaluator::Flow Evaluator::exec(const Body& body) {
    for (const auto& s : body) {
        const Flow f = exec_stmt(*s);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_stmt(const Stmt& s) {
    DepthGuard guard(*this, s.line);
    switch (s.kind) {
        case Stmt::Kind::Text: emit(s.text, s.line); break;
        case Stmt::Kind::Print: {
            const Value v = eval(*s.expr);
            if (v.is_string()) emit(v.s, s.line);
            else emit(to_str(v), s.line);
            break;
        }
        case Stmt::Kind::If:
            for (size_t k = 0; k < s.conds.size(); ++k)
                if (eval(*s.conds[k]).truthy()) return exec(s.bodies[k]);
            return exec(s.else_body);
        case Stmt::Kind::For: {
            Flow flow = Flow::Normal;
            exec_for(s, flow);
            break;
        }
        case Stmt::Kind::Set: assign(s.target, eval(*s.expr), s.line); break;
        case Stmt::Kind::SetBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope_;
            Value v = Value::string(capture(s.bodies[0], inner));
            if (s.filter) v = apply_filter_chain(*s.filter, std::move(v));
            assign(s.target, v, s.line);
            break;
        }
        case Stmt::Kind::Macro: {
            Value m = make_macro(s);
            macros_.push_back(m.fn);
            scope_->set(s.name, std::move(m));
            break;
        }
        case Stmt::Kind::FilterBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope_;
            Value v = Value::string(capture(s.bodies[0], inner));
            v = apply_filter_chain(*s.filter, std::move(v));
            emit(to_str(v), s.line);
            break;
        }
        case Stmt::Kind::Generation: {
            // transformers' AssistantTracker: the body renders as a call block (its own scope)
            // and the span is where its text lands in the output.
            auto inner = std::make_shared<Scope>();
            inner->parent = scope_;
            const std::string text = capture(s.bodies[0], inner);
            const size_t begin = out_->size();
            emit(text, s.line);
            if (out_ == top_) spans_->emplace_back(begin, out_->size());
            break;
        }
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
}

void Evaluator::exec_for(const Stmt& s, Flow& flow) {
    List items = iterate(eval(*s.expr), s.line);
    auto outer = scope_;
    if (s.cond) {
        List kept;
        for (auto& item : items) {
            auto probe = std::make_shared<Scope>();
            probe->parent = outer;
            scope_ = probe;
            try {
                assign(s.target, item, s.line);
                if (eval(*s.cond).truthy()) kept.push_back(std::move(item));
            } catch (...) {
                scope_ = outer;
                throw;
            }
        }
        scope_ = outer;
        items = std::move(kept);
    }
    if (items.empty()) {
        flow = exec(s.else_body);
        return;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    // loop.cycle() and loop.changed() are made once per loop; they read the iteration from
    // the loop's shared state. changed(*values): true when values differ from the previous
    // call's (no call yet: true).
    struct LoopState {
        int64_t index0 = 0;
        bool called = false;
        List last;
    };
    auto state = std::make_shared<LoopState>();
    const Value cycle = Value::function("loop.cycle", [state](Evaluator& ev, CallArgs& a) {
        if (a.pos.empty()) ev.error(a.line, "no items for cycling given");
        return a.pos[static_cast<size_t>(state->index0 % static_cast<int64_t>(a.pos.size()))];
    });
    const Value changed = Value::function("loop.changed", [state](Evaluator&, CallArgs& a) {
        if (state->called && equals(Value::make_list(state->last, true), Value::make_list(a.pos, true)))
            return Value::boolean(false);
        state->called = true;
        state->last = a.pos;
        return Value::boolean(true);
    });
    // What changed() keeps may hold the loop object itself (loop.changed(loop)): let go of it
    // when the loop ends, so no reference cycle outlives the loop.
    struct ForgetLast {
        LoopState& st;
        ~ForgetLast() { st.last.clear(); }
    } forget{*state};
    for (int64_t k = 0; k < n; ++k) {
        if (++iterations_ > limits_.max_iterations)
            error(s.line, cat("more than ", limits_.max_iterations,
                              " loop iterations in one render (this runtime's template limit)"));
        state->index0 = k;
        auto iter_scope = std::make_shared<Scope>();
        iter_scope->parent = outer;
        iter_scope->vars.reserve(4);
        Value loop = Value::make_dict();
        auto& d = *loop.dict;
        d.items.reserve(13);
        d.items.emplace_back("index", Value::integer(k + 1));
        d.items.emplace_back("index0", Value::integer(k));
        d.items.emplace_back("revindex", Value::integer(n - k));
        d.items.emplace_back("revindex0", Value::integer(n - k - 1));
        d.items.emplace_back("first", Value::boolean(k == 0));
        d.items.emplace_back("last", Value::boolean(k == n - 1));
        d.items.emplace_back("length", Value::integer(n));
        d.items.emplace_back("depth", Value::integer(1));
        d.items.emplace_back("depth0", Value::integer(0));
        if (k > 0) d.items.emplace_back("previtem", items[k - 1]);
        if (k + 1 < n) d.items.emplace_back("nextitem", items[k + 1]);
        d.items.emplace_back("cycle", cycle);
        d.items.emplace_back("changed", changed);
        iter_scope->vars.emplace_back("loop", std::move(loop));
        scope_ = iter_scope;
        Flow f;
        try {
            assign(s.target, items[k], s.line);
            f = exec(s.bodies[0]);
        } catch (...) {
            scope_ = outer;
            throw;
        }
        scope_ = outer;
        if (f == Flow::Break) break;
    }
}

void Evaluator::assign(const Target& t, const Value& v, int line) {
    if (!t.attr.empty()) {
        const Value* ns = scope_->find(t.names[0]);
        if (!ns || !ns->is_dict() || !ns->dict->is_namespace)
            error(line, "cannot assign attribute on non-namespace object");
        ns->dict->set(t.attr, v);
        return;
    }
    if (!t.tuple) {
        scope_->set(t.names[0], v);
        return;
    }
    const List items = iterate(v, line);
    if (items.size() != t.names.size())
        error(line, cat(items.size() < t.names.size() ? "not enough" : "too many",
                        " values to unpack (expected ", t.names.size(), ", got ", items.size(), ")"));
    for (size_t k = 0; k < items.size(); ++k) scope_->set(t.names[k], items[k]);
}

Value Evaluator::apply_filter_chain(const Expr& chain, Value subject) {
    // The chain is Filter(Filter(null, a), b): apply the innermost first.
    std::vector<const Expr*> filters;
    for (const Expr* f = &chain; f; f = f->kids[0].get()) filters.push_back(f);
    for (auto it = filters.rbegin(); it != filters.rend(); ++it) {
        CallArgs args = eval_args(**it);
        subject = apply_filter(*this, (*it)->name, subject, args);
    }
    return subject;
}

Value Evaluator::make_macro(const Stmt& s) {
    const Stmt* def = &s;
    std::shared_ptr<Scope> closure = scope_;
    return Value::function(s.name, [def, closure](Evaluator& ev, CallArgs& a) {
        if (a.pos.size() > def->params.size())
            ev.error(a.line, cat("macro '", def->name, "' takes not more than ", def->params.size(),
                                 " argument(s)"));
        auto scope = std::make_shared<Scope>();
        scope->parent = closure;
        std::vector<bool> bound(def->params.size(), false);
        for (size_t k = 0; k < a.pos.size(); ++k) {
            scope->set(def->params[k], a.pos[k]);
            bound[k] = true;
        }
        for (const auto& kv : a.kw) {
            size_t k = 0;
            while (k < def->params.size() && def->params[k] != kv.first) ++k;
            if (k == def->params.size())
                ev.error(a.line, cat("macro '", def->name, "' takes no keyword argument '", kv.first, "'"));
            if (bound[k])
                ev.error(a.line, cat("macro '", def->name, "' got multiple values for argument '",
                                     kv.first, "'"));
            scope->set(kv.first, kv.second);
            bound[k] = true;
        }
        if (++ev.call_depth_ > ev.limits_.max_call_depth) {
            --ev.call_depth_;
            ev.error(a.line, cat("macro calls nested deeper than ", ev.limits_.max_call_depth,
                                 " (this runtime's template limit)"));
        }
        auto saved = ev.scope_;
        std::string text;
        try {
            ev.scope_ = scope;
            for (size_t k = 0; k < def->params.size(); ++k) {
                if (bound[k]) continue;
                scope->set(def->params[k], def->defaults[k]
                                               ? ev.eval(*def->defaults[k])
                                               : Value::undefined(cat("parameter '", def->params[k],
                                                                      "' was not provided")));
            }
            ev.scope_ = saved;
            text = ev.capture(def->bodies[0], scope);
        } catch (...) {
            ev.scope_ = saved;
            --ev.call_depth_;
            throw;
        }
        --ev.call_depth_;
        Value r = Value::string(std::move(text));
        r.markup = true;
        return r;
    });
}

Value Evaluator::call(const Value& fn, CallArgs& args, int line) {
    if (fn.is_undefined()) undefined_error(fn, line);
    if (fn.type != Value::Type::Function) error(line, cat("'", fn.type_name(), "' object is not callable"));
    args.line = line;
    return fn.fn->body(*this, args);
}

// ------------------------------------------------------------------ expressions

Value Evaluator::lookup(const std::string& name) const {
    if (const Value* v = scope_->find(name)) return *v;
    Value g = global_function(name);
    if (!g.is_undefined()) return g;
    return Value::undefined("'" + name + "' is undefined");
}

Value Evaluator::get_attr(const Value& obj, const std::string& name, int line) {
    switch (obj.type) {
        case Value::Type::Undefined: undefined_error(obj, line);
        case Value::Type::Dict: {
            if (obj.dict->is_namespace) {
                if (const Value* v = obj.dict->find(name)) return *v;
                break;
            }
            // A method (or a refused mutating one: an Undefined saying so) before a key.
            Value m = method_of(obj, name, line);
            if (!m.is_undefined() || !m.s.empty()) return m;
            if (const Value* v = obj.dict->find(name)) return *v;
            break;
        }
        case Value::Type::String:
        case Value::Type::List: {
            Value m = method_of(obj, name, line);
            if (!m.is_undefined() || !m.s.empty()) return m;
            break;
        }
        default: break;
    }
    return Value::undefined(cat("'", obj.type_name(), " object' has no attribute '", name, "'"));
}

Value Evaluator::get_item(const Value& obj, const Value& key, int line) {
    switch (obj.type) {
        case Value::Type::Undefined: undefined_error(obj, line);
        case Value::Type::Dict:
            if (key.is_string()) {
                if (obj.dict->is_namespace) break;
                if (const Value* v = obj.dict->find(key.s)) return *v;
                // Jinja falls back to the attribute: d['items'] is the method when no such key.
                return get_attr(obj, key.s, line);
            }
            break;
        case Value::Type::List:
            if (key.is_integral()) {
                int64_t k = key.as_int();
                const int64_t n = static_cast<int64_t>(obj.list->size());
                if (k < 0) k += n;
                if (k >= 0 && k < n) return (*obj.list)[static_cast<size_t>(k)];
            } else if (key.is_string()) {
                return get_attr(obj, key.s, line);
            }
            break;
        case Value::Type::String:
            if (key.is_integral()) {
                const auto chars = utf8_chars(obj.s);
                int64_t k = key.as_int();
                const int64_t n = static_cast<int64_t>(chars.size());
                if (k < 0) k += n;
                if (k >= 0 && k < n) return Value::string(chars[static_cast<size_t>(k)]);
            } else if (key.is_string()) {
                return get_attr(obj, key.s, line);
            }
            break;
        default: break;
    }
    return Value::undefined(cat("'", obj.type_name(), " object' has no attribute '", to_str(key), "'"));
}

List Evaluator::iterate(const Value& v, int line) const {
    switch (v.type) {
        case Value::Type::Undefined: return {};
        case Value::Type::List:
            charge(v.list->size() * sizeof(Value), line);
            return *v.list;
        case Value::Type::Dict: {
            if (v.dict->is_namespace) break;
            List keys;
            keys.reserve(v.dict->items.size());
            for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
            return keys;
        }
        case Value::Type::String: {
            List chars;
            for (auto& c : utf8_chars(v.s)) chars.push_back(Value::string(std::move(c)));
            return chars;
        }
        default: break;
    }
    error(line, cat("'", v.type_name(), "' object is not iterable"));
}

bool Evaluator::contains(const Value& container, const Value& item, int line) const {
    switch (container.type) {
        case Value::Type::Undefined: return false;
        case Value::Type::String:
            if (!item.is_string())
                error(line, cat("'in <string>' requires string as left operand, not ", item.type_name()));
            return container.s.find(item.s) != std::string::npos;
        case Value::Type::List:
            for (const auto& e : *container.list)
                if (equals(e, item)) return true;
            return false;
        case Value::Type::Dict:
            if (container.dict->is_namespace) break;
            return item.is_string() && container.dict->find(item.s) != nullptr;
        default: break;
    }
    error(line, cat("argument of type '", container.type_name(), "' is not iterable"));
}

namespace {

bool add_overflow(int64_t a, int64_t b, int64_t& r) { return __builtin_add_overflow(a, b, &r); }
bool sub_overflow(int64_t a, int64_t b, int64_t& r) { return __builtin_sub_overflow(a, b, &r); }
bool mul_overflow(int64_t a, int64_t b, int64_t& r) { return __builtin_mul_overflow(a, b, &r); }

}  // namespace

void Evaluator::unsupported_operands(const std::string& op, const Value& a, const Value& b,
                                     int line) const {
    error(line, cat("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '",
                    b.type_name(), "'"));
}

void Evaluator::integer_overflow(const std::string& op, int line) const {
    error(line, cat("integer overflow in '", op, "' (this runtime's integers are 64-bit)"));
}

Value Evaluator::binary(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "~") {
        std::string s = to_str(a);
        const std::string t = to_str(b);
        check_size(s.size() + t.size(), line);
        return Value::string(s + t);
    }
    if (a.is_undefined()) undefined_error(a, line);
    if (b.is_undefined()) undefined_error(b, line);
    const bool ints = a.is_integral() && b.is_integral();
    const bool nums = a.is_number() && b.is_number();
    if (op == "+") return plus(a, b, ints, nums, line);
    if (op == "-") {
        if (ints) { int64_t r; if (sub_overflow(a.as_int(), b.as_int(), r)) integer_overflow(op, line); return Value::integer(r); }
        if (nums) return Value::real(a.as_double() - b.as_double());
        unsupported_operands(op, a, b, line);
    }
    if (op == "*") return times(a, b, ints, nums, line);
    if (!nums) {
        if (op == "%" && a.is_string()) {
            Value r = Value::string(percent_format(*this, a.s, b, line));
            return r;
        }
        unsupported_operands(op, a, b, line);
    }
    if (op == "/") {
        if (b.as_double() == 0) error(line, "division by zero");
        return Value::real(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") return ints ? int_divmod(op, a.as_int(), b.as_int(), line)
                                             : float_divmod(op, a.as_double(), b.as_double(), line);
    if (op == "**") {
        if (ints && b.as_int() >= 0) {
            int64_t r = 1, base = a.as_int();
            for (int64_t e = b.as_int(); e > 0; --e) {
                if (mul_overflow(r, base, r)) integer_overflow(op, line);
                if (r == 0 || r == 1) break;
            }
            return Value::integer(r);
        }
        return Value::real(std::pow(a.as_double(), b.as_double()));
    }
    unsupported_operands(op, a, b, line);
}

// a + b: numbers, or two strings / two lists (or two tuples) joined.
Value Evaluator::plus(const Value& a, const Value& b, bool ints, bool nums, int line) {
    if (ints) { int64_t r; if (add_overflow(a.as_int(), b.as_int(), r)) integer_overflow("+", line); return Value::integer(r); }
    if (nums) return Value::real(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
        check_size(a.s.size() + b.s.size(), line);
        Value r = Value::string(a.s + b.s);
        r.markup = a.markup;
        return r;
    }
    if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
        check_items(a.list->size() + b.list->size(), line);
        charge(approx_bytes(a) + approx_bytes(b), line);
        List items = *a.list;
        items.insert(items.end(), b.list->begin(), b.list->end());
        return Value::make_list(std::move(items), a.tuple);
    }
    if (a.is_string())
        error(line, cat("can only concatenate str (not \"", b.type_name(), "\") to str"));
    if (a.is_list())
        error(line, cat("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name()));
    unsupported_operands("+", a, b, line);
}

// a * b: numbers, or a string / list repeated (either side the count).
Value Evaluator::times(const Value& a, const Value& b, bool ints, bool nums, int line) {
    if (ints) { int64_t r; if (mul_overflow(a.as_int(), b.as_int(), r)) integer_overflow("*", line); return Value::integer(r); }
    if (nums) return Value::real(a.as_double() * b.as_double());
    const Value* seq = (a.is_string() || a.is_list()) && b.is_integral() ? &a
                     : (b.is_string() || b.is_list()) && a.is_integral() ? &b : nullptr;
    if (!seq) unsupported_operands("*", a, b, line);
    const int64_t n = std::max<int64_t>(0, (seq == &a ? b : a).as_int());
    if (seq->is_string()) {
        if (n > 0 && seq->s.size() > limits_.max_output / static_cast<uint64_t>(n))
            check_size(limits_.max_output + 1, line);
        std::string r;
        r.reserve(seq->s.size() * static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) r += seq->s;
        check_size(r.size(), line);
        return Value::string(std::move(r));
    }
    if (n > 0 && seq->list->size() > limits_.max_items / static_cast<uint64_t>(n))
        check_items(limits_.max_items + 1, line);
    const uint64_t per_copy = approx_bytes(*seq);
    if (n > 0 && per_copy > limits_.max_work / static_cast<uint64_t>(n))
        charge(limits_.max_work + 1, line);
    charge(per_copy * static_cast<uint64_t>(n), line);
    List items;
    for (int64_t k = 0; k < n; ++k) items.insert(items.end(), seq->list->begin(), seq->list->end());
    return Value::make_list(std::move(items), seq->tuple);
}

// Python's integer x // y and x % y (rounding toward negative infinity).
Value Evaluator::int_divmod(const std::string& op, int64_t x, int64_t y, int line) const {
    if (y == 0) error(line, "integer division or modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1) integer_overflow(op, line);
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) { --q; r += y; }
    return Value::integer(op == "//" ? q : r);
}

// Python's float divmod.
Value Evaluator::float_divmod(const std::string& op, double x, double y, int line) const {
    if (y == 0) error(line, "float division by zero");
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) {
        mod += y;
        div -= 1.0;
    }
    if (op == "%") return Value::real(mod);
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value::real(floordiv);
}

CallArgs Evaluator::eval_args(const Expr& e) {
    CallArgs a;
    a.line = e.line;
    a.pos.reserve(e.args.size());
    for (const auto& x : e.args) a.pos.push_back(eval(*x));
    for (size_t k = 0; k < e.kw_args.size(); ++k) a.kw.emplace_back(e.kw_names[k], eval(*e.kw_args[k]));
    return a;
}

namespace {

// Python slice indices for a sequence of n items.
std::vector<size_t> slice_indices(int64_t n, const Value* start, const Value* stop, const Value* step) {
    const int64_t st = step ? step->as_int() : 1;
    int64_t lo, hi;
    auto norm = [&](const Value* v, int64_t dflt, int64_t lo_clamp, int64_t hi_clamp) {
        if (!v) return dflt;
        int64_t x = v->as_int();
        if (x < 0) x += n;
        return std::min(std::max(x, lo_clamp), hi_clamp);
    };
    std::vector<size_t> idx;
    if (st > 0) {
        lo = norm(start, 0, 0, n);
        hi = norm(stop, n, 0, n);
        for (int64_t k = lo; k < hi; k += st) idx.push_back(static_cast<size_t>(k));
    } else {
        lo = norm(start, n - 1, -1, n - 1);
        hi = norm(stop, -1, -1, n - 1);
        if (stop && stop->as_int() < 0 && stop->as_int() + n < 0) hi = -1;
        for (int64_t k = lo; k > hi; k += st) idx.push_back(static_cast<size_t>(k));
    }
    return idx;
}

// What Jinja's compiler folds at compile time (nodes' as_const): constants and what is built
// from them, filters included but for the ones that take the context (map, select, ...).
bool is_constant(const Expr& e) {
    switch (e.kind) {
        case Expr::Kind::Name:
        case Expr::Kind::Call: return false;
        case Expr::Kind::Filter:
            if (e.name == "map" || e.name == "select" || e.name == "reject" || e.name == "selectattr" ||
                e.name == "rejectattr")
                return false;
            break;
        default: break;
    }
    for (const auto& k : e.kids)
        if (k && !is_constant(*k)) return false;
    for (const auto& k : e.args)
        if (!is_constant(*k)) return false;
    for (const auto& k : e.kw_args)
        if (!is_constant(*k)) return false;
    return true;
}

}  // namespace

Value Evaluator::eval(const Expr& e) {
    DepthGuard guard(*this, e.line);
    switch (e.kind) {
        case Expr::Kind::Const: return e.value;
        case Expr::Kind::Name: return lookup(e.name);
        case Expr::Kind::Attr: return get_attr(eval(*e.kids[0]), e.name, e.line);
        case Expr::Kind::Item: {
            const Value obj = eval(*e.kids[0]);
            return get_item(obj, eval(*e.kids[1]), e.line);
        }
        case Expr::Kind::Slice: return eval_slice(e);
        case Expr::Kind::Call: {
            const Value fn = eval(*e.kids[0]);
            CallArgs args = eval_args(e);
            return call(fn, args, e.line);
        }
        case Expr::Kind::Filter: {
            Value subject = eval(*e.kids[0]);
            CallArgs args = eval_args(e);
            return apply_filter(*this, e.name, subject, args);
        }
        case Expr::Kind::Test: {
            const Value subject = eval(*e.kids[0]);
            CallArgs args = eval_args(e);
            return Value::boolean(apply_test(*this, e.name, subject, args) != e.negate);
        }
        case Expr::Kind::Neg:
        case Expr::Kind::Pos: return eval_sign(e);
        case Expr::Kind::Not: return Value::boolean(!eval(*e.kids[0]).truthy());
        case Expr::Kind::Binary: {
            const Value a = eval(*e.kids[0]);
            return binary(e.name, a, eval(*e.kids[1]), e.line);
        }
        case Expr::Kind::And: {
            Value a = eval(*e.kids[0]);
            return a.truthy() ? eval(*e.kids[1]) : a;
        }
        case Expr::Kind::Or: {
            Value a = eval(*e.kids[0]);
            return a.truthy() ? a : eval(*e.kids[1]);
        }
        case Expr::Kind::Compare: return eval_compare(e);
        case Expr::Kind::CondExpr:
            if (eval(*e.kids[0]).truthy()) return eval(*e.kids[1]);
            if (e.kids[2]) return eval(*e.kids[2]);
            return Value::undefined(cat("the inline if-expression on line ", e.line,
                                        " evaluated to false and no else section was defined."));
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            List items;
            items.reserve(e.kids.size());
            for (const auto& k : e.kids) items.push_back(eval(*k));
            return Value::make_list(std::move(items), e.kind == Expr::Kind::Tuple);
        }
        case Expr::Kind::Dict: return eval_dict(e);
    }
    return Value::undefined();
}

// obj[start:stop:step] on a list or a string (by characters).
Value Evaluator::eval_slice(const Expr& e) {
    const Value obj = eval(*e.kids[0]);
    if (obj.is_undefined()) undefined_error(obj, e.line);
    Value bounds[3];
    const Value* ptr[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < 3; ++k) {
        if (!e.kids[k + 1]) continue;
        bounds[k] = eval(*e.kids[k + 1]);
        if (bounds[k].is_none()) continue;
        if (!bounds[k].is_integral())
            error(e.line, "slice indices must be integers or None");
        ptr[k] = &bounds[k];
    }
    if (ptr[2] && ptr[2]->as_int() == 0) error(e.line, "slice step cannot be zero");
    if (obj.is_list()) {
        List items;
        for (size_t k : slice_indices(static_cast<int64_t>(obj.list->size()), ptr[0], ptr[1], ptr[2]))
            items.push_back((*obj.list)[k]);
        return Value::make_list(std::move(items), obj.tuple);
    }
    if (obj.is_string()) {
        const auto chars = utf8_chars(obj.s);
        std::string s;
        for (size_t k : slice_indices(static_cast<int64_t>(chars.size()), ptr[0], ptr[1], ptr[2]))
            s += chars[k];
        return Value::string(std::move(s));
    }
    // Jinja slices with Python's own obj[a:b], so anything else raises — except where
    // its compiler folds a constant subject through environment.getitem: Undefined.
    if (is_constant(*e.kids[0])) return Value::undefined("'" + std::string(obj.type_name()) +
                                                         " object' is not subscriptable");
    if (obj.is_dict() && !obj.dict->is_namespace) error(e.line, "unhashable type: 'slice'");
    error(e.line, cat("'", obj.type_name(), "' object is not subscriptable"));
}

// -x and +x on a number (+True is 1).
Value Evaluator::eval_sign(const Expr& e) {
    const Value v = eval(*e.kids[0]);
    if (v.is_undefined()) undefined_error(v, e.line);
    if (!v.is_number())
        error(e.line, cat("bad operand type for unary ", e.kind == Expr::Kind::Neg ? "-" : "+",
                          ": '", v.type_name(), "'"));
    if (e.kind == Expr::Kind::Pos) return v.type == Value::Type::Bool ? Value::integer(v.as_int()) : v;
    if (v.type == Value::Type::Float) return Value::real(-v.f);
    if (v.as_int() == std::numeric_limits<int64_t>::min()) error(e.line, "integer overflow");
    return Value::integer(-v.as_int());
}

// a < b <= c ...: Python's chained comparison, each operand evaluated once, stopping at the
// first false link.
Value Evaluator::eval_compare(const Expr& e) {
    Value left = eval(*e.kids[0]);
    for (size_t k = 0; k < e.ops.size(); ++k) {
        Value right = eval(*e.kids[k + 1]);
        const std::string& op = e.ops[k];
        bool ok;
        if (op == "==") ok = equals(left, right);
        else if (op == "!=") ok = !equals(left, right);
        else if (op == "in") ok = contains(right, left, e.line);
        else if (op == "not in") ok = !contains(right, left, e.line);
        else {
            if (left.is_undefined()) undefined_error(left, e.line);
            if (right.is_undefined()) undefined_error(right, e.line);
            const int c = compare(left, right, e.line);
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        if (!ok) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

// {key: value, ...} with string keys.
Value Evaluator::eval_dict(const Expr& e) {
    Value d = Value::make_dict();
    for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = eval(*e.kids[k]);
        if (!key.is_string())
            error(e.line, "dict literals with non-string keys are not supported by this "
                          "runtime's template engine");
        d.dict->set(std::move(key.s), eval(*e.kids[k + 1]));
    }
    return d;
}

}  // namespace trt::chat
