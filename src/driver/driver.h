// The driver: the pipeline from a script's text to a run, top to bottom,
//   source -> lang::parse -> sema::analyse -> ir::lower -> codegen::compile
//          -> runtime::run
// and the commands built on it (render, tools, -l). src/main.cpp reads the
// command line into these options; tests call the same functions.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lang/lang.h"
#include "output/output.h"
#include "runtime/runtime.h"
#include "tools/tools.h"

namespace bpfscope::driver {

// What compile() reads: a script or a packaged tool, and how it runs.
struct CompileOptions {
  std::string program;   // the script's text
  std::string filename;  // for diagnostics: "stdin" for -e and -
  std::vector<std::string> positional;                           // $1, $2...
  std::map<std::string, std::optional<std::string>> named_args;  // getopt()'s --name[=value]
  std::vector<std::string> spliced_options;  // a tool's expr and spec options (lang::splice_options)
  std::vector<lang::SplicedValue> spliced;
  std::vector<lang::GivenArgument> given;  // a tool's arguments, for errors in the attach points that splice them
  std::set<std::string> debug;  // -d stages: ast, sema, ir, regalloc, bpf, verifier, all
  bool unsafe = false;          // --unsafe
  bool helper_errors = false;   // -k: report failed probe reads and get_stackid
  std::string child_cmd;        // -c
  std::string probe_filter;     // --probe-filter REGEX (checked)
  std::vector<std::string> includes;  // --include HEADER: as `#include <HEADER>` lines
  std::string tool_name;        // a packaged tool's name, when running one
  runtime::Options run;
  FILE* out = stdout;  // where -d prints the stages
  FILE* err = stderr;  // where the diagnostics go (warnings too, on success)
};

// Compiles a script (or a tool) for runtime::run, with -c's child started
// into `child` (its pid filters the probes). Null, the errors printed to
// options.err, when it cannot; the exit status is then 1.
std::unique_ptr<runtime::Compiled> compile(CompileOptions options, std::optional<runtime::Child>& child);

// compile(), then runtime::run. Returns the exit status.
int compile_and_run(CompileOptions options);

// `bpfscope tools`: every tool with its description and whether it compiles
// for this kernel (its probes exist and its types resolve), else why not.
// `globals`: the global options a tool's command line may carry.
int list_tools(const std::vector<tools::GlobalSpec>& globals);

// -l: the probes matching `pattern`, on stdout. Returns the exit status.
int list_probes(const std::string& pattern, bool verbose, int pid, const std::string* program = nullptr);

// `bpfscope render` of a recording (a run's -f record output): what it makes
// besides the text.
struct RecordingRender {
  std::string text_path;   // -o FILE: the text ("": stdout)
  std::string graph_path;  // --flamegraph OUT.svg: the maps keyed by stacks ("": not drawn)
  std::string heat_path;   // --heatmap OUT.svg, or - on the output in place of the histograms ("": none)
  output::RenderOptions text;
  output::FlameGraphOptions graph;
  bool kind_given = false, unit_given = false;  // else a tool's recording says them
  output::HeatMapOptions heat;
};

// Prints a recording again as the live run printed it, and draws it as
// `options` asks. `name` names the input in errors. Returns the exit status.
int render_recording(std::string_view text, const std::string& name, RecordingRender options);

// Draws folded stacks ("frame;frame;leaf COUNT" lines) as a flame graph
// into `graph_path`. Returns the exit status.
int render_folded(std::string_view text, const std::string& name, const std::string& graph_path,
                  const output::FlameGraphOptions& options);

}  // namespace bpfscope::driver
