// Macro expansion: argument kinds, hygiene (renamed body variables, no
// access to maps that are not parameters), substitution of expression
// parameters, nested macros, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

// The dump of the expanded probes, or "ERRORS" and each located message.
std::string expand(const std::string& text, const BuiltinTakes& builtin = {}) {
  Source src("stdin", text);
  Diagnostics diags;
  auto program = parse(src, diags, builtin);
  if (!program) {
    std::string out = "ERRORS";
    for (const auto& d : diags.all()) {
      LineCol a = src.line_col(d.loc.begin), b = src.line_col(d.loc.end);
      out += "\n" + std::to_string(a.line) + ":" + std::to_string(a.col) + "-" + std::to_string(b.col) + ": " +
             d.message;
    }
    return out;
  }
  return dump(*program);
}

TEST(Macros, VariableAndMapParametersAlias) {
  EXPECT_EQ(expand("macro inc($x, @m) { $x += 1; @m[$x] = 1; $x } BEGIN { $a = 1; $b = inc($a, @c); }"),
            "probe BEGIN\n"
            " assign =\n  variable $a\n  int 1\n"
            " assign =\n  variable $b\n"
            "  block expression\n"
            "   assign +=\n    variable $a\n    int 1\n"
            "   assign =\n    map @c\n     variable $a\n    int 1\n"
            "   variable $a\n");
}

TEST(Macros, ExpressionParametersAreCopiedAtEachUse) {
  EXPECT_EQ(expand("macro twice(e) { e + e } BEGIN { print(twice(pid)); }"),
            "probe BEGIN\n call print\n  binop +\n   identifier pid\n   identifier pid\n");
}

TEST(Macros, BodyVariablesArePrivate) {
  // $t in the macro is not the caller's $t; two expansions get two names.
  EXPECT_EQ(expand("macro f(a) { let $t = a; $t } BEGIN { $t = 1; print((f($t), f(2))); }"),
            "probe BEGIN\n assign =\n  variable $t\n  int 1\n call print\n  tuple\n"
            "   block expression\n    let $$f:0:t\n     variable $t\n    variable $$f:0:t\n"
            "   block expression\n    let $$f:1:t\n     int 2\n    variable $$f:1:t\n");
}

TEST(Macros, NestedMacrosZeroArgumentsAndStatements) {
  EXPECT_EQ(expand("macro one { 1 } macro add_one(e) { e + one } macro two() { add_one(one()) } "
                   "macro bump(@m) { @m++; } BEGIN { @x = two; bump(@x); }"),
            "probe BEGIN\n assign =\n  map @x\n  binop +\n   int 1\n   int 1\n"
            " block expression\n  incdec post++\n   map @x\n");
}

TEST(Macros, OverloadsByParameterKind) {
  EXPECT_EQ(expand("macro k($v) { 1 } macro k(@m) { 2 } macro k(e) { 3 } BEGIN { print((k($a), k(@b), k(4))); }"),
            "probe BEGIN\n call print\n  tuple\n   int 1\n   int 2\n   int 3\n");
}

// A macro without statements is its value: a string literal stays a
// literal (printf's format).
TEST(Macros, ValueWithoutStatementsTakesTheCallsPlace) {
  EXPECT_EQ(expand("macro fmt() { \"%d\\n\" } BEGIN { printf(fmt(), 1); }"),
            "probe BEGIN\n call printf\n  string \"%d\\n\"\n  int 1\n");
}

// A call that no macro of its name takes is a builtin's when a builtin of
// that name takes it (macro cpu(x) leaves cpu() and cpu alone).
TEST(Macros, OtherSignaturesOfABuiltinsNameStayBuiltins) {
  const auto builtin = [](std::string_view name, size_t args) { return name == "cpu" && args == 0; };
  EXPECT_EQ(expand("macro cpu(x) { x } BEGIN { print((cpu(\"hi\"), cpu(), cpu)); }", builtin),
            "probe BEGIN\n call print\n  tuple\n   string \"hi\"\n   call cpu\n   identifier cpu\n");
  EXPECT_EQ(expand("macro cpu(x) { x } BEGIN { print(cpu(1, 2)); }", builtin),
            "ERRORS\n1:34-43: Macro 'cpu' takes 1 argument (2 provided)");
}

TEST(Macros, TypeArguments) {
  // typeof(T) stands for T wherever the body names the parameter as a type;
  // an expression argument gives the type of that expression.
  EXPECT_EQ(expand("macro cst(a) { (a*)-1 } macro sz(a, b) { sizeof(a[2]) + sizeof(b) } "
                   "macro decl(x) { let $y: typeof(x); $y } macro inner(t) { sizeof(t) } "
                   "macro outer(z) { inner(typeof(z)) } BEGIN { print((cst(typeof(uint8)), "
                   "sz(typeof(uint64*), typeof(struct Foo)), decl(1), outer(typeof(int8 *)))); }"),
            // A macro of a value alone expands to the value; one with
            // statements to a block expression.
            "probe BEGIN\n call print\n  tuple\n"
            "   cast uint8 *\n    unop -\n     int 1\n"
            "   binop +\n    sizeof uint64 *[2]\n    sizeof struct Foo\n"
            "   block expression\n    let $$decl:2:y: typeof(...)\n     int 1\n    variable $$decl:2:y\n"
            "   sizeof int8 *\n");
}

TEST(Macros, Errors) {
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"macro f() { @x++ } BEGIN { f(); }",
       "ERRORS\n1:13-15: Unhygienic access to map: @x. Maps must be passed into the macro as arguments."},
      {"macro f($x) { $x } BEGIN { f(@x); }",
       "ERRORS\n1:28-33: Macro 'f' expects a scratch variable for parameter $x, not a map"},
      {"macro f(@m) { @m } BEGIN { f(1 + 1); }",
       "ERRORS\n1:28-36: Macro 'f' expects a map for parameter @m, not an expression"},
      {"macro f(a, b) { a } BEGIN { f(1); }", "ERRORS\n1:29-33: Macro 'f' takes 2 arguments (1 provided)"},
      {"macro f(a) { g(a) } macro g(b) { f(b) } BEGIN { f(1); }",
       "ERRORS\n1:34-38: Recursive macro call detected. Call chain: f > g > f"},
      {"macro f() { f() } BEGIN { f(); }", "ERRORS\n1:13-16: Recursive macro call detected. Call chain: f > f"},
      {"macro f($x) { $x += 1; } BEGIN { $a = 1; $b = f($a); }",
       "ERRORS\n1:47-52: Macro 'f' expanded to a block instead of a block expression. Try removing the semicolon "
       "from the end of the last statement in the macro body."},
      {"macro f($x) { let $x = 2; $x } BEGIN { f($a); }", "ERRORS\n1:19-21: Variable declaration shadows macro arg $x"},
      {"macro f(a) { a } macro f(b) { b } BEGIN { }", "ERRORS\n1:24-25: Redefinition of existing macro 'f'"},
      {"macro f(a, a) { a } BEGIN { }", "ERRORS\n1:12-13: duplicate macro parameter a"},
      {"macro k($v) { 1 } macro k(@m) { 2 } BEGIN { k(3); }", "ERRORS\n1:45-49: No macro 'k' takes these arguments"},
      {"macro f(e) { e + e } BEGIN { $x = f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(f(1))))))))))))))))))))); }",
       "ERRORS\n1:75-79: macro expansion is too large"},
  };
  for (const auto& c : cases) EXPECT_EQ(expand(c.text), c.want) << c.text;
}

}  // namespace
}  // namespace bpfscope::lang
