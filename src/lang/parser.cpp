// Recursive-descent parser: tokens (lexer.h) -> ast::Program.
//
// Error handling follows the classic panic-mode scheme: the first error of a
// statement is reported and sets panic_, which silences further errors until
// the parser resynchronises at ';', '}' or a balanced '{...}' (sync_stmt,
// sync_top). Every loop consumes a token per iteration, and recursion is
// bounded by kMaxNesting (expressions and blocks share one depth counter), so
// no input can hang the parser or overflow the stack.
#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>

#include "lang/lang.h"
#include "lang/lexer.h"

namespace bpfscope::lang {
namespace {

// After this many errors the parser stops reading: a binary or badly broken
// file would otherwise produce an error (and a rendered source line) per token.
constexpr size_t kMaxErrors = 100;

// A parenthesised builtin is never a cast: `(pid)*tid` is a multiplication
// (REFERENCE 1.5). arg0..arg9 and sarg0..sarg9 are checked in is_builtin().
// The parser runs before src/builtins (the builtins' entries) can be seen,
// so the variables' names are listed here too.
constexpr std::array<std::string_view, 30> kBuiltins = {
    "pid",      "tid",     "uid",   "gid",    "comm",   "nsecs",  "elapsed", "cpu",  "probe",    "probetype",
    "args",     "retval",  "func",  "curtask", "cgroup", "ppid",   "pcomm",   "rand", "cpid",     "has_cpid",
    "username", "jiffies", "ncpus", "numaid", "kstack", "ustack", "ctx",     "true", "false",    "usermode",
};

constexpr std::array<std::string_view, 10> kScalarTypes = {
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "string",
};

struct BinaryOp {
  Tok tok;
  Op op;
  int prec;  // higher binds tighter (REFERENCE 1.5)
};

constexpr std::array kBinaryOps = {
    BinaryOp{Tok::Star, Op::Mul, 10}, BinaryOp{Tok::Slash, Op::Div, 10}, BinaryOp{Tok::Percent, Op::Mod, 10},
    BinaryOp{Tok::Plus, Op::Add, 9},  BinaryOp{Tok::Minus, Op::Sub, 9},
    BinaryOp{Tok::Shl, Op::Shl, 8},   BinaryOp{Tok::Shr, Op::Shr, 8},
    BinaryOp{Tok::Lt, Op::Lt, 7},     BinaryOp{Tok::Le, Op::Le, 7},     BinaryOp{Tok::Gt, Op::Gt, 7},
    BinaryOp{Tok::Ge, Op::Ge, 7},     BinaryOp{Tok::EqEq, Op::Eq, 6},   BinaryOp{Tok::Ne, Op::Ne, 6},
    BinaryOp{Tok::Amp, Op::BAnd, 5},  BinaryOp{Tok::Caret, Op::BXor, 4}, BinaryOp{Tok::Pipe, Op::BOr, 3},
    BinaryOp{Tok::AndAnd, Op::LAnd, 2}, BinaryOp{Tok::OrOr, Op::LOr, 1},
};

struct TokOp {
  Tok tok;
  Op op;
};

constexpr std::array kCompoundAssign = {
    TokOp{Tok::PlusAssign, Op::Add},    TokOp{Tok::MinusAssign, Op::Sub}, TokOp{Tok::StarAssign, Op::Mul},
    TokOp{Tok::SlashAssign, Op::Div},   TokOp{Tok::PercentAssign, Op::Mod}, TokOp{Tok::AmpAssign, Op::BAnd},
    TokOp{Tok::PipeAssign, Op::BOr},    TokOp{Tok::CaretAssign, Op::BXor}, TokOp{Tok::ShlAssign, Op::Shl},
    TokOp{Tok::ShrAssign, Op::Shr},
};

constexpr std::array kUnaryOps = {
    TokOp{Tok::Minus, Op::Neg}, TokOp{Tok::Bang, Op::LNot}, TokOp{Tok::Tilde, Op::BNot},
    TokOp{Tok::Star, Op::Deref}, TokOp{Tok::Amp, Op::AddrOf},
};

bool is_builtin(std::string_view name) {
  for (auto b : kBuiltins)
    if (b == name) return true;
  if (name.starts_with("sarg")) name.remove_prefix(1);
  return name.size() == 4 && name.starts_with("arg") && name[3] >= '0' && name[3] <= '9';
}

bool is_scalar_type(std::string_view name) {
  for (auto t : kScalarTypes)
    if (t == name) return true;
  return false;
}

bool is_tag(std::string_view word) { return word == "struct" || word == "union" || word == "enum"; }

bool starts_expr(Tok k) {
  switch (k) {
    case Tok::Int: case Tok::Float: case Tok::String: case Tok::Ident: case Tok::Variable: case Tok::Positional:
    case Tok::PositionalCount: case Tok::Map: case Tok::Sizeof: case Tok::Offsetof: case Tok::LParen: case Tok::Config:
    case Tok::Minus: case Tok::Bang: case Tok::Tilde: case Tok::Star: case Tok::Amp: case Tok::Inc:
    case Tok::Dec:
      return true;
    default:
      return false;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A #define value: continuation lines joined, comments removed, trimmed.
std::string define_value(std::string_view raw) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < raw.size()) out += raw[++i];
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out += c;
    } else if (c == '\\' && i + 1 < raw.size() && raw[i + 1] == '\n') {
      out += ' ';
      ++i;
    } else if (c == '/' && i + 1 < raw.size() && raw[i + 1] == '/') {
      break;
    } else if (c == '/' && i + 1 < raw.size() && raw[i + 1] == '*') {
      size_t close = raw.find("*/", i + 2);
      if (close == std::string_view::npos) break;
      out += ' ';
      i = close + 1;
    } else {
      out += c;
    }
  }
  return std::string(trim(out));
}

class Parser {
 public:
  // The lexer sees the script and the files it imports (load_imports());
  // the segments spliced later are parsed one by one, by run_expr().
  Parser(Source source, Diagnostics& diags)
      : prog_(make_program(std::move(source))), lexer_(prog_.source.text()), diags_(diags), eof_loc_(find_eof_loc()) {}
  // Parses one expression at `range` of a parsed program's source.
  Parser(Program&& program, Loc range, Diagnostics& diags)
      : prog_(std::move(program)), lexer_(std::string_view(prog_.source.text()).substr(0, range.end)), diags_(diags),
        eof_loc_({range.end, range.end}) {
    heights_.resize(prog_.exprs.size(), 0);  // the script's expressions are not this one's operands
  }

  std::optional<Program> run();
  // The expression at `begin`, which must end where the text does; kNone
  // after a syntax error. take() hands the program back.
  ExprId run_expr(uint32_t begin);
  Program take() { return std::move(prog_); }

 private:
  static Program make_program(Source source) {
    Program p;
    p.source = std::move(source);
    return p;
  }

  // --- tokens ---
  bool at(Tok k) const { return tok_.kind == k; }
  void advance();
  void reset(uint32_t pos) { tok_ = lexer_.lex(stopped_ ? lexer_.size() : pos); }
  bool accept(Tok k);
  bool expect(Tok k);
  Token peek() const { return lexer_.lex(tok_.end); }
  std::string_view slice(const Token& t) const { return lexer_.text().substr(t.begin, t.end - t.begin); }

  // --- errors ---
  void report(Loc loc, std::string msg);
  void fail(Loc loc, std::string msg);
  void unexpected(std::string_view expected = {});
  Loc eof_loc() const { return eof_loc_; }
  Loc find_eof_loc() const;
  void sync_stmt();
  void sync_top();
  void skip_balanced();

  // --- top level ---
  void parse_top_level();
  void preprocessor();
  void c_definition();
  void parse_config();
  void parse_import();
  bool parse_config_entries();
  void parse_probe();
  void parse_macro();
  void parse_map_decl();

  // --- statements ---
  std::vector<StmtId> parse_block(ExprId* tail = nullptr);
  std::optional<StmtId> parse_stmt();
  StmtId parse_if();
  StmtId parse_loop();
  StmtId parse_for();
  void parse_let(Stmt& s);
  void parse_expr_stmt(Stmt& s);

  // --- expressions ---
  template <typename F>
  ExprId nested(F parse);
  ExprId parse_expr() { return nested([this] { return parse_ternary(); }); }
  ExprId parse_ternary();
  ExprId parse_binary();
  ExprId parse_unary();
  ExprId parse_postfix();
  ExprId parse_primary();
  ExprId parse_paren();
  ExprId parse_record(uint32_t start);
  std::vector<ExprId> parse_list(Tok close);
  void parse_call_args(Expr& call);
  ExprId parse_sizeof();
  ExprId parse_offsetof();
  ExprId parse_typeof();
  std::string parse_type(ExprId* type_of = nullptr);
  bool typeof_ahead() const { return at(Tok::Ident) && tok_.text == "typeof" && peek().kind == Tok::LParen; }
  bool cast_ahead() const;
  bool type_ahead() const;
  void check_incdec(ExprId target, Op op, Loc op_loc);

  ExprId add(Expr e);
  ExprId parse_block_expr();
  ExprId parse_if_expr();
  ExprId if_value(StmtId id);
  ExprId add(ExprKind kind, Loc loc, std::vector<ExprId> args = {}, Op op = Op::None, std::string name = {});
  ExprId error_expr() { return add(ExprKind::Integer, tok_.loc()); }
  StmtId add(Stmt s);

  Program prog_;  // before lexer_: the lexer views prog_.source's text
  Lexer lexer_;
  Diagnostics& diags_;
  Token tok_;
  uint32_t prev_end_ = 0;  // end of the last consumed token
  int depth_ = 0;
  bool panic_ = false;
  bool seen_probe_ = false;
  uint32_t file_start_ = 0;  // where the script or imported file being parsed starts
  bool last_semi_ = false;  // the last simple statement ended with ';'
  // ply's aggregation spelling, @m.quantize(x): the call parse_postfix made
  // of it, and its map, which parse_expr_stmt turns into @m = quantize(x).
  ExprId method_call_ = kNone;
  ExprId method_map_ = kNone;
  bool stopped_ = false;  // too many errors: the rest of the input is skipped
  Loc eof_loc_;
  size_t errors_ = 0;
  uint32_t last_error_ = UINT32_MAX;
  std::vector<uint32_t> heights_;  // per expression: the height of its tree (kMaxExprDepth)
};

// ---------------------------------------------------------------------------
// Tokens and errors

void Parser::advance() {
  if (!tok_.error.empty() && !panic_) report(tok_.error_loc, tok_.error);
  prev_end_ = tok_.end;
  reset(tok_.end);
}

bool Parser::accept(Tok k) {
  if (!at(k)) return false;
  advance();
  return true;
}

bool Parser::expect(Tok k) {
  if (accept(k)) return true;
  unexpected(describe(k));
  return false;
}

void Parser::report(Loc loc, std::string msg) {
  // One error per location: unwinding from an error must not repeat it.
  if (loc.begin == last_error_ || stopped_) return;
  last_error_ = loc.begin;
  diags_.error(loc, std::move(msg));
  if (++errors_ < kMaxErrors) return;
  // Enough: a broken or binary input would otherwise give an error per line.
  diags_.error_unlocated(fmt::format("too many errors ({}), stopping", errors_));
  stopped_ = true;
  panic_ = true;
  reset(lexer_.size());
}

void Parser::fail(Loc loc, std::string msg) {
  if (!panic_) report(loc, std::move(msg));
  panic_ = true;
}

void Parser::unexpected(std::string_view expected) {
  if (!tok_.error.empty()) {
    fail(tok_.error_loc, tok_.error);
  } else if (at(Tok::Eof)) {
    fail(eof_loc(), expected.empty() ? std::string("unexpected end of file")
                                     : fmt::format("unexpected end of file, expected {}", expected));
  } else {
    std::string msg = fmt::format("syntax error, unexpected {}", describe(tok_.kind));
    if (!expected.empty()) msg += fmt::format(", expected {}", expected);
    fail(tok_.loc(), std::move(msg));
  }
}

// End of file is shown just after the last visible character.
Loc Parser::find_eof_loc() const {
  std::string_view text = lexer_.text();
  auto k = static_cast<uint32_t>(text.size());
  while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t' || text[k - 1] == '\n' || text[k - 1] == '\r')) --k;
  if (k < text.size()) return {k, k + 1};
  return {k, k};
}

// Skips the rest of a broken statement: through ';', up to '}', or through one
// balanced '{...}' (the body of a broken if/while/for).
void Parser::sync_stmt() {
  while (!at(Tok::Eof)) {
    if (at(Tok::Semi)) {
      advance();
      break;
    }
    if (at(Tok::RBrace)) break;
    if (at(Tok::LBrace)) {
      skip_balanced();
      break;
    }
    advance();
  }
  if (!at(Tok::Eof)) panic_ = false;
}

void Parser::sync_top() {
  while (!at(Tok::Eof)) {
    if (at(Tok::LBrace)) {
      skip_balanced();
      break;
    }
    if (at(Tok::RBrace) || at(Tok::Semi)) {
      advance();
      break;
    }
    advance();
  }
  if (!at(Tok::Eof)) panic_ = false;
}

void Parser::skip_balanced() {
  uint32_t depth = 0;
  do {
    if (at(Tok::LBrace)) ++depth;
    if (at(Tok::RBrace)) --depth;
    advance();
  } while (depth > 0 && !at(Tok::Eof));
}

ExprId Parser::add(Expr e) {
  uint32_t height = 1;
  for (ExprId a : e.args) height = std::max(height, heights_[a] + 1);
  if (height > static_cast<uint32_t>(kMaxExprDepth)) fail(e.loc, "nesting too deep");
  heights_.push_back(height);
  prog_.exprs.push_back(std::move(e));
  return static_cast<ExprId>(prog_.exprs.size() - 1);
}

ExprId Parser::add(ExprKind kind, Loc loc, std::vector<ExprId> args, Op op, std::string name) {
  Expr e;
  e.kind = kind;
  e.loc = loc;
  e.op = op;
  e.name = std::move(name);
  e.args = std::move(args);
  return add(std::move(e));
}

StmtId Parser::add(Stmt s) {
  prog_.stmts.push_back(std::move(s));
  return static_cast<StmtId>(prog_.stmts.size() - 1);
}

// ---------------------------------------------------------------------------
// Top level: prefix, config, probes

std::optional<Program> Parser::run() {
  if (lexer_.text().size() >= UINT32_MAX / 2) {
    diags_.error_unlocated("script too large");
    return std::nullopt;
  }
  reset(0);
  while (!at(Tok::Eof)) {
    const uint32_t before = tok_.begin;
    // An imported file (appended by load_imports()) has a prefix and
    // preamble of its own.
    if (const uint32_t file = prog_.source.file_start(tok_.begin); file != file_start_) {
      file_start_ = file;
      seen_probe_ = false;
    }
    parse_top_level();
    if (panic_) sync_top();
    if (tok_.begin == before && !at(Tok::Eof)) advance();  // always make progress
  }
  if (errors_ > 0) return std::nullopt;
  return std::move(prog_);
}

ExprId Parser::run_expr(uint32_t begin) {
  reset(begin);
  ExprId e = parse_expr();
  if (!at(Tok::Eof) && errors_ == 0) unexpected("end of expression");
  return errors_ > 0 ? kNone : e;
}

void Parser::parse_top_level() {
  switch (tok_.kind) {
    case Tok::Preproc:
      preprocessor();
      return;
    case Tok::Config:
      if (peek().kind != Tok::Assign) break;
      if (file_start_ != 0) return fail(tok_.loc(), "config is not allowed in an imported file");
      return parse_config();
    case Tok::Import:
      return parse_import();
    case Tok::Macro:
      return parse_macro();
    case Tok::Let:
      return parse_map_decl();
    case Tok::Ident:
      if (is_tag(tok_.text)) return c_definition();
      break;
    default:
      break;
  }
  parse_probe();
}

void Parser::preprocessor() {
  const Token t = tok_;
  advance();
  if (t.begin == 0 && t.text.starts_with("#!")) return;  // shebang
  if (seen_probe_) return report(t.loc(), "syntax error, unexpected preprocessor directive");
  std::string_view line = t.text;
  size_t i = 1;
  auto skip_blanks = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  auto word = [&] {
    const size_t b = i;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
    return line.substr(b, i - b);
  };
  skip_blanks();
  const std::string_view directive = word();
  skip_blanks();
  if (directive == "include") {
    const char open = i < line.size() ? line[i] : 0;
    const char close = open == '<' ? '>' : open == '"' ? '"' : 0;
    const size_t end = close ? line.find(close, i + 1) : std::string_view::npos;
    if (end == std::string_view::npos)
      return report(t.loc(), "#include expects \"FILENAME\" or <FILENAME>");
    prog_.includes.emplace_back(line.substr(i + 1, end - i - 1));
  } else if (directive == "define") {
    const std::string_view name = word();
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
      return report(t.loc(), "macro names must be identifiers");
    // Function-like macros cannot be used in probe bodies (REFERENCE 1.2): not recorded.
    if (i < line.size() && line[i] == '(') return;
    prog_.defines.push_back({std::string(name), define_value(line.substr(i)), t.loc()});
  }
  // #ifdef, #if, #else, #endif, #undef, #pragma ...: ignored.
}

void Parser::c_definition() {
  const uint32_t begin = tok_.begin;
  const RawScan r = lexer_.c_definition(begin);
  if (!r.error.empty()) {
    fail(r.error_loc.begin >= lexer_.size() ? eof_loc() : r.error_loc, r.error);
    reset(r.end);
    return;
  }
  prog_.c_definitions.push_back({std::string(lexer_.text().substr(begin, r.end - begin)), {begin, r.end}});
  reset(r.end);
}

// import "path"; (load_imports() has read the file): in the preamble only.
void Parser::parse_import() {
  const Loc at_import = tok_.loc();
  advance();  // import
  if (!at(Tok::String)) return unexpected("a quoted path");
  const Loc path = tok_.loc();
  advance();
  if (!expect(Tok::Semi)) return;
  if (seen_probe_) report(join(at_import, path), "import must come before the first probe");
}

// config = { key = value; ... }: keys and values kept as raw text.
void Parser::parse_config() {
  advance();  // config
  if (!expect(Tok::Assign) || !expect(Tok::LBrace)) return;
  if (!parse_config_entries()) {
    // Skip the rest of the block, so the error is reported once.
    while (!at(Tok::RBrace) && !at(Tok::Eof) && !at(Tok::LBrace)) advance();
    if (!accept(Tok::RBrace)) return;
    panic_ = false;
  }
  accept(Tok::Semi);
}

bool Parser::parse_config_entries() {
  while (!at(Tok::RBrace) && !at(Tok::Eof)) {
    if (!at(Tok::Ident)) return unexpected("config key"), false;
    std::string key = tok_.text;
    const Loc key_loc = tok_.loc();
    advance();
    if (!expect(Tok::Assign)) return false;
    // A value is one integer, string or word (max_strlen = 100, on_stack_full = error).
    if (!at(Tok::Int) && !at(Tok::String) && !at(Tok::Ident)) return unexpected("config value"), false;
    prog_.config.emplace_back(std::move(key), std::string(slice(tok_)));
    prog_.config_locs.push_back(join(key_loc, tok_.loc()));
    advance();
    if (!accept(Tok::Semi)) break;
  }
  return accept(Tok::RBrace) || (unexpected("}"), false);
}

void Parser::parse_probe() {
  Probe p;
  uint32_t pos = tok_.begin;
  for (;;) {
    const RawScan r = lexer_.attach_point(pos);
    if (!r.error.empty()) {
      reset(r.end);
      return fail(r.error_loc, r.error);
    }
    if (r.end == pos) {
      reset(pos);
      return unexpected();
    }
    p.points.push_back({std::string(lexer_.text().substr(pos, r.end - pos)), {pos, r.end}});
    const uint32_t next = lexer_.skip_space(r.end);
    if (next < lexer_.size() && lexer_.text()[next] == ',') {
      pos = lexer_.skip_space(next + 1);
      continue;
    }
    prev_end_ = r.end;
    reset(next);
    break;
  }
  p.loc = {p.points.front().loc.begin, p.points.back().loc.end};
  seen_probe_ = true;
  if (accept(Tok::Slash)) {
    // The predicate ends at the '/' followed by '{' (parse_binary stops there).
    p.predicate = parse_expr();
    if (!panic_) expect(Tok::Slash);
    if (panic_) {
      while (!at(Tok::Eof) && !at(Tok::LBrace) && !at(Tok::RBrace)) advance();
      if (!at(Tok::LBrace)) return;
      panic_ = false;
    }
  }
  if (!at(Tok::LBrace)) return unexpected("{");
  p.body = parse_block();
  prog_.probes.push_back(std::move(p));
}

// macro NAME [(params)] { stmts; [value] }
void Parser::parse_macro() {
  advance();  // macro
  Macro m;
  if (!at(Tok::Ident)) return unexpected("macro name");
  m.name = tok_.text;
  m.loc = tok_.loc();
  advance();
  if (accept(Tok::LParen)) {
    while (!at(Tok::RParen)) {
      if (!at(Tok::Variable) && !at(Tok::Map) && !at(Tok::Ident))
        return unexpected("a macro parameter ($var, @map or name)");
      for (const auto& p : m.params)
        if (p.first == tok_.text) return fail(tok_.loc(), fmt::format("duplicate macro parameter {}", tok_.text));
      m.params.emplace_back(tok_.text, tok_.loc());
      advance();
      if (!accept(Tok::Comma)) break;
    }
    if (!expect(Tok::RParen)) return;
  }
  if (!at(Tok::LBrace)) return unexpected("{");
  m.body = parse_block(&m.value);
  prog_.macros.push_back(std::move(m));
}

// let @name = kind(max_entries);  (the kind is checked by sema)
void Parser::parse_map_decl() {
  MapDecl d;
  d.loc.begin = tok_.begin;
  advance();  // let
  if (!at(Tok::Map)) return unexpected("map name");
  d.name = tok_.text;
  advance();
  if (!expect(Tok::Assign)) return;
  if (!at(Tok::Ident)) return unexpected("map type");
  d.kind = tok_.text;
  d.kind_loc = tok_.loc();
  advance();
  if (!expect(Tok::LParen)) return;
  if (!at(Tok::Int)) return unexpected("integer");
  d.max_entries = tok_.ival;
  advance();
  if (!expect(Tok::RParen)) return;
  d.loc.end = prev_end_;
  if (!expect(Tok::Semi)) return;
  prog_.map_decls.push_back(std::move(d));
}

// ---------------------------------------------------------------------------
// Statements

// With `tail`, a final expression statement without ';' is taken out of the
// block into *tail (a block expression's value).
std::vector<StmtId> Parser::parse_block(ExprId* tail) {
  std::vector<StmtId> body;
  if (depth_ >= kMaxNesting) {
    fail(tok_.loc(), "nesting too deep");
    return body;
  }
  if (!expect(Tok::LBrace)) return body;
  panic_ = false;  // a '{' is a synchronisation point
  ++depth_;
  while (!at(Tok::RBrace) && !at(Tok::Eof)) {
    const uint32_t before = tok_.begin;
    if (auto s = parse_stmt()) body.push_back(*s);
    if (panic_) sync_stmt();
    if (tok_.begin == before && !at(Tok::RBrace) && !at(Tok::Eof)) advance();  // always make progress
  }
  --depth_;
  if (tail && !body.empty() && !last_semi_ && prog_.stmts[body.back()].kind == StmtKind::Expr &&
      prog_.stmts[body.back()].loc.end == prev_end_) {
    *tail = prog_.stmts[body.back()].expr;
    body.pop_back();
  } else if (tail && !body.empty() && prog_.stmts[body.back()].kind == StmtKind::If &&
             prog_.stmts[body.back()].has_else) {
    // A block's last `if ... else ...` is its value when its branches have one.
    if (const ExprId v = if_value(body.back()); v != kNone) {
      *tail = v;
      body.pop_back();
    }
  }
  expect(Tok::RBrace);
  return body;
}

std::optional<StmtId> Parser::parse_stmt() {
  const uint32_t start = tok_.begin;
  switch (tok_.kind) {
    case Tok::Semi:
      advance();  // an empty statement
      return std::nullopt;
    case Tok::LBrace: {
      Stmt s;
      s.kind = StmtKind::Block;
      s.body = parse_block();
      s.loc = {start, prev_end_};
      return add(std::move(s));
    }
    case Tok::If:
      return parse_if();
    case Tok::While:
    case Tok::Unroll:
      return parse_loop();
    case Tok::For:
      return parse_for();
    default:
      break;
  }
  // Simple statements, ended by ';' or the block's '}'.
  Stmt s;
  switch (tok_.kind) {
    case Tok::Return:
      advance();
      s.kind = StmtKind::Return;
      if (!at(Tok::Semi) && !at(Tok::RBrace) && !at(Tok::Eof)) s.expr = parse_expr();
      break;
    case Tok::Break:
    case Tok::Continue:
      s.kind = at(Tok::Break) ? StmtKind::Break : StmtKind::Continue;
      advance();
      break;
    case Tok::Let:
      parse_let(s);
      break;
    default:
      parse_expr_stmt(s);
      break;
  }
  s.loc = {start, prev_end_};
  const StmtId id = add(std::move(s));
  // In panic mode the ';' is left to sync_stmt.
  last_semi_ = !panic_ && accept(Tok::Semi);
  if (!panic_ && !last_semi_ && !at(Tok::RBrace) && !at(Tok::Eof)) unexpected("; or }");
  return id;
}

void Parser::parse_expr_stmt(Stmt& s) {
  method_call_ = kNone;
  const ExprId e = parse_expr();
  s.kind = StmtKind::Expr;
  s.expr = e;
  if (method_call_ != kNone) {
    // ply: @m.quantize(x) is @m = quantize(x); nothing else may use it.
    const Expr& call = prog_.exprs[method_call_];
    if (e != method_call_)
      return fail(call.loc, fmt::format("{}.{}() is a statement of its own: write {} = {}(...)",
                                        prog_.exprs[method_map_].name, call.name, prog_.exprs[method_map_].name,
                                        call.name));
    s.kind = StmtKind::Assign;
    s.expr = kNone;
    s.target = method_map_;
    s.value = e;
    prog_.exprs[e].loc.begin = prog_.exprs[method_map_].loc.end + 1;
    return;
  }
  Op op = Op::None;
  for (const auto& c : kCompoundAssign)
    if (at(c.tok)) op = c.op;
  if (panic_ || (op == Op::None && !at(Tok::Assign))) return;
  const Expr& target = prog_.exprs[e];
  if (target.kind == ExprKind::Field && !target.name.empty() && std::isdigit(static_cast<unsigned char>(target.name[0])))
    return fail(target.loc, "Tuples are immutable once created. Consider creating a new tuple and assigning it instead.");
  const bool discard = target.kind == ExprKind::Identifier && target.name == "_" && op == Op::None;
  if (target.kind != ExprKind::Variable && target.kind != ExprKind::Map && !discard) return unexpected();
  advance();
  s.kind = StmtKind::Assign;
  s.expr = kNone;
  s.target = e;
  s.op = op;
  s.value = parse_expr();
  if (discard) {
    // _ = expr: the expression, its value unused.
    s.kind = StmtKind::Expr;
    s.expr = s.value;
    s.target = s.value = kNone;
    return;
  }
  // @m[k] = delete() (bpftrace 2018) and @m[k] = nil (ply): delete(@m[k]).
  Expr& v = prog_.exprs[s.value];
  const bool old_delete = v.kind == ExprKind::Call && v.name == "delete" && v.args.empty();
  const bool nil = v.kind == ExprKind::Identifier && v.name == "nil";
  if (op == Op::None && prog_.exprs[e].kind == ExprKind::Map && (old_delete || nil)) {
    v.kind = ExprKind::Call;
    v.name = "delete";
    v.args = {e};
    s.kind = StmtKind::Expr;
    s.expr = s.value;
    s.target = s.value = kNone;
  }
}

void Parser::parse_let(Stmt& s) {
  advance();  // let
  s.kind = StmtKind::Let;
  if (!at(Tok::Variable)) return unexpected("variable");
  s.target = add(ExprKind::Variable, tok_.loc(), {}, Op::None, tok_.text);
  advance();
  if (accept(Tok::Colon)) s.type_name = parse_type(&s.type_of);
  if (accept(Tok::Assign)) s.value = parse_expr();
}

// if (c) {..} else if (c) {..} else {..}. An else-if chain is built in a loop.
StmtId Parser::parse_if() {
  StmtId first = kNone;
  StmtId prev = kNone;
  std::vector<StmtId> chain;
  int else_ifs = 0;
  for (;;) {
    Stmt s;
    s.kind = StmtKind::If;
    s.loc.begin = tok_.begin;
    advance();  // if
    // `if (c) {` and `if c {`: a parenthesised condition is an expression too.
    s.expr = parse_expr();
    s.body = parse_block();
    const StmtId id = add(std::move(s));
    chain.push_back(id);
    if (prev != kNone) {
      prog_.stmts[prev].else_body = {id};
      prog_.stmts[prev].has_else = true;
    } else {
      first = id;
    }
    prev = id;
    if (!accept(Tok::Else)) break;
    if (at(Tok::If)) {
      // Each else-if nests one level deeper in the tree: it counts as nesting.
      if (depth_ >= kMaxNesting) {
        fail(tok_.loc(), "nesting too deep");
        break;
      }
      ++depth_;
      ++else_ifs;
      continue;
    }
    prog_.stmts[id].has_else = true;
    std::vector<StmtId> else_body = parse_block();
    prog_.stmts[id].else_body = std::move(else_body);
    break;
  }
  depth_ -= else_ifs;
  for (StmtId id : chain) prog_.stmts[id].loc.end = prev_end_;
  return first;
}

// while (c) {..} and unroll (n) {..}
StmtId Parser::parse_loop() {
  Stmt s;
  s.kind = at(Tok::While) ? StmtKind::While : StmtKind::Unroll;
  s.loc.begin = tok_.begin;
  advance();
  if (expect(Tok::LParen)) {
    s.expr = parse_expr();
    if (expect(Tok::RParen)) s.body = parse_block();
  }
  s.loc.end = prev_end_;
  return add(std::move(s));
}

// for ($kv : @m) {..} and for ($i : a..b) {..}
StmtId Parser::parse_for() {
  Stmt s;
  s.kind = StmtKind::For;
  s.loc.begin = tok_.begin;
  advance();
  // `for ($x : e) {` and `for $x : e {`.
  bool paren = accept(Tok::LParen);
  if (!at(Tok::Variable)) {
    unexpected(paren ? "variable" : "( or a variable");
  } else {
    s.iter_var = tok_.text;
    advance();
    if (expect(Tok::Colon)) {
      s.expr = parse_expr();
      if (accept(Tok::DotDot)) s.range_end = parse_expr();
      if (!paren || expect(Tok::RParen)) s.body = parse_block();
    }
  }
  s.loc.end = prev_end_;
  return add(std::move(s));
}

// ---------------------------------------------------------------------------
// Expressions

template <typename F>
ExprId Parser::nested(F parse) {
  if (depth_ >= kMaxNesting) {
    fail(tok_.loc(), "nesting too deep");
    return error_expr();
  }
  ++depth_;
  const ExprId id = parse();
  --depth_;
  return id;
}

// c ? a : b (right associative) and a ?: b (Ternary with two args).
ExprId Parser::parse_ternary() {
  const uint32_t start = tok_.begin;
  const ExprId cond = parse_binary();
  if (!accept(Tok::Question)) return cond;
  std::vector<ExprId> args = {cond};
  if (!accept(Tok::Colon)) {
    args.push_back(parse_expr());
    if (!expect(Tok::Colon)) return add(ExprKind::Ternary, {start, prev_end_}, std::move(args));
  }
  args.push_back(parse_expr());
  return add(ExprKind::Ternary, {start, prev_end_}, std::move(args));
}

// Operator precedence by an explicit operand/operator stack: no recursion per
// precedence level.
ExprId Parser::parse_binary() {
  struct Operand {
    ExprId id;
    Loc span;  // includes any parentheses around the operand
  };
  struct Pending {
    Op op;
    int prec;
  };
  std::vector<Operand> vals;
  std::vector<Pending> ops;
  auto operand = [&] {
    const uint32_t begin = tok_.begin;
    const ExprId id = parse_unary();
    vals.push_back({id, {begin, prev_end_ > begin ? prev_end_ : begin}});
  };
  auto reduce = [&] {
    const Operand rhs = vals.back();
    vals.pop_back();
    const Operand lhs = vals.back();
    vals.pop_back();
    const Loc span = join(lhs.span, rhs.span);
    vals.push_back({add(ExprKind::Binary, span, {lhs.id, rhs.id}, ops.back().op), span});
    ops.pop_back();
  };
  operand();
  while (!panic_) {
    const BinaryOp* b = nullptr;
    for (const auto& candidate : kBinaryOps)
      if (at(candidate.tok)) b = &candidate;
    if (!b) break;
    // In a predicate, the '/' followed by '{' ends it: never a division.
    if (b->tok == Tok::Slash && peek().kind == Tok::LBrace) break;
    while (!ops.empty() && ops.back().prec >= b->prec) reduce();
    ops.push_back({b->op, b->prec});
    advance();
    operand();
  }
  while (!ops.empty()) reduce();
  return vals.back().id;
}

ExprId Parser::parse_unary() {
  const uint32_t start = tok_.begin;
  auto operand = [this] { return nested([this] { return parse_unary(); }); };
  for (const auto& u : kUnaryOps) {
    if (!accept(u.tok)) continue;
    const ExprId x = operand();
    return add(ExprKind::Unary, {start, prev_end_}, {x}, u.op);
  }
  if (at(Tok::Inc) || at(Tok::Dec)) {
    const Op op = at(Tok::Inc) ? Op::PreInc : Op::PreDec;
    const Loc op_loc = tok_.loc();
    advance();
    const ExprId x = operand();
    check_incdec(x, op, op_loc);
    return add(ExprKind::IncDec, {start, prev_end_}, {x}, op);
  }
  if (at(Tok::LParen) && cast_ahead()) {
    advance();
    ExprId type_of = kNone;
    std::string type = parse_type(&type_of);
    expect(Tok::RParen);
    const ExprId x = operand();
    const ExprId cast = add(ExprKind::Cast, {start, prev_end_}, {x}, Op::None, std::move(type));
    prog_.exprs[cast].type_of = type_of;
    return cast;
  }
  return parse_postfix();
}

void Parser::check_incdec(ExprId target, Op op, Loc op_loc) {
  const ExprKind k = prog_.exprs[target].kind;
  if (panic_ || k == ExprKind::Variable || k == ExprKind::Map) return;
  const bool inc = op == Op::PreInc || op == Op::PostInc;
  report(op_loc, fmt::format("The {} operator must be applied to a map or variable", inc ? "++" : "--"));
}

ExprId Parser::parse_postfix() {
  const uint32_t start = tok_.begin;
  ExprId e = parse_primary();
  while (!panic_) {
    if (at(Tok::Dot) || at(Tok::Arrow)) {
      const bool arrow = at(Tok::Arrow);
      advance();
      // x.name, x->name, and x.0 for tuples; keywords are valid field names.
      if (!at(Tok::Ident) && !at(Tok::Int) && !is_keyword(tok_.kind)) {
        unexpected("field name");
        break;
      }
      std::string name(slice(tok_));
      advance();
      if (!arrow && prog_.exprs[e].kind == ExprKind::Map && at(Tok::LParen)) {
        advance();
        Expr call;
        call.kind = ExprKind::Call;
        call.name = std::move(name);
        parse_call_args(call);
        call.loc = {start, prev_end_};
        method_map_ = e;
        e = method_call_ = add(std::move(call));
        continue;
      }
      e = add(ExprKind::Field, {start, prev_end_}, {e}, Op::None, std::move(name));
      prog_.exprs[e].arrow = arrow;
    } else if (accept(Tok::LBracket)) {
      const ExprId index = parse_expr();
      expect(Tok::RBracket);
      e = add(ExprKind::Index, {start, prev_end_}, {e, index});
    } else if (at(Tok::Inc) || at(Tok::Dec)) {
      const Op op = at(Tok::Inc) ? Op::PostInc : Op::PostDec;
      check_incdec(e, op, tok_.loc());
      advance();
      e = add(ExprKind::IncDec, {start, prev_end_}, {e}, op);
    } else {
      break;
    }
  }
  return e;
}

// A comma-separated list up to `close`, for call arguments and map keys.
std::vector<ExprId> Parser::parse_list(Tok close) {
  std::vector<ExprId> items;
  if (!at(close)) {
    do {
      items.push_back(parse_expr());
    } while (!panic_ && accept(Tok::Comma));
  }
  expect(close);
  return items;
}

// A call's arguments up to ')'. An argument may be named, `name = expr`
// (printf's structured events, a bpfscope extension): an identifier and a
// single '=' (not '=='), as in a record. Names are unique; sema checks which
// calls take them.
void Parser::parse_call_args(Expr& call) {
  std::vector<std::string> names;
  if (!at(Tok::RParen)) {
    do {
      std::string name;
      if (at(Tok::Ident) && peek().kind == Tok::Assign) {
        if (std::find(names.begin(), names.end(), tok_.text) != names.end()) {
          fail(tok_.loc(), fmt::format("Duplicate argument name: {}", tok_.text));
          break;
        }
        name = tok_.text;
        advance();
        advance();
      }
      names.push_back(std::move(name));
      call.args.push_back(parse_expr());
    } while (!panic_ && accept(Tok::Comma));
  }
  expect(Tok::RParen);
  if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return !n.empty(); }))
    call.field_names = std::move(names);
}

// An if-else statement as an expression: c ? { a } : { b }, each branch's
// last expression statement (or if-else) its value; kNone when a branch has
// none.
ExprId Parser::if_value(StmtId id) {
  const Stmt& s = prog_.stmts[id];
  ExprId branches[2];
  const std::vector<StmtId>* bodies[2] = {&s.body, &s.else_body};
  for (int i = 0; i < 2; ++i) {
    std::vector<StmtId> body = *bodies[i];
    if (body.empty()) return kNone;
    const Stmt& last = prog_.stmts[body.back()];
    ExprId value = kNone;
    if (last.kind == StmtKind::Expr) value = last.expr;
    else if (last.kind == StmtKind::If && last.has_else) value = if_value(body.back());
    if (value == kNone) return kNone;
    body.pop_back();
    Expr b;
    b.kind = ExprKind::Block;
    b.loc = prog_.stmts[(*bodies[i]).front()].loc;
    b.loc.end = prog_.stmts[(*bodies[i]).back()].loc.end;
    b.body = std::move(body);
    b.args = {value};
    branches[i] = add(std::move(b));
  }
  return add(ExprKind::Ternary, s.loc, {s.expr, branches[0], branches[1]});
}

// { stmts; value }: a block expression (0.26), the value of its last
// expression (none when it ends with ';').
ExprId Parser::parse_block_expr() {
  Expr e;
  e.kind = ExprKind::Block;
  e.loc.begin = tok_.begin;
  ExprId value = kNone;
  e.body = parse_block(&value);
  if (value != kNone) e.args.push_back(value);
  e.loc.end = prev_end_;
  return add(std::move(e));
}

// if (c) { a } else { b } as an expression (0.26): c ? { a } : { b }, each
// branch a block expression; `else if` nests.
ExprId Parser::parse_if_expr() {
  const uint32_t begin = tok_.begin;
  advance();  // if
  const ExprId cond = parse_expr();
  if (!at(Tok::LBrace)) return unexpected("{"), error_expr();
  const ExprId then = parse_block_expr();
  if (!accept(Tok::Else)) {
    fail({begin, prev_end_}, "an if expression needs an else branch");
    return error_expr();
  }
  ExprId other = kNone;
  if (at(Tok::If)) {
    if (depth_ >= kMaxNesting) return fail(tok_.loc(), "nesting too deep"), error_expr();
    ++depth_;
    other = parse_if_expr();
    --depth_;
  } else if (at(Tok::LBrace)) {
    other = parse_block_expr();
  } else {
    return unexpected("{ or if"), error_expr();
  }
  return add(ExprKind::Ternary, {begin, prev_end_}, {cond, then, other});
}

ExprId Parser::parse_primary() {
  const Token t = tok_;
  Expr e;
  e.loc = t.loc();
  switch (t.kind) {
    case Tok::Int:
    case Tok::Positional:
      e.kind = t.kind == Tok::Int ? ExprKind::Integer : ExprKind::Positional;
      e.ival = t.ival;
      break;
    case Tok::Float:
      e.kind = ExprKind::Float;
      e.fval = t.fval;
      break;
    case Tok::String:
      e.kind = ExprKind::String;
      e.sval = t.text;
      break;
    case Tok::Variable:
    case Tok::Map:
      e.kind = t.kind == Tok::Map ? ExprKind::Map : ExprKind::Variable;
      e.name = t.text;
      break;
    case Tok::PositionalCount:
      e.kind = ExprKind::PositionalCount;
      break;
    case Tok::Config:  // the config builtin (config.max_strlen); `config = {` at the top is the settings block
    case Tok::Ident:
      if (typeof_ahead()) return parse_typeof();
      e.kind = ExprKind::Identifier;
      e.name = t.text;
      if (t.text == "true" || t.text == "false") {
        // A bool literal: an Integer that keeps its spelling (sema types it bool).
        e.kind = ExprKind::Integer;
        e.ival = t.text == "true";
      }
      break;
    case Tok::Sizeof:
      return parse_sizeof();
    case Tok::Offsetof:
      return parse_offsetof();
    case Tok::LBrace:
      return parse_block_expr();
    case Tok::If:
      return parse_if_expr();
    case Tok::LParen:
      return parse_paren();
    default:
      unexpected();
      return error_expr();
  }
  advance();
  if (e.kind == ExprKind::Map && accept(Tok::LBracket)) {
    // @m[k1, k2]: at least one key.
    e.args = at(Tok::RBracket) ? (unexpected(), std::vector<ExprId>{}) : parse_list(Tok::RBracket);
    e.loc.end = prev_end_;
  } else if (e.kind == ExprKind::Identifier && accept(Tok::LParen)) {
    e.kind = ExprKind::Call;
    parse_call_args(e);
    e.loc.end = prev_end_;
  }
  return add(std::move(e));
}

// (e), and tuples (a, b) and (a,).
ExprId Parser::parse_paren() {
  const uint32_t start = tok_.begin;
  advance();
  if ((at(Tok::Ident) || at(Tok::String)) && peek().kind == Tok::Assign) return parse_record(start);
  const ExprId first = parse_expr();
  if (!at(Tok::Comma)) {
    expect(Tok::RParen);
    return first;
  }
  std::vector<ExprId> items = {first};
  while (!panic_ && accept(Tok::Comma) && !at(Tok::RParen)) items.push_back(parse_expr());
  expect(Tok::RParen);
  return add(ExprKind::Tuple, {start, prev_end_}, std::move(items));
}

// At the first field of a record (a=1, b="x") (0.25), after its '('. A
// quoted name may hold spaces ("Local Address" = ...), a bpfscope extension
// for the "name = value" lines of libbpf-tools' histograms.
ExprId Parser::parse_record(uint32_t start) {
  std::vector<ExprId> items;
  std::vector<std::string> names;
  do {
    if (!at(Tok::Ident) && !at(Tok::String)) {
      unexpected("field name");
      break;
    }
    if (std::find(names.begin(), names.end(), tok_.text) != names.end()) {
      fail(tok_.loc(), fmt::format("Duplicate field name in record: {}", tok_.text));
      break;
    }
    names.push_back(tok_.text);
    advance();
    if (!expect(Tok::Assign)) break;
    items.push_back(parse_expr());
  } while (!panic_ && accept(Tok::Comma) && !at(Tok::RParen));
  expect(Tok::RParen);
  const ExprId id = add(ExprKind::Tuple, {start, prev_end_}, std::move(items));
  prog_.exprs[id].field_names = std::move(names);
  return id;
}

ExprId Parser::parse_sizeof() {
  Expr e;
  e.kind = ExprKind::Sizeof;
  e.loc.begin = tok_.begin;
  advance();
  if (expect(Tok::LParen)) {
    if (type_ahead()) {
      e.type_arg = true;
      e.name = parse_type(&e.type_of);
    } else {
      e.args.push_back(parse_expr());
    }
    expect(Tok::RParen);
  }
  e.loc.end = prev_end_;
  return add(std::move(e));
}

// offsetof(struct X, field[.subfield...]) and offsetof(expr, field), e.g.
// offsetof(*curtask, comm).
ExprId Parser::parse_offsetof() {
  Expr e;
  e.kind = ExprKind::Offsetof;
  e.loc.begin = tok_.begin;
  advance();
  if (expect(Tok::LParen)) {
    const bool type = at(Tok::Ident) && (is_tag(tok_.text) || (!is_builtin(tok_.text) && peek().kind == Tok::Comma));
    if (type)
      e.name = parse_type();
    else
      e.args.push_back(parse_expr());
    if (expect(Tok::Comma)) {
      for (;;) {
        if (!at(Tok::Ident) && !is_keyword(tok_.kind)) {
          unexpected("field name");
          break;
        }
        e.sval += slice(tok_);
        advance();
        if (!accept(Tok::Dot)) break;
        e.sval += '.';
      }
      expect(Tok::RParen);
    }
  }
  e.loc.end = prev_end_;
  return add(std::move(e));
}

// typeof(T) or typeof(expr) (0.26): in an expression, a type argument for a
// macro; in a type, that type (parse_type).
ExprId Parser::parse_typeof() {
  Expr e;
  e.kind = ExprKind::Typeof;
  e.loc.begin = tok_.begin;
  advance();  // typeof
  if (expect(Tok::LParen)) {
    if (depth_ >= kMaxNesting) {
      fail(tok_.loc(), "nesting too deep");
    } else if (type_ahead()) {
      e.type_arg = true;
      ++depth_;
      e.name = parse_type(&e.type_of);
      --depth_;
    } else {
      e.args.push_back(parse_expr());
    }
    expect(Tok::RParen);
  }
  e.loc.end = prev_end_;
  return add(std::move(e));
}

// A type name: NAME or struct|union|enum NAME, then '*'s, then [N]s. The text
// is normalised: "struct sock *", "int32 **", "uint8[4]". The name may be
// typeof(T), which is T, or typeof(expr): then *type_of is the expression
// and the text holds only what follows it (" *", "[2]").
std::string Parser::parse_type(ExprId* type_of) {
  std::string type;
  if (typeof_ahead()) {
    const Loc loc = tok_.loc();
    const ExprId id = parse_typeof();
    const Expr& t = prog_.exprs[id];
    const ExprId base = t.type_arg ? t.type_of : t.args.empty() ? kNone : t.args[0];
    if (t.type_arg) type = t.name;
    if (base != kNone) {
      if (type_of) *type_of = base;
      else fail(loc, "typeof of an expression cannot be used here: write a type name");
    }
  } else if (!at(Tok::Ident)) {
    unexpected("type name");
    return {};
  } else {
    type = tok_.text;
    advance();
  }
  if (is_tag(type)) {
    if (!at(Tok::Ident)) {
      unexpected("identifier");
      return type;
    }
    type += ' ' + tok_.text;
    advance();
  }
  std::string stars;
  while (accept(Tok::Star)) stars += '*';
  if (!stars.empty()) type += (type.ends_with('*') ? "" : " ") + stars;
  while (accept(Tok::LBracket)) {
    if (accept(Tok::RBracket)) {  // int8[]: the size from what is cast
      type += "[]";
      continue;
    }
    if (!at(Tok::Int)) {
      unexpected("integer");
      return type;
    }
    type += fmt::format("[{}]", tok_.ival);
    advance();
    if (!expect(Tok::RBracket)) return type;
  }
  return type;
}

// At '(': is this a cast? A parenthesised type name (not a builtin) followed
// by the start of an expression is one (REFERENCE 1.5): `(uint8)x`,
// `(struct sock *)arg0`, `(myident)*$a`; but `(pid)*tid` multiplies.
bool Parser::cast_ahead() const {
  Token t = lexer_.lex(tok_.end);
  if (t.kind != Tok::Ident || is_builtin(t.text)) return false;
  if (t.text == "typeof" && lexer_.lex(t.end).kind == Tok::LParen) {
    // (typeof(...)): the type of what the parentheses hold.
    int depth = 0;
    do {
      t = lexer_.lex(t.end);
      if (t.kind == Tok::LParen) ++depth;
      if (t.kind == Tok::RParen) --depth;
    } while (depth > 0 && t.kind != Tok::Eof);
    if (t.kind != Tok::RParen) return false;
  } else if (is_tag(t.text)) {
    t = lexer_.lex(t.end);
    if (t.kind != Tok::Ident) return false;
  }
  t = lexer_.lex(t.end);
  while (t.kind == Tok::Star) t = lexer_.lex(t.end);
  while (t.kind == Tok::LBracket) {
    t = lexer_.lex(t.end);
    if (t.kind == Tok::Int) t = lexer_.lex(t.end);
    if (t.kind != Tok::RBracket) return false;
    t = lexer_.lex(t.end);
  }
  if (t.kind != Tok::RParen) return false;
  return starts_expr(lexer_.lex(t.end).kind);
}

// Inside sizeof(: a type rather than an expression?
// A name followed by '*'s and [N]s is a type (sizeof(uint64 *[2])); so is
// typeof(...).
bool Parser::type_ahead() const {
  if (!at(Tok::Ident)) return false;
  if (is_tag(tok_.text) || is_scalar_type(tok_.text) || typeof_ahead()) return true;
  if (is_builtin(tok_.text)) return false;
  Token t = peek();
  while (t.kind == Tok::Star) t = lexer_.lex(t.end);
  while (t.kind == Tok::LBracket) {
    t = lexer_.lex(t.end);
    if (t.kind != Tok::Int) return false;
    t = lexer_.lex(t.end);
    if (t.kind != Tok::RBracket) return false;
    t = lexer_.lex(t.end);
  }
  return t.kind == Tok::RParen;
}

}  // namespace

ExprId parse_expression(Program& program, Loc range, Diagnostics& diags) {
  Parser parser(std::move(program), range, diags);
  ExprId e = parser.run_expr(range.begin);
  program = parser.take();
  return e;
}

std::optional<Program> parse(Source source, Diagnostics& diags, const BuiltinTakes& builtin) {
  Parser parser(std::move(source), diags);
  auto program = parser.run();
  if (program && !expand_macros(*program, diags, builtin)) return std::nullopt;
  return program;
}

}  // namespace bpfscope::lang
