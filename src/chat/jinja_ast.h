// jinja_ast: the parsed template. Expressions and statements are plain tagged structs the
// evaluator (jinja_render) walks; every node keeps its line for error messages.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace trt::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Const,      // value
        Name,       // name
        Attr,       // kids[0] . name
        Item,       // kids[0] [ kids[1] ]
        Slice,      // kids[0] [ kids[1] : kids[2] : kids[3] ]  (null kids: omitted)
        Call,       // kids[0] ( args )
        Filter,     // kids[0] | name ( args )   (kids[0] null: a filter block's filter)
        Test,       // kids[0] is [not] name ( args )   (negate)
        Neg, Pos, Not,
        Binary,     // kids[0] op kids[1]: + - * / // % ** ~
        And, Or,
        Compare,    // kids[0] ops[k] kids[k+1] ...
        CondExpr,   // kids[1] if kids[0] else kids[2] (kids[2] null: Undefined)
        List, Tuple, Dict  // Dict: kids alternate key, value
    };
    Kind kind;
    int line = 0;
    Value value;               // Const
    std::string name;          // Name, Attr, Filter, Test; Binary: the operator
    std::vector<ExprPtr> kids;
    std::vector<std::string> ops;  // Compare
    bool negate = false;           // Test
    // Call/Filter/Test arguments: positional, then keyword (kw_names[k] for kw_args[k]).
    std::vector<ExprPtr> args;
    std::vector<std::string> kw_names;
    std::vector<ExprPtr> kw_args;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// An assignment target: names (a tuple when several), or namespace attribute `ns.attr`.
struct Target {
    std::vector<std::string> names;
    bool tuple = false;
    std::string attr;  // non-empty: names[0].attr
};

struct Stmt {
    enum class Kind {
        Text,        // text
        Print,       // {{ expr }}
        If,          // conds[k] -> bodies[k]; else_body
        For,         // for target in expr [if cond]: bodies[0]; else_body
        Set,         // set target = expr
        SetBlock,    // set target %} bodies[0] {% endset (filter: optional)
        Macro,       // macro name(params = defaults) bodies[0]
        FilterBlock, // filter: bodies[0]
        Generation,  // {% generation %} bodies[0]
        Break, Continue
    };
    Kind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr cond;           // For: the inline `if`
    ExprPtr filter;         // SetBlock, FilterBlock: a Filter chain whose innermost kids[0] is null
    std::vector<ExprPtr> conds;
    std::vector<Body> bodies;
    Body else_body;
    Target target;
    std::string name;                    // Macro
    std::vector<std::string> params;     // Macro
    std::vector<ExprPtr> defaults;       // Macro: one per param (null: required)
};

}  // namespace trt::chat
