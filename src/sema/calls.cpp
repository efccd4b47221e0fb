// The type checker's function calls: printf and the other actions,
// aggregations' siblings, string, symbol and network functions.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "builtins/builtins.h"
#include "sema/checker.h"
#include "symbols/symbols.h"

namespace bpfscope::sema::detail {

std::optional<std::string> Checker::known_string_arg(ExprId id, std::string_view function) {
  const Expr& e = ast_.expr(id);
  expr(e.args[0]);
  std::optional<std::string> s = const_string(e.args[0]);
  if (!s) error(e.loc, fmt::format("{}() expects a string literal ({} provided)", function, provided(e.args[0])));
  return s;
}


int32_t Checker::add_action(ActionKind kind, lang::Loc loc, std::vector<Type> args) {
  Action a;
  a.kind = kind;
  a.loc = loc;
  a.probe_index = probe_index_;
  uint32_t off = 8;
  for (const auto& t : args) {
    a.offsets.push_back(off);
    off += std::max<uint32_t>(t.mem_size(), 8);
  }
  a.args = std::move(args);
  a.record_size = off;
  out_.actions.push_back(std::move(a));
  return static_cast<int32_t>(out_.actions.size() - 1);
}

bool Checker::arg_count_ok(const Expr& e, const builtins::Function& row) {
  if (e.args.size() >= row.min_args && e.args.size() <= row.max_args) return true;
  if (row.max_args == 0)
    error(e.loc, fmt::format("{}() requires no arguments ({} provided)", e.name, e.args.size()));
  else
    error(e.loc, fmt::format("{}() requires {} argument{} ({} provided)", e.name,
                             row.min_args == row.max_args ? fmt::format("{}", row.min_args)
                                                          : fmt::format("{} to {}", row.min_args, row.max_args),
                             row.max_args == 1 ? "" : "s", e.args.size()));
  return false;
}

Type Checker::call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const builtins::Function* f = find_function_(e.name);
  if (!f) {
    // bpftrace underlines the name only.
    lang::Loc name{e.loc.begin, e.loc.begin + static_cast<uint32_t>(e.name.size())};
    error(name, fmt::format("Unknown function: {}", e.name));
    return Type::none();
  }
  out_.function_of[id] = f;
  if (!e.field_names.empty() && !f->named_args) {
    error(e.loc, "only printf() takes named arguments");
    return Type::none();
  }
  if (!arg_count_ok(e, *f)) return Type::none();
  if (f->aggregation != output::AggKind::Plain) {
    error(e.loc, fmt::format("{}() should be assigned to a map", e.name));
    return Type::none();
  }
  return f->check(*this, id, e);
}

// bpftrace's word for an argument's kind in "(X provided)".
std::string Checker::provided(ExprId id) {
  Type t = expr(id);
  if (t.is_int()) return "integer";
  if (t.is_string()) return "string";
  return t.name();
}

bool Checker::unsafe_allowed(const Expr& e, bool stdlib) {
  if (out_.unsafe) return true;
  error(e.loc, fmt::format("{}() {}", e.name,
                           stdlib ? "is unsafe. To use you need the --unsafe flag"
                                  : "is an unsafe function being used in safe mode"));
  return false;
}






// The value of an expression sema knows as a string at compile time (after
// expr() typed it): a string literal, a string getopt(), a positional
// parameter (its text, even when it reads as an integer), str($N).
std::optional<std::string> Checker::const_string(ExprId id) const {
  const Expr& e = ast_.expr(id);
  switch (e.kind) {
    case ExprKind::String: return e.sval;
    case ExprKind::Positional:
      if (e.ival == 0 || e.ival > out_.positional.size()) return std::string();
      return out_.positional[e.ival - 1];
    case ExprKind::Call:
      // A string getopt(), str($1).
      if (out_.function_of[id] && out_.function_of[id]->known && out_.type_of(id).is_string() && out_.const_of[id])
        return out_.const_strings[static_cast<size_t>(*out_.const_of[id])];
      return std::nullopt;
    default: return std::nullopt;
  }
}


// A probe kind as bpftrace's messages name it ("BEGIN", "tracepoint").
std::string Checker::probe_type_name(ProbeKind k) {
  if (k == ProbeKind::Begin) return "BEGIN";
  if (k == ProbeKind::End) return "END";
  return probe_kind_name(k);
}



// The divisor of a printf argument written `x / LITERAL` with a
// floating-point literal (1024.0), or an integer literal in exponent form
// (1e6), which divides as a double there and stays an integer elsewhere.
std::optional<double> Checker::float_divisor(const Expr& arg) const {
  if (arg.kind != ExprKind::Binary || arg.op != Op::Div) return std::nullopt;
  const Expr& r = ast_.expr(arg.args[1]);
  if (r.kind == ExprKind::Float) return r.fval;
  if (r.kind != ExprKind::Integer) return std::nullopt;
  const std::string_view text = ast_.source.slice(r.loc);
  if (text.starts_with("0x") || text.starts_with("0X") || text.find_first_of("eE") == std::string_view::npos)
    return std::nullopt;
  return static_cast<double>(r.ival);
}

namespace {

// Keys of two maps that can be joined: the same kinds field by field
// (integers of any size, strings of any length).
// A map whose values a table or a histogram's label shows: one number per key.
bool holds_numbers(const MapInfo& m) {
  using output::AggKind;
  return m.agg == AggKind::Count || m.agg == AggKind::Sum || m.agg == AggKind::Avg || m.agg == AggKind::Min ||
         m.agg == AggKind::Max || (m.agg == AggKind::Plain && m.value.is_int());
}

bool same_shape(const Type& a, const Type& b) {
  if (a.is_int() && b.is_int()) return true;
  if (a.kind != b.kind) return false;
  if (a.kind != TypeKind::Tuple && a.kind != TypeKind::Record) return a.kind == TypeKind::String || a == b;
  if (a.elems.size() != b.elems.size()) return false;
  for (size_t i = 0; i < a.elems.size(); ++i)
    if (!same_shape(a.elems[i], b.elems[i])) return false;
  return true;
}

}  // namespace

// Whether a tuple's first element is a hist() map without a key (the
// histogram of print((@usecs, @AVG))), or one the command line left out.
bool Checker::hist_first(const Expr& tuple) {
  if (tuple.args.empty()) return false;
  const Expr& m = ast_.expr(tuple.args[0]);
  if (m.kind != ExprKind::Map || !m.args.empty()) return false;
  auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& i) { return i.name == m.name; });
  return pruned_map(m.name) || (it != out_.maps.end() && it->agg == output::AggKind::Hist);
}

// print((@usecs, @AVG)): a histogram map, and on each entry's label line
// the values of number maps of the same key, as " [AVG 16]" (libbpf-tools'
// tcprtt -e). A bpfscope extension, printed through the table action.
Type Checker::print_hist_notes(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& tuple = ast_.expr(e.args[0]);
  const auto usage = [&](const lang::Loc& loc, std::string_view why) {
    error(loc, fmt::format("print() of a histogram with notes: {} (print((@usecs, @AVG)))", why));
    return Type::none();
  };
  std::vector<int32_t> maps;
  for (size_t i = 0; i < tuple.args.size(); ++i) {
    const Expr& m = ast_.expr(tuple.args[i]);
    if (m.kind != ExprKind::Map || !m.args.empty()) return usage(m.loc, "each element is a map without a key");
    MapInfo* info = whole_map(tuple.args[i]);
    if (!info) return Type::none();
    if (pruned_map(m.name)) {  // a map the command line left out: empty
      maps.push_back(out_.map_of[tuple.args[i]]);
      continue;
    }
    if (i == 0 && info->agg != output::AggKind::Hist) return usage(m.loc, fmt::format("{} is not a hist() map", info->name));
    if (i > 0 && !holds_numbers(*info)) return usage(m.loc, fmt::format("{} does not hold numbers", info->name));
    if (i > 0 && !pruned_map(out_.maps[maps[0]].name)) {
      const MapInfo& first = out_.maps[maps[0]];
      if (info->keyed != first.keyed || (info->keyed && !same_shape(first.key, info->key)))
        return usage(m.loc, fmt::format("{} has other keys than {}", info->name, first.name));
    }
    maps.push_back(out_.map_of[tuple.args[i]]);
  }
  int32_t act = add_action(ActionKind::Table, e.loc, {Type::integer(8, false)});
  auto& a = out_.actions[act];
  a.table_maps = std::move(maps);
  a.table_divisors.assign(a.table_maps.size(), output::TableDivisor{});
  a.table_hist = true;
  out_.action_of[id] = act;
  set(e.args[0], Type::none());
  return Type::none();
}

// print((@a, @b / 1024, @c / 1000.0), rows, "FORMAT", "NAMES"): the maps,
// which share a key type, joined into one table by key (a bpfscope
// extension for top-style tools). FORMAT has one conversion per column (the
// key's fields, then one value per map); NAMES, separated by spaces (or quoted: 'TIME (us)'), head
// the columns and name them in JSON.
Type Checker::print_table(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& tuple = ast_.expr(e.args[0]);
  const auto usage = [&](const lang::Loc& loc, std::string_view why) {
    error(loc, fmt::format("print() of a table: {} (print((@a, @b / 1024), rows, \"FORMAT\", \"NAMES\"))", why));
    return Type::none();
  };
  if (e.args.size() != 4 && e.args.size() != 5) return usage(e.loc, "expects 4 or 5 arguments");
  std::vector<int32_t> maps;
  std::vector<output::TableDivisor> divisors;
  const Type* key = nullptr;
  for (ExprId el : tuple.args) {
    const Expr& x = ast_.expr(el);
    ExprId map_id = el;
    output::TableDivisor d;
    if (x.kind == ExprKind::Binary && x.op == Op::Div) {
      map_id = x.args[0];
      const Expr& r = ast_.expr(x.args[1]);
      if (const auto f = float_divisor(x)) {
        d = {.by = *f, .is_float = true};
      } else if (r.kind == ExprKind::Integer) {
        d = {.by = static_cast<double>(r.ival), .is_float = false};
      } else {
        return usage(r.loc, "a column is divided by a literal only");
      }
      if (d.by == 0) return usage(r.loc, "division by zero");
      set(x.args[1], Type::integer(8, false));
      set(el, Type::none());
    }
    const Expr& m = ast_.expr(map_id);
    if (m.kind != ExprKind::Map || !m.args.empty()) return usage(m.loc, "each column is a map without a key");
    MapInfo* info = whole_map(map_id);
    if (!info) return Type::none();
    if (!holds_numbers(*info)) return usage(m.loc, fmt::format("{} does not hold numbers", info->name));
    if (!info->keyed) return usage(m.loc, fmt::format("{} has no keys", info->name));
    if (key && !same_shape(*key, info->key)) return usage(m.loc, fmt::format("{} has other keys than the first map", info->name));
    key = &info->key;
    maps.push_back(out_.map_of[map_id]);
    divisors.push_back(d);
  }
  if (maps.empty()) return usage(tuple.loc, "no maps");
  if (!expr(e.args[1]).is_int()) return usage(ast_.expr(e.args[1]).loc, "rows must be an integer");
  const Expr& f = ast_.expr(e.args[2]);
  const Expr& n = ast_.expr(e.args[3]);
  if (f.kind != ExprKind::String) return usage(f.loc, "the format must be a string literal");
  if (n.kind != ExprKind::String) return usage(n.loc, "the names must be a string literal");
  set(e.args[2], Type::string(static_cast<uint32_t>(f.sval.size() + 1)));
  set(e.args[3], Type::string(static_cast<uint32_t>(n.sval.size() + 1)));
  auto parsed = output::parse_printf(f.sval);
  if (auto* msg = std::get_if<std::string>(&parsed)) return usage(f.loc, *msg);
  auto& format = std::get<output::PrintfFormat>(parsed);
  if (!format.trailing.empty() && format.trailing.back() == '\n') format.trailing.pop_back();
  // A record key is one column ("fd = 1, size = 16").
  const size_t columns = (key->kind == TypeKind::Tuple && key->names.empty() ? key->elems.size() : 1) + maps.size();
  for (const auto& spec : format.specs) {
    if (spec.conv == '*') return usage(f.loc, "a table's format takes no * width or precision");
    if (spec.column >= static_cast<int>(columns))
      return usage(f.loc, fmt::format("%{}$ names column {} of {}", spec.column + 1, spec.column + 1, columns));
  }
  if (format.specs.size() != columns)
    return usage(f.loc, fmt::format("the format has {} conversions for {} columns", format.specs.size(), columns));
  // A name in single quotes may hold spaces ("SYSCALL COUNT 'TIME (us)'").
  std::vector<std::string> names;
  for (size_t i = 0; i < n.sval.size();) {
    const bool quoted = n.sval[i] == '\'';
    if (quoted) ++i;
    size_t j = quoted ? n.sval.find('\'', i) : n.sval.find_first_of(" \t", i);
    if (j == std::string::npos) {
      if (quoted) return usage(n.loc, "a quoted name has no closing quote");
      j = n.sval.size();
    }
    if (j > i) names.push_back(n.sval.substr(i, j - i));
    i = j + 1;
  }
  if (names.size() != columns)
    return usage(n.loc, fmt::format("{} names for {} columns", names.size(), columns));
  // A fifth argument orders the rows by another map's values, largest first
  // (biotop -s io|bytes|time), instead of by the sum of the columns.
  int32_t sort_map = -1;
  if (e.args.size() == 5) {
    const Expr& m = ast_.expr(e.args[4]);
    if (m.kind != ExprKind::Map || !m.args.empty()) return usage(m.loc, "the rows are ordered by a map without a key");
    MapInfo* info = whole_map(e.args[4]);
    if (!info) return Type::none();
    using output::AggKind;
    if (info->agg != AggKind::Count && info->agg != AggKind::Sum && !(info->agg == AggKind::Plain && info->value.is_int()))
      return usage(m.loc, fmt::format("{} orders the rows: a count(), sum() or integer map", info->name));
    if (!info->keyed || !same_shape(*key, info->key))
      return usage(m.loc, fmt::format("{} has other keys than the columns", info->name));
    sort_map = out_.map_of[e.args[4]];
  }
  int32_t act = add_action(ActionKind::Table, e.loc, {Type::integer(8, false)});
  auto& a = out_.actions[act];
  a.table_sort_map = sort_map;
  a.table_maps = std::move(maps);
  a.table_divisors = std::move(divisors);
  a.format = f.sval;
  a.printf_format = std::move(format);
  a.arg_names = std::move(names);
  out_.action_of[id] = act;
  set(e.args[0], Type::none());
  return Type::none();
}

// printf, cat and system: a literal format and its arguments, formatted in
// user space.
Type Checker::printf_call(ExprId id, ActionKind kind) {
  const Expr& e = ast_.expr(id);
  const Expr& f = ast_.expr(e.args[0]);
  if (f.kind != ExprKind::String) {
    if (kind == ActionKind::Printf)
      error(f.loc, "printf: the first argument must be a string literal");
    else
      error(e.loc, fmt::format("{}() expects a string literal ({} provided)", e.name, provided(e.args[0])));
    return Type::none();
  }
  set(e.args[0], Type::string(static_cast<uint32_t>(f.sval.size() + 1)));
  // Named arguments are the fields of a JSON event; unnamed ones (widths,
  // decorations) are only printed. "" for an unnamed one.
  // A named format (printf only) names the formatted text as one field.
  std::vector<std::string> names;
  std::string text_name;
  if (!e.field_names.empty()) {
    if (!e.field_names[0].empty() && kind != ActionKind::Printf) {
      error(ast_.expr(e.args[0]).loc, fmt::format("{}: the format cannot be named", e.name));
      return Type::none();
    }
    text_name = e.field_names[0];
    names.assign(e.field_names.begin() + 1, e.field_names.end());
  }
  auto parsed = output::parse_printf(f.sval);
  if (auto* msg = std::get_if<std::string>(&parsed)) {
    error(f.loc, *msg);
    return Type::none();
  }
  auto& format = std::get<output::PrintfFormat>(parsed);
  for (const auto& spec : format.specs)
    if (spec.column >= 0) {
      error(f.loc, fmt::format("{}: argument numbers (%{}$) are for a table's format only", e.name, spec.column + 1));
      return Type::none();
    }
  size_t supplied = e.args.size() - 1;
  if (supplied < format.specs.size()) {
    error(e.loc, fmt::format("{}: Not enough arguments for format string ({} supplied, {} expected)", e.name,
                             supplied, format.specs.size()));
    return Type::none();
  }
  if (supplied > format.specs.size()) {
    error(e.loc, fmt::format("{}: Too many arguments for format string ({} supplied, {} expected)", e.name,
                             supplied, format.specs.size()));
    return Type::none();
  }
  std::vector<Type> args;
  std::vector<double> divisors;
  for (size_t i = 0; i < supplied; ++i) {
    const Expr& a = ast_.expr(e.args[i + 1]);
    const auto& spec = format.specs[i];
    if (spec.conv == '*' && i < names.size() && !names[i].empty()) {
      error(a.loc, fmt::format("{}: a * width or precision cannot be named", e.name));
      return Type::none();
    }
    const std::optional<double> divisor = float_divisor(a);
    if (divisor && *divisor == 0) {
      error(ast_.expr(a.args[1]).loc, fmt::format("{}: division by zero", e.name));
      return Type::none();
    }
    Type t = expr(divisor ? a.args[0] : e.args[i + 1]);
    // An argument that failed to type-check was reported already.
    if (t.kind == TypeKind::None && diags_.has_errors()) return Type::none();
    if (divisor) {
      if (!t.is_int()) {
        error(a.loc, fmt::format("{}: only an integer can be divided by a floating-point literal ({} supplied)",
                                 e.name, t.kind == TypeKind::None ? "none" : t.name()));
        return Type::none();
      }
      t = Type::integer(8, t.is_signed && !t.is_pointer);
      set(e.args[i + 1], t);
    }
    bool ok = t.kind != TypeKind::None && !t.is_record();
    if (spec.wants == output::PrintfSpec::ArgKind::Integer && !t.is_int()) ok = false;
    if (spec.wants == output::PrintfSpec::ArgKind::String && (divisor || (!t.is_string() && t.kind != TypeKind::Buffer)))
      ok = false;
    if (!ok) {
      error(a.loc, fmt::format("{}: {} specifier expects a value of type {} ({} supplied)", e.name, spec.spec,
                               spec.wants == output::PrintfSpec::ArgKind::Integer ? "integer" : "string",
                               divisor ? "float" : t.kind == TypeKind::None ? "none" : t.name()));
      return Type::none();
    }
    args.push_back(t);
    divisors.push_back(divisor.value_or(0));
  }
  if (kind == ActionKind::Printf) args.push_back(Type::integer(4, false));
  int32_t act = add_action(kind, e.loc, std::move(args));
  out_.actions[act].with_cpu = kind == ActionKind::Printf;
  if (auto from = ast_.expanded_from.find(id); from != ast_.expanded_from.end())
    out_.actions[act].expanded_from = from->second;
  out_.actions[act].divisors = std::move(divisors);
  out_.actions[act].format = f.sval;
  out_.actions[act].printf_format = std::move(format);
  out_.actions[act].arg_names = std::move(names);
  out_.actions[act].text_name = std::move(text_name);
  out_.action_of[id] = act;
  return Type::none();
}

}  // namespace bpfscope::sema::detail

namespace bpfscope::sema {

bool builtin_takes(std::string_view name, size_t args) {
  const builtins::Function* f = builtins::find(name);
  return f && args >= f->min_args && args <= f->max_args;
}

}  // namespace bpfscope::sema
