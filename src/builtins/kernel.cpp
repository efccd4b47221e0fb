#include <fcntl.h>

#include <cstring>
#include <expected>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// Signal names signal() accepts, with or without the SIG prefix.
struct SignalName {
  std::string_view name;
  int number;
};
constexpr SignalName kSignals[] = {
    {"HUP", 1},    {"INT", 2},   {"QUIT", 3},    {"ILL", 4},   {"TRAP", 5},  {"ABRT", 6},    {"IOT", 6},
    {"BUS", 7},    {"FPE", 8},   {"KILL", 9},    {"USR1", 10}, {"SEGV", 11}, {"USR2", 12},   {"PIPE", 13},
    {"ALRM", 14},  {"TERM", 15}, {"STKFLT", 16}, {"CHLD", 17}, {"CONT", 18}, {"STOP", 19},   {"TSTP", 20},
    {"TTIN", 21},  {"TTOU", 22}, {"URG", 23},    {"XCPU", 24}, {"XFSZ", 25}, {"VTALRM", 26}, {"PROF", 27},
    {"WINCH", 28}, {"IO", 29},   {"POLL", 29},   {"PWR", 30},  {"SYS", 31},
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
    while (in >> word && word != "-") {
    }
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

constexpr Function kKernel[] = {
    // signal(SIG): bpf_send_signal to the current task. A name ("KILL",
    // "SIGKILL"), a literal number, or an integer expression.
    {.name = "signal",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       if (!c.unsafe_allowed(e)) return Type::none();
       for (const auto& p : *c.points_) {
         if (p.kind == ProbeKind::Begin || p.kind == ProbeKind::End) {
           c.error(e.loc, fmt::format("signal can not be used with \"{}\" probes", c.probe_type_name(p.kind)));
           return Type::none();
         }
       }
       const Expr& a = c.ast_.expr(e.args[0]);
       if (a.kind == ExprKind::String) {
         c.expr(e.args[0]);
         auto n = signal_number(a.sval);
         if (!n) {
           c.error(e.loc, fmt::format("{} is not a valid signal", a.sval));
           return Type::none();
         }
         c.out_.const_of[e.args[0]] = *n;
         return Type::none();
       }
       Type t = c.expr(e.args[0]);
       if (!t.is_int()) {
         c.error(e.loc, fmt::format("signal() only accepts a signal name or number ({} provided)", t.name()));
         return Type::none();
       }
       if (auto n = c.constant(e.args[0]); n && (*n < 1 || *n > 64)) {
         c.error(e.loc, fmt::format("{} is not a valid signal, allowed range: [1,64]", *n));
         return Type::none();
       }
       return Type::none();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       auto named = l.p_.const_of[e.args[0]];
       VregId sig = named ? l.b_.imm(*named) : l.materialize_int(l.expr(e.args[0]));
       l.b_.call(BPF_FUNC_send_signal, {sig});
       return Val{.type = t};
     }},
    {.name = "cgroupid",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const std::optional<std::string> path = c.known_string_arg(id, "cgroupid");
       if (!path) return Type::none();
       auto cg = cgroup_id_of(*path);
       if (!cg) {
         c.error(e.loc, fmt::format("Failed to get `cgroupid` for path: \"{}\": {}", *path, cg.error()));
         return Type::none();
       }
       c.out_.const_of[id] = static_cast<int64_t>(*cg);
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       return l.constant(l.p_.const_of[id].value_or(0), t);
     }},
    {.name = "under_cgroup",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       // The cgroup is found when compiling, as cgroupid()'s.
       const std::optional<std::string> path = c.known_string_arg(id, "under_cgroup");
       if (!path) return Type::none();
       if (path->empty()) {  // no cgroup (a tool's -c not given): every task
         c.out_.under_cgroup_of[id] = {0, TypedProgram::kEveryCgroup};
         return Type::boolean();
       }
       auto cg = cgroup_id_of(*path);
       auto level = cg ? cgroup_level_of(*path) : std::unexpected(cg.error());
       if (!level) {
         c.error(e.loc, fmt::format("under_cgroup(): cannot use the cgroup \"{}\": {}", *path, level.error()));
         return Type::none();
       }
       c.out_.under_cgroup_of[id] = {*cg, *level};
       return Type::boolean();
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       // The current task's ancestor at the cgroup's level is the cgroup
       // itself when the task is in it or below it (0 when its own cgroup is
       // shallower). A compare of registers: ids do not fit an immediate.
       const auto [cgroup, level] = l.p_.under_cgroup_of.at(id);
       if (level == sema::TypedProgram::kEveryCgroup) return l.constant(1, t);
       VregId ancestor = l.b_.call(BPF_FUNC_get_current_ancestor_cgroup_id, {l.b_.imm(level)});
       return l.int_val(l.flag(ir::Cond::Eq, l.b_.alu(AluOp::Xor, ancestor, l.b_.imm(static_cast<int64_t>(cgroup))), 0),
                        t);
     }},
    {.name = "path",
     .min_args = 1,
     .max_args = 2,
     // Sema rejects it here: it has no lowering.
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       for (ExprId a : e.args) c.expr(a);
       c.error(e.loc,
               "path() needs the bpf_d_path helper, which the kernel allows only in fentry/fexit and LSM "
               "programs on an allowlist of functions; this kernel refuses to load fentry programs "
               "(EPERM), so path() cannot be used here");
       return Type::none();
     }},
    {.name = "override",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       for (ExprId a : e.args) c.expr(a);
       if (!c.unsafe_allowed(e)) return Type::none();
       for (const auto& p : *c.points_) {
         if (p.kind != ProbeKind::Kprobe) {
           c.error(e.loc, fmt::format("override can not be used with \"{}\" probes", c.probe_type_name(p.kind)));
           return Type::none();
         }
       }
       c.error(e.loc,
               "override() needs a kprobe (bpf_override_return), and this kernel has no kprobes "
               "(CONFIG_KPROBES is off)");
       return Type::none();
     }},
    // write_user(dst, src, len): bpf_probe_write_user of len bytes of src (a
    // string, tuple, struct or array the program holds) to the user address dst of
    // the current task; true when written.
    {.name = "write_user",
     .min_args = 3,
     .max_args = 3,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       Type dst = c.expr(e.args[0]), src = c.expr(e.args[1]), len = c.expr(e.args[2]);
       if (!c.unsafe_allowed(e)) return Type::none();
       if (!dst.is_int()) {
         c.error(e.loc, fmt::format("write_user() expects a user-space address as dst ({} provided)", dst.name()));
         return Type::none();
       }
       if (!src.is_string() && !src.is_record() && src.kind != TypeKind::Tuple && src.kind != TypeKind::Array) {
         c.error(e.loc, fmt::format("write_user() writes a value the program holds (a string, tuple, struct or "
                                    "array) as src ({} provided)",
                                    src.name()));
         return Type::none();
       }
       auto n = c.constant(e.args[2]);
       if (!len.is_int() || !n) {
         c.error(e.loc, "write_user() expects a constant integer as len");
         return Type::none();
       }
       const uint32_t bytes = src.field_size();
       if (*n < 1 || static_cast<uint64_t>(*n) > bytes) {
         c.error(e.loc, fmt::format("write_user() len {} is outside the 1 to {} bytes of src", *n, bytes));
         return Type::none();
       }
       c.out_.const_of[e.args[2]] = *n;
       return Type::boolean();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       VregId dst = l.materialize_int(l.expr(e.args[0]));
       Val src = l.addressable(l.expr(e.args[1]));
       VregId r =
           l.b_.call(BPF_FUNC_probe_write_user, {dst, src.reg, l.b_.imm(*l.p_.const_of[e.args[2]])});
       return l.int_val(l.flag(ir::Cond::Eq, r, 0), t);
     }},
};

}  // namespace

std::span<const Function> kernel() { return kKernel; }

}  // namespace bpfscope::builtins
