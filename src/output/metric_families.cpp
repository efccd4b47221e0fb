// The metric families of a Prometheus page (issue 19), format-free:
// family names, types, labels, the series guard's folding and the clashes
// between families. metrics.cpp and metrics_proto.cpp write them out.
#include "output/metric_families.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "output/histogram.h"
#include "output/map_common.h"

namespace bpfscope::output {

namespace {

constexpr std::array kTypes = {
    MetricTypeRow{.name = "counter", .suffix = "_total", .samples = {"", "_total", "_created"}},
    MetricTypeRow{.name = "gauge", .samples = {""}},
    MetricTypeRow{.name = "summary", .samples = {"", "_sum", "_count", "_created"}},
    MetricTypeRow{.name = "histogram", .samples = {"", "_bucket", "_sum", "_count", "_created"}},
    MetricTypeRow{.name = "info", .suffix = "_info", .samples = {"", "_info"}},
};
static_assert(kTypes.size() == static_cast<size_t>(MetricType::Info) + 1);

MetricType metric_type(AggKind kind) {
  switch (kind) {
    case AggKind::Count:
    case AggKind::Sum:
      return MetricType::Counter;
    case AggKind::Plain:
    case AggKind::Min:
    case AggKind::Max:
    case AggKind::Avg:
    case AggKind::TSeries:  // the newest interval's value
      return MetricType::Gauge;
    case AggKind::Stats:
      return MetricType::Summary;
    case AggKind::Hist:
    case AggKind::LHist:
      return MetricType::Histogram;
  }
  std::unreachable();
}

// Whether a value is a sample value: integers, bools (1, 0) and floats
// are; strings, stacks, tuples, arrays, buffers and addresses (a pointer
// is no quantity) are not, nor any kind added later until it is listed.
bool is_number(const Value& v) {
  using K = Value::Kind;
  return (v.kind == K::Int || v.kind == K::UInt || v.kind == K::Bool || v.kind == K::Float) && !v.pointer;
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
  // A tool's label names: the first set with as many as the key has fields.
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
bool served(const MapSnapshot& map, const Aggregate& a) {
  if (map.kind == AggKind::TSeries) return is_number(entry_number(map, a));  // none before its first interval
  return map.kind != AggKind::Plain || is_number(a.value);
}

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

// One series of a map's family: a counter's or gauge's value is the number
// print() shows.
MetricSeries map_series(const MapSnapshot& map, MetricType type, Labels labels, const Aggregate& a) {
  MetricSeries s{.labels = std::move(labels), .value = a};
  if (type == MetricType::Counter || type == MetricType::Gauge) s.value.value = entry_number(map, a);
  return s;
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

// The series one key of a map adds to a page: a histogram's buckets (those
// with an le, +Inf), _sum and _count; a stats() map's _sum, _count, _min
// and _max; one for the others.
uint64_t series_per_key(const MapSnapshot& map) {
  switch (metric_type(map.kind)) {
    case MetricType::Histogram: {
      const MetricFamily f{.kind = map.kind, .hist = map.hist};
      uint64_t n = 3;
      for (size_t i = 0; i < bucket_count(f); ++i) n += bucket_max(i, map.kind, map.hist) ? 1 : 0;
      return n;
    }
    case MetricType::Summary: return 4;
    default: return 1;
  }
}

// ---- the run's families ----

// A family the run serves, and how its series come from RunMetrics.
struct RunFamily {
  std::string_view name;
  MetricType type;
  std::string_view help;
  void (*fill)(MetricFamily& f, const RunMetrics& run);
};

void add_series(MetricFamily& f, Labels labels, uint64_t v) {
  f.series.push_back({.labels = std::move(labels), .value = {.value = Value::of_uint(v)}});
}

// Labelled series, sorted by label value (then tool: under `serve`, each
// tool's maps and probes carry its name).
void add_each(MetricFamily& f, std::string_view label, std::vector<RunCount> values) {
  std::stable_sort(values.begin(), values.end(),
                   [](const auto& a, const auto& b) { return std::tie(a.name, a.tool) < std::tie(b.name, b.tool); });
  for (const auto& v : values) {
    Labels labels{{std::string(label), utf8_text(v.name)}};
    if (!v.tool.empty()) labels.push_back({"tool", utf8_text(v.tool)});
    add_series(f, std::move(labels), v.count);
  }
}

constexpr std::array kRunFamilies = {
    RunFamily{"bpfscope_build", MetricType::Info, "The bpfscope build serving these metrics",
              [](MetricFamily& f, const RunMetrics& run) { add_series(f, {{"version", utf8_text(run.version)}}, 1); }},
    RunFamily{"bpfscope_lost_events", MetricType::Counter, "Events lost because the ring buffer was full",
              [](MetricFamily& f, const RunMetrics& run) {
                // One series per tool (`serve`), none labelled for a script;
                // served even before a session has counted anything.
                std::map<std::string, uint64_t> by_tool;
                for (const auto& l : run.lost_events) by_tool[l.tool] += l.count;
                if (by_tool.empty()) by_tool[""] = 0;
                for (const auto& [tool, n] : by_tool)
                  add_series(f, tool.empty() ? Labels{} : Labels{{"tool", utf8_text(tool)}}, n);
              }},
    RunFamily{"bpfscope_map_full", MetricType::Counter, "Map updates that failed because the map was full",
              [](MetricFamily& f, const RunMetrics& run) { add_each(f, "map", run.map_full); }},
    RunFamily{"bpfscope_probe_skipped", MetricType::Counter,
              "Probe firings the kernel did not run the probe's program for",
              [](MetricFamily& f, const RunMetrics& run) { add_each(f, "probe", run.probe_skipped); }},
    RunFamily{"bpfscope_probe", MetricType::Info, "An attached probe and how it is attached",
              [](MetricFamily& f, const RunMetrics& run) {
                auto probes = run.probes;
                std::stable_sort(probes.begin(), probes.end(), [](const RunProbe& a, const RunProbe& b) {
                  return std::tie(a.probe, a.tool) < std::tie(b.probe, b.tool);
                });
                for (const auto& p : probes) {
                  Labels labels{{"probe", utf8_text(p.probe)}, {"mechanism", utf8_text(p.mechanism)}};
                  if (!p.tool.empty()) labels.push_back({"tool", utf8_text(p.tool)});
                  add_series(f, std::move(labels), 1);
                }
              }},
    RunFamily{"bpfscope_series_folded", MetricType::Counter,
              "Map keys folded into the series labelled other=\"true\", over every page served",
              [](MetricFamily& f, const RunMetrics& run) {
                std::vector<RunCount> folded;
                for (const auto& [map, n] : run.series_folded) folded.push_back({map, n});
                add_each(f, "map", folded);
              }},
};

}  // namespace

const MetricTypeRow& metric_type_row(MetricType t) { return kTypes[static_cast<size_t>(t)]; }

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

size_t bucket_count(const MetricFamily& f) {
  if (f.kind == AggKind::Hist) return hist_bucket_count(f.hist.bits);
  return lhist_bucket_count(f.hist.min, std::max(f.hist.max, f.hist.min), std::max<int64_t>(f.hist.step, 1));
}

std::vector<MetricFamily> map_metric_families(const MapSnapshot& map, uint64_t max_series, uint64_t& folded) {
  folded = 0;
  const MetricType type = metric_type(map.kind);
  const std::vector<std::string> names = label_names(map, type);
  std::vector<Entry> entries = unique_entries(map, names);
  if (entries.empty()) return {};

  // The series guard: the keys print(@m, max_series) leaves out (the
  // smallest values; ties in key order) fold into one.
  std::optional<Aggregate> other;
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
  std::vector<MetricFamily> out;
  MetricFamily f{.name = family_name(map.metric ? "@" + map.metric->name : map.name, type),
                 .type = type,
                 .help = help_text(map),
                 .kind = map.kind,
                 .value_signed = map.value_signed,
                 .hist = map.hist};
  each_series([&](Labels labels, const Aggregate& a) { f.series.push_back(map_series(map, type, std::move(labels), a)); });
  out.push_back(std::move(f));
  if (map.kind != AggKind::Stats) return out;
  for (const StatsGauge& g : kStatsGauges) {
    MetricFamily gauge{.name = out[0].name + std::string(g.suffix),
                       .type = MetricType::Gauge,
                       .help = out[0].help + std::string(g.help),
                       .value_signed = map.value_signed};
    // A key whose values zero() reset has none.
    each_series([&](Labels labels, const Aggregate& a) {
      if ((a.*g.value).kind != Value::Kind::None)
        gauge.series.push_back({.labels = std::move(labels), .value = {.value = a.*g.value}});
    });
    out.push_back(std::move(gauge));
  }
  return out;
}

std::vector<MetricFamily> run_metric_families(const RunMetrics& run) {
  std::vector<MetricFamily> out;
  for (const RunFamily& r : kRunFamilies) {
    MetricFamily f{.name = std::string(r.name), .type = r.type, .help = std::string(r.help)};
    r.fill(f, run);
    if (!f.series.empty()) out.push_back(std::move(f));
  }
  return out;
}

MetricFamilies page_metric_families(const std::vector<MapSnapshot>& maps, const RunMetrics& run,
                                    uint64_t max_series) {
  MetricFamilies page;
  // Every sample name a family may use is taken once: the run's first.
  std::set<std::string> taken;
  const auto sample_names = [](std::string_view name, MetricType type) {
    std::vector<std::string> out;
    for (std::string_view s : metric_type_row(type).samples) out.push_back(std::string(name) + std::string(s));
    return out;
  };
  for (const RunFamily& r : kRunFamilies)
    for (std::string& n : sample_names(r.name, r.type)) taken.insert(std::move(n));

  // The series guard's budget is the page's: each map in turn serves the
  // keys whose series fit in what the maps before it left (at least one, and
  // the series of the keys folded into other="true").
  uint64_t left = max_series;
  std::map<std::string, uint64_t> folded(run.series_folded.begin(), run.series_folded.end());
  for (const MapSnapshot& map : maps) {
    uint64_t n = 0;
    const uint64_t per_key = series_per_key(map);
    // Folding keys takes one key's series for other="true".
    uint64_t keys = left / per_key;
    if (map.entries.size() > keys && keys > 0) --keys;
    keys = max_series == 0 ? 0 : std::max<uint64_t>(1, keys);
    std::vector<MetricFamily> fs = map_metric_families(map, keys, n);
    if (max_series != 0) {
      const uint64_t served = fs.empty() ? 0 : fs.front().series.size() * per_key;
      left -= std::min(left, served);
    }
    if (fs.empty()) continue;
    // A map's families (a stats() map's summary and gauges) are served
    // together or not at all.
    std::vector<std::string> names;
    for (const MetricFamily& f : fs)
      for (std::string& s : sample_names(f.name, f.type)) names.push_back(std::move(s));
    if (std::any_of(names.begin(), names.end(), [&](const std::string& s) { return taken.contains(s); })) {
      page.clashes.push_back(map.name);
      continue;
    }
    taken.insert(names.begin(), names.end());
    folded[map.name] += n;
    for (MetricFamily& f : fs)
      if (!f.series.empty()) page.families.push_back(std::move(f));
  }
  page.series_folded.assign(folded.begin(), folded.end());

  RunMetrics r = run;
  r.series_folded = page.series_folded;
  for (MetricFamily& f : run_metric_families(r)) page.families.push_back(std::move(f));
  std::stable_sort(page.families.begin(), page.families.end(),
                   [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  return page;
}

}  // namespace bpfscope::output
