// The probe's context: probe, func, args, arg0..arg15, retval, ctx; and the
// CPU's: cpu, ncpus, numaid, rand.
#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// argN: the raw arguments of a raw tracepoint, uprobe, USDT or kprobe.
Type arg_check(Checker& c, const Expr& e) {
  const int n = arg_index(e.name);
  bool user = false;
  for (const auto& p : *c.points_) {
    user = user || p.kind == ProbeKind::Uprobe || p.kind == ProbeKind::Usdt;
    if (p.kind == ProbeKind::Kprobe) {
      // pt_regs, as uprobes; through the fentry fallback, the function's
      // arguments, which must exist.
      if (p.mechanism == ProbeKind::Fentry)
        for (const auto& t : p.targets)
          if (auto params = sema::btf_args(*c.out_.btf, ProbeKind::Fentry, t);
              !params || static_cast<size_t>(n) >= params->size()) {
            c.error(e.loc, fmt::format("{} does not exist: {} has {} arguments (kprobes run as fentry here)", e.name,
                                       t.func, params ? params->size() : 0));
            return Type::none();
          }
      continue;
    }
    if (p.kind == ProbeKind::Usdt) {
      c.target_specific_ = true;  // each note has its own argument specs
      for (const auto& t : p.targets) {
        if (static_cast<size_t>(n) >= t.usdt_args.size()) {
          c.error(e.loc,
                  fmt::format("{} does not exist: usdt {} has {} arguments", e.name, t.func, t.usdt_args.size()));
          return Type::none();
        }
      }
      continue;
    }
    if (p.kind != ProbeKind::RawTracepoint && p.kind != ProbeKind::Uprobe) {
      c.error(e.loc, fmt::format("{} is only available in rawtracepoint, kprobe, uprobe and usdt probes here", e.name));
      return Type::none();
    }
  }
  Type t = Type::integer(8, true);
  if (user) t.addr_space = AddrSpace::User;  // a uprobe's pointers are user addresses
  return t;
}

Val arg_value(Lowerer& l, const Expr& e, const Type& t) {
  const int n = arg_index(e.name);
  if (l.unit_.kind == ProbeKind::Usdt) return l.usdt_arg(l.target().usdt_args[n], t);
  if (l.unit_.mechanism == ProbeKind::Uprobe || l.unit_.mechanism == ProbeKind::Kprobe) {
    if (n >= static_cast<int>(std::size(ir::detail::kArgRegs))) return l.constant(0, t);
    return l.int_val(l.b_.load(8, l.ctx_, ir::detail::kArgRegs[n]), t);
  }
  // A raw tracepoint's context (and fentry's, a kprobe's fallback) is the
  // array of its u64 arguments.
  return l.int_val(l.b_.load(8, l.ctx_, n * 8), t);
}

// A string constant per attach target (one program each): its name, or its
// function's.
Val target_string(Lowerer& l, std::string s, const Type& t) {
  Val v = l.string_literal(std::move(s));
  v.type = t;
  return v;
}

// bpftrace's name of a probe type.
std::string_view probe_type(ProbeKind k) {
  return k == ProbeKind::Begin || k == ProbeKind::End || k == ProbeKind::Signal ? "special" : sema::probe_kind_name(k);
}

// Probes whose context starts with the interrupted registers (struct
// pt_regs; a perf event's context holds them first).
bool has_registers(ProbeKind k) {
  return k == ProbeKind::Kprobe || k == ProbeKind::Kretprobe || k == ProbeKind::Uprobe || k == ProbeKind::Uretprobe ||
         k == ProbeKind::Usdt || k == ProbeKind::Profile;
}

constexpr Function kContext[] = {
    // probe: the attach point's full name.
    {.name = "probe",
     .check =
         [](Checker& c, ExprId, const Expr&) {
           c.target_specific_ = true;
           uint32_t longest = 0;
           for (const auto& p : *c.points_)
             for (const auto& t : p.targets) longest = std::max<uint32_t>(longest, t.name.size() + 1);
           return Type::string(longest);
         },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return target_string(l, l.target().name, t); },
     .variable = true},
    // func: the probed function's name.
    {.name = "func",
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           c.target_specific_ = true;
           uint32_t longest = 1;
           for (const auto& p : *c.points_) {
             if (p.kind != ProbeKind::Uprobe && p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Kprobe &&
                 p.kind != ProbeKind::Kretprobe && p.kind != ProbeKind::Fentry && p.kind != ProbeKind::Fexit) {
               c.error(e.loc, "func is only available in uprobe, kprobe and fentry probes here");
               return Type::none();
             }
             for (const auto& t : p.targets) longest = std::max<uint32_t>(longest, t.func.size() + 1);
           }
           return Type::string(longest);
         },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return target_string(l, l.target().func, t); },
     .variable = true},
    // args: the probe's arguments, read one field at a time (args.NAME,
    // typed from the tracepoint's format or BTF).
    {.name = "args",
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           c.error(e.loc, "args must be used with a field: args.NAME");
           return Type::none();
         },
     .variable = true,
     .fields = true},
    // arg0..arg15 (find() maps each to this entry).
    {.name = "argN",
     .check = [](Checker& c, ExprId, const Expr& e) { return arg_check(c, e); },
     .lower = [](Lowerer& l, ExprId, const Expr& e, const Type& t) { return arg_value(l, e, t); },
     .variable = true},
    // retval: the probed function's return value.
    {.name = "retval",
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           for (const auto& p : *c.points_) {
             if (p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Kretprobe && p.kind != ProbeKind::Fexit) {
               c.error(e.loc, "retval is only available in uretprobe, kretprobe and fexit probes here");
               return Type::none();
             }
           }
           return Type::integer(8, true);
         },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           if (l.unit_.mechanism == ProbeKind::Fexit) {
             // fexit's context: the arguments, then the return value.
             auto params = sema::btf_args(*l.p_.btf, l.unit_.mechanism, l.target());
             return l.int_val(l.b_.load(8, l.ctx_, static_cast<int32_t>(params ? params->size() * 8 : 0)), t);
           }
           return l.int_val(l.b_.load(8, l.ctx_, 80), t);  // pt_regs->ax
         },
     .variable = true},
    // ctx: an iterator's context struct (bpf_iter__NAME), typed from BTF;
    // in other probes the program's context as an untyped pointer, which a
    // cast gives a type ((struct x *)ctx).
    {.name = "ctx",
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           const sema::ResolvedAttachPoint* iter = nullptr;
           for (const auto& p : *c.points_) iter = p.kind == ProbeKind::Iter ? &p : iter;
           if (!iter) return Type::pointer(Type::none(), sema::AddrSpace::Kernel);
           if (c.points_->size() != 1) {
             c.error(e.loc, "ctx is only available in iter probes here");
             return Type::none();
           }
           return c.pointer_to("bpf_iter__" + iter->targets[0].format.event, e.loc);
         },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return l.int_val(l.ctx_, t); },
     .variable = true},
    // probetype: the probe's type, as its provider's name ("tracepoint",
    // "uprobe"); begin and end probes are "special".
    {.name = "probetype",
     .check =
         [](Checker& c, ExprId, const Expr&) {
           uint32_t longest = 8;  // "special"
           for (const auto& p : *c.points_) longest = std::max<uint32_t>(longest, probe_type(p.kind).size() + 1);
           return Type::string(longest);
         },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return target_string(l, std::string(probe_type(l.unit_.kind)), t); },
     .variable = true},
    // usermode: 1 when the probe interrupted user code (the saved code
    // segment's privilege level is 3), else 0. Probes whose context holds no
    // registers: 1 in begin and end (run from user space), else 0.
    {.name = "usermode",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(1, false); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           const ProbeKind k = l.unit_.kind;
           if (!has_registers(k))
             return l.constant(k == ProbeKind::Begin || k == ProbeKind::End || k == ProbeKind::Signal, t);
           VregId cs = l.b_.load(8, l.ctx_, *sema::pt_regs_offset("cs"));
           return l.int_val(l.flag(ir::Cond::Eq, l.b_.alu_imm(AluOp::And, cs, 3), 3), t);
         },
     .variable = true},
    {.name = "cpu",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(4, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return helper_value(l, BPF_FUNC_get_smp_processor_id, t); },
     .variable = true},
    // ncpus: the online CPUs when the program was compiled.
    {.name = "ncpus",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return l.constant(l.opts_.online_cpus, t); },
     .variable = true},
    {.name = "numaid",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(4, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return helper_value(l, BPF_FUNC_get_numa_node_id, t); },
     .variable = true},
    {.name = "rand",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(4, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return helper_value(l, BPF_FUNC_get_prandom_u32, t); },
     .variable = true},
};

}  // namespace

std::span<const Function> context() { return kContext; }

}  // namespace bpfscope::builtins
