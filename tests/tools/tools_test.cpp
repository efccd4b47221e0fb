#include <gtest/gtest.h>

#include "tools/embedded.h"
#include "tools/tools.h"

namespace bpfscope::tools {
namespace {

const char* kHeader = R"(#!/usr/bin/env bpfscope
// tool: demo
// about: A demo tool.
// option: -p --pid PID (int) Process ID to trace
// option: -4 --ipv4 Trace IPv4 only
// option: -L --localport PORTS (ports) Local ports
// option: -s --sort MODE (all|sent|received, default all) Sort order
// option: --depth N (int, default 127) Stack depth
// arg: interval (int, default 99999999) Output interval, in seconds
// arg: count (int, default 99999999) Number of outputs
// example: demo -p 1   # pid 1 only
// note: Extra words.
//
// Plain comment lines are prose.
BEGIN { exit(); }
)";

const std::vector<GlobalSpec> kGlobals = {{'o', "output", true}, {'q', "quiet", false}, {'c', "cmd", true}};

Tool demo() {
  std::string err;
  auto t = parse(kHeader, "demo.bt", err);
  EXPECT_TRUE(t) << err;
  return *t;
}

TEST(Tools, ParsesHeader) {
  Tool t = demo();
  EXPECT_EQ(t.name, "demo");
  EXPECT_EQ(t.about, "A demo tool.");
  ASSERT_EQ(t.options.size(), 5u);
  EXPECT_EQ(t.options[0].letter, 'p');
  EXPECT_EQ(t.options[0].name, "pid");
  EXPECT_EQ(t.options[0].metavar, "PID");
  EXPECT_EQ(t.options[0].kind, ValueKind::Int);
  EXPECT_EQ(t.options[0].help, "Process ID to trace");
  EXPECT_EQ(t.options[1].kind, ValueKind::Flag);
  EXPECT_EQ(t.options[2].kind, ValueKind::Ports);
  EXPECT_EQ(t.options[3].kind, ValueKind::Choice);
  EXPECT_EQ(t.options[3].choices, (std::vector<std::string>{"all", "sent", "received"}));
  EXPECT_EQ(t.options[3].default_value, "all");
  EXPECT_EQ(t.options[4].letter, 0);
  ASSERT_EQ(t.args.size(), 2u);
  EXPECT_EQ(t.args[0].default_value, "99999999");
  EXPECT_EQ(t.examples.size(), 1u);
  EXPECT_EQ(t.notes, std::vector<std::string>{"Extra words."});
  EXPECT_TRUE(has_header(kHeader));
  EXPECT_FALSE(has_header("// a script\nBEGIN {}\n"));
}

TEST(Tools, HeaderErrorsNameTheLine) {
  std::string err;
  EXPECT_FALSE(parse("// tool: x\n// option: -p PID\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: an option line needs --NAME");
  EXPECT_FALSE(parse("// tool: x\n// option: -p --pid PID (float) p\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: unknown value type \"float\" (int, str, ports, list, probe or a|b|c)");
  EXPECT_FALSE(parse("// tool: x\n// option: -p --pid P (int) p\n// option: -p --other P q\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:3: option other declared twice");
  EXPECT_FALSE(parse("// tool: x\n// flamegraph: warm us\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: flamegraph: unknown kind \"warm\" (cpu, offcpu or offwake)");
  EXPECT_FALSE(parse("// tool: x\n// flamegraph: offcpu us extra\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: flamegraph: KIND [UNIT]");
  EXPECT_FALSE(parse("BEGIN {}\n", "y.bt", err));
  EXPECT_EQ(err, "y.bt:1: no \"// tool: NAME\" line in the leading comments");
}

TEST(Tools, ParsesCommandLines) {
  Tool t = demo();
  std::string err;
  auto inv = parse_args(t, {"-4p", "181", "-L", "80, 443", "--depth=5", "-o", "out.txt", "--quiet", "2"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->named_args.at("pid"), "181");
  EXPECT_EQ(inv->named_args.at("ipv4"), std::nullopt);
  EXPECT_EQ(inv->named_args.at("localport"), "80,443");
  EXPECT_EQ(inv->named_args.at("depth"), "5");
  EXPECT_EQ(inv->named_args.at("sort"), "all");  // the default
  EXPECT_EQ(inv->positional, (std::vector<std::string>{"2", "99999999"}));
  ASSERT_EQ(inv->globals.size(), 2u);
  EXPECT_EQ(inv->globals[0].name, "o");
  EXPECT_EQ(inv->globals[0].value, "out.txt");
  EXPECT_EQ(inv->globals[1].name, "q");
}

TEST(Tools, FlagThatSetsAGlobalOption) {
  std::string err;
  auto t = parse("// tool: x\n// option: -f --folded (sets -f folded) Folded output\nBEGIN {}\n", "x.bt", err);
  ASSERT_TRUE(t) << err;
  ASSERT_TRUE(t->options[0].sets);
  EXPECT_EQ(t->options[0].help, "Folded output");
  auto inv = parse_args(*t, {"-f"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->named_args.count("folded"), 0u);  // the runtime's, not the script's
  ASSERT_EQ(inv->globals.size(), 1u);
  EXPECT_EQ(inv->globals[0].name, "f");
  EXPECT_EQ(inv->globals[0].value, "folded");
  EXPECT_FALSE(parse("// tool: x\n// option: -f --folded (sets -f) F\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: expected (sets -X VALUE)");
}

TEST(Tools, RejectsBadCommandLines) {
  Tool t = demo();
  struct Case {
    std::vector<std::string> args;
    const char* error;
  };
  const std::vector<Case> cases = {
      {{"-x"}, "demo: invalid option -- 'x'"},
      {{"-p"}, "demo: option requires an argument -- 'p'"},
      {{"-p", "x1"}, "demo: -p: invalid integer \"x1\""},
      {{"-L", "80,0"}, "demo: -L: invalid port \"0\" in \"80,0\""},
      {{"--sort=up"}, "demo: --sort: invalid value \"up\" (one of: all, sent, received)"},
      {{"--ipv4=1"}, "demo: option '--ipv4' doesn't allow an argument"},
      {{"--what"}, "demo: unrecognized option '--what'"},
      {{"1", "2", "3"}, "demo: too many arguments (\"3\")"},
      {{"x"}, "demo: interval: invalid integer \"x\""},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_FALSE(parse_args(t, c.args, kGlobals, err)) << c.error;
    EXPECT_EQ(err, c.error);
  }
}

TEST(Tools, Usage) {
  Tool t = demo();
  EXPECT_EQ(synopsis(t), "USAGE: demo [-h] [-p PID] [-4] [-L PORTS] [-s MODE] [--depth N] [interval] [count]");
  std::string u = usage(t);
  EXPECT_NE(u.find("Usage: demo [OPTION...] [ARG...]\nA demo tool.\n"), std::string::npos) << u;
  EXPECT_NE(u.find("  -p, --pid=PID              Process ID to trace\n"), std::string::npos) << u;
  EXPECT_NE(u.find("      --depth=N              Stack depth (default 127)\n"), std::string::npos) << u;
  EXPECT_NE(u.find("EXAMPLES:\n    demo -p 1   # pid 1 only\n"), std::string::npos) << u;
}

// "// flamegraph: KIND [UNIT]": the graph's colours, layout and unit.
TEST(Tools, FlameGraphHeader) {
  std::string err;
  auto t = parse("// tool: x\n// flamegraph: offwake us\n", "x.bt", err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->graph, output::GraphKind::OffWake);
  EXPECT_EQ(t->graph_unit, "us");
  t = parse("// tool: x\n// flamegraph: offcpu\n", "x.bt", err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->graph, output::GraphKind::OffCpu);
  EXPECT_EQ(t->graph_unit, "");
  EXPECT_EQ(demo().graph, output::GraphKind::Cpu);
  EXPECT_EQ(find("offwaketime")->graph, output::GraphKind::OffWake);
  EXPECT_EQ(find("offcputime")->graph_unit, "us");
  EXPECT_EQ(find("profile")->graph_unit, "samples");
}

// Every embedded tool's header parses, and its name is its file's.
TEST(Tools, EmbeddedToolsParse) {
  ASSERT_GT(kEmbeddedToolCount, 0u);
  EXPECT_EQ(all().size(), kEmbeddedToolCount);
  for (size_t i = 0; i < kEmbeddedToolCount; ++i) {
    std::string err;
    auto t = parse(kEmbeddedTools[i].source, kEmbeddedTools[i].name, err);
    ASSERT_TRUE(t) << err;
    EXPECT_EQ(t->name, kEmbeddedTools[i].name);
    EXPECT_FALSE(t->about.empty()) << t->name;
    EXPECT_NE(find(t->name), nullptr);
  }
}

}  // namespace
}  // namespace bpfscope::tools
