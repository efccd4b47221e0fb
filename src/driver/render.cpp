// `bpfscope render`: a recording printed again and drawn, or folded stacks
// drawn as a flame graph. src/main.cpp reads its command line and the input.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "driver/driver.h"

namespace bpfscope::driver {
namespace {

// Writes a rendered picture; false (said) when the file cannot be written.
bool write_picture(const std::string& path, std::string_view svg) {
  std::ofstream f(path, std::ios::binary);
  if (f) f.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  if (f) f.close();
  if (!f) fmt::print(stderr, "ERROR: render: cannot write {}: {}\n", path, strerror(errno));
  return static_cast<bool>(f);
}

// What a recording is drawn into besides its text.
struct RecordingSinks {
  std::vector<output::MapSnapshot>* stack_maps = nullptr;  // --flamegraph: the maps keyed by stacks
  // --heatmap: the hist() and lhist() maps printed before the exit-time
  // maps, each at its message's "time" (a recording without times: one
  // second apart); with heat_replaces_text (--heatmap -) they are not
  // printed as text.
  output::HeatMaps* heat = nullptr;
  bool heat_replaces_text = false;
  double start = 0;  // out: when the probes were attached (0: not recorded)
  // out: how a tool's recording says its stacks are drawn (a map message's
  // "graph" and "unit").
  std::optional<output::GraphKind> graph;
  std::string unit;
};

// Prints a recording (a run's -f record output, output::render_message):
// its text to `out` and stderr, and its maps into `sinks`. Returns an exit
// status.
int print_recording(std::string_view text, const std::string& name, const output::RenderOptions& opts, FILE* out,
                    RecordingSinks& sinks) {
  uint64_t n = 0;
  bool after_exit = false;
  size_t columns = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++n;
    std::string error;
    auto r = output::render_message(line, opts, error);
    if (!r) {
      fflush(out);
      fmt::print(stderr, "{}:{}: ERROR: {}\n", name, n, error);
      return 1;
    }
    after_exit |= r->exit;
    if (r->attached && r->time) sinks.start = *r->time;
    if (r->graph && !sinks.graph) {
      sinks.graph = r->graph;
      sinks.unit = r->unit;
    }
    if (sinks.heat && r->map && !after_exit && output::is_histogram(r->map->kind)) {
      sinks.heat->add(*r->map, r->time ? *r->time : static_cast<double>(++columns));
      if (sinks.heat_replaces_text) r->out.clear();
    }
    if (sinks.stack_maps && r->map && output::is_foldable(*r->map)) sinks.stack_maps->push_back(std::move(*r->map));
    fwrite(r->out.data(), 1, r->out.size(), out);
    if (!r->err.empty()) {
      fflush(out);
      fwrite(r->err.data(), 1, r->err.size(), stderr);
    }
  }
  return 0;
}

}  // namespace

int render_recording(std::string_view text, const std::string& name, RecordingRender options) {
  auto& go = options.graph;
  auto& ho = options.heat;
  const std::string& text_path = options.text_path;
  const std::string& graph_path = options.graph_path;
  const std::string& heat_path = options.heat_path;
  FILE* out = stdout;
  if (!text_path.empty() && !(out = fopen(text_path.c_str(), "w"))) {
    fmt::print(stderr, "ERROR: render: cannot write {}: {}\n", text_path, strerror(errno));
    return 1;
  }
  output::HeatMaps heat;
  std::vector<output::MapSnapshot> stack_maps;
  RecordingSinks sinks{.stack_maps = graph_path.empty() ? nullptr : &stack_maps,
                       .heat = heat_path.empty() ? nullptr : &heat,
                       .heat_replaces_text = heat_path == "-"};
  int rc = print_recording(text, name, options.text, out, sinks);
  ho.start = sinks.start;
  if (sinks.graph && !options.kind_given) go.kind = *sinks.graph;
  if (!options.unit_given) go.unit = sinks.unit;  // "": samples if the maps are counts, as the live graph
  if (!rc && heat_path == "-") {
    const std::string t = output::heatmap_terminal(heat.series(), ho, runtime::terminal_width(out));
    fwrite(t.data(), 1, t.size(), out);
  }
  if (out != stdout) fclose(out);
  if (!rc && !heat_path.empty() && heat_path != "-") {
    if (heat.empty())
      fmt::print(stderr, "WARNING: render: {} printed no hist() or lhist() map before its exit-time maps; {} "
                 "shows no heat map\n", name, heat_path);
    if (!write_picture(heat_path, output::heatmap_svg(heat.series(), ho))) rc = 1;
  }
  if (rc || graph_path.empty()) return rc;
  const auto layout = output::stack_layout(sinks.graph.value_or(output::GraphKind::Cpu));
  return write_picture(graph_path, output::maps_flamegraph(stack_maps, layout, go).svg) ? 0 : 1;
}

int render_folded(std::string_view text, const std::string& name, const std::string& graph_path,
                  const output::FlameGraphOptions& options) {
  auto folded = output::read_folded(text, name);
  if (!folded) {
    fmt::print(stderr, "{}\n", folded.error());
    return 1;
  }
  return write_picture(graph_path, output::flamegraph_svg(*folded, options).svg) ? 0 : 1;
}

}  // namespace bpfscope::driver
