// Internal to src/output: the metric families a Prometheus page serves,
// before a format writes them (issue 19). metrics.cpp writes them as text
// (0.0.4, OpenMetrics), metrics_proto.cpp as protobuf MetricFamily
// messages; both get the same names, labels, folding and clashes from here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/output.h"

namespace bpfscope::output {

// Metric types. ORDER MetricType.
enum class MetricType { Counter, Gauge, Summary, Histogram, Info };
struct MetricTypeRow {
  std::string_view name;    // the text formats' TYPE
  std::string_view suffix;  // a one-value sample's suffix (x_total, x_info)
  // The suffixes of the sample names a family x may use ("" is x itself):
  // no two families may share one (OpenMetrics "Suffixes").
  std::array<std::string_view, 5> samples;
};
const MetricTypeRow& metric_type_row(MetricType t);

struct Label {
  std::string name;
  std::string value;  // valid UTF-8, not yet escaped
};
using Labels = std::vector<Label>;

// One series: the labels of one key (or other="true" for the folded keys)
// and its value.
struct MetricSeries {
  Labels labels;
  // Counter, Gauge, Info: `value` is the sample (an avg()'s mean already
  // taken). Summary: `count` and `total`. Histogram: `buckets`.
  Aggregate value;
};

struct MetricFamily {
  std::string name;  // the OpenMetrics family name; every sample's name starts with it
  MetricType type = MetricType::Gauge;
  std::string help;
  // How to read a series' value: a Summary's total is signed or not; a
  // Histogram's buckets are hist() (Hist, hist.bits) or lhist() ones.
  AggKind kind = AggKind::Plain;
  bool value_signed = true;
  HistParams hist;
  std::vector<MetricSeries> series;
};

// The text of a label value: valid UTF-8, a byte that is none as \xNN.
std::string utf8_text(std::string_view s);

// The number of buckets a family's histogram has (f.type Histogram).
size_t bucket_count(const MetricFamily& f);

// One map's families: its own, then a stats() map's _min and _max gauges
// (which have no series while no key has a value); none when nothing is
// served. `folded` gets the number of keys folded into other="true"
// (output.h, map_metrics).
std::vector<MetricFamily> map_metric_families(const MapSnapshot& map, uint64_t max_series, uint64_t& folded);

// The run's families with samples, in kRunFamilies order.
std::vector<MetricFamily> run_metric_families(const RunMetrics& run);

// A page's families sorted by name: the run's and the maps' (output.h,
// metrics_page), with the maps that clash and the folded counts.
struct MetricFamilies {
  std::vector<MetricFamily> families;
  std::vector<std::pair<std::string, uint64_t>> series_folded;
  std::vector<std::string> clashes;
};
MetricFamilies page_metric_families(const std::vector<MapSnapshot>& maps, const RunMetrics& run, uint64_t max_series);

}  // namespace bpfscope::output
