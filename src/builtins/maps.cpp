#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

constexpr Function kMaps[] = {
    {.name = "delete",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind != ExprKind::Map) {
         c.error(a.loc, "delete() expects a map");
         return Type::none();
       }
       if (e.args.size() == 2) {
         // delete(@m, key): check the key against the map.
         if (!a.args.empty()) {
           c.error(a.loc, "delete(@m, key) takes the map without a key");
           return Type::none();
         }
         if (!c.map_and_key(e.args[0], e.args[1], "delete() with two arguments")) return Type::none();
       } else {
         if (!c.map_for(e.args[0], false)) {
           bool exists =
               std::any_of(c.out_.maps.begin(), c.out_.maps.end(), [&](const MapInfo& m) { return m.name == a.name; });
           if (!exists) c.error(a.loc, fmt::format("Undefined map: {}", a.name));
           return Type::none();
         }
         c.set(e.args[0], Type::none());
       }
       return Type::boolean();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       VregId key;
       ExprId map_expr = e.args[0];
       if (e.args.size() == 2) {
         const auto& m = l.map_info(map_expr);
         uint32_t off = l.alloc(m.key_size);
         key = l.scratch_ptr(off);
         l.copy_to(key, 0, l.expr(e.args[1]), m.key);
       } else {
         key = l.map_key(map_expr);
       }
       VregId r = l.b_.call(BPF_FUNC_map_delete_elem, {l.map_ptr(l.p_.map_of[map_expr]), key});
       return l.int_val(l.flag(ir::Cond::Eq, r, 0), t);
     }},
    {.name = "has_key",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind != ExprKind::Map || !a.args.empty()) {
         c.error(a.loc, "has_key() expects a map without a key, then the key: has_key(@m, k)");
         return Type::none();
       }
       if (!c.map_and_key(e.args[0], e.args[1], "has_key()")) return Type::none();
       return Type::boolean();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       const auto& m = l.map_info(e.args[0]);
       VregId key = l.scratch_ptr(l.alloc(m.key_size));
       l.copy_to(key, 0, l.expr(e.args[1]), m.key);
       VregId ptr = l.b_.call(BPF_FUNC_map_lookup_elem, {l.map_ptr(l.p_.map_of[e.args[0]]), key});
       return l.int_val(l.flag(ir::Cond::Ne, ptr, 0), t);
     }},
    // len(@map): the map's entry count; len(ustack) / len(kstack): the frames
    // of the current stack.
    {.name = "len",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind == ExprKind::Map && a.args.empty()) {
         MapInfo* m = c.whole_map(e.args[0]);
         if (!m) return Type::none();
         if (!m->keyed) {
           c.error(e.loc, fmt::format("call to len() expects a map with explicit keys (non-scalar map): {} has none", m->name));
           return Type::none();
         }
         if (!c.out_.btf->find_func("bpf_map_sum_elem_count")) {
           c.error(e.loc,
                   "len(@map) needs the bpf_map_sum_elem_count kfunc (Linux 6.6+), which this kernel's BTF lacks");
           return Type::none();
         }
         return Type::integer(8, true);
       }
       Type t = c.expr(e.args[0]);
       if (t.kind != TypeKind::Stack) {
         c.error(e.loc, fmt::format("len() expects a map or a stack ({} provided)",
                                    t.kind == TypeKind::None ? "none" : t.name()));
         return Type::none();
       }
       return Type::integer(8, true);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       const Type& at = l.p_.type_of(e.args[0]);
       if (at.kind == TypeKind::Stack) {
         // bpf_get_stack returns the bytes written: 8 per frame, or < 0.
         VregId buf = l.scratch_ptr(l.alloc(kMaxStackFrames * 8));
         VregId n = l.b_.call(BPF_FUNC_get_stack,
                              {l.ctx_, buf, l.b_.imm(kMaxStackFrames * 8), l.b_.imm(at.user ? BPF_F_USER_STACK : 0)});
         VregId out = l.b_.imm(0);
         BlockId some = l.b_.new_block(), join_b = l.b_.new_block();
         l.b_.branch_imm(ir::Cond::SGt, n, 0, some, join_b);
         l.b_.set_block(some);
         l.b_.mov_to(out, l.b_.alu_imm(AluOp::Rsh, n, 3));
         l.b_.jump(join_b);
         l.b_.set_block(join_b);
         return l.int_val(out, t);
       }
       // The kernel keeps a per-CPU element count for hash maps; the
       // bpf_map_sum_elem_count kfunc (6.6) sums it.
       auto kfunc = l.p_.btf->find_func("bpf_map_sum_elem_count");
       return l.int_val(l.b_.call_kfunc(kfunc.value_or(0), {l.map_ptr(l.p_.map_of[e.args[0]])}), t);
     }},
    {.name = "count", .min_args = 0, .max_args = 0, .aggregation = output::AggKind::Count},
    {.name = "sum", .min_args = 1, .max_args = 1, .aggregation = output::AggKind::Sum},
    {.name = "avg", .min_args = 1, .max_args = 1, .aggregation = output::AggKind::Avg},
    {.name = "min", .min_args = 1, .max_args = 1, .aggregation = output::AggKind::Min},
    {.name = "max", .min_args = 1, .max_args = 1, .aggregation = output::AggKind::Max},
    {.name = "stats", .min_args = 1, .max_args = 1, .aggregation = output::AggKind::Stats},
    {.name = "hist", .min_args = 1, .max_args = 2, .aggregation = output::AggKind::Hist},
    {.name = "lhist", .min_args = 4, .max_args = 4, .aggregation = output::AggKind::LHist},
    // tseries(v, interval, n[, "avg"|"max"|"min"|"sum"]): the last n intervals.
    {.name = "tseries", .min_args = 3, .max_args = 4, .aggregation = output::AggKind::TSeries},
};

}  // namespace

std::span<const Function> maps() { return kMaps; }

}  // namespace bpfscope::builtins
