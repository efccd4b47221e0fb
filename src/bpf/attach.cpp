// Attaching programs: perf events (classic tracepoints, software events,
// kprobes and uprobes through their PMUs), raw tracepoints and BPF links.
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "bpf/bpf.h"
#include "bpf/internal.h"
#include "bpf/libbpf_bpf.h"

namespace bpfscope::bpf {

using detail::make_error;

namespace {

int sys_perf_event_open(perf_event_attr* attr, int pid, int cpu, int group_fd, unsigned long flags) {
  return static_cast<int>(::syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags));
}

// Attaches prog_fd to an open (disabled) perf event, then enables it. Prefers
// a BPF link (BPF_LINK_CREATE with BPF_PERF_EVENT); kernels without perf links
// get PERF_EVENT_IOC_SET_BPF. `what` names the event for error messages.
Result<Link> attach_to_perf_event(int prog_fd, Fd perf, const std::string& what) {
  Link link;
  int lfd = bpf_link_create(prog_fd, perf.get(), BPF_PERF_EVENT, nullptr);
  if (lfd >= 0) {
    link.link = Fd(lfd);
  } else {
    const int link_err = -lfd;
    const std::string link_what = fmt::format("bpf_link_create(BPF_PERF_EVENT, prog fd {}, {})", prog_fd, what);
    if (link_err != EINVAL && link_err != EOPNOTSUPP) return std::unexpected(make_error(link_err, link_what));
    if (::ioctl(perf.get(), PERF_EVENT_IOC_SET_BPF, prog_fd) < 0) {
      const int err = errno;
      // Both failing usually means a program type that does not fit the
      // event; report both attempts.
      return std::unexpected(make_error(err, fmt::format("{}: {}; ioctl(PERF_EVENT_IOC_SET_BPF, {})", link_what,
                                                         detail::errno_text(link_err), what)));
    }
  }
  if (::ioctl(perf.get(), PERF_EVENT_IOC_ENABLE, 0) < 0) {
    return std::unexpected(make_error(errno, fmt::format("ioctl(PERF_EVENT_IOC_ENABLE, {})", what)));
  }
  link.perf = std::move(perf);
  return link;
}

std::string software_event_name(uint64_t config) {
  switch (config) {
    case PERF_COUNT_SW_CPU_CLOCK: return "cpu-clock";
    case PERF_COUNT_SW_TASK_CLOCK: return "task-clock";
    case PERF_COUNT_SW_PAGE_FAULTS: return "page-faults";
    case PERF_COUNT_SW_CONTEXT_SWITCHES: return "context-switches";
    case PERF_COUNT_SW_CPU_MIGRATIONS: return "cpu-migrations";
    case PERF_COUNT_SW_PAGE_FAULTS_MIN: return "minor-faults";
    case PERF_COUNT_SW_PAGE_FAULTS_MAJ: return "major-faults";
    case PERF_COUNT_SW_ALIGNMENT_FAULTS: return "alignment-faults";
    case PERF_COUNT_SW_EMULATION_FAULTS: return "emulation-faults";
    case PERF_COUNT_SW_DUMMY: return "dummy";
    case PERF_COUNT_SW_BPF_OUTPUT: return "bpf-output";
    default: return fmt::format("config {}", config);
  }
}

}  // namespace

Result<Link> attach_tracepoint(int prog_fd, uint32_t tracepoint_id, int pid) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = tracepoint_id;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  attr.disabled = 1;  // enabled once the program is attached

  // The program runs on every CPU whichever CPU the event is opened on (it
  // hangs off the tracepoint itself), so a system-wide attach needs one event
  // (cpu 0). A per-task event must be opened with cpu -1.
  const int cpu = pid == -1 ? 0 : -1;
  const std::string what = pid == -1 ? fmt::format("tracepoint id {}", tracepoint_id)
                                     : fmt::format("tracepoint id {}, pid {}", tracepoint_id, pid);
  int pfd = sys_perf_event_open(&attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (pfd < 0) return std::unexpected(make_error(errno, "perf_event_open(" + what + ")"));
  return attach_to_perf_event(prog_fd, Fd(pfd), what);
}

Result<SkipCounters> count_skipped_firings(uint32_t tracepoint_id) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = tracepoint_id;  // counting: no sample period, nothing mapped
  SkipCounters counters;
  for (int c : online_cpus()) {
    int pfd = sys_perf_event_open(&attr, -1, c, -1, PERF_FLAG_FD_CLOEXEC);
    if (pfd < 0) {
      if (errno == ENODEV) continue;  // went offline meanwhile
      return std::unexpected(
          make_error(errno, fmt::format("perf_event_open(tracepoint id {} counter, cpu {})", tracepoint_id, c)));
    }
    counters.per_cpu.emplace_back(pfd);
  }
  return counters;
}

uint64_t SkipCounters::total() const {
  uint64_t sum = 0;
  for (const auto& fd : per_cpu) {
    uint64_t v = 0;
    if (::read(fd.get(), &v, sizeof v) == static_cast<ssize_t>(sizeof v)) sum += v;
  }
  return sum;
}

// A dynamic probe PMU ("kprobe", "uprobe"): its type and the config bit that
// makes a return probe, from /sys/bus/event_source/devices/NAME.
struct ProbePmu {
  uint32_t type = 0;
  int retprobe_bit = 0;
};

static std::optional<ProbePmu> probe_pmu(std::string_view name) {
  const std::string dir = fmt::format("/sys/bus/event_source/devices/{}", name);
  auto type = detail::read_text_file(dir + "/type");
  if (!type) return std::nullopt;
  ProbePmu pmu{.type = static_cast<uint32_t>(std::atoi(type->c_str()))};
  if (auto format = detail::read_text_file(dir + "/format/retprobe")) {
    auto colon = format->find(':');
    if (colon != std::string::npos) pmu.retprobe_bit = std::atoi(format->c_str() + colon + 1);
  }
  return pmu;
}

// Opens a probe on a dynamic probe PMU and attaches prog_fd to it. `target`
// (config1) is the kprobe's function name or the uprobe's path, `offset`
// (config2) the offset into it; `config` carries extra bits (the uprobe's
// ref_ctr_offset). `what` names the probe for error messages.
static Result<Link> attach_probe_pmu(int prog_fd, const ProbePmu& pmu, const std::string& target, uint64_t offset,
                                     bool retprobe, int pid, uint64_t config, const std::string& what) {
  perf_event_attr attr{};
  attr.type = pmu.type;
  attr.size = sizeof attr;
  attr.config = config | (retprobe ? 1ull << pmu.retprobe_bit : 0);
  attr.config1 = reinterpret_cast<uint64_t>(target.c_str());  // kprobe_func / uprobe_path
  attr.config2 = offset;                                      // probe_offset
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  attr.disabled = 1;  // enabled once the program is attached
  // System-wide probes are opened once (cpu 0), like tracepoints; a per-task
  // one with cpu -1.
  const int cpu = pid == -1 ? 0 : -1;
  int pfd = sys_perf_event_open(&attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (pfd < 0) return std::unexpected(make_error(errno, "perf_event_open(" + what + ")"));
  return attach_to_perf_event(prog_fd, Fd(pfd), what);
}

Result<Link> attach_uprobe(int prog_fd, const std::string& path, uint64_t offset, bool retprobe, int pid,
                           uint64_t ref_ctr_offset) {
  auto pmu = probe_pmu("uprobe");
  if (!pmu) return std::unexpected(Error{ENOENT, "no uprobe PMU in /sys/bus/event_source/devices"});
  const std::string what = fmt::format("{}probe {}:{:#x}{}", retprobe ? "uret" : "u", path, offset,
                                       pid == -1 ? "" : fmt::format(", pid {}", pid));
  // A USDT semaphore: the kernel counts attached probes in it (config:32-63,
  // /sys/bus/event_source/devices/uprobe/format/ref_ctr_offset).
  return attach_probe_pmu(prog_fd, *pmu, path, offset, retprobe, pid, ref_ctr_offset << 32, what);
}

Result<Link> attach_kprobe(int prog_fd, const std::string& func, uint64_t offset, bool retprobe, int pid) {
  auto pmu = probe_pmu("kprobe");
  if (!pmu) {
    // Kernels before 4.17 have kprobe_events but no PMU; attaching through
    // tracefs is not implemented.
    auto root = tracefs_root();
    if (root && detail::path_exists((*root + "/kprobe_events").c_str())) {
      return std::unexpected(Error{EOPNOTSUPP, fmt::format("no kprobe PMU in /sys/bus/event_source/devices, and "
                                                           "attaching through {}/kprobe_events is not supported",
                                                           *root)});
    }
    return std::unexpected(Error{ENOENT, "kprobes are not available on this kernel (no kprobe PMU in "
                                         "/sys/bus/event_source/devices and no kprobe_events in tracefs)"});
  }
  std::string what = fmt::format("{}probe {}", retprobe ? "kret" : "k", func);
  if (offset) what += fmt::format("+{:#x}", offset);
  if (pid != -1) what += fmt::format(", pid {}", pid);
  return attach_probe_pmu(prog_fd, *pmu, func, offset, retprobe, pid, 0, what);
}

Result<void> run_iterator(int prog_fd) {
  int link = bpf_link_create(prog_fd, 0, BPF_TRACE_ITER, nullptr);
  if (link < 0) return std::unexpected(make_error(errno, "bpf_link_create(BPF_TRACE_ITER)"));
  Fd link_fd(link);
  int iter = bpf_iter_create(link);
  if (iter < 0) return std::unexpected(make_error(errno, "bpf_iter_create"));
  Fd iter_fd(iter);
  // Reading runs the program over every object; it writes nothing here.
  char buf[4096];
  ssize_t n;
  while ((n = read(iter, buf, sizeof buf)) > 0) {
  }
  if (n < 0) return std::unexpected(make_error(errno, "read(iterator)"));
  return {};
}

Result<Link> attach_raw_tracepoint(int prog_fd, const std::string& event) {
  // A tp_btf program names its event at load (attach_btf_id): no name here.
  int fd = bpf_raw_tracepoint_open(event.empty() ? nullptr : event.c_str(), prog_fd);
  if (fd < 0) return std::unexpected(make_error(errno, "bpf_raw_tracepoint_open(" + event + ")"));
  Link link;
  link.link = Fd(fd);
  return link;
}

std::string sample_frequency_refused(uint64_t hz) {
  FILE* f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
  if (!f) return "";
  unsigned long long max = 0;
  const bool ok = fscanf(f, "%llu", &max) == 1;
  fclose(f);
  if (!ok || hz <= max) return "";
  return fmt::format("the frequency must be at most {} Hz, this kernel's maximum sample rate "
                     "(kernel.perf_event_max_sample_rate), not {}",
                     max, hz);
}

Result<std::vector<Link>> attach_perf_software(int prog_fd, uint64_t config, uint64_t period, bool freq, int cpu,
                                               int pid) {
  const std::string event = software_event_name(config);
  if (period == 0) {
    return std::unexpected(Error{EINVAL, fmt::format("perf event software:{}: the {} must be greater than 0", event,
                                                     freq ? "frequency" : "period")});
  }
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = config;
  if (freq) {
    attr.freq = 1;
    attr.sample_freq = period;
  } else {
    attr.sample_period = period;
  }
  attr.disabled = 1;  // enabled once the program is attached

  auto open_one = [&](int on_cpu) -> Result<Link> {
    std::string what = fmt::format("software:{}, {} {}", event, freq ? "freq" : "period", period);
    if (on_cpu >= 0) what += fmt::format(", cpu {}", on_cpu);
    if (pid != -1) what += fmt::format(", pid {}", pid);
    int pfd = sys_perf_event_open(&attr, pid, on_cpu, -1, PERF_FLAG_FD_CLOEXEC);
    const int err = errno;
    if (pfd < 0 && err == EINVAL && freq)
      if (std::string why = sample_frequency_refused(period); !why.empty())
        return std::unexpected(Error{EINVAL, why});
    if (pfd < 0) return std::unexpected(make_error(err, "perf_event_open(" + what + ")"));
    return attach_to_perf_event(prog_fd, Fd(pfd), what);
  };

  std::vector<Link> links;
  if (cpu >= 0 || pid != -1) {
    // One CPU, or one task wherever it runs (a single per-task event follows
    // the task across CPUs).
    auto l = open_one(cpu);
    if (!l) return std::unexpected(std::move(l.error()));
    links.push_back(std::move(*l));
    return links;
  }
  for (int c : online_cpus()) {
    auto l = open_one(c);
    if (!l) {
      if (l.error().err == ENODEV) continue;  // went offline meanwhile
      return std::unexpected(std::move(l.error()));  // `links` detaches what was attached
    }
    links.push_back(std::move(*l));
  }
  if (links.empty()) {
    return std::unexpected(Error{ENODEV, fmt::format("perf event software:{}: no online CPU to attach to", event)});
  }
  return links;
}

}  // namespace bpfscope::bpf
