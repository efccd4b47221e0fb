// Kernel interface: tracefs and tracepoint formats, maps, program load with the
// verifier log, and attach. Uses libbpf's low-level fd API only (DESIGN.md,
// Contract): no bpf_object. Every kernel object is a move-only owner that
// closes on destruction, so every exit path detaches.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bpfscope::bpf {

// An error from the kernel interface: errno plus a readable message that names
// what failed ("perf_event_open(tracepoint syscalls:sys_enter_openat): ...").
struct Error {
  int err = 0;  // positive errno
  std::string message;
};

template <typename T>
using Result = std::expected<T, Error>;

// Owns one file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// ---- tracefs and tracepoints ----

// Mounts tracefs on /sys/kernel/tracing if it is not mounted. Returns the
// tracefs root ("/sys/kernel/tracing").
Result<std::string> tracefs_root();

struct TracepointField {
  std::string name;       // "filename"
  std::string type;       // as in the format file: "const char *", "int", "char[16]"
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  bool data_loc = false;  // __data_loc: the u32 at offset holds (len << 16 | offset)
  uint32_t array_len = 0; // for "char comm[16]": 16; 0 if not an array
  // Added: "__rel_loc" (data_loc is set too): the data offset in the u32 is
  // relative to the end of this field, not to the start of the record.
  bool rel_loc = false;

  // "char", "unsigned char", "const char": text, as opposed to other byte
  // arrays (__u8 saddr[4]).
  bool is_char() const { return type.rfind("char", 0) == 0 || type.find(" char") != std::string::npos; }
};

struct TracepointFormat {
  std::string category;
  std::string event;
  uint32_t id = 0;
  std::vector<TracepointField> fields;  // without the common_* fields
};

// Reads events/<category>/<event>/format. ENOENT when the event does not exist.
// Field types: "__data_loc char[] name" gives type "char[]" with data_loc set;
// "char comm[16]" gives "char[16]" with array_len 16; "char buf[]" gives "char[]".
Result<TracepointFormat> read_tracepoint_format(std::string_view category, std::string_view event);

// Added: parses the text of a format file (what read_tracepoint_format does
// after reading it). EINVAL when a field line cannot be parsed.
Result<TracepointFormat> parse_tracepoint_format(std::string_view category, std::string_view event,
                                                 std::string_view text);

// All tracepoints "category:event" matching a glob pattern over both parts
// ("syscalls:sys_enter_*", "*:*"), sorted.
Result<std::vector<std::string>> list_tracepoints(std::string_view category_glob, std::string_view event_glob);

// fnmatch-style match with '*' and '?' (no brackets), used for all probe wildcards.
bool glob_match(std::string_view pattern, std::string_view text);

// ---- maps and programs ----

Result<Fd> create_map(bpf_map_type type, std::string_view name, uint32_t key_size, uint32_t value_size,
                      uint32_t max_entries, uint32_t flags = 0);

struct LoadError {
  int err = 0;          // positive errno from BPF_PROG_LOAD
  std::string log;      // the verifier log (may be empty)
};

struct ProgramSpec {
  bpf_prog_type type = BPF_PROG_TYPE_TRACEPOINT;
  bpf_attach_type expected_attach_type = static_cast<bpf_attach_type>(0);
  uint32_t attach_btf_id = 0;  // tp_btf (issue 3)
  std::string name;            // up to 15 characters are kept by the kernel
  std::span<const bpf_insn> insns;
  uint32_t log_level = 0;      // 0: log only on failure (retried with level 1); 1/2: always
  // Bytes of the verifier log buffer (config log_size): a log that does not
  // fit makes the load fail with ENOSPC.
  uint32_t log_size = 1000000;
  std::string license = "GPL";  // the kernel allows GPL-only helpers to a GPL-compatible license
  // Start instructions of the callback subprograms appended after the main
  // program (bpf_for_each_map_elem bodies), ascending. The kernel wants BTF
  // func_info for a program that takes a subprogram's address
  // (BPF_PSEUDO_FUNC: "missing btf func_info"), so a small BTF blob
  // describing each function is loaded with it.
  std::vector<uint32_t> subprograms;
};

struct Loaded {
  Fd fd;
  std::string log;  // verifier log when log_level > 0
};

std::expected<Loaded, LoadError> load_program(const ProgramSpec& spec);

// How many times the kernel skipped the program because a BPF program was
// already running on that CPU (bpf_prog_info.recursion_misses: a tracepoint
// that fires in an interrupt while a tracepoint program runs, for one); 0
// when the kernel does not say.
uint64_t recursion_misses(int prog_fd);

// Runs a program once with BPF_PROG_TEST_RUN (used for BEGIN/END, loaded as
// BPF_PROG_TYPE_RAW_TRACEPOINT). Returns the program's return value.
Result<uint32_t> run_once(int prog_fd);

// Runs a packet program (BPF_PROG_TYPE_XDP: bench probes) `repeat` times in
// one BPF_PROG_TEST_RUN on a zeroed Ethernet-header-sized packet.
struct RepeatedRun {
  uint32_t retval = 0;      // the last run's return value
  uint64_t average_ns = 0;  // the kernel's mean time per run
};
Result<RepeatedRun> run_repeated(int prog_fd, uint32_t repeat);

// ---- attach ----

// An attached probe: the perf event (if any) and the BPF link. Closing both
// detaches.
struct Link {
  Fd perf;
  Fd link;
};

// A classic tracepoint, system-wide: perf_event_open(PERF_TYPE_TRACEPOINT)
// then bpf_link_create(BPF_PERF_EVENT), falling back to PERF_EVENT_IOC_SET_BPF.
// Note: `pid` does not filter what the program sees. The kernel runs a
// tracepoint's BPF programs for every task (they hang off the tracepoint, not
// the perf event), so filter on bpf_get_current_pid_tgid() in the program.
Result<Link> attach_tracepoint(int prog_fd, uint32_t tracepoint_id, int pid = -1);

// Counts, for a classic tracepoint, the firings for which the kernel ran no
// BPF program: one counting perf event per online CPU on the tracepoint.
// The kernel hands a firing to the tracepoint's perf events only when its
// BPF programs did not take it (none ran, or one returned non-zero); a
// program that always returns 0 therefore leaves these counters at 0 for
// every firing it ran for. Open them after the program is attached and read
// them before it is detached. docs/accuracy.md says when the kernel skips.
struct SkipCounters {
  std::vector<Fd> per_cpu;
  uint64_t total() const;  // the sum over CPUs
};
Result<SkipCounters> count_skipped_firings(uint32_t tracepoint_id);

// Runs an iterator program (iter:) once over all its objects.
Result<void> run_iterator(int prog_fd);

// A raw tracepoint (BPF_RAW_TRACEPOINT_OPEN) by event name; the program gets
// the tracepoint's raw u64 arguments. An empty name attaches a tp_btf program
// (its event was fixed at load by attach_btf_id), and likewise an fentry/fexit
// program (BPF_PROG_TYPE_TRACING loaded with the function's attach_btf_id).
Result<Link> attach_raw_tracepoint(int prog_fd, const std::string& event);

// A uprobe or uretprobe through the uprobe PMU at a file offset of `path`,
// for all processes (pid -1) or one.
// ref_ctr_offset: file offset of a USDT semaphore to increment, or 0.
Result<Link> attach_uprobe(int prog_fd, const std::string& path, uint64_t offset, bool retprobe, int pid = -1,
                           uint64_t ref_ctr_offset = 0);

// A kprobe or kretprobe on a kernel function (plus an offset into it, 0 for
// its entry) through the kprobe PMU, then a BPF link (PERF_EVENT_IOC_SET_BPF
// on kernels without perf links). As with tracepoints, `pid` does not filter
// what the program sees. Without a kprobe PMU (CONFIG_KPROBES off) it fails
// with a message that names what is missing; tracefs kprobe_events (kernels
// before 4.17) is not used.
Result<Link> attach_kprobe(int prog_fd, const std::string& func, uint64_t offset, bool retprobe, int pid = -1);

// Why the kernel refuses a sampling frequency of `hz` (above
// kernel.perf_event_max_sample_rate, which it may lower by itself when
// sampling takes too long), or "" when it takes it.
std::string sample_frequency_refused(uint64_t hz);

// A perf software event (PERF_TYPE_SOFTWARE, config e.g. PERF_COUNT_SW_CPU_CLOCK)
// on one CPU (cpu >= 0) or, with cpu = -1, one event per online CPU.
// `period` is the sample period, or the frequency when `freq` is set.
Result<std::vector<Link>> attach_perf_software(int prog_fd, uint64_t config, uint64_t period, bool freq,
                                               int cpu, int pid = -1);

// Online CPU ids (from /sys/devices/system/cpu/online), and the possible count.
std::vector<int> online_cpus();
int possible_cpus();

// Waits until every BPF program that is running now has returned. Programs
// run inside RCU read-side sections, and membarrier's global command waits
// one RCU grace period (8-20 ms here). Where it is refused (nohz_full
// CPUs), a 20 ms sleep stands in: far longer than any program runs.
void wait_for_programs();

// Why an fentry (or fexit) program on `function` cannot load here, found by
// loading an empty one; "" when it can.
std::string fentry_unavailable(std::string_view function, bool exit);

// --info: the probe types, map types and helpers this kernel accepts, found
// by loading and creating small objects.
std::string kernel_info();

// Whether the kernel offers a mechanism, probed without side effects
// (kprobe PMU, fentry loads, ...). For the error messages of missing probes.
bool has_kprobe_support();

}  // namespace bpfscope::bpf
