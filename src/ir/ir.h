// The IR: BPF-shaped three-address code over virtual registers, in basic
// blocks, with explicit helper calls, map references and source locations.
// One ir::Function per BPF program. The backend (src/codegen) allocates
// registers and emits instructions from it.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <linux/bpf.h>

#include "lang/source.h"
#include "bpf/bpf.h"
#include "sema/sema.h"

namespace bpfscope::ir {

using VregId = uint32_t;
using BlockId = uint32_t;
inline constexpr VregId kNoVreg = UINT32_MAX;

// ORDER Opcode: kOpcodeInfo in print.cpp has one row per opcode.
enum class Opcode {
  Ctx,        // dst = the context pointer (R1 at entry); only at the start of block 0
  Imm,        // dst = imm
  Mov,        // dst = a
  Alu,        // dst = a <alu> (b or imm)
  Load,       // dst = *(u<size*8> *)(a + off), zero-extended
  Store,      // *(u<size*8> *)(a + off) = b
  StoreImm,   // *(u<size*8> *)(a + off) = imm (imm fits in 32 bits, sign-extended for size 8)
  AtomicAdd,  // lock *(u64 *)(a + off) += b; with a dst, dst = the value before (fetch)
  MapFd,      // dst = address of map `imm` (a ld_imm64 with the map's fd, patched at load)
  MapValue,   // dst = address of the value of array map `imm` (1 entry) + off: direct access, no call
  StackAddr,  // dst = fp + off (off negative; a stack object reserved by the function)
  Param,      // dst = argument register R(1 + imm) at entry; only at the start of block 0 of a subprogram
  FuncAddr,   // dst = address of subprogram `imm` (a ld_imm64 with BPF_PSEUDO_FUNC), for callback helpers
  KernelVar,  // dst = address of the kernel variable with vmlinux BTF id `imm` (ld_imm64 BPF_PSEUDO_BTF_ID)
  Call,       // dst = helper `imm`(args...); clobbers R0-R5. With off = BPF_PSEUDO_KFUNC_CALL,
              // imm is the vmlinux BTF id of a kfunc instead
  // Terminators: the last instruction of each block, and only there.
  Jump,       // goto t
  Branch,     // if (a <cond> (b or imm)) goto t; else goto f
  Ret,        // return imm
};

// Bswap: byte swap of the low imm (16, 32 or 64) bits, zero-extended.
enum class AluOp { Add, Sub, Mul, Div, Mod, And, Or, Xor, Lsh, Rsh, Arsh, Neg, Bswap };
enum class Cond { Eq, Ne, Gt, Ge, Lt, Le, SGt, SGe, SLt, SLe, Set };

struct Inst {
  Opcode op = Opcode::Imm;
  VregId dst = kNoVreg;
  VregId a = kNoVreg;
  VregId b = kNoVreg;  // kNoVreg: use imm
  int64_t imm = 0;
  int32_t off = 0;
  uint8_t size = 8;    // Load/Store/StoreImm: 1, 2, 4 or 8
  AluOp alu = AluOp::Add;
  Cond cond = Cond::Eq;
  BlockId t = 0, f = 0;
  std::vector<VregId> args;  // Call
  lang::Loc loc;             // the script location this instruction implements
};

struct Block {
  std::vector<Inst> insts;
};

struct Function {
  std::string name;
  sema::ProbeKind kind = sema::ProbeKind::Begin;
  std::vector<Block> blocks;  // blocks[0] is the entry
  uint32_t vreg_count = 0;
  uint32_t stack_size = 0;    // bytes of stack objects (StackAddr), below the spill area
  std::vector<std::string> vreg_names;  // optional names for -d ir
  // Callback subprograms (bodies of for-map loops), emitted after this
  // function's instructions; FuncAddr's imm indexes this list. Only the
  // program's main function has them (a nested loop's callback is listed
  // here too), and each one has its own registers and stack frame.
  std::vector<Function> subprograms;
};

// Maps beyond the script's own (sema::TypedProgram::maps are ids 0..n-1).
struct SupportMaps {
  uint32_t ringbuf;   // async records
  uint32_t scratch;   // per-CPU scratch memory for strings, keys, records
  uint32_t zero;      // a zero-filled array value, for inserting fresh aggregation entries
  uint32_t lost;      // one u64: records the ring buffer refused (mmapable: user space reads it
                      // without a bpf() call, which would hold off probes on its CPU)
  uint32_t control;   // u64s: the first non-zero while the probes are held (until BEGIN has run) or stopped
                      // (exit, signal); then the generation of each swapped map (Module::swapped)
  uint32_t kstacks;   // stack traces for kstack (BPF_MAP_TYPE_STACK_TRACE)
  uint32_t ustacks;   // and for ustack
  uint32_t failed;    // per-CPU counts of failed updates, one slot per script map (a full map)
  uint32_t build_id_stacks;  // ustack(build_id): (build id, file offset) frames (BPF_F_STACK_BUILD_ID)
  uint32_t ustack_pids;      // the processes whose user stacks were taken (LRU hash of tgid)
  uint32_t skb_output;       // skboutput()'s packets (a perf event array; created only when used)
};

// A helper call whose failure is reported at run time: a failed map update
// always (counted, and the first failure per map and CPU sent as a record),
// probe reads and get_stackid with -k. The record is [kHelperErrorRecord]
// [u32 site][s32 return code]; the site indexes Module::sites.
struct HelperSite {
  int helper = 0;     // BPF_FUNC_*
  lang::Loc loc;      // the statement or expression that made the call
  int32_t map = -1;   // the script map a failed update was for
};
inline constexpr int kDivideByZero = -1;  // HelperSite::helper of a division or modulo by 0
inline constexpr uint64_t kHelperErrorRecord = ~uint64_t{0};
inline constexpr uint32_t kHelperErrorSize = 16;

// The first user stack taken of a process (its tgid not yet in
// SupportMaps::ustack_pids) sends [kUstackPidRecord][u32 tgid][u32 0], so
// that user space reads its mappings while it exists: its stacks are named
// when the maps print, after it exited.
inline constexpr uint64_t kUstackPidRecord = ~uint64_t{1};
inline constexpr uint32_t kUstackPidSize = 16;

inline constexpr uint32_t kMaxStackFrames = 127;  // kernel.perf_event_max_stack

struct Module {
  std::vector<Function> functions;  // one per sema::ProgramUnit (and target, when specific)
  std::vector<uint32_t> unit_of;    // by function: index into TypedProgram::units
  std::vector<int32_t> target_of;   // by function: target index, or -1 when it serves all targets
  SupportMaps support{};
  uint32_t scratch_size = 8;        // bytes of the per-CPU scratch value
  uint32_t zero_size = 8;           // bytes of the zero map's value
  std::vector<HelperSite> sites;    // helper calls that report failures (HelperSite)
  // The script maps that clear() or zero() empties, in slot order. Each has
  // a second kernel map (id twin(slot)), and probes write the one that the
  // slot's generation word names (the control value's u64 at
  // generation_offset(slot): 0 the first, 1 the second). User space empties
  // such a map by flipping the word, waiting for the programs still running
  // (bpf::wait_for_programs), then taking the map that no probe writes any
  // more: no update is lost between a read and the delete.
  std::vector<uint32_t> swapped;

  int32_t swap_slot(uint32_t map) const {
    for (size_t s = 0; s < swapped.size(); ++s)
      if (swapped[s] == map) return static_cast<int32_t>(s);
    return -1;
  }
  uint32_t twin(size_t slot) const { return support.skb_output + 1 + static_cast<uint32_t>(slot); }
  static int32_t generation_offset(size_t slot) { return 8 + 8 * static_cast<int32_t>(slot); }
};

// How to create map `id` (the script's maps, then the support maps), in id
// order: the single table the runtime and the load tests create maps from.
// Bytes of one frame in a BPF_F_STACK_BUILD_ID stack map (struct bpf_stack_build_id).
constexpr uint32_t kBuildIdFrameSize = 32;

struct MapSpec {
  bpf_map_type type;
  std::string name;
  uint32_t key_size = 0, value_size = 0, max_entries = 0;
  uint32_t flags = 0;
};

std::vector<MapSpec> map_specs(const sema::TypedProgram& program, const Module& module, uint32_t ringbuf_bytes);

// Creates the maps of map_specs, an fd each in id order; a map this program
// does not need (BPF_MAP_TYPE_UNSPEC) gets none. On failure, the message.
std::expected<std::vector<bpf::Fd>, std::string> create_maps(const std::vector<MapSpec>& specs);

struct LowerOptions {
  uint64_t start_boot_ns = 0;  // `elapsed` is measured from this boot-clock time
  int64_t tai_minus_boot_ns = 0;  // CLOCK_TAI - CLOCK_BOOTTIME at start: nsecs(sw_tai)
  int filter_pid = -1;         // -p/-c: probes other than BEGIN/END only fire for this process
  uint32_t possible_cpus = 1;  // per-CPU aggregations read in a probe are combined over these
  uint32_t online_cpus = 1;    // ncpus
  int cpid = 0;                // -c: the child's pid
  bool helper_errors = false;  // -k: probe reads and get_stackid report failures too
};

// Lowers every program unit. Never fails for a program sema accepted.
Module lower(const sema::TypedProgram& program, const LowerOptions& options);

// Text form for -d ir.
std::string print(const Function& f);
std::string print_inst(const Inst& i);
std::string print(const Module& m);

// Checks structural invariants (terminators, block ids, vreg ids); returns an
// empty string when valid. Run between backend stages in tests.
std::string verify(const Function& f);

}  // namespace bpfscope::ir
