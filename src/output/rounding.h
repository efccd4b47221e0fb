// Rounding of doubles for the drawings (pixel coordinates, colour levels,
// elapsed seconds) and the percentiles' JSON, written here so that the
// binary does not need libm.so: loading it runs its ifunc resolvers, which
// make 344 kB of it resident at every start (BENCHMARKS.md, "Start and
// memory against ply"). Each function gives C's result for every double,
// the sign of a zero result included.
//
// The method: a double of magnitude 2^52 or more has no fraction bits, so it
// is its own round, ceil and floor (NaN and the infinities too, since the
// comparison fails for NaN). Below 2^52, the conversion to int64_t drops the
// fraction exactly (it truncates toward zero), and x - trunc(x) is exact as
// well: both are multiples of x's last bit, and their difference is less
// than 1. So no step rounds, and halves are seen as halves (unlike
// floor(x + 0.5), which rounds 0.49999999999999994 up).
#pragma once

#include <cstdint>

namespace bpfscope::output {

namespace rounding_detail {

constexpr double kNoFraction = 4503599627370496.0;  // 2^52

constexpr bool negative(double x) { return __builtin_signbit(x) != 0; }

// The integer part, toward zero; for |x| < 2^52. -0.5 gives -0.0, as trunc.
constexpr double trunc_small(double x) {
  const double t = static_cast<double>(static_cast<int64_t>(x));
  return t == 0 && negative(x) ? -0.0 : t;
}

constexpr bool small(double x) { return x < kNoFraction && x > -kNoFraction; }

}  // namespace rounding_detail

// round(): to the nearest integer, halves away from zero.
constexpr double round_half_away(double x) {
  using namespace rounding_detail;
  if (!small(x)) return x;
  const double a = negative(x) ? -x : x;
  double t = trunc_small(a);
  if (a - t >= 0.5) t += 1;
  return negative(x) ? -t : t;
}

// ceil(): the least integer not below x.
constexpr double ceil_up(double x) {
  using namespace rounding_detail;
  if (!small(x)) return x;
  const double t = trunc_small(x);
  return t < x ? t + 1 : t;  // x > 0 with a fraction: one up (never -0.0)
}

// floor(): the greatest integer not above x.
constexpr double floor_down(double x) {
  using namespace rounding_detail;
  if (!small(x)) return x;
  const double t = trunc_small(x);
  return t > x ? t - 1 : t;  // x < 0 with a fraction: one down (never -0.0)
}

// llround() and lround() (long is 64 bits here): round_half_away as an
// integer. C leaves a result outside int64_t unspecified (and converting one
// is undefined in C++); glibc on x86-64 returns INT64_MIN, and so does this,
// for NaN too.
constexpr int64_t round_to_int64(double x) {
  const double r = round_half_away(x);
  if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(r);
}

}  // namespace bpfscope::output
