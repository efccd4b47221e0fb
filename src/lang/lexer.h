// The lexer (internal to src/lang). It is stateless: lex(pos) returns the
// token at or after pos, so the parser can peek, back up and switch to the raw
// scanners (attach points, C definitions) by position alone. Errors travel in
// the token and are reported by the parser when it uses the token, so peeking
// never reports anything twice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lang/source.h"

namespace bpfscope::lang {

enum class Tok : uint8_t {
  Eof,
  Invalid,   // a character that starts no token, or an unterminated comment
  Preproc,   // a '#' line (the '#' first on its line), text = the whole line
  Ident,     // text = name
  Int,       // ival
  Float,     // fval: 1024.0, 0.5, 1.5e3, 1e-3 (a bpfscope extension: only a printf argument's divisor)
  String,    // text = the value with escapes decoded
  Variable,  // text = "$name"
  Positional,       // ival = N of $N
  PositionalCount,  // $#
  Map,              // text = "@name" or "@"
  // Keywords (REFERENCE 1.3).
  Break, Config, Continue, Else, For, If, Import, Let, Macro, Offsetof, Return, Sizeof, Unroll, While,
  // Punctuation.
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Semi, Colon, Question, Dot, DotDot, Arrow,
  Plus, Minus, Star, Slash, Percent, Amp, Pipe, Caret, Tilde, Bang,
  Lt, Gt, Le, Ge, EqEq, Ne, AndAnd, OrOr, Shl, Shr,
  Assign, PlusAssign, MinusAssign, StarAssign, SlashAssign, PercentAssign,
  AmpAssign, PipeAssign, CaretAssign, ShlAssign, ShrAssign,
  Inc, Dec,
};

struct Token {
  Tok kind = Tok::Eof;
  uint32_t begin = 0;
  uint32_t end = 0;
  uint64_t ival = 0;
  double fval = 0;
  std::string text;
  std::string error;  // non-empty: a lexical error, reported at error_loc when the token is used
  Loc error_loc;

  Loc loc() const { return {begin, end}; }
};

// How a token kind is named in "unexpected X" messages: "identifier", ";", "for".
std::string_view describe(Tok kind);
bool is_keyword(Tok kind);

// Decodes an integer literal as lexed ([0-9][A-Za-z0-9_]*): decimal, 0x hex,
// leading-0 octal, '_' separators, an exponent (2e3), the C suffixes U L UL LL
// ULL, or a duration suffix ns us ms s m h d (the value in nanoseconds).
// nullopt when malformed or out of range.
std::optional<uint64_t> decode_integer(std::string_view literal);

// The result of a raw scan: where the text ends, and an error if any.
struct RawScan {
  uint32_t end = 0;
  std::string error;
  Loc error_loc;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::string_view text() const { return text_; }
  uint32_t size() const { return static_cast<uint32_t>(text_.size()); }

  Token lex(uint32_t pos) const;
  // Skips whitespace and comments. Stops at an unterminated "/*" (lex() reports it).
  uint32_t skip_space(uint32_t pos) const;
  // One attach point starting at pos, read as raw text (see attach_point in lexer.cpp).
  RawScan attach_point(uint32_t pos) const;
  // A C definition "struct|union|enum ... { ... } [;]" starting at pos.
  RawScan c_definition(uint32_t pos) const;

 private:
  Token lex_number(uint32_t i) const;
  uint32_t float_end(uint32_t i) const;
  Token lex_string(uint32_t i) const;
  Token lex_sigil(uint32_t i) const;
  uint32_t line_end(uint32_t pos) const;
  bool at_line_start(uint32_t pos) const;

  std::string_view text_;
};

}  // namespace bpfscope::lang
