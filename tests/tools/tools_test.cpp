#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

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
// option: --depth N (int, default 127, min 1, max 127) Stack depth
// option: -r --rows ROWS (int, default 20, min 1) Rows
// option: -u --uid UID (int, min 0) User ID
// arg: interval (int, default 99999999, min 1) Output interval, in seconds
// arg: count (int, default 99999999) Number of outputs
// example: demo -p 1   # pid 1 only
// column: PID The process
// column: LAT(ms) Its latency, in ms
// column: 'TIME (us)' Its time, in us
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
  ASSERT_EQ(t.options.size(), 7u);
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
  EXPECT_EQ(t.options[4].default_value, "127");
  EXPECT_EQ(t.options[4].range.min, 1);
  EXPECT_EQ(t.options[4].range.max, 127);
  EXPECT_EQ(t.options[4].help, "Stack depth");
  EXPECT_EQ(t.options[5].range.min, 1);
  EXPECT_EQ(t.options[5].range.max, std::nullopt);
  EXPECT_EQ(t.options[6].default_value, std::nullopt);
  EXPECT_EQ(t.options[6].range.min, 0);
  EXPECT_EQ(t.options[0].range.min, std::nullopt);
  ASSERT_EQ(t.args.size(), 2u);
  EXPECT_EQ(t.args[0].default_value, "99999999");
  EXPECT_EQ(t.args[0].range.min, 1);
  EXPECT_EQ(t.args[1].range.min, std::nullopt);
  EXPECT_EQ(t.examples.size(), 1u);
  EXPECT_EQ(t.notes, std::vector<std::string>{"Extra words."});
  ASSERT_EQ(t.columns.size(), 3u);
  EXPECT_EQ(t.columns[1].first, "LAT(ms)");
  EXPECT_EQ(t.columns[1].second, "Its latency, in ms");
  EXPECT_EQ(t.columns[2].first, "TIME (us)");  // in single quotes: one name with a space
  EXPECT_EQ(t.columns[2].second, "Its time, in us");
  EXPECT_TRUE(has_header(kHeader));
  EXPECT_FALSE(has_header("// a script\nBEGIN {}\n"));
}

TEST(Tools, HeaderErrorsNameTheLine) {
  std::string err;
  EXPECT_FALSE(parse("// tool: x\n// option: -p PID\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: an option line needs --NAME");
  EXPECT_FALSE(parse("// tool: x\n// option: -p --pid PID (float) p\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: unknown value type \"float\" (int, str, ports, list, probe, expr, spec, trace, errno or a|b|c)");
  EXPECT_FALSE(parse("// tool: x\n// option: -p --pid P (int) p\n// option: -p --other P q\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:3: option other declared twice");
  EXPECT_FALSE(parse("// tool: x\n// flamegraph: warm us\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: flamegraph: unknown kind \"warm\" (cpu, offcpu or offwake)");
  EXPECT_FALSE(parse("// tool: x\n// flamegraph: offcpu us extra\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: flamegraph: KIND [UNIT]");
  EXPECT_FALSE(parse("// tool: x\n// column: 'TIME (us) t\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: column: the quoted name has no closing quote");
  EXPECT_FALSE(parse("// tool: x\n// column: 'TIME (us)'\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: column: NAME TEXT");
  // Ranges: "min N" and "max N" clauses, for an int only, each once, and a
  // default within them.
  const std::vector<std::pair<const char*, const char*>> ranges = {
      {"(int, min x)", "min: \"x\" is not an integer"},
      {"(int, min 1, min 2)", "min given twice"},
      {"(int, min 5, max 1)", "min is above max"},
      {"(int, default 0, min 1)", "default 0 is out of the range"},
      {"(int, default 200, max 127)", "default 200 is out of the range"},
      {"(int, default x)", "default \"x\" is not an integer"},
      {"(str, min 1)", "only an int has a min"},
      {"(ports, max 5)", "only an int has a max"},
      {"(int, at least 1)", "expected \"default VALUE\", \"min N\", \"max N\" or \"repeated\", got \"at least 1\""},
      {"(int, default 1, default 2)", "default given twice"},
      {"(int, repeated)", "only an expr, spec or trace option or argument may be repeated"},
  };
  for (const auto& [spec, error] : ranges) {
    EXPECT_FALSE(parse(fmt::format("// tool: x\n// option: -n --num N {} n\n", spec), "x.bt", err)) << spec;
    EXPECT_EQ(err, fmt::format("x.bt:2: {}", error)) << spec;
  }
  EXPECT_FALSE(parse("// tool: x\n// arg: count (int, min -1, max -2) c\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: min is above max");
  auto ok = parse("// tool: x\n// option: -C --cpu CPU (int, default -1, min -1) c\n", "x.bt", err);
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(ok->options[0].range.min, -1);
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
      // Out of the header's range: named as libbpf-tools name them.
      {{"0"}, "demo: invalid interval \"0\": must be a positive integer"},
      {{"-5"}, "demo: invalid interval \"-5\": must be a positive integer"},
      {{"-r", "-5"}, "demo: -r: invalid rows \"-5\": must be a positive integer"},
      {{"-r0"}, "demo: -r: invalid rows \"0\": must be a positive integer"},
      {{"--rows=0"}, "demo: --rows: invalid rows \"0\": must be a positive integer"},
      {{"--depth", "200"}, "demo: --depth: invalid depth \"200\": must be from 1 to 127"},
      {{"--depth", "0"}, "demo: --depth: invalid depth \"0\": must be from 1 to 127"},
      {{"-u", "-1"}, "demo: -u: invalid uid \"-1\": must be 0 or more"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_FALSE(parse_args(t, c.args, kGlobals, err)) << c.error;
    EXPECT_EQ(err, c.error);
  }
}

// The bounds themselves are in range: uid 0, depth 1 and 127, any count.
TEST(Tools, AcceptsValuesInRange) {
  Tool t = demo();
  std::string err;
  auto inv = parse_args(t, {"-u", "0", "--depth", "1", "-r", "1", "1", "-7"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->named_args.at("uid"), "0");
  EXPECT_EQ(inv->named_args.at("depth"), "1");
  EXPECT_EQ(inv->positional, (std::vector<std::string>{"1", "-7"}));
  inv = parse_args(t, {"--depth=127"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->named_args.at("depth"), "127");
}

// The values given, for errors in the attach points that splice them: how
// each is named, and the command line around it.
TEST(Tools, GivenArguments) {
  Tool t = demo();
  std::string err;
  auto inv = parse_args(t, {"-r5", "--depth", "9", "-p", "181", "3", "-o", "a b"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  ASSERT_EQ(inv->given.size(), 4u);
  EXPECT_EQ(inv->given[0].ref, "getopt(\"rows\")");
  EXPECT_EQ(inv->given[0].label, "-r 5");
  EXPECT_EQ(inv->given[0].before, "-r");
  EXPECT_EQ(inv->given[0].after, " --depth 9 -p 181 3 -o 'a b'");
  EXPECT_EQ(inv->given[1].label, "--depth 9");
  EXPECT_EQ(inv->given[1].before, "-r5 --depth ");
  EXPECT_EQ(inv->given[2].ref, "getopt(\"pid\")");
  EXPECT_EQ(inv->given[3].ref, "$1");
  EXPECT_EQ(inv->given[3].text, "3");
  EXPECT_EQ(inv->given[3].label, "interval 3");
  EXPECT_EQ(inv->given[3].before, "-r5 --depth 9 -p 181 ");
  EXPECT_EQ(inv->given[3].after, " -o 'a b'");
  // A default is not given: an error in it is the tool's.
  inv = parse_args(t, {}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_TRUE(inv->given.empty());
}

TEST(Tools, Usage) {
  Tool t = demo();
  EXPECT_EQ(synopsis(t),
            "USAGE: demo [-h] [-p PID] [-4] [-L PORTS] [-s MODE] [--depth N] [-r ROWS] [-u UID] [interval] [count]");
  std::string u = usage(t);
  EXPECT_NE(u.find("Usage: demo [OPTION...] [ARG...]\nA demo tool.\n"), std::string::npos) << u;
  EXPECT_NE(u.find("  -p, --pid=PID              Process ID to trace\n"), std::string::npos) << u;
  EXPECT_NE(u.find("      --depth=N              Stack depth (default 127)\n"), std::string::npos) << u;
  EXPECT_NE(u.find("EXAMPLES:\n    demo -p 1   # pid 1 only\n"), std::string::npos) << u;
  EXPECT_EQ(u.find("p99.9"), std::string::npos) << u;
  // "// percentiles: yes" says so in the help.
  EXPECT_NE(usage(*find("biolatency")).find("\nEach histogram is followed by its estimated p50, p90, p99 and p99.9,"),
            std::string::npos);
}

// A tool's man page is its header in roff: options, columns, examples run
// through bpfscope, hyphens as minus signs.
TEST(Tools, ManPage) {
  std::string m = man_page(demo(), "1.2.3", "2026-01-02");
  EXPECT_TRUE(m.starts_with(".TH \"DEMO\" 8 \"2026-01-02\" \"bpfscope 1.2.3\" \"bpfscope tools\"\n")) << m;
  EXPECT_NE(m.find(".SH NAME\ndemo \\- A demo tool.\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fB\\-p\\fR, \\fB\\-\\-pid\\fR \\fIPID\\fR\nProcess ID to trace\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".SH COLUMNS\n.TP\n.B PID\nThe process\n.TP\n.B LAT(ms)\nIts latency, in ms\n"
                   ".TP\n.B \"TIME (us)\"\nIts time, in us\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(".SH EXAMPLES\n.TP\n.B bpfscope demo \\-p 1\npid 1 only\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".I interval\nOutput interval, in seconds (default 99999999)\n"), std::string::npos) << m;
  // Every line is text or a request of man(7).
  for (size_t pos = 0; pos < m.size();) {
    size_t nl = m.find('\n', pos);
    std::string_view line(m.data() + pos, nl - pos);
    if (line.starts_with(".")) {
      EXPECT_TRUE(line.size() > 1 && isupper(static_cast<unsigned char>(line[1]))) << line;
    }
    EXPECT_FALSE(line.starts_with("'")) << line;
    pos = nl + 1;
  }
}

// bpfscope(8) from a --help text: its sections, and its entries as tagged
// paragraphs, however the description column is reached.
TEST(Tools, ProgramManPage) {
  const char* help = R"(USAGE:
    bpfscope [options] file
    bpfscope tools                 (list)

OPTIONS:
    -e PROGRAM     the program to run
    -o, --output FILE
                   write the output
                   to FILE
    --max-series N series at most
    --probe-filter REGEX
                   attach only these

ENVIRONMENT:
    BPFTRACE_MAX_STRLEN   string capacity
    BPFTRACE_MAX_CAT_BYTES bytes cat() prints
    BPFTRACE_A, BPFTRACE_B
                          as the config keys

EXAMPLES:
    bpfscope -e 'BEGIN { exit(); }'
)";
  std::string m = program_man_page(help, "a tracer", "First.\n\nSecond.", "1.2.3", "");
  EXPECT_NE(m.find(".SH NAME\nbpfscope \\- a tracer\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".SH SYNOPSIS\n.RS 4\n.nf\nbpfscope [options] file\nbpfscope tools                 (list)\n.fi\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(".SH DESCRIPTION\nFirst.\n.PP\nSecond.\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fB\\-e PROGRAM\\fR\nthe program to run\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fB\\-o, \\-\\-output FILE\\fR\nwrite the output\nto FILE\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fB\\-\\-max\\-series N\\fR\nseries at most\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fB\\-\\-probe\\-filter REGEX\\fR\nattach only these\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".SH ENVIRONMENT\n.TP\n\\fBBPFTRACE_MAX_STRLEN\\fR\nstring capacity\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".TP\n\\fBBPFTRACE_MAX_CAT_BYTES\\fR\nbytes cat() prints\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".SH EXAMPLES\n.RS 4\n.nf\nbpfscope \\-e 'BEGIN"), std::string::npos) << m;
  EXPECT_NE(m.find(".SH TOOLS\n"), std::string::npos) << m;
  EXPECT_NE(m.find(".BR tcplife (8)\nTrace the lifespan of TCP sessions and summarize.\n"), std::string::npos) << m;
}

// bcc's probe specifier, cut into the parts a script splices.
TEST(Tools, BccSpecifiers) {
  std::string why;
  auto v = bcc_specifier("count", "-C", "t:block:block_rq_issue():u32,char*:args->bytes, args->rwbs:args->bytes>4096", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(v->origin, "-C");
  auto part = [&](const std::string& name) -> const lang::SplicedPart& {
    for (const auto& p : v->parts)
      if (p.name == name) return p;
    static lang::SplicedPart none;
    ADD_FAILURE() << "no part " << name;
    return none;
  };
  EXPECT_EQ(part("count").kind, lang::SplicedPart::Kind::Probe);
  EXPECT_EQ(part("count").text, "tracepoint:block:block_rq_issue");
  const auto& key = part("count.key");
  EXPECT_EQ(key.names, (std::vector<std::string>{"args->bytes", "args->rwbs"}));
  EXPECT_EQ(key.casts, (std::vector<std::string>{"uint32", "str"}));
  ASSERT_EQ(key.ranges.size(), 2u);
  EXPECT_EQ(v->text.substr(key.ranges[1].begin, key.ranges[1].end - key.ranges[1].begin), "args->rwbs");
  const auto& filter = part("count.filter");
  ASSERT_EQ(filter.ranges.size(), 1u);
  EXPECT_EQ(v->text.substr(filter.ranges[0].begin), "args->bytes>4096");
  EXPECT_EQ(part("count.label").text, v->text);
  EXPECT_EQ(part("count.unit").text, "args->bytes");

  v = bcc_specifier("h", "-H", "p:c:malloc(size_t size):size_t:size#sizes", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(v->parts[0].text, "uprobe:libc:malloc");
  EXPECT_EQ(v->aliases[0], (std::pair<std::string, std::string>{"size", "arg0"}));
  bool labelled = false;
  for (const auto& p : v->parts) labelled |= p.name == "h.unit" && p.text == "sizes";
  EXPECT_TRUE(labelled);
  v = bcc_specifier("h", "-H", "r:/bin/x:f()", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(v->parts[0].text, "uretprobe:/bin/x:f");
  EXPECT_EQ(v->parts[1].kind, lang::SplicedPart::Kind::Ident);  // $retval by default
  v = bcc_specifier("h", "-H", "p::do_sys_open()", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(v->parts[0].text, "kprobe:do_sys_open");
  v = bcc_specifier("h", "-H", "u:pthread:pthread_start():u64:arg2", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(v->parts[0].text, "usdt:libpthread:pthread_start");
  EXPECT_EQ(v->aliases[1], (std::pair<std::string, std::string>{"arg2", "arg1"}));  // bcc counts USDT args from 1

  const std::vector<std::pair<const char*, const char*>> bad = {
      {"t:block", "a specifier needs at least TYPE:LIBRARY:FUNCTION(SIGNATURE)"},
      {"x:c:f()", "the probe type must be p, r, t or u, not \"x\""},
      {"p:c:f", "\"f\" is not FUNCTION(SIGNATURE)"},
      {"t::f()", "a tracepoint needs its category: t:CATEGORY:EVENT()"},
      {"p:c:f():u32,u32:a", "2 types for 1 expression"},
      {"p:c:f():u32", "types without expressions (TYPES:EXPRS)"},
      {"p:c:f():u32:a:b:c", "too many ':'-separated parts (TYPE:LIBRARY:FUNCTION(SIGNATURE):TYPES:EXPRS:FILTER)"},
  };
  for (const auto& [spec, msg] : bad) {
    EXPECT_FALSE(bcc_specifier("h", "-H", spec, why)) << spec;
    EXPECT_EQ(why, msg);
  }
}

// bcc trace's probe specifier: probe, predicate and a printf of the message.
TEST(Tools, TraceSpecifiers) {
  std::string why;
  const std::string text =
      "t:block:block_rq_complete (args->error) \"dev %d type %s error %d\", args->dev, args->rwbs, args->error";
  auto v = trace_specifier("probe", "probe", text, why);
  ASSERT_TRUE(v) << why;
  auto part = [&](const std::string& name) -> const lang::SplicedPart& {
    for (const auto& p : v->parts)
      if (p.name == name) return p;
    static lang::SplicedPart none;
    ADD_FAILURE() << "no part " << name;
    return none;
  };
  auto at = [&](lang::Loc r) { return v->text.substr(r.begin, r.end - r.begin); };
  EXPECT_EQ(part("probe").text, "tracepoint:block:block_rq_complete");
  ASSERT_EQ(part("probe.filter").ranges.size(), 1u);
  EXPECT_EQ(at(part("probe.filter").ranges[0]), "(args->error)");
  EXPECT_EQ(part("probe.func").text, "block_rq_complete");
  const auto& msg = part("probe.message");
  EXPECT_EQ(msg.kind, lang::SplicedPart::Kind::Printf);
  EXPECT_EQ(msg.text, "dev %d type %s error %d");
  EXPECT_EQ(msg.names, (std::vector<std::string>{"msg"}));
  ASSERT_EQ(msg.ranges.size(), 4u);
  EXPECT_EQ(at(msg.ranges[0]), "\"dev %d type %s error %d\", args->dev, args->rwbs, args->error");
  EXPECT_EQ(at(msg.ranges[2]), "args->rwbs");
  EXPECT_EQ(msg.casts, (std::vector<std::string>{"", "", "str", ""}));  // %s reads a string
  EXPECT_EQ(part("probe.formatted").number, 1);

  // p: is the default, "c" is libc, a signature names the arguments, %K a symbol.
  v = trace_specifier("probe", "probe", "c:write(int fd) (fd == 1) \"%-5d %K\", arg3, arg1", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(part("probe").text, "uprobe:libc:write");
  EXPECT_EQ(part("probe.func").text, "write");
  EXPECT_EQ(part("probe.message").text, "%-5d %s");
  EXPECT_EQ(part("probe.message").casts, (std::vector<std::string>{"", "", "ksym"}));
  EXPECT_EQ(v->aliases[0], (std::pair<std::string, std::string>{"fd", "arg0"}));
  bool arg3 = false;
  for (const auto& a : v->aliases) arg3 |= a == std::pair<std::string, std::string>{"arg3", "arg2"};
  EXPECT_TRUE(arg3);  // bcc counts from 1
  v = trace_specifier("probe", "probe", "r:/bin/x:f", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(part("probe").text, "uretprobe:/bin/x:f");
  EXPECT_EQ(part("probe.formatted").number, 0);
  EXPECT_EQ(part("probe.message").text, "");
  v = trace_specifier("probe", "probe", "do_sys_open", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(part("probe").text, "kprobe:do_sys_open");
  v = trace_specifier("probe", "probe", "u:/bin/x:prov:tick (arg1 > 2)", why);
  ASSERT_TRUE(v) << why;
  EXPECT_EQ(part("probe").text, "usdt:/bin/x:prov:tick");
  EXPECT_EQ(part("probe.func").text, "prov:tick");

  const std::vector<std::pair<const char*, const char*>> bad = {
      {"x:c:f", "the probe type must be p, r, t or u (or none, for p), not \"x\""},
      {"t::f", "a tracepoint is t:CATEGORY:EVENT"},
      {"t:a:b(x)",
       "USDT and tracepoint probes take no signature: use arg1, arg2... (USDT) or args->FIELD "
       "(tracepoint), and a space before a (predicate)"},
      {"c:f (x", "the predicate's '(' is not closed"},
      {"c:f(int x", "the signature's '(' is not closed"},
      {"c:f \"%d", "the format string's '\"' is not closed"},
      {"c:f \"%d\" x", "expected ',' and the format's arguments after the format string, not \"x\""},
      {"c:f \"%d\",", "an empty argument after the format string"},
      {"c:f x", "expected a (predicate) or a \"format\" after the probe, not \"x\""},
      {"u::tick", "a USDT probe needs its binary or library: u:LIBRARY[:PROVIDER]:PROBE"},
  };
  for (const auto& [spec, msg] : bad) {
    EXPECT_FALSE(trace_specifier("probe", "probe", spec, why)) << spec;
    EXPECT_EQ(why, msg) << spec;
  }
}

// A repeated trace argument takes every word left, each spliced, and names
// it in attach errors.
TEST(Tools, RepeatedTraceArgument) {
  std::string err;
  auto t = parse("// tool: x\n// option: -p --pid PID (int) P\n// arg: probe (trace, repeated) Probe\nBEGIN {}\n",
                 "x.bt", err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(synopsis(*t), "USAGE: x [-h] [-p PID] probe [probe ...]");
  auto inv = parse_args(*t, {"t:a:b", "-p", "5", "c:f \"%d\", arg1"}, {}, err);
  ASSERT_TRUE(inv) << err;
  ASSERT_EQ(inv->spliced.size(), 2u);
  EXPECT_EQ(inv->spliced[1].text, "c:f \"%d\", arg1");
  EXPECT_EQ(inv->spliced[1].label, "probe 'c:f \"%d\", arg1'");
  EXPECT_EQ(inv->spliced[1].before, "t:a:b -p 5 ");
  EXPECT_EQ(inv->spliced_options, (std::vector<std::string>{"probe"}));
  EXPECT_EQ(inv->named_args.at("pid"), "5");
  EXPECT_FALSE(parse_args(*t, {}, {}, err));
  EXPECT_EQ(err, "x: missing argument probe");
  EXPECT_FALSE(parse_args(*t, {"x:a:b"}, {}, err));
  EXPECT_EQ(err,
            "x: probe: invalid specifier \"x:a:b\": the probe type must be p, r, t or u (or none, for p), not \"x\"");
  EXPECT_FALSE(parse("// tool: x\n// arg: a (trace, repeated) A\n// arg: b (int) B\nBEGIN {}\n", "x.bt", err));
  EXPECT_NE(err.find("a repeated argument is the last one"), std::string::npos) << err;
  EXPECT_FALSE(parse("// tool: x\n// arg: a (int, repeated) A\nBEGIN {}\n", "x.bt", err));
  EXPECT_NE(err.find("only an expr, spec or trace option or argument may be repeated"), std::string::npos) << err;
}

// expr and spec options: their values are spliced, not getopt() strings; a
// repeated one keeps every value, another the last.
TEST(Tools, SplicedOptions) {
  std::string err;
  auto t = parse("// tool: x\n// option: -H --histogram SPEC (spec, repeated) H\n"
                 "// option: -e --expr E (expr) E\nBEGIN {}\n", "x.bt", err);
  ASSERT_TRUE(t) << err;
  EXPECT_TRUE(t->options[0].repeated);
  EXPECT_EQ(t->options[1].kind, ValueKind::Expr);
  auto inv = parse_args(*t, {"-H", "t:a:b()", "-e", "1", "--histogram", "t:a:c()", "-e", "pid + 1"}, kGlobals, err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->spliced_options, (std::vector<std::string>{"histogram", "expr"}));
  EXPECT_TRUE(inv->named_args.empty());
  ASSERT_EQ(inv->spliced.size(), 3u);
  EXPECT_EQ(inv->spliced[0].origin, "-H");
  EXPECT_EQ(inv->spliced[1].origin, "--histogram");
  EXPECT_EQ(inv->spliced[2].text, "pid + 1");
  EXPECT_FALSE(parse_args(*t, {"-H", "t:a"}, kGlobals, err));
  EXPECT_EQ(err, "x: -H: invalid specifier \"t:a\": a specifier needs at least TYPE:LIBRARY:FUNCTION(SIGNATURE)");
  EXPECT_FALSE(parse("// tool: x\n// option: -p --pid P (int, repeated) p\n", "x.bt", err));
  EXPECT_EQ(err, "x.bt:2: only an expr, spec or trace option or argument may be repeated");
}

// An errno option takes a number or a name, and the script sees the number.
TEST(Tools, ErrnoValues) {
  std::string err;
  auto t = parse("// tool: x\n// option: -e --errno ERRNO (errno) E\nBEGIN {}\n", "x.bt", err);
  ASSERT_TRUE(t) << err;
  for (const auto& [given, seen] : std::vector<std::pair<std::string, std::string>>{
           {"EPERM", "1"}, {"EBADF", "9"}, {"ENOENT", "2"}, {"9", "9"}, {"0x9", "9"}}) {
    auto inv = parse_args(*t, {"-e", given}, kGlobals, err);
    ASSERT_TRUE(inv) << err;
    EXPECT_EQ(inv->named_args.at("errno"), seen) << given;
  }
  for (const char* bad : {"EFOO", "eperm", "0", "-1", ""}) {
    EXPECT_FALSE(parse_args(*t, {"-e", bad}, kGlobals, err)) << bad;
    EXPECT_EQ(err, fmt::format("x: -e: invalid errno \"{}\" (a positive number, or a name such as EPERM)", bad));
  }
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
  EXPECT_EQ(demo().graph, std::nullopt);  // no header
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

// The words of the column headers a tool's script prints: the string
// literals of a printf without named arguments (`printf("%-7s %-16s\n",
// "PID", "COMM")`, widths aside, a ternary's too) and the words of its format outside the
// conversions (soaccept's FAM), a CSV header printed alone (tcpwin's
// `event,sock,...`), and the header of a top-style print() (`print(...,
// "%-6d %s", "PID COMM")`). Banners pass their text in the format or as
// expressions, events by name: neither counts.
std::set<std::string> header_words(const Tool& tool) {
  lang::Diagnostics diags;
  lang::Source source(tool.path, tool.source);
  std::optional<lang::Program> program;
  if (lang::load_imports(source, diags, library_file)) program = lang::parse(source, diags);
  EXPECT_TRUE(program) << tool.name << ": " << diags.render(source);
  std::set<std::string> words;
  if (!program) return words;
  // Words split at blanks; a name in single quotes ('TIME (us)') is one.
  auto add_words = [&](std::string_view text) {
    for (size_t i = 0; i < text.size();) {
      const bool quoted = text[i] == '\'';
      size_t end = quoted ? text.find('\'', i + 1) : text.find_first_of(" \t\n", i);
      if (end == std::string_view::npos) end = text.size();
      std::string_view w = text.substr(i + quoted, end - i - quoted);
      if (std::any_of(w.begin(), w.end(), [](char c) { return isalnum(static_cast<unsigned char>(c)); }))
        words.emplace(w);
      i = end + 1;
    }
  };
  for (const auto& e : program->exprs) {
    if (e.kind != lang::ExprKind::Call || e.args.empty()) continue;
    const auto& first = program->expr(e.args[0]);
    if (e.name == "print" && e.args.size() >= 4 && program->expr(e.args[3]).kind == lang::ExprKind::String) {
      add_words(program->expr(e.args[3]).sval);
      continue;
    }
    if (e.name != "printf" || first.kind != lang::ExprKind::String) continue;
    bool named = false;
    for (const auto& n : e.field_names) named = named || !n.empty();
    if (named) continue;
    const std::string& format = first.sval;
    if (e.args.size() == 1) {
      // A CSV header: lowercase names and commas only.
      bool csv = format.find(',') != std::string::npos && format.ends_with("\n");
      for (char c : format.substr(0, format.size() - 1))
        csv = csv && (islower(static_cast<unsigned char>(c)) || c == '_' || c == ',');
      if (!csv) continue;
      std::string names = format.substr(0, format.size() - 1);
      std::replace(names.begin(), names.end(), ',', ' ');
      add_words(names);
      continue;
    }
    // The literals; in a header (one literal at least), the literals of a
    // ternary too: an optional column, `getopt("time") ? "TIME     " : ""`.
    std::vector<const lang::Expr*> literals, optional;
    for (size_t i = 1; i < e.args.size(); ++i) {
      const auto& arg = program->expr(e.args[i]);
      if (arg.kind == lang::ExprKind::String) literals.push_back(&arg);
      if (arg.kind == lang::ExprKind::Ternary)
        for (size_t k = 1; k < arg.args.size(); ++k)
          if (program->expr(arg.args[k]).kind == lang::ExprKind::String) optional.push_back(&program->expr(arg.args[k]));
    }
    if (literals.empty()) continue;
    for (const auto* l : literals) add_words(l->sval);
    for (const auto* l : optional) add_words(l->sval);
    // The format's own words, conversions (%-*s, %%) blanked out.
    std::string text;
    for (size_t i = 0; i < format.size(); ++i) {
      if (format[i] != '%') {
        text += format[i];
        continue;
      }
      size_t j = i + 1;
      while (j < format.size() && !isalpha(static_cast<unsigned char>(format[j])) && format[j] != '%') ++j;
      while (j < format.size() && (format[j] == 'l' || format[j] == 'h')) ++j;
      i = j;
      text += ' ';
    }
    std::istringstream in(text);
    for (std::string w; in >> w;) {
      if (std::any_of(w.begin(), w.end(), [](char c) { return isalnum(static_cast<unsigned char>(c)); }))
        words.insert(w);
    }
  }
  return words;
}

// Every column a tool's script prints a header for has its "// column:" (its
// man page's COLUMNS), and every "// column:" names a column it prints.
TEST(Tools, ColumnsMatchTheHeaders) {
  for (const auto& tool : all()) {
    std::set<std::string> printed = header_words(tool), documented;
    for (const auto& [name, help] : tool.columns) {
      documented.insert(name);
      EXPECT_TRUE(printed.contains(name)) << tool.name << ": column " << name << " is not in a header it prints";
    }
    for (const auto& w : printed)
      EXPECT_TRUE(documented.contains(w)) << tool.name << ": header word " << w << " has no // column:";
  }
}

}  // namespace
}  // namespace bpfscope::tools
