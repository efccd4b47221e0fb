// The metrics endpoint: loading the HTTP module, and the page it serves.
#include "runtime/metrics.h"

#include <dlfcn.h>
#include <malloc.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "http/http.h"
#include "output/metrics_proto.h"

namespace bpfscope::runtime {

// The HTTP module: next to the binary (a build tree), or in
// ../lib/bpfscope/ beside its bin/ (an installed bpfscope).
struct MetricsEndpoint::Module {
  void* handle = nullptr;
  void* server = nullptr;
  bpfscope_http_port_fn port = nullptr;
  bpfscope_http_stop_fn stop = nullptr;

  // The module stays loaded until exit: the libraries it brings (GnuTLS)
  // may have exit handlers of their own.
  ~Module() {
    if (server) stop(server);
  }

  bool open(std::string& error) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
    dir = dir.substr(0, dir.rfind('/') + 1);
    std::string tried;
    for (const std::string& path : {dir + "bpfscope-http.so", dir + "../lib/bpfscope/bpfscope-http.so"}) {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      tried += fmt::format("\n  {}", dlerror());
    }
    if (!handle) {
      error = "cannot load the HTTP module bpfscope-http.so:" + tried;
      return false;
    }
    port = reinterpret_cast<bpfscope_http_port_fn>(dlsym(handle, "bpfscope_http_port"));
    stop = reinterpret_cast<bpfscope_http_stop_fn>(dlsym(handle, "bpfscope_http_stop"));
    if (!port || !stop || !dlsym(handle, "bpfscope_http_start")) {
      error = "bpfscope-http.so lacks its functions";
      return false;
    }
    return true;
  }
};

namespace {

using Entries = std::vector<std::pair<output::Value, output::Aggregate>>;

// Counters, summaries and histograms: their served values only grow.
bool counter_kind(output::AggKind k) {
  using output::AggKind;
  return k == AggKind::Count || k == AggKind::Sum || k == AggKind::Stats || k == AggKind::Hist ||
         k == AggKind::LHist;
}

void page_callback(void* ctx, const char* accept, bpfscope_http_page* out) {
  std::string_view type;
  auto* body = new std::string(static_cast<MetricsEndpoint*>(ctx)->page(accept ? accept : "", type));
  out->body = body->data();
  out->size = body->size();
  out->content_type = type.data();  // a static string (metrics_content_type)
  out->owner = body;
}

// A page of 10,000 keys takes tens of MB of short-lived values. They are
// returned once the page is sent, so that RSS stays what one page needs
// (MetricsEndpoint::start keeps the server's threads in one malloc arena).
void release_callback(void*, bpfscope_http_page* page) {
  delete static_cast<std::string*>(page->owner);
  malloc_trim(0);
}

// Adds `from` into `into`, entry by entry: one entry per key (an interval
// tool takes the same keys every time; a keyless map has one entry).
void add_entries(output::AggKind kind, Entries& into, const Entries& from) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < into.size(); ++i) index.emplace(output::key_text(into[i].first), i);
  for (const auto& [key, value] : from) {
    auto [it, added] = index.emplace(output::key_text(key), into.size());
    if (added)
      into.emplace_back(key, value);
    else
      output::merge_aggregate(kind, into[it->second].second, value);
  }
}

}  // namespace

std::unique_ptr<MetricsEndpoint> MetricsEndpoint::start(const MetricsOptions& options, std::string& error) {
  std::unique_ptr<MetricsEndpoint> s(new MetricsEndpoint());
  s->max_series_ = options.max_series;
  // Pages are built on any of the server's threads, one at a time: one
  // arena for them all, rather than one per thread, each keeping what a
  // page of 10,000 keys took (three arenas of 10 MB after trimming).
  mallopt(M_ARENA_MAX, 1);
  s->module_ = std::make_unique<Module>();
  if (!s->module_->open(error)) return nullptr;
  auto start = reinterpret_cast<bpfscope_http_start_fn>(dlsym(s->module_->handle, "bpfscope_http_start"));
  bpfscope_http_options o{.address = options.address.c_str(),
                          .port = options.port,
                          .token = options.token.c_str(),
                          .ctx = s.get(),
                          .page = &page_callback,
                          .release = &release_callback};
  char why[256] = "";
  s->module_->server = start(&o, why, sizeof why);
  if (!s->module_->server) {
    error = why;
    return nullptr;
  }
  return s;
}

MetricsEndpoint::~MetricsEndpoint() { module_.reset(); }

uint16_t MetricsEndpoint::port() const { return module_->port(module_->server); }

void MetricsEndpoint::announce(const MetricsOptions& options) const {
  const bool v6 = options.address.find(':') != std::string::npos;
  fmt::print(stderr, "Serving metrics on http://{}{}{}:{}/metrics\n", v6 ? "[" : "", options.address, v6 ? "]" : "",
             port());
}

void MetricsEndpoint::add(MetricsSource* source) {
  std::lock_guard lock(page_);
  sources_.push_back(source);
}

void MetricsEndpoint::remove(MetricsSource* source) {
  std::lock_guard lock(page_);
  std::erase(sources_, source);
}

std::string MetricsEndpoint::page(const std::string& accept, std::string_view& content_type) {
  // The format the scraper prefers: Prometheus lists protobuf first when
  // its native histograms are on, and OpenMetrics first by default.
  const auto [protobuf, format] = output::choose_metrics_format(accept);
  content_type = protobuf ? output::kMetricsProtobufContentType : output::metrics_content_type(format);
  const uint64_t came = builds_.load();
  std::lock_guard one(page_);
  if (last_.build > came && last_.protobuf == protobuf && last_.format == format) return last_.text;
  const uint64_t build = ++builds_;
  std::vector<output::MapSnapshot> maps;
  output::RunMetrics run{.version = BPFSCOPE_VERSION};
  for (MetricsSource* source : sources_) source->collect(maps, run);
  run.series_folded = folded_;
  output::MetricsPage p = protobuf ? output::metrics_protobuf(maps, run, max_series_)
                                   : output::metrics_page(maps, run, format, max_series_);
  folded_ = std::move(p.series_folded);
  last_ = {.build = build, .protobuf = protobuf, .format = format, .text = std::move(p.text)};
  return last_.text;
}

MetricsSource::MetricsSource(const std::vector<sema::MapInfo>& maps, std::function<int(size_t)> fd_of,
                             std::vector<const output::MetricNaming*> names, int ncpus, const Resolver* resolver,
                             std::function<output::RunMetrics()> run)
    : maps_(maps),
      fd_of_(std::move(fd_of)),
      names_(std::move(names)),
      ncpus_(ncpus),
      resolver_(resolver),
      run_(std::move(run)),
      base_(maps.size()) {
  only_named_ = std::any_of(names_.begin(), names_.end(), [](const auto* n) { return n != nullptr; });
}

bool MetricsSource::served(size_t i) const { return !only_named_ || names_[i]; }

void MetricsSource::keep(int32_t map, const output::MapSnapshot& snap) {
  add_entries(snap.kind, base_[static_cast<size_t>(map)], snap.entries);
  takes_.fetch_add(1);
}

bool MetricsSource::keeps(int32_t map) const {
  return map >= 0 && served(static_cast<size_t>(map)) && counter_kind(maps_[static_cast<size_t>(map)].agg);
}

output::MapSnapshot MetricsSource::read(size_t i) const {
  output::MapSnapshot snap = read_map(maps_[i], fd_of_(i), ncpus_, resolver_);
  snap.metric = names_[i];
  return snap;
}

void MetricsSource::collect(std::vector<output::MapSnapshot>& maps, output::RunMetrics& run) {
  std::vector<output::MapSnapshot> snaps;
  std::vector<Entries> base;
  // The maps are read while no take is under way, and again when one began
  // meanwhile. After a few tries the read holds the take lock, and a take
  // waits for it.
  for (int attempt = 0;; ++attempt) {
    std::unique_lock lock(take_, std::defer_lock);
    if (attempt == 3) lock.lock();
    const uint64_t before = takes_.load();
    if (before % 2 == 1) {
      std::this_thread::yield();
      continue;
    }
    snaps.clear();
    for (size_t i = 0; i < maps_.size(); ++i) snaps.push_back(served(i) ? read(i) : output::MapSnapshot{});
    if (!lock.owns_lock()) lock.lock();
    if (takes_.load() == before) {
      base = base_;
      break;
    }
  }
  for (size_t i = 0; i < snaps.size(); ++i) {
    if (!served(i)) continue;
    if (counter_kind(snaps[i].kind)) add_entries(snaps[i].kind, snaps[i].entries, base[i]);
    maps.push_back(std::move(snaps[i]));
  }
  // Each session's counters, listed.
  output::RunMetrics mine = run_();
  const auto append = [](auto& into, const auto& from) { into.insert(into.end(), from.begin(), from.end()); };
  append(run.lost_events, mine.lost_events);
  append(run.map_full, mine.map_full);
  append(run.probe_skipped, mine.probe_skipped);
  append(run.probes, mine.probes);
}

}  // namespace bpfscope::runtime
