// Clocks: nsecs and its other clocks, elapsed, jiffies.
#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// nsecs's clocks, kept in const_of of an nsecs(CLOCK) call (none: boot).
enum Clock : int64_t { Boot, Monotonic, Tai, SwTai };

constexpr std::pair<std::string_view, Clock> kClocks[] = {
    {"boot", Boot}, {"monotonic", Monotonic}, {"tai", Tai}, {"sw_tai", SwTai}};

constexpr Function kClock[] = {
    // nsecs, nsecs(boot): CLOCK_BOOTTIME; nsecs(monotonic), nsecs(tai), and
    // nsecs(sw_tai): CLOCK_BOOTTIME plus the TAI offset taken at start
    // (cheaper than the TAI clock).
    {.name = "nsecs",
     .max_args = 1,
     .check =
         [](Checker& c, ExprId id, const Expr& e) {
           if (e.args.empty()) return Type::integer(8, false);
           const Expr& a = c.ast_.expr(e.args[0]);
           for (const auto& [name, clock] : kClocks) {
             if (a.kind == ExprKind::Identifier && a.name == name) {
               if (clock != Boot) c.out_.const_of[id] = clock;
               return Type::integer(8, false);
             }
           }
           c.error(a.loc, "nsecs() takes boot, monotonic, tai or sw_tai");
           return Type::none();
         },
     .lower =
         [](Lowerer& l, ExprId id, const Expr&, const Type& t) {
           switch (static_cast<Clock>(l.p_.const_of[id].value_or(Boot))) {
             case Boot: return l.int_val(l.b_.call(BPF_FUNC_ktime_get_boot_ns, {}), t);
             case Monotonic: return l.int_val(l.b_.call(BPF_FUNC_ktime_get_ns, {}), t);
             case Tai: return l.int_val(l.b_.call(BPF_FUNC_ktime_get_tai_ns, {}), t);
             case SwTai: {
               VregId boot = l.b_.call(BPF_FUNC_ktime_get_boot_ns, {});
               return l.int_val(l.b_.alu(AluOp::Add, boot, l.b_.imm(l.opts_.tai_minus_boot_ns)), t);
             }
           }
           std::unreachable();
         },
     .variable = true},
    // elapsed: nanoseconds since the tracer started.
    {.name = "elapsed",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           VregId now = l.b_.call(BPF_FUNC_ktime_get_boot_ns, {});
           return l.int_val(l.b_.alu(AluOp::Sub, now, l.b_.imm(static_cast<int64_t>(l.opts_.start_boot_ns))), t);
         },
     .variable = true},
    {.name = "jiffies",
     .check = [](Checker&, ExprId, const Expr&) { return Type::integer(8, false); },
     .lower = [](Lowerer& l, ExprId, const Expr&,
                 const Type& t) { return l.int_val(l.b_.call(BPF_FUNC_jiffies64, {}), t); },
     .variable = true},
};

}  // namespace

std::span<const Function> clocks() { return kClock; }

}  // namespace bpfscope::builtins
