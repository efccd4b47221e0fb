// bpf_for_each_map_elem with a callback subprogram, hand-assembled: proves
// that this kernel loads a program with a BPF_PSEUDO_FUNC reference and no
// BTF (no func_info), that the callback can read and write the caller's
// stack through its context pointer (including a spilled ctx pointer, which
// keeps its type), and that a callback may itself iterate (nesting).
#include <gtest/gtest.h>

#include "bpf/bpf.h"
#include "bpf/libbpf_bpf.h"
#include "insn.h"

namespace bpfscope::bpf {
namespace {

using namespace bpfscope::bpf::test;

constexpr int32_t kForEachMapElem = 164;  // BPF_FUNC_for_each_map_elem

// dst = &subprogram; the subprogram starts at `target` (absolute index).
void ld_func(std::vector<bpf_insn>& out, uint8_t dst, int target) {
  const int at = static_cast<int>(out.size());
  out.push_back(make_insn(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_FUNC, 0, target - at - 1));
  out.push_back(make_insn(0, 0, 0, 0, 0));
}

constexpr bpf_insn ldx_dw(uint8_t dst, uint8_t src, int16_t off) {
  return make_insn(BPF_LDX | BPF_DW | BPF_MEM, dst, src, off, 0);
}

// Main: ctx struct {ctx pointer @-16, total @-8}; for_each(hash, cb, &ctx);
// out[0] = total, out[1] = the helper's result (elements visited).
// `cb_start` is patched in once the main part's length is known.
std::vector<bpf_insn> main_part(int hash_fd, int out_fd, int cb_start) {
  std::vector<bpf_insn> p;
  p.push_back(mov64_reg(BPF_REG_6, BPF_REG_1));
  p.push_back(st_mem(BPF_DW, BPF_REG_10, -8, 0));
  p.push_back(stx_mem(BPF_DW, BPF_REG_10, BPF_REG_6, -16));
  ld_map_fd(p, BPF_REG_1, hash_fd);
  ld_func(p, BPF_REG_2, cb_start);
  p.push_back(mov64_reg(BPF_REG_3, BPF_REG_10));
  p.push_back(alu64_imm(BPF_ADD, BPF_REG_3, -16));
  p.push_back(mov64_imm(BPF_REG_4, 0));
  p.push_back(call(kForEachMapElem));
  p.push_back(mov64_reg(BPF_REG_8, BPF_REG_0));
  p.push_back(ldx_dw(BPF_REG_7, BPF_REG_10, -8));
  p.push_back(st_mem(BPF_W, BPF_REG_10, -20, 0));
  p.push_back(mov64_reg(BPF_REG_2, BPF_REG_10));
  p.push_back(alu64_imm(BPF_ADD, BPF_REG_2, -20));
  ld_map_fd(p, BPF_REG_1, out_fd);
  p.push_back(call(BPF_FUNC_map_lookup_elem));
  p.push_back(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 2));
  p.push_back(stx_mem(BPF_DW, BPF_REG_0, BPF_REG_7, 0));
  p.push_back(stx_mem(BPF_DW, BPF_REG_0, BPF_REG_8, 8));
  p.push_back(mov64_imm(BPF_REG_0, 0));
  p.push_back(exit_insn());
  return p;
}

struct Fixture {
  Fd hash, out;
};

Fixture make_maps() {
  Fixture f;
  auto h = create_map(BPF_MAP_TYPE_HASH, "cb_hash", 8, 8, 16);
  auto o = create_map(BPF_MAP_TYPE_ARRAY, "cb_out", 4, 16, 1);
  EXPECT_TRUE(h.has_value() && o.has_value());
  if (!h || !o) return f;
  f.hash = std::move(*h);
  f.out = std::move(*o);
  for (uint64_t k = 1; k <= 3; ++k) {
    uint64_t v = k * 10;
    EXPECT_EQ(bpf_map_update_elem(f.hash.get(), &k, &v, BPF_ANY), 0);
  }
  return f;
}

std::pair<uint64_t, uint64_t> run_and_read(const std::vector<bpf_insn>& insns, int out_fd,
                                           std::vector<uint32_t> subprograms) {
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_RAW_TRACEPOINT;
  spec.name = "cb_test";
  spec.insns = insns;
  spec.subprograms = subprograms;
  auto p = load_program(spec);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().log);
  if (!p) return {0, 0};
  EXPECT_TRUE(run_once(p->fd.get()).has_value());
  uint32_t zero = 0;
  uint64_t out[2] = {};
  EXPECT_EQ(bpf_map_lookup_elem(out_fd, &zero, out), 0);
  return {out[0], out[1]};
}

TEST(Callback, ForEachMapElemSumsThroughCallerStack) {
  Fixture f = make_maps();
  ASSERT_TRUE(f.hash && f.out);
  int start = static_cast<int>(main_part(f.hash.get(), f.out.get(), 0).size());
  std::vector<bpf_insn> p = main_part(f.hash.get(), f.out.get(), start);
  // Callback(map r1, key r2, value r3, ctx r4).
  p.push_back(ldx_dw(BPF_REG_5, BPF_REG_3, 0));            // value
  p.push_back(ldx_dw(BPF_REG_0, BPF_REG_4, 8));
  p.push_back(make_insn(BPF_ALU64 | BPF_ADD | BPF_X, BPF_REG_0, BPF_REG_5, 0, 0));
  p.push_back(stx_mem(BPF_DW, BPF_REG_4, BPF_REG_0, 8));   // total += value
  p.push_back(mov64_imm(BPF_REG_0, 0));                    // continue
  p.push_back(exit_insn());
  auto [total, visited] = run_and_read(p, f.out.get(), {static_cast<uint32_t>(start)});
  EXPECT_EQ(total, 60u);
  EXPECT_EQ(visited, 3u);
}

// The program context, spilled to the caller's stack, is still a context
// pointer when the callback reads it back (so builtins that read the
// context work in a loop body). Loaded only: a test run of a raw
// tracepoint program that reads its context needs a context buffer.
TEST(Callback, SpilledContextPointerKeepsItsType) {
  Fixture f = make_maps();
  ASSERT_TRUE(f.hash && f.out);
  int start = static_cast<int>(main_part(f.hash.get(), f.out.get(), 0).size());
  std::vector<bpf_insn> p = main_part(f.hash.get(), f.out.get(), start);
  p.push_back(ldx_dw(BPF_REG_6, BPF_REG_4, 0));
  p.push_back(ldx_dw(BPF_REG_7, BPF_REG_6, 8));  // args[1] of the raw tracepoint
  p.push_back(stx_mem(BPF_DW, BPF_REG_4, BPF_REG_7, 8));
  p.push_back(mov64_imm(BPF_REG_0, 0));
  p.push_back(exit_insn());
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_RAW_TRACEPOINT;
  spec.name = "cb_ctx";
  spec.insns = p;
  spec.subprograms = {static_cast<uint32_t>(start)};
  auto loaded = load_program(spec);
  EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().log);
}

TEST(Callback, ReturningOneStopsTheIteration) {
  Fixture f = make_maps();
  ASSERT_TRUE(f.hash && f.out);
  int start = static_cast<int>(main_part(f.hash.get(), f.out.get(), 0).size());
  std::vector<bpf_insn> p = main_part(f.hash.get(), f.out.get(), start);
  p.push_back(ldx_dw(BPF_REG_0, BPF_REG_4, 8));
  p.push_back(alu64_imm(BPF_ADD, BPF_REG_0, 1));
  p.push_back(stx_mem(BPF_DW, BPF_REG_4, BPF_REG_0, 8));
  p.push_back(mov64_imm(BPF_REG_0, 1));  // break after the first element
  p.push_back(exit_insn());
  auto [total, visited] = run_and_read(p, f.out.get(), {static_cast<uint32_t>(start)});
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(visited, 1u);
}

TEST(Callback, NestedIteration) {
  Fixture f = make_maps();
  ASSERT_TRUE(f.hash && f.out);
  int start = static_cast<int>(main_part(f.hash.get(), f.out.get(), 0).size());
  std::vector<bpf_insn> p = main_part(f.hash.get(), f.out.get(), start);
  // Outer callback: for_each(map, inner, ctx) with the caller's own ctx
  // pointer (r4, into the main frame); then continue.
  const int outer_len = 7;
  p.push_back(mov64_reg(BPF_REG_3, BPF_REG_4));
  p.push_back(mov64_imm(BPF_REG_4, 0));
  ld_func(p, BPF_REG_2, start + outer_len);
  p.push_back(call(kForEachMapElem));  // r1 is still the map
  p.push_back(mov64_imm(BPF_REG_0, 0));
  p.push_back(exit_insn());
  ASSERT_EQ(static_cast<int>(p.size()), start + outer_len);
  // Inner callback: count.
  p.push_back(ldx_dw(BPF_REG_0, BPF_REG_4, 8));
  p.push_back(alu64_imm(BPF_ADD, BPF_REG_0, 1));
  p.push_back(stx_mem(BPF_DW, BPF_REG_4, BPF_REG_0, 8));
  p.push_back(mov64_imm(BPF_REG_0, 0));
  p.push_back(exit_insn());
  auto [total, visited] =
      run_and_read(p, f.out.get(), {static_cast<uint32_t>(start), static_cast<uint32_t>(start + outer_len)});
  EXPECT_EQ(total, 9u);
  EXPECT_EQ(visited, 3u);
}

}  // namespace
}  // namespace bpfscope::bpf
