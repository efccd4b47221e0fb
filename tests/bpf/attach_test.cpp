// Real attaches on the running kernel: tracepoints and perf software events;
// kprobes and fentry/fexit where the kernel has them, and their failure
// messages where it does not (as on the test machine, KERNEL.md 2.2).
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bpf/bpf.h"
#include "bpf/btf.h"
#include "bpf/libbpf_bpf.h"
#include "insn.h"

namespace bpfscope::bpf {
namespace {

using namespace bpfscope::bpf::test;
using namespace std::chrono_literals;

uint64_t read_count(int map_fd) {
  uint32_t k = 0;
  uint64_t v = 0;
  EXPECT_EQ(bpf_map_lookup_elem(map_fd, &k, &v), 0);
  return v;
}

struct Counter {
  Fd map;
  Fd prog;
};

Counter load_counter(bpf_prog_type type, int only_tgid) {
  Counter c;
  auto m = create_map(BPF_MAP_TYPE_ARRAY, "count", 4, 8, 1);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  if (!m) return c;
  c.map = std::move(*m);
  auto insns = counter_program(c.map.get(), only_tgid);
  ProgramSpec spec;
  spec.type = type;
  spec.name = "counter";
  spec.insns = insns;
  auto p = load_program(spec);
  EXPECT_TRUE(p.has_value()) << "errno " << p.error().err << "\n" << p.error().log;
  if (p) c.prog = std::move(p->fd);
  return c;
}

// Keeps a CPU busy for `d` (pinned to `cpu` when >= 0). On this kernel an
// idle CPU may take no cpu-clock samples at all, so the perf tests spin.
void spin(std::chrono::milliseconds d, int cpu = -1) {
  std::thread t([d, cpu] {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      EXPECT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
    }
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
    }
  });
  t.join();
}

uint32_t getppid_id() {
  auto f = read_tracepoint_format("syscalls", "sys_enter_getppid");
  EXPECT_TRUE(f.has_value()) << f.error().message;
  return f ? f->id : 0;
}

TEST(Attach, TracepointCountsExactly) {
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, ::getpid());
  ASSERT_TRUE(c.prog);
  const uint32_t id = getppid_id();
  ASSERT_GT(id, 0u);
  {
    auto link = attach_tracepoint(c.prog.get(), id);
    ASSERT_TRUE(link.has_value()) << link.error().message;
    EXPECT_TRUE(link->perf);
    for (int i = 0; i < 100; ++i) ::syscall(SYS_getppid);
    EXPECT_EQ(read_count(c.map.get()), 100u);
  }
  // Detached when the Link is gone.
  for (int i = 0; i < 100; ++i) ::syscall(SYS_getppid);
  EXPECT_EQ(read_count(c.map.get()), 100u);
}

// The skip counters count the firings no program ran for: none while a
// program that returns 0 is attached, each one once it is detached.
// sys_exit_getsid: a tracepoint no other test attaches (sys_enter_* wildcards
// would: their programs take the firings once ours is detached).
TEST(Attach, SkipCountersCountFiringsNoProgramRanFor) {
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, ::getpid());
  ASSERT_TRUE(c.prog);
  auto f = read_tracepoint_format("syscalls", "sys_exit_getsid");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  auto link = attach_tracepoint(c.prog.get(), f->id);
  ASSERT_TRUE(link.has_value()) << link.error().message;
  auto skips = count_skipped_firings(f->id);
  ASSERT_TRUE(skips.has_value()) << skips.error().message;
  EXPECT_EQ(skips->per_cpu.size(), online_cpus().size());
  for (int i = 0; i < 50; ++i) ::getsid(0);
  EXPECT_EQ(read_count(c.map.get()), 50u);
  EXPECT_EQ(skips->total(), 0u);
  link->link = Fd();  // detach the program; the counters stay
  link->perf = Fd();
  for (int i = 0; i < 30; ++i) ::getsid(0);
  EXPECT_EQ(read_count(c.map.get()), 50u);
  EXPECT_EQ(skips->total(), 30u);
}

TEST(Attach, TracepointFromAnotherThreadAndCpu) {
  // The event is opened on cpu 0, but the program must run on every CPU.
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, ::getpid());
  ASSERT_TRUE(c.prog);
  auto link = attach_tracepoint(c.prog.get(), getppid_id());
  ASSERT_TRUE(link.has_value()) << link.error().message;
  const auto cpus = online_cpus();
  for (int cpu : cpus) {
    std::thread t([cpu] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      EXPECT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
      for (int i = 0; i < 10; ++i) ::syscall(SYS_getppid);
    });
    t.join();
  }
  EXPECT_EQ(read_count(c.map.get()), 10u * cpus.size());
}

TEST(Attach, TracepointMovedLinkStaysAttached) {
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, ::getpid());
  ASSERT_TRUE(c.prog);
  std::vector<Link> links;
  {
    auto link = attach_tracepoint(c.prog.get(), getppid_id());
    ASSERT_TRUE(link.has_value()) << link.error().message;
    links.push_back(std::move(*link));
  }
  for (int i = 0; i < 5; ++i) ::syscall(SYS_getppid);
  EXPECT_EQ(read_count(c.map.get()), 5u);
  links.clear();
  ::syscall(SYS_getppid);
  EXPECT_EQ(read_count(c.map.get()), 5u);
}

TEST(Attach, TracepointBadIdNamesWhatFailed) {
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, -1);
  ASSERT_TRUE(c.prog);
  auto link = attach_tracepoint(c.prog.get(), 0x7ffffff0u);
  ASSERT_FALSE(link.has_value());
  EXPECT_NE(link.error().err, 0);
  EXPECT_TRUE(link.error().message.starts_with("perf_event_open(tracepoint id 2147483632): "))
      << link.error().message;
}

TEST(Attach, TracepointWrongProgramType) {
  Counter c = load_counter(BPF_PROG_TYPE_RAW_TRACEPOINT, -1);
  ASSERT_TRUE(c.prog);
  auto link = attach_tracepoint(c.prog.get(), getppid_id());
  ASSERT_FALSE(link.has_value());
  EXPECT_NE(link.error().message.find("bpf_link_create(BPF_PERF_EVENT"), std::string::npos)
      << link.error().message;
}

TEST(Attach, PerfSoftwareCpuClockAllCpus) {
  Counter c = load_counter(BPF_PROG_TYPE_PERF_EVENT, -1);
  ASSERT_TRUE(c.prog);
  uint64_t during = 0;
  {
    auto links = attach_perf_software(c.prog.get(), PERF_COUNT_SW_CPU_CLOCK, 99, /*freq=*/true, /*cpu=*/-1);
    ASSERT_TRUE(links.has_value()) << links.error().message;
    EXPECT_EQ(links->size(), online_cpus().size());
    spin(300ms);
    during = read_count(c.map.get());
    EXPECT_GT(during, 0u);
  }
  const uint64_t after = read_count(c.map.get());
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(read_count(c.map.get()), after);
}

TEST(Attach, PerfSoftwareIntervalOnCpu0) {
  Counter c = load_counter(BPF_PROG_TYPE_PERF_EVENT, -1);
  ASSERT_TRUE(c.prog);
  auto links = attach_perf_software(c.prog.get(), PERF_COUNT_SW_CPU_CLOCK, 10'000'000, /*freq=*/false, /*cpu=*/0);
  ASSERT_TRUE(links.has_value()) << links.error().message;
  ASSERT_EQ(links->size(), 1u);
  spin(300ms, 0);
  const uint64_t n = read_count(c.map.get());
  EXPECT_GE(n, 10u);
  EXPECT_LE(n, 60u);
}

TEST(Attach, PerfSoftwareBadArguments) {
  Counter c = load_counter(BPF_PROG_TYPE_PERF_EVENT, -1);
  ASSERT_TRUE(c.prog);
  auto zero = attach_perf_software(c.prog.get(), PERF_COUNT_SW_CPU_CLOCK, 0, false, 0);
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().err, EINVAL);

  auto bad_cpu = attach_perf_software(c.prog.get(), PERF_COUNT_SW_CPU_CLOCK, 1000000, false, 100000);
  ASSERT_FALSE(bad_cpu.has_value());
  EXPECT_TRUE(bad_cpu.error().message.starts_with("perf_event_open(software:cpu-clock")) << bad_cpu.error().message;
  EXPECT_NE(bad_cpu.error().message.find("cpu 100000"), std::string::npos) << bad_cpu.error().message;
}

void nanosleep_a_little(int times) {
  for (int i = 0; i < times; ++i) {
    timespec ts{0, 1000};
    ::nanosleep(&ts, nullptr);
  }
}

TEST(Attach, KprobeNamesWhatIsMissing) {
  Counter c = load_counter(BPF_PROG_TYPE_KPROBE, ::getpid());
  ASSERT_TRUE(c.prog);
  for (bool ret : {false, true}) {
    auto link = attach_kprobe(c.prog.get(), "do_nanosleep", 0, ret);
    if (has_kprobe_support()) {
      // A kernel with kprobes: the probe fires.
      ASSERT_TRUE(link.has_value()) << link.error().message;
      const uint64_t before = read_count(c.map.get());
      nanosleep_a_little(5);
      EXPECT_EQ(read_count(c.map.get()), before + 5);
      continue;
    }
    ASSERT_FALSE(link.has_value());
    EXPECT_EQ(link.error().err, ENOENT);
    EXPECT_EQ(link.error().message,
              "kprobes are not available on this kernel (no kprobe PMU in /sys/bus/event_source/devices and no "
              "kprobe_events in tracefs)");
  }
}

TEST(Attach, KprobeBadFunctionNamesIt) {
  if (!has_kprobe_support()) GTEST_SKIP() << "no kprobe PMU on this kernel";
  Counter c = load_counter(BPF_PROG_TYPE_KPROBE, -1);
  ASSERT_TRUE(c.prog);
  auto link = attach_kprobe(c.prog.get(), "no_such_function_xyz", 0, false);
  ASSERT_FALSE(link.has_value());
  EXPECT_TRUE(link.error().message.starts_with("perf_event_open(kprobe no_such_function_xyz): "))
      << link.error().message;
}

// fentry/fexit: loaded as TRACING with the function's BTF id, attached with
// an unnamed raw tracepoint open. This kernel refuses the load (EPERM with an
// empty log), which fentry_unavailable() reports.
TEST(Attach, FentryLoadsAndAttachesOrIsRefusedClearly) {
  Btf btf;
  auto fn = btf.find_func("do_nanosleep");
  ASSERT_TRUE(fn.has_value());
  for (bool exit : {false, true}) {
    const std::string why = fentry_unavailable("do_nanosleep", exit);
    auto m = create_map(BPF_MAP_TYPE_ARRAY, "count", 4, 8, 1);
    ASSERT_TRUE(m.has_value()) << m.error().message;
    auto insns = counter_program(m->get(), ::getpid());
    ProgramSpec spec;
    spec.type = BPF_PROG_TYPE_TRACING;
    spec.expected_attach_type = exit ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
    spec.attach_btf_id = *fn;
    spec.name = "counter";
    spec.insns = insns;
    auto p = load_program(spec);
    if (!why.empty()) {
      EXPECT_EQ(why, fmt::format("this kernel refuses {} programs (BPF_PROG_LOAD: Operation not permitted)",
                                 exit ? "fexit" : "fentry"));
      ASSERT_FALSE(p.has_value());
      EXPECT_EQ(p.error().err, EPERM);
      continue;
    }
    ASSERT_TRUE(p.has_value()) << "errno " << p.error().err << "\n" << p.error().log;
    auto link = attach_raw_tracepoint(p->fd.get(), "");
    ASSERT_TRUE(link.has_value()) << link.error().message;
    nanosleep_a_little(5);
    EXPECT_EQ(read_count(m->get()), 5u);
  }
}

TEST(Attach, FentryUnknownFunction) {
  EXPECT_EQ(fentry_unavailable("no_such_function_xyz", false), "function no_such_function_xyz is not in the kernel's BTF");
}

TEST(Attach, UnnamedRawTracepointWrongProgramType) {
  // An unnamed open is for programs bound at load; a classic tracepoint
  // program is refused with a message naming the call.
  Counter c = load_counter(BPF_PROG_TYPE_TRACEPOINT, -1);
  ASSERT_TRUE(c.prog);
  auto link = attach_raw_tracepoint(c.prog.get(), "");
  ASSERT_FALSE(link.has_value());
  EXPECT_TRUE(link.error().message.starts_with("bpf_raw_tracepoint_open(): ")) << link.error().message;
}

TEST(System, Cpus) {
  auto online = online_cpus();
  ASSERT_FALSE(online.empty());
  EXPECT_GE(possible_cpus(), static_cast<int>(online.size()));
  for (int c : online) EXPECT_LT(c, possible_cpus());
  // Per-CPU values come in possible_cpus() slots: the count libbpf gives.
  EXPECT_EQ(possible_cpus(), libbpf_num_possible_cpus());
  EXPECT_EQ(static_cast<long>(online.size()), ::sysconf(_SC_NPROCESSORS_ONLN));
}

TEST(System, KprobeSupportMatchesPmu) {
  EXPECT_EQ(has_kprobe_support(), ::access("/sys/bus/event_source/devices/kprobe", F_OK) == 0);
}

}  // namespace
}  // namespace bpfscope::bpf
