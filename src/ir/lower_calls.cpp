// Lowering of function calls: printf and the other actions (records sent
// through the ring buffer), strings, searches, buffers, helper-failure reports.
#include "ir/lowerer.h"

namespace bpfscope::ir::detail {

Val Lowerer::call(ExprId id, const Expr& e, const Type& t) {
  switch (p_.function_of[id]) {
    case sema::Function::None:
    case sema::Function::Count:
    case sema::Function::Sum:
    case sema::Function::Avg:
    case sema::Function::Min:
    case sema::Function::Max:
    case sema::Function::Stats:
    case sema::Function::Hist:
    case sema::Function::LHist: std::unreachable();  // aggregations are lowered by assign()
    case sema::Function::Printf:
    case sema::Function::Cat:
    case sema::Function::System:
    case sema::Function::Errorf:
    case sema::Function::Warnf: {
      // The arguments after the format. One divided by a floating-point
      // literal sends its integer dividend: user space divides (sema's
      // Action::divisors).
      const auto& action = p_.actions[p_.action_of[id]];
      std::vector<Arg> args;
      for (size_t i = 1; i < e.args.size(); ++i) {
        const bool divided = i - 1 < action.divisors.size() && action.divisors[i - 1] != 0;
        args.push_back({.expr = divided ? ast_.expr(e.args[i]).args[0] : e.args[i]});
      }
      if (action.with_cpu) args.push_back({.val = int_val(b_.call(BPF_FUNC_get_smp_processor_id, {}), action.args.back())});
      send(p_.action_of[id], args);
      return Val{.type = t};
    }
    case sema::Function::Exit: {
      std::vector<Arg> args;
      if (!e.args.empty()) args.push_back({.expr = e.args[0]});
      send(p_.action_of[id], args);
      // exit() ends the probe, as in bpftrace.
      end_probe();
      b_.set_block(b_.new_block());
      return Val{.type = t};
    }
    case sema::Function::Print: {
      const auto& action = p_.actions[p_.action_of[id]];
      std::vector<Arg> args;
      if (action.kind == sema::ActionKind::Print) {
        for (size_t i = 1; i < 3; ++i) {
          if (i < e.args.size())
            args.push_back({.expr = e.args[i]});
          else
            args.push_back({.val = constant(0, Type::integer(8, false))});
        }
      } else if (action.kind == sema::ActionKind::Table) {
        // The row limit; print((@usecs, @AVG)) has none.
        if (action.table_hist)
          args.push_back({.val = constant(0, Type::integer(8, false))});
        else
          args.push_back({.expr = e.args[1]});
      } else {
        args.push_back({.expr = e.args[0]});
      }
      send(p_.action_of[id], args);
      return Val{.type = t};
    }
    case sema::Function::Clear:
      if (!p_.actions[p_.action_of[id]].folded) send(p_.action_of[id], {});  // a folded clear: its print took the entries
      return Val{.type = t};
    case sema::Function::Zero:
    case sema::Function::Time:
      send(p_.action_of[id], {});
      return Val{.type = t};
    case sema::Function::Delete: {
      VregId key;
      ExprId map_expr = e.args[0];
      if (e.args.size() == 2) {
        const auto& m = map_info(map_expr);
        uint32_t off = alloc(m.key_size);
        key = scratch_ptr(off);
        copy_to(key, 0, expr(e.args[1]), m.key);
      } else {
        key = map_key(map_expr);
      }
      VregId r = b_.call(BPF_FUNC_map_delete_elem, {b_.map_fd(p_.map_of[map_expr]), key});
      return int_val(flag(ir::Cond::Eq, r, 0), t);
    }
    case sema::Function::Strncmp: {
      Val a = addressable(expr(e.args[0]));
      Val c = addressable(expr(e.args[1]));
      uint64_t n = static_cast<uint64_t>(constant_of(e.args[2]));
      // 0 when the first n bytes agree (or both end together before n), else 1.
      uint32_t limit = static_cast<uint32_t>(std::min<uint64_t>({n, a.type.size, c.type.size}));
      VregId out = b_.imm(0);
      BlockId differ = b_.new_block(), join = b_.new_block();
      compare_bytes(a.reg, c.reg, limit, join, differ);
      b_.set_block(differ);
      b_.imm_to(out, 1);
      b_.jump(join);
      b_.set_block(join);
      return int_val(out, t);
    }
    case sema::Function::Strlen: {
      Val a = addressable(expr(e.args[0]));
      if (a.literal) return constant(static_cast<int64_t>(a.literal->size()), t);
      // The index of the first NUL, unrolled over the capacity.
      VregId out = b_.imm(a.type.size);
      BlockId join = b_.new_block();
      for (uint32_t i = 0; i < a.type.size; ++i) {
        VregId x = b_.load(1, a.reg, static_cast<int32_t>(i));
        BlockId found = b_.new_block(), next = b_.new_block();
        b_.branch_imm(ir::Cond::Eq, x, 0, found, next);
        b_.set_block(found);
        b_.imm_to(out, i);
        b_.jump(join);
        b_.set_block(next);
      }
      b_.jump(join);
      b_.set_block(join);
      return int_val(out, t);
    }
    case sema::Function::Strcat: {
      // Each string is copied (bpf_probe_read_kernel_str) where the one
      // before it ended. A branch the program never takes bounds that
      // position, so that the verifier knows each copy stays in the result.
      VregId out = scratch_ptr(alloc(t.size));
      zero(out, 0, t.size);
      VregId pos = b_.imm(0);
      int64_t bound = 0;
      BlockId done = b_.new_block();
      for (ExprId a : e.args) {
        Val s = addressable(expr(a));
        const uint32_t cap = p_.type_of(a).size;
        BlockId copy = b_.new_block(), advance = b_.new_block(), next = b_.new_block();
        b_.branch_imm(ir::Cond::Gt, pos, bound, done, copy);
        b_.set_block(copy);
        VregId n = b_.call(BPF_FUNC_probe_read_kernel_str, {b_.alu(AluOp::Add, out, pos), b_.imm(cap), s.reg});
        b_.branch_imm(ir::Cond::SLe, n, 0, next, advance);
        b_.set_block(advance);
        // n counts the NUL, which the next string overwrites.
        b_.alu_to(pos, AluOp::Add, pos, n);
        b_.mov_to(pos, b_.alu_imm(AluOp::Sub, pos, 1));
        b_.jump(next);
        b_.set_block(next);
        bound += cap - 1;
      }
      b_.jump(done);
      b_.set_block(done);
      return Val{.reg = out, .type = t};
    }
    case sema::Function::Ntop: {
      // [u64 family, with a port: | port << 32 | 1 << 48][16 address bytes]
      uint32_t off = alloc(24);
      VregId rec = scratch_ptr(off);
      const ExprId addr_id = e.args.size() == 3 ? e.args[1] : e.args.back();
      const Type& at = p_.type_of(addr_id);
      int64_t family = at.is_bytes() && at.size == 16 ? 10 : 2;  // AF_INET6 : AF_INET
      if (e.args.size() == 3) {
        VregId port = b_.alu_imm(AluOp::And, materialize_int(expr(e.args[2])), 0xffff);
        VregId word = b_.alu_imm(AluOp::Lsh, port, 32);
        VregId af = b_.alu_imm(AluOp::And, materialize_int(expr(e.args[0])), 0xffff);
        word = b_.alu(AluOp::Or, word, af);
        b_.store(8, rec, 0, word);
        b_.store_imm(1, rec, 6, 1);  // bit 48: has a port
      } else if (e.args.size() == 2) {
        copy_to(rec, 0, expr(e.args[0]), Type::integer(8, false));
      } else {
        b_.store_imm(8, rec, 0, static_cast<int32_t>(family));
      }
      Val addr = expr(addr_id);
      if (at.is_bytes()) {
        addr = addressable(addr);
        copy_bytes(rec, 8, addr.reg, at.size == 16 ? 16 : 8);
        if (at.size == 4) b_.store_imm(4, rec, 12, 0);
        if (at.size == 4) b_.store_imm(8, rec, 16, 0);
      } else {
        // The integer holds the address in network order in its low bytes.
        b_.store(4, rec, 8, materialize_int(addr));
        b_.store_imm(4, rec, 12, 0);
        b_.store_imm(8, rec, 16, 0);
      }
      return Val{.reg = rec, .type = t};
    }
    case sema::Function::KstackCall:
    case sema::Function::UstackCall: return stack_val(t);
    case sema::Function::UnderCgroup: {
      // The current task's ancestor at the cgroup's level is the cgroup
      // itself when the task is in it or below it (0 when its own cgroup is
      // shallower). A compare of registers: ids do not fit an immediate.
      const auto [cgroup, level] = p_.under_cgroup_of.at(id);
      if (level == sema::TypedProgram::kEveryCgroup) return constant(1, t);
      VregId ancestor = b_.call(BPF_FUNC_get_current_ancestor_cgroup_id, {b_.imm(level)});
      return int_val(flag(ir::Cond::Eq, b_.alu(AluOp::Xor, ancestor, b_.imm(static_cast<int64_t>(cgroup))), 0), t);
    }
    case sema::Function::HasKey: {
      const auto& m = map_info(e.args[0]);
      VregId key = scratch_ptr(alloc(m.key_size));
      copy_to(key, 0, expr(e.args[1]), m.key);
      VregId ptr = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(p_.map_of[e.args[0]]), key});
      return int_val(flag(ir::Cond::Ne, ptr, 0), t);
    }
    case sema::Function::Ksym:
    case sema::Function::Usym: {
      // [address][pid]: user space names it when it prints.
      VregId addr = materialize_int(expr(e.args[0]));
      uint32_t off = alloc(16);
      VregId rec = scratch_ptr(off);
      b_.store(8, rec, 0, addr);
      b_.store(8, rec, 8, b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32));
      return Val{.reg = rec, .type = t};
    }
    case sema::Function::Bswap: {
      Val a = expr(e.args[0]);
      const Type& at = p_.type_of(e.args[0]);
      if (at.size == 1) return int_val(materialize_int(a), t);  // one byte: nothing to swap
      VregId r = b_.alu_imm(AluOp::Bswap, materialize_int(a), at.size * 8);
      return int_val(r, t);
    }
    case sema::Function::Pton:
      // The bytes sema parsed, as a literal.
      return Val{.reg = kNoVreg, .type = t, .literal = p_.const_strings[static_cast<size_t>(p_.const_of[id].value_or(0))]};
    case sema::Function::Buf: return buf_val(e, t);
    case sema::Function::Macaddr: {
      VregId rec = scratch_ptr(alloc(8));
      Val src = expr(e.args[0]);
      if (src.type.is_bytes()) {
        src = addressable(src);
        copy_bytes(rec, 0, src.reg, 8);
        b_.store_imm(2, rec, 6, 0);
      } else {
        b_.store_imm(8, rec, 0, 0);
        checked_call(read_helper(src.type.addr_space, false), {rec, b_.imm(6), materialize_int(src)});
      }
      return Val{.reg = rec, .type = t};
    }
    case sema::Function::Join: join(e, p_.actions[p_.action_of[id]], p_.action_of[id]); return Val{.type = t};
    case sema::Function::Strftime: {
      // [format index][boot-clock ns]: user space formats it when it prints.
      VregId rec = scratch_ptr(alloc(16));
      b_.store_imm(8, rec, 0, static_cast<int32_t>(p_.const_of[e.args[0]].value_or(0)));
      copy_to(rec, 8, expr(e.args[1]), Type::integer(8, false));
      return Val{.reg = rec, .type = t};
    }
    case sema::Function::Cgroupid:
    case sema::Function::Kaddr: return constant(p_.const_of[id].value_or(0), t);
    case sema::Function::Signal: {
      auto named = p_.const_of[e.args[0]];
      VregId sig = named ? b_.imm(*named) : materialize_int(expr(e.args[0]));
      b_.call(BPF_FUNC_send_signal, {sig});
      return Val{.type = t};
    }
    case sema::Function::Len: {
      const Type& at = p_.type_of(e.args[0]);
      if (at.kind == TypeKind::Stack) {
        // bpf_get_stack returns the bytes written: 8 per frame, or < 0.
        VregId buf = scratch_ptr(alloc(kMaxStackFrames * 8));
        VregId n = b_.call(BPF_FUNC_get_stack, {ctx_, buf, b_.imm(kMaxStackFrames * 8),
                                                b_.imm(at.user ? BPF_F_USER_STACK : 0)});
        VregId out = b_.imm(0);
        BlockId some = b_.new_block(), join_b = b_.new_block();
        b_.branch_imm(ir::Cond::SGt, n, 0, some, join_b);
        b_.set_block(some);
        b_.mov_to(out, b_.alu_imm(AluOp::Rsh, n, 3));
        b_.jump(join_b);
        b_.set_block(join_b);
        return int_val(out, t);
      }
      // The kernel keeps a per-CPU element count for hash maps; the
      // bpf_map_sum_elem_count kfunc (6.6) sums it.
      auto kfunc = p_.btf->find_func("bpf_map_sum_elem_count");
      return int_val(b_.call_kfunc(kfunc.value_or(0), {b_.map_fd(p_.map_of[e.args[0]])}), t);
    }
    case sema::Function::Strcontains:
    case sema::Function::Strstr: {
      Val index = str_search(e);
      if (p_.function_of[id] == sema::Function::Strstr) return index;
      if (index.constant) return constant(*index.constant >= 0, t);
      return int_val(flag(ir::Cond::SGe, index.reg, 0), t);
    }
    case sema::Function::Strerror:
    case sema::Function::SyscallName:
    case sema::Function::SignalName:
    case sema::Function::CgroupPath: {
      // The number; user space names it when it prints.
      VregId rec = scratch_ptr(alloc(8));
      store_expr(rec, 0, e.args[0], Type::integer(8, true));
      return Val{.reg = rec, .type = t};
    }
    case sema::Function::Memcmp: {
      // C's memcmp: the difference of the first differing bytes, else 0.
      Val a = addressable(expr(e.args[0]));
      Val c = addressable(expr(e.args[1]));
      auto n = static_cast<uint32_t>(constant_of(e.args[2]));
      VregId diff = b_.imm(0);
      BlockId done = b_.new_block();
      for (uint32_t i = 0; i < n; ++i) {
        VregId x = b_.load(1, a.reg, static_cast<int32_t>(i));
        VregId y = b_.load(1, c.reg, static_cast<int32_t>(i));
        b_.alu_to(diff, AluOp::Sub, x, y);
        BlockId next = b_.new_block();
        b_.branch_imm(ir::Cond::Ne, diff, 0, done, next);
        b_.set_block(next);
      }
      b_.jump(done);
      b_.set_block(done);
      return int_val(diff, t);
    }
    case sema::Function::Getopt: {
      int64_t v = p_.const_of[id].value_or(0);
      if (t.is_string()) {
        Val s = string_literal(p_.const_strings[static_cast<size_t>(v)]);
        s.type = t;
        return s;
      }
      return constant(v, t);
    }
    case sema::Function::Reg:
      return int_val(b_.load(8, ctx_, static_cast<int32_t>(p_.const_of[e.args[0]].value_or(0))), t);
    case sema::Function::Kptr:
    case sema::Function::Uptr: {
      Val v = expr(e.args[0]);
      v.type = t;
      return v;
    }
    case sema::Function::Uaddr: {
      // One program per target (sema marks uaddr target-specific).
      const auto& sites = p_.uaddr_of.at(id);
      auto site = std::find_if(sites.begin(), sites.end(), [&](const sema::UaddrSite& s) {
        return s.path == target().path && s.offset == target().offset;
      });
      if (site == sites.end()) std::unreachable();
      if (!site->relative) return constant(site->value, t);
      // The probed instruction's run-time address (its breakpoint address,
      // also in uretprobes) plus the symbol's distance from it.
      VregId ip = b_.call(BPF_FUNC_get_func_ip, {ctx_});
      if (site->value >= INT32_MIN && site->value <= INT32_MAX) return int_val(b_.alu_imm(AluOp::Add, ip, site->value), t);
      return int_val(b_.alu(AluOp::Add, ip, b_.imm(site->value)), t);
    }
    case sema::Function::PercpuKaddr: {
      // The per-CPU variable's address, then bpf_this_cpu_ptr or
      // bpf_per_cpu_ptr (NULL for a CPU that does not exist).
      VregId var = b_.kernel_var(static_cast<uint32_t>(p_.const_of[id].value_or(0)));
      if (e.args.size() == 1) return int_val(b_.call(BPF_FUNC_this_cpu_ptr, {var}), t);
      return int_val(b_.call(BPF_FUNC_per_cpu_ptr, {var, materialize_int(expr(e.args[1]))}), t);
    }
    case sema::Function::Path:
    case sema::Function::Override: std::unreachable();  // sema rejects them
    case sema::Function::InList: return bool_of(id);
    case sema::Function::Str: {
      Val src = expr(e.args[0]);
      if (src.type.is_string()) {
        if (src.literal) {
          if (src.literal->size() + 1 > t.size) src.literal->resize(t.size - 1);
          src.type = t;
          return src;
        }
        return Val{.reg = src.reg, .type = t};
      }
      uint32_t off = alloc(t.mem_size());
      VregId dst = scratch_ptr(off);
      zero(dst, 0, t.mem_size());
      int helper = BPF_FUNC_probe_read_str;
      if (src.type.addr_space == sema::AddrSpace::User) helper = BPF_FUNC_probe_read_user_str;
      if (src.type.addr_space == sema::AddrSpace::Kernel) helper = BPF_FUNC_probe_read_kernel_str;
      VregId size = b_.imm(t.size);
      if (e.args.size() == 2) {
        Val n = expr(e.args[1]);
        if (!n.constant) size = clamped_size(materialize_int(n), t.size);
      }
      checked_call(helper, {dst, size, materialize_int(src)});
      return Val{.reg = dst, .type = t};
    }
  }
  std::unreachable();
}

Val Lowerer::str_search(const Expr& e) {
  const Type res = Type::integer(8, true);
  Val hay = expr(e.args[0]);
  Val needle = expr(e.args[1]);
  // A literal needle ends at its first NUL, and at the capacity str() gave it.
  if (needle.literal) needle.literal->resize(std::min<size_t>(needle.literal->find('\0'), needle.type.size - 1));
  if (hay.literal) hay.literal->resize(std::min<size_t>(hay.literal->find('\0'), hay.type.size - 1));
  if (hay.literal && needle.literal) {
    size_t pos = hay.literal->find(*needle.literal);
    return constant(pos == std::string::npos ? -1 : static_cast<int64_t>(pos), res);
  }
  if (needle.literal && needle.literal->empty()) return constant(0, res);
  const bool unrolled = needle.literal && needle.literal->size() <= kUnrolledNeedle;
  const uint32_t hay_cap = hay.type.size, needle_cap = needle.type.size;
  const uint32_t hay_off = alloc(hay.type.mem_size());
  copy_to(scratch_ptr(hay_off), 0, hay, hay.type);
  uint32_t needle_off = 0;
  if (!unrolled) {
    needle_off = alloc(needle.type.mem_size());
    copy_to(scratch_ptr(needle_off), 0, needle, needle.type);
  }
  const int32_t slot = b_.reserve_stack(8);
  VregId cs = b_.stack_addr(slot);
  b_.store_imm(8, cs, 0, -1);

  // The outer callback: (i, &result).
  const auto outer = static_cast<uint32_t>(subprograms_.size());
  subprograms_.emplace_back();
  CallerState saved = begin_callback(subprograms_.back(), "str", outer);
  VregId i = b_.param(0), ctx = b_.param(1);
  enter_scratch(1);
  BlockId found = b_.new_block(), next = b_.new_block(), stop = b_.new_block(), in_range = b_.new_block();
  b_.branch_imm(ir::Cond::Ge, i, hay_cap, stop, in_range);  // bpf_loop's bound, restated for the verifier
  b_.set_block(in_range);
  if (unrolled) {
    VregId hay_base = scratch_ptr(hay_off);
    for (uint32_t j = 0; j < needle.literal->size(); ++j) {
      auto nc = static_cast<uint8_t>((*needle.literal)[j]);
      VregId k = b_.alu_imm(AluOp::Add, i, j);
      BlockId have = b_.new_block(), live = b_.new_block(), same = b_.new_block();
      b_.branch_imm(ir::Cond::Ge, k, hay_cap, stop, have);
      b_.set_block(have);
      VregId hc = b_.load(1, b_.alu(AluOp::Add, hay_base, k), 0);
      b_.branch_imm(ir::Cond::Eq, hc, 0, stop, live);
      b_.set_block(live);
      b_.branch_imm(ir::Cond::Ne, hc, nc, next, same);
      b_.set_block(same);
    }
    b_.jump(found);
  } else {
    // The inner loop's context on this frame's stack: [i][outcome].
    VregId ics = b_.stack_addr(b_.reserve_stack(16));
    b_.store(8, ics, 0, i);
    b_.store_imm(8, ics, 8, 0);
    const auto inner = static_cast<uint32_t>(subprograms_.size());
    subprograms_.emplace_back();
    CallerState outer_state = begin_callback(subprograms_.back(), "str", inner);
    VregId j = b_.param(0), ictx = b_.param(1);
    enter_scratch(1);
    VregId at = b_.load(8, ictx, 0);
    BlockId decided = b_.new_block(), ok_j = b_.new_block(), ok_i = b_.new_block(), more = b_.new_block(),
            have = b_.new_block(), live = b_.new_block(), same = b_.new_block();
    VregId outcome = b_.imm(kMatchStop);
    b_.branch_imm(ir::Cond::Ge, j, needle_cap, decided, ok_j);
    b_.set_block(ok_j);
    b_.branch_imm(ir::Cond::Ge, at, hay_cap, decided, ok_i);
    b_.set_block(ok_i);
    VregId nc = b_.load(1, b_.alu(AluOp::Add, scratch_ptr(needle_off), j), 0);
    b_.imm_to(outcome, kMatchFound);
    b_.branch_imm(ir::Cond::Eq, nc, 0, decided, more);
    b_.set_block(more);
    VregId k = b_.alu(AluOp::Add, at, j);
    b_.imm_to(outcome, kMatchStop);
    b_.branch_imm(ir::Cond::Ge, k, hay_cap, decided, have);
    b_.set_block(have);
    VregId hc = b_.load(1, b_.alu(AluOp::Add, scratch_ptr(hay_off), k), 0);
    b_.branch_imm(ir::Cond::Eq, hc, 0, decided, live);
    b_.set_block(live);
    b_.imm_to(outcome, kMatchNext);
    b_.branch(ir::Cond::Ne, hc, nc, decided, same);
    b_.set_block(same);
    b_.ret(0);
    b_.set_block(decided);
    b_.store(8, ictx, 8, outcome);
    b_.ret(1);
    end_callback(outer_state);

    b_.call(BPF_FUNC_loop, {b_.imm(needle_cap), b_.func_addr(inner), ics, b_.imm(0)});
    // Outcome 0: the needle filled its capacity and matched: found.
    VregId got = b_.load(8, ics, 8);
    BlockId not_stop = b_.new_block(), not_next = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, got, kMatchStop, stop, not_stop);
    b_.set_block(not_stop);
    b_.branch_imm(ir::Cond::Eq, got, kMatchNext, next, not_next);
    b_.set_block(not_next);
    b_.jump(found);
  }
  b_.set_block(found);
  b_.store(8, ctx, 0, i);
  b_.ret(1);
  b_.set_block(next);
  b_.ret(0);
  b_.set_block(stop);
  b_.ret(1);
  end_callback(saved);

  b_.call(BPF_FUNC_loop, {b_.imm(hay_cap), b_.func_addr(outer), cs, b_.imm(0)});
  return int_val(b_.load(8, cs, 0), res);
}

// The probe_read helper for memory in an address space (str: the _str
// variant). Unknown spaces use the old helper that tries both.
int Lowerer::read_helper(sema::AddrSpace space, bool str) {
  switch (space) {
    case sema::AddrSpace::User: return str ? BPF_FUNC_probe_read_user_str : BPF_FUNC_probe_read_user;
    case sema::AddrSpace::Kernel: return str ? BPF_FUNC_probe_read_kernel_str : BPF_FUNC_probe_read_kernel;
    case sema::AddrSpace::None: return str ? BPF_FUNC_probe_read_str : BPF_FUNC_probe_read;
  }
  std::unreachable();
}

// buf(): [u64 length][bytes], the length at most the capacity t.size.
Val Lowerer::buf_val(const Expr& e, const Type& t) {
  VregId rec = scratch_ptr(alloc(t.mem_size()));
  zero(rec, 8, t.mem_size() - 8);
  Val src = expr(e.args[0]);
  const bool from_value = src.type.is_bytes();
  if (from_value) src = addressable(src);
  std::optional<int64_t> fixed = static_cast<int64_t>(t.size);
  VregId len = kNoVreg;
  if (e.args.size() == 2) {
    Val l = expr(e.args[1]);
    // Lowering folds more than sema's literals (100 - 96): such a length
    // is fixed too, within the capacity sema gave.
    if (l.constant) fixed = std::clamp<int64_t>(*l.constant, 0, t.size);
    if (!l.constant) {
      // A length known only at run time: clamped to the capacity, which
      // also proves the read in bounds to the verifier.
      fixed.reset();
      len = b_.mov(materialize_int(l));
      BlockId clamp = b_.new_block(), ok = b_.new_block();
      b_.branch_imm(ir::Cond::Gt, len, t.size, clamp, ok);
      b_.set_block(clamp);
      b_.imm_to(len, t.size);
      b_.jump(ok);
      b_.set_block(ok);
    }
  }
  VregId data = b_.alu_imm(AluOp::Add, rec, 8);
  if (fixed) {
    b_.store_imm(8, rec, 0, static_cast<int32_t>(*fixed));
    if (from_value)
      copy_bytes(rec, 8, src.reg, sema::align8(t.size));
    else
      checked_call(read_helper(src.type.addr_space, false), {data, b_.imm(*fixed), materialize_int(src)});
  } else {
    b_.store(8, rec, 0, len);
    int helper = from_value ? BPF_FUNC_probe_read_kernel : read_helper(src.type.addr_space, false);
    checked_call(helper, {data, len, from_value ? src.reg : materialize_int(src)});
  }
  return Val{.reg = rec, .type = t};
}

// join(argv[, sep]): reads up to 16 string pointers from the array until
// a NULL one, and sends [id][count][strings] for user space to join.
void Lowerer::join(const Expr& e, const sema::Action& a, int32_t action) {
  VregId rec = scratch_ptr(alloc(a.record_size));
  b_.store_imm(8, rec, 0, action);
  Val arr_v = expr(e.args[0]);
  VregId arr = materialize_int(arr_v);
  sema::AddrSpace space = arr_v.type.addr_space;
  VregId tmp = scratch_ptr(alloc(8));
  VregId count = b_.imm(0);
  BlockId done = b_.new_block();
  for (size_t i = 1; i < a.args.size(); ++i) {
    b_.store_imm(8, tmp, 0, 0);
    VregId slot = b_.alu_imm(AluOp::Add, arr, static_cast<int64_t>((i - 1) * 8));
    checked_call(read_helper(space, false), {tmp, b_.imm(8), slot});
    VregId str = b_.load(8, tmp, 0);
    BlockId next = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, str, 0, done, next);
    b_.set_block(next);
    VregId dst = b_.alu_imm(AluOp::Add, rec, a.offsets[i]);
    checked_call(read_helper(space, true), {dst, b_.imm(a.args[i].size), str});
    b_.imm_to(count, static_cast<int64_t>(i));
  }
  b_.jump(done);
  b_.set_block(done);
  b_.store(8, rec, static_cast<int32_t>(a.offsets[0]), count);
  submit(rec, a.record_size);
}

// One compare per listed value (sema parsed the list): no map, no loop. A
// constant x is decided here.
void Lowerer::in_list(ExprId id, BlockId t, BlockId f) {
  const auto& values = p_.in_list_of.at(id);
  const Val x = expr(ast_.expr(id).args[0]);
  if (x.constant) {
    b_.jump(std::find(values.begin(), values.end(), *x.constant) != values.end() ? t : f);
    return;
  }
  const VregId reg = materialize_int(x);
  for (const int64_t v : values) {
    const BlockId next = b_.new_block();
    if (v >= INT32_MIN && v <= INT32_MAX)
      b_.branch_imm(ir::Cond::Eq, reg, v, t, next);
    else
      b_.branch(ir::Cond::Eq, reg, b_.imm(v), t, next);
    b_.set_block(next);
  }
  b_.jump(f);
}

void Lowerer::send(int32_t action, const std::vector<Arg>& args) {
  const auto& a = p_.actions[action];
  uint32_t off = alloc(a.record_size);
  VregId rec = scratch_ptr(off);
  b_.store_imm(8, rec, 0, action);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].expr != kNone)
      store_expr(rec, a.offsets[i], args[i].expr, a.args[i]);
    else
      copy_to(rec, a.offsets[i], args[i].val, a.args[i]);
  }
  submit(rec, a.record_size);
}

// Outputs a record built in scratch to the ring buffer.
void Lowerer::submit(VregId rec, uint32_t size) {
  VregId r = b_.call(BPF_FUNC_ringbuf_output, {b_.map_fd(m_.support.ringbuf), rec, b_.imm(size), b_.imm(0)});
  BlockId lost = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::Ne, r, 0, lost, join);
  b_.set_block(lost);
  b_.atomic_add(b_.map_value(m_.support.lost, 0), 0, b_.imm(1));
  b_.jump(join);
  b_.set_block(join);
}

// ---- helper failures (HelperSite) ----
uint32_t Lowerer::add_site(int helper, int32_t map) {
  sites_.push_back({.helper = helper, .loc = b_.loc(), .map = map});
  return static_cast<uint32_t>(sites_.size() - 1);
}

// Sends [kHelperErrorRecord][site][return code] for a failed call.
void Lowerer::send_helper_error(uint32_t site, VregId ret) {
  VregId rec = scratch_ptr(alloc(kHelperErrorSize));
  b_.store_imm(8, rec, 0, -1);  // kHelperErrorRecord
  b_.store_imm(4, rec, 8, site);
  b_.store(4, rec, 12, ret);
  submit(rec, kHelperErrorSize);
}

// A probe read or get_stackid: with -k, a negative return is reported;
// without it the call is all there is.
VregId Lowerer::checked_call(int helper, std::vector<VregId> args) {
  VregId r = b_.call(helper, std::move(args));
  if (!opts_.helper_errors) return r;
  uint32_t site = add_site(helper);
  BlockId fail = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::SLt, r, 0, fail, join);
  b_.set_block(fail);
  send_helper_error(site, r);
  b_.jump(join);
  b_.set_block(join);
  return r;
}

}  // namespace bpfscope::ir::detail
