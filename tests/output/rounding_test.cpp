// The rounding helpers that replace libm's round, ceil, floor and llround in
// the output: their values at halves, negatives, zeros' signs, the 2^52 edge
// and beyond, worked out by hand; then, since this test binary may link
// libm, the same functions compared with libm's bit for bit over many doubles.
#include "output/rounding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace bpfscope::output {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTwo52 = 4503599627370496.0;
constexpr double kBelowHalf = 0.49999999999999994;  // the double just under 0.5
constexpr double kMinSubnormal = 4.9406564584124654e-324;

// Equal as bits: tells -0.0 from 0.0.
bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

#define EXPECT_SAME(got, want) EXPECT_PRED2(same, got, want)

TEST(Rounding, RoundHalvesGoAwayFromZero) {
  EXPECT_SAME(round_half_away(0.5), 1.0);
  EXPECT_SAME(round_half_away(1.5), 2.0);
  EXPECT_SAME(round_half_away(2.5), 3.0);
  EXPECT_SAME(round_half_away(-0.5), -1.0);
  EXPECT_SAME(round_half_away(-1.5), -2.0);
  EXPECT_SAME(round_half_away(-2.5), -3.0);
  EXPECT_SAME(round_half_away(1234.5), 1235.0);
}

TEST(Rounding, RoundNotHalves) {
  EXPECT_SAME(round_half_away(kBelowHalf), 0.0);  // floor(x + 0.5) gives 1 here
  EXPECT_SAME(round_half_away(-kBelowHalf), -0.0);
  EXPECT_SAME(round_half_away(0.3), 0.0);
  EXPECT_SAME(round_half_away(-0.3), -0.0);
  EXPECT_SAME(round_half_away(2.4999999999999996), 2.0);
  EXPECT_SAME(round_half_away(2.5000000000000004), 3.0);
  EXPECT_SAME(round_half_away(-2.7), -3.0);
  EXPECT_SAME(round_half_away(7.0), 7.0);
  EXPECT_SAME(round_half_away(-7.0), -7.0);
  EXPECT_SAME(round_half_away(kMinSubnormal), 0.0);
  EXPECT_SAME(round_half_away(-kMinSubnormal), -0.0);
}

TEST(Rounding, RoundZerosKeepTheirSign) {
  EXPECT_SAME(round_half_away(0.0), 0.0);
  EXPECT_SAME(round_half_away(-0.0), -0.0);
}

TEST(Rounding, RoundLargeValuesAreTheirOwn) {
  // 2^52 - 0.5 is the largest double with a half: it goes up to 2^52.
  EXPECT_SAME(round_half_away(kTwo52 - 0.5), kTwo52);
  EXPECT_SAME(round_half_away(-(kTwo52 - 0.5)), -kTwo52);
  EXPECT_SAME(round_half_away(kTwo52 - 1.5), kTwo52 - 1);
  EXPECT_SAME(round_half_away(kTwo52), kTwo52);
  EXPECT_SAME(round_half_away(kTwo52 + 1), kTwo52 + 1);
  EXPECT_SAME(round_half_away(9007199254740994.0), 9007199254740994.0);  // 2^53 + 2
  EXPECT_SAME(round_half_away(1e19), 1e19);  // beyond int64_t
  EXPECT_SAME(round_half_away(-1e300), -1e300);
  EXPECT_SAME(round_half_away(kInf), kInf);
  EXPECT_SAME(round_half_away(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(round_half_away(std::numeric_limits<double>::quiet_NaN())));
}

TEST(Rounding, Ceil) {
  EXPECT_SAME(ceil_up(0.5), 1.0);
  EXPECT_SAME(ceil_up(1.0000000000000002), 2.0);
  EXPECT_SAME(ceil_up(3.0), 3.0);
  EXPECT_SAME(ceil_up(kMinSubnormal), 1.0);
  EXPECT_SAME(ceil_up(-0.5), -0.0);
  EXPECT_SAME(ceil_up(-kMinSubnormal), -0.0);
  EXPECT_SAME(ceil_up(-1.5), -1.0);
  EXPECT_SAME(ceil_up(-3.0), -3.0);
  EXPECT_SAME(ceil_up(0.0), 0.0);
  EXPECT_SAME(ceil_up(-0.0), -0.0);
  EXPECT_SAME(ceil_up(kTwo52 - 0.5), kTwo52);
  EXPECT_SAME(ceil_up(-(kTwo52 - 0.5)), -(kTwo52 - 1));
  EXPECT_SAME(ceil_up(1e19), 1e19);
  EXPECT_SAME(ceil_up(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(ceil_up(std::numeric_limits<double>::quiet_NaN())));
  // The flame graph's minimum width in hundredths of a pixel: 0.07 * 100 is
  // 7.000000000000001 and 0.29 * 100 is 28.999999999999996 in doubles.
  EXPECT_SAME(ceil_up(0.07 * 100), 8.0);
  EXPECT_SAME(ceil_up(0.29 * 100), 29.0);
  EXPECT_SAME(ceil_up(0.5 * 100), 50.0);
}

TEST(Rounding, Floor) {
  EXPECT_SAME(floor_down(0.5), 0.0);
  EXPECT_SAME(floor_down(1.9999999999999998), 1.0);
  EXPECT_SAME(floor_down(3.0), 3.0);
  EXPECT_SAME(floor_down(kMinSubnormal), 0.0);
  EXPECT_SAME(floor_down(-0.5), -1.0);
  EXPECT_SAME(floor_down(-kMinSubnormal), -1.0);
  EXPECT_SAME(floor_down(-1.5), -2.0);
  EXPECT_SAME(floor_down(-3.0), -3.0);
  EXPECT_SAME(floor_down(0.0), 0.0);
  EXPECT_SAME(floor_down(-0.0), -0.0);
  EXPECT_SAME(floor_down(kTwo52 - 0.5), kTwo52 - 1);
  EXPECT_SAME(floor_down(-(kTwo52 - 0.5)), -kTwo52);
  EXPECT_SAME(floor_down(-1e19), -1e19);
  EXPECT_SAME(floor_down(kInf), kInf);
  EXPECT_TRUE(std::isnan(floor_down(std::numeric_limits<double>::quiet_NaN())));
}

TEST(Rounding, ToInt64) {
  EXPECT_EQ(round_to_int64(0.5), 1);
  EXPECT_EQ(round_to_int64(2.5), 3);
  EXPECT_EQ(round_to_int64(-2.5), -3);
  EXPECT_EQ(round_to_int64(kBelowHalf), 0);
  EXPECT_EQ(round_to_int64(-0.3), 0);
  EXPECT_EQ(round_to_int64(kTwo52 - 0.5), 4503599627370496);
  // The largest double below 2^63, and -2^63: both fit.
  EXPECT_EQ(round_to_int64(9223372036854774784.0), 9223372036854774784);
  EXPECT_EQ(round_to_int64(-9223372036854775808.0), INT64_MIN);
  // Outside int64_t, as glibc on x86-64: INT64_MIN.
  EXPECT_EQ(round_to_int64(9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(round_to_int64(-1e19), INT64_MIN);
  EXPECT_EQ(round_to_int64(kInf), INT64_MIN);
  EXPECT_EQ(round_to_int64(-kInf), INT64_MIN);
  EXPECT_EQ(round_to_int64(std::numeric_limits<double>::quiet_NaN()), INT64_MIN);
}

TEST(Rounding, Constexpr) {
  static_assert(round_half_away(-2.5) == -3.0);
  static_assert(ceil_up(-0.5) == 0.0);
  static_assert(floor_down(-0.5) == -1.0);
  static_assert(round_to_int64(1e3 + 0.5) == 1001);
}

// libm, bit for bit, over doubles near halves and integers at every scale,
// and over random bit patterns (NaNs left out: their payloads may differ).
TEST(Rounding, AgreesWithLibm) {
  uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  };
  auto check = [](double x) {
    EXPECT_SAME(round_half_away(x), std::round(x)) << x;
    EXPECT_SAME(ceil_up(x), std::ceil(x)) << x;
    EXPECT_SAME(floor_down(x), std::floor(x)) << x;
    if (std::fabs(x) < 9e18) {
      EXPECT_EQ(round_to_int64(x), std::llround(x)) << x;
    }
  };
  size_t checked = 0;
  for (double scale = 1; scale < 1e19; scale *= 1.37)
    for (double base : {0.0, 0.5, 1.0})
      for (double x : {scale + base, std::floor(scale) + base}) {
        for (double y : {x, std::nextafter(x, 0.0), std::nextafter(x, kInf)}) {
          check(y);
          check(-y);
          checked += 2;
        }
      }
  for (int i = 0; i < 200000; ++i) {
    const uint64_t bits = next();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isnan(x)) continue;
    check(x);
    // And a value of ordinary size: the bits' fraction scaled to +-2^20.
    check(static_cast<double>(static_cast<int64_t>(bits)) / 0x1p43);
    checked += 2;
  }
  EXPECT_GT(checked, 300000u);
}

}  // namespace
}  // namespace bpfscope::output
