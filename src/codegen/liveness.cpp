// Backward dataflow over the CFG: live_in(b) = use(b) | (live_out(b) - def(b)),
// live_out(b) = union of live_in over successors; iterated to a fixed point.
#include "codegen/codegen.h"

namespace bpfscope::codegen {
namespace {

using Bits = std::vector<uint64_t>;

void set(Bits& b, uint32_t i) { b[i / 64] |= 1ull << (i % 64); }
bool test(const Bits& b, uint32_t i) { return (b[i / 64] >> (i % 64)) & 1; }

template <typename Fn>
void for_uses(const ir::Inst& i, Fn fn) {
  if (i.a != ir::kNoVreg) fn(i.a);
  if (i.b != ir::kNoVreg) fn(i.b);
  for (auto a : i.args) fn(a);
}

}  // namespace

Liveness compute_liveness(const ir::Function& f) {
  size_t words = (f.vreg_count + 63) / 64 + 1;
  size_t n = f.blocks.size();
  std::vector<Bits> use(n, Bits(words)), def(n, Bits(words));
  for (size_t b = 0; b < n; ++b) {
    for (const auto& i : f.blocks[b].insts) {
      for_uses(i, [&](ir::VregId v) {
        if (!test(def[b], v)) set(use[b], v);
      });
      if (i.dst != ir::kNoVreg) set(def[b], i.dst);
    }
  }
  Liveness live;
  live.live_in.assign(n, Bits(words));
  live.live_out.assign(n, Bits(words));
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t b = n; b-- > 0;) {
      const auto& last = f.blocks[b].insts.back();
      Bits out(words);
      auto add = [&](ir::BlockId s) {
        for (size_t w = 0; w < words; ++w) out[w] |= live.live_in[s][w];
      };
      if (last.op == ir::Opcode::Jump) add(last.t);
      if (last.op == ir::Opcode::Branch) {
        add(last.t);
        add(last.f);
      }
      Bits in(words);
      for (size_t w = 0; w < words; ++w) in[w] = use[b][w] | (out[w] & ~def[b][w]);
      if (in != live.live_in[b] || out != live.live_out[b]) {
        live.live_in[b] = std::move(in);
        live.live_out[b] = std::move(out);
        changed = true;
      }
    }
  }
  return live;
}

}  // namespace bpfscope::codegen
