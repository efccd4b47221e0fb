// Lowering: typed AST -> IR, one function per program unit (and target).
//
// Memory rules (DESIGN.md, "Codegen rules"):
// - strings, tuples, map keys and async records live in the per-CPU scratch
//   map, never on the 512-byte stack; the stack holds only spills and the
//   4-byte key used to look the scratch value up;
// - every key and record is fully written (string tails zeroed) before use;
// - every map lookup is null-checked before the pointer is used.
#include "builtins/builtins.h"
#include "ir/lowerer.h"

namespace bpfscope::ir::detail {

void Lowerer::run() {
  const auto& probe = ast_.probes[unit_.probe_index];
  b_.set_loc(probe.loc);
  ctx_ = b_.ctx();
  if (unit_.kind != sema::ProbeKind::Begin && unit_.kind != sema::ProbeKind::End) {
    // Held and stopped probes return at once: user space clears the
    // control word once BEGIN has run and sets it again on exit() or a
    // signal, so the maps are frozen before END runs even though the
    // (slow) detach happens later.
    VregId control = b_.load(8, b_.map_value(m_.support.control, 0), 0);
    BlockId run = b_.new_block(), stopped = b_.new_block();
    b_.branch_imm(ir::Cond::Ne, control, 0, stopped, run);
    b_.set_block(stopped);
    b_.ret(0);
    b_.set_block(run);
  }
  if (unit_.kind == sema::ProbeKind::Iter) {
    // The iterator calls the program once more at the end with the object
    // (the member after `meta`) NULL; that call has nothing to report.
    VregId obj = b_.load(8, ctx_, 8);
    BlockId some = b_.new_block(), none = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, obj, 0, none, some);
    b_.set_block(none);
    b_.ret(0);
    b_.set_block(some);
  }
  enter_scratch(0);
  // -p/-c: probes fire for that process only; not timers (interval runs in
  // whatever task the timer interrupts) nor iterators (they run in ours).
  const bool per_process = unit_.kind != sema::ProbeKind::Begin && unit_.kind != sema::ProbeKind::End &&
                           unit_.kind != sema::ProbeKind::Interval && unit_.kind != sema::ProbeKind::Iter &&
                           unit_.kind != sema::ProbeKind::Bench && unit_.kind != sema::ProbeKind::Signal;
  if (opts_.filter_pid > 0 && per_process) {
    VregId pid = b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32);
    BlockId mine = b_.new_block(), other = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, pid, opts_.filter_pid, mine, other);
    b_.set_block(other);
    b_.ret(0);
    b_.set_block(mine);
  }
  if (probe.predicate != kNone) {
    b_.set_loc(ast_.expr(probe.predicate).loc);
    BlockId body = b_.new_block(), skip = b_.new_block();
    cond(probe.predicate, body, skip);
    b_.set_block(skip);
    b_.ret(0);
    b_.set_block(body);
  }
  block(probe.body);
  b_.ret(0);
  for (auto& sub : subprograms_) f_.subprograms.push_back(std::move(sub));
}

// Reserves the function's key slot and looks up the scratch memory:
// scratch = lookup(scratch_map, &N), N the function's own entry (its index
// in the module): a program that interrupts another on the same CPU (a
// tp_btf block completion in the middle of a submission's probe) must not
// write over the other's values. A program never interrupts itself (the
// kernel skips that firing), and its callbacks share its entry. A failed
// lookup cannot happen for a per-CPU array, but the verifier needs the
// check; it returns `fail_ret`.
void Lowerer::enter_scratch(int64_t fail_ret) {
  key_slot_ = b_.reserve_stack(8);
  scratch_ = array_elem(m_.support.scratch, static_cast<uint32_t>(m_.functions.size()));
  BlockId ok = b_.new_block(), fail = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, scratch_, 0, fail, ok);
  b_.set_block(fail);
  b_.ret(fail_ret);
  b_.set_block(ok);
}

// Ends the probe (return, exit()): the program returns, or, inside a
// for-map callback, the callback marks the probe ended in its context and
// stops the iteration; its caller then ends the probe in turn.
void Lowerer::end_probe() {
  if (!callback_) {
    b_.ret(0);
    return;
  }
  b_.store_imm(8, callback_->ctx, kLoopEnded, 1);
  b_.jump(callback_->stop);
}

// ---- scratch memory ----
uint32_t Lowerer::alloc(uint32_t size) {
  uint32_t off = scratch_top_;
  scratch_top_ += sema::align8(std::max<uint32_t>(size, 8));
  scratch_high_ = std::max(scratch_high_, scratch_top_);
  return off;
}

// ---- statements ----
void Lowerer::block(const std::vector<StmtId>& body) {
  for (StmtId s : body) {
    if (b_.terminated()) return;
    uint32_t mark = scratch_top_;
    stmt(s);
    scratch_top_ = std::max(mark, vars_top_);
  }
}

void Lowerer::stmt(StmtId id) {
  const Stmt& s = ast_.stmt(id);
  b_.set_loc(s.loc);
  switch (s.kind) {
    case StmtKind::Expr: expr(s.expr); return;
    case StmtKind::Assign: assign(s); return;
    case StmtKind::Let: {
      int32_t var = p_.var_of[s.target];
      const Type& t = p_.var_types[var];
      if (s.value != kNone) {
        assign_var(s.target, expr(s.value));  // a declared narrower integer truncates it
      } else if (t.is_int()) {
        b_.imm_to(var_reg(var), 0);
        mirror_var(var);
      } else if (t.kind != TypeKind::None) {
        zero(scratch_ptr(var_slot(var)), 0, t.mem_size());
      }
      return;
    }
    case StmtKind::If: {
      // Sema decided the condition and checked only the branch taken.
      if (auto it = p_.known_if.find(id); it != p_.known_if.end()) {
        block(it->second ? s.body : s.else_body);
        return;
      }
      BlockId then_b = b_.new_block(), else_b = b_.new_block(), join = b_.new_block();
      cond(s.expr, then_b, else_b);
      b_.set_block(then_b);
      block(s.body);
      b_.jump(join);
      b_.set_block(else_b);
      block(s.else_body);
      b_.jump(join);
      b_.set_block(join);
      return;
    }
    case StmtKind::Block: block(s.body); return;
    case StmtKind::Return: end_probe(); return;
    // Loops are plain back edges: the verifier proves them bounded by
    // simulating the iterations (kernel 5.3+), as bpftrace relies on too.
    case StmtKind::While: {
      BlockId head = b_.new_block(), body = b_.new_block(), done = b_.new_block();
      b_.jump(head);
      b_.set_block(head);
      cond(s.expr, body, done);
      b_.set_block(body);
      loops_.push_back({head, done});
      block(s.body);
      loops_.pop_back();
      b_.jump(head);
      b_.set_block(done);
      return;
    }
    case StmtKind::Unroll: {
      int64_t n = constant_of(s.expr);
      for (int64_t k = 0; k < n && !b_.terminated(); ++k) block(s.body);
      return;
    }
    case StmtKind::For: {
      if (s.range_end == kNone) {
        for_map(s);
        return;
      }
      const int32_t var = p_.for_var_of[s.expr];
      Val start = expr(s.expr), stop = expr(s.range_end);
      if (!start.constant || !stop.constant) {
        for_range(s, materialize_int(start), materialize_int(stop));
        return;
      }
      VregId i = var_reg(var);
      b_.mov_to(i, materialize_int(start));
      mirror_var(var);
      VregId end = b_.mov(materialize_int(stop));
      BlockId head = b_.new_block(), body = b_.new_block(), latch = b_.new_block(), done = b_.new_block();
      b_.jump(head);
      b_.set_block(head);
      b_.branch(ir::Cond::SLt, i, end, body, done);
      b_.set_block(body);
      loops_.push_back({latch, done});
      block(s.body);
      loops_.pop_back();
      b_.jump(latch);
      b_.set_block(latch);
      b_.mov_to(i, b_.alu_imm(AluOp::Add, i, 1));
      mirror_var(var);
      b_.jump(head);
      b_.set_block(done);
      return;
    }
    case StmtKind::Break:
    case StmtKind::Continue: {
      if (loops_.empty()) return;  // sema reports it
      b_.jump(s.kind == StmtKind::Break ? loops_.back().exit : loops_.back().next);
      b_.set_block(b_.new_block());
      return;
    }
  }
}

Lowerer::LoopFrame Lowerer::open_loop_frame(const Stmt& s, int32_t own_var) {
  LoopFrame f;
  {
    std::set<int32_t> used;
    for (StmtId b : s.body) vars_in_stmt(b, used);
    for (int32_t v : used) {
      auto it = vars_.find(v);
      if (v != own_var && it != vars_.end() && it->second.reg != kNoVreg && p_.var_types[v].is_int())
        f.shared.push_back(v);
    }
  }
  // One more slot after the variables: a range's start.
  const int32_t ctx_off = b_.reserve_stack(kLoopVars + 8 * static_cast<uint32_t>(f.shared.size() + 1));
  f.cs = b_.stack_addr(ctx_off);
  b_.store(8, f.cs, kLoopCtx, ctx_);
  b_.store_imm(8, f.cs, kLoopEnded, 0);
  for (size_t k = 0; k < f.shared.size(); ++k)
    b_.store(8, f.cs, kLoopVars + static_cast<int32_t>(8 * k), vars_[f.shared[k]].reg);
  return f;
}

void Lowerer::close_loop_frame(const LoopFrame& f) {
  for (size_t k = 0; k < f.shared.size(); ++k)
    b_.mov_to(vars_[f.shared[k]].reg, b_.load(8, f.cs, kLoopVars + static_cast<int32_t>(8 * k)));
  BlockId ended = b_.new_block(), next = b_.new_block();
  b_.branch_imm(ir::Cond::Ne, b_.load(8, f.cs, kLoopEnded), 0, ended, next);
  b_.set_block(ended);
  end_probe();
  b_.set_block(next);
}

void Lowerer::for_map(const Stmt& s) {
  LoopFrame f = open_loop_frame(s, -1);
  const auto index = static_cast<uint32_t>(subprograms_.size());
  subprograms_.emplace_back();
  lower_callback(s, subprograms_.back(), index, f.shared, false);
  b_.call(BPF_FUNC_for_each_map_elem, {map_ptr(p_.map_of[s.expr]), b_.func_addr(index), f.cs, b_.imm(0)});
  close_loop_frame(f);
}

// for ($i : START..END) with a bound known only at run time (a map, a
// variable): bpf_loop(END - START, callback, ctx, 0), as bpftrace lowers
// every range; the verifier then needs no bound. Both ends are read once,
// before the first iteration. No iteration when END <= START; a count the
// helper refuses (over 1 << 23) runs none either.
void Lowerer::for_range(const Stmt& s, VregId start, VregId stop) {
  const int32_t var = p_.for_var_of[s.expr];
  VregId count = b_.alu(AluOp::Sub, stop, start);
  BlockId run = b_.new_block(), done = b_.new_block();
  b_.branch_imm(ir::Cond::SLe, count, 0, done, run);
  b_.set_block(run);
  LoopFrame f = open_loop_frame(s, var);
  b_.store(8, f.cs, kLoopVars + static_cast<int32_t>(8 * f.shared.size()), start);
  // bpf_loop takes a u32 count: a larger one is made one it refuses.
  BlockId huge = b_.new_block(), call = b_.new_block();
  VregId n = b_.mov(count);
  b_.branch_imm(ir::Cond::Gt, count, 0xffffffffll >> 1, huge, call);
  b_.set_block(huge);
  b_.mov_to(n, b_.imm(0xffffffffll >> 1));
  b_.jump(call);
  b_.set_block(call);
  const auto index = static_cast<uint32_t>(subprograms_.size());
  subprograms_.emplace_back();
  lower_callback(s, subprograms_.back(), index, f.shared, true);
  b_.call(BPF_FUNC_loop, {n, b_.func_addr(index), f.cs, b_.imm(0)});
  close_loop_frame(f);
  b_.jump(done);
  b_.set_block(done);
}

void Lowerer::lower_callback(const Stmt& s, Function& cb, uint32_t index, const std::vector<int32_t>& shared,
                             bool range) {
  CallerState saved = begin_callback(cb, "for", index);
  // for-map: callback(map, key, value, ctx); range: callback(index, ctx).
  VregId key = kNoVreg, value = kNoVreg, cs, iteration = kNoVreg;
  if (range) {
    iteration = b_.param(0);
    cs = b_.param(1);
  } else {
    b_.param(0);  // the map
    key = b_.param(1), value = b_.param(2), cs = b_.param(3);
  }
  ctx_ = b_.load(8, cs, kLoopCtx);
  enter_scratch(1);
  // Integer variables get this function's registers; the others keep their
  // scratch slots.
  std::unordered_map<int32_t, VarSlot> vars;
  for (const auto& [v, slot] : vars_)
    if (slot.has_mem) vars[v] = slot;
  for (size_t k = 0; k < shared.size(); ++k)
    vars[shared[k]].reg = b_.load(8, cs, kLoopVars + static_cast<int32_t>(8 * k));
  vars_ = std::move(vars);

  if (range) {
    // $i = START + the helper's iteration index.
    VregId start = b_.load(8, cs, kLoopVars + static_cast<int32_t>(8 * shared.size()));
    vars_[p_.for_var_of[s.expr]].reg = b_.alu(AluOp::Add, start, iteration);
  } else {
    for_map_pair(s, key, value);
  }

  Callback self{.ctx = cs, .stop = b_.new_block()};
  const BlockId next = b_.new_block();
  callback_ = &self;
  loops_ = {{.next = next, .exit = self.stop}};
  block(s.body);
  b_.jump(next);
  // Every exit stores the shared variables back.
  for (auto [block, ret] : {std::pair{next, 0}, std::pair{self.stop, 1}}) {
    b_.set_block(block);
    for (size_t k = 0; k < shared.size(); ++k)
      b_.store(8, cs, kLoopVars + static_cast<int32_t>(8 * k), vars_[shared[k]].reg);
    b_.ret(ret);
  }

  end_callback(saved);
}

// A for-map callback's $kv = (key, value), in scratch.
void Lowerer::for_map_pair(const Stmt& s, VregId key, VregId value) {
  const int32_t kv = p_.for_var_of[s.expr];
  const Type& kvt = p_.var_types[kv];
  auto& slot = vars_[kv];
  slot.has_mem = true;
  slot.off = alloc(kvt.mem_size());
  vars_top_ = std::max(vars_top_, scratch_top_);
  VregId dst = scratch_ptr(slot.off);
  // The key and the value as tuple fields (a map's own integers are 8 bytes).
  const Type& kt = kvt.elems[0];
  if (kvt.has_holes()) zero(dst, 0, kvt.mem_size());
  if (kt.is_int())
    copy_to(dst, 0, int_val(b_.load(8, key, 0), kt), kt, true);
  else
    copy_exact(dst, 0, key, kt.field_size());
  const auto& m = map_info(s.expr);
  if (m.agg != output::AggKind::Plain) {
    // A per-CPU value is this CPU's share only; read it as a probe does,
    // over all CPUs, with the key copy in scratch (bpftrace 0.21+).
    Val total = aggregate_read(s.expr, dst);
    copy_to(dst, kvt.offsets[1], total, kvt.elems[1], true);
  } else if (kvt.elems[1].is_int()) {
    copy_to(dst, kvt.offsets[1], int_val(b_.load(8, value, 0), kvt.elems[1]), kvt.elems[1], true);
  } else {
    copy_exact(dst, kvt.offsets[1], value, kvt.elems[1].field_size());
  }
}

// The scratch variables a statement reads or writes (for a loop body).
void Lowerer::vars_in_stmt(StmtId id, std::set<int32_t>& out) const {
  const Stmt& s = ast_.stmt(id);
  for (ExprId e : {s.expr, s.range_end, s.target, s.value})
    if (e != kNone) vars_in_expr(e, out);
  for (StmtId b : s.body) vars_in_stmt(b, out);
  for (StmtId b : s.else_body) vars_in_stmt(b, out);
}

void Lowerer::vars_in_expr(ExprId id, std::set<int32_t>& out) const {
  if (p_.var_of[id] >= 0) out.insert(p_.var_of[id]);
  for (ExprId a : ast_.expr(id).args) vars_in_expr(a, out);
}

void Lowerer::assign(const Stmt& s) {
  const Expr& target = ast_.expr(s.target);
  if (target.kind == ExprKind::Map) {
    const Expr& value = ast_.expr(s.value);
    const builtins::Function* f = value.kind == ExprKind::Call ? p_.function_of[s.value] : nullptr;
    if (f && f->aggregation != output::AggKind::Plain) {
      aggregate(s.target, s.value);
      return;
    }
    // @m = { stmts; avg($x) }: the block's statements, then the aggregation.
    if (value.kind == ExprKind::Block && !value.args.empty()) {
      const builtins::Function* tail = p_.function_of[value.args[0]];
      if (tail && tail->aggregation != output::AggKind::Plain) {
        block(value.body);
        if (b_.terminated()) return;
        aggregate(s.target, value.args[0]);
        return;
      }
    }
    Val v;
    if (s.op != Op::None) {
      const Type& mt = p_.type_of(s.target);
      Val old = map_read(s.target);
      Val rhs = pointer_step(s.op, mt, expr(s.value));
      v = Val{.reg = arith(s.op, old.reg, rhs, mt.is_signed), .type = mt};
    } else {
      v = expr(s.value);
    }
    map_write(s.target, v);
    return;
  }
  if (s.op != Op::None) {
    int32_t var = p_.var_of[s.target];
    Val rhs = pointer_step(s.op, p_.var_types[var], expr(s.value));
    VregId res = arith(s.op, var_reg(var), rhs, p_.var_types[var].is_signed);
    set_int_var(var, int_val(res, p_.var_types[var]));
    return;
  }
  assign_var(s.target, expr(s.value));
}

// The right side of `p += n` / `p -= n` on a pointer: n elements.
Val Lowerer::pointer_step(Op op, const Type& target, Val rhs) {
  if (!target.is_pointer || rhs.type.is_pointer || (op != Op::Add && op != Op::Sub)) return rhs;
  return scaled(std::move(rhs), target.pointee_size());
}

VregId Lowerer::var_reg(int32_t var) {
  auto& slot = vars_[var];
  if (slot.reg == kNoVreg) slot.reg = b_.vreg();
  return slot.reg;
}

void Lowerer::assign_var(ExprId target, const Val& v) {
  int32_t var = p_.var_of[target];
  const Type& t = p_.var_types[var];
  if (t.is_int()) {
    set_int_var(var, v);
    return;
  }
  copy_to(scratch_ptr(var_slot(var)), 0, v, t);
}

void Lowerer::set_int_var(int32_t var, const Val& v) {
  const Type& t = p_.var_types[var];
  const bool narrow_int = t.kind == TypeKind::Int && !t.is_pointer && t.size < 8;
  b_.mov_to(var_reg(var), materialize_int(narrow_int ? narrow(v, t) : v));
  mirror_var(var);
}

// An integer variable whose address `&$x` takes: its value in its scratch
// slot too, where a pointer to it reads.
void Lowerer::mirror_var(int32_t var) {
  if (!p_.addressed_vars.count(var) || !p_.var_types[var].is_int()) return;
  b_.store(8, scratch_ptr(var_slot(var)), 0, var_reg(var));
}

// A non-integer variable's scratch offset, allocated on first use.
uint32_t Lowerer::var_slot(int32_t var) {
  auto& slot = vars_[var];
  if (!slot.has_mem) {
    slot.has_mem = true;
    slot.off = alloc(p_.var_types[var].mem_size());
    vars_top_ = std::max(vars_top_, scratch_top_);
  }
  return slot.off;
}

// ---- conditions ----
void Lowerer::cond(ExprId id, BlockId t, BlockId f) {
  const Expr& e = ast_.expr(id);
  if (e.kind == ExprKind::Call && p_.function_of[id] && p_.function_of[id]->branch) {
    p_.function_of[id]->branch(*this, id, t, f);
    return;
  }
  if (e.kind == ExprKind::Binary) {
    // Sema decided it (== of two constant strings).
    if (p_.const_of[id]) {
      b_.jump(*p_.const_of[id] ? t : f);
      return;
    }
    switch (e.op) {
      case Op::LAnd: {
        BlockId mid = b_.new_block();
        cond(e.args[0], mid, f);
        b_.set_block(mid);
        cond(e.args[1], t, f);
        return;
      }
      case Op::LOr: {
        BlockId mid = b_.new_block();
        cond(e.args[0], t, mid);
        b_.set_block(mid);
        cond(e.args[1], t, f);
        return;
      }
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge: {
        const Type& lt = p_.type_of(e.args[0]);
        const Type& rt = p_.type_of(e.args[1]);
        // == and != of values in memory: equal goes to `same`. The left
        // operand is lowered first.
        const BlockId same = e.op == Op::Eq ? t : f, other = e.op == Op::Eq ? f : t;
        const bool tuple = lt.is_tuple();
        if (lt.kind == TypeKind::Array || rt.kind == TypeKind::Array || (lt.is_string() && rt.is_string()) ||
            lt.kind == TypeKind::Buffer || tuple) {
          Val l = expr(e.args[0]);
          Val r = expr(e.args[1]);
          if (tuple)
            tuple_eq(addressable(l), addressable(r), same, other);
          else if (lt.kind == TypeKind::Array || rt.kind == TypeKind::Array)
            bytes_eq(l, r, lt.size, same, other);
          else if (lt.kind == TypeKind::Buffer)
            buffer_eq(l, r, same, other);
          else
            string_eq(l, r, same, other);
          return;
        }
        Val l = expr(e.args[0]);
        Val r = expr(e.args[1]);
        bool is_signed = (lt.is_signed && lt.kind == TypeKind::Int) || (rt.is_signed && rt.kind == TypeKind::Int);
        ir::Cond c = compare_cond(e.op, is_signed);
        VregId a = materialize_int(l);
        if (r.constant && *r.constant >= INT32_MIN && *r.constant <= INT32_MAX)
          b_.branch_imm(c, a, *r.constant, t, f);
        else
          b_.branch(c, a, materialize_int(r), t, f);
        return;
      }
      default: break;
    }
  }
  if (e.kind == ExprKind::Unary && e.op == Op::LNot) {
    cond(e.args[0], f, t);
    return;
  }
  Val v = expr(id);
  b_.branch_imm(ir::Cond::Ne, materialize_int(v), 0, t, f);
}

ir::Cond Lowerer::compare_cond(Op op, bool is_signed) {
  switch (op) {
    case Op::Eq: return ir::Cond::Eq;
    case Op::Ne: return ir::Cond::Ne;
    case Op::Lt: return is_signed ? ir::Cond::SLt : ir::Cond::Lt;
    case Op::Le: return is_signed ? ir::Cond::SLe : ir::Cond::Le;
    case Op::Gt: return is_signed ? ir::Cond::SGt : ir::Cond::Gt;
    case Op::Ge: return is_signed ? ir::Cond::SGe : ir::Cond::Ge;
    default: std::unreachable();
  }
}

// Strings are equal when their bytes agree up to and including the first
// NUL (or up to the shorter capacity).
void Lowerer::string_eq(const Val& l, const Val& r, BlockId equal, BlockId differ) {
  const Val* lit = l.literal ? &l : r.literal ? &r : nullptr;
  const Val* other = lit == &l ? &r : &l;
  if (lit && other->literal) {
    b_.jump(*lit->literal == *other->literal ? equal : differ);
    return;
  }
  if (lit) {
    uint32_t n = std::min<uint32_t>(lit->literal->size() + 1, other->type.size);
    for (uint32_t i = 0; i < n; ++i) {
      uint8_t c = i < lit->literal->size() ? static_cast<uint8_t>((*lit->literal)[i]) : 0;
      VregId byte = b_.load(1, other->reg, static_cast<int32_t>(i));
      BlockId next = b_.new_block();
      b_.branch_imm(ir::Cond::Ne, byte, c, differ, next);
      b_.set_block(next);
    }
    // Every byte matched; if the literal is longer than the other's
    // capacity the other is a truncated prefix, which still counts as
    // different only when the literal has more characters.
    b_.jump(lit->literal->size() + 1 > other->type.size ? differ : equal);
    return;
  }
  compare_bytes(l.reg, r.reg, std::min(l.type.size, r.type.size), equal, differ);
}

// Tuples are equal when every element is: integers by value, strings by
// content, nested tuples recursively, anything else byte for byte. A
// record's fields pair up by name.
void Lowerer::tuple_eq(const Val& l, const Val& r, BlockId equal, BlockId differ) {
  for (size_t i = 0; i < l.type.elems.size(); ++i) {
    const size_t j = l.type.is_named_tuple() ? static_cast<size_t>(r.type.field_index(l.type.names[i])) : i;
    Val a = tuple_elem(l, i), c = tuple_elem(r, j);
    BlockId next = b_.new_block();
    if (a.type.is_int())
      b_.branch(ir::Cond::Ne, a.reg, c.reg, differ, next);
    else if (a.type.is_string())
      string_eq(a, c, next, differ);
    else if (a.type.is_tuple())
      tuple_eq(a, c, next, differ);
    else
      bytes_eq(a, c, a.type.mem_size(), next, differ);
    b_.set_block(next);
  }
  b_.jump(equal);
}

// Buffers (u64 length, then the bytes) are equal when their lengths are
// and their first `length` bytes agree; bytes past the length are not
// looked at.
void Lowerer::buffer_eq(const Val& l, const Val& r, BlockId equal, BlockId differ) {
  VregId len = b_.load(8, l.reg, 0);
  BlockId same_len = b_.new_block();
  b_.branch(ir::Cond::Ne, len, b_.load(8, r.reg, 0), differ, same_len);
  b_.set_block(same_len);
  // Equal lengths fit the smaller capacity.
  const uint32_t n = std::min(l.type.size, r.type.size);
  for (uint32_t i = 0; i < n; ++i) {
    BlockId within = b_.new_block(), next = b_.new_block();
    b_.branch_imm(ir::Cond::Le, len, i, equal, within);
    b_.set_block(within);
    VregId a = b_.load(1, l.reg, static_cast<int32_t>(8 + i));
    b_.branch(ir::Cond::Ne, a, b_.load(1, r.reg, static_cast<int32_t>(8 + i)), differ, next);
    b_.set_block(next);
  }
  b_.jump(equal);
}

// Byte arrays are equal when all n bytes agree (zeros included).
void Lowerer::bytes_eq(const Val& l, const Val& r, uint32_t n, BlockId equal, BlockId differ) {
  if (l.literal && r.literal) {
    b_.jump(*l.literal == *r.literal ? equal : differ);
    return;
  }
  const Val* lit = l.literal ? &l : r.literal ? &r : nullptr;
  Val a = addressable(lit == &l ? r : l);
  Val c = lit ? *lit : addressable(r);
  for (uint32_t i = 0; i < n; ++i) {
    VregId x = b_.load(1, a.reg, static_cast<int32_t>(i));
    BlockId next = b_.new_block();
    if (lit)
      b_.branch_imm(ir::Cond::Ne, x, static_cast<uint8_t>((*lit->literal)[i]), differ, next);
    else
      b_.branch(ir::Cond::Ne, x, b_.load(1, c.reg, static_cast<int32_t>(i)), differ, next);
    b_.set_block(next);
  }
  b_.jump(equal);
}

// Branches to `equal` when the first n bytes at l and r agree, or agree up
// to a NUL they share; else to `differ`. Unrolled.
void Lowerer::compare_bytes(VregId l, VregId r, uint32_t n, BlockId equal, BlockId differ) {
  for (uint32_t i = 0; i < n; ++i) {
    VregId a = b_.load(1, l, static_cast<int32_t>(i));
    VregId c = b_.load(1, r, static_cast<int32_t>(i));
    BlockId same = b_.new_block(), next = b_.new_block();
    b_.branch(ir::Cond::Ne, a, c, differ, same);
    b_.set_block(same);
    b_.branch_imm(ir::Cond::Eq, a, 0, equal, next);
    b_.set_block(next);
  }
  b_.jump(equal);
}

// ---- expressions ----
VregId Lowerer::materialize_int(const Val& v) {
  if (v.reg != kNoVreg) return v.reg;
  return b_.imm(v.constant.value_or(0));
}

Val Lowerer::string_literal(std::string s) {
  Type t = Type::string(static_cast<uint32_t>(s.size() + 1));
  return Val{.reg = kNoVreg, .type = t, .literal = std::move(s)};
}

// Puts a literal string into scratch so it has an address.
Val Lowerer::addressable(const Val& v) {
  if (!v.literal) return v;
  uint32_t off = alloc(v.type.mem_size());
  VregId p = scratch_ptr(off);
  copy_to(p, 0, v, v.type);
  return Val{.reg = p, .type = v.type};
}

VregId Lowerer::arith(Op op, VregId a, const Val& rhs, bool is_signed) {
  AluOp alu = AluOp::Add;
  switch (op) {
    case Op::Add: alu = AluOp::Add; break;
    case Op::Sub: alu = AluOp::Sub; break;
    case Op::Mul: alu = AluOp::Mul; break;
    case Op::Div: alu = AluOp::Div; break;
    case Op::Mod: alu = AluOp::Mod; break;
    case Op::BAnd: alu = AluOp::And; break;
    case Op::BOr: alu = AluOp::Or; break;
    case Op::BXor: alu = AluOp::Xor; break;
    case Op::Shl: alu = AluOp::Lsh; break;
    case Op::Shr: alu = AluOp::Rsh; break;
    default: std::unreachable();
  }
  (void)is_signed;  // '/' and '%' are unsigned and '>>' logical, as in bpftrace.
  // The verifier rejects an immediate divisor of 0 and immediate shifts
  // outside 0-63; those go through a register (BPF defines x/0 as 0).
  bool imm_ok = rhs.constant && *rhs.constant >= INT32_MIN && *rhs.constant <= INT32_MAX;
  if ((alu == AluOp::Div || alu == AluOp::Mod) && (!rhs.constant || *rhs.constant == 0)) {
    // As bpftrace: a divisor of 0 gives 1, with a run-time warning.
    VregId d = materialize_int(rhs);
    VregId out = b_.imm(1);
    BlockId zero = b_.new_block(), nonzero = b_.new_block(), join = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, d, 0, zero, nonzero);
    b_.set_block(zero);
    send_helper_error(add_site(ir::kDivideByZero), d);
    b_.jump(join);
    b_.set_block(nonzero);
    b_.mov_to(out, b_.alu(alu, a, d));
    b_.jump(join);
    b_.set_block(join);
    return out;
  }
  if (imm_ok && (alu == AluOp::Lsh || alu == AluOp::Rsh) && (*rhs.constant < 0 || *rhs.constant > 63)) imm_ok = false;
  if (imm_ok) return b_.alu_imm(alu, a, *rhs.constant);
  return b_.alu(alu, a, materialize_int(rhs));
}

// Sign- or zero-extends the low `size` bytes of r to 64 bits.
VregId Lowerer::extend(VregId r, uint32_t size, bool is_signed) {
  if (size >= 8) return r;
  int shift = 64 - static_cast<int>(size) * 8;
  VregId s = b_.alu_imm(AluOp::Lsh, r, shift);
  return b_.alu_imm(is_signed ? AluOp::Arsh : AluOp::Rsh, s, shift);
}

Val Lowerer::expr(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Type& t = p_.type_of(id);
  lang::Loc saved = b_.loc();
  b_.set_loc(e.loc);
  Val v = expr_inner(id, e, t);
  b_.set_loc(saved);
  return v;
}

Val Lowerer::expr_inner(ExprId id, const Expr& e, const Type& t) {
  switch (e.kind) {
    case ExprKind::Integer: return constant(static_cast<int64_t>(e.ival), t);
    case ExprKind::Float: std::unreachable();  // sema accepts it only as a printf divisor, which user space applies
    case ExprKind::String: return string_literal(e.sval);
    case ExprKind::Identifier:
      // A #define's string, an enum or a named constant, else a builtin
      // variable (pid is pid()).
      if (p_.const_of[id] && t.is_string()) {
        Val s = string_literal(p_.const_strings[static_cast<size_t>(*p_.const_of[id])]);
        s.type = t;
        return s;
      }
      if (p_.const_of[id]) return constant(*p_.const_of[id], t);
      return call(id, e, t);
    case ExprKind::Positional:
      // A string: the text as given (empty when unset; str($N) of a number).
      if (t.is_string()) return string_literal(e.ival <= p_.positional.size() ? p_.positional[e.ival - 1] : "");
      return constant(p_.const_of[id].value_or(0), t);
    case ExprKind::PositionalCount: return constant(static_cast<int64_t>(p_.positional.size()), t);
    case ExprKind::Variable: {
      int32_t var = p_.var_of[id];
      const Type& vt = p_.var_types[var];
      if (vt.is_int()) return int_val(var_reg(var), vt);
      auto& slot = vars_[var];
      return Val{.reg = scratch_ptr(slot.off), .type = vt, .local = vt.is_record()};
    }
    case ExprKind::Map: return map_read(id, true);
    case ExprKind::Call: return call(id, e, t);
    case ExprKind::Unary: {
      switch (e.op) {
        case Op::Neg: {
          Val a = expr(e.args[0]);
          if (a.constant) return constant(-*a.constant, t);
          return int_val(b_.alu_imm(AluOp::Neg, materialize_int(a), 0), t);
        }
        case Op::BNot: {
          Val a = expr(e.args[0]);
          if (a.constant) return constant(~*a.constant, t);
          return int_val(b_.alu_imm(AluOp::Xor, materialize_int(a), -1), t);
        }
        case Op::LNot: return bool_of(id);
        case Op::Deref: {
          const Type& pt = p_.type_of(e.args[0]);
          return read_memory(materialize_int(expr(e.args[0])), {}, t, pt.addr_space);
        }
        case Op::AddrOf: {
          const Expr& field = ast_.expr(e.args[0]);
          if (field.kind == ExprKind::Variable) {
            // The variable's scratch slot; an integer is stored there on
            // every write (mirror_var), and now.
            const int32_t var = p_.var_of[e.args[0]];
            const uint32_t off = var_slot(var);
            if (p_.var_types[var].is_int()) b_.store(8, scratch_ptr(off), 0, var_reg(var));
            return int_val(scratch_ptr(off), t);
          }
          VregId base = materialize_int(expr(field.args[0]));
          uint32_t off = p_.field_of[e.args[0]].offset;
          return int_val(off ? b_.alu_imm(AluOp::Add, base, off) : base, t);
        }
        default: std::unreachable();
      }
    }
    case ExprKind::Binary: {
      if (p_.const_of[id]) return constant(*p_.const_of[id], t);  // == of two constant strings
      switch (e.op) {
        case Op::Eq:
        case Op::Ne:
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge:
        case Op::LAnd:
        case Op::LOr: return bool_of(id);
        default: break;
      }
      Val l = expr(e.args[0]);
      Val r = expr(e.args[1]);
      if (t.is_pointer && (e.op == Op::Add || e.op == Op::Sub)) {
        // p + n steps n elements; n + p too.
        bool left_ptr = p_.type_of(e.args[0]).is_pointer;
        Val n = scaled(left_ptr ? r : l, t.pointee_size());
        return int_val(arith(e.op, materialize_int(left_ptr ? l : r), n, false), t);
      }
      if (l.constant && r.constant) {
        if (auto folded = fold(e.op, *l.constant, *r.constant)) return constant(*folded, t);
      }
      return int_val(arith(e.op, materialize_int(l), r, t.is_signed), t);
    }
    case ExprKind::Ternary: {
      BlockId a = b_.new_block(), c = b_.new_block(), join = b_.new_block();
      if (t.kind == TypeKind::None) {
        cond(e.args[0], a, c);
        b_.set_block(a);
        expr(e.args[1]);
        b_.jump(join);
        b_.set_block(c);
        expr(e.args[2]);
        b_.jump(join);
        b_.set_block(join);
        return Val{.type = t};
      }
      if (t.is_int()) {
        VregId out = b_.vreg();
        if (e.args.size() == 2) {
          Val cv = expr(e.args[0]);
          VregId cr = materialize_int(cv);
          b_.mov_to(out, cr);
          b_.branch_imm(ir::Cond::Ne, cr, 0, join, c);
          b_.set_block(c);
          b_.mov_to(out, materialize_int(expr(e.args[1])));
          b_.jump(join);
          b_.set_block(a);
          b_.jump(join);
          b_.set_block(join);
          return int_val(out, t);
        }
        cond(e.args[0], a, c);
        b_.set_block(a);
        b_.mov_to(out, materialize_int(expr(e.args[1])));
        b_.jump(join);
        b_.set_block(c);
        b_.mov_to(out, materialize_int(expr(e.args[2])));
        b_.jump(join);
        b_.set_block(join);
        return int_val(out, t);
      }
      // Strings and tuples: both arms copy into one scratch slot.
      uint32_t off = alloc(t.mem_size());
      cond(e.args[0], a, c);
      b_.set_block(a);
      copy_to(scratch_ptr(off), 0, expr(e.args[1]), t);
      b_.jump(join);
      b_.set_block(c);
      copy_to(scratch_ptr(off), 0, expr(e.args[e.args.size() == 2 ? 1 : 2]), t);
      b_.jump(join);
      b_.set_block(join);
      return Val{.reg = scratch_ptr(off), .type = t};
    }
    case ExprKind::Field: {
      if (p_.function_of[e.args[0]] && p_.function_of[e.args[0]]->fields) return args_field(e, t);
      const Type& base_type = p_.type_of(e.args[0]);
      if (base_type.is_record() || (base_type.is_pointer && base_type.btf_id != 0)) {
        Val base = expr(e.args[0]);
        Val v = read_memory(materialize_int(base), p_.field_of[id], t,
                            base.local ? sema::AddrSpace::Kernel : base_type.addr_space);
        v.local = base.local && t.is_record();
        return v;
      }
      // Tuple element.
      Val base = expr(e.args[0]);
      base = addressable(base);
      const Type& bt = p_.type_of(e.args[0]);
      size_t idx = bt.is_named_tuple() ? static_cast<size_t>(bt.field_index(e.name)) : std::stoul(e.name);
      uint32_t off = bt.offsets[idx];
      if (t.is_int()) return int_val(load_field(base.reg, off, t), t);
      return Val{.reg = b_.alu_imm(AluOp::Add, base.reg, off), .type = t};
    }
    case ExprKind::Cast: {
      Val a = expr(e.args[0]);
      if (t.kind == TypeKind::Array) {
        // The same bytes as an array: a string or array where it is, an
        // integer stored (8 bytes, native order) in scratch.
        if (a.literal) {
          std::string bytes = *a.literal;
          bytes.resize(t.field_size(), '\0');  // the NUL is an element too
          return Val{.type = t, .literal = std::move(bytes)};
        }
        if (!a.type.is_int()) return Val{.reg = a.reg, .type = t};
        VregId p = scratch_ptr(alloc(t.mem_size()));
        copy_to(p, 0, a, Type::integer(8, false));
        if (t.mem_size() > 8) zero(p, 8, t.mem_size() - 8);
        return Val{.reg = p, .type = t};
      }
      if (a.type.kind == TypeKind::Array) {
        // The array's bytes as an integer, in native order.
        if (a.literal) {
          uint64_t c = 0;
          std::memcpy(&c, a.literal->data(), std::min<size_t>(a.literal->size(), 8));
          return constant(static_cast<int64_t>(c), t);
        }
        return int_val(b_.load(static_cast<uint8_t>(t.size), a.reg, 0), t);
      }
      if (t.kind == TypeKind::Bool) return bool_of_val(a);
      if (t.is_pointer && a.type.kind == TypeKind::Int && !a.type.is_pointer && a.type.size < 8) {
        // A narrower integer becomes an address zero-extended, as in
        // bpftrace (LLVM's inttoptr): (uint8 *)-1 is 0xff.
        Val v = narrow(a, Type::integer(a.type.size, false));
        return v.constant ? constant(*v.constant, t) : int_val(materialize_int(v), t);
      }
      return narrow(a, t);
    }
    case ExprKind::Tuple: {
      uint32_t off = alloc(t.mem_size());
      VregId p = scratch_ptr(off);
      if (t.has_holes()) zero(p, 0, t.mem_size());
      for (size_t i = 0; i < e.args.size(); ++i) store_expr(p, t.offsets[i], e.args[i], t.elems[i], true);
      return Val{.reg = p, .type = t};
    }
    case ExprKind::IncDec: return inc_dec(e, t);
    case ExprKind::Sizeof:
    case ExprKind::Offsetof: return constant(p_.const_of[id].value_or(0), t);
    case ExprKind::Typeof: std::unreachable();  // sema rejects a typeof() outside a type
    case ExprKind::Index: {
      const Type& bt = p_.type_of(e.args[0]);
      Val base = expr(e.args[0]);
      if (bt.is_string()) {
        base = addressable(base);
        if (const auto k = p_.const_of[e.args[1]]) return int_val(extend(b_.load(1, base.reg, static_cast<int32_t>(*k)), 1, true), t);
        // A computed index: the byte when the index is below the capacity
        // (which also bounds the access for the verifier), else 0.
        VregId i = materialize_int(expr(e.args[1]));
        VregId out = b_.vreg();
        b_.imm_to(out, 0);
        BlockId in = b_.new_block(), done = b_.new_block();
        b_.branch_imm(ir::Cond::Lt, i, bt.size, in, done);
        b_.set_block(in);
        b_.mov_to(out, extend(b_.load(1, b_.alu(AluOp::Add, base.reg, i), 0), 1, true));
        b_.jump(done);
        b_.set_block(done);
        return int_val(out, t);
      }
      if (bt.kind == TypeKind::Array) {
        base = addressable(base);
        return int_val(load_field(base.reg, static_cast<uint32_t>(ast_.expr(e.args[1]).ival) * t.size, t), t);
      }
      if (bt.is_tuple()) {
        base = addressable(base);
        uint32_t off = bt.offsets[static_cast<size_t>(p_.const_of[e.args[1]].value_or(0))];
        if (t.is_int()) return int_val(load_field(base.reg, off, t), t);
        return Val{.reg = b_.alu_imm(AluOp::Add, base.reg, off), .type = t};
      }
      // A kernel array member (its address) or a pointer: element i.
      uint32_t elem = bt.is_pointer ? bt.pointee_size() : t.is_pointer ? 8 : t.size;
      sema::AddrSpace space = bt.is_pointer ? bt.addr_space : sema::AddrSpace::Kernel;
      Val i = scaled(expr(e.args[1]), elem);
      VregId addr = arith(Op::Add, materialize_int(base), i, false);
      return read_memory(addr, {}, t, space);
    }
    case ExprKind::Block: {
      block(e.body);
      // A `return` in a macro body ends the probe: the value is then unreachable code.
      if (b_.terminated()) b_.set_block(b_.new_block());
      if (e.args.empty()) return Val{.type = t};
      return expr(e.args[0]);
    }
  }
  std::unreachable();
}

// An integer as type t: truncated to t's size, then sign- or zero-extended.
Val Lowerer::narrow(const Val& a, const Type& t) {
  if (a.constant) {
    int64_t c = *a.constant;
    if (t.size < 8) {
      int shift = 64 - static_cast<int>(t.size) * 8;
      c = t.is_signed ? (static_cast<int64_t>(static_cast<uint64_t>(c) << shift) >> shift)
                      : static_cast<int64_t>((static_cast<uint64_t>(c) << shift) >> shift);
    }
    return constant(c, t);
  }
  return int_val(extend(materialize_int(a), t.size, t.is_signed), t);
}

// min(len + 1, cap) as an unsigned value the verifier sees bounded: the
// size of a read of `len` bytes and a NUL into a cap-byte buffer.
VregId Lowerer::clamped_size(VregId len, uint32_t cap) {
  VregId n = b_.vreg();
  b_.mov_to(n, b_.alu_imm(AluOp::Add, len, 1));
  BlockId clamp = b_.new_block(), done = b_.new_block();
  b_.branch_imm(ir::Cond::Gt, n, cap, clamp, done);
  b_.set_block(clamp);
  b_.imm_to(n, cap);
  b_.jump(done);
  b_.set_block(done);
  return n;
}

// n * size, folded when n is a constant.
Val Lowerer::scaled(Val n, uint32_t size) {
  if (size == 1) return n;
  if (n.constant) return constant(*n.constant * size, Type::integer(8, true));
  return int_val(b_.alu_imm(AluOp::Mul, materialize_int(n), size), Type::integer(8, true));
}

// The value of an expression sema proved constant (literals, numeric $N).
int64_t Lowerer::constant_of(ExprId id) {
  Val v = expr(id);
  return v.constant.value_or(0);
}

std::optional<int64_t> Lowerer::fold(Op op, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Op::Add: return static_cast<int64_t>(ua + ub);
    case Op::Sub: return static_cast<int64_t>(ua - ub);
    case Op::Mul: return static_cast<int64_t>(ua * ub);
    case Op::Div: return b == 0 ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(ua / ub));
    case Op::Mod: return b == 0 ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(ua % ub));
    case Op::BAnd: return a & b;
    case Op::BOr: return a | b;
    case Op::BXor: return a ^ b;
    case Op::Shl: return ub >= 64 ? 0 : static_cast<int64_t>(ua << ub);
    case Op::Shr: return ub >= 64 ? 0 : static_cast<int64_t>(ua >> ub);
    default: return std::nullopt;
  }
}

// A boolean expression as a 0/1 value.
Val Lowerer::bool_of(ExprId id) {
  VregId out = b_.vreg();
  BlockId t = b_.new_block(), f = b_.new_block(), join = b_.new_block();
  cond(id, t, f);
  b_.set_block(t);
  b_.imm_to(out, 1);
  b_.jump(join);
  b_.set_block(f);
  b_.imm_to(out, 0);
  b_.jump(join);
  b_.set_block(join);
  return int_val(out, Type::boolean());
}

Val Lowerer::bool_of_val(const Val& v) {
  if (v.constant) return constant(*v.constant != 0, Type::boolean());
  return int_val(flag(ir::Cond::Ne, v.reg, 0), Type::boolean());
}

// 1 when `r c imm` holds, else 0.
VregId Lowerer::flag(ir::Cond c, VregId r, int64_t imm) {
  VregId out = b_.imm(0);
  BlockId yes = b_.new_block(), join = b_.new_block();
  b_.branch_imm(c, r, imm, yes, join);
  b_.set_block(yes);
  b_.imm_to(out, 1);
  b_.jump(join);
  b_.set_block(join);
  return out;
}

Val Lowerer::args_field(const Expr& e, const Type& t) {
  if (auto params = sema::btf_args(*p_.btf, unit_.kind, target())) {
    // The context is the u64 argument array; the BTF prototype gives the
    // position (sema checked the name exists).
    int index = 0;
    for (size_t k = 0; params && k < params->size(); ++k)
      if ((*params)[k].name == e.name) index = static_cast<int>(k);
    // fentry through its kprobe fallback: the argument registers (sema
    // allows only the first six).
    bool regs = unit_.mechanism == sema::ProbeKind::Kprobe || unit_.mechanism == sema::ProbeKind::Kretprobe;
    VregId v = b_.load(8, ctx_, regs ? kArgRegs[index] : index * 8);
    return int_val(t.is_pointer ? v : extend(v, t.size, t.is_signed), t);
  }
  const auto& fmt = target().format;
  const bpf::TracepointField* field = nullptr;
  for (const auto& f : fmt.fields)
    if (f.name == e.name) field = &f;
  if (field->data_loc) {
    VregId loc = b_.load(4, ctx_, static_cast<int32_t>(field->offset));
    VregId off = b_.alu_imm(AluOp::And, loc, 0xffff);
    VregId src = b_.alu(AluOp::Add, ctx_, off);
    uint32_t buf = alloc(t.mem_size());
    VregId dst = scratch_ptr(buf);
    zero(dst, 0, t.mem_size());
    b_.call(BPF_FUNC_probe_read_kernel_str, {dst, b_.imm(t.size), src});
    return Val{.reg = dst, .type = t};
  }
  if (t.is_string()) {
    uint32_t buf = alloc(t.mem_size());
    VregId dst = scratch_ptr(buf);
    zero(dst, 0, t.mem_size());
    uint32_t n = std::min(field->array_len, t.size);
    VregId src = b_.alu_imm(AluOp::Add, ctx_, field->offset);
    if (!field->is_char()) {
      b_.call(BPF_FUNC_probe_read_kernel, {dst, b_.imm(n), src});  // raw bytes (__u8 saddr[4])
      return Val{.reg = dst, .type = t};
    }
    // Text: copied up to its NUL only. The bytes after it are whatever the
    // trace buffer held before, and in a map key they would split one
    // string into several keys (@ios[WS] twice).
    VregId len = b_.call(BPF_FUNC_probe_read_kernel_str, {dst, b_.imm(n), src});
    // A char array need not be NUL-terminated: when the copy filled the
    // buffer, its last byte is the array's own (its NUL or last char).
    BlockId full = b_.new_block(), done = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, len, n, full, done);
    b_.set_block(full);
    b_.store(1, dst, static_cast<int32_t>(n - 1), b_.load(1, ctx_, static_cast<int32_t>(field->offset + n - 1)));
    b_.jump(done);
    b_.set_block(done);
    return Val{.reg = dst, .type = t};
  }
  // Loads the C type's width (sema's type) from the field's offset: the
  // low bytes, on this little-endian target.
  uint8_t size = t.is_pointer ? 8 : static_cast<uint8_t>(t.size);
  VregId v = b_.load(size, ctx_, static_cast<int32_t>(field->offset));
  return int_val(extend(v, size, t.is_signed), t);
}

Val Lowerer::inc_dec(const Expr& e, const Type& t) {
  const Expr& target = ast_.expr(e.args[0]);
  // A pointer steps by one element.
  const int64_t step = t.is_pointer ? t.pointee_size() : 1;
  const int64_t delta = (e.op == Op::PreInc || e.op == Op::PostInc) ? step : -step;
  bool post = e.op == Op::PostInc || e.op == Op::PostDec;
  if (target.kind == ExprKind::Variable) {
    const int32_t var = p_.var_of[e.args[0]];
    VregId r = var_reg(var);
    VregId old = b_.mov(r);
    set_int_var(var, int_val(b_.alu_imm(AluOp::Add, r, delta), t));
    return int_val(post ? old : b_.mov(r), t);
  }
  VregId key = map_key(e.args[0]);
  // One atomic add on the entry (created when missing): two CPUs stepping
  // the same element both count, and each sees its own value (a limit
  // checked against `@n++` holds exactly).
  VregId old = b_.vreg();
  b_.imm_to(old, 0);
  auto [ptr, join] = map_entry(e.args[0], key);
  b_.mov_to(old, b_.atomic_fetch_add(ptr, 0, b_.imm(delta)));
  b_.jump(join);
  b_.set_block(join);
  return int_val(post ? old : b_.alu_imm(AluOp::Add, old, delta), t);
}

// A USDT argument: a register of struct pt_regs, a constant, or user
// memory at a register plus a displacement.
Val Lowerer::usdt_arg(const sema::UsdtArg& a, const Type& t) {
  switch (a.kind) {
    case sema::UsdtArg::Kind::Constant: return constant(a.value, t);
    case sema::UsdtArg::Kind::Register: {
      VregId v = b_.load(8, ctx_, a.reg);
      return int_val(extend(v, a.size, a.is_signed), t);
    }
    case sema::UsdtArg::Kind::Memory: {
      VregId addr = b_.alu_imm(AluOp::Add, b_.load(8, ctx_, a.reg), a.value);
      VregId tmp = scratch_ptr(alloc(8));
      b_.store_imm(8, tmp, 0, 0);
      checked_call(BPF_FUNC_probe_read_user, {tmp, b_.imm(a.size), addr});
      return int_val(extend(b_.load(static_cast<uint8_t>(a.size), tmp, 0), a.size, a.is_signed), t);
    }
  }
  std::unreachable();
}

// A stack as [stack id][pid]: the frames stay in the stack map and user
// space symbolizes them when it prints.
Val Lowerer::stack_val(const Type& t) {
  VregId map = b_.map_fd(t.stack_mode == sema::StackMode::BuildId ? m_.support.build_id_stacks
                         : t.user                                 ? m_.support.ustacks
                                                                  : m_.support.kstacks);
  VregId id = checked_call(BPF_FUNC_get_stackid, {ctx_, map, b_.imm(t.user ? BPF_F_USER_STACK : 0)});
  uint32_t off = alloc(16);
  VregId rec = scratch_ptr(off);
  b_.store(8, rec, 0, id);
  VregId tgid = b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32);
  b_.store(8, rec, 8, tgid);
  if (t.user && t.stack_mode != sema::StackMode::BuildId && t.stack_mode != sema::StackMode::Raw)
    note_ustack_pid(tgid);
  return Val{.reg = rec, .type = t};
}

// The first user stack of process `tgid`: kUstackPidRecord (ir.h).
void Lowerer::note_ustack_pid(VregId tgid) {
  uint32_t off = alloc(8);
  VregId key = scratch_ptr(off);
  b_.store(4, key, 0, tgid);
  b_.store_imm(4, key, 4, 0);
  VregId r = b_.call(BPF_FUNC_map_update_elem,
                     {b_.map_fd(m_.support.ustack_pids), key, scratch_ptr(off + 4), b_.imm(BPF_NOEXIST)});
  BlockId fresh = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, r, 0, fresh, join);
  b_.set_block(fresh);
  VregId rec = scratch_ptr(alloc(kUstackPidSize));
  b_.store_imm(8, rec, 0, -2);  // kUstackPidRecord
  b_.store(4, rec, 8, tgid);
  b_.store_imm(4, rec, 12, 0);
  submit(rec, kUstackPidSize);
  b_.jump(join);
  b_.set_block(join);
}

// Starts building callback subprogram `cb` (named after this function);
// the returned state goes back to end_callback().
Lowerer::CallerState Lowerer::begin_callback(Function& cb, std::string_view what, uint32_t index) {
  CallerState st{&b_.function(), b_.current(), b_.loc(), vars_, std::move(loops_), ctx_, scratch_, key_slot_,
                 callback_};
  loops_.clear();
  cb.name = fmt::format("{}_{}{}", f_.name, what, index + 1);
  cb.kind = f_.kind;
  b_.switch_to(cb, 0);
  return st;
}

void Lowerer::end_callback(CallerState& st) {
  b_.switch_to(*st.caller, st.resume);
  b_.set_loc(st.loc);
  vars_ = std::move(st.vars);
  loops_ = std::move(st.loops);
  ctx_ = st.ctx;
  scratch_ = st.scratch;
  key_slot_ = st.key_slot;
  callback_ = st.callback;
}

}  // namespace bpfscope::ir::detail

namespace bpfscope::ir {

using detail::Lowerer;

Module lower(const sema::TypedProgram& p, const LowerOptions& options) {
  Module m;
  uint32_t n = static_cast<uint32_t>(p.maps.size());
  m.support = {.ringbuf = n, .scratch = n + 1, .zero = n + 2, .lost = n + 3, .control = n + 4,
               .kstacks = n + 5, .ustacks = n + 6, .failed = n + 7, .build_id_stacks = n + 8,
               .ustack_pids = n + 9, .skb_output = n + 10};
  for (const auto& a : p.actions)
    if ((a.kind == sema::ActionKind::Clear || a.kind == sema::ActionKind::Zero) && a.map >= 0 &&
        m.swap_slot(static_cast<uint32_t>(a.map)) < 0)
      m.swapped.push_back(static_cast<uint32_t>(a.map));
  for (uint32_t u = 0; u < p.units.size(); ++u) {
    const auto& unit = p.units[u];
    Function f;
    f.name = unit.name;
    f.kind = unit.kind;
    Lowerer l(p, m, options, f, unit, unit.targets.size() == 1 ? 0 : -1, m.sites);
    l.run();
    m.scratch_size = std::max(m.scratch_size, l.scratch_used());
    m.zero_size = std::max(m.zero_size, sema::align8(l.zero_needed()));
    m.functions.push_back(std::move(f));
    m.unit_of.push_back(u);
    m.target_of.push_back(unit.targets.size() == 1 ? 0 : -1);
  }
  return m;
}

}  // namespace bpfscope::ir
