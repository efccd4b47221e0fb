// CPU lists, kernel capability probes, and waiting for running programs.
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <ctime>

#include "bpf/bpf.h"
#include "bpf/internal.h"

namespace bpfscope::bpf {

namespace {

// Parses a kernel CPU list ("0-3,5,7-8\n"). Returns false on malformed input.
bool parse_cpu_list(std::string_view s, std::vector<int>& out) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  if (s.empty()) return false;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    std::string_view range = s.substr(pos, comma - pos);
    pos = comma + 1;
    int lo = 0, hi = 0;
    size_t dash = range.find('-');
    std::string_view a = range.substr(0, dash);
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), lo);
    if (r1.ec != std::errc() || r1.ptr != a.data() + a.size()) return false;
    hi = lo;
    if (dash != std::string_view::npos) {
      std::string_view b = range.substr(dash + 1);
      auto r2 = std::from_chars(b.data(), b.data() + b.size(), hi);
      if (r2.ec != std::errc() || r2.ptr != b.data() + b.size() || hi < lo) return false;
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  return true;
}

}  // namespace

std::vector<int> online_cpus() {
  std::vector<int> cpus;
  auto text = detail::read_text_file("/sys/devices/system/cpu/online");
  if (text && parse_cpu_list(*text, cpus) && !cpus.empty()) return cpus;
  cpus.clear();
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < (n > 0 ? n : 1); ++c) cpus.push_back(c);
  return cpus;
}

// The CPUs in /sys/devices/system/cpu/possible, counted as libbpf counts
// them for per-CPU values; read here rather than through
// libbpf_num_possible_cpus(), whose code lies far into libbpf.o's 90 kB of
// text, away from the rest libbpf runs at start (one more 64 KiB window
// resident at every start: BENCHMARKS.md, "Start and memory against ply").
int possible_cpus() {
  static const int n = [] {
    std::vector<int> cpus;
    auto text = detail::read_text_file("/sys/devices/system/cpu/possible");
    if (text && parse_cpu_list(*text, cpus) && !cpus.empty()) return static_cast<int>(cpus.size());
    long conf = ::sysconf(_SC_NPROCESSORS_CONF);
    return conf > 0 ? static_cast<int>(conf) : 1;
  }();
  return n;
}

void wait_for_programs() {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
  timespec pause{.tv_sec = 0, .tv_nsec = 20'000'000};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

bool has_kprobe_support() { return detail::path_exists("/sys/bus/event_source/devices/kprobe"); }

}  // namespace bpfscope::bpf
