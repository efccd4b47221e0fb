// Linear-scan register allocation over R6-R9, the callee-saved registers,
// so allocated values survive helper calls. Values are taken in order of
// their first position; each has live ranges with holes, and a register can
// hold several values whose ranges do not overlap. A value that finds no
// register is spilled to an 8-byte stack slot; slots of expired values are
// reused.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/codegen.h"

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
  // Each vreg's live ranges in layout positions (each instruction takes 2:
  // operands are read at pos, the result written at pos + 1), and their hull.
  // A value redefined on a cold path (a map entry pointer looked up again
  // after an insert) has a hole between its uses, where its register can
  // hold another value.
  std::vector<Interval> iv(f.vreg_count);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> ranges(f.vreg_count);
  for (uint32_t v = 0; v < f.vreg_count; ++v) iv[v].vreg = v;
  std::vector<uint32_t> first(f.vreg_count), last(f.vreg_count);
  std::vector<ir::VregId> touched;
  uint32_t pos = 0;
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const uint32_t block_start = pos;
    touched.clear();
    auto touch = [&](ir::VregId v, uint32_t at) {
      if (std::find(touched.begin(), touched.end(), v) == touched.end()) {
        touched.push_back(v);
        first[v] = at;
      }
      last[v] = std::max(last[v], at);
    };
    for (const auto& i : f.blocks[b].insts) {
      if (i.a != ir::kNoVreg) touch(i.a, pos);
      if (i.b != ir::kNoVreg) touch(i.b, pos);
      for (auto a : i.args) touch(a, pos);
      if (i.dst != ir::kNoVreg) touch(i.dst, pos + 1);
      pos += 2;
    }
    const uint32_t block_end = pos - 1;
    auto add_range = [&](ir::VregId v, uint32_t from, uint32_t to) {
      auto& r = ranges[v];
      if (!r.empty() && r.back().second + 1 >= from) r.back().second = std::max(r.back().second, to);
      else r.push_back({from, to});
      iv[v].start = std::min(iv[v].start, from);
      iv[v].end = std::max(iv[v].end, to);
    };
    for (uint32_t v = 0; v < f.vreg_count; ++v) {
      bool in = test(live.live_in[b], v), out = test(live.live_out[b], v);
      bool used = std::find(touched.begin(), touched.end(), v) != touched.end();
      if (!in && !out && !used) continue;
      add_range(v, in ? block_start : first[v], out ? block_end : used ? last[v] : block_start);
    }
    for (auto v : touched) last[v] = 0;
  }
  auto overlap = [&](ir::VregId x, ir::VregId y) {
    const auto& a = ranges[x];
    const auto& b = ranges[y];
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      if (a[i].second < b[j].first) ++i;
      else if (b[j].second < a[i].first) ++j;
      else return true;
    }
    return false;
  };

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
                  op == ir::Opcode::StackAddr || op == ir::Opcode::FuncAddr || op == ir::Opcode::KernelVar);
  }
  std::vector<Interval> order;
  for (const auto& i : iv)
    if (i.start != UINT32_MAX && !a.remat[i.vreg] && !a.dead[i.vreg]) order.push_back(i);
  std::sort(order.begin(), order.end(), [](const Interval& x, const Interval& y) {
    return x.start != y.start ? x.start < y.start : x.vreg < y.vreg;
  });

  // The values each register holds, whose ranges never overlap.
  std::vector<Interval> held[kRegCount];
  // Slots of expired spilled intervals, with the end of their last owner: a
  // slot may only go to an interval that starts after that end (an interval
  // evicted from a register occupies its slot from its own start).
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
    for (auto it = slot_owner_end.begin(); it != slot_owner_end.end();) {
      if (it->first < cur.start) {
        free_slots.push_back(*it);
        it = slot_owner_end.erase(it);
      } else {
        ++it;
      }
    }
    // The first register whose values' ranges all miss cur's; else the one
    // where a single value is in the way and ends after cur (that value
    // goes to the stack); else cur does.
    int chosen = -1, evict_reg = -1;
    size_t evict_at = 0;
    for (int k = 0; k < kRegCount && chosen < 0; ++k) {
      int conflicts = 0;
      size_t at = 0;
      for (size_t h = 0; h < held[k].size(); ++h) {
        if (held[k][h].end < cur.start || !overlap(held[k][h].vreg, cur.vreg)) continue;
        ++conflicts;
        at = h;
      }
      if (conflicts == 0) {
        chosen = k;
      } else if (conflicts == 1 && held[k][at].end > cur.end &&
                 (evict_reg < 0 || held[k][at].end > held[evict_reg][evict_at].end)) {
        evict_reg = k;
        evict_at = at;
      }
    }
    if (chosen < 0 && evict_reg >= 0) {
      Interval out = held[evict_reg][evict_at];
      held[evict_reg].erase(held[evict_reg].begin() + static_cast<ptrdiff_t>(evict_at));
      a.reg[out.vreg] = -1;
      spill(out);
      chosen = evict_reg;
    }
    if (chosen < 0) {
      spill(cur);
      continue;
    }
    a.reg[cur.vreg] = static_cast<int8_t>(kFirstReg + chosen);
    held[chosen].push_back(cur);
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
