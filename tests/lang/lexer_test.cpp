#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "lang/lexer.h"

namespace bpfscope::lang {
namespace {

struct IntCase {
  std::string literal;
  std::optional<uint64_t> value;  // nullopt: "Invalid integer literal"
};

TEST(Lexer, IntegerLiterals) {
  const std::vector<IntCase> cases = {
      {"0", 0},
      {"42", 42},
      {"0x1f", 31},
      {"0XFF", 255},
      {"0x_ff", 255},
      {"010", 8},
      {"0777", 511},
      {"08", std::nullopt},
      {"1_000", 1000},
      {"1_000_000", 1000000},
      {"1_", std::nullopt},
      {"2e3", 2000},
      {"1E2", 100},
      {"0e5", 0},
      {"1e", std::nullopt},
      {"1e20", std::nullopt},
      {"10U", 10},
      {"10L", 10},
      {"10UL", 10},
      {"10LL", 10},
      {"10ULL", 10},
      {"10ull", 10},
      {"0x10ULL", 16},
      {"10LLL", std::nullopt},
      {"10UU", std::nullopt},
      {"1ns", 1},
      {"1us", 1000},
      {"5ms", 5000000},
      {"5s", 5000000000},
      {"2m", 120000000000},
      {"1h", 3600000000000},
      {"1d", 86400000000000},
      {"1_000ms", 1000000000},
      {"1x", std::nullopt},
      {"0x", std::nullopt},
      {"0x1s", std::nullopt},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", std::nullopt},
      {"0xffffffffffffffff", UINT64_MAX},
      {"0x10000000000000000", std::nullopt},
      {"18446744073s", 18446744073000000000u},
      {"18446744074s", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(decode_integer(c.literal), c.value) << c.literal;
}

std::vector<Tok> kinds(std::string_view text) {
  Lexer lexer(text);
  std::vector<Tok> out;
  uint32_t pos = 0;
  for (int i = 0; i < 100; ++i) {
    Token t = lexer.lex(pos);
    out.push_back(t.kind);
    if (t.kind == Tok::Eof) break;
    pos = t.end;
  }
  return out;
}

TEST(Lexer, TokenKinds) {
  using enum Tok;
  EXPECT_EQ(kinds("$x $1 $# @m @ pid"), (std::vector<Tok>{Variable, Positional, PositionalCount, Map, Map, Ident, Eof}));
  EXPECT_EQ(kinds("a<<=b>>=c->d..e"), (std::vector<Tok>{Ident, ShlAssign, Ident, ShrAssign, Ident, Arrow, Ident, DotDot, Ident, Eof}));
  EXPECT_EQ(kinds("++--+=-=*=/=%=&=|=^="),
            (std::vector<Tok>{Inc, Dec, PlusAssign, MinusAssign, StarAssign, SlashAssign, PercentAssign, AmpAssign,
                              PipeAssign, CaretAssign, Eof}));
  EXPECT_EQ(kinds("== != <= >= && || < > = ! ~ ? :"),
            (std::vector<Tok>{EqEq, Ne, Le, Ge, AndAnd, OrOr, Lt, Gt, Assign, Bang, Tilde, Question, Colon, Eof}));
  EXPECT_EQ(kinds("if else for while unroll let return break continue sizeof offsetof config import macro"),
            (std::vector<Tok>{If, Else, For, While, Unroll, Let, Return, Break, Continue, Sizeof, Offsetof, Config,
                              Import, Macro, Eof}));
  EXPECT_EQ(kinds("0..10"), (std::vector<Tok>{Int, DotDot, Int, Eof}));
  EXPECT_EQ(kinds("$t.0"), (std::vector<Tok>{Variable, Dot, Int, Eof}));
  EXPECT_EQ(kinds("a // comment\n b /* c\n */ c"), (std::vector<Tok>{Ident, Ident, Ident, Eof}));
  EXPECT_EQ(kinds("#include <x>\n  #define A 1\nx # y"), (std::vector<Tok>{Preproc, Preproc, Ident, Invalid, Ident, Eof}));
  EXPECT_EQ(kinds("a /* never closed"), (std::vector<Tok>{Ident, Invalid, Eof}));
  EXPECT_EQ(kinds("$ ` \x01"), (std::vector<Tok>{Invalid, Invalid, Invalid, Eof}));
}

// Floating-point literals (a bpfscope extension) leave ranges, tuple
// indices and exponent integers alone.
TEST(Lexer, FloatLiterals) {
  using enum Tok;
  EXPECT_EQ(kinds("1024.0 0.5 1.5e3 1e-3 2E+2"), (std::vector<Tok>{Float, Float, Float, Float, Float, Eof}));
  EXPECT_EQ(kinds("1e6 2e3 0x1e 1..5 $t.0.1 $1.5"),
            (std::vector<Tok>{Int, Int, Int, Int, DotDot, Int, Variable, Dot, Int, Dot, Int, Positional, Dot, Int, Eof}));
  EXPECT_EQ(kinds("a.b 1.x"), (std::vector<Tok>{Ident, Dot, Ident, Int, Dot, Ident, Eof}));
  struct Case {
    std::string text;
    double value;
  };
  for (const auto& c : std::vector<Case>{{"1024.0", 1024.0}, {"0.5", 0.5}, {"1.5e3", 1500.0}, {"1e-3", 0.001},
                                         {"1000000.0", 1e6}}) {
    Token t = Lexer(c.text).lex(0);
    EXPECT_EQ(t.kind, Tok::Float) << c.text;
    EXPECT_EQ(t.fval, c.value) << c.text;
    EXPECT_EQ(t.end, c.text.size()) << c.text;
    EXPECT_EQ(t.error, "") << c.text;
  }
  for (const char* bad : {"2.0s", "1.5e3x", "1.5f"}) {
    Token t = Lexer(bad).lex(0);
    EXPECT_EQ(t.kind, Tok::Float) << bad;
    EXPECT_EQ(t.error, "Invalid floating-point literal") << bad;
    EXPECT_EQ(t.end, std::string_view(bad).size()) << bad;
  }
}

TEST(Lexer, TokenValues) {
  Lexer lexer("$12 @name $var 0x10");
  Token t = lexer.lex(0);
  EXPECT_EQ(t.ival, 12u);
  t = lexer.lex(t.end);
  EXPECT_EQ(t.text, "@name");
  t = lexer.lex(t.end);
  EXPECT_EQ(t.text, "$var");
  t = lexer.lex(t.end);
  EXPECT_EQ(t.ival, 16u);
  EXPECT_EQ(t.begin, 15u);
  EXPECT_EQ(t.end, 19u);
}

struct StringCase {
  std::string source;
  std::string value;
  std::string error;
};

TEST(Lexer, Strings) {
  const std::vector<StringCase> cases = {
      {R"("abc")", "abc", ""},
      {R"("a\nb\tc\rd")", "a\nb\tc\rd", ""},
      {R"("q\"q\\")", "q\"q\\", ""},
      {R"("\101\0\x41\x4a")", std::string("A\0AJ", 4), ""},
      {R"("\q")", "", "invalid escape character '\\q'"},
      {R"("\x")", "", "invalid escape sequence '\\x'"},
      {R"("\777")", "", "octal escape sequence out of range"},
      {"\"abc", "", "unterminated string"},
      {"\"abc\ndef\"", "", "unterminated string"},
      {"\"abc\\", "", "unterminated string"},
  };
  for (const auto& c : cases) {
    Lexer lexer(c.source);
    Token t = lexer.lex(0);
    EXPECT_EQ(t.kind, Tok::String) << c.source;
    EXPECT_EQ(t.error, c.error) << c.source;
    if (c.error.empty()) {
      EXPECT_EQ(t.text, c.value) << c.source;
    }
  }
}

TEST(Lexer, UnterminatedStringStopsAtNewline) {
  Lexer lexer("\"abc\ndef");
  Token t = lexer.lex(0);
  EXPECT_EQ(t.end, 4u);
  EXPECT_EQ(lexer.lex(t.end).kind, Tok::Ident);
}

struct AttachCase {
  std::string source;
  std::string text;  // the attach point read from offset 0
};

TEST(Lexer, AttachPoints) {
  const std::vector<AttachCase> cases = {
      {"BEGIN { }", "BEGIN"},
      {"BEGIN{}", "BEGIN"},
      {"end,BEGIN", "end"},
      {"tracepoint:syscalls:sys_enter_* /pid/", "tracepoint:syscalls:sys_enter_*"},
      {"kprobe:f/pid/{}", "kprobe:f"},
      {"interval:s:1 {", "interval:s:1"},
      {"i:1s\n{", "i:1s"},
      {"uprobe:/bin/bash:readline /x/", "uprobe:/bin/bash:readline"},
      {"uprobe:/bin/bash:readline/x/", "uprobe:/bin/bash:readline"},
      {"uprobe:/usr/lib/libc.so.6:malloc{", "uprobe:/usr/lib/libc.so.6:malloc"},
      {"usdt:/usr/bin/python3:python:function__entry {", "usdt:/usr/bin/python3:python:function__entry"},
      {"uprobe:lib:\"ns::f\" {", "uprobe:lib:\"ns::f\""},
      {"uprobe:\"/path with space\":f {", "uprobe:\"/path with space\":f"},
      {"kprobe:f+10 {", "kprobe:f+10"},
      {"hardware:cache-misses:1000 {", "hardware:cache-misses:1000"},
      {"/x/ {", ""},
      {"{", ""},
  };
  for (const auto& c : cases) {
    Lexer lexer(c.source);
    RawScan r = lexer.attach_point(0);
    EXPECT_EQ(r.error, "") << c.source;
    EXPECT_EQ(c.source.substr(0, r.end), c.text) << c.source;
  }
  Lexer bad("uprobe:lib:\"f {");
  EXPECT_EQ(bad.attach_point(0).error, "unterminated string");
}

TEST(Lexer, CDefinitions) {
  const std::vector<AttachCase> cases = {
      {"struct X { int a; }; BEGIN", "struct X { int a; };"},
      {"struct X { int a; }\nBEGIN", "struct X { int a; }"},
      {"struct X { struct { int b; } c; /* } */ char d[2]; } ;x", "struct X { struct { int b; } c; /* } */ char d[2]; } ;"},
      {"enum E { A = '}', B };", "enum E { A = '}', B };"},
      {"struct X; BEGIN", "struct X;"},
  };
  for (const auto& c : cases) {
    Lexer lexer(c.source);
    RawScan r = lexer.c_definition(0);
    EXPECT_EQ(r.error, "") << c.source;
    EXPECT_EQ(c.source.substr(0, r.end), c.text) << c.source;
  }
  EXPECT_EQ(Lexer("struct X { int a;").c_definition(0).error, "unexpected end of file, expected }");
}

TEST(Lexer, Describe) {
  EXPECT_EQ(describe(Tok::Semi), ";");
  EXPECT_EQ(describe(Tok::For), "for");
  EXPECT_EQ(describe(Tok::Ident), "identifier");
  EXPECT_EQ(describe(Tok::Eof), "end of file");
  EXPECT_EQ(describe(Tok::ShlAssign), "<<=");
}

}  // namespace
}  // namespace bpfscope::lang
