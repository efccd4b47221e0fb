#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

// The dump of a program, or its rendered errors.
std::string parse_dump(const std::string& text) {
  Source src("stdin", text);
  Diagnostics diags;
  auto program = parse(src, diags);
  if (!program) return "ERRORS\n" + diags.render(src);
  EXPECT_FALSE(diags.has_errors());
  return dump(*program);
}

std::string parse_errors(const std::string& text) {
  Source src("stdin", text);
  Diagnostics diags;
  auto program = parse(src, diags);
  EXPECT_FALSE(program.has_value()) << text;
  return diags.render(src);
}

struct DumpCase {
  std::string input;
  std::string dump;
};

void check(const std::vector<DumpCase>& cases) {
  for (const auto& c : cases) EXPECT_EQ(parse_dump(c.input), c.dump) << c.input;
}

TEST(Parser, Probes) {
  check({
      {"BEGIN { }", "probe BEGIN\n"},
      {"BEGIN{}END{}i:s:1{exit()}", "probe BEGIN\nprobe END\nprobe i:s:1\n call exit\n"},
      {"BEGIN,\n  // comment\n  end { }", "probe BEGIN, end\n"},
      {"tracepoint:syscalls:sys_enter_* /pid/{ }", "probe tracepoint:syscalls:sys_enter_*\n predicate\n  identifier pid\n"},
      {"kprobe:f/pid/{}", "probe kprobe:f\n predicate\n  identifier pid\n"},
      {"uprobe:/bin/bash:readline/arg0 > 1/{}",
       "probe uprobe:/bin/bash:readline\n predicate\n  binop >\n   identifier arg0\n   int 1\n"},
      {"uprobe:lib:\"ns::f\" { }", "probe uprobe:lib:\"ns::f\"\n"},
      {"usdt:/usr/bin/python3:python:function__entry { }", "probe usdt:/usr/bin/python3:python:function__entry\n"},
      {"kprobe:f+10, hardware:cache-misses:1000, interval:s:1, i:1s { }",
       "probe kprobe:f+10, hardware:cache-misses:1000, interval:s:1, i:1s\n"},
      {"BEGIN // x\n/* y */ { }", "probe BEGIN\n"},
      // The predicate ends at the '/' followed by '{'; the others divide.
      {"k:f / $1 / 2 / { }", "probe k:f\n predicate\n  binop /\n   positional $1\n   int 2\n"},
      {"k:f /pid == 1234 && comm != \"bash\"/ { @[comm] = count(); }",
       R"(probe k:f
 predicate
  binop &&
   binop ==
    identifier pid
    int 1234
   binop !=
    identifier comm
    string "bash"
 assign =
  map @
   identifier comm
  call count
)"},
  });
}

TEST(Parser, Prefix) {
  check({
      {R"(#!/usr/bin/env bpftrace
#include <linux/sched.h>
  #include "foo.h"
#define MAX 10 // comment
#define NAME "x" /* c */
#define LONG (1 + \
  2)
#define SQ(x) ((x)*(x))
#ifdef FOO
#endif
struct Foo { int a; struct { int b; } c; }
enum E { A, B };
union U { int a; char b; };
config = { max_strlen = 100; stack_mode=perf }
BEGIN { }
)",
       R"(include linux/sched.h
include foo.h
define MAX 10
define NAME "x"
define LONG (1 +    2)
c_definition
 struct Foo { int a; struct { int b; } c; }
c_definition
 enum E { A, B };
c_definition
 union U { int a; char b; };
config
 max_strlen = 100
 stack_mode = perf
probe BEGIN
)"},
      {"config = { BPFTRACE_MAX_STRLEN = \"1k\"; }; BEGIN { }", "config\n BPFTRACE_MAX_STRLEN = \"1k\"\nprobe BEGIN\n"},
      {"struct X {\n  int a;\n};\nBEGIN { }", "c_definition\n struct X {\n   int a;\n };\nprobe BEGIN\n"},
      {"let @a = lruhash(10);\nBEGIN { } let @b = percpuhash(0x10);",
       "map_decl @a = lruhash(10)\nmap_decl @b = percpuhash(16)\nprobe BEGIN\n"},
  });
}

TEST(Parser, Statements) {
  check({
      {"BEGIN { $x = 1; @m = 2; @m[1, \"a\"] = 3; @ = 4; _ = f(); }",
       R"(probe BEGIN
 assign =
  variable $x
  int 1
 assign =
  map @m
  int 2
 assign =
  map @m
   int 1
   string "a"
  int 3
 assign =
  map @
  int 4
 call f
)"},
      {"BEGIN { $x += 1; $x -= 1; $x *= 2; $x /= 2; $x %= 2; $x &= 1; $x |= 1; $x ^= 1; $x <<= 1; @m[1] >>= 1 }",
       R"(probe BEGIN
 assign +=
  variable $x
  int 1
 assign -=
  variable $x
  int 1
 assign *=
  variable $x
  int 2
 assign /=
  variable $x
  int 2
 assign %=
  variable $x
  int 2
 assign &=
  variable $x
  int 1
 assign |=
  variable $x
  int 1
 assign ^=
  variable $x
  int 1
 assign <<=
  variable $x
  int 1
 assign >>=
  map @m
   int 1
  int 1
)"},
      {"BEGIN { $x++; $x--; ++@m; --@m[1]; @c++ }",
       R"(probe BEGIN
 incdec post++
  variable $x
 incdec post--
  variable $x
 incdec pre++
  map @m
 incdec pre--
  map @m
   int 1
 incdec post++
  map @c
)"},
      {"BEGIN { let $a; let $b = 1; let $c: uint64 = 2; let $d: struct sock *; let $e: uint8[4] }",
       R"(probe BEGIN
 let $a
 let $b
  int 1
 let $c: uint64
  int 2
 let $d: struct sock *
 let $e: uint8[4]
)"},
      {"BEGIN { if ($x) { a(); } else if ($y) { b(); } else { c(); } if (1) { } }",
       R"(probe BEGIN
 if
  variable $x
  then
   call a
  else
   if
    variable $y
    then
     call b
    else
     call c
 if
  int 1
  then
)"},
      {"BEGIN { for ($kv : @m) { print($kv); } for ($i : 0..$n) { continue; } while ($i < 5) { break; } unroll (3) { @c--; } }",
       R"(probe BEGIN
 for $kv
  map @m
  body
   call print
    variable $kv
 for $i
  range
   int 0
   variable $n
  body
   continue
 while
  binop <
   variable $i
   int 5
  body
   break
 unroll
  int 3
  body
   incdec post--
    map @c
)"},
      {"BEGIN { { $x = 1; { $y = 2 } } ; ; return; } END { return }",
       R"(probe BEGIN
 block
  assign =
   variable $x
   int 1
  block
   assign =
    variable $y
    int 2
 return
probe END
 return
)"},
      {"BEGIN { @x = 1\n}", "probe BEGIN\n assign =\n  map @x\n  int 1\n"},
  });
}

TEST(Parser, Expressions) {
  check({
      {"BEGIN { $x = 1 << 2 < 3 == 4 & 5 ^ 6 | 7 && 8 || 9 }",
       R"(probe BEGIN
 assign =
  variable $x
  binop ||
   binop &&
    binop |
     binop ^
      binop &
       binop ==
        binop <
         binop <<
          int 1
          int 2
         int 3
        int 4
       int 5
      int 6
     int 7
    int 8
   int 9
)"},
      {"BEGIN { $x = 1 - 2 - 3 + 4 * 5 % 6 / 7 >> 1 }",
       R"(probe BEGIN
 assign =
  variable $x
  binop >>
   binop +
    binop -
     binop -
      int 1
      int 2
     int 3
    binop /
     binop %
      binop *
       int 4
       int 5
      int 6
     int 7
   int 1
)"},
      {"BEGIN { $x = -1 + ~2 * !3; $p = *$q; $r = &@m; $s = - -$x }",
       R"(probe BEGIN
 assign =
  variable $x
  binop +
   unop -
    int 1
   binop *
    unop ~
     int 2
    unop !
     int 3
 assign =
  variable $p
  unop *
   variable $q
 assign =
  variable $r
  unop &
   map @m
 assign =
  variable $s
  unop -
   unop -
    variable $x
)"},
      {"BEGIN { $x = a ? b : c ? d : e; $y = a ?: b; }",
       R"(probe BEGIN
 assign =
  variable $x
  ternary
   identifier a
   identifier b
   ternary
    identifier c
    identifier d
    identifier e
 assign =
  variable $y
  ternary ?:
   identifier a
   identifier b
)"},
      {"BEGIN { $a = (uint8)$x; $b = (struct sock *)arg0; $c = (pid)*tid; $d = (int32*)$p; $e = (myt)*$a; }",
       R"(probe BEGIN
 assign =
  variable $a
  cast uint8
   variable $x
 assign =
  variable $b
  cast struct sock *
   identifier arg0
 assign =
  variable $c
  binop *
   identifier pid
   identifier tid
 assign =
  variable $d
  cast int32 *
   variable $p
 assign =
  variable $e
  cast myt
   unop *
    variable $a
)"},
      {"BEGIN { $a = (uint8[4])$p; $b = (union u **)$p; $c = (AF_INET) + 1; $d = (uint8); $e = (uint8)$x.f }",
       R"(probe BEGIN
 assign =
  variable $a
  cast uint8[4]
   variable $p
 assign =
  variable $b
  cast union u **
   variable $p
 assign =
  variable $c
  binop +
   identifier AF_INET
   int 1
 assign =
  variable $d
  identifier uint8
 assign =
  variable $e
  cast uint8
   field .f
    variable $x
)"},
      {"BEGIN { $t = (1, \"a\"); $u = (2,); $v = ((1, 2), 3); print($t.0); $w = (1 + 2) * 3 }",
       R"(probe BEGIN
 assign =
  variable $t
  tuple
   int 1
   string "a"
 assign =
  variable $u
  tuple
   int 2
 assign =
  variable $v
  tuple
   tuple
    int 1
    int 2
   int 3
 call print
  field .0
   variable $t
 assign =
  variable $w
  binop *
   binop +
    int 1
    int 2
   int 3
)"},
      {"BEGIN { $r = (a=1, pid=(x=2), c=\"s\",); $e = (b = 3) == $r; }",
       R"(probe BEGIN
 assign =
  variable $r
  record a pid c
   int 1
   record x
    int 2
   string "s"
 assign =
  variable $e
  binop ==
   record b
    int 3
   variable $r
)"},
      {"BEGIN { $z = $a[1].b->c; $y = args.filename; $w = args->x; $v = @m[1][2]; $u = -$x++ }",
       R"(probe BEGIN
 assign =
  variable $z
  field ->c
   field .b
    index
     variable $a
     int 1
 assign =
  variable $y
  field .filename
   identifier args
 assign =
  variable $w
  field ->x
   identifier args
 assign =
  variable $v
  index
   map @m
    int 1
   int 2
 assign =
  variable $u
  unop -
   incdec post++
    variable $x
)"},
      {"BEGIN { printf(\"%d %s\\n\", pid(), comm); kstack(perf, 3); exit() }",
       R"(probe BEGIN
 call printf
  string "%d %s\n"
  call pid
  identifier comm
 call kstack
  identifier perf
  int 3
 call exit
)"},
      {"BEGIN { $a = sizeof(struct task_struct); $b = sizeof($x); $c = sizeof(uint8); $d = sizeof(mytype *); "
       "$e = sizeof(pid); $f = offsetof(struct sk_buff, len); $g = offsetof(struct x, a.b); $h = offsetof(*curtask, comm); "
       "$i = offsetof(mytype, f) }",
       R"(probe BEGIN
 assign =
  variable $a
  sizeof struct task_struct
 assign =
  variable $b
  sizeof
   variable $x
 assign =
  variable $c
  sizeof uint8
 assign =
  variable $d
  sizeof mytype *
 assign =
  variable $e
  sizeof
   identifier pid
 assign =
  variable $f
  offsetof struct sk_buff, len
 assign =
  variable $g
  offsetof struct x, a.b
 assign =
  variable $h
  offsetof comm
   unop *
    identifier curtask
 assign =
  variable $i
  offsetof mytype, f
)"},
      // typeof (0.26): a type written as typeof(T) is T; typeof(expr) is
      // kept as the expression, with what follows it; in an expression it
      // is a macro's type argument.
      {"BEGIN { let $a: typeof(size_t); let $b: typeof($x) *; $c = (typeof($x))1; $d = sizeof(typeof(uint8) *); "
       "$e = sizeof(a[2]); f(typeof(struct Foo), typeof(1 + 2)); }",
       R"(probe BEGIN
 let $a: size_t
 let $b: typeof(...) *
  variable $x
 assign =
  variable $c
  cast typeof(...)
   variable $x
   int 1
 assign =
  variable $d
  sizeof uint8 *
 assign =
  variable $e
  sizeof a[2]
 call f
  typeof struct Foo
  typeof
   binop +
    int 1
    int 2
)"},
  });
}

TEST(Parser, Literals) {
  check({
      {"BEGIN { $a = $1 + $#; $b = 5s; $c = 0x10; $d = 010; $e = 1_000; $f = 2e3; $g = 10ULL; $h = true; $i = false }",
       R"(probe BEGIN
 assign =
  variable $a
  binop +
   positional $1
   positional_count $#
 assign =
  variable $b
  int 5000000000
 assign =
  variable $c
  int 16
 assign =
  variable $d
  int 8
 assign =
  variable $e
  int 1000
 assign =
  variable $f
  int 2000
 assign =
  variable $g
  int 10
 assign =
  variable $h
  int 1
 assign =
  variable $i
  int 0
)"},
      {R"(BEGIN { $s = "a\tb\"\\\x41\101\0"; })", "probe BEGIN\n assign =\n  variable $s\n  string \"a\\tb\\\"\\\\AA\\x00\"\n"},
  });
}

// printf("...", name=value): named call arguments (bpfscope extension); a
// record and == parse as before.
TEST(Parser, NamedCallArguments) {
  check({
      {"BEGIN { printf(\"%d %s\", pid=pid, c=comm); }",
       "probe BEGIN\n call printf named - pid c\n  string \"%d %s\"\n  identifier pid\n  identifier comm\n"},
      {"BEGIN { f(a == 1, (b=2)); }",
       "probe BEGIN\n call f\n  binop ==\n   identifier a\n   int 1\n  record b\n   int 2\n"},
  });
}

TEST(Parser, FloatLiterals) {
  check({
      {"BEGIN { printf(\"%.2f\", $b / 1024.0); }",
       "probe BEGIN\n call printf\n  string \"%.2f\"\n  binop /\n   variable $b\n   float 1024\n"},
      {"BEGIN { for ($i : 1..5) { } $x = $t.0.1; }",
       "probe BEGIN\n for $i\n  range\n   int 1\n   int 5\n  body\n assign =\n  variable $x\n  field .1\n   field .0\n    variable $t\n"},
  });
}

// Exact rendering, with the columns worked out by hand.
TEST(Parser, RenderedErrors) {
  // "BEGIN { @x = 1 +; }": B=1 ... '{'=7, '@'=9, '1'=14, '+'=16, ';'=17. The
  // offending token is the ';' at column 17, so COL2 (one past it) is 18.
  EXPECT_EQ(parse_errors("BEGIN { @x = 1 +; }"),
            "stdin:1:17-18: ERROR: syntax error, unexpected ;\n"
            "BEGIN { @x = 1 +; }\n"
            "                ~\n");
  // "printf" starts at column 3 of line 2; the ')' expected after "1" is
  // missing, so the error is at the ';' in column 11.
  EXPECT_EQ(parse_errors("BEGIN {\n  printf(1;\n}"),
            "stdin:2:11-12: ERROR: syntax error, unexpected ;, expected )\n"
            "  printf(1;\n"
            "          ~\n");
  // A tab counts as 4 columns: "\t$x = 1 $y" puts $y at 4 + 8 = column 12.
  EXPECT_EQ(parse_errors("BEGIN {\n\t$x = 1 $y = 2;\n}"),
            "stdin:2:12-14: ERROR: syntax error, unexpected variable, expected ; or }\n"
            "    $x = 1 $y = 2;\n"
            "           ~~\n");
  // End of file: just after the last visible character ('{' at column 7).
  EXPECT_EQ(parse_errors("BEGIN {\n\n"),
            "stdin:1:8-9: ERROR: unexpected end of file, expected }\n"
            "BEGIN {\n"
            "       ~\n");
  EXPECT_EQ(parse_errors("BEGIN { @x = 0x; }"),
            "stdin:1:14-16: ERROR: Invalid integer literal\n"
            "BEGIN { @x = 0x; }\n"
            "             ~~\n");
}

struct ErrorCase {
  std::string input;
  std::vector<std::string> errors;  // "LINE:COL1-COL2: message", in order
};

std::vector<std::string> error_list(const std::string& text) {
  Source src("stdin", text);
  Diagnostics diags;
  auto program = parse(src, diags);
  EXPECT_FALSE(program.has_value()) << text;
  std::vector<std::string> out;
  for (const auto& d : diags.all()) {
    LineCol a = src.line_col(d.loc.begin);
    LineCol b = src.line_col(d.loc.end);
    out.push_back(std::to_string(a.line) + ":" + std::to_string(a.col) + "-" + std::to_string(b.col) + ": " + d.message);
  }
  return out;
}

TEST(Parser, Errors) {
  const std::vector<ErrorCase> cases = {
      {"BEGIN", {"1:6-6: unexpected end of file, expected {"}},
      {"BEGIN {", {"1:8-8: unexpected end of file, expected }"}},
      {"}", {"1:1-2: syntax error, unexpected }"}},
      {"BEGIN { @x = ; }", {"1:14-15: syntax error, unexpected ;"}},
      // Recovery at ';' and '}' finds every error.
      {"BEGIN { $x = 1 $y = 2; @a = ; } END { `; exit() }",
       {"1:16-18: syntax error, unexpected variable, expected ; or }", "1:29-30: syntax error, unexpected ;",
        "1:39-40: invalid character '`'"}},
      {"BEGIN { if (x +) { @a = 1 +; } }", {"1:16-17: syntax error, unexpected )", "1:28-29: syntax error, unexpected ;"}},
      {"BEGIN /x +/ { @a = 1 +; } END { @b = ; }",
       {"1:11-12: syntax error, unexpected /", "1:23-24: syntax error, unexpected ;",
        "1:38-39: syntax error, unexpected ;"}},
      {"BEGIN { printf(\"abc); }", {"1:16-24: unterminated string", "1:24-24: unexpected end of file, expected )"}},
      {"BEGIN { $x = 08; $y = 1e; }", {"1:14-16: Invalid integer literal", "1:23-25: Invalid integer literal"}},
      {"BEGIN { $s = \"\\q\"; }", {"1:15-17: invalid escape character '\\q'"}},
      {"BEGIN { /* never closed }", {"1:9-11: unterminated comment"}},
      {"BEGIN { $x = (); }", {"1:15-16: syntax error, unexpected )"}},
      {"BEGIN { f(1,); }", {"1:13-14: syntax error, unexpected )"}},
      {"BEGIN { 1 = 2; }", {"1:11-12: syntax error, unexpected ="}},
      {"BEGIN { $a.b = 2; }", {"1:14-15: syntax error, unexpected ="}},
      {"BEGIN { 1++; ++arg0; }",
       {"1:10-12: The ++ operator must be applied to a map or variable",
        "1:14-16: The ++ operator must be applied to a map or variable"}},
      {"BEGIN { if ($x) @a = 1; }", {"1:17-19: syntax error, unexpected map, expected {"}},
      {"BEGIN { else { } }", {"1:9-13: syntax error, unexpected else"}},
      {"BEGIN { let @m = 1; }", {"1:13-15: syntax error, unexpected map, expected variable"}},
      {"BEGIN { for (@x : @m) { } }", {"1:14-16: syntax error, unexpected map, expected variable"}},
      {"BEGIN { $x = $y. ; }", {"1:18-19: syntax error, unexpected ;, expected field name"}},
      {"BEGIN { $x = (struct 1)$y; }", {"1:22-23: syntax error, unexpected integer, expected )"}},
      {"BEGIN { }\n#include <x>\nEND { }", {"2:1-13: syntax error, unexpected preprocessor directive"}},
      {"BEGIN {\n#define X 1\n}", {"2:1-12: syntax error, unexpected preprocessor directive"}},
      {"BEGIN { # }", {"1:9-10: invalid character '#'"}},
      {"config = { a = 1 b = 2; } BEGIN { }", {"1:18-19: syntax error, unexpected identifier, expected }"}},
      {"uprobe:lib:\"f { }", {"1:12-18: unterminated string"}},
      {"struct X { int a;", {"1:18-18: unexpected end of file, expected }"}},
      {"config = { a = ; } BEGIN { }", {"1:16-17: syntax error, unexpected ;, expected config value"}},
      {"BEGIN { $r = (a=1, a=2); }", {"1:20-21: Duplicate field name in record: a"}},
      {"BEGIN { $r = (a=1, 2); }", {"1:20-21: syntax error, unexpected integer, expected field name"}},
      {"BEGIN { printf(\"%d %d\", a=1, a=2); }", {"1:30-31: Duplicate argument name: a"}},
      {"BEGIN { $r = (a=1 b=2); }", {"1:19-20: syntax error, unexpected identifier, expected )"}},
      {"BEGIN { $t.0 = 1; }", {"1:9-13: Tuples are immutable once created. Consider creating a new tuple and assigning it instead."}},
      {"BEGIN { @m[] = 1; }", {"1:12-13: syntax error, unexpected ]"}},
      {"BEGIN { $x = $0; }", {"1:14-16: param $0 is out of integer range [1, 9223372036854775807]"}},
      {"BEGIN { $x = offsetof(struct s); }", {"1:31-32: syntax error, unexpected ), expected ,"}},
      {"BEGIN { } import \"a.bt\";", {"1:11-24: import must come before the first probe"}},
      {"macro m($x { } BEGIN { }", {"1:12-13: syntax error, unexpected {, expected )"}},
      {"let $a = hash(10); BEGIN { }", {"1:5-7: syntax error, unexpected variable, expected map name"}},
      {"let @a = 10; BEGIN { }", {"1:10-12: syntax error, unexpected integer, expected map type"}},
      {"let @a = hash(); BEGIN { }", {"1:15-16: syntax error, unexpected ), expected integer"}},
      {"let @a = hash(10) BEGIN { }", {"1:19-24: syntax error, unexpected identifier, expected ;"}},
  };
  for (const auto& c : cases) EXPECT_EQ(error_list(c.input), c.errors) << c.input;
}

// Source ranges of nodes: byte offsets, end exclusive.
TEST(Parser, Locations) {
  const std::string text = "BEGIN, end /pid/ { @x[1] = (a + b) * c; if ($x) { $y++; } f(1, 2); }";
  Source src("stdin", text);
  Diagnostics diags;
  auto p = parse(src, diags);
  ASSERT_TRUE(p);
  auto slice = [&](Loc loc) { return std::string(src.slice(loc)); };
  const Probe& probe = p->probes.at(0);
  EXPECT_EQ(slice(probe.loc), "BEGIN, end");
  EXPECT_EQ(slice(probe.points.at(0).loc), "BEGIN");
  EXPECT_EQ(slice(probe.points.at(1).loc), "end");
  EXPECT_EQ(slice(p->expr(probe.predicate).loc), "pid");
  ASSERT_EQ(probe.body.size(), 3u);
  const Stmt& assign = p->stmt(probe.body[0]);
  EXPECT_EQ(slice(assign.loc), "@x[1] = (a + b) * c");
  EXPECT_EQ(slice(p->expr(assign.target).loc), "@x[1]");
  const Expr& mul = p->expr(assign.value);
  EXPECT_EQ(slice(mul.loc), "(a + b) * c");
  EXPECT_EQ(slice(p->expr(mul.args[0]).loc), "a + b");
  const Stmt& if_stmt = p->stmt(probe.body[1]);
  EXPECT_EQ(slice(if_stmt.loc), "if ($x) { $y++; }");
  EXPECT_EQ(slice(p->stmt(if_stmt.body.at(0)).loc), "$y++");
  EXPECT_EQ(slice(p->expr(p->stmt(probe.body[2]).expr).loc), "f(1, 2)");
}

TEST(Parser, LocationsOfPostfixAndUnary) {
  const std::string text = "BEGIN { $a = -(uint8)$b->c[1].d; $e = sizeof(int8) + offsetof(struct s, f); $t = (1, 2); }";
  Source src("stdin", text);
  Diagnostics diags;
  auto p = parse(src, diags);
  ASSERT_TRUE(p);
  auto slice = [&](ExprId id) { return std::string(src.slice(p->expr(id).loc)); };
  const auto& body = p->probes.at(0).body;
  const Expr& neg = p->expr(p->stmt(body.at(0)).value);
  EXPECT_EQ(slice(p->stmt(body.at(0)).value), "-(uint8)$b->c[1].d");
  const Expr& cast = p->expr(neg.args[0]);
  EXPECT_EQ(slice(neg.args[0]), "(uint8)$b->c[1].d");
  EXPECT_EQ(slice(cast.args[0]), "$b->c[1].d");
  const Expr& add = p->expr(p->stmt(body.at(1)).value);
  EXPECT_EQ(slice(add.args[0]), "sizeof(int8)");
  EXPECT_EQ(slice(add.args[1]), "offsetof(struct s, f)");
  EXPECT_EQ(slice(p->stmt(body.at(2)).value), "(1, 2)");
}

TEST(Parser, DirectInspection) {
  Source src("stdin", "BEGIN { for ($i : 1..5) { } let $x: int8 = 1; @m[1, 2]++; }");
  Diagnostics diags;
  auto p = parse(src, diags);
  ASSERT_TRUE(p);
  const auto& body = p->probes.at(0).body;
  const Stmt& f = p->stmt(body.at(0));
  EXPECT_EQ(f.kind, StmtKind::For);
  EXPECT_EQ(f.iter_var, "$i");
  EXPECT_EQ(p->expr(f.expr).ival, 1u);
  EXPECT_EQ(p->expr(f.range_end).ival, 5u);
  const Stmt& let = p->stmt(body.at(1));
  EXPECT_EQ(let.kind, StmtKind::Let);
  EXPECT_EQ(let.type_name, "int8");
  EXPECT_EQ(p->expr(let.target).name, "$x");
  EXPECT_EQ(p->expr(let.value).ival, 1u);
  const Expr& inc = p->expr(p->stmt(body.at(2)).expr);
  EXPECT_EQ(inc.kind, ExprKind::IncDec);
  EXPECT_EQ(inc.op, Op::PostInc);
  const Expr& map = p->expr(inc.args.at(0));
  EXPECT_EQ(map.kind, ExprKind::Map);
  EXPECT_EQ(map.name, "@m");
  EXPECT_EQ(map.args.size(), 2u);
}

TEST(Parser, PreviousErrorsInSinkDoNotFailParse) {
  Diagnostics diags;
  diags.error_unlocated("earlier");
  EXPECT_TRUE(parse(Source("stdin", "BEGIN { }"), diags).has_value());
}

}  // namespace
}  // namespace bpfscope::lang
