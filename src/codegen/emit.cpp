// Instruction selection and jump resolution. Each IR instruction becomes a
// few BPF instructions; a spilled operand is loaded into a scratch register
// (R1/R2) and a spilled result is computed in R0 and stored back.
#include <fmt/format.h>

#include <limits>

#include "codegen/codegen.h"

namespace bpfscope::codegen {
namespace {

constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R10 = 10;

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

uint8_t size_code(uint8_t size) {
  switch (size) {
    case 1: return BPF_B;
    case 2: return BPF_H;
    case 4: return BPF_W;
    default: return BPF_DW;
  }
}

uint8_t alu_code(ir::AluOp op) {
  switch (op) {
    case ir::AluOp::Add: return BPF_ADD;
    case ir::AluOp::Sub: return BPF_SUB;
    case ir::AluOp::Mul: return BPF_MUL;
    case ir::AluOp::Div: return BPF_DIV;
    case ir::AluOp::Mod: return BPF_MOD;
    case ir::AluOp::And: return BPF_AND;
    case ir::AluOp::Or: return BPF_OR;
    case ir::AluOp::Xor: return BPF_XOR;
    case ir::AluOp::Lsh: return BPF_LSH;
    case ir::AluOp::Rsh: return BPF_RSH;
    case ir::AluOp::Arsh: return BPF_ARSH;
    case ir::AluOp::Neg: return BPF_NEG;
    case ir::AluOp::Bswap: return BPF_END;
  }
  std::unreachable();
}

uint8_t jmp_code(ir::Cond c) {
  switch (c) {
    case ir::Cond::Eq: return BPF_JEQ;
    case ir::Cond::Ne: return BPF_JNE;
    case ir::Cond::Gt: return BPF_JGT;
    case ir::Cond::Ge: return BPF_JGE;
    case ir::Cond::Lt: return BPF_JLT;
    case ir::Cond::Le: return BPF_JLE;
    case ir::Cond::SGt: return BPF_JSGT;
    case ir::Cond::SGe: return BPF_JSGE;
    case ir::Cond::SLt: return BPF_JSLT;
    case ir::Cond::SLe: return BPF_JSLE;
    case ir::Cond::Set: return BPF_JSET;
  }
  std::unreachable();
}

ir::Cond invert(ir::Cond c) {
  switch (c) {
    case ir::Cond::Eq: return ir::Cond::Ne;
    case ir::Cond::Ne: return ir::Cond::Eq;
    case ir::Cond::Gt: return ir::Cond::Le;
    case ir::Cond::Ge: return ir::Cond::Lt;
    case ir::Cond::Lt: return ir::Cond::Ge;
    case ir::Cond::Le: return ir::Cond::Gt;
    case ir::Cond::SGt: return ir::Cond::SLe;
    case ir::Cond::SGe: return ir::Cond::SLt;
    case ir::Cond::SLt: return ir::Cond::SGe;
    case ir::Cond::SLe: return ir::Cond::SGt;
    case ir::Cond::Set: return ir::Cond::Set;  // no inverse; callers keep the jump
  }
  std::unreachable();
}

bool fits_i32(int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); }
bool fits_i16(int64_t v) { return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max(); }

class Emitter {
 public:
  Emitter(const ir::Function& f, const Allocation& a) : f_(f), a_(a) {}

  std::expected<Program, std::string> run() {
    p_.name = f_.name;
    std::vector<uint32_t> block_start(f_.blocks.size());
    for (size_t b = 0; b < f_.blocks.size(); ++b) {
      block_start[b] = static_cast<uint32_t>(p_.insns.size());
      next_block_ = static_cast<ir::BlockId>(b + 1);
      for (const auto& i : f_.blocks[b].insts) {
        loc_ = i.loc;
        if (auto err = inst(i); !err.empty()) return std::unexpected(err);
      }
    }
    for (const auto& [at, target] : fixups_) {
      int64_t off = static_cast<int64_t>(block_start[target]) - at - 1;
      if (!fits_i16(off)) return std::unexpected(fmt::format("program {}: jump too far ({})", f_.name, off));
      p_.insns[at].off = static_cast<int16_t>(off);
    }
    return std::move(p_);
  }

 private:
  void put(bpf_insn i) {
    p_.insns.push_back(i);
    p_.locs.push_back(loc_);
  }

  bool spilled(ir::VregId v) const { return a_.reg[v] < 0; }

  // Re-creates a rematerialized constant in register r.
  void materialize(uint8_t r, const ir::Inst& def) {
    switch (def.op) {
      case ir::Opcode::Imm: mov_imm(r, def.imm); return;
      case ir::Opcode::MapFd:
        p_.relocs.push_back({static_cast<uint32_t>(p_.insns.size()), static_cast<uint32_t>(def.imm)});
        ld_imm64(r, 0, BPF_PSEUDO_MAP_FD);
        return;
      case ir::Opcode::MapValue:
        p_.relocs.push_back({static_cast<uint32_t>(p_.insns.size()), static_cast<uint32_t>(def.imm)});
        put(insn(BPF_LD | BPF_DW | BPF_IMM, r, BPF_PSEUDO_MAP_VALUE, 0, 0));
        put(insn(0, 0, 0, 0, def.off));
        return;
      case ir::Opcode::StackAddr:
        put(insn(BPF_ALU64 | BPF_MOV | BPF_X, r, R10, 0, 0));
        put(insn(BPF_ALU64 | BPF_ADD | BPF_K, r, 0, 0, def.off));
        return;
      case ir::Opcode::FuncAddr: func_addr(r, def); return;
      case ir::Opcode::KernelVar: ld_imm64(r, static_cast<uint32_t>(def.imm), BPF_PSEUDO_BTF_ID); return;
      default: std::unreachable();
    }
  }

  // The register that holds v, loading (or re-creating) it into `scratch`
  // when it has none.
  uint8_t read(ir::VregId v, uint8_t scratch) {
    if (a_.remat[v]) {
      materialize(scratch, a_.remat_def[v]);
      return scratch;
    }
    if (!spilled(v)) return static_cast<uint8_t>(a_.reg[v]);
    put(insn(BPF_LDX | BPF_MEM | BPF_DW, scratch, R10, a_.slot[v], 0));
    return scratch;
  }

  void load_into(uint8_t r, ir::VregId v) {
    uint8_t src = read(v, r);
    if (src != r) put(insn(BPF_ALU64 | BPF_MOV | BPF_X, r, src, 0, 0));
  }

  // Where to compute a result for v: its register, or R0 when spilled.
  uint8_t target(ir::VregId v) const { return spilled(v) ? R0 : static_cast<uint8_t>(a_.reg[v]); }

  void write_back(ir::VregId v, uint8_t r) {
    if (a_.dead[v] || a_.remat[v]) return;
    if (spilled(v)) {
      put(insn(BPF_STX | BPF_MEM | BPF_DW, R10, r, a_.slot[v], 0));
    } else if (a_.reg[v] != r) {
      put(insn(BPF_ALU64 | BPF_MOV | BPF_X, static_cast<uint8_t>(a_.reg[v]), r, 0, 0));
    }
  }

  void ld_imm64(uint8_t r, uint64_t v, uint8_t src = 0) {
    put(insn(BPF_LD | BPF_DW | BPF_IMM, r, src, 0, static_cast<int32_t>(v & 0xffffffff)));
    put(insn(0, 0, 0, 0, static_cast<int32_t>(v >> 32)));
  }

  void func_addr(uint8_t r, const ir::Inst& def) {
    p_.func_relocs.push_back({static_cast<uint32_t>(p_.insns.size()), static_cast<uint32_t>(def.imm)});
    ld_imm64(r, 0, BPF_PSEUDO_FUNC);
  }

  void mov_imm(uint8_t r, int64_t v) {
    if (fits_i32(v))
      put(insn(BPF_ALU64 | BPF_MOV | BPF_K, r, 0, 0, static_cast<int32_t>(v)));
    else
      ld_imm64(r, static_cast<uint64_t>(v));
  }

  void jump_to(ir::BlockId b) {
    fixups_.push_back({static_cast<uint32_t>(p_.insns.size()), b});
    put(insn(BPF_JMP | BPF_JA, 0, 0, 0, 0));
  }

  std::string check_off(int32_t off) {
    return fits_i16(off) ? "" : fmt::format("program {}: memory offset {} out of range", f_.name, off);
  }

  std::string inst(const ir::Inst& i) {
    // A rematerialized or dead value needs no code at its definition (a
    // call still runs for its effects).
    if (i.dst != ir::kNoVreg && (a_.remat[i.dst] || a_.dead[i.dst]) && i.op != ir::Opcode::Call) return "";
    switch (i.op) {
      case ir::Opcode::Ctx: write_back(i.dst, R1); return "";
      case ir::Opcode::Param: write_back(i.dst, static_cast<uint8_t>(R1 + i.imm)); return "";
      case ir::Opcode::FuncAddr:
      case ir::Opcode::KernelVar: {
        uint8_t d = target(i.dst);
        materialize(d, i);
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Imm: {
        uint8_t d = target(i.dst);
        mov_imm(d, i.imm);
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Mov: {
        uint8_t d = target(i.dst);
        load_into(d, i.a);
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Alu: {
        uint8_t d = target(i.dst);
        uint8_t code = alu_code(i.alu);
        if (i.alu == ir::AluOp::Neg) {
          load_into(d, i.a);
          put(insn(BPF_ALU64 | BPF_NEG, d, 0, 0, 0));
          write_back(i.dst, d);
          return "";
        }
        if (i.alu == ir::AluOp::Bswap) {
          // BPF_END to big endian swaps on this little-endian target and
          // zero-extends the low imm bits.
          load_into(d, i.a);
          put(insn(BPF_ALU | BPF_END | BPF_TO_BE, d, 0, 0, static_cast<int32_t>(i.imm)));
          write_back(i.dst, d);
          return "";
        }
        uint8_t rb = 0;
        bool use_reg = i.b != ir::kNoVreg || !fits_i32(i.imm);
        if (i.b != ir::kNoVreg) {
          rb = read(i.b, R1);
          if (rb == d && i.a != i.b) {
            put(insn(BPF_ALU64 | BPF_MOV | BPF_X, R1, rb, 0, 0));
            rb = R1;
          }
        } else if (!fits_i32(i.imm)) {
          ld_imm64(R1, static_cast<uint64_t>(i.imm));
          rb = R1;
        }
        load_into(d, i.a);
        if (use_reg)
          put(insn(BPF_ALU64 | code | BPF_X, d, rb, 0, 0));
        else
          put(insn(BPF_ALU64 | code | BPF_K, d, 0, 0, static_cast<int32_t>(i.imm)));
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Load: {
        if (auto e = check_off(i.off); !e.empty()) return e;
        uint8_t base = read(i.a, R1);
        uint8_t d = target(i.dst);
        put(insn(BPF_LDX | BPF_MEM | size_code(i.size), d, base, static_cast<int16_t>(i.off), 0));
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Store: {
        if (auto e = check_off(i.off); !e.empty()) return e;
        uint8_t base = read(i.a, R1);
        uint8_t v = read(i.b, R2);
        put(insn(BPF_STX | BPF_MEM | size_code(i.size), base, v, static_cast<int16_t>(i.off), 0));
        return "";
      }
      case ir::Opcode::StoreImm: {
        if (auto e = check_off(i.off); !e.empty()) return e;
        uint8_t base = read(i.a, R1);
        put(insn(BPF_ST | BPF_MEM | size_code(i.size), base, 0, static_cast<int16_t>(i.off),
                 static_cast<int32_t>(i.imm)));
        return "";
      }
      case ir::Opcode::AtomicAdd: {
        if (auto e = check_off(i.off); !e.empty()) return e;
        uint8_t base = read(i.a, R1);
        uint8_t v = read(i.b, R2);
        if (i.dst == ir::kNoVreg) {
          put(insn(BPF_STX | BPF_ATOMIC | BPF_DW, base, v, static_cast<int16_t>(i.off), BPF_ADD));
          return "";
        }
        // BPF_FETCH writes the old value over the source register: R3,
        // which no value lives in between instructions (R6-R9 do).
        put(insn(BPF_ALU64 | BPF_MOV | BPF_X, R3, v, 0, 0));
        put(insn(BPF_STX | BPF_ATOMIC | BPF_DW, base, R3, static_cast<int16_t>(i.off), BPF_ADD | BPF_FETCH));
        write_back(i.dst, R3);
        return "";
      }
      case ir::Opcode::MapFd: {
        uint8_t d = target(i.dst);
        p_.relocs.push_back({static_cast<uint32_t>(p_.insns.size()), static_cast<uint32_t>(i.imm)});
        ld_imm64(d, 0, BPF_PSEUDO_MAP_FD);
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::MapValue: {
        uint8_t d = target(i.dst);
        p_.relocs.push_back({static_cast<uint32_t>(p_.insns.size()), static_cast<uint32_t>(i.imm)});
        put(insn(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_VALUE, 0, 0));
        put(insn(0, 0, 0, 0, i.off));
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::StackAddr: {
        uint8_t d = target(i.dst);
        put(insn(BPF_ALU64 | BPF_MOV | BPF_X, d, R10, 0, 0));
        put(insn(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i.off));
        write_back(i.dst, d);
        return "";
      }
      case ir::Opcode::Call: {
        for (size_t k = 0; k < i.args.size(); ++k) load_into(static_cast<uint8_t>(R1 + k), i.args[k]);
        // A kfunc call names the function by BTF id, with src = BPF_PSEUDO_KFUNC_CALL.
        put(insn(BPF_JMP | BPF_CALL, 0, i.off == BPF_PSEUDO_KFUNC_CALL ? BPF_PSEUDO_KFUNC_CALL : 0, 0,
                 static_cast<int32_t>(i.imm)));
        write_back(i.dst, R0);
        return "";
      }
      case ir::Opcode::Jump:
        if (i.t != next_block_) jump_to(i.t);
        return "";
      case ir::Opcode::Branch: {
        uint8_t ra = read(i.a, R1);
        // When the taken block comes next, branch on the opposite condition
        // to the other block and fall through.
        ir::Cond cond = i.cond;
        ir::BlockId taken = i.t, other = i.f;
        if (i.t == next_block_ && cond != ir::Cond::Set) {
          cond = invert(cond);
          std::swap(taken, other);
        }
        uint8_t code = jmp_code(cond);
        fixups_.push_back({static_cast<uint32_t>(p_.insns.size()), taken});
        if (i.b != ir::kNoVreg) {
          uint8_t rb = read(i.b, R2);
          fixups_.back().first = static_cast<uint32_t>(p_.insns.size());
          put(insn(BPF_JMP | code | BPF_X, ra, rb, 0, 0));
        } else if (fits_i32(i.imm)) {
          put(insn(BPF_JMP | code | BPF_K, ra, 0, 0, static_cast<int32_t>(i.imm)));
        } else {
          ld_imm64(R2, static_cast<uint64_t>(i.imm));
          fixups_.back().first = static_cast<uint32_t>(p_.insns.size());
          put(insn(BPF_JMP | code | BPF_X, ra, R2, 0, 0));
        }
        if (other != next_block_) jump_to(other);
        return "";
      }
      case ir::Opcode::Ret:
        put(insn(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, static_cast<int32_t>(i.imm)));
        put(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
        return "";
    }
    std::unreachable();
  }

  const ir::Function& f_;
  const Allocation& a_;
  Program p_;
  lang::Loc loc_;
  ir::BlockId next_block_ = 0;
  std::vector<std::pair<uint32_t, ir::BlockId>> fixups_;
};

}  // namespace

std::expected<Program, std::string> emit(const ir::Function& f, const Allocation& alloc) {
  return Emitter(f, alloc).run();
}

}  // namespace bpfscope::codegen
