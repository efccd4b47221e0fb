// Reading a tool file's header: the leading `//` lines with the keys
// tool:, about:, option:, arg:, example:, note:, column:, percentiles:,
// metric: and flamegraph: (tools/README.md).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tools/embedded.h"
#include "tools/tools.h"

namespace bpfscope::tools {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The next whitespace-separated word of `s`, removed from it.
std::string_view next_word(std::string_view& s) {
  s = trim(s);
  size_t end = 0;
  while (end < s.size() && !isspace(static_cast<unsigned char>(s[end]))) ++end;
  std::string_view w = s.substr(0, end);
  s.remove_prefix(end);
  return w;
}

bool is_metavar(std::string_view w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return isupper(static_cast<unsigned char>(c)) || isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

// An integer of a header: a default or a bound.
bool header_integer(std::string_view s, int64_t& out) {
  const std::string text(s);
  if (text.empty()) return false;
  char* end;
  errno = 0;
  const long long v = strtoll(text.c_str(), &end, 0);
  if (*end || errno) return false;
  out = v;
  return true;
}

// "(int, default 20)", "(all|sent|received, default all)", "(int, default
// 1, min 1)": the kind, the choices, the default and an int's bounds, then
// "repeated" for an expr or spec option. Returns an error message, or "".
std::string parse_value_spec(std::string_view spec, ValueKind& kind, std::vector<std::string>& choices,
                             std::optional<std::string>& def, IntRange& range, bool* repeated = nullptr) {
  size_t comma = spec.find(',');
  std::string_view type = trim(spec.substr(0, comma));
  if (type == "int") kind = ValueKind::Int;
  else if (type == "str") kind = ValueKind::Str;
  else if (type == "ports") kind = ValueKind::Ports;
  else if (type == "list") kind = ValueKind::List;
  else if (type == "probe") kind = ValueKind::Probe;
  else if (type == "expr") kind = ValueKind::Expr;
  else if (type == "spec") kind = ValueKind::Spec;
  else if (type == "trace") kind = ValueKind::Trace;
  else if (type == "errno") kind = ValueKind::Errno;
  else if (type.find('|') != std::string_view::npos) {
    kind = ValueKind::Choice;
    std::string_view rest = type;
    while (!rest.empty()) {
      size_t bar = rest.find('|');
      choices.emplace_back(trim(rest.substr(0, bar)));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
  } else {
    return fmt::format("unknown value type \"{}\" (int, str, ports, list, probe, expr, spec, trace, errno or a|b|c)",
                       type);
  }
  // The clauses after the type, each once.
  std::string_view rest = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
  while (!trim(rest).empty()) {
    comma = rest.find(',');
    std::string_view clause = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::string_view whole = clause;
    std::string_view word = next_word(clause);
    std::string_view value = trim(clause);
    if (word == "repeated" && value.empty()) {
      if (!repeated || (kind != ValueKind::Expr && kind != ValueKind::Spec && kind != ValueKind::Trace))
        return "only an expr, spec or trace option or argument may be repeated";
      *repeated = true;
    } else if (word == "default" && !value.empty()) {
      if (kind == ValueKind::Expr || kind == ValueKind::Spec || kind == ValueKind::Trace)
        return "an expr, spec or trace option has no default";
      if (def) return "default given twice";
      def = std::string(value);
    } else if ((word == "min" || word == "max") && !value.empty()) {
      if (kind != ValueKind::Int) return fmt::format("only an int has a {}", word);
      std::optional<int64_t>& bound = word == "min" ? range.min : range.max;
      int64_t v;
      if (bound) return fmt::format("{} given twice", word);
      if (!header_integer(value, v)) return fmt::format("{}: \"{}\" is not an integer", word, value);
      bound = v;
    } else {
      return fmt::format("expected \"default VALUE\", \"min N\", \"max N\" or \"repeated\", got \"{}\"",
                         whole);
    }
  }
  if (range.min && range.max && *range.min > *range.max) return "min is above max";
  if (def && kind == ValueKind::Int) {
    int64_t v;
    if (!header_integer(*def, v)) return fmt::format("default \"{}\" is not an integer", *def);
    if ((range.min && v < *range.min) || (range.max && v > *range.max))
      return fmt::format("default {} is out of the range", *def);
  }
  return "";
}

// "-p --pid PID (int) Process ID to trace" or "interval (int, default 1) Output interval".
std::string parse_option(std::string_view line, OptionSpec& o) {
  std::string_view w = next_word(line);
  if (w.size() == 2 && w[0] == '-' && w[1] != '-') {
    o.letter = w[1];
    w = next_word(line);
  }
  if (!w.starts_with("--") || w.size() < 3) return "an option line needs --NAME";
  o.name = std::string(w.substr(2));
  std::string_view save = line;
  w = next_word(line);
  if (is_metavar(w)) {
    o.metavar = std::string(w);
    o.kind = ValueKind::Str;
  } else {
    line = save;
  }
  line = trim(line);
  if (line.starts_with("(sets -") && o.metavar.empty()) {
    // "(sets -f folded)": the flag also applies a global option.
    size_t close = line.find(')');
    if (close == std::string_view::npos) return "unclosed (";
    std::string_view spec = line.substr(6, close - 6);
    std::string_view letter = next_word(spec);
    std::string_view value = trim(spec);
    if (letter.size() != 2 || value.empty()) return "expected (sets -X VALUE)";
    o.sets = GlobalOption{std::string(letter.substr(1)), std::string(value)};
    line.remove_prefix(close + 1);
  } else if (line.starts_with("(")) {
    size_t close = line.find(')');
    if (close == std::string_view::npos) return "unclosed (";
    if (o.metavar.empty()) return "a flag takes no value type (add a METAVAR)";
    if (auto err = parse_value_spec(line.substr(1, close - 1), o.kind, o.choices, o.default_value, o.range,
                                    &o.repeated);
        !err.empty())
      return err;
    line.remove_prefix(close + 1);
  }
  o.help = std::string(trim(line));
  return "";
}

std::string parse_arg(std::string_view line, ArgSpec& a) {
  a.name = std::string(next_word(line));
  if (a.name.empty()) return "an arg line needs a name";
  line = trim(line);
  if (line.starts_with("(")) {
    size_t close = line.find(')');
    if (close == std::string_view::npos) return "unclosed (";
    std::vector<std::string> choices;
    if (auto err = parse_value_spec(line.substr(1, close - 1), a.kind, choices, a.default_value, a.range, &a.repeated);
        !err.empty())
      return err;
    if (a.kind != ValueKind::Int && a.kind != ValueKind::Str && a.kind != ValueKind::Probe &&
        a.kind != ValueKind::Expr && a.kind != ValueKind::Spec && a.kind != ValueKind::Trace)
      return "an argument is an int, a str, a probe, an expr, a spec or a trace";
    line.remove_prefix(close + 1);
  }
  a.help = std::string(trim(line));
  return "";
}

}  // namespace

bool has_header(std::string_view source) {
  size_t pos = 0;
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    std::string_view line = trim(source.substr(pos, end == std::string_view::npos ? end : end - pos));
    pos = end == std::string_view::npos ? source.size() : end + 1;
    if (line.starts_with("#!") || line.empty()) continue;
    if (!line.starts_with("//")) return false;
    if (trim(line.substr(2)).starts_with("tool:")) return true;
  }
  return false;
}

// "@MAP NAME[(LABEL, ... [| LABEL, ...])] [served-only]: HELP" (ToolMetric).
std::string parse_metric(std::string_view value, ToolMetric& m) {
  const size_t colon = value.find(':');
  if (colon == std::string_view::npos) return "metric: @MAP NAME[(LABEL, ...)] [served-only]: HELP";
  m.naming.help = std::string(trim(value.substr(colon + 1)));
  std::string_view rest = trim(value.substr(0, colon));
  m.map = std::string(next_word(rest));
  if (!m.map.starts_with('@')) return "metric: the map comes first (@usecs)";
  rest = trim(rest);
  const size_t open = rest.find('(');
  const size_t name_end = std::min(open, rest.find(' '));
  m.naming.name = std::string(rest.substr(0, name_end));
  if (m.naming.name.empty() || m.naming.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
                                   std::string::npos)
    return "metric: its name is lower case letters, digits and _ (biolatency_usecs)";
  rest = name_end == std::string_view::npos ? std::string_view() : rest.substr(name_end);
  if (rest.starts_with('(')) {
    const size_t close = rest.find(')');
    if (close == std::string_view::npos) return "metric: labels end with )";
    std::string_view sets = rest.substr(1, close - 1);
    while (!sets.empty()) {
      const size_t bar = sets.find('|');
      std::string_view labels = sets.substr(0, bar);
      sets = bar == std::string_view::npos ? std::string_view() : sets.substr(bar + 1);
      auto& set = m.naming.labels.emplace_back();
      while (!labels.empty()) {
        const size_t comma = labels.find(',');
        set.emplace_back(trim(labels.substr(0, comma)));
        if (set.back().empty()) return "metric: an empty label name";
        labels = comma == std::string_view::npos ? std::string_view() : labels.substr(comma + 1);
      }
    }
    rest = rest.substr(close + 1);
  }
  rest = trim(rest);
  if (rest == "served-only") {
    m.served_only = true;
  } else if (!rest.empty()) {
    return fmt::format("metric: unknown word \"{}\" (served-only?)", rest);
  }
  return "";
}

std::optional<Tool> parse(std::string source, std::string path, std::string& error) {
  Tool t;
  size_t pos = 0;
  int lineno = 0;
  auto fail = [&](const std::string& msg) {
    error = fmt::format("{}:{}: {}", path, lineno, msg);
    return std::nullopt;
  };
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    std::string_view line =
        trim(std::string_view(source).substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? source.size() : end + 1;
    ++lineno;
    if (line.starts_with("#!") || line.empty()) continue;
    if (!line.starts_with("//")) break;
    line = trim(line.substr(2));
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "tool") {
      t.name = std::string(value);
    } else if (key == "about") {
      t.about = std::string(value);
    } else if (key == "option") {
      OptionSpec o;
      if (auto err = parse_option(value, o); !err.empty()) return fail(err);
      for (const auto& other : t.options)
        if (other.name == o.name || (o.letter && other.letter == o.letter))
          return fail(fmt::format("option {} declared twice", o.name));
      t.options.push_back(std::move(o));
    } else if (key == "arg") {
      ArgSpec a;
      if (auto err = parse_arg(value, a); !err.empty()) return fail(err);
      if (!t.args.empty() && t.args.back().default_value && !a.default_value)
        return fail("a required argument cannot follow an optional one");
      if (!t.args.empty() && t.args.back().repeated) return fail("a repeated argument is the last one");
      t.args.push_back(std::move(a));
    } else if (key == "example") {
      t.examples.emplace_back(value);
    } else if (key == "note") {
      t.notes.emplace_back(value);
    } else if (key == "column") {
      // A name in single quotes may hold spaces, as in a print() header: 'TIME (us)'.
      std::string_view rest = trim(value);
      std::string_view name;
      if (rest.starts_with('\'')) {
        size_t close = rest.find('\'', 1);
        if (close == std::string_view::npos) return fail("column: the quoted name has no closing quote");
        name = rest.substr(1, close - 1);
        rest.remove_prefix(close + 1);
      } else {
        name = next_word(rest);
      }
      if (name.empty() || trim(rest).empty()) return fail("column: NAME TEXT");
      t.columns.emplace_back(name, trim(rest));
    } else if (key == "percentiles") {
      if (value != "yes" && value != "no") return fail("percentiles: yes or no");
      t.percentiles = value == "yes";
    } else if (key == "metric") {
      ToolMetric m;
      if (auto err = parse_metric(value, m); !err.empty()) return fail(err);
      for (const auto& other : t.metrics)
        if (other.map == m.map) return fail(fmt::format("metric: {} declared twice", m.map));
      t.metrics.push_back(std::move(m));
    } else if (key == "flamegraph") {
      std::string_view rest = value;
      std::string_view kind = next_word(rest);
      auto g = output::graph_kind(kind);
      if (!g) return fail(fmt::format("flamegraph: unknown kind \"{}\" (cpu, offcpu or offwake)", kind));
      t.graph = *g;
      t.graph_unit = std::string(next_word(rest));
      if (!trim(rest).empty()) return fail("flamegraph: KIND [UNIT]");
    }
  }
  if (t.name.empty()) {
    lineno = 1;
    return fail("no \"// tool: NAME\" line in the leading comments");
  }
  t.source = std::move(source);
  t.path = std::move(path);
  return t;
}

const std::vector<Tool>& all() {
  static const std::vector<Tool> tools = [] {
    std::vector<Tool> v;
    for (size_t i = 0; i < kEmbeddedToolCount; ++i) {
      std::string err;
      // The build embeds only files whose headers parse (tests/tools checks
      // every one), so a failure here is a bug in the build.
      auto t = parse(kEmbeddedTools[i].source, fmt::format("tools/{}.bt", kEmbeddedTools[i].name), err);
      if (t) v.push_back(std::move(*t));
      else fmt::print(stderr, "bpfscope: embedded tool: {}\n", err);
    }
    std::sort(v.begin(), v.end(), [](const Tool& a, const Tool& b) { return a.name < b.name; });
    return v;
  }();
  return tools;
}

std::optional<std::string> library_file(const std::string& path) {
  for (size_t i = 0; i < kEmbeddedLibraryCount; ++i)
    if (path == kEmbeddedLibrary[i].name) return std::string(kEmbeddedLibrary[i].source);
  return std::nullopt;
}

const Tool* find(std::string_view name) {
  for (const auto& t : all())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace bpfscope::tools
