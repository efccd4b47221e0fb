// Structural tests of the IR lowering: helper calls, null checks, atomic
// aggregation updates, predicates, ring-buffer records and lost-event counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lower_text.h"
#include "lang/lang.h"
#include "sema/sema.h"

namespace bpfscope::ir {
namespace {

constexpr int64_t kMapLookupElem = 1;   // BPF_FUNC_map_lookup_elem
constexpr int64_t kMapUpdateElem = 2;   // BPF_FUNC_map_update_elem
constexpr int64_t kRingbufOutput = 130; // BPF_FUNC_ringbuf_output
constexpr int64_t kForEachMapElem = 164;  // BPF_FUNC_for_each_map_elem
constexpr int64_t kMapLookupPercpuElem = 195;  // BPF_FUNC_map_lookup_percpu_elem

using test::Lowered;
using test::lower_text;

bool is_null_check(const Inst& i, const std::set<VregId>& aliases) {
  return i.op == Opcode::Branch && (i.cond == Cond::Eq || i.cond == Cond::Ne) && i.b == kNoVreg && i.imm == 0 &&
         aliases.count(i.a);
}

// Every map_lookup_elem result is tested against 0 before the block ends,
// and is not dereferenced before that test.
void check_lookups_null_checked(const Function& f) {
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const auto& insts = f.blocks[b].insts;
    for (size_t k = 0; k < insts.size(); ++k) {
      if (insts[k].op != Opcode::Call || insts[k].imm != kMapLookupElem) continue;
      std::set<VregId> aliases{insts[k].dst};
      bool checked = false;
      for (size_t j = k + 1; j < insts.size(); ++j) {
        const Inst& i = insts[j];
        if (is_null_check(i, aliases)) {
          checked = true;
          break;
        }
        if (i.op == Opcode::Mov && aliases.count(i.a)) aliases.insert(i.dst);
        bool deref = (i.op == Opcode::Load || i.op == Opcode::Store || i.op == Opcode::StoreImm ||
                      i.op == Opcode::AtomicAdd) && aliases.count(i.a);
        EXPECT_FALSE(deref) << f.name << " bb" << b << ": lookup result used before its null check: "
                            << print_inst(i);
      }
      EXPECT_TRUE(checked) << f.name << " bb" << b << ": " << print_inst(insts[k]) << " has no null check";
    }
  }
}

int count_calls(const Function& f, int64_t helper) {
  int n = 0;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts) n += i.op == Opcode::Call && i.imm == helper;
  return n;
}

int count_ops(const Function& f, Opcode op) {
  int n = 0;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts) n += i.op == op;
  return n;
}

// Blocks consisting of a lone `return 0`.
std::set<BlockId> return0_blocks(const Function& f) {
  std::set<BlockId> out;
  for (BlockId b = 0; b < f.blocks.size(); ++b)
    if (f.blocks[b].insts.size() == 1 && f.blocks[b].insts[0].op == Opcode::Ret && f.blocks[b].insts[0].imm == 0)
      out.insert(b);
  return out;
}

// Whether the function takes the address of map `map`.
bool uses_map(const Function& f, uint32_t map) {
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts)
      if ((i.op == Opcode::MapFd || i.op == Opcode::MapValue) && i.imm == map) return true;
  return false;
}

const std::vector<std::string> kPrograms = {
    "BEGIN { @x = 1; }",
    "BEGIN { @c = count(); }",
    "BEGIN { @c[comm, pid] = count(); @s[pid] = sum(3); @m = min(4); @n = max(5); @a = avg(6); @t = stats(7); }",
    "BEGIN { @h = hist(100); @l = lhist(7, 0, 100, 10); }",
    "BEGIN { printf(\"%d %s\\n\", 1, \"two\"); }",
    "BEGIN { $x = 1; if ($x > 0) { @a = 1; } else if ($x < 0) { @a = 2; } else { @a = 3; } }",
    "BEGIN { $s = \"a\"; @t = $s == \"b\" ? \"yes\" : \"no\"; }",
    "BEGIN { @x[1, \"a\"] = (2, \"b\"); delete(@x[1, \"a\"]); clear(@x); }",
    "BEGIN { @x = 1; @x++; @x += 2; $y = 0; $y++; print(@x); exit(); }",
    "END { @e = 1; }",
    "interval:ms:100 { @i = count(); }",
    "tracepoint:syscalls:sys_enter_openat /pid > 1/ { @c[comm] = count(); printf(\"%s %d\\n\", str(args.filename), args.dfd); }",
    "tracepoint:syscalls:sys_enter_getp*id { @[probe] = count(); }",
};

TEST(Ir, VerifiesAndNullChecksEveryLookup) {
  for (const auto& text : kPrograms) {
    SCOPED_TRACE(text);
    auto l = lower_text(text);
    ASSERT_TRUE(l.typed.has_value());
    ASSERT_FALSE(l.module.functions.empty());
    EXPECT_EQ(l.module.functions.size(), l.module.unit_of.size());
    EXPECT_EQ(l.module.functions.size(), l.module.target_of.size());
    for (const auto& f : l.module.functions) {
      EXPECT_EQ(verify(f), "") << print(f);
      check_lookups_null_checked(f);
      // Blocks end in exactly one terminator.
      for (const auto& b : f.blocks) {
        ASSERT_FALSE(b.insts.empty());
        for (size_t k = 0; k + 1 < b.insts.size(); ++k) {
          auto op = b.insts[k].op;
          EXPECT_TRUE(op != Opcode::Jump && op != Opcode::Branch && op != Opcode::Ret) << print(f);
        }
      }
    }
    // The text form shows the null checks too.
    if (l.text.find("call 1(") != std::string::npos) {
      EXPECT_NE(l.text.find("== 0 goto"), std::string::npos);
    }
  }
}

// Each program has its own scratch entry (the entry's key is its index),
// so that a program interrupting another on the same CPU (a tp_btf block
// completion during a submission's probe) cannot write over the other's
// values; biostacks once printed a request with an empty comm that way.
TEST(Ir, EachProgramHasItsOwnScratchEntry) {
  auto l = lower_text(
      "rawtracepoint:block_io_start { @i[arg0] = (comm, pid); } "
      "rawtracepoint:block_io_done { @d[arg0] = (comm, pid); }");
  ASSERT_TRUE(l.typed.has_value());
  ASSERT_EQ(l.module.functions.size(), 2u);
  const auto specs = map_specs(*l.typed, l.module, 4096);
  EXPECT_EQ(specs[l.module.support.scratch].max_entries, 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    const std::string text = print(l.module.functions[i]);
    const std::regex key("\\*\\(u32 \\*\\)\\(v\\d+ \\+0\\) = " + std::to_string(i) + "\n  v\\d+ = map " +
                         std::to_string(l.module.support.scratch) + "\n");
    EXPECT_TRUE(std::regex_search(text, key)) << text;
  }
}

// A map that clear() or zero() empties is swapped: a second kernel map of
// the same shape, chosen by a generation word after the control word, and
// every access picks one of the two; other maps are reached directly.
TEST(Ir, ClearedMapsAreSwapped) {
  auto l = lower_text(
      "tracepoint:syscalls:sys_enter_getppid { @c = count(); @z[pid] = sum(2); @kept = count(); } "
      "interval:s:1 { print(@c); clear(@c); zero(@z); clear(@c); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& maps = l.typed->maps;
  const auto id = [&](const std::string& name) {
    return static_cast<uint32_t>(
        std::find_if(maps.begin(), maps.end(), [&](const auto& m) { return m.name == name; }) - maps.begin());
  };
  ASSERT_EQ(l.module.swapped, (std::vector<uint32_t>{id("@c"), id("@z")}));
  EXPECT_EQ(l.module.swap_slot(id("@kept")), -1);
  const auto specs = map_specs(*l.typed, l.module, 4096);
  EXPECT_EQ(specs[l.module.support.control].value_size, 24u);
  ASSERT_EQ(specs.size(), l.module.twin(1) + 1);
  for (size_t slot = 0; slot < 2; ++slot) {
    const auto& twin = specs[l.module.twin(slot)];
    const auto& first = specs[l.module.swapped[slot]];
    EXPECT_EQ(twin.type, first.type);
    EXPECT_EQ(twin.key_size, first.key_size);
    EXPECT_EQ(twin.value_size, first.value_size);
    EXPECT_EQ(twin.max_entries, first.max_entries);
  }
  const std::string text = print(l.module.functions.at(0));
  for (uint32_t map : {id("@c"), id("@z"), l.module.twin(0), l.module.twin(1), id("@kept")})
    EXPECT_NE(text.find("= map " + std::to_string(map) + "\n"), std::string::npos) << map << "\n" << text;
}

TEST(Ir, OneFunctionPerTargetWhenProbeIsUsed) {
  auto l = lower_text("tracepoint:syscalls:sys_enter_getp*id { @[probe] = count(); }");
  ASSERT_TRUE(l.typed.has_value());
  EXPECT_EQ(l.module.functions.size(), 3u);
  auto l2 = lower_text("tracepoint:syscalls:sys_enter_getp*id { @ = count(); }");
  ASSERT_TRUE(l2.typed.has_value());
  ASSERT_EQ(l2.module.functions.size(), 1u);
  EXPECT_EQ(l2.module.target_of[0], -1);
}

// kprobe arguments come from pt_regs (arg0 = di at 112, retval = ax at 80);
// fexit's return value follows the arguments in its u64 context array.
TEST(Ir, KprobeAndFexitContextReads) {
  auto loads_ctx_at = [](const Lowered& l, int32_t off) {
    for (const auto& b : l.module.functions.at(0).blocks)
      for (const auto& i : b.insts)
        if (i.op == Opcode::Load && i.off == off) return true;
    return false;
  };
  auto k = lower_text("kprobe:tcp_connect { @a = arg0; } kretprobe:tcp_connect { @r = retval; }");
  ASSERT_TRUE(k.typed.has_value());
  EXPECT_TRUE(loads_ctx_at(k, 112)) << k.text;
  auto f = lower_text("fexit:tcp_sendmsg { @r = retval; @s = args.size; }");
  ASSERT_TRUE(f.typed.has_value());
  // tcp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size): size at 16, retval at 24.
  EXPECT_TRUE(loads_ctx_at(f, 16)) << f.text;
  EXPECT_TRUE(loads_ctx_at(f, 24)) << f.text;
}

// A kernel without kprobes runs kprobes as fentry (kretprobe as fexit), and
// one that refuses fentry runs fentry as kprobes: the context layout follows.
TEST(Ir, KprobeAndFentryFallBackToEachOther) {
  auto loads_ctx_at = [](const Lowered& l, int32_t off) {
    for (const auto& b : l.module.functions.at(0).blocks)
      for (const auto& i : b.insts)
        if (i.op == Opcode::Load && i.off == off) return true;
    return false;
  };
  sema::Options no_kprobes;
  no_kprobes.kprobes = 0;
  no_kprobes.fentry = 1;
  // tcp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size)
  auto k = lower_text("kprobe:tcp_sendmsg { @s = arg2; }", {}, no_kprobes);
  ASSERT_TRUE(k.typed.has_value());
  EXPECT_EQ(k.typed->units.at(0).mechanism, sema::ProbeKind::Fentry);
  EXPECT_TRUE(loads_ctx_at(k, 16)) << k.text;   // the third u64 argument
  EXPECT_FALSE(loads_ctx_at(k, 96)) << k.text;  // not pt_regs->dx
  auto kr = lower_text("kretprobe:tcp_sendmsg { @r = retval; }", {}, no_kprobes);
  ASSERT_TRUE(kr.typed.has_value());
  EXPECT_EQ(kr.typed->units.at(0).mechanism, sema::ProbeKind::Fexit);
  EXPECT_TRUE(loads_ctx_at(kr, 24)) << kr.text;  // after the three arguments

  sema::Options no_fentry;
  no_fentry.kprobes = 1;
  no_fentry.fentry = 0;
  auto f = lower_text("fentry:tcp_sendmsg { @s = args.size; }", {}, no_fentry);
  ASSERT_TRUE(f.typed.has_value());
  EXPECT_EQ(f.typed->units.at(0).mechanism, sema::ProbeKind::Kprobe);
  EXPECT_TRUE(loads_ctx_at(f, 96)) << f.text;  // pt_regs->dx
  auto fx = lower_text("fexit:tcp_sendmsg { @r = retval; }", {}, no_fentry);
  ASSERT_TRUE(fx.typed.has_value());
  EXPECT_EQ(fx.typed->units.at(0).mechanism, sema::ProbeKind::Kretprobe);
  EXPECT_TRUE(loads_ctx_at(fx, 80)) << fx.text;  // pt_regs->ax

  // Both allowed: each probe keeps its own mechanism.
  sema::Options both;
  both.kprobes = 1;
  both.fentry = 1;
  auto kb = lower_text("kprobe:tcp_sendmsg { @s = arg2; } fentry:tcp_sendmsg { @t = args.size; }", {}, both);
  ASSERT_TRUE(kb.typed.has_value());
  EXPECT_EQ(kb.typed->units.at(0).mechanism, sema::ProbeKind::Kprobe);
  EXPECT_EQ(kb.typed->units.at(1).mechanism, sema::ProbeKind::Fentry);
}

// in_list(x, "...") is one compare per listed value: no map, no loop.
TEST(Ir, InListIsOneComparePerValue) {
  const auto compares = [](const std::string& list) {
    auto l = lower_text("tracepoint:syscalls:sys_enter_getppid { if (in_list(pid, \"" + list + "\")) { @ = 1; } }");
    std::multiset<int64_t> out;
    for (const auto& f : l.module.functions)
      for (const auto& b : f.blocks)
        for (const auto& i : b.insts)
          if (i.op == Opcode::Branch && i.cond == Cond::Eq && i.b == kNoVreg && i.imm != 0) out.insert(i.imm);
    return out;
  };
  EXPECT_EQ(compares("80, 443,0x10"), (std::multiset<int64_t>{16, 80, 443}));
  EXPECT_EQ(compares(""), (std::multiset<int64_t>{}));
}

TEST(Ir, CountIsAnAtomicAdd) {
  auto l = lower_text("BEGIN { @c = count(); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_GE(count_ops(f, Opcode::AtomicAdd), 1);
  EXPECT_NE(l.text.find("lock *(u64 *)"), std::string::npos) << l.text;
  EXPECT_NE(l.text.find("+="), std::string::npos) << l.text;
  // A missing entry is inserted from the zero map, then looked up again.
  EXPECT_GE(count_calls(f, kMapUpdateElem), 1);
  EXPECT_TRUE(uses_map(f, l.module.support.zero));
  EXPECT_TRUE(uses_map(f, 0));
}

// Instructions `op` that write or add at offset `off` of a pointer.
int count_at(const Function& f, Opcode op, int32_t off) {
  int n = 0;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts) n += i.op == op && i.off == off;
  return n;
}

// hist() and lhist() add the value after their buckets (metrics' _sum).
TEST(Ir, HistAddsTheValueAfterTheBuckets) {
  auto l = lower_text("BEGIN { @h = hist(nsecs); @l = lhist(nsecs, 0, 100, 10); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_EQ(l.typed->maps[0].value_size, 8 * (output::hist_bucket_count(0) + 1));
  EXPECT_EQ(l.typed->maps[1].value_size, 8 * (output::lhist_bucket_count(0, 100, 10) + 1));
  EXPECT_EQ(count_at(f, Opcode::AtomicAdd, static_cast<int32_t>(8 * output::hist_bucket_count(0))), 1) << l.text;
  EXPECT_EQ(count_at(f, Opcode::AtomicAdd, static_cast<int32_t>(8 * output::lhist_bucket_count(0, 100, 10))), 1)
      << l.text;
}

// stats() is {count, total, min, max}: a CPU's first value stores min and
// max, later ones store where they win.
TEST(Ir, StatsKeepsMinAndMax) {
  auto l = lower_text("BEGIN { @s = stats(nsecs); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_EQ(l.typed->maps[0].value_size, 32u);
  EXPECT_GE(count_at(f, Opcode::AtomicAdd, 0), 1) << l.text;  // the count (and failed-update counts)
  EXPECT_EQ(count_at(f, Opcode::AtomicAdd, 8), 1) << l.text;
  EXPECT_EQ(count_at(f, Opcode::Store, 16), 2) << l.text;
  EXPECT_EQ(count_at(f, Opcode::Store, 24), 2) << l.text;
}

TEST(Ir, PredicateBranchesToReturn0) {
  auto l = lower_text("tracepoint:syscalls:sys_enter_openat /pid == 12345/ { @c = count(); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  auto rets = return0_blocks(f);
  ASSERT_FALSE(rets.empty()) << l.text;
  // The predicate compares the pid (bpf_get_current_pid_tgid >> 32) with 12345
  // and one of its successors is a lone `return 0`.
  bool found = false;
  for (const auto& b : f.blocks) {
    const Inst& t = b.insts.back();
    if (t.op == Opcode::Branch && t.b == kNoVreg && t.imm == 12345 && (rets.count(t.t) || rets.count(t.f)))
      found = true;
  }
  EXPECT_TRUE(found) << l.text;
  EXPECT_EQ(count_calls(f, 14), 1) << l.text;  // BPF_FUNC_get_current_pid_tgid
}

TEST(Ir, PrintfWritesRingbufAndCountsLostEvents) {
  auto l = lower_text("BEGIN { printf(\"%d %s\\n\", 1, \"two\"); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_EQ(count_calls(f, kRingbufOutput), 1);
  EXPECT_NE(l.text.find("call 130("), std::string::npos) << l.text;
  EXPECT_TRUE(uses_map(f, l.module.support.ringbuf));
  EXPECT_TRUE(uses_map(f, l.module.support.lost));
  // The ringbuf_output result decides whether the lost counter is bumped.
  bool checked = false;
  for (const auto& b : f.blocks)
    for (size_t k = 0; k < b.insts.size(); ++k)
      if (b.insts[k].op == Opcode::Call && b.insts[k].imm == kRingbufOutput) {
        const Inst& t = b.insts.back();
        checked = t.op == Opcode::Branch && t.a == b.insts[k].dst && t.b == kNoVreg && t.imm == 0;
      }
  EXPECT_TRUE(checked) << l.text;
  EXPECT_GE(count_ops(f, Opcode::AtomicAdd), 1);
  // Support maps come after the script's maps and are distinct.
  const auto& s = l.module.support;
  std::set<uint32_t> ids{s.ringbuf, s.scratch, s.zero, s.lost};
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_GE(*ids.begin(), l.typed->maps.size());
  // The record fits in the scratch value.
  EXPECT_LE(l.typed->actions.at(0).record_size, l.module.scratch_size);
}

TEST(Ir, JoinReadsAtMost16ElementsAndStopsAtNull) {
  auto l = lower_text("tracepoint:syscalls:sys_enter_execve { join(args.argv); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  // argv is user memory: 16 pointer reads and 16 string reads, unrolled.
  EXPECT_EQ(count_calls(f, 112), 16) << l.text;  // BPF_FUNC_probe_read_user
  EXPECT_EQ(count_calls(f, 114), 16) << l.text;  // BPF_FUNC_probe_read_user_str
  EXPECT_EQ(count_calls(f, kRingbufOutput), 1);
  EXPECT_EQ(ir::verify(f), "");
  EXPECT_LE(l.typed->actions.at(0).record_size, l.module.scratch_size);
}

TEST(Ir, LenOfAMapIsAKfuncCall) {
  auto l = lower_text("BEGIN { @a[1] = 1; @n = len(@a); }");
  ASSERT_TRUE(l.typed.has_value());
  EXPECT_NE(l.text.find("call kfunc "), std::string::npos) << l.text;
}

TEST(Ir, BufWithARuntimeLengthClampsIt) {
  auto l = lower_text("tracepoint:syscalls:sys_enter_openat { $n = 7; @b = buf(args.filename, $n); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  // The length is compared with the capacity (1024) before the read.
  bool clamped = false;
  for (const auto& b : f.blocks) {
    const Inst& t = b.insts.back();
    if (t.op == Opcode::Branch && t.cond == Cond::Gt && t.b == kNoVreg && t.imm == 1024) clamped = true;
  }
  EXPECT_TRUE(clamped) << l.text;
  EXPECT_EQ(count_calls(f, 112), 1) << l.text;  // one bpf_probe_read_user
}

// for ($kv : @m): a bpf_for_each_map_elem call on the map with a
// subprogram's address and a context on the stack; the subprogram takes its
// four arguments, returns only 0 or 1, and passes the outer variable it
// updates back through the context.
TEST(Ir, ForMapLowersToACallback) {
  auto l = lower_text("BEGIN { @m[1] = 2; $n = 0; for ($kv : @m) { $n += $kv.1; if ($kv.0 == 3) { break; } } "
                      "@r = $n; }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  ASSERT_EQ(f.subprograms.size(), 1u) << l.text;
  const auto& cb = f.subprograms[0];
  EXPECT_EQ(verify(cb), "") << print(cb);
  check_lookups_null_checked(cb);
  // The call: for_each_map_elem(map 0, &subprogram 0, fp-relative ctx, 0).
  std::map<VregId, Inst> defs;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts)
      if (i.dst != kNoVreg) defs[i.dst] = i;
  int calls = 0;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts) {
      if (i.op != Opcode::Call || i.imm != kForEachMapElem) continue;
      ++calls;
      ASSERT_EQ(i.args.size(), 4u);
      EXPECT_EQ(defs[i.args[0]].op, Opcode::MapFd);
      EXPECT_EQ(defs[i.args[0]].imm, 0);
      EXPECT_EQ(defs[i.args[1]].op, Opcode::FuncAddr);
      EXPECT_EQ(defs[i.args[1]].imm, 0);
      EXPECT_EQ(defs[i.args[2]].op, Opcode::StackAddr);
      EXPECT_EQ(defs[i.args[3]].op, Opcode::Imm);
    }
  EXPECT_EQ(calls, 1) << l.text;
  // Entry: param 0..3 first.
  ASSERT_GE(cb.blocks.at(0).insts.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(cb.blocks[0].insts[k].op, Opcode::Param);
    EXPECT_EQ(cb.blocks[0].insts[k].imm, k);
  }
  const VregId ctx = cb.blocks[0].insts[3].dst;
  std::set<int64_t> rets;
  int stores_of_n = 0;
  for (const auto& b : cb.blocks) {
    if (b.insts.back().op == Opcode::Ret) rets.insert(b.insts.back().imm);
    for (const auto& i : b.insts)
      stores_of_n += i.op == Opcode::Store && i.a == ctx && i.off == 16;
  }
  EXPECT_EQ(rets, (std::set<int64_t>{0, 1})) << print(cb);
  // $n is stored back on both exits (continue and break).
  EXPECT_EQ(stores_of_n, 2) << print(cb);
  EXPECT_NE(l.text.find("subprogram 0: function BEGIN_for1"), std::string::npos) << l.text;
}

// A per-CPU aggregation's value is read over all CPUs in the callback, with
// the key copy in scratch (not the key pointer).
TEST(Ir, ForMapOverCountReadsEveryCpu) {
  auto l = lower_text("BEGIN { @c[1] = count(); for ($kv : @c) { @r = $kv.1; } }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  ASSERT_EQ(f.subprograms.size(), 1u);
  EXPECT_GE(count_calls(f.subprograms[0], kMapLookupPercpuElem), 1) << print(f.subprograms[0]);
}

// A loop in a loop body: both callbacks are listed on the program's main
// function, and the inner call happens in the outer callback.
TEST(Ir, NestedForMapLoops) {
  auto l = lower_text("BEGIN { @a[1] = 1; $t = 0; for ($x : @a) { for ($y : @a) { $t++; } } @r = $t; }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  ASSERT_EQ(f.subprograms.size(), 2u) << l.text;
  EXPECT_EQ(count_calls(f, kForEachMapElem), 1);
  int inner_calls = 0;
  for (const auto& sub : f.subprograms) {
    EXPECT_EQ(verify(sub), "");
    inner_calls += count_calls(sub, kForEachMapElem);
  }
  EXPECT_EQ(inner_calls, 1);
}

TEST(Ir, MapFdsAreInRange) {
  for (const auto& text : kPrograms) {
    SCOPED_TRACE(text);
    auto l = lower_text(text);
    ASSERT_TRUE(l.typed.has_value());
    const size_t n = map_specs(*l.typed, l.module, 4096).size();
    for (const auto& f : l.module.functions)
      for (const auto& b : f.blocks)
        for (const auto& i : b.insts)
          if (i.op == Opcode::MapFd) {
            EXPECT_LT(static_cast<uint64_t>(i.imm), n) << print_inst(i);
          }
  }
}

// How many calls of `helper` have their result tested for a negative value
// (a failure) at the end of their block.
int failure_checked_calls(const Function& f, int64_t helper) {
  int n = 0;
  for (const auto& b : f.blocks)
    for (const auto& i : b.insts)
      if (i.op == Opcode::Call && i.imm == helper) {
        const Inst& t = b.insts.back();
        if (t.op == Opcode::Branch && t.a == i.dst && t.b == kNoVreg && t.imm == 0 &&
            (t.cond == Cond::SLt || t.cond == Cond::SGe))
          ++n;
      }
  return n;
}

constexpr int64_t kProbeReadUserStr = 114;  // BPF_FUNC_probe_read_user_str
constexpr int64_t kGetStackid = 27;         // BPF_FUNC_get_stackid

TEST(Ir, ProbeReadsAreUncheckedWithoutK) {
  auto l = lower_text("tracepoint:syscalls:sys_enter_openat { printf(\"%s\\n\", str(args.filename)); @s[ustack] = 1; }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  ASSERT_EQ(count_calls(f, kProbeReadUserStr), 1) << l.text;
  EXPECT_EQ(failure_checked_calls(f, kProbeReadUserStr), 0) << l.text;
  EXPECT_EQ(failure_checked_calls(f, kGetStackid), 0) << l.text;
  // The only site is the map update.
  ASSERT_EQ(l.module.sites.size(), 1u);
  EXPECT_EQ(l.module.sites[0].helper, kMapUpdateElem);
}

TEST(Ir, ProbeReadsReportFailuresWithK) {
  LowerOptions o;
  o.helper_errors = true;
  auto l = lower_text("tracepoint:syscalls:sys_enter_openat { printf(\"%s\\n\", str(args.filename)); @s[ustack] = 1; }", o);
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_EQ(failure_checked_calls(f, kProbeReadUserStr), 1) << l.text;
  EXPECT_EQ(failure_checked_calls(f, kGetStackid), 1) << l.text;
  EXPECT_EQ(failure_checked_calls(f, kMapUpdateElem), 1) << l.text;
  ASSERT_EQ(l.module.sites.size(), 3u);
  // The str() site carries the call's location: "str(args.filename)".
  bool found = false;
  for (const auto& s : l.module.sites)
    if (s.helper == kProbeReadUserStr) {
      found = true;
      EXPECT_EQ(s.loc.end - s.loc.begin, std::string("str(args.filename)").size());
    }
  EXPECT_TRUE(found);
  // printf's record, one error record per site, and the record of a
  // process's first user stack (ir::kUstackPidRecord).
  EXPECT_EQ(count_calls(f, kRingbufOutput), 5) << l.text;
}

TEST(Ir, FailedMapUpdatesAreCounted) {
  auto l = lower_text("BEGIN { @a[1] = 2; @c[1] = count(); }");
  ASSERT_TRUE(l.typed.has_value());
  const auto& f = l.module.functions.at(0);
  EXPECT_EQ(failure_checked_calls(f, kMapUpdateElem), 2) << l.text;
  EXPECT_TRUE(uses_map(f, l.module.support.failed));
  ASSERT_EQ(l.module.sites.size(), 2u);
  for (const auto& s : l.module.sites) EXPECT_EQ(s.helper, kMapUpdateElem);
  EXPECT_EQ(l.typed->maps.at(l.module.sites[0].map).name, "@a");
  EXPECT_EQ(l.typed->maps.at(l.module.sites[1].map).name, "@c");
  // The first failure on a CPU is sent: one record per update site.
  EXPECT_EQ(count_calls(f, kRingbufOutput), 2) << l.text;
  check_lookups_null_checked(f);
}

}  // namespace
}  // namespace bpfscope::ir
