// How a session prints its output: one Printer per output format (text,
// -f folded, -f json, -f record), chosen once from the options. The session
// calls it for each kind of output and never asks which format it writes;
// each format composes the renderers of src/output/. Internal to the runtime.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lang/source.h"
#include "output/output.h"
#include "runtime/runtime.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

// The events whose text is all they print: time(), join(), cat(), system().
enum class EventKind { Time, Join, Cat, System };

class Printer {
 public:
  virtual ~Printer() = default;

  // The probes are attached, at `time` (seconds since the epoch). Not
  // called with -q.
  virtual void attached(uint32_t probes, double time) = 0;
  // A printf() record sent from `cpu`, its arguments decoded (they may be
  // moved from). A line printed in pieces (a format that does not end in a
  // newline) is put together per CPU and printed when its last piece
  // arrives, so that two CPUs' pieces never mix. Called per event: it must
  // stay cheap.
  virtual void printf_event(uint32_t cpu, const sema::Action& action, std::vector<output::Value>& args) = 0;
  // Prints the lines left unfinished (a last piece never printed) as they are.
  virtual void end_lines() = 0;

  // A map: print(@m, top, div) during the run, `time` when it printed; the
  // maps at exit with time 0.
  virtual void map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double time) = 0;
  // At exit, a map keyed by stacks that --flamegraph draws instead of
  // printing: only folded output and recordings print it.
  virtual void drawn_map(const output::MapSnapshot& map) = 0;
  // print((@usecs, @AVG)): maps[0], a histogram, with the values of the
  // other maps of its key on each entry's label line.
  virtual void hist_notes(const std::vector<const output::MapSnapshot*>& maps) = 0;
  // print((@a, @b), rows, "FORMAT", "NAMES"): the joined table, its column
  // names and its row format.
  virtual void table(const output::Table& table, const std::vector<std::string>& names,
                     const output::PrintfFormat& row) = 0;
  // print() of a value that is no map.
  virtual void value(const output::Value& v) = 0;
  virtual void event(EventKind kind, std::string_view text) = 0;

  // errorf() (`error`) or warnf() at `loc`, its message formatted;
  // `expanded_from`: the macro calls that expanded it, innermost first.
  virtual void script_message(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc,
                              const std::vector<lang::Loc>& expanded_from) = 0;
  // A helper call at `loc` failed with `retcode` (ir::HelperSite); `helper`
  // is bpftrace's name for it.
  virtual void helper_error(std::string_view msg, std::string_view helper, int retcode, const lang::Source& src,
                            lang::Loc loc) = 0;
  // `events` more records were lost since the last report.
  virtual void lost(uint64_t events) = 0;
  // At exit, a probe's firings the kernel ran no program for. The session
  // warns of them on stderr in every format; this is what a format adds.
  virtual void missed(const std::string& probe, uint64_t firings, const char* why) = 0;
  // --mode bench: the result of bench probe names[index] (one row of the
  // text table, whose header comes before the first).
  virtual void benchmark(const std::vector<std::string>& names, size_t index, uint64_t average_ns, uint64_t iters) = 0;
  // At exit, before the maps are printed (whether or not any are).
  virtual void exit_maps_follow() = 0;

  // Text written as it is, in no format's messages (the --heatmap -
  // drawing, which only text output allows).
  virtual void write(std::string_view text) = 0;
  // Bytes written on the output so far, as messages or by write() (folded
  // stacks do not count).
  virtual size_t written() const = 0;
};

// The printer of the format the options ask for, writing on `out` (the -o
// file or stdout). The caller owns and flushes `out`; the printer refers to
// both for its lifetime.
std::unique_ptr<Printer> make_printer(const Options& options, FILE* out);

}  // namespace bpfscope::runtime
