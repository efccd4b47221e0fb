// A small helper for appending instructions to an ir::Function. Internal to
// src/ir.
#pragma once

#include "ir/ir.h"

namespace bpfscope::ir {

class Builder {
 public:
  explicit Builder(Function& f) : f_(&f) {
    if (f_->blocks.empty()) f_->blocks.emplace_back();
  }

  Function& function() { return *f_; }
  // Continues in another function (a callback subprogram) at block b.
  void switch_to(Function& f, BlockId b) {
    f_ = &f;
    if (f_->blocks.empty()) f_->blocks.emplace_back();
    cur_ = b;
  }
  BlockId current() const { return cur_; }
  BlockId new_block() {
    f_->blocks.emplace_back();
    return static_cast<BlockId>(f_->blocks.size() - 1);
  }
  void set_block(BlockId b) { cur_ = b; }
  // True when the current block already ends in a terminator.
  bool terminated() const;

  void set_loc(lang::Loc loc) { loc_ = loc; }
  lang::Loc loc() const { return loc_; }

  VregId vreg() { return f_->vreg_count++; }

  VregId ctx();
  VregId imm(int64_t v);
  void imm_to(VregId dst, int64_t v);
  VregId mov(VregId a);
  void mov_to(VregId dst, VregId a);
  VregId alu(AluOp op, VregId a, VregId b);
  VregId alu_imm(AluOp op, VregId a, int64_t imm);
  void alu_to(VregId dst, AluOp op, VregId a, VregId b);
  VregId load(uint8_t size, VregId base, int32_t off);
  void store(uint8_t size, VregId base, int32_t off, VregId v);
  void store_imm(uint8_t size, VregId base, int32_t off, int32_t imm);
  void atomic_add(VregId base, int32_t off, VregId v);
  // The same, returning the value it added to (BPF_FETCH).
  VregId atomic_fetch_add(VregId base, int32_t off, VregId v);
  VregId map_fd(uint32_t map);
  VregId map_value(uint32_t map, int32_t off);
  VregId stack_addr(int32_t off);
  VregId param(int index);         // R(1 + index) at entry
  VregId func_addr(uint32_t subprogram);
  VregId kernel_var(uint32_t btf_id);
  VregId call(int helper, std::vector<VregId> args);
  VregId call_kfunc(uint32_t btf_id, std::vector<VregId> args);

  void jump(BlockId t);
  void branch(Cond c, VregId a, VregId b, BlockId t, BlockId f);
  void branch_imm(Cond c, VregId a, int64_t imm, BlockId t, BlockId f);
  void ret(int64_t v);

  // Reserves `size` bytes of stack (8-aligned) and returns the fp offset.
  int32_t reserve_stack(uint32_t size);

 private:
  Inst& emit(Inst i);

  Function* f_;
  BlockId cur_ = 0;
  lang::Loc loc_;
};

}  // namespace bpfscope::ir
