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

constexpr std::array kFunctions = {
    FunctionRow{.name = "", .id = Function::None, .min_args = 0, .max_args = 0},
    FunctionRow{.name = "printf", .id = Function::Printf, .min_args = 1, .max_args = 64},
    FunctionRow{.name = "exit", .id = Function::Exit, .min_args = 0, .max_args = 1},
    FunctionRow{.name = "print", .id = Function::Print, .min_args = 1, .max_args = 5},
    FunctionRow{.name = "clear", .id = Function::Clear, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "zero", .id = Function::Zero, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "delete", .id = Function::Delete, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "time", .id = Function::Time, .min_args = 0, .max_args = 1},
    FunctionRow{.name = "str", .id = Function::Str, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "count", .id = Function::Count, .min_args = 0, .max_args = 0},
    FunctionRow{.name = "sum", .id = Function::Sum, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "avg", .id = Function::Avg, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "min", .id = Function::Min, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "max", .id = Function::Max, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "stats", .id = Function::Stats, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "hist", .id = Function::Hist, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "lhist", .id = Function::LHist, .min_args = 4, .max_args = 4},
    FunctionRow{.name = "strncmp", .id = Function::Strncmp, .min_args = 3, .max_args = 3},
    FunctionRow{.name = "strlen", .id = Function::Strlen, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "bswap", .id = Function::Bswap, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "ntop", .id = Function::Ntop, .min_args = 1, .max_args = 3},
    FunctionRow{.name = "ksym", .id = Function::Ksym, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "usym", .id = Function::Usym, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "kstack", .id = Function::KstackCall, .min_args = 0, .max_args = 2},
    FunctionRow{.name = "ustack", .id = Function::UstackCall, .min_args = 0, .max_args = 2},
    FunctionRow{.name = "has_key", .id = Function::HasKey, .min_args = 2, .max_args = 2},
    FunctionRow{.name = "pton", .id = Function::Pton, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "buf", .id = Function::Buf, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "macaddr", .id = Function::Macaddr, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "join", .id = Function::Join, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "strftime", .id = Function::Strftime, .min_args = 2, .max_args = 2},
    FunctionRow{.name = "cgroupid", .id = Function::Cgroupid, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "cat", .id = Function::Cat, .min_args = 1, .max_args = 64},
    FunctionRow{.name = "signal", .id = Function::Signal, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "system", .id = Function::System, .min_args = 1, .max_args = 64},
    FunctionRow{.name = "len", .id = Function::Len, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "kaddr", .id = Function::Kaddr, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "strcontains", .id = Function::Strcontains, .min_args = 2, .max_args = 2},
    FunctionRow{.name = "strstr", .id = Function::Strstr, .min_args = 2, .max_args = 2},
    FunctionRow{.name = "strerror", .id = Function::Strerror, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "syscall_name", .id = Function::SyscallName, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "signal_name", .id = Function::SignalName, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "errorf", .id = Function::Errorf, .min_args = 1, .max_args = 64},
    FunctionRow{.name = "warnf", .id = Function::Warnf, .min_args = 1, .max_args = 64},
    FunctionRow{.name = "memcmp", .id = Function::Memcmp, .min_args = 3, .max_args = 3},
    FunctionRow{.name = "getopt", .id = Function::Getopt, .min_args = 1, .max_args = 3},
    FunctionRow{.name = "uaddr", .id = Function::Uaddr, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "reg", .id = Function::Reg, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "kptr", .id = Function::Kptr, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "uptr", .id = Function::Uptr, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "percpu_kaddr", .id = Function::PercpuKaddr, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "cgroup_path", .id = Function::CgroupPath, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "path", .id = Function::Path, .min_args = 1, .max_args = 2},
    FunctionRow{.name = "override", .id = Function::Override, .min_args = 1, .max_args = 1},
    FunctionRow{.name = "in_list", .id = Function::InList, .min_args = 2, .max_args = 2},
    FunctionRow{.name = "strcat", .id = Function::Strcat, .min_args = 1, .max_args = 32},
    FunctionRow{.name = "under_cgroup", .id = Function::UnderCgroup, .min_args = 1, .max_args = 1},
};
static_assert(kFunctions.size() == static_cast<size_t>(Function::UnderCgroup) + 1, "one row per Function, in order");

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

// Other spellings of a function: hist() was quantize() in bpftrace's first
// releases (2018), and is in ply.
constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kFunctionAliases = {{{"quantize", "hist"}}};

const FunctionRow* find_function(std::string_view name) {
  for (const auto& [alias, real] : kFunctionAliases)
    if (name == alias) name = real;
  for (const auto& row : kFunctions)
    if (!row.name.empty() && row.name == name) return &row;
  return nullptr;
}

const FunctionRow& function_row(Function f) { return kFunctions[static_cast<size_t>(f)]; }

bool is_aggregation(Function f) {
  switch (f) {
    case Function::Count:
    case Function::Sum:
    case Function::Avg:
    case Function::Min:
    case Function::Max:
    case Function::Stats:
    case Function::Hist:
    case Function::LHist: return true;
    case Function::None:
    case Function::Printf:
    case Function::Exit:
    case Function::Print:
    case Function::Clear:
    case Function::Zero:
    case Function::Delete:
    case Function::Time:
    case Function::Str:
    case Function::Strncmp:
    case Function::Strlen:
    case Function::Bswap:
    case Function::Ntop:
    case Function::Ksym:
    case Function::Usym:
    case Function::KstackCall:
    case Function::UstackCall:
    case Function::HasKey:
    case Function::Pton:
    case Function::Buf:
    case Function::Macaddr:
    case Function::Join:
    case Function::Strftime:
    case Function::Cgroupid:
    case Function::Kaddr:
    case Function::Cat:
    case Function::Signal:
    case Function::System:
    case Function::Len:
    case Function::Strcontains:
    case Function::Strstr:
    case Function::Strerror:
    case Function::SyscallName:
    case Function::SignalName:
    case Function::Errorf:
    case Function::Warnf:
    case Function::Memcmp:
    case Function::Getopt:
    case Function::Uaddr:
    case Function::Reg:
    case Function::Kptr:
    case Function::Uptr:
    case Function::PercpuKaddr:
    case Function::CgroupPath:
    case Function::Path:
    case Function::Override:
    case Function::InList:
    case Function::Strcat:
    case Function::UnderCgroup: return false;
  }
  std::unreachable();
}

}  // namespace bpfscope::sema
