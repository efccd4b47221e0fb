#include "ir/builder.h"

namespace bpfscope::ir {

bool Builder::terminated() const {
  const auto& insts = f_->blocks[cur_].insts;
  if (insts.empty()) return false;
  Opcode op = insts.back().op;
  return op == Opcode::Jump || op == Opcode::Branch || op == Opcode::Ret;
}

Inst& Builder::emit(Inst i) {
  i.loc = loc_;
  auto& insts = f_->blocks[cur_].insts;
  insts.push_back(std::move(i));
  return insts.back();
}

VregId Builder::ctx() {
  VregId d = vreg();
  emit({.op = Opcode::Ctx, .dst = d});
  return d;
}

VregId Builder::imm(int64_t v) {
  VregId d = vreg();
  imm_to(d, v);
  return d;
}

void Builder::imm_to(VregId dst, int64_t v) { emit({.op = Opcode::Imm, .dst = dst, .imm = v}); }

VregId Builder::mov(VregId a) {
  VregId d = vreg();
  mov_to(d, a);
  return d;
}

void Builder::mov_to(VregId dst, VregId a) { emit({.op = Opcode::Mov, .dst = dst, .a = a}); }

VregId Builder::alu(AluOp op, VregId a, VregId b) {
  VregId d = vreg();
  alu_to(d, op, a, b);
  return d;
}

void Builder::alu_to(VregId dst, AluOp op, VregId a, VregId b) {
  emit({.op = Opcode::Alu, .dst = dst, .a = a, .b = b, .alu = op});
}

VregId Builder::alu_imm(AluOp op, VregId a, int64_t imm) {
  VregId d = vreg();
  emit({.op = Opcode::Alu, .dst = d, .a = a, .imm = imm, .alu = op});
  return d;
}

VregId Builder::load(uint8_t size, VregId base, int32_t off) {
  VregId d = vreg();
  emit({.op = Opcode::Load, .dst = d, .a = base, .off = off, .size = size});
  return d;
}

void Builder::store(uint8_t size, VregId base, int32_t off, VregId v) {
  emit({.op = Opcode::Store, .a = base, .b = v, .off = off, .size = size});
}

void Builder::store_imm(uint8_t size, VregId base, int32_t off, int32_t imm) {
  emit({.op = Opcode::StoreImm, .a = base, .imm = imm, .off = off, .size = size});
}

void Builder::atomic_add(VregId base, int32_t off, VregId v) {
  emit({.op = Opcode::AtomicAdd, .a = base, .b = v, .off = off, .size = 8});
}

VregId Builder::atomic_fetch_add(VregId base, int32_t off, VregId v) {
  VregId d = vreg();
  emit({.op = Opcode::AtomicAdd, .dst = d, .a = base, .b = v, .off = off, .size = 8});
  return d;
}

VregId Builder::map_fd(uint32_t map) {
  VregId d = vreg();
  emit({.op = Opcode::MapFd, .dst = d, .imm = map});
  return d;
}

VregId Builder::map_value(uint32_t map, int32_t off) {
  VregId d = vreg();
  emit({.op = Opcode::MapValue, .dst = d, .imm = map, .off = off});
  return d;
}

VregId Builder::kernel_var(uint32_t btf_id) {
  VregId d = vreg();
  emit({.op = Opcode::KernelVar, .dst = d, .imm = btf_id});
  return d;
}

VregId Builder::stack_addr(int32_t off) {
  VregId d = vreg();
  emit({.op = Opcode::StackAddr, .dst = d, .off = off});
  return d;
}

VregId Builder::param(int index) {
  VregId d = vreg();
  emit({.op = Opcode::Param, .dst = d, .imm = index});
  return d;
}

VregId Builder::func_addr(uint32_t subprogram) {
  VregId d = vreg();
  emit({.op = Opcode::FuncAddr, .dst = d, .imm = subprogram});
  return d;
}

VregId Builder::call(int helper, std::vector<VregId> args) {
  VregId d = vreg();
  emit({.op = Opcode::Call, .dst = d, .imm = helper, .args = std::move(args)});
  return d;
}

VregId Builder::call_kfunc(uint32_t btf_id, std::vector<VregId> args) {
  VregId d = vreg();
  emit({.op = Opcode::Call, .dst = d, .imm = btf_id, .off = BPF_PSEUDO_KFUNC_CALL, .args = std::move(args)});
  return d;
}

void Builder::jump(BlockId t) {
  if (!terminated()) emit({.op = Opcode::Jump, .t = t});
}

void Builder::branch(Cond c, VregId a, VregId b, BlockId t, BlockId f) {
  emit({.op = Opcode::Branch, .a = a, .b = b, .cond = c, .t = t, .f = f});
}

void Builder::branch_imm(Cond c, VregId a, int64_t imm, BlockId t, BlockId f) {
  emit({.op = Opcode::Branch, .a = a, .imm = imm, .cond = c, .t = t, .f = f});
}

void Builder::ret(int64_t v) {
  if (!terminated()) emit({.op = Opcode::Ret, .imm = v});
}

int32_t Builder::reserve_stack(uint32_t size) {
  f_->stack_size += (size + 7) & ~7u;
  return -static_cast<int32_t>(f_->stack_size);
}

}  // namespace bpfscope::ir
