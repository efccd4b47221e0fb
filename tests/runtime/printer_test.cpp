// The output formats of a session: how printf pieces from several CPUs are
// put together, and how other output meets a line left open, in text, JSON
// and recordings.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <variant>

#include "runtime/printer.h"

namespace bpfscope::runtime {
namespace {

// A printer writing into memory (with its own copy of the options, which a
// printer refers to).
class Captured {
 public:
  explicit Captured(Options o) : o_(std::move(o)), f_(open_memstream(&buf_, &size_)), printer_(make_printer(o_, f_)) {}
  ~Captured() {
    printer_.reset();
    fclose(f_);
    free(buf_);
  }
  Printer& operator*() { return *printer_; }
  Printer* operator->() { return printer_.get(); }
  std::string text() {
    fflush(f_);
    return std::string(buf_, size_);
  }

 private:
  Options o_;
  char* buf_ = nullptr;
  size_t size_ = 0;
  FILE* f_;
  std::unique_ptr<Printer> printer_;
};

sema::Action printf_action(std::string format, std::vector<std::string> names = {}) {
  sema::Action a;
  a.format = format;
  a.printf_format = std::get<output::PrintfFormat>(output::parse_printf(format));
  a.arg_names = std::move(names);
  return a;
}

void piece(Printer& p, uint32_t cpu, const sema::Action& a, std::vector<output::Value> args = {}) {
  p.printf_event(cpu, a, args);
}

Options json_options(bool record) {
  Options o;
  o.json = true;
  o.recording = record;
  return o;
}

TEST(Printer, TextKeepsEachCpusPiecesTogether) {
  Options o;
  Captured p(o);
  const auto open = printf_action("%d ");
  const auto end = printf_action("end %d\n");
  piece(*p, 0, open, {output::Value::of_int(1)});
  piece(*p, 1, open, {output::Value::of_int(2)});
  piece(*p, 1, end, {output::Value::of_int(2)});
  piece(*p, 0, end, {output::Value::of_int(1)});
  EXPECT_EQ(p.text(), "2 end 2\n1 end 1\n");
}

TEST(Printer, TextContinuesTheOneOpenLine) {
  Options o;
  Captured p(o);
  piece(*p, 0, printf_action("exec "));
  p->event(EventKind::Join, "a b\n");
  piece(*p, 0, printf_action("tail"));
  p->value(output::Value::of_int(5));
  EXPECT_EQ(p.text(), "exec a b\ntail5\n");
}

TEST(Printer, TextEndsSeveralOpenLinesBeforeOtherOutput) {
  Options o;
  Captured p(o);
  piece(*p, 0, printf_action("a"));
  piece(*p, 1, printf_action("b"));
  p->value(output::Value::of_int(5));
  piece(*p, 0, printf_action("c"));
  p->end_lines();
  EXPECT_EQ(p.text(), "ab5\nc");
  EXPECT_EQ(p->written(), 5u);
}

TEST(Printer, JsonPrintfIsAMessageOfItsOwn) {
  Captured p(json_options(false));
  piece(*p, 0, printf_action("a %d"), {output::Value::of_int(1)});
  p->value(output::Value::of_int(5));
  p->exit_maps_follow();
  EXPECT_EQ(p.text(),
            "{\"type\": \"printf\", \"data\": \"a 1\"}\n"
            "{\"type\": \"value\", \"data\": 5}\n");
}

TEST(Printer, JsonNamedPiecesAreOneEvent) {
  Captured p(json_options(false));
  piece(*p, 0, printf_action("[%s]", {"a"}), {output::Value::of_string("x")});
  piece(*p, 0, printf_action("(deco)"));
  // Other output does not join the open line: it is a message before it.
  p->value(output::Value::of_int(5));
  piece(*p, 0, printf_action("%d\n", {"c"}), {output::Value::of_int(3)});
  EXPECT_EQ(p.text(),
            "{\"type\": \"value\", \"data\": 5}\n"
            "{\"type\": \"event\", \"data\": {\"a\": \"x\", \"c\": 3}}\n");
}

TEST(Printer, RecordKeepsTheTextAndMarksTheExit) {
  Captured p(json_options(true));
  piece(*p, 0, printf_action("%d|", {"n"}), {output::Value::of_int(7)});
  p->end_lines();
  p->exit_maps_follow();
  EXPECT_EQ(p.text(),
            "{\"type\": \"event\", \"data\": {\"n\": 7}, \"text\": \"7|\"}\n"
            "{\"type\": \"exit\", \"data\": {\"gap\": true}}\n");
}

TEST(Printer, TextGapBeforeTheExitMaps) {
  Options script, packaged;
  packaged.gap_before_maps = false;
  Captured p(script), tool(packaged);
  p->exit_maps_follow();
  tool->exit_maps_follow();
  EXPECT_EQ(p.text(), "\n\n");
  EXPECT_EQ(tool.text(), "");
}

}  // namespace
}  // namespace bpfscope::runtime
