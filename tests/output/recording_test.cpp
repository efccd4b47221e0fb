// A -f record recording rendered again (render_message) prints what the live
// run printed: every kind of map and value through json_map/typed_json and
// back.
#include <gtest/gtest.h>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;

std::string render(const std::string& line, RenderOptions opts = {}) {
  std::string error;
  auto r = render_message(line, opts, error);
  EXPECT_TRUE(r.has_value()) << error << "\n" << line;
  return r ? r->out : "";
}

std::string render_error(const std::string& line) {
  std::string error;
  auto r = render_message(line, {}, error);
  EXPECT_FALSE(r.has_value()) << line;
  return error;
}

void expect_round_trip(const MapSnapshot& m, HistLayout layout = HistLayout::Bpftrace, bool percentiles = false) {
  const std::string line = record_map(m, 0, 0, percentiles, layout);
  EXPECT_EQ(render(line), map_text(m, 0, 0, layout, percentiles)) << line;
}

Value stack(Value::StackOf of, std::vector<std::string> frames) {
  std::string text;
  for (const auto& f : frames) text += "\n        " + f + "+4";
  return Value::of_stack(of, text + "\n", frames);
}

TEST(Recording, MapsRenderAsTheLiveRun) {
  Value ptr = Value::of_pointer(0xffff888012345678);
  Value en = Value::of_int(2);
  en.is_enum = true;
  en.s = "TCP_SYN_SENT";
  expect_round_trip(keyed("@c", AggKind::Count, {{S("with space"), val(I(3))}, {S("x"), val(I(10))}}));
  expect_round_trip(keyed("@t", AggKind::Sum, {{T({I(-1), S("a b"), T({I(2), I(3)})}), val(I(5))}}));
  expect_round_trip(keyed("@r", AggKind::Count,
                          {{Value::of_record({"Local Address", "port"}, {S("10.0.0.1"), I(80)}), val(I(1))}}));
  expect_round_trip(keyed("@p", AggKind::Max, {{ptr, val(I(7))}, {en, val(I(9))}}));
  expect_round_trip(keyed("@u", AggKind::Sum, {{U(UINT64_MAX), val(U(UINT64_MAX - 1))}}, false));
  expect_round_trip(scalar("@x", AggKind::Min, val(I(-42))));
  expect_round_trip(keyed("@s", AggKind::Plain, {{I(1), val(S("str"))}, {I(2), val(T({I(1), S("b")}))}}));
  expect_round_trip(keyed("@a", AggKind::Avg, {{S("y"), avg(2, 19)}, {S("x"), avg(1, 2)}}));
  expect_round_trip(scalar("@st", AggKind::Stats, avg(3, 90)));
  expect_round_trip(keyed("@k", AggKind::Count, {{stack(Value::StackOf::Kernel, {"do_sys", "entry"}), val(I(4))}}));
}

TEST(Recording, HistogramsKeepTheirBuckets) {
  MapSnapshot h = keyed("@h", AggKind::Hist, {{S("a"), buckets({1, 2, 0, 5})}, {S("b"), buckets({0, 0, 0, 0, 9})}});
  expect_round_trip(h);
  expect_round_trip(h, HistLayout::Bcc);
  expect_round_trip(h, HistLayout::Bpftrace, true);
  std::vector<uint64_t> b(hist_bucket_count(2), 0);
  b[hist_index(9, 2)] = 2;
  b[hist_index(4100, 2)] = 3;
  MapSnapshot h2 = scalar("@h2", AggKind::Hist, buckets(b));
  h2.hist.bits = 2;
  expect_round_trip(h2);
  MapSnapshot l = scalar("@l", AggKind::LHist, buckets({3, 1, 0, 4}));
  l.hist.min = 100;
  l.hist.max = 200;
  l.hist.step = 50;
  expect_round_trip(l);
  // --percentiles on render adds what the live run would have printed.
  EXPECT_EQ(render(record_map(h)), map_text(h));
  EXPECT_EQ(render(record_map(h), {.percentiles = true}), map_text(h, 0, 0, HistLayout::Bpftrace, true));
}

TEST(Recording, TimeSeriesKeepTheirIntervals) {
  Aggregate one, two;
  one.series = {{1000, -3}, {1001, 5}, {1003, 2}};
  two.series = {{1002, 7}};
  MapSnapshot t = keyed("@t", AggKind::TSeries, {{S("b"), one}, {S("a"), two}});
  t.tseries = TSeriesParams{.interval_ns = 100'000'000, .intervals = 5, .agg = TSeriesAgg::Max};
  expect_round_trip(t);
  MapSnapshot u = scalar("@u", AggKind::TSeries, one, false);
  u.tseries = TSeriesParams{.interval_ns = 1'000'000'000, .intervals = 3};
  expect_round_trip(u);
  // bpftrace's own JSON lacks the interval: a clear error, no crash.
  std::string error;
  EXPECT_FALSE(render_message(json_map(u), {}, error));
  EXPECT_EQ(error, "a tseries without interval_ns and intervals");
}

TEST(Recording, EventsValuesAndMarkers) {
  EXPECT_EQ(render(json_event("printf", "a 5\n")), "a 5\n");
  EXPECT_EQ(render(with_fields(json_named_event({"pid"}, {I(1)}), text_field("PID 1\n"))), "PID 1\n");
  const Value ptr = Value::of_pointer(0x32);
  EXPECT_EQ(render(with_fields(json_value_event(ptr), typed_field(ptr))), to_text(ptr) + "\n");
  EXPECT_EQ(render(json_exit(true)), "\n\n");
  EXPECT_EQ(render(json_exit(false)), "");
  EXPECT_EQ(render(""), "");
  std::string error;
  auto r = render_message(json_attached(3), {}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(r->err, "Attached 3 probes\n");
}

TEST(Recording, FoldedFromARecording) {
  MapSnapshot k = keyed("@k", AggKind::Count, {{stack(Value::StackOf::Kernel, {"leaf", "root"}), val(I(4))}});
  EXPECT_EQ(render(record_map(k), {.folded = true}), folded_text(k));
  std::string error;
  auto r = render_message(record_map(keyed("@c", AggKind::Count, {{I(1), val(I(2))}})), {.folded = true}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(r->err, "@c[1]: 2\n");
}

// A tool's map of stacks says how it is drawn; one it keeps only for
// drawing ("drawn_only") prints no text, but folds with its graph's layout.
TEST(Recording, ToolGraphsAndDrawnOnlyMaps) {
  using enum Value::StackOf;
  MapSnapshot w = keyed("@folded", AggKind::Sum,
                        {{T({S("reader"), stack(Kernel, {"schedule", "read"}), stack(Kernel, {"wake", "write"}),
                             S("writer")}),
                          val(I(70))}});
  const std::string line = json_with_graph(record_map(w), GraphKind::OffWake, "us", true);
  EXPECT_NE(line.find(R"(, "graph": "offwake", "unit": "us", "drawn_only": true})"), std::string::npos) << line;
  std::string error;
  auto r = render_message(line, {}, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(r->graph, GraphKind::OffWake);
  EXPECT_EQ(r->unit, "us");
  ASSERT_TRUE(r->map);
  EXPECT_EQ(render(line, {.folded = true}), "reader;read;schedule;--;wake;write;writer 70\n");
  EXPECT_EQ(render(line, {.folded = true}), folded_text(w, StackLayout::OffWake));
  // Printed by the text run as well: a graph, not drawn only.
  const std::string both = json_with_graph(record_map(w), GraphKind::Cpu, "", false);
  EXPECT_EQ(both.find("unit"), std::string::npos);
  EXPECT_EQ(render(both), map_text(w));
  EXPECT_EQ(render_error(R"({"type": "map", "data": {"@x": 5}, "graph": "warm"})"), "unknown graph \"warm\"");
  // Other output goes to stderr with -f folded, as the live run sends it.
  r = render_message(json_event("printf", "header\n"), {.folded = true}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(r->err, "header\n");
}

TEST(Recording, MalformedLinesSayWhere) {
  EXPECT_EQ(render_error(R"({"type": "map", "data": {"@x": 5})"), "expected ',' or '}' (column 34)");
  EXPECT_EQ(render_error(R"({"type": "printf", "data": "abc)"), "unterminated string (column 32)");
  EXPECT_EQ(render_error(R"({"data": 1})"), "not a message: no \"type\"");
  EXPECT_EQ(render_error(R"({"type": "nope"})"), "unknown message type \"nope\"");
  EXPECT_EQ(render_error(R"({"type": "hist", "data": {"@h": [{"min": 5, "count": 1}]}, "agg": "lhist",)"
                         R"( "min": 0, "max": 10, "step": 0})"),
            "an lhist without min, max and step");
  EXPECT_EQ(render_error(R"({"type": "hist", "data": {"@h": [1]}, "agg": "hist", "bits": 0})"),
            "a bucket without a count");
  EXPECT_EQ(render_error("[1, 2"), "expected ',' or ']' (column 6)");
}

}  // namespace
}  // namespace bpfscope::output
