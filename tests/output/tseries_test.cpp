// tseries(): the reduction of the kernel's per-CPU slots, and the graph and
// JSON bpftrace 0.26 prints, at fixed epochs (times shown in UTC).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;  // snapshot_builders.h

class TSeries : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? std::optional<std::string>(tz) : std::nullopt;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (saved_)
      setenv("TZ", saved_->c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }

 private:
  std::optional<std::string> saved_;
};

Aggregate series(std::map<uint64_t, int64_t> s) {
  Aggregate a;
  a.series = std::move(s);
  return a;
}

MapSnapshot with(MapSnapshot m, uint64_t interval_ns, uint32_t intervals, TSeriesAgg agg = TSeriesAgg::Last) {
  m.tseries = TSeriesParams{.interval_ns = interval_ns, .intervals = intervals, .agg = agg};
  return m;
}

// The 53 columns of one row: its edges, '*' at `star` (-1: none), '.' at
// `dot` (0: none).
std::string bar(int star, int dot = 0) {
  std::string line(53, ' ');
  line.front() = '|';
  line.back() = '|';
  if (dot) line[dot] = '.';
  if (star >= 0) line[star] = '*';
  return line;
}

constexpr uint64_t kMs = 1'000'000;

TEST_F(TSeries, FlatLineGetsRoomOnBothSides) {
  // Epochs 5-9 of 100ms, all 9.
  const auto m = with(scalar("@a", AggKind::TSeries, series({{5, 9}, {6, 9}, {7, 9}, {8, 9}, {9, 9}})), 100 * kMs, 5);
  std::string want = "@a:\n";
  want += "             8                                                  10\n";
  want += "hh:mm:ss.ms  |___________________________________________________|\n";
  for (const char* t : {"00:00:00.500", "00:00:00.600", "00:00:00.700", "00:00:00.800", "00:00:00.900"})
    want += std::string(t) + " " + bar(26) + " 9\n";
  want += "             v___________________________________________________v\n";
  want += "             8                                                  10\n\n";
  EXPECT_EQ(map_text(m), want);
  EXPECT_EQ(json_map(m),
            "{\"type\": \"tseries\", \"data\": {\"@a\": ["
            "{\"interval_start\":\"1970-01-01 00:00:00.500000000\",\"value\":9},"
            "{\"interval_start\":\"1970-01-01 00:00:00.600000000\",\"value\":9},"
            "{\"interval_start\":\"1970-01-01 00:00:00.700000000\",\"value\":9},"
            "{\"interval_start\":\"1970-01-01 00:00:00.800000000\",\"value\":9},"
            "{\"interval_start\":\"1970-01-01 00:00:00.900000000\",\"value\":9}]}}\n");
}

TEST_F(TSeries, NegativeValuesDrawTheZeroLine) {
  // -5 .. 5 and back: the '.' column is 53 * 5 / 10 = 26. (The window must
  // not reach before epoch 0: its start would wrap, and show nothing.)
  std::map<uint64_t, int64_t> s;
  const int64_t values[] = {-5, -4, -1, 0, 1, 5, 4};
  for (int i = 0; i < 7; ++i) s[static_cast<uint64_t>(i + 1001)] = values[i];
  const auto m = with(scalar("@", AggKind::TSeries, series(s)), 100 * kMs, 20);
  std::string want = "@:\n";
  want += "             -5                                                  5\n";
  want += "hh:mm:ss.ms  |___________________________________________________|\n";
  want += "00:01:40.100 *                         .                         | -5\n";
  want += "00:01:40.200 " + bar(5, 26) + " -4\n";
  want += "00:01:40.300 " + bar(20, 26) + " -1\n";
  want += "00:01:40.400 " + bar(26, 26) + " 0\n";
  want += "00:01:40.500 " + bar(31, 26) + " 1\n";
  want += "00:01:40.600 |                         .                         * 5\n";
  want += "00:01:40.700 " + bar(46, 26) + " 4\n";
  want += "             v___________________________________________________v\n";
  want += "             -5                                                  5\n\n";
  EXPECT_EQ(map_text(m), want);
}

TEST_F(TSeries, KeysShareTheNewestWindow) {
  // "one" written in epochs 1-4 (its slot of epoch 0 never was), "two" in
  // 5-9: both end at epoch 9; "one" shows '-' where it has no value.
  auto m = with(keyed("@a", AggKind::TSeries,
                      {{S("one"), series({{0, 0}, {1, 5}, {2, 5}, {3, 5}, {4, 5}})},
                       {S("two"), series({{5, 4}, {6, 4}, {7, 4}, {8, 4}, {9, 4}})}}),
                100 * kMs, 10);
  std::string want = "@a[one]:\n";
  want += "             0                                                   5\n";
  want += "hh:mm:ss.ms  |___________________________________________________|\n";
  want += "00:00:00.000 *                                                   | 0\n";
  for (const char* t : {"00:00:00.100", "00:00:00.200", "00:00:00.300", "00:00:00.400"})
    want += std::string(t) + " " + bar(52) + " 5\n";
  for (const char* t : {"00:00:00.500", "00:00:00.600", "00:00:00.700", "00:00:00.800", "00:00:00.900"})
    want += std::string(t) + " " + bar(-1) + " -\n";
  want += "             v___________________________________________________v\n";
  want += "             0                                                   5\n\n";
  want += "@a[two]:\n";
  want += "             3                                                   5\n";
  want += "hh:mm:ss.ms  |___________________________________________________|\n";
  for (const char* t : {"00:00:00.500", "00:00:00.600", "00:00:00.700", "00:00:00.800", "00:00:00.900"})
    want += std::string(t) + " " + bar(26) + " 4\n";
  want += "             v___________________________________________________v\n";
  want += "             3                                                   5\n\n";
  EXPECT_EQ(map_text(m), want);
  // JSON leaves out the intervals without a value.
  EXPECT_EQ(json_map(m),
            "{\"type\": \"tseries\", \"data\": {\"@a\": {\"one\": ["
            "{\"interval_start\":\"1970-01-01 00:00:00.000000000\",\"value\":0},"
            "{\"interval_start\":\"1970-01-01 00:00:00.100000000\",\"value\":5},"
            "{\"interval_start\":\"1970-01-01 00:00:00.200000000\",\"value\":5},"
            "{\"interval_start\":\"1970-01-01 00:00:00.300000000\",\"value\":5},"
            "{\"interval_start\":\"1970-01-01 00:00:00.400000000\",\"value\":5}], \"two\": ["
            "{\"interval_start\":\"1970-01-01 00:00:00.500000000\",\"value\":4},"
            "{\"interval_start\":\"1970-01-01 00:00:00.600000000\",\"value\":4},"
            "{\"interval_start\":\"1970-01-01 00:00:00.700000000\",\"value\":4},"
            "{\"interval_start\":\"1970-01-01 00:00:00.800000000\",\"value\":4},"
            "{\"interval_start\":\"1970-01-01 00:00:00.900000000\",\"value\":4}]}}}\n");
}

TEST_F(TSeries, ZeroedMapHasNoData) {
  // zero(@a): every slot's epoch is 0.
  const auto m = with(scalar("@a", AggKind::TSeries, series({{0, 0}})), 100 * kMs, 5);
  EXPECT_EQ(map_text(m), "@a:\n<no data>\n");
  EXPECT_EQ(json_map(m), "{\"type\": \"tseries\", \"data\": {\"@a\": []}}\n");
  // A cleared map has no entry, and prints nothing.
  MapSnapshot cleared = m;
  cleared.entries.clear();
  EXPECT_EQ(map_text(cleared), "");
  EXPECT_EQ(json_map(cleared), "");
}

TEST_F(TSeries, TimeColumnFollowsTheInterval) {
  // Seconds: no fraction; the column is "hh:mm:ss" and a space.
  const uint64_t day = 86400;
  auto s = with(scalar("@s", AggKind::TSeries, series({{day + 3661, 1}, {day + 3662, 3}})), 1'000'000'000, 2);
  // The scale: the smallest value left in 21 columns, the largest right in 32.
  const std::string scale = std::string(9, ' ') + "1" + std::string(20 + 31, ' ') + "3\n";
  std::string want = "@s:\n" + scale;
  want += "hh:mm:ss |___________________________________________________|\n";
  want += "01:01:01 " + bar(0) + " 1\n";
  want += "01:01:02 " + bar(52) + " 3\n";
  want += "         v___________________________________________________v\n";
  want += scale + "\n";
  EXPECT_EQ(map_text(s), want);
  // Microseconds: six digits, the column named with the micro sign (two
  // bytes, so its name is padded as 12 wide).
  auto us = with(scalar("@u", AggKind::TSeries, series({{10, 2}, {11, 4}}), false), 250'000, 2);
  const std::string text = map_text(us);
  EXPECT_NE(text.find("hh:mm:ss.\u03bcs    |___"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:00.002500 *"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:00.002750 |"), std::string::npos) << text;
  // One interval: no step between rows, so nanoseconds.
  auto one = with(scalar("@o", AggKind::TSeries, series({{7, 2}})), 100 * kMs, 4);
  EXPECT_NE(map_text(one).find("hh:mm:ss.ns        |___"), std::string::npos);
  EXPECT_NE(map_text(one).find("00:00:00.700000000 |                         * "), std::string::npos);
}

TEST_F(TSeries, OldIntervalsLeaveTheWindow) {
  // Three intervals kept; the newest is epoch 10, so 8-10 show.
  auto m = with(scalar("@", AggKind::TSeries, series({{3, 1}, {8, 2}, {10, 4}})), 100 * kMs, 3);
  const std::string text = map_text(m);
  EXPECT_EQ(text.find("00:00:00.300"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:00.800 *"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:00.900 " + bar(-1) + " -"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:01.000 " + bar(52) + " 4"), std::string::npos) << text;
}

TEST_F(TSeries, KeyOlderThanTheWindowShowsOneEmptyRow) {
  // "old" was last written at epoch 2; the window is 8-10 ("new"): one row,
  // the window's last, without a value, and no scale ("null").
  auto m = with(keyed("@k", AggKind::TSeries, {{S("new"), series({{10, 1}})}, {S("old"), series({{2, 5}})}}),
                100 * kMs, 3);
  const std::string text = map_text(m);
  const std::string scale = std::string(19, ' ') + "null" + std::string(17 + 28, ' ') + "null\n";
  EXPECT_NE(text.find("@k[old]:\n" + scale + "hh:mm:ss.ns        |___"), std::string::npos) << text;
  EXPECT_NE(text.find("00:00:01.000000000 " + bar(-1) + " -\n"), std::string::npos) << text;
  EXPECT_NE(json_map(m).find("\"old\": []"), std::string::npos) << json_map(m);
}

// Kernel slots {value, meta, epoch}, per CPU.
std::vector<uint8_t> slots(const std::vector<std::vector<std::array<int64_t, 3>>>& cpus) {
  std::vector<uint8_t> out;
  for (const auto& cpu : cpus)
    for (const auto& s : cpu) {
      const size_t at = out.size();
      out.resize(at + 24);
      std::memcpy(out.data() + at, s.data(), 24);
    }
  return out;
}

TEST_F(TSeries, ReduceCombinesCpusOfOneEpoch) {
  const TSeriesParams last{.interval_ns = 1, .intervals = 2, .agg = TSeriesAgg::Last};
  // Interval 0: CPU 1 wrote epoch 4 later (meta 20) than CPU 0; interval 1:
  // CPU 0's epoch 3 is older than CPU 1's 5, which wins.
  auto v = slots({{{7, 10, 4}, {1, 1, 3}}, {{8, 20, 4}, {2, 2, 5}}});
  EXPECT_EQ(tseries_of(last, true, v.data(), 2, 48), (std::map<uint64_t, int64_t>{{4, 8}, {5, 2}}));

  auto sum = slots({{{7, 0, 4}}, {{-3, 0, 4}}});
  EXPECT_EQ(tseries_of({.interval_ns = 1, .intervals = 1, .agg = TSeriesAgg::Sum}, true, sum.data(), 2, 24),
            (std::map<uint64_t, int64_t>{{4, 4}}));
  // avg: the totals over the counts, truncated.
  auto avg = slots({{{7, 2, 4}}, {{4, 1, 4}}});
  EXPECT_EQ(tseries_of({.interval_ns = 1, .intervals = 1, .agg = TSeriesAgg::Avg}, true, avg.data(), 2, 24),
            (std::map<uint64_t, int64_t>{{4, 3}}));
  auto mins = slots({{{-7, 1, 4}}, {{4, 1, 4}}});
  EXPECT_EQ(tseries_of({.interval_ns = 1, .intervals = 1, .agg = TSeriesAgg::Min}, true, mins.data(), 2, 24),
            (std::map<uint64_t, int64_t>{{4, -7}}));
  // Unsigned: -7 is the largest.
  EXPECT_EQ(tseries_of({.interval_ns = 1, .intervals = 1, .agg = TSeriesAgg::Min}, false, mins.data(), 2, 24),
            (std::map<uint64_t, int64_t>{{4, 4}}));
  // A slot no CPU wrote is epoch 0 with 0.
  auto none = slots({{{0, 0, 0}}, {{0, 0, 0}}});
  EXPECT_EQ(tseries_of(last, true, none.data(), 1, 48), (std::map<uint64_t, int64_t>{{0, 0}}));
}

}  // namespace
}  // namespace bpfscope::output
