// The builtins, one entry each: the name and argument counts, the type rule
// (sema) and the lowering (ir) of pid, nsecs, printf(), str(), hist()... side
// by side, as ply's built-ins keep them. Adding a builtin is one entry in the
// file of its group (below) and its runtime case.
//
// The entries see the checker's and the lowerer's internals: this folder is
// where those two stages meet, and it links after both. Sema finds a call's
// entry through sema::Options::find_function (builtins::find unless a test
// says otherwise) and records it in TypedProgram::function_of; lowering calls
// the entry it finds there.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ir/ir.h"
#include "lang/ast.h"
#include "output/output.h"
#include "sema/sema.h"

namespace bpfscope::sema::detail {
class Checker;
}
namespace bpfscope::ir::detail {
class Lowerer;
struct Val;
}  // namespace bpfscope::ir::detail

namespace bpfscope::builtins {

using ir::detail::Lowerer;
using ir::detail::Val;
using sema::detail::Checker;

struct Function {
  std::string_view name;
  uint8_t min_args = 0, max_args = 0;
  // The type rule: checks the arguments (c.expr() of each), reports what is
  // wrong through c.error() and returns the call's type.
  sema::Type (*check)(Checker& c, lang::ExprId id, const lang::Expr& e) = nullptr;
  // The lowering: the call's value, of type t.
  Val (*lower)(Lowerer& l, lang::ExprId id, const lang::Expr& e, const sema::Type& t) = nullptr;
  // A condition's lowering, for a call with a branch of its own (in_list()):
  // jumps to yes or no.
  void (*branch)(Lowerer& l, lang::ExprId id, ir::BlockId yes, ir::BlockId no) = nullptr;
  // Writes the value straight into memory at dst + off as type `to` (a
  // tuple's `field`: exactly its size), for a value a helper writes (comm),
  // instead of through a temporary and a copy; false when it cannot for that
  // type.
  bool (*store)(Lowerer& l, ir::VregId dst, uint32_t off, const sema::Type& to, bool field) = nullptr;
  // An aggregation (count(), hist()...): assigned to a map, which it types;
  // the map's update lowers it. Plain for the other functions.
  output::AggKind aggregation = output::AggKind::Plain;
  bool named_args = false;  // printf("...", pid=pid)
  // Sema may know the value when compiling (getopt(), str($1)): const_of of
  // the call is the integer, or for a string an index into const_strings.
  bool known = false;
  // Also spelt without parentheses, as a variable: pid is pid().
  bool variable = false;
  // Only used with a field (args.NAME), which the field's expression lowers.
  bool fields = false;
};

// The entry of a name (or of another spelling: quantize() is hist(),
// __builtin_pid is pid, arg3 is argN), or nullptr.
const Function* find(std::string_view name);

// N for "argN" (arg0..arg15), else -1.
int arg_index(std::string_view name);

// The groups (one file each), for find().
std::span<const Function> process();  // pid, tid, uid, gid, username, comm, ppid, pcomm, curtask, cgroup, cpid
std::span<const Function> clocks();   // nsecs, elapsed, jiffies
std::span<const Function> context();  // probe, probetype, func, args, argN, retval, ctx, usermode, cpu, ncpus...
std::span<const Function> actions();  // printf, print, exit, clear, time, join, debugf...
std::span<const Function> maps();     // delete, has_key, len, the aggregations
std::span<const Function> strings();  // str, strlen, strcat, strstr, buf, memcmp...
std::span<const Function> net();      // ntop, pton, macaddr, bswap
std::span<const Function> symbols();  // ksym, usym, kstack, ustack, kaddr, uaddr, reg...
std::span<const Function> names();    // strerror, syscall_name, signal_name, cgroup_path, strftime
std::span<const Function> kernel();   // signal, cgroupid, under_cgroup, path, override
std::span<const Function> options();  // getopt, in_list, config

}  // namespace bpfscope::builtins
