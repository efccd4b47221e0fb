// Linear-scan register allocation (Poletto & Sarkar) over R6-R9, the
// callee-saved registers, so allocated values survive helper calls. An
// interval that finds no register is spilled to an 8-byte stack slot; slots
// of expired intervals are reused.
#include <fmt/format.h>

#include <algorithm>

#include "bpf/codegen/codegen.h"

namespace bpfscope::codegen {
namespace {

struct Interval {
  ir::VregId vreg;
  uint32_t start = UINT32_MAX;
  uint32_t end = 0;
};

constexpr int kFirstReg = 6, kRegCount = 4;

bool test(const std::vector<uint64_t>& b, uint32_t i) { return (b[i / 64] >> (i % 64)) & 1; }

}  // namespace

std::expected<Allocation, std::string> allocate_registers(const ir::Function& f, const Liveness& live) {
  std::vector<Interval> iv(f.vreg_count);
  for (uint32_t v = 0; v < f.vreg_count; ++v) iv[v].vreg = v;
  auto touch = [&](ir::VregId v, uint32_t pos) {
    iv[v].start = std::min(iv[v].start, pos);
    iv[v].end = std::max(iv[v].end, pos);
  };
  // Positions follow the block layout order; each instruction takes 2.
  uint32_t pos = 0;
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    uint32_t block_start = pos;
    for (const auto& i : f.blocks[b].insts) {
      if (i.a != ir::kNoVreg) touch(i.a, pos);
      if (i.b != ir::kNoVreg) touch(i.b, pos);
      for (auto a : i.args) touch(a, pos);
      if (i.dst != ir::kNoVreg) touch(i.dst, pos + 1);
      pos += 2;
    }
    uint32_t block_end = pos - 1;
    for (uint32_t v = 0; v < f.vreg_count; ++v) {
      if (test(live.live_in[b], v)) touch(v, block_start);
      if (test(live.live_out[b], v)) touch(v, block_end);
    }
  }

  Allocation a;
  a.reg.assign(f.vreg_count, -1);
  a.slot.assign(f.vreg_count, 0);
  a.remat.assign(f.vreg_count, false);
  a.remat_def.assign(f.vreg_count, ir::Inst{});
  a.dead.assign(f.vreg_count, false);
  std::vector<uint32_t> defs(f.vreg_count), uses(f.vreg_count);
  for (const auto& b : f.blocks) {
    for (const auto& i : b.insts) {
      if (i.dst != ir::kNoVreg) {
        ++defs[i.dst];
        a.remat_def[i.dst] = i;
      }
      if (i.a != ir::kNoVreg) ++uses[i.a];
      if (i.b != ir::kNoVreg) ++uses[i.b];
      for (auto v : i.args) ++uses[v];
    }
  }
  for (uint32_t v = 0; v < f.vreg_count; ++v) {
    ir::Opcode op = a.remat_def[v].op;
    a.dead[v] = defs[v] > 0 && uses[v] == 0;
    a.remat[v] = defs[v] == 1 && !a.dead[v] &&
                 (op == ir::Opcode::Imm || op == ir::Opcode::MapFd || op == ir::Opcode::MapValue ||
                  op == ir::Opcode::StackAddr || op == ir::Opcode::FuncAddr);
  }
  std::vector<Interval> order;
  for (const auto& i : iv)
    if (i.start != UINT32_MAX && !a.remat[i.vreg] && !a.dead[i.vreg]) order.push_back(i);
  std::sort(order.begin(), order.end(), [](const Interval& x, const Interval& y) {
    return x.start != y.start ? x.start < y.start : x.vreg < y.vreg;
  });

  std::vector<Interval> active;  // sorted by end
  bool reg_free[kRegCount] = {true, true, true, true};
  // Slots of expired spilled intervals, with the end of their last owner: a
  // slot may only go to an interval that starts after that end (an active
  // interval spilled late occupies its slot from its own start).
  std::vector<std::pair<uint32_t, int16_t>> free_slots;
  std::vector<std::pair<uint32_t, int16_t>> slot_owner_end;  // spilled: (end, slot)
  int32_t frame = static_cast<int32_t>(f.stack_size);
  auto spill = [&](const Interval& i) {
    auto it = std::find_if(free_slots.begin(), free_slots.end(), [&](const auto& fs) { return fs.first < i.start; });
    int16_t s;
    if (it != free_slots.end()) {
      s = it->second;
      free_slots.erase(it);
    } else {
      frame += 8;
      s = static_cast<int16_t>(-frame);
    }
    slot_owner_end.push_back({i.end, s});
    a.slot[i.vreg] = s;
  };

  for (const auto& cur : order) {
    // Expire intervals that ended before this one starts.
    for (auto it = active.begin(); it != active.end();) {
      if (it->end < cur.start) {
        reg_free[a.reg[it->vreg] - kFirstReg] = true;
        it = active.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = slot_owner_end.begin(); it != slot_owner_end.end();) {
      if (it->first < cur.start) {
        free_slots.push_back(*it);
        it = slot_owner_end.erase(it);
      } else {
        ++it;
      }
    }
    int r = -1;
    for (int k = 0; k < kRegCount; ++k)
      if (reg_free[k]) {
        r = k;
        break;
      }
    auto insert_active = [&](const Interval& i) {
      active.insert(std::upper_bound(active.begin(), active.end(), i,
                                     [](const Interval& x, const Interval& y) { return x.end < y.end; }),
                    i);
    };
    if (r >= 0) {
      reg_free[r] = false;
      a.reg[cur.vreg] = static_cast<int8_t>(kFirstReg + r);
      insert_active(cur);
      continue;
    }
    // No register: spill whichever of cur and the active intervals ends last.
    const Interval& last = active.back();
    if (last.end > cur.end) {
      a.reg[cur.vreg] = a.reg[last.vreg];
      a.reg[last.vreg] = -1;
      spill(last);
      active.pop_back();
      insert_active(cur);
    } else {
      spill(cur);
    }
  }
  a.frame_size = static_cast<uint32_t>(frame);
  if (a.frame_size > kBpfStackSize)
    return std::unexpected(fmt::format("program {} needs {} bytes of stack (BPF allows {})", f.name, a.frame_size,
                                       kBpfStackSize));
  return a;
}

std::string print(const ir::Function& f, const Allocation& a) {
  std::string out = fmt::format("function {} (frame {} bytes)\n", f.name, a.frame_size);
  for (uint32_t v = 0; v < f.vreg_count; ++v) {
    if (a.remat[v])
      out += fmt::format("  v{} -> rematerialized\n", v);
    else if (a.reg[v] >= 0)
      out += fmt::format("  v{} -> r{}\n", v, a.reg[v]);
    else if (a.slot[v] != 0)
      out += fmt::format("  v{} -> [fp{}]\n", v, a.slot[v]);
  }
  return out;
}

}  // namespace bpfscope::codegen
