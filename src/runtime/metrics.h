// The metrics endpoint (--prometheus, `bpfscope serve`; issue 19,
// docs/metrics.md): serves the maps of one or more sessions, read from the
// kernel at scrape time, and their runs' own counters on /metrics, beside
// the sessions' printing. The HTTP server runs in threads of its own
// (src/http/, loaded when needed); an event loop never waits for a scrape,
// except for a take (below) that meets one. Internal to the runtime.
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

// One session's part of a page: its maps and its run's own counters.
class MetricsSource {
 public:
  // `names`: a tool's name for each map, or null; when a tool names any, only
  // the maps it names are served (the others are its working state).
  // `fd_of`: the kernel map each script map is read from now (safe to call
  // from any thread).
  MetricsSource(const std::vector<sema::MapInfo>& maps, std::function<int(size_t)> fd_of,
                std::vector<const output::MetricNaming*> names, int ncpus, const Resolver* resolver,
                std::function<output::RunMetrics()> run);

  // Counters stay monotonic across clear(), zero() and print-then-clear:
  // `take` empties map `map` and returns what it held (Session::empty_map);
  // that is added to the map's served base, and returned. A page read while a take is under way is read
  // again, so it never sees the entries both gone from the map and not yet
  // in the base.
  template <typename F>
  output::MapSnapshot take(int32_t map, F&& take) {
    std::lock_guard lock(take_);
    takes_.fetch_add(1);
    output::MapSnapshot snap = take();
    keep(map, snap);
    return snap;
  }
  // Whether a take of map `map` must keep what it takes (its kind is served
  // as counters), rather than just clear it.
  bool keeps(int32_t map) const;

  // Appends the maps as served now (with what takes took) and the run's
  // counters. Called from the endpoint's threads, one page at a time.
  void collect(std::vector<output::MapSnapshot>& maps, output::RunMetrics& run);

 private:
  output::MapSnapshot read(size_t i) const;
  bool served(size_t i) const;
  void keep(int32_t map, const output::MapSnapshot& snap);  // take()'s end: under take_

  const std::vector<sema::MapInfo>& maps_;
  std::function<int(size_t)> fd_of_;
  std::vector<const output::MetricNaming*> names_;  // a tool's name for each map, or null
  bool only_named_ = false;
  int ncpus_;
  const Resolver* resolver_;  // safe to call from any thread
  std::function<output::RunMetrics()> run_;
  std::mutex take_;  // held by a take; guards base_
  std::atomic<uint64_t> takes_{0};  // odd while a take is under way
  std::vector<std::vector<std::pair<output::Value, output::Aggregate>>> base_;  // per map: what takes took
};

// The HTTP endpoint, serving the sources added to it.
class MetricsEndpoint {
 public:
  // Loads the HTTP module and listens; null and `error` when it cannot.
  static std::unique_ptr<MetricsEndpoint> start(const MetricsOptions& options, std::string& error);
  ~MetricsEndpoint();  // stops serving (a scrape under way finishes first)

  uint16_t port() const;
  // Says where it serves, on stderr.
  void announce(const MetricsOptions& options) const;

  // A session's source is served from add() until remove().
  void add(MetricsSource* source);
  void remove(MetricsSource* source);

  // The page for an Accept header, and its content type.
  std::string page(const std::string& accept, std::string_view& content_type);

 private:
  MetricsEndpoint() = default;

  uint64_t max_series_ = output::kMetricsMaxSeries;
  std::mutex page_;  // one page at a time; guards sources_, folded_ and last_
  // The last page built (with its build's number) and the number of builds
  // started so far. A request answers with the last page when that page's
  // build started after the request came: in a storm of scrapes, those that
  // waited behind a build share the next one.
  struct BuiltPage {
    uint64_t build = 0;
    bool protobuf = false;
    output::MetricsFormat format = output::MetricsFormat::Prometheus;
    std::string text;
  };
  BuiltPage last_;
  std::atomic<uint64_t> builds_{0};
  std::vector<MetricsSource*> sources_;
  std::vector<std::pair<std::string, uint64_t>> folded_;  // keys folded into other="true" so far
  struct Module;
  std::unique_ptr<Module> module_;
};

}  // namespace bpfscope::runtime
