// The runtime: creates maps, loads and attaches the compiled programs, runs
// BEGIN, the event loop and END, and prints the maps. Reads sema's map,
// action and probe tables; never the other way round.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "lang/ast.h"
#include "lang/source.h"
#include "output/output.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

inline constexpr uint32_t kStreamingRingbuf = 16u << 20;  // holds 1M printf events from a getppid loop
inline constexpr uint32_t kQuietRingbuf = 256u << 10;
inline constexpr uint32_t kSmallRingbuf = 16u << 10;  // BEGIN/END's records only (Session::ringbuf_for_program)
// Packaged tools print an event per connection or I/O, not a stream: 1 MiB
// (4x libbpf-tools' buffers) holds a burst of several thousand events. The
// reader maps a window of it (RingReader: 256 KiB while the events are
// few), so a tool stays near 5 MB RSS. A connection storm can still outrun
// it: the loss is reported, and BPFTRACE_PERF_RB_PAGES sets a larger buffer.
inline constexpr uint32_t kToolRingbuf = 1u << 20;

class MetricsEndpoint;

// --prometheus [ADDR:]PORT: the maps served as metrics (docs/metrics.md).
struct MetricsOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  std::string token;  // --prometheus-token FILE's contents: every request must carry it
  uint64_t max_series = output::kMetricsMaxSeries;  // --max-series
};

struct Options {
  std::string output_file;   // -o: script output goes there
  bool quiet = false;        // -q
  bool json = false;         // -f json: NDJSON messages (REFERENCE.md 6.8)
  bool recording = false;    // -f record: -f json and what `bpfscope render` needs (json is set too)
  // -f folded: maps keyed by stacks print as folded stacks on the output;
  // all other output goes to stderr as text, so the output is folded only.
  bool folded = false;
  // --flamegraph FILE.svg: at exit the maps keyed by stacks are drawn there
  // (with several such maps, each under a frame named after it) instead of
  // printed; the rest of the output is unchanged. An empty unit is picked
  // from the maps: "samples" for count() maps.
  std::string flamegraph_file;
  // Its kind also lays out a key of stacks for -f folded and the graph
  // (output::stack_layout: offwake keys are two halves).
  output::FlameGraphOptions flamegraph{.unit = ""};
  // A tool's "// flamegraph:" header set flamegraph's kind and unit. With
  // -f record its maps keyed by stacks then say them ("graph", "unit"), so
  // that `bpfscope render` draws the recording as the live run would; its
  // @folded map (kept for -f folded and drawings, never printed as text) is
  // marked "drawn_only".
  bool tool_graph = false;
  // --heatmap FILE.svg: every hist()/lhist() map printed during the run is a
  // column of a heat map, drawn there at exit (the text is printed as ever);
  // "-": drawn on the output instead of printed, redrawn as each column
  // arrives (in place on a terminal).
  std::string heatmap_file;
  output::HeatMapOptions heatmap;
  bool percentiles = false;  // --percentiles: estimated p50/p90/p99/p99.9 under each histogram
  // A packaged tool's name: its load and attach errors are one line each
  // (lang::Diagnostics::render for tools). "" for scripts.
  std::string tool_name;
  bool verbose = false;      // -v
  bool no_warnings = false;  // --no-warnings: warnf() prints nothing
  bool dry_run = false;      // --dry-run: load, do not attach or run
  // --mode bench: BEGIN, then each bench probe run repeatedly (its output
  // discarded) and its mean time printed, then END; no other probe is
  // attached and no map is printed at exit. Without it bench probes never run.
  bool bench = false;
  bool gap_before_maps = true;  // bpftrace's two newlines before the exit-time maps (tools print none)
  output::HistLayout hist_layout = output::HistLayout::Bpftrace;  // tools print libbpf-tools' log2 tables
  bool debug_verifier = false;  // -d verifier: print the kernel's log
  // Ring buffer bytes (a power of two, at least a page); 0 picks by program:
  // kStreamingRingbuf when probes other than BEGIN/END print, a size that
  // holds what BEGIN and END send when only they send records, else
  // kQuietRingbuf. The kernel maps the data twice, so RSS grows by 2x.
  uint32_t ringbuf_bytes = 0;
  uint32_t max_cat_bytes = 10240;  // cat(): bytes printed of each file (BPFTRACE_MAX_CAT_BYTES)
  std::optional<MetricsOptions> metrics;  // --prometheus
  // `bpfscope serve`: the endpoint every session of the process adds its
  // maps to (metrics is then unset), and the event that stops them all.
  MetricsEndpoint* endpoint = nullptr;
  int stop_fd = -1;
  // A tool's names for its maps on the metrics page (its "// metric:"
  // lines), and its maps that are served only, never printed.
  std::vector<std::pair<std::string, output::MetricNaming>> metric_names;
  std::vector<std::string> served_only;
  int child_pid = -1;        // -c: the child, held until attach (see Child)
  int target_pid = -1;       // -p
};

// A child started by -c: forked before compilation (its pid filters the
// probes), held on a pipe until the probes are attached.
struct Child {
  int pid = -1;
  int release_fd = -1;  // write a byte to let it exec
  std::string program;  // the command's first word, which it will exec
};

// The width of the terminal `out` writes to, or 80 columns when it is none.
int terminal_width(FILE* out);

std::optional<Child> start_child(const std::string& command, std::string& error);

// Runs the compiled program. Returns the process exit status: the exit()
// code, 0 on a signal or when the target ends, 255 on load or attach errors.
int run(const sema::TypedProgram& program, const ir::Module& module, std::vector<codegen::Program> programs,
        const Options& options, std::optional<Child> child);

// A program compiled for `bpfscope serve`, with its options.
struct Compiled {
  std::string name;  // the tool's
  std::unique_ptr<lang::Program> ast;  // the program refers to it
  sema::TypedProgram program;
  ir::Module module;
  std::vector<codegen::Program> programs;
  Options options;
};

// `bpfscope serve`: runs the programs side by side in this process, each on
// a thread of its own with its output to its -o file or nowhere, behind one
// metrics endpoint, until SIGINT or SIGTERM (or until every one has ended).
// Returns the exit status.
int serve(std::vector<std::unique_ptr<Compiled>>& runs, const MetricsOptions& metrics);

}  // namespace bpfscope::runtime
