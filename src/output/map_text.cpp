// A map as bpftrace 0.26 prints it at exit and for print(@m, top, div)
// (types_format.cpp format(BpfMap), output/text.cpp TextOutput::map).
#include <algorithm>
#include <unordered_map>
#include <fmt/format.h>

#include "output/histogram.h"
#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

using Entry = std::pair<Value, Aggregate>;

}  // namespace

// Signed value / div with div > 0, safe for any uint64 div.
int64_t div_signed(int64_t v, uint64_t div) {
  if (div > static_cast<uint64_t>(INT64_MAX)) {
    // |v| < div except for INT64_MIN / 2^63.
    return (v == INT64_MIN && div == uint64_t{1} << 63) ? -1 : 0;
  }
  return v / static_cast<int64_t>(div);
}

Value divide(const Value& v, uint64_t div) {
  // An enum value is a name, and a pointer no integer to bpftrace: neither
  // is divided.
  if (div <= 1 || v.is_enum) return v;
  switch (v.kind) {
    case Value::Kind::Int:
      return Value::of_int(div_signed(v.i, div));
    case Value::Kind::UInt:
      // A pointer is not an integer to bpftrace: it is not divided.
      return v.pointer ? v : Value::of_uint(v.u / div);
    case Value::Kind::None:
    case Value::Kind::Bool:
    case Value::Kind::String:
    case Value::Kind::Tuple:
    case Value::Kind::Array:
    case Value::Kind::Buffer:
    case Value::Kind::Float:
      // bpftrace divides only integer values.
      return v;
  }
  return v;
}

namespace {

bool is_integer(const Value& v) {
  return v.kind == Value::Kind::Int || v.kind == Value::Kind::UInt;
}

int64_t as_i64(const Value& v) { return v.as_i64(); }
uint64_t as_u64(const Value& v) { return static_cast<uint64_t>(as_i64(v)); }

}  // namespace

// avg()/stats() average: total / count truncated toward zero, 0 when empty.
// Unsigned maps divide as uint64 (bpftrace util::stats_value<uint64_t>).
Value average(const Aggregate& a, bool is_signed) {
  if (is_signed) return Value::of_int(a.count > 0 ? a.total / a.count : 0);
  const auto count = static_cast<uint64_t>(a.count);
  return Value::of_uint(count > 0 ? static_cast<uint64_t>(a.total) / count : 0);
}

Value stat_number(int64_t n, bool is_signed) {
  return is_signed ? Value::of_int(n) : Value::of_uint(static_cast<uint64_t>(n));
}

Value entry_number(const MapSnapshot& map, const Aggregate& a) {
  if (map.kind == AggKind::TSeries) {
    // The newest interval's value (none before the first write).
    if (a.series.empty() || a.series.rbegin()->first == 0) return Value{};
    const int64_t v = a.series.rbegin()->second;
    return map.value_signed ? Value::of_int(v) : Value::of_uint(static_cast<uint64_t>(v));
  }
  return map.kind == AggKind::Avg ? average(a, map.value_signed) : a.value;
}

namespace {

// `into` becomes `from` where from is the smaller (keep_min) or larger
// value; a value of Kind::None (none recorded) never wins.
void keep_extreme(Value& into, const Value& from, bool keep_min) {
  if (from.kind == Value::Kind::None) return;
  if (into.kind == Value::Kind::None) {
    into = from;
    return;
  }
  const bool u = into.kind == Value::Kind::UInt;
  const bool from_less = u ? from.u < into.u : from.i < into.i;
  if (from_less == keep_min) into = from;
}

}  // namespace

void merge_aggregate(AggKind kind, Aggregate& into, const Aggregate& from) {
  switch (kind) {
    case AggKind::Plain: break;  // the first one stays
    case AggKind::Count:
    case AggKind::Sum:
      if (into.value.kind == Value::Kind::UInt) into.value.u += from.value.u; else into.value.i += from.value.i;
      break;
    case AggKind::Min:
    case AggKind::Max:
      keep_extreme(into.value, from.value, kind == AggKind::Min);
      break;
    case AggKind::Avg:
    case AggKind::Stats:
      into.count = wrapping_add(into.count, from.count);
      into.total = wrapping_add(into.total, from.total);
      keep_extreme(into.min, from.min, true);
      keep_extreme(into.max, from.max, false);
      break;
    case AggKind::Hist:
    case AggKind::LHist:
      if (into.buckets.size() < from.buckets.size()) into.buckets.resize(from.buckets.size());
      for (size_t i = 0; i < from.buckets.size(); ++i) into.buckets[i] += from.buckets[i];
      into.sum = wrapping_add(into.sum, from.sum);
      break;
    case AggKind::TSeries:
      // Intervals the first lacks; where both have one, the first stays.
      into.series.insert(from.series.begin(), from.series.end());
      break;
  }
}

// Key order (REFERENCE 4.3): integers signed (bpftrace sorts every 8-byte
// integer key as int64), strings bytewise, tuples field by field.
int compare_keys(const Value& a, const Value& b) {
  const bool ai = is_integer(a) || a.kind == Value::Kind::Bool;
  const bool bi = is_integer(b) || b.kind == Value::Kind::Bool;
  if (ai && bi) {
    const int64_t x = as_i64(a);
    const int64_t y = as_i64(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  switch (a.kind) {
    case Value::Kind::String:
    case Value::Kind::Buffer: {
      // std::char_traits<char>::compare compares as unsigned char, like memcmp.
      const int c = a.s.compare(b.s);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case Value::Kind::Array:
    case Value::Kind::Tuple: {
      const size_t n = std::min(a.elems.size(), b.elems.size());
      for (size_t i = 0; i < n; i++) {
        if (const int c = compare_keys(a.elems[i], b.elems[i]); c != 0) return c;
      }
      return a.elems.size() < b.elems.size() ? -1 : (a.elems.size() > b.elems.size() ? 1 : 0);
    }
    case Value::Kind::None:
    case Value::Kind::Int:
    case Value::Kind::UInt:
    case Value::Kind::Bool:
    case Value::Kind::Float:
      return 0;
  }
  return 0;
}

namespace {

uint64_t total_count(const Aggregate& a) {
  uint64_t sum = 0;
  for (const uint64_t b : a.buckets) sum += b;
  return sum;
}

template <typename Key>
void sort_by(std::vector<Entry>& entries, Key key) {
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
}

}  // namespace

// Ascending order per REFERENCE 4.3. Ties keep the snapshot's order (bpftrace
// leaves them in hash order; tests avoid ties), except in hist and lhist
// maps, whose ties are in key order: bpftrace gathers their buckets by key
// before sorting by total count.
void sort_entries(const MapSnapshot& map, std::vector<Entry>& entries) {
  const bool is_signed = map.value_signed;
  const auto by_key = [&] {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return compare_keys(a.first, b.first) < 0;
    });
  };
  const auto by_integer_value = [&] {
    if (is_signed) {
      sort_by(entries, [](const Entry& e) { return as_i64(e.second.value); });
    } else {
      sort_by(entries, [](const Entry& e) { return as_u64(e.second.value); });
    }
  };
  switch (map.kind) {
    case AggKind::Plain: {
      // Only integer values sort by value; strings, tuples, bools sort by key.
      const bool all_ints = std::all_of(entries.begin(), entries.end(),
                                        [](const Entry& e) { return is_integer(e.second.value); });
      if (all_ints) {
        by_integer_value();
      } else {
        by_key();
      }
      return;
    }
    case AggKind::Count:
    case AggKind::Sum:
      by_integer_value();
      return;
    case AggKind::Min:
    case AggKind::Max:
      // 0.26 compares min/max values as uint64: negatives sort last.
      sort_by(entries, [](const Entry& e) { return as_u64(e.second.value); });
      return;
    case AggKind::Avg:
    case AggKind::Stats:
      if (is_signed) {
        sort_by(entries, [](const Entry& e) { return average(e.second, true).i; });
      } else {
        sort_by(entries, [](const Entry& e) { return average(e.second, false).u; });
      }
      return;
    case AggKind::Hist:
    case AggKind::LHist:
      by_key();
      sort_by(entries, [](const Entry& e) { return total_count(e.second); });
      return;
    case AggKind::TSeries:
      // bpftrace prints them in the order of the keys' bytes, which the
      // runtime's snapshot already has.
      return;
  }
}

std::vector<Entry> select_entries(const MapSnapshot& map, uint64_t top) {
  std::vector<Entry> entries = map.entries;
  sort_entries(map, entries);
  // bpftrace's print(@t, top) shows every key of a tseries() map.
  if (top != 0 && entries.size() > top && map.kind != AggKind::TSeries) {
    entries.erase(entries.begin(), entries.end() - static_cast<std::ptrdiff_t>(top));
  }
  if (!map.keyed && entries.size() > 1) {
    // A scalar map has one entry; bpftrace prints the first one it reaches.
    entries.resize(1);
  }
  return entries;
}

namespace {

// The text after "@m: " / "@m[k]: " for a one-line value.
std::string value_text(const MapSnapshot& map, const Aggregate& a, uint64_t div) {
  switch (map.kind) {
    case AggKind::Plain:
    case AggKind::Count:
    case AggKind::Sum:
    case AggKind::Min:
    case AggKind::Max:
    case AggKind::Avg:
      return to_text(divide(entry_number(map, a), div));
    case AggKind::Stats:
      // div applies to the average only (0.26).
      return fmt::format("{{ .count = {}, .average = {}, .total = {} }}",
                         to_text(stat_number(a.count, map.value_signed)),
                         to_text(divide(average(a, map.value_signed), div)),
                         to_text(stat_number(a.total, map.value_signed)));
    case AggKind::Hist:
    case AggKind::LHist:
    case AggKind::TSeries: break;
  }
  return "";
}

std::string entry_name(const MapSnapshot& map, const Value& key) {
  if (!map.keyed) return map.name;
  return map.name + "[" + key_text(key) + "]";
}

}  // namespace

namespace {

// "port = 80, backlog_max = 128" for a record key, else the key's text.
std::string key_label(const Value& key) {
  if (key.kind != Value::Kind::Tuple || key.names.size() != key.elems.size()) return key_text(key);
  std::string out;
  for (size_t i = 0; i < key.elems.size(); ++i)
    out += (i ? ", " : "") + key.names[i] + " = " + to_text(key.elems[i]);
  return out;
}

// One hist() entry in the bcc layout: its label line (if any), the log2
// table named after the map, the percentile line, an empty line.
std::string bcc_hist_entry(const MapSnapshot& map, const std::optional<std::string>& label, const Aggregate& agg,
                           bool percentiles) {
  std::string out;
  if (label) out += *label + "\n";
  out += log2_table(agg.buckets, map.name.size() > 1 ? map.name.substr(1) : "value");
  if (percentiles) out += percentiles_text(estimate_percentiles(map, agg.buckets));
  out += '\n';
  return out;
}

}  // namespace

std::string map_text(const MapSnapshot& map, uint64_t top, uint64_t div, HistLayout layout, bool percentiles) {
  std::vector<Entry> entries = select_entries(map, top);
  if (div == 0) div = 1;

  std::string out;
  for (const auto& [key, agg] : entries) {
    switch (map.kind) {
      case AggKind::Hist:
        if (layout == HistLayout::Bcc && map.hist.bits == 0 && div == 1) {
          out += bcc_hist_entry(map, map.keyed ? std::optional(key_label(key)) : std::nullopt, agg, percentiles);
          break;
        }
        // "@h:" / "@h[k]:", the bucket lines, an empty line.
        out += entry_name(map, key) + ":\n";
        out += hist_text_div(agg.buckets, map.hist.bits, div);
        if (percentiles) out += percentiles_text(estimate_percentiles(map, agg.buckets));
        out += '\n';
        break;
      case AggKind::LHist:
        if (layout == HistLayout::Bcc) {
          if (map.keyed) out += key_label(key) + "\n";
          out += linear_table(agg.buckets, map.hist.min, map.hist.max, map.hist.step,
                              map.name.size() > 1 ? map.name.substr(1) : "value");
          if (percentiles) out += percentiles_text(estimate_percentiles(map, agg.buckets));
          break;
        }
        // div has no effect on linear histograms (0.26).
        out += entry_name(map, key) + ":\n";
        out += lhist_text(agg.buckets, map.hist.min, map.hist.max, map.hist.step);
        if (percentiles) out += percentiles_text(estimate_percentiles(map, agg.buckets));
        out += '\n';
        break;
      case AggKind::TSeries: {
        // "@t:" / "@t[k]:", the graph, an empty line after it (none after
        // "<no data>", as bpftrace).
        out += entry_name(map, key) + ":\n";
        const std::string graph = tseries_text(map, agg);
        out += graph;
        if (graph != "<no data>\n") out += '\n';
        break;
      }
      case AggKind::Plain:
      case AggKind::Count:
      case AggKind::Sum:
      case AggKind::Min:
      case AggKind::Max:
      case AggKind::Avg:
      case AggKind::Stats:
        out += entry_name(map, key) + ": " + value_text(map, agg, div) + '\n';
        break;
    }
  }
  return out;
}

// print((@usecs, @AVG)): in the bcc layout, each histogram's label line
// ends with the other maps' values for its key (" [AVG 16]", libbpf-tools'
// tcprtt -e; an unkeyed histogram's label is the notes alone). Otherwise
// the maps one after another, as print() of each would.
std::string hist_notes_text(const MapSnapshot& hist, const std::vector<const MapSnapshot*>& notes, HistLayout layout,
                            bool percentiles) {
  if (layout != HistLayout::Bcc || hist.hist.bits != 0) {
    std::string out = map_text(hist, 0, 0, layout, percentiles);
    for (const MapSnapshot* n : notes) out += map_text(*n, 0, 0, layout, percentiles);
    return out;
  }
  // Each note map's entries by their key's text (its first entry when the
  // histogram has no keys), found once per histogram entry.
  std::vector<std::unordered_map<std::string, const Aggregate*>> by_key(notes.size());
  for (size_t i = 0; i < notes.size(); ++i)
    for (const auto& [k, a] : notes[i]->entries) {
      by_key[i].emplace(hist.keyed ? key_text(k) : "", &a);
      if (!hist.keyed) break;
    }
  std::string out;
  for (const auto& [key, agg] : select_entries(hist, 0)) {
    std::string label = hist.keyed ? key_label(key) : "";
    const std::string text = hist.keyed ? key_text(key) : "";
    for (size_t i = 0; i < notes.size(); ++i) {
      const auto it = by_key[i].find(text);
      if (it == by_key[i].end()) continue;
      label += fmt::format("{}[{} {}]", label.empty() ? "" : " ", notes[i]->name.substr(1),
                           to_text(entry_number(*notes[i], *it->second)));
    }
    out += bcc_hist_entry(hist, label.empty() ? std::nullopt : std::optional(label), agg, percentiles);
  }
  return out;
}

}  // namespace bpfscope::output
