// The current task: pid, tid, uid, gid, comm, its parent, its cgroup, the
// -c child's pid.
#include <sys/stat.h>

#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// The PID namespace bpfscope runs in, when it is not the initial one: its
// nsfs device and inode, which bpf_get_ns_current_pid_tgid takes.
struct PidNamespace {
  uint64_t dev = 0, ino = 0;
};
std::optional<PidNamespace> own_pid_namespace() {
  // PROC_PID_INIT_INO: the initial PID namespace's inode number.
  constexpr uint64_t kInitPidNamespace = 0xEFFFFFFCu;
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0 || st.st_ino == kInitPidNamespace) return std::nullopt;
  return PidNamespace{st.st_dev, st.st_ino};
}

// pid, tid: as seen from bpfscope's own PID namespace (curr_ns, the
// default) or from the initial one (init); the same ids unless bpfscope
// runs in a namespace of its own.
Type id_check(Checker& c, ExprId id, const Expr& e) {
  if (e.args.empty()) return Type::integer(4, false);
  const Expr& a = c.ast_.expr(e.args[0]);
  const std::string_view arg = a.kind == ExprKind::Identifier ? std::string_view(a.name) : "";
  if (arg != "init" && arg != "curr_ns") {
    c.error(a.loc, fmt::format("{}() takes init or curr_ns", e.name));
    return Type::none();
  }
  if (arg == "init") c.out_.const_of[id] = 1;  // the initial namespace's id
  return Type::integer(4, false);
}

// field: 0 for the thread id, 4 for the process id (struct bpf_pidns_info
// and the two halves of bpf_get_current_pid_tgid alike).
Val id_value(Lowerer& l, ExprId id, const Type& t, int field) {
  const std::optional<PidNamespace> ns = l.p_.const_of[id] ? std::nullopt : own_pid_namespace();
  if (!ns) {
    VregId both = l.b_.call(BPF_FUNC_get_current_pid_tgid, {});
    return l.int_val(field ? l.b_.alu_imm(AluOp::Rsh, both, 32) : l.extend(both, 4, false), t);
  }
  // 0 for a task outside that namespace: the helper zeroes the pair.
  VregId info = l.scratch_ptr(l.alloc(8));
  l.b_.call(BPF_FUNC_get_ns_current_pid_tgid,
            {l.b_.imm(static_cast<int64_t>(ns->dev)), l.b_.imm(static_cast<int64_t>(ns->ino)), info, l.b_.imm(8)});
  return l.int_val(l.b_.load(4, info, field), t);
}

// task->real_parent's field `name` (tgid, comm), with offsets from BTF; the
// task is the current one, or a task_struct pointer.
Val parent_field(Lowerer& l, const Expr& e, std::string_view name, const Type& t) {
  const auto& btf = *l.p_.btf;
  auto task = btf.find_struct("task_struct");
  auto parent = task ? btf.find_member(*task, "real_parent") : std::nullopt;
  auto field = task ? btf.find_member(*task, name) : std::nullopt;
  if (!parent || !field) return l.constant(0, t);  // sema loaded BTF already; cannot happen
  VregId cur = e.args.empty() ? l.b_.call(BPF_FUNC_get_current_task, {}) : l.materialize_int(l.expr(e.args[0]));
  Val p = l.read_kernel_field(cur, sema::FieldAccess{.offset = parent->bit_offset / 8}, Type::integer(8, false));
  return l.read_kernel_field(p.reg, sema::FieldAccess{.offset = field->bit_offset / 8}, t);
}

constexpr Function kProcess[] = {
    // pid, pid(), pid(curr_ns), pid(init): the process id.
    {.name = "pid",
     .max_args = 1,
     .check = id_check,
     .lower = [](Lowerer& l, ExprId id, const Expr&, const Type& t) { return id_value(l, id, t, 4); },
     .variable = true},
    // tid: the thread id.
    {.name = "tid",
     .max_args = 1,
     .check = id_check,
     .lower = [](Lowerer& l, ExprId id, const Expr&, const Type& t) { return id_value(l, id, t, 0); },
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
    // comm, comm(pid): the current task's name, 16 bytes that
    // bpf_get_current_comm writes; or the name of the process with that pid
    // (bpf_task_from_pid, a kfunc of tracing programs), "N/A" when there is
    // none.
    {.name = "comm",
     .max_args = 1,
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           if (e.args.empty()) return Type::string(16);
           Type t = c.expr(e.args[0]);
           if (!t.is_int()) {
             c.error(c.ast_.expr(e.args[0]).loc, fmt::format("comm() expects a pid ({} provided)", t.name()));
             return Type::none();
           }
           for (const auto& p : *c.points_) {
             const bool tracing =
                 p.kind == ProbeKind::Iter || p.mechanism == ProbeKind::Fentry || p.mechanism == ProbeKind::Fexit ||
                 (p.kind == ProbeKind::RawTracepoint &&
                  std::all_of(p.targets.begin(), p.targets.end(), [](const auto& t) { return t.btf_id; }));
             if (!tracing) {
               c.error(e.loc,
                       fmt::format("comm(pid) is not supported in {} probes: the kernel lets only tracing programs "
                                   "(iter, rawtracepoint, fentry) look a task up by pid",
                                   c.probe_type_name(p.kind)));
               return Type::none();
             }
           }
           if (!c.out_.btf->find_func("bpf_task_from_pid")) {
             c.error(e.loc, "comm(pid) needs the bpf_task_from_pid kfunc, which this kernel's BTF lacks");
             return Type::none();
           }
           return Type::string(16);
         },
     .lower =
         [](Lowerer& l, ExprId, const Expr& e, const Type& t) {
           VregId p = l.scratch_ptr(l.alloc(16));
           if (e.args.empty()) {
             l.b_.call(BPF_FUNC_get_current_comm, {p, l.b_.imm(16)});
             return Val{.reg = p, .type = t};
           }
           const auto& btf = *l.p_.btf;
           const auto task_struct = btf.find_struct("task_struct");
           const auto comm = task_struct ? btf.find_member(*task_struct, "comm") : std::nullopt;
           VregId pid = l.materialize_int(l.expr(e.args[0]));
           VregId task = l.b_.call_kfunc(btf.find_func("bpf_task_from_pid").value_or(0), {pid});
           BlockId found = l.b_.new_block(), missing = l.b_.new_block(), done = l.b_.new_block();
           l.b_.branch_imm(ir::Cond::Eq, task, 0, missing, found);
           l.b_.set_block(found);
           VregId name = l.b_.alu_imm(AluOp::Add, task, static_cast<int32_t>(comm ? comm->bit_offset / 8 : 0));
           l.b_.call(BPF_FUNC_probe_read_kernel, {p, l.b_.imm(16), name});
           l.b_.call_kfunc(btf.find_func("bpf_task_release").value_or(0), {task});
           l.b_.jump(done);
           l.b_.set_block(missing);
           l.b_.store_imm(4, p, 0, 0x412f4e);  // "N/A"
           l.b_.jump(done);
           l.b_.set_block(done);
           return Val{.reg = p, .type = t};
         },
     .store =
         [](Lowerer& l, VregId dst, uint32_t off, const Type& to, bool field) {
           if (!to.is_string() || to.size < 16) return false;
           VregId d = off == 0 ? dst : l.b_.alu_imm(AluOp::Add, dst, off);
           l.b_.call(BPF_FUNC_get_current_comm, {d, l.b_.imm(16)});
           const uint32_t cap = field ? to.size : to.mem_size();
           if (cap > 16) field ? l.zero_exact(dst, off + 16, cap - 16) : l.zero(dst, off + 16, cap - 16);
           return true;
         },
     .variable = true},
    // ppid, ppid(task): the parent's process id, of the current task or of a
    // task_struct pointer.
    {.name = "ppid",
     .max_args = 1,
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           if (!e.args.empty()) {
             Type t = c.expr(e.args[0]);
             if (!t.is_pointer || t.btf_id == 0 || t.btf_id != c.out_.btf->find_struct("task_struct")) {
               c.error(c.ast_.expr(e.args[0]).loc,
                       fmt::format("ppid() expects a task_struct pointer ({} provided)", t.name()));
               return Type::none();
             }
           }
           return Type::integer(4, false);
         },
     .lower = [](Lowerer& l, ExprId, const Expr& e, const Type& t) { return parent_field(l, e, "tgid", t); },
     .variable = true},
    {.name = "pcomm",
     .check = [](Checker&, ExprId, const Expr&) { return Type::string(16); },
     .lower = [](Lowerer& l, ExprId, const Expr& e, const Type& t) { return parent_field(l, e, "comm", t); },
     .variable = true},
    // username: the name of the current uid, which user space looks up
    // (getpwuid) when it prints.
    {.name = "username",
     .check = [](Checker&, ExprId, const Expr&) { return Type::named(NameTable::User); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           VregId rec = l.scratch_ptr(l.alloc(8));
           l.b_.store(8, rec, 0, l.extend(l.b_.call(BPF_FUNC_get_current_uid_gid, {}), 4, false));
           return Val{.reg = rec, .type = t};
         },
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
