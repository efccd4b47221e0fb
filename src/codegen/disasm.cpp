// A BPF disassembler for -d bpf, in the kernel verifier's notation.
#include <fmt/format.h>

#include "codegen/codegen.h"

namespace bpfscope::codegen {
namespace {

const char* alu_name(uint8_t op) {
  switch (op) {
    case BPF_ADD: return "+=";
    case BPF_SUB: return "-=";
    case BPF_MUL: return "*=";
    case BPF_DIV: return "/=";
    case BPF_OR: return "|=";
    case BPF_AND: return "&=";
    case BPF_LSH: return "<<=";
    case BPF_RSH: return ">>=";
    case BPF_MOD: return "%=";
    case BPF_XOR: return "^=";
    case BPF_MOV: return "=";
    case BPF_ARSH: return "s>>=";
    default: return "?=";
  }
}

const char* jmp_name(uint8_t op) {
  switch (op) {
    case BPF_JEQ: return "==";
    case BPF_JGT: return ">";
    case BPF_JGE: return ">=";
    case BPF_JSET: return "&";
    case BPF_JNE: return "!=";
    case BPF_JSGT: return "s>";
    case BPF_JSGE: return "s>=";
    case BPF_JLT: return "<";
    case BPF_JLE: return "<=";
    case BPF_JSLT: return "s<";
    case BPF_JSLE: return "s<=";
    default: return "?";
  }
}

const char* size_name(uint8_t size) {
  switch (size) {
    case BPF_B: return "u8";
    case BPF_H: return "u16";
    case BPF_W: return "u32";
    default: return "u64";
  }
}

}  // namespace

std::string disassemble(const Program& p) {
  std::string out = fmt::format("program {} ({} instructions)\n", p.name, p.insns.size());
  for (size_t k = 0; k < p.insns.size(); ++k) {
    for (size_t s = 0; s < p.subprograms.size(); ++s)
      if (p.subprograms[s] == k) out += fmt::format("subprogram {}:\n", s);
    const bpf_insn& i = p.insns[k];
    uint8_t cls = BPF_CLASS(i.code);
    std::string text;
    switch (cls) {
      case BPF_ALU64:
      case BPF_ALU: {
        uint8_t op = BPF_OP(i.code);
        std::string w = cls == BPF_ALU ? "w" : "r";
        if (op == BPF_NEG)
          text = fmt::format("{}{} = -{}{}", w, i.dst_reg, w, i.dst_reg);
        else if (op == BPF_END)
          text = fmt::format("r{} = be{} r{}", i.dst_reg, i.imm, i.dst_reg);
        else if (BPF_SRC(i.code) == BPF_X)
          text = fmt::format("{}{} {} {}{}", w, i.dst_reg, alu_name(op), w, i.src_reg);
        else
          text = fmt::format("{}{} {} {}", w, i.dst_reg, alu_name(op), i.imm);
        break;
      }
      case BPF_LDX:
        text = fmt::format("r{} = *({} *)(r{} {:+})", i.dst_reg, size_name(BPF_SIZE(i.code)), i.src_reg, i.off);
        break;
      case BPF_ST:
        text = fmt::format("*({} *)(r{} {:+}) = {}", size_name(BPF_SIZE(i.code)), i.dst_reg, i.off, i.imm);
        break;
      case BPF_STX:
        if (BPF_MODE(i.code) == BPF_ATOMIC)
          text = fmt::format("lock *({} *)(r{} {:+}) += r{}", size_name(BPF_SIZE(i.code)), i.dst_reg, i.off, i.src_reg);
        else
          text = fmt::format("*({} *)(r{} {:+}) = r{}", size_name(BPF_SIZE(i.code)), i.dst_reg, i.off, i.src_reg);
        break;
      case BPF_LD:
        if (i.code == (BPF_LD | BPF_DW | BPF_IMM) && k + 1 < p.insns.size()) {
          uint64_t v = static_cast<uint32_t>(i.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(p.insns[k + 1].imm)) << 32);
          std::string what = i.src_reg == BPF_PSEUDO_MAP_FD ? fmt::format("map[fd {}]", i.imm) : fmt::format("{:#x}", v);
          for (const auto& r : p.relocs)
            if (r.insn == k) what = fmt::format("map[{}]", r.map);
          if (i.src_reg == BPF_PSEUDO_MAP_VALUE) what = fmt::format("&{} value {:+}", what, p.insns[k + 1].imm);
          if (i.src_reg == BPF_PSEUDO_FUNC) what = fmt::format("&func <{}>", static_cast<int64_t>(k) + 1 + i.imm);
          if (i.src_reg == BPF_PSEUDO_BTF_ID) what = fmt::format("&kernel var (BTF id {})", i.imm);
          text = fmt::format("r{} = {} ll", i.dst_reg, what);
          out += fmt::format("{:4}: {}\n", k, text);
          ++k;
          continue;
        }
        text = "ld ?";
        break;
      case BPF_JMP:
      case BPF_JMP32: {
        uint8_t op = BPF_OP(i.code);
        if (op == BPF_JA)
          text = fmt::format("goto {:+} <{}>", i.off, k + 1 + i.off);
        else if (op == BPF_CALL)
          text = fmt::format("call {}{}", i.src_reg == BPF_PSEUDO_KFUNC_CALL ? "kfunc " : "", i.imm);
        else if (op == BPF_EXIT)
          text = "exit";
        else if (BPF_SRC(i.code) == BPF_X)
          text = fmt::format("if r{} {} r{} goto {:+} <{}>", i.dst_reg, jmp_name(op), i.src_reg, i.off, k + 1 + i.off);
        else
          text = fmt::format("if r{} {} {} goto {:+} <{}>", i.dst_reg, jmp_name(op), i.imm, i.off, k + 1 + i.off);
        break;
      }
      default: text = fmt::format("? code {:#x}", i.code);
    }
    out += fmt::format("{:4}: {}\n", k, text);
  }
  return out;
}

}  // namespace bpfscope::codegen
