// hist/lhist bucketing and lines (REFERENCE 4.1, 6.3).
#include <gtest/gtest.h>

#include <algorithm>

#include "output/output.h"

namespace bpfscope::output {
namespace {

std::vector<uint64_t> hist_of(const std::vector<int64_t>& values, int bits) {
  std::vector<uint64_t> buckets(hist_bucket_count(bits));
  for (const int64_t v : values) buckets.at(hist_index(v, bits))++;
  return buckets;
}

std::vector<uint64_t> lhist_of(const std::vector<int64_t>& values, int64_t min, int64_t max,
                               int64_t step) {
  std::vector<uint64_t> buckets(lhist_bucket_count(min, max, step));
  for (const int64_t v : values) buckets.at(lhist_index(v, min, max, step))++;
  return buckets;
}

// The line for a single-bucket histogram (bar of 52).
std::string full(const std::string& label, int count) {
  std::string line = label;
  line.resize(std::max<size_t>(16, label.size()), ' ');
  std::string c = std::to_string(count);
  line += std::string(c.size() < 8 ? 8 - c.size() : 0, ' ') + c;
  return line + " |" + std::string(52, '@') + "|\n";
}

TEST(Histogram, ReferenceHistBlock) {
  // REFERENCE 6.3: hist(-1), hist(2), hist(3), hist(5).
  EXPECT_EQ(hist_text(hist_of({-1, 2, 3, 5}, 0), 0),
            "(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
            "[0]                    0 |                                                    |\n"
            "[1]                    0 |                                                    |\n"
            "[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n");
}

TEST(Histogram, ReferenceLhistBlock) {
  // REFERENCE 6.3: lhist(7|12|13, 0, 10, 5).
  EXPECT_EQ(lhist_text(lhist_of({7, 12, 13}, 0, 10, 5), 0, 10, 5),
            "[5, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
            "[10, ...)              2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n");
}

TEST(Histogram, HistIndexK0) {
  struct Case {
    int64_t value;
    uint32_t index;
  };
  const std::vector<Case> cases = {
      {INT64_MIN, 0}, {-1, 0}, {0, 1}, {1, 2}, {2, 3}, {3, 3}, {4, 4}, {7, 4}, {8, 5},
      {1023, 11}, {1024, 12}, {(int64_t{1} << 62) - 1, 63}, {int64_t{1} << 62, 64},
      {INT64_MAX, 64},
  };
  for (const Case& c : cases) EXPECT_EQ(hist_index(c.value, 0), c.index) << c.value;
  EXPECT_EQ(hist_bucket_count(0), 66u);
}

TEST(Histogram, HistIndexIsContiguousForEveryK) {
  // Every value lands in the same bucket as value-1 or the next one, and every
  // index stays below hist_bucket_count.
  for (int k = 0; k <= 5; k++) {
    uint32_t prev = hist_index(0, k);
    EXPECT_EQ(prev, 1u);
    for (int64_t v = 1; v < 200000; v++) {
      const uint32_t idx = hist_index(v, k);
      ASSERT_TRUE(idx == prev || idx == prev + 1) << "k=" << k << " v=" << v;
      prev = idx;
    }
    // Across powers of two near the top.
    for (int p = 17; p <= 62; p++) {
      const int64_t base = int64_t{1} << p;
      EXPECT_EQ(hist_index(base, k), hist_index(base - 1, k) + 1) << "k=" << k << " p=" << p;
    }
    EXPECT_LT(hist_index(INT64_MAX, k), hist_bucket_count(k));
    // Indexes 1..2^(k+1) are single values.
    for (int64_t v = 0; v < (int64_t{2} << k); v++) EXPECT_EQ(hist_index(v, k), v + 1);
  }
  EXPECT_EQ(hist_bucket_count(2), (63u << 2) + 1);
}

TEST(Histogram, HistLabels) {
  struct Case {
    int64_t value;
    int bits;
    std::string label;
  };
  const std::vector<Case> cases = {
      {-5, 0, "(..., 0)"},
      {0, 0, "[0]"},
      {1, 0, "[1]"},
      {2, 0, "[2, 4)"},
      {600, 0, "[512, 1K)"},
      {1024, 0, "[1K, 2K)"},
      {2047, 0, "[1K, 2K)"},
      {int64_t{1} << 20, 0, "[1M, 2M)"},
      {(int64_t{1} << 30) - 1, 0, "[512M, 1G)"},
      {int64_t{1} << 31, 0, "[2G, 4G)"},
      {int64_t{1} << 40, 0, "[1T, 2T)"},
      {int64_t{1} << 50, 0, "[1P, 2P)"},
      {int64_t{1} << 60, 0, "[1E, 2E)"},
      {INT64_MAX, 0, "[4E, 8E)"},
      // k = 1: single values 0..3, then two buckets per power of two.
      {3, 1, "[3]"},
      {4, 1, "[4, 6)"},
      {7, 1, "[6, 8)"},
      {8, 1, "[8, 12)"},
      {12, 1, "[12, 16)"},
      // k = 2: single values 0..7, then four buckets per power of two.
      {7, 2, "[7]"},
      {8, 2, "[8, 10)"},
      {15, 2, "[14, 16)"},
      {225, 2, "[224, 256)"},
      {4096, 2, "[4K, 5K)"},
      {5000, 2, "[4K, 5K)"},
      {5120, 2, "[5K, 6K)"},
      {7168, 2, "[7K, 8K)"},
      // k = 3: 8 is still a single value.
      {8, 3, "[8]"},
      {15, 3, "[15]"},
      {16, 3, "[16, 18)"},
      // The suffix follows 2^power alone, so this is not "[1M, ...)".
      {1 << 20, 5, "[1024K, 1056K)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(hist_text(hist_of({c.value}, c.bits), c.bits), full(c.label, 1))
        << c.value << " k=" << c.bits;
  }
}

TEST(Histogram, LhistIndex) {
  struct Case {
    int64_t value, min, max, step;
    uint32_t index;
  };
  const std::vector<Case> cases = {
      {-1, 0, 10, 5, 0}, {0, 0, 10, 5, 1},  {4, 0, 10, 5, 1},  {5, 0, 10, 5, 2},
      {9, 0, 10, 5, 2},  {10, 0, 10, 5, 3}, {1000, 0, 10, 5, 3}, {99, 100, 200, 10, 0},
      {100, 100, 200, 10, 1}, {199, 100, 200, 10, 10}, {200, 100, 200, 10, 11},
      // (max - min) not a multiple of step: the division rounds down and the
      // last bucket starts at 9 (bpftrace's linear helper).
      {8, 0, 10, 3, 3}, {9, 0, 10, 3, 4}, {10, 0, 10, 3, 4}, {11, 0, 10, 3, 4},
      {INT64_MAX, 0, 10, 3, 4},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(lhist_index(c.value, c.min, c.max, c.step), c.index)
        << c.value << " in " << c.min << "," << c.max << "," << c.step;
  }
  EXPECT_EQ(lhist_bucket_count(0, 10, 5), 4u);
  EXPECT_EQ(lhist_bucket_count(100, 200, 10), 12u);
  EXPECT_EQ(lhist_bucket_count(0, 10, 3), 5u);
  EXPECT_EQ(lhist_bucket_count(0, 4096, 512), 10u);
}

TEST(Histogram, LhistLabels) {
  struct Case {
    int64_t value, min, max, step;
    std::string label;
  };
  const std::vector<Case> cases = {
      // 0.24+: K/M only when step is a multiple of 1024.
      {2048, 0, 4096, 512, "[2048, 2560)"},
      {2048, 0, 4096, 1024, "[2K, 3K)"},
      {-1, 0, 4096, 1024, "(..., 0)"},
      {5000, 0, 4096, 1024, "[4K, ...)"},
      {1 << 20, 0, 4 << 20, 1 << 20, "[1M, 2M)"},
      {1536, 0, 4096, 1536, "[1536, 3072)"},
      {3, 0, 5, 1, "[3]"},
      {5, 0, 5, 1, "[5, ...)"},
      {-3, 0, 5, 1, "(..., 0)"},
      {12, 10, 20, 2, "[12, 14)"},
      {9, 10, 20, 2, "(..., 10)"},
      {20, 10, 20, 2, "[20, ...)"},
      {10, 0, 10, 3, "[9, ...)"},
      {7, 0, 10, 3, "[6, 9)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(lhist_text(lhist_of({c.value}, c.min, c.max, c.step), c.min, c.max, c.step),
              full(c.label, 1))
        << c.value << " in " << c.min << "," << c.max << "," << c.step;
  }
}

TEST(Histogram, LinesLayout) {
  // A label longer than 16 columns is never cut; counts wider than 8 push
  // the bar right. Bars are floor(count / max * 52) in float.
  const auto line = [](const std::string& label, const std::string& count, size_t bar) {
    std::string l = label;
    l.resize(std::max<size_t>(16, label.size()), ' ');
    l += std::string(count.size() < 8 ? 8 - count.size() : 0, ' ') + count + " |";
    return l + std::string(bar, '@') + std::string(52 - bar, ' ') + "|\n";
  };
  std::vector<uint64_t> b(hist_bucket_count(0));
  b[hist_index(int64_t{1} << 62, 0)] = 3;
  b[hist_index(1, 0)] = 1;
  b[hist_index(2, 0)] = 2;
  const std::string text = hist_text(b, 0);
  // Indexes 2..64 print: the zero buckets between get blank bars.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 63);
  EXPECT_EQ(text.substr(0, 2 * line("", "", 0).size()),
            line("[1]", "1", 17) + line("[2, 4)", "2", 34));
  EXPECT_NE(text.find(line("[4, 8)", "0", 0)), std::string::npos);
  EXPECT_NE(text.find(line("[1K, 2K)", "0", 0)), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - line("", "", 0).size()), line("[4E, 8E)", "3", 52));

  std::vector<uint64_t> big(hist_bucket_count(0));
  big[hist_index(3, 0)] = 123456789012ull;
  EXPECT_EQ(hist_text(big, 0), line("[2, 4)", "123456789012", 52));

  std::vector<uint64_t> lbl(lhist_bucket_count(1000000000, 3000000000, 1000000000));
  lbl[lhist_index(2500000000, 1000000000, 3000000000, 1000000000)] = 1;
  EXPECT_EQ(lhist_text(lbl, 1000000000, 3000000000, 1000000000),
            line("[2000000000, 3000000000)", "1", 52));
}

TEST(Histogram, EmptyAndShortBuckets) {
  EXPECT_EQ(hist_text({}, 0), "");
  EXPECT_EQ(hist_text(std::vector<uint64_t>(66, 0), 0), "");
  EXPECT_EQ(lhist_text(std::vector<uint64_t>(4, 0), 0, 10, 5), "");
  // Fewer buckets than the map has: print what is there.
  EXPECT_EQ(hist_text({0, 0, 4}, 0), full("[1]", 4));
  // Extra buckets past the last index are ignored.
  std::vector<uint64_t> extra(70, 0);
  extra[2] = 1;
  extra[69] = 5;
  EXPECT_EQ(hist_text(extra, 0), full("[1]", 1));
  // Bad lhist parameters do not crash.
  EXPECT_EQ(lhist_text({1, 1, 1}, 10, 0, 0), full("(..., 10)", 1) + full("[10, ...)", 1));
}

}  // namespace
}  // namespace bpfscope::output
