#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// join(): at most this many elements, each of at most kJoinElemMax bytes
// (and max_strlen).
constexpr uint32_t kJoinMax = 16;
constexpr uint32_t kJoinElemMax = 1024;

// clear(@m), zero(@m): an action on a whole map.
Type whole_map_action(Checker& c, ExprId id, const Expr& e, ActionKind kind) {
  const Expr& a = c.ast_.expr(e.args[0]);
  if (a.kind != ExprKind::Map || !a.args.empty()) {
    c.error(a.loc, fmt::format("{}() expects a map with no keys", e.name));
    return Type::none();
  }
  MapInfo* m = c.whole_map(e.args[0]);
  int32_t act = c.add_action(kind, e.loc);
  if (m) c.out_.actions[act].map = c.out_.map_of[e.args[0]];
  c.out_.action_of[id] = act;
  return Type::none();
}

// An action whose record holds nothing but its id.
Val send_plain(Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) {
  l.send(l.p_.action_of[id], {});
  return Val{.type = t};
}

// clear() and zero(): nothing is sent when folded into the print before
// them (Action::taken): that print empties the map.
Val send_unless_folded(Lowerer& l, ExprId id, const Expr& e, const Type& t) {
  if (l.p_.actions[l.p_.action_of[id]].folded) return Val{.type = t};
  return send_plain(l, id, e, t);
}

// printf() and its siblings (cat, system, errorf, warnf): the arguments
// after the format. One divided by a floating-point literal sends its
// integer dividend: user space divides (sema's Action::divisors).
Val send_formatted(Lowerer& l, ExprId id, const Expr& e, const Type& t) {
  const auto& action = l.p_.actions[l.p_.action_of[id]];
  std::vector<Arg> args;
  for (size_t i = 1; i < e.args.size(); ++i) {
    const bool divided = i - 1 < action.divisors.size() && action.divisors[i - 1] != 0;
    args.push_back({.expr = divided ? l.ast_.expr(e.args[i]).args[0] : e.args[i]});
  }
  if (action.with_cpu)
    args.push_back({.val = l.int_val(l.b_.call(BPF_FUNC_get_smp_processor_id, {}), action.args.back())});
  l.send(l.p_.action_of[id], args);
  return Val{.type = t};
}

// debugf()'s format: the conversions the kernel's bpf_trace_vprintk takes
// (%d %i %u %x %X %c %s %p, with l or ll; %%); its arguments, at most 12.
constexpr size_t kDebugfArgs = 12;
std::optional<std::string> debugf_format_error(std::string_view f, size_t& conversions) {
  conversions = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') continue;
    if (++i == f.size()) return "a format ends in '%'";
    if (f[i] == '%') continue;
    size_t longs = 0;
    while (i < f.size() && f[i] == 'l' && longs < 2) ++i, ++longs;
    if (i == f.size() || std::string_view("diuxXcsp").find(f[i]) == std::string_view::npos)
      return fmt::format(
          "'%{}' is not a conversion the kernel's trace_printk takes (%d %i %u %x %X %c %s %p, with l "
          "or ll)",
          i < f.size() ? f.substr(i - longs, longs + 1) : f.substr(i - longs));
    ++conversions;
  }
  return std::nullopt;
}

constexpr Function kActions[] = {
    // debugf(fmt, args...): a line in the kernel's trace buffer
    // (bpf_trace_vprintk; tracefs's trace and trace_pipe show it), for
    // debugging a program without the ring buffer.
    {.name = "debugf",
     .min_args = 1,
     .max_args = kDebugfArgs + 1,
     .check =
         [](Checker& c, ExprId, const Expr& e) {
           const Expr& f = c.ast_.expr(e.args[0]);
           if (f.kind != ExprKind::String) {
             c.error(f.loc, "debugf() expects a string literal format");
             return Type::none();
           }
           c.expr(e.args[0]);
           size_t conversions = 0;
           if (auto why = debugf_format_error(f.sval, conversions)) {
             c.error(f.loc, "debugf(): " + *why);
             return Type::none();
           }
           if (conversions != e.args.size() - 1) {
             c.error(e.loc, fmt::format("debugf(): the format has {} conversions and {} arguments follow it",
                                        conversions, e.args.size() - 1));
             return Type::none();
           }
           for (size_t i = 1; i < e.args.size(); ++i) {
             Type t = c.expr(e.args[i]);
             if (!t.is_int() && !t.is_string()) {
               c.error(c.ast_.expr(e.args[i]).loc,
                       fmt::format("debugf() prints integers and strings ({} provided)", t.name()));
               return Type::none();
             }
           }
           return Type::none();
         },
     .lower =
         [](Lowerer& l, ExprId, const Expr& e, const Type& t) {
           // The format and the arguments' array (an integer, or a string's
           // address) in scratch memory.
           const std::string& text = l.ast_.expr(e.args[0]).sval;
           Val fmt = l.addressable(l.string_literal(text));
           const uint32_t n = static_cast<uint32_t>(e.args.size() - 1);
           VregId data = n ? l.scratch_ptr(l.alloc(n * 8)) : kNoVreg;
           for (uint32_t i = 0; i < n; ++i) {
             Val v = l.expr(e.args[i + 1]);
             VregId word = v.type.is_string() ? l.addressable(v).reg : l.materialize_int(v);
             l.b_.store(8, data, static_cast<int32_t>(i * 8), word);
           }
           l.b_.call(BPF_FUNC_trace_vprintk, {fmt.reg, l.b_.imm(static_cast<int64_t>(text.size() + 1)),
                                              n ? data : l.b_.imm(0), l.b_.imm(n * 8)});
           return Val{.type = t};
         }},
    {.name = "printf",
     .min_args = 1,
     .max_args = 64,
     .check = [](Checker& c, ExprId id, const Expr& /*e*/) -> Type { return c.printf_call(id); },
     .lower = send_formatted,
     .named_args = true},
    {.name = "exit",
     .min_args = 0,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       std::vector<Type> args;
       if (!e.args.empty()) {
         Type t = c.expr(e.args[0]);
         if (!t.is_int()) c.error(c.ast_.expr(e.args[0]).loc, "exit() expects an integer exit code");
         args.push_back(Type::integer(8, true));
       }
       c.out_.action_of[id] = c.add_action(ActionKind::Exit, e.loc, std::move(args));
       return Type::none();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       std::vector<Arg> args;
       if (!e.args.empty()) args.push_back({.expr = e.args[0]});
       l.send(l.p_.action_of[id], args);
       // exit() ends the probe, as in bpftrace.
       l.end_probe();
       l.b_.set_block(l.b_.new_block());
       return Val{.type = t};
     }},
    {.name = "print",
     .min_args = 1,
     .max_args = 5,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind == ExprKind::Tuple && a.field_names.empty() && e.args.size() > 1) return c.print_table(id);
       // print((@usecs, @AVG)) with a hist() map first is a histogram with
       // notes; any other tuple is a value, maps read as values
       // (print((@a, @c)) prints "(5, 1)").
       if (a.kind == ExprKind::Tuple && a.field_names.empty() && e.args.size() == 1 && c.hist_first(a))
         return c.print_hist_notes(id);
       if (a.kind == ExprKind::Map && a.args.empty()) {
         // print(@m, top, div, "name"): a bpfscope extension for tools, the
         // map printed under another name (argdist's histogram headed by
         // its expression, "args->bytes").
         std::string shown;
         if (e.args.size() > 4) {
           c.error(e.loc, fmt::format("print() requires 1 to 4 arguments ({} provided)", e.args.size()));
           return Type::none();
         }
         if (e.args.size() == 4) {
           const Expr& n = c.ast_.expr(e.args[3]);
           if (n.kind != ExprKind::String || n.sval.empty())
             c.error(n.loc, "print(): the fourth argument (the name to print the map under) must be a string literal");
           else
             shown = "@" + n.sval;
         }
         MapInfo* m = c.whole_map(e.args[0]);
         for (size_t i = 1; i < std::min<size_t>(e.args.size(), 3); ++i)
           if (!c.expr(e.args[i]).is_int())
             c.error(c.ast_.expr(e.args[i]).loc, "print(): top and div must be integers");
         int32_t act = c.add_action(ActionKind::Print, e.loc, {Type::integer(8, false), Type::integer(8, false)});
         if (m) c.out_.actions[act].map = c.out_.map_of[e.args[0]];
         c.out_.actions[act].format = shown;
         c.out_.action_of[id] = act;
         return Type::none();
       }
       if (e.args.size() > 1) {
         c.error(e.loc, "print() of a value takes one argument");
         return Type::none();
       }
       Type t = c.expr(e.args[0]);
       if (t.kind == TypeKind::None) {
         if (!c.diags_.has_errors()) c.error(a.loc, "print() needs a value");
         return Type::none();
       }
       c.out_.action_of[id] = c.add_action(ActionKind::PrintValue, e.loc, {t});
       return Type::none();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       const auto& action = l.p_.actions[l.p_.action_of[id]];
       std::vector<Arg> args;
       if (action.kind == sema::ActionKind::Print) {
         for (size_t i = 1; i < 3; ++i) {
           if (i < e.args.size())
             args.push_back({.expr = e.args[i]});
           else
             args.push_back({.val = l.constant(0, Type::integer(8, false))});
         }
       } else if (action.kind == sema::ActionKind::Table) {
         // The row limit; print((@usecs, @AVG)) has none.
         if (action.table_hist)
           args.push_back({.val = l.constant(0, Type::integer(8, false))});
         else
           args.push_back({.expr = e.args[1]});
       } else {
         args.push_back({.expr = e.args[0]});
       }
       l.send(l.p_.action_of[id], args);
       return Val{.type = t};
     }},
    {.name = "clear",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) { return whole_map_action(c, id, e, ActionKind::Clear); },
     .lower = send_unless_folded},
    {.name = "zero",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) { return whole_map_action(c, id, e, ActionKind::Zero); },
     .lower = send_unless_folded},
    {.name = "time",
     .min_args = 0,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       std::string fmt = "%H:%M:%S\n";
       if (!e.args.empty()) {
         const Expr& f = c.ast_.expr(e.args[0]);
         if (f.kind != ExprKind::String) {
           c.error(f.loc, "time() expects a string literal format");
           return Type::none();
         }
         c.expr(e.args[0]);
         fmt = f.sval;
       }
       int32_t act = c.add_action(ActionKind::Time, e.loc);
       c.out_.actions[act].format = fmt;
       c.out_.action_of[id] = act;
       return Type::none();
     },
     .lower = send_plain},
    {.name = "join",
     .min_args = 1,
     .max_args = 2,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       Type t = c.expr(e.args[0]);
       if (t.kind != TypeKind::Int) {
         c.error(e.loc, fmt::format("join() only supports int or pointer arguments ({} provided)", t.name()));
         return Type::none();
       }
       std::string sep = " ";
       if (e.args.size() == 2) {
         const Expr& d = c.ast_.expr(e.args[1]);
         if (d.kind != ExprKind::String) {
           c.error(e.loc, fmt::format("join() expects a string literal ({} provided)", c.provided(e.args[1])));
           return Type::none();
         }
         c.expr(e.args[1]);
         sep = d.sval;
       }
       // A count, then kJoinMax elements of join_elem_size bytes.
       c.out_.join_elem_size = std::min<uint32_t>(c.out_.config.max_strlen, kJoinElemMax);
       std::vector<Type> args{Type::integer(8, false)};
       for (uint32_t i = 0; i < kJoinMax; ++i) args.push_back(Type::string(c.out_.join_elem_size));
       int32_t act = c.add_action(ActionKind::Join, e.loc, std::move(args));
       c.out_.actions[act].format = sep;
       c.out_.action_of[id] = act;
       return Type::none();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       l.join(e, l.p_.actions[l.p_.action_of[id]], l.p_.action_of[id]);
       return Val{.type = t};
     }},
    {.name = "cat",
     .min_args = 1,
     .max_args = 64,
     .check = [](Checker& c, ExprId id, const Expr& /*e*/) -> Type { return c.printf_call(id, ActionKind::Cat); },
     .lower = send_formatted},
    {.name = "system",
     .min_args = 1,
     .max_args = 64,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       if (!c.unsafe_allowed(e, false)) return Type::none();
       return c.printf_call(id, ActionKind::System);
     },
     .lower = send_formatted},
    {.name = "errorf",
     .min_args = 1,
     .max_args = 64,
     .check = [](Checker& c, ExprId id, const Expr& /*e*/) -> Type { return c.printf_call(id, ActionKind::Errorf); },
     .lower = send_formatted},
    // assert(cond, msg): when cond is false, the error "assert failed: MSG"
    // at the call, and the run ends with exit code 1 (bpftrace's stdlib
    // macro: errorf, then exit(1)).
    {.name = "assert",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       Type cond = c.expr(e.args[0]), msg = c.expr(e.args[1]);
       if (!cond.is_int()) {
         c.error(c.ast_.expr(e.args[0]).loc, fmt::format("assert() expects a condition ({} provided)", cond.name()));
         return Type::none();
       }
       if (!msg.is_string()) {
         c.error(c.ast_.expr(e.args[1]).loc, fmt::format("assert() expects a string message ({} provided)", msg.name()));
         return Type::none();
       }
       int32_t act = c.add_action(ActionKind::Errorf, e.loc, {msg});
       auto& a = c.out_.actions[act];
       a.format = "assert failed: %s";
       a.printf_format = std::get<output::PrintfFormat>(output::parse_printf(a.format));
       a.divisors = {0};
       a.then_exit = 1;
       if (auto from = c.ast_.expanded_from.find(id); from != c.ast_.expanded_from.end()) a.expanded_from = from->second;
       c.out_.action_of[id] = act;
       return Type::none();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       BlockId failed = l.b_.new_block(), done = l.b_.new_block();
       l.cond(e.args[0], done, failed);
       l.b_.set_block(failed);
       l.send(l.p_.action_of[id], {{.expr = e.args[1]}});
       l.end_probe();  // as exit()
       l.b_.set_block(done);
       return Val{.type = t};
     }},
    {.name = "warnf",
     .min_args = 1,
     .max_args = 64,
     .check = [](Checker& c, ExprId id, const Expr& /*e*/) -> Type { return c.printf_call(id, ActionKind::Warnf); },
     .lower = send_formatted},
};

}  // namespace

std::span<const Function> actions() { return kActions; }

}  // namespace bpfscope::builtins
