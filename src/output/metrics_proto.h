// Maps as Prometheus metrics in the protobuf exposition format (issue 19,
// docs/metrics.md "Native histograms"): the page a scraper gets when it
// negotiates protobuf, with hist() maps as native histograms. Built into its
// own library, bpfscope_metrics_proto (it links libprotobuf-lite), not into
// the bpfscope executable.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "output/output.h"

namespace bpfscope::output {

// The HTTP Content-Type of metrics_protobuf()'s page, which is also what a
// scraper's Accept header names to ask for it.
inline constexpr std::string_view kMetricsProtobufContentType =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

// The page metrics_page() makes, as io.prometheus.client.MetricFamily
// messages (src/output/metrics.proto), each preceded by its length as a
// varint; `text` holds these bytes. The same families, labels, series,
// folding and clashes as the text page; the differences:
//   - a family is named as its samples are: bpfscope_x_total for a
//     counter, bpfscope_build_info (a gauge) for an info family;
//   - values are doubles (an integer past 2^53 is rounded);
//   - a classic histogram has no +Inf bucket (sample_count is its count);
//   - a hist() map (hist(n), not hist(n, k) with k > 0) is also a native
//     histogram of schema 0 (docs/metrics.md gives the bucket mapping).
MetricsPage metrics_protobuf(const std::vector<MapSnapshot>& maps, const RunMetrics& run,
                             uint64_t max_series = kMetricsMaxSeries);

}  // namespace bpfscope::output
