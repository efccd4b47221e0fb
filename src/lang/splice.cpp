// Splicing tool options into the script (tools/README.md, `expr` and `spec`
// options): an AST pass between macro expansion and sema.
//
// Each value given on the command line becomes a segment of the source, so
// its expressions are parsed, type-checked and reported like the script's,
// with errors located in the option's text. A probe whose attach point is
// getopt("NAME") is copied once per value; a statement that names a part of
// the option (getopt("NAME.PART")) or a map that such a probe stores a part
// in is copied once per value. In a copy, each part is the value's own
// expression or literal, and each of those maps is the value's own ("@m#2"),
// so that the values' keys may differ in type (argdist -C 'u32 fd' next to
// -C 'char* buf'); the probe's other maps are shared.
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

class Splicer {
 public:
  Splicer(Program& p, Diagnostics& d, std::set<std::string>* dropped) : p_(p), d_(d), dropped_(dropped) {}

  bool run(const std::vector<std::string>& options, const std::vector<SplicedValue>& values) {
    for (const auto& name : options) options_[name].name = name;
    for (const auto& v : values) prepare(v);
    if (errors_) return false;
    // Probes repeated per value first: they decide which maps are per value,
    // which the statements of the other probes (END's clear(), an interval's
    // print()) may name before or after them.
    std::vector<Probe> out;
    std::vector<bool> repeated(p_.probes.size());
    for (size_t i = 0; i < p_.probes.size(); ++i) {
      const Option* o = attach_option(p_.probes[i]);
      if (!o) continue;
      repeated[i] = true;
      collect_maps(p_.probes[i], *o);
    }
    for (size_t i = 0; i < p_.probes.size(); ++i) {
      if (repeated[i]) {
        const Option* o = attach_option(p_.probes[i]);
        for (size_t k = 0; k < o->values.size(); ++k) out.push_back(copy_probe(p_.probes[i], *o, k));
        if (o->values.empty()) {
          if (p_.probes[i].predicate != kNone) note_dropped(p_.probes[i].predicate);
          for (StmtId s : p_.probes[i].body) note_dropped_stmt(s);
        }
        continue;
      }
      Probe probe = p_.probes[i];
      if (probe.predicate != kNone && option_named(probe.predicate))
        error(p_.exprs[probe.predicate].loc,
              "a filter may not use a spliced option outside a probe repeated for it (getopt(\"NAME\") as its "
              "attach point): test it in an if statement");
      probe.body = stmts(probe.body);
      out.push_back(std::move(probe));
    }
    p_.probes = std::move(out);
    return errors_ == 0;
  }

 private:
  struct Value {
    const SplicedValue* v = nullptr;
    std::map<std::string, ExprId> parts;  // part name -> its expression (a template, copied at each use)
    std::string probe;                    // the attach point, if the value has one
  };
  struct Option {
    std::string name;
    std::vector<Value> values;
    std::set<std::string> maps;  // maps written by the probes repeated for it
  };
  struct Binding {
    const Option* option = nullptr;
    size_t index = 0;
  };

  void error(Loc loc, std::string msg) {
    d_.error(loc, std::move(msg));
    ++errors_;
  }

  ExprId add(Expr e) {
    p_.exprs.push_back(std::move(e));
    return static_cast<ExprId>(p_.exprs.size() - 1);
  }

  // The value's names for builtins and parameters ("size" -> arg0), in the
  // subtree at `id`.
  void alias(ExprId id, const SplicedValue& v) {
    Expr& e = p_.exprs[id];
    if (e.kind == ExprKind::Identifier || e.kind == ExprKind::Variable) {
      for (const auto& [from, to] : v.aliases) {
        if (e.name != from) continue;
        if (to.starts_with("!")) {
          error(e.loc, to.substr(1));
        } else {
          p_.exprs[id].kind = to.starts_with("$") ? ExprKind::Variable : ExprKind::Identifier;
          p_.exprs[id].name = to;
        }
        break;
      }
    }
    const std::vector<ExprId> args = p_.exprs[id].args;
    for (ExprId a : args) alias(a, v);
  }

  // The expression at `range` of value `v` (whose text starts at `base`),
  // its names aliased, in a call or cast of `cast` ("str", "ksym", "usym",
  // a type, or "" for none). kNone after a syntax error.
  ExprId parse_part(const SplicedValue& v, uint32_t base, Loc range, const std::string& cast) {
    const Loc r{base + range.begin, base + range.end};
    ExprId x = parse_expression(p_, r, d_);
    if (x == kNone) {
      ++errors_;
      return kNone;
    }
    alias(x, v);
    if (cast.empty()) return x;
    Expr c;
    c.kind = cast == "str" || cast == "ksym" || cast == "usym" ? ExprKind::Call : ExprKind::Cast;
    c.name = cast;
    c.loc = r;
    c.args = {x};
    return add(std::move(c));
  }

  void prepare(const SplicedValue& v) {
    Option& o = options_[v.option];
    o.name = v.option;
    Value val;
    val.v = &v;
    const uint32_t base = p_.source.add_segment(v.origin, v.text);
    const Loc whole{base, base + static_cast<uint32_t>(v.text.size())};
    for (const auto& part : v.parts) {
      Expr e;
      e.loc = whole;
      switch (part.kind) {
        case SplicedPart::Kind::Probe: val.probe = part.text; continue;
        case SplicedPart::Kind::String:
          e.kind = ExprKind::String;
          e.sval = part.text;
          break;
        case SplicedPart::Kind::Integer:
          e.kind = ExprKind::Integer;
          e.ival = static_cast<uint64_t>(part.number);
          break;
        case SplicedPart::Kind::Ident:
          e.kind = ExprKind::Identifier;
          e.name = part.text;
          break;
        case SplicedPart::Kind::Expr: {
          std::vector<ExprId> items;
          for (size_t i = 0; i < part.ranges.size(); ++i) {
            const ExprId x = parse_part(v, base, part.ranges[i], i < part.casts.size() ? part.casts[i] : "");
            if (x == kNone) return;
            items.push_back(x);
          }
          if (items.size() == 1 && part.names.empty()) {
            val.parts[part.name] = items[0];
            continue;
          }
          e.kind = ExprKind::Tuple;
          e.args = items;
          e.field_names = part.names;
          break;
        }
        case SplicedPart::Kind::Printf: {
          // printf(NAME = "format", args...): the call and its arguments
          // located in the value.
          if (!part.ranges.empty()) e.loc = Loc{base + part.ranges[0].begin, base + part.ranges[0].end};
          Expr f;
          f.kind = ExprKind::String;
          f.sval = part.text;
          f.loc = e.loc;
          e.kind = ExprKind::Call;
          e.name = "printf";
          e.args.push_back(add(std::move(f)));
          e.field_names.push_back(part.names.empty() ? "" : part.names[0]);
          for (size_t i = 1; i < part.ranges.size(); ++i) {
            const ExprId x = parse_part(v, base, part.ranges[i], i < part.casts.size() ? part.casts[i] : "");
            if (x == kNone) return;
            e.args.push_back(x);
            e.field_names.emplace_back();
          }
          break;
        }
      }
      val.parts[part.name] = add(std::move(e));
    }
    o.values.push_back(std::move(val));
  }

  // The option whose getopt("NAME") one of the probe's attach points is.
  const Option* attach_option(const Probe& probe) const {
    for (const auto& ap : probe.points)
      for (const auto& [name, o] : options_)
        if (ap.text.find(fmt::format("getopt(\"{}\")", name)) != std::string::npos) return &o;
    return nullptr;
  }

  // getopt("NAME") or getopt("NAME.PART") of a spliced option: its option
  // and part name.
  std::pair<const Option*, std::string> spliced_call(const Expr& e) const {
    if (e.kind != ExprKind::Call || e.name != "getopt" || e.args.empty()) return {nullptr, ""};
    const Expr& a = p_.exprs[e.args[0]];
    if (a.kind != ExprKind::String) return {nullptr, ""};
    const std::string& s = a.sval;
    auto it = options_.find(s.substr(0, s.find('.')));
    if (it == options_.end()) return {nullptr, ""};
    return {&it->second, s};
  }

  // The spliced option the subtree names (a part, or one of its maps).
  const Option* option_named(ExprId id) const {
    const Expr& e = p_.exprs[id];
    if (auto [o, part] = spliced_call(e); o) return o;
    if (e.kind == ExprKind::Map)
      for (const auto& [name, o] : options_)
        if (o.maps.count(e.name)) return &o;
    for (ExprId a : e.args)
      if (const Option* o = option_named(a)) return o;
    for (StmtId s : e.body)
      if (const Option* o = option_in_stmt(s)) return o;
    return nullptr;
  }

  const Option* option_in_stmt(StmtId id) const {
    const Stmt& s = p_.stmts[id];
    for (ExprId e : {s.expr, s.range_end, s.target, s.value})
      if (e != kNone)
        if (const Option* o = option_named(e)) return o;
    for (const auto* body : {&s.body, &s.else_body})
      for (StmtId c : *body)
        if (const Option* o = option_in_stmt(c)) return o;
    return nullptr;
  }

  // The maps that a statement of a repeated probe stores a part in (its key
  // or value names one: @counts[getopt("count.key")] = count()) are each
  // value's own, since the values' parts may differ in type; the probe's
  // other maps (an event counter, a start time) are shared by the copies.
  void collect_maps_stmt(StmtId id, Option& o) {
    const Stmt& s = p_.stmts[id];
    if (s.target != kNone && p_.exprs[s.target].kind == ExprKind::Map &&
        (option_named(s.target) || (s.value != kNone && option_named(s.value))))
      o.maps.insert(p_.exprs[s.target].name);
    for (const auto* body : {&s.body, &s.else_body})
      for (StmtId c : *body) collect_maps_stmt(c, o);
  }
  void collect_maps(const Probe& probe, const Option& o) {
    Option& mo = options_[o.name];
    for (StmtId s : probe.body) collect_maps_stmt(s, mo);
  }

  Probe copy_probe(const Probe& probe, const Option& o, size_t k) {
    Probe out = probe;
    const Binding b{&o, k};
    const std::string call = fmt::format("getopt(\"{}\")", o.name);
    for (auto& ap : out.points) {
      size_t at = ap.text.find(call);
      if (at == std::string::npos) continue;
      if (o.values[k].probe.empty()) {
        error(ap.loc, fmt::format("--{} has no attach point for getopt(\"{}\") here", o.name, o.name));
        continue;
      }
      ap.text.replace(at, call.size(), o.values[k].probe);
      const SplicedValue& v = *o.values[k].v;
      if (!v.label.empty()) {
        const uint32_t base = p_.source.add_argument(v.label, v.text, v.before, v.after);
        ap.loc = Loc{base, base + static_cast<uint32_t>(v.text.size())};
      }
    }
    if (out.predicate != kNone) out.predicate = copy_expr(out.predicate, b);
    for (StmtId& s : out.body) s = copy_stmt(s, b);
    return out;
  }

  // A statement list with each statement that names a spliced option
  // repeated once per value (and nested lists done alike).
  std::vector<StmtId> stmts(const std::vector<StmtId>& body) {
    std::vector<StmtId> out;
    for (StmtId id : body) {
      if (const Option* o = option_in_stmt(id)) {
        for (size_t k = 0; k < o->values.size(); ++k) out.push_back(copy_stmt(id, Binding{o, k}));
        if (o->values.empty()) note_dropped_stmt(id);
        continue;
      }
      out.push_back(id);
    }
    return out;
  }

  void note_dropped(ExprId id) {
    const Expr& e = p_.exprs[id];
    if (dropped_ && e.kind == ExprKind::Call && e.name == "getopt" && !e.args.empty() &&
        p_.exprs[e.args[0]].kind == ExprKind::String)
      dropped_->insert(p_.exprs[e.args[0]].sval);
    for (ExprId a : e.args) note_dropped(a);
    for (StmtId s : e.body) note_dropped_stmt(s);
  }
  void note_dropped_stmt(StmtId id) {
    const Stmt& s = p_.stmts[id];
    for (ExprId e : {s.expr, s.range_end, s.target, s.value})
      if (e != kNone) note_dropped(e);
    for (const auto* body : {&s.body, &s.else_body})
      for (StmtId c : *body) note_dropped_stmt(c);
  }

  ExprId copy_expr(ExprId id, const Binding& b) {
    Expr e = p_.exprs[id];
    if (auto [o, part] = spliced_call(e); o) {
      if (o != b.option) {
        error(e.loc, fmt::format("getopt(\"{}\") inside a copy made for each --{}: use one option per statement",
                                 part, b.option->name));
        return id;
      }
      const Value& v = o->values[b.index];
      auto it = v.parts.find(part);
      if (it == v.parts.end()) {
        error(e.loc, fmt::format("--{} has no part \"{}\"", o->name, part));
        return id;
      }
      return copy_plain(it->second);
    }
    if (e.kind == ExprKind::Map && b.option->maps.count(e.name)) e.name = fmt::format("{}#{}", e.name, b.index + 1);
    for (ExprId& a : e.args) a = copy_expr(a, b);
    for (StmtId& s : e.body) s = copy_stmt(s, b);
    return add(std::move(e));
  }

  // A copy of a part's expression, for one use.
  ExprId copy_plain(ExprId id) {
    Expr e = p_.exprs[id];
    for (ExprId& a : e.args) a = copy_plain(a);
    return add(std::move(e));
  }

  StmtId copy_stmt(StmtId id, const Binding& b) {
    Stmt s = p_.stmts[id];
    for (ExprId* e : {&s.expr, &s.range_end, &s.target, &s.value})
      if (*e != kNone) *e = copy_expr(*e, b);
    for (StmtId& c : s.body) c = copy_stmt(c, b);
    for (StmtId& c : s.else_body) c = copy_stmt(c, b);
    p_.stmts.push_back(std::move(s));
    return static_cast<StmtId>(p_.stmts.size() - 1);
  }

  Program& p_;
  Diagnostics& d_;
  std::map<std::string, Option> options_;
  std::set<std::string>* dropped_;
  size_t errors_ = 0;
};

// Whether attach point `text` names `ref` outside double quotes ("$1" and
// not "$12"), as sema::expand_positionals reads it.
bool names_argument(std::string_view text, std::string_view ref) {
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!quoted && text.substr(i).starts_with(ref)) {
      const size_t end = i + ref.size();
      if (!(ref.starts_with("$") && end < text.size() && isdigit(static_cast<unsigned char>(text[end])))) return true;
    }
    if (text[i] == '"') quoted = !quoted;
  }
  return false;
}

}  // namespace

void locate_arguments(Program& program, const std::vector<GivenArgument>& given) {
  std::map<std::string, Loc> segment;  // by ref: each value is added once
  for (auto& probe : program.probes)
    for (auto& ap : probe.points)
      for (const auto& g : given) {
        // getopt("NAME") is scanned in quotes of its own: look for it whole.
        const bool named = g.ref.starts_with("$") ? names_argument(ap.text, g.ref)
                                                  : ap.text.find(g.ref) != std::string::npos;
        if (!named) continue;
        auto it = segment.find(g.ref);
        if (it == segment.end()) {
          const uint32_t base = program.source.add_argument(g.label, g.text, g.before, g.after);
          it = segment.emplace(g.ref, Loc{base, base + static_cast<uint32_t>(g.text.size())}).first;
        }
        ap.loc = it->second;
        break;
      }
}

bool splice_options(Program& program, const std::vector<std::string>& options,
                    const std::vector<SplicedValue>& values, Diagnostics& diags, std::set<std::string>* dropped) {
  if (options.empty()) return true;
  return Splicer(program, diags, dropped).run(options, values);
}

}  // namespace bpfscope::lang
