// Maps as Prometheus's protobuf exposition format (src/output/metrics_proto.cpp,
// docs/metrics.md "Native histograms"). The page is read back with the
// classes protoc generates and protobuf's own CodedInputStream, and each
// message must be what protobuf's serializer writes for it; one message is
// also given to `protoc --decode`, which reads it without our code.
#include <google/protobuf/io/coded_stream.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "external_parsers.h"
#include "output/metrics.pb.h"
#include "output/metrics_proto.h"
#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output::metrics_proto_test {
namespace {

using namespace test;  // snapshot_builders.h, external_parsers.h
namespace pb = io::prometheus::client;

// Every length-delimited MetricFamily of a page; fails the test on bytes
// left over or a message that does not parse.
std::vector<pb::MetricFamily> families_of(const std::string& page) {
  std::vector<pb::MetricFamily> out;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(page.data()),
                                            static_cast<int>(page.size()));
  uint32_t size = 0;
  while (in.ReadVarint32(&size)) {
    const int start = in.CurrentPosition();
    const auto limit = in.PushLimit(static_cast<int>(size));
    pb::MetricFamily f;
    EXPECT_TRUE(f.ParseFromCodedStream(&in));
    EXPECT_TRUE(in.ConsumedEntireMessage());
    in.PopLimit(limit);
    // The encoder is ours (no protobuf library in bpfscope): protobuf's
    // own serializer writes the parsed message back byte for byte.
    EXPECT_EQ(f.SerializeAsString(), page.substr(static_cast<size_t>(start), size)) << f.name();
    out.push_back(std::move(f));
  }
  EXPECT_EQ(in.CurrentPosition(), static_cast<int>(page.size()));
  return out;
}

// The maps' families of a page (the run's, always there, left out).
std::vector<pb::MetricFamily> families_of(const std::vector<MapSnapshot>& maps, uint64_t max_series = 0) {
  std::vector<pb::MetricFamily> out;
  for (pb::MetricFamily& f : families_of(metrics_protobuf(maps, RunMetrics{}, max_series).text))
    if (f.help().starts_with("bpfscope map ")) out.push_back(std::move(f));
  return out;
}

// The family of one map (the page also has the run's).
pb::MetricFamily family_of(const MapSnapshot& m, uint64_t max_series = 0) {
  const auto fs = families_of({m}, max_series);
  EXPECT_EQ(fs.size(), 1u);
  return fs.empty() ? pb::MetricFamily{} : fs.front();
}

// A hist(n, bits) aggregate holding `values`.
Aggregate hist_of(std::initializer_list<int64_t> values, int bits = 0) {
  std::vector<uint64_t> b(hist_bucket_count(bits));
  int64_t sum = 0;
  for (const int64_t v : values) {
    ++b[hist_index(v, bits)];
    sum = wrapping_add(sum, v);
  }
  return buckets(std::move(b), sum);
}

MapSnapshot hist_map(std::string name, Aggregate a, int bits = 0) {
  MapSnapshot m = scalar(std::move(name), AggKind::Hist, std::move(a));
  m.hist.bits = bits;
  return m;
}

struct Span {
  int32_t offset;
  uint32_t length;
  bool operator==(const Span&) const = default;
};
std::vector<Span> spans(const google::protobuf::RepeatedPtrField<pb::BucketSpan>& s) {
  std::vector<Span> out;
  for (const auto& x : s) out.push_back({x.offset(), x.length()});
  return out;
}
std::vector<int64_t> deltas(const google::protobuf::RepeatedField<int64_t>& d) { return {d.begin(), d.end()}; }

// The cumulative count of the classic bucket with upper bound `le` (-1: none).
int64_t classic(const pb::Histogram& h, double le) {
  for (const auto& b : h.bucket())
    if (b.upper_bound() == le) return static_cast<int64_t>(b.cumulative_count());
  return -1;
}

// ---- native histograms ----

TEST(MetricsProto, HistIsNativeSchemaZero) {
  // 0 is the zero bucket; [1, 2) is native bucket 1, (1, 2]; [2, 4) is 2;
  // [4, 8) is 3; 1000 in [512, 1024) is 10.
  const pb::MetricFamily f = family_of(hist_map("@lat", hist_of({0, 1, 2, 3, 4, 1000})));
  EXPECT_EQ(f.name(), "bpfscope_lat");
  EXPECT_EQ(f.help(), "bpfscope map @lat (hist())");
  EXPECT_EQ(f.type(), pb::HISTOGRAM);
  ASSERT_EQ(f.metric_size(), 1);
  EXPECT_EQ(f.metric(0).label_size(), 0);
  const pb::Histogram& h = f.metric(0).histogram();
  EXPECT_EQ(h.sample_count(), 6u);
  EXPECT_EQ(h.sample_sum(), 1010);
  ASSERT_TRUE(h.has_schema());
  EXPECT_EQ(h.schema(), 0);
  EXPECT_EQ(h.zero_threshold(), 0x1p-128);
  EXPECT_EQ(h.zero_count(), 1u);
  EXPECT_TRUE(h.negative_span().empty());
  EXPECT_TRUE(h.negative_delta().empty());
  EXPECT_EQ(spans(h.positive_span()), (std::vector<Span>{{1, 3}, {6, 1}}));
  // Counts 1, 2, 1, 1.
  EXPECT_EQ(deltas(h.positive_delta()), (std::vector<int64_t>{1, 1, -1, 0}));
}

TEST(MetricsProto, HistKeepsClassicBuckets) {
  const pb::Histogram h = family_of(hist_map("@lat", hist_of({0, 1, 2, 3, 4, 1000}))).metric(0).histogram();
  // As the text page: le is each bucket's largest integer, -1 to 2^63-1,
  // and no +Inf (sample_count is its count).
  EXPECT_EQ(h.bucket_size(), 65);
  EXPECT_EQ(classic(h, -1), 0);
  EXPECT_EQ(classic(h, 0), 1);
  EXPECT_EQ(classic(h, 1), 2);
  EXPECT_EQ(classic(h, 3), 4);
  EXPECT_EQ(classic(h, 7), 5);
  EXPECT_EQ(classic(h, 511), 5);
  EXPECT_EQ(classic(h, 1023), 6);
  EXPECT_EQ(h.bucket(h.bucket_size() - 1).upper_bound(), 0x1p63);  // 2^63-1 as a double
  for (int i = 1; i < h.bucket_size(); ++i) EXPECT_LT(h.bucket(i - 1).upper_bound(), h.bucket(i).upper_bound());
}

TEST(MetricsProto, HistNegativesAreNegativeBucketZero) {
  const pb::Histogram h = family_of(hist_map("@d", hist_of({-5, -1, -1000, 7}))).metric(0).histogram();
  EXPECT_EQ(spans(h.negative_span()), (std::vector<Span>{{0, 1}}));
  EXPECT_EQ(deltas(h.negative_delta()), (std::vector<int64_t>{3}));
  EXPECT_EQ(spans(h.positive_span()), (std::vector<Span>{{3, 1}}));  // 7 in [4, 8): native 3
  EXPECT_EQ(deltas(h.positive_delta()), (std::vector<int64_t>{1}));
  EXPECT_EQ(h.zero_count(), 0u);
  EXPECT_EQ(h.sample_count(), 4u);
  EXPECT_EQ(classic(h, -1), 3);
}

TEST(MetricsProto, HistLargestBuckets) {
  // UINT64_MAX is in [2^63, 2^64): native bucket 64, past the classic le's
  // (it has no int64 bound), so only sample_count has it.
  MapSnapshot m = hist_map("@big", hist_of({INT64_MAX, 1 << 20}));
  m.value_signed = false;
  m.entries[0].second.buckets.back() += 1;
  const pb::Histogram h = family_of(m).metric(0).histogram();
  EXPECT_EQ(spans(h.positive_span()), (std::vector<Span>{{21, 1}, {41, 2}}));
  EXPECT_EQ(deltas(h.positive_delta()), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(h.sample_count(), 3u);
  EXPECT_EQ(classic(h, 0x1p63), 2);
}

TEST(MetricsProto, EmptyHistStaysNative) {
  // No observation: still schema 0 with a zero threshold above 0, which is
  // what tells Prometheus it is native.
  const pb::Histogram h = family_of(hist_map("@e", hist_of({}))).metric(0).histogram();
  EXPECT_EQ(h.sample_count(), 0u);
  EXPECT_TRUE(h.has_schema());
  EXPECT_GT(h.zero_threshold(), 0);
  EXPECT_TRUE(h.positive_span().empty());
}

TEST(MetricsProto, LinearHistogramsAreClassicOnly) {
  // hist(n, 2): four linear parts per power of two, no exponential schema.
  const pb::Histogram h2 = family_of(hist_map("@h", hist_of({0, 5, 6, 100}, 2), 2)).metric(0).histogram();
  EXPECT_FALSE(h2.has_schema());
  EXPECT_FALSE(h2.has_zero_threshold());
  EXPECT_TRUE(h2.positive_span().empty());
  EXPECT_EQ(h2.sample_count(), 4u);
  EXPECT_EQ(classic(h2, 5), 2);  // [5, 6)
  EXPECT_EQ(classic(h2, 6), 3);

  MapSnapshot l = scalar("@l", AggKind::LHist, buckets({1, 2, 0, 4, 1}));
  l.hist = {.min = 0, .max = 30, .step = 10};
  const pb::MetricFamily f = family_of(l);
  EXPECT_EQ(f.help(), "bpfscope map @l (lhist(n, 0, 30, 10))");
  const pb::Histogram& h = f.metric(0).histogram();
  EXPECT_FALSE(h.has_schema());
  EXPECT_EQ(h.bucket_size(), 4);  // le -1, 9, 19, 29; [30, ...) only in the count
  EXPECT_EQ(classic(h, 29), 7);
  EXPECT_EQ(h.sample_count(), 8u);
}

// ---- other families ----

TEST(MetricsProto, CountersGaugesSummaries) {
  const auto fs = families_of({
      keyed("@calls", AggKind::Count, {{S("read"), val(I(3))}, {S("write"), val(I(5))}}),
      scalar("@m", AggKind::Max, val(I(-4))),
      scalar("@a", AggKind::Avg, avg(4, 10)),
      scalar("@s", AggKind::Stats, avg(4, 10)),
  });
  ASSERT_EQ(fs.size(), 4u);
  // Sorted by family name, each named as its samples are.
  EXPECT_EQ(fs[0].name(), "bpfscope_a");
  EXPECT_EQ(fs[0].type(), pb::GAUGE);
  EXPECT_EQ(fs[0].metric(0).gauge().value(), 2);  // the truncated mean print() shows
  EXPECT_EQ(fs[1].name(), "bpfscope_calls_total");
  EXPECT_EQ(fs[1].type(), pb::COUNTER);
  ASSERT_EQ(fs[1].metric_size(), 2);
  EXPECT_EQ(fs[1].metric(1).label(0).name(), "key");
  EXPECT_EQ(fs[1].metric(1).label(0).value(), "write");
  EXPECT_EQ(fs[1].metric(1).counter().value(), 5);
  EXPECT_EQ(fs[2].name(), "bpfscope_m");
  EXPECT_EQ(fs[2].metric(0).gauge().value(), -4);
  EXPECT_EQ(fs[3].name(), "bpfscope_s");
  EXPECT_EQ(fs[3].type(), pb::SUMMARY);
  EXPECT_EQ(fs[3].metric(0).summary().sample_count(), 4u);
  EXPECT_EQ(fs[3].metric(0).summary().sample_sum(), 10);
  EXPECT_EQ(fs[3].metric(0).summary().quantile_size(), 0);
}

TEST(MetricsProto, TupleKeysAndHistogramLabels) {
  const pb::MetricFamily f =
      family_of(keyed("@h", AggKind::Hist, {{T({S("a\xff"), I(1)}), hist_of({2})}, {T({S("b"), I(2)}), hist_of({})}}));
  ASSERT_EQ(f.metric_size(), 2);
  EXPECT_EQ(f.metric(0).label(0).name(), "key0");
  EXPECT_EQ(f.metric(0).label(0).value(), "a\\xff");  // no UTF-8: \xNN, as the text page
  EXPECT_EQ(f.metric(0).label(1).name(), "key1");
  EXPECT_EQ(f.metric(0).label(1).value(), "1");
  EXPECT_EQ(spans(f.metric(0).histogram().positive_span()), (std::vector<Span>{{2, 1}}));
}

TEST(MetricsProto, FoldingAndClashesAsTheTextPage) {
  std::vector<std::pair<Value, Aggregate>> e;
  for (int i = 0; i < 5; ++i) e.emplace_back(I(i), hist_of({i}));
  const std::vector<MapSnapshot> maps = {keyed("@h", AggKind::Hist, e),
                                         scalar("@lost_events", AggKind::Count, val(I(1)))};
  const RunMetrics run{.version = "0.1.0"};
  // Four keys' series (three keys and other="true"): a hist() key has 68
  // (65 buckets with an le, +Inf, _sum and _count).
  const MetricsPage proto = metrics_protobuf(maps, run, 4 * 68);
  const MetricsPage text = metrics_page(maps, run, MetricsFormat::Prometheus, 4 * 68);
  EXPECT_EQ(proto.clashes, text.clashes);
  EXPECT_EQ(proto.clashes, std::vector<std::string>{"@lost_events"});
  EXPECT_EQ(proto.series_folded, text.series_folded);

  const auto fs = families_of(proto.text);
  // Every family is on the text page under the same name and type.
  for (const pb::MetricFamily& f : fs) {
    const std::string type = f.type() == pb::COUNTER ? "counter" : f.type() == pb::GAUGE ? "gauge" : "histogram";
    EXPECT_NE(text.text.find("# TYPE " + f.name() + " " + type + "\n"), std::string::npos) << f.name();
  }
  std::vector<std::string> names;
  for (const auto& f : fs) names.push_back(f.name());
  EXPECT_EQ(names, (std::vector<std::string>{"bpfscope_build_info", "bpfscope_h", "bpfscope_lost_events_total",
                                              "bpfscope_series_folded_total"}));

  // Every key has one value: the first two in key order, 0 and 1, fold
  // into other="true", whose native buckets add up (a zero and a 1).
  const pb::MetricFamily& h = fs[1];
  ASSERT_EQ(h.metric_size(), 4);
  const pb::Metric& other = h.metric(3);
  ASSERT_EQ(other.label_size(), 1);
  EXPECT_EQ(other.label(0).name(), "other");
  EXPECT_EQ(other.histogram().sample_count(), 2u);
  EXPECT_EQ(other.histogram().zero_count() + static_cast<uint64_t>(other.histogram().positive_delta(0)), 2u);
  EXPECT_EQ(fs[0].metric(0).label(0).name(), "version");
  EXPECT_EQ(fs[0].metric(0).gauge().value(), 1);
  EXPECT_EQ(fs[2].metric(0).counter().value(), 0);
  EXPECT_EQ(fs[3].metric(0).label(0).value(), "@h");
  EXPECT_EQ(fs[3].metric(0).counter().value(), 2);
}

TEST(MetricsProto, NothingServedIsEmpty) {
  // A string map has no family; the run's families are all there is.
  const auto fs = families_of(metrics_protobuf({scalar("@s", AggKind::Plain, val(S("text")))}, RunMetrics{}).text);
  std::vector<std::string> names;
  for (const auto& f : fs) names.push_back(f.name());
  EXPECT_EQ(names, (std::vector<std::string>{"bpfscope_build_info", "bpfscope_lost_events_total"}));
}

// ---- protoc, an independent reader ----

TEST(MetricsProto, ProtocDecodesAFamily) {
  const std::string page = metrics_protobuf({hist_map("@lat", hist_of({0, 1, 2, 3, 4, 1000}))}, RunMetrics{}).text;
  // The histogram's message, without its length: the second family, after
  // bpfscope_build_info.
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(page.data()),
                                            static_cast<int>(page.size()));
  uint32_t size = 0;
  ASSERT_TRUE(in.ReadVarint32(&size));
  ASSERT_TRUE(in.Skip(static_cast<int>(size)));
  ASSERT_TRUE(in.ReadVarint32(&size));
  const std::string message = page.substr(static_cast<size_t>(in.CurrentPosition()), size);
  const ScratchDir dir;
  const std::string path = dir.path + "/family.bin";
  std::ofstream(path, std::ios::binary) << message;
  std::string out;
  const int status = run_shell(std::string("protoc --proto_path=") + BPFSCOPE_SOURCE_DIR +
                                   "/src/output --decode=io.prometheus.client.MetricFamily metrics.proto < " + path,
                               out);
  ASSERT_EQ(status, 0) << out;
  for (const char* want : {"name: \"bpfscope_lat\"", "type: HISTOGRAM", "sample_count: 6", "schema: 0",
                           "zero_threshold: 2.9387358770557188e-39", "zero_count: 1",
                           "positive_span {\n      offset: 1\n      length: 3\n    }",
                           "positive_span {\n      offset: 6\n      length: 1\n    }", "positive_delta: -1"})
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
}

}  // namespace
}  // namespace bpfscope::output::metrics_proto_test
