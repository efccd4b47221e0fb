// A tool's command line: options and arguments read against its header,
// and its usage text in libbpf-tools' (argp's) layout.
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/tools.h"

namespace bpfscope::tools {

namespace {

bool parse_integer(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end;
  long long v = strtoll(s.c_str(), &end, 0);
  if (*end || errno) return false;
  out = v;
  return true;
}

// What a value within `r` is, for an error: "a positive integer", "from 1
// to 127".
std::string range_text(const IntRange& r) {
  if (r.min && r.max) return fmt::format("from {} to {}", *r.min, *r.max);
  if (r.min && *r.min == 1) return "a positive integer";
  if (r.min && *r.min == 0) return "0 or more";
  if (r.min) return fmt::format("at least {}", *r.min);
  return fmt::format("at most {}", *r.max);
}

// An int out of its header's range: the error, naming the value as
// libbpf-tools do ("invalid interval \"0\": must be a positive integer"),
// else "".
std::string out_of_range(const IntRange& range, std::string_view what, const std::string& value) {
  int64_t v;
  if (!parse_integer(value, v) || (range.min && v < *range.min) || (range.max && v > *range.max))
    return fmt::format("invalid {} \"{}\": must be {}", what, value, range_text(range));
  return "";
}

// Checks a value against its kind; lists come back normalized ("80,443").
std::optional<std::string> check_value(ValueKind kind, const std::vector<std::string>& choices,
                                       const std::string& value, std::string& why) {
  switch (kind) {
    case ValueKind::Flag: return value;
    case ValueKind::Str: return value;
    case ValueKind::Expr:
    case ValueKind::Spec:
    case ValueKind::Trace: return value;  // parse_args() splices them
    case ValueKind::Probe:
      if (value.empty() || value.find_first_of(" \t\n{};") != std::string::npos) {
        why = fmt::format("invalid probe \"{}\"", value);
        return std::nullopt;
      }
      return value.find(':') == std::string::npos ? "kprobe:" + value : value;
    case ValueKind::Errno: {
      // A number, or a name as glibc knows it (strerrorname_np, glibc 2.32).
      int64_t v;
      if (parse_integer(value, v) && v > 0 && v < 4096) return std::to_string(v);
      for (int e = 1; e < 4096; ++e) {
        const char* name = strerrorname_np(e);
        if (name && value == name) return std::to_string(e);
      }
      why = fmt::format("invalid errno \"{}\" (a positive number, or a name such as EPERM)", value);
      return std::nullopt;
    }
    case ValueKind::Int: {
      int64_t v;
      if (!parse_integer(value, v)) {
        why = fmt::format("invalid integer \"{}\"", value);
        return std::nullopt;
      }
      return value;
    }
    case ValueKind::Ports:
    case ValueKind::List: {
      std::string out;
      size_t pos = 0;
      while (pos <= value.size()) {
        size_t comma = value.find(',', pos);
        std::string item = value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        int64_t v;
        if (!parse_integer(item, v) || (kind == ValueKind::Ports && (v < 1 || v > 65535))) {
          why = fmt::format("invalid {} \"{}\" in \"{}\"", kind == ValueKind::Ports ? "port" : "integer", item, value);
          return std::nullopt;
        }
        out += (out.empty() ? "" : ",") + std::to_string(v);
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      return out;
    }
    case ValueKind::Choice:
      for (const auto& c : choices)
        if (c == value) return value;
      why = fmt::format("invalid value \"{}\" (one of: {})", value, fmt::join(choices, ", "));
      return std::nullopt;
  }
  return std::nullopt;
}

// Text broken into lines of at most `width` columns, at spaces.
std::string wrap(std::string_view text, size_t width) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    std::string_view word = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
  }
  return out + line + (line.empty() ? "" : "\n");
}

std::string option_label(const OptionSpec& o) {
  std::string s = o.letter ? fmt::format("-{}, ", o.letter) : "    ";
  s += "--" + o.name;
  if (!o.metavar.empty()) s += "=" + o.metavar;
  return s;
}

std::string getopt_ref(std::string_view name) { return fmt::format("getopt(\"{}\")", name); }

bool is_spliced(ValueKind k) { return k == ValueKind::Expr || k == ValueKind::Spec || k == ValueKind::Trace; }

// Script text given to option or argument `name` (`origin`: how errors name
// it, "-H"), as lang::splice_options() takes it; nullopt with `why` when a
// specifier is malformed.
std::optional<lang::SplicedValue> spliced_value(ValueKind kind, const std::string& name, const std::string& origin,
                                                const std::string& value, std::string& why) {
  if (kind == ValueKind::Spec) return bcc_specifier(name, origin, value, why);
  if (kind == ValueKind::Trace) return trace_specifier(name, origin, value, why);
  lang::SplicedValue v{.option = name, .origin = origin, .text = value};
  v.parts.push_back({.name = name, .ranges = {{0, static_cast<uint32_t>(value.size())}}});
  return v;
}

}  // namespace

std::optional<Invocation> parse_args(const Tool& tool, const std::vector<std::string>& args,
                                     const std::vector<GlobalSpec>& globals, std::string& error) {
  Invocation inv;
  std::vector<std::string> words;
  auto fail = [&](const std::string& msg) {
    error = fmt::format("{}: {}", tool.name, msg);
    return std::nullopt;
  };
  // Sets option `o` from its value (nullopt for a flag).
  // The value ending args[at], as the command line gives it (for errors
  // about it, and hints that suggest another: lang::GivenArgument).
  auto given = [&](std::string ref, const std::string& value, std::string label, size_t at) {
    lang::GivenArgument g{.ref = std::move(ref), .text = value, .label = std::move(label), .before = "", .after = ""};
    for (size_t j = 0; j < at; ++j) g.before += lang::shell_word(args[j]) + " ";
    g.before += args[at].substr(0, args[at].size() - value.size());
    for (size_t j = at + 1; j < args.size(); ++j) g.after += " " + lang::shell_word(args[j]);
    inv.given.push_back(std::move(g));
  };
  std::vector<size_t> word_at;  // each word's index in args
  size_t i = 0;
  auto set = [&](const OptionSpec& o, std::optional<std::string> value, std::string_view spelled) -> bool {
    if (o.sets) {
      inv.globals.push_back(*o.sets);  // for the runtime, not the script
      return true;
    }
    if (o.kind == ValueKind::Flag) {
      inv.named_args[o.name] = std::nullopt;
      return true;
    }
    if (is_spliced(o.kind)) {
      // Script text: spliced into the program (lang::splice_options), its
      // errors located in the value. A value given again replaces the first
      // unless the option is repeated.
      std::string why;
      std::optional<lang::SplicedValue> v = spliced_value(o.kind, o.name, std::string(spelled), *value, why);
      if (!v) {
        error = fmt::format("{}: {}: invalid specifier \"{}\": {}", tool.name, spelled, *value, why);
        return false;
      }
      if (!o.repeated)
        std::erase_if(inv.spliced, [&](const lang::SplicedValue& x) { return x.option == o.name; });
      inv.spliced.push_back(std::move(*v));
      return true;
    }
    std::string why;
    auto v = check_value(o.kind, o.choices, *value, why);
    if (v && o.kind == ValueKind::Int) why = out_of_range(o.range, o.name, *v);
    if (!v || !why.empty()) {
      error = fmt::format("{}: {}: {}", tool.name, spelled, why);
      return false;
    }
    inv.named_args[o.name] = *v;
    std::erase_if(inv.given, [&](const lang::GivenArgument& g) { return g.ref == getopt_ref(o.name); });
    given(getopt_ref(o.name), *value, fmt::format("{} {}", spelled, lang::shell_word(*value)), i);
    return true;
  };
  auto option = [&](auto matches) -> const OptionSpec* {
    for (const auto& x : tool.options)
      if (matches(x)) return &x;
    return nullptr;
  };
  auto global_named = [&](std::string_view name) -> const GlobalSpec* {
    for (const auto& g : globals)
      if (g.name && name == g.name) return &g;
    return nullptr;
  };
  auto global_letter = [&](char c) -> const GlobalSpec* {
    for (const auto& g : globals)
      if (g.letter == c) return &g;
    return nullptr;
  };
  auto global_key = [](const GlobalSpec& g) { return g.letter ? std::string(1, g.letter) : std::string(g.name); };

  // "-4T", "-p181": options; "-5" is a (negative) number unless the tool
  // has a -5 option.
  auto is_option_word = [&](const std::string& a) {
    if (a.size() < 2 || a[0] != '-') return false;
    return !isdigit(static_cast<unsigned char>(a[1])) || option([&](const OptionSpec& o) { return o.letter == a[1]; });
  };

  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      for (size_t j = i + 1; j < args.size(); ++j) {
        words.push_back(args[j]);
        word_at.push_back(j);
      }
      break;
    }
    if (a.starts_with("--")) {
      std::string name = a.substr(2);
      std::optional<std::string> value;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      if (name == "help") {
        inv.help = true;
        continue;
      }
      if (name == "source") {
        inv.source = true;
        continue;
      }
      if (const OptionSpec* o = option([&](const OptionSpec& x) { return x.name == name; })) {
        if (o->kind == ValueKind::Flag && value) return fail(fmt::format("option '--{}' doesn't allow an argument", name));
        if (o->kind != ValueKind::Flag && !value) {
          if (i + 1 >= args.size()) return fail(fmt::format("option '--{}' requires an argument", name));
          value = args[++i];
        }
        if (!set(*o, value, "--" + name)) return std::nullopt;
        continue;
      }
      if (const GlobalSpec* g = global_named(name)) {
        if (g->takes_value && !value) {
          if (i + 1 >= args.size()) return fail(fmt::format("option '--{}' requires an argument", name));
          value = args[++i];
        }
        inv.globals.push_back({global_key(*g), value});
        continue;
      }
      return fail(fmt::format("unrecognized option '--{}'", name));
    }
    if (is_option_word(a)) {
      // A cluster of letters: -4T, -p181, -p 181.
      for (size_t k = 1; k < a.size(); ++k) {
        char c = a[k];
        if (c == 'h') {
          inv.help = true;
          continue;
        }
        const OptionSpec* o = option([&](const OptionSpec& x) { return x.letter == c; });
        const GlobalSpec* g = o ? nullptr : global_letter(c);
        if (!o && !g) return fail(fmt::format("invalid option -- '{}'", c));
        bool takes = o ? o->kind != ValueKind::Flag : g->takes_value;
        std::optional<std::string> value;
        if (takes) {
          if (k + 1 < a.size()) value = a.substr(k + 1);
          else if (i + 1 < args.size()) value = args[++i];
          else return fail(fmt::format("option requires an argument -- '{}'", c));
          k = a.size();
        }
        if (o) {
          if (!set(*o, value, fmt::format("-{}", c))) return std::nullopt;
        } else {
          inv.globals.push_back({global_key(*g), value});
        }
      }
      continue;
    }
    words.push_back(a);
    word_at.push_back(i);
  }
  const bool takes_rest = !tool.args.empty() && tool.args.back().repeated;
  if (words.size() > tool.args.size() && !takes_rest)
    return fail(tool.args.empty() ? fmt::format("unexpected argument \"{}\"", words[0])
                                  : fmt::format("too many arguments (\"{}\")", words[tool.args.size()]));
  for (size_t k = 0; k < tool.args.size(); ++k) {
    const ArgSpec& spec = tool.args[k];
    if (is_spliced(spec.kind)) {
      // Script text, spliced as getopt("NAME"); a repeated argument takes
      // every word left.
      const size_t last = spec.repeated ? words.size() : std::min(words.size(), k + 1);
      if (k >= words.size() && !inv.help && !inv.source) return fail(fmt::format("missing argument {}", spec.name));
      for (size_t w = k; w < last; ++w) {
        std::string why;
        std::optional<lang::SplicedValue> v = spliced_value(spec.kind, spec.name, spec.name, words[w], why);
        if (!v) return fail(fmt::format("{}: invalid specifier \"{}\": {}", spec.name, words[w], why));
        // An attach point that fails names the word (trace 'p::f': kprobes).
        v->label = fmt::format("{} {}", spec.name, lang::shell_word(words[w]));
        for (size_t j = 0; j < word_at[w]; ++j) v->before += lang::shell_word(args[j]) + " ";
        for (size_t j = word_at[w] + 1; j < args.size(); ++j) v->after += " " + lang::shell_word(args[j]);
        inv.spliced.push_back(std::move(*v));
      }
      if (k < words.size()) inv.positional.push_back(words[k]);
      continue;
    }
    if (k < words.size()) {
      std::string why;
      auto v = check_value(spec.kind, {}, words[k], why);
      if (!v) return fail(fmt::format("{}: {}", spec.name, why));
      // "invalid interval ..." names the argument.
      if (spec.kind == ValueKind::Int)
        if (std::string bad = out_of_range(spec.range, spec.name, *v); !bad.empty()) return fail(bad);
      inv.positional.push_back(*v);
      given(fmt::format("${}", k + 1), words[k], fmt::format("{} {}", spec.name, lang::shell_word(words[k])),
            word_at[k]);
    } else if (spec.default_value) {
      inv.positional.push_back(*spec.default_value);
    } else if (!inv.help && !inv.source) {
      return fail(fmt::format("missing argument {}", spec.name));
    }
  }
  for (const auto& o : tool.options) {
    if (o.default_value && !inv.named_args.count(o.name)) inv.named_args[o.name] = *o.default_value;
    if (is_spliced(o.kind)) inv.spliced_options.push_back(o.name);
  }
  for (const auto& a : tool.args)
    if (is_spliced(a.kind)) inv.spliced_options.push_back(a.name);
  return inv;
}

std::vector<std::string> sample_args(const Tool& tool) {
  std::vector<std::string> out;
  for (const auto& a : tool.args) {
    if (a.default_value) break;
    out.push_back(a.kind == ValueKind::Int     ? "1"
                  : a.kind == ValueKind::Probe ? "tracepoint:syscalls:sys_enter_getpid"
                  : a.kind == ValueKind::Trace ? "t:syscalls:sys_enter_getpid"
                                               : "x");
  }
  return out;
}

std::string synopsis(const Tool& tool) {
  std::string s = fmt::format("USAGE: {} [-h]", tool.name);
  for (const auto& o : tool.options) {
    std::string flag = o.letter ? fmt::format("-{}", o.letter) : "--" + o.name;
    s += o.metavar.empty() ? fmt::format(" [{}]", flag) : fmt::format(" [{} {}]", flag, o.metavar);
  }
  for (const auto& a : tool.args) {
    s += a.default_value ? fmt::format(" [{}]", a.name) : fmt::format(" {}", a.name);
    if (a.repeated) s += fmt::format(" [{} ...]", a.name);
  }
  return s;
}

std::string metric_labels(const output::MetricNaming& naming) {
  std::string labels;
  for (const auto& set : naming.labels) {
    labels += labels.empty() ? "" : " or ";
    for (size_t i = 0; i < set.size(); ++i) labels += (i ? ", " : "") + set[i];
  }
  return labels;
}

std::string usage(const Tool& tool) {
  std::string s = fmt::format("Usage: {} [OPTION...]{}\n{}\n\n{}\n", tool.name, tool.args.empty() ? "" : " [ARG...]",
                              tool.about, synopsis(tool));
  if (!tool.examples.empty()) {
    s += "\nEXAMPLES:\n";
    for (const auto& e : tool.examples) s += "    " + e + "\n";
  }
  if (!tool.args.empty()) {
    s += "\nARGUMENTS:\n";
    for (const auto& a : tool.args) {
      std::string help = a.help;
      if (a.default_value) help += fmt::format(" (default {})", *a.default_value);
      s += fmt::format("  {:<27}{}\n", a.name, help);
    }
  }
  s += "\n";
  for (const auto& o : tool.options) {
    std::string help = o.help;
    if (o.default_value) help += fmt::format(" (default {})", *o.default_value);
    std::string label = option_label(o);
    s += label.size() > 26 ? fmt::format("  {}\n  {:<27}{}\n", label, "", help)
                           : fmt::format("  {:<27}{}\n", label, help);
  }
  s += fmt::format("  {:<27}{}\n", "-h, --help", "Show this help");
  s += fmt::format("  {:<27}{}\n", "    --source", "Print the tool's script");
  for (const auto& n : tool.notes) s += "\n" + wrap(n, 78);
  if (tool.percentiles) s += "\n" + wrap(std::string(kPercentilesNote), 78);
  if (!tool.metrics.empty()) {
    s += "\nMETRICS (--prometheus [ADDR:]PORT serves them on /metrics):\n";
    for (const auto& m : tool.metrics) {
      const std::string labels = metric_labels(m.naming);
      s += fmt::format("  bpfscope_{}{}: {}\n", m.naming.name, labels.empty() ? "" : " by " + labels,
                       m.naming.help);
    }
  }
  s += "\nbpfscope options also apply: -o FILE, -f json, -q, -v, --dry-run, -c CMD, -k,\n"
       "--prometheus [ADDR:]PORT, --prometheus-token FILE, --max-series N\n"
       "(their long forms --output, --format, --quiet, --verbose, --cmd where the tool uses the letter).\n";
  return s;
}

}  // namespace bpfscope::tools
