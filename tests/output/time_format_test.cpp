// format_time: strftime on local time plus %f %k %l (REFERENCE 6.6).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "output/output.h"

namespace bpfscope::output {
namespace {

// 2023-11-14 22:13:20.123456789 UTC.
constexpr uint64_t kNs = 1'700'000'000'123'456'789ULL;

class TimeFormat : public ::testing::Test {
 protected:
  // Local time is the process's TZ; pin it so the expectations hold anywhere.
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    if (tz != nullptr) saved_ = tz;
    had_tz_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  std::string saved_;
  bool had_tz_ = false;
};

TEST_F(TimeFormat, Table) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"%H:%M:%S\n", "22:13:20\n"},
      {"%Y-%m-%d", "2023-11-14"},
      {"%H:%M:%S.%f", "22:13:20.123456"},
      {"%S.%k", "20.123456789"},
      {"%S.%l", "20.123"},
      {"%f %k %l %f", "123456 123456789 123 123456"},
      {"%%f %%", "%f %"},
      {"%a %j", "Tue 318"},
      {"plain", "plain"},
      {"", "(?)"},
  };
  for (const auto& [format, out] : cases) {
    EXPECT_EQ(format_time(format, kNs), out) << format;
  }
}

TEST_F(TimeFormat, SubsecondPadding) {
  EXPECT_EQ(format_time("%f|%k|%l", 1'700'000'000'000'001'000ULL), "000001|000001000|000");
  EXPECT_EQ(format_time("%S.%k", 1'700'000'005'000'000'007ULL), "25.000000007");
}

TEST_F(TimeFormat, Failures) {
  // bpftrace treats a zero time as unresolved.
  EXPECT_EQ(format_time("%H", 999'999'999), "(?)");
  // Longer than bpftrace's 1024-byte buffer.
  EXPECT_EQ(format_time(std::string(2000, 'x'), kNs), "(?)");
}

}  // namespace
}  // namespace bpfscope::output
