#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// strcontains(h, n), strstr(h, n): both arguments are strings.
bool two_strings(Checker& c, const Expr& e) {
  for (ExprId arg : e.args) {
    Type t = c.expr(arg);
    if (!t.is_string()) {
      c.error(c.ast_.expr(arg).loc, fmt::format("{}() expects string arguments ({} provided)", e.name,
                                                t.kind == TypeKind::None ? "none" : t.name()));
      return false;
    }
  }
  return true;
}

// str($N + k): the parameter's text from its k-th byte on, as if $N were a
// pointer to it (bpftrace folds it when compiling); str($N + k, n) keeps n
// bytes of that. k may be at most the text's length.
Type positional_suffix(Checker& c, ExprId id, const Expr& e) {
  const Expr& sum = c.ast_.expr(e.args[0]);
  const Expr& param = c.ast_.expr(sum.args[0]);
  const bool given = param.ival >= 1 && param.ival <= c.out_.positional.size();
  std::string text = given ? c.out_.positional[param.ival - 1] : "";
  c.set(sum.args[0], Type::string(static_cast<uint32_t>(text.size() + 1)));
  auto k = c.constant(sum.args[1]);
  if (!k || *k < 0 || static_cast<uint64_t>(*k) > text.size()) {
    c.error(sum.loc, fmt::format("str($N + k): k must be a constant from 0 to the parameter's length ({})",
                                 text.size()));
    return Type::none();
  }
  text = text.substr(static_cast<size_t>(*k));
  if (e.args.size() == 2) {
    auto n = c.constant(e.args[1]);
    if (!n || *n < 1) {
      c.error(c.ast_.expr(e.args[1]).loc, "str(): the length must be a positive integer");
      return Type::none();
    }
    if (static_cast<uint64_t>(*n) < text.size()) text.resize(static_cast<size_t>(*n));
  }
  c.set(e.args[0], Type::string(static_cast<uint32_t>(text.size() + 1)));
  c.out_.const_of[id] = static_cast<int64_t>(c.out_.const_strings.size());
  c.out_.const_strings.push_back(text);
  return Type::string(std::min<uint32_t>(static_cast<uint32_t>(text.size() + 1), c.out_.config.max_strlen));
}

constexpr Function kStrings[] = {
    {.name = "str",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       // str($N) is the parameter's text, whether or not it reads as a number
       // (known when compiling: kaddr(str($1))).
       const Expr& arg = c.ast_.expr(e.args[0]);
       if (arg.kind == ExprKind::Binary && arg.op == lang::Op::Add &&
           c.ast_.expr(arg.args[0]).kind == ExprKind::Positional)
         return positional_suffix(c, id, e);
       Type t = c.expr(e.args[0]);
       if (arg.kind == ExprKind::Positional) {
         c.out_.const_of[e.args[0]].reset();
         const bool given = arg.ival >= 1 && arg.ival <= c.out_.positional.size();
         const std::string text = given ? c.out_.positional[arg.ival - 1] : "";
         t = c.set(e.args[0], Type::string(static_cast<uint32_t>(text.size() + 1)));
         if (e.args.size() == 1) {
           c.out_.const_of[id] = static_cast<int64_t>(c.out_.const_strings.size());
           c.out_.const_strings.push_back(text);
         }
       }
       uint32_t cap = c.out_.config.max_strlen;
       if (e.args.size() == 2) {
         // A constant length sizes the string; a run-time one is clamped to
         // max_strlen when the probe reads.
         Type nt = c.expr(e.args[1]);
         auto n = c.constant(e.args[1]);
         if (!nt.is_int() || (n && *n < 1)) {
           c.error(c.ast_.expr(e.args[1]).loc, "str(): the length must be a positive integer");
           return Type::none();
         }
         if (n) cap = static_cast<uint32_t>(std::min<int64_t>(*n + 1, c.out_.config.max_strlen));
       }
       if (t.is_string()) return Type::string(std::min(cap, t.size));
       if (!t.is_int()) {
         c.error(c.ast_.expr(e.args[0]).loc,
                 fmt::format("str() expects a string or a pointer ({} provided)", t.name()));
         return Type::none();
       }
       return Type::string(cap);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       if (l.ast_.expr(e.args[0]).kind == ExprKind::Binary) {
         // str($N + k): sema's constant.
         Val s = l.string_literal(l.p_.const_strings[static_cast<size_t>(l.p_.const_of[id].value_or(0))]);
         s.type = t;
         return s;
       }
       Val src = l.expr(e.args[0]);
       if (src.type.is_string()) {
         if (src.literal) {
           if (src.literal->size() + 1 > t.size) src.literal->resize(t.size - 1);
           src.type = t;
           return src;
         }
         return Val{.reg = src.reg, .type = t};
       }
       uint32_t off = l.alloc(t.mem_size());
       VregId dst = l.scratch_ptr(off);
       l.zero(dst, 0, t.mem_size());
       int helper = BPF_FUNC_probe_read_str;
       if (src.type.addr_space == sema::AddrSpace::User) helper = BPF_FUNC_probe_read_user_str;
       if (src.type.addr_space == sema::AddrSpace::Kernel) helper = BPF_FUNC_probe_read_kernel_str;
       VregId size = l.b_.imm(t.size);
       if (e.args.size() == 2) {
         Val n = l.expr(e.args[1]);
         if (!n.constant) size = l.clamped_size(l.materialize_int(n), t.size);
       }
       l.checked_call(helper, {dst, size, l.materialize_int(src)});
       return Val{.reg = dst, .type = t};
     },
     .known = true},
    {.name = "strncmp",
     .min_args = 3,
     .max_args = 3,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       Type a = c.expr(e.args[0]), b = c.expr(e.args[1]);
       auto n = c.constant(e.args[2]);
       if (!a.is_string() || !b.is_string()) {
         c.error(e.loc, "strncmp() compares two strings");
         return Type::none();
       }
       if (!n || *n < 0) {
         c.error(c.ast_.expr(e.args[2]).loc, "strncmp(): the length must be a non-negative integer constant");
         return Type::none();
       }
       return Type::integer(8, true);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       Val a = l.addressable(l.expr(e.args[0]));
       Val c = l.addressable(l.expr(e.args[1]));
       uint64_t n = static_cast<uint64_t>(l.constant_of(e.args[2]));
       // 0 when the first n bytes agree (or both end together before n), else 1.
       uint32_t limit = static_cast<uint32_t>(std::min<uint64_t>({n, a.type.size, c.type.size}));
       VregId out = l.b_.imm(0);
       BlockId differ = l.b_.new_block(), join = l.b_.new_block();
       l.compare_bytes(a.reg, c.reg, limit, join, differ);
       l.b_.set_block(differ);
       l.b_.imm_to(out, 1);
       l.b_.jump(join);
       l.b_.set_block(join);
       return l.int_val(out, t);
     }},
    {.name = "strcat",
     .min_args = 1,
     .max_args = 32,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       // strcat(a, b, ...) (a bpfscope extension): a new string holding the
       // strings one after the other, as long as all of them together.
       uint64_t size = 1;
       for (ExprId a : e.args) {
         Type t = c.expr(a);
         if (!t.is_string()) {
           c.error(c.ast_.expr(a).loc, fmt::format("strcat() joins strings ({} provided)", t.name()));
           return Type::none();
         }
         size += t.size - 1;
       }
       if (size > c.out_.config.max_strlen) {
         c.error(e.loc, fmt::format("strcat(): the strings may be longer than max_strlen ({}) together",
                                    c.out_.config.max_strlen));
         return Type::none();
       }
       return Type::string(static_cast<uint32_t>(size));
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       // Each string is copied (bpf_probe_read_kernel_str) where the one
       // before it ended. A branch the program never takes bounds that
       // position, so that the verifier knows each copy stays in the result.
       VregId out = l.scratch_ptr(l.alloc(t.size));
       l.zero(out, 0, t.size);
       VregId pos = l.b_.imm(0);
       int64_t bound = 0;
       BlockId done = l.b_.new_block();
       for (ExprId a : e.args) {
         Val s = l.addressable(l.expr(a));
         const uint32_t cap = l.p_.type_of(a).size;
         BlockId copy = l.b_.new_block(), advance = l.b_.new_block(), next = l.b_.new_block();
         l.b_.branch_imm(ir::Cond::Gt, pos, bound, done, copy);
         l.b_.set_block(copy);
         VregId n = l.b_.call(BPF_FUNC_probe_read_kernel_str, {l.b_.alu(AluOp::Add, out, pos), l.b_.imm(cap), s.reg});
         l.b_.branch_imm(ir::Cond::SLe, n, 0, next, advance);
         l.b_.set_block(advance);
         // n counts the NUL, which the next string overwrites.
         l.b_.alu_to(pos, AluOp::Add, pos, n);
         l.b_.mov_to(pos, l.b_.alu_imm(AluOp::Sub, pos, 1));
         l.b_.jump(next);
         l.b_.set_block(next);
         bound += cap - 1;
       }
       l.b_.jump(done);
       l.b_.set_block(done);
       return Val{.reg = out, .type = t};
     }},
    {.name = "strlen",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       if (!c.expr(e.args[0]).is_string()) {
         c.error(c.ast_.expr(e.args[0]).loc, "strlen() expects a string");
         return Type::none();
       }
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       Val a = l.addressable(l.expr(e.args[0]));
       if (a.literal) return l.constant(static_cast<int64_t>(a.literal->size()), t);
       // The index of the first NUL, unrolled over the capacity.
       VregId out = l.b_.imm(a.type.size);
       BlockId join = l.b_.new_block();
       for (uint32_t i = 0; i < a.type.size; ++i) {
         VregId x = l.b_.load(1, a.reg, static_cast<int32_t>(i));
         BlockId found = l.b_.new_block(), next = l.b_.new_block();
         l.b_.branch_imm(ir::Cond::Eq, x, 0, found, next);
         l.b_.set_block(found);
         l.b_.imm_to(out, i);
         l.b_.jump(join);
         l.b_.set_block(next);
       }
       l.b_.jump(join);
       l.b_.set_block(join);
       return l.int_val(out, t);
     }},
    {.name = "strcontains",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId, const Expr& e) { return two_strings(c, e) ? Type::boolean() : Type::none(); },
     .lower = [](Lowerer& l, ExprId, const Expr& e, const Type& t) -> Val {
       Val index = l.str_search(e);
       if (index.constant) return l.constant(*index.constant >= 0, t);
       return l.int_val(l.flag(ir::Cond::SGe, index.reg, 0), t);
     }},
    {.name = "strstr",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId,
                 const Expr& e) { return two_strings(c, e) ? Type::integer(8, true) : Type::none(); },
     .lower = [](Lowerer& l, ExprId, const Expr& e, const Type&) { return l.str_search(e); }},
    // memcmp(a, b, n): the first n bytes of two strings or byte arrays; n a
    // constant no larger than either.
    {.name = "memcmp",
     .min_args = 3,
     .max_args = 3,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       Type a = c.expr(e.args[0]), b = c.expr(e.args[1]);
       for (auto [arg, t] : {std::pair{e.args[0], a}, std::pair{e.args[1], b}}) {
         if (!t.is_bytes()) {
           c.error(c.ast_.expr(arg).loc, fmt::format("memcmp() expects strings or byte arrays ({} provided)",
                                                     t.kind == TypeKind::None ? "none" : t.name()));
           return Type::none();
         }
       }
       auto n = c.constant(e.args[2]);
       if (!n || *n < 0) {
         c.error(c.ast_.expr(e.args[2]).loc, "memcmp(): the size must be a non-negative integer constant");
         return Type::none();
       }
       uint32_t limit = std::min(a.size, b.size);
       if (*n > limit) {
         c.error(c.ast_.expr(e.args[2]).loc,
                 fmt::format("memcmp(): the size ({}) is larger than the arguments ({} bytes)", *n, limit));
         return Type::none();
       }
       return Type::integer(8, true);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       // C's memcmp: the difference of the first differing bytes, else 0.
       Val a = l.addressable(l.expr(e.args[0]));
       Val c = l.addressable(l.expr(e.args[1]));
       auto n = static_cast<uint32_t>(l.constant_of(e.args[2]));
       VregId diff = l.b_.imm(0);
       BlockId done = l.b_.new_block();
       for (uint32_t i = 0; i < n; ++i) {
         VregId x = l.b_.load(1, a.reg, static_cast<int32_t>(i));
         VregId y = l.b_.load(1, c.reg, static_cast<int32_t>(i));
         l.b_.alu_to(diff, AluOp::Sub, x, y);
         BlockId next = l.b_.new_block();
         l.b_.branch_imm(ir::Cond::Ne, diff, 0, done, next);
         l.b_.set_block(next);
       }
       l.b_.jump(done);
       l.b_.set_block(done);
       return l.int_val(diff, t);
     }},
    // buf(array) or buf(p, len): len bytes from a pointer (kernel or user
    // memory, as for str()), or from a string or array value.
    {.name = "buf",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       Type t = c.expr(e.args[0]);
       if (e.args.size() == 1) {
         if (t.kind != TypeKind::Array) {
           c.error(e.loc, fmt::format("buf() expects a length argument for non-array type {}",
                                      t.is_string() ? "string" : t.name()));
           return Type::none();
         }
         return Type::buffer(t.size * t.elems[0].size);
       }
       if (!t.is_int() && !t.is_bytes()) {
         c.error(e.loc, fmt::format("buf() expects a pointer, a string or an array ({} provided)", t.name()));
         return Type::none();
       }
       Type lt = c.expr(e.args[1]);
       if (!lt.is_int()) {
         c.error(c.ast_.expr(e.args[1]).loc,
                 fmt::format("buf(): the length must be an integer ({} provided)", lt.name()));
         return Type::none();
       }
       uint32_t cap = c.out_.config.max_strlen;
       if (auto n = c.constant(e.args[1])) {
         if (*n < 0) {
           c.error(e.loc, fmt::format("buf cannot use negative length ({})", *n));
           return Type::none();
         }
         cap = static_cast<uint32_t>(std::min<int64_t>(*n, cap));
       }
       if (t.is_bytes()) cap = std::min(cap, t.size * (t.kind == TypeKind::Array ? t.elems[0].size : 1));
       return Type::buffer(std::max<uint32_t>(cap, 1));
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val { return l.buf_val(e, t); }},
};

}  // namespace

std::span<const Function> strings() { return kStrings; }

}  // namespace bpfscope::builtins
