// bpftrace 0.26 NDJSON output (`-f json`, REFERENCE 6.8): output/json.cpp
// (JsonEmitter, JsonOutput) and types_format.cpp (build_histogram,
// build_linear_histogram, format(BpfMap)).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "output/histogram.h"
#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

// True when a double holds v exactly (bpftrace: T(double(v)) == v), i.e. v
// has at most 53 significant bits.
bool double_exact(uint64_t magnitude) {
  if (magnitude == 0) return true;
  const int width = 64 - __builtin_clzll(magnitude) - __builtin_ctzll(magnitude);
  return width <= 53;
}

std::string json_int(int64_t v) {
  const uint64_t mag = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string s = fmt::format("{}", v);
  return double_exact(mag) ? s : json_string(s);
}

std::string json_uint(uint64_t v) {
  std::string s = fmt::format("{}", v);
  return double_exact(v) ? s : json_string(s);
}

// A map key as a JSON object key: the text form, the outer parentheses of a
// tuple dropped, and every space removed (0.26 erases ' ' from the whole key
// text, including spaces inside string keys).
// Pointers are numbers in JSON, in keys too.
Value without_pointers(Value v) {
  v.pointer = false;
  for (Value& e : v.elems) e = without_pointers(std::move(e));
  return v;
}

std::string json_key(const Value& key) {
  std::string s = to_text(without_pointers(key));
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  std::erase(s, ' ');
  return json_string(s);
}

// One histogram bucket bound as bpftrace labels it: label(i) is the exclusive
// upper bound of bucket i and the lower bound of bucket i + 1.
struct Bucket {
  std::optional<int64_t> min;    // absent for the underflow bucket
  std::optional<int64_t> max;    // absent for the lhist overflow bucket
  std::optional<uint64_t> umin;  // hist lower bounds are unsigned
  std::optional<uint64_t> umax;
};

std::string bucket_json(const std::optional<std::string>& min, const std::optional<std::string>& max,
                        uint64_t count) {
  std::string out = "{";
  if (min) out += "\"min\": " + *min + ", ";
  if (max) out += "\"max\": " + *max + ", ";
  out += fmt::format("\"count\": {}}}", count);
  return out;
}

// First and last non-empty bucket among the first n, or nullopt.
std::optional<std::pair<size_t, size_t>> nonempty_range(const std::vector<uint64_t>& b, size_t n) {
  n = std::min(n, b.size());
  std::optional<std::pair<size_t, size_t>> r;
  for (size_t i = 0; i < n; i++) {
    if (b[i] == 0) continue;
    if (!r) r.emplace(i, i);
    r->second = i;
  }
  return r;
}

int clamp_bits(int bits) { return std::clamp(bits, 0, 5); }

std::string hist_json(const std::vector<uint64_t>& buckets, int bits, uint64_t div) {
  const int k = clamp_bits(bits);
  const auto range = nonempty_range(buckets, hist_bucket_count(k));
  if (!range) return "[]";
  std::string out = "[";
  for (size_t i = range->first; i <= range->second; i++) {
    if (i != range->first) out += ",";
    std::optional<std::string> min;
    std::optional<std::string> max;
    if (i > 0) min = json_uint(hist_label(i - 1, k));
    // max = label - 1 (bpftrace one_less).
    if (auto hi = bucket_max(i, AggKind::Hist, HistParams{.bits = k})) max = json_int(*hi);
    out += bucket_json(min, max, buckets[i] / div);
  }
  return out + "]";
}

std::string lhist_json(const std::vector<uint64_t>& buckets, int64_t lmin, int64_t lmax,
                       int64_t step) {
  if (step <= 0) step = 1;
  if (lmax < lmin) lmax = lmin;
  const auto range = nonempty_range(buckets, lhist_bucket_count(lmin, lmax, step));
  if (!range) return "[]";
  std::string out = "[";
  for (size_t i = range->first; i <= range->second; i++) {
    if (i != range->first) out += ",";
    std::optional<std::string> min;
    std::optional<std::string> max;
    if (i > 0) {
      if (auto lo = lhist_label(i - 1, lmin, lmax, step)) min = json_int(*lo);
    }
    if (auto hi = bucket_max(i, AggKind::LHist, HistParams{.min = lmin, .max = lmax, .step = step}))
      max = json_int(*hi);
    out += bucket_json(min, max, buckets[i]);  // div has no effect on lhist (0.26)
  }
  return out + "]";
}

// The JSON of one entry's value.
std::string aggregate_json(const MapSnapshot& map, const Aggregate& a, uint64_t div) {
  switch (map.kind) {
    case AggKind::Plain:
    case AggKind::Count:
    case AggKind::Sum:
    case AggKind::Min:
    case AggKind::Max:
    case AggKind::Avg:
      return json_value(divide(entry_number(map, a), div));
    case AggKind::Stats:
      return fmt::format("{{\"count\": {}, \"average\": {}, \"total\": {}}}",
                         json_value(stat_number(a.count, map.value_signed)),
                         json_value(divide(average(a, map.value_signed), div)),
                         json_value(stat_number(a.total, map.value_signed)));
    case AggKind::Hist:
      return hist_json(a.buckets, map.hist.bits, div);
    case AggKind::LHist:
      return lhist_json(a.buckets, map.hist.min, map.hist.max, map.hist.step);
    case AggKind::TSeries: return tseries_json(map, a);
  }
  return "null";
}

std::string_view map_type(AggKind kind) {
  switch (kind) {
    case AggKind::Avg:
    case AggKind::Stats:
      return "stats";
    case AggKind::Hist:
    case AggKind::LHist:
      return "hist";
    case AggKind::TSeries: return "tseries";
    case AggKind::Plain:
    case AggKind::Count:
    case AggKind::Sum:
    case AggKind::Min:
    case AggKind::Max:
      break;
  }
  return "map";
}

}  // namespace

std::string map_recording_fields(const MapSnapshot& map, uint64_t top, HistLayout layout) {
  const auto entries = select_entries(map, top);
  std::string out = fmt::format(", \"agg\": \"{}\"", agg_name(map.kind));
  if (map.kind == AggKind::Hist) out += fmt::format(", \"bits\": {}", map.hist.bits);
  if (map.kind == AggKind::LHist)
    out += fmt::format(", \"min\": {}, \"max\": {}, \"step\": {}", map.hist.min, map.hist.max, map.hist.step);
  if (map.kind == AggKind::TSeries)
    out += fmt::format(", \"interval_ns\": {}, \"intervals\": {}, \"tseries_agg\": \"{}\"", map.tseries.interval_ns,
                       map.tseries.intervals, tseries_agg_name(map.tseries.agg));
  if (!map.value_signed) out += ", \"signed\": false";
  if (map.keyed) {
    out += ", \"keys\": [";
    for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + typed_json(entries[i].first);
    out += "]";
  }
  if (map.kind == AggKind::Plain) {
    out += ", \"values\": [";
    for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + typed_json(entries[i].second.value);
    out += "]";
  }
  if (layout == HistLayout::Bcc) out += ", \"layout\": \"bcc\"";
  return out;
}

std::string_view agg_name(AggKind kind) {
  switch (kind) {
    case AggKind::Plain: return "plain";
    case AggKind::Count: return "count";
    case AggKind::Sum: return "sum";
    case AggKind::Min: return "min";
    case AggKind::Max: return "max";
    case AggKind::Avg: return "avg";
    case AggKind::Stats: return "stats";
    case AggKind::Hist: return "hist";
    case AggKind::LHist: return "lhist";
    case AggKind::TSeries: return "tseries";
  }
  return "plain";
}

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) <= 0x1f) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_value(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      return "null";
    case Value::Kind::Int:
      return json_int(v.i);
    case Value::Kind::UInt:
      return json_uint(v.u);
    case Value::Kind::Bool:
      return v.i != 0 ? "true" : "false";
    case Value::Kind::Float: {
      // The shortest text that reads back as the same double, with a ".0"
      // when it has no fraction or exponent (so readers keep it a float);
      // JSON has no NaN or infinity.
      if (!std::isfinite(v.f)) return "null";
      std::string s = fmt::format("{}", v.f);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case Value::Kind::String:
      return json_string(v.s);
    case Value::Kind::Buffer:
      return json_string(buffer_text(v.s, ""));
    case Value::Kind::Array:
    case Value::Kind::Tuple: {
      if (!v.names.empty()) {
        std::string out = "{";
        for (size_t i = 0; i < v.elems.size(); i++)
          out += (i ? ", " : "") + json_string(v.names[i]) + ": " + json_value(v.elems[i]);
        return out + "}";
      }
      std::string out = "[";
      for (size_t i = 0; i < v.elems.size(); i++) {
        if (i != 0) out += ",";
        out += json_value(v.elems[i]);
      }
      return out + "]";
    }
  }
  return "null";
}

std::string json_map(const MapSnapshot& map, uint64_t top, uint64_t div, bool percentiles, bool keep_empty) {
  const auto entries = select_entries(map, top);
  const bool hist = is_histogram(map.kind);
  if (entries.empty() && !(keep_empty && hist)) return "";
  if (div == 0) div = 1;
  std::string data;
  if (entries.empty()) {
    data = map.keyed ? "{}" : "[]";
  } else if (!map.keyed) {
    data = aggregate_json(map, entries.front().second, div);
  } else {
    data = "{";
    for (size_t i = 0; i < entries.size(); i++) {
      if (i != 0) data += ", ";
      data += json_key(entries[i].first) + ": " + aggregate_json(map, entries[i].second, div);
    }
    data += "}";
  }
  std::string extra;
  if (percentiles && hist && !entries.empty()) {
    std::string p;
    if (!map.keyed) {
      p = percentiles_json(estimate_percentiles(map, entries.front().second.buckets));
    } else {
      p = "{";
      for (size_t i = 0; i < entries.size(); i++)
        p += (i ? ", " : "") + json_key(entries[i].first) + ": " +
             percentiles_json(estimate_percentiles(map, entries[i].second.buckets));
      p += "}";
    }
    extra = fmt::format(", \"percentiles\": {{{}: {}}}", json_string(map.name), p);
  }
  return fmt::format("{{\"type\": \"{}\", \"data\": {{{}: {}}}{}}}\n", map_type(map.kind),
                     json_string(map.name), data, extra);
}

std::string record_map(const MapSnapshot& map, uint64_t top, uint64_t div, bool percentiles, HistLayout layout,
                       bool keep_empty) {
  std::string msg = json_map(map, top, div, percentiles, keep_empty);
  return msg.empty() ? msg : with_fields(std::move(msg), map_recording_fields(map, top, layout));
}

std::string json_event(std::string_view type, std::string_view text) {
  return fmt::format("{{\"type\": {}, \"data\": {}}}\n", json_string(type), json_string(text));
}

std::string json_message(std::string_view type, std::string_view msg, std::string_view filename, uint32_t line,
                         uint32_t col) {
  return fmt::format("{{\"type\": {}, \"msg\": {}, \"filename\": {}, \"line\": {}, \"col\": {}}}\n",
                     json_string(type), json_string(msg), json_string(filename), line, col);
}

std::string json_helper_error(std::string_view msg, std::string_view helper, int retcode, std::string_view filename,
                              uint32_t line, uint32_t col) {
  return fmt::format(
      "{{\"type\": \"helper_error\", \"msg\": {}, \"helper\": {}, \"retcode\": {}, \"filename\": {}, "
      "\"line\": {}, \"col\": {}}}\n",
      json_string(msg), json_string(helper), retcode, json_string(filename), line, col);
}

std::string json_named_event(const std::vector<std::string>& names, const std::vector<Value>& values) {
  return fmt::format("{{\"type\": \"event\", \"data\": {}}}\n", json_value(Value::of_record(names, values)));
}

std::string json_value_event(const Value& v) {
  return fmt::format("{{\"type\": \"value\", \"data\": {}}}\n", json_value(v));
}

std::string json_exit(bool gap) {
  return fmt::format("{{\"type\": \"exit\", \"data\": {{\"gap\": {}}}}}\n", gap ? "true" : "false");
}

std::string with_fields(std::string message, std::string_view fields) {
  const size_t close = message.rfind('}');
  if (close != std::string::npos) message.insert(close, fields);
  return message;
}

std::string text_field(std::string_view text) { return ", \"text\": " + json_string(text); }

std::string typed_field(const Value& v) { return ", \"typed\": " + typed_json(v); }

std::string json_with_time(std::string message, double time) {
  return with_fields(std::move(message), fmt::format(", \"time\": {:.6f}", time));
}

std::string json_with_graph(std::string message, GraphKind kind, std::string_view unit, bool drawn_only) {
  std::string fields = fmt::format(", \"graph\": \"{}\"", graph_name(kind));
  if (!unit.empty()) fields += fmt::format(", \"unit\": {}", json_string(unit));
  if (drawn_only) fields += ", \"drawn_only\": true";
  return with_fields(std::move(message), fields);
}

std::string json_attached(uint64_t probes) {
  return fmt::format("{{\"type\": \"attached_probes\", \"count\": {0}, \"data\": {{\"probes\": {0}}}}}\n",
                     probes);
}

std::string json_missed(const std::string& probe, uint64_t firings, const std::string& reason) {
  return fmt::format("{{\"type\": \"missed\", \"data\": {{\"probe\": {}, \"firings\": {}, \"reason\": {}}}}}\n",
                     json_string(probe), firings, json_string(reason));
}

std::string json_lost(uint64_t events) {
  return fmt::format("{{\"type\": \"lost_events\", \"count\": {0}, \"data\": {{\"events\": {0}}}}}\n",
                     events);
}

std::string json_benchmark(std::string_view name, uint64_t average_ns, uint64_t iters) {
  return fmt::format("{{\"type\": \"benchmark_result\", \"data\": {{{}: {{\"average\": {}, \"iters\": {}}}}}}}\n",
                     json_string(name), average_ns, iters);
}

}  // namespace bpfscope::output
