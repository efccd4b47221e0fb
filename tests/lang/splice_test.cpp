// Splicing tool options into a script: probes and statements repeated per
// value, maps per value, parts replaced by the value's expressions, errors
// located in the value's text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

SplicedValue value(const std::string& text, const std::string& probe) {
  SplicedValue v{.option = "h", .origin = "-H", .text = text};
  v.parts.push_back({.name = "h", .kind = SplicedPart::Kind::Probe, .text = probe});
  v.parts.push_back({.name = "h.value", .ranges = {{0, static_cast<uint32_t>(text.size())}}, .casts = {"uint32"}});
  v.parts.push_back({.name = "h.label", .kind = SplicedPart::Kind::String, .text = text});
  v.aliases.emplace_back("size", "arg0");
  return v;
}

struct Result {
  std::string dump;
  std::string errors;
  std::set<std::string> dropped;
};

Result splice(const std::string& script, const std::vector<SplicedValue>& values) {
  Diagnostics diags;
  auto program = parse(Source("t.bt", script), diags);
  EXPECT_TRUE(program);
  Result r;
  if (!splice_options(*program, {"h"}, values, diags, &r.dropped)) r.errors = diags.render(program->source);
  else r.dump = dump(*program);
  return r;
}

const char* kScript =
    "getopt(\"h\") { @m = hist(getopt(\"h.value\")); }\n"
    "END { printf(\"%s\\n\", getopt(\"h.label\")); clear(@m); clear(@n); }\n";

TEST(Splice, RepeatsProbesAndStatementsPerValue) {
  Result r = splice(kScript, {value("size", "uprobe:/x:f"), value("pid * 2", "tracepoint:a:b")});
  ASSERT_EQ(r.errors, "");
  EXPECT_EQ(r.dump,
            "probe uprobe:/x:f\n"
            " assign =\n  map @m#1\n  call hist\n   cast uint32\n    identifier arg0\n"
            "probe tracepoint:a:b\n"
            " assign =\n  map @m#2\n  call hist\n   cast uint32\n    binop *\n     identifier pid\n     int 2\n"
            "probe END\n"
            " call printf\n  string \"%s\\n\"\n  string \"size\"\n"
            " call printf\n  string \"%s\\n\"\n  string \"pid * 2\"\n"
            " call clear\n  map @m#1\n"
            " call clear\n  map @m#2\n"
            " call clear\n  map @n\n");
}

TEST(Splice, NoValueDropsThem) {
  Result r = splice(kScript, {});
  ASSERT_EQ(r.errors, "");
  EXPECT_EQ(r.dump, "probe END\n call clear\n  map @n\n");
  EXPECT_EQ(r.dropped, (std::set<std::string>{"h.value", "h.label"}));
}

TEST(Splice, ErrorsAreLocatedInTheValue) {
  Result r = splice(kScript, {value("size +", "uprobe:/x:f")});
  EXPECT_EQ(r.errors, "-H:1:7-8: ERROR: unexpected end of file\nsize +\n      ~\n");
}

// A printf part: the format and its arguments, each cast, the format named;
// a map the probe stores no part in is shared by the copies.
TEST(Splice, PrintfPartsAndSharedMaps) {
  std::vector<SplicedValue> values;
  for (const char* probe : {"tracepoint:a:b", "uprobe:/x:f"}) {
    SplicedValue v{.option = "h", .origin = "probe", .text = "\"%s %d\", size, pid"};
    v.parts.push_back({.name = "h", .kind = SplicedPart::Kind::Probe, .text = probe});
    v.parts.push_back({.name = "h.msg",
                       .kind = SplicedPart::Kind::Printf,
                       .ranges = {{0, 18}, {9, 13}, {15, 18}},
                       .names = {"msg"},
                       .casts = {"", "str", ""},
                       .text = "%s %d"});
    v.aliases.emplace_back("size", "arg0");
    values.push_back(v);
  }
  Result r = splice("getopt(\"h\") { @n = @n + 1; getopt(\"h.msg\"); }\nEND { clear(@n); }\n", values);
  ASSERT_EQ(r.errors, "");
  const std::string body =
      " assign =\n  map @n\n  binop +\n   map @n\n   int 1\n"
      " call printf named msg - -\n  string \"%s %d\"\n  call str\n   identifier arg0\n  identifier pid\n";
  EXPECT_EQ(r.dump,
            "probe tracepoint:a:b\n" + body + "probe uprobe:/x:f\n" + body + "probe END\n call clear\n  map @n\n");
}

// A given argument that an attach point splices ($1, getopt("NAME")) is
// where that attach point's errors are located: a tool's error names it
// ("funccount: pattern 'tcp*': ..."), and a hint may rebuild the command.
TEST(Splice, LocatesAttachPointsInGivenArguments) {
  Diagnostics diags;
  auto program = parse(Source("tools/t.bt",
                              "$1 { }\n"
                              "interval:s:$12 { }\n"
                              "uprobe:getopt(\"lib\"):f, tracepoint:a:b { }\n"
                              "interval:s:$2 { }\n"),
                       diags);
  ASSERT_TRUE(program);
  const std::vector<Loc> before = {program->probes[0].points[0].loc, program->probes[1].points[0].loc,
                                   program->probes[2].points[1].loc};
  locate_arguments(*program, {{.ref = "$1", .text = "tcp*", .label = "pattern 'tcp*'", .before = "bpfscope t ",
                               .after = " -i 1"},
                              {.ref = "getopt(\"lib\")", .text = "/x", .label = "-l /x", .before = "", .after = ""}});
  const Source& src = program->source;
  const Loc pattern = program->probes[0].points[0].loc;
  ASSERT_NE(src.argument_at(pattern.begin), nullptr);
  EXPECT_EQ(src.slice(pattern), "tcp*");
  EXPECT_EQ(src.argument_at(pattern.begin)->label, "pattern 'tcp*'");
  EXPECT_EQ(src.argument_at(pattern.begin)->retry("t:tcp:*"), "bpfscope t 't:tcp:*' -i 1");
  EXPECT_FALSE(src.in_spliced(pattern.begin));  // a value, not script text
  // $12 is not $1; $2 was not given (a default): both stay in the file.
  EXPECT_EQ(program->probes[1].points[0].loc.begin, before[1].begin);
  EXPECT_EQ(src.argument_at(program->probes[1].points[0].loc.begin), nullptr);
  EXPECT_EQ(src.argument_at(program->probes[3].points[0].loc.begin), nullptr);
  const Loc lib = program->probes[2].points[0].loc;
  ASSERT_NE(src.argument_at(lib.begin), nullptr);
  EXPECT_EQ(src.argument_at(lib.begin)->label, "-l /x");
  EXPECT_EQ(program->probes[2].points[1].loc.begin, before[2].begin);

  Diagnostics errors;
  errors.error(pattern, "Unable to attach probe: kprobe:tcp*: no kprobes", {"try bpfscope t 't:tcp:*' -i 1"});
  errors.error(program->probes[1].points[0].loc, "bad interval");
  EXPECT_EQ(errors.render(src, "t"),
            "t: pattern 'tcp*': Unable to attach probe: kprobe:tcp*: no kprobes\n"
            "t: HINT: try bpfscope t 't:tcp:*' -i 1\n"
            "t: bad interval (tools/t.bt:2:1-15)\n");
}

TEST(Splice, ShellWords) {
  EXPECT_EQ(shell_word("t:net:foo_bar-1.2,3"), "t:net:foo_bar-1.2,3");
  EXPECT_EQ(shell_word("tcp*"), "'tcp*'");
  EXPECT_EQ(shell_word("a b"), "'a b'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
}

}  // namespace
}  // namespace bpfscope::lang
