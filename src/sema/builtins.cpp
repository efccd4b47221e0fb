#include "sema/builtins.h"

#include <array>

namespace bpfscope::sema {
namespace {

// Builtin variables (REFERENCE.md 3.1). `probe` is a string constant per
// program; `args` is typed from the tracepoint format.
constexpr std::array kBuiltins = {
    BuiltinRow{.name = "pid", .id = Builtin::Pid, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "tid", .id = Builtin::Tid, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "uid", .id = Builtin::Uid, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "gid", .id = Builtin::Gid, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "comm", .id = Builtin::Comm, .kind = TypeKind::String, .size = 16, .is_signed = false},
    BuiltinRow{.name = "nsecs", .id = Builtin::Nsecs, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "elapsed", .id = Builtin::Elapsed, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "cpu", .id = Builtin::Cpu, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "probe", .id = Builtin::Probe, .kind = TypeKind::String, .size = 0, .is_signed = false},
    BuiltinRow{.name = "args", .id = Builtin::Args, .kind = TypeKind::None, .size = 0, .is_signed = false},
    BuiltinRow{.name = "rand", .id = Builtin::Rand, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "cgroup", .id = Builtin::Cgroup, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "cpid", .id = Builtin::Cpid, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "jiffies", .id = Builtin::Jiffies, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "numaid", .id = Builtin::Numaid, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "ncpus", .id = Builtin::Ncpus, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "curtask", .id = Builtin::Curtask, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "ppid", .id = Builtin::Ppid, .kind = TypeKind::Int, .size = 4, .is_signed = false},
    BuiltinRow{.name = "pcomm", .id = Builtin::Pcomm, .kind = TypeKind::String, .size = 16, .is_signed = false},
    BuiltinRow{.name = "retval", .id = Builtin::Retval, .kind = TypeKind::Int, .size = 8, .is_signed = true},
    BuiltinRow{.name = "func", .id = Builtin::Func, .kind = TypeKind::String, .size = 0, .is_signed = false},
    BuiltinRow{.name = "kstack", .id = Builtin::Kstack, .kind = TypeKind::Stack, .size = 127, .is_signed = false},
    BuiltinRow{.name = "ustack", .id = Builtin::Ustack, .kind = TypeKind::Stack, .size = 127, .is_signed = false},
    BuiltinRow{.name = "ctx", .id = Builtin::Ctx, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    // nsecs's other clocks, only in their call spelling (no identifier has
    // these names): CLOCK_MONOTONIC, CLOCK_TAI, and CLOCK_BOOTTIME plus the
    // TAI offset taken at start (sw_tai, cheaper than the TAI clock).
    BuiltinRow{.name = "nsecs(monotonic)", .id = Builtin::NsecsMonotonic, .kind = TypeKind::Int, .size = 8,
               .is_signed = false},
    BuiltinRow{.name = "nsecs(tai)", .id = Builtin::NsecsTai, .kind = TypeKind::Int, .size = 8, .is_signed = false},
    BuiltinRow{.name = "nsecs(sw_tai)", .id = Builtin::NsecsSwTai, .kind = TypeKind::Int, .size = 8,
               .is_signed = false},
};

}  // namespace

// arg0..arg15: the raw arguments of a raw tracepoint (int64 each).
constexpr BuiltinRow kArgRow{.name = "argN", .id = Builtin::Arg, .kind = TypeKind::Int, .size = 8, .is_signed = true};

const BuiltinRow* find_builtin(std::string_view name) {
  // bpftrace 0.26 names its builtins __builtin_comm... (its stdlib's macros
  // wrap them): the same builtins.
  if (name.starts_with("__builtin_")) name.remove_prefix(10);
  for (const auto& row : kBuiltins)
    if (row.name == name) return &row;
  if (arg_index(name) >= 0) return &kArgRow;
  return nullptr;
}

int arg_index(std::string_view name) {
  if (name.size() < 4 || name.size() > 5 || !name.starts_with("arg")) return -1;
  int n = 0;
  for (char c : name.substr(3)) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  if (name.size() == 5 && name[3] == '0') return -1;
  return n < 16 ? n : -1;
}

}  // namespace bpfscope::sema
