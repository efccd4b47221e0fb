// bcc's probe specifier (argdist's -H/-C), read into the parts a tool script
// splices (tools/README.md, the `spec` option type):
//
//   {p,r,t,u}:{[library],category}:function(signature)[:type[,type...]:expr[,expr...][:filter]][#label]
//
// p/r are a function's entry and return (uprobe/uretprobe in a library,
// kprobe/kretprobe without one), t a kernel tracepoint, u a USDT probe. The
// signature names the function's arguments (`size` becomes arg0); `$retval`
// and `$PID` are retval and pid; a USDT probe's arg1, arg2... are bpftrace's
// arg0, arg1... (bcc counts them from 1). Types cast the expressions (`char*` reads a
// string).
#include <fmt/format.h>

#include "tools/tools.h"

namespace bpfscope::tools {

namespace {

struct Piece {
  uint32_t begin = 0;
  uint32_t end = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// [begin, end) split at `sep` outside parentheses and quotes, each piece
// trimmed of spaces.
std::vector<Piece> split(std::string_view text, Piece range, char sep) {
  std::vector<Piece> out;
  int depth = 0;
  bool quoted = false;
  uint32_t start = range.begin;
  for (uint32_t i = range.begin; i <= range.end; ++i) {
    const char c = i < range.end ? text[i] : sep;
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    if (quoted && i < range.end) continue;
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == sep && (depth == 0 || i == range.end)) {
      Piece p{start, i};
      while (p.begin < p.end && isspace(static_cast<unsigned char>(text[p.begin]))) ++p.begin;
      while (p.end > p.begin && isspace(static_cast<unsigned char>(text[p.end - 1]))) --p.end;
      out.push_back(p);
      start = i + 1;
    }
  }
  return out;
}

// A C type of the specifier as a cast: "" (none), "str", or bpftrace's name.
std::string cast_of(std::string_view type) {
  std::string t;
  for (char c : type)
    if (!isspace(static_cast<unsigned char>(c))) t += c;
  if (t == "char*" || t == "constchar*") return "str";
  static const std::pair<const char*, const char*> kTypes[] = {
      {"u8", "uint8"},       {"u16", "uint16"},   {"u32", "uint32"},          {"u64", "uint64"},
      {"s8", "int8"},        {"s16", "int16"},    {"s32", "int32"},           {"s64", "int64"},
      {"char", "int8"},      {"short", "int16"},  {"int", "int32"},           {"long", "int64"},
      {"unsignedint", "uint32"}, {"unsigned", "uint32"}, {"unsignedlong", "uint64"}, {"size_t", "uint64"},
      {"ssize_t", "int64"},  {"int8_t", "int8"},  {"int16_t", "int16"},       {"int32_t", "int32"},
      {"int64_t", "int64"},  {"uint8_t", "uint8"}, {"uint16_t", "uint16"},    {"uint32_t", "uint32"},
      {"uint64_t", "uint64"}, {"pid_t", "int32"}, {"bool", "uint8"},
  };
  for (const auto& [c, b] : kTypes)
    if (t == c) return b;
  return "";  // another type (gfp_t, a pointer): the expression's own
}

// The attach point of a p, r or u probe: USDT in a library, a uprobe or
// uretprobe in one, a kprobe or kretprobe without one. A library given by
// name is found as bcc finds it: "c" is libc.
std::string function_probe(std::string_view type, const std::string& lib, const std::string& func) {
  std::string library = lib;
  if (!lib.empty() && lib.find('/') == std::string::npos && !lib.starts_with("lib")) library = "lib" + lib;
  if (type == "u") return fmt::format("usdt:{}:{}", library, func);
  if (lib.empty()) return fmt::format("{}:{}", type == "p" ? "kprobe" : "kretprobe", func);
  return fmt::format("{}:{}:{}", type == "p" ? "uprobe" : "uretprobe", library, func);
}

// The signature's parameters are the function's arguments, in order: at
// its entry (p:) `size` of malloc(size_t size) is arg0; in other probes a
// parameter's name is an error saying why.
void name_parameters(lang::SplicedValue& v, std::string_view signature, std::string_view type) {
  if (trim(signature).empty()) return;
  const std::vector<Piece> params = split(signature, Piece{0, static_cast<uint32_t>(signature.size())}, ',');
  for (size_t i = 0; i < params.size(); ++i) {
    std::string_view p = signature.substr(params[i].begin, params[i].end - params[i].begin);
    size_t cut = p.rfind('*');
    if (cut == std::string_view::npos) cut = p.rfind(' ');
    std::string pname(trim(cut == std::string_view::npos ? p : p.substr(cut + 1)));
    if (pname.empty()) continue;
    if (type == "p")
      v.aliases.emplace_back(pname, fmt::format("arg{}", i));
    else
      v.aliases.emplace_back(pname, fmt::format("!{}: the arguments of a function are known at its entry (p:), "
                                                "not in a {} probe",
                                                pname, type == "r" ? "return (r:)" : "tracepoint or USDT"));
  }
}

}  // namespace

std::optional<lang::SplicedValue> bcc_specifier(const std::string& option, const std::string& origin,
                                                const std::string& text, std::string& why) {
  lang::SplicedValue v;
  v.option = option;
  v.origin = origin;
  v.text = text;
  const std::string_view t = text;
  const auto hash = static_cast<uint32_t>(std::min(t.find('#'), t.size()));
  const std::string label = hash < t.size() ? std::string(trim(t.substr(hash + 1))) : "";
  const std::string spec(trim(t.substr(0, hash)));
  std::vector<Piece> parts = split(t, Piece{0, hash}, ':');
  if (parts.size() < 3) {
    why = "a specifier needs at least TYPE:LIBRARY:FUNCTION(SIGNATURE)";
    return std::nullopt;
  }
  if (parts.size() > 6) {
    why = "too many ':'-separated parts (TYPE:LIBRARY:FUNCTION(SIGNATURE):TYPES:EXPRS:FILTER)";
    return std::nullopt;
  }
  auto str = [&](Piece p) { return std::string(t.substr(p.begin, p.end - p.begin)); };
  const std::string type = str(parts[0]), lib = str(parts[1]), func = str(parts[2]);
  if (type != "p" && type != "r" && type != "t" && type != "u") {
    why = fmt::format("the probe type must be p, r, t or u, not \"{}\"", type);
    return std::nullopt;
  }
  const size_t open = func.find('(');
  if (open == 0 || open == std::string::npos || func.back() != ')') {
    why = fmt::format("\"{}\" is not FUNCTION(SIGNATURE)", func);
    return std::nullopt;
  }
  const std::string name = func.substr(0, open);
  const std::string signature = func.substr(open + 1, func.size() - open - 2);
  if (lib.empty() && (type == "t" || type == "u")) {
    why = type == "t" ? "a tracepoint needs its category: t:CATEGORY:EVENT()"
                      : "a USDT probe needs its binary or library: u:LIBRARY:PROBE()";
    return std::nullopt;
  }
  const std::string probe =
      type == "t" ? fmt::format("tracepoint:{}:{}", lib, name) : function_probe(type, lib, name);
  v.parts.push_back({.name = option, .kind = lang::SplicedPart::Kind::Probe, .text = probe});

  name_parameters(v, signature, type);
  // bcc numbers a USDT probe's arguments from 1 (bpf_usdt_readarg), bpftrace from 0.
  if (type == "u")
    for (int i = 1; i <= 12; ++i) v.aliases.emplace_back(fmt::format("arg{}", i), fmt::format("arg{}", i - 1));
  v.aliases.emplace_back("$retval", type == "r" ? "retval" : "!$retval is only known in a return probe (r:)");
  v.aliases.emplace_back("$PID", "pid");
  v.aliases.emplace_back("$latency", "!$latency is not supported here (time the function with funclatency)");
  v.aliases.emplace_back("$entry", "!$entry() is not supported here");

  lang::SplicedPart value{.name = option + ".value"}, key{.name = option + ".key"};
  std::string unit;
  if (parts.size() >= 5) {
    const std::vector<Piece> types = split(t, parts[3], ','), exprs = split(t, parts[4], ',');
    if (exprs.size() != types.size()) {
      why = fmt::format("{} type{} for {} expression{}", types.size(), types.size() == 1 ? "" : "s", exprs.size(),
                        exprs.size() == 1 ? "" : "s");
      return std::nullopt;
    }
    for (size_t i = 0; i < exprs.size(); ++i) {
      if (exprs[i].begin == exprs[i].end) {
        why = "an empty expression";
        return std::nullopt;
      }
      key.ranges.push_back({exprs[i].begin, exprs[i].end});
      key.names.push_back(str(exprs[i]));
      key.casts.push_back(cast_of(str(types[i])));
    }
    value.ranges = {key.ranges[0]};
    value.casts = {key.casts[0]};
    unit = key.names[0];
  } else if (parts.size() == 4) {
    why = "types without expressions (TYPES:EXPRS)";
    return std::nullopt;
  } else if (type == "r") {
    // The return value, as bcc collects by default.
    value = {.name = option + ".value", .kind = lang::SplicedPart::Kind::Ident, .text = "retval"};
    key = {.name = option + ".key", .kind = lang::SplicedPart::Kind::Ident, .text = "retval"};
    unit = "retval";
  } else {
    // Each call counts; bcc names the one row "total calls".
    value = {.name = option + ".value", .kind = lang::SplicedPart::Kind::Integer, .number = 1};
    key = {.name = option + ".key", .kind = lang::SplicedPart::Kind::String, .text = "total calls"};
    unit = "value";
  }
  v.parts.push_back(value);
  v.parts.push_back(key);
  if (parts.size() == 6 && parts[5].begin < parts[5].end)
    v.parts.push_back({.name = option + ".filter", .ranges = {{parts[5].begin, parts[5].end}}});
  else
    v.parts.push_back({.name = option + ".filter", .kind = lang::SplicedPart::Kind::Integer, .number = 1});
  v.parts.push_back({.name = option + ".label", .kind = lang::SplicedPart::Kind::String,
                     .text = label.empty() ? spec : label});
  v.parts.push_back({.name = option + ".unit", .kind = lang::SplicedPart::Kind::String,
                     .text = label.empty() ? unit : label});
  return v;
}

// bcc trace's probe specifier (tools/README.md, the `trace` type):
//
//   [{p,r,t,u}]:[library]:function[(signature)] [(predicate)] ["format"[, arguments]]
//
// `func` alone is p::func, `lib:func` p:lib:func; u:LIBRARY[:PROVIDER]:PROBE
// is a USDT probe. bcc's names for values: arg1, arg2... are the function's
// (or the USDT probe's) arguments, counted from 1 (bpftrace's arg0, arg1...),
// retval the return value of an r probe, $pid the thread, $tgid the process,
// $uid, $gid, $cpu, $task. A %s argument is read as a string, %K and %U as a
// kernel and a user symbol.
std::optional<lang::SplicedValue> trace_specifier(const std::string& option, const std::string& origin,
                                                  const std::string& text, std::string& why) {
  lang::SplicedValue v;
  v.option = option;
  v.origin = origin;
  v.text = text;
  const std::string_view t = text;
  const auto n = static_cast<uint32_t>(t.size());
  uint32_t i = 0;
  auto skip_spaces = [&] {
    while (i < n && isspace(static_cast<unsigned char>(t[i]))) ++i;
  };
  // The ')' closing the '(' at `open`, outside quotes; n if none.
  auto closing = [&](uint32_t open) {
    int depth = 0;
    bool quoted = false;
    for (uint32_t k = open; k < n; ++k) {
      if (t[k] == '"' && (k == 0 || t[k - 1] != '\\')) quoted = !quoted;
      if (quoted) continue;
      if (t[k] == '(') ++depth;
      if (t[k] == ')' && --depth == 0) return k;
    }
    return n;
  };
  skip_spaces();
  const uint32_t spec_begin = i;
  while (i < n && !isspace(static_cast<unsigned char>(t[i])) && t[i] != '(') ++i;
  const std::string spec(t.substr(spec_begin, i - spec_begin));
  if (spec.empty()) {
    why = "no probe: [{p,r,t,u}]:[LIBRARY]:FUNCTION";
    return std::nullopt;
  }
  // A '(' right after the function opens its signature.
  std::string signature;
  bool has_signature = false;
  if (i < n && t[i] == '(') {
    const uint32_t close = closing(i);
    if (close == n) {
      why = "the signature's '(' is not closed";
      return std::nullopt;
    }
    signature = std::string(t.substr(i + 1, close - i - 1));
    has_signature = true;
    i = close + 1;
  }
  skip_spaces();
  std::optional<Piece> filter;
  if (i < n && t[i] == '(') {
    const uint32_t close = closing(i);
    if (close == n) {
      why = "the predicate's '(' is not closed";
      return std::nullopt;
    }
    filter = Piece{i, close + 1};
    i = close + 1;
  }
  skip_spaces();
  std::string format;
  std::optional<Piece> action;
  std::vector<Piece> args;
  if (i < n) {
    if (t[i] != '"') {
      why = fmt::format("expected a (predicate) or a \"format\" after the probe, not \"{}\"", t.substr(i));
      return std::nullopt;
    }
    uint32_t close = i + 1;
    while (close < n && (t[close] != '"' || t[close - 1] == '\\')) ++close;
    if (close == n) {
      why = "the format string's '\"' is not closed";
      return std::nullopt;
    }
    format = std::string(t.substr(i + 1, close - i - 1));
    action = Piece{i, n};
    i = close + 1;
    skip_spaces();
    if (i < n) {
      if (t[i] != ',') {
        why = fmt::format("expected ',' and the format's arguments after the format string, not \"{}\"", t.substr(i));
        return std::nullopt;
      }
      args = split(t, Piece{i + 1, n}, ',');
      for (const Piece& a : args)
        if (a.begin == a.end) {
          why = "an empty argument after the format string";
          return std::nullopt;
        }
    }
  }

  // The probe: TYPE:LIBRARY:FUNCTION, or FUNCTION, or LIBRARY:FUNCTION.
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    const size_t colon = spec.find(':', from);
    parts.push_back(spec.substr(from, colon == std::string::npos ? std::string::npos : colon - from));
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  if (parts.size() == 1) parts.insert(parts.begin(), {"p", ""});
  else if (parts.size() == 2) parts.insert(parts.begin(), "p");
  std::string type = parts[0].empty() ? "p" : parts[0];
  if (type != "p" && type != "r" && type != "t" && type != "u") {
    why = fmt::format("the probe type must be p, r, t or u (or none, for p), not \"{}\"", parts[0]);
    return std::nullopt;
  }
  auto join = [&](size_t from, size_t to) {
    std::string out;
    for (size_t k = from; k < to; ++k) out += (k > from ? ":" : "") + parts[k];
    return out;
  };
  std::string probe, func;
  if (type == "t") {
    if (parts.size() != 3 || parts[1].empty() || parts[2].empty()) {
      why = "a tracepoint is t:CATEGORY:EVENT";
      return std::nullopt;
    }
    probe = fmt::format("tracepoint:{}:{}", parts[1], parts[2]);
    func = parts[2];
  } else {
    const std::string lib = type == "u" ? parts[1] : join(1, parts.size() - 1);
    func = type == "u" ? join(2, parts.size()) : parts.back();
    if (func.empty()) {
      why = type == "u" ? "a USDT probe is u:LIBRARY[:PROVIDER]:PROBE" : "no function";
      return std::nullopt;
    }
    if (type == "u" && lib.empty()) {
      why = "a USDT probe needs its binary or library: u:LIBRARY[:PROVIDER]:PROBE";
      return std::nullopt;
    }
    probe = function_probe(type, lib, func);
    // func+0x12: the FUNC column shows the function.
    if (type != "u") func = func.substr(0, func.find('+'));
  }
  if (has_signature && (type == "t" || type == "u")) {
    why = "USDT and tracepoint probes take no signature: use arg1, arg2... (USDT) or args->FIELD (tracepoint), and "
          "a space before a (predicate)";
    return std::nullopt;
  }
  v.parts.push_back({.name = option, .kind = lang::SplicedPart::Kind::Probe, .text = probe});

  name_parameters(v, signature, type);
  // bcc counts the arguments from 1, bpftrace from 0.
  for (int k = 1; k <= 12; ++k) {
    std::string to = fmt::format("arg{}", k - 1);
    if (type == "r")
      to = fmt::format("!arg{}: a function's arguments are known at its entry (p:), not at its return (r:)", k);
    else if (type == "t")
      to = fmt::format("!arg{}: a tracepoint's fields are args->NAME", k);
    v.aliases.emplace_back(fmt::format("arg{}", k), to);
  }
  v.aliases.emplace_back("retval", type == "r" ? "retval" : "!retval is only known in a return probe (r:)");
  v.aliases.emplace_back("$pid", "tid");
  v.aliases.emplace_back("$tgid", "pid");
  v.aliases.emplace_back("$uid", "uid");
  v.aliases.emplace_back("$gid", "gid");
  v.aliases.emplace_back("$cpu", "cpu");
  v.aliases.emplace_back("$task", "curtask");

  if (filter)
    v.parts.push_back({.name = option + ".filter", .ranges = {{filter->begin, filter->end}}});
  else
    v.parts.push_back({.name = option + ".filter", .kind = lang::SplicedPart::Kind::Integer, .number = 1});
  v.parts.push_back({.name = option + ".func", .kind = lang::SplicedPart::Kind::String, .text = func});

  // The message: printf(msg = "format", args...), %s reading a string, %K
  // and %U naming a symbol.
  lang::SplicedPart message{.name = option + ".message", .kind = lang::SplicedPart::Kind::Printf};
  message.names = {"msg"};
  message.ranges.push_back(action ? lang::Loc{action->begin, action->end} : lang::Loc{0, n});
  message.casts.emplace_back();
  std::string out;
  size_t arg = 0;
  for (size_t k = 0; k < format.size(); ++k) {
    out += format[k];
    if (format[k] != '%') continue;
    if (k + 1 < format.size() && format[k + 1] == '%') {
      out += format[++k];
      continue;
    }
    size_t c = k + 1;
    while (c < format.size() && (isdigit(static_cast<unsigned char>(format[c])) ||
                                 std::string_view("-+ #.*hljzt").find(format[c]) != std::string_view::npos))
      ++c;
    if (c >= format.size()) break;
    out += format.substr(k + 1, c - k - 1);
    const char conv = format[c];
    out += conv == 'K' || conv == 'U' ? 's' : conv;
    k = c;
    if (arg < args.size()) {
      message.ranges.push_back({args[arg].begin, args[arg].end});
      message.casts.push_back(conv == 's' ? "str" : conv == 'K' ? "ksym" : conv == 'U' ? "usym" : "");
    }
    ++arg;
  }
  // More arguments than conversions: printf says so.
  for (; arg < args.size(); ++arg) {
    message.ranges.push_back({args[arg].begin, args[arg].end});
    message.casts.emplace_back();
  }
  message.text = out;
  v.parts.push_back(message);
  v.parts.push_back(
      {.name = option + ".formatted", .kind = lang::SplicedPart::Kind::Integer, .number = action ? 1 : 0});
  return v;
}

}  // namespace bpfscope::tools
