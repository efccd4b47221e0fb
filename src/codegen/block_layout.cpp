// Block layout: drops blocks that cannot be reached from the entry (the
// verifier rejects unreachable instructions, and lowering leaves some behind:
// code after exit() or return) and orders the rest in chains, so that a
// branch's false successor and a jump's target come next and need no jump.
#include "codegen/codegen.h"

namespace bpfscope::codegen {

ir::Function layout_blocks(const ir::Function& f) {
  std::vector<int> new_id(f.blocks.size(), -1);
  std::vector<ir::BlockId> order;
  std::vector<ir::BlockId> pending{0};
  while (!pending.empty()) {
    ir::BlockId b = pending.back();
    pending.pop_back();
    // Follow the chain of fall-through successors from b.
    while (new_id[b] < 0 && !f.blocks[b].insts.empty()) {
      new_id[b] = static_cast<int>(order.size());
      order.push_back(b);
      const auto& last = f.blocks[b].insts.back();
      if (last.op == ir::Opcode::Jump) {
        b = last.t;
      } else if (last.op == ir::Opcode::Branch) {
        pending.push_back(last.t);
        b = last.f;
      } else {
        break;
      }
    }
  }
  ir::Function out;
  out.name = f.name;
  out.kind = f.kind;
  out.vreg_count = f.vreg_count;
  out.stack_size = f.stack_size;
  for (ir::BlockId b : order) {
    ir::Block nb = f.blocks[b];
    auto& last = nb.insts.back();
    if (last.op == ir::Opcode::Jump || last.op == ir::Opcode::Branch) {
      last.t = static_cast<ir::BlockId>(new_id[last.t]);
      if (last.op == ir::Opcode::Branch) last.f = static_cast<ir::BlockId>(new_id[last.f]);
    }
    out.blocks.push_back(std::move(nb));
  }
  return out;
}

}  // namespace bpfscope::codegen
