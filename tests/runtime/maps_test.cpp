// read_map over real per-CPU maps: a BEGIN program recording known values is
// run (BPF_PROG_TEST_RUN) on one CPU, then on another, and the decoded
// aggregates are checked: hist()/lhist() sums, stats() min and max, which a
// CPU that recorded nothing must not turn into 0.
#include <gtest/gtest.h>
#include <sched.h>

#include <string>

#include "../codegen/compile_text.h"
#include "runtime/maps.h"

namespace bpfscope::runtime {
namespace {

using codegen::test::compile_text;
using codegen::test::load_all;
using codegen::test::LoadedScript;

// Runs the script's only program on `cpu`, pinned there for the run.
void run_on_cpu(int prog_fd, int cpu) {
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0) << "cpu " << cpu;
  auto r = bpf::run_once(prog_fd);
  sched_setaffinity(0, sizeof saved, &saved);
  ASSERT_TRUE(r.has_value()) << r.error().message;
}

// The two lowest CPUs this thread may run on (-1 for a missing second).
std::pair<int, int> two_cpus() {
  cpu_set_t set;
  std::pair<int, int> out{-1, -1};
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    if (out.first < 0) {
      out.first = c;
    } else {
      out.second = c;
      break;
    }
  }
  return out;
}

struct Script {
  codegen::test::Compiled c;
  LoadedScript loaded;

  output::MapSnapshot read(std::string_view name) const {
    for (size_t i = 0; i < c.typed->maps.size(); ++i)
      if (c.typed->maps[i].name == name)
        return read_map(c.typed->maps[i], loaded.maps[i].get(), bpf::possible_cpus());
    ADD_FAILURE() << "no map " << name;
    return {};
  }
  void zero(std::string_view name) const {
    for (size_t i = 0; i < c.typed->maps.size(); ++i)
      if (c.typed->maps[i].name == name) zero_map(c.typed->maps[i], loaded.maps[i].get(), loaded.maps[i].get(), bpf::possible_cpus());
  }
};

// The one entry of a map without keys.
output::Aggregate only_entry(const output::MapSnapshot& m) {
  EXPECT_EQ(m.entries.size(), 1u) << m.name;
  return m.entries.empty() ? output::Aggregate{} : m.entries[0].second;
}

// Values depend on the CPU (its number c): c * 100 apart.
constexpr const char* kProgram =
    "BEGIN { $c = (int64)cpu; "
    "@s = stats(7 + $c * 100); @s = stats(12 + $c * 100); "
    "@n = stats(-5 - $c); "
    "@h = hist(100 + $c); @h = hist(-4); "
    "@l = lhist(15 + $c, 0, 100, 10); "
    "@hk[1] = hist(3); }";

TEST(ReadMap, SumsMinsAndMaxesOfRealMaps) {
  const auto [first, second] = two_cpus();
  ASSERT_GE(first, 0);
  Script s{compile_text(kProgram), {}};
  ASSERT_TRUE(s.c.typed.has_value());
  ASSERT_EQ(load_all(s.c, &s.loaded), "");
  ASSERT_EQ(s.loaded.programs.size(), 1u);
  const int prog = s.loaded.programs[0].get();

  run_on_cpu(prog, first);
  const int64_t c1 = first;
  output::Aggregate st = only_entry(s.read("@s"));
  EXPECT_EQ(st.count, 2);
  EXPECT_EQ(st.total, 19 + 200 * c1);
  // The other CPUs recorded nothing: their zeros are no minimum.
  EXPECT_EQ(st.min.kind, output::Value::Kind::Int);
  EXPECT_EQ(st.min.i, 7 + 100 * c1);
  EXPECT_EQ(st.max.i, 12 + 100 * c1);
  output::Aggregate neg = only_entry(s.read("@n"));
  EXPECT_EQ(neg.min.i, -5 - c1);
  EXPECT_EQ(neg.max.i, -5 - c1);
  output::Aggregate h = only_entry(s.read("@h"));
  EXPECT_EQ(h.sum, 96 + c1);
  EXPECT_EQ(h.buckets.size(), output::hist_bucket_count(0));
  uint64_t recorded = 0;
  for (uint64_t b : h.buckets) recorded += b;
  EXPECT_EQ(recorded, 2u);
  EXPECT_EQ(h.buckets[0], 1u);  // -4
  EXPECT_EQ(only_entry(s.read("@l")).sum, 15 + c1);
  const output::MapSnapshot hk = s.read("@hk");
  ASSERT_EQ(hk.entries.size(), 1u);
  EXPECT_EQ(hk.entries[0].second.sum, 3);

  if (second < 0) GTEST_SKIP() << "one CPU: the values of two CPUs are not combined here";
  run_on_cpu(prog, second);
  const int64_t c2 = second;
  st = only_entry(s.read("@s"));
  EXPECT_EQ(st.count, 4);
  EXPECT_EQ(st.total, 38 + 200 * (c1 + c2));
  EXPECT_EQ(st.min.i, 7 + 100 * c1);
  EXPECT_EQ(st.max.i, 12 + 100 * c2);
  neg = only_entry(s.read("@n"));
  EXPECT_EQ(neg.min.i, -5 - c2);
  EXPECT_EQ(neg.max.i, -5 - c1);
  EXPECT_EQ(only_entry(s.read("@h")).sum, 192 + c1 + c2);
  EXPECT_EQ(only_entry(s.read("@l")).sum, 30 + c1 + c2);
  EXPECT_EQ(s.read("@hk").entries[0].second.sum, 6);

  // zero(): the sums are 0 again, min and max unset.
  s.zero("@s");
  s.zero("@h");
  st = only_entry(s.read("@s"));
  EXPECT_EQ(st.count, 0);
  EXPECT_EQ(st.min.kind, output::Value::Kind::None);
  EXPECT_EQ(st.max.kind, output::Value::Kind::None);
  EXPECT_EQ(only_entry(s.read("@h")).sum, 0);
}

}  // namespace
}  // namespace bpfscope::runtime
