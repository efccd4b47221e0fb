// Reading a clock as nanoseconds.
#pragma once

#include <time.h>

#include <cstdint>

namespace bpfscope::runtime {

inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace bpfscope::runtime
