// The type checker: walks each probe body, resolves names, fixes map and
// variable types, and builds the action table. Function calls are in
// calls.cpp, kernel types in kernel_types.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "builtins/builtins.h"
#include "sema/cdefs.h"
#include "sema/checker.h"
#include "sema/config.h"
#include "sema/map_decls.h"

namespace bpfscope::sema::detail {

const char* agg_name(output::AggKind k) {
  switch (k) {
    case output::AggKind::Plain: return "value";
    case output::AggKind::Count: return "count";
    case output::AggKind::Sum: return "sum";
    case output::AggKind::Min: return "min";
    case output::AggKind::Max: return "max";
    case output::AggKind::Avg: return "avg";
    case output::AggKind::Stats: return "stats";
    case output::AggKind::Hist: return "hist";
    case output::AggKind::LHist: return "lhist";
    case output::AggKind::TSeries: return "tseries";
  }
  std::unreachable();
}

std::optional<int64_t> parse_int_param(std::string_view s) {
  // As bpftrace's std::stoll(s, &end, 0): leading blanks, a sign, 0x hex or
  // 0 octal; the whole text, in range.
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 0);
  if (text.empty() || errno == ERANGE || end == text.c_str() || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

// Checks one probe body against the kinds and targets of its attach points.
void Checker::check_probe(uint32_t probe_index, const std::vector<ResolvedAttachPoint>& points) {
  points_ = &points;
  probe_index_ = probe_index;
  target_specific_ = false;
  scopes_.clear();
  scopes_.emplace_back();
  const auto& probe = ast_.probes[probe_index];
  if (probe.predicate != kNone) {
    Type t = expr(probe.predicate);
    if (!t.is_int()) error(ast_.expr(probe.predicate).loc, "Invalid type for predicate: " + t.name());
  }
  block(probe.body);
}

void Checker::error(lang::Loc loc, std::string msg) {
  if (final_) diags_.error(loc, std::move(msg));
}

static void maps_in_expr(const lang::Program& program, ExprId id, std::set<std::string>& out);

// Whether control never goes past statement `id`: return, break, continue,
// exit(), a block holding one, or an if/else whose two branches both end so.
static bool ends_flow(const lang::Program& ast, StmtId id) {
  const Stmt& s = ast.stmt(id);
  const auto any = [&](const std::vector<StmtId>& body) {
    return std::any_of(body.begin(), body.end(), [&](StmtId b) { return ends_flow(ast, b); });
  };
  switch (s.kind) {
    case StmtKind::Return:
    case StmtKind::Break:
    case StmtKind::Continue: return true;
    case StmtKind::Expr: {
      const Expr& e = ast.expr(s.expr);
      return e.kind == ExprKind::Call && e.name == "exit";
    }
    case StmtKind::Block: return any(s.body);
    case StmtKind::If: return s.has_else && any(s.body) && any(s.else_body);
    default: return false;
  }
}

void Checker::block(const std::vector<StmtId>& body) {
  scopes_.emplace_back();
  // The first statement after one that ends the flow is never run (bpftrace
  // 0.26 warns, and still checks it).
  for (size_t i = 0; final_ && i + 1 < body.size(); ++i) {
    if (ends_flow(ast_, body[i])) {
      diags_.warning(ast_.stmt(body[i + 1]).loc, "Unreachable statement.");
      break;
    }
  }
  for (StmtId s : body) stmt(s);
  scopes_.pop_back();
  fold_print_clear(body);
}

// print(@m) and a clear(@m) after it in the same block, with only output
// between them (biotop's interval: the table, a newline, then clear() of
// its maps): the print takes the entries (Action::taken) and the clear is
// folded. Macros, plain blocks and the branch that a known condition takes
// (if (getopt("milliseconds")) { print(@msecs); } ...) count as the block's
// own statements. Anything else between them (a map written, exit(), a
// branch decided at run time) keeps the two apart.
void Checker::fold_print_clear(const std::vector<StmtId>& body) {
  std::vector<StmtId> flat;  // kNone: a statement that keeps prints and clears apart
  const auto flatten = [&](const auto& self, const std::vector<StmtId>& stmts) -> void {
    for (StmtId sid : stmts) {
      const Stmt& s = ast_.stmt(sid);
      if (s.kind == StmtKind::Block) {
        self(self, s.body);
      } else if (auto known = out_.known_if.find(sid); s.kind == StmtKind::If && known != out_.known_if.end()) {
        self(self, known->second ? s.body : s.else_body);
      } else if (s.kind == StmtKind::Expr && ast_.expr(s.expr).kind == ExprKind::Block) {
        self(self, ast_.expr(s.expr).body);
        if (!ast_.expr(s.expr).args.empty()) flat.push_back(kNone);
      } else {
        flat.push_back(sid);
      }
    }
  };
  flatten(flatten, body);
  std::map<int32_t, int32_t> printed;  // map -> the action of the print that read it last
  for (StmtId sid : flat) {
    const Stmt* s = sid == kNone ? nullptr : &ast_.stmt(sid);
    const int32_t act = s && s->kind == StmtKind::Expr && ast_.expr(s->expr).kind == ExprKind::Call ? out_.action_of[s->expr] : -1;
    if (act < 0) {
      printed.clear();
      continue;
    }
    Action& a = out_.actions[act];
    switch (a.kind) {
      case ActionKind::Print:
        if (a.map >= 0) printed[a.map] = act;
        break;
      case ActionKind::Table:
        for (int32_t m : a.table_maps) printed[m] = act;
        if (a.table_sort_map >= 0) printed[a.table_sort_map] = act;
        break;
      case ActionKind::Clear:
      case ActionKind::Zero:
        if (auto it = printed.find(a.map); it != printed.end()) {
          Action& print = out_.actions[it->second];
          if (std::find(print.taken.begin(), print.taken.end(), a.map) == print.taken.end()) {
            print.taken.push_back(a.map);
            if (a.kind == ActionKind::Zero) print.zeroed.push_back(a.map);
          }
          a.folded = true;
          printed.erase(it);
        }
        break;
      case ActionKind::Printf:
      case ActionKind::PrintValue:
      case ActionKind::Time:
      case ActionKind::Join:
      case ActionKind::Cat: {
        std::set<std::string> named;
        maps_in_expr(ast_, s->expr, named);
        if (!named.empty()) printed.clear();
        break;
      }
      default: printed.clear(); break;
    }
  }
}

int32_t Checker::find_var(const std::string& name) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return -1;
}

int32_t Checker::declare_var(const std::string& name, const Type& t) {
  int32_t idx = static_cast<int32_t>(out_.var_types.size());
  // The final pass starts a string or tuple variable at the widest type the
  // first pass saw, so reads before a wider assignment use the final layout.
  // An integer variable starts at the size it grew to in the first pass.
  Type widest;
  const Type* first = static_cast<size_t>(idx) < first_pass_vars_.size() ? &first_pass_vars_[idx] : nullptr;
  if (first && is_plain_int(t) && is_plain_int(*first) && first->size > t.size) {
    out_.var_types.push_back(*first);
  } else if (first && (t.is_string() || t.is_tuple()) && unify(*first, t, widest) && widest.kind == t.kind) {
    out_.var_types.push_back(widest);
  } else if (final_ && t.kind == TypeKind::None) {
    // `let $x;`: the type its assignments gave it in the first pass (so a
    // read before them sees it); never assigned, an int64 that reads as 0.
    out_.var_types.push_back(first && first->kind != TypeKind::None ? *first : Type::integer(8, true));
  } else {
    out_.var_types.push_back(t);
  }
  scopes_.back()[name] = idx;
  return idx;
}

// A plain integer variable narrower than 64 bits (from a literal: $x = 1)
// becomes 64 bits when `grow`, unless `let $x: T` declared its type.
void Checker::widen_var(int32_t var, bool grow) {
  Type& t = out_.var_types[var];
  if (grow && is_plain_int(t) && t.size < 8 && !declared_vars_.count(var)) t = Type::integer(8, t.is_signed);
}

// A macro's own variables are named $$MACRO:N:VAR by the expansion (lang/macros.cpp).
std::string Checker::undefined_var_message(const std::string& name) {
  const size_t a = name.find(':'), b = name.rfind(':');
  if (name.starts_with("$$") && a != std::string::npos && b > a)
    return fmt::format("Undefined or undeclared variable: ${} in macro '{}' (a macro sees only the variables "
                       "passed to it)",
                       name.substr(b + 1), name.substr(2, a - 2));
  return fmt::format("Undefined or undeclared variable: {}", name);
}

void Checker::stmt(StmtId id) {
  const Stmt& s = ast_.stmt(id);
  switch (s.kind) {
    case StmtKind::Expr: {
      const Expr& e = ast_.expr(s.expr);
      if (e.kind == ExprKind::Call) {
        if (const auto* f = find_function_(e.name); f && f->aggregation != output::AggKind::Plain) {
          error(e.loc, fmt::format("{}() should be assigned to a map", e.name));
          return;
        }
      }
      expr(s.expr);
      return;
    }
    case StmtKind::Assign: assign(s); return;
    case StmtKind::Let: let(s); return;
    case StmtKind::If: {
      Type c = expr(s.expr);
      if (!valid_condition(c)) error(ast_.expr(s.expr).loc, "Invalid condition in if(): " + c.name());
      // A branch that cannot run is not checked (so that a tool may give a
      // map another key shape under another option).
      if (auto known = known_condition(s.expr)) {
        out_.known_if[id] = *known;
        block(*known ? s.body : s.else_body);
        return;
      }
      block(s.body);
      block(s.else_body);
      return;
    }
    case StmtKind::Block: block(s.body); return;
    case StmtKind::Return: return;
    case StmtKind::While: {
      Type c = expr(s.expr);
      if (!valid_condition(c)) error(ast_.expr(s.expr).loc, "Invalid condition in while(): " + c.name());
      ++loop_depth_;
      block(s.body);
      --loop_depth_;
      return;
    }
    case StmtKind::Unroll: {
      auto n = constant(s.expr);
      if (!n) {
        error(ast_.expr(s.expr).loc, "unroll() takes a constant from 1 to 100");
        return;
      }
      if (*n < 1 || *n > 100) {
        error(ast_.expr(s.expr).loc, *n < 1 ? "unroll minimum value is 1" : "unroll maximum value is 100");
        return;
      }
      block(s.body);
      return;
    }
    case StmtKind::For: {
      if (s.range_end == kNone) {
        for_map(s);
        return;
      }
      Type a = expr(s.expr), b = expr(s.range_end);
      if (!a.is_int() || !b.is_int()) {
        error(s.loc, "for ($i : a..b) needs integer bounds");
        return;
      }
      for (auto& scope : scopes_) {
        if (scope.count(s.iter_var)) {
          error(s.loc, fmt::format("Variable shadowing is not allowed: {}", s.iter_var));
          return;
        }
      }
      // The loop variable lives in the body's scope.
      scopes_.emplace_back();
      out_.for_var_of[s.expr] = declare_var(s.iter_var, Type::integer(8, true));
      ++loop_depth_;
      block(s.body);
      --loop_depth_;
      scopes_.pop_back();
      return;
    }
    case StmtKind::Break:
    case StmtKind::Continue:
      if (!in_loop()) error(s.loc, "break and continue are only valid in a loop");
      return;
  }
}

// for ($kv : @m): $kv is (key, value), the key a tuple for multi-key maps.
// The body becomes a bpf_for_each_map_elem callback (see lower.cpp).
void Checker::for_map(const Stmt& s) {
  const Expr& e = ast_.expr(s.expr);
  if (e.kind != ExprKind::Map || !e.args.empty()) {
    if (e.kind != ExprKind::Map) expr(s.expr);
    error(e.loc, "Loop expression must be a map (for ($kv : @m)) or a range (for ($i : a..b))");
    return;
  }
  for (auto& scope : scopes_) {
    if (scope.count(s.iter_var)) {
      error(s.loc, fmt::format("Variable shadowing is not allowed: {}", s.iter_var));
      return;
    }
  }
  MapInfo* m = whole_map(s.expr);
  if (!m) return;
  if (!m->keyed) {
    error(e.loc, fmt::format("Maps used as for-loop expressions must have keys to iterate over: {}", e.name));
    return;
  }
  Type value = m->value.kind == TypeKind::None ? Type::integer(8, true) : m->value;
  switch (m->agg) {
    case output::AggKind::Plain: break;
    // Read as in a probe: the sum (or min, max, average) over the CPUs.
    case output::AggKind::Count: value = Type::integer(8, false); break;
    case output::AggKind::Sum:
    case output::AggKind::Min:
    case output::AggKind::Max:
    case output::AggKind::Avg: value = Type::integer(8, m->value.is_signed); break;
    case output::AggKind::Stats:
    case output::AggKind::Hist:
    case output::AggKind::LHist:
    case output::AggKind::TSeries:
      error(e.loc, fmt::format("Loop expression does not support type: {} ({} has no single value per key)",
                               agg_name(m->agg), e.name));
      return;
  }
  set(s.expr, value);
  scopes_.emplace_back();
  out_.for_var_of[s.expr] = declare_var(s.iter_var, Type::tuple({m->key, value}));
  ++loop_depth_;
  block(s.body);
  --loop_depth_;
  scopes_.pop_back();
}

void Checker::let(const Stmt& s) {
  const Expr& target = ast_.expr(s.target);
  for (auto& scope : scopes_) {
    if (scope.count(target.name)) {
      error(target.loc, fmt::format("Variable shadowing is not allowed: {}", target.name));
      return;
    }
  }
  // `let $x;` takes its type from the first assignment; `let $x: T`
  // fixes it (integers narrower than 64 bits are truncated on store).
  Type t = Type::none();
  const bool typed = !s.type_name.empty() || s.type_of != kNone;
  if (typed) {
    auto declared = s.type_of != kNone ? typeof_type(s.type_of, s.type_name, s.loc) : let_type(s.type_name, s.loc);
    if (!declared) return;
    t = *declared;
  }
  if (s.value != kNone) {
    Type vt = expr(s.value);
    Type u;
    if (vt.kind == TypeKind::None) {
      error(ast_.expr(s.value).loc, "expression has no value to assign");
    } else if (!typed) {
      t = vt;
    } else if (!unify(t, vt, u) || (t.is_string() && vt.size > t.size) || !narrowing_store(s.value, vt, t)) {
      error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when variable is "
                               "declared as '{}'",
                               target.name, vt.name(), t.name()));
    }
  }
  if (t.is_record() && !copyable_record(t, s.loc)) return;
  out_.var_of[s.target] = declare_var(target.name, t);
  if (typed) declared_vars_.insert(out_.var_of[s.target]);
  set(s.target, out_.var_types[out_.var_of[s.target]]);
}

// A struct a variable may hold: a copy of its bytes in the per-CPU scratch
// value, whose fields are then read from the copy.
bool Checker::copyable_record(const Type& t, lang::Loc loc) {
  constexpr uint32_t kMaxRecordCopy = 8192;
  if (t.size > 0 && t.size <= kMaxRecordCopy) return true;
  error(loc, fmt::format("{} ({} bytes) is too large to copy into a variable (at most {}); store a pointer to it",
                         out_.btf->type_name(t.btf_id), t.size, kMaxRecordCopy));
  return false;
}

// A store of `value` (of type vt) into a variable declared as integer type
// `to` (bpftrace 0.26): false for a literal that does not fit in it (an
// error); another expression wider than `to` is truncated on store, with
// bpftrace's warning.
bool Checker::narrowing_store(ExprId value, const Type& vt, const Type& to) {
  if (to.kind != TypeKind::Int || to.is_pointer || !vt.is_int() || vt.is_pointer || to.size >= 8) return true;
  const Expr& e = ast_.expr(value);
  const bool negated = e.kind == ExprKind::Unary && e.op == Op::Neg && ast_.expr(e.args[0]).kind == ExprKind::Integer;
  if (e.kind == ExprKind::Integer || negated) {
    const uint64_t magnitude = negated ? ast_.expr(e.args[0]).ival : e.ival;
    const unsigned bits = to.size * 8 - (to.is_signed ? 1 : 0);
    if (negated) return to.is_signed && magnitude <= (uint64_t{1} << bits);
    return magnitude < (uint64_t{1} << bits);
  }
  const bool fits = vt.is_signed == to.is_signed ? vt.size <= to.size : !vt.is_signed && vt.size < to.size;
  if (!fits)
    diags_.warning(e.loc, fmt::format("Expression of type: {} being cast to type: {}. This may cause unexpected "
                                      "results. Use an explicit cast to suppress this warning.",
                                      vt.name(), to.name()));
  return true;
}

// A type in `let $x: T`: integers, bool, pointers, string or string[N].
std::optional<Type> Checker::let_type(std::string_view name, lang::Loc loc) {
  if (name == "string") return Type::string(out_.config.max_strlen);
  if (name.starts_with("string[") && name.ends_with("]")) {
    uint32_t n = 0;
    auto digits = name.substr(7, name.size() - 8);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || p != digits.data() + digits.size() || n == 0) {
      error(loc, fmt::format("invalid string size in {}", name));
      return std::nullopt;
    }
    return Type::string(n);
  }
  return type_of_name(name, loc);
}

void Checker::assign(const Stmt& s) {
  const Expr& target = ast_.expr(s.target);
  const Expr& value = ast_.expr(s.value);
  if (target.kind == ExprKind::Map && value.kind == ExprKind::Call && s.op == Op::None) {
    if (const auto* f = find_function_(value.name); f && f->aggregation != output::AggKind::Plain) {
      aggregate(s.target, s.value, *f);
      return;
    }
  }
  // @m = { stmts; avg($x) }: the block's statements, then the aggregation.
  if (target.kind == ExprKind::Map && value.kind == ExprKind::Block && !value.args.empty() && s.op == Op::None) {
    const Expr& tail = ast_.expr(value.args[0]);
    const auto* f = tail.kind == ExprKind::Call ? find_function_(tail.name) : nullptr;
    if (f && f->aggregation != output::AggKind::Plain) {
      scopes_.emplace_back();
      for (StmtId b : value.body) stmt(b);
      aggregate(s.target, value.args[0], *f);
      scopes_.pop_back();
      set(s.value, Type::none());
      return;
    }
  }
  Type vt = expr(s.value);
  if (vt.kind == TypeKind::None) {
    if (!diags_.has_errors()) error(value.loc, "expression has no value to assign");
    // Declared all the same, so later uses do not repeat the error.
    if (target.kind == ExprKind::Variable && find_var(target.name) < 0)
      out_.var_of[s.target] = declare_var(target.name, Type::none());
    return;
  }
  if (vt.is_record() && target.kind != ExprKind::Variable) {
    error(value.loc, "a struct cannot be stored in a map yet; store one of its fields, or a pointer to it");
    return;
  }
  if (vt.is_record() && !copyable_record(vt, value.loc)) return;
  if (s.op != Op::None && !vt.is_int()) {
    error(value.loc, fmt::format("compound assignment needs an integer, not {}", vt.name()));
    return;
  }
  if (target.kind == ExprKind::Variable) {
    int32_t var = find_var(target.name);
    if (var < 0) {
      if (s.op != Op::None) {
        error(target.loc, fmt::format("Undefined or undeclared variable: {}", target.name));
        return;
      }
      var = declare_var(target.name, vt.kind == TypeKind::Bool ? Type::boolean() : vt);
    } else if (out_.var_types[var].kind == TypeKind::None) {
      out_.var_types[var] = vt.kind == TypeKind::Bool ? Type::boolean() : vt;  // `let $x;`
    } else {
      Type u;
      const bool declared = declared_vars_.count(var) > 0 && s.op == Op::None;
      if (!unify(out_.var_types[var], vt, u) || (declared && !narrowing_store(s.value, vt, out_.var_types[var]))) {
        error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when variable "
                                 "already has a type '{}'",
                                 target.name, vt.name(), out_.var_types[var].name()));
        return;
      }
      // Strings, and tuples holding strings, widen to the longest value
      // assigned; a plain integer to 64 bits when it is given another size
      // or stepped by `op=` (it must hold what its register holds, in a
      // tuple too); other integers keep their first type.
      Type& cur = out_.var_types[var];
      if (cur.is_string() || cur.is_tuple()) cur = u;
      else widen_var(var, s.op != Op::None || !is_plain_int(vt) || vt.size != cur.size);
    }
    out_.var_of[s.target] = var;
    set(s.target, out_.var_types[var]);
    return;
  }
  if (target.kind == ExprKind::Map) {
    MapInfo* m = map_for(s.target, /*create=*/true);
    if (!m) return;
    if (m->agg != output::AggKind::Plain) {
      error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                               "contains a value of type '{}'",
                               m->name, vt.name(), agg_name(m->agg)));
      return;
    }
    if (m->value.kind == TypeKind::None) {
      m->value = vt.is_int() ? Type::integer(8, vt.is_signed || vt.kind == TypeKind::Bool) : vt;
      m->value.enum_id = vt.enum_id;
      if (vt.kind == TypeKind::Bool || vt.is_pointer) m->value = vt;  // a pointer keeps what it points to
    } else if (m->value.is_pointer && !vt.is_pointer && (s.op == Op::Add || s.op == Op::Sub)) {
      // @p += n steps a pointer by n elements and keeps it a pointer.
    } else {
      Type u;
      if (!unify(m->value, vt, u)) {
        error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                                 "contains a value of type '{}'",
                                 m->name, vt.name(), m->value.name()));
        return;
      }
      if (!(m->value.kind == TypeKind::Bool && vt.kind == TypeKind::Bool)) m->value = u;
    }
    set(s.target, m->value);
    return;
  }
  error(target.loc, "can only assign to variables and maps");
}

void Checker::aggregate(ExprId target_id, ExprId call_id, const builtins::Function& f) {
  const Expr& call = ast_.expr(call_id);
  out_.function_of[call_id] = &f;
  if (!arg_count_ok(call, f)) return;
  const output::AggKind kind = f.aggregation;
  Type arg = Type::integer(8, false);
  if (!call.args.empty()) {
    arg = expr(call.args[0]);
    if (!arg.is_int()) {
      error(ast_.expr(call.args[0]).loc, fmt::format("{}() expects an integer ({} provided)", call.name, arg.name()));
      return;
    }
  }
  output::HistParams hist;
  if (kind == output::AggKind::Hist && call.args.size() == 2) {
    auto k = constant(call.args[1]);
    if (!k || *k < 0 || *k > 5) {
      error(ast_.expr(call.args[1]).loc, "hist: bits must be a constant between 0 and 5");
      return;
    }
    hist.bits = static_cast<int>(*k);
  }
  if (kind == output::AggKind::LHist) {
    auto mn = constant(call.args[1]), mx = constant(call.args[2]), st = constant(call.args[3]);
    if (!mn || !mx || !st || *mn < 0 || *mx < 0) {
      error(call.loc, "lhist: min, max and step must be non-negative integer literals");
      return;
    }
    if (*mn >= *mx) {
      error(call.loc, "lhist: min must be less than max");
      return;
    }
    if (*st < 1 || *st > *mx - *mn) {
      error(call.loc, "lhist: step must be between 1 and max - min");
      return;
    }
    if ((*mx - *mn) / *st > 1000) {
      error(call.loc, "lhist: too many buckets (at most 1000)");
      return;
    }
    hist.min = *mn;
    hist.max = *mx;
    hist.step = *st;
  }
  output::TSeriesParams tseries;
  if (kind == output::AggKind::TSeries && !tseries_params(call, tseries)) return;
  MapInfo* m = map_for(target_id, /*create=*/true);
  if (!m) return;
  bool fresh = m->value.kind == TypeKind::None && m->agg == output::AggKind::Plain;
  if (!fresh && m->agg != kind) {
    error(call.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                                "contains a value of type '{}'",
                                m->name, agg_name(kind), m->value.kind == TypeKind::None ? "none" : agg_name(m->agg)));
    return;
  }
  if (!fresh && output::is_histogram(kind) &&
      (m->hist.bits != hist.bits || m->hist.min != hist.min || m->hist.max != hist.max || m->hist.step != hist.step)) {
    error(call.loc, fmt::format("{}: the same map must use the same {}() parameters everywhere", m->name, call.name));
    return;
  }
  if (!fresh && kind == output::AggKind::TSeries &&
      (m->tseries.interval_ns != tseries.interval_ns || m->tseries.intervals != tseries.intervals ||
       m->tseries.agg != tseries.agg)) {
    error(call.loc, "Different tseries bounds in a single map unsupported");
    return;
  }
  m->agg = kind;
  m->hist = hist;
  m->tseries = tseries;
  Type u;
  if (fresh) {
    m->value = Type::integer(8, arg.is_signed);
  } else if (unify(m->value, arg, u)) {
    m->value = Type::integer(8, m->value.is_signed || arg.is_signed);
  }
  set(target_id, Type::none());
}

// tseries(v, interval, n[, agg]): the interval (a duration such as 100ms,
// or ns), the number of intervals kept and the aggregation, in bpftrace's
// words when they are wrong.
bool Checker::tseries_params(const Expr& call, output::TSeriesParams& out) {
  // bpftrace 0.26 calls tseries unstable: a warning, unless the config says.
  if (out_.config.unstable_tseries == Unstable::Error) {
    error(call.loc,
          "tseries feature is not enabled by default. To enable this unstable feature, set the config flag to enable. "
          "unstable_tseries=enable");
    return false;
  }
  if (out_.config.unstable_tseries == Unstable::Warn)
    diags_.warning_unlocated(
        "Script is using an unstable feature: tseries. To prevent this warning you must explicitly enable it in the "
        "config e.g. unstable_tseries=enable");
  const auto interval = constant(call.args[1]);
  if (!interval) {
    error(ast_.expr(call.args[1]).loc, "tseries: invalid interval_ns value (must be non-negative literal)");
    return false;
  }
  const auto count = constant(call.args[2]);
  if (!count) {
    error(ast_.expr(call.args[2]).loc, "tseries: invalid num_intervals value (must be non-negative literal)");
    return false;
  }
  if (*interval <= 0) {
    error(ast_.expr(call.args[1]).loc, fmt::format("tseries() interval_ns must be >= 1 ({} provided)", *interval));
    return false;
  }
  if (*count <= 0) {
    error(ast_.expr(call.args[2]).loc, fmt::format("tseries() num_intervals must be >= 1 ({} provided)", *count));
    return false;
  }
  if (*count > 1000000) {
    error(ast_.expr(call.args[2]).loc, fmt::format("tseries() num_intervals must be < 1000000 ({} provided)", *count));
    return false;
  }
  // All the intervals of a key are one per-CPU map value, which the kernel
  // caps at 32 KiB.
  if (*count > output::kMaxTSeriesIntervals) {
    error(ast_.expr(call.args[2]).loc,
          fmt::format("tseries() num_intervals must be at most {} in bpfscope ({} provided)",
                      output::kMaxTSeriesIntervals, *count));
    return false;
  }
  out.interval_ns = static_cast<uint64_t>(*interval);
  out.intervals = static_cast<uint32_t>(*count);
  if (call.args.size() < 4) return true;
  const Expr& agg = ast_.expr(call.args[3]);
  const Type t = expr(call.args[3]);
  if (agg.kind != ExprKind::String) {
    error(agg.loc, fmt::format("tseries() expects a string literal ({} provided)",
                               t.kind == TypeKind::None ? "none" : t.name()));
    return false;
  }
  const auto a = output::tseries_agg_of(agg.sval);
  if (!a || *a == output::TSeriesAgg::Last) {
    error(agg.loc, fmt::format("tseries() expects one of the following aggregation functions: avg, max, min, sum "
                               "(\"{}\" provided)",
                               agg.sval));
    return false;
  }
  out.agg = *a;
  return true;
}

// A compile-time integer constant: literals, negated literals, numeric
// positionals, integer getopt(), and arithmetic on constants (1 + 1).
std::optional<int64_t> Checker::constant(ExprId id) {
  const Expr& e = ast_.expr(id);
  expr(id);
  if (e.kind == ExprKind::Integer) return static_cast<int64_t>(e.ival);
  if (e.kind == ExprKind::Unary && e.op == Op::Neg) {
    auto v = constant(e.args[0]);
    if (v) return -*v;
  }
  if (e.kind == ExprKind::Binary && out_.type_of(id).is_int() && !out_.type_of(id).is_pointer) {
    auto a = constant(e.args[0]), b = constant(e.args[1]);
    if (!a || !b) return std::nullopt;
    const auto ua = static_cast<uint64_t>(*a), ub = static_cast<uint64_t>(*b);
    switch (e.op) {
      case Op::Add: return static_cast<int64_t>(ua + ub);
      case Op::Sub: return static_cast<int64_t>(ua - ub);
      case Op::Mul: return static_cast<int64_t>(ua * ub);
      case Op::Div: return *b == 0 || (*a == INT64_MIN && *b == -1) ? std::nullopt : std::optional(*a / *b);
      case Op::Mod: return *b == 0 || (*a == INT64_MIN && *b == -1) ? std::nullopt : std::optional(*a % *b);
      case Op::BAnd: return *a & *b;
      case Op::BOr: return *a | *b;
      case Op::BXor: return *a ^ *b;
      case Op::Shl: return ub < 64 ? std::optional(static_cast<int64_t>(ua << ub)) : std::nullopt;
      case Op::Shr: return ub < 64 ? std::optional(static_cast<int64_t>(ua >> ub)) : std::nullopt;
      default: return std::nullopt;
    }
  }
  if (e.kind == ExprKind::Positional) return out_.const_of[id];
  // A #define, an enum or a named constant.
  if (e.kind == ExprKind::Identifier && out_.type_of(id).is_int()) return out_.const_of[id];
  // An integer option: kstack(bcc, getopt("perf-max-stack-depth", 127)).
  if (e.kind == ExprKind::Call && out_.function_of[id] && out_.function_of[id]->known && out_.type_of(id).is_int())
    return out_.const_of[id];
  return std::nullopt;
}

// The names of the maps that a branch removed by known_if names.
static void maps_in_expr(const lang::Program& program, ExprId id, std::set<std::string>& out) {
  if (id == kNone) return;
  const Expr& e = program.expr(id);
  if (e.kind == ExprKind::Map) out.insert(e.name);
  for (ExprId a : e.args) maps_in_expr(program, a, out);
}

static void maps_in_stmts(const lang::Program& program, const std::vector<StmtId>& body, std::set<std::string>& out) {
  for (StmtId id : body) {
    const Stmt& s = program.stmt(id);
    for (ExprId e : {s.expr, s.range_end, s.target, s.value}) maps_in_expr(program, e, out);
    maps_in_stmts(program, s.body, out);
    maps_in_stmts(program, s.else_body, out);
  }
}

static std::set<std::string> maps_in_pruned_branches(const lang::Program& program, const std::map<StmtId, bool>& known_if) {
  std::set<std::string> out;
  for (const auto& [id, taken] : known_if) {
    const Stmt& s = program.stmt(id);
    maps_in_stmts(program, taken ? s.else_body : s.body, out);
  }
  return out;
}

// A map named only in branches the command line removed (known_if), as the
// final pass sees them: its other uses (qdisclat clears @msecs without -m)
// get a map that stays empty.
bool Checker::pruned_map(const std::string& name) {
  if (!final_) return false;
  if (!pruned_) pruned_ = maps_in_pruned_branches(ast_, out_.known_if);
  return pruned_->count(name) > 0;
}

std::vector<MapInfo>::iterator Checker::empty_map(const std::string& name, const Type& key, lang::Loc loc) {
  MapInfo m;
  m.name = name;
  m.keyed = true;
  m.key = key;
  m.key_written = key;
  m.value = Type::integer(8, true);
  m.first_use = loc;
  out_.maps.push_back(std::move(m));
  return out_.maps.end() - 1;
}

// The value of a typed condition when the command line decides it: a
// getopt() flag or integer, == and != of known strings, and !, &&, || of
// those (the right side of && and || only where the left one is known, as it
// may have effects). Literals (if (1)) are left to the lowering: their
// branches are still checked.
std::optional<bool> Checker::known_condition(ExprId id) const {
  const Expr& e = ast_.expr(id);
  if (e.kind == ExprKind::Unary && e.op == Op::LNot) {
    auto v = known_condition(e.args[0]);
    return v ? std::optional<bool>(!*v) : std::nullopt;
  }
  if (e.kind == ExprKind::Binary && (e.op == Op::LAnd || e.op == Op::LOr)) {
    const bool decides = e.op == Op::LOr;  // the left value that decides alone
    auto a = known_condition(e.args[0]);
    if (!a) return std::nullopt;
    if (*a == decides) return decides;
    return known_condition(e.args[1]);
  }
  // under_cgroup(""): a tool run without -c.
  if (auto it = out_.under_cgroup_of.find(id); it != out_.under_cgroup_of.end())
    return it->second.second == TypedProgram::kEveryCgroup ? std::optional(true) : std::nullopt;
  // A string getopt()'s const_of is an index into const_strings.
  if (!out_.type_of(id).is_int() || !out_.const_of[id]) return std::nullopt;
  const bool option = e.kind == ExprKind::Call && out_.function_of[id] && out_.function_of[id]->known;
  const bool strings = e.kind == ExprKind::Binary && (e.op == Op::Eq || e.op == Op::Ne);
  if (!option && !strings) return std::nullopt;
  return *out_.const_of[id] != 0;
}

namespace {

// The wider of two keys as written, which unify(): integers at the larger
// width, strings at the longer length, tuples field by field (bpftrace's
// promotion of a map's key type).
Type wider_key(const Type& a, const Type& b) {
  if (a.kind == TypeKind::None) return b;
  if (a.kind == TypeKind::Int && b.kind == TypeKind::Int && !a.is_pointer && !b.is_pointer) {
    Type t = Type::integer(std::max(a.size, b.size), a.is_signed || b.is_signed);
    if (a.enum_id == b.enum_id) t.enum_id = a.enum_id;
    return t;
  }
  if (a.is_string() && b.is_string()) return Type::string(std::max(a.size, b.size));
  if (a.is_tuple() && b.is_tuple() && a.elems.size() == b.elems.size() && a.names == b.names) {
    std::vector<Type> elems;
    for (size_t i = 0; i < a.elems.size(); ++i) elems.push_back(wider_key(a.elems[i], b.elems[i]));
    return Type::tuple(std::move(elems), a.names);
  }
  return a;
}

}  // namespace

// Finds (or, when assigning, creates) the map named by a Map expression and
// checks its key.
MapInfo* Checker::map_for(ExprId id, bool create) {
  const Expr& e = ast_.expr(id);
  Type key;
  if (e.args.size() == 1) {
    key = expr(e.args[0]);
  } else if (e.args.size() > 1) {
    std::vector<Type> elems;
    for (ExprId k : e.args) elems.push_back(expr(k));
    key = Type::tuple(std::move(elems));
  }
  const Type written = key;
  // Bools stay bools (printed true/false), pointers stay pointers (printed
  // in hex), other integers widen (enums keep their names).
  auto widen = [](Type& t) {
    if (t.kind != TypeKind::Int || t.is_pointer) return;
    uint32_t enum_id = t.enum_id;
    t = Type::integer(8, t.is_signed);
    t.enum_id = enum_id;
  };
  if (key.kind == TypeKind::Tuple) {
    for (auto& el : key.elems) widen(el);
    key = Type::tuple(key.elems, key.names);
  } else {
    widen(key);
  }
  if (!e.args.empty() && key.kind == TypeKind::None) {
    error(e.loc, "invalid map key");
    return nullptr;
  }
  auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == e.name; });
  if (it == out_.maps.end()) {
    const bool empty = !create && pruned_map(e.name);
    if (!create && !empty) return nullptr;
    MapInfo m;
    m.name = e.name;
    m.keyed = !e.args.empty();
    m.key = key;
    m.key_written = written;
    m.first_use = e.loc;
    if (empty) m.value = Type::integer(8, true);
    out_.maps.push_back(std::move(m));
    it = out_.maps.end() - 1;
  } else {
    if (it->keyed != !e.args.empty()) {
      error(e.loc, it->keyed ? fmt::format("{} used as a map without an explicit key (scalar map), previously used "
                                           "with an explicit key (non-scalar map)",
                                           e.name)
                             : fmt::format("{} used as a map with an explicit key (non-scalar map), previously used "
                                           "without an explicit key (scalar map)",
                                           e.name));
      return nullptr;
    }
    Type u;
    if (it->keyed && !unify(it->key, key, u)) {
      error(e.loc, fmt::format("Argument mismatch for {}: trying to access with arguments: '{}' when map expects "
                               "arguments: '{}'",
                               e.name, written.name(), it->key_written.name()));
      return nullptr;
    }
    if (it->keyed) {
      it->key = u;
      it->key_written = wider_key(it->key_written, written);
    }
  }
  out_.map_of[id] = static_cast<int32_t>(it - out_.maps.begin());
  return &*it;
}

// A map used as a whole (print/clear/zero argument).
MapInfo* Checker::whole_map(ExprId id) {
  const Expr& e = ast_.expr(id);
  auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == e.name; });
  if (it == out_.maps.end() && pruned_map(e.name)) it = empty_map(e.name, Type::integer(8, true), e.loc);
  if (it == out_.maps.end()) {
    if (final_) error(e.loc, fmt::format("Undefined map: {}", e.name));
    return nullptr;
  }
  out_.map_of[id] = static_cast<int32_t>(it - out_.maps.begin());
  set(id, Type::none());
  return &*it;
}

// A map named without a key and its key given apart (delete(@m, k),
// has_key(@m, k)): checks the key against the map's key type. `call` names
// the call in the error for a scalar map.
bool Checker::map_and_key(ExprId map_id, ExprId key_id, std::string_view call) {
  const Expr& a = ast_.expr(map_id);
  auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == a.name; });
  if (it == out_.maps.end() && pruned_map(a.name)) it = empty_map(a.name, expr(key_id), a.loc);
  if (it == out_.maps.end()) {
    error(a.loc, fmt::format("Undefined map: {}", a.name));
    return false;
  }
  Type kt = expr(key_id);
  if (!it->keyed) {
    error(ast_.expr(map_id).loc,
          fmt::format("call to {} expects a map with explicit keys (non-scalar map): {} has none", call, a.name));
    return false;
  }
  Type u;
  if (!unify(it->key, kt.is_int() ? Type::integer(8, kt.is_signed) : kt, u)) {
    error(ast_.expr(key_id).loc,
          fmt::format("Argument mismatch for {}: trying to access with arguments: '{}' when map expects "
                      "arguments: '{}'",
                      a.name, kt.name(), it->key_written.name()));
    return false;
  }
  out_.map_of[map_id] = static_cast<int32_t>(it - out_.maps.begin());
  set(map_id, Type::none());
  return true;
}

Type Checker::binary(ExprId id) {
  const Expr& e = ast_.expr(id);
  Type l = expr(e.args[0]);
  Type r = expr(e.args[1]);
  if (l.kind == TypeKind::None || r.kind == TypeKind::None) {
    if (!diags_.has_errors()) error(e.loc, "operand has no value");
    return Type::none();
  }
  switch (e.op) {
    case Op::Eq:
    case Op::Ne:
      if (l.is_string() && r.is_string()) {
        // Two strings known now (getopt("port", "") != ""): no run-time compare.
        const auto a = const_string(e.args[0]), b = const_string(e.args[1]);
        if (a && b) out_.const_of[id] = (*a == *b) == (e.op == Op::Eq);
        return Type::boolean();
      }
      // Tuples and records compare field by field (strings by content, so
      // their capacities may differ; records pair fields by name).
      if (l.is_tuple() || r.is_tuple()) {
        Type u;
        if (!unify(l, r, u)) {
          error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'", op_text(e.op), l.name(), r.name()));
          return Type::none();
        }
        return Type::boolean();
      }
      // Buffers (buf()) compare by length and content, whatever their
      // capacities.
      if (l.kind == TypeKind::Buffer && r.kind == TypeKind::Buffer) return Type::boolean();
      // Byte arrays (pton()) compare with arrays and tracepoint byte
      // arrays of the same size, byte by byte.
      if ((l.kind == TypeKind::Array || r.kind == TypeKind::Array) && l.is_bytes() && r.is_bytes()) {
        if (l.size != r.size) {
          error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'", op_text(e.op), l.name(), r.name()));
          return Type::none();
        }
        return Type::boolean();
      }
      [[fallthrough]];
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
      if (!l.is_int() || !r.is_int()) {
        error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'",
                                 ast_.source.slice(e.loc).empty() ? "?" : op_text(e.op), l.name(), r.name()));
        return Type::none();
      }
      return Type::boolean();
    case Op::LAnd:
    case Op::LOr:
      if (!l.is_int() || !r.is_int()) {
        error(e.loc, fmt::format("Invalid operands for '{}': '{}' and '{}'", op_text(e.op), l.name(), r.name()));
        return Type::none();
      }
      return Type::boolean();
    default:
      if (!l.is_int() || !r.is_int()) {
        error(e.loc, fmt::format("The {} operator can not be used on expressions of types {}, {}", op_text(e.op),
                                 l.name(), r.name()));
        return Type::none();
      }
      // Pointer arithmetic steps by the pointee's size, as in C.
      if (e.op == Op::Add && l.is_pointer != r.is_pointer) return l.is_pointer ? l : r;
      if (e.op == Op::Sub && l.is_pointer && !r.is_pointer) return l;
      {
        bool l_signed = l.is_signed && l.kind == TypeKind::Int;
        bool r_signed = r.is_signed && r.kind == TypeKind::Int;
        bool l_u64 = !l_signed && l.size == 8 && !is_literal(e.args[0]);
        bool r_u64 = !r_signed && r.size == 8 && !is_literal(e.args[1]);
        bool is_signed = (l_signed || r_signed) && !l_u64 && !r_u64;
        if (e.op == Op::Sub && (l.is_int() && r.is_int())) is_signed = true;  // 0.26: subtraction is signed
        return Type::integer(8, is_signed);
      }
  }
}

// (int8[8])x, (uint8[])"str", (bool[2])(uint16)1: the bytes of an integer
// (in native order), a string or an array as an array of integers or bools
// (0.26). Without a count, the array takes all the bytes.
Type Checker::array_cast(const Expr& e, const Type& from) {
  const std::string_view name = e.name;
  const size_t open = name.rfind('[');
  std::string_view elem_name = name.substr(0, open), count_text = name.substr(open + 1, name.size() - open - 2);
  while (elem_name.ends_with(' ')) elem_name.remove_suffix(1);
  const auto elem = int_type(elem_name);
  if (!elem) {
    error(e.loc, fmt::format("Cannot cast to \"{}\": only arrays of integers or bools are supported", e.name));
    return Type::none();
  }
  uint32_t bytes = 0;  // what the value holds
  if (from.is_int()) bytes = from.is_pointer ? 8 : from.size;
  else if (from.is_string()) bytes = from.size;
  else if (from.kind == TypeKind::Array) bytes = from.size * from.elems[0].size;
  if (!bytes) {
    if (from.kind != TypeKind::None) error(e.loc, fmt::format("Cannot cast from \"{}\" to \"{}\"", from.name(), e.name));
    return Type::none();
  }
  uint32_t count = bytes / elem->size;
  if (!count_text.empty()) {
    auto [p, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    (void)p;
    if (ec != std::errc()) count = 0;
  }
  const uint32_t size = count * elem->size;
  // An integer fills up to 8 bytes (a literal is as wide as needed); a string
  // or an array gives its first bytes.
  const bool fits = from.is_int() ? size <= 8 && (size >= bytes || from.size == 8) : size <= bytes;
  if (count == 0 || !fits) {
    error(e.loc, fmt::format("Cannot cast from \"{}\" to \"{}\": {} bytes to {}", from.name(), e.name, bytes, size));
    return Type::none();
  }
  return Type::array(*elem, count);
}

bool Checker::is_literal(ExprId id) const {
  const Expr& e = ast_.expr(id);
  return e.kind == ExprKind::Integer;
}

const char* Checker::op_text(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Mod: return "%";
    case Op::BAnd: return "&";
    case Op::BOr: return "|";
    case Op::BXor: return "^";
    case Op::Shl: return "<<";
    case Op::Shr: return ">>";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::LAnd: return "&&";
    case Op::LOr: return "||";
    default: return "?";
  }
}

// A builtin variable or a named constant (pid, AF_INET, TCP_ESTABLISHED):
// an Identifier, or a Call that spells a builtin as a function (pid()).
Type Checker::identifier(ExprId id) {
  const Expr& e = ast_.expr(id);
  // A #define of the script: an integer or a string (the last one wins).
  for (auto d = ast_.defines.rbegin(); d != ast_.defines.rend(); ++d) {
    if (d->name != e.name) continue;
    if (auto v = parse_int_param(d->value)) {
      out_.const_of[id] = *v;
      return Type::integer(8, true);
    }
    const std::string& v = d->value;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"' && v.find('"', 1) == v.size() - 1 &&
        v.find('\\') == std::string::npos) {
      out_.const_of[id] = static_cast<int64_t>(out_.const_strings.size());
      out_.const_strings.push_back(v.substr(1, v.size() - 2));
      return Type::string(static_cast<uint32_t>(v.size() - 1));
    }
    error(e.loc, fmt::format("#define {} {}: only integer and plain string values are substituted here", d->name, v));
    return Type::none();
  }
  const builtins::Function* f = find_function_(e.name);
  if (!f || !f->variable) {
    // A constant the book's scripts use that BTF lacks (AF_INET), or
    // an enum constant from the kernel's BTF (TCP_ESTABLISHED).
    if (auto v = known_constant(e.name)) {
      out_.const_of[id] = *v;
      return Type::integer(8, true);
    }
    if (auto v = out_.btf->enum_value(e.name)) {
      out_.const_of[id] = *v;
      // The value keeps its enum, so text output and %s print its name.
      Type t = Type::integer(8, true);
      if (auto enum_id = out_.btf->enum_of(e.name)) t.enum_id = *enum_id;
      return t;
    }
    error(e.loc, fmt::format("Unknown identifier: '{}'", e.name));
    return Type::none();
  }
  // A builtin variable: its entry's type rule, as for a call without
  // arguments (pid is pid()).
  out_.function_of[id] = f;
  return f->check(*this, id, e);
}

// An integer literal's type (0.26): the smallest signed type that holds it
// (1 is an int8, 1000 an int16), uint64 beyond int64.
static Type literal_type(uint64_t v) {
  if (v > static_cast<uint64_t>(INT64_MAX)) return Type::integer(8, false);
  return Type::integer(v <= INT8_MAX ? 1 : v <= INT16_MAX ? 2 : v <= INT32_MAX ? 4 : 8, true);
}

Type Checker::expr(ExprId id) {
  const Expr& e = ast_.expr(id);
  switch (e.kind) {
    case ExprKind::Integer:
      if (!e.name.empty()) return set(id, Type::boolean());  // true, false
      return set(id, literal_type(e.ival));
    case ExprKind::Float:
      error(e.loc, std::string(kFloatMessage));
      return set(id, Type::none());
    case ExprKind::String:
      if (e.sval.size() + 1 > out_.config.max_strlen) {
        error(e.loc, fmt::format("String is too long (over {} bytes): {}", out_.config.max_strlen, e.sval.size()));
        return set(id, Type::none());
      }
      return set(id, Type::string(static_cast<uint32_t>(e.sval.size() + 1)));
    case ExprKind::Identifier: return set(id, identifier(id));
    case ExprKind::Positional: {
      // An unset parameter is 0; one that reads as an integer is that
      // integer everywhere (the lowering takes const_of); others are strings.
      if (e.ival == 0 || e.ival > out_.positional.size()) {
        out_.const_of[id] = 0;
        return set(id, Type::integer(8, true));
      }
      const auto& p = out_.positional[e.ival - 1];
      out_.const_of[id] = parse_int_param(p);
      if (out_.const_of[id]) return set(id, Type::integer(8, true));
      // Past INT64_MAX (0xffffffffffffffff): an unsigned 64-bit integer.
      if (!p.empty() && std::isdigit(static_cast<unsigned char>(p[0]))) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long u = std::strtoull(p.c_str(), &end, 0);
        if (errno == 0 && *end == '\0') {
          out_.const_of[id] = static_cast<int64_t>(u);
          return set(id, Type::integer(8, false));
        }
      }
      return set(id, Type::string(static_cast<uint32_t>(p.size() + 1)));
    }
    case ExprKind::PositionalCount: return set(id, Type::integer(8, true));
    case ExprKind::Variable: {
      int32_t var = find_var(e.name);
      if (var < 0) {
        error(e.loc, undefined_var_message(e.name));
        return set(id, Type::none());
      }
      out_.var_of[id] = var;
      return set(id, out_.var_types[var]);
    }
    case ExprKind::Map: {
      const size_t errors = diags_.error_count();
      MapInfo* m = map_for(id, /*create=*/false);
      if (!m) {
        // map_for() may have said why (a keyed map read without a key).
        if (diags_.error_count() == errors) error(e.loc, fmt::format("Undefined map: {}", e.name));
        return set(id, Type::integer(8, true));
      }
      switch (m->agg) {
        case output::AggKind::Plain: break;
        // Read in the kernel as the sum (or min, max, average) over CPUs.
        case output::AggKind::Count: return set(id, Type::integer(8, false));
        case output::AggKind::Sum:
        case output::AggKind::Min:
        case output::AggKind::Max:
        case output::AggKind::Avg: return set(id, Type::integer(8, m->value.is_signed));
        case output::AggKind::Stats:
        case output::AggKind::Hist:
        case output::AggKind::LHist:
        case output::AggKind::TSeries:
          error(e.loc, fmt::format("a {}() map has no single value to read in a probe: {}", agg_name(m->agg), e.name));
          return set(id, Type::none());
      }
      if (m->value.kind == TypeKind::None) return set(id, Type::integer(8, true));
      return set(id, m->value);
    }
    case ExprKind::Call: return set(id, call(id));
    case ExprKind::Unary: {
      Type t = expr(e.args[0]);
      switch (e.op) {
        case Op::Neg:
        case Op::BNot:
          if (!t.is_int()) break;
          // -1 is an int8 as 1 is (0.26).
          if (e.op == Op::Neg && ast_.expr(e.args[0]).kind == ExprKind::Integer && t.kind == TypeKind::Int)
            return set(id, Type::integer(t.size, true));
          return set(id, Type::integer(8, e.op == Op::Neg ? true : t.is_signed));
        case Op::LNot:
          if (!t.is_int()) break;
          return set(id, Type::boolean());
        case Op::Deref: return set(id, element_of(t, e.loc));
        case Op::AddrOf: return set(id, address_of(e));
        default: break;
      }
      error(e.loc, fmt::format("invalid operand of type {} for unary operator", t.name()));
      return set(id, Type::none());
    }
    case ExprKind::Binary: return set(id, binary(id));
    case ExprKind::Ternary: {
      Type c = expr(e.args[0]);
      if (!valid_condition(c)) error(ast_.expr(e.args[0]).loc, "Invalid condition in ternary: " + c.name());
      if (e.args.size() == 2) {
        // a ?: b
        Type b = expr(e.args[1]);
        Type u;
        if (!unify(c, b, u)) error(e.loc, "Ternary operator must return the same type");
        return set(id, u);
      }
      Type a = expr(e.args[1]);
      Type b = expr(e.args[2]);
      Type u;
      if (a.kind == TypeKind::None && b.kind == TypeKind::None) return set(id, Type::none());
      if (!unify(a, b, u)) {
        error(e.loc, fmt::format("Ternary operator must return the same type: have '{}' and '{}'", a.name(), b.name()));
        return set(id, Type::none());
      }
      return set(id, u);
    }
    case ExprKind::Field: {
      const Expr& base = ast_.expr(e.args[0]);
      if (base.kind == ExprKind::Identifier && base.name == "args") {
        out_.function_of[e.args[0]] = find_function_("args");
        set(e.args[0], Type::none());
        return set(id, args_field(e));
      }
      Type bt = expr(e.args[0]);
      if (bt.is_record() || (bt.kind == TypeKind::Int && bt.is_pointer && bt.btf_id != 0)) {
        return set(id, btf_field(id, e, bt));
      }
      if (bt.is_named_tuple()) {
        const int idx = bt.field_index(e.name);
        if (idx >= 0) return set(id, bt.elems[idx]);
        error(e.loc, fmt::format("Record has no field named '{}': {}", e.name, bt.name()));
        return set(id, Type::none());
      }
      if (bt.is_tuple()) {
        uint64_t idx = 0;
        auto [p, ec] = std::from_chars(e.name.data(), e.name.data() + e.name.size(), idx);
        if (ec == std::errc() && p == e.name.data() + e.name.size() && idx < bt.elems.size())
          return set(id, bt.elems[idx]);
        error(e.loc, fmt::format("Invalid tuple index: {}", e.name));
        return set(id, Type::none());
      }
      // A base that already failed to type-check was reported there.
      if (bt.kind != TypeKind::None)
        error(e.loc, fmt::format("Can not access field '{}' on expression of type '{}'", e.name, bt.name()));
      return set(id, Type::none());
    }
    case ExprKind::Index: {
      Type bt = expr(e.args[0]);
      Type it = expr(e.args[1]);
      if (bt.kind == TypeKind::None) return set(id, Type::none());
      if (!it.is_int()) {
        error(ast_.expr(e.args[1]).loc, fmt::format("The array index must be an integer, not {}", it.name()));
        return set(id, Type::none());
      }
      if (bt.is_string()) {
        // A constant index must be in bounds; another is checked when the
        // probe runs (a byte past the string reads as 0).
        const Expr& index = ast_.expr(e.args[1]);
        if (auto k = constant(e.args[1])) {
          if (*k < 0 || static_cast<uint64_t>(*k) >= bt.size) {
            error(index.loc, fmt::format("the index {} is out of bounds for array of size {}", *k, bt.size));
            return set(id, Type::none());
          }
          out_.const_of[e.args[1]] = *k;
        }
        return set(id, Type::integer(1, true));
      }
      if (bt.kind == TypeKind::Array) {
        const Expr& index = ast_.expr(e.args[1]);
        if (index.kind != ExprKind::Integer || index.ival >= bt.size) {
          error(index.loc, fmt::format("an array index must be a constant below {}", bt.size));
          return set(id, Type::none());
        }
        return set(id, bt.elems[0]);
      }
      if (bt.is_tuple()) {
        // $t[1 + 1]: the index must be a constant (0.26 folds it).
        const Expr& index = ast_.expr(e.args[1]);
        auto k = constant(e.args[1]);
        if (!k) {
          error(index.loc, "Array-style access for tuples only valid for integer literals");
          return set(id, Type::none());
        }
        if (*k < 0 || static_cast<uint64_t>(*k) >= bt.elems.size()) {
          error(index.loc, fmt::format("Invalid tuple index: {}. Found {} elements in tuple.", *k, bt.elems.size()));
          return set(id, Type::none());
        }
        out_.const_of[e.args[1]] = *k;
        return set(id, bt.elems[*k]);
      }
      if (bt.is_record()) {
        // An array member of a kernel struct: a[i] reads one element.
        auto at = out_.btf->type(bt.btf_id);
        if (at && at->kind == bpf::BtfType::Kind::Array) {
          auto elem = btf_value_type(at->target);
          if (!elem) {
            error(e.loc, fmt::format("array elements of type {} cannot be read yet", out_.btf->type_name(at->target)));
            return set(id, Type::none());
          }
          return set(id, *elem);
        }
      }
      if (bt.is_pointer) return set(id, element_of(bt, e.loc));
      error(e.loc, fmt::format("The array index operator [] can not be used on expressions of type {}", bt.name()));
      return set(id, Type::none());
    }
    case ExprKind::Cast: {
      Type t = expr(e.args[0]);
      if (e.name.ends_with("]") && e.type_of == kNone) return set(id, array_cast(e, t));
      auto to = e.type_of != kNone ? typeof_type(e.type_of, e.name, e.loc) : type_of_name(e.name, e.loc);
      if (!to) return set(id, Type::none());
      if (to->is_record()) {
        error(e.loc, fmt::format("Cannot cast to \"{}\": only pointers to structs are supported", e.name));
        return set(id, Type::none());
      }
      // A byte array of the integer's size casts in native order
      // ((uint32)pton("127.0.0.1")).
      if (t.kind == TypeKind::Array && to->kind == TypeKind::Int && t.size * t.elems[0].size == to->size)
        return set(id, *to);
      if (!t.is_int()) {
        // An operand that already failed was reported there.
        if (t.kind != TypeKind::None)
          error(e.loc,
                fmt::format("Cannot cast from \"{}\" to \"{}\"", t.name(), e.type_of != kNone ? to->name() : e.name));
        return set(id, Type::none());
      }
      // A cast keeps the address space a pointer came from (user memory
      // stays user memory).
      if (to->is_pointer && t.addr_space != AddrSpace::None) retarget(*to, t.addr_space);
      return set(id, *to);
    }
    case ExprKind::Block: {  // an expanded macro: its variables live in its own scope
      scopes_.emplace_back();
      for (StmtId s : e.body) stmt(s);
      Type t = e.args.empty() ? Type::none() : expr(e.args[0]);
      scopes_.pop_back();
      return set(id, t);
    }
    case ExprKind::Tuple: {
      std::vector<Type> elems;
      for (ExprId a : e.args) {
        const size_t errors = diags_.error_count();
        Type t = expr(a);
        if (t.kind == TypeKind::None) {
          if (diags_.error_count() == errors) error(ast_.expr(a).loc, "tuple element has no value");
          return set(id, Type::none());
        }
        elems.push_back(t);  // integers keep their size (and an enum its names): a tuple is a C struct
      }
      return set(id, Type::tuple(std::move(elems), e.field_names));
    }
    case ExprKind::IncDec: {
      const Expr& target = ast_.expr(e.args[0]);
      if (target.kind == ExprKind::Variable) {
        int32_t var = find_var(target.name);
        if (var < 0) {
          error(target.loc, fmt::format("Undefined or undeclared variable: {}", target.name));
          return set(id, Type::none());
        }
        if (!out_.var_types[var].is_int()) {
          error(e.loc, "++ and -- need an integer variable");
          return set(id, Type::none());
        }
        widen_var(var, true);
        out_.var_of[e.args[0]] = var;
        set(e.args[0], out_.var_types[var]);
        return set(id, out_.var_types[var]);
      }
      if (target.kind == ExprKind::Map) {
        MapInfo* m = map_for(e.args[0], /*create=*/true);
        if (!m) return set(id, Type::none());
        if (m->agg != output::AggKind::Plain || (m->value.kind != TypeKind::None && !m->value.is_int())) {
          error(e.loc, fmt::format("++ and -- need an integer map: {}", m->name));
          return set(id, Type::none());
        }
        if (m->value.kind == TypeKind::None) m->value = Type::integer(8, true);
        set(e.args[0], m->value);
        return set(id, m->value);
      }
      error(e.loc, "++ and -- apply to variables and maps");
      return set(id, Type::none());
    }
    case ExprKind::Sizeof: {
      if (!e.type_arg) {
        Type t = expr(e.args[0]);
        uint32_t size = t.field_size();
        if (t.is_record()) size = out_.btf->size_of(t.btf_id).value_or(0);
        out_.const_of[id] = size;
        return set(id, Type::integer(8, false));
      }
      if (e.type_of != kNone) {
        auto t = typeof_type(e.type_of, e.name, e.loc);
        if (!t) return set(id, Type::none());
        uint32_t size = t->field_size();
        if (t->is_record()) size = out_.btf->size_of(t->btf_id).value_or(0);
        out_.const_of[id] = size;
        return set(id, Type::integer(8, false));
      }
      // T[N][M]: N * M elements of T.
      std::string_view n = e.name;
      uint64_t count = 1;
      while (n.ends_with("]")) {
        const size_t open = n.rfind('[');
        uint32_t k = 0;
        auto [p, ec] = std::from_chars(n.data() + open + 1, n.data() + n.size() - 1, k);
        if (open == std::string_view::npos || ec != std::errc() || p != n.data() + n.size() - 1) break;
        count *= k;
        n = n.substr(0, open);
        while (n.ends_with(' ')) n.remove_suffix(1);
      }
      std::optional<uint32_t> size;
      if (auto ct = int_type(n)) size = ct->size;
      else if (n.ends_with("*")) size = 8;
      else if (auto tid = out_.btf->find_type(n)) size = out_.btf->size_of(*tid);
      // A bare name that is no type may be an enum value: an int64 constant.
      else if (count == 1 && n.find(' ') == std::string_view::npos && out_.btf->enum_value(n)) size = 8;
      if (!size || n.ends_with("]")) {
        error(e.loc, fmt::format("Unknown type: {}", e.name));
        return set(id, Type::none());
      }
      out_.const_of[id] = static_cast<int64_t>(*size * count);
      return set(id, Type::integer(8, false));
    }
    case ExprKind::Typeof:
      error(e.loc, "When used as a call argument, `typeof` builtin only valid for macro calls that are expecting a "
                   "type parameter");
      return set(id, Type::none());
    case ExprKind::Offsetof: {
      auto sid = out_.btf->find_struct(e.name);
      if (!sid) {
        error(e.loc, fmt::format("Unknown struct: {}", e.name));
        return set(id, Type::none());
      }
      uint64_t bits = 0;
      uint32_t cur = *sid;
      // "a.b.c" walks nested members.
      std::string_view path = e.sval;
      while (!path.empty()) {
        size_t dot = path.find('.');
        std::string_view part = path.substr(0, dot);
        auto m = out_.btf->find_member(cur, part);
        if (!m) {
          error(e.loc, fmt::format("'{}' has no field named '{}'", out_.btf->type_name(cur), part));
          return set(id, Type::none());
        }
        bits += m->bit_offset;
        cur = out_.btf->resolve(m->type_id);
        path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
      }
      out_.const_of[id] = static_cast<int64_t>(bits / 8);
      return set(id, Type::integer(8, false));
    }
  }
  std::unreachable();
}

}  // namespace bpfscope::sema::detail

namespace bpfscope::sema {

using detail::Checker;

namespace {

// kprobe or fentry, by what this kernel allows: a kprobe falls back to
// fentry (kretprobe to fexit) when kprobes are missing and the function has
// a BTF prototype that the kernel accepts; fentry falls back to kprobes when
// the kernel refuses it. When neither works the kind stays, and attaching
// reports why.
ProbeKind mechanism_of(ResolvedAttachPoint& point, const Options& options, const bpf::Btf& btf) {
  using K = ProbeKind;
  const K kind = point.kind;
  if (kind != K::Kprobe && kind != K::Kretprobe && kind != K::Fentry && kind != K::Fexit) return kind;
  const bool ret = kind == K::Kretprobe || kind == K::Fexit;
  auto kprobes = [&] { return options.kprobes >= 0 ? options.kprobes == 1 : bpf::has_kprobe_support(); };
  // fentry needs every target's function in BTF (no wildcards), and the
  // kernel's consent, asked with an empty program on the first function.
  // The kernel's answer is kept for the error at attach.
  auto fentry = [&] {
    for (auto& t : point.targets) {
      if (t.btf_id == 0) t.btf_id = btf.find_func(t.func).value_or(0);
      if (t.btf_id == 0) {
        point.fentry_refused = bpf::fentry_unavailable(t.func, ret);  // names the missing function
        return false;
      }
    }
    if (options.fentry >= 0) {
      if (options.fentry == 0) point.fentry_refused = "fentry is turned off (Options::fentry)";
      return options.fentry == 1;
    }
    point.fentry_refused = bpf::fentry_unavailable(point.targets[0].func, ret);
    return point.fentry_refused.empty();
  };
  if (kind == K::Kprobe || kind == K::Kretprobe) {
    if (kprobes()) return kind;
    return fentry() ? (ret ? K::Fexit : K::Fentry) : kind;
  }
  if (fentry()) return kind;
  return kprobes() ? (ret ? K::Kretprobe : K::Kprobe) : kind;
}

std::string program_name(const std::string& target) {
  std::string n;
  for (char c : target) n += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return n;
}

void compute_layouts(TypedProgram& p) {
  for (auto& m : p.maps) {
    m.key_size = m.keyed ? std::max<uint32_t>(m.key.mem_size(), 8) : 8;
    // A map without keys holds one entry; the second is room for a probe to
    // add it again while user space is still freeing the one it took
    // (print(@c); clear(@c)), where one entry would be "map full".
    m.max_entries = m.keyed ? p.config.max_map_keys : 2;
    switch (m.agg) {
      case output::AggKind::Plain:
        m.value_size = std::max<uint32_t>(m.value.mem_size(), 8);
        m.percpu = false;
        break;
      case output::AggKind::Count:
      case output::AggKind::Sum:
        m.value_size = 8;
        m.percpu = true;
        break;
      case output::AggKind::Min:
      case output::AggKind::Max:
      case output::AggKind::Avg:
        // Min/Max: {value, set}; Avg: {count, total}.
        m.value_size = 16;
        m.percpu = true;
        break;
      case output::AggKind::Stats:
        // {count, total, min, max}: min and max hold a value once count is
        // not 0 (metrics serve them; print() shows count, average, total).
        m.value_size = 32;
        m.percpu = true;
        break;
      case output::AggKind::Hist:
      case output::AggKind::LHist:
        // The bucket counts, then the sum of the values (metrics' _sum).
        m.value_size = 8 * (m.hist_buckets() + 1);
        m.percpu = true;
        break;
      case output::AggKind::TSeries:
        // A {value, meta, epoch} slot per interval.
        m.value_size = output::kTSeriesSlotSize * m.tseries.intervals;
        m.percpu = true;
        break;
    }
  }
}

// The --name[=value] options after `--` that no getopt() reads are an error
// (bpftrace 0.26's words); --help alone lists the program's options, with
// their descriptions, and does not run it.
bool check_named_args(const lang::Program& program, const TypedProgram& out, const Options& options,
                      lang::Diagnostics& diags) {
  std::vector<std::string> unexpected;
  bool help = false;
  for (const auto& [name, value] : out.named_args) {
    if (out.getopt_names.count(name) || options.implied_args.count(name)) continue;
    if (name == "help") help = true;
    else unexpected.push_back("--" + name);
  }
  if (unexpected.empty() && !help) return true;
  // The program's options in the order written, each with its description.
  std::vector<std::pair<std::string, std::string>> expected;
  for (const auto& e : program.exprs) {
    if (e.kind != lang::ExprKind::Call || e.name != "getopt" || e.args.empty()) continue;
    const auto& name = program.expr(e.args[0]);
    if (name.kind != lang::ExprKind::String) continue;
    if (std::any_of(expected.begin(), expected.end(), [&](const auto& x) { return x.first == name.sval; })) continue;
    const bool described = e.args.size() == 3 && program.expr(e.args[2]).kind == lang::ExprKind::String;
    expected.emplace_back(name.sval, described ? program.expr(e.args[2]).sval : "");
  }
  std::string hint;
  if (expected.empty()) {
    hint = "no custom program options defined.";
  } else if (help) {
    hint = "expected program options:";
    for (const auto& [name, description] : expected)
      hint += fmt::format("\n--{}{}{}", name, description.empty() ? "" : ": ", description);
  } else {
    hint = "expected program options: ";
    for (size_t i = 0; i < expected.size(); ++i) hint += fmt::format("{}--{}", i ? ", " : "", expected[i].first);
  }
  if (unexpected.empty())
    diags.error_unlocated("--help asks for the program's options (below); the program is not run", {hint});
  else
    diags.error_unlocated(fmt::format("unexpected program command line options: {}", fmt::join(unexpected, ", ")), {hint});
  return false;
}

// The bytes of ring buffer records one run of the BEGIN and END probes can
// send, when only they send records (exit() aside) and no loop in them can
// repeat one; 0 when unbounded. The runtime sizes the ring buffer to it
// (each run is read before the next), which keeps `BEGIN { ... exit(); }`
// from mapping a buffer it never fills.
uint32_t begin_end_record_bytes(const lang::Program& program, const TypedProgram& out,
                                const std::vector<std::vector<ResolvedAttachPoint>>& resolved) {
  if (out.streams_output || out.uses_ustack || out.uses_kstack) return 0;
  auto begin_end = [&](uint32_t probe) {
    return std::all_of(resolved[probe].begin(), resolved[probe].end(),
                       [](const auto& p) { return p.kind == ProbeKind::Begin || p.kind == ProbeKind::End; });
  };
  std::function<bool(const std::vector<lang::StmtId>&)> loops = [&](const std::vector<lang::StmtId>& body) {
    for (lang::StmtId id : body) {
      const auto& st = program.stmt(id);
      if (st.kind == lang::StmtKind::While || st.kind == lang::StmtKind::For || st.kind == lang::StmtKind::Unroll)
        return true;
      if (loops(st.body) || loops(st.else_body)) return true;
    }
    return false;
  };
  uint64_t bytes = 0;
  for (const auto& a : out.actions) {
    if (!begin_end(a.probe_index)) {
      if (a.kind != ActionKind::Exit) return 0;
      continue;
    }
    if (loops(program.probes[a.probe_index].body)) return 0;
    bytes += 8 + ((a.record_size + 7) & ~7u);  // the ring buffer's header, and the record padded to 8
  }
  return static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX));
}

}  // namespace

std::optional<TypedProgram> analyse(const lang::Program& program, const Options& options, lang::Diagnostics& diags) {
  TypedProgram out;
  out.ast = &program;
  out.config = options.config;
  if (!apply_config(program, out.config, diags)) return std::nullopt;
  out.positional = options.positional;
  out.has_child = options.has_child;
  auto btf = std::make_shared<bpf::Btf>();
  if (!add_c_definitions(program, *btf, diags)) return std::nullopt;
  out.btf = std::move(btf);

  // Resolve every attach point first: wildcards, formats, periods.
  std::vector<std::vector<ResolvedAttachPoint>> resolved(program.probes.size());
  std::set<std::string> attach_getopts;  // getopt("NAME") in attach points
  for (size_t i = 0; i < program.probes.size(); ++i) {
    bool failed = false;                 // an attach point of this probe reported an error
    std::vector<std::string> unmatched;  // its patterns that matched nothing
    for (const auto& ap : program.probes[i].points) {
      auto text = expand_positionals(ap.text, options.positional, options.named_args, &attach_getopts);
      if (!text) {
        diags.error(ap.loc, text.error());
        failed = true;
        continue;
      }
      if (out.config.missing_probes != MissingProbes::Error) {
        // config missing_probes=warn|ignore: a point that matches nothing
        // is skipped; other errors stay errors.
        lang::Diagnostics scratch;
        std::string missing;
        auto r = resolve_attach_point(*text, ap.loc, scratch, options.target_pid, options.child_program, &missing);
        if (r && !r->targets.empty()) {
          resolved[i].push_back(std::move(*r));
          continue;
        }
        if (r || !missing.empty()) {
          if (out.config.missing_probes == MissingProbes::Warn)
            diags.warning(ap.loc, fmt::format("No matches for {}. Skipping.", missing.empty() ? *text : missing));
          continue;
        }
      }
      const size_t errors = diags.error_count();
      auto r = resolve_attach_point(*text, ap.loc, diags, options.target_pid, options.child_program);
      if (r && !r->targets.empty())
        resolved[i].push_back(std::move(*r));
      else if (r)
        unmatched.push_back(*text);
      if (diags.error_count() != errors) failed = true;
    }
    // A pattern that matches nothing drops its attach point (bpftrace's
    // missing_probes=error): only a probe left with none is an error.
    if (resolved[i].empty() && !failed && out.config.missing_probes == MissingProbes::Error)
      diags.error(program.probes[i].points.size() == 1 ? program.probes[i].points[0].loc : program.probes[i].loc,
                  fmt::format("Probe has no valid attach points: {} {} nothing",
                                                     fmt::join(unmatched, ", "), unmatched.size() == 1 ? "matches" : "match"));
  }
  // A bench probe's name labels its row of results: one probe per name.
  std::set<std::string> bench_names;
  for (const auto& points : resolved)
    for (const auto& point : points)
      if (point.kind == ProbeKind::Bench)
        for (const auto& t : point.targets)
          if (!bench_names.insert(t.func).second)
            diags.error(t.loc, fmt::format("\"{}\" was used as the name for more than one BENCH probe", t.func));
  if (diags.has_errors()) return std::nullopt;
  // Raw tracepoints attach as tp_btf where the kernel's BTF has the event's
  // btf_trace_<event> prototype (trusted typed arguments), else as raw_tp.
  for (auto& points : resolved)
    for (auto& point : points)
      if (point.kind == ProbeKind::RawTracepoint)
        for (auto& t : point.targets) t.btf_id = out.btf->tracepoint_btf_id(t.format.event).value_or(0);
      else if (point.kind == ProbeKind::Fentry || point.kind == ProbeKind::Fexit)
        for (auto& t : point.targets) t.btf_id = out.btf->find_func(t.func).value_or(0);
  for (auto& points : resolved)
    for (auto& point : points) point.mechanism = mechanism_of(point, options, *out.btf);
  if (!options.probe_filter.empty()) {
    const std::regex filter(options.probe_filter);
    for (auto& points : resolved) {
      for (auto& point : points) {
        if (point.kind == ProbeKind::Begin || point.kind == ProbeKind::End) continue;
        std::erase_if(point.targets, [&](const AttachTarget& t) { return !std::regex_search(t.name, filter); });
      }
      std::erase_if(points, [](const ResolvedAttachPoint& p) { return p.targets.empty(); });
    }
  }
  // --probe-filter and missing_probes may leave probes without a target:
  // those are not compiled, and a program left with none has nothing to run.
  const bool may_skip = !options.probe_filter.empty() || out.config.missing_probes != MissingProbes::Error;
  if (may_skip && std::all_of(resolved.begin(), resolved.end(), [](const auto& p) { return p.empty(); })) {
    diags.error_unlocated("No probes to attach");
    return std::nullopt;
  }
  if (program.probes.empty()) {
    diags.error_unlocated("No probes to attach");
    return std::nullopt;
  }

  // Two passes: the first fixes map types from every assignment (a map may be
  // read in a probe that comes before the one assigning it), the second
  // reports errors.
  std::vector<bool> target_specific(program.probes.size());
  for (bool final : {false, true}) {
    size_t n = program.exprs.size();
    out.expr_types.assign(n, Type::none());
    out.var_of.assign(n, -1);
    out.map_of.assign(n, -1);
    out.action_of.assign(n, -1);
    out.function_of.assign(n, nullptr);
    out.field_of.assign(n, FieldAccess{});
    out.for_var_of.assign(n, -1);
    out.const_of.assign(n, std::nullopt);
    out.in_list_of.clear();
    std::vector<Type> first_pass_vars = final ? std::move(out.var_types) : std::vector<Type>{};
    out.var_types.clear();
    out.addressed_vars.clear();
    out.actions.clear();
    lang::Diagnostics scratch;
    out.strftime_formats.clear();
    out.const_strings.clear();
    out.getopt_names.clear();
    out.named_args = options.named_args;
    out.unsafe = options.unsafe;
    Checker checker(program, out, final ? diags : scratch, final, std::move(first_pass_vars), options.find_function);
    for (uint32_t i = 0; i < program.probes.size(); ++i) {
      // A probe --probe-filter or missing_probes left no target is not compiled.
      if (resolved[i].empty() && may_skip) continue;
      checker.check_probe(i, resolved[i]);
      target_specific[i] = checker.target_specific();
    }
  }
  if (diags.has_errors()) return std::nullopt;
  out.getopt_names.insert(attach_getopts.begin(), attach_getopts.end());
  if (!check_named_args(program, out, options, diags)) return std::nullopt;
  for (const auto& m : out.maps) {
    if (m.agg == output::AggKind::Plain && m.value.kind == TypeKind::None) {
      diags.error(m.first_use, fmt::format("Undefined map: {}", m.name));
      return std::nullopt;
    }
  }
  compute_layouts(out);
  if (!apply_map_decls(program, out, diags)) return std::nullopt;
  for (const auto& a : out.actions) {
    bool output = a.kind == ActionKind::Printf || a.kind == ActionKind::Print || a.kind == ActionKind::PrintValue || a.kind == ActionKind::Table ||
                  a.kind == ActionKind::Time || a.kind == ActionKind::Join || a.kind == ActionKind::Cat ||
                  a.kind == ActionKind::System || a.kind == ActionKind::Errorf || a.kind == ActionKind::Warnf;
    bool hot = std::any_of(resolved[a.probe_index].begin(), resolved[a.probe_index].end(), [](const auto& p) {
      return p.kind != ProbeKind::Begin && p.kind != ProbeKind::End && p.kind != ProbeKind::Bench;
    });
    if (output && hot) out.streams_output = true;
  }
  out.begin_end_record_bytes = begin_end_record_bytes(program, out, resolved);

  // Program units: one per target when the body depends on it, else one per kind.
  for (uint32_t i = 0; i < program.probes.size(); ++i) {
    for (auto& point : resolved[i]) {
      // A program of BEGIN, END and iterators ends after running them.
      // bench probes run one after another in --mode bench, else never.
      if (point.kind != ProbeKind::Begin && point.kind != ProbeKind::End && point.kind != ProbeKind::Iter &&
          point.kind != ProbeKind::Bench)
        out.only_begin_end = false;
      if (point.kind == ProbeKind::End) out.has_end = true;
      auto existing = std::find_if(out.units.begin(), out.units.end(), [&](const ProgramUnit& u) {
        return u.probe_index == i && u.kind == point.kind && u.mechanism == point.mechanism && !target_specific[i];
      });
      for (auto& t : point.targets) {
        if (existing != out.units.end() && !target_specific[i] && point.kind != ProbeKind::Interval &&
            point.kind != ProbeKind::Profile && point.kind != ProbeKind::Begin && point.kind != ProbeKind::End &&
            point.kind != ProbeKind::Bench && point.kind != ProbeKind::Signal) {
          existing->targets.push_back(std::move(t));
          continue;
        }
        ProgramUnit u;
        u.probe_index = i;
        u.kind = point.kind;
        u.mechanism = point.mechanism;
        u.fentry_refused = point.fentry_refused;
        const std::string name = program_name(t.name);
        u.name = name.substr(0, 15);
        u.message_name = fmt::format("{}_{}", name, i + 1);
        u.targets.push_back(std::move(t));
        out.units.push_back(std::move(u));
        existing = out.units.end() - 1;
      }
    }
  }
  return out;
}

}  // namespace bpfscope::sema
