// Maps as Prometheus metric families (issue 19): the text format 0.0.4
// (prometheus/docs content/docs/instrumenting/exposition_formats.md) and
// OpenMetrics 1.0.0 text (OpenObservability/OpenMetrics
// specification/OpenMetrics.md). The two differ in a few details, which are
// the rows of kFormats; everything else is one code path. The families
// themselves (names, labels, folding, clashes) come from metric_families.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "output/histogram.h"
#include "output/map_common.h"
#include "output/metric_families.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

// What the formats do differently. ORDER MetricsFormat.
struct FormatRow {
  std::string_view content_type;
  // The HELP and TYPE lines of a counter or info family name its sample
  // (x_total, as Prometheus's clients write them), not the family (x).
  bool sample_named = false;
  bool type_first = false;       // TYPE before HELP (OpenMetrics: "SHOULD be TYPE, UNIT, HELP")
  bool help_quotes = false;      // HELP text escapes '"' too (an OpenMetrics escaped-string)
  bool info_type = false;        // an info family is TYPE info (the text format has none: gauge)
  bool float_point = false;      // le="7.0": OpenMetrics' canonical numbers (Go's %g, and ".0")
  // A histogram serves its buckets with a negative le. OpenMetrics 1.0:
  // "Negative threshold buckets MAY be used, but then the Histogram
  // MetricPoint MUST NOT contain a sum value"; there the sum is kept and
  // le="-1" left out, which its cumulative buckets allow (a value below 0
  // is still in le="0" and above).
  bool negative_buckets = false;
  std::string_view end;          // after the last family
};
constexpr std::array kFormats = {
    FormatRow{.content_type = "text/plain; version=0.0.4; charset=utf-8",
              .sample_named = true,
              .negative_buckets = true},
    FormatRow{.content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8",
              .type_first = true,
              .help_quotes = true,
              .info_type = true,
              .float_point = true,
              .end = "# EOF\n"},
};
static_assert(kFormats.size() == static_cast<size_t>(MetricsFormat::OpenMetrics) + 1);

const FormatRow& format_row(MetricsFormat f) { return kFormats[static_cast<size_t>(f)]; }

// A number as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which is
// how Prometheus's own clients write le: the shortest text that reads back
// as v, in exponent form below 1e-4 and from 1e+06 on. `point` adds
// OpenMetrics' ".0" to a number that has neither a point nor an exponent.
std::string go_float(double v, bool point) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buf{};
  char* end = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::scientific).ptr;
  std::string s(buf.data(), end);
  const int exp = std::atoi(s.c_str() + s.find('e') + 1);
  if (exp >= -4 && exp < 6) {
    end = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed).ptr;
    s.assign(buf.data(), end);
  }
  if (point && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A sample value (is_number).
std::string number_text(const Value& v, const FormatRow& format) {
  if (v.kind == Value::Kind::Float) return go_float(v.f, format.float_point);
  if (v.kind == Value::Kind::UInt) return fmt::format("{}", v.u);
  return fmt::format("{}", v.as_i64());
}

// Backslash, newline and (in label values and OpenMetrics HELP) the double
// quote, escaped.
void append_escaped(std::string& out, std::string_view s, bool quotes) {
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// name{labels,extra} value
void append_sample(std::string& out, std::string_view name, const Labels& labels, const Label* extra,
                   std::string_view value) {
  out += name;
  if (!labels.empty() || extra) {
    out += '{';
    const auto label = [&](const Label& l) {
      if (out.back() != '{') out += ',';
      out += l.name;
      out += "=\"";
      append_escaped(out, l.value, true);
      out += '"';
    };
    for (const Label& l : labels) label(l);
    if (extra) label(*extra);
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}


// One series' samples.
void append_series(std::string& out, const MetricFamily& f, const MetricSeries& s, const FormatRow& format) {
  const Aggregate& a = s.value;
  switch (f.type) {
    case MetricType::Counter:
    case MetricType::Gauge:
    case MetricType::Info:
      append_sample(out, f.name + std::string(metric_type_row(f.type).suffix), s.labels, nullptr,
                    number_text(a.value, format));
      return;
    case MetricType::Summary:
      append_sample(out, f.name + "_sum", s.labels, nullptr, number_text(stat_number(a.total, f.value_signed), format));
      append_sample(out, f.name + "_count", s.labels, nullptr, fmt::format("{}", a.count));
      return;
    case MetricType::Histogram: {
      // Cumulative counts at each bucket's largest integer; the buckets
      // without one (lhist()'s last, hist()'s past the int64 range) are in
      // +Inf only.
      const std::string bucket = f.name + "_bucket";
      const size_t n = bucket_count(f);
      uint64_t cumulative = 0;
      for (size_t i = 0; i < n; ++i) {
        if (i < a.buckets.size()) cumulative += a.buckets[i];
        const auto le = bucket_max(i, f.kind, f.hist);
        if (le && (*le >= 0 || format.negative_buckets)) {
          const Label l{"le", go_float(static_cast<double>(*le), format.float_point)};
          append_sample(out, bucket, s.labels, &l, fmt::format("{}", cumulative));
        }
      }
      for (size_t i = n; i < a.buckets.size(); ++i) cumulative += a.buckets[i];
      const Label inf{"le", "+Inf"};
      append_sample(out, bucket, s.labels, &inf, fmt::format("{}", cumulative));
      append_sample(out, f.name + "_sum", s.labels, nullptr, number_text(stat_number(a.sum, f.value_signed), format));
      append_sample(out, f.name + "_count", s.labels, nullptr, fmt::format("{}", cumulative));
      return;
    }
  }
}

// HELP and TYPE lines, then the samples.
std::string family_text(const MetricFamily& f, const FormatRow& format) {
  const MetricTypeRow& t = metric_type_row(f.type);
  const std::string name = f.name + std::string(format.sample_named ? t.suffix : "");
  std::string help = "# HELP " + name + ' ';
  append_escaped(help, f.help, format.help_quotes);
  help += '\n';
  const std::string_view type = f.type == MetricType::Info && !format.info_type ? "gauge" : t.name;
  const std::string type_line = fmt::format("# TYPE {} {}\n", name, type);
  std::string out = format.type_first ? type_line + help : help + type_line;
  for (const MetricSeries& s : f.series) append_series(out, f, s, format);
  return out;
}

}  // namespace

std::string_view metrics_content_type(MetricsFormat format) { return format_row(format).content_type; }

namespace {

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

}  // namespace

MetricsChoice choose_metrics_format(std::string_view accept) {
  enum { kProtobuf, kOpenMetrics, kText };
  std::array<double, 3> weight{-1, -1, -1};  // -1: not named
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    const size_t semi = range.find(';');
    const std::string_view type = trim_blanks(range.substr(0, semi));
    bool proto = false, delimited = false;
    double q = 1;
    for (std::string_view params = semi == std::string_view::npos ? "" : range.substr(semi + 1); !params.empty();) {
      const size_t next = params.find(';');
      const std::string_view param = params.substr(0, next);
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      const size_t eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view name = trim_blanks(param.substr(0, eq));
      std::string_view value = trim_blanks(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      if (same_letters(name, "q")) {
        double v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        q = ec == std::errc() && p == value.data() + value.size() ? std::clamp(v, 0.0, 1.0) : 0;
      } else if (same_letters(name, "proto")) {
        proto = value == "io.prometheus.client.MetricFamily";
      } else if (same_letters(name, "encoding")) {
        delimited = same_letters(value, "delimited");
      }
    }
    int named = -1;
    if (same_letters(type, "application/vnd.google.protobuf") && proto && delimited) named = kProtobuf;
    if (same_letters(type, "application/openmetrics-text")) named = kOpenMetrics;
    if (same_letters(type, "text/plain") || same_letters(type, "text/*") || same_letters(type, "*/*")) named = kText;
    if (named >= 0) weight[static_cast<size_t>(named)] = std::max(weight[static_cast<size_t>(named)], q);
  }
  size_t best = kText;
  for (size_t k : {kOpenMetrics, kProtobuf})
    if (weight[k] > 0 && weight[k] >= weight[best]) best = k;
  return {.protobuf = best == kProtobuf,
          .format = best == kOpenMetrics ? MetricsFormat::OpenMetrics : MetricsFormat::Prometheus};
}

MapMetrics map_metrics(const MapSnapshot& map, MetricsFormat format, uint64_t max_series) {
  MapMetrics m;
  for (const MetricFamily& f : map_metric_families(map, max_series, m.folded))
    if (!f.series.empty()) m.text += family_text(f, format_row(format));
  return m;
}

std::string run_metrics(const RunMetrics& run, MetricsFormat format) {
  std::vector<MetricFamily> families = run_metric_families(run);
  std::stable_sort(families.begin(), families.end(),
                   [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  std::string out;
  for (const MetricFamily& f : families) out += family_text(f, format_row(format));
  return out;
}

MetricsPage metrics_page(const std::vector<MapSnapshot>& maps, const RunMetrics& run, MetricsFormat format,
                         uint64_t max_series) {
  const FormatRow& row = format_row(format);
  MetricFamilies families = page_metric_families(maps, run, max_series);
  MetricsPage page{.series_folded = std::move(families.series_folded), .clashes = std::move(families.clashes)};
  for (const MetricFamily& f : families.families) page.text += family_text(f, row);
  page.text += row.end;
  return page;
}

}  // namespace bpfscope::output
