// Lowering: typed AST -> IR, one function per program unit (and target).
//
// Memory rules (DESIGN.md, "Codegen rules"):
// - strings, tuples, map keys and async records live in the per-CPU scratch
//   map, never on the 512-byte stack; the stack holds only spills and the
//   4-byte key used to look the scratch value up;
// - every key and record is fully written (string tails zeroed) before use;
// - every map lookup is null-checked before the pointer is used.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>

#include "ir/builder.h"
#include "ir/ir.h"

namespace bpfscope::ir {
namespace {

using lang::Expr;
using lang::ExprId;
using lang::ExprKind;
using lang::kNone;
using lang::Op;
using lang::Stmt;
using lang::StmtId;
using lang::StmtKind;
using sema::Type;
using sema::TypeKind;

// A lowered value. Integers are in `reg`; strings and tuples are addressed by
// `reg` (a pointer) unless they are a literal known at compile time.
struct Val {
  VregId reg = kNoVreg;
  Type type;
  std::optional<std::string> literal;  // string literal bytes (without the NUL)
  std::optional<int64_t> constant;     // integer known at compile time
};

// Copies of at most this many bytes are inlined as loads and stores; longer
// ones are one bpf_probe_read_kernel call.
constexpr uint32_t kInlineCopy = 64;

class Lowerer {
 public:
  Lowerer(const sema::TypedProgram& p, const Module& m, const LowerOptions& o, Function& f,
          const sema::ProgramUnit& unit, int32_t target, std::vector<HelperSite>& sites)
      : p_(p), ast_(*p.ast), m_(m), opts_(o), f_(f), b_(f), unit_(unit), target_(target), sites_(sites) {}

  void run() {
    const auto& probe = ast_.probes[unit_.probe_index];
    b_.set_loc(probe.loc);
    ctx_ = b_.ctx();
    if (unit_.kind != sema::ProbeKind::Begin && unit_.kind != sema::ProbeKind::End) {
      // Stopped probes return at once: user space sets the control word on
      // exit() or a signal, so the maps are frozen before END runs even
      // though the (slow) detach happens later.
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
    if (opts_.filter_pid > 0 && unit_.kind != sema::ProbeKind::Begin && unit_.kind != sema::ProbeKind::End) {
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

  uint32_t scratch_used() const { return scratch_high_; }
  uint32_t zero_needed() const { return zero_needed_; }

 private:
  // Reserves the function's key slot and looks up the scratch memory:
  // scratch = lookup(scratch_map, &0). A failed lookup cannot happen for a
  // per-CPU array, but the verifier needs the check; it returns `fail_ret`.
  void enter_scratch(int64_t fail_ret) {
    key_slot_ = b_.reserve_stack(8);
    VregId key = b_.stack_addr(key_slot_);
    b_.store_imm(4, key, 0, 0);
    VregId map = b_.map_fd(m_.support.scratch);
    scratch_ = b_.call(BPF_FUNC_map_lookup_elem, {map, key});
    BlockId ok = b_.new_block(), fail = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, scratch_, 0, fail, ok);
    b_.set_block(fail);
    b_.ret(fail_ret);
    b_.set_block(ok);
  }

  // Ends the probe (return, exit()): the program returns, or, inside a
  // for-map callback, the callback marks the probe ended in its context and
  // stops the iteration; its caller then ends the probe in turn.
  void end_probe() {
    if (!callback_) {
      b_.ret(0);
      return;
    }
    b_.store_imm(8, callback_->ctx, kLoopEnded, 1);
    b_.jump(callback_->stop);
  }

  // ---- scratch memory ----
  uint32_t alloc(uint32_t size) {
    uint32_t off = scratch_top_;
    scratch_top_ += sema::align8(std::max<uint32_t>(size, 8));
    scratch_high_ = std::max(scratch_high_, scratch_top_);
    return off;
  }
  VregId scratch_ptr(uint32_t off) { return off == 0 ? scratch_ : b_.alu_imm(AluOp::Add, scratch_, off); }

  // ---- statements ----
  void block(const std::vector<StmtId>& body) {
    for (StmtId s : body) {
      if (b_.terminated()) return;
      uint32_t mark = scratch_top_;
      stmt(s);
      scratch_top_ = std::max(mark, vars_top_);
    }
  }

  void stmt(StmtId id) {
    const Stmt& s = ast_.stmt(id);
    b_.set_loc(s.loc);
    switch (s.kind) {
      case StmtKind::Expr: expr(s.expr); return;
      case StmtKind::Assign: assign(s); return;
      case StmtKind::Let: {
        int32_t var = p_.var_of[s.target];
        const Type& t = p_.var_types[var];
        if (s.value != kNone) {
          Val v = expr(s.value);
          // A declared integer type narrower than the value truncates it.
          if (!s.type_name.empty() && t.kind == TypeKind::Int && t.size < 8) v = narrow(v, t);
          assign_var(s.target, v);
        } else if (t.is_int()) {
          b_.imm_to(var_reg(var), 0);
        } else if (t.kind != TypeKind::None) {
          zero(scratch_ptr(var_slot(var)), 0, t.mem_size());
        }
        return;
      }
      case StmtKind::If: {
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
        VregId i = var_reg(p_.for_var_of[s.expr]);
        b_.mov_to(i, materialize_int(expr(s.expr)));
        VregId end = b_.mov(materialize_int(expr(s.range_end)));
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

  // ---- for ($kv : @m) ----
  // The body becomes a callback subprogram for bpf_for_each_map_elem(map,
  // callback, ctx, 0), called as callback(map, key, value, ctx) per element;
  // it returns 0 to continue and 1 to stop (the verifier requires a constant
  // 0 or 1). The callback has its own registers and stack frame, so the
  // caller passes its state in a context struct on its stack:
  //   [program context pointer][probe ended flag][outer integer variables]
  // The callback loads the variables the body uses on entry and stores them
  // back on every exit; the caller reloads them after the call. Strings and
  // tuples live in the per-CPU scratch map at fixed offsets, which the
  // callback looks up again (same CPU: BPF programs do not migrate).
  static constexpr int32_t kLoopCtx = 0, kLoopEnded = 8, kLoopVars = 16;

  void for_map(const Stmt& s) {
    std::vector<int32_t> shared;
    {
      std::set<int32_t> used;
      for (StmtId b : s.body) vars_in_stmt(b, used);
      for (int32_t v : used) {
        auto it = vars_.find(v);
        if (it != vars_.end() && it->second.reg != kNoVreg && p_.var_types[v].is_int()) shared.push_back(v);
      }
    }
    const int32_t ctx_off = b_.reserve_stack(kLoopVars + 8 * static_cast<uint32_t>(shared.size()));
    VregId cs = b_.stack_addr(ctx_off);
    b_.store(8, cs, kLoopCtx, ctx_);
    b_.store_imm(8, cs, kLoopEnded, 0);
    for (size_t k = 0; k < shared.size(); ++k)
      b_.store(8, cs, kLoopVars + static_cast<int32_t>(8 * k), vars_[shared[k]].reg);

    const auto index = static_cast<uint32_t>(subprograms_.size());
    subprograms_.emplace_back();
    lower_callback(s, subprograms_.back(), index, shared);

    b_.call(BPF_FUNC_for_each_map_elem,
            {b_.map_fd(p_.map_of[s.expr]), b_.func_addr(index), cs, b_.imm(0)});
    for (size_t k = 0; k < shared.size(); ++k)
      b_.mov_to(vars_[shared[k]].reg, b_.load(8, cs, kLoopVars + static_cast<int32_t>(8 * k)));
    BlockId ended = b_.new_block(), next = b_.new_block();
    b_.branch_imm(ir::Cond::Ne, b_.load(8, cs, kLoopEnded), 0, ended, next);
    b_.set_block(ended);
    end_probe();
    b_.set_block(next);
  }

  void lower_callback(const Stmt& s, Function& cb, uint32_t index, const std::vector<int32_t>& shared) {
    CallerState saved = begin_callback(cb, "for", index);
    b_.param(0);  // the map
    VregId key = b_.param(1), value = b_.param(2), cs = b_.param(3);
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

    // $kv = (key, value), in scratch.
    const int32_t kv = p_.for_var_of[s.expr];
    const Type& kvt = p_.var_types[kv];
    auto& slot = vars_[kv];
    slot.has_mem = true;
    slot.off = alloc(kvt.mem_size());
    vars_top_ = std::max(vars_top_, scratch_top_);
    VregId dst = scratch_ptr(slot.off);
    copy_bytes(dst, 0, key, kvt.elems[0].mem_size());
    const auto& m = map_info(s.expr);
    if (m.agg != output::AggKind::Plain) {
      // A per-CPU value is this CPU's share only; read it as a probe does,
      // over all CPUs, with the key copy in scratch (bpftrace 0.21+).
      Val total = aggregate_read(s.expr, dst);
      copy_to(dst, kvt.offsets[1], total, kvt.elems[1]);
    } else if (kvt.elems[1].is_int()) {
      b_.store(8, dst, static_cast<int32_t>(kvt.offsets[1]), b_.load(8, value, 0));
    } else {
      copy_bytes(dst, kvt.offsets[1], value, kvt.elems[1].mem_size());
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

  // The scratch variables a statement reads or writes (for a loop body).
  void vars_in_stmt(StmtId id, std::set<int32_t>& out) const {
    const Stmt& s = ast_.stmt(id);
    for (ExprId e : {s.expr, s.range_end, s.target, s.value})
      if (e != kNone) vars_in_expr(e, out);
    for (StmtId b : s.body) vars_in_stmt(b, out);
    for (StmtId b : s.else_body) vars_in_stmt(b, out);
  }

  void vars_in_expr(ExprId id, std::set<int32_t>& out) const {
    if (p_.var_of[id] >= 0) out.insert(p_.var_of[id]);
    for (ExprId a : ast_.expr(id).args) vars_in_expr(a, out);
  }

  void assign(const Stmt& s) {
    const Expr& target = ast_.expr(s.target);
    if (target.kind == ExprKind::Map) {
      const Expr& value = ast_.expr(s.value);
      if (value.kind == ExprKind::Call && sema::is_aggregation(p_.function_of[s.value])) {
        aggregate(s.target, s.value);
        return;
      }
      Val v;
      if (s.op != Op::None) {
        Val old = map_read(s.target);
        Val rhs = expr(s.value);
        v = Val{.reg = arith(s.op, old.reg, rhs, p_.type_of(s.target).is_signed), .type = p_.type_of(s.target)};
      } else {
        v = expr(s.value);
      }
      map_write(s.target, v);
      return;
    }
    if (s.op != Op::None) {
      int32_t var = p_.var_of[s.target];
      Val rhs = expr(s.value);
      VregId r = var_reg(var);
      VregId res = arith(s.op, r, rhs, p_.var_types[var].is_signed);
      b_.mov_to(r, res);
      return;
    }
    assign_var(s.target, expr(s.value));
  }

  VregId var_reg(int32_t var) {
    auto& slot = vars_[var];
    if (slot.reg == kNoVreg) slot.reg = b_.vreg();
    return slot.reg;
  }

  void assign_var(ExprId target, const Val& v) {
    int32_t var = p_.var_of[target];
    const Type& t = p_.var_types[var];
    if (t.is_int()) {
      b_.mov_to(var_reg(var), materialize_int(v));
      return;
    }
    copy_to(scratch_ptr(var_slot(var)), 0, v, t);
  }

  // A non-integer variable's scratch offset, allocated on first use.
  uint32_t var_slot(int32_t var) {
    auto& slot = vars_[var];
    if (!slot.has_mem) {
      slot.has_mem = true;
      slot.off = alloc(p_.var_types[var].mem_size());
      vars_top_ = std::max(vars_top_, scratch_top_);
    }
    return slot.off;
  }

  // ---- conditions ----
  void cond(ExprId id, BlockId t, BlockId f) {
    const Expr& e = ast_.expr(id);
    if (e.kind == ExprKind::Binary) {
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
          if (lt.kind == TypeKind::Array || rt.kind == TypeKind::Array) {
            Val l = expr(e.args[0]);
            Val r = expr(e.args[1]);
            if (e.op == Op::Eq)
              bytes_eq(l, r, lt.size, t, f);
            else
              bytes_eq(l, r, lt.size, f, t);
            return;
          }
          if (lt.is_string() && rt.is_string()) {
            Val l = expr(e.args[0]);
            Val r = expr(e.args[1]);
            if (e.op == Op::Eq)
              string_eq(l, r, t, f);
            else
              string_eq(l, r, f, t);
            return;
          }
          if (lt.is_tuple()) {
            Val l = addressable(expr(e.args[0]));
            Val r = addressable(expr(e.args[1]));
            if (e.op == Op::Eq)
              tuple_eq(l, r, t, f);
            else
              tuple_eq(l, r, f, t);
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

  static ir::Cond compare_cond(Op op, bool is_signed) {
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
  void string_eq(const Val& l, const Val& r, BlockId equal, BlockId differ) {
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
  void tuple_eq(const Val& l, const Val& r, BlockId equal, BlockId differ) {
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

  // Byte arrays are equal when all n bytes agree (zeros included).
  void bytes_eq(const Val& l, const Val& r, uint32_t n, BlockId equal, BlockId differ) {
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
  void compare_bytes(VregId l, VregId r, uint32_t n, BlockId equal, BlockId differ) {
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
  VregId materialize_int(const Val& v) {
    if (v.reg != kNoVreg) return v.reg;
    return b_.imm(v.constant.value_or(0));
  }

  Val int_val(VregId r, const Type& t) { return Val{.reg = r, .type = t}; }

  Val constant(int64_t c, const Type& t) { return Val{.reg = kNoVreg, .type = t, .constant = c}; }

  Val string_literal(std::string s) {
    Type t = Type::string(static_cast<uint32_t>(s.size() + 1));
    return Val{.reg = kNoVreg, .type = t, .literal = std::move(s)};
  }

  // Puts a literal string into scratch so it has an address.
  Val addressable(const Val& v) {
    if (!v.literal) return v;
    uint32_t off = alloc(v.type.mem_size());
    VregId p = scratch_ptr(off);
    copy_to(p, 0, v, v.type);
    return Val{.reg = p, .type = v.type};
  }

  VregId arith(Op op, VregId a, const Val& rhs, bool is_signed) {
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
    if (imm_ok && (alu == AluOp::Div || alu == AluOp::Mod) && *rhs.constant == 0) imm_ok = false;
    if (imm_ok && (alu == AluOp::Lsh || alu == AluOp::Rsh) && (*rhs.constant < 0 || *rhs.constant > 63)) imm_ok = false;
    if (imm_ok) return b_.alu_imm(alu, a, *rhs.constant);
    return b_.alu(alu, a, materialize_int(rhs));
  }

  // Sign- or zero-extends the low `size` bytes of r to 64 bits.
  VregId extend(VregId r, uint32_t size, bool is_signed) {
    if (size >= 8) return r;
    int shift = 64 - static_cast<int>(size) * 8;
    VregId s = b_.alu_imm(AluOp::Lsh, r, shift);
    return b_.alu_imm(is_signed ? AluOp::Arsh : AluOp::Rsh, s, shift);
  }

  Val expr(ExprId id) {
    const Expr& e = ast_.expr(id);
    const Type& t = p_.type_of(id);
    lang::Loc saved = b_.loc();
    b_.set_loc(e.loc);
    Val v = expr_inner(id, e, t);
    b_.set_loc(saved);
    return v;
  }

  Val expr_inner(ExprId id, const Expr& e, const Type& t) {
    switch (e.kind) {
      case ExprKind::Integer: return constant(static_cast<int64_t>(e.ival), t);
      case ExprKind::String: return string_literal(e.sval);
      case ExprKind::Identifier:
        if (p_.const_of[id]) return constant(*p_.const_of[id], t);
        return builtin(id, t);
      case ExprKind::Positional: {
        if (e.ival == 0 || e.ival > p_.positional.size()) return constant(0, t);
        const auto& s = p_.positional[e.ival - 1];
        if (t.is_string()) return string_literal(s);
        return constant(static_cast<int64_t>(std::strtoll(s.c_str(), nullptr, 0)), t);
      }
      case ExprKind::PositionalCount: return constant(static_cast<int64_t>(p_.positional.size()), t);
      case ExprKind::Variable: {
        int32_t var = p_.var_of[id];
        const Type& vt = p_.var_types[var];
        if (vt.is_int()) return int_val(var_reg(var), vt);
        auto& slot = vars_[var];
        return Val{.reg = scratch_ptr(slot.off), .type = vt};
      }
      case ExprKind::Map: return map_read(id);
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
            VregId base = materialize_int(expr(field.args[0]));
            uint32_t off = p_.field_of[e.args[0]].offset;
            return int_val(off ? b_.alu_imm(AluOp::Add, base, off) : base, t);
          }
          default: std::unreachable();
        }
      }
      case ExprKind::Binary: {
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
        if (p_.builtin_of[e.args[0]] == sema::Builtin::Args) return args_field(e, t);
        const Type& base_type = p_.type_of(e.args[0]);
        if (base_type.is_record() || (base_type.is_pointer && base_type.btf_id != 0)) {
          Val base = expr(e.args[0]);
          return read_memory(materialize_int(base), p_.field_of[id], t, base_type.addr_space);
        }
        // Tuple element.
        Val base = expr(e.args[0]);
        base = addressable(base);
        const Type& bt = p_.type_of(e.args[0]);
        size_t idx = bt.is_named_tuple() ? static_cast<size_t>(bt.field_index(e.name)) : std::stoul(e.name);
        uint32_t off = bt.offsets[idx];
        if (t.is_int()) return int_val(b_.load(8, base.reg, static_cast<int32_t>(off)), t);
        return Val{.reg = b_.alu_imm(AluOp::Add, base.reg, off), .type = t};
      }
      case ExprKind::Cast: {
        Val a = expr(e.args[0]);
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
        return narrow(a, t);
      }
      case ExprKind::Tuple: {
        uint32_t off = alloc(t.mem_size());
        VregId p = scratch_ptr(off);
        for (size_t i = 0; i < e.args.size(); ++i) copy_to(p, t.offsets[i], expr(e.args[i]), t.elems[i]);
        return Val{.reg = p, .type = t};
      }
      case ExprKind::IncDec: return inc_dec(e, t);
      case ExprKind::Sizeof:
      case ExprKind::Offsetof: return constant(p_.const_of[id].value_or(0), t);
      case ExprKind::Index: {
        const Type& bt = p_.type_of(e.args[0]);
        Val base = expr(e.args[0]);
        if (bt.is_string()) {
          base = addressable(base);
          VregId c = b_.load(1, base.reg, static_cast<int32_t>(ast_.expr(e.args[1]).ival));
          return int_val(extend(c, 1, true), t);
        }
        if (bt.is_tuple()) {
          base = addressable(base);
          uint32_t off = bt.offsets[ast_.expr(e.args[1]).ival];
          if (t.is_int()) return int_val(b_.load(8, base.reg, static_cast<int32_t>(off)), t);
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
  Val narrow(const Val& a, const Type& t) {
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
  VregId clamped_size(VregId len, uint32_t cap) {
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
  Val scaled(Val n, uint32_t size) {
    if (size == 1) return n;
    if (n.constant) return constant(*n.constant * size, Type::integer(8, true));
    return int_val(b_.alu_imm(AluOp::Mul, materialize_int(n), size), Type::integer(8, true));
  }

  static int arg_number(std::string_view name) { return std::stoi(std::string(name.substr(3))); }

  // The value of an expression sema proved constant (literals, numeric $N).
  int64_t constant_of(ExprId id) {
    Val v = expr(id);
    return v.constant.value_or(0);
  }

  static std::optional<int64_t> fold(Op op, int64_t a, int64_t b) {
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
  Val bool_of(ExprId id) {
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

  Val bool_of_val(const Val& v) {
    if (v.constant) return constant(*v.constant != 0, Type::boolean());
    return int_val(flag(ir::Cond::Ne, v.reg, 0), Type::boolean());
  }

  // 1 when `r c imm` holds, else 0.
  VregId flag(ir::Cond c, VregId r, int64_t imm) {
    VregId out = b_.imm(0);
    BlockId yes = b_.new_block(), join = b_.new_block();
    b_.branch_imm(c, r, imm, yes, join);
    b_.set_block(yes);
    b_.imm_to(out, 1);
    b_.jump(join);
    b_.set_block(join);
    return out;
  }

  Val builtin(ExprId id, const Type& t) {
    switch (p_.builtin_of[id]) {
      case sema::Builtin::None:
      case sema::Builtin::Args: std::unreachable();
      case sema::Builtin::Pid:
        return int_val(b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32), t);
      case sema::Builtin::Tid: return int_val(extend(b_.call(BPF_FUNC_get_current_pid_tgid, {}), 4, false), t);
      case sema::Builtin::Uid: return int_val(extend(b_.call(BPF_FUNC_get_current_uid_gid, {}), 4, false), t);
      case sema::Builtin::Gid:
        return int_val(b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_uid_gid, {}), 32), t);
      case sema::Builtin::Comm: {
        uint32_t off = alloc(16);
        VregId p = scratch_ptr(off);
        b_.call(BPF_FUNC_get_current_comm, {p, b_.imm(16)});
        return Val{.reg = p, .type = t};
      }
      case sema::Builtin::Nsecs: return int_val(b_.call(BPF_FUNC_ktime_get_boot_ns, {}), t);
      case sema::Builtin::Elapsed: {
        VregId now = b_.call(BPF_FUNC_ktime_get_boot_ns, {});
        return int_val(b_.alu(AluOp::Sub, now, b_.imm(static_cast<int64_t>(opts_.start_boot_ns))), t);
      }
      case sema::Builtin::Cpu: return int_val(b_.call(BPF_FUNC_get_smp_processor_id, {}), t);
      case sema::Builtin::Rand: return int_val(b_.call(BPF_FUNC_get_prandom_u32, {}), t);
      case sema::Builtin::Cgroup: return int_val(b_.call(BPF_FUNC_get_current_cgroup_id, {}), t);
      case sema::Builtin::Jiffies: return int_val(b_.call(BPF_FUNC_jiffies64, {}), t);
      case sema::Builtin::Numaid: return int_val(b_.call(BPF_FUNC_get_numa_node_id, {}), t);
      case sema::Builtin::Cpid: return constant(opts_.cpid, t);
      case sema::Builtin::Curtask: return int_val(b_.call(BPF_FUNC_get_current_task, {}), t);
      case sema::Builtin::Ctx: return int_val(ctx_, t);
      case sema::Builtin::Ppid:
      case sema::Builtin::Pcomm: {
        // curtask->real_parent->tgid / ->comm, with offsets from BTF.
        const auto& btf = *p_.btf;
        auto task = btf.find_struct("task_struct");
        auto parent = task ? btf.find_member(*task, "real_parent") : std::nullopt;
        auto field = task ? btf.find_member(*task, p_.builtin_of[id] == sema::Builtin::Ppid ? "tgid" : "comm")
                          : std::nullopt;
        if (!parent || !field) return constant(0, t);  // sema loaded BTF already; cannot happen
        VregId cur = b_.call(BPF_FUNC_get_current_task, {});
        Val p = read_kernel_field(cur, sema::FieldAccess{.offset = parent->bit_offset / 8}, Type::integer(8, false));
        return read_kernel_field(p.reg, sema::FieldAccess{.offset = field->bit_offset / 8}, t);
      }
      case sema::Builtin::Ncpus: return constant(opts_.online_cpus, t);
      case sema::Builtin::Arg: {
        int n = arg_number(ast_.expr(id).name);
        if (unit_.kind == sema::ProbeKind::Usdt) return usdt_arg(target().usdt_args[n], t);
        if (unit_.kind == sema::ProbeKind::Uprobe || unit_.kind == sema::ProbeKind::Kprobe) {
          // x86-64 calling convention, as offsets into struct pt_regs:
          // di, si, dx, cx, r8, r9; further arguments are on the stack.
          constexpr int kArgRegs[] = {112, 104, 96, 88, 72, 64};
          if (n >= 6) return constant(0, t);
          return int_val(b_.load(8, ctx_, kArgRegs[n]), t);
        }
        // A raw tracepoint's context is the array of its u64 arguments.
        return int_val(b_.load(8, ctx_, n * 8), t);
      }
      case sema::Builtin::Retval: {
        if (unit_.kind == sema::ProbeKind::Fexit) {
          // fexit's context: the arguments, then the return value.
          auto params = sema::btf_args(*p_.btf, unit_.kind, target());
          return int_val(b_.load(8, ctx_, static_cast<int32_t>(params ? params->size() * 8 : 0)), t);
        }
        return int_val(b_.load(8, ctx_, 80), t);  // pt_regs->ax
      }
      case sema::Builtin::Kstack:
      case sema::Builtin::Ustack: return stack_val(t);
      case sema::Builtin::Func: {
        Val v = string_literal(target().func);
        v.type = t;
        return v;
      }
      case sema::Builtin::Probe: {
        // One program per target when `probe` is used (sema marks it target-specific).
        const auto& target = unit_.targets[target_ < 0 ? 0 : target_];
        Val v = string_literal(target.name);
        v.type = t;
        return v;
      }
    }
    std::unreachable();
  }

  const sema::AttachTarget& target() const { return unit_.targets[target_ < 0 ? 0 : target_]; }

  Val args_field(const Expr& e, const Type& t) {
    if (auto params = sema::btf_args(*p_.btf, unit_.kind, target())) {
      // The context is the u64 argument array; the BTF prototype gives the
      // position (sema checked the name exists).
      int index = 0;
      for (size_t k = 0; params && k < params->size(); ++k)
        if ((*params)[k].name == e.name) index = static_cast<int>(k);
      VregId v = b_.load(8, ctx_, index * 8);
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
      b_.call(BPF_FUNC_probe_read_kernel, {dst, b_.imm(n), src});
      // A char array need not be NUL-terminated; the capacity keeps one NUL.
      return Val{.reg = dst, .type = t};
    }
    // Loads the C type's width (sema's type) from the field's offset: the
    // low bytes, on this little-endian target.
    uint8_t size = t.is_pointer ? 8 : static_cast<uint8_t>(t.size);
    VregId v = b_.load(size, ctx_, static_cast<int32_t>(field->offset));
    return int_val(extend(v, size, t.is_signed), t);
  }

  Val call(ExprId id, const Expr& e, const Type& t) {
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
      case sema::Function::Printf: {
        std::vector<Arg> args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back({.expr = e.args[i]});
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
        } else {
          args.push_back({.expr = e.args[0]});
        }
        send(p_.action_of[id], args);
        return Val{.type = t};
      }
      case sema::Function::Clear:
      case sema::Function::Zero:
      case sema::Function::Time: send(p_.action_of[id], {}); return Val{.type = t};
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
      case sema::Function::Ntop: {
        uint32_t off = alloc(24);
        VregId rec = scratch_ptr(off);
        const Type& at = p_.type_of(e.args.back());
        int64_t family = at.is_bytes() && at.size == 16 ? 10 : 2;  // AF_INET6 : AF_INET
        if (e.args.size() == 2)
          copy_to(rec, 0, expr(e.args[0]), Type::integer(8, false));
        else
          b_.store_imm(8, rec, 0, static_cast<int32_t>(family));
        Val addr = expr(e.args.back());
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
      case sema::Function::Pton: {
        // Parsed again here (sema checked it): the bytes are a literal.
        unsigned char bytes[16];
        const std::string& text = ast_.expr(e.args[0]).sval;
        bool v4 = t.size == 4;
        inet_pton(v4 ? AF_INET : AF_INET6, text.c_str(), bytes);
        return Val{.reg = kNoVreg, .type = t, .literal = std::string(reinterpret_cast<char*>(bytes), t.size)};
      }
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
      case sema::Function::Cat:
      case sema::Function::System: {
        std::vector<Arg> args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back({.expr = e.args[i]});
        send(p_.action_of[id], args);
        return Val{.type = t};
      }
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
      case sema::Function::Errorf:
      case sema::Function::Warnf: {
        std::vector<Arg> args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back({.expr = e.args[i]});
        send(p_.action_of[id], args);
        return Val{.type = t};
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
      case sema::Function::PercpuKaddr:
      case sema::Function::Path:
      case sema::Function::Override: std::unreachable();  // sema rejects them
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

  // strstr(h, n): the index of the first occurrence of n in h, or -1.
  // The haystack (and a needle that is not a short literal) are copied to
  // scratch; bpf_loop calls a callback once per start position i, which
  // compares the needle there: a short literal byte by byte as immediates,
  // else with a second bpf_loop over the needle's bytes. The verifier checks
  // each callback once, whatever the string sizes; plain loops would make it
  // walk every iteration of both. Results go through stack slots of the
  // calling frame.
  static constexpr uint32_t kUnrolledNeedle = 64;

  // The outcome of comparing one needle byte, kept in the inner loop's
  // context: the needle ended (found), the haystack ended (no match here or
  // later), or the bytes differ (try the next start).
  static constexpr int32_t kMatchFound = 1, kMatchStop = 2, kMatchNext = 3;

  Val str_search(const Expr& e) {
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
  static int read_helper(sema::AddrSpace space, bool str) {
    switch (space) {
      case sema::AddrSpace::User: return str ? BPF_FUNC_probe_read_user_str : BPF_FUNC_probe_read_user;
      case sema::AddrSpace::Kernel: return str ? BPF_FUNC_probe_read_kernel_str : BPF_FUNC_probe_read_kernel;
      case sema::AddrSpace::None: return str ? BPF_FUNC_probe_read_str : BPF_FUNC_probe_read;
    }
    std::unreachable();
  }

  // buf(): [u64 length][bytes], the length at most the capacity t.size.
  Val buf_val(const Expr& e, const Type& t) {
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
  void join(const Expr& e, const sema::Action& a, int32_t action) {
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

  // Sends an async record [action id][args] through the ring buffer, counting
  // it in the lost map when the ring buffer is full.
  // An argument of a record: an expression, evaluated straight into the
  // record where it can be, or a value already lowered.
  struct Arg {
    ExprId expr = kNone;
    Val val;
  };

  void send(int32_t action, const std::vector<Arg>& args) {
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
  void submit(VregId rec, uint32_t size) {
    VregId r = b_.call(BPF_FUNC_ringbuf_output, {b_.map_fd(m_.support.ringbuf), rec, b_.imm(size), b_.imm(0)});
    BlockId lost = b_.new_block(), counted = b_.new_block(), join = b_.new_block();
    b_.branch_imm(ir::Cond::Ne, r, 0, lost, join);
    b_.set_block(lost);
    VregId key = b_.stack_addr(key_slot_);
    b_.store_imm(4, key, 0, 0);
    VregId ptr = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(m_.support.lost), key});
    b_.branch_imm(ir::Cond::Eq, ptr, 0, join, counted);
    b_.set_block(counted);
    b_.atomic_add(ptr, 0, b_.imm(1));
    b_.jump(join);
    b_.set_block(join);
  }

  // ---- helper failures (HelperSite) ----
  uint32_t add_site(int helper, int32_t map = -1) {
    sites_.push_back({.helper = helper, .loc = b_.loc(), .map = map});
    return static_cast<uint32_t>(sites_.size() - 1);
  }

  // Sends [kHelperErrorRecord][site][return code] for a failed call.
  void send_helper_error(uint32_t site, VregId ret) {
    VregId rec = scratch_ptr(alloc(kHelperErrorSize));
    b_.store_imm(8, rec, 0, -1);  // kHelperErrorRecord
    b_.store_imm(4, rec, 8, site);
    b_.store(4, rec, 12, ret);
    submit(rec, kHelperErrorSize);
  }

  // A probe read or get_stackid: with -k, a negative return is reported;
  // without it the call is all there is.
  VregId checked_call(int helper, std::vector<VregId> args) {
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

  // bpf_map_update_elem into script map `map`. A failure (the map is full) is
  // counted in the map's slot of the failed map, and the first one on each
  // CPU (every one with -k) is sent as a record; -EEXIST, an insert that
  // raced another CPU's, is no failure.
  void map_update(int32_t map, VregId key, VregId val, int flags) {
    VregId r = b_.call(BPF_FUNC_map_update_elem, {b_.map_fd(map), key, val, b_.imm(flags)});
    uint32_t site = add_site(BPF_FUNC_map_update_elem, map);
    BlockId fail = b_.new_block(), counted = b_.new_block(), join = b_.new_block();
    b_.branch_imm(ir::Cond::SGe, r, 0, join, fail);
    b_.set_block(fail);
    if (flags == BPF_NOEXIST) {
      BlockId real = b_.new_block();
      b_.branch_imm(ir::Cond::Eq, r, -EEXIST, join, real);
      b_.set_block(real);
    }
    VregId key_addr = b_.stack_addr(key_slot_);
    b_.store_imm(4, key_addr, 0, map);
    VregId count = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(m_.support.failed), key_addr});
    b_.branch_imm(ir::Cond::Eq, count, 0, join, counted);
    b_.set_block(counted);
    VregId before = b_.load(8, count, 0);
    b_.atomic_add(count, 0, b_.imm(1));
    if (!opts_.helper_errors) {
      BlockId first = b_.new_block();
      b_.branch_imm(ir::Cond::Ne, before, 0, join, first);
      b_.set_block(first);
    }
    send_helper_error(site, r);
    b_.jump(join);
    b_.set_block(join);
  }

  // ---- maps ----
  const sema::MapInfo& map_info(ExprId id) const { return p_.maps[p_.map_of[id]]; }

  // Builds the key of a Map expression in scratch and returns its address.
  VregId map_key(ExprId id) {
    const Expr& e = ast_.expr(id);
    const auto& m = map_info(id);
    uint32_t off = alloc(m.key_size);
    VregId p = scratch_ptr(off);
    if (!m.keyed) {
      b_.store_imm(8, p, 0, 0);
      return p;
    }
    if (e.args.size() == 1) {
      store_expr(p, 0, e.args[0], m.key);
    } else {
      for (size_t i = 0; i < e.args.size(); ++i) store_expr(p, m.key.offsets[i], e.args[i], m.key.elems[i]);
    }
    return p;
  }

  Val map_read(ExprId id) { return map_read_key(id, map_key(id)); }

  Val map_read_key(ExprId id, VregId key) {
    const auto& m = map_info(id);
    if (m.agg != output::AggKind::Plain) return aggregate_read(id, key);
    VregId ptr = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(p_.map_of[id]), key});
    BlockId found = b_.new_block(), missing = b_.new_block(), join = b_.new_block();
    if (m.value.is_int()) {
      VregId out = b_.vreg();
      b_.branch_imm(ir::Cond::Eq, ptr, 0, missing, found);
      b_.set_block(found);
      b_.mov_to(out, b_.load(8, ptr, 0));
      b_.jump(join);
      b_.set_block(missing);
      b_.imm_to(out, 0);
      b_.jump(join);
      b_.set_block(join);
      return int_val(out, m.value);
    }
    // Strings and tuples: copy into scratch, or zeros when missing.
    uint32_t off = alloc(m.value.mem_size());
    VregId dst = scratch_ptr(off);
    b_.branch_imm(ir::Cond::Eq, ptr, 0, missing, found);
    b_.set_block(found);
    copy_bytes(dst, 0, ptr, m.value.mem_size());
    b_.jump(join);
    b_.set_block(missing);
    zero(dst, 0, m.value.mem_size());
    b_.jump(join);
    b_.set_block(join);
    return Val{.reg = dst, .type = m.value};
  }

  // The value of a per-CPU aggregation as bpftrace reads it in a probe:
  // count and sum add up the CPUs, min and max combine the CPUs that saw a
  // value, avg divides the totals. bpf_map_lookup_percpu_elem (kernel 6.0)
  // reads each CPU's copy; the loop over CPUs is unrolled.
  Val aggregate_read(ExprId id, VregId key) {
    const auto& m = map_info(id);
    const Type t = p_.type_of(id);
    VregId acc = b_.imm(0), count = b_.imm(0), seen = b_.imm(0);
    bool s = m.value.is_signed;
    for (uint32_t cpu = 0; cpu < opts_.possible_cpus; ++cpu) {
      VregId ptr = b_.call(BPF_FUNC_map_lookup_percpu_elem, {b_.map_fd(p_.map_of[id]), key, b_.imm(cpu)});
      BlockId have = b_.new_block(), next = b_.new_block();
      b_.branch_imm(ir::Cond::Eq, ptr, 0, next, have);
      b_.set_block(have);
      VregId v = b_.load(8, ptr, 0);
      switch (m.agg) {
        case output::AggKind::Count:
        case output::AggKind::Sum: b_.mov_to(acc, b_.alu(AluOp::Add, acc, v)); break;
        case output::AggKind::Avg:
          b_.mov_to(count, b_.alu(AluOp::Add, count, v));
          b_.mov_to(acc, b_.alu(AluOp::Add, acc, b_.load(8, ptr, 8)));
          break;
        case output::AggKind::Min:
        case output::AggKind::Max: {
          // {value, set}: skip CPUs that saw no value.
          VregId set = b_.load(8, ptr, 8);
          BlockId check = b_.new_block(), take = b_.new_block(), first = b_.new_block();
          b_.branch_imm(ir::Cond::Eq, set, 0, next, first);
          b_.set_block(first);
          b_.branch_imm(ir::Cond::Eq, seen, 0, take, check);
          b_.set_block(check);
          ir::Cond better = m.agg == output::AggKind::Min ? (s ? ir::Cond::SLt : ir::Cond::Lt)
                                                          : (s ? ir::Cond::SGt : ir::Cond::Gt);
          b_.branch(better, v, acc, take, next);
          b_.set_block(take);
          b_.mov_to(acc, v);
          b_.imm_to(seen, 1);
          break;
        }
        case output::AggKind::Plain:
        case output::AggKind::Stats:
        case output::AggKind::Hist:
        case output::AggKind::LHist: std::unreachable();  // rejected by sema
      }
      b_.jump(next);
      b_.set_block(next);
    }
    if (m.agg == output::AggKind::Avg) {
      // total / count, truncated toward zero like bpftrace's user-space average.
      BlockId nonzero = b_.new_block(), join = b_.new_block();
      VregId out = b_.imm(0);
      b_.branch_imm(ir::Cond::Eq, count, 0, join, nonzero);
      b_.set_block(nonzero);
      if (s) {
        BlockId neg = b_.new_block(), pos = b_.new_block();
        b_.branch_imm(ir::Cond::SLt, acc, 0, neg, pos);
        b_.set_block(neg);
        VregId q = b_.alu(AluOp::Div, b_.alu_imm(AluOp::Neg, acc, 0), count);
        b_.mov_to(out, b_.alu_imm(AluOp::Neg, q, 0));
        b_.jump(join);
        b_.set_block(pos);
      }
      b_.mov_to(out, b_.alu(AluOp::Div, acc, count));
      b_.jump(join);
      b_.set_block(join);
      return int_val(out, t);
    }
    return int_val(acc, t);
  }

  void map_write(ExprId id, const Val& v) { map_write_key(id, map_key(id), v); }

  void map_write_key(ExprId id, VregId key, const Val& v) {
    const auto& m = map_info(id);
    uint32_t off = alloc(m.value_size);
    VregId val = scratch_ptr(off);
    copy_to(val, 0, v, m.value);
    map_update(p_.map_of[id], key, val, BPF_ANY);
  }

  // Looks up the entry for key, inserting a zeroed one when missing. Leaves
  // the builder in the block where the pointer is known non-null; the caller
  // continues there and must finish with jump(join) to the returned block.
  std::pair<VregId, BlockId> map_entry(ExprId id, VregId key) {
    zero_needed_ = std::max(zero_needed_, map_info(id).value_size);
    VregId map = b_.map_fd(p_.map_of[id]);
    VregId ptr = b_.vreg();
    b_.mov_to(ptr, b_.call(BPF_FUNC_map_lookup_elem, {map, key}));
    BlockId have = b_.new_block(), insert = b_.new_block(), join = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, ptr, 0, insert, have);
    b_.set_block(insert);
    VregId zkey = b_.stack_addr(key_slot_);
    b_.store_imm(4, zkey, 0, 0);
    VregId zptr = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(m_.support.zero), zkey});
    BlockId zok = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, zptr, 0, join, zok);
    b_.set_block(zok);
    map_update(p_.map_of[id], key, zptr, BPF_NOEXIST);
    b_.mov_to(ptr, b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(p_.map_of[id]), key}));
    b_.branch_imm(ir::Cond::Eq, ptr, 0, join, have);
    b_.set_block(have);
    return {ptr, join};
  }

  void aggregate(ExprId target, ExprId call_id) {
    const Expr& call = ast_.expr(call_id);
    const auto& m = map_info(target);
    Val arg;
    if (!call.args.empty()) arg = expr(call.args[0]);
    VregId key = map_key(target);
    VregId v = call.args.empty() ? kNoVreg : materialize_int(arg);
    b_.set_loc(call.loc);
    auto [ptr, join] = map_entry(target, key);
    switch (m.agg) {
      case output::AggKind::Plain: std::unreachable();
      case output::AggKind::Count: b_.atomic_add(ptr, 0, b_.imm(1)); break;
      case output::AggKind::Sum: b_.atomic_add(ptr, 0, v); break;
      case output::AggKind::Avg:
      case output::AggKind::Stats:
        b_.atomic_add(ptr, 0, b_.imm(1));
        b_.atomic_add(ptr, 8, v);
        break;
      case output::AggKind::Min:
      case output::AggKind::Max: {
        // {value, set}: per-CPU, so a plain compare-and-store is enough.
        VregId cur = b_.load(8, ptr, 0);
        VregId set = b_.load(8, ptr, 8);
        BlockId write = b_.new_block(), check = b_.new_block();
        b_.branch_imm(ir::Cond::Eq, set, 0, write, check);
        b_.set_block(check);
        bool s = m.value.is_signed;
        ir::Cond better = m.agg == output::AggKind::Min ? (s ? ir::Cond::SLt : ir::Cond::Lt)
                                                        : (s ? ir::Cond::SGt : ir::Cond::Gt);
        b_.branch(better, v, cur, write, join);
        b_.set_block(write);
        b_.store(8, ptr, 0, v);
        b_.store_imm(8, ptr, 8, 1);
        break;
      }
      case output::AggKind::Hist: {
        VregId idx = hist_index(v, m.hist.bits, m.value.is_signed);
        bucket_add(ptr, idx, output::hist_bucket_count(m.hist.bits));
        break;
      }
      case output::AggKind::LHist: {
        VregId idx = lhist_index(v, m.hist, m.value.is_signed);
        bucket_add(ptr, idx, output::lhist_bucket_count(m.hist.min, m.hist.max, m.hist.step));
        break;
      }
    }
    b_.jump(join);
    b_.set_block(join);
  }

  // ptr[idx] += 1, with idx clamped so the verifier sees it in bounds.
  void bucket_add(VregId ptr, VregId idx, uint32_t count) {
    BlockId clamp = b_.new_block(), ok = b_.new_block();
    b_.branch_imm(ir::Cond::Gt, idx, count - 1, clamp, ok);
    b_.set_block(clamp);
    b_.imm_to(idx, count - 1);
    b_.jump(ok);
    b_.set_block(ok);
    VregId byte_off = b_.alu_imm(AluOp::Lsh, idx, 3);
    VregId slot = b_.alu(AluOp::Add, ptr, byte_off);
    b_.atomic_add(slot, 0, b_.imm(1));
  }

  // The log2 bucket (output::hist_index with bits = 0): 0 for negatives, 1
  // for 0, and floor(log2(v)) + 2 above.
  VregId hist_index(VregId v, int bits, bool is_signed) {
    VregId idx = b_.vreg();
    BlockId join = b_.new_block();
    if (is_signed) {
      BlockId neg = b_.new_block(), nonneg = b_.new_block();
      b_.branch_imm(ir::Cond::SLt, v, 0, neg, nonneg);
      b_.set_block(neg);
      b_.imm_to(idx, 0);
      b_.jump(join);
      b_.set_block(nonneg);
    }
    BlockId zero_b = b_.new_block(), pos = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, v, 0, zero_b, pos);
    b_.set_block(zero_b);
    b_.imm_to(idx, 1);
    b_.jump(join);
    b_.set_block(pos);
    // l = floor(log2(v)) by binary search over the bit width.
    VregId n = b_.mov(v);
    VregId l = b_.imm(0);
    for (int shift : {32, 16, 8, 4, 2, 1}) {
      BlockId big = b_.new_block(), next = b_.new_block();
      VregId limit = b_.imm(static_cast<int64_t>(1ull << shift));
      b_.branch(ir::Cond::Ge, n, limit, big, next);
      b_.set_block(big);
      b_.mov_to(n, b_.alu_imm(AluOp::Rsh, n, shift));
      b_.mov_to(l, b_.alu_imm(AluOp::Add, l, shift));
      b_.jump(next);
      b_.set_block(next);
    }
    if (bits == 0) {
      b_.mov_to(idx, b_.alu_imm(AluOp::Add, l, 2));
    } else {
      // With 2^bits sub-buckets per power of two (output::hist_index): values
      // below 2^(bits+1) have their own bucket (index v + 1); above, the
      // bucket is the power's base index plus the next `bits` bits of v.
      BlockId small = b_.new_block(), large = b_.new_block();
      b_.branch_imm(ir::Cond::Lt, l, bits + 1, small, large);
      b_.set_block(small);
      b_.mov_to(idx, b_.alu_imm(AluOp::Add, v, 1));
      b_.jump(join);
      b_.set_block(large);
      // sub = (v >> (l - bits)) & ((1 << bits) - 1)
      VregId sh = b_.alu_imm(AluOp::Sub, l, bits);
      VregId sub = b_.alu_imm(AluOp::And, b_.alu(AluOp::Rsh, v, sh), (1 << bits) - 1);
      // index = ((sh + 1) << bits) + sub + 1, as output::hist_index.
      VregId base = b_.alu_imm(AluOp::Lsh, b_.alu_imm(AluOp::Add, sh, 1), bits);
      VregId sum = b_.alu(AluOp::Add, base, sub);
      b_.mov_to(idx, b_.alu_imm(AluOp::Add, sum, 1));
    }
    b_.jump(join);
    b_.set_block(join);
    return idx;
  }

  VregId lhist_index(VregId v, const output::HistParams& h, bool is_signed) {
    uint32_t count = output::lhist_bucket_count(h.min, h.max, h.step);
    VregId idx = b_.vreg();
    BlockId below = b_.new_block(), check_max = b_.new_block(), above = b_.new_block(), inside = b_.new_block(),
            join = b_.new_block();
    ir::Cond lt = is_signed ? ir::Cond::SLt : ir::Cond::Lt;
    ir::Cond ge = is_signed ? ir::Cond::SGe : ir::Cond::Ge;
    b_.branch(lt, v, b_.imm(h.min), below, check_max);
    b_.set_block(below);
    b_.imm_to(idx, 0);
    b_.jump(join);
    b_.set_block(check_max);
    b_.branch(ge, v, b_.imm(h.max), above, inside);
    b_.set_block(above);
    b_.imm_to(idx, count - 1);
    b_.jump(join);
    b_.set_block(inside);
    VregId rel = b_.alu(AluOp::Sub, v, b_.imm(h.min));
    VregId q = b_.alu(AluOp::Div, rel, b_.imm(h.step));
    b_.mov_to(idx, b_.alu_imm(AluOp::Add, q, 1));
    b_.jump(join);
    b_.set_block(join);
    return idx;
  }

  Val inc_dec(const Expr& e, const Type& t) {
    const Expr& target = ast_.expr(e.args[0]);
    int64_t delta = (e.op == Op::PreInc || e.op == Op::PostInc) ? 1 : -1;
    bool post = e.op == Op::PostInc || e.op == Op::PostDec;
    if (target.kind == ExprKind::Variable) {
      VregId r = var_reg(p_.var_of[e.args[0]]);
      VregId old = b_.mov(r);
      b_.mov_to(r, b_.alu_imm(AluOp::Add, r, delta));
      return int_val(post ? old : b_.mov(r), t);
    }
    VregId key = map_key(e.args[0]);
    Val old = map_read_key(e.args[0], key);
    VregId nv = b_.alu_imm(AluOp::Add, old.reg, delta);
    map_write_key(e.args[0], key, int_val(nv, t));
    return int_val(post ? old.reg : nv, t);
  }

  // A USDT argument: a register of struct pt_regs, a constant, or user
  // memory at a register plus a displacement.
  Val usdt_arg(const sema::UsdtArg& a, const Type& t) {
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
  Val stack_val(const Type& t) {
    VregId map = b_.map_fd(t.user ? m_.support.ustacks : m_.support.kstacks);
    VregId id = checked_call(BPF_FUNC_get_stackid, {ctx_, map, b_.imm(t.user ? BPF_F_USER_STACK : 0)});
    uint32_t off = alloc(16);
    VregId rec = scratch_ptr(off);
    b_.store(8, rec, 0, id);
    b_.store(8, rec, 8, b_.alu_imm(AluOp::Rsh, b_.call(BPF_FUNC_get_current_pid_tgid, {}), 32));
    return Val{.reg = rec, .type = t};
  }

  // Reads a field of a kernel struct at base + f.offset with
  // bpf_probe_read_kernel (which zero-fills on a fault, so a NULL base reads
  // as 0). Structs are not read: their address is the value.
  Val read_kernel_field(VregId base, const sema::FieldAccess& f, const Type& t) {
    return read_memory(base, f, t, sema::AddrSpace::Kernel);
  }

  // Reads a value of type t at base + f.offset in kernel or user memory
  // (records are only their address).
  Val read_memory(VregId base, const sema::FieldAccess& f, const Type& t, sema::AddrSpace space) {
    VregId addr = f.offset ? b_.alu_imm(AluOp::Add, base, f.offset) : base;
    if (t.is_record()) return Val{.reg = addr, .type = t};
    int helper = space == sema::AddrSpace::User ? BPF_FUNC_probe_read_user : BPF_FUNC_probe_read_kernel;
    if (t.is_string()) {
      uint32_t off = alloc(t.mem_size());
      VregId buf = scratch_ptr(off);
      zero(buf, 0, t.mem_size());
      checked_call(helper, {buf, b_.imm(t.size), addr});
      return Val{.reg = buf, .type = t};
    }
    uint32_t size = f.bits ? (f.shift + f.bits + 7) / 8 : t.is_pointer ? 8 : t.size;
    uint32_t off = alloc(8);
    VregId tmp = scratch_ptr(off);
    b_.store_imm(8, tmp, 0, 0);
    checked_call(helper, {tmp, b_.imm(size), addr});
    if (f.bits) {
      VregId v = b_.load(8, tmp, 0);
      if (f.shift) v = b_.alu_imm(AluOp::Rsh, v, f.shift);
      // Keep the low `bits` bits.
      VregId hi = b_.alu_imm(AluOp::Lsh, v, 64 - f.bits);
      return int_val(b_.alu_imm(AluOp::Rsh, hi, 64 - f.bits), t);
    }
    uint8_t width = t.is_pointer ? 8 : static_cast<uint8_t>(t.size);
    return int_val(extend(b_.load(width, tmp, 0), width, t.is_signed), t);
  }

  // ---- memory ----
  // Evaluates an expression into dst + off as type `to`. Strings that a
  // helper writes (comm) go straight to their destination instead of through
  // a temporary and a copy.
  void store_expr(VregId dst, uint32_t off, ExprId id, const Type& to) {
    const Expr& e = ast_.expr(id);
    if (e.kind == ExprKind::Identifier && p_.builtin_of[id] == sema::Builtin::Comm && to.is_string() &&
        to.size >= 16) {
      lang::Loc saved = b_.loc();
      b_.set_loc(e.loc);
      VregId d = off == 0 ? dst : b_.alu_imm(AluOp::Add, dst, off);
      b_.call(BPF_FUNC_get_current_comm, {d, b_.imm(16)});
      if (to.mem_size() > 16) zero(dst, off + 16, to.mem_size() - 16);
      b_.set_loc(saved);
      return;
    }
    copy_to(dst, off, expr(id), to);
  }

  // Writes v, of type `from` (v.type), into dst + off as type `to`.
  void copy_to(VregId dst, uint32_t off, const Val& v, const Type& to) {
    if (to.is_int()) {
      if (v.constant && *v.constant >= INT32_MIN && *v.constant <= INT32_MAX) {
        b_.store_imm(8, dst, static_cast<int32_t>(off), static_cast<int32_t>(*v.constant));
      } else {
        b_.store(8, dst, static_cast<int32_t>(off), materialize_int(v));
      }
      return;
    }
    if (to.is_string()) {
      uint32_t cap = to.mem_size();
      if (v.literal) {
        // The literal bytes, a NUL, and zeros to the end of the slot.
        std::string bytes = *v.literal;
        bytes.resize(cap, '\0');
        if (v.literal->size() >= to.size) bytes[to.size - 1] = '\0';
        for (uint32_t i = 0; i < cap; i += 4) {
          int32_t word;
          std::memcpy(&word, bytes.data() + i, 4);
          b_.store_imm(4, dst, static_cast<int32_t>(off + i), word);
        }
        return;
      }
      uint32_t n = std::min(v.type.mem_size(), cap);
      copy_bytes(dst, off, v.reg, n);
      if (n < cap) zero(dst, off + n, cap - n);
      return;
    }
    if (to.kind == TypeKind::Array && v.literal) {
      std::string bytes = *v.literal;
      bytes.resize(to.mem_size(), '\0');
      for (uint32_t i = 0; i < bytes.size(); i += 4) {
        int32_t word;
        std::memcpy(&word, bytes.data() + i, 4);
        b_.store_imm(4, dst, static_cast<int32_t>(off + i), word);
      }
      return;
    }
    if (to.kind == TypeKind::Buffer && v.type.size < to.size) {
      // A smaller buffer into a larger slot: its length and bytes, then zeros.
      copy_bytes(dst, off, v.reg, v.type.mem_size());
      zero(dst, off + v.type.mem_size(), to.mem_size() - v.type.mem_size());
      return;
    }
    if (to.kind == TypeKind::Inet || to.kind == TypeKind::Stack || to.kind == TypeKind::Symbol ||
        to.kind == TypeKind::Array || to.kind == TypeKind::Buffer || to.kind == TypeKind::MacAddr ||
        to.kind == TypeKind::Timestamp || to.kind == TypeKind::Named) {
      copy_bytes(dst, off, v.reg, to.mem_size());
      return;
    }
    if (to.is_tuple()) {
      if (v.type.is_tuple() && v.type == to) {
        copy_bytes(dst, off, v.reg, to.mem_size());
        return;
      }
      // Element-wise with widening (e.g. string[4] into string[16]); a
      // record's fields go to the slot of the same name.
      for (size_t i = 0; i < to.elems.size(); ++i)
        copy_to(dst, off + to.offsets[i], tuple_elem(v, to.is_named_tuple() ? v.type.field_index(to.names[i]) : i),
                to.elems[i]);
      return;
    }
  }

  // Element i of an addressed tuple: integers loaded, others by address.
  Val tuple_elem(const Val& tuple, size_t i) {
    const Type& el = tuple.type.elems[i];
    const int32_t off = static_cast<int32_t>(tuple.type.offsets[i]);
    if (el.is_int()) return Val{.reg = b_.load(8, tuple.reg, off), .type = el};
    return Val{.reg = off ? b_.alu_imm(AluOp::Add, tuple.reg, off) : tuple.reg, .type = el};
  }

  void copy_bytes(VregId dst, uint32_t off, VregId src, uint32_t n) {
    if (n <= kInlineCopy) {
      for (uint32_t i = 0; i < n; i += 8) {
        VregId w = b_.load(8, src, static_cast<int32_t>(i));
        b_.store(8, dst, static_cast<int32_t>(off + i), w);
      }
      return;
    }
    VregId d = off == 0 ? dst : b_.alu_imm(AluOp::Add, dst, off);
    b_.call(BPF_FUNC_probe_read_kernel, {d, b_.imm(n), src});
  }

  void zero(VregId dst, uint32_t off, uint32_t n) {
    zero_needed_ = std::max(zero_needed_, n);
    if (n <= kInlineCopy) {
      for (uint32_t i = 0; i < n; i += 8) b_.store_imm(8, dst, static_cast<int32_t>(off + i), 0);
      return;
    }
    VregId zkey = b_.stack_addr(key_slot_);
    b_.store_imm(4, zkey, 0, 0);
    VregId zptr = b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(m_.support.zero), zkey});
    BlockId ok = b_.new_block(), join = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, zptr, 0, join, ok);
    b_.set_block(ok);
    copy_bytes(dst, off, zptr, n);
    b_.jump(join);
    b_.set_block(join);
  }

  const sema::TypedProgram& p_;
  const lang::Program& ast_;
  const Module& m_;
  const LowerOptions& opts_;
  Function& f_;
  Builder b_;
  const sema::ProgramUnit& unit_;
  int32_t target_;
  std::vector<HelperSite>& sites_;
  VregId ctx_ = kNoVreg;
  VregId scratch_ = kNoVreg;
  int32_t key_slot_ = 0;
  uint32_t scratch_top_ = 0;
  uint32_t scratch_high_ = 8;
  uint32_t vars_top_ = 0;
  uint32_t zero_needed_ = 8;
  struct Loop {
    BlockId next;  // continue
    BlockId exit;  // break
  };
  std::vector<Loop> loops_;
  struct VarSlot {
    VregId reg = kNoVreg;
    bool has_mem = false;
    uint32_t off = 0;
  };
  std::unordered_map<int32_t, VarSlot> vars_;
  // Inside a for-map body: the callback's context pointer and the block
  // that stops the iteration (return 1).
  struct Callback {
    VregId ctx;
    BlockId stop;
  };
  const Callback* callback_ = nullptr;
  std::deque<Function> subprograms_;  // by index (FuncAddr); a deque keeps references stable

  // The per-function state of the function being lowered, while a callback
  // subprogram is built (for-map bodies, bpf_loop callbacks).
  struct CallerState {
    Function* caller;
    BlockId resume;
    lang::Loc loc;
    std::unordered_map<int32_t, VarSlot> vars;
    std::vector<Loop> loops;
    VregId ctx, scratch;
    int32_t key_slot;
    const Callback* callback;
  };

  // Starts building callback subprogram `cb` (named after this function);
  // the returned state goes back to end_callback().
  CallerState begin_callback(Function& cb, std::string_view what, uint32_t index) {
    CallerState st{&b_.function(), b_.current(), b_.loc(), vars_, std::move(loops_), ctx_, scratch_, key_slot_,
                   callback_};
    loops_.clear();
    cb.name = fmt::format("{}_{}{}", f_.name, what, index + 1);
    cb.kind = f_.kind;
    b_.switch_to(cb, 0);
    return st;
  }

  void end_callback(CallerState& st) {
    b_.switch_to(*st.caller, st.resume);
    b_.set_loc(st.loc);
    vars_ = std::move(st.vars);
    loops_ = std::move(st.loops);
    ctx_ = st.ctx;
    scratch_ = st.scratch;
    key_slot_ = st.key_slot;
    callback_ = st.callback;
  }
};

}  // namespace

Module lower(const sema::TypedProgram& p, const LowerOptions& options) {
  Module m;
  uint32_t n = static_cast<uint32_t>(p.maps.size());
  m.support = {.ringbuf = n, .scratch = n + 1, .zero = n + 2, .lost = n + 3, .control = n + 4,
               .kstacks = n + 5, .ustacks = n + 6, .failed = n + 7};
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
