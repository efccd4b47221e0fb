// Drops blocks that cannot be reached from the entry: the verifier rejects
// unreachable instructions, and lowering leaves some behind (code after
// exit() or return).
#include "bpf/codegen/codegen.h"

namespace bpfscope::codegen {

ir::Function prune_unreachable(const ir::Function& f) {
  std::vector<int> new_id(f.blocks.size(), -1);
  std::vector<ir::BlockId> order, work{0};
  std::vector<bool> seen(f.blocks.size());
  seen[0] = true;
  // Keep the original layout order among reachable blocks.
  while (!work.empty()) {
    ir::BlockId b = work.back();
    work.pop_back();
    if (f.blocks[b].insts.empty()) continue;
    const auto& last = f.blocks[b].insts.back();
    for (ir::BlockId s : {last.t, last.f}) {
      bool is_succ = last.op == ir::Opcode::Branch || (last.op == ir::Opcode::Jump && s == last.t);
      if (is_succ && s < f.blocks.size() && !seen[s]) {
        seen[s] = true;
        work.push_back(s);
      }
    }
  }
  ir::Function out;
  out.name = f.name;
  out.kind = f.kind;
  out.vreg_count = f.vreg_count;
  out.stack_size = f.stack_size;
  for (size_t b = 0; b < f.blocks.size(); ++b)
    if (seen[b]) new_id[b] = static_cast<int>(order.size()), order.push_back(static_cast<ir::BlockId>(b));
  for (ir::BlockId b : order) {
    ir::Block nb = f.blocks[b];
    if (!nb.insts.empty()) {
      auto& last = nb.insts.back();
      if (last.op == ir::Opcode::Jump || last.op == ir::Opcode::Branch) {
        last.t = static_cast<ir::BlockId>(new_id[last.t]);
        if (last.op == ir::Opcode::Branch) last.f = static_cast<ir::BlockId>(new_id[last.f]);
      }
    }
    out.blocks.push_back(std::move(nb));
  }
  return out;
}

}  // namespace bpfscope::codegen
