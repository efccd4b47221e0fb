// The type checker: walks each probe body, resolves names, fixes map and
// variable types, and builds the action table.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <charconv>
#include <cstring>
#include <ranges>
#include <map>

#include "sema/builtins.h"
#include "symbols/symbols.h"
#include "sema/cdefs.h"
#include "sema/map_decls.h"
#include "sema/probes.h"
#include "sema/sema.h"

namespace bpfscope::sema {
namespace {

using lang::Expr;
using lang::ExprId;
using lang::ExprKind;
using lang::kNone;
using lang::Op;
using lang::Stmt;
using lang::StmtId;
using lang::StmtKind;

const char* agg_name(output::AggKind k) {
  switch (k) {
    case output::AggKind::Plain: return "value";
    case output::AggKind::Count: return "count";
    case output::AggKind::Sum: return "sum";
    case output::AggKind::Min: return "min";
    case output::AggKind::Max: return "max";
    case output::AggKind::Avg: return "avg";
    case output::AggKind::Stats: return "stats";
    case output::AggKind::Hist: return "hist";
    case output::AggKind::LHist: return "lhist";
  }
  std::unreachable();
}

output::AggKind agg_of(Function f) {
  switch (f) {
    case Function::Count: return output::AggKind::Count;
    case Function::Sum: return output::AggKind::Sum;
    case Function::Avg: return output::AggKind::Avg;
    case Function::Min: return output::AggKind::Min;
    case Function::Max: return output::AggKind::Max;
    case Function::Stats: return output::AggKind::Stats;
    case Function::Hist: return output::AggKind::Hist;
    case Function::LHist: return output::AggKind::LHist;
    default: return output::AggKind::Plain;
  }
}

std::optional<int64_t> parse_int_param(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool neg = s[0] == '-';
  std::string_view digits = neg ? s.substr(1) : s;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits = digits.substr(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

// The type of a tracepoint field as bpfscope sees it.
Type field_type(const bpf::TracepointField& f, std::string_view category, uint32_t max_strlen) {
  if (f.data_loc) return Type::string(max_strlen);
  bool is_char = f.type.rfind("char", 0) == 0 || f.type.find(" char") != std::string::npos;
  // char[N] is a string; other byte arrays (__u8 saddr[4], daddr_v6[16])
  // are kept as N raw bytes too, for ntop() and comparisons.
  bool byte_elems = f.array_len > 0 && f.size == f.array_len;
  if (f.array_len > 0 && (is_char || byte_elems)) return Type::string(f.array_len);
  // Syscall formats store every argument in 8 bytes and say signed:0; the C
  // type name gives the real width and signedness (an `int dfd` of -100).
  struct CType {
    std::string_view name;
    uint32_t size;
    bool is_signed;
  };
  constexpr CType kCTypes[] = {
      {"int", 4, true},          {"unsigned int", 4, false}, {"long", 8, true},          {"unsigned long", 8, false},
      {"short", 2, true},        {"unsigned short", 2, false}, {"s8", 1, true},          {"u8", 1, false},
      {"s16", 2, true},          {"u16", 2, false},           {"s32", 4, true},          {"u32", 4, false},
      {"s64", 8, true},          {"u64", 8, false},           {"pid_t", 4, true},        {"uid_t", 4, false},
      {"gid_t", 4, false},       {"size_t", 8, false},        {"ssize_t", 8, true},      {"off_t", 8, true},
      {"loff_t", 8, true},       {"clockid_t", 4, true},      {"key_serial_t", 4, true}, {"umode_t", 2, false},
      {"__s32", 4, true},        {"__u32", 4, false},         {"__s64", 8, true},        {"__u64", 8, false},
      {"bool", 1, false},        {"timer_t", 4, true},        {"qid_t", 4, false},       {"rwf_t", 4, true},
  };
  auto c_type = [&](std::string_view name) -> const CType* {
    for (const auto& c : kCTypes)
      if (c.name == name) return &c;
    return nullptr;
  };
  // Pointers: "const char *const *" is a pointer to a pointer to int8.
  if (size_t star = f.type.find('*'); star != std::string::npos) {
    std::string base;
    for (std::string_view word : std::views::split(std::string_view(f.type).substr(0, star), ' ') |
                                     std::views::transform([](auto r) { return std::string_view(r.begin(), r.end()); }))
      if (!word.empty() && word != "const" && word != "volatile") base += (base.empty() ? "" : " ") + std::string(word);
    Type t = Type::none();
    if (base == "char" || base == "signed char") t = Type::integer(1, true);
    else if (base == "unsigned char") t = Type::integer(1, false);
    else if (const CType* c = c_type(base)) t = Type::integer(c->size, c->is_signed);
    AddrSpace space = category == "syscalls" ? AddrSpace::User : AddrSpace::Kernel;
    for (char ch : std::string_view(f.type).substr(star))
      if (ch == '*') t = Type::pointer(std::move(t), space);
    return t;
  }
  std::string_view type = f.type;
  if (type.rfind("const ", 0) == 0) type.remove_prefix(6);
  uint32_t size = f.size == 1 || f.size == 2 || f.size == 4 ? f.size : 8;
  bool is_signed = f.is_signed;
  if (const CType* c = c_type(type); c && c->size <= f.size) {
    size = c->size;
    is_signed = c->is_signed;
  }
  return Type::integer(size, is_signed);
}

// Constants from C headers that kernel BTF does not carry (they are
// #defines there). Scripts use them without #include; a #define wins.
struct NamedConstant {
  std::string_view name;
  int64_t value;
};
constexpr NamedConstant kKnownConstants[] = {
    {"AF_UNSPEC", 0},     {"AF_UNIX", 1},         {"AF_LOCAL", 1},      {"AF_INET", 2},
    {"AF_INET6", 10},     {"AF_NETLINK", 16},     {"AF_PACKET", 17},    {"SOCK_STREAM", 1},
    {"SOCK_DGRAM", 2},    {"SOCK_RAW", 3},        {"SOCK_SEQPACKET", 5}, {"ETH_P_IP", 0x0800},
    {"ETH_P_ARP", 0x0806}, {"ETH_P_IPV6", 0x86DD}, {"ETH_P_8021Q", 0x8100}, {"ICMP_ECHOREPLY", 0},
    {"ICMP_DEST_UNREACH", 3}, {"ICMP_ECHO", 8},   {"ICMP_TIME_EXCEEDED", 11}, {"ICMPV6_ECHO_REQUEST", 128},
    {"ICMPV6_ECHO_REPLY", 129}, {"TCPHDR_FIN", 0x01}, {"TCPHDR_SYN", 0x02}, {"TCPHDR_RST", 0x04},
    {"TCPHDR_PSH", 0x08}, {"TCPHDR_ACK", 0x10},   {"TCPHDR_URG", 0x20}, {"TCPHDR_ECE", 0x40},
    {"TCPHDR_CWR", 0x80}, {"INET_ECN_MASK", 3},   {"INET_ECN_CE", 3},   {"O_RDONLY", 0},
    {"O_WRONLY", 1},      {"O_RDWR", 2},          {"O_CREAT", 0100},    {"O_TRUNC", 01000},
    {"O_APPEND", 02000},  {"O_EXCL", 0200},       {"O_NONBLOCK", 04000}, {"O_DIRECTORY", 0200000},
    {"O_CLOEXEC", 02000000}, {"TASK_RUNNING", 0}, {"TASK_INTERRUPTIBLE", 1}, {"TASK_UNINTERRUPTIBLE", 2},
    {"__TASK_STOPPED", 4}, {"__TASK_TRACED", 8},  {"EXIT_DEAD", 16},    {"EXIT_ZOMBIE", 32},
    {"TASK_PARKED", 0x40}, {"TASK_DEAD", 0x80},   {"TASK_WAKEKILL", 0x100}, {"TASK_WAKING", 0x200},
    {"TASK_NOLOAD", 0x400}, {"TASK_NEW", 0x800},  {"IFNAMSIZ", 16},     {"TASK_COMM_LEN", 16},
    {"MSG_PEEK", 2},      {"MSG_DONTWAIT", 0x40}, {"MSG_WAITALL", 0x100}, {"MSG_NOSIGNAL", 0x4000},
    {"EWOULDBLOCK", 11},  {"EDEADLOCK", 35},     {"ENOTSUP", 95},      {"ERESTARTSYS", 512}, {"ERESTARTNOINTR", 513}, {"ERESTARTNOHAND", 514}, {"ENOIOCTLCMD", 515},
};

// join(): at most this many elements, each of at most kJoinElemMax bytes
// (and max_strlen).
constexpr uint32_t kJoinMax = 16;
constexpr uint32_t kJoinElemMax = 1024;

std::optional<int64_t> known_constant(std::string_view name) {
  for (const auto& c : kKnownConstants)
    if (c.name == name) return c.value;
  // errno names and signal names, as the C library spells them.
  if (name.starts_with("E"))
    for (int i = 1; i < 256; ++i)
      if (const char* n = strerrorname_np(i); n && name == n) return i;
  if (name.starts_with("SIG"))
    for (int i = 1; i < 32; ++i)
      if (const char* n = sigabbrev_np(i); n && name.substr(3) == n) return i;
  return std::nullopt;
}

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

class Checker {
 public:
  Checker(const lang::Program& ast, TypedProgram& out, lang::Diagnostics& diags, bool final,
          std::vector<Type> first_pass_vars)
      : ast_(ast), out_(out), diags_(diags), final_(final), first_pass_vars_(std::move(first_pass_vars)) {}

  // Checks one probe body against the kinds and targets of its attach points.
  void check_probe(uint32_t probe_index, const std::vector<ResolvedAttachPoint>& points) {
    points_ = &points;
    probe_index_ = probe_index;
    target_specific_ = false;
    scopes_.clear();
    scopes_.emplace_back();
    const auto& probe = ast_.probes[probe_index];
    if (probe.predicate != kNone) {
      Type t = expr(probe.predicate);
      if (!t.is_int()) error(ast_.expr(probe.predicate).loc, "Invalid type for predicate: " + t.name());
    }
    block(probe.body);
  }

  bool target_specific() const { return target_specific_; }

 private:
  // uaddr("sym"): the run-time address of a symbol in each probed binary, a
  // pointer to an integer of the symbol's size (1, 2, 4, else 8 bytes).
  Type uaddr_call(ExprId id) {
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

  void error(lang::Loc loc, std::string msg) {
    if (final_) diags_.error(loc, std::move(msg));
  }

  Type& set(ExprId id, Type t) { return out_.expr_types[id] = std::move(t); }

  // A condition must be an integer; one without a type after an error was
  // already reported (a bad comparison) needs no second error.
  bool valid_condition(const Type& c) const { return c.is_int() || (c.kind == TypeKind::None && diags_.has_errors()); }

  void block(const std::vector<StmtId>& body) {
    scopes_.emplace_back();
    for (StmtId s : body) stmt(s);
    scopes_.pop_back();
  }

  int32_t find_var(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return -1;
  }

  int32_t declare_var(const std::string& name, const Type& t) {
    int32_t idx = static_cast<int32_t>(out_.var_types.size());
    // The final pass starts a string or tuple variable at the widest type the
    // first pass saw, so reads before a wider assignment use the final layout.
    Type widest;
    if ((t.is_string() || t.is_tuple()) && static_cast<size_t>(idx) < first_pass_vars_.size() &&
        unify(first_pass_vars_[idx], t, widest) && widest.kind == t.kind) {
      out_.var_types.push_back(widest);
    } else {
      out_.var_types.push_back(t);
    }
    scopes_.back()[name] = idx;
    return idx;
  }

  bool in_loop() const { return loop_depth_ > 0; }

  // A macro's own variables are named $$MACRO:N:VAR by the expansion (lang/macros.cpp).
  static std::string undefined_var_message(const std::string& name) {
    const size_t a = name.find(':'), b = name.rfind(':');
    if (name.starts_with("$$") && a != std::string::npos && b > a)
      return fmt::format("Undefined or undeclared variable: ${} in macro '{}' (a macro sees only the variables "
                         "passed to it)",
                         name.substr(b + 1), name.substr(2, a - 2));
    return fmt::format("Undefined or undeclared variable: {}", name);
  }

  void stmt(StmtId id) {
    const Stmt& s = ast_.stmt(id);
    switch (s.kind) {
      case StmtKind::Expr: {
        const Expr& e = ast_.expr(s.expr);
        if (e.kind == ExprKind::Call) {
          if (const auto* row = find_function(e.name); row && is_aggregation(row->id)) {
            error(e.loc, fmt::format("{}() should be assigned to a map", e.name));
            return;
          }
        }
        expr(s.expr);
        return;
      }
      case StmtKind::Assign: assign(s); return;
      case StmtKind::Let: let(s); return;
      case StmtKind::If: {
        Type c = expr(s.expr);
        if (!valid_condition(c)) error(ast_.expr(s.expr).loc, "Invalid condition in if(): " + c.name());
        block(s.body);
        block(s.else_body);
        return;
      }
      case StmtKind::Block: block(s.body); return;
      case StmtKind::Return: return;
      case StmtKind::While: {
        Type c = expr(s.expr);
        if (!valid_condition(c)) error(ast_.expr(s.expr).loc, "Invalid condition in while(): " + c.name());
        ++loop_depth_;
        block(s.body);
        --loop_depth_;
        return;
      }
      case StmtKind::Unroll: {
        auto n = constant(s.expr);
        if (!n || *n < 1 || *n > 100) {
          error(ast_.expr(s.expr).loc, "unroll() takes a constant from 1 to 100");
          return;
        }
        block(s.body);
        return;
      }
      case StmtKind::For: {
        if (s.range_end == kNone) {
          for_map(s);
          return;
        }
        Type a = expr(s.expr), b = expr(s.range_end);
        if (!a.is_int() || !b.is_int()) {
          error(s.loc, "for ($i : a..b) needs integer bounds");
          return;
        }
        for (auto& scope : scopes_) {
          if (scope.count(s.iter_var)) {
            error(s.loc, fmt::format("Variable shadowing is not allowed: {}", s.iter_var));
            return;
          }
        }
        // The loop variable lives in the body's scope.
        scopes_.emplace_back();
        out_.for_var_of[s.expr] = declare_var(s.iter_var, Type::integer(8, true));
        ++loop_depth_;
        block(s.body);
        --loop_depth_;
        scopes_.pop_back();
        return;
      }
      case StmtKind::Break:
      case StmtKind::Continue:
        if (!in_loop()) error(s.loc, "break and continue are only valid in a loop");
        return;
    }
  }

  // for ($kv : @m): $kv is (key, value), the key a tuple for multi-key maps.
  // The body becomes a bpf_for_each_map_elem callback (see lower.cpp).
  void for_map(const Stmt& s) {
    const Expr& e = ast_.expr(s.expr);
    if (e.kind != ExprKind::Map || !e.args.empty()) {
      if (e.kind != ExprKind::Map) expr(s.expr);
      error(e.loc, "Loop expression must be a map (for ($kv : @m)) or a range (for ($i : a..b))");
      return;
    }
    for (auto& scope : scopes_) {
      if (scope.count(s.iter_var)) {
        error(s.loc, fmt::format("Variable shadowing is not allowed: {}", s.iter_var));
        return;
      }
    }
    MapInfo* m = whole_map(s.expr);
    if (!m) return;
    if (!m->keyed) {
      error(e.loc, fmt::format("Maps used as for-loop expressions must have keys to iterate over: {}", e.name));
      return;
    }
    Type value = m->value.kind == TypeKind::None ? Type::integer(8, true) : m->value;
    switch (m->agg) {
      case output::AggKind::Plain: break;
      // Read as in a probe: the sum (or min, max, average) over the CPUs.
      case output::AggKind::Count: value = Type::integer(8, false); break;
      case output::AggKind::Sum:
      case output::AggKind::Min:
      case output::AggKind::Max:
      case output::AggKind::Avg: value = Type::integer(8, m->value.is_signed); break;
      case output::AggKind::Stats:
      case output::AggKind::Hist:
      case output::AggKind::LHist:
        error(e.loc, fmt::format("Loop expression does not support type: {} ({} has no single value per key)",
                                 agg_name(m->agg), e.name));
        return;
    }
    set(s.expr, value);
    scopes_.emplace_back();
    out_.for_var_of[s.expr] = declare_var(s.iter_var, Type::tuple({m->key, value}));
    ++loop_depth_;
    block(s.body);
    --loop_depth_;
    scopes_.pop_back();
  }

  void let(const Stmt& s) {
    const Expr& target = ast_.expr(s.target);
    for (auto& scope : scopes_) {
      if (scope.count(target.name)) {
        error(target.loc, fmt::format("Variable shadowing is not allowed: {}", target.name));
        return;
      }
    }
    // `let $x;` takes its type from the first assignment; `let $x: T`
    // fixes it (integers narrower than 64 bits are truncated on store).
    Type t = Type::none();
    if (!s.type_name.empty()) {
      auto declared = let_type(s.type_name, s.loc);
      if (!declared) return;
      t = *declared;
    }
    if (s.value != kNone) {
      Type vt = expr(s.value);
      Type u;
      if (vt.kind == TypeKind::None) {
        error(ast_.expr(s.value).loc, "expression has no value to assign");
      } else if (s.type_name.empty()) {
        t = vt;
      } else if (!unify(t, vt, u) || (t.is_string() && vt.size > t.size)) {
        error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when variable is "
                                 "declared as '{}'",
                                 target.name, vt.name(), t.name()));
      }
    }
    if (t.is_record()) {
      error(s.loc, "a struct cannot be stored yet; store one of its fields, or a pointer to it");
      return;
    }
    out_.var_of[s.target] = declare_var(target.name, t);
    set(s.target, out_.var_types[out_.var_of[s.target]]);
  }

  // A type in `let $x: T`: integers, bool, pointers, string or string[N].
  std::optional<Type> let_type(std::string_view name, lang::Loc loc) {
    if (name == "string") return Type::string(out_.config.max_strlen);
    if (name.starts_with("string[") && name.ends_with("]")) {
      uint32_t n = 0;
      auto digits = name.substr(7, name.size() - 8);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec != std::errc() || p != digits.data() + digits.size() || n == 0) {
        error(loc, fmt::format("invalid string size in {}", name));
        return std::nullopt;
      }
      return Type::string(n);
    }
    return type_of_name(name, loc);
  }

  void assign(const Stmt& s) {
    const Expr& target = ast_.expr(s.target);
    const Expr& value = ast_.expr(s.value);
    if (target.kind == ExprKind::Map && value.kind == ExprKind::Call && s.op == Op::None) {
      if (const auto* row = find_function(value.name); row && is_aggregation(row->id)) {
        aggregate(s.target, s.value, row->id);
        return;
      }
    }
    Type vt = expr(s.value);
    if (vt.kind == TypeKind::None) {
      if (!diags_.has_errors()) error(value.loc, "expression has no value to assign");
      // Declared all the same, so later uses do not repeat the error.
      if (target.kind == ExprKind::Variable && find_var(target.name) < 0)
        out_.var_of[s.target] = declare_var(target.name, Type::none());
      return;
    }
    if (vt.is_record()) {
      error(value.loc, "a struct cannot be stored yet; store one of its fields, or a pointer to it");
      return;
    }
    if (s.op != Op::None && !vt.is_int()) {
      error(value.loc, fmt::format("compound assignment needs an integer, not {}", vt.name()));
      return;
    }
    if (target.kind == ExprKind::Variable) {
      int32_t var = find_var(target.name);
      if (var < 0) {
        if (s.op != Op::None) {
          error(target.loc, fmt::format("Undefined or undeclared variable: {}", target.name));
          return;
        }
        var = declare_var(target.name, vt.kind == TypeKind::Bool ? Type::boolean() : vt);
      } else if (out_.var_types[var].kind == TypeKind::None) {
        out_.var_types[var] = vt.kind == TypeKind::Bool ? Type::boolean() : vt;  // `let $x;`
      } else {
        Type u;
        if (!unify(out_.var_types[var], vt, u)) {
          error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when variable "
                                   "already contains a value of type '{}'",
                                   target.name, vt.name(), out_.var_types[var].name()));
          return;
        }
        // Strings, and tuples holding strings, widen to the longest value
        // assigned (integers keep their first type).
        if (out_.var_types[var].is_string() || out_.var_types[var].is_tuple()) out_.var_types[var] = u;
      }
      out_.var_of[s.target] = var;
      set(s.target, out_.var_types[var]);
      return;
    }
    if (target.kind == ExprKind::Map) {
      MapInfo* m = map_for(s.target, /*create=*/true);
      if (!m) return;
      if (m->agg != output::AggKind::Plain) {
        error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                                 "contains a value of type '{}'",
                                 m->name, vt.name(), agg_name(m->agg)));
        return;
      }
      if (m->value.kind == TypeKind::None) {
        m->value = vt.is_int() ? Type::integer(8, vt.is_signed || vt.kind == TypeKind::Bool) : vt;
        if (vt.kind == TypeKind::Bool || vt.is_pointer) m->value = vt;  // a pointer keeps what it points to
      } else {
        Type u;
        if (!unify(m->value, vt, u)) {
          error(s.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                                   "contains a value of type '{}'",
                                   m->name, vt.name(), m->value.name()));
          return;
        }
        if (!(m->value.kind == TypeKind::Bool && vt.kind == TypeKind::Bool)) m->value = u;
      }
      set(s.target, m->value);
      return;
    }
    error(target.loc, "can only assign to variables and maps");
  }

  void aggregate(ExprId target_id, ExprId call_id, Function f) {
    const Expr& call = ast_.expr(call_id);
    out_.function_of[call_id] = f;
    const auto& row = function_row(f);
    if (!arg_count_ok(call, row)) return;
    Type arg = Type::integer(8, false);
    if (!call.args.empty()) {
      arg = expr(call.args[0]);
      if (!arg.is_int()) {
        error(ast_.expr(call.args[0]).loc, fmt::format("{}() expects an integer ({} provided)", call.name, arg.name()));
        return;
      }
    }
    output::HistParams hist;
    if (f == Function::Hist && call.args.size() == 2) {
      auto k = constant(call.args[1]);
      if (!k || *k < 0 || *k > 5) {
        error(ast_.expr(call.args[1]).loc, "hist: bits must be a constant between 0 and 5");
        return;
      }
      hist.bits = static_cast<int>(*k);
    }
    if (f == Function::LHist) {
      auto mn = constant(call.args[1]), mx = constant(call.args[2]), st = constant(call.args[3]);
      if (!mn || !mx || !st || *mn < 0 || *mx < 0) {
        error(call.loc, "lhist: min, max and step must be non-negative integer literals");
        return;
      }
      if (*mn >= *mx) {
        error(call.loc, "lhist: min must be less than max");
        return;
      }
      if (*st < 1 || *st > *mx - *mn) {
        error(call.loc, "lhist: step must be between 1 and max - min");
        return;
      }
      if ((*mx - *mn) / *st > 1000) {
        error(call.loc, "lhist: too many buckets (at most 1000)");
        return;
      }
      hist.min = *mn;
      hist.max = *mx;
      hist.step = *st;
    }
    MapInfo* m = map_for(target_id, /*create=*/true);
    if (!m) return;
    output::AggKind kind = agg_of(f);
    bool fresh = m->value.kind == TypeKind::None && m->agg == output::AggKind::Plain;
    if (!fresh && m->agg != kind) {
      error(call.loc, fmt::format("Type mismatch for {}: trying to assign value of type '{}' when map already "
                                  "contains a value of type '{}'",
                                  m->name, agg_name(kind), m->value.kind == TypeKind::None ? "none" : agg_name(m->agg)));
      return;
    }
    if (!fresh && (kind == output::AggKind::Hist || kind == output::AggKind::LHist) &&
        (m->hist.bits != hist.bits || m->hist.min != hist.min || m->hist.max != hist.max || m->hist.step != hist.step)) {
      error(call.loc, fmt::format("{}: the same map must use the same {}() parameters everywhere", m->name, call.name));
      return;
    }
    m->agg = kind;
    m->hist = hist;
    Type u;
    if (fresh) {
      m->value = Type::integer(8, arg.is_signed);
    } else if (unify(m->value, arg, u)) {
      m->value = Type::integer(8, m->value.is_signed || arg.is_signed);
    }
    set(target_id, Type::none());
  }

  // A compile-time integer constant: literals, negated literals, numeric positionals.
  std::optional<int64_t> constant(ExprId id) {
    const Expr& e = ast_.expr(id);
    expr(id);
    if (e.kind == ExprKind::Integer) return static_cast<int64_t>(e.ival);
    if (e.kind == ExprKind::Unary && e.op == Op::Neg) {
      auto v = constant(e.args[0]);
      if (v) return -*v;
    }
    if (e.kind == ExprKind::Positional) {
      if (e.ival == 0 || e.ival > out_.positional.size()) return 0;
      return parse_int_param(out_.positional[e.ival - 1]);
    }
    return std::nullopt;
  }

  // Finds (or, when assigning, creates) the map named by a Map expression and
  // checks its key.
  MapInfo* map_for(ExprId id, bool create) {
    const Expr& e = ast_.expr(id);
    Type key;
    if (e.args.size() == 1) {
      key = expr(e.args[0]);
    } else if (e.args.size() > 1) {
      std::vector<Type> elems;
      for (ExprId k : e.args) elems.push_back(expr(k));
      key = Type::tuple(std::move(elems));
    }
    if (key.kind == TypeKind::Tuple) {
      // Bools stay bools (printed true/false), pointers stay pointers (printed
      // in hex), other integers widen.
      for (auto& el : key.elems)
        if (el.kind == TypeKind::Int && !el.is_pointer) el = Type::integer(8, el.is_signed);
      key = Type::tuple(key.elems, key.names);
    } else if (key.kind == TypeKind::Int && !key.is_pointer) {
      key = Type::integer(8, key.is_signed);
    }
    if (!e.args.empty() && key.kind == TypeKind::None) {
      error(e.loc, "invalid map key");
      return nullptr;
    }
    auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == e.name; });
    if (it == out_.maps.end()) {
      if (!create) return nullptr;
      MapInfo m;
      m.name = e.name;
      m.keyed = !e.args.empty();
      m.key = key;
      m.first_use = e.loc;
      out_.maps.push_back(std::move(m));
      it = out_.maps.end() - 1;
    } else {
      if (it->keyed != !e.args.empty()) {
        error(e.loc, it->keyed ? fmt::format("{} used as a map without an explicit key (scalar map), previously used "
                                             "with an explicit key (non-scalar map)",
                                             e.name)
                               : fmt::format("{} used as a map with an explicit key (non-scalar map), previously used "
                                             "without an explicit key (scalar map)",
                                             e.name));
        return nullptr;
      }
      Type u;
      if (it->keyed && !unify(it->key, key, u)) {
        error(e.loc, fmt::format("Argument mismatch for {}: trying to access with arguments: '{}' when map expects "
                                 "arguments: '{}'",
                                 e.name, key.name(), it->key.name()));
        return nullptr;
      }
      if (it->keyed) it->key = u;
    }
    out_.map_of[id] = static_cast<int32_t>(it - out_.maps.begin());
    return &*it;
  }

  // A map used as a whole (print/clear/zero argument).
  MapInfo* whole_map(ExprId id) {
    const Expr& e = ast_.expr(id);
    auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == e.name; });
    if (it == out_.maps.end()) {
      if (final_) error(e.loc, fmt::format("Undefined map: {}", e.name));
      return nullptr;
    }
    out_.map_of[id] = static_cast<int32_t>(it - out_.maps.begin());
    set(id, Type::none());
    return &*it;
  }

  int32_t add_action(ActionKind kind, lang::Loc loc, std::vector<Type> args = {}) {
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

  const bpf::TracepointField* find_field(const bpf::TracepointFormat& f, std::string_view name) {
    for (const auto& field : f.fields)
      if (field.name == name) return &field;
    return nullptr;
  }

  Type args_field(const Expr& e) {
    target_specific_ = true;
    std::optional<Type> result;
    for (const auto& point : *points_) {
      if (point.kind == ProbeKind::RawTracepoint || point.kind == ProbeKind::Fentry ||
          point.kind == ProbeKind::Fexit) {
        // Typed from the kernel's BTF prototype of the event or function.
        for (const auto& t : point.targets) {
          auto params = btf_args(*out_.btf, point.kind, t);
          const bpf::BtfParam* param = nullptr;
          if (params)
            for (const auto& p : *params)
              if (p.name == e.name) param = &p;
          if (!param) {
            if (point.kind == ProbeKind::RawTracepoint)
              error(e.loc, fmt::format("Can't find argument '{}' of raw tracepoint {} in the kernel's BTF", e.name,
                                       t.format.event));
            else
              error(e.loc, fmt::format("Can't find argument '{}' of function {} in the kernel's BTF", e.name, t.func));
            return Type::none();
          }
          auto ft = btf_value_type(param->type_id);
          if (!ft || ft->is_string() || ft->is_record()) {
            error(e.loc, fmt::format("argument '{}' has a type bpfscope cannot read yet: {}", e.name,
                                     out_.btf->type_name(param->type_id)));
            return Type::none();
          }
          Type u;
          if (!result)
            result = *ft;
          else if (!unify(*result, *ft, u)) {
            error(e.loc, fmt::format("argument '{}' has different types in the attach points of this probe", e.name));
            return Type::none();
          }
        }
        continue;
      }
      if (point.kind != ProbeKind::Tracepoint) {
        error(e.loc, "The args builtin can only be used with tracepoint, rawtracepoint and fentry/fexit probes");
        return Type::none();
      }
      for (const auto& t : point.targets) {
        const auto* field = find_field(t.format, e.name);
        if (!field) {
          error(e.loc, fmt::format("Can't find field '{}' in tracepoint {}:{}", e.name, t.format.category,
                                   t.format.event));
          return Type::none();
        }
        Type ft = field_type(*field, t.format.category, out_.config.max_strlen);
        struct_pointee(*field, ft);
        if (!result) {
          result = ft;
        } else {
          Type u;
          if (!unify(*result, ft, u)) {
            error(e.loc, fmt::format("field '{}' has different types in the attach points of this probe", e.name));
            return Type::none();
          }
          if (!(*result == ft)) result = u;
        }
      }
    }
    return result.value_or(Type::none());
  }

  // A map named without a key and its key given apart (delete(@m, k),
  // has_key(@m, k)): checks the key against the map's key type.
  bool map_and_key(ExprId map_id, ExprId key_id) {
    const Expr& a = ast_.expr(map_id);
    auto it = std::find_if(out_.maps.begin(), out_.maps.end(), [&](const MapInfo& m) { return m.name == a.name; });
    if (it == out_.maps.end()) {
      error(a.loc, fmt::format("Undefined map: {}", a.name));
      return false;
    }
    Type kt = expr(key_id);
    Type u;
    if (!it->keyed || !unify(it->key, kt.is_int() ? Type::integer(8, kt.is_signed) : kt, u)) {
      error(ast_.expr(key_id).loc,
            fmt::format("Argument mismatch for {}: trying to access with arguments: '{}' when map expects "
                        "arguments: '{}'",
                        a.name, kt.name(), it->keyed ? it->key.name() : "none"));
      return false;
    }
    out_.map_of[map_id] = static_cast<int32_t>(it - out_.maps.begin());
    set(map_id, Type::none());
    return true;
  }

  bool arg_count_ok(const Expr& e, const FunctionRow& row) {
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

  // A tracepoint field `struct sockaddr *uservaddr` points to the BTF struct.
  void struct_pointee(const bpf::TracepointField& f, Type& t) {
    if (!t.is_pointer || t.pointee()) return;
    std::string_view type = f.type;
    if (type.starts_with("const ")) type.remove_prefix(6);
    if (!type.starts_with("struct ") || std::count(type.begin(), type.end(), '*') != 1) return;
    std::string_view name = type.substr(0, type.find('*'));
    while (name.ends_with(' ')) name.remove_suffix(1);
    auto sid = out_.btf->find_struct(name);
    if (!sid) return;
    AddrSpace space = t.addr_space;
    t = Type::pointer(record(*sid), space);
  }

  // What `*p` and `p[i]` read: the pointee of a pointer.
  Type element_of(const Type& p, lang::Loc loc) {
    if (p.kind == TypeKind::None) return Type::none();
    // An integer used as an address reads an integer of its own size, as
    // bpftrace does (`*kaddr("sym")`).
    if (p.kind == TypeKind::Int && !p.is_pointer) return Type::integer(p.size, p.is_signed);
    if (!p.is_pointer) {
      error(loc, fmt::format("Can only dereference pointers, not {}", p.name()));
      return Type::none();
    }
    const Type* elem = p.pointee();
    if (!elem) {
      error(loc, fmt::format("Can not dereference a pointer to an unknown type ({}): cast it first, e.g. "
                             "*(uint64 *)p",
                             p.name()));
      return Type::none();
    }
    Type t = *elem;
    // The element lives where the pointer points.
    t.addr_space = p.addr_space;
    retarget(t, p.addr_space);
    return t;
  }

  // `&s->f`: the address of a struct member, without reading it.
  Type address_of(const Expr& e) {
    const Expr& target = ast_.expr(e.args[0]);
    const Type& t = out_.expr_types[e.args[0]];
    bool member = false;
    if (target.kind == ExprKind::Field && out_.builtin_of[target.args[0]] != Builtin::Args) {
      const Type& base = out_.expr_types[target.args[0]];
      member = base.is_record() || (base.is_pointer && base.btf_id != 0);
    }
    if (!member || t.kind == TypeKind::None) {
      if (t.kind != TypeKind::None)
        error(e.loc, "& takes the address of a kernel struct member only, as in &$sk->sk_receive_queue");
      return Type::none();
    }
    if (out_.field_of[e.args[0]].bits) {
      error(e.loc, "cannot take the address of a bitfield");
      return Type::none();
    }
    Type elem = t.is_string() ? Type::integer(1, true) : t;
    return Type::pointer(std::move(elem), AddrSpace::Kernel);
  }

  // `struct NAME *` as a type.
  Type pointer_to(std::string_view name, lang::Loc loc) {
    auto sid = out_.btf->find_struct(name);
    if (!sid) {
      if (auto err = out_.btf->load(); !err)
        error(loc, fmt::format("Cannot resolve struct {}: kernel BTF is unavailable ({})", name, err.error().message));
      else
        error(loc, fmt::format("Cannot resolve unknown type \"{}{}\"",
                               name.starts_with("struct ") || name.starts_with("union ") ? "" : "struct ", name));
      return Type::none();
    }
    return Type::pointer(record(*sid), AddrSpace::Kernel);
  }

  Type record(uint32_t btf_id) {
    Type t;
    t.kind = TypeKind::Record;
    t.btf_id = btf_id;
    t.size = out_.btf->size_of(btf_id).value_or(0);
    return t;
  }

  // The type of a BTF member as a bpfscope value.
  std::optional<Type> btf_value_type(uint32_t type_id) {
    auto bt = out_.btf->type(type_id);
    if (!bt) return std::nullopt;
    using K = bpf::BtfType::Kind;
    switch (bt->kind) {
      case K::Int:
      case K::Enum:
        if (bt->size == 1 || bt->size == 2 || bt->size == 4 || bt->size == 8) return Type::integer(bt->size, bt->is_signed);
        return std::nullopt;
      case K::Pointer: {
        // char * points to int8 (not a char array); void * to nothing.
        std::optional<Type> target = bt->target ? btf_value_type(bt->target) : std::nullopt;
        if (target && target->is_string()) target = Type::integer(1, true);
        return Type::pointer(target.value_or(Type::none()), AddrSpace::Kernel);
      }
      case K::Array: {
        auto elem = out_.btf->type(bt->target);
        if (elem && elem->kind == K::Int && elem->size == 1 && bt->count > 0) return Type::string(bt->count);
        // Other arrays are read an element at a time: a[i].
        Type t = record(bt->id);
        t.size = bt->size;
        return t;
      }
      case K::Struct:
      case K::Union: return record(bt->id);
      default: return std::nullopt;
    }
  }

  Type btf_field(ExprId id, const Expr& e, const Type& base) {
    uint32_t sid = base.btf_id;
    auto m = out_.btf->find_member(sid, e.name);
    if (!m) {
      error(e.loc, fmt::format("Struct/union of type '{}' does not contain a field named '{}'",
                               out_.btf->type_name(sid), e.name));
      return Type::none();
    }
    auto t = btf_value_type(m->type_id);
    if (!t) {
      error(e.loc, fmt::format("field '{}' has a type bpfscope cannot read yet: {}", e.name,
                               out_.btf->type_name(m->type_id)));
      return Type::none();
    }
    // Members of a struct in user memory are in user memory too.
    if (base.addr_space == AddrSpace::User) {
      t->addr_space = AddrSpace::User;
      retarget(*t, AddrSpace::User);
    }
    FieldAccess f;
    f.offset = m->bit_offset / 8;
    if (m->bitfield_size) {
      f.bits = m->bitfield_size;
      f.shift = m->bit_offset % 8;
    }
    out_.field_of[id] = f;
    return *t;
  }

  Type call(ExprId id) {
    const Expr& e = ast_.expr(id);
    const FunctionRow* row = find_function(e.name);
    if (!row) {
      // bpftrace underlines the name only.
      lang::Loc name{e.loc.begin, e.loc.begin + static_cast<uint32_t>(e.name.size())};
      error(name, fmt::format("Unknown function: {}", e.name));
      return Type::none();
    }
    out_.function_of[id] = row->id;
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
        if (a.kind == ExprKind::Map && a.args.empty()) {
          MapInfo* m = whole_map(e.args[0]);
          for (size_t i = 1; i < e.args.size(); ++i)
            if (!expr(e.args[i]).is_int()) error(ast_.expr(e.args[i]).loc, "print(): top and div must be integers");
          int32_t act = add_action(ActionKind::Print, e.loc, {Type::integer(8, false), Type::integer(8, false)});
          if (m) out_.actions[act].map = out_.map_of[e.args[0]];
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
          if (!map_and_key(e.args[0], e.args[1])) return Type::none();
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
        Type t = expr(e.args[0]);
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
      case Function::Strlen: {
        if (!expr(e.args[0]).is_string()) {
          error(ast_.expr(e.args[0]).loc, "strlen() expects a string");
          return Type::none();
        }
        return Type::integer(8, false);
      }
      case Function::Ntop: {
        // ntop([af,] addr): an IPv4 address as an integer (network order) or
        // 4 bytes, an IPv6 address as 16 bytes.
        Type addr = expr(e.args.back());
        if (e.args.size() == 2 && !expr(e.args[0]).is_int()) {
          error(ast_.expr(e.args[0]).loc, "ntop(): the address family must be an integer");
          return Type::none();
        }
        bool ok = (addr.kind == TypeKind::Int && addr.size <= 8) || (addr.is_bytes() && (addr.size == 4 || addr.size == 16));
        if (!ok) {
          error(ast_.expr(e.args.back()).loc,
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
        if (!map_and_key(e.args[0], e.args[1])) return Type::none();
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
          else if (m.name != "bpftrace") {
            error(m.loc, m.name == "build_id" ? "stack mode build_id is not supported: use perf or raw"
                                              : "the stack mode must be bpftrace, perf or raw");
            return Type::none();
          }
          next = 1;
        } else if (e.args.size() == 2) {
          error(ast_.expr(e.args[0]).loc, "the stack mode must be bpftrace, perf or raw");
          return Type::none();
        }
        int64_t frames = 127;
        if (next < e.args.size()) {
          auto limit = constant(e.args[next]);
          if (!limit || *limit < 1 || *limit > 127) {
            error(ast_.expr(e.args[next]).loc, "the stack limit must be a constant from 1 to 127");
            return Type::none();
          }
          frames = *limit;
        }
        (user ? out_.uses_ustack : out_.uses_kstack) = true;
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
        const Expr& a = ast_.expr(e.args[0]);
        if (a.kind != ExprKind::String) {
          error(e.loc, fmt::format("cgroupid() expects a string literal ({} provided)", provided(e.args[0])));
          return Type::none();
        }
        expr(e.args[0]);
        auto cg = cgroup_id_of(a.sval);
        if (!cg) {
          error(e.loc, fmt::format("Failed to get `cgroupid` for path: \"{}\": {}", a.sval, cg.error()));
          return Type::none();
        }
        out_.const_of[id] = static_cast<int64_t>(*cg);
        return Type::integer(8, false);
      }
      case Function::Kaddr: {
        const Expr& a = ast_.expr(e.args[0]);
        if (a.kind != ExprKind::String) {
          error(e.loc, fmt::format("kaddr() expects a string literal ({} provided)", provided(e.args[0])));
          return Type::none();
        }
        expr(e.args[0]);
        auto addr = symbols::kernel_symbol_address(a.sval);
        if (!addr) {
          error(e.loc, fmt::format("Failed to resolve kernel symbol: {}", a.sval));
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
      case Function::PercpuKaddr:
        for (ExprId a : e.args) expr(a);
        error(e.loc, fmt::format("{}() is not supported by bpfscope yet", e.name));
        return Type::none();
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
  std::string provided(ExprId id) {
    Type t = expr(id);
    if (t.is_int()) return "integer";
    if (t.is_string()) return "string";
    return t.name();
  }

  bool unsafe_allowed(const Expr& e) {
    if (out_.unsafe) return true;
    error(e.loc, fmt::format("{}() is an unsafe function being used in safe mode", e.name));
    return false;
  }

  // pton("1.2.3.4") / pton("::1"): the address bytes, as uint8[4] or
  // uint8[16], parsed here; lowering writes them as a literal.
  Type pton_call(ExprId id) {
    const Expr& e = ast_.expr(id);
    const Expr& a = ast_.expr(e.args[0]);
    if (a.kind != ExprKind::String) {
      error(e.loc, fmt::format("pton() expects a string literal ({} provided)", provided(e.args[0])));
      return Type::none();
    }
    expr(e.args[0]);
    unsigned char bytes[16];
    uint32_t n = 0;
    if (inet_pton(AF_INET, a.sval.c_str(), bytes) == 1)
      n = 4;
    else if (inet_pton(AF_INET6, a.sval.c_str(), bytes) == 1)
      n = 16;
    if (!n) {
      error(e.loc, fmt::format("pton() expects a valid IPv4/IPv6 address, got {}", a.sval));
      return Type::none();
    }
    return Type::array(Type::integer(1, false), n);
  }

  // buf(array) or buf(p, len): len bytes from a pointer (kernel or user
  // memory, as for str()), or from a string or array value.
  Type buf_call(ExprId id) {
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
  Type signal_call(ExprId id) {
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
  Type memcmp_call(ExprId id) {
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

  // getopt("name"[, default[, "description"]]): the value of --name on the
  // command line after `--`, typed by the default (bool when none).
  Type getopt_call(ExprId id) {
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
      switch (kind) {
        case Kind::Bool:
          if (!v || *v == "true" || *v == "1") ival = 1;
          else if (*v == "false" || *v == "0") ival = 0;
          else {
            error(e.loc, fmt::format("getopt(): --{} expects a boolean (true, false, 1 or 0), got \"{}\"", n.sval, *v));
            return Type::none();
          }
          break;
        case Kind::Int: {
          auto parsed = v ? parse_int_param(*v) : std::nullopt;
          if (!parsed) {
            error(e.loc, fmt::format("getopt(): --{} expects an integer, got {}", n.sval,
                                     v ? fmt::format("\"{}\"", *v) : "no value"));
            return Type::none();
          }
          ival = *parsed;
          break;
        }
        case Kind::String:
          if (!v) {
            error(e.loc, fmt::format("getopt(): --{} expects a string value (--{}=VALUE)", n.sval, n.sval));
            return Type::none();
          }
          sval = *v;
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

  // A probe kind as bpftrace's messages name it ("BEGIN", "tracepoint").
  static std::string probe_type_name(ProbeKind k) {
    if (k == ProbeKind::Begin) return "BEGIN";
    if (k == ProbeKind::End) return "END";
    return probe_kind_name(k);
  }

  // reg("sp"): a register of the probed context (struct pt_regs), in probes
  // whose context is one: kprobes, uprobes and USDT.
  Type reg_call(ExprId id) {
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
  Type len_call(ExprId id) {
    const Expr& e = ast_.expr(id);
    const Expr& a = ast_.expr(e.args[0]);
    if (a.kind == ExprKind::Map && a.args.empty()) {
      MapInfo* m = whole_map(e.args[0]);
      if (!m) return Type::none();
      if (!m->keyed) {
        error(e.loc, fmt::format("len() expects a map with keys: {} is a scalar map", m->name));
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

  // printf, cat and system: a literal format and its arguments, formatted in
  // user space.
  Type printf_call(ExprId id, ActionKind kind = ActionKind::Printf) {
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
    auto parsed = output::parse_printf(f.sval);
    if (auto* msg = std::get_if<std::string>(&parsed)) {
      error(f.loc, *msg);
      return Type::none();
    }
    auto& format = std::get<output::PrintfFormat>(parsed);
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
    for (size_t i = 0; i < supplied; ++i) {
      Type t = expr(e.args[i + 1]);
      const auto& spec = format.specs[i];
      // An argument that failed to type-check was reported already.
      if (t.kind == TypeKind::None && diags_.has_errors()) return Type::none();
      bool ok = t.kind != TypeKind::None && !t.is_record();
      if (spec.wants == output::PrintfSpec::ArgKind::Integer && !t.is_int()) ok = false;
      if (spec.wants == output::PrintfSpec::ArgKind::String && !t.is_string() && t.kind != TypeKind::Buffer) ok = false;
      if (!ok) {
        error(ast_.expr(e.args[i + 1]).loc,
              fmt::format("{}: {} specifier expects a value of type {} ({} supplied)", e.name, spec.spec,
                          spec.wants == output::PrintfSpec::ArgKind::Integer ? "integer" : "string",
                          t.kind == TypeKind::None ? "none" : t.name()));
        return Type::none();
      }
      args.push_back(t);
    }
    int32_t act = add_action(kind, e.loc, std::move(args));
    out_.actions[act].format = f.sval;
    out_.actions[act].printf_format = std::move(format);
    out_.action_of[id] = act;
    return Type::none();
  }

  Type binary(ExprId id) {
    const Expr& e = ast_.expr(id);
    Type l = expr(e.args[0]);
    Type r = expr(e.args[1]);
    if (l.kind == TypeKind::None || r.kind == TypeKind::None) {
      if (!diags_.has_errors()) error(e.loc, "operand has no value");
      return Type::none();
    }
    switch (e.op) {
      case Op::Eq:
      case Op::Ne:
        if (l.is_string() && r.is_string()) return Type::boolean();
        // Tuples and records compare field by field (strings by content, so
        // their capacities may differ; records pair fields by name).
        if (l.is_tuple() || r.is_tuple()) {
          Type u;
          if (!unify(l, r, u)) {
            error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'", op_text(e.op), l.name(), r.name()));
            return Type::none();
          }
          return Type::boolean();
        }
        // Byte arrays (pton()) compare with arrays and tracepoint byte
        // arrays of the same size, byte by byte.
        if ((l.kind == TypeKind::Array || r.kind == TypeKind::Array) && l.is_bytes() && r.is_bytes()) {
          if (l.size != r.size) {
            error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'", op_text(e.op), l.name(), r.name()));
            return Type::none();
          }
          return Type::boolean();
        }
        [[fallthrough]];
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge:
        if (!l.is_int() || !r.is_int()) {
          error(e.loc, fmt::format("Type mismatch for '{}': comparing '{}' with '{}'",
                                   ast_.source.slice(e.loc).empty() ? "?" : op_text(e.op), l.name(), r.name()));
          return Type::none();
        }
        return Type::boolean();
      case Op::LAnd:
      case Op::LOr:
        if (!l.is_int() || !r.is_int()) {
          error(e.loc, fmt::format("Invalid operands for '{}': '{}' and '{}'", op_text(e.op), l.name(), r.name()));
          return Type::none();
        }
        return Type::boolean();
      default:
        if (!l.is_int() || !r.is_int()) {
          error(e.loc, fmt::format("The {} operator can not be used on expressions of types {}, {}", op_text(e.op),
                                   l.name(), r.name()));
          return Type::none();
        }
        // Pointer arithmetic steps by the pointee's size, as in C.
        if (e.op == Op::Add && l.is_pointer != r.is_pointer) return l.is_pointer ? l : r;
        if (e.op == Op::Sub && l.is_pointer && !r.is_pointer) return l;
        {
          bool l_signed = l.is_signed && l.kind == TypeKind::Int;
          bool r_signed = r.is_signed && r.kind == TypeKind::Int;
          bool l_u64 = !l_signed && l.size == 8 && !is_literal(e.args[0]);
          bool r_u64 = !r_signed && r.size == 8 && !is_literal(e.args[1]);
          bool is_signed = (l_signed || r_signed) && !l_u64 && !r_u64;
          if (e.op == Op::Sub && (l.is_int() && r.is_int())) is_signed = true;  // 0.26: subtraction is signed
          return Type::integer(8, is_signed);
        }
    }
  }

  bool is_literal(ExprId id) const {
    const Expr& e = ast_.expr(id);
    return e.kind == ExprKind::Integer;
  }

  static const char* op_text(Op op) {
    switch (op) {
      case Op::Add: return "+";
      case Op::Sub: return "-";
      case Op::Mul: return "*";
      case Op::Div: return "/";
      case Op::Mod: return "%";
      case Op::BAnd: return "&";
      case Op::BOr: return "|";
      case Op::BXor: return "^";
      case Op::Shl: return "<<";
      case Op::Shr: return ">>";
      case Op::Eq: return "==";
      case Op::Ne: return "!=";
      case Op::Lt: return "<";
      case Op::Le: return "<=";
      case Op::Gt: return ">";
      case Op::Ge: return ">=";
      case Op::LAnd: return "&&";
      case Op::LOr: return "||";
      default: return "?";
    }
  }

  static std::optional<Type> int_type(std::string_view name) {
    struct Row {
      std::string_view name;
      uint32_t size;
      bool is_signed;
    };
    constexpr std::array kInts = {Row{"int8", 1, true},   Row{"int16", 2, true},  Row{"int32", 4, true},
                                  Row{"int64", 8, true},  Row{"uint8", 1, false}, Row{"uint16", 2, false},
                                  Row{"uint32", 4, false}, Row{"uint64", 8, false}};
    for (const auto& r : kInts)
      if (r.name == name) return Type::integer(r.size, r.is_signed);
    if (name == "bool") return Type::boolean();
    return std::nullopt;
  }

  // A type as a cast or sizeof writes it: "uint32", "struct sock", "int8 **",
  // "struct sock *", "void *". Pointers point into kernel memory. Reports
  // unknown names.
  std::optional<Type> type_of_name(std::string_view name, lang::Loc loc) {
    size_t stars = 0;
    while (name.ends_with("*")) {
      name.remove_suffix(1);
      while (name.ends_with(" ")) name.remove_suffix(1);
      ++stars;
    }
    Type t;
    if (auto i = int_type(name)) {
      t = *i;
    } else if (name == "void" && stars > 0) {
      t = Type::none();
    } else if (name.starts_with("struct ") || name.starts_with("union ")) {
      Type p = pointer_to(name, loc);
      if (p.kind == TypeKind::None) return std::nullopt;
      t = p.elems[0];
    } else {
      error(loc, fmt::format("Cannot resolve unknown type \"{}\"", name));
      return std::nullopt;
    }
    for (size_t i = 0; i < stars; ++i) t = Type::pointer(std::move(t), AddrSpace::Kernel);
    return t;
  }

  // Marks a pointer, and the pointers it leads to, as pointing into `space`.
  static void retarget(Type& t, AddrSpace space) {
    for (Type* p = &t; p && p->is_pointer; p = p->elems.empty() ? nullptr : &p->elems[0]) p->addr_space = space;
  }

  Type expr(ExprId id) {
    const Expr& e = ast_.expr(id);
    switch (e.kind) {
      case ExprKind::Integer:
        return set(id, e.ival > static_cast<uint64_t>(INT64_MAX) ? Type::integer(8, false) : Type::integer(8, true));
      case ExprKind::String:
        if (e.sval.size() + 1 > out_.config.max_strlen) {
          error(e.loc, fmt::format("String is too long (over {} bytes): {}", out_.config.max_strlen, e.sval.size()));
          return set(id, Type::none());
        }
        return set(id, Type::string(static_cast<uint32_t>(e.sval.size() + 1)));
      case ExprKind::Identifier: {
        const BuiltinRow* b = find_builtin(e.name);
        if (!b) {
          // A constant the book's scripts use that BTF lacks (AF_INET), or
          // an enum constant from the kernel's BTF (TCP_ESTABLISHED).
          if (auto v = known_constant(e.name)) {
            out_.const_of[id] = *v;
            return set(id, Type::integer(8, true));
          }
          if (auto v = out_.btf->enum_value(e.name)) {
            out_.const_of[id] = *v;
            return set(id, Type::integer(8, true));
          }
          error(e.loc, fmt::format("Unknown identifier: '{}'", e.name));
          return set(id, Type::none());
        }
        if (b->id == Builtin::Kstack || b->id == Builtin::Ustack) {
          out_.builtin_of[id] = b->id;
          bool user = b->id == Builtin::Ustack;
          (user ? out_.uses_ustack : out_.uses_kstack) = true;
          return set(id, Type::stack(user, 127));
        }
        if (b->id == Builtin::Ctx) {
          out_.builtin_of[id] = b->id;
          const ResolvedAttachPoint* iter = nullptr;
          for (const auto& p : *points_) iter = p.kind == ProbeKind::Iter ? &p : iter;
          if (!iter || points_->size() != 1) {
            error(e.loc, "ctx is only available in iter probes here");
            return set(id, Type::none());
          }
          return set(id, pointer_to("bpf_iter__" + iter->targets[0].format.event, e.loc));
        }
        if (b->id == Builtin::Curtask) {
          out_.builtin_of[id] = b->id;
          return set(id, pointer_to("task_struct", e.loc));
        }
        out_.builtin_of[id] = b->id;
        if (b->id == Builtin::Cpid && !out_.has_child) {
          error(e.loc, "cpid cannot be used without a child command (-c)");
          return set(id, Type::none());
        }
        if (b->id == Builtin::Arg) {
          bool user = false;
          for (const auto& p : *points_) {
            user = user || p.kind == ProbeKind::Uprobe || p.kind == ProbeKind::Usdt;
            if (p.kind == ProbeKind::Kprobe) continue;  // pt_regs, as uprobes
            if (p.kind == ProbeKind::Usdt) {
              target_specific_ = true;  // each note has its own argument specs
              for (const auto& t : p.targets) {
                if (static_cast<size_t>(arg_index(e.name)) >= t.usdt_args.size()) {
                  error(e.loc, fmt::format("{} does not exist: usdt {} has {} arguments", e.name, t.func,
                                           t.usdt_args.size()));
                  return set(id, Type::none());
                }
              }
              continue;
            }
            if (p.kind != ProbeKind::RawTracepoint && p.kind != ProbeKind::Uprobe) {
              error(e.loc, fmt::format("{} is only available in rawtracepoint, kprobe, uprobe and usdt probes here",
                                       e.name));
              return set(id, Type::none());
            }
          }
          Type t = Type::integer(8, true);
          if (user) t.addr_space = AddrSpace::User;  // a uprobe's pointers are user addresses
          out_.builtin_of[id] = b->id;
          return set(id, t);
        }
        if (b->id == Builtin::Retval) {
          for (const auto& p : *points_) {
            if (p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Kretprobe && p.kind != ProbeKind::Fexit) {
              error(e.loc, "retval is only available in uretprobe, kretprobe and fexit probes here");
              return set(id, Type::none());
            }
          }
        }
        if (b->id == Builtin::Func) {
          target_specific_ = true;
          uint32_t longest = 1;
          for (const auto& p : *points_) {
            if (p.kind != ProbeKind::Uprobe && p.kind != ProbeKind::Uretprobe && p.kind != ProbeKind::Kprobe &&
                p.kind != ProbeKind::Kretprobe && p.kind != ProbeKind::Fentry && p.kind != ProbeKind::Fexit) {
              error(e.loc, "func is only available in uprobe, kprobe and fentry probes here");
              return set(id, Type::none());
            }
            for (const auto& t : p.targets) longest = std::max<uint32_t>(longest, t.func.size() + 1);
          }
          out_.builtin_of[id] = b->id;
          return set(id, Type::string(longest));
        }
        if (b->id == Builtin::Args) {
          error(e.loc, "args must be used with a field: args.NAME");
          return set(id, Type::none());
        }
        if (b->id == Builtin::Probe) {
          target_specific_ = true;
          uint32_t longest = 0;
          for (const auto& p : *points_)
            for (const auto& t : p.targets) longest = std::max<uint32_t>(longest, t.name.size() + 1);
          return set(id, Type::string(longest));
        }
        if (b->kind == TypeKind::String) return set(id, Type::string(b->size));
        return set(id, Type::integer(b->size, b->is_signed));
      }
      case ExprKind::Positional: {
        if (e.ival == 0 || e.ival > out_.positional.size()) return set(id, Type::integer(8, true));
        const auto& p = out_.positional[e.ival - 1];
        if (parse_int_param(p)) return set(id, Type::integer(8, true));
        return set(id, Type::string(static_cast<uint32_t>(p.size() + 1)));
      }
      case ExprKind::PositionalCount: return set(id, Type::integer(8, true));
      case ExprKind::Variable: {
        int32_t var = find_var(e.name);
        if (var < 0) {
          error(e.loc, undefined_var_message(e.name));
          return set(id, Type::none());
        }
        out_.var_of[id] = var;
        return set(id, out_.var_types[var]);
      }
      case ExprKind::Map: {
        MapInfo* m = map_for(id, /*create=*/false);
        if (!m) {
          error(e.loc, fmt::format("Undefined map: {}", e.name));
          return set(id, Type::integer(8, true));
        }
        switch (m->agg) {
          case output::AggKind::Plain: break;
          // Read in the kernel as the sum (or min, max, average) over CPUs.
          case output::AggKind::Count: return set(id, Type::integer(8, false));
          case output::AggKind::Sum:
          case output::AggKind::Min:
          case output::AggKind::Max:
          case output::AggKind::Avg: return set(id, Type::integer(8, m->value.is_signed));
          case output::AggKind::Stats:
          case output::AggKind::Hist:
          case output::AggKind::LHist:
            error(e.loc, fmt::format("a {}() map has no single value to read in a probe: {}", agg_name(m->agg), e.name));
            return set(id, Type::none());
        }
        if (m->value.kind == TypeKind::None) return set(id, Type::integer(8, true));
        return set(id, m->value);
      }
      case ExprKind::Call: return set(id, call(id));
      case ExprKind::Unary: {
        Type t = expr(e.args[0]);
        switch (e.op) {
          case Op::Neg:
          case Op::BNot:
            if (!t.is_int()) break;
            return set(id, Type::integer(8, e.op == Op::Neg ? true : t.is_signed));
          case Op::LNot:
            if (!t.is_int()) break;
            return set(id, Type::boolean());
          case Op::Deref: return set(id, element_of(t, e.loc));
          case Op::AddrOf: return set(id, address_of(e));
          default: break;
        }
        error(e.loc, fmt::format("invalid operand of type {} for unary operator", t.name()));
        return set(id, Type::none());
      }
      case ExprKind::Binary: return set(id, binary(id));
      case ExprKind::Ternary: {
        Type c = expr(e.args[0]);
        if (!valid_condition(c)) error(ast_.expr(e.args[0]).loc, "Invalid condition in ternary: " + c.name());
        if (e.args.size() == 2) {
          // a ?: b
          Type b = expr(e.args[1]);
          Type u;
          if (!unify(c, b, u)) error(e.loc, "Ternary operator must return the same type");
          return set(id, u);
        }
        Type a = expr(e.args[1]);
        Type b = expr(e.args[2]);
        Type u;
        if (a.kind == TypeKind::None && b.kind == TypeKind::None) return set(id, Type::none());
        if (!unify(a, b, u)) {
          error(e.loc, fmt::format("Ternary operator must return the same type: have '{}' and '{}'", a.name(), b.name()));
          return set(id, Type::none());
        }
        return set(id, u);
      }
      case ExprKind::Field: {
        const Expr& base = ast_.expr(e.args[0]);
        if (base.kind == ExprKind::Identifier && base.name == "args") {
          out_.builtin_of[e.args[0]] = Builtin::Args;
          set(e.args[0], Type::none());
          return set(id, args_field(e));
        }
        Type bt = expr(e.args[0]);
        if (bt.is_record() || (bt.kind == TypeKind::Int && bt.is_pointer && bt.btf_id != 0)) {
          return set(id, btf_field(id, e, bt));
        }
        if (bt.is_named_tuple()) {
          const int idx = bt.field_index(e.name);
          if (idx >= 0) return set(id, bt.elems[idx]);
          error(e.loc, fmt::format("Record has no field named '{}': {}", e.name, bt.name()));
          return set(id, Type::none());
        }
        if (bt.is_tuple()) {
          uint64_t idx = 0;
          auto [p, ec] = std::from_chars(e.name.data(), e.name.data() + e.name.size(), idx);
          if (ec == std::errc() && p == e.name.data() + e.name.size() && idx < bt.elems.size())
            return set(id, bt.elems[idx]);
          error(e.loc, fmt::format("Invalid tuple index: {}", e.name));
          return set(id, Type::none());
        }
        // A base that already failed to type-check was reported there.
        if (bt.kind != TypeKind::None)
          error(e.loc, fmt::format("Can not access field '{}' on expression of type '{}'", e.name, bt.name()));
        return set(id, Type::none());
      }
      case ExprKind::Index: {
        Type bt = expr(e.args[0]);
        Type it = expr(e.args[1]);
        if (bt.kind == TypeKind::None) return set(id, Type::none());
        if (!it.is_int()) {
          error(ast_.expr(e.args[1]).loc, fmt::format("The array index must be an integer, not {}", it.name()));
          return set(id, Type::none());
        }
        if (bt.is_string()) {
          const Expr& index = ast_.expr(e.args[1]);
          if (index.kind != ExprKind::Integer || index.ival >= bt.size) {
            error(index.loc, fmt::format("a string index must be a constant below {}", bt.size));
            return set(id, Type::none());
          }
          return set(id, Type::integer(1, true));
        }
        if (bt.is_tuple()) {
          const Expr& index = ast_.expr(e.args[1]);
          if (index.kind != ExprKind::Integer || index.ival >= bt.elems.size()) {
            error(index.loc, fmt::format("a tuple index must be a constant below {}", bt.elems.size()));
            return set(id, Type::none());
          }
          return set(id, bt.elems[index.ival]);
        }
        if (bt.is_record()) {
          // An array member of a kernel struct: a[i] reads one element.
          auto at = out_.btf->type(bt.btf_id);
          if (at && at->kind == bpf::BtfType::Kind::Array) {
            auto elem = btf_value_type(at->target);
            if (!elem) {
              error(e.loc, fmt::format("array elements of type {} cannot be read yet", out_.btf->type_name(at->target)));
              return set(id, Type::none());
            }
            return set(id, *elem);
          }
        }
        if (bt.is_pointer) return set(id, element_of(bt, e.loc));
        error(e.loc, fmt::format("The array index operator [] can not be used on expressions of type {}", bt.name()));
        return set(id, Type::none());
      }
      case ExprKind::Cast: {
        Type t = expr(e.args[0]);
        auto to = type_of_name(e.name, e.loc);
        if (!to) return set(id, Type::none());
        if (to->is_record()) {
          error(e.loc, fmt::format("Cannot cast to \"{}\": only pointers to structs are supported", e.name));
          return set(id, Type::none());
        }
        // A byte array of the integer's size casts in native order
        // ((uint32)pton("127.0.0.1")).
        if (t.kind == TypeKind::Array && to->kind == TypeKind::Int && t.size * t.elems[0].size == to->size)
          return set(id, *to);
        if (!t.is_int()) {
          error(e.loc, fmt::format("Cannot cast from \"{}\" to \"{}\"", t.name(), e.name));
          return set(id, Type::none());
        }
        // A cast keeps the address space a pointer came from (user memory
        // stays user memory).
        if (to->is_pointer && t.is_pointer && t.addr_space != AddrSpace::None) retarget(*to, t.addr_space);
        return set(id, *to);
      }
      case ExprKind::Block: {  // an expanded macro: its variables live in its own scope
        scopes_.emplace_back();
        for (StmtId s : e.body) stmt(s);
        Type t = e.args.empty() ? Type::none() : expr(e.args[0]);
        scopes_.pop_back();
        return set(id, t);
      }
      case ExprKind::Tuple: {
        std::vector<Type> elems;
        for (ExprId a : e.args) {
          Type t = expr(a);
          if (t.kind == TypeKind::None) {
            error(ast_.expr(a).loc, "tuple element has no value");
            return set(id, Type::none());
          }
          elems.push_back(t.is_int() && t.kind != TypeKind::Bool ? Type::integer(8, t.is_signed) : t);
        }
        return set(id, Type::tuple(std::move(elems), e.field_names));
      }
      case ExprKind::IncDec: {
        const Expr& target = ast_.expr(e.args[0]);
        if (target.kind == ExprKind::Variable) {
          int32_t var = find_var(target.name);
          if (var < 0) {
            error(target.loc, fmt::format("Undefined or undeclared variable: {}", target.name));
            return set(id, Type::none());
          }
          if (!out_.var_types[var].is_int()) {
            error(e.loc, "++ and -- need an integer variable");
            return set(id, Type::none());
          }
          out_.var_of[e.args[0]] = var;
          set(e.args[0], out_.var_types[var]);
          return set(id, out_.var_types[var]);
        }
        if (target.kind == ExprKind::Map) {
          MapInfo* m = map_for(e.args[0], /*create=*/true);
          if (!m) return set(id, Type::none());
          if (m->agg != output::AggKind::Plain || (m->value.kind != TypeKind::None && !m->value.is_int())) {
            error(e.loc, fmt::format("++ and -- need an integer map: {}", m->name));
            return set(id, Type::none());
          }
          if (m->value.kind == TypeKind::None) m->value = Type::integer(8, true);
          set(e.args[0], m->value);
          return set(id, m->value);
        }
        error(e.loc, "++ and -- apply to variables and maps");
        return set(id, Type::none());
      }
      case ExprKind::Sizeof: {
        if (!e.type_arg) {
          Type t = expr(e.args[0]);
          uint32_t size = t.is_string() ? t.size : t.kind == TypeKind::Int ? t.size : t.is_tuple() ? t.size : 8;
          if (t.is_record()) size = out_.btf->size_of(t.btf_id).value_or(0);
          out_.const_of[id] = size;
          return set(id, Type::integer(8, false));
        }
        if (auto ct = int_type(e.name)) {
          out_.const_of[id] = ct->size;
          return set(id, Type::integer(8, false));
        }
        std::string_view n = e.name;
        std::optional<uint32_t> tid = n.ends_with("*") ? std::optional<uint32_t>(0) : out_.btf->find_type(n);
        std::optional<uint32_t> size = n.ends_with("*") ? std::optional<uint32_t>(8) : tid ? out_.btf->size_of(*tid) : std::nullopt;
        if (!size) {
          error(e.loc, fmt::format("Unknown type: {}", e.name));
          return set(id, Type::none());
        }
        out_.const_of[id] = *size;
        return set(id, Type::integer(8, false));
      }
      case ExprKind::Offsetof: {
        auto sid = out_.btf->find_struct(e.name);
        if (!sid) {
          error(e.loc, fmt::format("Unknown struct: {}", e.name));
          return set(id, Type::none());
        }
        uint64_t bits = 0;
        uint32_t cur = *sid;
        // "a.b.c" walks nested members.
        std::string_view path = e.sval;
        while (!path.empty()) {
          size_t dot = path.find('.');
          std::string_view part = path.substr(0, dot);
          auto m = out_.btf->find_member(cur, part);
          if (!m) {
            error(e.loc, fmt::format("'{}' has no field named '{}'", out_.btf->type_name(cur), part));
            return set(id, Type::none());
          }
          bits += m->bit_offset;
          cur = out_.btf->resolve(m->type_id);
          path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
        }
        out_.const_of[id] = static_cast<int64_t>(bits / 8);
        return set(id, Type::integer(8, false));
      }
    }
    std::unreachable();
  }

  const lang::Program& ast_;
  TypedProgram& out_;
  lang::Diagnostics& diags_;
  bool final_;
  std::vector<Type> first_pass_vars_;  // the final pass: variable types at the end of the first
  const std::vector<ResolvedAttachPoint>* points_ = nullptr;
  bool target_specific_ = false;
  uint32_t probe_index_ = 0;
  int loop_depth_ = 0;
  std::vector<std::map<std::string, int32_t>> scopes_;
};

std::string unit_name(const std::string& target) {
  std::string n;
  for (char c : target) n += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return n.substr(0, 15);
}

void compute_layouts(TypedProgram& p) {
  for (auto& m : p.maps) {
    m.key_size = m.keyed ? std::max<uint32_t>(m.key.mem_size(), 8) : 8;
    m.max_entries = m.keyed ? p.config.max_map_keys : 1;
    switch (m.agg) {
      case output::AggKind::Plain:
        m.value_size = std::max<uint32_t>(m.value.mem_size(), 8);
        m.percpu = false;
        break;
      case output::AggKind::Count:
      case output::AggKind::Sum:
        m.value_size = 8;
        m.percpu = true;
        break;
      case output::AggKind::Min:
      case output::AggKind::Max:
      case output::AggKind::Avg:
      case output::AggKind::Stats:
        // Min/Max: {value, set}; Avg/Stats: {count, total}.
        m.value_size = 16;
        m.percpu = true;
        break;
      case output::AggKind::Hist:
        m.value_size = 8 * output::hist_bucket_count(m.hist.bits);
        m.percpu = true;
        break;
      case output::AggKind::LHist:
        m.value_size = 8 * output::lhist_bucket_count(m.hist.min, m.hist.max, m.hist.step);
        m.percpu = true;
        break;
    }
  }
}

}  // namespace

std::optional<TypedProgram> analyse(const lang::Program& program, const Options& options, lang::Diagnostics& diags) {
  TypedProgram out;
  out.ast = &program;
  out.config = options.config;
  out.positional = options.positional;
  out.has_child = options.has_child;
  auto btf = std::make_shared<bpf::Btf>();
  if (!add_c_definitions(program, *btf, diags)) return std::nullopt;
  out.btf = std::move(btf);

  // Resolve every attach point first: wildcards, formats, periods.
  std::vector<std::vector<ResolvedAttachPoint>> resolved(program.probes.size());
  for (size_t i = 0; i < program.probes.size(); ++i) {
    for (const auto& ap : program.probes[i].points) {
      auto r = resolve_attach_point(ap.text, ap.loc, diags, options.target_pid);
      if (r) resolved[i].push_back(std::move(*r));
    }
  }
  if (diags.has_errors()) return std::nullopt;
  // Raw tracepoints attach as tp_btf where the kernel's BTF has the event's
  // btf_trace_<event> prototype (trusted typed arguments), else as raw_tp.
  for (auto& points : resolved)
    for (auto& point : points)
      if (point.kind == ProbeKind::RawTracepoint)
        for (auto& t : point.targets) t.btf_id = out.btf->tracepoint_btf_id(t.format.event).value_or(0);
      else if (point.kind == ProbeKind::Fentry || point.kind == ProbeKind::Fexit)
        for (auto& t : point.targets) t.btf_id = out.btf->find_func(t.func).value_or(0);
  if (program.probes.empty()) {
    diags.error_unlocated("No probes to attach");
    return std::nullopt;
  }

  // Two passes: the first fixes map types from every assignment (a map may be
  // read in a probe that comes before the one assigning it), the second
  // reports errors.
  std::vector<bool> target_specific(program.probes.size());
  for (bool final : {false, true}) {
    size_t n = program.exprs.size();
    out.expr_types.assign(n, Type::none());
    out.var_of.assign(n, -1);
    out.map_of.assign(n, -1);
    out.action_of.assign(n, -1);
    out.builtin_of.assign(n, Builtin::None);
    out.function_of.assign(n, Function::None);
    out.field_of.assign(n, FieldAccess{});
    out.for_var_of.assign(n, -1);
    out.const_of.assign(n, std::nullopt);
    std::vector<Type> first_pass_vars = final ? std::move(out.var_types) : std::vector<Type>{};
    out.var_types.clear();
    out.actions.clear();
    lang::Diagnostics scratch;
    out.strftime_formats.clear();
    out.const_strings.clear();
    out.getopt_names.clear();
    out.named_args = options.named_args;
    out.unsafe = options.unsafe;
    Checker checker(program, out, final ? diags : scratch, final, std::move(first_pass_vars));
    for (uint32_t i = 0; i < program.probes.size(); ++i) {
      checker.check_probe(i, resolved[i]);
      target_specific[i] = checker.target_specific();
    }
  }
  if (diags.has_errors()) return std::nullopt;
  for (const auto& [name, value] : out.named_args) {
    if (!out.getopt_names.count(name)) {
      diags.error_unlocated(fmt::format("Unexpected named argument: --{} (the program has no getopt(\"{}\"))", name, name));
      return std::nullopt;
    }
  }
  for (const auto& m : out.maps) {
    if (m.agg == output::AggKind::Plain && m.value.kind == TypeKind::None) {
      diags.error(m.first_use, fmt::format("Undefined map: {}", m.name));
      return std::nullopt;
    }
  }
  compute_layouts(out);
  if (!apply_map_decls(program, out, diags)) return std::nullopt;
  for (const auto& a : out.actions) {
    bool output = a.kind == ActionKind::Printf || a.kind == ActionKind::Print || a.kind == ActionKind::PrintValue ||
                  a.kind == ActionKind::Time || a.kind == ActionKind::Join || a.kind == ActionKind::Cat ||
                  a.kind == ActionKind::System || a.kind == ActionKind::Errorf || a.kind == ActionKind::Warnf;
    bool hot = std::any_of(resolved[a.probe_index].begin(), resolved[a.probe_index].end(), [](const auto& p) {
      return p.kind != ProbeKind::Begin && p.kind != ProbeKind::End;
    });
    if (output && hot) out.streams_output = true;
  }

  // Program units: one per target when the body depends on it, else one per kind.
  for (uint32_t i = 0; i < program.probes.size(); ++i) {
    for (auto& point : resolved[i]) {
      // A program of BEGIN, END and iterators ends after running them.
      if (point.kind != ProbeKind::Begin && point.kind != ProbeKind::End && point.kind != ProbeKind::Iter)
        out.only_begin_end = false;
      if (point.kind == ProbeKind::End) out.has_end = true;
      auto existing = std::find_if(out.units.begin(), out.units.end(), [&](const ProgramUnit& u) {
        return u.probe_index == i && u.kind == point.kind && !target_specific[i];
      });
      for (auto& t : point.targets) {
        if (existing != out.units.end() && !target_specific[i] && point.kind != ProbeKind::Interval &&
            point.kind != ProbeKind::Profile && point.kind != ProbeKind::Begin && point.kind != ProbeKind::End) {
          existing->targets.push_back(std::move(t));
          continue;
        }
        ProgramUnit u;
        u.probe_index = i;
        u.kind = point.kind;
        u.name = unit_name(t.name);
        u.targets.push_back(std::move(t));
        out.units.push_back(std::move(u));
        existing = out.units.end() - 1;
      }
    }
  }
  return out;
}

}  // namespace bpfscope::sema
