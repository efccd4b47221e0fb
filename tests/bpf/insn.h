// Test-only helpers to hand-assemble BPF instructions.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <vector>

namespace bpfscope::bpf::test {

constexpr bpf_insn make_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// dst = imm
constexpr bpf_insn mov64_imm(uint8_t dst, int32_t imm) { return make_insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
// dst = src
constexpr bpf_insn mov64_reg(uint8_t dst, uint8_t src) { return make_insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
// dst OP= imm (op: BPF_ADD, BPF_RSH, ...)
constexpr bpf_insn alu64_imm(uint8_t op, uint8_t dst, int32_t imm) {
  return make_insn(BPF_ALU64 | op | BPF_K, dst, 0, 0, imm);
}
// *(size *)(dst + off) = imm
constexpr bpf_insn st_mem(uint8_t size, uint8_t dst, int16_t off, int32_t imm) {
  return make_insn(BPF_ST | size | BPF_MEM, dst, 0, off, imm);
}
// *(size *)(dst + off) = src
constexpr bpf_insn stx_mem(uint8_t size, uint8_t dst, uint8_t src, int16_t off) {
  return make_insn(BPF_STX | size | BPF_MEM, dst, src, off, 0);
}
// lock *(size *)(dst + off) += src
constexpr bpf_insn atomic_add(uint8_t size, uint8_t dst, uint8_t src, int16_t off) {
  return make_insn(BPF_STX | size | BPF_ATOMIC, dst, src, off, BPF_ADD);
}
// if (dst OP imm) goto pc + 1 + off (op: BPF_JEQ, BPF_JNE, ...)
constexpr bpf_insn jmp_imm(uint8_t op, uint8_t dst, int32_t imm, int16_t off) {
  return make_insn(BPF_JMP | op | BPF_K, dst, 0, off, imm);
}
constexpr bpf_insn call(int32_t helper) { return make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
constexpr bpf_insn exit_insn() { return make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }

// dst = map (BPF_LD_IMM64 with BPF_PSEUDO_MAP_FD): two instructions.
inline void ld_map_fd(std::vector<bpf_insn>& out, uint8_t dst, int map_fd) {
  out.push_back(make_insn(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, map_fd));
  out.push_back(make_insn(0, 0, 0, 0, 0));
}

// A program that adds 1 to the u64 at key 0 of an array map, only when the
// current process is `only_tgid` (when >= 0). Returns 0.
inline std::vector<bpf_insn> counter_program(int map_fd, int only_tgid = -1) {
  std::vector<bpf_insn> p;
  if (only_tgid >= 0) {
    p.push_back(call(BPF_FUNC_get_current_pid_tgid));
    p.push_back(alu64_imm(BPF_RSH, BPF_REG_0, 32));
    p.push_back(jmp_imm(BPF_JNE, BPF_REG_0, only_tgid, 9));  // -> r0 = 0; exit
  }
  p.push_back(st_mem(BPF_W, BPF_REG_10, -4, 0));           // key = 0
  p.push_back(mov64_reg(BPF_REG_2, BPF_REG_10));
  p.push_back(alu64_imm(BPF_ADD, BPF_REG_2, -4));          // r2 = &key
  ld_map_fd(p, BPF_REG_1, map_fd);                         // r1 = map
  p.push_back(call(BPF_FUNC_map_lookup_elem));
  p.push_back(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 2));          // null -> exit
  p.push_back(mov64_imm(BPF_REG_1, 1));
  p.push_back(atomic_add(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
  p.push_back(mov64_imm(BPF_REG_0, 0));
  p.push_back(exit_insn());
  return p;
}

}  // namespace bpfscope::bpf::test
