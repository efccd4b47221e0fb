// The current task: pid, tid, uid, gid, comm, its parent, its cgroup, the
// -c child's pid.
#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// pid(init), tid(init): the plain variable (the initial PID namespace's id).
bool namespace_arg(Checker& c, const Expr& e) {
  if (e.args.empty()) return true;
  const Expr& a = c.ast_.expr(e.args[0]);
  const std::string_view arg = a.kind == ExprKind::Identifier ? std::string_view(a.name) : "";
  if (arg == "init") return true;
  if (arg == "curr_ns")
    c.error(a.loc, fmt::format("{}(curr_ns) is not supported yet: {} and {}(init) are the initial PID namespace's",
                               e.name, e.name, e.name));
  else
    c.error(a.loc, fmt::format("{}() takes init or curr_ns", e.name));
  return false;
}

// curtask->real_parent's field `name` (tgid, comm), with offsets from BTF.
Val parent_field(Lowerer& l, std::string_view name, const Type& t) {
  const auto& btf = *l.p_.btf;
  auto task = btf.find_struct("task_struct");
  auto parent = task ? btf.find_member(*task, "real_parent") : std::nullopt;
  auto field = task ? btf.find_member(*task, name) : std::nullopt;
  if (!parent || !field) return l.constant(0, t);  // sema loaded BTF already; cannot happen
  VregId cur = l.b_.call(BPF_FUNC_get_current_task, {});
  Val p = l.read_kernel_field(cur, sema::FieldAccess{.offset = parent->bit_offset / 8}, Type::integer(8, false));
  return l.read_kernel_field(p.reg, sema::FieldAccess{.offset = field->bit_offset / 8}, t);
}

constexpr Function kProcess[] = {
    // pid, pid(), pid(init): the process id (the upper half of
    // bpf_get_current_pid_tgid).
    {.name = "pid",
     .max_args = 1,
     .check = [](Checker& c, ExprId,
                 const Expr& e) { return namespace_arg(c, e) ? Type::integer(4, false) : Type::none(); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           return l.int_val(l.b_.alu_imm(AluOp::Rsh, l.b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32), t);
         },
     .variable = true},
    // tid: the thread id (the lower half).
    {.name = "tid",
     .max_args = 1,
     .check = [](Checker& c, ExprId,
                 const Expr& e) { return namespace_arg(c, e) ? Type::integer(4, false) : Type::none(); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           return l.int_val(l.extend(l.b_.call(BPF_FUNC_get_current_pid_tgid, {}), 4, false), t);
         },
     .variable = true},
    {.name = "uid",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           return l.int_val(l.extend(l.b_.call(BPF_FUNC_get_current_uid_gid, {}), 4, false), t);
         },
     .variable = true},
    {.name = "gid",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           return l.int_val(l.b_.alu_imm(AluOp::Rsh, l.b_.call(BPF_FUNC_get_current_uid_gid, {}), 32), t);
         },
     .variable = true},
    // comm: the task's name, 16 bytes that bpf_get_current_comm writes.
    {.name = "comm",
     .check = [](Checker&, ExprId, const Expr&) { return Type::string(16); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           VregId p = l.scratch_ptr(l.alloc(16));
           l.b_.call(BPF_FUNC_get_current_comm, {p, l.b_.imm(16)});
           return Val{.reg = p, .type = t};
         },
     .store =
         [](Lowerer& l, VregId dst, uint32_t off, const Type& to) {
           if (!to.is_string() || to.size < 16) return false;
           VregId d = off == 0 ? dst : l.b_.alu_imm(AluOp::Add, dst, off);
           l.b_.call(BPF_FUNC_get_current_comm, {d, l.b_.imm(16)});
           if (to.mem_size() > 16) l.zero(dst, off + 16, to.mem_size() - 16);
           return true;
         },
     .variable = true},
    {.name = "ppid",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(4, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return parent_field(l, "tgid", t); },
     .variable = true},
    {.name = "pcomm",
     .check = [](Checker&, ExprId, const Expr&) { return Type::string(16); },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return parent_field(l, "comm", t); },
     .variable = true},
    // curtask: the current task_struct, typed from BTF.
    {.name = "curtask",
     .check = [](Checker& c, ExprId, const Expr& e) { return c.pointer_to("task_struct", e.loc); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return helper_value(l, BPF_FUNC_get_current_task, t); },
     .variable = true},
    {.name = "cgroup",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return helper_value(l, BPF_FUNC_get_current_cgroup_id, t); },
     .variable = true},
    // cpid: the pid of -c's command.
    {.name = "cpid",
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           if (c.out_.has_child) return Type::integer(4, false);
           c.error(e.loc, "cpid cannot be used without a child command (-c)");
           return Type::none();
         },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return l.constant(l.opts_.cpid, t); },
     .variable = true},
};

}  // namespace

std::span<const Function> process() { return kProcess; }

}  // namespace bpfscope::builtins
