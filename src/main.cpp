// bpfscope: the command line, read into the driver's options
// (src/driver/driver.h, which runs the pipeline).
#include <fmt/format.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>

#include "bpf/bpf.h"
#include "cookbook/cookbook.h"
#include "driver/driver.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "tools/tools.h"
#include "version.h"

namespace {

using namespace bpfscope;

// "bpfscope v0.1.0", as bpftrace prints "bpftrace v0.24.0", then the git
// revision of the build (src/version.h).
constexpr const char* kVersion = "bpfscope v" BPFSCOPE_VERSION;

// bpfscope(8)'s NAME line and DESCRIPTION; the rest of the page is kUsage
// (`bpfscope --man`, run by the build).
constexpr const char* kAbout = "trace the kernel and programs with bpftrace programs, compiled to BPF without LLVM";
constexpr const char* kDescription =
    "bpfscope runs programs written in bpftrace's language: it compiles them straight to BPF bytecode, with no LLVM "
    "or clang, loads them through libbpf and prints what bpftrace prints.\n\n"
    "It also carries packaged tools (tcplife, biolatency, runqlat...), each with a man page of its own, and can serve "
    "a program's maps as Prometheus metrics, draw flame graphs and heat maps, and print a recording again.";

constexpr const char* kUsage = R"(USAGE:
    bpfscope [options] filename [args...]
    bpfscope [options] - [args...]
    bpfscope [options] -e 'program' [args...]
    bpfscope [options] -e 'program' -- [args...] [--name[=value]...]   (getopt("name") options)
    bpfscope [options] TOOL [tool options]   (a packaged tool: tcplife, ...; TOOL -h for its usage)
    bpfscope tools                           (list the tools)
    bpfscope serve --prometheus [ADDR:]PORT TOOL [TOOL OPTIONS] [TOOL ...]
                                             (tools side by side behind one metrics endpoint;
                                              serve -h)
    bpfscope render [options] RECORDING|FILE.folded
                                             (a -f record recording printed again, or drawn; folded
                                              stacks drawn as a flame graph; render -h)
    Options may also follow the file, the program's args and -l's pattern; after `--` none do.

OPTIONS:
    -e PROGRAM     the program to run
    -o, --output FILE
                   write the program's output (printf, print, maps) to FILE
    -f FORMAT      output format: text, json (bpftrace's NDJSON, one message per
                   line), record (json plus what `bpfscope render` needs to print
                   and draw the run again) or folded (maps keyed by stacks as
                   folded stacks; other output to stderr)
    -B MODE        output buffering: line, full or none (accepted; output is flushed per batch of events)
    -q             quiet: do not print "Attached N probes"
    -A             accepted for ply's command lines (ASCII-only output, which text output is)
    -v             verbose: also print how each probe was attached
    -d STAGE       print a stage's output: ast, sema (types), ir (codegen), regalloc,
                   bpf (libbpf; a disassembly), verifier (the kernel's log), all
    -l, --list [PATTERN]
                   list probes matching PATTERN: tracepoint:CAT:EVENT, rawtracepoint:EVENT,
                   software:EVENT, hardware:EVENT, interval:UNIT, profile:UNIT, uprobe:BINARY:FUNC,
                   usdt:BINARY:[PROVIDER:]NAME (usdt:* with -p: the process's files), iter:NAME,
                   kprobe:FUNC, fentry:vmlinux:FUNC, 'struct NAME' (globs, in the probe type
                   too: '*ware:*'; default: every kernel probe type's; no ':' matches what
                   follows the type; commas separate patterns; a script file or -e: its
                   probes); with -v, also their arguments and a struct's definition
    -c CMD         run CMD as a child; tracing ends when it exits, probes filter on its pid
                   (not interval timers or iterators)
    -p PID         trace PID; tracing ends when it exits, probes filter on its pid
    --dry-run      compile and load the programs, then exit without attaching
    --mode MODE    bench: run the bench:NAME probes (between BEGIN and END; no other probe is
                   attached), each repeated until its runs take 1 ms, and print each one's mean
                   time per run; codegen: compile the program, load nothing
    --bench        the same as --mode bench
    --unsafe       allow functions that change the system: system() and signal()
    -k             report failed helper calls (probe reads, get_stackid) as located warnings;
                   failed map updates (a full map) are always reported
    --no-warnings  do not print warnf() messages
    --probe-filter REGEX
                   attach only the probes whose full name (interval:ms:200,
                   tracepoint:syscalls:sys_enter_read) REGEX matches somewhere; BEGIN and END
                   always run
    --include HEADER
                   as an `#include <HEADER>` line at the top of the program
    --percentiles  print estimated p50, p90, p99 and p99.9 under each histogram
    --flamegraph FILE.svg
                   at exit, draw the maps keyed by stacks (kstack, ustack) as an interactive
                   flame graph (click to zoom, Ctrl-F or "Search" to highlight, a browser
                   opens it offline) instead of printing them; tools colour and label it
                   (profile: CPU samples, offcputime: off-CPU us, offwaketime: off-wake us)
    --heatmap FILE.svg | -
                   draw every hist() or lhist() map printed during the run (print(@h) in an
                   interval probe, or a tool's interval) as a latency heat map: a column per
                   print, a row per bucket, the count as colour, a tooltip per cell. FILE.svg
                   is written at exit; - draws it on the output instead of the histograms,
                   redrawn as each column arrives
    --prometheus [ADDR:]PORT
                   while the program runs, serve its maps as Prometheus metrics on
                   http://ADDR:PORT/metrics, read from the kernel at each scrape (text format,
                   or OpenMetrics when the scraper asks); ADDR defaults to 127.0.0.1, an IPv6
                   one is written [::1]; PORT 0 takes a free port. Output goes on as usual.
    --prometheus-token FILE
                   every request to the endpoint must carry "Authorization: Bearer TOKEN",
                   TOKEN being what FILE holds
    --max-series N
                   series a page serves at most (default 10000; a hist() key is 68 of them):
                   the maps' keys past it fold into one series per map labelled other="true"
    --title TEXT   the flame graph's or heat map's title
    --inverted     the flame graph upside down (an icicle graph: the root at the top)
    --info         what this kernel supports (probe types, map types, helpers), found by trying
    --examples [TOPIC]
                   the one-liners of BPF Performance Tools ch. 9 and 10 as they run here, in bcc's
                   and bpftrace's forms (TOPIC: disk, net, or an entry's id; docs/one-liners.md)
    -h, --help     this help (installed: man bpfscope, and man TOOL for a tool)
    -V, --version  the version and the git revision it was built from

ENVIRONMENT:
    BPFTRACE_MAX_STRLEN   string capacity in bytes (default 1024)
    BPFTRACE_MAX_MAP_KEYS entries per keyed map (default 4096)
    BPFTRACE_MAX_CAT_BYTES bytes cat() prints of a file (default 10240)
    BPFTRACE_PERF_RB_PAGES ring buffer size in pages (default: 4096 pages when probes
                          other than BEGIN/END print; 4 or more, by what one run sends,
                          when only BEGIN/END send records; else 64)
    BPFTRACE_LICENSE, BPFTRACE_LOG_SIZE, BPFTRACE_UNSTABLE_TSERIES
                          as the config keys license, log_size, unstable_tseries

EXAMPLES:
    bpfscope -e 'tracepoint:syscalls:sys_enter_openat { printf("%s %s\n", comm, str(args.filename)); }'
    bpfscope -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'
    bpfscope -e 'interval:s:1 { printf("tick\n"); }'
    bpfscope -e 'profile:hz:99 { @[ustack, kstack] = count(); }' --flamegraph cpu.svg
    bpfscope profile --flamegraph cpu.svg 5
    bpfscope biolatency --heatmap - 1
    bpfscope -e 'tracepoint:syscalls:sys_exit_read { @ = hist(args.ret); } interval:s:1 { print(@); clear(@); }' \
        --heatmap read.svg
)";

// The command line: what the driver compiles and runs (passed to it as
// driver::CompileOptions), and what only the command line itself needs.
struct Cli : driver::CompileOptions {
  bool have_program = false;
  std::optional<std::string> list;
  std::optional<std::string> metrics_token;  // --prometheus-token
  std::optional<uint64_t> max_series;        // --max-series
  std::string mode;                          // --mode (--bench): "bench" or "codegen"; "" runs the program
};

// --mode MODE, or its alias --bench: bpftrace's modes are codegen (compile,
// do not load), compiler-bench, bench, test and format; bpfscope has no
// test probes, formatter or compiler passes to time.
std::optional<int> set_mode(Cli& cli, std::string_view mode, bool alias) {
  if (!cli.mode.empty()) {
    fmt::print(stderr, "ERROR: USAGE: {} conflicts with existing --mode\n", alias ? "--bench" : "--mode");
    return 1;
  }
  if (mode == "bench" || mode == "codegen") {
    cli.mode = mode;
    cli.run.bench = mode == "bench";
    return std::nullopt;
  }
  if (mode == "test" || mode == "compiler-bench" || mode == "format")
    fmt::print(stderr, "ERROR: --mode {} is not supported by bpfscope ({}); supported: 'bench', 'codegen'\n", mode,
               mode == "test"     ? "it has no test: probes"
               : mode == "format" ? "it has no script formatter"
                                  : "it has no compiler passes to time; -d shows each stage's output");
  else
    fmt::print(stderr, "ERROR: USAGE: --mode can only be 'bench' or 'codegen' ('{}' given)\n", mode);
  return 1;
}

// "-" is standard input. (No iostreams: their start-up, the standard
// streams and the locale's facets, costs pages of memory at every start.)
bool read_file(const std::string& path, std::string& out) {
  const bool in = path == "-";
  // Read in place: a folded file for `render` may be tens of megabytes.
  FILE* f = in ? stdin : fopen(path.c_str(), "rb");
  if (!f) return false;
  out.clear();
  char buf[1 << 16];
  size_t n;
  if (!in && fseek(f, 0, SEEK_END) == 0) {
    if (long size = ftell(f); size > 0) out.reserve(static_cast<size_t>(size));
    rewind(f);
  }
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool ok = !ferror(f);
  if (!in) fclose(f);
  if (!ok) errno = EIO;
  return ok;
}

// bpftrace's -d names are aliases of ours (DESIGN.md, Contract).
std::optional<std::string> debug_stage(std::string_view s) {
  if (s == "ast" || s == "sema" || s == "ir" || s == "regalloc" || s == "bpf" || s == "verifier" || s == "all")
    return std::string(s);
  if (s == "types") return "sema";
  if (s == "codegen" || s == "codegen-opt") return "ir";
  if (s == "libbpf") return "bpf";
  return std::nullopt;
}

// --prometheus's [ADDR:]PORT: PORT alone listens on 127.0.0.1; an IPv6
// address is written in brackets ([::1]:9100).
bool parse_listen_address(std::string_view arg, std::string& address, uint16_t& port) {
  std::string_view port_text = arg;
  size_t colon = arg.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view host = arg.substr(0, colon);
    port_text = arg.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    else if (host.find(':') != std::string_view::npos) return false;
    if (host.empty()) return false;
    address = std::string(host);
  }
  if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  unsigned long p = std::stoul(std::string(port_text));
  if (p > 65535) return false;
  port = static_cast<uint16_t>(p);
  return true;
}

enum OptionCode { kDryRun = 1000, kUnsafe, kInfo, kNoWarnings, kVerifyIr, kPercentiles, kFlamegraph, kTitle, kInverted, kHeatmap,
                  kPrometheus, kPrometheusToken, kMaxSeries, kProbeFilter, kInclude, kAot, kMode, kBench };

// Applies one global option (from getopt, or handed back by a tool's command
// line). Returns an exit status when the option ends the run (-h, -V, --info,
// a bad value), else nullopt.
std::optional<int> apply_option(Cli& cli, int c, const char* arg, bool& want_list) {
  switch (c) {
    case 'e':
      cli.program = arg;
      cli.have_program = true;
      cli.filename = "stdin";
      break;
    case 'o': cli.run.output_file = arg; break;
    case 'f':
      cli.run.recording = strcmp(arg, "record") == 0;
      cli.run.json = cli.run.recording || strcmp(arg, "json") == 0;
      cli.run.folded = strcmp(arg, "folded") == 0;
      if (!cli.run.json && !cli.run.folded && strcmp(arg, "text") != 0) {
        fmt::print(stderr,
                   "ERROR: Invalid output format \"{}\"\nValid formats: 'text', 'json', 'record', 'folded'\n", arg);
        return 1;
      }
      break;
    case 'B':
      if (strcmp(arg, "line") && strcmp(arg, "full") && strcmp(arg, "none")) {
        fmt::print(stderr, "ERROR: Invalid buffering mode \"{}\"\n", arg);
        return 1;
      }
      break;
    case 'q': cli.run.quiet = true; break;
    case 'v': cli.run.verbose = true; break;
    case 'd': {
      auto stage = debug_stage(arg);
      if (!stage) {
        fmt::print(stderr,
                   "ERROR: invalid debug stage \"{}\"; valid: ast, sema (types), ir (codegen), regalloc, bpf "
                   "(libbpf), verifier, all\n",
                   arg);
        return 1;
      }
      cli.debug.insert(*stage);
      break;
    }
    case 'l': want_list = true; break;
    case 'c': cli.child_cmd = arg; break;
    case 'p': {
      // bpftrace 0.26's words: "invalid integer" when no digit starts the
      // value, "invalid trailing bytes" after some, and 0x400000 (the
      // kernel's largest pid_max) as the bound.
      const bool digit_first = isdigit(static_cast<unsigned char>(*arg));
      char* end = nullptr;
      errno = 0;
      unsigned long long pid = digit_first ? strtoull(arg, &end, 10) : 0;
      if (!digit_first || *end) {
        fmt::print(stderr, "ERROR: Failed to parse pid: {}: {}\n",
                   digit_first ? "invalid trailing bytes" : "invalid integer", arg);
        return 1;
      }
      if (pid == 0 || pid > 0x400000 || errno == ERANGE) {
        fmt::print(stderr, "ERROR: Pid out of range: {}\n", arg);
        return 1;
      }
      if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        fmt::print(stderr, "ERROR: process {} does not exist\n", pid);
        return 1;
      }
      cli.run.target_pid = static_cast<int>(pid);
      break;
    }
    case 'h': fmt::print("{}", kUsage); return 0;
    case 'V': fmt::print("{} (git {}, {})\n", kVersion, kGitRevision, kGitDate); return 0;
    case kDryRun: cli.run.dry_run = true; break;
    case kMode: return set_mode(cli, arg, false);
    case kBench: return set_mode(cli, "bench", true);
    case kProbeFilter:
      try {
        std::regex check(arg);
      } catch (const std::regex_error& e) {
        fmt::print(stderr, "ERROR: Invalid --probe-filter regex \"{}\": {}\n", arg, e.what());
        return 1;
      }
      cli.probe_filter = arg;
      break;
    case kInclude: cli.includes.push_back(arg); break;
    case kAot:
      // bpftrace's --aot writes an executable holding the compiled program.
      fmt::print(stderr,
                 "ERROR: --aot is not supported: bpfscope compiles the program each time it runs "
                 "(run the script with bpfscope instead of an --aot executable)\n");
      return 1;
    case kUnsafe: cli.unsafe = true; break;
    case kNoWarnings: cli.run.no_warnings = true; break;
    case kPercentiles: cli.run.percentiles = true; break;
    case kFlamegraph:
      if (!*arg) {
        fmt::print(stderr, "ERROR: --flamegraph needs a file name (FILE.svg)\n");
        return 1;
      }
      cli.run.flamegraph_file = arg;
      break;
    case kHeatmap:
      if (!*arg) {
        fmt::print(stderr, "ERROR: --heatmap needs a file name (FILE.svg), or - for the terminal\n");
        return 1;
      }
      cli.run.heatmap_file = arg;
      break;
    case kTitle:
      cli.run.flamegraph.title = arg;
      cli.run.heatmap.title = arg;
      break;
    case kInverted: cli.run.flamegraph.inverted = true; break;
    case kPrometheus: {
      auto& m = cli.run.metrics.emplace(cli.run.metrics.value_or(runtime::MetricsOptions{}));
      if (!parse_listen_address(arg, m.address, m.port)) {
        fmt::print(stderr, "ERROR: --prometheus: \"{}\" is not [ADDR:]PORT (9100, 0.0.0.0:9100, [::1]:9100)\n", arg);
        return 1;
      }
      break;
    }
    case kPrometheusToken: {
      std::string token;
      if (!read_file(arg, token)) {
        fmt::print(stderr, "ERROR: --prometheus-token: cannot read {}: {}\n", arg, strerror(errno));
        return 1;
      }
      while (!token.empty() && isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
      if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos) {
        fmt::print(stderr, "ERROR: --prometheus-token: {} must hold one token (no spaces)\n", arg);
        return 1;
      }
      cli.metrics_token = token;
      break;
    }
    case kMaxSeries: {
      char* end;
      errno = 0;
      unsigned long long n = strtoull(arg, &end, 10);
      if (*end || !*arg || *arg == '-' || n == 0 || errno) {
        fmt::print(stderr, "ERROR: --max-series: \"{}\" is not a positive number\n", arg);
        return 1;
      }
      cli.max_series = n;
      break;
    }
    case 'k': cli.helper_errors = true; break;
    case kVerifyIr:
    case 'I':
    case 'A': break;  // ply's -A (ASCII-only output): the text output is ASCII already
    case kInfo: fmt::print("{}", bpf::kernel_info()); return 0;
    default: return 1;
  }
  return std::nullopt;
}

// The global options a tool's command line may carry after the tool's name,
// where the tool does not use the letter itself (tools::parse_args).
const std::vector<tools::GlobalSpec> kToolGlobals = {
    {'o', "output", true}, {'f', "format", true}, {'q', "quiet", false}, {'v', "verbose", false},
    {'c', "cmd", true},    {'k', nullptr, false}, {'d', nullptr, true},  {'B', nullptr, true},
    {0, "dry-run", false}, {0, "unsafe", false},  {0, "no-warnings", false}, {0, "percentiles", false},
    {0, "flamegraph", true}, {0, "title", true},  {0, "inverted", false}, {0, "heatmap", true},
    {0, "prometheus", true}, {0, "prometheus-token", true}, {0, "max-series", true},
};

int option_code(const std::string& name) {
  if (name == "dry-run") return kDryRun;
  if (name == "unsafe") return kUnsafe;
  if (name == "no-warnings") return kNoWarnings;
  if (name == "percentiles") return kPercentiles;
  if (name == "flamegraph") return kFlamegraph;
  if (name == "title") return kTitle;
  if (name == "inverted") return kInverted;
  if (name == "heatmap") return kHeatmap;
  if (name == "prometheus") return kPrometheus;
  if (name == "prometheus-token") return kPrometheusToken;
  if (name == "max-series") return kMaxSeries;
  return name[0];
}

// The position of the first word of argv that is neither an option nor an
// option's value: a script file, or a tool's name. 0 when there is none or
// when the program comes from -e.
int first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return 0;
    if (a.size() > 1 && a[0] == '-') {
      if (a.starts_with("-e") || a == "-l" || a.starts_with("--info")) return 0;
      if (!a.starts_with("--") && a.size() == 2 && std::string_view("ofBdcpI").find(a[1]) != std::string_view::npos)
        ++i;
      if (a == "--flamegraph" || a == "--title" || a == "--heatmap" || a == "--prometheus" ||
          a == "--prometheus-token" || a == "--max-series" || a == "--mode")
        ++i;
      continue;
    }
    // "-" is the program on stdin, never a tool.
    return a == "-" ? 0 : i;
  }
  return 0;
}

// Reads a tool's command line into `cli`: the script, its getopt() options
// and positional parameters, and the global options among the words.
std::optional<int> load_tool(Cli& cli, const tools::Tool& tool, int argc, char** argv, int from) {
  std::vector<std::string> words(argv + from, argv + argc);
  std::string err;
  auto inv = tools::parse_args(tool, words, kToolGlobals, err);
  if (!inv) {
    fmt::print(stderr, "{}\n{}\nTry '{} -h' for more information.\n", err, tools::synopsis(tool), tool.name);
    return 2;
  }
  if (inv->help) {
    fmt::print("{}", tools::usage(tool));
    return 0;
  }
  if (inv->source) {
    fmt::print("{}", tool.source);
    return 0;
  }
  // libbpf-tools print no attach line; -v brings it back with the mechanisms.
  cli.run.quiet = true;
  cli.run.ringbuf_bytes = runtime::kToolRingbuf;
  cli.run.gap_before_maps = false;
  cli.run.hist_layout = output::HistLayout::Bcc;
  cli.run.percentiles = tool.percentiles;
  cli.run.flamegraph.kind = tool.graph.value_or(output::GraphKind::Cpu);
  cli.run.flamegraph.unit = tool.graph_unit;
  cli.run.tool_graph = tool.graph.has_value();
  for (const auto& m : tool.metrics) {
    cli.run.metric_names.emplace_back(m.map, m.naming);
    if (m.served_only) cli.run.served_only.push_back(m.map);
  }
  bool want_list = false;
  for (const auto& g : inv->globals)
    if (auto rc = apply_option(cli, option_code(g.name), g.value ? g.value->c_str() : "", want_list)) return rc;
  if (cli.run.verbose) cli.run.quiet = false;
  cli.program = tool.source;
  cli.have_program = true;
  cli.filename = tool.path;
  cli.tool_name = tool.name;
  cli.positional = inv->positional;
  cli.named_args = inv->named_args;
  cli.spliced_options = inv->spliced_options;
  cli.spliced = inv->spliced;
  // The command line as typed, for hints that suggest another value
  // ("bpfscope funccount 't:tcp:*'").
  std::string command = "bpfscope";
  for (int i = 1; i < from; ++i) command += " " + lang::shell_word(argv[i]);
  cli.given = inv->given;
  for (auto& g : cli.given) g.before = command + " " + g.before;
  for (auto& v : cli.spliced)
    if (!v.label.empty()) v.before = command + " " + v.before;
  return std::nullopt;
}

// --title and --inverted describe a picture: alone they do nothing. A heat
// map on the terminal is text output.
// --prometheus-token and --max-series go with --prometheus, which they
// complete.
std::optional<int> check_metrics_options(Cli& cli) {
  auto& m = cli.run.metrics;
  if (!m && (cli.metrics_token || cli.max_series)) {
    fmt::print(stderr, "ERROR: --{} applies to the metrics endpoint: add --prometheus [ADDR:]PORT\n",
               cli.metrics_token ? "prometheus-token" : "max-series");
    return 1;
  }
  if (!m) return std::nullopt;
  if (cli.metrics_token) m->token = *cli.metrics_token;
  if (cli.max_series) m->max_series = *cli.max_series;
  const bool loopback = m->address == "127.0.0.1" || m->address == "::1" || m->address == "localhost" ||
                        m->address.starts_with("127.");
  if (!loopback && m->token.empty())
    fmt::print(stderr, "WARNING: --prometheus {}: anyone who reaches this address can read the metrics; "
               "--prometheus-token FILE makes every request carry a bearer token\n", m->address);
  return std::nullopt;
}

std::optional<int> check_graph_options(const Cli& cli) {
  const auto& g = cli.run.flamegraph;
  if (cli.run.flamegraph_file.empty() && g.inverted) {
    fmt::print(stderr, "ERROR: --inverted applies to a flame graph: add --flamegraph FILE.svg\n");
    return 1;
  }
  if (cli.run.flamegraph_file.empty() && cli.run.heatmap_file.empty() && !g.title.empty()) {
    fmt::print(stderr, "ERROR: --title applies to a picture: add --flamegraph FILE.svg or --heatmap FILE.svg\n");
    return 1;
  }
  if (cli.run.heatmap_file == "-" && (cli.run.json || cli.run.folded)) {
    fmt::print(stderr, "ERROR: --heatmap - draws on the terminal, which -f {} does not print; give --heatmap "
               "FILE.svg\n", cli.run.recording ? "record" : cli.run.json ? "json" : "folded");
    return 1;
  }
  return std::nullopt;
}

// `bpfscope render [options] INPUT`: INPUT (`-` is stdin) is a recording (a
// run's -f record output: NDJSON, its first line a JSON object), printed again
// as the live run printed it and, with --flamegraph, drawn; or folded stacks
// (`-f folded` output, or FlameGraph's collapsed stacks), drawn as a flame
// graph. argv[0] is "render".
int render(int argc, char** argv) {
  enum { kOut = 1, kRenderTitle, kRenderInverted, kKind, kUnit, kMinWidth, kHelp, kRenderPercentiles, kRenderHeat };
  static const option opts[] = {
      {"flamegraph", required_argument, nullptr, kOut}, {"title", required_argument, nullptr, kRenderTitle},
      {"inverted", no_argument, nullptr, kRenderInverted}, {"kind", required_argument, nullptr, kKind},
      {"unit", required_argument, nullptr, kUnit},        {"minwidth", required_argument, nullptr, kMinWidth},
      {"percentiles", no_argument, nullptr, kRenderPercentiles}, {"help", no_argument, nullptr, kHelp},
      {"heatmap", required_argument, nullptr, kRenderHeat}, {nullptr, 0, nullptr, 0},
  };
  constexpr const char* usage =
      "USAGE: bpfscope render [--percentiles] [-f text|folded] [-o FILE] RECORDING\n"
      "       bpfscope render --flamegraph OUT.svg [--title TEXT] [--inverted] [--kind cpu|offcpu|offwake]\n"
      "                       [--unit UNIT] [--minwidth PX] RECORDING|FILE.folded\n"
      "       bpfscope render --heatmap OUT.svg|- [--title TEXT] RECORDING\n"
      "A RECORDING is a run's -f record output (NDJSON; - reads stdin). It is printed as the live run\n"
      "printed it: maps, histograms, printf lines and tables on stdout (or -o FILE), the attach\n"
      "message and warnings on stderr; with --flamegraph its maps keyed by stacks are also drawn,\n"
      "with --heatmap the hist() and lhist() maps it printed during the run (- : on the output,\n"
      "in place of those histograms).\n"
      "Folded stacks (\"frame;frame;leaf COUNT\" lines) are drawn as a flame graph.\n"
      "  -f folded       a recording's maps keyed by stacks as folded stacks (other output to stderr)\n"
      "  --percentiles   estimated p50, p90, p99 and p99.9 under each histogram of a recording\n"
      "  --kind   colours: cpu (warm; frames ending _[k] are kernel frames), offcpu (blues), offwake\n"
      "           (blues below a -- frame, the waker's purples above it); default: as a tool's\n"
      "           recording says (profile cpu, offcputime offcpu...), else cpu\n"
      "  --unit   what the counts are (default: as a tool's recording says, else samples when\n"
      "           every map is a count(), else none; folded stacks: samples)\n"
      "  --minwidth  leave out frames narrower than PX pixels (default 0.5), and say how many\n";
  driver::RecordingRender r;
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "hf:o:", opts, nullptr)) != -1) {
    switch (c) {
      case kOut: r.graph_path = optarg; break;
      case kRenderTitle: r.graph.title = r.heat.title = optarg; break;
      case kRenderHeat: r.heat_path = optarg; break;
      case kRenderInverted: r.graph.inverted = true; break;
      case kUnit:
        r.graph.unit = optarg;
        r.unit_given = true;
        break;
      case kRenderPercentiles: r.text.percentiles = true; break;
      case 'o': r.text_path = optarg; break;
      case 'f':
        if (strcmp(optarg, "folded") != 0 && strcmp(optarg, "text") != 0) {
          fmt::print(stderr, "ERROR: render: invalid output format \"{}\" (text or folded)\n", optarg);
          return 1;
        }
        r.text.folded = strcmp(optarg, "folded") == 0;
        break;
      case kMinWidth: {
        char* end;
        const double w = strtod(optarg, &end);
        if (*end || !(w >= 0.01 && w <= 100)) {
          fmt::print(stderr, "ERROR: render: --minwidth takes pixels from 0.01 to 100, not \"{}\"\n", optarg);
          return 1;
        }
        r.graph.min_width = w;
        break;
      }
      case kKind:
        if (auto k = output::graph_kind(optarg)) {
          r.graph.kind = *k;
          r.kind_given = true;
          break;
        }
        fmt::print(stderr, "ERROR: render: unknown --kind \"{}\" (cpu, offcpu or offwake)\n", optarg);
        return 1;
      case 'h':
      case kHelp: fmt::print("{}", usage); return 0;
      default:
        fmt::print(stderr, "ERROR: render: unknown or incomplete option: {}\n{}", argv[optind - 1], usage);
        return 1;
    }
  }
  if (argc - optind != 1) {
    fmt::print(stderr, "ERROR: render: expected one input file (a recording or FILE.folded, or - for stdin)\n{}",
               usage);
    return 1;
  }
  const std::string in_path = argv[optind];
  const std::string name = in_path == "-" ? "stdin" : in_path;
  std::string text;
  if (!read_file(in_path, text)) {
    fmt::print(stderr, "ERROR: render: cannot open {}: {}\n", in_path, strerror(errno));
    return 1;
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool recording = first != std::string::npos && text[first] == '{';
  if (recording) return driver::render_recording(text, name, std::move(r));
  if (!r.heat_path.empty()) {
    fmt::print(stderr, "ERROR: render: --heatmap draws a recording's histograms; {} holds folded stacks\n", name);
    return 1;
  }
  if (r.graph_path.empty()) {
    fmt::print(stderr, "ERROR: render: nothing to do: give --flamegraph OUT.svg (the input holds folded stacks)\n{}", usage);
    return 1;
  }
  return driver::render_folded(text, name, r.graph_path, r.graph);
}

constexpr const char* kServeUsage = R"(USAGE:
    bpfscope serve --prometheus [ADDR:]PORT [--prometheus-token FILE] [--max-series N]
                   TOOL [TOOL OPTIONS] [TOOL [TOOL OPTIONS]]...

Runs packaged tools side by side in one process, behind one metrics endpoint
on http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1), until SIGINT or
SIGTERM. A word that names a tool starts the next tool (unless it is an
option's value). The tools print nothing (their -o FILE excepted); errors and
warnings go to stderr. docs/metrics.md has a systemd unit and a scrape config.

EXAMPLE:
    bpfscope serve --prometheus 9500 biolatency -D tcplife runqlat
)";

// `bpfscope serve [options] TOOL [tool options] [TOOL ...]`.
int serve(int argc, char** argv) {
  Cli base;
  bool want_list = false;
  // serve's own options come before the first tool ('+': getopt stops there).
  static const option serve_options[] = {
      {"prometheus", required_argument, nullptr, kPrometheus},
      {"prometheus-token", required_argument, nullptr, kPrometheusToken},
      {"max-series", required_argument, nullptr, kMaxSeries},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "+:h", serve_options, nullptr)) != -1;) {
    if (c == 'h') {
      fmt::print("{}", kServeUsage);
      return 0;
    }
    if (c == ':') {
      fmt::print(stderr, "ERROR: serve: {} needs a value\n", argv[optind - 1]);
      return 1;
    }
    if (c == '?') {
      fmt::print(stderr, "ERROR: serve: unknown option {} (options of a tool follow its name)\n{}", argv[optind - 1],
                 kServeUsage);
      return 1;
    }
    if (auto rc = apply_option(base, c, optarg, want_list)) return *rc;
  }
  int i = optind;
  if (!base.run.metrics) {
    fmt::print(stderr, "ERROR: serve needs --prometheus [ADDR:]PORT (Prometheus's exporter ports are all "
               "allocated, so bpfscope has no default: pick one)\n{}", kServeUsage);
    return 1;
  }
  if (auto rc = check_metrics_options(base)) return *rc;
  // The tools, each with the words up to the next tool's name.
  std::vector<std::pair<const tools::Tool*, std::vector<char*>>> groups;
  for (; i < argc; ++i) {
    const tools::Tool* t = tools::find(argv[i]);
    bool value_of_option = false;
    if (!groups.empty() && !groups.back().second.empty()) {
      std::string_view prev = groups.back().second.back();
      for (const auto& o : groups.back().first->options)
        if (!o.metavar.empty() && (prev == "--" + o.name || (o.letter && prev == std::string{'-', o.letter})))
          value_of_option = true;
    }
    if (t && !value_of_option) {
      groups.push_back({t, {}});
    } else if (groups.empty()) {
      fmt::print(stderr, "ERROR: serve: {} is no tool; `bpfscope tools` lists them\n", argv[i]);
      return 1;
    } else {
      groups.back().second.push_back(argv[i]);
    }
  }
  if (groups.empty()) {
    fmt::print(stderr, "ERROR: serve: no tool given\n{}", kServeUsage);
    return 1;
  }
  std::vector<std::unique_ptr<runtime::Compiled>> runs;
  for (auto& [tool, words] : groups) {
    Cli cli;
    std::vector<char*> args = {argv[0], const_cast<char*>(tool->name.c_str())};
    args.insert(args.end(), words.begin(), words.end());
    if (auto rc = load_tool(cli, *tool, static_cast<int>(args.size()), args.data(), 2)) return *rc;
    if (cli.run.metrics || cli.metrics_token || cli.max_series) {
      fmt::print(stderr, "ERROR: serve: --prometheus and its options come before the first tool\n");
      return 1;
    }
    if (!cli.child_cmd.empty()) {
      fmt::print(stderr, "ERROR: serve: {}: -c runs no command under serve (-p PID follows a process)\n",
                 tool->name);
      return 1;
    }
    // An agent: the tools print nowhere but to their -o file, and their
    // event buffers are the small ones (a loss is still counted and served).
    cli.run.quiet = true;
    if (cli.run.output_file.empty()) {
      cli.run.output_file = "/dev/null";
      cli.run.ringbuf_bytes = runtime::kQuietRingbuf;
    }
    std::optional<runtime::Child> child;
    auto c = driver::compile(cli, child);
    if (!c) return 1;
    runs.push_back(std::move(c));
  }
  return runtime::serve(runs, *base.run.metrics);
}

}  // namespace

int main(int argc, char** argv) {
  // `bpfscope --man [TOOL]`: the man page, for the build (CMakeLists.txt).
  if (argc >= 2 && argc <= 3 && strcmp(argv[1], "--man") == 0) {
    if (argc == 2) {
      fmt::print("{}", tools::program_man_page(kUsage, kAbout, kDescription, BPFSCOPE_VERSION, kGitDate));
      return 0;
    }
    const tools::Tool* t = tools::find(argv[2]);
    if (!t) {
      fmt::print(stderr, "ERROR: --man: no tool {}\n", argv[2]);
      return 1;
    }
    fmt::print("{}", tools::man_page(*t, BPFSCOPE_VERSION, kGitDate));
    return 0;
  }
  Cli cli;
  static const option longopts[] = {
      {"dry-run", no_argument, nullptr, kDryRun},   {"unsafe", no_argument, nullptr, kUnsafe},
      {"info", no_argument, nullptr, kInfo},        {"no-warnings", no_argument, nullptr, kNoWarnings},
      {"verify-llvm-ir", no_argument, nullptr, kVerifyIr}, {"help", no_argument, nullptr, 'h'},
      {"percentiles", no_argument, nullptr, kPercentiles},
      {"flamegraph", required_argument, nullptr, kFlamegraph}, {"title", required_argument, nullptr, kTitle},
      {"inverted", no_argument, nullptr, kInverted}, {"heatmap", required_argument, nullptr, kHeatmap},
      {"prometheus", required_argument, nullptr, kPrometheus},
      {"prometheus-token", required_argument, nullptr, kPrometheusToken},
      {"max-series", required_argument, nullptr, kMaxSeries},
      {"output", required_argument, nullptr, 'o'},  {"probe-filter", required_argument, nullptr, kProbeFilter},
      {"include", required_argument, nullptr, kInclude}, {"aot", required_argument, nullptr, kAot},
      {"mode", required_argument, nullptr, kMode},  {"bench", no_argument, nullptr, kBench},
      {"version", no_argument, nullptr, 'V'},       {"list", no_argument, nullptr, 'l'},
      {nullptr, 0, nullptr, 0},
  };
  // The cookbook (src/cookbook/cookbook.h): `bpfscope --examples [TOPIC]`.
  if (argc >= 2 && strcmp(argv[1], "--examples") == 0) {
    if (argc <= 3) return cookbook::print_examples(argc == 3 ? argv[2] : "", stdout, stderr);
    fmt::print(stderr, "ERROR: --examples takes one topic or entry at most\n");
    return 1;
  }
  // `bpfscope [options] TOOL [tool options]`: the global options come before
  // the tool's name; the words after it are the tool's (tools/NAME.bt's
  // header), and a tool file given by path is run the same way.
  std::optional<tools::Tool> tool;
  int tool_at = first_word(argc, argv);
  if (tool_at) {
    std::string_view word = argv[tool_at];
    if (word == "tools") return driver::list_tools(kToolGlobals);
    if (word == "render" && tool_at == 1) return render(argc - 1, argv + 1);
    if (word == "serve" && tool_at == 1) return serve(argc - 1, argv + 1);
    if (const tools::Tool* t = tools::find(word); t && word.find('/') == std::string_view::npos) {
      tool = *t;
    } else if (std::string text; read_file(std::string(word), text) && tools::has_header(text)) {
      std::string err;
      tool = tools::parse(std::move(text), std::string(word), err);
      if (!tool) {
        fmt::print(stderr, "ERROR: {}\n", err);
        return 1;
      }
    }
  }
  int global_argc = tool ? tool_at : argc;
  // As bpftrace: getopt_long permutes, so options may also follow the script
  // file, the -l pattern and positional parameters (`bpfscope -l 'usdt:*' -p
  // PID`, `bpfscope s.bt -q`); the non-options end up, in order, from optind
  // on. `--` ends the options: the words after it stay as they are, even ones
  // starting with '-' (positional parameters, getopt()'s --name[=value]).
  int c;
  opterr = 0;
  bool want_list = false;
  while ((c = getopt_long(global_argc, argv, "e:o:f:B:qvd:lc:p:hVkI:A", longopts, nullptr)) != -1) {
    if (c == '?' || c == ':') {
      fmt::print(stderr, "ERROR: unknown or incomplete option: {}\n", argv[optind - 1]);
      fmt::print(stderr, "{}", kUsage);
      return 1;
    }
    if (auto rc = apply_option(cli, c, optarg, want_list)) return *rc;
  }
  if (tool) {
    if (auto rc = load_tool(cli, *tool, argc, argv, tool_at + 1)) return *rc;
    if (auto rc = check_graph_options(cli)) return *rc;
    if (auto rc = check_metrics_options(cli)) return *rc;
    return driver::compile_and_run(cli);
  }
  // getopt_long consumes the first `--` and moves it in front of the
  // non-options it had skipped: argv[optind - 1] is then `--` (`-e PROG --
  // --n=5`, `s.bt -q -- --n=5`), and every word from optind on came before or
  // after it in the order given.
  bool after_dashes = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
  if (want_list)
    return driver::list_probes(optind < argc ? argv[optind] : "", cli.run.verbose, cli.run.target_pid,
                               cli.have_program ? &cli.program : nullptr);
  if (!cli.have_program) {
    if (optind >= argc) {
      fmt::print(stderr, "ERROR: no program given (use -e 'program', a file, or - for stdin)\n{}", kUsage);
      return 1;
    }
    std::string path = argv[optind++];
    if (!read_file(path, cli.program)) {
      fmt::print(stderr, "ERROR: failed to open file '{}': {}\n", path, strerror(errno));
      if (path.find('/') == std::string::npos && path.find('.') == std::string::npos)
        fmt::print(stderr, "HINT: {} is not a file nor a tool; `bpfscope tools` lists the tools\n", path);
      return 1;
    }
    cli.filename = path == "-" ? "stdin" : path;
  }
  // After `--`, `--name[=value]` words are getopt() options (0.24); the
  // others stay positional parameters.
  for (int i = optind; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0 && !after_dashes) {
      after_dashes = true;
      continue;
    }
    std::string_view arg = argv[i];
    if (after_dashes && arg.size() > 2 && arg.starts_with("--")) {
      arg.remove_prefix(2);
      size_t eq = arg.find('=');
      if (eq == std::string_view::npos)
        cli.named_args[std::string(arg)] = std::nullopt;
      else
        cli.named_args[std::string(arg.substr(0, eq))] = std::string(arg.substr(eq + 1));
      continue;
    }
    cli.positional.push_back(argv[i]);
  }
  if (auto rc = check_graph_options(cli)) return *rc;
  if (auto rc = check_metrics_options(cli)) return *rc;
  if (cli.mode == "codegen") {
    // Compiled (errors reported), never loaded; a -c child, held until the
    // probes attach, sees the pipe close and exits.
    std::optional<runtime::Child> child;
    return driver::compile(cli, child) ? 0 : 1;
  }
  return driver::compile_and_run(cli);
}
