// Flame graphs (--flamegraph FILE.svg): stacks merged into a tree and drawn
// as an SVG that works on its own in a browser. Each frame is a <g> holding
// its <title> (the tooltip: name, count, share), its <rect> and its <text>
// label; the inline script adds click-to-zoom, search and reset, and reads
// everything it needs from those elements, so the file stays readable by
// viewers without scripts (the graph is complete without it).
//
// Geometry: a frame's x and width come from its first and last sample in
// the tree's order (children sorted by name after their parent's start),
// each rounded to 1/100 px once, so children tile their parent exactly and
// their widths never add up to more than the parent's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "output/output.h"
#include "output/rounding.h"
#include "output/xml.h"

namespace bpfscope::output {

namespace {

constexpr int kPad = 10;           // left and right margins, px
constexpr int kFrameHeight = 16;   // one level, px (the rect is 1 px less)
constexpr int kTop = 60;           // below the title and subtitle
constexpr int kBottom = 34;        // the details and search lines
constexpr int kFontSize = 12;
// DejaVu Sans Mono and most monospace fonts advance 0.6 em per character:
// labels are cut to what fits without measuring text.
constexpr double kCharWidth = kFontSize * 0.6;

struct Node {
  uint32_t parent = 0;
  uint32_t label = 0;     // index into labels
  int64_t total = 0;      // its samples, its children's included
  int64_t start = 0;      // its first sample, in the tree's order
  uint32_t depth = 0;
  bool waker = false;     // above an off-wake separator: the waker's side
};

// The longest prefix of `s` of at most `n` characters, cut between UTF-8
// sequences.
std::string_view prefix_chars(std::string_view s, size_t n) {
  size_t i = 0, chars = 0;
  while (i < s.size() && chars < n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) ++i;
    ++chars;
  }
  return s.substr(0, i);
}

size_t char_count(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// The label drawn in a frame `width_px` wide: the whole name, or its start
// and "..", or nothing when fewer than 3 characters fit. The script does
// the same on zoom.
std::string label_for(std::string_view name, double width_px) {
  const double fit = floor_down((width_px - 6) / kCharWidth);
  if (fit < 3) return "";
  const auto n = static_cast<size_t>(fit);
  if (char_count(name) <= n) return std::string(name);
  return std::string(prefix_chars(name, n - 2)) + "..";
}

// 1234567 -> "1,234,567".
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Hundredths of a pixel as a decimal ("12.3", "7", "0.05").
std::string px(int64_t centi) {
  if (centi % 100 == 0) return std::to_string(centi / 100);
  if (centi % 10 == 0) return fmt::format("{}.{}", centi / 100, (centi % 100) / 10);
  return fmt::format("{}.{:02}", centi / 100, centi % 100);
}

// FNV-1a of the name: the same function gets the same colour in every
// graph, and neighbours differ.
uint32_t name_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

struct Rgb {
  int r, g, b;
};

// A colour range per kind of frame; each channel moves inside its range
// with the name's hash. All ranges are light enough for black text.
struct Palette {
  Rgb lo, hi;
};

Palette palette_for(GraphKind graph, FrameKind kind, bool waker) {
  switch (kind) {
    case FrameKind::Separator: return {{190, 190, 190}, {200, 200, 200}};
    case FrameKind::Other:
      if (graph == GraphKind::Cpu) return {{200, 200, 110}, {225, 225, 150}};
      return waker ? Palette{{200, 180, 225}, {220, 200, 240}} : Palette{{175, 190, 215}, {195, 210, 230}};
    case FrameKind::User:
      if (graph == GraphKind::Cpu) return {{215, 45, 30}, {250, 110, 70}};
      return waker ? Palette{{165, 125, 230}, {195, 160, 255}} : Palette{{90, 130, 225}, {135, 175, 255}};
    case FrameKind::Kernel:
      if (graph == GraphKind::Cpu) return {{235, 160, 20}, {255, 205, 70}};
      return waker ? Palette{{205, 150, 235}, {235, 185, 255}} : Palette{{120, 185, 230}, {160, 220, 255}};
  }
  std::unreachable();
}

std::string colour(GraphKind graph, FrameKind kind, bool waker, std::string_view name) {
  const Palette p = palette_for(graph, kind, waker);
  const uint32_t h = name_hash(name);
  auto mix = [](int lo, int hi, uint32_t v) { return lo + static_cast<int>((hi - lo) * (v & 0xff) / 255); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(p.lo.r, p.hi.r, h), mix(p.lo.g, p.hi.g, h >> 8),
                     mix(p.lo.b, p.hi.b, h >> 16));
}

std::string default_title(GraphKind kind) {
  switch (kind) {
    case GraphKind::Cpu: return "CPU Flame Graph";
    case GraphKind::OffCpu: return "Off-CPU Time Flame Graph";
    case GraphKind::OffWake: return "Off-Wake Time Flame Graph";
  }
  std::unreachable();
}

// The tree: node 0 is the root ("all"); nodes are in depth-first order,
// children in name order, so a parent always comes before its children.
struct Tree {
  std::vector<Node> nodes;
  std::vector<Frame> labels;  // by label id; ids are ranks in (name, kind) order
  size_t stacks = 0;          // stacks with a positive count
};

// Hashing names without building a key string per frame.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

Tree build_tree(const StackSet& set) {
  Tree t;
  // Each frame as a label id: one lookup per frame in a small table (the
  // distinct names), one table per kind.
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> ids[4];
  std::vector<Frame> labels;
  std::vector<uint32_t> seq;                      // every kept stack's label ids, one after another
  std::vector<std::pair<size_t, size_t>> ranges;  // a stack's [begin, end) in seq
  std::vector<int64_t> counts;
  size_t frames = 0;
  for (const Stack& s : set.stacks) frames += s.frames.size();
  seq.reserve(frames);
  ranges.reserve(set.stacks.size());
  counts.reserve(set.stacks.size());
  int64_t sum = 0;
  for (const Stack& s : set.stacks) {
    // A flame graph draws shares of a positive total: stacks with no
    // samples (or a negative sum) have no width. A stack that would take
    // the total past int64 is left out (no real profile gets there).
    int64_t next_sum;
    if (s.count <= 0 || __builtin_add_overflow(sum, s.count, &next_sum)) continue;
    sum = next_sum;
    const size_t begin = seq.size();
    for (const Frame& f : s.frames) {
      auto& table = ids[static_cast<size_t>(f.kind)];
      auto it = table.find(std::string_view(f.name));
      if (it == table.end()) {
        it = table.emplace(f.name, static_cast<uint32_t>(labels.size())).first;
        labels.push_back(f);
      }
      seq.push_back(it->second);
    }
    ranges.emplace_back(begin, seq.size());
    counts.push_back(s.count);
  }
  // Ids renumbered in name order: sorting the stacks by their ids then
  // gives the tree's depth-first order with children by name.
  std::vector<uint32_t> order(labels.size()), rank(labels.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return labels[a].name != labels[b].name ? labels[a].name < labels[b].name : labels[a].kind < labels[b].kind;
  });
  t.labels.reserve(labels.size() + 1);
  for (uint32_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = r;
    t.labels.push_back(std::move(labels[order[r]]));
  }
  t.labels.push_back({"all", FrameKind::Other});
  for (uint32_t& id : seq) id = rank[id];
  // A stack that is the start of another sorts after it: a frame's
  // children are drawn from its left edge, its own samples after them.
  std::vector<uint32_t> by(ranges.size());
  for (uint32_t i = 0; i < by.size(); ++i) by[i] = i;
  std::sort(by.begin(), by.end(), [&](uint32_t a, uint32_t b) {
    const auto [ab, ae] = ranges[a];
    const auto [bb, be] = ranges[b];
    const size_t n = std::min(ae - ab, be - bb);
    for (size_t k = 0; k < n; ++k)
      if (seq[ab + k] != seq[bb + k]) return seq[ab + k] < seq[bb + k];
    return ae - ab > be - bb;
  });
  // One pass: each stack shares the path of the one before it as far as
  // their frames agree, and adds nodes for the rest, starting where the
  // samples so far end.
  t.nodes.push_back({.label = static_cast<uint32_t>(t.labels.size() - 1)});
  std::vector<uint32_t> path{0};
  size_t prev = SIZE_MAX;
  int64_t at = 0;
  for (uint32_t i : by) {
    const auto [b, e] = ranges[i];
    size_t common = 0;
    if (prev != SIZE_MAX) {
      const auto [pb, pe] = ranges[prev];
      while (common < e - b && common < pe - pb && seq[b + common] == seq[pb + common]) ++common;
    }
    path.resize(common + 1);
    for (size_t k = common; k < e - b; ++k) {
      const Node& parent = t.nodes[path.back()];
      const bool waker = parent.waker || (path.size() > 1 && t.labels[parent.label].kind == FrameKind::Separator);
      t.nodes.push_back({.parent = path.back(),
                         .label = seq[b + k],
                         .start = at,
                         .depth = static_cast<uint32_t>(path.size()),
                         .waker = waker});
      path.push_back(static_cast<uint32_t>(t.nodes.size() - 1));
    }
    for (uint32_t node : path) t.nodes[node].total += counts[i];
    at += counts[i];
    prev = i;
    ++t.stacks;
  }
  return t;
}

// The script: zoom on click, search, reset; see the file comment. It runs
// at the end of the document, once the frames exist, and reads them lazily
// on the first event (opening a large graph costs no script time).
constexpr const char* kScript = R"JS(
(function () {
  "use strict";
  var svg = document.getElementById("fg-svg");
  var group = document.getElementById("fg-frames");
  var details = document.getElementById("fg-details");
  var matchedText = document.getElementById("fg-matched");
  var resetButton = document.getElementById("fg-reset");
  var searchButton = document.getElementById("fg-search");
  var pad = +svg.getAttribute("data-pad"), full = +svg.getAttribute("data-plot-width");
  var charWidth = +svg.getAttribute("data-char-width");
  var inverted = svg.getAttribute("data-inverted") === "1";
  var frames = null, zoomed = null, searching = null;

  // A frame is a <g>: its <title>, its <rect>, and a <text> when it has
  // a label.
  function load() {
    if (frames) return frames;
    frames = [];
    for (var g = group.firstElementChild; g; g = g.nextElementSibling) {
      var title = g.children[0].textContent, r = g.children[1];
      g.fgIndex = frames.length;
      frames.push({
        g: g, rect: r, text: g.children[2] || null,
        name: title.slice(0, title.lastIndexOf(" (")), title: title,
        x: +r.getAttribute("x"), w: +r.getAttribute("width"), y: +r.getAttribute("y"),
        fill: r.getAttribute("fill")
      });
    }
    return frames;
  }
  // Depth grows away from the root: upwards, or downwards when inverted.
  function deeper(a, b) { return inverted ? a.y > b.y : a.y < b.y; }
  function label(name, w) {
    var n = Math.floor((w - 6) / charWidth);
    if (n < 3) return "";
    var chars = Array.from(name);
    return chars.length <= n ? name : chars.slice(0, n - 2).join("") + "..";
  }
  function place(f, x, w, shown) {
    f.g.style.display = shown ? "" : "none";
    if (!shown) return;
    f.rect.setAttribute("x", x.toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    var text = label(f.name, w);
    if (!f.text) {
      if (!text) return;
      f.text = document.createElementNS("http://www.w3.org/2000/svg", "text");
      f.text.setAttribute("y", f.y + 11);
      f.g.appendChild(f.text);
    }
    f.text.setAttribute("x", (x + 3).toFixed(2));
    f.text.textContent = text;
  }
  function fade(f, faded) { f.g.style.opacity = faded ? "0.6" : ""; }
  function frameOf(node) {
    load();  // a fresh page: the frames are numbered on first use
    while (node && node !== group && node.fgIndex === undefined) node = node.parentNode;
    return node && node.fgIndex !== undefined ? load()[node.fgIndex] : null;
  }
  var eps = 0.005;
  // The frame spans the full width; its descendants scale with it; its
  // ancestors span the full width, faded; every other frame is hidden.
  function zoom(z) {
    load();
    zoomed = z;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;
      var around = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;
      if (f === z || (inside && deeper(f, z))) {
        place(f, pad + (f.x - z.x) * full / z.w, f.w * full / z.w, true);
        fade(f, false);
      } else if (around && deeper(z, f)) {
        place(f, pad, full, true);
        fade(f, true);
      } else {
        place(f, 0, 0, false);
      }
    }
    resetButton.style.display = z.w >= full - eps ? "none" : "";
  }
  function resetZoom() {
    load();
    zoomed = null;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      place(f, f.x, f.w, true);
      fade(f, false);
    }
    resetButton.style.display = "none";
  }
  // Highlights the frames whose name matches `pattern` (a regular
  // expression) and returns their share of the whole graph, in percent
  // (nested matches counted once); null or "" clears the search.
  function search(pattern) {
    load();
    var re = null;
    if (pattern) {
      try { re = new RegExp(pattern); } catch (e) {
        matchedText.textContent = "Invalid search: " + e.message;
        return null;
      }
    }
    searching = re ? pattern : null;
    var spans = [];
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i], hit = re !== null && re.test(f.name);
      f.rect.setAttribute("fill", hit ? "#e600e6" : f.fill);
      if (hit) spans.push([f.x, f.x + f.w]);
    }
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    for (var k = 0; k < spans.length; k++) {
      var lo = Math.max(spans[k][0], end), hi = spans[k][1];
      if (hi > lo) covered += hi - lo;
      end = Math.max(end, hi);
    }
    var share = Math.min(100, covered * 100 / full);
    matchedText.textContent = re ? "Matched: " + share.toFixed(1) + "% (" + spans.length + " frames)" : "";
    searchButton.textContent = re ? "Clear search" : "Search";
    return re ? share : null;
  }
  function askSearch() {
    if (searching) { search(null); return; }
    var p = window.prompt("Search (regular expression):", "");
    if (p) search(p);
  }
  group.addEventListener("click", function (e) {
    var f = frameOf(e.target);
    if (!f) return;
    if (f.w >= full - eps) resetZoom(); else zoom(f);
  });
  group.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target);
    details.textContent = f ? f.title : "";
  });
  group.addEventListener("mouseout", function () { details.textContent = ""; });
  resetButton.addEventListener("click", resetZoom);
  searchButton.addEventListener("click", askSearch);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); askSearch(); }
    else if (e.key === "Escape") { resetZoom(); search(null); }
  });
  window.flamegraph = {
    frames: function () { return load(); },
    zoom: zoom, resetZoom: resetZoom, search: search,
    zoomed: function () { return zoomed; }
  };
})();
)JS";

}  // namespace

std::optional<GraphKind> graph_kind(std::string_view name) {
  for (GraphKind k : {GraphKind::Cpu, GraphKind::OffCpu, GraphKind::OffWake})
    if (graph_name(k) == name) return k;
  return std::nullopt;
}

std::string_view graph_name(GraphKind kind) {
  switch (kind) {
    case GraphKind::Cpu: return "cpu";
    case GraphKind::OffCpu: return "offcpu";
    case GraphKind::OffWake: return "offwake";
  }
  return "cpu";
}

StackLayout stack_layout(GraphKind kind) {
  return kind == GraphKind::OffWake ? StackLayout::OffWake : StackLayout::Plain;
}

FlameGraph flamegraph_svg(const StackSet& set, const FlameGraphOptions& o) {
  const Tree t = build_tree(set);
  FlameGraph out;
  out.total = t.nodes[0].total;
  const int width = std::max(o.width, 2 * kPad + 100);
  const int64_t plot_c = static_cast<int64_t>(width - 2 * kPad) * 100;
  const auto min_c = static_cast<int64_t>(ceil_up(o.min_width * 100));
  const double total = static_cast<double>(std::max<int64_t>(out.total, 1));
  auto at_c = [&](int64_t sample) {
    return kPad * 100 + round_to_int64(static_cast<double>(sample) / total * static_cast<double>(plot_c));
  };

  // Which frames are drawn: wide enough, under a drawn parent.
  const size_t n = t.nodes.size();
  std::vector<char> drawn(n, 0);
  uint32_t levels = 1;
  drawn[0] = out.total > 0;
  for (size_t i = 1; i < n; ++i) {
    const Node& nd = t.nodes[i];
    drawn[i] = drawn[nd.parent] && at_c(nd.start + nd.total) - at_c(nd.start) >= std::max<int64_t>(min_c, 1);
    if (drawn[i]) levels = std::max(levels, nd.depth + 1);
    else ++out.frames_hidden;
  }

  const int height = kTop + static_cast<int>(levels) * kFrameHeight + kBottom;
  const std::string title = o.title.empty() ? default_title(o.kind) : o.title;
  std::string s;
  s.reserve(200 * (n - out.frames_hidden) + 12288);
  s += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  s += fmt::format(
      "<svg id=\"fg-svg\" version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" data-pad=\"{2}\" data-plot-width=\"{3}\" data-char-width=\"{4}\" "
      "data-inverted=\"{5}\">\n",
      width, height, kPad, width - 2 * kPad, kCharWidth, o.inverted ? 1 : 0);
  s += fmt::format(
      "<style>\n"
      "text {{ font-family: \"DejaVu Sans Mono\", Menlo, Consolas, monospace; font-size: {}px; fill: #000; }}\n"
      "#fg-frames text {{ pointer-events: none; }}\n"
      "#fg-frames rect {{ stroke: #fff; stroke-width: 0.5; }}\n"
      "#fg-frames rect:hover {{ stroke: #000; stroke-width: 0.8; }}\n"
      "#fg-title {{ font-size: 17px; font-weight: bold; }}\n"
      "#fg-subtitle {{ fill: #555; }}\n"
      ".fg-button {{ cursor: pointer; fill: #0645ad; text-decoration: underline; }}\n"
      "</style>\n",
      kFontSize);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#f8f8f4\"/>\n", width, height);
  s += fmt::format("<text id=\"fg-title\" x=\"{}\" y=\"24\" text-anchor=\"middle\">", width / 2);
  append_xml(s, title);
  s += "</text>\n";
  // "1,234 samples", or "1,234" when the counts have no unit.
  auto amount = [&](int64_t v) { return o.unit.empty() ? grouped(v) : grouped(v) + " " + o.unit; };
  std::string sub = fmt::format("{}{} in {} stack{}", o.unit.empty() ? "total " : "", amount(out.total),
                                grouped(static_cast<int64_t>(t.stacks)), t.stacks == 1 ? "" : "s");
  if (out.frames_hidden > 0)
    sub += fmt::format("; {} frame{} narrower than {} px not drawn", grouped(static_cast<int64_t>(out.frames_hidden)),
                       out.frames_hidden == 1 ? "" : "s", o.min_width);
  s += fmt::format("<text id=\"fg-subtitle\" x=\"{}\" y=\"44\" text-anchor=\"middle\">", width / 2);
  append_xml(s, sub);
  s += "</text>\n";
  s += fmt::format("<text id=\"fg-reset\" class=\"fg-button\" x=\"{}\" y=\"24\" style=\"display:none\">Reset zoom</text>\n",
                   kPad);
  s += fmt::format("<text id=\"fg-search\" class=\"fg-button\" x=\"{}\" y=\"24\" text-anchor=\"end\">Search</text>\n",
                   width - kPad);

  s += "<g id=\"fg-frames\">\n";
  for (size_t i = 0; i < n; ++i) {
    if (!drawn[i]) continue;
    ++out.frames_drawn;
    const Node& nd = t.nodes[i];
    const Frame& f = t.labels[nd.label];
    const int64_t x = at_c(nd.start), w = at_c(nd.start + nd.total) - x;
    const int level = static_cast<int>(nd.depth);
    const int y = kTop + (o.inverted ? level : static_cast<int>(levels) - 1 - level) * kFrameHeight;
    // A group: the tooltip, the rect, and a label only where one fits (the
    // script adds labels as zooming widens frames). Chromium draws a
    // <title> inside a <rect> several times slower than one beside it.
    s += "<g><title>";
    append_xml(s, f.name);
    s += " (";
    append_xml(s, amount(nd.total));
    s += fmt::format(", {:.2f}%)</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                     100.0 * static_cast<double>(nd.total) / total, px(x), y, px(w), kFrameHeight - 1,
                     colour(o.kind, f.kind, nd.waker, f.name));
    if (std::string label = label_for(f.name, static_cast<double>(w) / 100); !label.empty()) {
      s += fmt::format("<text x=\"{}\" y=\"{}\">", px(x + 300), y + 11);
      append_xml(s, label);
      s += "</text>";
    }
    s += "</g>\n";
  }
  s += "</g>\n";
  const int bottom = kTop + static_cast<int>(levels) * kFrameHeight + 20;
  s += fmt::format("<text id=\"fg-details\" x=\"{}\" y=\"{}\"></text>\n", kPad, bottom);
  s += fmt::format("<text id=\"fg-matched\" x=\"{}\" y=\"{}\" text-anchor=\"end\"></text>\n", width - kPad, bottom);
  s += "<script type=\"text/ecmascript\"><![CDATA[";
  s += kScript;
  s += "]]></script>\n</svg>\n";
  out.svg = std::move(s);
  return out;
}

FlameGraph maps_flamegraph(const std::vector<MapSnapshot>& maps, StackLayout layout, FlameGraphOptions options) {
  StackSet all;
  std::vector<std::string_view> names;
  bool counts = true;
  for (const auto& m : maps) {
    if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    counts &= m.kind == AggKind::Count;
  }
  for (const auto& m : maps) {
    StackSet set = map_stacks(m, layout);
    all.user_and_kernel |= set.user_and_kernel;
    for (auto& s : set.stacks) {
      if (names.size() > 1) s.frames.insert(s.frames.begin(), Frame{m.name, FrameKind::Other});
      all.stacks.push_back(std::move(s));
    }
  }
  if (options.unit.empty() && counts) options.unit = "samples";
  return flamegraph_svg(all, options);
}

}  // namespace bpfscope::output
