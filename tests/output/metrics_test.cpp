// Maps as Prometheus metrics (src/output/metrics.cpp, docs/metrics.md).
// Every page a test makes is also given to Prometheus's own parser,
// promtool: `promtool check metrics` for the text format (a parse error or
// a lint warning fails), and for OpenMetrics `promtool tsdb
// create-blocks-from openmetrics`, which reads the file with Prometheus's
// OpenMetrics parser (it wants a timestamp on every sample, so the check
// adds one). promtool comes with Debian's prometheus package, which
// scripts/test.sh installs; without it these tests fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "external_parsers.h"
#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output::metrics_test {
namespace {

using namespace test;  // snapshot_builders.h, external_parsers.h

constexpr MetricsFormat kText = MetricsFormat::Prometheus;
constexpr MetricsFormat kOpen = MetricsFormat::OpenMetrics;

// ---- promtool ----

// Every sample line's series (its name and labels) once.
void expect_unique_series(const std::string& page) {
  std::set<std::string> seen;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string series = line.substr(0, line.rfind(' '));
    EXPECT_TRUE(seen.insert(series).second) << "series twice: " << series;
  }
}

// promtool accepts `text` (one family, a few, or a page) in `format`.
void expect_promtool_accepts(const std::string& text, MetricsFormat format) {
  expect_unique_series(text);
  std::string where;
  if (run_shell("command -v promtool", where) != 0) {
    ADD_FAILURE() << "promtool is missing: these tests check every page with Prometheus's parser "
                     "(apt-get install prometheus; scripts/test.sh installs it)";
    return;
  }
  ScratchDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::string page = text;
  std::string cmd;
  if (format == kText) {
    cmd = "promtool check metrics < " + dir.path + "/page";
  } else {
    // A family alone gets the page's end; every sample a timestamp.
    if (!page.ends_with("# EOF\n")) page += "# EOF\n";
    std::string stamped;
    std::istringstream in(page);
    for (std::string line; std::getline(in, line);) stamped += line + (line[0] == '#' ? "\n" : " 1700000000\n");
    page = stamped;
    cmd = "promtool tsdb create-blocks-from openmetrics " + dir.path + "/page " + dir.path + "/blocks";
  }
  std::ofstream(dir.path + "/page") << page;
  std::string output;
  const int status = run_shell(cmd, output);
  EXPECT_EQ(status, 0) << cmd << " says:\n" << output << "\nof:\n" << page;
}

// The family in both formats, each checked by promtool.
std::string text_of(const MapSnapshot& m, uint64_t max_series = kMetricsMaxSeries) {
  const std::string text = map_metrics(m, kText, max_series).text;
  expect_promtool_accepts(text, kText);
  return text;
}
std::string open_of(const MapSnapshot& m, uint64_t max_series = kMetricsMaxSeries) {
  const std::string text = map_metrics(m, kOpen, max_series).text;
  expect_promtool_accepts(text, kOpen);
  return text;
}

Value stack_of(Value::StackOf of, std::vector<std::string> frames) {
  std::string text;
  for (const auto& f : frames) text += f + "\n";
  return Value::of_stack(of, std::move(text), std::move(frames));
}
Value R(std::vector<std::string> names, std::vector<Value> v) {
  return Value::of_record(std::move(names), std::move(v));
}

MapSnapshot with_lhist(MapSnapshot m, int64_t min, int64_t max, int64_t step) {
  m.hist = HistParams{.min = min, .max = max, .step = step};
  return m;
}
MapSnapshot with_bits(MapSnapshot m, int bits) {
  m.hist.bits = bits;
  return m;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ---- one value per key ----

TEST(Metrics, CountIsACounter) {
  const auto m = scalar("@", AggKind::Count, val(I(5)));
  EXPECT_EQ(text_of(m),
            "# HELP bpfscope_map_total bpfscope map @ (count())\n"
            "# TYPE bpfscope_map_total counter\n"
            "bpfscope_map_total 5\n");
  // OpenMetrics names the family without _total, TYPE first.
  EXPECT_EQ(open_of(m),
            "# TYPE bpfscope_map counter\n"
            "# HELP bpfscope_map bpfscope map @ (count())\n"
            "bpfscope_map_total 5\n");
}

// A tseries() is a gauge of its newest interval's value; a key with no
// interval written yet (zeroed) has no series.
TEST(Metrics, TimeSeriesIsTheNewestInterval) {
  Aggregate a, zeroed;
  a.series = {{10, 4}, {12, -2}, {11, 9}};
  zeroed.series = {{0, 0}};
  auto m = keyed("@q", AggKind::TSeries, {{S("a"), a}, {S("z"), zeroed}});
  m.tseries = TSeriesParams{.interval_ns = 1'000'000'000, .intervals = 5};
  EXPECT_EQ(text_of(m),
            "# HELP bpfscope_q bpfscope map @q (tseries())\n"
            "# TYPE bpfscope_q gauge\n"
            "bpfscope_q{key=\"a\"} -2\n");
}

// A plain key is the label `key`; series come in key order; label values
// escape backslash, double quote and newline.
TEST(Metrics, PlainKeySortedAndEscaped) {
  const auto m = keyed("@syscalls", AggKind::Count,
                       {{S("sshd"), val(I(2))}, {S("bash"), val(I(10))}, {S("a\"b\\c\nd"), val(I(1))}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_syscalls_total bpfscope map @syscalls (count())
# TYPE bpfscope_syscalls_total counter
bpfscope_syscalls_total{key="a\"b\\c\nd"} 1
bpfscope_syscalls_total{key="bash"} 10
bpfscope_syscalls_total{key="sshd"} 2
)txt");
  open_of(m);
}

// A record key's fields are the labels, in its order; integers sort as numbers.
TEST(Metrics, RecordKeyFieldsAreLabels) {
  const auto m = keyed("@bytes", AggKind::Sum,
                       {{R({"comm", "port"}, {S("wget"), I(80)}), val(I(-5))},
                        {R({"comm", "port"}, {S("curl"), I(443)}), val(I(9000))},
                        {R({"comm", "port"}, {S("curl"), I(80)}), val(I(1500))}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_bytes_total bpfscope map @bytes (sum())
# TYPE bpfscope_bytes_total counter
bpfscope_bytes_total{comm="curl",port="80"} 1500
bpfscope_bytes_total{comm="curl",port="443"} 9000
bpfscope_bytes_total{comm="wget",port="80"} -5
)txt");
  open_of(m);
}

// A tuple key's fields are key0, key1...; a field that is itself a tuple
// is its text.
TEST(Metrics, TupleKeyFieldsAreNumbered) {
  const auto m = keyed("@t", AggKind::Count,
                       {{T({I(2), S("y"), T({I(3), I(4)})}), val(U(1))},
                        {T({I(-1), S("x"), T({I(5), I(6)})}), val(U(7))}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_t_total bpfscope map @t (count())
# TYPE bpfscope_t_total counter
bpfscope_t_total{key0="-1",key1="x",key2="(5, 6)"} 7
bpfscope_t_total{key0="2",key1="y",key2="(3, 4)"} 1
)txt");
  open_of(m);
}

// Other keys as print() shows them: an enum by its name, an address in
// hex, a bool as true/false.
TEST(Metrics, KeyTextAsPrintShowsIt) {
  Value state = I(1);
  state.is_enum = true;
  state.s = "TCP_ESTABLISHED";
  const auto m = keyed("@conns", AggKind::Count,
                       {{T({state, Value::of_pointer(0xffff8880), B(true)}), val(I(3))}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_conns_total bpfscope map @conns (count())
# TYPE bpfscope_conns_total counter
bpfscope_conns_total{key0="TCP_ESTABLISHED",key1="0xffff8880",key2="true"} 3
)txt");
}

TEST(Metrics, MapNames) {
  // A counter whose name ends in _total keeps one _total.
  EXPECT_EQ(text_of(scalar("@bytes_total", AggKind::Sum, val(I(1)))),
            "# HELP bpfscope_bytes_total bpfscope map @bytes_total (sum())\n"
            "# TYPE bpfscope_bytes_total counter\n"
            "bpfscope_bytes_total 1\n");
  EXPECT_EQ(open_of(scalar("@bytes_total", AggKind::Sum, val(I(1)))),
            "# TYPE bpfscope_bytes counter\n"
            "# HELP bpfscope_bytes bpfscope map @bytes_total (sum())\n"
            "bpfscope_bytes_total 1\n");
  // Characters a metric name may not hold, and the colons it reserves, become '_'.
  EXPECT_EQ(text_of(scalar("@rx.queue:len", AggKind::Max, val(I(1)))),
            "# HELP bpfscope_rx_queue_len bpfscope map @rx.queue:len (max())\n"
            "# TYPE bpfscope_rx_queue_len gauge\n"
            "bpfscope_rx_queue_len 1\n");
}

// min(), max() and avg() are gauges; avg() serves the truncated mean print() shows.
TEST(Metrics, MinMaxAvgAreGauges) {
  EXPECT_EQ(text_of(keyed("@lowest", AggKind::Min, {{S("b"), val(I(7))}, {S("a"), val(I(-3))}})),
            R"txt(# HELP bpfscope_lowest bpfscope map @lowest (min())
# TYPE bpfscope_lowest gauge
bpfscope_lowest{key="a"} -3
bpfscope_lowest{key="b"} 7
)txt");
  EXPECT_EQ(text_of(scalar("@highest", AggKind::Max, val(U(UINT64_MAX)), false)),
            "# HELP bpfscope_highest bpfscope map @highest (max())\n"
            "# TYPE bpfscope_highest gauge\n"
            "bpfscope_highest 18446744073709551615\n");
  EXPECT_EQ(text_of(keyed("@mean", AggKind::Avg, {{I(1), avg(3, 10)}, {I(2), avg(2, -7)}})),
            R"txt(# HELP bpfscope_mean bpfscope map @mean (avg())
# TYPE bpfscope_mean gauge
bpfscope_mean{key="1"} 3
bpfscope_mean{key="2"} -3
)txt");
  EXPECT_EQ(open_of(scalar("@mean", AggKind::Avg, avg(4, 10))),
            "# TYPE bpfscope_mean gauge\n"
            "# HELP bpfscope_mean bpfscope map @mean (avg())\n"
            "bpfscope_mean 2\n");
}

// An integer map is a gauge (a bool 1 or 0); a map of strings, stacks,
// tuples or addresses has no metric.
TEST(Metrics, PlainMapsOfNumbersOnly) {
  EXPECT_EQ(text_of(keyed("@pid", AggKind::Plain, {{S("sshd"), val(I(812))}, {S("cron"), val(B(true))}})),
            R"txt(# HELP bpfscope_pid bpfscope map @pid
# TYPE bpfscope_pid gauge
bpfscope_pid{key="cron"} 1
bpfscope_pid{key="sshd"} 812
)txt");
  EXPECT_EQ(map_metrics(keyed("@name", AggKind::Plain, {{I(1), val(S("sshd"))}}), kText).text, "");
  EXPECT_EQ(map_metrics(scalar("@where", AggKind::Plain, val(Value::of_pointer(0x1000))), kText).text, "");
  EXPECT_EQ(map_metrics(scalar("@pair", AggKind::Plain, val(T({I(1), I(2)}))), kText).text, "");
  EXPECT_EQ(map_metrics(keyed("@stack", AggKind::Plain,
                              {{I(1), val(stack_of(Value::StackOf::Kernel, {"f"}))}}), kOpen).text,
            "");
}

TEST(Metrics, EmptyMapsServeNothing) {
  MapSnapshot m = keyed("@n", AggKind::Count, {});
  EXPECT_EQ(map_metrics(m, kText).text, "");
  EXPECT_EQ(map_metrics(m, kOpen).folded, 0u);
  m.keyed = false;
  EXPECT_EQ(map_metrics(m, kOpen).text, "");
}

// stats() is a summary without quantiles: _sum (the total) and _count, the
// pair whose rates give a mean. Names a summary reserves are prefixed key_.
// stats(): a summary of _sum and _count (no quantiles), and its min and
// max as gauge families of their own beside it (a summary may hold no other
// samples). A key with no value (zero()) has no min or max sample.
TEST(Metrics, StatsIsASummary) {
  const auto m = keyed("@size", AggKind::Stats,
                       {{R({"quantile", "other", "_x"}, {S("write"), I(1), I(2)}), stats(2, -10, I(-8), I(-2))},
                        {R({"quantile", "other", "_x"}, {S("read"), I(1), I(2)}), stats(4, 100, I(1), I(70))},
                        {R({"quantile", "other", "_x"}, {S("sync"), I(1), I(2)}), stats(0, 0, {}, {})}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_size bpfscope map @size (stats())
# TYPE bpfscope_size summary
bpfscope_size_sum{key_quantile="read",key_other="1",key__x="2"} 100
bpfscope_size_count{key_quantile="read",key_other="1",key__x="2"} 4
bpfscope_size_sum{key_quantile="sync",key_other="1",key__x="2"} 0
bpfscope_size_count{key_quantile="sync",key_other="1",key__x="2"} 0
bpfscope_size_sum{key_quantile="write",key_other="1",key__x="2"} -10
bpfscope_size_count{key_quantile="write",key_other="1",key__x="2"} 2
# HELP bpfscope_size_min bpfscope map @size (stats()), the smallest value
# TYPE bpfscope_size_min gauge
bpfscope_size_min{key_quantile="read",key_other="1",key__x="2"} 1
bpfscope_size_min{key_quantile="write",key_other="1",key__x="2"} -8
# HELP bpfscope_size_max bpfscope map @size (stats()), the largest value
# TYPE bpfscope_size_max gauge
bpfscope_size_max{key_quantile="read",key_other="1",key__x="2"} 70
bpfscope_size_max{key_quantile="write",key_other="1",key__x="2"} -2
)txt");
  const std::string open = open_of(m);
  EXPECT_NE(open.find("# TYPE bpfscope_size_min gauge\n# HELP bpfscope_size_min bpfscope map @size (stats()), "
                      "the smallest value\n"),
            std::string::npos)
      << open;
  // Unsigned values stay unsigned.
  EXPECT_EQ(text_of(scalar("@size", AggKind::Stats, stats(1, -1, U(UINT64_MAX), U(UINT64_MAX)), false)),
            "# HELP bpfscope_size bpfscope map @size (stats())\n"
            "# TYPE bpfscope_size summary\n"
            "bpfscope_size_sum 18446744073709551615\n"
            "bpfscope_size_count 1\n"
            "# HELP bpfscope_size_min bpfscope map @size (stats()), the smallest value\n"
            "# TYPE bpfscope_size_min gauge\n"
            "bpfscope_size_min 18446744073709551615\n"
            "# HELP bpfscope_size_max bpfscope map @size (stats()), the largest value\n"
            "# TYPE bpfscope_size_max gauge\n"
            "bpfscope_size_max 18446744073709551615\n");
  // No key has a value: no gauge families.
  EXPECT_EQ(text_of(scalar("@size", AggKind::Stats, stats(0, 0, {}, {}))),
            "# HELP bpfscope_size bpfscope map @size (stats())\n"
            "# TYPE bpfscope_size summary\n"
            "bpfscope_size_sum 0\n"
            "bpfscope_size_count 0\n");
}

// ---- histograms ----

// hist(): every bucket with an int64 bound, le its largest integer
// (negatives -1, 0, 1, [2, 4) 3, [4, 8) 7...), cumulative; +Inf; _sum;
// _count. Written as Go writes a float, in exponent form from 1e+06 on.
// OpenMetrics leaves out le="-1": a histogram with a negative bucket may
// have no sum there.
TEST(Metrics, HistBuckets) {
  // Negatives 1 (-7), zeros 2, [2, 4) 3 (2, 3, 3), [4, 8) 1 (5), [1M, 2M)
  // 1 (1500000); the runtime's vector may stop short of the last bucket.
  std::vector<uint64_t> b(23, 0);
  b[0] = 1, b[1] = 2, b[3] = 3, b[4] = 1, b[22] = 1;
  const auto m = scalar("@usecs", AggKind::Hist, buckets(b, 1500006));
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_usecs bpfscope map @usecs (hist())
# TYPE bpfscope_usecs histogram
bpfscope_usecs_bucket{le="-1"} 1
bpfscope_usecs_bucket{le="0"} 3
bpfscope_usecs_bucket{le="1"} 3
bpfscope_usecs_bucket{le="3"} 6
bpfscope_usecs_bucket{le="7"} 7
bpfscope_usecs_bucket{le="15"} 7
bpfscope_usecs_bucket{le="31"} 7
bpfscope_usecs_bucket{le="63"} 7
bpfscope_usecs_bucket{le="127"} 7
bpfscope_usecs_bucket{le="255"} 7
bpfscope_usecs_bucket{le="511"} 7
bpfscope_usecs_bucket{le="1023"} 7
bpfscope_usecs_bucket{le="2047"} 7
bpfscope_usecs_bucket{le="4095"} 7
bpfscope_usecs_bucket{le="8191"} 7
bpfscope_usecs_bucket{le="16383"} 7
bpfscope_usecs_bucket{le="32767"} 7
bpfscope_usecs_bucket{le="65535"} 7
bpfscope_usecs_bucket{le="131071"} 7
bpfscope_usecs_bucket{le="262143"} 7
bpfscope_usecs_bucket{le="524287"} 7
bpfscope_usecs_bucket{le="1.048575e+06"} 7
bpfscope_usecs_bucket{le="2.097151e+06"} 8
bpfscope_usecs_bucket{le="4.194303e+06"} 8
bpfscope_usecs_bucket{le="8.388607e+06"} 8
bpfscope_usecs_bucket{le="1.6777215e+07"} 8
bpfscope_usecs_bucket{le="3.3554431e+07"} 8
bpfscope_usecs_bucket{le="6.7108863e+07"} 8
bpfscope_usecs_bucket{le="1.34217727e+08"} 8
bpfscope_usecs_bucket{le="2.68435455e+08"} 8
bpfscope_usecs_bucket{le="5.36870911e+08"} 8
bpfscope_usecs_bucket{le="1.073741823e+09"} 8
bpfscope_usecs_bucket{le="2.147483647e+09"} 8
bpfscope_usecs_bucket{le="4.294967295e+09"} 8
bpfscope_usecs_bucket{le="8.589934591e+09"} 8
bpfscope_usecs_bucket{le="1.7179869183e+10"} 8
bpfscope_usecs_bucket{le="3.4359738367e+10"} 8
bpfscope_usecs_bucket{le="6.8719476735e+10"} 8
bpfscope_usecs_bucket{le="1.37438953471e+11"} 8
bpfscope_usecs_bucket{le="2.74877906943e+11"} 8
bpfscope_usecs_bucket{le="5.49755813887e+11"} 8
bpfscope_usecs_bucket{le="1.099511627775e+12"} 8
bpfscope_usecs_bucket{le="2.199023255551e+12"} 8
bpfscope_usecs_bucket{le="4.398046511103e+12"} 8
bpfscope_usecs_bucket{le="8.796093022207e+12"} 8
bpfscope_usecs_bucket{le="1.7592186044415e+13"} 8
bpfscope_usecs_bucket{le="3.5184372088831e+13"} 8
bpfscope_usecs_bucket{le="7.0368744177663e+13"} 8
bpfscope_usecs_bucket{le="1.40737488355327e+14"} 8
bpfscope_usecs_bucket{le="2.81474976710655e+14"} 8
bpfscope_usecs_bucket{le="5.62949953421311e+14"} 8
bpfscope_usecs_bucket{le="1.125899906842623e+15"} 8
bpfscope_usecs_bucket{le="2.251799813685247e+15"} 8
bpfscope_usecs_bucket{le="4.503599627370495e+15"} 8
bpfscope_usecs_bucket{le="9.007199254740991e+15"} 8
bpfscope_usecs_bucket{le="1.8014398509481984e+16"} 8
bpfscope_usecs_bucket{le="3.602879701896397e+16"} 8
bpfscope_usecs_bucket{le="7.205759403792794e+16"} 8
bpfscope_usecs_bucket{le="1.4411518807585587e+17"} 8
bpfscope_usecs_bucket{le="2.8823037615171174e+17"} 8
bpfscope_usecs_bucket{le="5.764607523034235e+17"} 8
bpfscope_usecs_bucket{le="1.152921504606847e+18"} 8
bpfscope_usecs_bucket{le="2.305843009213694e+18"} 8
bpfscope_usecs_bucket{le="4.611686018427388e+18"} 8
bpfscope_usecs_bucket{le="9.223372036854776e+18"} 8
bpfscope_usecs_bucket{le="+Inf"} 8
bpfscope_usecs_sum 1500006
bpfscope_usecs_count 8
)txt");
  // OpenMetrics: canonical numbers (7.0), TYPE first, no le="-1.0" (its
  // value is in le="0.0" and above).
  const std::string open = open_of(m);
  EXPECT_TRUE(open.starts_with("# TYPE bpfscope_usecs histogram\n# HELP bpfscope_usecs bpfscope map @usecs (hist())\n"
                               "bpfscope_usecs_bucket{le=\"0.0\"} 3\n"
                               "bpfscope_usecs_bucket{le=\"1.0\"} 3\nbpfscope_usecs_bucket{le=\"3.0\"} 6\n"
                               "bpfscope_usecs_bucket{le=\"7.0\"} 7\n"))
      << open;
  EXPECT_NE(open.find("bpfscope_usecs_bucket{le=\"524287.0\"} 7\nbpfscope_usecs_bucket{le=\"1.048575e+06\"} 7\n"),
            std::string::npos);
  EXPECT_TRUE(open.ends_with("bpfscope_usecs_bucket{le=\"9.223372036854776e+18\"} 8\n"
                             "bpfscope_usecs_bucket{le=\"+Inf\"} 8\n"
                             "bpfscope_usecs_sum 1500006\nbpfscope_usecs_count 8\n"));
  EXPECT_EQ(count_of(open, "\n") + 1, count_of(text_of(m), "\n"));
  // Unsigned values: an unsigned sum.
  const std::string u = text_of(scalar("@usecs", AggKind::Hist, buckets({0, 0, 1}, -1), false));
  EXPECT_NE(u.find("\nbpfscope_usecs_sum 18446744073709551615\nbpfscope_usecs_count 1\n"), std::string::npos) << u;
}

// hist(n, 2): four buckets per power of two once past the single values
// 0..7; every key has the same buckets, empty or not.
TEST(Metrics, HistWithBits) {
  std::vector<uint64_t> sda(253, 0), sdb(253, 0);
  sda[9] = 2;   // 8, 9
  sdb[13] = 1;  // 16..19
  const auto m =
      with_bits(keyed("@usecs", AggKind::Hist, {{S("sdb"), buckets(sdb, 16)}, {S("sda"), buckets(sda, 17)}}), 2);
  const std::string text = text_of(m);
  EXPECT_TRUE(text.starts_with(R"txt(# HELP bpfscope_usecs bpfscope map @usecs (hist(n, 2))
# TYPE bpfscope_usecs histogram
bpfscope_usecs_bucket{key="sda",le="-1"} 0
bpfscope_usecs_bucket{key="sda",le="0"} 0
bpfscope_usecs_bucket{key="sda",le="1"} 0
bpfscope_usecs_bucket{key="sda",le="2"} 0
bpfscope_usecs_bucket{key="sda",le="3"} 0
bpfscope_usecs_bucket{key="sda",le="4"} 0
bpfscope_usecs_bucket{key="sda",le="5"} 0
bpfscope_usecs_bucket{key="sda",le="6"} 0
bpfscope_usecs_bucket{key="sda",le="7"} 0
bpfscope_usecs_bucket{key="sda",le="9"} 2
bpfscope_usecs_bucket{key="sda",le="11"} 2
bpfscope_usecs_bucket{key="sda",le="13"} 2
bpfscope_usecs_bucket{key="sda",le="15"} 2
bpfscope_usecs_bucket{key="sda",le="19"} 2
bpfscope_usecs_bucket{key="sda",le="23"} 2
)txt")) << text;
  // 249 buckets below 2^63, and +Inf, per key.
  EXPECT_EQ(count_of(text, "_bucket{key=\"sda\""), 250u);
  EXPECT_EQ(count_of(text, "_bucket{key=\"sdb\""), 250u);
  EXPECT_NE(text.find("bpfscope_usecs_bucket{key=\"sda\",le=\"9.223372036854776e+18\"} 2\n"
                      "bpfscope_usecs_bucket{key=\"sda\",le=\"+Inf\"} 2\n"
                      "bpfscope_usecs_sum{key=\"sda\"} 17\n"
                      "bpfscope_usecs_count{key=\"sda\"} 2\n"
                      "bpfscope_usecs_bucket{key=\"sdb\",le=\"-1\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("{key=\"sdb\",le=\"15\"} 0\nbpfscope_usecs_bucket{key=\"sdb\",le=\"19\"} 1\n"),
            std::string::npos);
  open_of(m);
}

// lhist(): below min (le min-1), one bucket per step, and the bucket from
// max on, which only +Inf counts. A key field named le is prefixed key_.
TEST(Metrics, LhistBuckets) {
  const auto m = with_lhist(
      keyed("@depth", AggKind::LHist, {{R({"le", "dev"}, {I(1), S("sda")}), buckets({0, 2, 0, 1, 4}, 195)}}), 0, 30,
      10);
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_depth bpfscope map @depth (lhist(n, 0, 30, 10))
# TYPE bpfscope_depth histogram
bpfscope_depth_bucket{key_le="1",dev="sda",le="-1"} 0
bpfscope_depth_bucket{key_le="1",dev="sda",le="9"} 2
bpfscope_depth_bucket{key_le="1",dev="sda",le="19"} 2
bpfscope_depth_bucket{key_le="1",dev="sda",le="29"} 3
bpfscope_depth_bucket{key_le="1",dev="sda",le="+Inf"} 7
bpfscope_depth_sum{key_le="1",dev="sda"} 195
bpfscope_depth_count{key_le="1",dev="sda"} 7
)txt");
  EXPECT_EQ(open_of(m), R"txt(# TYPE bpfscope_depth histogram
# HELP bpfscope_depth bpfscope map @depth (lhist(n, 0, 30, 10))
bpfscope_depth_bucket{key_le="1",dev="sda",le="9.0"} 2
bpfscope_depth_bucket{key_le="1",dev="sda",le="19.0"} 2
bpfscope_depth_bucket{key_le="1",dev="sda",le="29.0"} 3
bpfscope_depth_bucket{key_le="1",dev="sda",le="+Inf"} 7
bpfscope_depth_sum{key_le="1",dev="sda"} 195
bpfscope_depth_count{key_le="1",dev="sda"} 7
)txt");
}

// A range that is no multiple of step: the last bucket starts below max
// (lhist(n, 0, 10, 3): [9, ...)). Large bounds in exponent form.
TEST(Metrics, LhistBounds) {
  EXPECT_EQ(text_of(with_lhist(scalar("@runq", AggKind::LHist, buckets({1, 0, 0, 2, 5})), 0, 10, 3)),
            R"txt(# HELP bpfscope_runq bpfscope map @runq (lhist(n, 0, 10, 3))
# TYPE bpfscope_runq histogram
bpfscope_runq_bucket{le="-1"} 1
bpfscope_runq_bucket{le="2"} 1
bpfscope_runq_bucket{le="5"} 1
bpfscope_runq_bucket{le="8"} 3
bpfscope_runq_bucket{le="+Inf"} 8
bpfscope_runq_sum 0
bpfscope_runq_count 8
)txt");
  const auto big = with_lhist(scalar("@bytes", AggKind::LHist, buckets({0, 1, 1, 1, 1})), -1000000, 2000000, 1000000);
  EXPECT_EQ(text_of(big), R"txt(# HELP bpfscope_bytes bpfscope map @bytes (lhist(n, -1000000, 2000000, 1000000))
# TYPE bpfscope_bytes histogram
bpfscope_bytes_bucket{le="-1.000001e+06"} 0
bpfscope_bytes_bucket{le="-1"} 1
bpfscope_bytes_bucket{le="999999"} 2
bpfscope_bytes_bucket{le="1.999999e+06"} 3
bpfscope_bytes_bucket{le="+Inf"} 4
bpfscope_bytes_sum 0
bpfscope_bytes_count 4
)txt");
  // OpenMetrics: no negative buckets.
  EXPECT_TRUE(open_of(big).starts_with(
      "# TYPE bpfscope_bytes histogram\n"
      "# HELP bpfscope_bytes bpfscope map @bytes (lhist(n, -1000000, 2000000, 1000000))\n"
      "bpfscope_bytes_bucket{le=\"999999.0\"} 2\n"));
}

// ---- stacks and strange bytes ----

// A stack is its frames root first, joined by ';' as folded stacks are
// (without the tracer's frames); stacks that fold alike are one series.
TEST(Metrics, StackKeysFolded) {
  const auto k = [](std::vector<std::string> f) { return stack_of(Value::StackOf::Kernel, std::move(f)); };
  const auto m = keyed("@reads", AggKind::Count,
                       {{T({k({"bpf_prog_0123456789abcdef", "vfs_read", "ksys_read"}), S("cat")}), val(I(2))},
                        {T({k({"a;b\nc", "root"}), S("cat")}), val(I(1))},
                        {T({k({"vfs_read", "ksys_read"}), S("cat")}), val(I(3))}});
  EXPECT_EQ(text_of(m), R"txt(# HELP bpfscope_reads_total bpfscope map @reads (count())
# TYPE bpfscope_reads_total counter
bpfscope_reads_total{key0="root;a:b:c",key1="cat"} 1
bpfscope_reads_total{key0="ksys_read;vfs_read",key1="cat"} 5
)txt");
  open_of(m);
  EXPECT_EQ(text_of(keyed("@u", AggKind::Count, {{stack_of(Value::StackOf::User, {"leaf", "main"}), val(I(1))}})),
            "# HELP bpfscope_u_total bpfscope map @u (count())\n"
            "# TYPE bpfscope_u_total counter\n"
            "bpfscope_u_total{key=\"main;leaf\"} 1\n");
}

// Prometheus refuses a whole page over one label value that is no UTF-8:
// each such byte is the text \xNN; valid sequences stay.
TEST(Metrics, BytesThatAreNoUtf8) {
  const auto m = keyed("@comm", AggKind::Count,
                       {{S("caf\xc3\xa9"), val(I(1))},
                        {S("\xff\xfeok"), val(I(2))},
                        {S("cut\xc3"), val(I(3))},
                        {S("overlong\xc0\x80"), val(I(4))},
                        {S("surrogate\xed\xa0\x80"), val(I(5))},
                        {S("\xf0\x9f\x90\xa7 tab\there"), val(I(6))}});
  EXPECT_EQ(text_of(m), "# HELP bpfscope_comm_total bpfscope map @comm (count())\n"
                        "# TYPE bpfscope_comm_total counter\n"
                        "bpfscope_comm_total{key=\"caf\xc3\xa9\"} 1\n"
                        "bpfscope_comm_total{key=\"cut\\\\xc3\"} 3\n"
                        "bpfscope_comm_total{key=\"overlong\\\\xc0\\\\x80\"} 4\n"
                        "bpfscope_comm_total{key=\"surrogate\\\\xed\\\\xa0\\\\x80\"} 5\n"
                        "bpfscope_comm_total{key=\"\xf0\x9f\x90\xa7 tab\there\"} 6\n"
                        "bpfscope_comm_total{key=\"\\\\xff\\\\xfeok\"} 2\n");
  open_of(m);
}

// ---- the series guard ----

// Past max_series keys, those print(@m, max_series) leaves out (the
// smallest; ties in key order, whatever the snapshot's order) fold into
// other="true".
TEST(Metrics, GuardFoldsTheSmallestKeys) {
  std::vector<std::pair<Value, Aggregate>> e = {{S("a"), val(I(5))}, {S("b"), val(I(1))}, {S("c"), val(I(9))},
                                                {S("d"), val(I(1))}, {S("e"), val(I(3))}};
  const auto m = keyed("@n", AggKind::Count, e);
  EXPECT_EQ(map_metrics(m, kText, 3).folded, 2u);
  EXPECT_EQ(text_of(m, 3), R"txt(# HELP bpfscope_n_total bpfscope map @n (count())
# TYPE bpfscope_n_total counter
bpfscope_n_total{key="a"} 5
bpfscope_n_total{key="c"} 9
bpfscope_n_total{key="e"} 3
bpfscope_n_total{other="true"} 2
)txt");
  // Of two equal values, b goes first, in any order of the snapshot.
  const std::string four = text_of(m, 4);
  EXPECT_NE(four.find("bpfscope_n_total{key=\"d\"} 1\n"), std::string::npos);
  EXPECT_NE(four.find("bpfscope_n_total{other=\"true\"} 1\n"), std::string::npos);
  std::reverse(e.begin(), e.end());
  EXPECT_EQ(text_of(keyed("@n", AggKind::Count, e), 4), four);
  // 0: no limit; a scalar map never folds.
  EXPECT_EQ(map_metrics(m, kText, 0).folded, 0u);
  EXPECT_EQ(map_metrics(scalar("@n", AggKind::Count, val(I(1))), kText, 1).folded, 0u);
}

// The folded series of a gauge: the smallest min(), the largest max(), the
// mean of the folded avg() keys together; an integer map's folded keys are
// not served (no value stands for them all), only counted.
TEST(Metrics, GuardFoldsGauges) {
  const std::vector<std::pair<Value, Aggregate>> e = {
      {S("a"), val(I(4))}, {S("b"), val(I(2))}, {S("c"), val(I(8))}, {S("d"), val(I(6))}};
  EXPECT_EQ(text_of(keyed("@lo", AggKind::Min, e), 2), R"txt(# HELP bpfscope_lo bpfscope map @lo (min())
# TYPE bpfscope_lo gauge
bpfscope_lo{key="c"} 8
bpfscope_lo{key="d"} 6
bpfscope_lo{other="true"} 2
)txt");
  EXPECT_TRUE(text_of(keyed("@hi", AggKind::Max, e), 2).ends_with("bpfscope_hi{other=\"true\"} 4\n"));
  const auto plain = map_metrics(keyed("@pid", AggKind::Plain, e), kText, 2);
  EXPECT_EQ(plain.folded, 2u);
  EXPECT_EQ(plain.text, R"txt(# HELP bpfscope_pid bpfscope map @pid
# TYPE bpfscope_pid gauge
bpfscope_pid{key="c"} 8
bpfscope_pid{key="d"} 6
)txt");
  EXPECT_EQ(text_of(keyed("@mean", AggKind::Avg, {{S("a"), avg(1, 4)}, {S("b"), avg(3, 3)}, {S("c"), avg(1, 100)}}), 1),
            R"txt(# HELP bpfscope_mean bpfscope map @mean (avg())
# TYPE bpfscope_mean gauge
bpfscope_mean{key="c"} 100
bpfscope_mean{other="true"} 1
)txt");
}

// Summaries and histograms fold by adding up.
TEST(Metrics, GuardFoldsSummariesAndHistograms) {
  const auto st = keyed("@size", AggKind::Stats,
                        {{S("a"), stats(1, 4, I(4), I(4))},
                         {S("b"), stats(3, 3, I(-1), I(3))},
                         {S("c"), stats(1, 100, I(100), I(100))}});
  EXPECT_EQ(text_of(st, 1),
            R"txt(# HELP bpfscope_size bpfscope map @size (stats())
# TYPE bpfscope_size summary
bpfscope_size_sum{key="c"} 100
bpfscope_size_count{key="c"} 1
bpfscope_size_sum{other="true"} 7
bpfscope_size_count{other="true"} 4
# HELP bpfscope_size_min bpfscope map @size (stats()), the smallest value
# TYPE bpfscope_size_min gauge
bpfscope_size_min{key="c"} 100
bpfscope_size_min{other="true"} -1
# HELP bpfscope_size_max bpfscope map @size (stats()), the largest value
# TYPE bpfscope_size_max gauge
bpfscope_size_max{key="c"} 100
bpfscope_size_max{other="true"} 4
)txt");
  open_of(st, 1);
  const auto m = with_lhist(
      keyed("@depth", AggKind::LHist,
            {{S("a"), buckets({0, 1, 0}, 0)}, {S("b"), buckets({0, 3, 2}, 5)}, {S("c"), buckets({1, 0, 1}, 2)}}),
      0, 1, 1);
  EXPECT_EQ(text_of(m, 1), R"txt(# HELP bpfscope_depth bpfscope map @depth (lhist(n, 0, 1, 1))
# TYPE bpfscope_depth histogram
bpfscope_depth_bucket{key="b",le="-1"} 0
bpfscope_depth_bucket{key="b",le="0"} 3
bpfscope_depth_bucket{key="b",le="+Inf"} 5
bpfscope_depth_sum{key="b"} 5
bpfscope_depth_count{key="b"} 5
bpfscope_depth_bucket{other="true",le="-1"} 1
bpfscope_depth_bucket{other="true",le="0"} 2
bpfscope_depth_bucket{other="true",le="+Inf"} 3
bpfscope_depth_sum{other="true"} 2
bpfscope_depth_count{other="true"} 3
)txt");
  open_of(m);
}

// ---- the run's families and the page ----

// `serve`: a lost-events series per tool, sorted by tool (sessions of one
// tool add up); with no session yet, one unlabelled 0.
TEST(Metrics, LostEventsPerTool) {
  const RunMetrics run{.version = "0.1.0",
                       .lost_events = {{"", 5, "tcplife"}, {"", 0, "biolatency"}, {"", 2, "tcplife"}}};
  const std::string text = run_metrics(run, kText);
  EXPECT_NE(text.find("bpfscope_lost_events_total{tool=\"biolatency\"} 0\n"
                      "bpfscope_lost_events_total{tool=\"tcplife\"} 7\n"),
            std::string::npos)
      << text;
  expect_promtool_accepts(text, kText);
  EXPECT_NE(run_metrics(RunMetrics{.version = "0.1.0"}, kText).find("\nbpfscope_lost_events_total 0\n"),
            std::string::npos);
}

TEST(Metrics, RunFamilies) {
  const RunMetrics run{.version = "0.1.0",
                       .lost_events = {{"", 3}},
                       .map_full = {{"@b", 0}, {"@a", 2}},
                       .probe_skipped = {{"tracepoint:sched:sched_switch", 5}},
                       .probes = {{"tracepoint:sched:sched_switch", "tracepoint"}, {"kprobe:vfs_read", "fentry"}},
                       .series_folded = {{"@a", 1}}};
  const std::string text = run_metrics(run, kText);
  EXPECT_EQ(text, R"txt(# HELP bpfscope_build_info The bpfscope build serving these metrics
# TYPE bpfscope_build_info gauge
bpfscope_build_info{version="0.1.0"} 1
# HELP bpfscope_lost_events_total Events lost because the ring buffer was full
# TYPE bpfscope_lost_events_total counter
bpfscope_lost_events_total 3
# HELP bpfscope_map_full_total Map updates that failed because the map was full
# TYPE bpfscope_map_full_total counter
bpfscope_map_full_total{map="@a"} 2
bpfscope_map_full_total{map="@b"} 0
# HELP bpfscope_probe_info An attached probe and how it is attached
# TYPE bpfscope_probe_info gauge
bpfscope_probe_info{probe="kprobe:vfs_read",mechanism="fentry"} 1
bpfscope_probe_info{probe="tracepoint:sched:sched_switch",mechanism="tracepoint"} 1
# HELP bpfscope_probe_skipped_total Probe firings the kernel did not run the probe's program for
# TYPE bpfscope_probe_skipped_total counter
bpfscope_probe_skipped_total{probe="tracepoint:sched:sched_switch"} 5
# HELP bpfscope_series_folded_total Map keys folded into the series labelled other="true", over every page served
# TYPE bpfscope_series_folded_total counter
bpfscope_series_folded_total{map="@a"} 1
)txt");
  expect_promtool_accepts(text, kText);
  // OpenMetrics: an info family, HELP text escaping '"'.
  const std::string open = run_metrics(run, kOpen);
  EXPECT_EQ(open, R"txt(# TYPE bpfscope_build info
# HELP bpfscope_build The bpfscope build serving these metrics
bpfscope_build_info{version="0.1.0"} 1
# TYPE bpfscope_lost_events counter
# HELP bpfscope_lost_events Events lost because the ring buffer was full
bpfscope_lost_events_total 3
# TYPE bpfscope_map_full counter
# HELP bpfscope_map_full Map updates that failed because the map was full
bpfscope_map_full_total{map="@a"} 2
bpfscope_map_full_total{map="@b"} 0
# TYPE bpfscope_probe info
# HELP bpfscope_probe An attached probe and how it is attached
bpfscope_probe_info{probe="kprobe:vfs_read",mechanism="fentry"} 1
bpfscope_probe_info{probe="tracepoint:sched:sched_switch",mechanism="tracepoint"} 1
# TYPE bpfscope_probe_skipped counter
# HELP bpfscope_probe_skipped Probe firings the kernel did not run the probe's program for
bpfscope_probe_skipped_total{probe="tracepoint:sched:sched_switch"} 5
# TYPE bpfscope_series_folded counter
# HELP bpfscope_series_folded Map keys folded into the series labelled other=\"true\", over every page served
bpfscope_series_folded_total{map="@a"} 1
)txt");
  expect_promtool_accepts(open, kOpen);
  // Families with no samples are left out; lost events and the build never are.
  EXPECT_EQ(run_metrics(RunMetrics{}, kText), R"txt(# HELP bpfscope_build_info The bpfscope build serving these metrics
# TYPE bpfscope_build_info gauge
bpfscope_build_info{version=""} 1
# HELP bpfscope_lost_events_total Events lost because the ring buffer was full
# TYPE bpfscope_lost_events_total counter
bpfscope_lost_events_total 0
)txt");
}

// A page: every family sorted by name, the maps whose names are taken left
// out, the folded keys counted on from the last page; OpenMetrics ends in # EOF.
TEST(Metrics, Page) {
  const std::vector<MapSnapshot> maps = {
      keyed("@n", AggKind::Count, {{S("x"), val(I(3))}, {S("y"), val(I(2))}, {S("z"), val(I(1))}}),
      scalar("@lost_events", AggKind::Count, val(I(1))),  // bpfscope_lost_events_total is the run's
      scalar("@", AggKind::Count, val(I(7))),
      scalar("@map", AggKind::Plain, val(I(1))),          // bpfscope_map is @'s
      keyed("@empty", AggKind::Count, {}),
  };
  const RunMetrics run{.version = "0.1.0", .series_folded = {{"@n", 4}, {"@gone", 1}}};
  // Two series: @n's x and other="true" (a map past the budget still serves
  // one key: @'s).
  const MetricsPage page = metrics_page(maps, run, kText, 2);
  EXPECT_EQ(page.text, R"txt(# HELP bpfscope_build_info The bpfscope build serving these metrics
# TYPE bpfscope_build_info gauge
bpfscope_build_info{version="0.1.0"} 1
# HELP bpfscope_lost_events_total Events lost because the ring buffer was full
# TYPE bpfscope_lost_events_total counter
bpfscope_lost_events_total 0
# HELP bpfscope_map_total bpfscope map @ (count())
# TYPE bpfscope_map_total counter
bpfscope_map_total 7
# HELP bpfscope_n_total bpfscope map @n (count())
# TYPE bpfscope_n_total counter
bpfscope_n_total{key="x"} 3
bpfscope_n_total{other="true"} 3
# HELP bpfscope_series_folded_total Map keys folded into the series labelled other="true", over every page served
# TYPE bpfscope_series_folded_total counter
bpfscope_series_folded_total{map="@"} 0
bpfscope_series_folded_total{map="@gone"} 1
bpfscope_series_folded_total{map="@n"} 6
)txt");
  expect_promtool_accepts(page.text, kText);
  EXPECT_EQ(page.clashes, (std::vector<std::string>{"@lost_events", "@map"}));
  EXPECT_EQ(page.series_folded,
            (std::vector<std::pair<std::string, uint64_t>>{{"@", 0}, {"@gone", 1}, {"@n", 6}}));

  const MetricsPage open = metrics_page(maps, run, kOpen, 2);
  EXPECT_TRUE(open.text.starts_with("# TYPE bpfscope_build info\n")) << open.text;
  EXPECT_TRUE(open.text.ends_with("bpfscope_series_folded_total{map=\"@n\"} 6\n# EOF\n")) << open.text;
  EXPECT_EQ(count_of(open.text, "# EOF"), 1u);
  expect_promtool_accepts(open.text, kOpen);
  // A histogram's family takes its _bucket, _count and _sum names too.
  const MetricsPage clash = metrics_page(
      {scalar("@lat", AggKind::Hist, buckets({1})), scalar("@lat_count", AggKind::Max, val(I(1)))}, {}, kText);
  EXPECT_EQ(clash.clashes, std::vector<std::string>{"@lat_count"});
  // A stats() map takes its gauges' names too, and is served with them or
  // not at all.
  const MetricsPage stats_clash = metrics_page({scalar("@size", AggKind::Stats, stats(1, 5, I(5), I(5))),
                                                scalar("@size_max", AggKind::Max, val(I(1))),
                                                scalar("@rtt_min", AggKind::Min, val(I(2))),
                                                scalar("@rtt", AggKind::Stats, stats(1, 3, I(3), I(3)))},
                                               {}, kText);
  EXPECT_EQ(stats_clash.clashes, (std::vector<std::string>{"@size_max", "@rtt"}));
  EXPECT_NE(stats_clash.text.find("bpfscope_size_max 5\n"), std::string::npos) << stats_clash.text;
  EXPECT_NE(stats_clash.text.find("bpfscope_rtt_min 2\n"), std::string::npos) << stats_clash.text;
  EXPECT_EQ(stats_clash.text.find("bpfscope_rtt_count"), std::string::npos) << stats_clash.text;
  // On a page, the families are in name order: the summary, _max, _min.
  const MetricsPage one = metrics_page({scalar("@size", AggKind::Stats, stats(2, 9, I(4), I(5)))}, {}, kOpen);
  const size_t summary = one.text.find("# TYPE bpfscope_size summary");
  const size_t max = one.text.find("# TYPE bpfscope_size_max gauge");
  const size_t min = one.text.find("# TYPE bpfscope_size_min gauge");
  EXPECT_LT(summary, max);
  EXPECT_LT(max, min);
  EXPECT_NE(min, std::string::npos);
  expect_promtool_accepts(one.text, kOpen);
  expect_promtool_accepts(metrics_page({scalar("@size", AggKind::Stats, stats(2, 9, I(4), I(5)))}, {}, kText).text,
                          kText);
}

// The judge has teeth: promtool refuses a label without its closing quote,
// and in OpenMetrics a byte that is no UTF-8.
TEST(Metrics, PromtoolRefusesBrokenPages) {
  EXPECT_NONFATAL_FAILURE(expect_promtool_accepts("bpfscope_x{key=\"a} 1\n", kText), "promtool check metrics");
  EXPECT_NONFATAL_FAILURE(expect_promtool_accepts("bpfscope_x{key=\"\xff\"} 1\n", kOpen), "promtool tsdb");
}

TEST(Metrics, ContentTypes) {
  EXPECT_EQ(metrics_content_type(kText), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics_content_type(kOpen), "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

// --max-series bounds a page's series, not each map's: each map in turn
// serves the keys whose series fit in what the maps before it left (a
// hist() key has 68; the other="true" series counts too), at least one key,
// and folds the others.
TEST(Metrics, GuardBudgetIsThePages) {
  std::vector<std::pair<Value, Aggregate>> counts, hists;
  for (int i = 0; i < 10; ++i) {
    counts.emplace_back(I(i), val(I(100 + i)));
    hists.emplace_back(I(i), buckets(std::vector<uint64_t>(66, 1)));
  }
  const std::vector<MapSnapshot> maps = {keyed("@a", AggKind::Count, counts),
                                         keyed("@latency", AggKind::Hist, hists), keyed("@z", AggKind::Count, counts)};
  const RunMetrics run{.version = "0.1.0"};
  // @a: all 10 keys fit; @latency: what is left holds three keys' series,
  // two keys and other="true".
  MetricsPage page = metrics_page(maps, run, kText, 10 + 3 * 68);
  EXPECT_EQ(page.series_folded,
            (std::vector<std::pair<std::string, uint64_t>>{{"@a", 0}, {"@latency", 8}, {"@z", 9}}));
  // @a: 8 keys and other="true" take all 9; the others serve one key each.
  page = metrics_page(maps, run, kText, 9);
  EXPECT_EQ(page.series_folded,
            (std::vector<std::pair<std::string, uint64_t>>{{"@a", 2}, {"@latency", 9}, {"@z", 9}}));
  expect_promtool_accepts(page.text, kText);
}

// A tool's header names a map's family, its labels and its help.
TEST(Metrics, ToolNames) {
  MetricNaming naming{.name = "syscount_calls", .labels = {{"syscall"}, {"pid", "comm"}}, .help = "System calls"};
  MapSnapshot one = keyed("@count", AggKind::Count, {{S("read"), val(I(3))}});
  one.metric = &naming;
  EXPECT_EQ(text_of(one, 0), R"txt(# HELP bpfscope_syscount_calls_total System calls
# TYPE bpfscope_syscount_calls_total counter
bpfscope_syscount_calls_total{syscall="read"} 3
)txt");
  MapSnapshot two = keyed("@count", AggKind::Count, {{T({I(42), S("sshd")}), val(I(5))}});
  two.metric = &naming;
  EXPECT_NE(text_of(two, 0).find("bpfscope_syscount_calls_total{pid=\"42\",comm=\"sshd\"} 5\n"), std::string::npos);
  // No set of three names: the key's own.
  MapSnapshot three = keyed("@count", AggKind::Count, {{T({I(1), I(2), I(3)}), val(I(1))}});
  three.metric = &naming;
  EXPECT_NE(text_of(three, 0).find("{key0=\"1\",key1=\"2\",key2=\"3\"}"), std::string::npos);
}

// ---- content negotiation ----

// The Accept headers Prometheus sends (2.x and 3.x, with and without native
// histograms), and others: the largest q wins, protobuf then OpenMetrics on
// a tie, the 0.0.4 text when nothing acceptable is named.
TEST(Metrics, AcceptHeaderChoosesTheFormat) {
  const MetricsChoice proto{.protobuf = true}, open{.format = MetricsFormat::OpenMetrics}, text{};
  const std::vector<std::pair<std::string, MetricsChoice>> cases = {
      {"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
       "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
       open},
      {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
       "application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,"
       "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
       proto},
      {"text/plain;version=0.0.4;q=0.5,*/*;q=0.1", text},
      {"", text},
      {"*/*", text},
      {"text/*", text},
      // q values weigh, not the order.
      {"text/plain;q=0.9, application/openmetrics-text; version=1.0.0; q=0.3", text},
      {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.2,"
       "application/openmetrics-text;q=0.7",
       open},
      // A tie: protobuf, then OpenMetrics.
      {"application/openmetrics-text;q=0.5, application/vnd.google.protobuf; "
       "proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited; q=0.5",
       proto},
      {"text/plain, application/openmetrics-text", open},
      // Not acceptable (q=0), or not the protobuf this endpoint writes.
      {"application/openmetrics-text;q=0", text},
      {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text", text},
      {"application/vnd.google.protobuf;encoding=delimited", text},
      {"APPLICATION/OpenMetrics-Text; Q=1", open},
      {"application/openmetrics-text;q=bad", text},
  };
  for (const auto& [accept, want] : cases) {
    SCOPED_TRACE(accept);
    const MetricsChoice got = choose_metrics_format(accept);
    EXPECT_EQ(got.protobuf, want.protobuf);
    EXPECT_EQ(got.format, want.format);
  }
}

}  // namespace
}  // namespace bpfscope::output::metrics_test
