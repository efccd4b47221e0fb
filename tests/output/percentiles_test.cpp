// Percentiles estimated from histogram buckets, against the exact percentiles
// of known data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "output/output.h"

namespace bpfscope::output {
namespace {

MapSnapshot hist_map(int bits) {
  MapSnapshot m;
  m.name = "@h";
  m.kind = AggKind::Hist;
  m.hist.bits = bits;
  return m;
}

double exact(std::vector<int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size()))) - 1;
  return static_cast<double>(v[std::min(i, v.size() - 1)]);
}

// Each estimate lies in the bucket of the exact percentile: within its
// width (a power of two, or finer with hist(n, k)).
void check(const std::vector<int64_t>& data, int bits) {
  MapSnapshot m = hist_map(bits);
  std::vector<uint64_t> buckets(hist_bucket_count(bits));
  for (int64_t v : data) buckets[hist_index(v, bits)]++;
  auto est = estimate_percentiles(m, buckets);
  ASSERT_EQ(est.size(), 4u);
  for (size_t i = 0; i < est.size(); ++i) {
    const double want = exact(data, percentile_levels()[i]);
    const double width = std::max(1.0, want / (1 << bits));
    EXPECT_NEAR(est[i], want, width) << "p" << percentile_levels()[i] << " bits " << bits;
  }
  for (size_t i = 1; i < est.size(); ++i) EXPECT_LE(est[i - 1], est[i]);
}

TEST(Percentiles, UniformAndSkewedData) {
  std::vector<int64_t> uniform;
  for (int64_t v = 1; v <= 10000; ++v) uniform.push_back(v);
  check(uniform, 0);
  check(uniform, 3);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lognormal(6, 1.5);
  std::vector<int64_t> latencies;
  for (int i = 0; i < 20000; ++i) latencies.push_back(static_cast<int64_t>(lognormal(rng)));
  check(latencies, 0);
  check(latencies, 2);
}

TEST(Percentiles, InterpolatesInsideTheBucket) {
  MapSnapshot m = hist_map(0);
  std::vector<uint64_t> b(hist_bucket_count(0));
  b[hist_index(100, 0)] = 1;   // [64, 128)
  b[hist_index(200, 0)] = 1;   // [128, 256)
  b[hist_index(1000, 0)] = 1;  // [512, 1024)
  auto est = estimate_percentiles(m, b);
  EXPECT_DOUBLE_EQ(est[0], 128 + 128 * 0.5);  // rank 1.5: halfway through the second bucket
  EXPECT_EQ(percentiles_text(est), "p50 = 192, p90 = 870, p99 = 1009, p99.9 = 1022 (estimated within buckets)\n");
  EXPECT_EQ(percentiles_json({1.5, 2}), "{\"p50\": 1.5, \"p90\": 2.0}");
  EXPECT_TRUE(estimate_percentiles(m, std::vector<uint64_t>(b.size())).empty());
}

TEST(Percentiles, Lhist) {
  MapSnapshot m;
  m.kind = AggKind::LHist;
  m.hist = {.bits = 0, .min = 0, .max = 100, .step = 10};
  std::vector<uint64_t> b(lhist_bucket_count(0, 100, 10));
  b[lhist_index(15, 0, 100, 10)] = 10;  // [10, 20)
  auto est = estimate_percentiles(m, b);
  EXPECT_DOUBLE_EQ(est[0], 15);
  EXPECT_DOUBLE_EQ(est[1], 19);
}

}  // namespace
}  // namespace bpfscope::output
