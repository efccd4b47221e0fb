// The backend: IR function -> BPF instructions. Stages, each in its own file:
// block layout, liveness, register allocation (linear scan over R6-R9 with
// spilling and stack-slot reuse), and emission (instruction selection and
// jump resolution); pipeline.cpp runs them in order. R0-R5 are never
// allocated: they carry call arguments and results and serve as scratch, so a
// value never has to move around a call.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lang/source.h"

namespace bpfscope::codegen {

// A ld_imm64 whose imm must become the fd of map `map` before loading (a map
// reference, BPF_PSEUDO_MAP_FD, or a direct value address, BPF_PSEUDO_MAP_VALUE).
struct MapReloc {
  uint32_t insn = 0;
  uint32_t map = 0;
};

// A ld_imm64 with BPF_PSEUDO_FUNC whose imm must become the offset of
// subprogram `subprogram` (resolved by compile() once all are laid out).
struct FuncReloc {
  uint32_t insn = 0;
  uint32_t subprogram = 0;
};

struct Program {
  std::string name;
  std::vector<bpf_insn> insns;
  std::vector<MapReloc> relocs;
  std::vector<lang::Loc> locs;  // by instruction: the script location it implements
  std::vector<uint32_t> subprograms;  // start instruction of each callback subprogram, ascending
  std::vector<FuncReloc> func_relocs; // emit() output; empty after compile()
};

struct Liveness {
  // By block: the vregs live on entry and on exit, as bitsets.
  std::vector<std::vector<uint64_t>> live_in, live_out;
};

// Where each vreg lives.
struct Allocation {
  std::vector<int8_t> reg;    // by vreg: 6-9, or -1 when spilled, rematerialized or dead
  std::vector<int16_t> slot;  // by vreg: fp offset of the spill slot, when spilled
  // By vreg: a constant defined once (Imm, MapFd, MapValue, StackAddr, FuncAddr, KernelVar) is
  // not kept in a register; each use re-creates it where it is needed
  // (straight into a call's argument register, say).
  std::vector<bool> remat;
  std::vector<ir::Inst> remat_def;
  std::vector<bool> dead;     // by vreg: never read, so its writes are dropped
  uint32_t frame_size = 0;    // stack bytes used (objects and spills)
};

ir::Function layout_blocks(const ir::Function& f);
Liveness compute_liveness(const ir::Function& f);
std::expected<Allocation, std::string> allocate_registers(const ir::Function& f, const Liveness& live);
std::expected<Program, std::string> emit(const ir::Function& f, const Allocation& alloc);

// The whole backend pipeline, in order, for the function and then each of
// its subprograms, which are appended after it. `regalloc_dump`, when
// given, receives the allocations (for -d regalloc).
std::expected<Program, std::string> compile(const ir::Function& f, std::string* regalloc_dump = nullptr);

std::string print(const ir::Function& f, const Allocation& alloc);  // -d regalloc
std::string disassemble(const Program& p);                           // -d bpf

inline constexpr int kBpfStackSize = 512;

}  // namespace bpfscope::codegen
