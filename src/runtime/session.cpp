// One run of a compiled program: maps, load, attach, BEGIN, event loop, END,
// map printing.
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bpf/bpf.h"
#include "bpf/libbpf_bpf.h"
#include "cookbook/cookbook.h"
#include "lang/diagnostics.h"
#include "runtime/clock.h"
#include "runtime/maps.h"
#include "runtime/metrics.h"
#include "runtime/packets.h"
#include "runtime/printer.h"
#include "runtime/ring_reader.h"
#include "runtime/runtime.h"
#include "runtime/symbolizer.h"
#include "runtime/verifier_log.h"

namespace bpfscope::runtime {
namespace {

// How a print reads a map: a print that a clear() or zero() follows
// empties it as it reads it (Session::empty_map).
enum class Read { Keep, Clear, Zero };

Read read_mode(const sema::Action& a, int32_t m) {
  if (std::find(a.zeroed.begin(), a.zeroed.end(), m) != a.zeroed.end()) return Read::Zero;
  return std::find(a.taken.begin(), a.taken.end(), m) != a.taken.end() ? Read::Clear : Read::Keep;
}

bpf_prog_type prog_type(sema::ProbeKind k) {
  switch (k) {
    case sema::ProbeKind::Begin:
    case sema::ProbeKind::End:
    case sema::ProbeKind::Signal: return BPF_PROG_TYPE_RAW_TRACEPOINT;
    case sema::ProbeKind::Tracepoint: return BPF_PROG_TYPE_TRACEPOINT;
    case sema::ProbeKind::RawTracepoint: return BPF_PROG_TYPE_RAW_TRACEPOINT;
    case sema::ProbeKind::Interval: return BPF_PROG_TYPE_RAW_TRACEPOINT;  // run by a timer in bpfscope
    case sema::ProbeKind::Software:
    case sema::ProbeKind::Profile:
    case sema::ProbeKind::Hardware: return BPF_PROG_TYPE_PERF_EVENT;
    case sema::ProbeKind::Uprobe:
    case sema::ProbeKind::Uretprobe:
    case sema::ProbeKind::Usdt:
    case sema::ProbeKind::Kprobe:
    case sema::ProbeKind::Kretprobe: return BPF_PROG_TYPE_KPROBE;
    case sema::ProbeKind::Iter:
    case sema::ProbeKind::Fentry:
    case sema::ProbeKind::Fexit: return BPF_PROG_TYPE_TRACING;
    case sema::ProbeKind::Bench: return BPF_PROG_TYPE_XDP;  // the kernel repeats its test runs
  }
  std::unreachable();
}

// Why this kernel cannot run a probe kind, or "" when it can.
std::string unavailable_reason(sema::ProbeKind k) {
  switch (k) {
    case sema::ProbeKind::Kprobe:
    case sema::ProbeKind::Kretprobe:
      if (bpf::has_kprobe_support()) return "";
      return "kprobes are not available on this kernel (no kprobe PMU in /sys/bus/event_source/devices and no "
             "kprobe_events in tracefs: CONFIG_KPROBES is off)";
    case sema::ProbeKind::Fentry:
    case sema::ProbeKind::Fexit:
      return "";  // asked per function by sema (ProgramUnit::fentry_refused)
    case sema::ProbeKind::Hardware:
      return "hardware perf events are not available: this machine has no hardware PMU";
    case sema::ProbeKind::Begin:
    case sema::ProbeKind::End:
    case sema::ProbeKind::Tracepoint:
    case sema::ProbeKind::RawTracepoint:
    case sema::ProbeKind::Interval:
    case sema::ProbeKind::Profile:
    case sema::ProbeKind::Software:
    case sema::ProbeKind::Uprobe:
    case sema::ProbeKind::Uretprobe:
    case sema::ProbeKind::Usdt:
    case sema::ProbeKind::Bench:
    case sema::ProbeKind::Signal:
    case sema::ProbeKind::Iter: return "";
  }
  std::unreachable();
}

// The clock strftime() formats: boot-clock ns plus this offset are ns since
// the epoch (bpftrace converts nsecs the same way).
int64_t boot_to_realtime_ns() {
  timespec rt, bt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_BOOTTIME, &bt);
  return (static_cast<int64_t>(rt.tv_sec) - bt.tv_sec) * 1000000000ll + (rt.tv_nsec - bt.tv_nsec);
}

// Names what decoded values refer to: stacks and symbols through the
// symbolizer, strftime() timestamps through the program's formats, enum
// values through BTF.
class ValueNames : public Resolver {
 public:
  ValueNames(const Symbolizer& symbols, const std::vector<std::string>& formats, const bpf::Btf* btf)
      : symbols_(symbols), formats_(formats), btf_(btf), offset_(boot_to_realtime_ns()) {}

  output::Value stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const override {
    return symbols_.stack(user, id, pid, limit, mode);
  }
  std::string symbol(bool user, uint64_t addr, uint32_t pid) const override { return symbols_.symbol(user, addr, pid); }
  std::string timestamp(uint64_t format, uint64_t boot_ns) const override {
    if (format >= formats_.size()) return "(?)";
    return output::format_time(formats_[format], static_cast<uint64_t>(static_cast<int64_t>(boot_ns) + offset_));
  }
  std::optional<std::string> enumerator(uint32_t enum_id, int64_t v) const override {
    return btf_ ? btf_->enumerator_name(enum_id, v) : std::nullopt;
  }
  const bpf::Btf* btf() const override { return btf_; }

 private:
  const Symbolizer& symbols_;
  const std::vector<std::string>& formats_;
  const bpf::Btf* btf_;
  int64_t offset_;
};

// cat(): at most max_bytes of the file, or an error on stderr as bpftrace
// prints it.
std::optional<std::string> read_head(const std::string& path, uint32_t max_bytes) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) {
    fmt::print(stderr, "ERROR: failed to open file '{}' ({})\n", path, strerror(errno));
    return std::nullopt;
  }
  std::string text(max_bytes, '\0');
  size_t n = fread(text.data(), 1, max_bytes, f);
  fclose(f);
  text.resize(n);
  return text;
}

// The name bpftrace's messages give a helper (BPF_FUNC_*), for the helpers
// whose failures are reported (ir::HelperSite).
std::string_view helper_name(int helper) {
  switch (helper) {
    case BPF_FUNC_map_update_elem: return "map_update_elem";
    case BPF_FUNC_probe_read: return "probe_read";
    case BPF_FUNC_probe_read_str: return "probe_read_str";
    case BPF_FUNC_probe_read_user: return "probe_read_user";
    case BPF_FUNC_probe_read_user_str: return "probe_read_user_str";
    case BPF_FUNC_probe_read_kernel: return "probe_read_kernel";
    case BPF_FUNC_probe_read_kernel_str: return "probe_read_kernel_str";
    case BPF_FUNC_get_stackid: return "get_stackid";
    case BPF_FUNC_map_lookup_elem: return "map_lookup_elem";
    case ir::kDivideByZero: return "";
    default: return "helper";
  }
}

// The message of a failed helper call: a full map says so, with what to
// change; others are "Failed to HELPER: strerror (-errno)".
std::string helper_error_message(const sema::TypedProgram& p, const ir::HelperSite& site, int ret) {
  if (site.helper == ir::kDivideByZero)
    return "Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.";
  if (site.helper == BPF_FUNC_map_lookup_elem) return "Can't lookup map element because it does not exist.";
  if (site.helper == BPF_FUNC_map_update_elem && ret == -E2BIG && site.map >= 0) {
    const auto& m = p.maps[site.map];
    return fmt::format(
        "Map full; can't update element of {} ({} entries). Try increasing max_map_keys "
        "(BPFTRACE_MAX_MAP_KEYS) or the size in a map declaration, e.g. `let {} = {}({});`",
        m.name, m.max_entries, m.name, m.percpu ? "percpuhash" : "hash", uint64_t{m.max_entries} * 2);
  }
  return fmt::format("Failed to {}: {} ({})", helper_name(site.helper), strerror(-ret), ret);
}

// system(): the command's standard output (its stderr goes to ours).
std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    fmt::print(stderr, "ERROR: system(): cannot run '{}': {}\n", cmd, strerror(errno));
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// An SVG written at exit (--flamegraph, --heatmap). Opened before anything
// is traced, so that a path that cannot be written fails first; a run that
// ends before its picture (a load error, --dry-run) leaves no empty file.
class PictureFile {
 public:
  PictureFile() = default;
  PictureFile(const PictureFile&) = delete;
  PictureFile& operator=(const PictureFile&) = delete;
  ~PictureFile() {
    if (!f_) return;
    fclose(f_);
    if (!written_) unlink(path_.c_str());
  }
  bool open(const std::string& path, std::string_view option) {
    path_ = path;
    option_ = option;
    if ((f_ = fopen(path.c_str(), "w"))) return true;
    fmt::print(stderr, "ERROR: {}: cannot open {}: {}\n", option, path, strerror(errno));
    return false;
  }
  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }
  int write(std::string_view svg) {
    if (fwrite(svg.data(), 1, svg.size(), f_) != svg.size() || fflush(f_) != 0) {
      fmt::print(stderr, "ERROR: {}: cannot write {}: {}\n", option_, path_, strerror(errno));
      return 1;
    }
    written_ = true;
    return 0;
  }

 private:
  std::string path_;
  std::string_view option_;
  FILE* f_ = nullptr;
  bool written_ = false;
};

// Seconds since the epoch, for the times of heat map columns.
double wall_seconds() {
  struct timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The session's names, shared with the metrics endpoint's threads: one
// call at a time (the symbol caches fill as they are used).
class SharedResolver : public Resolver {
 public:
  SharedResolver(const Resolver& inner, std::mutex& lock) : inner_(inner), lock_(lock) {}
  output::Value stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const override {
    std::lock_guard g(lock_);
    return inner_.stack(user, id, pid, limit, mode);
  }
  std::string symbol(bool user, uint64_t addr, uint32_t pid) const override {
    std::lock_guard g(lock_);
    return inner_.symbol(user, addr, pid);
  }
  std::string timestamp(uint64_t format, uint64_t boot_ns) const override {
    std::lock_guard g(lock_);
    return inner_.timestamp(format, boot_ns);
  }
  std::optional<std::string> enumerator(uint32_t enum_id, int64_t v) const override {
    std::lock_guard g(lock_);
    return inner_.enumerator(enum_id, v);
  }
  const bpf::Btf* btf() const override { return inner_.btf(); }

 private:
  const Resolver& inner_;
  std::mutex& lock_;
};

// How a probe's program runs, as the metrics name it (bpfscope_probe_info).
const char* mechanism_name(sema::ProbeKind k, bool tp_btf) {
  switch (k) {
    case sema::ProbeKind::Begin:
    case sema::ProbeKind::End:
    case sema::ProbeKind::Interval:
    case sema::ProbeKind::Bench:
    case sema::ProbeKind::Signal: return "test_run";
    case sema::ProbeKind::Tracepoint: return "tracepoint";
    case sema::ProbeKind::RawTracepoint: return tp_btf ? "tp_btf" : "raw_tracepoint";
    case sema::ProbeKind::Uprobe: return "uprobe";
    case sema::ProbeKind::Uretprobe: return "uretprobe";
    case sema::ProbeKind::Usdt: return "usdt";
    case sema::ProbeKind::Software:
    case sema::ProbeKind::Profile:
    case sema::ProbeKind::Hardware: return "perf_event";
    case sema::ProbeKind::Kprobe: return "kprobe";
    case sema::ProbeKind::Kretprobe: return "kretprobe";
    case sema::ProbeKind::Fentry: return "fentry";
    case sema::ProbeKind::Fexit: return "fexit";
    case sema::ProbeKind::Iter: return "iterator";
  }
  return "";
}

class Session {
 public:
  Session(const sema::TypedProgram& p, const ir::Module& m, std::vector<codegen::Program> progs, const Options& o)
      : p_(p), m_(m), progs_(std::move(progs)), o_(o), ncpus_(bpf::possible_cpus()) {}

  ~Session() {
    if (out_ && out_ != stdout) fclose(out_);
    if (lost_) munmap(const_cast<uint64_t*>(lost_), lost_bytes_);
  }

  int run(std::optional<Child> child) {
    out_ = stdout;
    if (!o_.output_file.empty()) {
      out_ = fopen(o_.output_file.c_str(), "w");
      if (!out_) {
        fmt::print(stderr, "ERROR: cannot open {}: {}\n", o_.output_file, strerror(errno));
        return 1;
      }
    }
    setvbuf(out_, nullptr, _IOFBF, 1 << 16);
    printer_ = make_printer(o_, out_);
    if (!o_.flamegraph_file.empty() && !graph_file_.open(o_.flamegraph_file, "--flamegraph")) return 1;
    heat_terminal_ = o_.heatmap_file == "-";
    if (!o_.heatmap_file.empty() && !heat_terminal_ && !heat_file_.open(o_.heatmap_file, "--heatmap")) return 1;
    if (int rc = check_kinds(); rc) return rc;
    if (int rc = create_maps(); rc) return rc;
    if (int rc = load_all(); rc) return rc;
    if (o_.dry_run) return 0;

    // Signals are read from a signalfd, so no handler runs and the event
    // loop wakes at once.
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    // SIGUSR1 runs the self:signal:SIGUSR1 probes; as in bpftrace, it never
    // ends the run.
    sigaddset(&mask, SIGUSR1);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    // Under `serve`, the server's stop event ends every session instead.
    if (o_.stop_fd < 0) sigfd_ = bpf::Fd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));

    // bpftrace's order: every probe is attached, the attach message and
    // marker are printed, then BEGIN runs. The probes are attached held (the
    // control word is non-zero, so they return at once) and started only
    // once BEGIN has run, so no probe prints before BEGIN's output (a
    // tool's column header).
    if (!hold_probes()) return 1;
    if (int rc = check_bench_units(); rc) return rc;
    if (!exiting_ && !p_.only_begin_end && !o_.bench) {
      if (int rc = attach_all(); rc) {
        links_.clear();
        return rc;
      }
      if (o_.metrics || o_.endpoint) {
        if (int rc = start_metrics(); rc) {
          links_.clear();
          return rc;
        }
      }
    }
    uint32_t attach_count = 0;
    for (const auto& u : p_.units)
      if (u.kind != sema::ProbeKind::Bench) attach_count += static_cast<uint32_t>(u.targets.size());
    start_time_ = wall_seconds();
    if (!o_.quiet && !o_.bench) printer_->attached(attach_count, start_time_);
    if (getenv("__BPFTRACE_NOTIFY_PROBES_ATTACHED")) fmt::print(out_, "__BPFTRACE_NOTIFY_PROBES_ATTACHED\n");
    // Not flushed here: the marker reaches the reader with BEGIN's output,
    // after the probes have started, so whatever the reader does on seeing
    // it is traced.
    run_begin();
    drain();
    if (o_.bench) {
      if (!exiting_) run_benchmarks();
    } else if (!exiting_) {
      run_iterators();
    }
    if (!exiting_ && !p_.only_begin_end && !o_.bench) {
      if (child) {
        child_pid_ = child->pid;
        char go = 1;
        if (write(child->release_fd, &go, 1) != 1) {
        }
        close(child->release_fd);
      }
      loop(child ? child->pid : o_.target_pid);
    }
    stop_metrics();  // before the probes stop: their counters are read no more
    detach();
    // What the probes sent before they stopped: dropped after an exit() (as
    // bpftrace drops records that follow it), printed after a signal.
    consume_records();
    ignore_records_ = false;
    run_kind(sema::ProbeKind::End);
    drain();
    printer_->end_lines();
    report_lost(true);
    report_failed_updates();
    printer_->exit_maps_follow();
    if (p_.config.print_maps_on_exit && !o_.bench) print_maps();
    fflush(out_);
    if (graph_file_.is_open() && write_flamegraph() != 0 && exit_code_ == 0) exit_code_ = 1;
    if (heat_file_.is_open() && write_heatmap() != 0 && exit_code_ == 0) exit_code_ = 1;
    if (child_pid_ > 0 && !child_reaped_) {
      // The child outlives a Ctrl-C of the tracer only if it ignores it; reap if done.
      int status;
      waitpid(child_pid_, &status, WNOHANG);
    }
    release_in_background();
    return exit_code_;
  }

 private:
  // Stops every probe at once by setting the control word each program
  // checks first; the maps are frozen from here on. Detaching for real is
  // slow here (closing a tracepoint's BPF link waits for RCU grace periods,
  // 10-35 ms per probe), so the links are released after the output is done.
  void detach() {
    timers_.clear();
    control_[0] = 1;
    if (!write_control()) {
      freeze_skips();
      links_.clear();  // could not stop them: detach now instead
      return;
    }
    // A program that read the control word before it changed may still be
    // running on another CPU, and would update a map after END cleared it.
    if (!links_.empty()) bpf::wait_for_programs();
    freeze_skips();
    for (auto& l : links_) {
      held_.push_back(std::move(l.link));
      held_.push_back(std::move(l.perf));
    }
    links_.clear();
  }

  // Keeps a probe's counters of the firings the kernel ran no program for,
  // or says that they cannot be had.
  void count_skips(const std::string& probe, bpf::Result<bpf::SkipCounters> counters) {
    if (counters)
      skips_.push_back({.probe = probe, .counters = std::move(*counters)});
    else
      fmt::print(stderr, "WARNING: {}: firings the kernel skips cannot be counted: {}\n", probe,
                 counters.error().message);
  }

  // Stopped programs still run (and return 0), so the skip counts are final
  // now; they would grow once the programs are detached.
  // Closing a tracepoint's perf event waits out a grace period: they are
  // released with the links.
  void freeze_skips() {
    for (auto& s : skips_) {
      s.skipped = s.counters.total();
      for (auto& fd : s.counters.per_cpu) held_.push_back(std::move(fd));
      s.counters = {};
    }
  }

  // Hands the held links and perf events to a short-lived child that
  // releases them, so the tracer's own exit does not wait out the grace
  // periods. The probes are already stopped and all output is written.
  void release_in_background() {
    if (held_.empty()) return;
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      // Let go of stdin/stdout/stderr first: a pipe reader must see EOF when
      // the tracer exits, not when the release is done.
      int null = open("/dev/null", O_RDWR | O_CLOEXEC);
      for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
      if (out_ && out_ != stdout) close(fileno(out_));
      for (auto& fd : held_) fd = bpf::Fd();
      _exit(0);
    }
    held_.clear();
  }

  int check_kinds() {
    for (const auto& u : p_.units) {
      const auto mech = u.mechanism;
      // A frequency the kernel refuses: said before BEGIN runs (profile's
      // banner would claim the rate).
      if (u.kind == sema::ProbeKind::Profile)
        for (const auto& t : u.targets)
          if (std::string why = t.freq ? bpf::sample_frequency_refused(t.period) : ""; !why.empty())
            return attach_error(t, why);
      std::string why = unavailable_reason(mech);
      // sema asked the kernel already (an empty program on the function).
      if (mech == sema::ProbeKind::Fentry || mech == sema::ProbeKind::Fexit) why = u.fentry_refused;
      if (why.empty()) continue;
      // Neither kprobes nor fentry: say so for the one the probe names too.
      bool kprobe = u.kind == sema::ProbeKind::Kprobe || u.kind == sema::ProbeKind::Kretprobe;
      bool fentry = u.kind == sema::ProbeKind::Fentry || u.kind == sema::ProbeKind::Fexit;
      if (kprobe) why += "; fentry, the fallback, is not possible here either";
      if (fentry) why += "; kprobes, the fallback, are not available either";
      lang::Diagnostics d;
      std::vector<std::string> hints;
      const Alternative alt = alternative(u);
      // A tool's argument (funccount 'tcp*'): the command to type instead.
      const auto* arg = p_.ast->source.argument_at(u.targets[0].loc.begin);
      if (arg && !alt.probe.empty()) {
        std::string probe = alt.probe;
        if (probe.starts_with("tracepoint:")) probe.replace(0, 11, "t:");
        hints.push_back(fmt::format("try {}", arg->retry(probe)));
      } else if (!alt.hint.empty()) {
        hints.push_back(alt.hint);
      }
      d.error(u.targets[0].loc, fmt::format("Unable to attach probe: {}: {}", u.targets[0].name, why), hints);
      fmt::print(stderr, "{}", d.render(p_.ast->source, o_.tool_name));
      return 255;
    }
    return 0;
  }

  // A probe carrying the same data, for the kprobe/fentry error: the hint
  // for a script ("use tracepoint:sock:sock_send_length instead (...)"),
  // and the attach point that a tool's argument could be instead ("" when
  // the hint names none). In order: the cookbook's table naming the function
  // (docs/one-liners.md, `kernel:` lines), a tracepoint of the same name, a
  // glob of the table matching it, the system call, the tracepoint category
  // of its prefix. Every tracepoint named matches something on this kernel.
  struct Alternative {
    std::string hint;
    std::string probe;
  };
  static Alternative alternative(const sema::ProgramUnit& u) {
    const auto use = [](const std::string& probe) { return Alternative{fmt::format("use {} instead", probe), probe}; };
    const auto from_table = [](const cookbook::Found& f) {
      const std::string& probe = f.replacement->probe;
      return Alternative{
          fmt::format("use {} instead ({}: bpfscope --examples {})", probe, f.entry->question, f.entry->id), probe};
    };
    const std::string& name = u.targets[0].name;
    auto colon = name.rfind(':');
    const std::string pattern = colon == std::string::npos ? name : name.substr(colon + 1);
    std::string fn = pattern;
    while (!fn.empty() && (fn.back() == '*' || fn.back() == '?')) fn.pop_back();
    // The table's exact line ("tcp_sendmsg", "udp*_sendmsg"; "udp*" finds
    // "udp_*").
    const auto table = [](std::string_view function, bool exact) {
      cookbook::Found f = cookbook::find_replacement(function);
      if (!f.replacement || (exact && f.replacement->function != function) || !probe_exists(f.replacement->probe))
        return cookbook::Found{nullptr, nullptr};
      return f;
    };
    for (const std::string& key : {pattern, fn + "_*"})
      if (auto f = table(key, true); f.replacement) return from_table(f);
    // A tracepoint named like the function (tcp_retransmit_skb).
    if (auto same = bpf::list_tracepoints("*", fn); same && !same->empty()) return use("tracepoint:" + same->front());
    if (auto f = table(pattern, false); f.replacement) return from_table(f);
    for (std::string_view prefix : {"__x64_sys_", "__arm64_sys_", "__se_sys_", "ksys_", "sys_", "do_sys_", "vfs_", "do_"}) {
      if (fn.rfind(prefix, 0) == 0) {
        fn = fn.substr(prefix.size());
        break;
      }
    }
    bool ret = u.kind == sema::ProbeKind::Kretprobe || u.kind == sema::ProbeKind::Fexit;
    std::string tp = fmt::format("sys_{}_{}", ret ? "exit" : "enter", fn);
    if (bpf::read_tracepoint_format("syscalls", tp)) return use("tracepoint:syscalls:" + tp);
    // A tracepoint category named like the function's prefix (ext4_*, xfs_*).
    if (std::string area = fn.substr(0, fn.find('_')); !area.empty() && probe_exists("tracepoint:" + area + ":*"))
      return {fmt::format("use the tracepoint:{}:* tracepoints instead", area), fmt::format("tracepoint:{}:*", area)};
    return {"use a tracepoint (bpfscope -l 'tracepoint:*') or a uprobe instead", ""};
  }

  // Whether a hint's probe matches something here: a tracepoint glob
  // (tracepoint:CATEGORY:EVENT) some event matches; other kinds are taken
  // as they are.
  static bool probe_exists(std::string_view probe) {
    if (!probe.starts_with("tracepoint:")) return true;
    probe.remove_prefix(11);
    auto colon = probe.find(':');
    if (colon == std::string_view::npos) return false;
    auto found = bpf::list_tracepoints(probe.substr(0, colon), probe.substr(colon + 1));
    return found && !found->empty();
  }

  // The ring buffer's bytes: kStreamingRingbuf when probes other than
  // BEGIN/END print; when only BEGIN and END send records (exit() aside),
  // twice what one of their runs can send, at least kSmallRingbuf (a hot
  // probe's exit() and the one record per map and CPU of failed map updates
  // fit beside); else kQuietRingbuf, as when failed reads (-k) or divisions
  // by zero may send a record each time.
  uint32_t ringbuf_for_program() const {
    if (p_.streams_output) return kStreamingRingbuf;
    const uint64_t run = p_.begin_end_record_bytes;
    const bool repeated_errors = std::any_of(m_.sites.begin(), m_.sites.end(),
                                             [](const ir::HelperSite& s) { return s.helper != BPF_FUNC_map_update_elem; });
    if (run == 0 || repeated_errors || run > kQuietRingbuf / 2) return kQuietRingbuf;
    uint32_t bytes = kSmallRingbuf;
    while (bytes < 2 * run) bytes *= 2;
    return bytes;
  }

  int create_maps() {
    uint32_t ringbuf = o_.ringbuf_bytes ? o_.ringbuf_bytes : ringbuf_for_program();
    auto fds = ir::create_maps(ir::map_specs(p_, m_, ringbuf));
    if (!fds) return fail_unlocated(fds.error());
    map_fds_ = std::move(*fds);
    control_.assign(1 + m_.swapped.size(), 0);
    view_ = std::vector<std::atomic<uint32_t>>(p_.maps.size());
    for (uint32_t i = 0; i < p_.maps.size(); ++i) view_[i] = i;
    flipped_.assign(p_.maps.size(), false);
    symbolizer_ = std::make_unique<Symbolizer>(map_fds_[m_.support.kstacks].get(), map_fds_[m_.support.ustacks].get(),
                                               map_fds_[m_.support.build_id_stacks].get());
    names_ = std::make_unique<ValueNames>(*symbolizer_, p_.strftime_formats, p_.btf.get());
    shared_names_ = std::make_unique<SharedResolver>(*names_, symbols_lock_);
    auto ring = RingReader::open(map_fds_[m_.support.ringbuf].get(), ringbuf);
    if (!ring) return fail_unlocated(fmt::format("ring buffer: {}", ring.error()));
    ring_ = std::move(*ring);
    // The lost-record counter is read from memory while tracing: a bpf()
    // lookup would raise bpf_prog_active on its CPU, and the kernel skips
    // tracepoint and perf-event programs that fire there meanwhile.
    lost_bytes_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* lost = mmap(nullptr, lost_bytes_, PROT_READ, MAP_SHARED, map_fds_[m_.support.lost].get(), 0);
    if (lost == MAP_FAILED) return fail_unlocated(fmt::format("mapping the lost-record counter: {}", strerror(errno)));
    lost_ = static_cast<const volatile uint64_t*>(lost);
    if (!p_.skboutputs.empty()) {
      auto w = PacketWriter::open(map_fds_[m_.support.skb_output].get(), p_);
      if (!w) return fail_unlocated(w.error());
      packets_ = std::move(*w);
    }
    return 0;
  }

  int fail_unlocated(const std::string& msg) {
    fmt::print(stderr, "ERROR: {}\n", msg);
    return 255;
  }

  int load_all() {
    for (size_t i = 0; i < progs_.size(); ++i) {
      auto& prog = progs_[i];
      for (const auto& r : prog.relocs) prog.insns[r.insn].imm = map_fds_[r.map].get();
      const auto& unit = p_.units[m_.unit_of[i]];
      bpf::ProgramSpec spec;
      spec.type = prog_type(unit.mechanism);
      if (unit.kind == sema::ProbeKind::Iter) {
        spec.expected_attach_type = BPF_TRACE_ITER;
        spec.attach_btf_id = unit.targets[0].btf_id;
      }
      spec.name = prog.name;
      spec.insns = prog.insns;
      spec.subprograms = prog.subprograms;
      // -v loads with the verifier's log, as bpftrace does: a log_size too
      // small for it fails the load (ENOSPC).
      spec.log_level = o_.debug_verifier || o_.verbose ? 1 : 0;
      spec.log_size = p_.config.log_size;
      spec.license = p_.config.license;
      // tp_btf and fentry/fexit programs are bound to one event or function
      // at load: one copy per target.
      std::vector<bpf::Fd> fds;
      if (unit.kind == sema::ProbeKind::RawTracepoint) {
        for (const auto& t : unit.targets) {
          if (t.btf_id == 0) break;  // no BTF prototype
          auto fd = load_btf_bound(spec, BPF_TRACE_RAW_TP, t.btf_id);
          if (!fd) {
            if (o_.debug_verifier) fmt::print(stderr, "tp_btf load refused, using raw_tp:\n{}", fd.error().log);
            break;
          }
          fds.push_back(std::move(*fd));
        }
        if (fds.size() != unit.targets.size()) fds.clear();  // raw_tp for all of them
      } else if (unit.mechanism == sema::ProbeKind::Fentry || unit.mechanism == sema::ProbeKind::Fexit) {
        const bpf_attach_type type = unit.mechanism == sema::ProbeKind::Fexit ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
        for (const auto& t : unit.targets) {
          if (t.btf_id == 0) return attach_error(t, fmt::format("function {} is not in the kernel's BTF", t.func));
          auto fd = load_btf_bound(spec, type, t.btf_id);
          if (!fd) return verifier_error(i, fd.error());
          fds.push_back(std::move(*fd));
        }
      }
      if (!fds.empty()) {
        prog_fds_.push_back(bpf::Fd());
        target_fds_.push_back(std::move(fds));
        continue;
      }
      auto loaded = bpf::load_program(spec);
      if (!loaded) return verifier_error(i, loaded.error());
      if (o_.debug_verifier) fmt::print(stderr, "{}", loaded->log);
      prog_fds_.push_back(std::move(loaded->fd));
      target_fds_.emplace_back();
    }
    return 0;
  }

  // Loads a program as BPF_PROG_TYPE_TRACING bound at load to one kernel BTF
  // object: a tp_btf event (BPF_TRACE_RAW_TP, btf_trace_<event>) or an
  // fentry/fexit function (BPF_TRACE_FENTRY/FEXIT, the function's BTF id).
  std::expected<bpf::Fd, bpf::LoadError> load_btf_bound(bpf::ProgramSpec spec, bpf_attach_type type,
                                                        uint32_t btf_id) {
    spec.type = BPF_PROG_TYPE_TRACING;
    spec.expected_attach_type = type;
    spec.attach_btf_id = btf_id;
    auto loaded = bpf::load_program(spec);
    if (!loaded) return std::unexpected(std::move(loaded.error()));
    if (o_.debug_verifier) fmt::print(stderr, "{}", loaded->log);
    return std::move(loaded->fd);
  }

  // Maps a rejection back to the script: the last instruction the verifier
  // reported is looked up in the program's location table.
  int verifier_error(size_t i, const bpf::LoadError& e) {
    const codegen::Program& prog = progs_[i];
    const std::string& name = p_.units[m_.unit_of[i]].message_name;
    if (o_.debug_verifier) fmt::print(stderr, "{}", e.log);
    if (e.err == ENOSPC) {
      // The verifier's log did not fit in log_size (bpftrace's words for the
      // first line).
      fmt::print(stderr, "ERROR: Error loading BPF program for {}. Error code: -{} ({}).{}\n", name, e.err,
                 strerror(e.err), o_.verbose ? "" : " Use -v for full kernel error log.");
      if (o_.verbose)
        fmt::print(stderr,
                   "Kernel error log: \n{}\nWARNING: Kernel log seems to be trimmed: it did not fit in the {} bytes "
                   "of log_size; raise it with BPFTRACE_LOG_SIZE=N or config = {{ log_size = N }}\n",
                   e.log, p_.config.log_size);
      return 255;
    }
    VerifierFailure f = parse_verifier_log(e.log);
    std::string message = e.log.empty() ? strerror(e.err) : f.message;
    int insn = f.insn;
    lang::Diagnostics d;
    std::string text = fmt::format("the kernel's verifier rejected the program for {}: {}", name, message);
    std::vector<std::string> hints;
    // The one helper a kernel option withholds from every program.
    if (message.find("cannot use helper bpf_probe_write_user") != std::string::npos)
      hints.push_back(
          "the kernel withholds bpf_probe_write_user (write_user()) while it is locked down "
          "(/sys/kernel/security/lockdown); write_user() needs a kernel booted with lockdown=none");
    hints.push_back("run with -d verifier to see the kernel's log");
    if (insn >= 0 && static_cast<size_t>(insn) < prog.locs.size() && prog.locs[insn].end > 0)
      d.error(prog.locs[insn], text, hints);
    else
      d.error_unlocated(text, hints);
    fmt::print(stderr, "{}", d.render(p_.ast->source, o_.tool_name));
    return 255;
  }

  // Sets the control word before any probe is attached: they return at
  // once until start_probes().
  bool hold_probes() {
    control_[0] = 1;
    if (write_control()) return true;
    fmt::print(stderr, "ERROR: setting the control word: {}\n", strerror(errno));
    return false;
  }

  void start_probes() {
    control_[0] = 0;
    if (!write_control()) fmt::print(stderr, "ERROR: starting the probes: {}\n", strerror(errno));
    arm_timers();
  }

  // Writes control_ to the control map (one update: the stop word and the
  // generations).
  bool write_control() {
    uint32_t key = 0;
    return bpf_map_update_elem(map_fds_[m_.support.control].get(), &key, control_.data(), BPF_ANY) == 0;
  }

  // The kernel map of script map i that user space reads: the one probes
  // write, except between a flip and the take it was made for.
  int fd_of(size_t i) const { return map_fds_[view_[i].load()].get(); }

  // The id of the kernel map of script map i that probes write.
  uint32_t target_of(size_t i) const {
    const int32_t slot = m_.swap_slot(static_cast<uint32_t>(i));
    return slot >= 0 && control_[1 + static_cast<size_t>(slot)] ? m_.twin(static_cast<size_t>(slot))
                                                               : static_cast<uint32_t>(i);
  }

  // Empties script map i for clear(), or for zero() with `zero` (its keys
  // stay, with zero values), and returns what it held when `read` is set.
  // A swapped map (ir::Module::swapped) loses no update: probes are turned
  // to its other kernel map (flip_for_takes), and only then is the old one
  // read and emptied.
  output::MapSnapshot empty_map(int32_t i, bool zero, bool read) {
    const auto map = static_cast<size_t>(i);
    if (!flipped_[map]) flip_for_takes(map);
    flipped_[map] = false;
    const int old_fd = fd_of(map);
    const uint32_t target = target_of(map);
    output::MapSnapshot snap;
    if (read) snap = read_map(p_.maps[map], old_fd, ncpus_, shared_names_.get());
    if (zero)
      zero_map(p_.maps[map], old_fd, map_fds_[target].get(), ncpus_);
    else
      clear_map(old_fd, p_.maps[map].key_size);
    view_[map] = target;
    return snap;
  }

  // Turns the probes to the other kernel map of swapped map i, and of every
  // swapped map that a record waiting in the ring buffer will empty (up to
  // an exit(), after which records are dropped), then waits once for the
  // programs still running on the old ones (bpf::wait_for_programs; without
  // running probes there are none). User space reads the old maps until
  // their takes.
  void flip_for_takes(size_t i) {
    flips_.clear();
    flips_.push_back(i);
    peek_stopped_ = false;
    if (ring_ && !ignore_records_) ring_->peek(&Session::on_peek, this);
    size_t n = 0;
    for (size_t map : flips_) {
      const int32_t slot = m_.swap_slot(static_cast<uint32_t>(map));
      if (slot < 0 || flipped_[map]) continue;
      control_[1 + static_cast<size_t>(slot)] ^= 1;
      flipped_[map] = true;
      ++n;
    }
    if (n == 0) return;
    if (!write_control()) {
      fmt::print(stderr, "ERROR: clearing {}: {}\n", p_.maps[i].name, strerror(errno));
      for (size_t map : flips_)
        if (const int32_t slot = m_.swap_slot(static_cast<uint32_t>(map)); slot >= 0 && flipped_[map]) {
          control_[1 + static_cast<size_t>(slot)] ^= 1;
          flipped_[map] = false;
        }
      return;
    }
    if (control_[0] == 0 && !links_.empty()) bpf::wait_for_programs();
  }

  // A record that flip_for_takes() sees waiting: the maps it will empty.
  static void on_peek(void* ctx, const uint8_t* data, size_t size) {
    auto* s = static_cast<Session*>(ctx);
    uint64_t id;
    if (size < 8 || s->peek_stopped_) return;
    std::memcpy(&id, data, 8);
    if (id >= s->p_.actions.size()) return;
    const auto& a = s->p_.actions[id];
    if (a.kind == sema::ActionKind::Exit || a.then_exit) {
      s->peek_stopped_ = true;
      return;
    }
    if ((a.kind == sema::ActionKind::Clear || a.kind == sema::ActionKind::Zero) && a.map >= 0 && !a.folded)
      s->flips_.push_back(static_cast<size_t>(a.map));
    for (int32_t m : a.taken) s->flips_.push_back(static_cast<size_t>(m));
  }

  // The interval probes' timers: each runs its program one period from now,
  // then every period.
  void arm_timers() {
    const uint64_t now_ns = static_cast<uint64_t>(clock_ns(CLOCK_MONOTONIC));
    for (auto& t : timers_) {
      t.due = now_ns + t.period;
      itimerspec spec{};
      spec.it_value = {.tv_sec = static_cast<time_t>(t.due / 1000000000ull),
                       .tv_nsec = static_cast<long>(t.due % 1000000000ull)};
      spec.it_interval = {.tv_sec = static_cast<time_t>(t.period / 1000000000ull),
                          .tv_nsec = static_cast<long>(t.period % 1000000000ull)};
      if (timerfd_settime(t.timer.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0)
        fmt::print(stderr, "ERROR: interval timer: {}\n", strerror(errno));
    }
  }

  // Runs the BEGIN probes, then starts the others. The last BEGIN's
  // records are read after the start: they were written first, so they
  // print before any probe's, and the output (and the attach marker with
  // it) is flushed only once the probes run. An exit() in BEGIN leaves the
  // probes held.
  void run_begin() {
    size_t last = prog_fds_.size();
    for (size_t i = 0; i < prog_fds_.size(); ++i)
      if (p_.units[m_.unit_of[i]].kind == sema::ProbeKind::Begin) last = i;
    for (size_t i = 0; i < prog_fds_.size() && !exiting_; ++i) {
      if (p_.units[m_.unit_of[i]].kind != sema::ProbeKind::Begin) continue;
      auto r = bpf::run_once(prog_fds_[i].get());
      if (!r) fmt::print(stderr, "ERROR: running {}: {}\n", progs_[i].name, r.error().message);
      if (i == last) break;
      drain();
    }
    // The exit() of the last BEGIN is in its records, not read yet: an
    // exit record stops the session before any later record is printed.
    if (!exiting_) start_probes();
  }

  void run_kind(sema::ProbeKind kind) {
    for (size_t i = 0; i < prog_fds_.size(); ++i) {
      if (p_.units[m_.unit_of[i]].kind != kind) continue;
      auto r = bpf::run_once(prog_fds_[i].get());
      if (!r) fmt::print(stderr, "ERROR: running {}: {}\n", progs_[i].name, r.error().message);
      drain();
    }
  }

  // What runs, by mode: bench probes run only in --mode bench, and there
  // only they, BEGIN and END do; a program with nothing to run is an error.
  int check_bench_units() {
    size_t bench = 0, special = 0;
    for (const auto& u : p_.units) {
      if (u.kind == sema::ProbeKind::Bench) ++bench;
      if (u.kind == sema::ProbeKind::Begin || u.kind == sema::ProbeKind::End) ++special;
    }
    if (!o_.bench && bench > 0 && bench == p_.units.size())
      return fail_unlocated("No probes attached; use --mode bench (--bench) to run benchmark probes.");
    if (o_.bench && bench == 0 && special == 0)
      return fail_unlocated("No probes attached; --mode bench runs only bench, begin and end probes.");
    return 0;
  }

  // --mode bench: each bench probe in the script's order, repeated with
  // BPF_PROG_TEST_RUN until the runs take 1 ms in all (as bpftrace: the
  // count grows 1000-, 100-, 10- or 2-fold by how far short the last try
  // fell), its output discarded; then its mean time per run. A probe that
  // calls exit() with a non-zero code, errorf() or a helper that fails
  // fails, and the run's status is 1.
  void run_benchmarks() {
    std::vector<std::string> names;
    std::vector<size_t> progs;
    for (size_t i = 0; i < prog_fds_.size(); ++i) {
      const auto& unit = p_.units[m_.unit_of[i]];
      if (unit.kind != sema::ProbeKind::Bench) continue;
      names.push_back(unit.targets[0].func);
      progs.push_back(i);
    }
    bool failed = false;
    for (size_t k = 0; k < progs.size(); ++k) {
      if (o_.verbose)
        fmt::print(stderr, "{}: BPF_PROG_TEST_RUN (XDP), repeated\n", p_.units[m_.unit_of[progs[k]]].targets[0].name);
      uint64_t iters = 1;
      while (true) {
        discard_output_ = true;
        auto r = bpf::run_repeated(prog_fds_[progs[k]].get(), static_cast<uint32_t>(iters));
        drain();
        lost_discarded_ = lost_ ? *lost_ : 0;
        discard_output_ = false;
        // An exit() ends the benchmark, not the run.
        const int code = exit_code_;
        const uint64_t errors = std::exchange(bench_errors_, 0);
        exiting_ = false;
        ignore_records_ = false;
        exit_code_ = 0;
        if (!r) {
          fmt::print(stderr, "ERROR: running {}: {}\n", progs_[progs[k]].name, r.error().message);
          failed = true;
          break;
        }
        const uint64_t total = r->average_ns * iters;
        const uint64_t grow = total < 1000 ? 1000 : total < 10000 ? 100 : total < 100000 ? 10 : total < 1000000 ? 2 : 1;
        if (code == 0 && errors == 0 && grow > 1 && iters * grow <= INT32_MAX) {
          iters *= grow;
          continue;
        }
        if (code != 0 || errors != 0) {
          fmt::print(stderr, "ERROR: Benchmark '{}' failed.\n", names[k]);
          failed = true;
          break;
        }
        printer_->benchmark(names, k, r->average_ns, iters);
        break;
      }
    }
    if (failed) exit_code_ = 1;
  }

  // An iterator runs to its end: an exit() in it (as in bpftrace, where it
  // is a message the iteration does not wait for) ends the run after the
  // iteration, whose output is all printed; later iterators do not run.
  void run_iterators() {
    for (size_t i = 0; i < prog_fds_.size() && !exiting_; ++i) {
      const auto& unit = p_.units[m_.unit_of[i]];
      if (unit.kind != sema::ProbeKind::Iter) continue;
      if (o_.verbose) fmt::print(stderr, "{}: BPF iterator\n", unit.targets[0].name);
      if (auto r = bpf::run_iterator(prog_fds_[i].get()); !r)
        fmt::print(stderr, "ERROR: {}: {}\n", unit.targets[0].name, r.error().message);
      iterating_ = true;
      drain();
      iterating_ = false;
    }
  }

  // Attaches every target. The kernel runs the programs on one event in
  // the order they were attached, except a function's uprobes (uretprobes,
  // USDT probes): each is a consumer of the function's uprobe, added at the
  // head of its list (kernel/events/uprobes.c, consumer_add), so they run
  // newest first. Those are attached last to first, and all probes on one
  // event then run in the script's order, as bpftrace's do.
  int attach_all() {
    std::vector<std::pair<size_t, size_t>> reversed;
    for (size_t i = 0; i < prog_fds_.size(); ++i) {
      const auto& unit = p_.units[m_.unit_of[i]];
      for (size_t j = 0; j < unit.targets.size(); ++j) {
        if (unit.mechanism == sema::ProbeKind::Uprobe || unit.mechanism == sema::ProbeKind::Uretprobe ||
            unit.mechanism == sema::ProbeKind::Usdt) {
          reversed.emplace_back(i, j);
          continue;
        }
        if (int rc = attach_target(i, j); rc) return rc;
      }
    }
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it)
      if (int rc = attach_target(it->first, it->second); rc) return rc;
    return 0;
  }

  int attach_target(size_t i, size_t j) {
    const auto& unit = p_.units[m_.unit_of[i]];
    const auto& t = unit.targets[j];
    int fd = target_fds_[i].empty() ? prog_fds_[i].get() : target_fds_[i][j].get();
    switch (unit.mechanism) {
      case sema::ProbeKind::Begin:
      case sema::ProbeKind::End:
      case sema::ProbeKind::Bench:        // run by run_benchmarks()
      case sema::ProbeKind::Iter: break;  // run by run_iterators()
      case sema::ProbeKind::Signal:
        // Run by loop() when SIGUSR1 arrives.
        if (o_.verbose) fmt::print(stderr, "{}: run by bpfscope on the signal (BPF_PROG_TEST_RUN)\n", t.name);
        break;
      case sema::ProbeKind::Tracepoint: {
        auto link = bpf::attach_tracepoint(fd, t.format.id);
        if (!link) return attach_error(t, link.error().message);
        if (o_.verbose) fmt::print(stderr, "{}: perf_event tracepoint + BPF link\n", t.name);
        links_.push_back(std::move(*link));
        // Opened once the program is attached: firings before it would
        // count as skipped.
        count_skips(t.name, bpf::count_skipped_firings(t.format.id));
        break;
      }
      case sema::ProbeKind::RawTracepoint: {
        bool tp_btf = !target_fds_[i].empty();
        auto link = bpf::attach_raw_tracepoint(fd, tp_btf ? "" : t.format.event);
        if (!link) return attach_error(t, link.error().message);
        if (o_.verbose)
          fmt::print(stderr, "{}: {}\n", t.name,
                     tp_btf ? fmt::format("tp_btf (BTF id {}) + BPF link", t.btf_id)
                            : std::string("raw tracepoint (BPF_RAW_TRACEPOINT_OPEN)"));
        links_.push_back(std::move(*link));
        break;
      }
      case sema::ProbeKind::Uprobe:
      case sema::ProbeKind::Uretprobe:
      case sema::ProbeKind::Usdt: {
        bool ret = unit.kind == sema::ProbeKind::Uretprobe;
        auto link = bpf::attach_uprobe(fd, t.path, t.offset, ret, o_.target_pid, t.ref_ctr);
        if (!link) return attach_error(t, link.error().message);
        if (o_.verbose)
          fmt::print(stderr, "{}: {} PMU perf_event at offset {:#x}{}{}\n", t.name, ret ? "uretprobe" : "uprobe",
                     t.offset, t.ref_ctr ? fmt::format(", semaphore (ref_ctr) at offset {:#x}", t.ref_ctr) : "",
                     o_.target_pid > 0 ? fmt::format(", pid {}", o_.target_pid) : "");
        links_.push_back(std::move(*link));
        break;
      }
      case sema::ProbeKind::Interval: {
        // A timer in bpfscope runs the program (BPF_PROG_TEST_RUN): a
        // perf cpu-clock tick is lost, unreported, whenever the kernel
        // does not run the program then (docs/accuracy.md); these are not.
        // The timer is armed when the probes start, after BEGIN: the first
        // run comes one period after BEGIN, as in bpftrace.
        const uint64_t ns = t.freq ? std::max<uint64_t>(1, 1000000000ull / t.period) : t.period;
        bpf::Fd timer(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
        if (!timer) return attach_error(t, fmt::format("timerfd: {}", std::strerror(errno)));
        if (o_.verbose) fmt::print(stderr, "{}: a timer in bpfscope (timerfd) + BPF_PROG_TEST_RUN\n", t.name);
        timers_.push_back({.prog = fd, .timer = std::move(timer), .due = 0, .period = ns});
        break;
      }
      case sema::ProbeKind::Software:
      case sema::ProbeKind::Profile: {
        // software and profile sample the -p process alone (one event that
        // follows it across CPUs), else every CPU.
        bool software = unit.kind == sema::ProbeKind::Software;
        int pid = o_.target_pid;
        uint64_t config = software ? t.perf_config : static_cast<uint64_t>(PERF_COUNT_SW_CPU_CLOCK);
        auto links = bpf::attach_perf_software(fd, config, t.period, !software && t.freq, -1, pid);
        if (!links) return attach_error(t, links.error().message);
        if (o_.verbose)
          fmt::print(stderr, "{}: perf_event {} {}\n", t.name, software ? "software" : "cpu-clock",
                     pid > 0 ? fmt::format("for pid {}", pid) : fmt::format("on {} CPU(s)", links->size()));
        for (auto& l : *links) links_.push_back(std::move(l));
        break;
      }
      case sema::ProbeKind::Kprobe:
      case sema::ProbeKind::Kretprobe: {
        // System-wide like tracepoints: -p/-c filter in the program.
        bool ret = unit.mechanism == sema::ProbeKind::Kretprobe;
        auto link = bpf::attach_kprobe(fd, t.func, 0, ret);
        if (!link) return attach_error(t, link.error().message);
        if (o_.verbose)
          fmt::print(stderr, "{}: {} PMU perf_event + BPF link{}\n", t.name, ret ? "kretprobe" : "kprobe",
                     unit.kind != unit.mechanism ? " (the kernel refuses fentry)" : "");
        links_.push_back(std::move(*link));
        break;
      }
      case sema::ProbeKind::Fentry:
      case sema::ProbeKind::Fexit: {
        // The function was fixed at load (attach_btf_id): no name here.
        auto link = bpf::attach_raw_tracepoint(fd, "");
        if (!link) return attach_error(t, link.error().message);
        if (o_.verbose)
          fmt::print(stderr, "{}: {} (BTF id {}) + BPF link{}\n", t.name,
                     unit.mechanism == sema::ProbeKind::Fexit ? "fexit" : "fentry", t.btf_id,
                     unit.kind != unit.mechanism ? " (no kprobes on this kernel)" : "");
        links_.push_back(std::move(*link));
        break;
      }
      case sema::ProbeKind::Hardware: return attach_error(t, unavailable_reason(unit.mechanism));
    }
    return 0;
  }

  int attach_error(const sema::AttachTarget& t, const std::string& why) {
    lang::Diagnostics d;
    d.error(t.loc, fmt::format("Unable to attach probe: {}: {}", t.name, why));
    fmt::print(stderr, "{}", d.render(p_.ast->source, o_.tool_name));
    return 255;
  }

  // --heatmap -: the heat map drawn again with its new column; on a
  // terminal, over the previous drawing when nothing was printed since.
  void draw_heat_terminal() {
    printer_->end_lines();
    const bool tty = isatty(fileno(out_));
    std::string frame = output::heatmap_terminal(heat_.series(), heat_options(), terminal_width(out_));
    if (tty && heat_lines_ > 0 && printer_->written() == heat_mark_)
      frame = fmt::format("\x1b[{}A\x1b[J", heat_lines_) + frame;
    printer_->write(frame);
    fflush(out_);
    heat_lines_ = static_cast<size_t>(std::count(frame.begin(), frame.end(), '\n'));
    heat_mark_ = printer_->written();
  }

  output::HeatMapOptions heat_options() const {
    output::HeatMapOptions ho = o_.heatmap;
    ho.start = start_time_;
    return ho;
  }

  // --heatmap FILE.svg, at exit.
  int write_heatmap() {
    if (heat_.empty())
      fmt::print(stderr, "WARNING: --heatmap: no hist() or lhist() map was printed during the run (print(@h) in an "
                 "interval probe, or a tool's interval); {} shows no heat map\n", heat_file_.path());
    return heat_file_.write(output::heatmap_svg(heat_.series(), heat_options()));
  }

  static void on_record(void* ctx, const uint8_t* data, size_t size) { static_cast<Session*>(ctx)->record(data, size); }
  void consume_records() {
    if (ring_) ring_->consume(&Session::on_record, this);
  }

  int record(const uint8_t* data, size_t size) {
    if (size < 8) return 0;
    uint64_t id;
    std::memcpy(&id, data, 8);
    if (id == ir::kHelperErrorRecord) {
      if (discard_output_) return ++bench_errors_, 0;
      return helper_error(data, size);
    }
    if (id == ir::kUstackPidRecord) {
      uint32_t tgid;
      std::memcpy(&tgid, data + 8, 4);
      if (size >= ir::kUstackPidSize && symbolizer_) {
        std::lock_guard g(symbols_lock_);
        symbolizer_->remember(tgid);
      }
      return 0;
    }
    if (id >= p_.actions.size()) return 0;
    const auto& a = p_.actions[id];
    if (size < a.record_size) return 0;
    if (ignore_records_) return 0;
    // A benchmark's output is discarded; what it does to maps, its exit()
    // and its errors (errorf(), failed helper calls) are not.
    if (discard_output_ && a.kind == sema::ActionKind::Errorf) return ++bench_errors_, 0;
    if (discard_output_ && a.kind != sema::ActionKind::Clear && a.kind != sema::ActionKind::Zero &&
        a.kind != sema::ActionKind::Exit)
      return 0;
    std::vector<output::Value> args;
    args.reserve(a.args.size());
    for (size_t i = 0; i < a.args.size(); ++i) args.push_back(decode(a.args[i], data + a.offsets[i], shared_names_.get()));
    // printf("%.2f", $bytes / 1024.0): the record holds the dividend.
    for (size_t i = 0; i < a.divisors.size(); ++i)
      if (a.divisors[i] != 0) args[i] = output::Value::of_float(args[i].as_double() / a.divisors[i]);
    switch (a.kind) {
      case sema::ActionKind::Printf: {
        const uint32_t cpu = a.with_cpu ? static_cast<uint32_t>(args.back().as_i64()) : 0;
        if (a.with_cpu) args.pop_back();
        printer_->printf_event(cpu, a, args);
        break;
      }
      case sema::ActionKind::Exit:
        // Records other CPUs send after exit() are dropped, as in bpftrace.
        exiting_ = true;
        ignore_records_ = !iterating_;
        exit_code_ = args.empty() ? 0 : static_cast<int>(args[0].i);
        break;
      case sema::ActionKind::Print: {
        if (a.map < 0) break;
        auto snap = read_for_print(a.map, read_mode(a, a.map));
        add_zero_scalar(snap, p_.maps[a.map], ncpus_, shared_names_.get());
        if (!a.format.empty()) snap.name = a.format;  // print(@m, top, div, "name")
        const double now = wall_seconds();
        if (!o_.heatmap_file.empty() && output::is_histogram(snap.kind)) {
          heat_.add(snap, now);
          if (heat_terminal_) {
            draw_heat_terminal();
            break;
          }
        }
        printer_->map(snap, args[0].u, args[1].u, now);
        break;
      }
      case sema::ActionKind::Table: {
        // Each map read once, however many columns show it (a map taken
        // by the read is empty the second time).
        std::map<int32_t, output::MapSnapshot> snaps;
        auto snapshot = [&](int32_t i) -> const output::MapSnapshot* {
          auto it = snaps.find(i);
          if (it == snaps.end())
            it = snaps.emplace(i, read_for_print(i, read_mode(a, i))).first;
          return &it->second;
        };
        std::vector<const output::MapSnapshot*> maps;
        for (int32_t i : a.table_maps) maps.push_back(snapshot(i));
        if (a.table_hist) {
          printer_->hist_notes(maps);
          break;
        }
        const output::MapSnapshot* order_by = a.table_sort_map >= 0 ? snapshot(a.table_sort_map) : nullptr;
        auto table = output::join_maps(maps, a.table_divisors, args[0].u, order_by);
        output::order_columns(table, a.printf_format);
        printer_->table(table, a.arg_names, a.printf_format);
        break;
      }
      case sema::ActionKind::PrintValue: {
        printer_->value(args[0]);
        break;
      }
      case sema::ActionKind::Clear:
      case sema::ActionKind::Zero: {
        if (a.map < 0) break;
        const bool zero = a.kind == sema::ActionKind::Zero;
        if (metrics_ && metrics_->keeps(a.map))  // served counters keep what it empties
          metrics_->take(a.map, [&] { return empty_map(a.map, zero, true); });
        else
          empty_map(a.map, zero, false);
        break;
      }
      case sema::ActionKind::Time: {
        printer_->event(EventKind::Time, output::format_time(a.format, static_cast<uint64_t>(clock_ns(CLOCK_REALTIME))));
        break;
      }
      case sema::ActionKind::Join: {
        // args: the element count, then the elements.
        std::string s;
        uint64_t n = std::min<uint64_t>(args[0].u, args.size() - 1);
        for (uint64_t i = 0; i < n; ++i) s += (i ? a.format : "") + args[i + 1].s;
        s += "\n";
        printer_->event(EventKind::Join, s);
        break;
      }
      case sema::ActionKind::Cat: {
        auto text = read_head(output::format_printf(a.printf_format, args), o_.max_cat_bytes);
        if (text) printer_->event(EventKind::Cat, *text);
        break;
      }
      case sema::ActionKind::Errorf:
      case sema::ActionKind::Warnf: {
        const bool err = a.kind == sema::ActionKind::Errorf;
        if (!err && o_.no_warnings) break;
        printer_->script_message(err, output::format_printf(a.printf_format, args), p_.ast->source, a.loc,
                                 a.expanded_from);
        if (a.then_exit) {  // assert(): as exit(code)
          exiting_ = true;
          ignore_records_ = !iterating_;
          exit_code_ = *a.then_exit;
        }
        break;
      }
      case sema::ActionKind::System: {
        // The output so far goes first, as the command's own stderr does.
        fflush(out_);
        std::string s = run_command(output::format_printf(a.printf_format, args));
        printer_->event(EventKind::System, s);
        break;
      }
    }
    return 0;
  }

  // Reads map i for print(); a read that takes the entries out hands them to
  // the metrics endpoint, whose counters keep them.
  output::MapSnapshot read_for_print(int32_t i, Read mode) {
    if (mode == Read::Keep) return read_map(p_.maps[static_cast<size_t>(i)], fd_of(static_cast<size_t>(i)), ncpus_,
                                            shared_names_.get());
    const auto take = [&] { return empty_map(i, mode == Read::Zero, true); };
    return metrics_ && metrics_->keeps(i) ? metrics_->take(i, take) : take();
  }

  void drain() {
    consume_records();
    if (packets_) packets_->consume();
    fflush(out_);
  }

  // A helper call failed (ir::HelperSite).
  int helper_error(const uint8_t* data, size_t size) {
    if (size < ir::kHelperErrorSize) return 0;
    uint32_t site_id;
    int32_t ret;
    std::memcpy(&site_id, data + 8, 4);
    std::memcpy(&ret, data + 12, 4);
    if (site_id >= m_.sites.size()) return 0;
    const auto& site = m_.sites[site_id];
    printer_->helper_error(helper_error_message(p_, site, ret), helper_name(site.helper), ret, p_.ast->source,
                           site.loc);
    return 0;
  }

  // How many updates of script map i failed so far (the map was full),
  // summed over CPUs.
  uint64_t failed_updates(uint32_t i) const {
    std::vector<uint64_t> v(static_cast<size_t>(ncpus_));
    if (bpf_map_lookup_elem(map_fds_[m_.support.failed].get(), &i, v.data()) != 0) return 0;
    uint64_t total = 0;
    for (auto x : v) total += x;
    return total;
  }

  // At exit: how many updates of each script map failed (a full map).
  void report_failed_updates() {
    for (uint32_t i = 0; i < p_.maps.size(); ++i) {
      const uint64_t total = failed_updates(i);
      if (total == 0) continue;
      const auto& m = p_.maps[i];
      fmt::print(stderr, "WARNING: Map full: {} update{} of {} failed ({} entries)\n", total, total == 1 ? "" : "s",
                 m.name, m.max_entries);
    }
  }

  // Records the ring buffer refused, and skboutput() packets the perf
  // buffers dropped. Records lost during benchmarks, whose output is
  // discarded anyway, are not reported.
  uint64_t lost_total() const {
    return (lost_ ? *lost_ : 0) - lost_discarded_ + (packets_ ? packets_->lost() : 0);
  }

  void report_lost(bool final) {
    uint64_t total = lost_total();
    if (total > lost_reported_) {
      printer_->lost(total - lost_reported_);
      lost_reported_ = total;
    }
    if (final && total > 0) fmt::print(stderr, "WARNING: Total lost event count: {}\n", total);
    if (final) report_missed();
  }

  // Each probe, its mechanism (mechanism_name) and the firings the kernel
  // did not run its program for so far: as the kernel counts them
  // (bpf_prog_info.recursion_misses), or, for classic tracepoints, as their
  // perf counters saw them. docs/accuracy.md says when each kind of probe
  // is skipped.
  template <typename F>
  void each_probe(F&& f) const {
    for (size_t i = 0; i < prog_fds_.size(); ++i) {
      const auto& unit = p_.units[m_.unit_of[i]];
      const bool per_target = !target_fds_[i].empty();
      const char* how = mechanism_name(unit.mechanism, per_target);
      if (!per_target) {
        if (prog_fds_[i].get() < 0) continue;
        std::string name;
        for (const auto& point : p_.ast->probes[unit.probe_index].points)
          name += (name.empty() ? "" : ",") + point.text;
        f(name, unit.mechanism, how, bpf::recursion_misses(prog_fds_[i].get()));
      } else {
        // One program per target (tp_btf, fentry): each counts its own.
        for (size_t j = 0; j < target_fds_[i].size(); ++j)
          f(unit.targets[j].name, unit.mechanism, how, bpf::recursion_misses(target_fds_[i][j].get()));
      }
    }
  }

  // At exit, per probe: the firings the kernel did not run its program for,
  // on stderr and, with -f json, as a "missed" message.
  void report_missed() {
    each_probe([&](const std::string& probe, sema::ProbeKind mechanism, const char*, uint64_t n) {
      report_missed_probe(probe, mechanism, n);
    });
    for (const auto& s : skips_)
      warn_missed(s.probe, s.skipped,
                    "the kernel ran no BPF program for them, and a perf counter on the tracepoint saw them; "
                    "docs/accuracy.md says when");
  }

  // --prometheus (or `serve`'s shared endpoint): serves the maps and the
  // run's counters from here on.
  int start_metrics() {
    std::vector<const output::MetricNaming*> names;
    for (size_t i = 0; i < p_.maps.size(); ++i) {
      const auto named = std::find_if(o_.metric_names.begin(), o_.metric_names.end(),
                                      [&](const auto& n) { return n.first == p_.maps[i].name; });
      names.push_back(named == o_.metric_names.end() ? nullptr : &named->second);
    }
    metrics_ = std::make_unique<MetricsSource>(p_.maps, [this](size_t i) { return fd_of(i); }, std::move(names), ncpus_,
                                               shared_names_.get(), [this] { return run_metrics(); });
    serving_ = o_.endpoint;
    if (!serving_) {
      std::string error;
      own_endpoint_ = MetricsEndpoint::start(*o_.metrics, error);
      if (!own_endpoint_) {
        fmt::print(stderr, "ERROR: --prometheus: {}\n", error);
        return 1;
      }
      own_endpoint_->announce(*o_.metrics);
      serving_ = own_endpoint_.get();
    }
    serving_->add(metrics_.get());
    return 0;
  }

  void stop_metrics() {
    if (serving_) serving_->remove(metrics_.get());
    serving_ = nullptr;
    own_endpoint_.reset();
  }

  // What the run itself serves: called from the endpoint's threads while the
  // probes are attached (nothing it reads changes then).
  output::RunMetrics run_metrics() const {
    output::RunMetrics run{.lost_events = {{"", lost_total(), o_.tool_name}}};
    for (uint32_t i = 0; i < p_.maps.size(); ++i)
      run.map_full.push_back({p_.maps[i].name, failed_updates(i), o_.tool_name});
    each_probe([&](const std::string& probe, sema::ProbeKind, const char* how, uint64_t n) {
      run.probes.push_back({probe, how, o_.tool_name});
      run.probe_skipped.push_back({probe, n, o_.tool_name});
    });
    for (const auto& s : skips_) {
      auto it = std::find_if(run.probe_skipped.begin(), run.probe_skipped.end(),
                             [&](const auto& e) { return e.name == s.probe; });
      if (it != run.probe_skipped.end())
        it->count += s.counters.total();
      else
        run.probe_skipped.push_back({s.probe, s.counters.total(), o_.tool_name});
    }
    return run;
  }

  void report_missed_probe(const std::string& probe, sema::ProbeKind mechanism, uint64_t n) {
    if (n == 0) return;
    const char* why = mechanism == sema::ProbeKind::Tracepoint
                          ? "the kernel skips a tracepoint's program while another BPF program or a bpf() map call "
                            "is active on that CPU; rawtracepoint: (tp_btf) is skipped only when it interrupts itself"
                          : "the kernel skips a program that fires while it is already running on that CPU";
    warn_missed(probe, n, why);
  }

  void warn_missed(const std::string& probe, uint64_t n, const char* why) {
    if (n == 0) return;
    fmt::print(stderr, "WARNING: {}: {} firing{} missed: {}\n", probe, n, n == 1 ? " was" : "s were", why);
    printer_->missed(probe, n, why);
  }

  void loop(int watch_pid) {
    bpf::Fd ep(epoll_create1(EPOLL_CLOEXEC));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = 0;
    epoll_ctl(ep.get(), EPOLL_CTL_ADD, ring_->fd(), &ev);
    ev.data.u32 = 1;
    epoll_ctl(ep.get(), EPOLL_CTL_ADD, o_.stop_fd >= 0 ? o_.stop_fd : sigfd_.get(), &ev);
    bpf::Fd pidfd;
    if (watch_pid > 0) {
      pidfd = bpf::Fd(static_cast<int>(syscall(SYS_pidfd_open, watch_pid, 0)));
      if (pidfd) {
        ev.data.u32 = 2;
        epoll_ctl(ep.get(), EPOLL_CTL_ADD, pidfd.get(), &ev);
      } else if (errno == ESRCH) {
        exiting_ = true;  // it ended (and was reaped) before the probes were attached
      }
    }
    if (packets_) {
      ev.data.u32 = 3;  // drained below, as the ring buffer
      epoll_ctl(ep.get(), EPOLL_CTL_ADD, packets_->epoll_fd(), &ev);
    }
    for (size_t i = 0; i < timers_.size(); ++i) {
      ev.data.u32 = kFirstTimer + static_cast<uint32_t>(i);
      epoll_ctl(ep.get(), EPOLL_CTL_ADD, timers_[i].timer.get(), &ev);
    }
    while (!exiting_) {
      // The watched process's mappings are gone once it exits: keep a fresh
      // copy for its user stacks (checked every 100 ms).
      if (watch_pid > 0 && symbolizer_) {
        std::lock_guard g(symbols_lock_);
        symbolizer_->refresh(static_cast<uint32_t>(watch_pid));
      }
      epoll_event events[4];
      // Lost events are reported once a second while running.
      const bool now = lost_total() > lost_reported_ || behind_;
      int n = epoll_wait(ep.get(), events, 4, now ? 0 : watch_pid > 0 ? 100 : 1000);
      if (n < 0 && errno != EINTR) break;
      for (int k = 0; k < n; ++k) {
        if (events[k].data.u32 == 1) {
          signalfd_siginfo si;
          while (sigfd_ && read(sigfd_.get(), &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGUSR1)
              run_kind(sema::ProbeKind::Signal);
            else
              exiting_ = true;
          }
          if (o_.stop_fd >= 0) exiting_ = true;  // left set, for the other sessions
        } else if (events[k].data.u32 == 2) {
          if (watch_pid == child_pid_) {
            int status;
            waitpid(child_pid_, &status, 0);
            child_reaped_ = true;
          }
          exiting_ = true;
        } else if (events[k].data.u32 >= kFirstTimer) {
          tick();
        }
      }
      if (n == 0 && behind_) tick();
      drain();
      report_lost(false);
    }
    // Records already in the ring buffer before a signal still count.
    drain();
  }

  // An interval probe's timer expired. Every probe's periods that fell due
  // by now run, once each, in the order they fell due (the loop may have
  // been busy for several), until exit(). What is due comes from the clock,
  // not from each timer's count: a timer whose expiry is not delivered yet
  // (its slack) would otherwise let another timer's later periods run first.
  void tick() {
    for (auto& t : timers_) {
      uint64_t periods = 0;
      [[maybe_unused]] auto n = read(t.timer.get(), &periods, sizeof periods);  // clears the wake-up
    }
    const uint64_t now = static_cast<uint64_t>(clock_ns(CLOCK_MONOTONIC));
    behind_ = false;
    while (!exiting_) {
      Timer* next = nullptr;
      for (auto& t : timers_)
        if (t.due <= now && (!next || t.due < next->due)) next = &t;
      if (!next) break;
      // Periods slower than they fall due (a system() call, a clear() that
      // waits for the programs running) leave the rest for the next turn of
      // the loop, which reads signals first.
      if (static_cast<uint64_t>(clock_ns(CLOCK_MONOTONIC)) - now > kTickBudgetNs) {
        behind_ = true;
        break;
      }
      next->due += next->period;
      if (auto r = bpf::run_once(next->prog); !r) fmt::print(stderr, "ERROR: interval: {}\n", r.error().message);
      drain();
    }
  }

  void print_maps() {
    std::vector<size_t> order(p_.maps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p_.maps[a].name < p_.maps[b].name; });
    for (size_t i : order) {
      if (std::find(o_.served_only.begin(), o_.served_only.end(), p_.maps[i].name) != o_.served_only.end()) continue;
      output::MapSnapshot snap = read_map(p_.maps[i], fd_of(i), ncpus_, shared_names_.get());
      if (graph_file_.is_open() && output::is_foldable(snap)) {
        // Drawn, not printed (unless folded text was asked for as well);
        // a recording keeps it.
        printer_->drawn_map(snap);
        graph_maps_.push_back(std::move(snap));
        continue;
      }
      printer_->map(snap, 0, 0, 0);
    }
  }

  // The flame graph of the maps keyed by stacks, at exit.
  int write_flamegraph() {
    const output::FlameGraph g =
        output::maps_flamegraph(graph_maps_, output::stack_layout(o_.flamegraph.kind), o_.flamegraph);
    if (g.total == 0)
      fmt::print(stderr, "WARNING: --flamegraph: no map keyed by stacks (kstack, ustack) had samples at exit; {} "
                 "shows an empty graph\n", o_.flamegraph_file);
    return graph_file_.write(g.svg);
  }

  const sema::TypedProgram& p_;
  const ir::Module& m_;
  std::vector<codegen::Program> progs_;
  const Options& o_;
  int ncpus_;
  FILE* out_ = nullptr;
  PictureFile graph_file_;  // --flamegraph
  std::vector<output::MapSnapshot> graph_maps_;  // the maps it draws, read at exit
  PictureFile heat_file_;  // --heatmap FILE.svg
  bool heat_terminal_ = false;  // --heatmap -
  output::HeatMaps heat_;
  double start_time_ = 0;  // when the probes were attached (seconds since the epoch)
  std::unique_ptr<Printer> printer_;  // how the output format prints each kind of output
  size_t heat_lines_ = 0, heat_mark_ = 0;  // the last terminal drawing: its lines, and the bytes written after it
  std::optional<RingReader> ring_;
  std::vector<bpf::Fd> map_fds_;
  // The control value (ir::SupportMaps::control) as last written: the stop
  // word, then the generation of each swapped map.
  std::vector<uint64_t> control_;
  // Per script map: the id of the kernel map user space reads (fd_of). The
  // metrics thread reads it too.
  std::vector<std::atomic<uint32_t>> view_;
  // Per script map: flipped, and not yet taken (flip_for_takes).
  std::vector<bool> flipped_;
  std::vector<size_t> flips_;  // flip_for_takes(): the maps to flip
  bool peek_stopped_ = false;  // on_peek() met an exit()
  std::unique_ptr<Symbolizer> symbolizer_;
  std::unique_ptr<PacketWriter> packets_;  // skboutput()
  std::unique_ptr<ValueNames> names_;
  std::mutex symbols_lock_;  // the symbol caches: the event loop and the metrics endpoint both resolve
  std::unique_ptr<SharedResolver> shared_names_;  // names_, one call at a time
  std::unique_ptr<MetricsSource> metrics_;  // --prometheus: the maps served
  std::unique_ptr<MetricsEndpoint> own_endpoint_;  // --prometheus's endpoint (not `serve`'s)
  MetricsEndpoint* serving_ = nullptr;  // the endpoint serving metrics_
  std::vector<bpf::Fd> prog_fds_;
  std::vector<std::vector<bpf::Fd>> target_fds_;  // per program: one fd per target (tp_btf), or none
  std::vector<bpf::Link> links_;
  std::vector<bpf::Fd> held_;  // links and perf events of stopped probes, released last
  struct Timer {
    int prog;  // an interval probe's program
    bpf::Fd timer;
    uint64_t due = 0;  // CLOCK_MONOTONIC ns of its next period not yet run
    uint64_t period = 0;
  };
  static constexpr uint32_t kFirstTimer = 16;  // epoll ids of the timers
  static constexpr uint64_t kTickBudgetNs = 50'000'000;  // one tick() runs periods for this long at most
  bool behind_ = false;  // periods are due that tick() left for the next turn
  std::vector<Timer> timers_;
  // Classic tracepoints: the firings the kernel ran no program for.
  struct Skips {
    std::string probe;
    bpf::SkipCounters counters;  // read at detach, then released with the links
    uint64_t skipped = 0;
  };
  std::vector<Skips> skips_;
  bpf::Fd sigfd_;
  bool exiting_ = false;
  bool ignore_records_ = false;
  bool discard_output_ = false;  // --mode bench: a benchmark runs; its records print nothing
  uint64_t bench_errors_ = 0;    // errorf() and failed helper calls in the benchmark running
  bool iterating_ = false;       // an iterator's records are read: an exit() among them drops none
  int exit_code_ = 0;
  uint64_t lost_reported_ = 0;
  uint64_t lost_discarded_ = 0;  // lost while a benchmark ran (lost_total)
  const volatile uint64_t* lost_ = nullptr;  // the lost map's one counter, mapped
  size_t lost_bytes_ = 0;
  int child_pid_ = -1;
  bool child_reaped_ = false;
};

}  // namespace

int terminal_width(FILE* out) {
  struct winsize ws{};
  if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

std::optional<Child> start_child(const std::string& command, std::string& error) {
  // Split like a shell would (quotes, no expansion of commands), as bpftrace does.
  wordexp_t we{};
  if (wordexp(command.c_str(), &we, WRDE_NOCMD) != 0 || we.we_wordc == 0) {
    if (we.we_wordv) wordfree(&we);
    error = fmt::format("cannot parse the command \"{}\"", command);
    return std::nullopt;
  }
  std::vector<std::string> words(we.we_wordv, we.we_wordv + we.we_wordc);
  wordfree(&we);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error = strerror(errno);
    return std::nullopt;
  }
  pid_t pid = fork();
  if (pid < 0) {
    error = strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[1]);
    char go;
    // Wait until the tracer has attached (or died: read returns 0).
    if (read(fds[0], &go, 1) != 1) _exit(127);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fprintf(stderr, "ERROR: failed to exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[0]);
  return Child{.pid = pid, .release_fd = fds[1], .program = words[0]};
}

int run(const sema::TypedProgram& program, const ir::Module& module, std::vector<codegen::Program> programs,
        const Options& options, std::optional<Child> child) {
  Session s(program, module, std::move(programs), options);
  return s.run(child);
}

}  // namespace bpfscope::runtime
