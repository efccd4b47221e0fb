#include "lang/lexer.h"

#include <array>
#include <charconv>
#include <fmt/format.h>

namespace bpfscope::lang {
namespace {

struct Spelling {
  std::string_view text;
  Tok kind;
};

constexpr std::array kKeywords = {
    Spelling{"break", Tok::Break},   Spelling{"config", Tok::Config},     Spelling{"continue", Tok::Continue},
    Spelling{"else", Tok::Else},     Spelling{"for", Tok::For},           Spelling{"if", Tok::If},
    Spelling{"import", Tok::Import}, Spelling{"let", Tok::Let},           Spelling{"macro", Tok::Macro},
    Spelling{"offsetof", Tok::Offsetof}, Spelling{"return", Tok::Return}, Spelling{"sizeof", Tok::Sizeof},
    Spelling{"unroll", Tok::Unroll}, Spelling{"while", Tok::While},
};

// Longest first: the lexer takes the first entry that matches.
constexpr std::array kPunctuation = {
    Spelling{"<<=", Tok::ShlAssign}, Spelling{">>=", Tok::ShrAssign},
    Spelling{"->", Tok::Arrow},      Spelling{"..", Tok::DotDot},       Spelling{"++", Tok::Inc},
    Spelling{"--", Tok::Dec},        Spelling{"+=", Tok::PlusAssign},   Spelling{"-=", Tok::MinusAssign},
    Spelling{"*=", Tok::StarAssign}, Spelling{"/=", Tok::SlashAssign},  Spelling{"%=", Tok::PercentAssign},
    Spelling{"&=", Tok::AmpAssign},  Spelling{"|=", Tok::PipeAssign},   Spelling{"^=", Tok::CaretAssign},
    Spelling{"<<", Tok::Shl},        Spelling{">>", Tok::Shr},          Spelling{"<=", Tok::Le},
    Spelling{">=", Tok::Ge},         Spelling{"==", Tok::EqEq},         Spelling{"!=", Tok::Ne},
    Spelling{"&&", Tok::AndAnd},     Spelling{"||", Tok::OrOr},
    Spelling{"(", Tok::LParen},      Spelling{")", Tok::RParen},        Spelling{"{", Tok::LBrace},
    Spelling{"}", Tok::RBrace},      Spelling{"[", Tok::LBracket},      Spelling{"]", Tok::RBracket},
    Spelling{",", Tok::Comma},       Spelling{";", Tok::Semi},          Spelling{":", Tok::Colon},
    Spelling{"?", Tok::Question},    Spelling{".", Tok::Dot},           Spelling{"+", Tok::Plus},
    Spelling{"-", Tok::Minus},       Spelling{"*", Tok::Star},          Spelling{"/", Tok::Slash},
    Spelling{"%", Tok::Percent},     Spelling{"&", Tok::Amp},           Spelling{"|", Tok::Pipe},
    Spelling{"^", Tok::Caret},       Spelling{"~", Tok::Tilde},         Spelling{"!", Tok::Bang},
    Spelling{"<", Tok::Lt},          Spelling{">", Tok::Gt},            Spelling{"=", Tok::Assign},
};

constexpr std::array kNamedKinds = {
    Spelling{"end of file", Tok::Eof},
    Spelling{"invalid character", Tok::Invalid},
    Spelling{"preprocessor directive", Tok::Preproc},
    Spelling{"identifier", Tok::Ident},
    Spelling{"integer", Tok::Int},
    Spelling{"floating-point literal", Tok::Float},
    Spelling{"string", Tok::String},
    Spelling{"variable", Tok::Variable},
    Spelling{"positional parameter", Tok::Positional},
    Spelling{"$#", Tok::PositionalCount},
    Spelling{"map", Tok::Map},
};

struct Duration {
  std::string_view suffix;
  uint64_t ns;
};

constexpr std::array kDurations = {
    Duration{"ns", 1},
    Duration{"us", 1'000},
    Duration{"ms", 1'000'000},
    Duration{"s", 1'000'000'000},
    Duration{"m", 60'000'000'000},
    Duration{"h", 3'600'000'000'000},
    Duration{"d", 86'400'000'000'000},
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// C integer suffixes: at most one U and at most two L, in any order.
bool valid_int_suffix(std::string_view s) {
  int u = 0, l = 0;
  for (char c : s) {
    if (c == 'u' || c == 'U')
      ++u;
    else if (c == 'l' || c == 'L')
      ++l;
    else
      return false;
  }
  return u <= 1 && l <= 2;
}

std::string show_char(char c) {
  auto uc = static_cast<unsigned char>(c);
  if (uc >= 0x20 && uc < 0x7f) return std::string(1, c);
  return fmt::format("\\x{:02x}", uc);
}

void set_error(Token& t, std::string msg, Loc loc) {
  if (!t.error.empty()) return;  // keep the first
  t.error = std::move(msg);
  t.error_loc = loc;
}

}  // namespace

std::string_view describe(Tok kind) {
  for (const auto& s : kNamedKinds)
    if (s.kind == kind) return s.text;
  for (const auto& s : kKeywords)
    if (s.kind == kind) return s.text;
  for (const auto& s : kPunctuation)
    if (s.kind == kind) return s.text;
  return "token";
}

bool is_keyword(Tok kind) { return kind >= Tok::Break && kind <= Tok::While; }

std::optional<uint64_t> decode_integer(std::string_view s) {
  uint64_t v = 0;
  size_t i = 0;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    int digits = 0;
    for (i = 2; i < s.size() && (hex_value(s[i]) >= 0 || s[i] == '_'); ++i) {
      if (s[i] == '_') continue;
      if (v >> 60) return std::nullopt;
      v = v * 16 + static_cast<uint64_t>(hex_value(s[i]));
      ++digits;
    }
    if (digits == 0 || s[i - 1] == '_') return std::nullopt;
    if (!valid_int_suffix(s.substr(i))) return std::nullopt;
    return v;
  }
  while (i < s.size() && (is_digit(s[i]) || s[i] == '_')) ++i;
  if (i == 0 || s[i - 1] == '_') return std::nullopt;
  std::string_view rest = s.substr(i);
  bool has_exponent = rest.size() > 1 && (rest[0] == 'e' || rest[0] == 'E') && is_digit(rest[1]);
  // A leading 0 means octal, as in C; "0" itself and "0e5" are plain decimal.
  const uint64_t base = (i > 1 && s[0] == '0' && !has_exponent) ? 8 : 10;
  for (size_t k = 0; k < i; ++k) {
    if (s[k] == '_') continue;
    auto d = static_cast<uint64_t>(s[k] - '0');
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) return std::nullopt;
  }
  if (has_exponent) {
    size_t k = 1;
    uint64_t exp = 0;
    for (; k < rest.size() && is_digit(rest[k]); ++k) {
      exp = exp * 10 + static_cast<uint64_t>(rest[k] - '0');
      if (exp > 100) return std::nullopt;
    }
    for (uint64_t e = 0; e < exp && v != 0; ++e)
      if (__builtin_mul_overflow(v, uint64_t{10}, &v)) return std::nullopt;
    rest = rest.substr(k);
  }
  if (rest.empty()) return v;
  for (const auto& d : kDurations)
    if (rest == d.suffix) {
      if (__builtin_mul_overflow(v, d.ns, &v)) return std::nullopt;
      return v;
    }
  if (!valid_int_suffix(rest)) return std::nullopt;
  return v;
}

uint32_t Lexer::skip_space(uint32_t i) const {
  const uint32_t n = size();
  while (i < n) {
    if (is_space(text_[i])) {
      ++i;
    } else if (text_[i] == '/' && i + 1 < n && text_[i + 1] == '/') {
      while (i < n && text_[i] != '\n') ++i;
    } else if (text_[i] == '/' && i + 1 < n && text_[i + 1] == '*') {
      size_t close = text_.find("*/", i + 2);
      if (close == std::string_view::npos) return i;  // lex() reports it
      i = static_cast<uint32_t>(close + 2);
    } else {
      break;
    }
  }
  return i;
}

uint32_t Lexer::line_end(uint32_t i) const {
  const uint32_t n = size();
  while (i < n && text_[i] != '\n') {
    // A backslash before the newline continues a preprocessor line.
    if (text_[i] == '\\' && i + 1 < n && text_[i + 1] == '\n')
      i += 2;
    else
      ++i;
  }
  return i;
}

bool Lexer::at_line_start(uint32_t pos) const {
  while (pos > 0 && (text_[pos - 1] == ' ' || text_[pos - 1] == '\t')) --pos;
  return pos == 0 || text_[pos - 1] == '\n';
}

Token Lexer::lex(uint32_t pos) const {
  const uint32_t n = size();
  const uint32_t i = skip_space(pos);
  Token t;
  t.begin = t.end = i;
  if (i >= n) {
    t.begin = t.end = n;
    return t;
  }
  const char c = text_[i];
  if (c == '/' && i + 1 < n && text_[i + 1] == '*') {
    t.kind = Tok::Invalid;
    t.end = n;
    set_error(t, "unterminated comment", {i, i + 2});
    return t;
  }
  if (is_digit(c)) return lex_number(i);
  if (c == '"') return lex_string(i);
  if (c == '$' || c == '@') return lex_sigil(i);
  if (is_ident_start(c)) {
    uint32_t e = i;
    while (e < n && is_ident_char(text_[e])) ++e;
    t.end = e;
    t.text = std::string(text_.substr(i, e - i));
    t.kind = Tok::Ident;
    for (const auto& k : kKeywords)
      if (k.text == t.text) t.kind = k.kind;
    return t;
  }
  if (c == '#' && at_line_start(i)) {
    t.kind = Tok::Preproc;
    t.end = line_end(i);
    t.text = std::string(text_.substr(i, t.end - i));
    return t;
  }
  for (const auto& p : kPunctuation) {
    if (text_.substr(i, p.text.size()) == p.text) {
      t.kind = p.kind;
      t.end = i + static_cast<uint32_t>(p.text.size());
      return t;
    }
  }
  t.kind = Tok::Invalid;
  t.end = i + 1;
  set_error(t, fmt::format("invalid character '{}'", show_char(c)), t.loc());
  return t;
}

// Where a floating-point literal starting at i ends, or i when there is none:
// digits, then a fraction ".digits" and/or an exponent, which needs a sign
// when there is no fraction ("1e-3"; "1e6" stays an integer, as in bpftrace).
// A '.' followed by another '.' is a range (1..5), and a number right after
// a '.' is a tuple index ($t.0.1), never a fraction.
uint32_t Lexer::float_end(uint32_t i) const {
  const uint32_t n = size();
  if (i > 0 && text_[i - 1] == '.') return i;
  uint32_t e = i;
  while (e < n && is_digit(text_[e])) ++e;
  bool fraction = false;
  if (e + 1 < n && text_[e] == '.' && is_digit(text_[e + 1])) {
    fraction = true;
    for (++e; e < n && is_digit(text_[e]);) ++e;
  }
  if (e + 1 < n && (text_[e] == 'e' || text_[e] == 'E')) {
    uint32_t k = e + 1;
    const bool sign = text_[k] == '+' || text_[k] == '-';
    if (sign) ++k;
    if ((sign || fraction) && k < n && is_digit(text_[k])) {
      while (k < n && is_digit(text_[k])) ++k;
      return k;
    }
  }
  return fraction ? e : i;
}

Token Lexer::lex_number(uint32_t i) const {
  if (const uint32_t f = float_end(i); f != i) {
    Token t;
    t.kind = Tok::Float;
    t.begin = i;
    uint32_t e = f;
    while (e < size() && is_ident_char(text_[e])) ++e;  // a suffix makes it malformed
    t.end = e;
    const auto r = std::from_chars(text_.data() + i, text_.data() + f, t.fval);
    if (e != f || r.ec != std::errc()) set_error(t, "Invalid floating-point literal", t.loc());
    return t;
  }
  uint32_t e = i;
  while (e < size() && is_ident_char(text_[e])) ++e;
  Token t;
  t.kind = Tok::Int;
  t.begin = i;
  t.end = e;
  if (auto v = decode_integer(text_.substr(i, e - i)))
    t.ival = *v;
  else
    set_error(t, "Invalid integer literal", t.loc());
  return t;
}

Token Lexer::lex_string(uint32_t i) const {
  const uint32_t n = size();
  Token t;
  t.kind = Tok::String;
  t.begin = i;
  uint32_t k = i + 1;
  for (;;) {
    if (k >= n || text_[k] == '\n') {
      t.end = k;
      t.error.clear();
      set_error(t, "unterminated string", t.loc());
      return t;
    }
    const char c = text_[k];
    if (c == '"') break;
    if (c != '\\') {
      t.text += c;
      ++k;
      continue;
    }
    // An escape: \n \t \r \\ \" \NNN (octal, 1-3 digits) \xNN (hex, 1-2 digits).
    const uint32_t esc = k;
    ++k;
    if (k >= n) continue;  // reported as unterminated above
    const char e = text_[k];
    if (e == 'n' || e == 't' || e == 'r' || e == '\\' || e == '"') {
      t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      ++k;
    } else if (e >= '0' && e <= '7') {
      unsigned v = 0;
      for (int d = 0; d < 3 && k < n && text_[k] >= '0' && text_[k] <= '7'; ++d, ++k) v = v * 8 + (text_[k] - '0');
      if (v > 255) set_error(t, "octal escape sequence out of range", {esc, k});
      t.text += static_cast<char>(v & 0xff);
    } else if (e == 'x') {
      ++k;
      unsigned v = 0;
      int d = 0;
      for (; d < 2 && k < n && hex_value(text_[k]) >= 0; ++d, ++k) v = v * 16 + hex_value(text_[k]);
      if (d == 0) set_error(t, "invalid escape sequence '\\x'", {esc, k});
      t.text += static_cast<char>(v);
    } else if (e == '\n') {
      continue;  // reported as unterminated
    } else {
      set_error(t, fmt::format("invalid escape character '\\{}'", show_char(e)), {esc, k + 1});
      ++k;
    }
  }
  t.end = k + 1;
  return t;
}

// $name, $N, $#, @name and @.
Token Lexer::lex_sigil(uint32_t i) const {
  const uint32_t n = size();
  Token t;
  t.begin = i;
  uint32_t e = i + 1;
  if (text_[i] == '@') {
    if (e < n && is_ident_start(text_[e]))
      while (e < n && is_ident_char(text_[e])) ++e;
    t.kind = Tok::Map;
    t.end = e;
    t.text = std::string(text_.substr(i, e - i));
    return t;
  }
  if (e < n && text_[e] == '#') {
    t.kind = Tok::PositionalCount;
    t.end = e + 1;
    return t;
  }
  if (e < n && is_digit(text_[e])) {
    while (e < n && is_digit(text_[e])) ++e;
    t.kind = Tok::Positional;
    t.end = e;
    for (uint32_t k = i + 1; k < e; ++k) {
      t.ival = t.ival * 10 + static_cast<uint64_t>(text_[k] - '0');
      if (t.ival > UINT32_MAX) {
        set_error(t, "positional parameter out of range", t.loc());
        break;
      }
    }
    if (t.ival == 0) set_error(t, "param $0 is out of integer range [1, 9223372036854775807]", t.loc());
    return t;
  }
  if (e < n && is_ident_start(text_[e])) {
    while (e < n && is_ident_char(text_[e])) ++e;
    t.kind = Tok::Variable;
    t.end = e;
    t.text = std::string(text_.substr(i, e - i));
    return t;
  }
  t.kind = Tok::Invalid;
  t.end = e;
  set_error(t, "invalid character '$'", t.loc());
  return t;
}

// An attach point runs until whitespace, ',', '{', '}' or ';'. A '/' ends it
// (a predicate starts) unless the current ':'-separated segment began with '/'
// or '.' (a path: uprobe:/bin/bash:readline, uprobe:./a.out:main). A quoted segment ("ns::f") is taken
// whole, quotes included; sema splits and unquotes.
RawScan Lexer::attach_point(uint32_t pos) const {
  const uint32_t n = size();
  RawScan r;
  uint32_t i = pos;
  bool segment_start = false;  // the first segment is never a path
  bool path = false;
  while (i < n) {
    const char c = text_[i];
    if (is_space(c) || c == ',' || c == '{' || c == '}' || c == ';') break;
    if (c == '"') {
      uint32_t k = i + 1;
      while (k < n && text_[k] != '"' && text_[k] != '\n') k += (text_[k] == '\\' && k + 1 < n && text_[k + 1] != '\n') ? 2 : 1;
      if (k >= n || text_[k] != '"') {
        r.error = "unterminated string";
        r.error_loc = {i, k};
        i = k;
        break;
      }
      i = k + 1;
      segment_start = false;
      continue;
    }
    if (c == '/') {
      if (segment_start) path = true;
      if (!path) break;
    }
    // A relative path (./bin, ../lib/x.so) is a path too.
    if (c == '.' && segment_start) path = true;
    segment_start = c == ':';
    if (segment_start) path = false;
    ++i;
  }
  r.end = i;
  return r;
}

// From "struct"/"union"/"enum" to the '}' matching the first '{' (or to a ';'
// before any '{': a declaration), plus a following ';' if there is one.
// Comments and string or character literals are skipped.
RawScan Lexer::c_definition(uint32_t pos) const {
  const uint32_t n = size();
  RawScan r;
  int depth = 0;
  uint32_t i = pos;
  while (i < n) {
    const char c = text_[i];
    if (c == '/' && i + 1 < n && (text_[i + 1] == '/' || text_[i + 1] == '*')) {
      uint32_t k = skip_space(i);
      if (k == i) break;  // unterminated comment
      i = k;
      continue;
    }
    if (c == '"' || c == '\'') {
      uint32_t k = i + 1;
      while (k < n && text_[k] != c && text_[k] != '\n') k += (text_[k] == '\\' && k + 1 < n) ? 2 : 1;
      i = k < n ? k + 1 : n;
      continue;
    }
    ++i;
    if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (depth == 0) {
        r.end = i;
        r.error = "syntax error, unexpected }";
        r.error_loc = {i - 1, i};
        return r;
      }
      if (--depth == 0) {
        uint32_t k = skip_space(i);
        // `} __attribute__((packed))` belongs to the definition.
        constexpr std::string_view kAttr = "__attribute__";
        while (text_.substr(k).starts_with(kAttr)) {
          uint32_t p = skip_space(k + static_cast<uint32_t>(kAttr.size()));
          int parens = 0;
          do {
            if (p >= n || (text_[p] != '(' && parens == 0)) break;
            parens += text_[p] == '(' ? 1 : text_[p] == ')' ? -1 : 0;
            ++p;
          } while (parens > 0);
          if (parens != 0 || p == k) break;
          i = p;
          k = skip_space(p);
        }
        r.end = (k < n && text_[k] == ';') ? k + 1 : i;
        return r;
      }
    } else if (c == ';' && depth == 0) {
      r.end = i;
      return r;
    }
  }
  r.end = n;
  r.error = depth > 0 ? "unexpected end of file, expected }" : "unexpected end of file, expected {";
  r.error_loc = {n, n};
  return r;
}

}  // namespace bpfscope::lang
