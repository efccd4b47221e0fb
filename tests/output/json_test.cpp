// JSON output (REFERENCE 6.8): bpftrace 0.26 NDJSON lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;  // snapshot_builders.h

MapSnapshot with_hist(MapSnapshot m, int bits) {
  m.hist.bits = bits;
  return m;
}
MapSnapshot with_lhist(MapSnapshot m, int64_t min, int64_t max, int64_t step) {
  m.hist.min = min;
  m.hist.max = max;
  m.hist.step = step;
  return m;
}

// Every line must parse as JSON: python3's json module is the judge.
bool all_lines_parse(const std::string& text) {
  const char* cmd =
      "python3 -c 'import json,sys\n"
      "for l in sys.stdin:\n"
      "    json.loads(l)' 2>/dev/null";
  FILE* p = popen(cmd, "w");
  if (p == nullptr) return false;
  fwrite(text.data(), 1, text.size(), p);
  return pclose(p) == 0;
}


std::string collected;  // every line the tests produce, checked at the end

void expect_line(const std::string& got, const std::string& want) {
  EXPECT_EQ(got, want);
  collected += got;
}

TEST(JsonString, Escapes) {
  struct Case {
    std::string in, out;
  };
  const std::vector<Case> cases = {
      {"", R"("")"},
      {"abc", R"("abc")"},
      {"a\"b", R"("a\"b")"},
      {"a\\b", R"("a\\b")"},
      {"a\nb\rc\td", R"("a\nb\rc\td")"},
      {std::string("\0", 1), R"("\u0000")"},
      {"\x01\x1f\x1b", R"("\u0001\u001f\u001b")"},
      {"\b\f", R"("\u0008\u000c")"},
      {"\x7f", "\"\x7f\""},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},  // UTF-8 passes through
      {"/", R"("/")"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(json_string(c.in), c.out) << c.in;
    collected += json_value_event(S(c.in));
  }
}

TEST(JsonValue, Values) {
  struct Case {
    Value in;
    std::string out;
  };
  const std::vector<Case> cases = {
      {I(5), "5"},
      {I(-5), "-5"},
      {I(0), "0"},
      {U(7), "7"},
      {B(true), "true"},
      {B(false), "false"},
      {S("s"), R"("s")"},
      {T({I(1), S("b")}), R"([1,"b"])"},
      {T({I(1), T({I(2), S("x y")}), B(true)}), R"([1,[2,"x y"],true])"},
      {Value{}, "null"},
      // Floats: shortest round trip, always with a fraction or exponent; JSON
      // has no infinity.
      {Value::of_float(9.765625), "9.765625"},
      {Value::of_float(9.77), "9.77"},
      {Value::of_float(-2.5), "-2.5"},
      {Value::of_float(1234567.0), "1234567.0"},
      {Value::of_float(0.0), "0.0"},
      {Value::of_float(1e300), "1e+300"},
      {Value::of_float(1.0 / 0.0), "null"},
      {Value::of_record({"a", "b"}, {I(1), S("x")}), R"({"a": 1, "b": "x"})"},
      {T({Value::of_record({"m"}, {T({I(2), I(3)})}), I(4)}), R"([{"m": [2,3]},4])"},
      {Value::of_array({U(1), U(2), U(3), U(4)}), "[1,2,3,4]"},
      {Value::of_buffer("a\nb"), R"("a\\x0ab")"},
      // 0.26 quotes integers a double cannot hold exactly.
      {I(9007199254740992), "9007199254740992"},        // 2^53
      {I(9007199254740993), R"("9007199254740993")"},   // 2^53 + 1
      {I(-9007199254740993), R"("-9007199254740993")"},
      {I(uint64_t{1} << 60), "1152921504606846976"},    // exact in a double
      {I(INT64_MAX), R"("9223372036854775807")"},
      {I(INT64_MIN), "-9223372036854775808"},           // -2^63 is exact
      {U(UINT64_MAX), R"("18446744073709551615")"},
      {U(uint64_t{1} << 63), "9223372036854775808"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(json_value(c.in), c.out);
    collected += json_value_event(c.in);
  }
}

TEST(JsonEvents, Examples) {
  expect_line(json_event("printf", "a 5\n"), "{\"type\": \"printf\", \"data\": \"a 5\\n\"}\n");
  expect_line(json_event("time", "12:00:00\n"),
              "{\"type\": \"time\", \"data\": \"12:00:00\\n\"}\n");
  expect_line(json_event("syscall", "x\ty"), "{\"type\": \"syscall\", \"data\": \"x\\ty\"}\n");
  expect_line(json_attached(1),
              "{\"type\": \"attached_probes\", \"count\": 1, \"data\": {\"probes\": 1}}\n");
  expect_line(json_lost(42),
              "{\"type\": \"lost_events\", \"count\": 42, \"data\": {\"events\": 42}}\n");
  expect_line(json_named_event({"pid", "comm"}, {I(123), S("bash")}),
              "{\"type\": \"event\", \"data\": {\"pid\": 123, \"comm\": \"bash\"}}\n");
  expect_line(json_value_event(I(5)), "{\"type\": \"value\", \"data\": 5}\n");
  expect_line(json_value_event(T({I(1), S("b")})), "{\"type\": \"value\", \"data\": [1,\"b\"]}\n");
  expect_line(json_message("errorf", "e 1", "stdin", 1, 9),
              "{\"type\": \"errorf\", \"msg\": \"e 1\", \"filename\": \"stdin\", \"line\": 1, \"col\": 9}\n");
  // What a recording adds.
  expect_line(with_fields(json_named_event({"pid"}, {I(1)}), text_field("1\n")),
              "{\"type\": \"event\", \"data\": {\"pid\": 1}, \"text\": \"1\\n\"}\n");
  expect_line(with_fields(json_value_event(S("s")), typed_field(S("s"))),
              "{\"type\": \"value\", \"data\": \"s\", \"typed\": \"s\"}\n");
  expect_line(with_fields(json_value_event(T({I(1), S("b")})), typed_field(T({I(1), S("b")}))),
              "{\"type\": \"value\", \"data\": [1,\"b\"], \"typed\": {\"tuple\":[1,\"b\"]}}\n");
  expect_line(json_exit(true), "{\"type\": \"exit\", \"data\": {\"gap\": true}}\n");
}

TEST(JsonMap, Plain) {
  expect_line(json_map(scalar("@x", AggKind::Count, val(I(5)))),
              R"({"type": "map", "data": {"@x": 5}})" "\n");
  expect_line(json_map(scalar("@", AggKind::Plain, val(S("a\"b")))),
              R"({"type": "map", "data": {"@": "a\"b"}})" "\n");
  // Keyed: keys are strings, sorted by value (REFERENCE 4.3).
  expect_line(json_map(keyed("@k", AggKind::Count, {{I(100), val(I(7))}, {I(-5), val(I(3))}})),
              R"({"type": "map", "data": {"@k": {"-5": 3, "100": 7}}})" "\n");
  // Multi-keys join with "," and 0.26 drops every space of the key text.
  expect_line(json_map(keyed("@t", AggKind::Sum,
                             {{T({S("a"), I(2)}), val(I(1))},
                              {T({S("b c"), T({I(1), I(2)})}), val(I(9))}})),
              R"x({"type": "map", "data": {"@t": {"a,2": 1, "bc,(1,2)": 9}}})x" "\n");
  expect_line(json_map(keyed("@s", AggKind::Plain, {{S("x\ny"), val(S("v"))}})),
              R"({"type": "map", "data": {"@s": {"x\ny": "v"}}})" "\n");
  // Plain values that are not integers sort by key; tuples are arrays.
  expect_line(json_map(keyed("@v", AggKind::Plain,
                             {{I(2), val(T({I(1), S("b")}))}, {I(1), val(B(true))}})),
              R"({"type": "map", "data": {"@v": {"1": true, "2": [1,"b"]}}})" "\n");
  // Pointers are numbers in JSON, as values and in keys.
  expect_line(json_map(keyed("@p", AggKind::Plain, {{T({Value::of_pointer(50), I(3)}), val(Value::of_pointer(255))}})),
              R"({"type": "map", "data": {"@p": {"50,3": 255}}})" "\n");
}

TEST(JsonMap, TopDivAndEmpty) {
  const auto m = keyed("@c", AggKind::Count,
                       {{S("a"), val(I(30))}, {S("b"), val(I(10))}, {S("c"), val(I(20))}});
  expect_line(json_map(m), R"({"type": "map", "data": {"@c": {"b": 10, "c": 20, "a": 30}}})" "\n");
  expect_line(json_map(m, 2), R"({"type": "map", "data": {"@c": {"c": 20, "a": 30}}})" "\n");
  expect_line(json_map(m, 0, 10), R"({"type": "map", "data": {"@c": {"b": 1, "c": 2, "a": 3}}})" "\n");
  expect_line(json_map(m, 1, 3), R"({"type": "map", "data": {"@c": {"a": 10}}})" "\n");
  EXPECT_EQ(json_map(keyed("@e", AggKind::Count, {})), "");
  EXPECT_EQ(json_map(keyed("@h", AggKind::Hist, {})), "");
  // min/max sort as uint64 in 0.26: negatives last.
  expect_line(json_map(keyed("@m", AggKind::Min, {{I(1), val(I(-1))}, {I(2), val(I(3))}})),
              R"({"type": "map", "data": {"@m": {"2": 3, "1": -1}}})" "\n");
}

TEST(JsonMap, Stats) {
  expect_line(json_map(scalar("@s", AggKind::Stats, avg(3, 17))),
              R"({"type": "stats", "data": {"@s": {"count": 3, "average": 5, "total": 17}}})" "\n");
  expect_line(json_map(scalar("@s", AggKind::Stats, avg(3, -10))),
              R"({"type": "stats", "data": {"@s": {"count": 3, "average": -3, "total": -10}}})" "\n");
  expect_line(json_map(scalar("@a", AggKind::Avg, avg(2, 7))),
              R"({"type": "stats", "data": {"@a": 3}})" "\n");
  expect_line(json_map(scalar("@a", AggKind::Avg, avg(2, -40))),
              R"({"type": "stats", "data": {"@a": -20}})" "\n");
  // div applies to the average only (0.26).
  expect_line(json_map(scalar("@s", AggKind::Stats, avg(3, 90)), 0, 10),
              R"({"type": "stats", "data": {"@s": {"count": 3, "average": 3, "total": 90}}})" "\n");
  expect_line(json_map(keyed("@a", AggKind::Avg, {{S("y"), avg(1, 9)}, {S("x"), avg(1, 2)}})),
              R"({"type": "stats", "data": {"@a": {"x": 2, "y": 9}}})" "\n");
  expect_line(
      json_map(keyed("@s", AggKind::Stats, {{I(1), avg(2, 10)}})),
      R"({"type": "stats", "data": {"@s": {"1": {"count": 2, "average": 5, "total": 10}}}})" "\n");
}

TEST(JsonMap, Hist) {
  // hist(-1), hist(0), hist(2): buckets from the first to the last non-empty,
  // zero buckets between them included (0.26 build_histogram), "," between.
  expect_line(json_map(with_hist(scalar("@h", AggKind::Hist, buckets({1, 1, 0, 1, 0, 0})), 0)),
              R"({"type": "hist", "data": {"@h": [{"max": -1, "count": 1},)"
              R"({"min": 0, "max": 0, "count": 1},{"min": 1, "max": 1, "count": 0},)"
              R"({"min": 2, "max": 3, "count": 1}]}})" "\n");
  // REFERENCE 6.3: hist(-1), hist(2), hist(3), hist(5).
  expect_line(json_map(with_hist(scalar("@h", AggKind::Hist, buckets({1, 0, 0, 2, 1})), 0)),
              R"({"type": "hist", "data": {"@h": [{"max": -1, "count": 1},)"
              R"({"min": 0, "max": 0, "count": 0},{"min": 1, "max": 1, "count": 0},)"
              R"({"min": 2, "max": 3, "count": 2},{"min": 4, "max": 7, "count": 1}]}})" "\n");
  // Large buckets: [1K, 2K) is index 12.
  std::vector<uint64_t> b(hist_bucket_count(0), 0);
  b[hist_index(1500, 0)] = 4;
  expect_line(json_map(with_hist(scalar("@h", AggKind::Hist, buckets(b)), 0)),
              R"({"type": "hist", "data": {"@h": [{"min": 1024, "max": 2047, "count": 4}]}})" "\n");
  // hist(n, 2): indexes 1..8 are single values, then 4 buckets per power of 2.
  std::vector<uint64_t> b2(hist_bucket_count(2), 0);
  b2[hist_index(7, 2)] = 1;
  b2[hist_index(9, 2)] = 2;
  b2[hist_index(4100, 2)] = 3;
  ASSERT_EQ(hist_index(7, 2), 8u);
  const std::string got = json_map(with_hist(scalar("@h", AggKind::Hist, buckets(b2)), 2));
  EXPECT_EQ(got.rfind(R"({"type": "hist", "data": {"@h": [{"min": 7, "max": 7, "count": 1},)"
                      R"({"min": 8, "max": 9, "count": 2},{"min": 10, "max": 11, "count": 0},)", 0),
            0u)
      << got;
  EXPECT_NE(got.find(R"({"min": 4096, "max": 5119, "count": 3}]}})" "\n"), std::string::npos) << got;
  collected += got;
  // A zeroed hist is [].
  expect_line(json_map(with_hist(scalar("@h", AggKind::Hist, buckets({0, 0, 0})), 0)),
              R"({"type": "hist", "data": {"@h": []}})" "\n");
  // div divides counts; the range is chosen on undivided counts.
  expect_line(json_map(with_hist(scalar("@h", AggKind::Hist, buckets({0, 10, 3})), 0), 0, 5),
              R"({"type": "hist", "data": {"@h": [{"min": 0, "max": 0, "count": 2},)"
              R"({"min": 1, "max": 1, "count": 0}]}})" "\n");
  // Keyed: sorted by total count.
  expect_line(
      json_map(with_hist(keyed("@h", AggKind::Hist,
                               {{S("b"), buckets({0, 0, 5})}, {S("a"), buckets({0, 1})},
                                {S("z"), buckets({0, 0})}}),
                         0)),
      R"({"type": "hist", "data": {"@h": {"z": [], "a": [{"min": 0, "max": 0, "count": 1}],)"
      R"( "b": [{"min": 1, "max": 1, "count": 5}]}}})" "\n");
}

TEST(JsonMap, LHist) {
  // REFERENCE 6.3: lhist(7|12|13, 0, 10, 5); the overflow bucket has only min.
  expect_line(json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({0, 0, 1, 2})), 0, 10, 5)),
              R"({"type": "hist", "data": {"@l": [{"min": 5, "max": 9, "count": 1},)"
              R"({"min": 10, "count": 2}]}})" "\n");
  // Underflow bucket has only max (MIN-1).
  expect_line(json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({3, 1, 0, 0})), 100, 200, 50)),
              R"({"type": "hist", "data": {"@l": [{"max": 99, "count": 3},)"
              R"({"min": 100, "max": 149, "count": 1}]}})" "\n");
  // Only the overflow bucket.
  expect_line(json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({0, 0, 0, 4})), 0, 10, 5)),
              R"({"type": "hist", "data": {"@l": [{"min": 10, "count": 4}]}})" "\n");
  // div has no effect on lhist; step 1024 labels stay numbers.
  expect_line(
      json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({0, 6})), 0, 4096, 1024), 0, 3),
      R"({"type": "hist", "data": {"@l": [{"min": 0, "max": 1023, "count": 6}]}})" "\n");
  expect_line(json_map(with_lhist(keyed("@l", AggKind::LHist, {{T({I(1), S("a")}), buckets({0, 1})}}),
                                  0, 10, 5)),
              R"({"type": "hist", "data": {"@l": {"1,a": [{"min": 0, "max": 4, "count": 1}]}}})" "\n");
  expect_line(json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({0, 0, 0, 0})), 0, 10, 5)),
              R"({"type": "hist", "data": {"@l": []}})" "\n");
}

// Every kind of line parses as JSON. ctest runs each test in its own
// process, so this test makes its own sample of every message kind rather
// than relying on the lines the other tests collected.
TEST(JsonZZ, EveryLineParses) {
  collected += json_value_event(S("quote \" backslash \\ tab \t nl \n ctl \x01"));
  collected += json_value_event(T({I(1), S("b"), T({I(2), I(3)})}));
  collected += json_event("printf", "a 5\n\"x\"\n");
  collected += json_attached(3);
  collected += json_lost(7);
  collected += json_map(keyed("@k", AggKind::Count, {{I(-5), val(I(3))}, {I(100), val(I(7))}}));
  collected += json_map(keyed("@t", AggKind::Plain, {{T({S("a"), I(2)}), val(S("v"))}}));
  collected += json_map(with_lhist(scalar("@l", AggKind::LHist, buckets({1, 0, 1, 2})), 0, 10, 5));
  collected += json_map(with_lhist(keyed("@l", AggKind::LHist, {{T({I(1), S("a")}), buckets({0, 1})}}), 0, 10, 5));
  ASSERT_FALSE(collected.empty());
  size_t lines = 0;
  for (const char c : collected) lines += c == '\n';
  EXPECT_GE(lines, 9u);
  EXPECT_TRUE(all_lines_parse(collected)) << collected;
  EXPECT_FALSE(all_lines_parse("{\"a\": 1,}\n"));  // the checker does reject bad JSON
}

}  // namespace
}  // namespace bpfscope::output
