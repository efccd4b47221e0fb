// Flame graphs (--flamegraph): the SVG's geometry, text and colours, read
// back from the frames it draws; and the folded reader of `bpfscope render`.
#include <gtest/gtest.h>

#include <string_view>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;

// One drawn frame: its tooltip, rectangle and label, as in the file.
struct Drawn {
  std::string title;  // XML text, escaped
  std::string name;   // the title without " (N unit, P%)"
  double x = 0, y = 0, w = 0;
  std::string fill, label;
};

// Every frame group: <g><title>T</title><rect .../>[<text ...>L</text>]</g>.
// (No <regex>: GCC 12 warns inside it at -O1 with the sanitizers.)
std::vector<Drawn> frames_of(const std::string& svg) {
  std::vector<Drawn> out;
  const size_t start = svg.find("<g id=\"fg-frames\">");
  for (size_t at = svg.find("<g><title>", start); at != std::string::npos; at = svg.find("<g><title>", at)) {
    Drawn d;
    const size_t t = at + 10, te = svg.find("</title>", t);
    d.title = svg.substr(t, te - t);
    d.name = d.title.substr(0, d.title.rfind(" ("));
    const size_t r = te + 8;
    EXPECT_EQ(svg.compare(r, 6, "<rect "), 0);
    EXPECT_EQ(attr(svg, r, "height"), "15");
    d.x = std::stod(attr(svg, r, "x"));
    d.y = std::stod(attr(svg, r, "y"));
    d.w = std::stod(attr(svg, r, "width"));
    d.fill = attr(svg, r, "fill");
    at = svg.find("/>", r) + 2;
    if (svg.compare(at, 6, "<text ") == 0) {
      const size_t l = svg.find('>', at) + 1, le = svg.find("</text>", l);
      d.label = svg.substr(l, le - l);
      at = le + 7;
    }
    EXPECT_EQ(svg.compare(at, 5, "</g>\n"), 0) << svg.substr(at, 40);
    out.push_back(d);
  }
  return out;
}

Stack st(std::vector<std::string> names, int64_t n, FrameKind kind = FrameKind::User) {
  Stack s;
  for (auto& name : names) s.frames.push_back({std::move(name), kind});
  s.count = n;
  return s;
}

StackSet set_of(std::vector<Stack> stacks) {
  StackSet s;
  s.stacks = std::move(stacks);
  return s;
}

const Drawn& find(const std::vector<Drawn>& fs, std::string_view name) {
  for (const auto& f : fs)
    if (f.name == name) return f;
  ADD_FAILURE() << "no frame " << name;
  static const Drawn none;
  return none;
}

// The frames one level further from the root than `p` (non-inverted: just
// above it) inside its x range.
std::vector<Drawn> children_of(const std::vector<Drawn>& fs, const Drawn& p, bool inverted = false) {
  std::vector<Drawn> out;
  for (const auto& f : fs)
    if (f.y == p.y + (inverted ? 16 : -16) && f.x >= p.x - 1e-9 && f.x + f.w <= p.x + p.w + 1e-6) out.push_back(f);
  return out;
}

double width_sum(const std::vector<Drawn>& fs) {
  double w = 0;
  for (const auto& f : fs) w += f.w;
  return w;
}

TEST(FlameGraph, ChildrenFitTheirParentExactlyWithoutSelfTime) {
  // "a" has 1 sample of its own; "d" none; thirds and sevenths round.
  auto g = flamegraph_svg(set_of({st({"a", "b"}, 3), st({"a", "c"}, 2), st({"a"}, 1), st({"d", "e"}, 1),
                                  st({"d", "f"}, 2), st({"d", "f", "x"}, 1), st({"d", "f", "y"}, 1)}),
                          {});
  auto fs = frames_of(g.svg);
  ASSERT_EQ(fs.size(), 9u) << g.svg;
  EXPECT_EQ(g.frames_drawn, 9u);
  EXPECT_EQ(g.total, 11);
  const Drawn& all = find(fs, "all");
  EXPECT_DOUBLE_EQ(all.x, 10);
  EXPECT_DOUBLE_EQ(all.w, 1180);
  for (const auto& p : fs) {
    auto kids = children_of(fs, p);
    EXPECT_LE(width_sum(kids), p.w + 1e-9) << p.name;
  }
  EXPECT_NEAR(width_sum(children_of(fs, all)), all.w, 1e-9);
  EXPECT_NEAR(width_sum(children_of(fs, find(fs, "d"))), find(fs, "d").w, 1e-9);
  EXPECT_LT(width_sum(children_of(fs, find(fs, "a"))), find(fs, "a").w - 100);
  // Widths follow the counts: "a" is 6/11 of the plot.
  EXPECT_NEAR(find(fs, "a").w, 1180.0 * 6 / 11, 0.01);
  // Children are in name order, from the parent's left edge.
  EXPECT_DOUBLE_EQ(find(fs, "b").x, find(fs, "a").x);
  EXPECT_LT(find(fs, "b").x, find(fs, "c").x);
  EXPECT_EQ(find(fs, "a").title, "a (6 samples, 54.55%)");
}

TEST(FlameGraph, NoFrameNarrowerThanTheMinimumIsDrawn) {
  std::vector<Stack> stacks{st({"big", "leaf"}, 1000000)};
  for (int i = 0; i < 1000; ++i) stacks.push_back(st({"small" + std::to_string(i), "under"}, 1));
  FlameGraphOptions o;
  o.min_width = 0.5;
  auto g = flamegraph_svg(set_of(stacks), o);
  auto fs = frames_of(g.svg);
  for (const auto& f : fs) EXPECT_GE(f.w, 0.5) << f.name;
  EXPECT_EQ(fs.size(), 3u);  // all, big, leaf
  // The narrow frames and their children are counted and said.
  EXPECT_EQ(g.frames_hidden, 2000u);
  EXPECT_NE(g.svg.find("1,001,000 samples in 1,001 stacks; 2,000 frames narrower than 0.5 px not drawn"),
            std::string::npos);
}

TEST(FlameGraph, NamesAreEscapedAndMadeValidText) {
  auto g = flamegraph_svg(set_of({st({"a<b&c\"d>", std::string("bad\x01\xff" "byte\xc3\xa9")}, 5)}), {});
  auto fs = frames_of(g.svg);
  ASSERT_EQ(fs.size(), 3u) << g.svg;
  EXPECT_EQ(fs[1].title, "a&lt;b&amp;c&quot;d&gt; (5 samples, 100.00%)");
  EXPECT_EQ(fs[1].label, "a&lt;b&amp;c&quot;d&gt;");
  EXPECT_EQ(fs[2].name, "bad??byte\xc3\xa9");
  EXPECT_EQ(g.svg.find("a<b"), std::string::npos);
  // Every '&' starts an entity.
  const std::string doc = g.svg.substr(0, g.svg.find("<script"));
  for (size_t a = doc.find('&'); a != std::string::npos; a = doc.find('&', a + 1)) {
    const std::string_view rest = std::string_view(doc).substr(a);
    EXPECT_TRUE(rest.starts_with("&amp;") || rest.starts_with("&lt;") || rest.starts_with("&gt;") ||
                rest.starts_with("&quot;"))
        << rest.substr(0, 10);
  }
}

TEST(FlameGraph, InvertedPutsTheRootAtTheTop) {
  auto set = set_of({st({"main", "work", "leaf"}, 4), st({"main", "other"}, 2)});
  auto up = frames_of(flamegraph_svg(set, {}).svg);
  FlameGraphOptions o;
  o.inverted = true;
  auto g = flamegraph_svg(set, o);
  auto down = frames_of(g.svg);
  ASSERT_EQ(up.size(), 5u);
  ASSERT_EQ(down.size(), 5u);
  EXPECT_GT(find(up, "all").y, find(up, "main").y);
  EXPECT_GT(find(up, "main").y, find(up, "leaf").y);
  EXPECT_LT(find(down, "all").y, find(down, "main").y);
  EXPECT_LT(find(down, "main").y, find(down, "leaf").y);
  for (const auto& f : down) EXPECT_GE(f.y, find(down, "all").y);
  EXPECT_NEAR(width_sum(children_of(down, find(down, "main"), true)), find(down, "main").w, 1e-9);
  EXPECT_NE(g.svg.find("data-inverted=\"1\""), std::string::npos);
}

TEST(FlameGraph, LabelsFitTheirFrames) {
  auto fs = frames_of(
      flamegraph_svg(set_of({st({"a_rather_long_function_name_that_will_not_fit"}, 30), st({"wide"}, 400)}), {}).svg);
  const Drawn& f = find(fs, "a_rather_long_function_name_that_will_not_fit");
  ASSERT_LT(f.w, 7.2 * 46);
  ASSERT_TRUE(f.label.ends_with("..")) << f.label;
  EXPECT_LE(f.label.size() * 7.2 + 6, f.w);
  EXPECT_EQ(find(fs, "wide").label, "wide");
}

TEST(FlameGraph, TitleUnitAndColoursByKind) {
  StackSet set;
  set.stacks.push_back({{{"comm", FrameKind::Other}, {"main", FrameKind::User}, {"schedule", FrameKind::Kernel}}, 7});
  FlameGraphOptions o;
  o.title = "Mine & yours";
  o.unit = "us";
  auto svg = flamegraph_svg(set, o).svg;
  EXPECT_NE(svg.find(">Mine &amp; yours</text>"), std::string::npos);
  EXPECT_NE(svg.find("7 us in 1 stack"), std::string::npos);
  auto fs = frames_of(svg);
  auto green = [](const Drawn& d) { return std::stoi(d.fill.substr(3, 2), nullptr, 16); };
  auto blue = [](const Drawn& d) { return std::stoi(d.fill.substr(5, 2), nullptr, 16); };
  // CPU: user frames red, kernel frames orange (more green).
  EXPECT_LE(green(find(fs, "main")), 150);
  EXPECT_GE(green(find(fs, "schedule")), 160);
  o.kind = GraphKind::OffCpu;
  o.title = "";
  auto off = frames_of(flamegraph_svg(set, o).svg);
  EXPECT_GE(blue(find(off, "main")), 225);
  EXPECT_GE(blue(find(off, "schedule")), 225);
  EXPECT_NE(flamegraph_svg(set, o).svg.find(">Off-CPU Time Flame Graph</text>"), std::string::npos);
}

TEST(FlameGraph, NonPositiveCountsAndEmptyInputs) {
  auto g = flamegraph_svg(set_of({st({"gone"}, 0), st({"neg"}, -5), st({"kept"}, 2)}), {});
  auto fs = frames_of(g.svg);
  EXPECT_EQ(fs.size(), 2u);
  EXPECT_EQ(g.total, 2);
  auto empty = flamegraph_svg(StackSet{}, {});
  EXPECT_TRUE(frames_of(empty.svg).empty());
  EXPECT_NE(empty.svg.find("0 samples in 0 stacks"), std::string::npos);
  EXPECT_TRUE(empty.svg.ends_with("</svg>\n"));
}

TEST(FlameGraph, OffWakeWakerSideHasItsOwnColours) {
  Value reader_k = Value::of_stack(Value::StackOf::Kernel, "", {"schedule", "pipe_read"});
  Value reader_u = Value::of_stack(Value::StackOf::User, "", {"cpu_pipe_wait", "main"});
  Value waker_k = Value::of_stack(Value::StackOf::Kernel, "", {"try_to_wake_up", "pipe_write"});
  Value waker_u = Value::of_stack(Value::StackOf::User, "", {"cpu_wake", "waker_main"});
  auto m = keyed("@", AggKind::Sum, {{T({S("reader"), reader_k, reader_u, waker_k, waker_u, S("waker")}), val(I(9))}});
  // Blocked root first, "--", then the waker's stack leaf first.
  EXPECT_EQ(folded_text(m, StackLayout::OffWake),
            "reader;main;cpu_pipe_wait;pipe_read_[k];schedule_[k];--;try_to_wake_up_[k];pipe_write_[k];cpu_wake;"
            "waker_main;waker 9\n");
  FlameGraphOptions o;
  o.kind = GraphKind::OffWake;
  auto fs = frames_of(flamegraph_svg(map_stacks(m, StackLayout::OffWake), o).svg);
  ASSERT_EQ(fs.size(), 12u);
  EXPECT_EQ(find(fs, "--").fill.substr(0, 3), "#be");  // grey
  auto red = [](const Drawn& d) { return std::stoi(d.fill.substr(1, 2), nullptr, 16); };
  // Blocked frames blue, the waker's purple (more red).
  EXPECT_LE(red(find(fs, "cpu_pipe_wait")), 135);
  EXPECT_GE(red(find(fs, "cpu_wake")), 165);
}

TEST(FoldedRead, FramesKindsAndCounts) {
  auto r = read_folded("comm;main;f_[k];g_[k] 12\n\nx;--;y 3\r\nwith space;z 1\n", "in.folded");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->stacks.size(), 3u);
  EXPECT_TRUE(r->user_and_kernel);
  const auto& s = r->stacks[0];
  EXPECT_EQ(s.count, 12);
  ASSERT_EQ(s.frames.size(), 4u);
  EXPECT_EQ(s.frames[2], (Frame{"f", FrameKind::Kernel}));
  EXPECT_EQ(s.frames[1], (Frame{"main", FrameKind::User}));
  EXPECT_EQ(r->stacks[1].frames[1].kind, FrameKind::Separator);
  EXPECT_EQ(r->stacks[2].frames[0].name, "with space");
  // Read back, the text is the same.
  EXPECT_EQ(folded_text(*r), "comm;main;f_[k];g_[k] 12\nwith space;z 1\nx;--;y 3\n");
}

TEST(FoldedRead, MalformedLinesNameTheirLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a;b 1\nnocount\n", "f:2: ERROR: expected \"frame;frame;... COUNT\", found no count"},
      {"a;b x\n", "f:1: ERROR: the count \"x\" is not a non-negative integer"},
      {"a;b -3\n", "f:1: ERROR: the count \"-3\" is not a non-negative integer"},
      {"a;b 99999999999999999999\n", "f:1: ERROR: the count \"99999999999999999999\" is not a non-negative integer"},
      {"a;b 1.5\n", "f:1: ERROR: the count \"1.5\" is not a non-negative integer"},
      {"a;;b 1\n", "f:1: ERROR: an empty frame name (\";;\", or \";\" at an end)"},
      {"a;b; 1\n", "f:1: ERROR: an empty frame name (\";;\", or \";\" at an end)"},
      {" 4\n", "f:1: ERROR: no frames before the count"},
      {"a;b 1 2\n", "f:1: ERROR: two counts: differential folded stacks are not supported"},
  };
  for (const auto& [text, err] : cases) {
    auto r = read_folded(text, "f");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error(), err) << text;
  }
  EXPECT_TRUE(read_folded("", "f"));
  auto big = read_folded("a 9223372036854775807\nb 1\n", "f");
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error(), "f:2: ERROR: the counts add up to more than 2^63 - 1");
}

// Arbitrary bytes are read or refused, and whatever is read draws.
TEST(FoldedRead, ArbitraryInputNeverBreaksTheReaderOrTheGraph) {
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  const std::vector<std::string> pieces = {"a", "b", "f_[k]", "--", "<&\"", "\xff", "\xc3", "\x01", "\t", " ", "x y",
                                           "9", ";", "", "_[k]", "\xe2\x82\xac"};
  const std::string noise = ";; _\n\r0 9-\xff";
  size_t read = 0;
  for (int i = 0; i < 2000; ++i) {
    // Lines of frames and a count, some with a byte of noise.
    std::string text;
    for (size_t line = next() % 6; line > 0; --line) {
      for (size_t f = 1 + next() % 5; f > 0; --f) text += pieces[next() % pieces.size()] + (f > 1 ? ";" : "");
      text += " " + std::to_string(next() % 1000) + "\n";
      if (next() % 4 == 0) text.insert(next() % text.size(), 1, noise[next() % noise.size()]);
    }
    auto r = read_folded(text, "fuzz");
    if (!r) {
      EXPECT_TRUE(r.error().starts_with("fuzz:")) << r.error();
      continue;
    }
    ++read;
    auto g = flamegraph_svg(*r, {});
    EXPECT_TRUE(g.svg.ends_with("</svg>\n"));
    EXPECT_EQ(frames_of(g.svg).size(), g.frames_drawn);
  }
  EXPECT_GT(read, 100u);
}

TEST(FlameGraph, TotalsNeverOverflow) {
  auto g = flamegraph_svg(set_of({st({"a"}, INT64_MAX), st({"b"}, INT64_MAX), st({"a", "c"}, 5)}), {});
  EXPECT_EQ(g.total, INT64_MAX);
  EXPECT_EQ(frames_of(g.svg).size(), 2u);
}

TEST(FlameGraph, MapsStandOnTheirNamesAndCountsAreSamples) {
  const auto stack = [](std::vector<std::string> f) { return Value::of_stack(Value::StackOf::User, "", std::move(f)); };
  const MapSnapshot a = keyed("@", AggKind::Count, {{stack({"leaf", "main"}), val(I(3))}});
  const MapSnapshot b = keyed("@b", AggKind::Count, {{stack({"leaf", "main"}), val(I(1))}});
  const MapSnapshot w = keyed("@w", AggKind::Sum, {{stack({"leaf", "main"}), val(I(4))}});
  FlameGraphOptions o;
  o.unit = "";
  // One map (printed twice, as a recording of interval prints holds it):
  // no frame naming it; counts are samples.
  auto fs = frames_of(maps_flamegraph({a, a}, StackLayout::Plain, o).svg);
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].title, "all (6 samples, 100.00%)");
  EXPECT_EQ(fs[1].name, "main");
  // Two maps: each stands on its name.
  fs = frames_of(maps_flamegraph({a, b}, StackLayout::Plain, o).svg);
  EXPECT_EQ(find(fs, "@").title, "@ (3 samples, 75.00%)");
  EXPECT_EQ(find(fs, "@b").title, "@b (1 samples, 25.00%)");
  EXPECT_EQ(children_of(fs, find(fs, "@b")).at(0).name, "main");
  // A sum(): the counts have no unit, unless one is given.
  fs = frames_of(maps_flamegraph({a, w}, StackLayout::Plain, o).svg);
  EXPECT_EQ(find(fs, "@w").title, "@w (4, 57.14%)");
  o.unit = "bytes";
  fs = frames_of(maps_flamegraph({w}, StackLayout::Plain, o).svg);
  EXPECT_EQ(fs[0].title, "all (4 bytes, 100.00%)");
}

}  // namespace
}  // namespace bpfscope::output
