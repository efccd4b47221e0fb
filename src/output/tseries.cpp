// tseries() maps: the kernel's per-CPU intervals reduced to one value per
// epoch, and the time-series graph and JSON that bpftrace 0.26 prints
// (its src/util/tseries.cpp, types_format.cpp and output/text.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>

#include "output/map_common.h"
#include "output/output.h"

namespace bpfscope::output {

// A named namespace: a unity build puts this file's helpers beside other
// files' anonymous ones.
namespace tseries_detail {
namespace {

// One interval's record in the kernel: {value, meta, epoch}. meta is the
// time of the last write (Last), the count (Avg) or "set" (Min, Max).
template <typename T>
struct Slot {
  T val;
  T meta;
  uint64_t epoch;
};

template <typename T>
Slot<T> slot_at(const uint8_t* p) {
  Slot<T> s;
  std::memcpy(&s.val, p, 8);
  std::memcpy(&s.meta, p + 8, 8);
  std::memcpy(&s.epoch, p + 16, 8);
  return s;
}

// The CPUs' copies of interval `i` combined: those of the same epoch
// merge by the aggregation, and the latest epoch's value is the
// interval's. {0, 0} when no CPU wrote it (bpftrace keeps that too).
template <typename T>
std::pair<uint64_t, int64_t> reduce_interval(TSeriesAgg agg, const uint8_t* value, int ncpus, uint32_t stride,
                                             uint32_t i) {
  std::map<uint64_t, Slot<T>> by_epoch;
  uint64_t latest = 0;
  for (int c = 0; c < ncpus; ++c) {
    const Slot<T> v = slot_at<T>(value + static_cast<size_t>(c) * stride + static_cast<size_t>(i) * kTSeriesSlotSize);
    if (v.epoch == 0) continue;
    latest = std::max(latest, v.epoch);
    auto [it, added] = by_epoch.try_emplace(v.epoch, v);
    if (added) continue;
    Slot<T>& cur = it->second;
    switch (agg) {
      case TSeriesAgg::Last:
        if (v.meta > cur.meta) cur = v;
        break;
      case TSeriesAgg::Avg:
        cur.val = static_cast<T>(static_cast<uint64_t>(cur.val) + static_cast<uint64_t>(v.val));
        cur.meta = static_cast<T>(static_cast<uint64_t>(cur.meta) + static_cast<uint64_t>(v.meta));
        break;
      case TSeriesAgg::Min: cur.val = std::min(cur.val, v.val); break;
      case TSeriesAgg::Max: cur.val = std::max(cur.val, v.val); break;
      case TSeriesAgg::Sum:
        cur.val = static_cast<T>(static_cast<uint64_t>(cur.val) + static_cast<uint64_t>(v.val));
        break;
    }
  }
  if (latest == 0) return {0, 0};
  Slot<T>& s = by_epoch[latest];
  if (agg == TSeriesAgg::Avg && s.meta != 0) s.val /= s.meta;
  return {latest, static_cast<int64_t>(s.val)};
}

// An entry's points in the map's window: from its first interval there
// (the window's last one when it has none) to the newest interval of any
// key; std::nullopt where it has no value.
struct Point {
  uint64_t epoch;
  std::optional<int64_t> value;
};

std::vector<Point> points(const MapSnapshot& map, const Aggregate& a) {
  uint64_t last = 0;
  for (const auto& [key, e] : map.entries)
    if (!e.series.empty()) last = std::max(last, e.series.rbegin()->first);
  const uint64_t first = last - map.tseries.intervals + 1;  // wraps near epoch 0 (a zeroed map): no points
  std::vector<Point> out;
  if (first > last) return out;
  uint64_t from = last;
  for (const auto& [epoch, v] : a.series)
    if (epoch >= first) from = std::min(from, epoch);
  for (uint64_t epoch = from;; ++epoch) {
    const auto it = a.series.find(epoch);
    out.push_back({epoch, it == a.series.end() ? std::nullopt : std::optional(it->second)});
    if (epoch == last) break;
  }
  return out;
}

Value number(int64_t v, bool is_signed) {
  return is_signed ? Value::of_int(v) : Value::of_uint(static_cast<uint64_t>(v));
}

std::string number_text(std::optional<int64_t> v, bool is_signed) {
  return v ? to_text(number(*v, is_signed)) : "null";
}

// a - b as bpftrace's graph measures it (int64, unsigned values as such).
int64_t distance(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

bool less(int64_t a, int64_t b, bool is_signed) {
  return is_signed ? a < b : static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
}

// The start of interval `epoch` in ns since the Unix epoch (TAI-based, as
// bpftrace's), split into seconds and the ns after them.
std::pair<time_t, uint64_t> start_of(const MapSnapshot& map, uint64_t epoch) {
  const uint64_t ns = epoch * map.tseries.interval_ns;
  return {static_cast<time_t>(ns / 1'000'000'000), ns % 1'000'000'000};
}

}  // namespace
}  // namespace tseries_detail

using namespace tseries_detail;

std::map<uint64_t, int64_t> tseries_of(const TSeriesParams& p, bool is_signed, const uint8_t* value, int ncpus,
                                       uint32_t stride) {
  std::map<uint64_t, int64_t> out;
  for (uint32_t i = 0; i < p.intervals; ++i)
    out.insert(is_signed ? reduce_interval<int64_t>(p.agg, value, ncpus, stride, i)
                         : reduce_interval<uint64_t>(p.agg, value, ncpus, stride, i));
  return out;
}

std::string tseries_text(const MapSnapshot& map, const Aggregate& a) {
  constexpr int kWidth = 53;    // the graph's columns, its two edges included
  constexpr int kPadding = 21;  // the header's field for the smallest value
  const std::vector<Point> pts = points(map, a);
  if (pts.empty()) return "<no data>\n";
  const bool s = map.value_signed;

  std::optional<int64_t> lo = pts.front().value, hi = pts.front().value;
  for (const Point& p : pts) {
    if (!p.value) continue;
    if (less(*p.value, *lo, s)) lo = p.value;
    if (less(*hi, *p.value, s)) hi = p.value;
  }
  if (lo == hi && lo) {
    // Room on both sides of a flat line, unless at the type's limit.
    if (s ? *lo != std::numeric_limits<int64_t>::min() : *lo != 0) --*lo;
    if (s ? *hi != std::numeric_limits<int64_t>::max() : static_cast<uint64_t>(*hi) != ~0ull) ++*hi;
  }

  // The time column: hh:mm:ss and the sub-second digits the interval needs.
  // Its width counts the digits, not the unit's name ("hh:mm:ss.ms" is 11
  // wide, the times 12).
  const uint64_t step =
      (pts.back().epoch - pts.front().epoch) * map.tseries.interval_ns / (pts.size() > 1 ? pts.size() - 1 : 1);
  int digits = 0;
  std::string head = "hh:mm:ss";
  if (step < 1'000'000'000) {
    digits = step >= 1'000'000 ? 3 : step >= 1'000 ? 6 : 9;
    head += digits == 3 ? ".ms" : digits == 6 ? ".\u03bcs" : ".ns";
  }
  const size_t time_size = 8 + (digits ? 1 + digits : 0);
  const std::string lo_text = number_text(lo, s), hi_text = number_text(hi, s);
  const std::string scale = fmt::format("{:<{}}{:>{}}\n", lo_text, kPadding, hi_text, kWidth - kPadding);

  std::string out = std::string(time_size + 1, ' ') + scale;
  out += head + std::string(head.size() < time_size + 1 ? time_size + 1 - head.size() : 0, ' ');
  out += "|" + std::string(kWidth - 2, '_') + "|\n";

  int zero = 0;
  if (s && lo && hi && distance(*lo, 0) < 0 && distance(0, *hi) < 0)
    zero = static_cast<int>(static_cast<float>(kWidth) * static_cast<float>(distance(*lo, 0)) /
                            static_cast<float>(distance(*lo, *hi)));
  for (const Point& p : pts) {
    const auto [sec, ns] = start_of(map, p.epoch);
    struct tm tm = {};
    localtime_r(&sec, &tm);
    char hms[16];
    std::strftime(hms, sizeof hms, "%H:%M:%S", &tm);
    out += hms;
    if (digits == 3) out += fmt::format(".{:03}", ns / 1'000'000);
    if (digits == 6) out += fmt::format(".{:06}", ns / 1'000);
    if (digits == 9) out += fmt::format(".{:09}", ns);
    out += ' ';
    std::string line(kWidth, ' ');
    line.front() = '|';
    line.back() = '|';
    if (zero > 0) line[zero] = '.';
    if (!p.value) {
      out += line + " -\n";
      continue;
    }
    int at = kWidth / 2;
    if (lo != hi)
      at = static_cast<int>(static_cast<float>(kWidth - 1) * static_cast<float>(distance(*lo, *p.value)) /
                            static_cast<float>(distance(*lo, *hi)));
    line[std::clamp(at, 0, kWidth - 1)] = '*';
    out += line + " " + number_text(p.value, s) + "\n";
  }
  std::string bottom(kWidth, '_');
  bottom.front() = 'v';
  bottom.back() = 'v';
  out += std::string(time_size, ' ') + " " + bottom + "\n";
  out += std::string(time_size, ' ') + " " + scale;
  return out;
}

std::string_view tseries_agg_name(TSeriesAgg agg) {
  switch (agg) {
    case TSeriesAgg::Last: return "last";
    case TSeriesAgg::Avg: return "avg";
    case TSeriesAgg::Max: return "max";
    case TSeriesAgg::Min: return "min";
    case TSeriesAgg::Sum: return "sum";
  }
  return "last";
}

std::optional<TSeriesAgg> tseries_agg_of(std::string_view name) {
  for (TSeriesAgg a : {TSeriesAgg::Last, TSeriesAgg::Avg, TSeriesAgg::Max, TSeriesAgg::Min, TSeriesAgg::Sum})
    if (tseries_agg_name(a) == name) return a;
  return std::nullopt;
}

std::string tseries_json(const MapSnapshot& map, const Aggregate& a) {
  std::string out = "[";
  bool first = true;
  for (const Point& p : points(map, a)) {
    if (!p.value) continue;
    const auto [sec, ns] = start_of(map, p.epoch);
    struct tm tm = {};
    gmtime_r(&sec, &tm);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    out += fmt::format("{}{{\"interval_start\":\"{}.{:09}\",\"value\":{}}}", first ? "" : ",", date, ns,
                       number_text(p.value, map.value_signed));
    first = false;
  }
  return out + "]";
}

}  // namespace bpfscope::output
