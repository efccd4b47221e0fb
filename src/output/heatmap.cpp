// Heat maps (--heatmap): the hist() and lhist() maps a run prints per
// interval, one column per print, one row per bucket, the count as colour;
// as an SVG (a panel per map, or per entry of a keyed map, each cell with its
// tooltip) and as terminal text (256-colour Unicode blocks, redrawn as each
// column arrives). Both draw the same HeatSeries and the same colour ramp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "output/histogram.h"
#include "output/output.h"
#include "output/rounding.h"
#include "output/xml.h"

namespace bpfscope::output {

namespace {

// The colour of a count: a yellow-orange-red ramp (ColorBrewer's YlOrRd
// stops) from 1 to the panel's largest count, linear in the count.
struct Rgb {
  int r, g, b;
};
constexpr Rgb kRamp[] = {{255, 255, 178}, {254, 204, 92}, {253, 141, 60}, {240, 59, 32}, {189, 0, 38}};
constexpr Rgb kEmpty = {244, 244, 244};

Rgb ramp(uint64_t count, uint64_t max) {
  if (count == 0 || max == 0) return kEmpty;
  const double t = max == 1 ? 1.0 : static_cast<double>(count - 1) / static_cast<double>(max - 1);
  const double pos = t * (std::size(kRamp) - 1);
  const size_t i = std::min(static_cast<size_t>(pos), std::size(kRamp) - 2);
  const double f = pos - static_cast<double>(i);
  auto mix = [&](int a, int b) { return static_cast<int>(round_to_int64(a + (b - a) * f)); };
  return Rgb{mix(kRamp[i].r, kRamp[i + 1].r), mix(kRamp[i].g, kRamp[i + 1].g), mix(kRamp[i].b, kRamp[i + 1].b)};
}

// The nearest colour of xterm's 6x6x6 cube (indexes 16-231). A channel's
// level is v * 5 / 255 = v / 51 rounded, in integers: floor((2v + 51) / 102)
// rounds halves up, and v / 51 is never a half (that needs 2v = 102k + 51,
// which is odd).
int xterm_colour(Rgb c) {
  auto level = [](int v) { return (2 * v + 51) / 102; };
  return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

// The buckets that have a count in some column, lowest first: the rows.
std::pair<size_t, size_t> row_range(const HeatSeries& s) {
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& col : s.columns)
    for (size_t i = 0; i < col.size(); ++i)
      if (col[i]) lo = std::min(lo, i), hi = std::max(hi, i);
  return {lo, hi};
}

uint64_t largest(const HeatSeries& s) {
  uint64_t m = 0;
  for (const auto& col : s.columns)
    for (uint64_t c : col) m = std::max(m, c);
  return m;
}

uint64_t count_at(const HeatSeries& s, size_t col, size_t row) {
  const auto& c = s.columns[col];
  return row < c.size() ? c[row] : 0;
}

// Seconds since the start, as the axes print them: "5s", "2.5s", "1m30s",
// "1h", "2h5m".
std::string elapsed_text(double secs) {
  if (secs < 0) secs = 0;
  const double whole = round_half_away(secs);
  if (secs >= 60 && std::fabs(secs - whole) < 0.05) {
    const auto s = static_cast<long long>(round_to_int64(secs));
    std::string out = s >= 3600 ? fmt::format("{}h", s / 3600) : "";
    if (s % 3600 >= 60) out += fmt::format("{}m", s % 3600 / 60);
    if (s % 60) out += fmt::format("{}s", s % 60);
    return out;
  }
  if (std::fabs(secs - whole) < 0.05) return fmt::format("{}s", round_to_int64(secs));
  return fmt::format("{:.1f}s", secs);
}

std::string clock_text(double epoch) {
  const auto t = static_cast<time_t>(epoch);
  struct tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

// When the run started, for the time axis: given, or one column's spacing
// before the first column.
double start_of(const HeatSeries& s, double start) {
  if (start > 0 || s.times.empty()) return start;
  const double step = s.times.size() > 1 ? s.times[1] - s.times[0] : 1.0;
  return s.times[0] - (step > 0 ? step : 1.0);
}

// A long run drawn in the SVG's width: `per` consecutive intervals summed
// into each column (1: a column per interval, the series as it is).
// first(c) is when the first interval of column c was printed; the
// series' times are each column's last.
class Binned {
 public:
  Binned(const HeatSeries& in, size_t per) : in_(in), per_(per) {
    if (per <= 1) return;
    HeatSeries& s = summed_.emplace(in);
    const size_t n = (in.columns.size() + per - 1) / per;
    s.columns.assign(n, {});
    s.times.clear();
    for (size_t c = 0; c < in.columns.size(); ++c) {
      auto& col = s.columns[c / per];
      const auto& src = in.columns[c];
      if (col.size() < src.size()) col.resize(src.size(), 0);
      for (size_t i = 0; i < src.size(); ++i) col[i] += src[i];
      if (c < in.times.size()) {
        if (c % per == 0) first_.push_back(in.times[c]);
        if (c % per == per - 1 || c + 1 == in.times.size()) s.times.push_back(in.times[c]);
      }
    }
  }
  const HeatSeries& series() const { return summed_ ? *summed_ : in_; }
  double first(size_t c) const { return summed_ ? first_[c] : in_.times[c]; }
  size_t per() const { return per_; }
  size_t intervals() const { return in_.columns.size(); }  // before binning

 private:
  const HeatSeries& in_;
  size_t per_;
  std::optional<HeatSeries> summed_;
  std::vector<double> first_;
};

constexpr size_t kCellChars = 2;  // terminal characters per column
constexpr size_t kMaxColumns = 500;  // SVG columns, 2 px each at the least
constexpr int kFont = 12;
constexpr double kCharWidth = kFont * 0.6;  // monospace advance
constexpr int kPad = 10;

void append_rgb(std::string& out, Rgb c) { fmt::format_to(std::back_inserter(out), "rgb({},{},{})", c.r, c.g, c.b); }

// The time axis's ticks: {x, seconds since the start}. The step is the
// first of 0.1 s, 0.2 s, 0.5 s, 1 s, 2 s, 5 s, 10 s, 15 s, 30 s, 1 m ... 1 h,
// 2 h, 3 h, 6 h, 12 h, 1 d that puts them 60 px apart or more. Column c
// covers the time from the column before it (the start for the first) to
// times[c], so a tick's x is interpolated in its column.
std::vector<std::pair<double, double>> time_ticks(const std::vector<double>& times, double start, double left,
                                                  int cell_w, size_t cols) {
  std::vector<std::pair<double, double>> ticks;
  const size_t n = std::min(cols, times.size());
  if (n == 0 || times[n - 1] <= start) return ticks;
  const double span = times[n - 1] - start;
  const double secs_per_px = span / (static_cast<double>(n) * cell_w);
  static constexpr double kSteps[] = {0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                                      10800, 21600, 43200, 86400};
  double step = 0;
  for (double st : kSteps)
    if (st >= 60 * secs_per_px) {
      step = st;
      break;
    }
  if (step == 0) step = 86400 * ceil_up(60 * secs_per_px / 86400);
  size_t c = 0;
  for (int k = 0;; ++k) {
    const double t = k * step;
    if (t > span + 1e-9) break;
    while (c < n && times[c] - start < t - 1e-9) ++c;
    if (c == n) break;
    const double from = c ? times[c - 1] - start : 0, to = times[c] - start;
    const double frac = to > from ? std::clamp((t - from) / (to - from), 0.0, 1.0) : 1.0;
    ticks.emplace_back(left + (static_cast<double>(c) + frac) * cell_w, t);
  }
  return ticks;
}

// One panel: the series' title line, the grid with its row labels, the time
// axis and the legend; `y` is its top, and moves to the next panel's.
void append_panel(std::string& out, const Binned& b, const HeatMapOptions& o, int label_chars, int grid_width,
                  int cell_w, double& y) {
  const HeatSeries& s = b.series();
  const auto [lo, hi] = row_range(s);
  const bool empty = lo == SIZE_MAX;
  const size_t rows = empty ? 0 : hi - lo + 1;
  const size_t cols = s.columns.size();
  const int cell_h = rows > 48 ? 8 : rows > 8 ? 16 : 24;
  const uint64_t max = largest(s);
  const double left = kPad + label_chars * kCharWidth + 8;
  const double start = start_of(s, o.start);

  fmt::format_to(std::back_inserter(out), "<g class=\"panel\" data-name=\"");
  append_xml(out, s.name());
  fmt::format_to(std::back_inserter(out), "\" data-columns=\"{}\" data-rows=\"{}\" data-per-column=\"{}\">\n", cols,
                 rows, b.per());
  out += fmt::format("<text class=\"panel-title\" x=\"{}\" y=\"{:.1f}\" font-size=\"14\" font-weight=\"bold\">",
                     kPad, y + 16);
  append_xml(out, s.name());
  out += "</text>\n";
  std::string sub = fmt::format("{} interval{}", b.intervals(), b.intervals() == 1 ? "" : "s");
  if (b.per() > 1) sub += fmt::format(" ({} a column)", b.per());
  if (!s.times.empty())
    sub += fmt::format(", {} to {}", clock_text(b.first(0)), clock_text(s.times.back()));
  sub += empty ? "; no counts" : fmt::format("; largest count in a bucket {}", max);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">", left, y + 16);
  append_xml(out, sub);
  out += "</text>\n";
  y += 26;

  const double grid_top = y;
  const double grid_h = static_cast<double>(rows) * cell_h;
  fmt::format_to(std::back_inserter(out), "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.0f}\" fill=\"",
                 left, grid_top, grid_width, std::max(grid_h, 1.0));
  append_rgb(out, kEmpty);
  out += "\"/>\n";
  // Rows top down: the largest bucket first.
  for (size_t r = 0; r < rows; ++r) {
    const size_t bucket = hi - r;
    const double ry = grid_top + static_cast<double>(r) * cell_h;
    const BucketLabel label = bucket_label(bucket, s.kind, s.hist);
    out += fmt::format("<text class=\"row-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">", left - 6,
                       ry + cell_h / 2.0 + 4);
    if (cell_h >= 12 || r % 4 == 0) append_xml(out, label.range);
    out += "</text>\n";
    for (size_t c = 0; c < cols; ++c) {
      const uint64_t n = count_at(s, c, bucket);
      fmt::format_to(std::back_inserter(out),
                     "<rect class=\"cell\" data-col=\"{}\" data-row=\"{}\" data-count=\"{}\" x=\"{:.1f}\" "
                     "y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"",
                     c, bucket, n, left + static_cast<double>(c) * cell_w, ry, cell_w, cell_h);
      append_rgb(out, ramp(n, max));
      out += "\"><title>";
      // Three lines: the series, when, the bucket and its count.
      append_xml(out, s.name());
      if (c < s.times.size()) {
        out += "&#10;";
        if (b.per() > 1)
          append_xml(out, fmt::format("{} to {} ({} to {})", elapsed_text(b.first(c) - start),
                                      elapsed_text(s.times[c] - start), clock_text(b.first(c)),
                                      clock_text(s.times[c])));
        else
          append_xml(out, fmt::format("{} ({})", elapsed_text(s.times[c] - start), clock_text(s.times[c])));
      }
      out += "&#10;";
      append_xml(out, fmt::format("{}: {}", label.range, n));
      out += "</title></rect>\n";
    }
  }
  y = grid_top + grid_h;

  // The time axis: ticks at round times since the start, at least 60 px
  // apart, each where its time falls inside its column.
  const double axis_y = y;
  fmt::format_to(std::back_inserter(out),
                 "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#444\"/>\n", left, axis_y,
                 left + grid_width);
  for (const auto& [x, secs] : time_ticks(s.times, start, left, cell_w, cols))
    fmt::format_to(std::back_inserter(out),
                   "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n"
                   "<text class=\"time-label\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                   x, axis_y, axis_y + 4, axis_y + 16, elapsed_text(secs));
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">time since start (one column per {})</text>\n",
                     left, axis_y + 32, b.per() > 1 ? fmt::format("{} intervals", b.per()) : "interval");

  // The legend, right of the grid: the ramp from 1 (bottom) to the largest count.
  if (!empty) {
    const double lx = left + grid_width + 20;
    constexpr int kSteps = 8;
    const int kSwatch = std::clamp(static_cast<int>(grid_h - 16) / kSteps, 4, 12);  // within the grid's height
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">count</text>\n", lx, grid_top + 10);
    for (int i = 0; i < kSteps; ++i) {
      const uint64_t n = max <= 1 ? 1 : 1 + (max - 1) * static_cast<uint64_t>(kSteps - 1 - i) / (kSteps - 1);
      const double sy = grid_top + 16 + i * kSwatch;
      fmt::format_to(std::back_inserter(out), "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"{}\" fill=\"",
                     lx, sy, kSwatch);
      append_rgb(out, ramp(n, max));
      out += "\"/>\n";
      if (i == 0 || i == kSteps - 1)
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 20, sy + 10, n);
    }
  }
  out += "</g>\n";
  y = axis_y + 50;
}

}  // namespace

std::string HeatSeries::name() const {
  if (!key) return map;
  return map + "[" + key_label + "]";
}

void HeatMaps::add(const MapSnapshot& map, double time) {
  if (!is_histogram(map.kind)) return;
  // A column more for every series of this map, empty until an entry fills it.
  size_t sibling = SIZE_MAX;
  for (size_t i = 0; i < series_.size(); ++i) {
    HeatSeries& s = series_[i];
    if (s.map != map.name) continue;
    s.times.push_back(time);
    s.columns.emplace_back();
    sibling = i;
  }
  for (const auto& [key, agg] : map.entries) {
    const std::string label = map.keyed ? key_text(key) : "";
    auto it = std::find_if(series_.begin(), series_.end(), [&](const HeatSeries& s) {
      return s.map == map.name && s.key.has_value() == map.keyed && s.key_label == label;
    });
    if (it == series_.end()) {
      // A series that starts late has the same columns, empty before.
      HeatSeries s{.map = map.name, .kind = map.kind, .hist = map.hist};
      if (map.keyed) s.key = key;
      s.key_label = label;
      s.times = sibling == SIZE_MAX ? std::vector<double>{time} : series_[sibling].times;
      s.columns.resize(s.times.size());
      series_.push_back(std::move(s));
      it = series_.end() - 1;
    }
    it->columns.back() = agg.buckets;
  }
}

std::string heatmap_svg(const std::vector<HeatSeries>& series, const HeatMapOptions& o) {
  int label_chars = 8;
  size_t cols = 1;
  for (const auto& s : series) {
    cols = std::max(cols, s.columns.size());
    const auto [lo, hi] = row_range(s);
    if (lo == SIZE_MAX) continue;
    for (size_t b = lo; b <= hi; ++b)
      label_chars = std::max(label_chars, static_cast<int>(bucket_label(b, s.kind, s.hist).range.size()));
  }
  // About 1000 px of grid, a column at least 2 px and at most 40 px wide;
  // a longer run sums as many consecutive intervals into a column as it
  // takes to fit (3,600 intervals: 8 a column).
  const size_t per = (cols + kMaxColumns - 1) / kMaxColumns;
  cols = (cols + per - 1) / per;
  const int cell_w = std::clamp(static_cast<int>(1000 / cols), 2, 40);
  const int grid_width = static_cast<int>(cols) * cell_w;
  const double left = kPad + label_chars * kCharWidth + 8;
  // Wide enough for the titles and a panel's subtitle however few the columns.
  const int width = std::max(static_cast<int>(left) + grid_width + 110, static_cast<int>(left) + 560);

  std::string body;
  double y = 54;
  for (const auto& s : series) append_panel(body, Binned(s, per), o, label_chars, grid_width, cell_w, y);
  if (series.empty()) {
    body += fmt::format("<text x=\"{}\" y=\"{:.1f}\">No hist() or lhist() map was printed during the run.</text>\n",
                        kPad, y + 14);
    y += 40;
  }
  const int height = static_cast<int>(ceil_up(y));

  std::string out;
  out.reserve(body.size() + 2048);
  fmt::format_to(std::back_inserter(out),
                 "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                 "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"{2}\">\n"
                 "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
                 "<text x=\"{3:.1f}\" y=\"26\" text-anchor=\"middle\" font-size=\"17\">",
                 width, height, kFont, width / 2.0);
  append_xml(out, o.title.empty() ? "Latency Heat Map" : o.title);
  out += "</text>\n";
  out += fmt::format("<text x=\"{:.1f}\" y=\"44\" text-anchor=\"middle\" fill=\"#555\">", width / 2.0);
  append_xml(out, "columns: intervals; rows: buckets, largest at the top; colour: count");
  out += "</text>\n";
  out += body;
  out += "</svg>\n";
  return out;
}

std::string heatmap_terminal(const std::vector<HeatSeries>& series, const HeatMapOptions& o, int width) {
  std::string out;
  for (const auto& s : series) {
    const auto [lo, hi] = row_range(s);
    const size_t cols = s.columns.size();
    const uint64_t max = largest(s);
    const double start = start_of(s, o.start);
    size_t label_w = 4;
    if (lo != SIZE_MAX)
      for (size_t b = lo; b <= hi; ++b) label_w = std::max(label_w, bucket_label(b, s.kind, s.hist).range.size());
    // The newest columns that fit, two characters each (a square-ish cell).
    const size_t room = static_cast<size_t>(std::max(10, width - static_cast<int>(label_w) - 3)) / kCellChars;
    const size_t first = cols > room ? cols - room : 0;
    out += s.name();
    out += fmt::format("  {} interval{}", cols, cols == 1 ? "" : "s");
    if (first) out += fmt::format(" (the last {} shown)", cols - first);
    out += lo == SIZE_MAX ? ", no counts\n" : fmt::format(", largest count in a bucket {}\n", max);
    if (lo == SIZE_MAX) continue;
    for (size_t b = hi + 1; b-- > lo;) {
      out += fmt::format("{:>{}} │", bucket_label(b, s.kind, s.hist).range, label_w);
      int current = -1;
      for (size_t c = first; c < cols; ++c) {
        const uint64_t n = count_at(s, c, b);
        if (n == 0) {
          if (current != -1) out += "\x1b[0m", current = -1;
          out += "  ";
          continue;
        }
        const int colour = xterm_colour(ramp(n, max));
        if (colour != current) out += fmt::format("\x1b[38;5;{}m", colour), current = colour;
        out += "██";
      }
      if (current != -1) out += "\x1b[0m";
      out += '\n';
    }
    // The time axis: a label every 5 columns, where it fits.
    out += std::string(label_w + 1, ' ') + "└";
    for (size_t c = first; c < cols; ++c) out += "──";
    out += '\n';
    std::string axis(label_w + 2, ' ');
    for (size_t c = first; c < cols && c < s.times.size(); ++c) {
      const size_t at = label_w + 2 + (c - first) * kCellChars;
      if ((c - first) % 5 != 0 || axis.size() > at) continue;
      axis.resize(at, ' ');
      axis += elapsed_text(s.times[c] - start);
    }
    out += axis + '\n';
    out += std::string(label_w + 2, ' ') + "count 1 ";
    for (uint64_t i = 0; i < 6; ++i) {
      const uint64_t n = max <= 1 ? 1 : 1 + (max - 1) * i / 5;
      out += fmt::format("\x1b[38;5;{}m█\x1b[0m", xterm_colour(ramp(n, max)));
    }
    out += fmt::format(" {}\n", max);
  }
  return out;
}

}  // namespace bpfscope::output
