// Tables of joined maps (print((@a, @b), rows, fmt, names)).
#include <gtest/gtest.h>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;

PrintfFormat parse(std::string_view f) { return std::get<PrintfFormat>(parse_printf(f)); }

TEST(Table, JoinsByKeyOrdersByTotalAndDivides) {
  auto rx = keyed("@rx", AggKind::Sum, {{T({I(10), S("curl")}), val(I(4096))}, {T({I(20), S("nc")}), val(I(1024))}});
  auto tx = keyed("@tx", AggKind::Sum, {{T({I(20), S("nc")}), val(I(8192))}, {T({I(30), S("ssh")}), val(I(512))}});
  Table t = join_maps({&rx, &tx}, {{1024, false}, {1024, false}}, 0);
  ASSERT_EQ(t.rows.size(), 3u);
  // nc: 9216 in total, curl 4096, ssh 512 (which shows 0 KB).
  EXPECT_EQ(to_text(Value::of_tuple(t.rows[0])), "(20, nc, 1, 8)");
  EXPECT_EQ(to_text(Value::of_tuple(t.rows[1])), "(10, curl, 4, 0)");
  EXPECT_EQ(to_text(Value::of_tuple(t.rows[2])), "(30, ssh, 0, 0)");
  EXPECT_EQ(join_maps({&rx, &tx}, {}, 2).rows.size(), 2u);
}

TEST(Table, AverageAndFloatDivisor) {
  auto io = keyed("@io", AggKind::Count, {{S("sda"), val(I(3))}});
  auto lat = keyed("@lat", AggKind::Avg, {{S("sda"), avg(3, 4500)}});
  Table t = join_maps({&io, &lat}, {{}, {1000, true}}, 0);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][1].i, 3);
  EXPECT_EQ(t.rows[0][2].kind, Value::Kind::Float);
  EXPECT_DOUBLE_EQ(t.rows[0][2].f, 1.5);
  EXPECT_EQ(table_text(t, {"DISK", "I/O", "AVGms"}, parse("%-6s %5d %6.2f")),
            "DISK     I/O  AVGms\n"
            "sda        3   1.50\n");
}

TEST(Table, ColumnsWidenToTheirWidestCell) {
  auto rx = keyed("@rx", AggKind::Sum,
                  {{T({I(1), S("1.2.3.4:80")}), val(I(1))}, {T({I(1234567), S("[fe80::1]:5201")}), val(I(2))}});
  Table t = join_maps({&rx}, {}, 0);
  EXPECT_EQ(table_text(t, {"PID", "LADDR", "RX"}, parse("%-6d %-12s %3d")),
            "PID     LADDR           RX\n"
            "1234567 [fe80::1]:5201   2\n"
            "1       1.2.3.4:80       1\n");
  // The header prints even with no rows.
  EXPECT_EQ(table_text(Table{}, {"PID", "RX"}, parse("%-6d %3d")), "PID     RX\n");
}

TEST(Table, Json) {
  auto rx = keyed("@rx", AggKind::Sum, {{T({I(7), S("nc")}), val(I(5))}});
  Table t = join_maps({&rx}, {}, 0);
  EXPECT_EQ(json_table(t, {"PID", "COMM", "RX_KB"}),
            "{\"type\": \"table\", \"data\": [{\"pid\": 7, \"comm\": \"nc\", \"rx_kb\": 5}]}\n");
  EXPECT_EQ(json_table(Table{}, {"PID"}), "{\"type\": \"table\", \"data\": []}\n");
}

}  // namespace
}  // namespace bpfscope::output
