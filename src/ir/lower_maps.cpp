// Lowering of map reads and writes, per-CPU aggregations (hist/lhist
// buckets), and memory: kernel and user reads, copies, zeroing.
#include "builtins/builtins.h"
#include "ir/lowerer.h"

namespace bpfscope::ir::detail {

// bpf_map_update_elem into script map `map`. A failure (the map is full) is
// counted in the map's slot of the failed map, and the first one on each
// CPU (every one with -k) is sent as a record; -EEXIST, an insert that
// raced another CPU's, is no failure.
void Lowerer::map_update(int32_t map, VregId key, VregId val, int flags, VregId ptr) {
  if (ptr == kNoVreg) ptr = map_ptr(static_cast<uint32_t>(map));
  VregId r = b_.call(BPF_FUNC_map_update_elem, {ptr, key, val, b_.imm(flags)});
  uint32_t site = add_site(BPF_FUNC_map_update_elem, map);
  BlockId fail = b_.new_block(), counted = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::SGe, r, 0, join, fail);
  b_.set_block(fail);
  if (flags == BPF_NOEXIST) {
    BlockId real = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, r, -EEXIST, join, real);
    b_.set_block(real);
  }
  VregId count = array_elem(m_.support.failed, map);
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

// Builds the key of a Map expression in scratch and returns its address.
VregId Lowerer::map_key(ExprId id) {
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
    if (m.key.has_holes()) zero(p, 0, m.key_size);
    for (size_t i = 0; i < e.args.size(); ++i) store_expr(p, m.key.offsets[i], e.args[i], m.key.elems[i], true);
  }
  return p;
}

Val Lowerer::map_read_key(ExprId id, VregId key, bool report_missing) {
  const auto& m = map_info(id);
  if (m.agg != output::AggKind::Plain) return aggregate_read(id, key);
  VregId ptr = b_.call(BPF_FUNC_map_lookup_elem, {map_ptr(p_.map_of[id]), key});
  BlockId found = b_.new_block(), missing = b_.new_block(), join = b_.new_block();
  if (report_missing && opts_.helper_errors) {
    // -k: a read of an element that does not exist is reported (bpftrace
    // gives the return code as 0).
    BlockId report = b_.new_block(), check = b_.new_block();
    b_.branch_imm(ir::Cond::Eq, ptr, 0, report, check);
    b_.set_block(report);
    send_helper_error(add_site(BPF_FUNC_map_lookup_elem, p_.map_of[id]), b_.imm(0));
    b_.jump(check);
    b_.set_block(check);
  }
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
Val Lowerer::aggregate_read(ExprId id, VregId key) {
  const auto& m = map_info(id);
  const Type t = p_.type_of(id);
  VregId acc = b_.imm(0), count = b_.imm(0), seen = b_.imm(0);
  bool s = m.value.is_signed;
  VregId map = map_ptr(p_.map_of[id]);
  for (uint32_t cpu = 0; cpu < opts_.possible_cpus; ++cpu) {
    VregId ptr = b_.call(BPF_FUNC_map_lookup_percpu_elem, {map, key, b_.imm(cpu)});
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
        b_.branch(extreme_cond(m.agg, s), v, acc, take, next);
        b_.set_block(take);
        b_.mov_to(acc, v);
        b_.imm_to(seen, 1);
        break;
      }
      case output::AggKind::Plain:
      case output::AggKind::Stats:
      case output::AggKind::Hist:
      case output::AggKind::LHist:
      case output::AggKind::TSeries: std::unreachable();  // rejected by sema
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

void Lowerer::map_write_key(ExprId id, VregId key, const Val& v) {
  const auto& m = map_info(id);
  uint32_t off = alloc(m.value_size);
  VregId val = scratch_ptr(off);
  copy_to(val, 0, v, m.value);
  map_update(p_.map_of[id], key, val, BPF_ANY);
}

// Looks up the entry for key, inserting a zeroed one when missing. Leaves
// the builder in the block where the pointer is known non-null; the caller
// continues there and must finish with jump(join) to the returned block.
std::pair<VregId, BlockId> Lowerer::map_entry(ExprId id, VregId key) {
  zero_needed_ = std::max(zero_needed_, map_info(id).value_size);
  VregId map = map_ptr(p_.map_of[id]);
  VregId ptr = b_.vreg();
  b_.mov_to(ptr, b_.call(BPF_FUNC_map_lookup_elem, {map, key}));
  BlockId have = b_.new_block(), insert = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, ptr, 0, insert, have);
  b_.set_block(insert);
  VregId zptr = array_elem(m_.support.zero, 0);
  BlockId zok = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, zptr, 0, join, zok);
  b_.set_block(zok);
  map_update(p_.map_of[id], key, zptr, BPF_NOEXIST, map);
  b_.mov_to(ptr, b_.call(BPF_FUNC_map_lookup_elem, {map, key}));
  b_.branch_imm(ir::Cond::Eq, ptr, 0, join, have);
  b_.set_block(have);
  return {ptr, join};
}

void Lowerer::aggregate(ExprId target, ExprId call_id) {
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
      b_.atomic_add(ptr, 0, b_.imm(1));
      b_.atomic_add(ptr, 8, v);
      break;
    case output::AggKind::Stats: {
      // {count, total, min, max}: this CPU's first value (count was 0)
      // sets min and max, later ones compare, as min() and max() do.
      VregId before = b_.load(8, ptr, 0);
      b_.atomic_add(ptr, 0, b_.imm(1));
      b_.atomic_add(ptr, 8, v);
      BlockId first = b_.new_block(), later = b_.new_block();
      b_.branch_imm(ir::Cond::Eq, before, 0, first, later);
      b_.set_block(first);
      b_.store(8, ptr, 16, v);
      b_.store(8, ptr, 24, v);
      b_.jump(join);
      b_.set_block(later);
      keep_extreme(ptr, 16, v, extreme_cond(output::AggKind::Min, m.value.is_signed));
      keep_extreme(ptr, 24, v, extreme_cond(output::AggKind::Max, m.value.is_signed));
      break;
    }
    case output::AggKind::Min:
    case output::AggKind::Max: {
      // {value, set}: per-CPU, so a plain compare-and-store is enough.
      VregId cur = b_.load(8, ptr, 0);
      VregId set = b_.load(8, ptr, 8);
      BlockId write = b_.new_block(), check = b_.new_block();
      b_.branch_imm(ir::Cond::Eq, set, 0, write, check);
      b_.set_block(check);
      b_.branch(extreme_cond(m.agg, m.value.is_signed), v, cur, write, join);
      b_.set_block(write);
      b_.store(8, ptr, 0, v);
      b_.store_imm(8, ptr, 8, 1);
      break;
    }
    case output::AggKind::Hist:
    case output::AggKind::LHist: {
      // The bucket's count, then the sum after the buckets.
      const uint32_t buckets = m.hist_buckets();
      VregId idx = m.agg == output::AggKind::Hist ? hist_index(v, m.hist.bits, m.value.is_signed)
                                                  : lhist_index(v, m.hist, m.value.is_signed);
      bucket_add(ptr, idx, buckets);
      b_.atomic_add(ptr, static_cast<int32_t>(8 * buckets), v);
      break;
    }
    case output::AggKind::TSeries: tseries_record(ptr, v, m.tseries, m.value.is_signed); break;
  }
  b_.jump(join);
  b_.set_block(join);
}

// tseries(): the slot of the current interval, epoch = TAI ns / interval
// at epoch % intervals, as bpftrace 0.26: {value, meta, epoch}, per CPU.
// A slot of an older epoch starts again (with an aggregation); without
// one the value and its time are replaced.
void Lowerer::tseries_record(VregId ptr, VregId v, const output::TSeriesParams& p, bool is_signed) {
  using output::TSeriesAgg;
  VregId boot = b_.call(BPF_FUNC_ktime_get_boot_ns, {});
  VregId now = b_.alu(AluOp::Add, boot, b_.imm(opts_.tai_minus_boot_ns));
  VregId epoch = b_.alu(AluOp::Div, now, b_.imm(static_cast<int64_t>(p.interval_ns)));
  VregId idx = b_.alu(AluOp::Mod, epoch, b_.imm(p.intervals));
  // Clamped so that the verifier sees the slot in bounds.
  BlockId clamp = b_.new_block(), ok = b_.new_block();
  b_.branch_imm(ir::Cond::Gt, idx, p.intervals - 1, clamp, ok);
  b_.set_block(clamp);
  b_.imm_to(idx, p.intervals - 1);
  b_.jump(ok);
  b_.set_block(ok);
  VregId slot = b_.alu(AluOp::Add, ptr, b_.alu_imm(AluOp::Mul, idx, output::kTSeriesSlotSize));
  if (p.agg != TSeriesAgg::Last) {
    BlockId fresh = b_.new_block(), same = b_.new_block();
    b_.branch(ir::Cond::Ne, b_.load(8, slot, 16), epoch, fresh, same);
    b_.set_block(fresh);
    b_.store_imm(8, slot, 0, 0);
    b_.store_imm(8, slot, 8, 0);
    b_.jump(same);
    b_.set_block(same);
  }
  switch (p.agg) {
    case TSeriesAgg::Last:
      b_.store(8, slot, 0, v);
      b_.store(8, slot, 8, now);
      break;
    case TSeriesAgg::Avg: b_.store(8, slot, 8, b_.alu_imm(AluOp::Add, b_.load(8, slot, 8), 1)); [[fallthrough]];
    case TSeriesAgg::Sum: b_.store(8, slot, 0, b_.alu(AluOp::Add, b_.load(8, slot, 0), v)); break;
    case TSeriesAgg::Min:
    case TSeriesAgg::Max: {
      // {value, set}: the first value of the interval, or a smaller (larger) one.
      BlockId write = b_.new_block(), check = b_.new_block(), done = b_.new_block();
      b_.branch_imm(ir::Cond::Eq, b_.load(8, slot, 8), 0, write, check);
      b_.set_block(check);
      b_.branch(extreme_cond(p.agg == TSeriesAgg::Min ? output::AggKind::Min : output::AggKind::Max, is_signed), v,
                b_.load(8, slot, 0), write, done);
      b_.set_block(write);
      b_.store(8, slot, 0, v);
      b_.store_imm(8, slot, 8, 1);
      b_.jump(done);
      b_.set_block(done);
      break;
    }
  }
  b_.store(8, slot, 16, epoch);
}

// The comparison by which v replaces a min() (Min) or max() (Max) value.
ir::Cond Lowerer::extreme_cond(output::AggKind kind, bool is_signed) {
  if (kind == output::AggKind::Min) return is_signed ? ir::Cond::SLt : ir::Cond::Lt;
  return is_signed ? ir::Cond::SGt : ir::Cond::Gt;
}

// ptr[off] = v when `better` holds for (v, ptr[off]); per-CPU, so a plain
// compare-and-store. Continues in a new block either way.
void Lowerer::keep_extreme(VregId ptr, int32_t off, VregId v, ir::Cond better) {
  BlockId write = b_.new_block(), next = b_.new_block();
  b_.branch(better, v, b_.load(8, ptr, off), write, next);
  b_.set_block(write);
  b_.store(8, ptr, off, v);
  b_.jump(next);
  b_.set_block(next);
}

// ptr[idx] += 1, with idx clamped so the verifier sees it in bounds.
void Lowerer::bucket_add(VregId ptr, VregId idx, uint32_t count) {
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
VregId Lowerer::hist_index(VregId v, int bits, bool is_signed) {
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

VregId Lowerer::lhist_index(VregId v, const output::HistParams& h, bool is_signed) {
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

// Reads a field of a kernel struct at base + f.offset with
// bpf_probe_read_kernel (which zero-fills on a fault, so a NULL base reads
// as 0). Structs are not read: their address is the value.
Val Lowerer::read_kernel_field(VregId base, const sema::FieldAccess& f, const Type& t) {
  return read_memory(base, f, t, sema::AddrSpace::Kernel);
}

// Reads a value of type t at base + f.offset in kernel or user memory
// (records are only their address).
Val Lowerer::read_memory(VregId base, const sema::FieldAccess& f, const Type& t, sema::AddrSpace space) {
  VregId addr = f.offset ? b_.alu_imm(AluOp::Add, base, f.offset) : base;
  if (t.is_record()) return Val{.reg = addr, .type = t};
  int helper = space == sema::AddrSpace::User ? BPF_FUNC_probe_read_user : BPF_FUNC_probe_read_kernel;
  // A value held in memory (a string, a tuple, an array; a ksym, strerror()
  // or username value's record): copied into scratch.
  if (!t.is_int()) {
    uint32_t off = alloc(t.mem_size());
    VregId buf = scratch_ptr(off);
    zero(buf, 0, t.mem_size());
    checked_call(helper, {buf, b_.imm(t.field_size()), addr});
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
void Lowerer::store_expr(VregId dst, uint32_t off, ExprId id, const Type& to, bool field) {
  const Expr& e = ast_.expr(id);
  const builtins::Function* f = e.kind == ExprKind::Identifier ? p_.function_of[id] : nullptr;
  if (f && f->store) {
    lang::Loc saved = b_.loc();
    b_.set_loc(e.loc);
    const bool stored = f->store(*this, dst, off, to, field);
    b_.set_loc(saved);
    if (stored) return;
  }
  copy_to(dst, off, expr(id), to, field);
}

// Stores `bytes` at dst + off as immediates, in the widest stores that fit.
static void store_literal_bytes(Builder& b, VregId dst, uint32_t off, const std::string& bytes) {
  for (uint32_t i = 0; i < bytes.size();) {
    const uint32_t left = static_cast<uint32_t>(bytes.size()) - i;
    const uint8_t w = left >= 4 ? 4 : left >= 2 ? 2 : 1;
    int32_t word = 0;
    std::memcpy(&word, bytes.data() + i, w);
    if (w == 2) word = static_cast<int16_t>(word);
    if (w == 1) word = static_cast<int8_t>(word);
    b.store_imm(w, dst, static_cast<int32_t>(off + i), word);
    i += w;
  }
}

// Writes v, of type `from` (v.type), into dst + off as type `to`.
void Lowerer::copy_to(VregId dst, uint32_t off, const Val& v, const Type& to, bool field) {
  if (to.is_int()) {
    // 8 bytes on its own; a tuple field's own size, truncated.
    const auto width = static_cast<uint8_t>(field ? to.field_size() : 8);
    if (v.constant && *v.constant >= INT32_MIN && *v.constant <= INT32_MAX) {
      int64_t c = *v.constant;
      if (width < 8) c = narrow(v, Type::integer(width, true)).constant.value_or(0);
      b_.store_imm(width, dst, static_cast<int32_t>(off), static_cast<int32_t>(c));
    } else {
      b_.store(width, dst, static_cast<int32_t>(off), materialize_int(v));
    }
    return;
  }
  if (to.is_string()) {
    uint32_t cap = field ? to.size : to.mem_size();
    if (v.literal) {
      // The literal bytes, a NUL, and zeros to the end of the slot.
      std::string bytes = *v.literal;
      bytes.resize(cap, '\0');
      if (v.literal->size() >= to.size) bytes[to.size - 1] = '\0';
      store_literal_bytes(b_, dst, off, bytes);
      return;
    }
    // The source's own bytes only (it may be a field, followed by others),
    // then zeros to the end of the slot.
    uint32_t n = std::min(v.type.size, cap);
    copy_exact(dst, off, v.reg, n);
    // A string's capacity counts its NUL: a longer one is cut to fit a field.
    if (field && v.type.size > cap) b_.store_imm(1, dst, static_cast<int32_t>(off + cap - 1), 0);
    if (n < cap) zero_exact(dst, off + n, cap - n);
    return;
  }
  if (to.kind == TypeKind::Array && v.literal) {
    std::string bytes = *v.literal;
    bytes.resize(field ? to.field_size() : to.mem_size(), '\0');
    store_literal_bytes(b_, dst, off, bytes);
    return;
  }
  if (to.kind == TypeKind::Array) {
    copy_exact(dst, off, v.reg, to.field_size());
    if (!field) zero_exact(dst, off + to.field_size(), to.mem_size() - to.field_size());
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
  if (to.is_record()) {
    // A struct into a variable: its bytes, from where the value points.
    VregId d = off ? b_.alu_imm(AluOp::Add, dst, off) : dst;
    const bool user = !v.local && v.type.addr_space == sema::AddrSpace::User;
    checked_call(user ? BPF_FUNC_probe_read_user : BPF_FUNC_probe_read_kernel, {d, b_.imm(to.size), v.reg});
    return;
  }
  if (to.is_tuple()) {
    if (v.type.is_tuple() && v.type == to) {
      copy_exact(dst, off, v.reg, to.size);
      if (!field) zero_exact(dst, off + to.size, to.mem_size() - to.size);
      return;
    }
    // Element-wise with widening (e.g. string[4] into string[16]); a
    // record's fields go to the slot of the same name. Holes are zeroed.
    if (to.has_holes()) (field ? zero_exact(dst, off, to.size) : zero(dst, off, to.mem_size()));
    for (size_t i = 0; i < to.elems.size(); ++i)
      copy_to(dst, off + to.offsets[i], tuple_elem(v, to.is_named_tuple() ? v.type.field_index(to.names[i]) : i),
              to.elems[i], true);
    return;
  }
}

VregId Lowerer::load_field(VregId base, uint32_t off, const Type& el) {
  const uint32_t width = el.field_size();
  VregId r = b_.load(static_cast<uint8_t>(width), base, static_cast<int32_t>(off));
  return el.kind == TypeKind::Int && el.is_signed ? extend(r, width, true) : r;
}

// Element i of an addressed tuple: integers loaded, others by address.
Val Lowerer::tuple_elem(const Val& tuple, size_t i) {
  const Type& el = tuple.type.elems[i];
  const uint32_t off = tuple.type.offsets[i];
  if (el.is_int()) return Val{.reg = load_field(tuple.reg, off, el), .type = el};
  return Val{.reg = off ? b_.alu_imm(AluOp::Add, tuple.reg, off) : tuple.reg, .type = el};
}

void Lowerer::copy_bytes(VregId dst, uint32_t off, VregId src, uint32_t n) {
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

void Lowerer::copy_exact(VregId dst, uint32_t off, VregId src, uint32_t n) {
  if (n > kInlineCopy) {
    copy_bytes(dst, off, src, n);  // one bpf_probe_read_kernel of n bytes
    return;
  }
  for (uint32_t i = 0; i < n;) {
    const uint8_t w = n - i >= 8 ? 8 : n - i >= 4 ? 4 : n - i >= 2 ? 2 : 1;
    b_.store(w, dst, static_cast<int32_t>(off + i), b_.load(w, src, static_cast<int32_t>(i)));
    i += w;
  }
}

void Lowerer::zero_exact(VregId dst, uint32_t off, uint32_t n) {
  if (n > kInlineCopy) {
    zero(dst, off, n);  // a copy of n bytes from the zero map
    return;
  }
  for (uint32_t i = 0; i < n;) {
    const uint8_t w = n - i >= 8 ? 8 : n - i >= 4 ? 4 : n - i >= 2 ? 2 : 1;
    b_.store_imm(w, dst, static_cast<int32_t>(off + i), 0);
    i += w;
  }
}

void Lowerer::zero(VregId dst, uint32_t off, uint32_t n) {
  zero_needed_ = std::max(zero_needed_, n);
  if (n <= kInlineCopy) {
    for (uint32_t i = 0; i < n; i += 8) b_.store_imm(8, dst, static_cast<int32_t>(off + i), 0);
    return;
  }
  VregId zptr = array_elem(m_.support.zero, 0);
  BlockId ok = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, zptr, 0, join, ok);
  b_.set_block(ok);
  copy_bytes(dst, off, zptr, n);
  b_.jump(join);
  b_.set_block(join);
}

VregId Lowerer::map_ptr(uint32_t map) {
  const int32_t slot = m_.swap_slot(map);
  if (slot < 0) return b_.map_fd(map);
  VregId gen = b_.load(8, b_.map_value(m_.support.control, Module::generation_offset(static_cast<size_t>(slot))), 0);
  VregId ptr = b_.vreg();
  BlockId first = b_.new_block(), second = b_.new_block(), join = b_.new_block();
  b_.branch_imm(ir::Cond::Eq, gen, 0, first, second);
  b_.set_block(first);
  b_.mov_to(ptr, b_.map_fd(map));
  b_.jump(join);
  b_.set_block(second);
  b_.mov_to(ptr, b_.map_fd(m_.twin(static_cast<size_t>(slot))));
  b_.jump(join);
  b_.set_block(join);
  return ptr;
}

// Looks up element `index` of a support array map (scratch, zero, lost,
// failed counters), the key written into the function's key slot. The result
// may be NULL for the verifier; the caller checks it.
VregId Lowerer::array_elem(uint32_t map, uint32_t index) {
  VregId key = b_.stack_addr(key_slot_);
  b_.store_imm(4, key, 0, static_cast<int64_t>(index));
  return b_.call(BPF_FUNC_map_lookup_elem, {b_.map_fd(map), key});
}

}  // namespace bpfscope::ir::detail
