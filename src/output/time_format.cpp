// time() and strftime(): strftime(3) on local time plus bpftrace's sub-second
// extensions (bpftrace 0.26 BPFtrace::format_timestamp).
#include <ctime>
#include <fmt/format.h>

#include "output/output.h"

namespace bpfscope::output {

namespace {

constexpr uint64_t kNsPerSec = 1'000'000'000;
// bpftrace formats into a buffer of max_strlen (1024 by default) bytes; longer
// results fail like any strftime failure.
constexpr size_t kTimeBufferSize = 1024;

// Replaces %f (microseconds, 6 digits), %k (nanoseconds, 9 digits) and %l
// (milliseconds, 3 digits) within the second. bpftrace does this with three
// regex replacements; we scan instead so that "%%f" stays a literal "%f"
// (bpftrace would turn it into "%" followed by the digits).
std::string expand_subsecond(std::string_view fmt, uint64_t ns_in_sec) {
  std::string out;
  for (size_t i = 0; i < fmt.size(); i++) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    const char c = fmt[i + 1];
    if (c == 'f') {
      out += fmt::format("{:06}", ns_in_sec / 1000);
    } else if (c == 'k') {
      out += fmt::format("{:09}", ns_in_sec);
    } else if (c == 'l') {
      out += fmt::format("{:03}", ns_in_sec / 1'000'000);
    } else {
      // Keep other conversions, "%%" included, for strftime.
      out += '%';
      out += c;
    }
    i++;
  }
  return out;
}

}  // namespace

std::string format_time(std::string_view fmt, uint64_t epoch_ns) {
  const auto seconds = static_cast<time_t>(epoch_ns / kNsPerSec);
  // bpftrace treats a zero time_t as unresolved.
  if (seconds == 0) return "(?)";
  struct tm tm {};
  if (localtime_r(&seconds, &tm) == nullptr) return "(?)";
  const std::string expanded = expand_subsecond(fmt, epoch_ns % kNsPerSec);
  std::string buf(kTimeBufferSize, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), expanded.c_str(), &tm);
  // 0 is failure (or an empty result, which bpftrace also reports as "(?)").
  if (n == 0) return "(?)";
  buf.resize(n);
  return buf;
}

}  // namespace bpfscope::output
