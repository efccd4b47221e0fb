// Maps as Prometheus's protobuf exposition format (issue 19): the metric
// families of metric_families.cpp as io.prometheus.client.MetricFamily
// messages, length-delimited, which is what Prometheus reads when it asks
// for application/vnd.google.protobuf;...;encoding=delimited. protoc
// generates the messages from metrics.proto; protobuf's CodedOutputStream
// writes the bytes.
#include "output/metrics_proto.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cmath>

#include "output/histogram.h"
#include "output/map_common.h"
#include "output/metric_families.h"
#include "output/metrics.pb.h"

namespace bpfscope::output {

namespace {

namespace pb = io::prometheus::client;

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

// Native buckets in index order, written as spans and deltas. Only
// non-empty buckets are sent; the empty ones between two runs become the
// next span's offset.
struct NativeBuckets {
  google::protobuf::RepeatedPtrField<pb::BucketSpan>* spans;
  google::protobuf::RepeatedField<int64_t>* deltas;
  int32_t next = 0;     // the index after the last bucket added
  uint64_t last = 0;    // the last count added (deltas start from 0)

  void add(int32_t index, uint64_t count) {
    if (count == 0) return;
    if (spans->empty() || index != next) {
      pb::BucketSpan* s = spans->Add();
      s->set_offset(spans->size() == 1 ? index : index - next);
      s->set_length(0);
    }
    pb::BucketSpan& s = *spans->rbegin();
    s.set_length(s.length() + 1);
    deltas->Add(static_cast<int64_t>(count - last));
    last = count;
    next = index + 1;
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
void add_native_buckets(pb::Histogram& h, const std::vector<uint64_t>& buckets) {
  h.set_schema(0);
  h.set_zero_threshold(kZeroThreshold);
  h.set_zero_count(kHistZeros < buckets.size() ? buckets[kHistZeros] : 0);
  if (!buckets.empty()) NativeBuckets{h.mutable_negative_span(), h.mutable_negative_delta()}.add(0, buckets[0]);
  NativeBuckets positive{h.mutable_positive_span(), h.mutable_positive_delta()};
  for (size_t i = kHistFirstPositive; i < buckets.size(); ++i)
    positive.add(static_cast<int32_t>(i - kHistFirstPositive + 1), buckets[i]);
}

// One series' histogram: classic buckets as the text page has them (le
// the largest integer of each bucket that has one; no +Inf bucket, which
// sample_count stands for), and hist(n)'s native buckets.
void fill_histogram(pb::Histogram& h, const MetricFamily& f, const Aggregate& a) {
  const size_t n = bucket_count(f);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i < a.buckets.size()) cumulative += a.buckets[i];
    if (const auto le = bucket_max(i, f.kind, f.hist)) {
      pb::Bucket* b = h.add_bucket();
      b->set_cumulative_count(cumulative);
      b->set_upper_bound(static_cast<double>(*le));
    }
  }
  for (size_t i = n; i < a.buckets.size(); ++i) cumulative += a.buckets[i];
  h.set_sample_count(cumulative);
  h.set_sample_sum(stat_number(a.sum, f.value_signed).as_double());
  // hist(n, k) with k > 0 splits each power of two into 2^k linear parts,
  // which no exponential schema has as boundaries: classic buckets only.
  if (f.kind == AggKind::Hist && f.hist.bits == 0) add_native_buckets(h, a.buckets);
}

void fill_metric(pb::Metric& m, const MetricFamily& f, const MetricSeries& s) {
  for (const Label& l : s.labels) {
    pb::LabelPair* p = m.add_label();
    p->set_name(l.name);
    p->set_value(l.value);
  }
  const Aggregate& a = s.value;
  switch (f.type) {
    case MetricType::Counter:
      m.mutable_counter()->set_value(a.value.as_double());
      return;
    case MetricType::Gauge:
    case MetricType::Info:
      m.mutable_gauge()->set_value(a.value.as_double());
      return;
    case MetricType::Summary:
      m.mutable_summary()->set_sample_count(static_cast<uint64_t>(std::max<int64_t>(a.count, 0)));
      m.mutable_summary()->set_sample_sum(stat_number(a.total, f.value_signed).as_double());
      return;
    case MetricType::Histogram:
      fill_histogram(*m.mutable_histogram(), f, a);
      return;
  }
}

// The protobuf type of a family, and the name its samples have in the text
// format 0.0.4, which is the name Prometheus stores them under (an info
// family is a gauge x_info there too).
pb::MetricType proto_type(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return pb::COUNTER;
    case MetricType::Gauge:
    case MetricType::Info:
      return pb::GAUGE;
    case MetricType::Summary:
      return pb::SUMMARY;
    case MetricType::Histogram:
      return pb::HISTOGRAM;
  }
  std::unreachable();
}

pb::MetricFamily proto_family(const MetricFamily& f) {
  pb::MetricFamily out;
  out.set_name(f.name + std::string(metric_type_row(f.type).suffix));
  out.set_help(f.help);
  out.set_type(proto_type(f.type));
  for (const MetricSeries& s : f.series) fill_metric(*out.add_metric(), f, s);
  return out;
}

// The message after its length as a varint, as protobuf's
// SerializeDelimitedToCodedStream writes it (that one is in the full
// library only).
void append_delimited(std::string& out, const pb::MetricFamily& m) {
  const size_t size = m.ByteSizeLong();
  // A family past 2 GiB (protobuf's limit) would be millions of series:
  // max_series keeps a family far below that.
  if (size > INT_MAX) return;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteVarint32(static_cast<uint32_t>(size));
  m.SerializeWithCachedSizes(&coded);
}

}  // namespace

MetricsPage metrics_protobuf(const std::vector<MapSnapshot>& maps, const RunMetrics& run, uint64_t max_series) {
  MetricFamilies families = page_metric_families(maps, run, max_series);
  MetricsPage page{.series_folded = std::move(families.series_folded), .clashes = std::move(families.clashes)};
  for (const MetricFamily& f : families.families) append_delimited(page.text, proto_family(f));
  return page;
}

}  // namespace bpfscope::output
