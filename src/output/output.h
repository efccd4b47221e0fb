// Output: one value model, rendered as bpftrace text (and later JSON, folded
// stacks, SVG, Prometheus). This stage depends on nothing else in bpfscope:
// the runtime decodes kernel bytes into these values and calls the renderers.
#pragma once

#include <cmath>
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace bpfscope::output {

// A decoded value.
struct Value {
  // Array: elems printed "[1,2,3]"; Buffer: raw bytes in `s`, printed with
  // \xNN escapes as printf's %r does.
  // Float: a printf argument divided by a floating-point literal ($ns /
  // 1000000.0), a bpfscope extension; maps never hold one.
  enum class Kind { None, Int, UInt, Bool, String, Tuple, Array, Buffer, Float };
  Kind kind = Kind::None;
  int64_t i = 0;   // Int, Bool (0/1)
  uint64_t u = 0;  // UInt
  double f = 0;    // Float
  std::string s;   // String
  std::vector<Value> elems;  // Tuple, Array
  std::vector<std::string> names;  // Tuple: a record's field names, one per elem (empty: a plain tuple)
  bool pointer = false;  // UInt holding an address: text prints it as hex (0x32), JSON as a number
  bool is_enum = false;  // Int/UInt of an enum with a name for it in `s`: text prints the name, JSON the number
  // A String holding a stack as its mode prints it (`s`) also carries the
  // stack's frames, innermost first, as function names without offsets
  // (`elems`), for folded output and flame graphs.
  enum class StackOf : uint8_t { None, Kernel, User };
  StackOf stack = StackOf::None;

  // The integer as int64 bits, whatever its kind (0 for strings, tuples,
  // none; a Float truncated toward zero, saturated at the int64 range).
  int64_t as_i64() const {
    if (kind == Kind::UInt) return static_cast<int64_t>(u);
    if (kind == Kind::Float) {
      if (std::isnan(f)) return 0;
      if (f >= 0x1p63) return INT64_MAX;
      return f < -0x1p63 ? INT64_MIN : static_cast<int64_t>(f);
    }
    return kind == Kind::Int || kind == Kind::Bool ? i : 0;
  }
  // The number as a double (an unsigned integer as unsigned).
  double as_double() const {
    if (kind == Kind::Float) return f;
    if (kind == Kind::UInt) return static_cast<double>(u);
    return static_cast<double>(as_i64());
  }

  static Value of_int(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
  static Value of_uint(uint64_t v) { Value x; x.kind = Kind::UInt; x.u = v; return x; }
  static Value of_pointer(uint64_t v) { Value x = of_uint(v); x.pointer = true; return x; }
  static Value of_float(double v) { Value x; x.kind = Kind::Float; x.f = v; return x; }
  static Value of_bool(bool v) { Value x; x.kind = Kind::Bool; x.i = v; return x; }
  static Value of_string(std::string v) { Value x; x.kind = Kind::String; x.s = std::move(v); return x; }
  static Value of_tuple(std::vector<Value> v) { Value x; x.kind = Kind::Tuple; x.elems = std::move(v); return x; }
  static Value of_record(std::vector<std::string> names, std::vector<Value> v) {
    Value x = of_tuple(std::move(v));
    x.names = std::move(names);
    return x;
  }
  static Value of_array(std::vector<Value> v) { Value x; x.kind = Kind::Array; x.elems = std::move(v); return x; }
  static Value of_buffer(std::string bytes) { Value x; x.kind = Kind::Buffer; x.s = std::move(bytes); return x; }
  static Value of_stack(StackOf of, std::string text, std::vector<std::string> frames) {
    Value x = of_string(std::move(text));
    x.stack = of;
    for (auto& f : frames) x.elems.push_back(of_string(std::move(f)));
    return x;
  }
};

// Text of a value as bpftrace prints it with print() and in map values:
// ints in decimal, pointers in hex (0x32), floats as C's %g (9.76562), bool true/false, strings bare, tuples "(1, a, (2, 3))",
// records "{ .a = 1, .b = x }".
std::string to_text(const Value& v);

// A map key as printed between [ ]: like to_text, but a tuple key loses its
// outer parentheses ("@t[a, 2]").
std::string key_text(const Value& key);

// A frame of the tracer itself, on top of every kernel stack a tracing
// probe takes: its BPF program ("bpf_prog_<tag>_<name>", the tag 16 hex
// digits) and the kernel's code that called it (bpf_trace_run2,
// __bpf_trace_sched_switch, __traceiter_sched_switch, a BPF trampoline).
bool tracer_frame(std::string_view name);

enum class AggKind { Plain, Count, Sum, Min, Max, Avg, Stats, Hist, LHist, TSeries };
// hist() or lhist(): entries hold bucket counts.
inline bool is_histogram(AggKind k) { return k == AggKind::Hist || k == AggKind::LHist; }

// tseries(v, interval, n[, agg]): how the values recorded in one interval
// combine. Last keeps the most recent one (no agg argument).
enum class TSeriesAgg { Last, Avg, Max, Min, Sum };
struct TSeriesParams {
  uint64_t interval_ns = 1;  // the length of an interval
  uint32_t intervals = 1;    // how many intervals it keeps (the last ones)
  TSeriesAgg agg = TSeriesAgg::Last;
};
// A tseries() map's kernel value: per CPU, one {value, meta, epoch} slot of
// 3 u64 per interval, interval epoch % intervals.
constexpr uint32_t kTSeriesSlotSize = 24;
// The most intervals a tseries() keeps: the kernel caps a per-CPU map value
// at 32 KiB.
constexpr uint32_t kMaxTSeriesIntervals = 32768 / kTSeriesSlotSize;
// tseries()'s aggregation as its argument names it ("last" for none), and back.
std::string_view tseries_agg_name(TSeriesAgg agg);
std::optional<TSeriesAgg> tseries_agg_of(std::string_view name);
// Reduces such a value (ncpus copies, `stride` bytes apart) to a value per
// epoch as bpftrace does: the CPUs' slots of one epoch combine by the
// aggregation, and each interval keeps its latest epoch.
std::map<uint64_t, int64_t> tseries_of(const TSeriesParams& p, bool is_signed, const uint8_t* value, int ncpus,
                                       uint32_t stride);

// One map entry's value, already summed over CPUs by the runtime.
struct Aggregate {
  Value value;           // Plain, Count, Sum, Min, Max: the value (Int or UInt)
  int64_t count = 0;     // Avg, Stats
  int64_t total = 0;     // Avg, Stats
  // Stats: the smallest and largest value recorded (Int or UInt), Kind::None
  // when none was. Only metrics serve them: bpftrace's stats() prints none.
  Value min, max;
  std::vector<uint64_t> buckets;  // Hist, LHist: the bucket counts by index
  int64_t sum = 0;       // Hist, LHist: the sum of the values recorded (metrics' _sum; print() shows none)
  // TSeries: an interval's value (Int or UInt by the map's signedness, as
  // int64 bits) by its epoch, the TAI time in ns over interval_ns. An epoch
  // of 0 is an interval never written (bpftrace shows it as such).
  std::map<uint64_t, int64_t> series;
};

struct HistParams {
  int bits = 0;     // hist(n, k): k, 0-5
  int64_t min = 0;  // lhist
  int64_t max = 0;
  int64_t step = 1;
};

// How a metrics page names a map, when a packaged tool's header says
// ("// metric: @count syscount_calls(syscall | pid, comm): ..."): the family
// bpfscope_NAME, the key fields' labels in order (the first set with as
// many names as the key has fields; else the key's own names), and the
// HELP text.
struct MetricNaming {
  std::string name;
  std::vector<std::vector<std::string>> labels;
  std::string help;
};

struct MapSnapshot {
  std::string name;     // "@x", "@" for the anonymous map
  const MetricNaming* metric = nullptr;  // a tool's name for it on a metrics page
  AggKind kind = AggKind::Plain;
  bool keyed = false;   // @m[k] rather than @m
  bool value_signed = true;
  HistParams hist;
  TSeriesParams tseries;
  std::vector<std::pair<Value, Aggregate>> entries;  // key (Kind::None when !keyed), value
};

// a + b as the kernel's 64-bit adds make it: wrapping, as no int64_t
// addition may (a sum of values near 2^63, a total over CPUs).
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Adds `from` into `into`, two entries of a `kind` map taken as one: counts,
// sums, averages' counts and totals, histogram buckets and sums add up,
// min() and max() (and a stats() entry's min and max) keep the smaller or
// larger value, a plain map keeps `into`'s value.
// (Two kernel stacks that print alike; the keys a metrics page folds into one.)
void merge_aggregate(AggKind kind, Aggregate& into, const Aggregate& from);

// How hist() maps print: bpftrace's "[4, 8)  3 |@@@ |" lines, or the log2
// table of bcc's libbpf-tools ("4 -> 7 : 3 |*** |" under a "usecs : count
// distribution" header named after the map, a "name = value" line before
// each keyed entry; lhist() maps as its linear table, linear_table()), which
// the packaged tools use.
enum class HistLayout { Bpftrace, Bcc };

// The map as bpftrace 0.26 prints it at exit and for print(@m, top, div):
// entries sorted per REFERENCE.md 4.3, `top` keeps the last top entries (0 =
// all), `div` divides values (0 or 1 = no division). Prints nothing for an
// empty map. Ends with "\n" after each line; histograms end with an empty line.
// With `percentiles`, each histogram is followed by its percentile line.
std::string map_text(const MapSnapshot& map, uint64_t top = 0, uint64_t div = 0,
                     HistLayout layout = HistLayout::Bpftrace, bool percentiles = false);

// print((@usecs, @AVG)): a histogram map with the values of other maps of
// its key on each entry's label line, in the bcc layout ("[AVG 16]").
std::string hist_notes_text(const MapSnapshot& hist, const std::vector<const MapSnapshot*>& notes, HistLayout layout,
                            bool percentiles);

// The histogram body only (the bucket lines), for one entry.
std::string hist_text(const std::vector<uint64_t>& buckets, int bits);
std::string lhist_text(const std::vector<uint64_t>& buckets, int64_t min, int64_t max, int64_t step);

// Bucket index for a value, the same function the BPF code computes; used by
// tests and by user-space fallbacks.
uint32_t hist_index(int64_t value, int bits);

// hist() buckets (bits 0) as libbpf-tools' print_log2_hist table: slot 0
// holds 0 and 1 (and negatives), slot k>0 [2^k, 2^(k+1)); `unit` names the
// values. Empty when every bucket is.
std::string log2_table(const std::vector<uint64_t>& buckets, std::string_view unit);
// An lhist() entry as libbpf-tools' linear table: "     runqlen       : count
// distribution", then "        3          : 12       |****|" per non-empty bucket.
std::string linear_table(const std::vector<uint64_t>& buckets, int64_t min, int64_t max, int64_t step,
                         std::string_view unit);
uint32_t hist_bucket_count(int bits);  // number of buckets for hist(n, bits)
uint32_t lhist_index(int64_t value, int64_t min, int64_t max, int64_t step);
uint32_t lhist_bucket_count(int64_t min, int64_t max, int64_t step);

// A table of maps joined by key, for print((@a, @b / 1024), rows, "FORMAT",
// "NAMES") (a bpfscope extension for top-style tools).
struct TableDivisor {
  double by = 0;          // 0: not divided
  bool is_float = false;  // divided as a double (1024.0), else as an integer
};
struct Table {
  std::vector<std::vector<Value>> rows;  // the key's fields, then one value per map
};

// Percentiles (--percentiles): p50, p90, p99 and p99.9 of a hist() or
// lhist() entry's buckets (empty for an empty one or another kind), each the
// value where the running count crosses that share of the total, linearly
// interpolated inside the bucket (so an estimate: the buckets are all that is
// kept); as text ("p50 = 96, p90 = 480, p99 = 1000, p99.9 = 1018 (estimated
// within buckets)\n") and JSON ({"p50": 96.0, ...}).
const std::vector<double>& percentile_levels();
std::vector<double> estimate_percentiles(const MapSnapshot& map, const std::vector<uint64_t>& buckets);
std::string percentiles_text(const std::vector<double>& values);
std::string percentiles_json(const std::vector<double>& values);

// Stacks: one model for folded stacks and flame graphs. A map keyed by
// stacks becomes a list of stacks, each its frames root first (a frame has
// a name and a kind) and its count; the folded text and the SVG writer both
// read that list, and neither parses the other's output.
enum class FrameKind : uint8_t {
  Other,      // a key field that is no stack (comm, pid...), or an unmarked folded frame
  User,       // a user-space function
  Kernel,     // a kernel function (folded: "_[k]" when the key also has a user stack)
  Separator,  // "--" between a blocked stack and its waker's (off-wake graphs)
};
struct Frame {
  std::string name;
  FrameKind kind = FrameKind::Other;
  bool operator==(const Frame&) const = default;
};
struct Stack {
  std::vector<Frame> frames;  // root first
  int64_t count = 0;          // the map's value (an avg() map: the average)
};
struct StackSet {
  std::vector<Stack> stacks;  // in the map's entry order; a stack may repeat
  // The keys hold both a user and a kernel stack: folded text marks the
  // kernel frames "_[k]" (FlameGraph's palettes colour them apart).
  bool user_and_kernel = false;
};

// How a map's key becomes a stack.
// Plain: the other key fields (comm, pid...) first, then the user stack,
// then the kernel stack above it, each root first. A kernel stack leaves out
// the frames of the tracer itself at its leaf end (the BPF program,
// bpf_trace_run*, __bpf_trace_*, __traceiter_*, a BPF trampoline), which
// would top every stack a tracing probe takes.
// OffWake (offwaketime): the key's fields are two equal halves, the blocked
// thread's and then its waker's, as Brendan Gregg's off-wake flame graphs
// stack them: the blocked half as Plain, a "--" separator frame, then the
// waker's half reversed (kernel stack leaf first, then user stack leaf
// first, then its other fields), so the two stacks meet at the wakeup.
enum class StackLayout { Plain, OffWake };

// Whether a map's keys hold a kernel or user stack (a count, sum, avg, min,
// max or plain map).
bool is_foldable(const MapSnapshot& map);
StackSet map_stacks(const MapSnapshot& map, StackLayout layout = StackLayout::Plain);

// Folded stacks (-f folded): "frame;frame;leaf count" lines, root first;
// ';' and newlines in names become ':'; stacks that fold to the same line
// are summed, stacks with no frames dropped, lines sorted.
std::string folded_text(const StackSet& set);
std::string folded_text(const MapSnapshot& map, StackLayout layout = StackLayout::Plain);
// One stack value as a folded line's frames: root first, joined by ';' (a
// ';' or newline in a name becomes ':'), a kernel stack without the
// tracer's frames at its leaf end ("" for an empty stack).
std::string folded_stack(const Value& stack);

// Folded stacks read back (bpfscope render, src/output/folded_read.cpp):
// one "frame;frame;leaf COUNT" line per stack; "_[k]" marks a kernel frame
// (the mark is removed), "--" is a separator, other frames are user frames;
// empty lines are skipped. A malformed line is an error
// "FILE:LINE: ERROR: ..." naming it.
std::expected<StackSet, std::string> read_folded(std::string_view text, std::string_view filename);

// Flame graphs (--flamegraph FILE.svg, src/output/flamegraph.cpp): the
// stacks merged into a tree, as an interactive SVG that works offline (its
// script is inline): tooltips, click to zoom, search, reset.
enum class GraphKind {
  Cpu,     // on-CPU samples: warm colours (user red, kernel orange)
  OffCpu,  // blocked time: blues
  OffWake, // blocked stack in blues, "--", its waker's stack in purples
};
struct FlameGraphOptions {
  std::string title;               // "" : by kind ("CPU Flame Graph", ...)
  std::string unit = "samples";    // what the counts are: "samples", "us"
  GraphKind kind = GraphKind::Cpu;
  bool inverted = false;           // icicle: the root at the top
  int width = 1200;                // pixels
  // Frames narrower than this (pixels) are not drawn, nor their children:
  // at 0.5 a browser opens a graph of 100,000 stacks in well under a
  // second (bench/flamegraph.py); at FlameGraph's 0.1 it draws 7x more.
  double min_width = 0.5;
};
struct FlameGraph {
  std::string svg;
  size_t frames_drawn = 0;
  size_t frames_hidden = 0;  // narrower than min_width (with their descendants)
  int64_t total = 0;         // the root's count
};
FlameGraph flamegraph_svg(const StackSet& set, const FlameGraphOptions& options);
// The flame graph of a run's maps keyed by stacks (--flamegraph at exit, and
// render of its recording): with several maps, each one's stacks stand on a
// frame naming it; when options.unit is "", the counts are "samples" if
// every map is a count(), else they have no unit.
FlameGraph maps_flamegraph(const std::vector<MapSnapshot>& maps, StackLayout layout, FlameGraphOptions options);

// "cpu", "offcpu", "offwake" (a tool's "// flamegraph: KIND UNIT" header).
std::optional<GraphKind> graph_kind(std::string_view name);
std::string_view graph_name(GraphKind kind);
// An off-wake graph's keys are laid out as StackLayout::OffWake.
StackLayout stack_layout(GraphKind kind);

// Heat maps (--heatmap, src/output/heatmap.cpp): every hist() or lhist()
// map printed during a run (print(@h) in an interval probe, a tool's
// [interval]) adds a column per print; rows are its buckets, the colour is
// the count. A keyed map has a series per key.
struct HeatSeries {
  std::string map;           // "@usecs"
  std::optional<Value> key;  // a keyed map's entry key
  std::string key_label;     // its text ("" for none), which finds the series again
  AggKind kind = AggKind::Hist;  // Hist or LHist
  HistParams hist;
  std::vector<double> times;                   // per column: when printed, seconds since the epoch
  std::vector<std::vector<uint64_t>> columns;  // per column: bucket counts by index (empty: no entry then)
  std::string name() const;  // "@usecs", "@usecs[sda]"
};
class HeatMaps {
 public:
  // A column more for every series of `map` (a hist() or lhist() map; other
  // kinds are left out) printed at `time`; an entry seen for the first time
  // starts a series, empty in the columns before.
  void add(const MapSnapshot& map, double time);
  const std::vector<HeatSeries>& series() const { return series_; }
  bool empty() const { return series_.empty(); }

 private:
  std::vector<HeatSeries> series_;
};
struct HeatMapOptions {
  std::string title;  // "" : "Latency Heat Map"
  // The run's start (seconds since the epoch), where the time axis begins;
  // 0: one column's spacing before the first column.
  double start = 0;
};
// An SVG: a panel per series (its rows the buckets with a count in some
// column, labelled as the text labels them, the largest at the top), each
// cell a <rect class="cell" data-col data-row data-count> with a tooltip
// (the time and the bucket's count); a time axis and a colour legend.
std::string heatmap_svg(const std::vector<HeatSeries>& series, const HeatMapOptions& options);
// Terminal text: per series a title line, a row per bucket of 256-colour
// blocks (one character per column, blank for 0; the newest columns that
// fit in `width`), a time axis and the colour scale.
std::string heatmap_terminal(const std::vector<HeatSeries>& series, const HeatMapOptions& options, int width);

// printf: the format is parsed once (at compile time, by sema, to check the
// argument count and types) and applied in user space to each event.
// One printf conversion split into its parts.
struct PrintfConversion {
  std::string flags;  // any of "-+ #0", as written
  int width = -1;
  int precision = -1;
  bool star_width = false;      // "%*d": the width is an argument
  bool star_precision = false;  // "%.*s": the precision is an argument
  std::string length;
  char conv = 0;
  std::string buffer_mode;
  size_t end = 0;  // one past the conversion in the scanned text
};

struct PrintfSpec {
  enum class ArgKind { Integer, String, Any };  // what the conversion wants
  std::string literal_before;  // text before this conversion (%% already turned into %)
  std::string spec;            // the conversion as written, e.g. "%-08lld"
  char conv = 0;               // d i u o x X c s p e E f F g G a A, 'r' for %r/%rx/%rh, 'm' for %gr
  std::string length;          // "", hh, h, l, ll, j, z, t, L
  std::string buffer_mode;     // for %r: "", "x", "h"
  ArgKind wants = ArgKind::Any;
  // "%2$-10d": the column it prints, 0-based (-1: the next). Only a table's
  // row format (print((@m,), rows, FORMAT, NAMES)) takes one.
  int column = -1;
  // `spec` as parse_printf read it, so that events are formatted without
  // reading the text again (a spec built by hand has none).
  std::optional<PrintfConversion> parts;
};

struct PrintfFormat {
  std::vector<PrintfSpec> specs;
  std::string trailing;  // text after the last conversion
};

// The bytes of a buffer as printf's %r ("" mode: bytes 32..126 kept, others
// \xNN), %rx ("x": every byte \xNN) or %rh ("h": spaced hex "61 62").
std::string buffer_text(std::string_view bytes, std::string_view mode);

// GFP allocation flags as printf's %gr prints them (the kernel's %pGg): the
// named combinations and single flags that are set, in the kernel's order,
// joined by '|', then any bits left over in hex ("GFP_KERNEL|__GFP_ZERO",
// "GFP_DMA|0x8"); "0" for none.
std::string gfp_flags_text(uint64_t flags);

// Returns the parsed format, or an error message (e.g. "printf: Unknown format
// string token: %y").
std::variant<PrintfFormat, std::string> parse_printf(std::string_view fmt);

// Formats with C semantics: with no length modifier %d/%i convert to 32-bit
// int and %u/%o/%x/%X to unsigned int; %s prints any value as to_text.
// %e %f %g %a print integers and floats as doubles; integer conversions
// print a float truncated toward zero.
std::string format_printf(const PrintfFormat& fmt, const std::vector<Value>& args);

// strftime with bpftrace's extensions (%f microseconds, %k nanoseconds within
// the second, %l milliseconds) for a wall-clock time given in ns since the
// epoch. Failure gives "(?)".
std::string format_time(std::string_view fmt, uint64_t epoch_ns);

// JSON (`-f json`, REFERENCE 6.8): bpftrace 0.26 NDJSON. Each json_* function
// that prints a message returns one line ending in "\n".

// A JSON string: quoted, with \" \\ \n \r \t and other bytes below 0x20 as
// \u00XX; bytes >= 0x80 pass through unchanged.
std::string json_string(std::string_view s);

// A value as JSON data: integers as numbers, or as quoted decimal strings when
// a double cannot hold them exactly; floats as numbers in their shortest
// round-trip form (9.765625), null when not finite; bool true/false; strings quoted; tuples
// as unspaced arrays `[1,"b"]`; records as objects `{"a": 1, "b": "x"}`;
// None as null.
std::string json_value(const Value& v);

// A map for print(@m, top, div) and at exit: `{"type": "map"|"hist"|"stats",
// "data": {"@m": ...}}`, entries sorted and cut as map_text does. Empty
// string for a map with no entries.
// With `percentiles` (an option of its own), a hist message also has
// `"percentiles": {"@m": {"p50": ...}}` (keyed maps: {"@m": {"key": {"p50": ...}}}).
// With `keep_empty`, a hist() or lhist() map with no entries still gives its
// message, its data [] ({} keyed): print() of an empty histogram during a
// run is a column of a heat map drawn from a recording.
std::string json_map(const MapSnapshot& map, uint64_t top = 0, uint64_t div = 0, bool percentiles = false,
                     bool keep_empty = false);

// ---- recordings (-f record) ----
// A recording is -f json with, added to bpftrace's messages, what `bpfscope
// render` needs to print and draw the run again. -f json itself stays
// bpftrace's, key for key (DESIGN.md's contract).

// "...}\n" -> "...FIELDS}\n": `fields` (", \"k\": v, ...") added to a message.
std::string with_fields(std::string message, std::string_view fields);

// What a map message of a recording adds (print(@m, top)): "agg" (count,
// sum, avg, min, max, stats, hist, lhist, plain); "bits" of a hist, "min",
// "max", "step" of an lhist; "signed": false for unsigned values; "keys",
// the keys in the data's order as typed_json (the data's keys are text
// without spaces); "values" of a plain map, as typed_json; "layout": "bcc"
// where the tools' layout prints it.
std::string map_recording_fields(const MapSnapshot& map, uint64_t top, HistLayout layout);

// A map's message in a recording: json_map with map_recording_fields.
std::string record_map(const MapSnapshot& map, uint64_t top = 0, uint64_t div = 0, bool percentiles = false,
                       HistLayout layout = HistLayout::Bpftrace, bool keep_empty = false);

// `, "text": T`: what the run printed for an event, table, errorf, warnf
// or helper error message (render prints it again).
std::string text_field(std::string_view text);

// `, "typed": <typed_json>`: print() of a non-map value.
std::string typed_field(const Value& v);

// A value as JSON that reads back as the same Value (for keys and values in
// recordings): integers and strings as themselves; {"uint": N}, {"ptr": N},
// {"enum": N, "name": "X"}, {"float": F}, {"buffer": "bytes"}, {"array":
// [...]}, {"tuple": [...]}, {"record": [...], "names": [...]}, and a stack
// as {"stack": "kernel"|"user", "text": "...", "frames": [...]}.
std::string typed_json(const Value& v);

// `bpfscope render`: one line of a recording (a run's -f record output) as the
// live run printed it: `out` for standard output, `err` for standard error
// (the attach message, lost events, warnings), `map` the map a map message
// held (for other renderers). With `folded`, maps keyed by stacks are folded
// stacks and other maps go to `err`, as -f folded prints them; with
// `percentiles` every histogram has its percentile line (a message recorded
// with percentiles has it anyway). Malformed input: nullopt and `error`.
struct RenderOptions {
  bool folded = false;
  bool percentiles = false;
};
struct Rendered {
  std::string out;
  std::string err;
  std::optional<MapSnapshot> map;
  std::optional<double> time;  // the message's "time": when print() printed the map, or the probes were attached
  bool attached = false;       // an attached_probes message
  bool exit = false;           // the exit marker: the exit-time maps follow
  // A map message's "graph" and "unit" (json_with_graph): how its stacks
  // are laid out and drawn.
  std::optional<GraphKind> graph;
  std::string unit;
};
std::optional<Rendered> render_message(std::string_view line, const RenderOptions& opts, std::string& error);

// One row per key found in any of `maps` (a map lacking the key gives 0),
// its values in the maps' order, each an average's mean where the map is
// avg(), divided by its divisor; rows ordered by the sum of their undivided
// values, largest first (ties by key), at most `limit` of them (0: all).
// With `order_by`, rows are ordered by its value for their key instead (0
// where it has none).
Table join_maps(const std::vector<const MapSnapshot*>& maps, const std::vector<TableDivisor>& divisors,
                uint64_t limit, const MapSnapshot* order_by = nullptr);

// Puts each row's cells in the order of `row`'s conversions where they name
// their column ("%2$-10d %1$s": the value before the key), for both the text
// and the JSON of the table.
void order_columns(Table& t, const PrintfFormat& row);

// The table as text: a header line of `names`, then one line per row formatted
// with `row` (one conversion per column, no '*'); every column is padded to
// its widest cell or name, so that the rows stay aligned.
std::string table_text(const Table& t, const std::vector<std::string>& names, const PrintfFormat& row);

// `{"type": "table", "data": [{"pid": 1, "comm": "x", ...}, ...]}`: one
// object per row, keyed by the lowercased column names.
std::string json_table(const Table& t, const std::vector<std::string>& names);

// `{"type": "<type>", "data": "<text>"}` for printf, time, cat, join, syscall.
std::string json_event(std::string_view type, std::string_view text);

// errorf()/warnf(): `{"type": "errorf", "msg": "...", "filename": "stdin",
// "line": 1, "col": 9}`.
std::string json_message(std::string_view type, std::string_view msg, std::string_view filename, uint32_t line,
                         uint32_t col);

// A printf with named arguments (a bpfscope extension): `{"type": "event",
// "data": {"pid": 123, "comm": "bash"}}`, each value as json_value.
std::string json_named_event(const std::vector<std::string>& names, const std::vector<Value>& values);

// print() of a non-map value: `{"type": "value", "data": <json_value>}`.
std::string json_value_event(const Value& v);

// Recordings: at exit, before the maps are printed, `{"type": "exit",
// "data": {"gap": true}}`, where text prints two empty lines (gap) before them.
std::string json_exit(bool gap);

// Recordings: the message with `"time": T` added (seconds since the epoch,
// to the microsecond): a recording keeps when each print() printed a map (the
// columns of a heat map) and when the probes were attached.
std::string json_with_time(std::string message, double time);

// Recordings: a map message of a tool's stacks with `"graph": "KIND"` and, when given,
// `"unit": "UNIT"` (the tool's "// flamegraph:" header); `drawn_only`:
// `"drawn_only": true`, a map the text run does not print (render prints
// it only as folded stacks, and draws it).
std::string json_with_graph(std::string message, GraphKind kind, std::string_view unit, bool drawn_only);

// `{"type": "attached_probes", "count": N, "data": {"probes": N}}`.
std::string json_attached(uint64_t probes);

// `{"type": "lost_events", "count": N, "data": {"events": N}}`.
std::string json_lost(uint64_t events);
// --mode bench: `{"type": "benchmark_result", "data": {"NAME": {"average": NS, "iters": N}}}`.
std::string json_benchmark(std::string_view name, uint64_t average_ns, uint64_t iters);
// --mode bench's text: the table's header and rule (before the first row)
// and one row, its name column as wide as the longest of `names` (at least 40).
std::string benchmark_header(const std::vector<std::string>& names);
std::string benchmark_row(const std::vector<std::string>& names, std::string_view name, uint64_t average_ns,
                          uint64_t iters);
// Probe firings the kernel did not run the probe's program for (at exit).
std::string json_missed(const std::string& probe, uint64_t firings, const std::string& reason);

// A helper call that failed (-k, or a full map): `{"type": "helper_error", "msg":
// ..., "helper": "map_update_elem", "retcode": -7, "filename": ..., "line": L, "col": C}`.
std::string json_helper_error(std::string_view msg, std::string_view helper, int retcode, std::string_view filename,
                              uint32_t line, uint32_t col);

// ---- Prometheus metrics (src/output/metrics.cpp, docs/metrics.md) ----
// Maps as metric families for a /metrics page (issue 19), in the Prometheus
// text format 0.0.4 or in OpenMetrics 1.0.0 text. The map @x is the family
// bpfscope_x (the anonymous map @: bpfscope_map; other characters than
// [a-zA-Z0-9_] become '_'):
//   count(), sum()     counter    bpfscope_x_total (@x_total too: one _total)
//   min(), max(), avg() and integer maps
//                      gauge      bpfscope_x (avg(): the truncated mean print() shows)
//   stats()            summary    bpfscope_x_sum, bpfscope_x_count (no quantiles),
//                      and gauges bpfscope_x_min, bpfscope_x_max (a summary may
//                                 hold no other samples; no sample for a key
//                                 with no value since zero())
//   hist(), lhist()    histogram  bpfscope_x_bucket{le="N"}, le="+Inf", bpfscope_x_sum,
//                                 bpfscope_x_count
// A bucket's le is the largest integer it holds ([4, 8) has le="7", the
// negatives le="-1"), for every bucket with such a bound: the same set at
// every scrape, so that buckets add up across scrapes and machines.
// OpenMetrics forbids a sum in a histogram with a negative bucket bound, so
// there the negative buckets are left out and the sum kept (the buckets are
// cumulative: a negative value still counts from le="0" on). The sums, mins
// and maxes are bpfscope's (Aggregate::sum, min, max); print() and JSON
// show bpftrace's values only. A map value that is no number (a string, a
// stack, a tuple, an address) is not served.
// Keys are labels: a record key's field names, key0, key1... for a tuple,
// `key` for anything else. A label value is the key's text as print()
// shows it, a stack its frames root first joined by ';' (folded_stack), a
// byte that is no UTF-8 the text \xNN. A field name that the format
// reserves (le in a histogram, quantile in a summary, other, one starting
// with '_' or a digit) gets the prefix key_.
// Series are sorted by key (REFERENCE 4.3).
// The same families in Prometheus's protobuf format, with hist() maps as
// native histograms: metrics_proto.h, in its own library.

enum class MetricsFormat { Prometheus, OpenMetrics };

// The HTTP Content-Type of a format's page.
std::string_view metrics_content_type(MetricsFormat format);

// The page a scraper's Accept header asks for: protobuf (metrics_proto.h),
// or a text format. Each of the three is weighed by the largest q value of
// the media ranges that name it (text/plain, text/* and */* name the 0.0.4
// text format only); the largest wins, protobuf then OpenMetrics on a tie,
// and the 0.0.4 text when none is acceptable (no header, q=0).
struct MetricsChoice {
  bool protobuf = false;
  MetricsFormat format = MetricsFormat::Prometheus;  // when not protobuf
  bool operator==(const MetricsChoice&) const = default;
};
MetricsChoice choose_metrics_format(std::string_view accept);

// The keys of one map that get series of their own, by default (issue 19).
inline constexpr uint64_t kMetricsMaxSeries = 10000;

struct MapMetrics {
  // The family: HELP and TYPE lines, then its samples (a stats() map's
  // summary, then its _min and _max gauges); "" when nothing is served.
  std::string text;
  uint64_t folded = 0;  // keys folded into the other="true" series
};

// One map as one metric family (a stats() map: three). A map with more than
// `max_series` keys (0: no limit) serves the `max_series` keys that
// print(@m, max_series) would print, and folds the others into one series
// labelled other="true" (and no key labels): counters, summaries, histogram
// buckets and sums add up, a min() map keeps the smallest value, max() the
// largest (stats(): its _min and _max the same), avg() the mean of the
// folded keys together; an integer map's folded keys are not served.
// Keys whose labels read alike (two stacks that fold to the same frames)
// are one series, their values merged as merge_aggregate does.
MapMetrics map_metrics(const MapSnapshot& map, MetricsFormat format, uint64_t max_series = kMetricsMaxSeries);

// What the run itself serves, as plain values from the session: families
// bpfscope_build_info{version} 1, bpfscope_lost_events_total,
// bpfscope_map_full_total{map}, bpfscope_probe_skipped_total{probe},
// bpfscope_probe_info{probe,mechanism} 1 (each with tool="..." too, under
// `serve`) and
// bpfscope_series_folded_total{map}. A family without samples is left out.
// A count of one map's or probe's. Under `bpfscope serve`, several tools'
// maps and probes share a page: `tool` names the tool ("" for none) and is
// a label of the sample.
struct RunCount {
  std::string name;
  uint64_t count = 0;
  std::string tool;
};
struct RunProbe {
  std::string probe;
  std::string mechanism;  // how it is attached ("tracepoint", "fentry")
  std::string tool;
};

struct RunMetrics {
  std::string version;                                          // the build's version
  std::vector<RunCount> lost_events;                            // per session (tool: its tool, or ""): events
                                                                // the ring buffer had no room for
  std::vector<RunCount> map_full;                               // map ("@m"), updates refused as it was full
  std::vector<RunCount> probe_skipped;                          // probe, firings its program did not run for
  std::vector<RunProbe> probes;
  std::vector<std::pair<std::string, uint64_t>> series_folded;  // map, keys folded so far
};

// The run's families, sorted by name.
std::string run_metrics(const RunMetrics& run, MetricsFormat format);

// A whole page: the run's families and the maps', sorted by family name,
// then "# EOF" in OpenMetrics. A map whose families would use a sample name
// another family has taken (the run's families take theirs first, then the
// maps in the order given: @lost_events = count() would be
// bpfscope_lost_events_total; @ and @map are both bpfscope_map; a hist()
// @x takes bpfscope_x_count, a stats() @x bpfscope_x_min) is left out, all
// its families, and named in `clashes`.
// bpfscope_series_folded_total counts the keys folded over every page
// served: `run.series_folded` holds the counts before this page; the page
// serves, and returns in `series_folded`, those counts plus this page's
// folds, for each map served. `max_series` (0: no limit) is the page's
// budget of series (a hist() key has 68): the maps in order each serve the
// keys that fit in what is left (at least one; and other="true" counts),
// as map_metrics with that many keys (docs/metrics.md).
struct MetricsPage {
  std::string text;
  std::vector<std::pair<std::string, uint64_t>> series_folded;  // map, keys folded so far (for the next page's run)
  std::vector<std::string> clashes;                             // maps left out: their names are taken
};
MetricsPage metrics_page(const std::vector<MapSnapshot>& maps, const RunMetrics& run, MetricsFormat format,
                         uint64_t max_series = kMetricsMaxSeries);

}  // namespace bpfscope::output
