// The type checker's function calls: printf and the other actions,
// aggregations' siblings, string, symbol and network functions.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sema/checker.h"
#include "symbols/symbols.h"

namespace bpfscope::sema::detail {

namespace {

// join(): at most this many elements, each of at most kJoinElemMax bytes
// (and max_strlen).
constexpr uint32_t kJoinMax = 16;
constexpr uint32_t kJoinElemMax = 1024;

// Signal names signal() accepts, with or without the SIG prefix.
struct SignalName {
  std::string_view name;
  int number;
};
constexpr SignalName kSignals[] = {
    {"HUP", 1},   {"INT", 2},     {"QUIT", 3},   {"ILL", 4},     {"TRAP", 5},   {"ABRT", 6},   {"IOT", 6},
    {"BUS", 7},   {"FPE", 8},     {"KILL", 9},   {"USR1", 10},   {"SEGV", 11},  {"USR2", 12},  {"PIPE", 13},
    {"ALRM", 14}, {"TERM", 15},   {"STKFLT", 16}, {"CHLD", 17},  {"CONT", 18},  {"STOP", 19},  {"TSTP", 20},
    {"TTIN", 21}, {"TTOU", 22},   {"URG", 23},   {"XCPU", 24},   {"XFSZ", 25},  {"VTALRM", 26}, {"PROF", 27},
    {"WINCH", 28}, {"IO", 29},    {"POLL", 29},  {"PWR", 30},    {"SYS", 31},
};

std::optional<int> signal_number(std::string_view name) {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  for (const auto& s : kSignals)
    if (s.name == name) return s.number;
  return std::nullopt;
}

// The id of a cgroup v2 directory: the kernfs node id, which the kernel hands
// out as the directory's file handle (as bpf_get_current_cgroup_id reports it).
std::expected<uint64_t, std::string> cgroup_id_of(const std::string& path) {
  alignas(file_handle) unsigned char storage[sizeof(file_handle) + sizeof(uint64_t)] = {};
  auto* fh = reinterpret_cast<file_handle*>(storage);
  fh->handle_bytes = sizeof(uint64_t);
  int mount_id = 0;
  if (name_to_handle_at(AT_FDCWD, path.c_str(), fh, &mount_id, 0) != 0) return std::unexpected(strerror(errno));
  uint64_t id = 0;
  std::memcpy(&id, storage + sizeof(file_handle), sizeof id);
  return id;
}

// The level of a cgroup v2 directory in its hierarchy (the root is 0): its
// depth below the cgroup2 mount that holds it, plus the depth of that
// mount's own root.
std::expected<uint32_t, std::string> cgroup_level_of(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::canonical(path, ec);
  if (ec) return std::unexpected(ec.message());
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  std::optional<uint32_t> best;
  size_t best_len = 0;
  const auto depth = [](const std::filesystem::path& p) {
    uint32_t n = 0;
    for (const auto& part : p.relative_path())
      if (!part.empty() && part != ".") ++n;
    return n;
  };
  while (std::getline(mounts, line)) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    std::istringstream in(line);
    std::string id, parent, dev, root, point, word;
    in >> id >> parent >> dev >> root >> point;
    while (in >> word && word != "-") {}
    std::string fstype;
    in >> fstype;
    if (fstype != "cgroup2") continue;
    const std::string d = dir.string();
    if (d != point && !(d.starts_with(point) && (point == "/" || d[point.size()] == '/'))) continue;
    if (point.size() < best_len && best) continue;
    best_len = point.size();
    best = depth(std::filesystem::path(root)) + depth(dir.lexically_relative(point));
  }
  if (!best) return std::unexpected("not in a cgroup v2 hierarchy");
  return *best;
}

}  // namespace

std::optional<std::string> Checker::known_string_arg(ExprId id, std::string_view function) {
  const Expr& e = ast_.expr(id);
  expr(e.args[0]);
  std::optional<std::string> s = const_string(e.args[0]);
  if (!s) error(e.loc, fmt::format("{}() expects a string literal ({} provided)", function, provided(e.args[0])));
  return s;
}

// uaddr("sym"): the run-time address of a symbol in each probed binary, a
// pointer to an integer of the symbol's size (1, 2, 4, else 8 bytes).
Type Checker::uaddr_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& a = ast_.expr(e.args[0]);
  if (a.kind != ExprKind::String) {
    error(e.loc, fmt::format("uaddr() expects a string literal ({} provided)", provided(e.args[0])));
    return Type::none();
  }
  expr(e.args[0]);
  std::vector<UaddrSite> sites;
  std::optional<std::pair<uint64_t, std::string>> first_size;  // size and the attach point that gave it
  for (const auto& p : *points_) {
    if (p.kind != ProbeKind::Uprobe && p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Usdt) {
      error(e.loc, "uaddr can only be used with u(ret)probes and usdt probes");
      return Type::none();
    }
    for (const auto& t : p.targets) {
      auto elf = symbols::cached_elf(t.path);
      auto sym = elf ? (*elf)->symbol(a.sval) : std::nullopt;
      if (!sym) {
        error(e.loc, fmt::format("Could not resolve symbol: {}:{}", t.path, a.sval));
        return Type::none();
      }
      if (!first_size) {
        first_size.emplace(sym->size, t.name);
      } else if (first_size->first != sym->size) {
        error(e.loc, fmt::format("Symbol size mismatch between probes. Symbol \"{}\" has size {} for probe \"{}\" "
                                 "but size {} for probe \"{}\"",
                                 a.sval, first_size->first, first_size->second, sym->size, t.name));
        return Type::none();
      }
      UaddrSite site{.path = t.path, .offset = t.offset};
      if ((*elf)->relocatable()) {
        auto probe_vaddr = (*elf)->offset_to_vaddr(t.offset);
        if (!probe_vaddr) {
          error(e.loc, fmt::format("uaddr: no loadable segment of {} holds the probed offset {:#x}", t.path,
                                   t.offset));
          return Type::none();
        }
        site.relative = true;
        site.value = static_cast<int64_t>(sym->vaddr - *probe_vaddr);
      } else {
        site.value = static_cast<int64_t>(sym->vaddr);
      }
      sites.push_back(std::move(site));
    }
  }
  target_specific_ = true;  // the address depends on the binary and the probed instruction
  out_.uaddr_of[id] = std::move(sites);
  const uint64_t size = first_size ? first_size->first : 8;
  const uint32_t pointee = size == 1 || size == 2 || size == 4 ? static_cast<uint32_t>(size) : 8;
  return Type::pointer(Type::integer(pointee, true), AddrSpace::User);
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

bool Checker::arg_count_ok(const Expr& e, const FunctionRow& row) {
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

// A builtin variable spelt as a call, as bpftrace 0.24 and ply allow:
// pid(), comm(), nsecs(); nsecs(boot), pid(init) and tid(init) are the
// plain variables; nsecs(monotonic|tai|sw_tai) read other clocks. nullopt
// when the name is no builtin variable.
std::optional<Type> Checker::builtin_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const BuiltinRow* b = find_builtin(e.name);
  if (!b || arg_index(e.name) >= 0) return std::nullopt;
  if (e.args.size() == 1) {
    const Expr& a = ast_.expr(e.args[0]);
    const std::string_view arg = a.kind == ExprKind::Identifier ? std::string_view(a.name) : "";
    const bool nsecs = b->id == Builtin::Nsecs, ids = b->id == Builtin::Pid || b->id == Builtin::Tid;
    if (nsecs && (arg == "monotonic" || arg == "tai" || arg == "sw_tai")) {
      out_.builtin_of[id] = find_builtin(fmt::format("nsecs({})", arg))->id;
      return Type::integer(8, false);
    }
    if (ids && arg == "curr_ns") {
      error(a.loc, fmt::format("{}(curr_ns) is not supported yet: {} and {}(init) are the initial PID namespace's",
                               e.name, e.name, e.name));
      return Type::none();
    }
    if (!(nsecs && arg == "boot") && !(ids && arg == "init")) {
      error(a.loc, nsecs  ? "nsecs() takes boot, monotonic, tai or sw_tai"
                   : ids ? fmt::format("{}() takes init or curr_ns", e.name)
                         : fmt::format("{}() takes no arguments", e.name));
      return Type::none();
    }
  } else if (!e.args.empty()) {
    error(e.loc, fmt::format("{}() takes at most one argument", e.name));
    return Type::none();
  }
  return identifier(id);
}

Type Checker::call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const FunctionRow* row = find_function(e.name);
  if (!row) {
    if (auto t = builtin_call(id)) return *t;
    // bpftrace underlines the name only.
    lang::Loc name{e.loc.begin, e.loc.begin + static_cast<uint32_t>(e.name.size())};
    error(name, fmt::format("Unknown function: {}", e.name));
    return Type::none();
  }
  out_.function_of[id] = row->id;
  if (!e.field_names.empty() && row->id != Function::Printf) {
    error(e.loc, "only printf() takes named arguments");
    return Type::none();
  }
  if (!arg_count_ok(e, *row)) return Type::none();
  switch (row->id) {
    case Function::None: return Type::none();
    case Function::Printf: return printf_call(id);
    case Function::Exit: {
      std::vector<Type> args;
      if (!e.args.empty()) {
        Type t = expr(e.args[0]);
        if (!t.is_int()) error(ast_.expr(e.args[0]).loc, "exit() expects an integer exit code");
        args.push_back(Type::integer(8, true));
      }
      out_.action_of[id] = add_action(ActionKind::Exit, e.loc, std::move(args));
      return Type::none();
    }
    case Function::Print: {
      const Expr& a = ast_.expr(e.args[0]);
      if (a.kind == ExprKind::Tuple && a.field_names.empty() && e.args.size() > 1) return print_table(id);
      if (a.kind == ExprKind::Tuple && a.field_names.empty() && e.args.size() == 1 && !a.args.empty() &&
          ast_.expr(a.args[0]).kind == ExprKind::Map && ast_.expr(a.args[0]).args.empty())
        return print_hist_notes(id);
      if (a.kind == ExprKind::Map && a.args.empty()) {
        // print(@m, top, div, "name"): a bpfscope extension for tools, the
        // map printed under another name (argdist's histogram headed by
        // its expression, "args->bytes").
        std::string shown;
        if (e.args.size() > 4) {
          error(e.loc, fmt::format("print() requires 1 to 4 arguments ({} provided)", e.args.size()));
          return Type::none();
        }
        if (e.args.size() == 4) {
          const Expr& n = ast_.expr(e.args[3]);
          if (n.kind != ExprKind::String || n.sval.empty())
            error(n.loc, "print(): the fourth argument (the name to print the map under) must be a string literal");
          else
            shown = "@" + n.sval;
        }
        MapInfo* m = whole_map(e.args[0]);
        for (size_t i = 1; i < std::min<size_t>(e.args.size(), 3); ++i)
          if (!expr(e.args[i]).is_int()) error(ast_.expr(e.args[i]).loc, "print(): top and div must be integers");
        int32_t act = add_action(ActionKind::Print, e.loc, {Type::integer(8, false), Type::integer(8, false)});
        if (m) out_.actions[act].map = out_.map_of[e.args[0]];
        out_.actions[act].format = shown;
        out_.action_of[id] = act;
        return Type::none();
      }
      if (e.args.size() > 1) {
        error(e.loc, "print() of a value takes one argument");
        return Type::none();
      }
      Type t = expr(e.args[0]);
      if (t.kind == TypeKind::None) {
        if (!diags_.has_errors()) error(a.loc, "print() needs a value");
        return Type::none();
      }
      out_.action_of[id] = add_action(ActionKind::PrintValue, e.loc, {t});
      return Type::none();
    }
    case Function::Clear:
    case Function::Zero: {
      const Expr& a = ast_.expr(e.args[0]);
      if (a.kind != ExprKind::Map || !a.args.empty()) {
        error(a.loc, fmt::format("{}() expects a map with no keys", e.name));
        return Type::none();
      }
      MapInfo* m = whole_map(e.args[0]);
      int32_t act = add_action(row->id == Function::Clear ? ActionKind::Clear : ActionKind::Zero, e.loc);
      if (m) out_.actions[act].map = out_.map_of[e.args[0]];
      out_.action_of[id] = act;
      return Type::none();
    }
    case Function::Delete: {
      const Expr& a = ast_.expr(e.args[0]);
      if (a.kind != ExprKind::Map) {
        error(a.loc, "delete() expects a map");
        return Type::none();
      }
      if (e.args.size() == 2) {
        // delete(@m, key): check the key against the map.
        if (!a.args.empty()) {
          error(a.loc, "delete(@m, key) takes the map without a key");
          return Type::none();
        }
        if (!map_and_key(e.args[0], e.args[1], "delete() with two arguments")) return Type::none();
      } else {
        if (!map_for(e.args[0], false)) {
          bool exists = std::any_of(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == a.name; });
          if (!exists) error(a.loc, fmt::format("Undefined map: {}", a.name));
          return Type::none();
        }
        set(e.args[0], Type::none());
      }
      return Type::boolean();
    }
    case Function::Time: {
      Action a;
      std::string fmt = "%H:%M:%S\n";
      if (!e.args.empty()) {
        const Expr& f = ast_.expr(e.args[0]);
        if (f.kind != ExprKind::String) {
          error(f.loc, "time() expects a string literal format");
          return Type::none();
        }
        expr(e.args[0]);
        fmt = f.sval;
      }
      int32_t act = add_action(ActionKind::Time, e.loc);
      out_.actions[act].format = fmt;
      out_.action_of[id] = act;
      return Type::none();
    }
    case Function::Str: {
      // str($N) is the parameter's text, whether or not it reads as a number.
      const Expr& arg = ast_.expr(e.args[0]);
      Type t = expr(e.args[0]);
      if (arg.kind == ExprKind::Positional) {
        out_.const_of[e.args[0]].reset();
        const size_t len = arg.ival >= 1 && arg.ival <= out_.positional.size() ? out_.positional[arg.ival - 1].size() : 0;
        t = set(e.args[0], Type::string(static_cast<uint32_t>(len + 1)));
      }
      uint32_t cap = out_.config.max_strlen;
      if (e.args.size() == 2) {
        // A constant length sizes the string; a run-time one is clamped to
        // max_strlen when the probe reads.
        Type nt = expr(e.args[1]);
        auto n = constant(e.args[1]);
        if (!nt.is_int() || (n && *n < 1)) {
          error(ast_.expr(e.args[1]).loc, "str(): the length must be a positive integer");
          return Type::none();
        }
        if (n) cap = static_cast<uint32_t>(std::min<int64_t>(*n + 1, out_.config.max_strlen));
      }
      if (t.is_string()) return Type::string(std::min(cap, t.size));
      if (!t.is_int()) {
        error(ast_.expr(e.args[0]).loc, fmt::format("str() expects a string or a pointer ({} provided)", t.name()));
        return Type::none();
      }
      return Type::string(cap);
    }
    case Function::Strncmp: {
      Type a = expr(e.args[0]), b = expr(e.args[1]);
      auto n = constant(e.args[2]);
      if (!a.is_string() || !b.is_string()) {
        error(e.loc, "strncmp() compares two strings");
        return Type::none();
      }
      if (!n || *n < 0) {
        error(ast_.expr(e.args[2]).loc, "strncmp(): the length must be a non-negative integer constant");
        return Type::none();
      }
      return Type::integer(8, true);
    }
    case Function::Strcat: {
      // strcat(a, b, ...) (a bpfscope extension): a new string holding the
      // strings one after the other, as long as all of them together.
      uint64_t size = 1;
      for (ExprId a : e.args) {
        Type t = expr(a);
        if (!t.is_string()) {
          error(ast_.expr(a).loc, fmt::format("strcat() joins strings ({} provided)", t.name()));
          return Type::none();
        }
        size += t.size - 1;
      }
      if (size > out_.config.max_strlen) {
        error(e.loc, fmt::format("strcat(): the strings may be longer than max_strlen ({}) together", out_.config.max_strlen));
        return Type::none();
      }
      return Type::string(static_cast<uint32_t>(size));
    }
    case Function::Strlen: {
      if (!expr(e.args[0]).is_string()) {
        error(ast_.expr(e.args[0]).loc, "strlen() expects a string");
        return Type::none();
      }
      return Type::integer(8, false);
    }
    case Function::Ntop: {
      // ntop([af,] addr): an IPv4 address as an integer (network order) or
      // 4 bytes, an IPv6 address as 16 bytes. ntop(af, addr, port), a
      // bpfscope extension, prints "addr:port" ("[addr]:port" for IPv6).
      const ExprId addr_id = e.args.size() == 3 ? e.args[1] : e.args.back();
      Type addr = expr(addr_id);
      if (e.args.size() >= 2 && !expr(e.args[0]).is_int()) {
        error(ast_.expr(e.args[0]).loc, "ntop(): the address family must be an integer");
        return Type::none();
      }
      if (e.args.size() == 3 && !expr(e.args[2]).is_int()) {
        error(ast_.expr(e.args[2]).loc, "ntop(): the port must be an integer");
        return Type::none();
      }
      bool ok = (addr.kind == TypeKind::Int && addr.size <= 8) || (addr.is_bytes() && (addr.size == 4 || addr.size == 16));
      if (!ok) {
        error(ast_.expr(addr_id).loc,
              fmt::format("ntop() expects an integer, or 4 or 16 bytes ({} provided)", addr.name()));
        return Type::none();
      }
      return Type::inet();
    }
    case Function::HasKey: {
      const Expr& a = ast_.expr(e.args[0]);
      if (a.kind != ExprKind::Map || !a.args.empty()) {
        error(a.loc, "has_key() expects a map without a key, then the key: has_key(@m, k)");
        return Type::none();
      }
      if (!map_and_key(e.args[0], e.args[1], "has_key()")) return Type::none();
      return Type::boolean();
    }
    case Function::Ksym:
    case Function::Usym: {
      Type a = expr(e.args[0]);
      if (!a.is_int()) {
        // An argument that already failed was reported there.
        if (a.kind != TypeKind::None) error(ast_.expr(e.args[0]).loc, fmt::format("{}() expects an address", e.name));
        return Type::none();
      }
      return Type::symbol(row->id == Function::Usym);
    }
    case Function::KstackCall:
    case Function::UstackCall: {
      // kstack(), kstack(limit), kstack(mode), kstack(mode, limit).
      bool user = row->id == Function::UstackCall;
      StackMode mode = StackMode::Bpftrace;
      size_t next = 0;
      if (!e.args.empty() && ast_.expr(e.args[0]).kind == ExprKind::Identifier) {
        const Expr& m = ast_.expr(e.args[0]);
        if (m.name == "perf") mode = StackMode::Perf;
        else if (m.name == "raw") mode = StackMode::Raw;
        else if (m.name == "bcc") mode = StackMode::Bcc;
        else if (m.name == "build_id" && user) mode = StackMode::BuildId;
        else if (m.name == "build_id") {
          error(m.loc, "'build_id' stack mode can only be used for ustack");
          return Type::none();
        } else if (m.name != "bpftrace") {
          error(m.loc, "the stack mode must be bpftrace, perf, raw, bcc or build_id");
          return Type::none();
        }
        next = 1;
      } else if (e.args.size() == 2) {
        error(ast_.expr(e.args[0]).loc, "the stack mode must be bpftrace, perf, raw, bcc or build_id");
        return Type::none();
      }
      int64_t frames = 127;
      if (next < e.args.size()) {
        auto limit = constant(e.args[next]);
        if (!limit || *limit < 1 || *limit > 127) {
          const Expr& l = ast_.expr(e.args[next]);
          if (limit && l.kind == ExprKind::Call && !l.args.empty())  // an integer getopt(): the option is at fault
            error(l.loc, fmt::format("--{} must be from 1 to 127 (a stack limit), got {}", ast_.expr(l.args[0]).sval,
                                     *limit));
          else
            error(l.loc, "the stack limit must be a constant from 1 to 127");
          return Type::none();
        }
        frames = *limit;
      }
      (mode == StackMode::BuildId ? out_.uses_build_id_stack : user ? out_.uses_ustack : out_.uses_kstack) = true;
      return Type::stack(user, static_cast<uint32_t>(frames), mode);
    }
    case Function::Bswap: {
      Type t = expr(e.args[0]);
      if (t.kind != TypeKind::Int) {
        error(ast_.expr(e.args[0]).loc, fmt::format("bswap() expects an integer ({} provided)", t.name()));
        return Type::none();
      }
      return Type::integer(t.size, false);
    }
    case Function::Pton: return pton_call(id);
    case Function::Buf: return buf_call(id);
    case Function::Macaddr: {
      const Expr& a = ast_.expr(e.args[0]);
      Type t = expr(e.args[0]);
      if (a.kind == ExprKind::String) {
        error(e.loc, "macaddr() does not support literal string arguments");
        return Type::none();
      }
      if (t.is_bytes()) {
        if (t.size * (t.kind == TypeKind::Array ? t.elems[0].size : 1) != 6) {
          error(e.loc, "macaddr() argument must be 6 bytes in size");
          return Type::none();
        }
      } else if (t.kind != TypeKind::Int) {
        error(e.loc, fmt::format("macaddr() expects an array or a pointer ({} provided)", t.name()));
        return Type::none();
      }
      return Type::mac_addr();
    }
    case Function::Join: {
      Type t = expr(e.args[0]);
      if (t.kind != TypeKind::Int) {
        error(e.loc, fmt::format("join() only supports int or pointer arguments ({} provided)", t.name()));
        return Type::none();
      }
      std::string sep = " ";
      if (e.args.size() == 2) {
        const Expr& d = ast_.expr(e.args[1]);
        if (d.kind != ExprKind::String) {
          error(e.loc, fmt::format("join() expects a string literal ({} provided)", provided(e.args[1])));
          return Type::none();
        }
        expr(e.args[1]);
        sep = d.sval;
      }
      // A count, then kJoinMax elements of join_elem_size bytes.
      out_.join_elem_size = std::min<uint32_t>(out_.config.max_strlen, kJoinElemMax);
      std::vector<Type> args{Type::integer(8, false)};
      for (uint32_t i = 0; i < kJoinMax; ++i) args.push_back(Type::string(out_.join_elem_size));
      int32_t act = add_action(ActionKind::Join, e.loc, std::move(args));
      out_.actions[act].format = sep;
      out_.action_of[id] = act;
      return Type::none();
    }
    case Function::Strftime: {
      const Expr& f = ast_.expr(e.args[0]);
      if (f.kind != ExprKind::String) {
        error(e.loc, fmt::format("strftime() expects a string literal ({} provided)", provided(e.args[0])));
        return Type::none();
      }
      expr(e.args[0]);
      Type t = expr(e.args[1]);
      if (!t.is_int()) {
        error(e.loc, fmt::format("strftime() only supports integer arguments ({} provided)", t.name()));
        return Type::none();
      }
      auto& formats = out_.strftime_formats;
      auto it = std::find(formats.begin(), formats.end(), f.sval);
      if (it == formats.end()) it = formats.insert(formats.end(), f.sval);
      out_.const_of[e.args[0]] = it - formats.begin();
      return Type::timestamp();
    }
    case Function::Cgroupid: {
      const std::optional<std::string> path = known_string_arg(id, "cgroupid");
      if (!path) return Type::none();
      auto cg = cgroup_id_of(*path);
      if (!cg) {
        error(e.loc, fmt::format("Failed to get `cgroupid` for path: \"{}\": {}", *path, cg.error()));
        return Type::none();
      }
      out_.const_of[id] = static_cast<int64_t>(*cg);
      return Type::integer(8, false);
    }
    case Function::UnderCgroup: {
      // The cgroup is found when compiling, as cgroupid()'s.
      const std::optional<std::string> path = known_string_arg(id, "under_cgroup");
      if (!path) return Type::none();
      if (path->empty()) {  // no cgroup (a tool's -c not given): every task
        out_.under_cgroup_of[id] = {0, TypedProgram::kEveryCgroup};
        return Type::boolean();
      }
      auto cg = cgroup_id_of(*path);
      auto level = cg ? cgroup_level_of(*path) : std::unexpected(cg.error());
      if (!level) {
        error(e.loc, fmt::format("under_cgroup(): cannot use the cgroup \"{}\": {}", *path, level.error()));
        return Type::none();
      }
      out_.under_cgroup_of[id] = {*cg, *level};
      return Type::boolean();
    }
    case Function::Kaddr: {
      // A string known now: a literal, or str($1) of a parameter (bpftrace).
      const bool literal = ast_.expr(e.args[0]).kind == ExprKind::String;
      const std::optional<std::string> name = expr(e.args[0]).is_string() ? const_string(e.args[0]) : std::nullopt;
      if (!name || (!literal && name->empty())) {
        error(e.loc, fmt::format("kaddr() expects a string literal ({} provided)", provided(e.args[0])));
        return Type::none();
      }
      auto addr = symbols::kernel_symbol_address(*name);
      if (!addr) {
        error(e.loc, fmt::format("Failed to resolve kernel symbol: {}", *name));
        return Type::none();
      }
      out_.const_of[id] = static_cast<int64_t>(*addr);
      return Type::integer(8, false);
    }
    case Function::Cat: return printf_call(id, ActionKind::Cat);
    case Function::System:
      if (!unsafe_allowed(e)) return Type::none();
      return printf_call(id, ActionKind::System);
    case Function::Signal: return signal_call(id);
    case Function::Len: return len_call(id);
    case Function::Strcontains:
    case Function::Strstr: {
      Type h = expr(e.args[0]), n = expr(e.args[1]);
      for (auto [arg, t] : {std::pair{e.args[0], h}, std::pair{e.args[1], n}}) {
        if (!t.is_string()) {
          error(ast_.expr(arg).loc, fmt::format("{}() expects string arguments ({} provided)", e.name,
                                                t.kind == TypeKind::None ? "none" : t.name()));
          return Type::none();
        }
      }
      return row->id == Function::Strcontains ? Type::boolean() : Type::integer(8, true);
    }
    case Function::Strerror:
    case Function::SyscallName:
    case Function::SignalName:
    case Function::CgroupPath: {
      if (e.args.size() == 2) {
        error(ast_.expr(e.args[1]).loc,
              "cgroup_path(): a hierarchy filter is not supported; ids are looked up in the cgroup v2 hierarchy");
        return Type::none();
      }
      Type t = expr(e.args[0]);
      if (t.kind != TypeKind::Int) {
        error(ast_.expr(e.args[0]).loc, fmt::format("{}() expects an integer ({} provided)", e.name,
                                                    t.kind == TypeKind::None ? "none" : t.name()));
        return Type::none();
      }
      switch (row->id) {
        case Function::Strerror: return Type::named(NameTable::Errno);
        case Function::SyscallName: return Type::named(NameTable::Syscall);
        case Function::SignalName: return Type::named(NameTable::Signal);
        default: return Type::named(NameTable::CgroupPath);
      }
    }
    case Function::Errorf: return printf_call(id, ActionKind::Errorf);
    case Function::Warnf: return printf_call(id, ActionKind::Warnf);
    case Function::Memcmp: return memcmp_call(id);
    case Function::Getopt: return getopt_call(id);
    case Function::InList: return in_list_call(id);
    case Function::Reg: return reg_call(id);
    case Function::Kptr:
    case Function::Uptr: {
      Type t = expr(e.args[0]);
      if (t.kind != TypeKind::Int) {
        error(ast_.expr(e.args[0]).loc, fmt::format("{}() expects a pointer ({} provided)", e.name,
                                                    t.kind == TypeKind::None ? "none" : t.name()));
        return Type::none();
      }
      AddrSpace space = row->id == Function::Kptr ? AddrSpace::Kernel : AddrSpace::User;
      t.addr_space = space;
      retarget(t, space);
      return t;
    }
    case Function::Uaddr: return uaddr_call(id);
    case Function::PercpuKaddr: {
      // percpu_kaddr("sym"[, cpu]): this CPU's (or that CPU's) instance of a
      // per-CPU kernel variable, found in the kernel's BTF.
      const Expr& a = ast_.expr(e.args[0]);
      expr(e.args[0]);
      if (a.kind != ExprKind::String) {
        error(e.loc, fmt::format("percpu_kaddr() expects a string literal ({} provided)", provided(e.args[0])));
        return Type::none();
      }
      if (e.args.size() == 2 && !expr(e.args[1]).is_int()) {
        error(ast_.expr(e.args[1]).loc, "percpu_kaddr(): the CPU must be an integer");
        return Type::none();
      }
      auto var = out_.btf->find_var(a.sval);
      if (!var) {
        error(e.loc, fmt::format("Could not resolve variable \"{}\" from BTF", a.sval));
        return Type::none();
      }
      // The verifier takes the variable's address from kallsyms, which lists
      // data symbols only with CONFIG_KALLSYMS_ALL.
      if (!symbols::kernel_symbol_address(a.sval)) {
        error(e.loc, fmt::format("percpu_kaddr(\"{}\"): /proc/kallsyms does not list the variable (this kernel is "
                                 "built without CONFIG_KALLSYMS_ALL), so BPF programs cannot take its address",
                                 a.sval));
        return Type::none();
      }
      out_.const_of[id] = *var;
      return Type::integer(8, false);
    }
    case Function::Path:
      for (ExprId a : e.args) expr(a);
      error(e.loc, "path() needs the bpf_d_path helper, which the kernel allows only in fentry/fexit and LSM "
                   "programs on an allowlist of functions; this kernel refuses to load fentry programs "
                   "(EPERM), so path() cannot be used here");
      return Type::none();
    case Function::Override:
      for (ExprId a : e.args) expr(a);
      if (!unsafe_allowed(e)) return Type::none();
      for (const auto& p : *points_) {
        if (p.kind != ProbeKind::Kprobe) {
          error(e.loc, fmt::format("override can not be used with \"{}\" probes", probe_type_name(p.kind)));
          return Type::none();
        }
      }
      error(e.loc, "override() needs a kprobe (bpf_override_return), and this kernel has no kprobes "
                   "(CONFIG_KPROBES is off)");
      return Type::none();
    case Function::Count:
    case Function::Sum:
    case Function::Avg:
    case Function::Min:
    case Function::Max:
    case Function::Stats:
    case Function::Hist:
    case Function::LHist:
      error(e.loc, fmt::format("{}() should be assigned to a map", e.name));
      return Type::none();
  }
  std::unreachable();
}

// bpftrace's word for an argument's kind in "(X provided)".
std::string Checker::provided(ExprId id) {
  Type t = expr(id);
  if (t.is_int()) return "integer";
  if (t.is_string()) return "string";
  return t.name();
}

bool Checker::unsafe_allowed(const Expr& e) {
  if (out_.unsafe) return true;
  error(e.loc, fmt::format("{}() is an unsafe function being used in safe mode", e.name));
  return false;
}

// pton("1.2.3.4") / pton("::1"): the address bytes, as uint8[4] or
// uint8[16], parsed here (from any string known when compiling: a literal,
// a string getopt(), $1); lowering writes them as a literal
// (const_strings[const_of[id]]).
Type Checker::pton_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  expr(e.args[0]);
  const std::optional<std::string> text = const_string(e.args[0]);
  if (!text) {
    error(e.loc, fmt::format("pton() expects a string literal ({} provided)", provided(e.args[0])));
    return Type::none();
  }
  unsigned char bytes[16];
  uint32_t n = 0;
  if (inet_pton(AF_INET, text->c_str(), bytes) == 1)
    n = 4;
  else if (inet_pton(AF_INET6, text->c_str(), bytes) == 1)
    n = 16;
  if (!n) {
    error(e.loc, fmt::format("pton() expects a valid IPv4/IPv6 address, got {}", *text));
    return Type::none();
  }
  out_.const_of[id] = static_cast<int64_t>(out_.const_strings.size());
  out_.const_strings.emplace_back(reinterpret_cast<char*>(bytes), n);
  return Type::array(Type::integer(1, false), n);
}

// buf(array) or buf(p, len): len bytes from a pointer (kernel or user
// memory, as for str()), or from a string or array value.
Type Checker::buf_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  Type t = expr(e.args[0]);
  if (e.args.size() == 1) {
    if (t.kind != TypeKind::Array) {
      error(e.loc, fmt::format("buf() expects a length argument for non-array type {}",
                               t.is_string() ? "string" : t.name()));
      return Type::none();
    }
    return Type::buffer(t.size * t.elems[0].size);
  }
  if (!t.is_int() && !t.is_bytes()) {
    error(e.loc, fmt::format("buf() expects a pointer, a string or an array ({} provided)", t.name()));
    return Type::none();
  }
  Type lt = expr(e.args[1]);
  if (!lt.is_int()) {
    error(ast_.expr(e.args[1]).loc, fmt::format("buf(): the length must be an integer ({} provided)", lt.name()));
    return Type::none();
  }
  uint32_t cap = out_.config.max_strlen;
  if (auto n = constant(e.args[1])) {
    if (*n < 0) {
      error(e.loc, fmt::format("buf cannot use negative length ({})", *n));
      return Type::none();
    }
    cap = static_cast<uint32_t>(std::min<int64_t>(*n, cap));
  }
  if (t.is_bytes()) cap = std::min(cap, t.size * (t.kind == TypeKind::Array ? t.elems[0].size : 1));
  return Type::buffer(std::max<uint32_t>(cap, 1));
}

// signal(SIG): bpf_send_signal to the current task. A name ("KILL",
// "SIGKILL"), a literal number, or an integer expression.
Type Checker::signal_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  if (!unsafe_allowed(e)) return Type::none();
  for (const auto& p : *points_) {
    if (p.kind == ProbeKind::Begin || p.kind == ProbeKind::End) {
      error(e.loc, fmt::format("signal can not be used with \"{}\" probes", probe_type_name(p.kind)));
      return Type::none();
    }
  }
  const Expr& a = ast_.expr(e.args[0]);
  if (a.kind == ExprKind::String) {
    expr(e.args[0]);
    auto n = signal_number(a.sval);
    if (!n) {
      error(e.loc, fmt::format("{} is not a valid signal", a.sval));
      return Type::none();
    }
    out_.const_of[e.args[0]] = *n;
    return Type::none();
  }
  Type t = expr(e.args[0]);
  if (!t.is_int()) {
    error(e.loc, fmt::format("signal() only accepts a signal name or number ({} provided)", t.name()));
    return Type::none();
  }
  if (auto n = constant(e.args[0]); n && (*n < 1 || *n > 64)) {
    error(e.loc, fmt::format("{} is not a valid signal, allowed range: [1,64]", *n));
    return Type::none();
  }
  return Type::none();
}

// memcmp(a, b, n): the first n bytes of two strings or byte arrays; n a
// constant no larger than either.
Type Checker::memcmp_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  Type a = expr(e.args[0]), b = expr(e.args[1]);
  for (auto [arg, t] : {std::pair{e.args[0], a}, std::pair{e.args[1], b}}) {
    if (!t.is_bytes()) {
      error(ast_.expr(arg).loc, fmt::format("memcmp() expects strings or byte arrays ({} provided)",
                                            t.kind == TypeKind::None ? "none" : t.name()));
      return Type::none();
    }
  }
  auto n = constant(e.args[2]);
  if (!n || *n < 0) {
    error(ast_.expr(e.args[2]).loc, "memcmp(): the size must be a non-negative integer constant");
    return Type::none();
  }
  uint32_t limit = std::min(a.size, b.size);
  if (*n > limit) {
    error(ast_.expr(e.args[2]).loc,
          fmt::format("memcmp(): the size ({}) is larger than the arguments ({} bytes)", *n, limit));
    return Type::none();
  }
  return Type::integer(8, true);
}

// Why a --name=VALUE is not an integer, in bpftrace 0.26's words.
static std::string named_int_error(std::string_view v) {
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
static bool bool_word(std::string_view v, bool truth) {
  std::string lower(v);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (truth) return lower == "1" || lower == "true" || lower == "on" || lower == "yes";
  return lower == "0" || lower == "false" || lower == "off" || lower == "no";
}

// getopt("name"[, default[, "description"]]): the value of --name on the
// command line after `--`, typed by the default (bool when none). A bad value
// is the command line's fault, so its error is unlocated (as bpftrace's);
// the hint points at the getopt().
Type Checker::getopt_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& n = ast_.expr(e.args[0]);
  if (n.kind != ExprKind::String) {
    error(n.loc, fmt::format("getopt() expects a string literal name ({} provided)", provided(e.args[0])));
    return Type::none();
  }
  expr(e.args[0]);
  if (e.args.size() == 3) {
    if (ast_.expr(e.args[2]).kind != ExprKind::String) {
      error(ast_.expr(e.args[2]).loc, "getopt(): the description must be a string literal");
      return Type::none();
    }
    expr(e.args[2]);
  }
  enum class Kind { Bool, Int, String } kind = Kind::Bool;
  int64_t ival = 0;
  std::string sval;
  if (e.args.size() >= 2) {
    const Expr& d = ast_.expr(e.args[1]);
    std::string_view text = ast_.source.slice(d.loc);
    expr(e.args[1]);
    if (d.kind == ExprKind::String) {
      kind = Kind::String;
      sval = d.sval;
    } else if (auto c = constant(e.args[1])) {
      kind = text == "true" || text == "false" ? Kind::Bool : Kind::Int;
      ival = *c;
    } else {
      error(d.loc, "getopt(): the default must be a literal (bool, integer or string)");
      return Type::none();
    }
  }
  out_.getopt_names.insert(n.sval);
  if (auto it = out_.named_args.find(n.sval); it != out_.named_args.end()) {
    const auto& v = it->second;
    // Reports a bad value; the default stands in for it, so that nothing
    // after the getopt() fails for want of a type.
    auto bad_value = [&](std::string_view why) {
      std::string msg = fmt::format("program command line option --{} {} (value: {})", n.sval, why, v.value_or("true"));
      const bool said = std::any_of(diags_.all().begin(), diags_.all().end(),
                                    [&](const lang::Diagnostic& d) { return d.message == msg; });
      if (final_ && !said)
        diags_.error_unlocated(std::move(msg), {fmt::format("the program reads it with {} at {}", ast_.source.slice(e.loc),
                                                            lang::location(ast_.source, e.loc))});
    };
    switch (kind) {
      case Kind::Bool:
        if (!v || bool_word(*v, true)) ival = 1;
        else if (bool_word(*v, false)) ival = 0;
        else bad_value("expects a boolean (e.g. 'true')");
        break;
      case Kind::Int: {
        auto parsed = v ? parse_int_param(*v) : std::nullopt;
        if (parsed) ival = *parsed;
        else bad_value(v ? named_int_error(*v) : "expects an integer");
        break;
      }
      case Kind::String:
        if (v) sval = *v;
        else bad_value("expects a string");
        break;
    }
  }
  if (kind == Kind::String) {
    if (sval.size() + 1 > out_.config.max_strlen) {
      error(e.loc, fmt::format("getopt(): the value of --{} is longer than max_strlen ({})", n.sval,
                               out_.config.max_strlen));
      return Type::none();
    }
    out_.const_of[id] = static_cast<int64_t>(out_.const_strings.size());
    out_.const_strings.push_back(sval);
    return Type::string(static_cast<uint32_t>(sval.size() + 1));
  }
  out_.const_of[id] = ival;
  return kind == Kind::Bool ? Type::boolean() : Type::integer(8, true);
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
      if (out_.function_of[id] == Function::Getopt && out_.type_of(id).is_string() && out_.const_of[id])
        return out_.const_strings[static_cast<size_t>(*out_.const_of[id])];
      // str($1): the positional parameter's text.
      if (out_.function_of[id] == Function::Str && e.args.size() == 1 &&
          ast_.expr(e.args[0]).kind == ExprKind::Positional)
        return const_string(e.args[0]);
      return std::nullopt;
    default: return std::nullopt;
  }
}

// in_list(x, "80,443") (a bpfscope extension, for the tools' port and pid
// lists): true when the integer x is one of the comma-separated integers of
// a compile-time string (decimal or 0x hex, spaces around commas allowed;
// "" is the empty list). Lowered to one compare per element.
Type Checker::in_list_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Type x = expr(e.args[0]);
  if (x.kind == TypeKind::None && diags_.has_errors()) return Type::none();
  if (!x.is_int()) {
    error(ast_.expr(e.args[0]).loc, fmt::format("in_list() expects an integer to look for ({} provided)",
                                                x.kind == TypeKind::None ? "none" : x.name()));
    return Type::none();
  }
  expr(e.args[1]);
  const lang::Loc list_loc = ast_.expr(e.args[1]).loc;
  const std::optional<std::string> list = const_string(e.args[1]);
  if (!list) {
    error(list_loc, "in_list(): the list must be a string known when compiling: a literal (\"80,443\"), "
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
        error(list_loc, fmt::format("in_list(): \"{}\" is not a list of integers: \"{}\"", *list, item));
        return Type::none();
      }
      values.push_back(*v);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  out_.in_list_of[id] = std::move(values);
  return Type::boolean();
}

// A probe kind as bpftrace's messages name it ("BEGIN", "tracepoint").
std::string Checker::probe_type_name(ProbeKind k) {
  if (k == ProbeKind::Begin) return "BEGIN";
  if (k == ProbeKind::End) return "END";
  return probe_kind_name(k);
}

// reg("sp"): a register of the probed context (struct pt_regs), in probes
// whose context is one: kprobes, uprobes and USDT.
Type Checker::reg_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& a = ast_.expr(e.args[0]);
  if (a.kind != ExprKind::String) {
    error(e.loc, fmt::format("reg() expects a string literal ({} provided)", provided(e.args[0])));
    return Type::none();
  }
  expr(e.args[0]);
  for (const auto& p : *points_) {
    bool regs = p.kind == ProbeKind::Kprobe || p.kind == ProbeKind::Kretprobe || p.kind == ProbeKind::Uprobe ||
                p.kind == ProbeKind::Uretprobe || p.kind == ProbeKind::Usdt;
    if (!regs) {
      error(e.loc, fmt::format("reg can not be used with \"{}\" probes", probe_type_name(p.kind)));
      return Type::none();
    }
  }
  auto off = pt_regs_offset(a.sval);
  if (!off) {
    error(e.loc, fmt::format("'{}' is not a valid register", a.sval));
    return Type::none();
  }
  out_.const_of[e.args[0]] = *off;
  return Type::integer(8, false);
}

// len(@map): the map's entry count; len(ustack) / len(kstack): the frames
// of the current stack.
Type Checker::len_call(ExprId id) {
  const Expr& e = ast_.expr(id);
  const Expr& a = ast_.expr(e.args[0]);
  if (a.kind == ExprKind::Map && a.args.empty()) {
    MapInfo* m = whole_map(e.args[0]);
    if (!m) return Type::none();
    if (!m->keyed) {
      error(e.loc, fmt::format("call to len() expects a map with explicit keys (non-scalar map): {} has none", m->name));
      return Type::none();
    }
    if (!out_.btf->find_func("bpf_map_sum_elem_count")) {
      error(e.loc, "len(@map) needs the bpf_map_sum_elem_count kfunc (Linux 6.6+), which this kernel's BTF lacks");
      return Type::none();
    }
    return Type::integer(8, true);
  }
  Type t = expr(e.args[0]);
  if (t.kind != TypeKind::Stack) {
    error(e.loc, fmt::format("len() expects a map or a stack ({} provided)", t.kind == TypeKind::None ? "none" : t.name()));
    return Type::none();
  }
  return Type::integer(8, true);
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
  std::vector<std::string> names;
  if (!e.field_names.empty()) {
    if (!e.field_names[0].empty()) {
      error(ast_.expr(e.args[0]).loc, "printf: the format cannot be named");
      return Type::none();
    }
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
  out_.action_of[id] = act;
  return Type::none();
}

}  // namespace bpfscope::sema::detail
