// The metrics endpoint (--prometheus, issue 19, docs/metrics.md): serves a
// session's maps, read from the kernel at scrape time, and the run's own
// counters on /metrics, beside the session's printing. The HTTP server runs
// in threads of its own (src/http/, loaded when needed); the event loop
// never waits for a scrape, except for a take (below) that meets one.
// Internal to the runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "output/output.h"
#include "runtime/maps.h"
#include "runtime/runtime.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

// What a page serves: the script's maps and the run's own counters.
struct MetricsSources {
  const std::vector<sema::MapInfo>* maps = nullptr;
  std::vector<int> fds;  // per map
  int ncpus = 1;
  const Resolver* resolver = nullptr;  // must be safe to call from any thread
  std::function<output::RunMetrics()> run;  // called under the page lock, from a server thread
};

class MetricsServer {
 public:
  // Loads the HTTP module and listens; null and `error` when it cannot.
  static std::unique_ptr<MetricsServer> start(const MetricsOptions& options, MetricsSources sources,
                                              std::string& error);
  ~MetricsServer();  // stops serving (a scrape under way finishes first)

  uint16_t port() const;

  // Counters stay monotonic across clear(), zero() and print-then-clear:
  // the session takes a map's entries (Read::Take, or a read before it
  // zeroes them) while it holds begin_take()'s lock, and hands them to
  // taken(), which adds them to the map's served base. A page read while a
  // take is under way is read again, so it never sees the entries both gone
  // from the map and not yet in the base.
  [[nodiscard]] std::unique_lock<std::mutex> begin_take();
  void taken(std::unique_lock<std::mutex>& take, int32_t map, const output::MapSnapshot& snap);
  // Whether a take of map `map` must keep what it takes (its kind is served
  // as counters), rather than just clear it.
  bool keeps(int32_t map) const;

  // The page for an Accept header, and its content type.
  std::string page(const std::string& accept, std::string_view& content_type);

 private:
  MetricsServer() = default;
  output::MapSnapshot read(size_t i) const;

  MetricsSources sources_;
  uint64_t max_series_ = output::kMetricsMaxSeries;
  std::mutex render_;  // one page at a time; guards folded_
  std::mutex take_;    // held by a take; guards base_
  std::atomic<uint64_t> takes_{0};  // odd while a take is under way
  std::vector<std::vector<std::pair<output::Value, output::Aggregate>>> base_;  // per map: what takes took
  std::vector<std::pair<std::string, uint64_t>> folded_;  // keys folded into other="true" so far
  struct Module;
  std::unique_ptr<Module> module_;
};

}  // namespace bpfscope::runtime
