// A verifier rejection is reported at the script location of the rejected
// instruction: the log's instruction index goes through the program's
// location table.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include "bpf/bpf.h"
#include "codegen/codegen.h"
#include "ir/builder.h"
#include "runtime/verifier_log.h"

namespace bpfscope::runtime {
namespace {

TEST(VerifierLog, ParsesInstructionAndMessage) {
  const char* log =
      "func#0 @0\n"
      "0: R1=ctx() R10=fp0\n"
      "0: (bf) r6 = r1                       ; R1=ctx() R6_w=ctx()\n"
      "7: (85) call bpf_map_lookup_elem#1    ; R0_w=map_value_or_null(id=1,off=0,ks=4,vs=8,imm=0)\n"
      "8: (79) r1 = *(u64 *)(r0 +0)\n"
      "R0 invalid mem access 'map_value_or_null'\n"
      "processed 9 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n";
  VerifierFailure f = parse_verifier_log(log);
  EXPECT_EQ(f.insn, 8);
  EXPECT_EQ(f.message, "R0 invalid mem access 'map_value_or_null'");
}

TEST(VerifierLog, EmptyLog) {
  VerifierFailure f = parse_verifier_log("");
  EXPECT_EQ(f.insn, -1);
  EXPECT_EQ(f.message, "");
}

// A real rejection: a load through a map lookup that was never null-checked.
// The rejected instruction must map back to the location given to the load.
TEST(VerifierLog, RealRejectionMapsToTheLoadsLocation) {
  ir::Function f;
  f.name = "bad";
  ir::Builder b(f);
  b.set_loc({0, 1});
  b.ctx();
  int32_t slot = b.reserve_stack(8);
  ir::VregId key = b.stack_addr(slot);
  b.store_imm(4, key, 0, 0);
  ir::VregId ptr = b.call(BPF_FUNC_map_lookup_elem, {b.map_fd(0), key});
  b.set_loc({40, 52});
  ir::VregId v = b.load(8, ptr, 0);
  b.set_loc({60, 61});
  ir::VregId sum = b.alu_imm(ir::AluOp::Add, v, 1);
  (void)sum;
  b.ret(0);
  auto prog = codegen::compile(f);
  ASSERT_TRUE(prog.has_value()) << prog.error();

  // A hash map: an array lookup with a constant in-range key is known non-null.
  auto map = bpf::create_map(BPF_MAP_TYPE_HASH, "t", 4, 8, 1);
  ASSERT_TRUE(map.has_value()) << map.error().message;
  for (const auto& r : prog->relocs) prog->insns[r.insn].imm = map->get();
  bpf::ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_TRACEPOINT;
  spec.name = "bad";
  spec.insns = prog->insns;
  auto loaded = bpf::load_program(spec);
  ASSERT_FALSE(loaded.has_value()) << "the verifier accepted an unchecked map value";
  VerifierFailure failure = parse_verifier_log(loaded.error().log);
  ASSERT_GE(failure.insn, 0) << loaded.error().log;
  ASSERT_LT(static_cast<size_t>(failure.insn), prog->locs.size());
  EXPECT_EQ(prog->locs[failure.insn].begin, 40u) << codegen::disassemble(*prog) << loaded.error().log;
  EXPECT_EQ(prog->locs[failure.insn].end, 52u);
  EXPECT_NE(failure.message.find("map_value_or_null"), std::string::npos) << failure.message;
}

}  // namespace
}  // namespace bpfscope::runtime
