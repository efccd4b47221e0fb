// Semantic analysis: probe expansion, scoping, types, map layouts and the
// tables of asynchronous actions the runtime executes. Input: the AST; output:
// a TypedProgram that the IR lowering and the runtime read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <expected>
#include <memory>

#include "bpf/bpf.h"
#include "bpf/btf.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "output/output.h"
#include "sema/types.h"

namespace bpfscope::builtins {
struct Function;
const Function* find(std::string_view name);
}  // namespace bpfscope::builtins

namespace bpfscope::sema {

// ORDER ProbeKind: the provider table in probes.cpp has one row per kind.
enum class ProbeKind {
  Begin, End, Tracepoint, RawTracepoint, Interval, Profile, Software, Uprobe, Uretprobe, Usdt, Iter,
  Kprobe, Kretprobe, Fentry, Fexit, Hardware, Bench, Signal,
};

// One USDT argument, from the note's spec ("-4@%eax", "8@-20(%rbp)", "4@$5").
struct UsdtArg {
  enum class Kind { Register, Constant, Memory } kind = Kind::Constant;
  uint32_t size = 8;       // bytes
  bool is_signed = false;  // a negative size in the spec
  int32_t reg = 0;         // Register, Memory: offset of the register in struct pt_regs
  int64_t value = 0;       // Constant: the value; Memory: the displacement
};

// One expanded attach point.
struct AttachTarget {
  std::string name;              // full name as `probe` prints it: "tracepoint:syscalls:sys_enter_read"
  bpf::TracepointFormat format;  // Tracepoint
  uint64_t period = 0;           // Interval/Profile: period in ns, or frequency when freq;
                                 // Software: the event count between samples
  bool freq = false;
  uint64_t perf_config = 0;      // Software: PERF_COUNT_SW_*
  std::string path;              // Uprobe: the binary or library
  uint64_t offset = 0;           // Uprobe: file offset of the probed instruction
  std::string func;              // Uprobe: the function (`func` builtin); Usdt: provider:name
  uint64_t ref_ctr = 0;          // Usdt: file offset of the semaphore (0: none)
  std::vector<UsdtArg> usdt_args;
  uint32_t btf_id = 0;           // Iter: the kernel's bpf_iter_NAME function; RawTracepoint: its btf_trace_<event>
                                 // typedef (0: none, attach as raw_tp). Both go to attach_btf_id.
  lang::Loc loc;                 // the attach point in the source
};

// One BPF program: an AST probe compiled for one or several attach targets.
// A probe whose body depends on the attach point (args, probe) gets one
// program per target; otherwise one program serves all targets.
struct ProgramUnit {
  uint32_t probe_index = 0;  // into ast.probes
  ProbeKind kind = ProbeKind::Begin;
  // How it attaches: `kind`, except that a kprobe runs as fentry (kretprobe
  // as fexit) on a kernel without kprobes, and the reverse (DESIGN.md,
  // attach strategy). The context layout follows the mechanism.
  ProbeKind mechanism = ProbeKind::Begin;
  // Why the kernel refuses fentry/fexit here, when choosing the mechanism
  // asked it ("" when it accepts, or was not asked): the attach error.
  std::string fentry_refused;
  std::vector<AttachTarget> targets;
  std::string name;          // program name for the kernel (truncated to 15)
  // The name bpftrace's messages give the program: the attach point with
  // '_' for other characters than letters, digits and '_', then '_' and the
  // probe's number from 1 (begin_1, tracepoint_syscalls_sys_enter_read_2).
  std::string message_name;
};

struct MapInfo {
  std::string name;  // "@x"
  output::AggKind agg = output::AggKind::Plain;
  bool keyed = false;
  Type key;    // Tuple for multi-keys; None for scalar maps
  Type key_written;  // the key as the script writes it (integers at their own width: int8 for 1), for messages
  Type value;  // Plain maps: the stored type; aggregations: the argument type
  output::HistParams hist;
  output::TSeriesParams tseries;  // tseries()
  uint32_t key_size = 0;    // bytes of the kernel key (8 for scalar maps: key 0)
  uint32_t value_size = 0;  // bytes of one (per-CPU) kernel value
  bool percpu = false;
  bool lru = false;  // declared lruhash/percpulruhash: the kernel evicts old entries when full
  uint32_t max_entries = 4096;  // max_map_keys, or the declared size
  lang::Loc first_use;

  // hist() and lhist(): the number of buckets. Their value is the bucket
  // counts, then the sum of the values recorded (at 8 * hist_buckets()).
  uint32_t hist_buckets() const {
    return agg == output::AggKind::Hist ? output::hist_bucket_count(hist.bits)
                                        : output::lhist_bucket_count(hist.min, hist.max, hist.step);
  }
};

// ORDER Builtin: the builtin table in builtins.cpp has one row per kind.
// ORDER ActionKind: the runtime's action table has one row per kind.
enum class ActionKind { Printf, Exit, Print, PrintValue, Table, Clear, Zero, Time, Join, Cat, System, Errorf, Warnf };

// An asynchronous action: the BPF program writes a record
// [u64 action id][arguments] to the ring buffer and user space performs it.
struct Action {
  ActionKind kind = ActionKind::Printf;
  std::string format;               // Printf, Cat, System, Errorf, Warnf: the format; Time: the strftime format; Print: the name to print the map under ("" its own);
                                    // Join: the separator
  output::PrintfFormat printf_format;
  std::vector<Type> args;           // argument types, in record order
  // Printf: the argument names of printf("...", pid=pid) (a bpfscope
  // extension), one per argument; empty when unnamed. With -f json such a
  // printf is an "event" object rather than text.
  std::vector<std::string> arg_names;
  // Printf: the name of the format, printf(msg = "dev %d", ...): with -f json
  // the formatted text is a field of the event under that name ("" none).
  std::string text_name;
  // Printf and its siblings: per argument, the floating-point literal that
  // divides it (printf("%.2f", $bytes / 1024.0), a bpfscope extension), or 0.
  // The record carries the integer dividend; user space divides as a double.
  std::vector<double> divisors;
  // Printf: the record's last argument (after the format's) is the CPU that
  // sent it, so that a line printed in pieces (formats that do not end in a
  // newline) is put together per CPU, never mixed with another CPU's pieces.
  bool with_cpu = false;
  std::vector<uint32_t> offsets;    // byte offset of each argument in the record (after the id)
  uint32_t record_size = 8;         // id included
  int32_t map = -1;                 // Print, Clear, Zero: index into maps
  // Print and Table: the maps that a clear() or zero() right after the print
  // empties (print(@m); clear(@m)), and of those the zeroed ones. User space
  // empties each as it reads it, so an event counted meanwhile is printed
  // next time instead of being deleted unread. Such a clear() or zero() is
  // `folded`: it sends nothing.
  std::vector<int32_t> taken;
  std::vector<int32_t> zeroed;
  bool folded = false;
  // Table (print((@a, @b / 1024), rows, "FORMAT", "NAMES"), a bpfscope
  // extension): the joined maps, each one's divisor; the row format is
  // printf_format and the column names arg_names.
  std::vector<int32_t> table_maps;
  int32_t table_sort_map = -1;  // Table: the map that orders the rows (-1: the sum of the columns)
  std::vector<output::TableDivisor> table_divisors;
  bool table_hist = false;          // print((@usecs, @AVG)): a histogram with notes
  uint32_t probe_index = 0;         // the AST probe that sends it
  lang::Loc loc;
  std::vector<lang::Loc> expanded_from;  // Errorf, Warnf in a macro: the calls that expanded it, innermost first
  // Errorf of assert(): the run then ends with this exit code, as exit() does.
  std::optional<int> then_exit;
};

// A field of a kernel struct read through BTF: the bytes at base + offset
// (a bitfield: `bits` bits starting `shift` bits into them).
struct FieldAccess {
  uint32_t offset = 0;
  uint32_t bits = 0;   // 0: not a bitfield
  uint32_t shift = 0;
};

// uaddr("sym") in a program for one attach target (binary `path`, probed
// instruction at file `offset`): the symbol's run-time address is `value` in a
// binary loaded where it was linked (ET_EXEC), else the run-time address of the
// probed instruction (bpf_get_func_ip) plus `value`, the symbol's vaddr minus
// the probed instruction's vaddr (PIE executables, shared libraries).
struct UaddrSite {
  std::string path;
  uint64_t offset = 0;
  bool relative = false;
  int64_t value = 0;
};

// config's missing_probes: what an attach point that matches nothing is.
enum class MissingProbes { Error, Warn, Ignore };

// The environment's settings (BPFTRACE_MAX_STRLEN...), then the script's
// config block over them.
// config unstable_*: a feature bpftrace marks unstable is used freely,
// with a warning, or not at all.
enum class Unstable { Enable, Warn, Error };

struct Config {
  uint32_t max_strlen = 1024;
  uint32_t max_map_keys = 4096;
  bool print_maps_on_exit = true;
  MissingProbes missing_probes = MissingProbes::Error;  // skipped with a warning, or silently
  Unstable unstable_tseries = Unstable::Warn;
  std::string license = "GPL";  // given to the kernel with each program: one of bpftrace's GPL-compatible ones
  uint32_t log_size = 1000000;  // bytes of the kernel's verifier log buffer
  // The keys the environment set (BPFTRACE_MAX_STRLEN: max_strlen): as in
  // bpftrace, they win over the script's config block.
  std::set<std::string> from_environment;
};

// The settings of the environment (BPFTRACE_MAX_STRLEN, BPFTRACE_LICENSE,
// BPFTRACE_LOG_SIZE...), over `config`: false after a bad value, reported
// unlocated to diags.
bool config_from_environment(Config& config, lang::Diagnostics& diags);

struct TypedProgram {
  const lang::Program* ast = nullptr;
  std::vector<Type> expr_types;   // by ExprId
  std::vector<int32_t> var_of;    // by ExprId: scratch-variable index for Variable exprs, else -1
  std::vector<Type> var_types;    // by variable index
  std::set<int32_t> addressed_vars;  // variables whose address `&$x` takes: integers are mirrored in scratch
  std::vector<int32_t> map_of;    // by ExprId: index into maps for Map exprs, else -1
  std::vector<int32_t> action_of; // by ExprId: index into actions for calls that send records
  // by ExprId: calls and builtin variables (Identifier exprs), their entry
  // (src/builtins/)
  std::vector<const builtins::Function*> function_of;
  std::vector<FieldAccess> field_of;  // by ExprId: BTF struct field reads (Field exprs)
  std::vector<int32_t> for_var_of;    // by ExprId of a for-range start: the loop variable
  // by ExprId: enum constants, sizeof, offsetof; == and != of two constant strings (1 or 0)
  std::vector<std::optional<int64_t>> const_of;
  std::map<lang::ExprId, std::vector<UaddrSite>> uaddr_of;  // uaddr() calls: one site per attach target
  std::map<lang::ExprId, std::vector<int64_t>> in_list_of;  // in_list() calls: the listed integers
  // under_cgroup() calls: the cgroup's id and its level (the root is 0), or
  // kEveryCgroup for under_cgroup(""), which is true.
  std::map<lang::ExprId, std::pair<uint64_t, uint32_t>> under_cgroup_of;
  static constexpr uint32_t kEveryCgroup = UINT32_MAX;
  // if statements whose condition the command line decides (getopt() flags
  // and integers, compares of known strings, under_cgroup(""), and !, &&,
  // || of them): the
  // branch taken. Only that branch is checked and lowered.
  std::map<lang::StmtId, bool> known_if;
  // vmlinux BTF, loaded on first use (casts, curtask, enum constants); for
  // sema and lowering, and for printing enum values by name (main releases
  // it before the load when nothing prints an enum).
  std::shared_ptr<const bpf::Btf> btf;
  std::vector<MapInfo> maps;
  std::vector<Action> actions;
  std::vector<ProgramUnit> units;
  Config config;
  std::vector<std::string> positional;  // $1..$N as given
  std::vector<std::string> strftime_formats;  // by the index a Timestamp value carries
  // getopt(): the named options after `--` (`--n=5` gives "5", a bare `--flag`
  // nullopt), the names the program asks for, and the string values (by the
  // index const_of holds for a string getopt(); also pton()'s bytes).
  std::map<std::string, std::optional<std::string>> named_args;
  std::set<std::string> getopt_names;
  std::vector<std::string> const_strings;
  // skboutput(path, skb, len, offset): the pcap files (one per path), and by
  // call (the index const_of holds for the call) its file and offset.
  struct SkbOutput {
    uint32_t file;
    uint64_t offset;
  };
  std::vector<std::string> skboutput_files;
  std::vector<SkbOutput> skboutputs;
  uint32_t join_elem_size = 0;  // join(): bytes of each element in the record
  bool unsafe = false;          // --unsafe was given
  bool has_child = false;               // -c: cpid is defined
  bool uses_kstack = false, uses_ustack = false;  // stack maps are needed
  bool uses_build_id_stack = false;              // ustack(build_id)
  bool has_end = false;
  bool only_begin_end = true;  // auto-exit after BEGIN (0.24)
  // Output actions (printf, print, time) sent from probes other than
  // BEGIN/END: such programs get a large ring buffer (the printf target of
  // DESIGN.md), the others a small one (RSS).
  bool streams_output = false;
  // Without streams_output: the bytes of records one run of BEGIN and END
  // can send, or 0 when a loop makes it unbounded or other probes send more
  // than exit().
  uint32_t begin_end_record_bytes = 0;

  const Type& type_of(lang::ExprId e) const { return expr_types[e]; }
};

struct Options {
  std::vector<std::string> positional;
  bool has_child = false;  // -c given: cpid is defined
  Config config;
  bool dry_run = false;  // attach points are still resolved
  bool unsafe = false;   // --unsafe: system() and signal() are allowed
  int target_pid = -1;   // -p: usdt:* searches the files this process maps
  std::string child_program;  // -c: the command's program (its first word); usdt:* searches its files
  std::map<std::string, std::optional<std::string>> named_args;  // getopt(): --name[=value] after --
  // Named args the command line implies rather than the user gives (-f folded
  // sets --folded): no error when the program does not ask for them.
  std::set<std::string> implied_args;
  // --probe-filter REGEX (ECMAScript, already checked): only the targets
  // whose name it matches somewhere are attached; BEGIN and END always are.
  std::string probe_filter;
  // What the kernel allows, for choosing between kprobe and fentry: -1 asks
  // the kernel; 0 or 1 fixes the answer (tests).
  int kprobes = -1;
  int fentry = -1;
  // The builtin functions' entries by name (src/builtins/, which links
  // after sema and ir).
  const builtins::Function* (*find_function)(std::string_view name) = builtins::find;
};

// Returns nullopt when errors were reported to diags.
std::optional<TypedProgram> analyse(const lang::Program& program, const Options& options, lang::Diagnostics& diags);

// Whether a builtin of this name takes `args` arguments (lang::parse's
// BuiltinTakes: which calls a script's macro of the same name leaves alone).
bool builtin_takes(std::string_view name, size_t args);

// Text of the typed program for -d sema.
std::string dump(const TypedProgram& program);

// The canonical provider name of a kind ("tracepoint", "uprobe").
const char* probe_kind_name(ProbeKind k);

// The provider table, for -l and for error messages.
std::optional<ProbeKind> probe_kind_from_name(std::string_view provider);

// Whether the program prints a value of a kernel enum (by its name, which
// the runtime finds in the BTF) or a struct (print($s), laid out by the
// BTF): the BTF must then outlive compilation.
bool prints_enums(const TypedProgram& program);

// -l [PATTERN]: the probes matching PATTERN, one per line ("" lists the
// tracepoints, raw tracepoints, software events and the interval and
// profile units; also uprobe:BIN:FUNC, usdt:BIN:[PROVIDER:]NAME, iter:NAME,
// kprobe:FUNC, fentry:vmlinux:FUNC). A PATTERN without ':' is matched
// against the whole names of that list ("*sched_switch*"); "struct NAME"
// names a kernel struct; several PATTERNs are separated by commas. With
// `verbose` (-lv) each probe is followed by its arguments, indented 4
// spaces, and a struct by its definition. pid is -p's process (-1: none):
// usdt:* lists the files it maps. Returns an error message for a provider
// that cannot be listed.
std::expected<std::string, std::string> list_probes(std::string_view pattern, bool verbose, int pid = -1);

// -l FILE: the probes of a script's attach points, listed as -l lists each
// (BEGIN and END have no listing).
std::expected<std::string, std::string> list_script_probes(const lang::Program& program, bool verbose, int pid = -1);

// The BTF-typed arguments of a target whose context is an array of u64
// arguments: a raw tracepoint's (tp_btf prototype) or an fentry/fexit
// function's. nullopt for other kinds, or when BTF lacks the prototype.
std::optional<std::vector<bpf::BtfParam>> btf_args(const bpf::Btf& btf, ProbeKind kind, const AttachTarget& t);

}  // namespace bpfscope::sema
