// The output formats of a session (printer.h): text, folded, JSON and
// recordings, each over the renderers of src/output/.
#include "runtime/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "lang/diagnostics.h"

namespace bpfscope::runtime {
namespace {

// errorf()/warnf() as text: the probe's location and the message (0.24:
// no source line).
std::string script_message_text(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc,
                                const std::vector<lang::Loc>& expanded_from) {
  std::string text = fmt::format("{}: {}: {}\n", lang::location(src, loc), error ? "ERROR" : "WARNING", msg);
  // In a macro: each call that expanded it, with its source line (0.26).
  for (lang::Loc call : expanded_from) {
    lang::Diagnostics d;
    if (error) d.error(call, "expanded from");
    else d.warning(call, "expanded from");
    text += d.render(src);
  }
  return text;
}

// A failed helper call as text: a located warning, bpftrace's line naming
// the helper and its return code (none for a division by 0, which calls no
// helper), and the source line.
std::string helper_error_text(std::string_view msg, std::string_view helper, int retcode, const lang::Source& src,
                              lang::Loc loc) {
  lang::Diagnostics d;
  d.warning(loc, helper.empty() ? std::string(msg)
                                : fmt::format("{}\nAdditional Info - helper: {}, retcode: {}", msg, helper, retcode));
  return d.render(src);
}

// What the formats share: the stream they write, and the lines printed in
// pieces, put together per CPU (a probe runs on one CPU from start to end).
class PieceWriter : public Printer {
 public:
  void end_lines() final {
    for (auto& [cpu, line] : lines_) end_line(line);
  }
  void write(std::string_view s) final {
    fwrite(s.data(), 1, s.size(), stream_);
    written_ += s.size();
  }
  size_t written() const final { return written_; }

 protected:
  // `stream`: where messages go (out, or stderr when out holds folded
  // stacks only). `joins`: other output continues a line being printed in
  // pieces (text), rather than being a message of its own (JSON).
  PieceWriter(const Options& o, FILE* out, FILE* stream, bool joins)
      : o_(o), out_(out), stream_(stream), joins_(joins) {}

  // A line printed in pieces: its text and, for JSON, the named arguments
  // of its pieces, the fields of one event.
  struct Line {
    bool open = false;
    std::string text;
    std::vector<std::string> names;
    std::vector<output::Value> values;
  };
  Line& cpu_line(uint32_t cpu) { return lines_[cpu]; }
  void end_line(Line& line) {
    if (!line.open) return;
    write_line(line);
    line = Line{};
  }
  // A whole line, as this format prints it.
  virtual void write_line(const Line& line) = 0;

  // A message. Other output (join(), time(), print()...) continues a line
  // being printed in pieces when only one is open and the format joins
  // (execsnoop's printf then join); with several open, from several CPUs,
  // it cannot tell whose, and they end first.
  void emit(std::string_view s) {
    Line* open = nullptr;
    size_t n = 0;
    for (auto& [cpu, line] : lines_)
      if (line.open) open = &line, ++n;
    if (n == 1 && joins_) {
      open->text += s;
      if (s.ends_with('\n')) end_line(*open);
      return;
    }
    if (n > 1)
      for (auto& [cpu, line] : lines_) end_line(line);
    write(s);
  }

  const Options& o_;
  FILE* out_;  // the output (-o FILE or stdout)

 private:
  FILE* stream_;
  bool joins_;
  size_t written_ = 0;
  std::map<uint32_t, Line> lines_;  // by CPU: the line being printed in pieces
};

// bpftrace's text. Messages about the run (attached, lost events) go to
// stderr, errorf() and failed helpers after the output so far.
class TextPrinter : public PieceWriter {
 public:
  TextPrinter(const Options& o, FILE* out) : TextPrinter(o, out, out) {}

  void attached(uint32_t probes, double) override {
    fmt::print(stderr, "Attached {} probe{}\n", probes, probes == 1 ? "" : "s");
  }
  void printf_event(uint32_t cpu, const sema::Action& a, std::vector<output::Value>& args) override {
    Line& l = cpu_line(cpu);
    l.text += output::format_printf(a.printf_format, args);
    l.open = true;
    if (a.format.ends_with('\n')) end_line(l);
  }
  void map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double) override {
    emit(output::map_text(map, top, div, o_.hist_layout, o_.percentiles));
  }
  void drawn_map(const output::MapSnapshot&) override {}
  void hist_notes(const std::vector<const output::MapSnapshot*>& maps) override {
    const std::vector<const output::MapSnapshot*> notes(maps.begin() + 1, maps.end());
    emit(output::hist_notes_text(*maps[0], notes, o_.hist_layout, o_.percentiles));
  }
  void table(const output::Table& t, const std::vector<std::string>& names, const output::PrintfFormat& row) override {
    emit(output::table_text(t, names, row));
  }
  void value(const output::Value& v) override { emit(output::to_text(v) + "\n"); }
  void event(EventKind, std::string_view text) override { emit(text); }
  void script_message(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc,
                      const std::vector<lang::Loc>& expanded_from) override {
    fflush(out_);
    // A packaged tool's message is about its command line (profile: -C 99:
    // invalid cpu...), not a line of its file.
    if (!o_.tool_name.empty())
      fmt::print(stderr, "{}: {}{}\n", o_.tool_name, error ? "" : "WARNING: ", msg);
    else
      fmt::print(stderr, "{}", script_message_text(error, msg, src, loc, expanded_from));
  }
  void helper_error(std::string_view msg, std::string_view helper, int retcode, const lang::Source& src,
                    lang::Loc loc) override {
    const std::string text = helper_error_text(msg, helper, retcode, src, loc);
    fflush(out_);
    fmt::print(stderr, "{}", text);
  }
  void lost(uint64_t events) override { fmt::print(stderr, "Lost {} events\n", events); }
  void benchmark(const std::vector<std::string>& names, size_t index, uint64_t average_ns, uint64_t iters) override {
    if (index == 0) write(output::benchmark_header(names));
    write(output::benchmark_row(names, names[index], average_ns, iters));
  }
  void missed(const std::string&, uint64_t, const char*) override {}
  // bpftrace's two newlines before the exit-time maps.
  void exit_maps_follow() override {
    if (o_.gap_before_maps) write("\n\n");
  }

 protected:
  TextPrinter(const Options& o, FILE* out, FILE* stream) : PieceWriter(o, out, stream, true) {}
  void write_line(const Line& line) override { write(line.text); }
};

// -f folded: maps keyed by stacks as folded stacks on the output; all other
// output goes to stderr as text, so the output is folded only.
class FoldedPrinter : public TextPrinter {
 public:
  FoldedPrinter(const Options& o, FILE* out) : TextPrinter(o, out, stderr) {}

  void map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double time) override {
    if (!output::is_foldable(map)) return TextPrinter::map(map, top, div, time);
    const std::string text = output::folded_text(map, output::stack_layout(o_.flamegraph.kind));
    fwrite(text.data(), 1, text.size(), out_);
  }
  void drawn_map(const output::MapSnapshot& map) override { FoldedPrinter::map(map, 0, 0, 0); }
};

// -f json: bpftrace's NDJSON, one message per line (REFERENCE.md 6.8).
class JsonPrinter : public PieceWriter {
 public:
  JsonPrinter(const Options& o, FILE* out) : PieceWriter(o, out, out, false) {}

  void attached(uint32_t probes, double) override { emit(output::json_attached(probes)); }
  // A printf is a message of its own, unless it has named arguments or
  // continues a line: then its pieces make one event.
  void printf_event(uint32_t cpu, const sema::Action& a, std::vector<output::Value>& args) override {
    Line& l = cpu_line(cpu);
    bool named = !a.text_name.empty() ||
                 std::any_of(a.arg_names.begin(), a.arg_names.end(), [](const std::string& n) { return !n.empty(); });
    std::string text = output::format_printf(a.printf_format, args);
    if (!named && !l.open) {
      write(output::json_event("printf", text));
      return;
    }
    // A named format: the formatted text is a field (trace's message).
    if (!a.text_name.empty()) {
      l.names.push_back(a.text_name);
      output::Value v;
      v.kind = output::Value::Kind::String;
      v.s = text;
      l.values.push_back(std::move(v));
    }
    // A recording's events keep their text too: it is rendered again.
    l.text += text;
    for (size_t i = 0; i < a.arg_names.size() && i < args.size(); ++i) {
      if (a.arg_names[i].empty()) continue;
      l.names.push_back(a.arg_names[i]);
      l.values.push_back(std::move(args[i]));
    }
    l.open = true;
    if (a.format.ends_with('\n')) end_line(l);
  }
  void map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double) override {
    emit(output::json_map(map, top, div, o_.percentiles));
  }
  void drawn_map(const output::MapSnapshot&) override {}
  // Each map a message of its own.
  void hist_notes(const std::vector<const output::MapSnapshot*>& maps) override {
    for (const auto* m : maps) map(*m, 0, 0, 0);
  }
  void table(const output::Table& t, const std::vector<std::string>& names, const output::PrintfFormat&) override {
    emit(output::json_table(t, names));
  }
  void value(const output::Value& v) override { emit(output::json_value_event(v)); }
  void event(EventKind kind, std::string_view text) override { emit(output::json_event(event_type(kind), text)); }
  void script_message(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc,
                      const std::vector<lang::Loc>&) override {
    emit(message_json(error, msg, src, loc));
  }
  void helper_error(std::string_view msg, std::string_view helper, int retcode, const lang::Source& src,
                    lang::Loc loc) override {
    emit(helper_error_json(msg, helper, retcode, src, loc));
  }
  void lost(uint64_t events) override { emit(output::json_lost(events)); }
  void benchmark(const std::vector<std::string>& names, size_t index, uint64_t average_ns, uint64_t iters) override {
    emit(output::json_benchmark(names[index], average_ns, iters));
  }
  void missed(const std::string& probe, uint64_t firings, const char* why) override {
    emit(output::json_missed(probe, firings, why));
  }
  void exit_maps_follow() override {}

 protected:
  void write_line(const Line& line) override { write(output::json_named_event(line.names, line.values)); }

  static std::string message_json(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc) {
    const lang::LineCol lc = src.line_col(loc.begin);
    return output::json_message(error ? "errorf" : "warnf", msg, src.name(), lc.line, lc.col);
  }
  static std::string helper_error_json(std::string_view msg, std::string_view helper, int retcode,
                                       const lang::Source& src, lang::Loc loc) {
    const lang::LineCol lc = src.line_col(loc.begin);
    return output::json_helper_error(msg, helper, retcode, src.name(), lc.line, lc.col);
  }

 private:
  static std::string_view event_type(EventKind kind) {
    switch (kind) {
      case EventKind::Time: return "time";
      case EventKind::Join: return "join";
      case EventKind::Cat: return "cat";
      case EventKind::System: return "syscall";
    }
    std::unreachable();
  }
};

// -f record: -f json with, added to bpftrace's messages, what `bpfscope
// render` needs to print and draw the run again (output::with_fields): the
// text the run printed, map types and typed values, print times, the exit
// marker, a tool's graph.
class RecordPrinter : public JsonPrinter {
 public:
  using JsonPrinter::JsonPrinter;

  void attached(uint32_t probes, double time) override {
    emit(output::json_with_time(output::json_attached(probes), time));
  }
  void map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double time) override {
    record_map(map, top, div, time, false);
  }
  void drawn_map(const output::MapSnapshot& map) override { record_map(map, 0, 0, 0, true); }
  void table(const output::Table& t, const std::vector<std::string>& names, const output::PrintfFormat& row) override {
    emit(output::with_fields(output::json_table(t, names), output::text_field(output::table_text(t, names, row))));
  }
  void value(const output::Value& v) override {
    emit(output::with_fields(output::json_value_event(v), output::typed_field(v)));
  }
  void script_message(bool error, std::string_view msg, const lang::Source& src, lang::Loc loc,
                      const std::vector<lang::Loc>& expanded_from) override {
    emit(output::with_fields(message_json(error, msg, src, loc),
                             output::text_field(script_message_text(error, msg, src, loc, expanded_from))));
  }
  void helper_error(std::string_view msg, std::string_view helper, int retcode, const lang::Source& src,
                    lang::Loc loc) override {
    emit(output::with_fields(helper_error_json(msg, helper, retcode, src, loc),
                             output::text_field(helper_error_text(msg, helper, retcode, src, loc))));
  }
  void exit_maps_follow() override { emit(output::json_exit(o_.gap_before_maps)); }

 protected:
  void write_line(const Line& line) override {
    write(output::with_fields(output::json_named_event(line.names, line.values), output::text_field(line.text)));
  }

 private:
  // `time`: when print() printed it (0 at exit), which the message keeps;
  // `drawn`: a map of stacks drawn at exit by --flamegraph.
  void record_map(const output::MapSnapshot& map, uint64_t top, uint64_t div, double time, bool drawn) {
    std::string msg = output::record_map(map, top, div, o_.percentiles, o_.hist_layout, time > 0);
    if (msg.empty()) return;
    if (time > 0) msg = output::json_with_time(std::move(msg), time);
    if (o_.tool_graph && output::is_foldable(map))
      msg = output::json_with_graph(std::move(msg), o_.flamegraph.kind, o_.flamegraph.unit,
                                    drawn || map.name == "@folded");
    else if (drawn)
      msg = output::json_with_graph(std::move(msg), output::GraphKind::Cpu, "", true);
    emit(msg);
  }
};

}  // namespace

std::unique_ptr<Printer> make_printer(const Options& o, FILE* out) {
  if (o.recording) return std::make_unique<RecordPrinter>(o, out);
  if (o.json) return std::make_unique<JsonPrinter>(o, out);
  if (o.folded) return std::make_unique<FoldedPrinter>(o, out);
  return std::make_unique<TextPrinter>(o, out);
}

}  // namespace bpfscope::runtime
