// The IR's structural verifier: the invariants every backend stage assumes
// (codegen::compile runs it after block layout).
#include <fmt/format.h>

#include "ir/ir.h"

namespace bpfscope::ir {
namespace {

bool is_terminator(Opcode op) { return op == Opcode::Jump || op == Opcode::Branch || op == Opcode::Ret; }

}  // namespace

std::string verify(const Function& f) {
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const auto& insts = f.blocks[b].insts;
    if (insts.empty()) return fmt::format("bb{} is empty", b);
    for (size_t k = 0; k < insts.size(); ++k) {
      const Inst& i = insts[k];
      bool last = k + 1 == insts.size();
      if (is_terminator(i.op) != last) return fmt::format("bb{}: terminator misplaced at {}", b, k);
      if ((i.op == Opcode::Jump || i.op == Opcode::Branch) && (i.t >= f.blocks.size() || i.f >= f.blocks.size()))
        return fmt::format("bb{}: branch to a missing block", b);
      for (VregId r : {i.dst, i.a, i.b})
        if (r != kNoVreg && r >= f.vreg_count) return fmt::format("bb{}: vreg v{} out of range", b, r);
      if (i.op == Opcode::Call && i.args.size() > 5) return fmt::format("bb{}: call with more than 5 arguments", b);
      if (i.op == Opcode::Ctx && (b != 0 || k != 0)) return "ctx must be the first instruction";
      if (i.op == Opcode::Param && (b != 0 || k > 4 || i.imm < 0 || i.imm > 4 ||
                                    (k > 0 && insts[k - 1].op != Opcode::Param)))
        return "params must be the first instructions";
    }
  }
  return "";
}

}  // namespace bpfscope::ir
