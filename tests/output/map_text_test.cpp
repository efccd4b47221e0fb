// map_text: layouts (REFERENCE 6.2), entry order (4.3), top/div (4.2).
#include <gtest/gtest.h>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;  // snapshot_builders.h

std::vector<uint64_t> hist_of(const std::vector<int64_t>& values, int bits = 0) {
  std::vector<uint64_t> b(hist_bucket_count(bits));
  for (const int64_t v : values) b.at(hist_index(v, bits))++;
  return b;
}

std::vector<uint64_t> lhist_of(const std::vector<int64_t>& values, int64_t min, int64_t max,
                               int64_t step) {
  std::vector<uint64_t> b(lhist_bucket_count(min, max, step));
  for (const int64_t v : values) b.at(lhist_index(v, min, max, step))++;
  return b;
}

struct MapCase {
  const char* name;
  MapSnapshot map;
  uint64_t top;
  uint64_t div;
  std::string text;
};

TEST(MapText, Table) {
  MapSnapshot lhist_map = scalar("@l", AggKind::LHist, buckets(lhist_of({7, 12, 13}, 0, 10, 5)));
  lhist_map.hist = HistParams{.bits = 0, .min = 0, .max = 10, .step = 5};
  MapSnapshot lhist_div = lhist_map;

  const std::vector<MapCase> cases = {
      // Scalars.
      {"count", scalar("@c", AggKind::Count, val(U(2))), 0, 0, "@c: 2\n"},
      {"anonymous", scalar("@", AggKind::Count, val(U(5))), 0, 0, "@: 5\n"},
      {"plain string", scalar("@s", AggKind::Plain, val(S("abc"))), 0, 0, "@s: abc\n"},
      {"plain tuple", scalar("@t", AggKind::Plain, val(T({I(1), S("two"), T({I(2), I(3)})}))),
       0, 0, "@t: (1, two, (2, 3))\n"},
      {"plain bool", scalar("@b", AggKind::Plain, val(Value::of_bool(true))), 0, 0,
       "@b: true\n"},
      // Pointers print in hex and are not divided.
      {"plain pointer", scalar("@p", AggKind::Plain, val(Value::of_pointer(50))), 0, 2, "@p: 0x32\n"},
      {"stats", scalar("@st", AggKind::Stats, avg(3, 17)), 0, 0,
       "@st: { .count = 3, .average = 5, .total = 17 }\n"},
      // stats(-10), stats(-5), stats(5).
      {"stats negative", scalar("@st", AggKind::Stats, avg(3, -10)), 0, 0,
       "@st: { .count = 3, .average = -3, .total = -10 }\n"},
      {"stats empty", scalar("@st", AggKind::Stats, avg(0, 0)), 0, 0,
       "@st: { .count = 0, .average = 0, .total = 0 }\n"},
      // avg(-30), avg(-10).
      {"avg", scalar("@a", AggKind::Avg, avg(2, -40)), 0, 0, "@a: -20\n"},
      {"avg truncates", scalar("@a", AggKind::Avg, avg(3, -10)), 0, 0, "@a: -3\n"},
      {"avg unsigned", scalar("@a", AggKind::Avg, avg(2, -2), false), 0, 0,
       "@a: 9223372036854775807\n"},
      {"min", scalar("@m", AggKind::Min, val(I(-7))), 0, 0, "@m: -7\n"},
      {"max unsigned", scalar("@m", AggKind::Max, val(U(UINT64_MAX)), false), 0, 0,
       "@m: 18446744073709551615\n"},
      {"sum negative", scalar("@s", AggKind::Sum, val(I(-12))), 0, 0, "@s: -12\n"},

      // Keyed lines.
      {"keyed int", keyed("@k", AggKind::Count, {{I(-5), val(U(3))}}), 0, 0, "@k[-5]: 3\n"},
      {"tuple key", keyed("@t", AggKind::Count, {{T({S("a"), I(2)}), val(U(1))}}), 0, 0,
       "@t[a, 2]: 1\n"},
      {"nested tuple key",
       keyed("@a", AggKind::Count, {{T({I(1), T({I(123), I(1234)})}), val(U(1))}}), 0, 0,
       "@a[1, (123, 1234)]: 1\n"},
      {"string key", keyed("@str", AggKind::Count, {{S("hello"), val(U(1))}}), 0, 0,
       "@str[hello]: 1\n"},
      {"string value", keyed("@s", AggKind::Plain, {{I(1), val(S("abc"))}}), 0, 0,
       "@s[1]: abc\n"},
      {"keyed stats", keyed("@st", AggKind::Stats, {{S("x"), avg(3, 17)}}), 0, 0,
       "@st[x]: { .count = 3, .average = 5, .total = 17 }\n"},
      {"probe key", keyed("@", AggKind::Count, {{S("BEGIN"), val(U(1))}}), 0, 0,
       "@[BEGIN]: 1\n"},

      // Empty maps print nothing (0.24+).
      {"empty keyed", keyed("@k", AggKind::Count, {}), 0, 0, ""},
      {"empty hist", keyed("@h", AggKind::Hist, {}), 0, 0, ""},

      // Histograms.
      {"hist", scalar("@h", AggKind::Hist, buckets(hist_of({-1, 2, 3, 5}))), 0, 0,
       "@h:\n"
       "(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
       "[0]                    0 |                                                    |\n"
       "[1]                    0 |                                                    |\n"
       "[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
       "\n"},
      {"lhist", lhist_map, 0, 0,
       "@l:\n"
       "[5, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
       "[10, ...)              2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "\n"},
      {"zeroed hist", scalar("@h", AggKind::Hist, buckets(std::vector<uint64_t>(66))), 0, 0,
       "@h:\n\n"},
      {"keyed hist sorted by total",
       keyed("@h", AggKind::Hist,
             {{S("b"), buckets(hist_of({1, 1}))}, {S("a"), buckets(hist_of({0}))}}),
       0, 0,
       "@h[a]:\n"
       "[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "\n"
       "@h[b]:\n"
       "[1]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "\n"},
      {"hist div", scalar("@h", AggKind::Hist, buckets(hist_of({0, 0, 0, 0, 1, 1, 1, 2}))), 0,
       2,
       "@h:\n"
       "[0]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
       "[2, 4)                 0 |                                                    |\n"
       "\n"},
      {"lhist ignores div", lhist_div, 0, 2,
       "@l:\n"
       "[5, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
       "[10, ...)              2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
       "\n"},
  };
  for (const MapCase& c : cases) {
    EXPECT_EQ(map_text(c.map, c.top, c.div), c.text) << c.name;
  }
}

struct OrderCase {
  const char* name;
  MapSnapshot map;
  uint64_t top;
  uint64_t div;
  std::string text;
};

TEST(MapText, Order) {
  const std::vector<OrderCase> cases = {
      {"count by value",
       keyed("@c", AggKind::Count, {{S("a"), val(U(7))}, {S("b"), val(U(2))}, {S("c"), val(U(5))}},
             false),
       0, 0, "@c[b]: 2\n@c[c]: 5\n@c[a]: 7\n"},
      {"signed sum by value",
       keyed("@s", AggKind::Sum, {{I(1), val(I(3))}, {I(2), val(I(-4))}, {I(3), val(I(0))}}), 0,
       0, "@s[2]: -4\n@s[3]: 0\n@s[1]: 3\n"},
      {"unsigned plain by value",
       keyed("@u", AggKind::Plain, {{I(1), val(U(UINT64_MAX))}, {I(2), val(U(4))}}, false), 0,
       0, "@u[2]: 4\n@u[1]: 18446744073709551615\n"},
      {"signed plain by value",
       keyed("@p", AggKind::Plain, {{I(1), val(I(5))}, {I(2), val(I(-5))}}), 0, 0,
       "@p[2]: -5\n@p[1]: 5\n"},
      // 0.26 compares min/max as uint64: negatives sort last.
      {"min as uint64",
       keyed("@m", AggKind::Min, {{S("neg"), val(I(-1))}, {S("big"), val(I(100))},
                                  {S("small"), val(I(3))}}),
       0, 0, "@m[small]: 3\n@m[big]: 100\n@m[neg]: -1\n"},
      {"avg by average",
       keyed("@a", AggKind::Avg, {{S("x"), avg(2, 20)}, {S("y"), avg(1, -3)}, {S("z"), avg(4, 8)}}),
       0, 0, "@a[y]: -3\n@a[z]: 2\n@a[x]: 10\n"},
      {"stats by average",
       keyed("@st", AggKind::Stats, {{S("x"), avg(1, 9)}, {S("y"), avg(10, 20)}}), 0, 0,
       "@st[y]: { .count = 10, .average = 2, .total = 20 }\n"
       "@st[x]: { .count = 1, .average = 9, .total = 9 }\n"},
      // Anything else by key: integers signed (-2 before 3).
      {"int keys signed",
       keyed("@k", AggKind::Plain, {{I(3), val(S("c"))}, {I(-2), val(S("a"))}, {I(0), val(S("b"))}}),
       0, 0, "@k[-2]: a\n@k[0]: b\n@k[3]: c\n"},
      {"string keys bytewise",
       keyed("@k", AggKind::Plain,
             {{S("b"), val(S("1"))}, {S("\xff"), val(S("2"))}, {S("B"), val(S("3"))},
              {S("ab"), val(S("4"))}, {S("a"), val(S("5"))}}),
       0, 0, "@k[B]: 3\n@k[a]: 5\n@k[ab]: 4\n@k[b]: 1\n@k[\xff]: 2\n"},
      {"tuple keys field by field",
       keyed("@t", AggKind::Plain,
             {{T({S("b"), I(1)}), val(Value::of_bool(true))},
              {T({S("a"), I(10)}), val(Value::of_bool(false))},
              {T({S("a"), I(-1)}), val(Value::of_bool(true))}}),
       0, 0, "@t[a, -1]: true\n@t[a, 10]: false\n@t[b, 1]: true\n"},
      {"stable on ties",
       keyed("@c", AggKind::Count, {{S("z"), val(U(1))}, {S("a"), val(U(1))}}), 0, 0,
       "@c[z]: 1\n@c[a]: 1\n"},

      // top keeps the last entries, still ascending.
      {"top 2",
       keyed("@c", AggKind::Count,
             {{S("a"), val(U(7))}, {S("b"), val(U(2))}, {S("c"), val(U(5))}, {S("d"), val(U(1))}}),
       2, 0, "@c[c]: 5\n@c[a]: 7\n"},
      {"top larger than map", keyed("@c", AggKind::Count, {{S("a"), val(U(7))}}), 5, 0,
       "@c[a]: 7\n"},
      {"top hist",
       keyed("@h", AggKind::Hist,
             {{I(1), buckets(hist_of({1, 1}))}, {I(2), buckets(hist_of({1}))}}),
       1, 0,
       "@h[1]:\n"
       "[1]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"},

      // div.
      {"div count", keyed("@c", AggKind::Count, {{S("a"), val(U(7))}, {S("b"), val(U(20))}}), 0,
       3, "@c[a]: 2\n@c[b]: 6\n"},
      {"div signed sum", scalar("@s", AggKind::Sum, val(I(-7))), 0, 2, "@s: -3\n"},
      {"div min", scalar("@m", AggKind::Min, val(I(-9))), 0, 4, "@m: -2\n"},
      {"div max", scalar("@m", AggKind::Max, val(U(9)), false), 0, 4, "@m: 2\n"},
      {"div avg", scalar("@a", AggKind::Avg, avg(2, 40)), 0, 3, "@a: 6\n"},
      {"div stats average only", scalar("@st", AggKind::Stats, avg(3, 17)), 0, 2,
       "@st: { .count = 3, .average = 2, .total = 17 }\n"},
      {"div 1 is none", scalar("@c", AggKind::Count, val(U(7))), 0, 1, "@c: 7\n"},
      {"div plain string untouched", scalar("@s", AggKind::Plain, val(S("x"))), 0, 3,
       "@s: x\n"},
      {"div huge", scalar("@s", AggKind::Sum, val(I(INT64_MIN))), 0, uint64_t{1} << 63,
       "@s: -1\n"},
      {"top and div",
       keyed("@c", AggKind::Count, {{S("a"), val(U(70))}, {S("b"), val(U(20))}, {S("c"), val(U(50))}}),
       2, 10, "@c[c]: 5\n@c[a]: 7\n"},
  };
  for (const OrderCase& c : cases) {
    EXPECT_EQ(map_text(c.map, c.top, c.div), c.text) << c.name;
  }
}

}  // namespace
}  // namespace bpfscope::output
