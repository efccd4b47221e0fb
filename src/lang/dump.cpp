// dump(): the AST as an indented tree, one node per line, one space per level
// (for `-d ast` and the parser tests). The format is stable: tests compare it.
#include <array>
#include <fmt/format.h>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

struct OpName {
  Op op;
  std::string_view text;
};

constexpr std::array kOpNames = {
    OpName{Op::Add, "+"},    OpName{Op::Sub, "-"},    OpName{Op::Mul, "*"},     OpName{Op::Div, "/"},
    OpName{Op::Mod, "%"},    OpName{Op::BAnd, "&"},   OpName{Op::BOr, "|"},     OpName{Op::BXor, "^"},
    OpName{Op::Shl, "<<"},   OpName{Op::Shr, ">>"},   OpName{Op::Eq, "=="},     OpName{Op::Ne, "!="},
    OpName{Op::Lt, "<"},     OpName{Op::Le, "<="},    OpName{Op::Gt, ">"},      OpName{Op::Ge, ">="},
    OpName{Op::LAnd, "&&"},  OpName{Op::LOr, "||"},   OpName{Op::Neg, "-"},     OpName{Op::LNot, "!"},
    OpName{Op::BNot, "~"},   OpName{Op::Deref, "*"},  OpName{Op::AddrOf, "&"},  OpName{Op::PreInc, "pre++"},
    OpName{Op::PreDec, "pre--"}, OpName{Op::PostInc, "post++"}, OpName{Op::PostDec, "post--"},
};

std::string_view op_name(Op op) {
  for (const auto& o : kOpNames)
    if (o.op == op) return o.text;
  return "?";
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

class Dumper {
 public:
  explicit Dumper(const Program& p) : p_(p) {}

  std::string run() {
    for (const auto& inc : p_.includes) line(0, "include " + inc);
    for (const auto& d : p_.defines) line(0, fmt::format("define {} {}", d.name, d.value));
    for (const auto& c : p_.c_definitions) {
      line(0, "c_definition");
      size_t start = 0;
      while (start <= c.text.size()) {
        size_t end = c.text.find('\n', start);
        if (end == std::string::npos) end = c.text.size();
        line(1, c.text.substr(start, end - start));
        start = end + 1;
      }
    }
    if (!p_.config.empty()) {
      line(0, "config");
      for (const auto& [key, value] : p_.config) line(1, fmt::format("{} = {}", key, value));
    }
    for (const auto& d : p_.map_decls) line(0, fmt::format("map_decl {} = {}({})", d.name, d.kind, d.max_entries));
    for (const auto& probe : p_.probes) {
      std::string names;
      for (const auto& ap : probe.points) names += (names.empty() ? "" : ", ") + ap.text;
      line(0, "probe " + names);
      if (probe.predicate != kNone) {
        line(1, "predicate");
        expr(2, probe.predicate);
      }
      for (StmtId s : probe.body) stmt(1, s);
    }
    return std::move(out_);
  }

 private:
  void line(int depth, std::string_view text) {
    out_.append(static_cast<size_t>(depth), ' ');
    out_ += text;
    out_ += '\n';
  }

  void stmts(int depth, const std::vector<StmtId>& body) {
    for (StmtId s : body) stmt(depth, s);
  }

  void stmt(int depth, StmtId id) {
    if (id == kNone) return line(depth, "<none>");
    const Stmt& s = p_.stmt(id);
    switch (s.kind) {
      case StmtKind::Expr:
        return expr(depth, s.expr);
      case StmtKind::Assign:
        line(depth, s.op == Op::None ? std::string("assign =") : fmt::format("assign {}=", op_name(s.op)));
        expr(depth + 1, s.target);
        return expr(depth + 1, s.value);
      case StmtKind::Let: {
        std::string text = "let " + (s.target != kNone ? p_.expr(s.target).name : std::string("?"));
        if (s.type_of != kNone) text += ": typeof(...)" + s.type_name;
        else if (!s.type_name.empty()) text += ": " + s.type_name;
        line(depth, text);
        if (s.type_of != kNone) expr(depth + 1, s.type_of);
        if (s.value != kNone) expr(depth + 1, s.value);
        return;
      }
      case StmtKind::If:
        line(depth, "if");
        expr(depth + 1, s.expr);
        line(depth + 1, "then");
        stmts(depth + 2, s.body);
        if (s.has_else) {
          line(depth + 1, "else");
          stmts(depth + 2, s.else_body);
        }
        return;
      case StmtKind::Return:
        line(depth, "return");
        if (s.expr != kNone) expr(depth + 1, s.expr);
        return;
      case StmtKind::Block:
        line(depth, "block");
        return stmts(depth + 1, s.body);
      case StmtKind::While:
      case StmtKind::Unroll:
        line(depth, s.kind == StmtKind::While ? "while" : "unroll");
        expr(depth + 1, s.expr);
        line(depth + 1, "body");
        return stmts(depth + 2, s.body);
      case StmtKind::For:
        line(depth, "for " + s.iter_var);
        if (s.range_end != kNone) {
          line(depth + 1, "range");
          expr(depth + 2, s.expr);
          expr(depth + 2, s.range_end);
        } else {
          expr(depth + 1, s.expr);
        }
        line(depth + 1, "body");
        return stmts(depth + 2, s.body);
      case StmtKind::Break:
        return line(depth, "break");
      case StmtKind::Continue:
        return line(depth, "continue");
    }
  }

  void expr(int depth, ExprId id) {
    if (id == kNone) return line(depth, "<none>");
    const Expr& e = p_.expr(id);
    switch (e.kind) {
      case ExprKind::Integer: line(depth, fmt::format("int {}", e.ival)); break;
      case ExprKind::Float: line(depth, fmt::format("float {}", e.fval)); break;
      case ExprKind::String: line(depth, "string " + quote(e.sval)); break;
      case ExprKind::Identifier: line(depth, "identifier " + e.name); break;
      case ExprKind::Positional: line(depth, fmt::format("positional ${}", e.ival)); break;
      case ExprKind::PositionalCount: line(depth, "positional_count $#"); break;
      case ExprKind::Variable: line(depth, "variable " + e.name); break;
      case ExprKind::Map: line(depth, "map " + e.name); break;
      case ExprKind::Call: {
        std::string names;
        for (const auto& n : e.field_names) names += " " + (n.empty() ? std::string("-") : n);
        line(depth, "call " + e.name + (e.field_names.empty() ? "" : " named" + names));
        break;
      }
      case ExprKind::Unary: line(depth, fmt::format("unop {}", op_name(e.op))); break;
      case ExprKind::Binary: line(depth, fmt::format("binop {}", op_name(e.op))); break;
      case ExprKind::Ternary: line(depth, e.args.size() == 2 ? "ternary ?:" : "ternary"); break;
      case ExprKind::Field: line(depth, fmt::format("field {}{}", e.arrow ? "->" : ".", e.name)); break;
      case ExprKind::Index: line(depth, "index"); break;
      case ExprKind::Cast: line(depth, "cast " + type_text(e)); break;
      case ExprKind::Tuple: {
        std::string names;
        for (const auto& n : e.field_names) names += " " + n;
        line(depth, e.field_names.empty() ? "tuple" : "record" + names);
        break;
      }
      case ExprKind::IncDec: line(depth, fmt::format("incdec {}", op_name(e.op))); break;
      case ExprKind::Sizeof: line(depth, e.type_arg ? "sizeof " + type_text(e) : std::string("sizeof")); break;
      case ExprKind::Typeof: line(depth, e.type_arg ? "typeof " + type_text(e) : std::string("typeof")); break;
      case ExprKind::Offsetof:
        line(depth, e.name.empty() ? "offsetof " + e.sval : fmt::format("offsetof {}, {}", e.name, e.sval));
        break;
      case ExprKind::Block:
        line(depth, "block expression");
        stmts(depth + 1, e.body);
        break;
    }
    if (e.type_of != kNone) expr(depth + 1, e.type_of);
    for (ExprId a : e.args) expr(depth + 1, a);
  }

  // A written type; "typeof(...)" stands for a type_of expression, dumped below it.
  static std::string type_text(const Expr& e) { return e.type_of != kNone ? "typeof(...)" + e.name : e.name; }

  const Program& p_;
  std::string out_;
};

}  // namespace

std::string dump(const Program& program) { return Dumper(program).run(); }

}  // namespace bpfscope::lang
