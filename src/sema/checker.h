// Internal to sema: the type checker's class, shared by its three files:
// check.cpp (probes, statements, expressions, analyse), calls.cpp (function
// calls and actions) and kernel_types.cpp (BTF structs, pointers, casts,
// tracepoint fields, constants).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sema/probes.h"
#include "sema/sema.h"

namespace bpfscope::sema::detail {

using lang::Expr;
using lang::ExprId;
using lang::ExprKind;
using lang::kNone;
using lang::Op;
using lang::Stmt;
using lang::StmtId;
using lang::StmtKind;

const char* agg_name(output::AggKind k);

// A floating-point literal anywhere but as the divisor of a printf argument.
inline constexpr std::string_view kFloatMessage =
    "floating-point values are only supported as a printf argument divided by a literal: "
    "printf(\"%.2f\", $ns / 1000000.0)";
// An integer parameter ($1, getopt values) as bpftrace reads one: decimal, 0x
// hex or 0 octal, optionally signed; nullopt for other text and out of range.
std::optional<int64_t> parse_int_param(std::string_view s);
// The type of a tracepoint field as bpfscope sees it.
Type field_type(const bpf::TracepointField& f, std::string_view category, uint32_t max_strlen);
// Constants from C headers that kernel BTF lacks (AF_INET, TASK_RUNNING, errno
// and signal names).
std::optional<int64_t> known_constant(std::string_view name);

// An integer that is only a number: not a pointer, bool or enum value.
inline bool is_plain_int(const Type& t) { return t.kind == TypeKind::Int && !t.is_pointer && !t.enum_id; }

class Checker {
 public:
  Checker(const lang::Program& ast, TypedProgram& out, lang::Diagnostics& diags, bool final,
          std::vector<Type> first_pass_vars, const builtins::Function* (*find_function)(std::string_view))
      : ast_(ast),
        out_(out),
        diags_(diags),
        final_(final),
        first_pass_vars_(std::move(first_pass_vars)),
        find_function_(find_function) {}

  void check_probe(uint32_t probe_index, const std::vector<ResolvedAttachPoint>& points);

  bool target_specific() const { return target_specific_; }

  // The rest is the checker's working state and services. It is public for
  // the builtin functions' type rules (src/builtins/), which are part of
  // the checker's work.
  void error(lang::Loc loc, std::string msg);

  Type& set(ExprId id, Type t) { return out_.expr_types[id] = std::move(t); }

  // A condition must be an integer; one without a type after an error was
  // already reported (a bad comparison) needs no second error.
  bool valid_condition(const Type& c) const { return c.is_int() || (c.kind == TypeKind::None && diags_.has_errors()); }

  void block(const std::vector<StmtId>& body);
  void fold_print_clear(const std::vector<StmtId>& body);

  int32_t find_var(const std::string& name);

  int32_t declare_var(const std::string& name, const Type& t);
  void widen_var(int32_t var, bool grow);

  bool in_loop() const { return loop_depth_ > 0; }

  static std::string undefined_var_message(const std::string& name);

  void stmt(StmtId id);

  void for_map(const Stmt& s);

  void let(const Stmt& s);

  bool copyable_record(const Type& t, lang::Loc loc);
  std::optional<Type> let_type(std::string_view name, lang::Loc loc);
  bool narrowing_store(ExprId value, const Type& vt, const Type& to);

  void assign(const Stmt& s);

  void aggregate(ExprId target_id, ExprId call_id, const builtins::Function& f);

  std::optional<int64_t> constant(ExprId id);
  bool tseries_params(const Expr& call, output::TSeriesParams& out);
  std::optional<bool> known_condition(ExprId id) const;
  bool pruned_map(const std::string& name);
  std::vector<MapInfo>::iterator empty_map(const std::string& name, const Type& key, lang::Loc loc);

  MapInfo* map_for(ExprId id, bool create);

  MapInfo* whole_map(ExprId id);

  int32_t add_action(ActionKind kind, lang::Loc loc, std::vector<Type> args = {});

  const bpf::TracepointField* find_field(const bpf::TracepointFormat& f, std::string_view name);

  Type args_field(const Expr& e);

  bool map_and_key(ExprId map_id, ExprId key_id, std::string_view call);

  bool arg_count_ok(const Expr& e, const builtins::Function& f);

  void struct_pointee(const bpf::TracepointField& f, Type& t);

  Type element_of(const Type& p, lang::Loc loc);

  Type address_of(const Expr& e);

  Type pointer_to(std::string_view name, lang::Loc loc);

  Type record(uint32_t btf_id);

  std::optional<Type> btf_value_type(uint32_t type_id);

  Type btf_field(ExprId id, const Expr& e, const Type& base);

  Type call(ExprId id);

  std::string provided(ExprId id);

  // False, with the error, for an unsafe function without --unsafe.
  // bpftrace words the refusal two ways: for system(), a builtin of its
  // compiler, "is an unsafe function being used in safe mode"; for the
  // functions of its standard library (signal(), override(), write_user()),
  // "is unsafe. To use you need the --unsafe flag".
  bool unsafe_allowed(const Expr& e, bool stdlib = true);







  std::optional<std::string> const_string(ExprId id) const;
  // The first argument of call `id` (to `function`), checked: a string
  // known when compiling (a literal, a string getopt(), $1); else nullopt,
  // reported.
  std::optional<std::string> known_string_arg(ExprId id, std::string_view function);

  static std::string probe_type_name(ProbeKind k);



  Type printf_call(ExprId id, ActionKind kind = ActionKind::Printf);
  Type print_table(ExprId id);
  Type print_hist_notes(ExprId id);
  bool hist_first(const Expr& tuple);

  std::optional<double> float_divisor(const Expr& arg) const;

  Type binary(ExprId id);

  bool is_literal(ExprId id) const;
  Type array_cast(const Expr& e, const Type& from);

  static const char* op_text(Op op);

  static std::optional<Type> int_type(std::string_view name);

  std::optional<Type> type_of_name(std::string_view name, lang::Loc loc);
  std::optional<Type> kernel_type(std::string_view name);
  // The type of typeof(expr) (the expression is checked, never evaluated)
  // with `suffix` ("", " *", "[2]") applied.
  std::optional<Type> typeof_type(ExprId type_of, std::string_view suffix, lang::Loc loc);

  static void retarget(Type& t, AddrSpace space);

  Type expr(ExprId id);
  Type identifier(ExprId id);

  const lang::Program& ast_;
  TypedProgram& out_;
  lang::Diagnostics& diags_;
  bool final_;
  std::vector<Type> first_pass_vars_;  // the final pass: variable types at the end of the first
  const std::vector<ResolvedAttachPoint>* points_ = nullptr;
  bool target_specific_ = false;
  uint32_t probe_index_ = 0;
  int loop_depth_ = 0;
  std::vector<std::map<std::string, int32_t>> scopes_;
  std::set<int32_t> declared_vars_;  // variables of `let $x: T`, whose integer type stays T
  std::optional<std::set<std::string>> pruned_;  // pruned_map(): the maps of removed branches
  const builtins::Function* (*find_function_)(std::string_view);
};

}  // namespace bpfscope::sema::detail
