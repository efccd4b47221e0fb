// Macro expansion (REFERENCE 1.6): an AST pass between parsing and sema.
//
// A call `name(args)` (or a bare `name` for a macro without parameters) is
// replaced in place by a Block expression holding a copy of the macro's body:
//   - a `$v` parameter takes a scratch variable, which the copy uses by name
//     (the macro may change it); an `@m` parameter likewise takes a map;
//   - a bare parameter `e` takes any expression, copied at each use;
//   - the body's other variables get names no script can write
//     ($$name:N:var, N unique per expansion), so a macro neither sees nor
//     changes the caller's variables (hygiene); a map that is not a
//     parameter is an error.
// Arguments are expanded first, in the caller's context; the copied body is
// then expanded with the macro on the stack, which finds recursion.
// Macros may share a name when their parameter kinds differ; the first
// whose kinds match the arguments is used. A call none of them takes is a
// builtin's when a builtin of that name takes it (macro cpu(x) and cpu()),
// else an error.
//
// An expansion without statements is its value itself, not a block: a
// macro whose value is a string literal gives a literal where one is needed
// (macro fmt() { "%d\n" } ... printf(fmt(), 1)).
#include <fmt/format.h>

#include <map>
#include <set>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

constexpr size_t kMaxNodes = 1'000'000;  // expressions after expansion: f(f(f(..))) with `x + x` doubles per level
constexpr size_t kMaxStack = 64;        // macros expanding macros

char kind_of(std::string_view param) { return param[0] == '$' ? '$' : param[0] == '@' ? '@' : 'e'; }

const char* kind_text(char k) {
  return k == '$' ? "a scratch variable" : k == '@' ? "a map" : "an expression";
}

class Expander {
 public:
  Expander(Program& p, Diagnostics& d, const BuiltinTakes& builtin) : p_(p), d_(d), builtin_(builtin) {}

  bool run() {
    for (size_t i = 0; i < p_.macros.size(); ++i) {
      bool dup = false;
      for (size_t j = 0; j < i && !dup; ++j) dup = same_signature(p_.macros[i], p_.macros[j]);
      if (dup) error(p_.macros[i].loc, fmt::format("Redefinition of existing macro '{}'", p_.macros[i].name));
      else by_name_[p_.macros[i].name].push_back(i);
    }
    if (p_.macros.empty() || errors_) return errors_ == 0;
    for (size_t i = 0; i < p_.probes.size() && !stop_; ++i) {
      if (p_.probes[i].predicate != kNone) expand(p_.probes[i].predicate, false);
      stmts(p_.probes[i].body);
    }
    return errors_ == 0;
  }

 private:
  struct Binding {
    const Macro* macro = nullptr;
    uint32_t serial = 0;
    std::map<std::string, std::string> names;  // "$v"/"@m" parameter -> the caller's variable/map
    std::map<std::string, ExprId> exprs;       // bare parameter -> argument
  };

  static bool same_signature(const Macro& a, const Macro& b) {
    if (a.name != b.name || a.params.size() != b.params.size()) return false;
    for (size_t i = 0; i < a.params.size(); ++i)
      if (kind_of(a.params[i].first) != kind_of(b.params[i].first)) return false;
    return true;
  }

  // Once per location: a macro used N times would otherwise repeat its errors.
  void error(Loc loc, std::string msg) {
    if (!reported_.insert({loc.begin, loc.end}).second) return;
    d_.error(loc, std::move(msg));
    ++errors_;
  }

  void stmts(const std::vector<StmtId>& body) {
    for (StmtId s : body) {
      if (stop_) return;
      stmt(s);
    }
  }

  void stmt(StmtId id) {
    const Stmt s = p_.stmts[id];  // a copy: expansion appends to p_.stmts
    if (s.kind == StmtKind::Expr) {
      expand(s.expr, true);
    } else {
      for (ExprId e : {s.expr, s.range_end, s.target, s.value, s.type_of})
        if (e != kNone) expand(e, false);
    }
    stmts(s.body);
    stmts(s.else_body);
  }

  // The argument kinds a call passes.
  static char arg_kind(const Expr& a) {
    if (a.kind == ExprKind::Variable) return '$';
    if (a.kind == ExprKind::Map && a.args.empty()) return '@';
    return 'e';
  }

  bool matches(const Macro& m, const std::vector<ExprId>& args) const {
    if (m.params.size() != args.size()) return false;
    for (size_t i = 0; i < args.size(); ++i) {
      const char k = kind_of(m.params[i].first);
      if (k != 'e' && k != arg_kind(p_.exprs[args[i]])) return false;
    }
    return true;
  }

  // Why the only macro of this name does not take these arguments.
  std::string mismatch(const Macro& m, const std::vector<ExprId>& args) const {
    if (m.params.size() != args.size())
      return fmt::format("Macro '{}' takes {} argument{} ({} provided)", m.name, m.params.size(),
                         m.params.size() == 1 ? "" : "s", args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const char k = kind_of(m.params[i].first), got = arg_kind(p_.exprs[args[i]]);
      if (k != 'e' && k != got)
        return fmt::format("Macro '{}' expects {} for parameter {}, not {}", m.name, kind_text(k), m.params[i].first,
                           kind_text(got));
    }
    return fmt::format("Macro '{}' does not match these arguments", m.name);
  }

  void expand(ExprId id, bool stmt_ok) {
    if (stop_) return;
    const Expr e = p_.exprs[id];
    if (e.type_of != kNone) expand(e.type_of, false);
    for (ExprId a : e.args) expand(a, false);
    stmts(e.body);
    if (e.kind != ExprKind::Call && e.kind != ExprKind::Identifier) return;
    auto it = by_name_.find(e.name);
    if (it == by_name_.end()) return;
    const Macro* m = nullptr;
    for (size_t i : it->second)
      if (!m && matches(p_.macros[i], e.args)) m = &p_.macros[i];
    if (!m) {
      if (builtin_ && builtin_(e.name, e.args.size())) return;
      if (it->second.size() == 1) error(e.loc, mismatch(p_.macros[it->second[0]], e.args));
      else error(e.loc, fmt::format("No macro '{}' takes these arguments", e.name));
      return;
    }
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i] != m) continue;
      std::string chain;
      for (size_t k = i; k < stack_.size(); ++k) chain += stack_[k]->name + " > ";
      error(e.loc, "Recursive macro call detected. Call chain: " + chain + m->name);
      return;
    }
    if (stack_.size() >= kMaxStack) {
      error(e.loc, "macro expansion nested too deeply");
      stop_ = true;
      return;
    }
    if (m->value == kNone && !stmt_ok) {
      error(e.loc, fmt::format("Macro '{}' expanded to a block instead of a block expression. Try removing the "
                               "semicolon from the end of the last statement in the macro body.",
                               m->name));
      return;
    }

    Binding b;
    b.macro = m;
    b.serial = serial_++;
    for (size_t i = 0; i < m->params.size(); ++i) {
      const std::string& param = m->params[i].first;
      if (kind_of(param) == 'e') b.exprs[param] = e.args[i];
      else b.names[param] = p_.exprs[e.args[i]].name;
    }
    Expr block;
    block.kind = ExprKind::Block;
    block.loc = e.loc;
    chain_ = {e.loc};
    if (auto from = p_.expanded_from.find(id); from != p_.expanded_from.end())
      chain_.insert(chain_.end(), from->second.begin(), from->second.end());
    for (StmtId s : m->body) block.body.push_back(clone_stmt(s, &b));
    if (m->value != kNone) block.args.push_back(clone_expr(m->value, &b));
    if (stop_) return;
    stack_.push_back(m);
    stmts(block.body);
    for (ExprId a : block.args) expand(a, false);
    stack_.pop_back();
    if (block.body.empty() && !block.args.empty()) {
      // No statements: the value in the call's place, located where it was
      // written (in the body, or the argument it substitutes).
      const ExprId value = block.args[0];
      p_.exprs[id] = p_.exprs[value];
      if (auto from = p_.expanded_from.find(value); from != p_.expanded_from.end()) {
        std::vector<Loc> chain = from->second;
        p_.expanded_from[id] = std::move(chain);
      } else {
        p_.expanded_from.erase(id);
      }
      return;
    }
    p_.exprs[id] = std::move(block);
  }

  // A variable of the body: the caller's for a `$v` parameter, else private.
  std::string var_name(const std::string& name, const Binding& b) const {
    if (auto it = b.names.find(name); it != b.names.end()) return it->second;
    return fmt::format("$${}:{}:{}", b.macro->name, b.serial, name.substr(1));
  }

  // A copy of a subtree. With a binding it is the macro's body, renamed and
  // substituted; without, an argument copied as it is.
  ExprId clone_expr(ExprId id, const Binding* b) {
    if (p_.exprs.size() > kMaxNodes) {
      // At the call that grew too large (an expansion in its place is
      // located in the macro's body).
      const auto from = p_.expanded_from.find(id);
      const Loc at = from != p_.expanded_from.end() && !from->second.empty() ? from->second[0] : p_.exprs[id].loc;
      if (!stop_) error(at, "macro expansion is too large");
      stop_ = true;
      return id;
    }
    Expr e = p_.exprs[id];
    if (b) {
      if (e.kind == ExprKind::Identifier) {
        if (auto it = b->exprs.find(e.name); it != b->exprs.end()) return clone_expr(it->second, nullptr);
      } else if (e.kind == ExprKind::Variable) {
        e.name = var_name(e.name, *b);
      } else if (e.kind == ExprKind::Map) {
        if (auto it = b->names.find(e.name); it != b->names.end()) {
          e.name = it->second;
        } else {
          error(e.loc, fmt::format("Unhygienic access to map: {}. Maps must be passed into the macro as arguments.",
                                   e.name));
        }
      }
    }
    if (e.type_of != kNone) e.type_of = clone_expr(e.type_of, b);
    const bool typed = e.kind == ExprKind::Cast || (e.kind == ExprKind::Sizeof && e.type_arg) ||
                       (e.kind == ExprKind::Typeof && e.type_arg) || (e.kind == ExprKind::Offsetof && !e.name.empty());
    if (b && typed) subst_type(e.name, e.type_of, e.loc, *b);
    for (ExprId& a : e.args) a = clone_expr(a, b);
    for (StmtId& s : e.body) s = clone_stmt(s, b);
    p_.exprs.push_back(std::move(e));
    const auto copy = static_cast<ExprId>(p_.exprs.size() - 1);
    if (b) {
      p_.expanded_from[copy] = chain_;
    } else if (auto from = p_.expanded_from.find(id); from != p_.expanded_from.end()) {
      std::vector<Loc> chain = from->second;
      p_.expanded_from[copy] = std::move(chain);
    }
    return copy;
  }

  // A type in the body named by a bare parameter takes the argument (0.26):
  // typeof(T) gives T, typeof(expr) or another expression the type of that
  // expression (never evaluated), an identifier its name. `text` keeps what
  // follows the name: (a*)-1 with typeof(uint8) is (uint8 *)-1.
  void subst_type(std::string& text, ExprId& type_of, Loc loc, const Binding& b) {
    if (type_of != kNone) return;  // typeof(expr) names nothing
    size_t begin = 0;
    for (std::string_view tag : {"struct ", "union ", "enum "})
      if (text.starts_with(tag)) begin = tag.size();
    size_t end = text.find_first_of(" *[", begin);
    if (end == std::string::npos) end = text.size();
    auto it = b.exprs.find(text.substr(begin, end - begin));
    if (it == b.exprs.end()) return;
    const Expr arg = p_.exprs[it->second];
    const std::string rest = text.substr(end);
    const bool plain_type = arg.kind == ExprKind::Typeof && arg.type_arg && arg.type_of == kNone;
    if (begin > 0) {
      // struct a: only a bare name can follow the keyword.
      const bool word = arg.name.find_first_of(" *[") == std::string::npos;
      if ((arg.kind == ExprKind::Identifier || plain_type) && word) text = text.substr(0, begin) + arg.name + rest;
      else error(loc, fmt::format("Macro argument for '{}' is not a type name", text.substr(begin, end - begin)));
      return;
    }
    if (arg.kind == ExprKind::Identifier || (arg.kind == ExprKind::Typeof && arg.type_arg)) {
      // "uint64 *" then " *" is "uint64 **".
      text = arg.name.ends_with('*') && rest.starts_with(" *") ? arg.name + rest.substr(1) : arg.name + rest;
      if (arg.kind == ExprKind::Typeof && arg.type_of != kNone) type_of = clone_expr(arg.type_of, nullptr);
      return;
    }
    type_of = clone_expr(arg.kind == ExprKind::Typeof ? arg.args[0] : it->second, nullptr);
    text = rest;
  }

  StmtId clone_stmt(StmtId id, const Binding* b) {
    Stmt s = p_.stmts[id];
    if (b && s.kind == StmtKind::Let && s.target != kNone) {
      const std::string& name = p_.exprs[s.target].name;
      if (b->names.count(name)) error(p_.exprs[s.target].loc, fmt::format("Variable declaration shadows macro arg {}", name));
    }
    for (ExprId* e : {&s.expr, &s.range_end, &s.target, &s.value, &s.type_of})
      if (*e != kNone) *e = clone_expr(*e, b);
    if (b && s.kind == StmtKind::Let && (!s.type_name.empty() || s.type_of != kNone))
      subst_type(s.type_name, s.type_of, s.loc, *b);
    if (b && !s.iter_var.empty()) s.iter_var = var_name(s.iter_var, *b);
    for (StmtId& c : s.body) c = clone_stmt(c, b);
    for (StmtId& c : s.else_body) c = clone_stmt(c, b);
    p_.stmts.push_back(std::move(s));
    return static_cast<StmtId>(p_.stmts.size() - 1);
  }

  Program& p_;
  Diagnostics& d_;
  const BuiltinTakes& builtin_;
  std::map<std::string, std::vector<size_t>> by_name_;  // macro name -> indexes, in definition order
  std::vector<const Macro*> stack_;
  std::vector<Loc> chain_;  // the calls expanding the body being copied, innermost first
  std::set<std::pair<uint32_t, uint32_t>> reported_;
  uint32_t serial_ = 0;
  size_t errors_ = 0;
  bool stop_ = false;
};

}  // namespace

bool expand_macros(Program& program, Diagnostics& diags, const BuiltinTakes& builtin) {
  return Expander(program, diags, builtin).run();
}

}  // namespace bpfscope::lang
