#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// Why a --name=VALUE is not an integer, in bpftrace 0.26's words.
// An unsigned option's value as bpftrace's to_uint reads it: decimal, 0x hex
// or 0 octal, the whole text, at most UINT64_MAX (as an int64's bits).
std::optional<int64_t> parse_uint_param(std::string_view v) {
  const std::string text(v);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long u = std::strtoull(text.c_str(), &end, 0);
  if (errno == ERANGE || end == text.c_str() || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(u);
}

std::string named_int_error(std::string_view v) {
  std::string_view digits = v.starts_with('-') ? v.substr(1) : v;
  if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0]))) return "invalid integer";
  const std::string text(v);
  errno = 0;
  char* end = nullptr;
  (void)std::strtoll(text.c_str(), &end, 0);
  return errno == ERANGE ? "value is out of range" : "invalid trailing bytes";
}

// A --name=VALUE of a boolean getopt(): 1, true, on, yes / 0, false, off,
// no, in any case (bpftrace 0.26).
bool bool_word(std::string_view v, bool truth) {
  std::string lower(v);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (truth) return lower == "1" || lower == "true" || lower == "on" || lower == "yes";
  return lower == "0" || lower == "false" || lower == "off" || lower == "no";
}

// config's fields: the settings a script's `config = { ... }` block and the
// environment set, as bpftrace 0.26 names them.
struct Setting {
  std::string_view name;
  Type type;
  int64_t number;
  std::string_view text;
};
std::vector<Setting> settings(const sema::Config& config) {
  return {
      {"max_strlen", Type::integer(8, false), config.max_strlen, ""},
      {"max_map_keys", Type::integer(8, false), config.max_map_keys, ""},
      {"print_maps_on_exit", Type::boolean(), config.print_maps_on_exit, ""},
      {"stack_mode", Type::string(9), 0, "bpftrace"},
      {"cpp_demangle", Type::boolean(), 1, ""},
  };
}

constexpr Function kOptions[] = {
    // config, config(): the settings, as a record (config.max_strlen).
    {.name = "config",
     .check =
         [](Checker& c, ExprId, const Expr&) {
           std::vector<Type> types;
           std::vector<std::string> names;
           for (const Setting& s : settings(c.out_.config)) {
             types.push_back(s.type);
             names.emplace_back(s.name);
           }
           return Type::tuple(std::move(types), std::move(names));
         },
     .lower =
         [](Lowerer& l, ExprId, const Expr&, const Type& t) {
           VregId rec = l.scratch_ptr(l.alloc(t.mem_size()));
           if (t.has_holes()) l.zero(rec, 0, t.mem_size());
           const std::vector<Setting> all = settings(l.p_.config);
           for (size_t i = 0; i < all.size(); ++i) {
             const Val v = all[i].type.is_string() ? l.string_literal(std::string(all[i].text))
                                                   : l.constant(all[i].number, all[i].type);
             l.copy_to(rec, t.offsets[i], v, t.elems[i], /*field=*/true);
           }
           return Val{.reg = rec, .type = t};
         },
     .variable = true},
    // getopt("name"[, default[, "description"]]): the value of --name on the
    // command line after `--`, typed by the default (bool when none).
    {.name = "getopt",
     .min_args = 1,
     .max_args = 3,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const Expr& n = c.ast_.expr(e.args[0]);
       if (n.kind != ExprKind::String) {
         c.error(n.loc, fmt::format("getopt() expects a string literal name ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       c.expr(e.args[0]);
       if (e.args.size() == 3) {
         if (c.ast_.expr(e.args[2]).kind != ExprKind::String) {
           c.error(c.ast_.expr(e.args[2]).loc, "getopt(): the description must be a string literal");
           return Type::none();
         }
         c.expr(e.args[2]);
       }
       enum class Kind { Bool, Int, String } kind = Kind::Bool;
       int64_t ival = 0;
       // A default that is a non-negative literal makes the option unsigned
       // (bpftrace's uint64): --n=0xffffffffffffffff is 18446744073709551615.
       bool is_unsigned = false;
       std::string sval;
       if (e.args.size() >= 2) {
         const Expr& d = c.ast_.expr(e.args[1]);
         std::string_view text = c.ast_.source.slice(d.loc);
         c.expr(e.args[1]);
         if (d.kind == ExprKind::String) {
           kind = Kind::String;
           sval = d.sval;
         } else if (auto value = c.constant(e.args[1])) {
           kind = text == "true" || text == "false" ? Kind::Bool : Kind::Int;
           ival = *value;
           is_unsigned = kind == Kind::Int && d.kind == ExprKind::Integer;
         } else {
           c.error(d.loc, "getopt(): the default must be a literal (bool, integer or string)");
           return Type::none();
         }
       }
       c.out_.getopt_names.insert(n.sval);
       if (auto it = c.out_.named_args.find(n.sval); it != c.out_.named_args.end()) {
         const auto& v = it->second;
         // Reports a bad value; the default stands in for it, so that nothing
         // after the getopt() fails for want of a type.
         auto bad_value = [&](std::string_view why) {
           std::string msg =
               fmt::format("program command line option --{} {} (value: {})", n.sval, why, v.value_or("true"));
           const bool said = std::any_of(c.diags_.all().begin(), c.diags_.all().end(),
                                         [&](const lang::Diagnostic& d) { return d.message == msg; });
           if (c.final_ && !said)
             c.diags_.error_unlocated(std::move(msg), {fmt::format("the program reads it with {} at {}",
                                                                   c.ast_.source.slice(e.loc),
                                                                   lang::location(c.ast_.source, e.loc))});
         };
         switch (kind) {
           case Kind::Bool:
             if (!v || bool_word(*v, true))
               ival = 1;
             else if (bool_word(*v, false))
               ival = 0;
             else
               bad_value("expects a boolean (e.g. 'true')");
             break;
           case Kind::Int: {
             auto parsed = !v ? std::nullopt : is_unsigned ? parse_uint_param(*v) : parse_int_param(*v);
             if (parsed)
               ival = *parsed;
             else
               bad_value(v ? named_int_error(*v) : "expects an integer");
             break;
           }
           case Kind::String:
             if (v)
               sval = *v;
             else
               bad_value("expects a string");
             break;
         }
       }
       if (kind == Kind::String) {
         if (sval.size() + 1 > c.out_.config.max_strlen) {
           c.error(e.loc, fmt::format("getopt(): the value of --{} is longer than max_strlen ({})", n.sval,
                                      c.out_.config.max_strlen));
           return Type::none();
         }
         c.out_.const_of[id] = static_cast<int64_t>(c.out_.const_strings.size());
         c.out_.const_strings.push_back(sval);
         return Type::string(static_cast<uint32_t>(sval.size() + 1));
       }
       c.out_.const_of[id] = ival;
       if (kind == Kind::Bool) return Type::boolean();
       // A value past INT64_MAX is a uint64; a smaller one stays an int64,
       // which prints the same and keeps signed arithmetic where a script
       // mixes it with negative values.
       return Type::integer(8, !(is_unsigned && ival < 0));
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       int64_t v = l.p_.const_of[id].value_or(0);
       if (t.is_string()) {
         Val s = l.string_literal(l.p_.const_strings[static_cast<size_t>(v)]);
         s.type = t;
         return s;
       }
       return l.constant(v, t);
     },
     .known = true},
    // in_list(x, "80,443") (a bpfscope extension, for the tools' port and pid
    // lists): true when the integer x is one of the comma-separated integers of
    // a compile-time string (decimal or 0x hex, spaces around commas allowed;
    // "" is the empty list). Lowered to one compare per element.
    {.name = "in_list",
     .min_args = 2,
     .max_args = 2,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const Type x = c.expr(e.args[0]);
       if (x.kind == TypeKind::None && c.diags_.has_errors()) return Type::none();
       if (!x.is_int()) {
         c.error(c.ast_.expr(e.args[0]).loc, fmt::format("in_list() expects an integer to look for ({} provided)",
                                                         x.kind == TypeKind::None ? "none" : x.name()));
         return Type::none();
       }
       c.expr(e.args[1]);
       const lang::Loc list_loc = c.ast_.expr(e.args[1]).loc;
       const std::optional<std::string> list = c.const_string(e.args[1]);
       if (!list) {
         c.error(list_loc,
                 "in_list(): the list must be a string known when compiling: a literal (\"80,443\"), "
                 "a string getopt(\"name\", \"\") or a positional parameter");
         return Type::none();
       }
       std::vector<int64_t> values;
       const auto trim = [](std::string_view s) {
         while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
         while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
         return s;
       };
       if (!trim(*list).empty()) {
         std::string_view rest = *list;
         for (;;) {
           const size_t comma = rest.find(',');
           const std::string_view item = trim(rest.substr(0, comma));
           const auto v = parse_int_param(item);
           if (!v) {
             c.error(list_loc, fmt::format("in_list(): \"{}\" is not a list of integers: \"{}\"", *list, item));
             return Type::none();
           }
           values.push_back(*v);
           if (comma == std::string_view::npos) break;
           rest.remove_prefix(comma + 1);
         }
       }
       c.out_.in_list_of[id] = std::move(values);
       return Type::boolean();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr&, const Type&) { return l.bool_of(id); },
     .branch = [](Lowerer& l, ExprId id, BlockId yes, BlockId no) { l.in_list(id, yes, no); }},
};

}  // namespace

std::span<const Function> options() { return kOptions; }

}  // namespace bpfscope::builtins
