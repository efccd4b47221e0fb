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
  // A library given by name, as bcc finds it: "c" is libc.
  std::string library = lib;
  if (!lib.empty() && lib.find('/') == std::string::npos && !lib.starts_with("lib")) library = "lib" + lib;
  std::string probe;
  if (type == "t") {
    if (lib.empty()) {
      why = "a tracepoint needs its category: t:CATEGORY:EVENT()";
      return std::nullopt;
    }
    probe = fmt::format("tracepoint:{}:{}", lib, name);
  } else if (type == "u") {
    if (lib.empty()) {
      why = "a USDT probe needs its binary or library: u:LIBRARY:PROBE()";
      return std::nullopt;
    }
    probe = fmt::format("usdt:{}:{}", library, name);
  } else if (lib.empty()) {
    probe = fmt::format("{}:{}", type == "p" ? "kprobe" : "kretprobe", name);
  } else {
    probe = fmt::format("{}:{}:{}", type == "p" ? "uprobe" : "uretprobe", library, name);
  }
  v.parts.push_back({.name = option, .kind = lang::SplicedPart::Kind::Probe, .text = probe});

  // The signature's parameters are the function's arguments, in order.
  if (!trim(signature).empty()) {
    const std::vector<Piece> params = split(signature, Piece{0, static_cast<uint32_t>(signature.size())}, ',');
    for (size_t i = 0; i < params.size(); ++i) {
      std::string_view p = std::string_view(signature).substr(params[i].begin, params[i].end - params[i].begin);
      size_t cut = p.rfind('*');
      if (cut == std::string_view::npos) cut = p.rfind(' ');
      std::string pname(trim(cut == std::string_view::npos ? p : p.substr(cut + 1)));
      if (pname.empty()) continue;
      if (type == "p") v.aliases.emplace_back(pname, fmt::format("arg{}", i));
      else
        v.aliases.emplace_back(pname, fmt::format("!{}: the arguments of a function are known at its entry (p:), "
                                                  "not in a {} probe",
                                                  pname, type == "r" ? "return (r:)" : "tracepoint or USDT"));
    }
  }
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

}  // namespace bpfscope::tools
