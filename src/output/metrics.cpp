// Maps as Prometheus metric families (issue 19): the text format 0.0.4
// (prometheus/docs content/docs/instrumenting/exposition_formats.md) and
// OpenMetrics 1.0.0 text (OpenObservability/OpenMetrics
// specification/OpenMetrics.md). The two differ in a few details, which are
// the rows of kFormats; everything else is one code path.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include "output/histogram.h"
#include "output/map_common.h"
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

// Metric types. ORDER MetricType.
enum class MetricType { Counter, Gauge, Summary, Histogram, Info };
struct TypeRow {
  std::string_view name;    // TYPE
  std::string_view suffix;  // a one-value sample's suffix (x_total, x_info)
  // The suffixes of the sample names a family x may use ("" is x itself):
  // no two families may share one (OpenMetrics "Suffixes").
  std::array<std::string_view, 5> samples;
};
constexpr std::array kTypes = {
    TypeRow{.name = "counter", .suffix = "_total", .samples = {"", "_total", "_created"}},
    TypeRow{.name = "gauge", .samples = {""}},
    TypeRow{.name = "summary", .samples = {"", "_sum", "_count", "_created"}},
    TypeRow{.name = "histogram", .samples = {"", "_bucket", "_sum", "_count", "_created"}},
    TypeRow{.name = "info", .suffix = "_info", .samples = {"", "_info"}},
};
static_assert(kTypes.size() == static_cast<size_t>(MetricType::Info) + 1);

const TypeRow& type_row(MetricType t) { return kTypes[static_cast<size_t>(t)]; }

MetricType metric_type(AggKind kind) {
  switch (kind) {
    case AggKind::Count:
    case AggKind::Sum:
      return MetricType::Counter;
    case AggKind::Plain:
    case AggKind::Min:
    case AggKind::Max:
    case AggKind::Avg:
      return MetricType::Gauge;
    case AggKind::Stats:
      return MetricType::Summary;
    case AggKind::Hist:
    case AggKind::LHist:
      return MetricType::Histogram;
  }
  std::unreachable();
}

// One family: its samples are rendered, its HELP and TYPE lines when the
// page is put together.
struct Family {
  std::string name;  // the OpenMetrics family name; every sample's name starts with it
  MetricType type = MetricType::Gauge;
  std::string help;
  std::string samples;
};

struct Label {
  std::string name;
  std::string value;  // valid UTF-8, not yet escaped
};
using Labels = std::vector<Label>;

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

// Whether a value is a sample value: integers, bools (1, 0) and floats
// are; strings, stacks, tuples, arrays, buffers and addresses (a pointer
// is no quantity) are not, nor any kind added later until it is listed.
bool is_number(const Value& v) {
  using K = Value::Kind;
  return (v.kind == K::Int || v.kind == K::UInt || v.kind == K::Bool || v.kind == K::Float) && !v.pointer;
}

// A sample value (is_number).
std::string number_text(const Value& v, const FormatRow& format) {
  if (v.kind == Value::Kind::Float) return go_float(v.f, format.float_point);
  if (v.kind == Value::Kind::UInt) return fmt::format("{}", v.u);
  return fmt::format("{}", v.as_i64());
}

// The length of the valid UTF-8 sequence at s[i], 0 if none starts there
// (Go's utf8.ValidString: no overlong forms, surrogates or code points past
// U+10FFFF).
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  uint32_t least = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f, least = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f, least = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b & 0x3f);
  }
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Prometheus rejects a whole page over one label value that is no UTF-8 (a
// comm or a path may hold any byte): such a byte becomes the text \xNN, as
// printf's %r writes it, which keeps two keys apart.
std::string utf8_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = utf8_length(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
    }
  }
  return out;
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

// A one-value sample (counter, gauge, info) of family f.
void add_sample(Family& f, const Labels& labels, std::string_view value) {
  append_sample(f.samples, f.name + std::string(type_row(f.type).suffix), labels, nullptr, value);
}

std::string family_text(const Family& f, const FormatRow& format) {
  const TypeRow& t = type_row(f.type);
  const std::string name = f.name + std::string(format.sample_named ? t.suffix : "");
  std::string help = "# HELP " + name + ' ';
  append_escaped(help, f.help, format.help_quotes);
  help += '\n';
  const std::string_view type = f.type == MetricType::Info && !format.info_type ? "gauge" : t.name;
  const std::string type_line = fmt::format("# TYPE {} {}\n", name, type);
  return (format.type_first ? type_line + help : help + type_line) + f.samples;
}

// ---- maps ----

using Entry = std::pair<Value, Aggregate>;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string sanitized(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (!name_char(c)) c = '_';
  return out;
}

// bpfscope_x for @x, bpfscope_map for @. Colons are legal in metric names
// but reserved for recording rules, so they go too.
std::string family_name(std::string_view map, MetricType type) {
  if (map.starts_with('@')) map.remove_prefix(1);
  std::string out = "bpfscope_" + (map.empty() ? std::string("map") : sanitized(map));
  // A counter's samples add _total: @bytes_total = sum() is bpfscope_bytes_total.
  if (type == MetricType::Counter && out.ends_with("_total")) out.resize(out.size() - 6);
  return out;
}

// "bpfscope map @x (count())", "... (hist(n, 2))", "... (lhist(n, 0, 100, 10))";
// a tool's own text for its maps.
std::string help_text(const MapSnapshot& map) {
  if (map.metric && !map.metric->help.empty()) return map.metric->help;
  if (map.kind == AggKind::Plain) return "bpfscope map " + map.name;
  std::string agg = fmt::format("{}()", agg_name(map.kind));
  if (map.kind == AggKind::Hist && map.hist.bits > 0) agg = fmt::format("hist(n, {})", map.hist.bits);
  if (map.kind == AggKind::LHist)
    agg = fmt::format("lhist(n, {}, {}, {})", map.hist.min, map.hist.max, map.hist.step);
  return fmt::format("bpfscope map {} ({})", map.name, agg);
}

// The key's fields: a record's or tuple's elements, or the key itself.
std::span<const Value> key_fields(const Value& key) {
  if (key.kind == Value::Kind::Tuple) return key.elems;
  return std::span(&key, 1);
}

// The label names of a map's keys (every key of a map has the same shape).
std::vector<std::string> label_names(const MapSnapshot& map, MetricType type) {
  std::vector<std::string> names;
  if (!map.keyed || map.entries.empty()) return names;
  const Value& key = map.entries.front().first;
  const size_t n = key_fields(key).size();
  const std::vector<std::string>* tool_labels = nullptr;
  if (map.metric)
    for (const auto& set : map.metric->labels)
      if (set.size() == n && !tool_labels) tool_labels = &set;
  for (size_t i = 0; i < n; ++i) {
    std::string name;
    if (tool_labels) {
      name = sanitized((*tool_labels)[i]);
    } else if (key.kind != Value::Kind::Tuple) {
      name = "key";
    } else if (key.names.size() == n) {
      name = sanitized(key.names[i]);
    } else {
      name = fmt::format("key{}", i);
    }
    // Names the formats reserve ("__" and, in OpenMetrics, any leading '_'),
    // the label of the folded series, and the labels a histogram or summary
    // adds to its samples.
    if (name.empty() || name[0] == '_' || (name[0] >= '0' && name[0] <= '9') || name == "other" ||
        (type == MetricType::Histogram && name == "le") || (type == MetricType::Summary && name == "quantile"))
      name = "key_" + name;
    while (std::find(names.begin(), names.end(), name) != names.end()) name += '_';
    names.push_back(std::move(name));
  }
  return names;
}

std::string label_text(const Value& v) {
  return utf8_text(v.stack != Value::StackOf::None ? folded_stack(v) : to_text(v));
}

Labels key_labels(const Value& key, const std::vector<std::string>& names) {
  Labels labels;
  const std::span<const Value> fields = key_fields(key);
  for (size_t i = 0; i < names.size() && i < fields.size(); ++i) labels.push_back({names[i], label_text(fields[i])});
  return labels;
}

// Whether an entry has something to serve: an integer map's value must be
// a number.
bool served(const MapSnapshot& map, const Aggregate& a) { return map.kind != AggKind::Plain || is_number(a.value); }

// The entries served, one per label set (keys whose labels read alike
// merged), in key order.
std::vector<Entry> unique_entries(const MapSnapshot& map, const std::vector<std::string>& names) {
  std::vector<Entry> out;
  std::unordered_map<std::string, size_t> seen;
  for (const auto& [key, agg] : map.entries) {
    if (!served(map, agg)) continue;
    std::string id;
    for (const Label& l : key_labels(key, names)) id += fmt::format("{}:{};", l.value.size(), l.value);
    const auto [it, added] = seen.try_emplace(std::move(id), out.size());
    if (added) {
      out.emplace_back(key, agg);
    } else {
      merge_aggregate(map.kind, out[it->second].second, agg);
    }
    if (!map.keyed) break;  // a scalar map has one entry
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Entry& a, const Entry& b) { return compare_keys(a.first, b.first) < 0; });
  return out;
}

size_t bucket_count(const MapSnapshot& map) {
  if (map.kind == AggKind::Hist) return hist_bucket_count(map.hist.bits);
  return lhist_bucket_count(map.hist.min, std::max(map.hist.max, map.hist.min), std::max<int64_t>(map.hist.step, 1));
}

// One series: the samples of one key (or of the folded keys).
void append_series(Family& f, const MapSnapshot& map, const Labels& labels, const Aggregate& a,
                   const FormatRow& format) {
  switch (f.type) {
    case MetricType::Counter:
    case MetricType::Gauge:
    case MetricType::Info:
      add_sample(f, labels, number_text(entry_number(map, a), format));
      return;
    case MetricType::Summary:
      append_sample(f.samples, f.name + "_sum", labels, nullptr,
                    number_text(stat_number(a.total, map.value_signed), format));
      append_sample(f.samples, f.name + "_count", labels, nullptr, fmt::format("{}", a.count));
      return;
    case MetricType::Histogram: {
      // Cumulative counts at each bucket's largest integer; the buckets
      // without one (lhist()'s last, hist()'s past the int64 range) are in
      // +Inf only.
      const std::string bucket = f.name + "_bucket";
      const size_t n = bucket_count(map);
      uint64_t cumulative = 0;
      for (size_t i = 0; i < n; ++i) {
        if (i < a.buckets.size()) cumulative += a.buckets[i];
        const auto le = bucket_max(i, map.kind, map.hist);
        if (le && (*le >= 0 || format.negative_buckets)) {
          const Label l{"le", go_float(static_cast<double>(*le), format.float_point)};
          append_sample(f.samples, bucket, labels, &l, fmt::format("{}", cumulative));
        }
      }
      for (size_t i = n; i < a.buckets.size(); ++i) cumulative += a.buckets[i];
      const Label inf{"le", "+Inf"};
      append_sample(f.samples, bucket, labels, &inf, fmt::format("{}", cumulative));
      append_sample(f.samples, f.name + "_sum", labels, nullptr,
                    number_text(stat_number(a.sum, map.value_signed), format));
      append_sample(f.samples, f.name + "_count", labels, nullptr, fmt::format("{}", cumulative));
      return;
    }
  }
}

// A stats() map's min and max: gauge families beside its summary, which
// may hold only quantiles, _sum and _count (OpenMetrics 1.0, "Summary").
struct StatsGauge {
  std::string_view suffix;  // of the summary's name
  std::string_view help;    // after the summary's HELP
  Value Aggregate::*value;
};
constexpr std::array kStatsGauges = {
    StatsGauge{"_min", ", the smallest value", &Aggregate::min},
    StatsGauge{"_max", ", the largest value", &Aggregate::max},
};

struct MapFamily {
  // The map's family first, then a stats() map's gauges (which may have no
  // samples: no key has a value yet). Empty: nothing to serve.
  std::vector<Family> families;
  uint64_t folded = 0;
};

MapFamily map_family(const MapSnapshot& map, const FormatRow& format, uint64_t max_series) {
  const MetricType type = metric_type(map.kind);
  const std::vector<std::string> names = label_names(map, type);
  std::vector<Entry> entries = unique_entries(map, names);
  if (entries.empty()) return {};

  // The series guard: the keys print(@m, max_series) leaves out (the
  // smallest values; ties in key order) fold into one.
  std::optional<Aggregate> other;
  uint64_t folded = 0;
  if (max_series != 0 && entries.size() > max_series) {
    sort_entries(map, entries);
    folded = entries.size() - max_series;
    other = entries.front().second;
    for (size_t i = 1; i < folded; ++i) merge_aggregate(map.kind, *other, entries[i].second);
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(folded));
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return compare_keys(a.first, b.first) < 0; });
  }

  // Every series: each key's, then the folded keys' (an integer map's
  // folded keys have no value that stands for them all).
  const auto each_series = [&](const auto& add) {
    for (const auto& [key, agg] : entries) add(key_labels(key, names), agg);
    if (other && map.kind != AggKind::Plain) add(Labels{{"other", "true"}}, *other);
  };
  MapFamily out{.folded = folded};
  Family f{.name = family_name(map.metric ? "@" + map.metric->name : map.name, type), .type = type,
           .help = help_text(map)};
  each_series([&](const Labels& labels, const Aggregate& a) { append_series(f, map, labels, a, format); });
  out.families.push_back(std::move(f));
  if (map.kind != AggKind::Stats) return out;
  for (const StatsGauge& g : kStatsGauges) {
    Family gauge{.name = out.families[0].name + std::string(g.suffix),
                 .type = MetricType::Gauge,
                 .help = out.families[0].help + std::string(g.help)};
    // A key whose values zero() reset has none.
    each_series([&](const Labels& labels, const Aggregate& a) {
      if ((a.*g.value).kind != Value::Kind::None) add_sample(gauge, labels, number_text(a.*g.value, format));
    });
    out.families.push_back(std::move(gauge));
  }
  return out;
}

// The families' text, those without samples left out.
std::string families_text(const std::vector<Family>& families, const FormatRow& format) {
  std::string out;
  for (const Family& f : families)
    if (!f.samples.empty()) out += family_text(f, format);
  return out;
}

// ---- the run's families ----

// A family the run serves, and how its samples come from RunMetrics.
struct RunFamily {
  std::string_view name;
  MetricType type;
  std::string_view help;
  void (*fill)(Family& f, const RunMetrics& run);
};

// Labelled samples, sorted by label value (then tool).
void add_each(Family& f, std::string_view label, std::vector<RunCount> values) {
  std::stable_sort(values.begin(), values.end(),
                   [](const auto& a, const auto& b) { return std::tie(a.name, a.tool) < std::tie(b.name, b.tool); });
  for (const auto& v : values) {
    Labels labels{{std::string(label), utf8_text(v.name)}};
    if (!v.tool.empty()) labels.push_back({"tool", utf8_text(v.tool)});
    add_sample(f, labels, fmt::format("{}", v.count));
  }
}

constexpr std::array kRunFamilies = {
    RunFamily{"bpfscope_build", MetricType::Info, "The bpfscope build serving these metrics",
              [](Family& f, const RunMetrics& run) { add_sample(f, {{"version", utf8_text(run.version)}}, "1"); }},
    RunFamily{"bpfscope_lost_events", MetricType::Counter, "Events lost because the ring buffer was full",
              [](Family& f, const RunMetrics& run) { add_sample(f, {}, fmt::format("{}", run.lost_events)); }},
    RunFamily{"bpfscope_map_full", MetricType::Counter, "Map updates that failed because the map was full",
              [](Family& f, const RunMetrics& run) { add_each(f, "map", run.map_full); }},
    RunFamily{"bpfscope_probe_skipped", MetricType::Counter,
              "Probe firings the kernel did not run the probe's program for",
              [](Family& f, const RunMetrics& run) { add_each(f, "probe", run.probe_skipped); }},
    RunFamily{"bpfscope_probe", MetricType::Info, "An attached probe and how it is attached",
              [](Family& f, const RunMetrics& run) {
                auto probes = run.probes;
                std::stable_sort(probes.begin(), probes.end(), [](const RunProbe& a, const RunProbe& b) {
                  return std::tie(a.probe, a.tool) < std::tie(b.probe, b.tool);
                });
                for (const auto& p : probes) {
                  Labels labels{{"probe", utf8_text(p.probe)}, {"mechanism", utf8_text(p.mechanism)}};
                  if (!p.tool.empty()) labels.push_back({"tool", utf8_text(p.tool)});
                  add_sample(f, labels, "1");
                }
              }},
    RunFamily{"bpfscope_series_folded", MetricType::Counter,
              "Map keys folded into the series labelled other=\"true\", over every page served",
              [](Family& f, const RunMetrics& run) {
                std::vector<RunCount> folded;
                for (const auto& [map, n] : run.series_folded) folded.push_back({map, n});
                add_each(f, "map", folded);
              }},
};

std::vector<Family> run_families(const RunMetrics& run) {
  std::vector<Family> out;
  for (const RunFamily& r : kRunFamilies) {
    Family f{.name = std::string(r.name), .type = r.type, .help = std::string(r.help)};
    r.fill(f, run);
    if (!f.samples.empty()) out.push_back(std::move(f));
  }
  return out;
}

std::string page_text(std::vector<Family> families, const FormatRow& format) {
  std::stable_sort(families.begin(), families.end(), [](const Family& a, const Family& b) { return a.name < b.name; });
  return families_text(families, format);
}

}  // namespace

std::string_view metrics_content_type(MetricsFormat format) { return format_row(format).content_type; }

MapMetrics map_metrics(const MapSnapshot& map, MetricsFormat format, uint64_t max_series) {
  const FormatRow& row = format_row(format);
  MapFamily m = map_family(map, row, max_series);
  return {families_text(m.families, row), m.folded};
}

std::string run_metrics(const RunMetrics& run, MetricsFormat format) {
  return page_text(run_families(run), format_row(format));
}

MetricsPage metrics_page(const std::vector<MapSnapshot>& maps, const RunMetrics& run, MetricsFormat format,
                         uint64_t max_series) {
  const FormatRow& row = format_row(format);
  MetricsPage page;
  // Every sample name a family may use is taken once: the run's first.
  std::set<std::string> taken;
  const auto sample_names = [](std::string_view name, MetricType type) {
    std::vector<std::string> out;
    for (std::string_view s : type_row(type).samples) out.push_back(std::string(name) + std::string(s));
    return out;
  };
  for (const RunFamily& r : kRunFamilies)
    for (std::string& n : sample_names(r.name, r.type)) taken.insert(std::move(n));

  std::vector<Family> families;
  std::map<std::string, uint64_t> folded(run.series_folded.begin(), run.series_folded.end());
  for (const MapSnapshot& map : maps) {
    MapFamily m = map_family(map, row, max_series);
    if (m.families.empty()) continue;
    // A map's families (a stats() map's summary and gauges) are served
    // together or not at all.
    std::vector<std::string> names;
    for (const Family& f : m.families)
      for (std::string& n : sample_names(f.name, f.type)) names.push_back(std::move(n));
    if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return taken.contains(n); })) {
      page.clashes.push_back(map.name);
      continue;
    }
    taken.insert(names.begin(), names.end());
    folded[map.name] += m.folded;
    for (Family& f : m.families) families.push_back(std::move(f));
  }
  page.series_folded.assign(folded.begin(), folded.end());

  RunMetrics r = run;
  r.series_folded = page.series_folded;
  for (Family& f : run_families(r)) families.push_back(std::move(f));
  page.text = page_text(std::move(families), row);
  page.text += row.end;
  return page;
}

}  // namespace bpfscope::output
