// Lowering of function calls: printf and the other actions (records sent
// through the ring buffer), strings, searches, buffers, helper-failure reports.
#include "builtins/builtins.h"
#include "ir/lowerer.h"

namespace bpfscope::ir::detail {

Val Lowerer::call(ExprId id, const Expr& e, const Type& t) {
  // Aggregations are lowered by assign(); functions that sema rejects here
  // (path(), override()) have no lowering.
  const builtins::Function* f = p_.function_of[id];
  if (!f || !f->lower) std::unreachable();
  return f->lower(*this, id, e, t);
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
