// Backend tests: structural checks of the emitted BPF, and real loads through
// the kernel verifier with the maps the module needs.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf/bpf.h"
#include "codegen/codegen.h"
#include "ir/builder.h"
#include "ir/ir.h"
#include "lang/lang.h"
#include "sema/sema.h"
#include "compile_text.h"

namespace bpfscope::codegen {
namespace {

using test::Compiled;
using test::compile_text;
using test::load_all;

bool is_ld_imm64(const bpf_insn& i) { return i.code == (BPF_LD | BPF_DW | BPF_IMM); }

// Registers within R0-R10, a final exit (or backward jump), jump targets inside the program and
// never into the second half of a ld_imm64, relocations on ld_imm64s.
void check_structure(const Program& p, size_t map_count) {
  const size_t n = p.insns.size();
  ASSERT_GT(n, 0u);
  EXPECT_EQ(p.locs.size(), n);
  std::vector<bool> second_half(n, false);
  for (size_t pc = 0; pc < n; ++pc) {
    if (is_ld_imm64(p.insns[pc])) {
      ASSERT_LT(pc + 1, n) << "ld_imm64 at the end";
      second_half[pc + 1] = true;
      ++pc;
    }
  }
  for (size_t pc = 0; pc < n; ++pc) {
    if (second_half[pc]) continue;
    const bpf_insn& i = p.insns[pc];
    EXPECT_LE(i.dst_reg, 10) << "insn " << pc << "\n" << disassemble(p);
    EXPECT_LE(i.src_reg, is_ld_imm64(i) ? BPF_PSEUDO_FUNC : 10) << "insn " << pc;
    // A subprogram address points at the start of a subprogram.
    if (is_ld_imm64(i) && i.src_reg == BPF_PSEUDO_FUNC) {
      const int64_t target = static_cast<int64_t>(pc) + 1 + i.imm;
      EXPECT_NE(std::find(p.subprograms.begin(), p.subprograms.end(), target), p.subprograms.end())
          << "insn " << pc << "\n" << disassemble(p);
    }
    uint8_t cls = BPF_CLASS(i.code);
    if (cls == BPF_JMP || cls == BPF_JMP32) {
      uint8_t op = BPF_OP(i.code);
      if (op == BPF_CALL || op == BPF_EXIT) continue;
      int64_t target = static_cast<int64_t>(pc) + 1 + (cls == BPF_JMP32 && op == BPF_JA ? i.imm : i.off);
      EXPECT_GE(target, 0) << "insn " << pc << "\n" << disassemble(p);
      EXPECT_LT(target, static_cast<int64_t>(n)) << "insn " << pc << "\n" << disassemble(p);
      if (target >= 0 && target < static_cast<int64_t>(n)) {
        EXPECT_FALSE(second_half[target]) << "insn " << pc;
      }
    }
    // The frame pointer is read-only.
    if (cls == BPF_ALU || cls == BPF_ALU64 || cls == BPF_LDX) {
      EXPECT_NE(i.dst_reg, 10) << "insn " << pc;
    }
  }
  // Control never falls off the end: the kernel requires the last
  // instruction to be an exit or an unconditional jump (emission may place a
  // block that jumps back last).
  const uint8_t last = p.insns.back().code;
  EXPECT_TRUE(last == (BPF_JMP | BPF_EXIT) || last == (BPF_JMP | BPF_JA)) << disassemble(p);
  bool has_exit = false;
  for (size_t pc = 0; pc < n; ++pc) has_exit |= !second_half[pc] && p.insns[pc].code == (BPF_JMP | BPF_EXIT);
  EXPECT_TRUE(has_exit) << disassemble(p);
  for (const auto& r : p.relocs) {
    ASSERT_LT(r.insn, n);
    EXPECT_TRUE(is_ld_imm64(p.insns[r.insn])) << "reloc at insn " << r.insn;
    EXPECT_TRUE(p.insns[r.insn].src_reg == BPF_PSEUDO_MAP_FD || p.insns[r.insn].src_reg == BPF_PSEUDO_MAP_VALUE);
    EXPECT_LT(r.map, map_count);
  }
}

const std::string kRegisterPressure =
    "BEGIN { $a = 1; $b = 2; $c = 3; $d = 4; $e = 5; $f = 6; $g = 7; $h = 8; $i = 9; $j = 10; $k = 11; $l = 12; "
    "printf(\"%d %d %d %d %d %d %d %d %d %d %d %d %d\\n\", $a + $b + $c + $d + $e + $f + $g + $h + $i + $j + $k + $l, "
    "$a, $b, $c, $d, $e, $f, $g, $h, $i, $j, $k, $l); }";

const std::vector<std::string> kLoadPrograms = {
    "BEGIN { @x = 1; }",
    kRegisterPressure,
    // Every intermediate live at once: products of pairs, summed at the end.
    "BEGIN { $a = nsecs; $b = nsecs; $c = nsecs; $d = nsecs; $e = nsecs; $f = nsecs; $g = nsecs; $h = nsecs; "
    "$i = nsecs; $j = nsecs; $k = nsecs; @r = ($a * $b) + ($c * $d) + ($e * $f) + ($g * $h) + ($i * $j) + $k + "
    "$a + $b + $c + $d + $e + $f + $g + $h + $i + $j; }",
    // String comparisons.
    "BEGIN { $s = comm; if ($s == \"bpfscope\") { @eq = 1; } if (comm != \"x\") { @ne = 1; } "
    "@t = \"abc\" == \"abd\"; }",
    // hist/lhist and other aggregations, keyed and scalar.
    "BEGIN { @h = hist(nsecs); @l = lhist(nsecs % 100, 0, 100, 10); @hk[pid] = hist(3); "
    "@lk[comm] = lhist(7, 0, 10, 5); @s = sum(3); @mi = min(4); @ma = max(5); @av = avg(6); @st = stats(7); }",
    // The largest values: a sum after 1921 (hist(n, 5)) or 1002 buckets;
    // stats() of signed values, keyed.
    "BEGIN { @hb = hist(nsecs, 5); @lb = lhist(nsecs % 2000, 0, 1000, 1); @sk[comm] = stats(-(int64)nsecs); }",
    // Tuple keys and values.
    "BEGIN { @t[pid, comm, 5] = count(); @u[\"a\", 1] = (2, \"bb\", comm); delete(@u[\"a\", 1]); "
    "@v[(1, \"x\")] = 1; }",
    // Nested ifs.
    "BEGIN { $x = nsecs; if ($x > 10) { if ($x % 2 == 0) { if ($x % 3 == 0) { @a = 1; } else { @a = 2; } } "
    "else if ($x % 5 == 0) { @a = 3; } else { @a = 4; } } else { @a = 5; } }",
    // Ternaries of strings, nested.
    "BEGIN { $n = nsecs; @s = $n % 2 ? \"odd\" : \"even\"; @t = $n % 3 == 0 ? ($n % 2 ? \"a\" : \"bbbbbbbb\") : comm; "
    "printf(\"%s %s\\n\", $n % 2 ? \"x\" : \"yy\", @s); }",
    "BEGIN { printf(\"%s %d %u %x\\n\", comm, pid, tid, nsecs); time(\"%H:%M\\n\"); print(\"v\"); exit(); }",
    "END { @e = count(); clear(@e); zero(@e); }",
    "tracepoint:syscalls:sys_enter_openat /pid > 1/ { @c[comm] = count(); @f[str(args.filename)] = count(); "
    "printf(\"%s %d %d\\n\", str(args.filename), args.dfd, args.flags); }",
    "tracepoint:syscalls:sys_enter_getp*id { @[probe] = count(); @n[probe, args.__syscall_nr] = sum(1); }",
    "BEGIN { $x = -5; @a = $x / 2; @b = $x % 3; @c = $x >> 1; @d = -$x; @e = ~$x; @f = !$x; "
    "@g = 0xffffffffffff; @h = $x << 40; @i = nsecs / (nsecs % 7 + 1); $y = 0; @j = nsecs / $y; }",
    "BEGIN { @x = 1; @x++; ++@x; @x--; @x += 5; @x -= 1; @x *= 2; @y[1] = 0; @y[1]++; $v = 0; $v += @x; $v++; "
    "printf(\"%d %d\\n\", $v, @y[1]); }",
    "BEGIN { $t = (1, \"ab\", comm); @t = $t; $u = $t.1; printf(\"%s %s %d\\n\", $u, $t.2, $t.0); }",
    "BEGIN { if (pid > 1 && (tid > 1 || uid == 0) && !(gid == 12345)) { @ok = 1; } @l = pid > 1 || comm == \"x\"; }",
    "tracepoint:syscalls:sys_enter_openat { $f = str(args.filename, 16); @s[$f] = count(); "
    "if ($f == \"/etc/passwd\") { printf(\"%s\\n\", $f); } @y = args.flags & 0x40 ? \"creat\" : \"nocreat\"; }",
    // Map loops: outer variables, string and tuple keys, per-CPU values,
    // break/continue/exit, nesting, context reads in a tracepoint.
    "BEGIN { @m[1] = 2; $n = 0; $s = \"x\"; for ($kv : @m) { $n += $kv.1; $s = \"y\"; if ($kv.0 == 3) { break; } "
    "else { continue; } } printf(\"%d %s\\n\", $n, $s); }",
    "BEGIN { @t[1, comm] = count(); for ($kv : @t) { printf(\"%d %s %d\\n\", $kv.0.0, $kv.0.1, $kv.1); exit(); } }",
    "BEGIN { @a[1] = 1; @b[\"k\"] = \"v\"; $t = 0; for ($x : @a) { for ($y : @b) { $t += $x.1; } "
    "for ($i : 0..3) { $t++; } } @r = $t; }",
    "tracepoint:syscalls:sys_enter_openat { @m[1] = 1; for ($kv : @m) { @f[str(args.filename)] = count(); "
    "@k[args.flags] = count(); } }",
    // A long-lived value (the scratch pointer) spilled while a later one is
    // spilled late: their stack slots must not be shared.
    "tracepoint:syscalls:sys_enter_openat /memcmp(str(args.filename), \"/etc/hostname\", 14) == 0/ { "
    "printf(\"%s %d\\n\", str(args.filename), memcmp(comm, \"head\", 4)); }",
    // strstr/strcontains: bpf_loop callbacks, nested for needles that are not
    // short literals.
    "tracepoint:syscalls:sys_enter_openat { $f = str(args.filename); @a = strstr($f, \"etc\"); "
    "@b = strcontains($f, $f); @c = strstr(\"/etc/hostname\", $f); }",
};

// The verifier accepts strstr() over two max_strlen strings: two levels of
// bpf_loop callbacks after the main program.
TEST(Codegen, StrstrIsNestedCallbacks) {
  auto c = compile_text("tracepoint:syscalls:sys_enter_openat { $f = str(args.filename); @i = strstr($f, $f); }");
  ASSERT_EQ(c.programs.size(), 1u);
  EXPECT_EQ(c.programs[0].subprograms.size(), 2u);
  EXPECT_EQ(load_all(c), "");
}

// The body of a map loop is a subprogram after the main program's
// instructions, and its address is the one the helper call receives.
TEST(Codegen, ForMapLoopIsASubprogram) {
  auto c = compile_text("BEGIN { @m[1] = 2; $n = 0; for ($kv : @m) { $n += $kv.1; if ($kv.0 == 1) { break; } } "
                        "@r = $n; }");
  ASSERT_EQ(c.programs.size(), 1u);
  const Program& p = c.programs[0];
  ASSERT_EQ(p.subprograms.size(), 1u);
  EXPECT_TRUE(p.func_relocs.empty());
  const uint32_t start = p.subprograms[0];
  ASSERT_LT(start, p.insns.size());
  // The main program ends with an exit right before the subprogram, and no
  // jump crosses the boundary.
  EXPECT_EQ(p.insns[start - 1].code, BPF_JMP | BPF_EXIT);
  for (size_t pc = 0; pc < p.insns.size(); ++pc) {
    const bpf_insn& i = p.insns[pc];
    if (BPF_CLASS(i.code) != BPF_JMP || BPF_OP(i.code) == BPF_CALL || BPF_OP(i.code) == BPF_EXIT) continue;
    const int64_t target = static_cast<int64_t>(pc) + 1 + i.off;
    EXPECT_EQ(pc < start, target < start) << "insn " << pc << "\n" << disassemble(p);
  }
  // The subprogram returns only 0 or 1 (r0 = imm; exit).
  for (size_t pc = start + 1; pc < p.insns.size(); ++pc)
    if (p.insns[pc].code == (BPF_JMP | BPF_EXIT)) {
      const bpf_insn& mov = p.insns[pc - 1];
      EXPECT_EQ(mov.code, BPF_ALU64 | BPF_MOV | BPF_K);
      EXPECT_EQ(mov.dst_reg, 0);
      EXPECT_TRUE(mov.imm == 0 || mov.imm == 1) << disassemble(p);
    }
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("subprogram 0:"), std::string::npos) << text;
  EXPECT_NE(text.find("&func <" + std::to_string(start) + ">"), std::string::npos) << text;
  EXPECT_EQ(load_all(c), "");
}

TEST(Codegen, StructureOfEmittedPrograms) {
  for (const auto& text : kLoadPrograms) {
    SCOPED_TRACE(text);
    auto c = compile_text(text);
    ASSERT_TRUE(c.typed.has_value());
    ASSERT_EQ(c.programs.size(), c.module.functions.size());
    const size_t maps = ir::map_specs(*c.typed, c.module, 4096).size();
    for (const auto& p : c.programs) check_structure(p, maps);
  }
}

TEST(Codegen, RegisterPressureSpills) {
  auto c = compile_text(kRegisterPressure);
  ASSERT_TRUE(c.typed.has_value());
  ASSERT_EQ(c.module.functions.size(), 1u);
  const auto& f = c.module.functions[0];
  auto live = compute_liveness(f);
  auto alloc = allocate_registers(f, live);
  ASSERT_TRUE(alloc.has_value()) << alloc.error();
  int spilled = 0;
  for (size_t v = 0; v < alloc->reg.size(); ++v) {
    int r = alloc->reg[v];
    EXPECT_TRUE(r == -1 || (r >= 6 && r <= 9)) << "v" << v << " in r" << r;
    if (r == -1 && alloc->slot[v] != 0) {
      ++spilled;
      EXPECT_LT(alloc->slot[v], 0);
      EXPECT_GE(alloc->slot[v], -kBpfStackSize);
      EXPECT_EQ(alloc->slot[v] % 8, 0);
    }
  }
  EXPECT_GT(spilled, 0) << "12 live variables cannot fit in R6-R9";
  EXPECT_LE(alloc->frame_size, static_cast<uint32_t>(kBpfStackSize));
  std::string dump;
  auto p = compile(f, &dump);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_FALSE(dump.empty());
}

// The per-event hot path of @[comm] = count() keeps every value in a
// register: the map entry pointer, looked up again on the cold insert path,
// has a hole in its live range there, so the cold path's values (the failed
// update counter) do not push the scratch pointer to the stack.
TEST(Codegen, CountHotPathHasNoSpills) {
  auto c = compile_text("tracepoint:syscalls:sys_enter_getppid { @[comm] = count(); }");
  ASSERT_EQ(c.programs.size(), 1u);
  const auto& p = c.programs[0];
  // Up to the first exit: no stores or loads through the frame pointer other
  // than the 4-byte scratch key.
  for (size_t pc = 0; pc < p.insns.size(); ++pc) {
    const bpf_insn& i = p.insns[pc];
    if (i.code == (BPF_JMP | BPF_EXIT)) break;
    bool mem = BPF_CLASS(i.code) == BPF_STX || BPF_CLASS(i.code) == BPF_LDX;
    bool fp = (BPF_CLASS(i.code) == BPF_STX && i.dst_reg == 10) || (BPF_CLASS(i.code) == BPF_LDX && i.src_reg == 10);
    EXPECT_FALSE(mem && fp && BPF_SIZE(i.code) == BPF_DW) << "insn " << pc << "\n" << disassemble(p);
  }
}

// A kernel variable's address (percpu_kaddr) is a ld_imm64 with
// BPF_PSEUDO_BTF_ID and the variable's vmlinux BTF id, re-created where used.
TEST(Codegen, KernelVarIsAPseudoBtfIdLoad) {
  ir::Function f;
  f.name = "kvar";
  ir::Builder b(f);
  ir::VregId var = b.kernel_var(1234);
  ir::VregId p = b.call(BPF_FUNC_this_cpu_ptr, {var});
  b.call(BPF_FUNC_this_cpu_ptr, {var});
  (void)p;
  b.ret(0);
  auto prog = compile(f);
  ASSERT_TRUE(prog.has_value()) << prog.error();
  int loads = 0;
  for (const auto& i : prog->insns)
    if (is_ld_imm64(i) && i.src_reg == BPF_PSEUDO_BTF_ID) {
      ++loads;
      EXPECT_EQ(i.imm, 1234);
      EXPECT_EQ(i.dst_reg, BPF_REG_1);  // straight into the helper's argument
    }
  EXPECT_EQ(loads, 2) << disassemble(*prog);
  EXPECT_NE(disassemble(*prog).find("&kernel var (BTF id 1234)"), std::string::npos) << disassemble(*prog);
}

TEST(Codegen, DisassembleEndsWithExit) {
  auto c = compile_text("BEGIN { @x = 1; }");
  ASSERT_EQ(c.programs.size(), 1u);
  std::string text = disassemble(c.programs[0]);
  EXPECT_NE(text.find("exit"), std::string::npos) << text;
}

// n integer variables all live at the final sum.
std::string many_live_variables(int n) {
  std::string s = "BEGIN { ", sum = "0";
  for (int i = 0; i < n; ++i) {
    s += "$v" + std::to_string(i) + " = nsecs; ";
    sum += " + $v" + std::to_string(i);
  }
  return s + "@r = " + sum + "; }";
}

TEST(Codegen, SpillsUpToTheStackLimit) {
  {
    auto c = compile_text(many_live_variables(40));
    ASSERT_EQ(c.programs.size(), 1u);
    EXPECT_EQ(load_all(c), "");
  }
  // Too many spills for 512 bytes of stack: a clean error, not a bad program.
  Compiled c;
  lang::Source src("stdin", many_live_variables(80));
  lang::Diagnostics diags;
  auto parsed = lang::parse(src, diags);
  ASSERT_TRUE(parsed.has_value());
  c.ast = std::make_unique<lang::Program>(std::move(*parsed));
  c.typed = sema::analyse(*c.ast, sema::Options{}, diags);
  ASSERT_TRUE(c.typed.has_value());
  c.module = ir::lower(*c.typed, ir::LowerOptions{});
  auto p = compile(c.module.functions.at(0));
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().find("bytes of stack (BPF allows 512)"), std::string::npos) << p.error();
}

// BUG (src/ir/lower.cpp, Lowerer::arith): a constant divisor of 0, or a
// constant shift count outside 0..63, is emitted as an ALU immediate, which the
// verifier rejects ("div by zero", "invalid shift 64") although sema accepted
// the program. Enable once fixed.
TEST(Codegen, ConstantDivByZeroAndWideShiftsLoad) {
  for (const std::string text : {"BEGIN { $x = nsecs; @a = $x / 0; }", "BEGIN { $x = nsecs; @a = $x % 0; }",
                                  "BEGIN { $x = nsecs; $x /= 0; @a = $x; }", "BEGIN { $x = nsecs; @a = $x << 64; }",
                                  "BEGIN { $x = nsecs; @a = $x >> 70; }"}) {
    SCOPED_TRACE(text);
    auto c = compile_text(text);
    ASSERT_EQ(c.programs.size(), 1u);
    EXPECT_EQ(load_all(c), "");
  }
}

TEST(Codegen, VerifierAcceptsPrograms) {
  for (const auto& text : kLoadPrograms) {
    SCOPED_TRACE(text);
    auto c = compile_text(text);
    ASSERT_TRUE(c.typed.has_value());
    ASSERT_EQ(c.programs.size(), c.module.functions.size());
    EXPECT_EQ(load_all(c), "");
  }
}

}  // namespace
}  // namespace bpfscope::codegen
