// The abstract syntax tree. Nodes are plain values owned by ast::Program and
// referred to by index (ExprId, StmtId). Every node carries its source range.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lang/source.h"

namespace bpfscope::lang {

using ExprId = uint32_t;
using StmtId = uint32_t;
inline constexpr uint32_t kNone = UINT32_MAX;

enum class ExprKind {
  Integer,      // ival (uint64 bits; a literal is never negative, '-' is Unary Neg); name "true"/"false" for bools
  Float,        // fval: a floating-point literal; sema accepts it only as a printf argument's divisor
  String,       // sval: the literal with escapes decoded
  Identifier,   // name: a builtin (pid, comm, args, ...), a constant or a type name
  Positional,   // ival = N for $N
  PositionalCount,  // $#
  Variable,     // name including '$' ("$x")
  Map,          // name including '@' ("@m", "@" for the anonymous map); args = keys (empty: scalar map)
  Call,         // name, args
  Unary,        // op (Neg, LNot, BNot, Deref, AddrOf), args[0]
  Binary,       // op, args[0], args[1]
  Ternary,      // args[0] ? args[1] : args[2]; with two args, args[0] ?: args[1] (0.26)
  Field,        // args[0].name or args[0]->name (arrow = true); name may be "0" for tuple index
  Index,        // args[0][args[1]]
  Cast,         // (name)args[0]; name is the type text, spaced as in "uint8", "struct sock *", "int8 **", "uint8[4]", "int8[]"
  Tuple,        // (args...), or a record (a=args[0], b=args[1]) when field_names is set
  IncDec,       // op is PreInc, PreDec, PostInc or PostDec; args[0] is a Variable or Map
  Sizeof,       // sizeof(name) when type_arg (a type: name and type_of), else sizeof(args[0])
  Offsetof,     // offsetof(name, sval-field), or offsetof(args[0], sval-field) when name is empty; sval may be "a.b"
  Block,        // { body; args[0] }: an expanded macro; no args when it has no value (statement use only)
  Typeof,       // typeof(T) when type_arg (a type: name and type_of), else typeof(args[0]): a macro's type argument
};

enum class Op {
  None,
  // binary
  Add, Sub, Mul, Div, Mod,
  BAnd, BOr, BXor, Shl, Shr,
  Eq, Ne, Lt, Le, Gt, Ge,
  LAnd, LOr,
  // unary
  Neg, LNot, BNot, Deref, AddrOf,
  // inc/dec
  PreInc, PreDec, PostInc, PostDec,
};

struct Expr {
  ExprKind kind = ExprKind::Integer;
  Loc loc;
  Op op = Op::None;
  uint64_t ival = 0;
  double fval = 0;  // Float
  std::string name;
  std::string sval;
  bool arrow = false;     // Field: written with "->"
  bool type_arg = false;  // Sizeof, Typeof: the argument is a type (`name`, `type_of`)
  // Cast, Sizeof and Typeof with type_arg: the type written as typeof(expr)
  // (plus '*'s and [N]s): its base is the type of this expression, never
  // evaluated, and `name` holds only the suffix ("", " *", "[2]").
  ExprId type_of = kNone;
  std::vector<ExprId> args;
  std::vector<StmtId> body;  // Block: its statements
  // Tuple: a record's field names, one per arg (empty: a plain tuple). Call:
  // the argument names of printf("...", pid=pid), one per arg, "" for an
  // unnamed one (empty: no argument is named).
  std::vector<std::string> field_names;
};

enum class StmtKind {
  Expr,       // expr
  Assign,     // target = value, or target op= value when op != Op::None
  If,         // if (expr) body else else_body; else-if is an If inside else_body
  Return,     // return
  Block,      // { body }
  While,      // while (expr) body
  Unroll,     // unroll (expr) body
  For,        // for ($v : @map) body, or for ($v : a..b) body (expr = a, range_end = b)
  Break,
  Continue,
  Let,        // let $name [: type_name] [= value]: target is a Variable expr, value may be kNone
};

struct Stmt {
  StmtKind kind = StmtKind::Expr;
  Loc loc;
  ExprId expr = kNone;    // Expr/If/While/Unroll condition; For: the map or range start; Return: value or kNone
  ExprId range_end = kNone;  // For over a range a..b: b
  ExprId target = kNone;  // Assign/Let: the Variable or Map being written (Assign: Identifier "_" discards)
  ExprId value = kNone;   // Assign/Let: the value
  Op op = Op::None;       // Assign: compound operator (Add for +=, ...)
  std::string iter_var;   // For: "$kv"
  std::string type_name;  // Let: declared type, if any
  ExprId type_of = kNone;  // Let: the declared type is typeof(type_of) + type_name's suffix (see Expr::type_of)
  std::vector<StmtId> body;
  std::vector<StmtId> else_body;
  bool has_else = false;
};

// One attach point as written, e.g. "tracepoint:syscalls:sys_enter_*",
// "interval:s:1", "BEGIN". Sema splits and expands it.
struct AttachPoint {
  std::string text;
  Loc loc;
};

struct Probe {
  Loc loc;  // the attach point list
  std::vector<AttachPoint> points;
  ExprId predicate = kNone;
  std::vector<StmtId> body;
};

// `#define NAME value` lines from the C-definitions prefix.
struct Define {
  std::string name;
  std::string value;
  Loc loc;
};

// A `struct|union|enum ... { ... };` definition kept as raw text (issue 3 parses it).
struct CDefinition {
  std::string text;
  Loc loc;
};

// `macro name(params) { stmts; value }`. A parameter's sigil fixes the
// argument it takes: "$v" a scratch variable (aliased), "@m" a map
// (aliased), "e" any expression (substituted at each use).
struct Macro {
  std::string name;
  Loc loc;  // the name
  std::vector<std::pair<std::string, Loc>> params;
  std::vector<StmtId> body;
  ExprId value = kNone;  // the final expression when the body does not end with ';'
};

// `let @name = kind(max_entries);` at the top level (0.25): the BPF map kind
// (hash, lruhash, percpuhash, percpulruhash) and size of one map.
struct MapDecl {
  std::string name;  // "@x"
  std::string kind;  // as written; sema checks it
  uint64_t max_entries = 0;
  Loc loc;       // the whole declaration
  Loc kind_loc;  // the kind's name
};

struct Program {
  Source source;
  std::vector<Expr> exprs;
  std::vector<Stmt> stmts;
  std::vector<Probe> probes;
  std::vector<Define> defines;
  std::vector<std::string> includes;  // header names from #include lines
  std::vector<CDefinition> c_definitions;
  std::vector<Macro> macros;  // expanded by parse(): probes hold no macro calls
  // The expressions of an expanded macro's body: the calls that expanded
  // them, innermost first (errorf()'s "expanded from" lines).
  std::map<ExprId, std::vector<Loc>> expanded_from;
  std::vector<MapDecl> map_decls;
  // config = { key = value; ... }: raw key and value text.
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<Loc> config_locs;  // by entry of config: its `key = value` text

  const Expr& expr(ExprId id) const { return exprs[id]; }
  const Stmt& stmt(StmtId id) const { return stmts[id]; }
};

}  // namespace bpfscope::lang
