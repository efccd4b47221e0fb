// Heat maps (--heatmap): series built from the maps printed per interval,
// and the SVG and terminal drawings read back cell by cell.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;

MapSnapshot hist_map(std::string name, std::vector<uint64_t> b) {
  return scalar(std::move(name), AggKind::Hist, buckets(std::move(b)));
}

struct Cell {
  int col = 0, row = 0;
  uint64_t count = 0;
  double x = 0, y = 0, w = 0;
  std::string fill, title;
};

std::vector<Cell> cells_of(const std::string& svg) {
  std::vector<Cell> out;
  for (size_t at = svg.find("<rect class=\"cell\""); at != std::string::npos;
       at = svg.find("<rect class=\"cell\"", at + 1)) {
    Cell c;
    c.col = std::stoi(attr(svg, at, "data-col"));
    c.row = std::stoi(attr(svg, at, "data-row"));
    c.count = std::stoull(attr(svg, at, "data-count"));
    c.x = std::stod(attr(svg, at, "x"));
    c.y = std::stod(attr(svg, at, "y"));
    c.w = std::stod(attr(svg, at, "width"));
    c.fill = attr(svg, at, "fill");
    const size_t t = svg.find("<title>", at) + 7;
    c.title = svg.substr(t, svg.find("</title>", t) - t);
    out.push_back(c);
  }
  return out;
}

TEST(HeatMaps, OneColumnPerPrintAndKeysJoinLate) {
  HeatMaps h;
  h.add(keyed("@us", AggKind::Hist, {{S("sda"), buckets({0, 1})}}), 100);
  h.add(keyed("@us", AggKind::Hist, {{S("sda"), buckets({0, 2})}, {S("sdb"), buckets({3})}}), 101);
  h.add(scalar("@c", AggKind::Count, val(I(1))), 102);  // not a histogram: left out
  h.add(keyed("@us", AggKind::Hist, {}), 102);             // printed empty: a column of nothing
  ASSERT_EQ(h.series().size(), 2u);
  const HeatSeries& a = h.series()[0];
  const HeatSeries& b = h.series()[1];
  EXPECT_EQ(a.name(), "@us[sda]");
  EXPECT_EQ(b.name(), "@us[sdb]");
  EXPECT_EQ(a.times, (std::vector<double>{100, 101, 102}));
  EXPECT_EQ(b.times, a.times);
  EXPECT_EQ(a.columns, (std::vector<std::vector<uint64_t>>{{0, 1}, {0, 2}, {}}));
  EXPECT_EQ(b.columns, (std::vector<std::vector<uint64_t>>{{}, {3}, {}}));
}

TEST(HeatMaps, SvgHasACellPerBucketAndColumnWithItsCount) {
  HeatMaps h;
  // hist() buckets 3..5 hold [2, 4), [4, 8), [8, 16).
  h.add(hist_map("@lat", {0, 0, 0, 5, 0, 0}), 1000);
  h.add(hist_map("@lat", {0, 0, 0, 0, 0, 9}), 1001);
  h.add(hist_map("@lat", {0, 0, 0, 1, 2, 0}), 1002);
  const std::string svg = heatmap_svg(h.series(), HeatMapOptions{.title = "disk <I/O>", .start = 999});
  EXPECT_NE(svg.find("disk &lt;I/O&gt;"), std::string::npos);
  const auto cells = cells_of(svg);
  ASSERT_EQ(cells.size(), 9u);  // 3 rows (buckets 3-5) x 3 columns
  std::map<std::pair<int, int>, uint64_t> grid;
  std::set<double> xs;
  for (const auto& c : cells) {
    grid[{c.col, c.row}] = c.count;
    xs.insert(c.x);
  }
  EXPECT_EQ(xs.size(), 3u);
  EXPECT_EQ(grid[std::make_pair(0, 3)], 5u);
  EXPECT_EQ(grid[std::make_pair(1, 5)], 9u);
  EXPECT_EQ(grid[std::make_pair(2, 4)], 2u);
  EXPECT_EQ(grid[std::make_pair(1, 3)], 0u);
  for (const auto& c : cells) {
    // The largest bucket is the top row; later columns are to the right.
    for (const auto& d : cells) {
      if (c.col == d.col && c.row > d.row) {
        EXPECT_LT(c.y, d.y);
      }
      if (c.row == d.row && c.col > d.col) {
        EXPECT_GT(c.x, d.x);
      }
    }
    if (c.count == 0) {
      EXPECT_EQ(c.fill, "rgb(244,244,244)");
    }
  }
  // The tooltips: elapsed time from the start, the bucket as the text labels it, the count.
  const auto it = std::find_if(cells.begin(), cells.end(), [](const Cell& c) { return c.count == 9; });
  EXPECT_NE(it->title.find("@lat&#10;2s ("), std::string::npos) << it->title;
  EXPECT_NE(it->title.find("[8, 16): 9"), std::string::npos) << it->title;
  // The largest count gets the ramp's last colour, a count of 1 its first.
  EXPECT_EQ(it->fill, "rgb(189,0,38)");
  EXPECT_NE(svg.find(">[4, 8)</text>"), std::string::npos);
  EXPECT_NE(svg.find("data-columns=\"3\" data-rows=\"3\" data-per-column=\"1\""), std::string::npos);
}

// An hour of one-second intervals fits the width: consecutive intervals
// are summed into a column, and the tooltips and titles say which.
TEST(HeatMaps, LongRunsSumIntervalsIntoColumns) {
  HeatMaps h;
  for (int i = 0; i < 3600; ++i) h.add(hist_map("@us", {0, 1, static_cast<uint64_t>(i % 2)}), 1000 + i);
  const std::string svg = heatmap_svg(h.series(), {.start = 999});
  const auto cells = cells_of(svg);
  // 8 intervals a column: 450 columns, two rows.
  ASSERT_EQ(cells.size(), 2u * 450);
  EXPECT_NE(svg.find("data-columns=\"450\" data-rows=\"2\" data-per-column=\"8\""), std::string::npos);
  EXPECT_NE(svg.find("3600 intervals (8 a column), "), std::string::npos);
  EXPECT_NE(svg.find("(one column per 8 intervals)"), std::string::npos);
  std::map<int, uint64_t> by_row;
  for (const auto& c : cells) {
    EXPECT_EQ(c.count, c.row == 1 ? 8u : 4u) << c.col;
    by_row[c.row] += c.count;
  }
  EXPECT_EQ(by_row[1], 3600u);
  EXPECT_EQ(by_row[2], 1800u);
  // The second column: intervals 9 to 16 (printed at 1008 to 1015, 9 s to
  // 16 s after the start).
  const auto second = std::find_if(cells.begin(), cells.end(), [](const Cell& c) { return c.col == 1; });
  EXPECT_NE(second->title.find("&#10;9s to 16s ("), std::string::npos) << second->title;
  EXPECT_LT(svg.size(), 400u * 1024);
  // The time axis at round times: every 5 minutes, each tick inside the
  // column that holds its time (the 5-minute tick: interval 300 of column
  // 37, which covers intervals 297 to 304).
  std::vector<std::string> labels;
  for (size_t at = svg.find("class=\"time-label\""); at != std::string::npos;
       at = svg.find("class=\"time-label\"", at + 1)) {
    const size_t from = svg.find('>', at) + 1;
    labels.push_back(svg.substr(from, svg.find('<', from) - from));
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"0s", "5m", "10m", "15m", "20m", "25m", "30m", "35m", "40m", "45m", "50m",
                                              "55m", "1h"}));
  const size_t five = svg.find(">5m</text>");
  const double tick_x = std::stod(attr(svg, svg.rfind("<text ", five), "x"));
  const auto col37 = std::find_if(cells.begin(), cells.end(), [](const Cell& c) { return c.col == 37; });
  EXPECT_GE(tick_x, col37->x);
  EXPECT_LE(tick_x, col37->x + col37->w);
  // A run that fits keeps a column per interval.
  HeatMaps few;
  for (int i = 0; i < 500; ++i) few.add(hist_map("@us", {0, 1}), 1000 + i);
  EXPECT_NE(heatmap_svg(few.series(), {}).find("data-columns=\"500\" data-rows=\"1\" data-per-column=\"1\""),
            std::string::npos);
}

TEST(HeatMaps, LhistRowsAndTimeAxisWithoutAStart) {
  HeatMaps h;
  auto lh = [](std::vector<uint64_t> b) {
    MapSnapshot m = scalar("@q", AggKind::LHist, buckets(std::move(b)));
    m.hist = HistParams{.min = 0, .max = 100, .step = 10};
    return m;
  };
  h.add(lh({0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), 50.5);
  h.add(lh({0, 0, 6}), 51);
  const std::string svg = heatmap_svg(h.series(), {});
  const auto cells = cells_of(svg);
  ASSERT_EQ(cells.size(), 2u * 11);  // buckets 1 ([0, 10)) to 11 ([100, ...)), two columns
  EXPECT_NE(svg.find(">[100, ...)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">[0, 10)</text>"), std::string::npos);
  // No start given: one column's spacing (0.5 s) before the first column;
  // the axis from 0 s to 1 s at the grid's right edge.
  EXPECT_NE(svg.find(">0s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">1s</text>"), std::string::npos);
}

TEST(HeatMaps, EmptyInputsDrawWithoutCells) {
  EXPECT_NE(heatmap_svg({}, {}).find("No hist() or lhist() map was printed"), std::string::npos);
  HeatMaps h;
  h.add(hist_map("@z", {0, 0}), 5);
  const std::string svg = heatmap_svg(h.series(), {});
  EXPECT_EQ(cells_of(svg).size(), 0u);
  EXPECT_NE(svg.find("no counts"), std::string::npos);
  EXPECT_NE(heatmap_terminal(h.series(), {}, 80).find("@z  1 interval, no counts\n"), std::string::npos);
}

// The terminal drawing: a line per bucket, two characters per column, blank
// for 0, else a block in the 256-colour ramp.
TEST(HeatMaps, TerminalRowsColumnsAndColours) {
  HeatMaps h;
  h.add(hist_map("@lat", {0, 0, 0, 1, 0}), 10);
  h.add(hist_map("@lat", {0, 0, 0, 0, 4}), 11);
  const std::string t = heatmap_terminal(h.series(), HeatMapOptions{.start = 9}, 80);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(t.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 6u) << t;  // title, 2 buckets, axis line, time labels, scale
  EXPECT_EQ(lines[0], "@lat  2 intervals, largest count in a bucket 4");
  // Bucket 4 ([4, 8)) on top: empty, then the largest count (the ramp's end, xterm 161).
  EXPECT_EQ(lines[1], "[4, 8) │  \x1b[38;5;161m██\x1b[0m");
  // Bucket 3 ([2, 4)): a count of 1 (the ramp's start, xterm 229), then empty.
  EXPECT_EQ(lines[2], "[2, 4) │\x1b[38;5;229m██\x1b[0m  ");
  EXPECT_EQ(lines[3], "       └────");
  EXPECT_EQ(lines[4], "        1s");
}

TEST(HeatMaps, TerminalKeepsTheNewestColumnsThatFit) {
  HeatMaps h;
  for (int i = 0; i < 100; ++i) h.add(hist_map("@n", {0, static_cast<uint64_t>(i + 1)}), 1000 + i);
  const std::string t = heatmap_terminal(h.series(), {}, 40);
  EXPECT_NE(t.find("@n  100 intervals (the last 16 shown)"), std::string::npos) << t;
  // The row: "[0] │" then 16 columns of blocks, none wider than the terminal.
  const size_t row = t.find("[0] │");
  ASSERT_NE(row, std::string::npos);
  const std::string line = t.substr(row, t.find('\n', row) - row);
  size_t blocks = 0;
  for (size_t at = line.find("█"); at != std::string::npos; at = line.find("█", at + 1)) ++blocks;
  EXPECT_EQ(blocks, 32u);
}

}  // namespace
}  // namespace bpfscope::output
