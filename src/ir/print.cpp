// Text form of the IR (-d ir).
#include <fmt/format.h>

#include <array>

#include "ir/ir.h"

namespace bpfscope::ir {
namespace {

constexpr std::array kAluNames = {"add", "sub", "mul", "div", "mod", "and", "or", "xor",
                                  "lsh", "rsh", "arsh", "neg", "bswap"};
static_assert(kAluNames.size() == static_cast<size_t>(AluOp::Bswap) + 1);
constexpr std::array kCondNames = {"==", "!=", ">", ">=", "<", "<=", "s>", "s>=", "s<", "s<=", "&"};
static_assert(kCondNames.size() == static_cast<size_t>(Cond::Set) + 1);

std::string v(VregId r) { return r == kNoVreg ? "?" : fmt::format("v{}", r); }

std::string operand_b(const Inst& i) { return i.b == kNoVreg ? fmt::format("{}", i.imm) : v(i.b); }

std::string mem(const Inst& i) { return fmt::format("*(u{} *)({} {:+})", i.size * 8, v(i.a), i.off); }

}  // namespace

std::string print_inst(const Inst& i) {
  switch (i.op) {
    case Opcode::Ctx: return fmt::format("{} = ctx", v(i.dst));
    case Opcode::Imm: return fmt::format("{} = {}", v(i.dst), i.imm);
    case Opcode::Mov: return fmt::format("{} = {}", v(i.dst), v(i.a));
    case Opcode::Alu:
      if (i.alu == AluOp::Neg) return fmt::format("{} = -{}", v(i.dst), v(i.a));
      return fmt::format("{} = {} {} {}", v(i.dst), kAluNames[static_cast<size_t>(i.alu)], v(i.a), operand_b(i));
    case Opcode::Load: return fmt::format("{} = {}", v(i.dst), mem(i));
    case Opcode::Store: return fmt::format("{} = {}", mem(i), v(i.b));
    case Opcode::StoreImm: return fmt::format("{} = {}", mem(i), i.imm);
    case Opcode::AtomicAdd:
      if (i.dst != kNoVreg) return fmt::format("{} = lock fetch {} += {}", v(i.dst), mem(i), v(i.b));
      return fmt::format("lock {} += {}", mem(i), v(i.b));
    case Opcode::MapFd: return fmt::format("{} = map {}", v(i.dst), i.imm);
    case Opcode::MapValue: return fmt::format("{} = &map {} value {:+}", v(i.dst), i.imm, i.off);
    case Opcode::StackAddr: return fmt::format("{} = fp {:+}", v(i.dst), i.off);
    case Opcode::Param: return fmt::format("{} = param {}", v(i.dst), i.imm);
    case Opcode::FuncAddr: return fmt::format("{} = &subprogram {}", v(i.dst), i.imm);
    case Opcode::KernelVar: return fmt::format("{} = &kernel var (BTF id {})", v(i.dst), i.imm);
    case Opcode::Call: {
      std::string args;
      for (size_t k = 0; k < i.args.size(); ++k) args += (k ? ", " : "") + v(i.args[k]);
      return fmt::format("{} = call {}{}({})", v(i.dst), i.off == BPF_PSEUDO_KFUNC_CALL ? "kfunc " : "", i.imm, args);
    }
    case Opcode::Jump: return fmt::format("goto bb{}", i.t);
    case Opcode::Branch:
      return fmt::format("if {} {} {} goto bb{} else bb{}", v(i.a), kCondNames[static_cast<size_t>(i.cond)],
                         operand_b(i), i.t, i.f);
    case Opcode::Ret: return fmt::format("return {}", i.imm);
  }
  std::unreachable();
}

std::string print(const Function& f) {
  std::string out = fmt::format("function {} (vregs {}, stack {})\n", f.name, f.vreg_count, f.stack_size);
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    out += fmt::format("bb{}:\n", b);
    for (const auto& i : f.blocks[b].insts) out += "  " + print_inst(i) + "\n";
  }
  for (size_t k = 0; k < f.subprograms.size(); ++k) out += fmt::format("subprogram {}: ", k) + print(f.subprograms[k]);
  return out;
}

std::string print(const Module& m) {
  std::string out = fmt::format("scratch {} bytes, zero {} bytes\n", m.scratch_size, m.zero_size);
  for (const auto& f : m.functions) out += print(f);
  return out;
}

}  // namespace bpfscope::ir
