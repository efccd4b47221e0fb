// Percentiles estimated from hist() and lhist() buckets (--percentiles):
// the value at which the running count crosses p% of the total, linearly
// interpolated inside that bucket.
#include <fmt/format.h>

#include <cmath>

#include "output/histogram.h"
#include "output/output.h"
#include "output/rounding.h"

namespace bpfscope::output {

namespace {

// Bucket i's range [lo, hi) in values; an open-ended bucket (underflow, the
// lhist overflow) is the single value at its known bound.
std::pair<double, double> bucket_range(const MapSnapshot& map, size_t i) {
  if (map.kind == AggKind::Hist) {
    if (i == 0) return {0, 0};  // negative values: reported as 0
    return {static_cast<double>(hist_label(i - 1, map.hist.bits)), static_cast<double>(hist_label(i, map.hist.bits))};
  }
  const int64_t step = map.hist.step > 0 ? map.hist.step : 1;
  if (i == 0) return {static_cast<double>(map.hist.min), static_cast<double>(map.hist.min)};
  const auto lo = lhist_label(i - 1, map.hist.min, map.hist.max, step);
  const auto hi = lhist_label(i, map.hist.min, map.hist.max, step);
  const double l = lo ? static_cast<double>(*lo) : static_cast<double>(map.hist.max);
  return {l, hi ? static_cast<double>(*hi) : l};
}

std::string number(double v) {
  if (v >= 100 || v == static_cast<int64_t>(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

const std::vector<double>& percentile_levels() {
  static const std::vector<double> levels = {50, 90, 99, 99.9};
  return levels;
}

std::vector<double> estimate_percentiles(const MapSnapshot& map, const std::vector<uint64_t>& buckets) {
  std::vector<double> out;
  uint64_t total = 0;
  for (uint64_t c : buckets) total += c;
  if (total == 0 || !is_histogram(map.kind)) return out;
  for (double p : percentile_levels()) {
    const double rank = p / 100 * static_cast<double>(total);
    double cum = 0;
    double value = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (buckets[i] == 0) continue;
      const double c = static_cast<double>(buckets[i]);
      const auto [lo, hi] = bucket_range(map, i);
      value = hi;
      if (cum + c >= rank) {
        value = lo + (hi - lo) * (rank - cum) / c;
        break;
      }
      cum += c;
    }
    out.push_back(value);
  }
  return out;
}

std::string percentiles_text(const std::vector<double>& values) {
  if (values.empty()) return "";
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += fmt::format("{}p{} = {}", i ? ", " : "", number(percentile_levels()[i]), number(values[i]));
  return out + " (estimated within buckets)\n";
}

std::string percentiles_json(const std::vector<double>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i)
    out += fmt::format("{}\"p{}\": {}", i ? ", " : "", number(percentile_levels()[i]),
                       json_value(Value::of_float(round_half_away(values[i] * 1000) / 1000)));
  return out + "}";
}

}  // namespace bpfscope::output
