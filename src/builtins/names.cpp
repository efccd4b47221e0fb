#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// strerror(), syscall_name(), signal_name(), cgroup_path(): a number, named
// by user space from the table `names` when it prints.
Type named_check(Checker& c, const Expr& e, sema::NameTable names) {
  if (e.args.size() == 2) {
    c.error(c.ast_.expr(e.args[1]).loc,
            "cgroup_path(): a hierarchy filter is not supported; ids are looked up in the cgroup v2 hierarchy");
    return Type::none();
  }
  Type t = c.expr(e.args[0]);
  if (t.kind != TypeKind::Int) {
    c.error(c.ast_.expr(e.args[0]).loc,
            fmt::format("{}() expects an integer ({} provided)", e.name, t.kind == TypeKind::None ? "none" : t.name()));
    return Type::none();
  }
  return Type::named(names);
}

Val named_record(Lowerer& l, ExprId, const Expr& e, const Type& t) {
  // The number; user space names it when it prints.
  VregId rec = l.scratch_ptr(l.alloc(8));
  l.store_expr(rec, 0, e.args[0], Type::integer(8, true));
  return Val{.reg = rec, .type = t};
}

constexpr Function kNames[] = {
    {.name = "strerror",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return named_check(c, e, sema::NameTable::Errno); },
     .lower = named_record},
    {.name = "syscall_name",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return named_check(c, e, sema::NameTable::Syscall); },
     .lower = named_record},
    {.name = "signal_name",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return named_check(c, e, sema::NameTable::Signal); },
     .lower = named_record},
    {.name = "cgroup_path",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId, const Expr& e) { return named_check(c, e, sema::NameTable::CgroupPath); },
     .lower = named_record},
    {.name = "strftime",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& f = c.ast_.expr(e.args[0]);
       if (f.kind != ExprKind::String) {
         c.error(e.loc, fmt::format("strftime() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       c.expr(e.args[0]);
       Type t = c.expr(e.args[1]);
       if (!t.is_int()) {
         c.error(e.loc, fmt::format("strftime() only supports integer arguments ({} provided)", t.name()));
         return Type::none();
       }
       auto& formats = c.out_.strftime_formats;
       auto it = std::find(formats.begin(), formats.end(), f.sval);
       if (it == formats.end()) it = formats.insert(formats.end(), f.sval);
       c.out_.const_of[e.args[0]] = it - formats.begin();
       return Type::timestamp();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       // [format index][boot-clock ns]: user space formats it when it prints.
       VregId rec = l.scratch_ptr(l.alloc(16));
       l.b_.store_imm(8, rec, 0, static_cast<int32_t>(l.p_.const_of[e.args[0]].value_or(0)));
       l.copy_to(rec, 8, l.expr(e.args[1]), Type::integer(8, false));
       return Val{.reg = rec, .type = t};
     }},
};

}  // namespace

std::span<const Function> names() { return kNames; }

}  // namespace bpfscope::builtins
