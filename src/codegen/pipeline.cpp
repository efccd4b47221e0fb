// The backend's pipeline, in order: block layout, the IR verifier, liveness,
// register allocation, emission; then each subprogram's, appended after the
// program, and the references to them resolved.
#include <fmt/format.h>

#include "codegen/codegen.h"

namespace bpfscope::codegen {

namespace {

std::expected<Program, std::string> compile_function(const ir::Function& input, std::string* regalloc_dump) {
  ir::Function f = layout_blocks(input);
  if (auto err = ir::verify(f); !err.empty()) return std::unexpected("invalid IR: " + err);
  Liveness live = compute_liveness(f);
  auto alloc = allocate_registers(f, live);
  if (!alloc) return std::unexpected(alloc.error());
  if (regalloc_dump) *regalloc_dump += print(f, *alloc);
  return emit(f, *alloc);
}

}  // namespace

std::expected<Program, std::string> compile(const ir::Function& input, std::string* regalloc_dump) {
  auto main = compile_function(input, regalloc_dump);
  if (!main) return main;
  Program& p = *main;
  // Each subprogram has its own registers and frame; its instructions follow
  // the main program's, and its map references move with them.
  for (const auto& sub : input.subprograms) {
    auto s = compile_function(sub, regalloc_dump);
    if (!s) return std::unexpected(s.error());
    const auto base = static_cast<uint32_t>(p.insns.size());
    p.subprograms.push_back(base);
    p.insns.insert(p.insns.end(), s->insns.begin(), s->insns.end());
    p.locs.insert(p.locs.end(), s->locs.begin(), s->locs.end());
    for (auto r : s->relocs) p.relocs.push_back({r.insn + base, r.map});
    for (auto r : s->func_relocs) p.func_relocs.push_back({r.insn + base, r.subprogram});
  }
  // A BPF_PSEUDO_FUNC load's imm is the callee's offset from the next
  // instruction, as for a bpf-to-bpf call.
  for (const auto& r : p.func_relocs) {
    if (r.subprogram >= p.subprograms.size())
      return std::unexpected(fmt::format("program {}: reference to a missing subprogram", p.name));
    p.insns[r.insn].imm = static_cast<int32_t>(p.subprograms[r.subprogram]) - static_cast<int32_t>(r.insn) - 1;
  }
  p.func_relocs.clear();
  return main;
}

}  // namespace bpfscope::codegen
