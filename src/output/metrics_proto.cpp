// Maps as Prometheus's protobuf exposition format (issue 19): the metric
// families of metric_families.cpp as io.prometheus.client.MetricFamily
// messages (src/output/metrics.proto), length-delimited, which is what
// Prometheus reads when it asks for
// application/vnd.google.protobuf;...;encoding=delimited. The bytes are
// written here by hand (ProtoMessage below): the few messages need varints,
// doubles and nested messages only, and libprotobuf-lite's static
// initialisers and iostream set-up ran at every start of every run
// (BENCHMARKS.md, "Start and memory against ply"). The tests read the pages
// back with protoc's generated classes and with protoc --decode.
#include "output/metrics_proto.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "output/histogram.h"
#include "output/map_common.h"
#include "output/metric_families.h"

namespace bpfscope::output {

namespace {

// One message's bytes, field by field, as protobuf's wire format has them:
// a key (field number and wire type) and the value. Fields are written in
// field-number order, repeated scalars unpacked (proto2's default), as
// protobuf's own serializer writes metrics.proto's messages.
class ProtoMessage {
 public:
  void uint(uint32_t field, uint64_t v) {
    key(field, kVarint);
    varint(v);
  }
  // sint32/sint64: zigzag, so that small negative numbers stay short.
  void sint(uint32_t field, int64_t v) {
    uint(field, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void real(uint32_t field, double v) {
    key(field, kFixed64);
    uint64_t bits = std::bit_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i, bits >>= 8) bytes_.push_back(static_cast<char>(bits & 0xff));
  }
  void text(uint32_t field, std::string_view s) {
    key(field, kDelimited);
    varint(s.size());
    bytes_.append(s);
  }
  void message(uint32_t field, const ProtoMessage& m) { text(field, m.bytes_); }
  // Another message's fields after these (fields written apart, in order).
  void append(const ProtoMessage& m) { bytes_ += m.bytes_; }
  // The message after its length as a varint (protobuf's
  // SerializeDelimitedTo, which Prometheus's delimited format is).
  void append_delimited_to(std::string& out) const {
    ProtoMessage length;
    length.varint(bytes_.size());
    out += length.bytes_;
    out += bytes_;
  }

 private:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kDelimited = 2 };
  void key(uint32_t field, WireType type) { varint(uint64_t{field} << 3 | type); }
  void varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    bytes_.push_back(static_cast<char>(v));
  }
  std::string bytes_;
};

// metrics.proto's field numbers.
namespace field {
constexpr uint32_t kFamilyName = 1, kFamilyHelp = 2, kFamilyType = 3, kFamilyMetric = 4;
constexpr uint32_t kLabelName = 1, kLabelValue = 2;
constexpr uint32_t kMetricLabel = 1, kMetricGauge = 2, kMetricCounter = 3, kMetricSummary = 4, kMetricHistogram = 7;
constexpr uint32_t kValue = 1;  // Gauge.value, Counter.value
constexpr uint32_t kSampleCount = 1, kSampleSum = 2;  // Summary and Histogram
constexpr uint32_t kHistogramBucket = 3, kHistogramSchema = 5, kHistogramZeroThreshold = 6, kHistogramZeroCount = 7,
                   kHistogramNegativeSpan = 9, kHistogramNegativeDelta = 10, kHistogramPositiveSpan = 12,
                   kHistogramPositiveDelta = 13;
constexpr uint32_t kBucketCumulativeCount = 1, kBucketUpperBound = 2;
constexpr uint32_t kSpanOffset = 1, kSpanLength = 2;
}  // namespace field

// MetricType's values in metrics.proto.
enum class ProtoType : uint32_t { Counter = 0, Gauge = 1, Summary = 2, Histogram = 4 };

// The zero bucket's half width, as Prometheus's Go client sets it by
// default (2^-128, DefNativeHistogramZeroThreshold): bpftrace's values are
// integers, so it holds exactly the zeros. It must be above 0 anyway:
// Prometheus takes a histogram with a zero threshold of 0, no zeros and no
// native buckets for a classic one (textparse isNativeHistogram), and a
// map whose observations are all in the overflow bucket would be one.
constexpr double kZeroThreshold = 0x1p-128;

// hist()'s bucket index of the zeros and of the first positive bucket,
// [1, 2) (histogram.h hist_label: index 0 holds the negatives).
constexpr size_t kHistZeros = 1;
constexpr size_t kHistFirstPositive = 2;

// Native buckets in index order, as spans and deltas. Only non-empty
// buckets are sent; the empty ones between two runs become the next span's
// offset.
struct NativeBuckets {
  struct Span {
    int32_t offset;
    uint32_t length;
  };
  std::vector<Span> spans;
  std::vector<int64_t> deltas;
  int32_t next = 0;     // the index after the last bucket added
  uint64_t last = 0;    // the last count added (deltas start from 0)

  void add(int32_t index, uint64_t count) {
    if (count == 0) return;
    if (spans.empty() || index != next) spans.push_back({spans.empty() ? index : index - next, 0});
    ++spans.back().length;
    deltas.push_back(static_cast<int64_t>(count - last));
    last = count;
    next = index + 1;
  }

  void write(ProtoMessage& h, uint32_t span_field, uint32_t delta_field) const {
    for (const Span& s : spans) {
      ProtoMessage m;
      m.sint(field::kSpanOffset, s.offset);
      m.uint(field::kSpanLength, s.length);
      h.message(span_field, m);
    }
    for (const int64_t d : deltas) h.sint(delta_field, d);
  }
};

// hist(n)'s buckets as a schema 0 native histogram. With schema 0, native
// bucket i holds (2^(i-1), 2^i]; bpftrace's bucket [2^(i-1), 2^i) becomes
// native bucket i, for i = 1 ([1, 2)) to 64 ([2^63, 2^64)): the same
// boundaries and counts, bucket for bucket. The only difference is the
// side a power of two falls on: bpftrace counts 2^k in the bucket above
// it, the native bucket of that count has 2^k as its exclusive lower
// bound. For a value that bpftrace got by truncating a real quantity (ns,
// bytes of a partial page) the integer v stands for [v, v+1), which lies
// in the native bucket it is counted in. Zeros are the zero bucket. All
// negative values (bpftrace's one bucket below 0) go to negative bucket 0,
// [-1, -0.5): the bucket of -1, as the classic bucket le="-1" names -1 for
// them too; no native bucket spans every negative value.
void add_native_buckets(ProtoMessage& h, const std::vector<uint64_t>& buckets) {
  h.sint(field::kHistogramSchema, 0);
  h.real(field::kHistogramZeroThreshold, kZeroThreshold);
  h.uint(field::kHistogramZeroCount, kHistZeros < buckets.size() ? buckets[kHistZeros] : 0);
  NativeBuckets negative, positive;
  if (!buckets.empty()) negative.add(0, buckets[0]);
  for (size_t i = kHistFirstPositive; i < buckets.size(); ++i)
    positive.add(static_cast<int32_t>(i - kHistFirstPositive + 1), buckets[i]);
  negative.write(h, field::kHistogramNegativeSpan, field::kHistogramNegativeDelta);
  positive.write(h, field::kHistogramPositiveSpan, field::kHistogramPositiveDelta);
}

// One series' histogram: classic buckets as the text page has them (le
// the largest integer of each bucket that has one; no +Inf bucket, which
// sample_count stands for), and hist(n)'s native buckets.
ProtoMessage histogram(const MetricFamily& f, const Aggregate& a) {
  const size_t n = bucket_count(f);
  uint64_t cumulative = 0;
  ProtoMessage classic;  // the buckets, field 3, written after the count and sum
  for (size_t i = 0; i < n; ++i) {
    if (i < a.buckets.size()) cumulative += a.buckets[i];
    if (const auto le = bucket_max(i, f.kind, f.hist)) {
      ProtoMessage b;
      b.uint(field::kBucketCumulativeCount, cumulative);
      b.real(field::kBucketUpperBound, static_cast<double>(*le));
      classic.message(field::kHistogramBucket, b);
    }
  }
  for (size_t i = n; i < a.buckets.size(); ++i) cumulative += a.buckets[i];
  ProtoMessage h;
  h.uint(field::kSampleCount, cumulative);
  h.real(field::kSampleSum, stat_number(a.sum, f.value_signed).as_double());
  h.append(classic);
  // hist(n, k) with k > 0 splits each power of two into 2^k linear parts,
  // which no exponential schema has as boundaries: classic buckets only.
  if (f.kind == AggKind::Hist && f.hist.bits == 0) add_native_buckets(h, a.buckets);
  return h;
}

ProtoMessage metric(const MetricFamily& f, const MetricSeries& s) {
  ProtoMessage m;
  for (const Label& l : s.labels) {
    ProtoMessage p;
    p.text(field::kLabelName, l.name);
    p.text(field::kLabelValue, l.value);
    m.message(field::kMetricLabel, p);
  }
  const Aggregate& a = s.value;
  ProtoMessage v;
  switch (f.type) {
    case MetricType::Counter:
      v.real(field::kValue, a.value.as_double());
      m.message(field::kMetricCounter, v);
      break;
    case MetricType::Gauge:
    case MetricType::Info:
      v.real(field::kValue, a.value.as_double());
      m.message(field::kMetricGauge, v);
      break;
    case MetricType::Summary:
      v.uint(field::kSampleCount, static_cast<uint64_t>(std::max<int64_t>(a.count, 0)));
      v.real(field::kSampleSum, stat_number(a.total, f.value_signed).as_double());
      m.message(field::kMetricSummary, v);
      break;
    case MetricType::Histogram:
      m.message(field::kMetricHistogram, histogram(f, a));
      break;
  }
  return m;
}

// The protobuf type of a family, and the name its samples have in the text
// format 0.0.4, which is the name Prometheus stores them under (an info
// family is a gauge x_info there too).
ProtoType proto_type(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return ProtoType::Counter;
    case MetricType::Gauge:
    case MetricType::Info:
      return ProtoType::Gauge;
    case MetricType::Summary:
      return ProtoType::Summary;
    case MetricType::Histogram:
      return ProtoType::Histogram;
  }
  std::unreachable();
}

ProtoMessage family(const MetricFamily& f) {
  ProtoMessage out;
  out.text(field::kFamilyName, f.name + std::string(metric_type_row(f.type).suffix));
  out.text(field::kFamilyHelp, f.help);
  out.uint(field::kFamilyType, static_cast<uint32_t>(proto_type(f.type)));
  for (const MetricSeries& s : f.series) out.message(field::kFamilyMetric, metric(f, s));
  return out;
}

}  // namespace

MetricsPage metrics_protobuf(const std::vector<MapSnapshot>& maps, const RunMetrics& run, uint64_t max_series) {
  MetricFamilies families = page_metric_families(maps, run, max_series);
  MetricsPage page{.series_folded = std::move(families.series_folded), .clashes = std::move(families.clashes)};
  for (const MetricFamily& f : families.families) family(f).append_delimited_to(page.text);
  return page;
}

}  // namespace bpfscope::output
