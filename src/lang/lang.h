// Public interface of the front end: source text -> AST.
#pragma once

#include <optional>
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/source.h"

namespace bpfscope::lang {

// Parses a whole script. Syntax errors go to diags (the parser recovers at ';'
// and '}' and may report several); the result is nullopt when any error was
// reported. Never crashes, hangs or overflows the stack, whatever the input:
// nesting deeper than kMaxNesting is an ordinary error.
std::optional<Program> parse(Source source, Diagnostics& diags);

inline constexpr int kMaxNesting = 200;
// No expression tree is taller than this: long operator chains (a + b + c ...)
// and postfix chains count too, so later passes may recurse over expressions.
// Statements nest at most kMaxNesting deep (an else-if counts as one level).
inline constexpr int kMaxExprDepth = 1000;

// Expands the macro calls in the probes (macros.cpp); parse() runs it.
// Errors (unknown parameter kinds, recursion, unhygienic map access) go to
// diags; returns false when any was reported.
bool expand_macros(Program& program, Diagnostics& diags);

// Prints the AST as an indented tree (for -d ast).
std::string dump(const Program& program);

}  // namespace bpfscope::lang
