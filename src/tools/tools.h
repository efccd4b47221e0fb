// Tools: the packaged scripts of tools/NAME.bt (tcplife, biolatency, ...),
// embedded in the binary at build time. A tool file is a bpftrace program
// whose leading comment block declares its name, description, options and
// arguments (see tools/README.md); this module reads that header, prints the
// tool's usage, and turns a command line such as `tcplife -p 181 -L 80,443`
// into the script's getopt() options and positional parameters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lang/lang.h"
#include "output/output.h"

namespace bpfscope::tools {

// What an option or argument takes. Flag: no value (getopt("name") is true
// when given). Int: an integer. Str: any text. Ports: comma-separated port
// numbers 1-65535 (for in_list()). List: comma-separated integers. Choice:
// one of `choices`. Probe: an attach point, for counting tools (funccount
// 't:net:*'); a bare name without ':' is a kernel function, kprobe:NAME, as
// bcc's tools read it. Expr: a bpftrace expression, spliced where the script
// says getopt("NAME"). Spec: bcc's probe specifier (argdist's -H/-C), cut
// into an attach point and expressions the script splices (spec.cpp).
// Errno: an error number, or its name (EPERM), which the script sees as the
// number. Trace: bcc trace's probe specifier, cut into an attach point, a
// filter and a printf the script splices (trace_specifier()).
enum class ValueKind { Flag, Int, Str, Ports, List, Choice, Probe, Expr, Spec, Errno, Trace };

// An int's bounds from the header, "(int, default 1, min 1)": values out of
// them are refused before anything is compiled, naming the option or
// argument (an interval of 0, a negative row count).
struct IntRange {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

// A global option given on a tool's command line (`-o FILE`, `-f json`...).
struct GlobalOption {
  std::string name;  // "o", "f", "dry-run", ...
  std::optional<std::string> value;
};

struct OptionSpec {
  char letter = 0;             // 'p' for -p; 0 when the option is long-only
  std::string name;            // "pid" for --pid: also the script's getopt() name
  std::string metavar;         // "PID" ("" for a flag)
  ValueKind kind = ValueKind::Flag;
  std::optional<std::string> default_value;
  IntRange range;                    // Int
  std::vector<std::string> choices;  // Choice
  bool repeated = false;             // "(spec, repeated)": may be given several times (Expr, Spec, Trace)
  // A flag declared "(sets -f folded)": giving it applies that global option
  // (profile's -f prints folded stacks); the script sees no getopt() for it.
  std::optional<GlobalOption> sets;
  std::string help;
};

// A positional argument ("[interval]"): becomes $1, $2, ... in order. An
// expr, spec or trace argument is script text, spliced as getopt("NAME")
// (not $N); "(trace, repeated)" takes every word left, at least one (bcc
// trace's `probe [probe ...]`), and is the last argument.
struct ArgSpec {
  std::string name;
  ValueKind kind = ValueKind::Int;           // Int, Str, Probe, Expr, Spec or Trace
  std::optional<std::string> default_value;  // none: the argument is required
  IntRange range;                            // Int
  bool repeated = false;
  std::string help;
};

// "// metric: @MAP NAME[(LABEL, ...)] [served-only]: HELP": how --prometheus
// serves map @MAP (output::MetricNaming). A served-only map is never
// printed: a tool that prints a line per event counts its events there.
struct ToolMetric {
  std::string map;  // "@usecs"
  output::MetricNaming naming;
  bool served_only = false;
};

struct Tool {
  std::string name;
  std::string about;  // one line
  std::vector<OptionSpec> options;
  std::vector<ArgSpec> args;
  std::vector<std::string> examples;  // "tcplife -p 1215   # only trace PID 1215"
  std::vector<std::string> notes;     // extra paragraphs of the help text
  // "// column: NAME TEXT": what a column of its output holds (its man page's COLUMNS).
  std::vector<std::pair<std::string, std::string>> columns;
  bool percentiles = false;           // "// percentiles: yes": histograms show estimated percentiles
  // "// flamegraph: KIND [UNIT]": how --flamegraph draws its stacks (and
  // -f folded lays out an off-wake key): cpu, offcpu or offwake colours and
  // layout, and the unit of its counts ("us").
  std::optional<output::GraphKind> graph;  // none: no header (a script's default graph)
  std::string graph_unit;
  std::vector<ToolMetric> metrics;
  std::string source;                 // the whole file
  std::string path;                   // "tools/tcplife.bt" or the file run directly
};

// The embedded tools, sorted by name.
const std::vector<Tool>& all();
const Tool* find(std::string_view name);

// The text of tools/lib/NAME.bt, a file that tools import, by its path
// ("tools/lib/tcp.bt"): built in, as the tools are.
std::optional<std::string> library_file(const std::string& path);

// Whether `source` starts with a tool header (a `// tool:` line among its
// leading comments).
bool has_header(std::string_view source);

// Reads a tool file's header. Errors name the line: "tools/x.bt:4: option
// line needs --NAME".
std::optional<Tool> parse(std::string source, std::string path, std::string& error);

// A command line for a tool, read against its header. Words the tool does not
// declare are handed back as global options (`-o FILE`, `-f json`, `-q`, ...:
// the letter or long name and its value) for the caller to apply.

struct Invocation {
  std::map<std::string, std::optional<std::string>> named_args;  // getopt() options
  std::vector<std::string> positional;                             // $1, $2, ...
  std::vector<GlobalOption> globals;
  // Expr and Spec options: every such option of the tool, and the values
  // given, in order, for lang::splice_options().
  std::vector<std::string> spliced_options;
  std::vector<lang::SplicedValue> spliced;
  // The values of int, str, list... options and arguments given (not the
  // defaults), for lang::locate_arguments(): `before` and `after` are the
  // words of `args` around each.
  std::vector<lang::GivenArgument> given;
  bool help = false;    // -h, --help
  bool source = false;  // --source
};

// Stand-ins for a tool's required arguments (an int 1, a probe on a syscall
// tracepoint), so that `bpfscope tools` can check that the rest compiles.
std::vector<std::string> sample_args(const Tool& tool);

// The global options a tool command line may carry, with whether each takes a
// value: the caller's table, so that both agree.
struct GlobalSpec {
  char letter = 0;
  const char* name = nullptr;  // long name, or nullptr
  bool takes_value = false;
};

// Parses `args` (the words after the tool's name). A bad command line gives
// an error message ("tcplife: invalid option -- 'x'"); the caller prints it
// with the usage and exits 2, as bcc's tools do.
std::optional<Invocation> parse_args(const Tool& tool, const std::vector<std::string>& args,
                                     const std::vector<GlobalSpec>& globals, std::string& error);

// bcc's probe specifier `text` given to --option (`origin`: "-H") as the
// parts a script splices: the attach point (getopt("OPTION")), and
// OPTION.value (the first expression), .key (a record of all of them, named
// by their text), .filter, .label (the label, or the specifier) and .unit
// (the label, or the first expression's text). nullopt with `why` when it is
// malformed.
std::optional<lang::SplicedValue> bcc_specifier(const std::string& option, const std::string& origin,
                                                const std::string& text, std::string& why);

// bcc trace's probe specifier `text`,
//   [{p,r,t,u}]:[library]:function[(signature)] [(predicate)] ["format"[, arguments]]
// given to `option` (`origin`: how errors name it, "probe"), as the parts a
// script splices: the attach point (getopt("OPTION")), OPTION.filter (the
// predicate, true without one), OPTION.func (the FUNC column: the function,
// tracepoint or USDT probe), OPTION.message (a printf of the format and its
// arguments, its formatted text named "msg" for JSON) and OPTION.formatted
// (1 when a format is given). nullopt with `why` when it is malformed.
std::optional<lang::SplicedValue> trace_specifier(const std::string& option, const std::string& origin,
                                                  const std::string& text, std::string& why);

// The tool's -h text, in libbpf-tools' layout.
std::string usage(const Tool& tool);

// The tool's man page (roff, section 8), from its header: synopsis,
// description (the notes), arguments, options, columns, metrics, examples.
std::string man_page(const Tool& tool, std::string_view version, std::string_view date);

// bpfscope(8) (roff) from the text of `bpfscope --help` (its USAGE, OPTIONS,
// ENVIRONMENT and EXAMPLES sections), with `about` as the NAME line and
// `description` (paragraphs separated by empty lines) as the DESCRIPTION,
// and a list of the tools.
std::string program_man_page(std::string_view help, std::string_view about, std::string_view description,
                             std::string_view version, std::string_view date);

// What -h and the man page say of a `percentiles: yes` tool's histograms.
inline constexpr std::string_view kPercentilesNote =
    "Each histogram is followed by its estimated p50, p90, p99 and p99.9, interpolated within the buckets (in "
    "JSON, the hist message's \"percentiles\").";

// A metric's label sets as -h and the man page list them: "pid, comm or
// key" ("" without labels).
std::string metric_labels(const output::MetricNaming& naming);

// The one-line usage synopsis ("USAGE: tcplife [-h] [-p PID] [-4] ...").
std::string synopsis(const Tool& tool);

}  // namespace bpfscope::tools
