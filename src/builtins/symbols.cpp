#include "symbols/symbols.h"

#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// ksym(addr), usym(addr): an address, named when printed.
Type symbol_check(Checker& c, const Expr& e, bool user) {
  Type a = c.expr(e.args[0]);
  if (!a.is_int()) {
    // An argument that already failed was reported there.
    if (a.kind != TypeKind::None) c.error(c.ast_.expr(e.args[0]).loc, fmt::format("{}() expects an address", e.name));
    return Type::none();
  }
  return Type::symbol(user);
}

Val symbol_record(Lowerer& l, ExprId, const Expr& e, const Type& t) {
  // [address][pid]: user space names it when it prints.
  VregId addr = l.materialize_int(l.expr(e.args[0]));
  uint32_t off = l.alloc(16);
  VregId rec = l.scratch_ptr(off);
  l.b_.store(8, rec, 0, addr);
  l.b_.store(8, rec, 8, l.b_.alu_imm(AluOp::Rsh, l.b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32));
  return Val{.reg = rec, .type = t};
}

// kstack(), kstack(limit), kstack(mode), kstack(mode, limit); ustack() alike.
Type stack_check(Checker& c, const Expr& e, bool user) {
  StackMode mode = StackMode::Bpftrace;
  size_t next = 0;
  if (!e.args.empty() && c.ast_.expr(e.args[0]).kind == ExprKind::Identifier) {
    const Expr& m = c.ast_.expr(e.args[0]);
    if (m.name == "perf")
      mode = StackMode::Perf;
    else if (m.name == "raw")
      mode = StackMode::Raw;
    else if (m.name == "bcc")
      mode = StackMode::Bcc;
    else if (m.name == "build_id" && user)
      mode = StackMode::BuildId;
    else if (m.name == "build_id") {
      c.error(m.loc, "'build_id' stack mode can only be used for ustack");
      return Type::none();
    } else if (m.name != "bpftrace") {
      c.error(m.loc, "the stack mode must be bpftrace, perf, raw, bcc or build_id");
      return Type::none();
    }
    next = 1;
  } else if (e.args.size() == 2) {
    c.error(c.ast_.expr(e.args[0]).loc, "the stack mode must be bpftrace, perf, raw, bcc or build_id");
    return Type::none();
  }
  int64_t frames = 127;
  if (next < e.args.size()) {
    auto limit = c.constant(e.args[next]);
    if (!limit || *limit < 1 || *limit > 127) {
      const Expr& l = c.ast_.expr(e.args[next]);
      if (limit && l.kind == ExprKind::Call && !l.args.empty())  // an integer getopt(): the option is at fault
        c.error(l.loc,
                fmt::format("--{} must be from 1 to 127 (a stack limit), got {}", c.ast_.expr(l.args[0]).sval, *limit));
      else
        c.error(l.loc, "the stack limit must be a constant from 1 to 127");
      return Type::none();
    }
    frames = *limit;
  }
  (mode == StackMode::BuildId ? c.out_.uses_build_id_stack : user ? c.out_.uses_ustack : c.out_.uses_kstack) = true;
  return Type::stack(user, static_cast<uint32_t>(frames), mode);
}

// kptr(p), uptr(p): p, read from kernel or user memory.
Type pointer_check(Checker& c, const Expr& e, AddrSpace space) {
  Type t = c.expr(e.args[0]);
  if (t.kind != TypeKind::Int) {
    c.error(c.ast_.expr(e.args[0]).loc,
            fmt::format("{}() expects a pointer ({} provided)", e.name, t.kind == TypeKind::None ? "none" : t.name()));
    return Type::none();
  }
  t.addr_space = space;
  c.retarget(t, space);
  return t;
}

Val retyped(Lowerer& l, ExprId, const Expr& e, const Type& t) {
  Val v = l.expr(e.args[0]);
  v.type = t;
  return v;
}

constexpr Function kSymbols[] = {
    {.name = "ksym",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return symbol_check(c, e, false); },
     .lower = symbol_record},
    {.name = "usym",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return symbol_check(c, e, true); },
     .lower = symbol_record},
    {.name = "kstack",
     .min_args = 0,
     .max_args = 2,
     .check = [](Checker& c, ExprId, const Expr& e) { return stack_check(c, e, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return l.stack_val(t); },
     .variable = true},
    {.name = "ustack",
     .min_args = 0,
     .max_args = 2,
     .check = [](Checker& c, ExprId, const Expr& e) { return stack_check(c, e, true); },
     .lower = [](Lowerer& l, ExprId, const Expr&, const Type& t) { return l.stack_val(t); },
     .variable = true},
    {.name = "kaddr",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       // A string known now: a literal, or str($1) of a parameter (bpftrace).
       const bool literal = c.ast_.expr(e.args[0]).kind == ExprKind::String;
       const std::optional<std::string> name = c.expr(e.args[0]).is_string() ? c.const_string(e.args[0]) : std::nullopt;
       if (!name || (!literal && name->empty())) {
         c.error(e.loc, fmt::format("kaddr() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       auto addr = bpfscope::symbols::kernel_symbol_address(*name);
       if (!addr) {
         c.error(e.loc, fmt::format("Failed to resolve kernel symbol: {}", *name));
         return Type::none();
       }
       c.out_.const_of[id] = static_cast<int64_t>(*addr);
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       return l.constant(l.p_.const_of[id].value_or(0), t);
     }},
    // uaddr("sym"): the run-time address of a symbol in each probed binary, a
    // pointer to an integer of the symbol's size (1, 2, 4, else 8 bytes).
    {.name = "uaddr",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind != ExprKind::String) {
         c.error(e.loc, fmt::format("uaddr() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       c.expr(e.args[0]);
       std::vector<UaddrSite> sites;
       std::optional<std::pair<uint64_t, std::string>> first_size;  // size and the attach point that gave it
       for (const auto& p : *c.points_) {
         if (p.kind != ProbeKind::Uprobe && p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Usdt) {
           c.error(e.loc, "uaddr can only be used with u(ret)probes and usdt probes");
           return Type::none();
         }
         for (const auto& t : p.targets) {
           auto elf = bpfscope::symbols::cached_elf(t.path);
           auto sym = elf ? (*elf)->symbol(a.sval) : std::nullopt;
           if (!sym) {
             c.error(e.loc, fmt::format("Could not resolve symbol: {}:{}", t.path, a.sval));
             return Type::none();
           }
           if (!first_size) {
             first_size.emplace(sym->size, t.name);
           } else if (first_size->first != sym->size) {
             c.error(e.loc,
                     fmt::format("Symbol size mismatch between probes. Symbol \"{}\" has size {} for probe \"{}\" "
                                 "but size {} for probe \"{}\"",
                                 a.sval, first_size->first, first_size->second, sym->size, t.name));
             return Type::none();
           }
           UaddrSite site{.path = t.path, .offset = t.offset};
           if ((*elf)->relocatable()) {
             auto probe_vaddr = (*elf)->offset_to_vaddr(t.offset);
             if (!probe_vaddr) {
               c.error(e.loc,
                       fmt::format("uaddr: no loadable segment of {} holds the probed offset {:#x}", t.path, t.offset));
               return Type::none();
             }
             site.relative = true;
             site.value = static_cast<int64_t>(sym->vaddr - *probe_vaddr);
           } else {
             site.value = static_cast<int64_t>(sym->vaddr);
           }
           sites.push_back(std::move(site));
         }
       }
       c.target_specific_ = true;  // the address depends on the binary and the probed instruction
       c.out_.uaddr_of[id] = std::move(sites);
       const uint64_t size = first_size ? first_size->first : 8;
       const uint32_t pointee = size == 1 || size == 2 || size == 4 ? static_cast<uint32_t>(size) : 8;
       return Type::pointer(Type::integer(pointee, true), AddrSpace::User);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       // One program per target (sema marks uaddr target-specific).
       const auto& sites = l.p_.uaddr_of.at(id);
       auto site = std::find_if(sites.begin(), sites.end(), [&](const sema::UaddrSite& s) {
         return s.path == l.target().path && s.offset == l.target().offset;
       });
       if (site == sites.end()) std::unreachable();
       if (!site->relative) return l.constant(site->value, t);
       // The probed instruction's run-time address (its breakpoint address,
       // also in uretprobes) plus the symbol's distance from it.
       VregId ip = l.b_.call(BPF_FUNC_get_func_ip, {l.ctx_});
       if (site->value >= INT32_MIN && site->value <= INT32_MAX)
         return l.int_val(l.b_.alu_imm(AluOp::Add, ip, site->value), t);
       return l.int_val(l.b_.alu(AluOp::Add, ip, l.b_.imm(site->value)), t);
     }},
    {.name = "kptr",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return pointer_check(c, e, AddrSpace::Kernel); },
     .lower = retyped},
    {.name = "uptr",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId, const Expr& e) { return pointer_check(c, e, AddrSpace::User); },
     .lower = retyped},
    // reg("sp"): a register of the probed context (struct pt_regs), in probes
    // whose context is one: kprobes, uprobes and USDT.
    {.name = "reg",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind != ExprKind::String) {
         c.error(e.loc, fmt::format("reg() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       c.expr(e.args[0]);
       for (const auto& p : *c.points_) {
         bool regs = p.kind == ProbeKind::Kprobe || p.kind == ProbeKind::Kretprobe || p.kind == ProbeKind::Uprobe ||
                     p.kind == ProbeKind::Uretprobe || p.kind == ProbeKind::Usdt;
         if (!regs) {
           c.error(e.loc, fmt::format("reg can not be used with \"{}\" probes", c.probe_type_name(p.kind)));
           return Type::none();
         }
       }
       auto off = pt_regs_offset(a.sval);
       if (!off) {
         c.error(e.loc, fmt::format("'{}' is not a valid register", a.sval));
         return Type::none();
       }
       c.out_.const_of[e.args[0]] = *off;
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       return l.int_val(l.b_.load(8, l.ctx_, static_cast<int32_t>(l.p_.const_of[e.args[0]].value_or(0))), t);
     }},
    {.name = "percpu_kaddr",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       // percpu_kaddr("sym"[, cpu]): this CPU's (or that CPU's) instance of a
       // per-CPU kernel variable, found in the kernel's BTF.
       const Expr& a = c.ast_.expr(e.args[0]);
       c.expr(e.args[0]);
       if (a.kind != ExprKind::String) {
         c.error(e.loc, fmt::format("percpu_kaddr() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       if (e.args.size() == 2 && !c.expr(e.args[1]).is_int()) {
         c.error(c.ast_.expr(e.args[1]).loc, "percpu_kaddr(): the CPU must be an integer");
         return Type::none();
       }
       auto var = c.out_.btf->find_var(a.sval);
       if (!var) {
         c.error(e.loc, fmt::format("Could not resolve variable \"{}\" from BTF", a.sval));
         return Type::none();
       }
       // The verifier takes the variable's address from kallsyms, which lists
       // data symbols only with CONFIG_KALLSYMS_ALL.
       if (!bpfscope::symbols::kernel_symbol_address(a.sval)) {
         c.error(e.loc, fmt::format("percpu_kaddr(\"{}\"): /proc/kallsyms does not list the variable (this kernel is "
                                    "built without CONFIG_KALLSYMS_ALL), so BPF programs cannot take its address",
                                    a.sval));
         return Type::none();
       }
       c.out_.const_of[id] = *var;
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       // The per-CPU variable's address, then bpf_this_cpu_ptr or
       // bpf_per_cpu_ptr (NULL for a CPU that does not exist).
       VregId var = l.b_.kernel_var(static_cast<uint32_t>(l.p_.const_of[id].value_or(0)));
       if (e.args.size() == 1) return l.int_val(l.b_.call(BPF_FUNC_this_cpu_ptr, {var}), t);
       return l.int_val(l.b_.call(BPF_FUNC_per_cpu_ptr, {var, l.materialize_int(l.expr(e.args[1]))}), t);
     }},
};

}  // namespace

std::span<const Function> symbols() { return kSymbols; }

}  // namespace bpfscope::builtins
