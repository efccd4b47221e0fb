// `bpfscope serve`: several compiled programs (tools) in one process, each
// session on a thread of its own, behind one metrics endpoint.
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "bpf/bpf.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"

namespace bpfscope::runtime {

int serve(std::vector<std::unique_ptr<Compiled>>& runs, const MetricsOptions& metrics) {
  // The signals come to this thread alone (the sessions' threads inherit the
  // mask and read no signalfd of their own); the stop event ends them all.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  bpf::Fd signals(signalfd(-1, &mask, SFD_CLOEXEC));
  bpf::Fd stop(eventfd(0, EFD_CLOEXEC));
  bpf::Fd ended(eventfd(0, EFD_CLOEXEC));  // a session ended (its count)

  std::string error;
  auto endpoint = MetricsEndpoint::start(metrics, error);
  if (!endpoint) {
    fmt::print(stderr, "ERROR: serve: {}\n", error);
    return 1;
  }
  // Each session's exit status, written by its thread before it counts
  // itself ended.
  std::unique_ptr<std::atomic<int>[]> status(new std::atomic<int>[runs.size()]());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runs.size(); ++i) {
    Compiled& r = *runs[i];
    r.options.metrics.reset();
    r.options.endpoint = endpoint.get();
    r.options.stop_fd = stop.get();
    threads.emplace_back([&, i] {
      Compiled& c = *runs[i];
      status[i] = run(c.program, c.module, std::move(c.programs), c.options, std::nullopt);
      const uint64_t one = 1;
      if (write(ended.get(), &one, sizeof one) != sizeof one) {
      }
    });
  }
  endpoint->announce(metrics);

  // Until a signal, a session that failed, or the end of them all.
  size_t done = 0;
  bool failed = false;
  while (done < runs.size() && !failed) {
    pollfd fds[2] = {{signals.get(), POLLIN, 0}, {ended.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[0].revents & POLLIN) break;
    uint64_t n = 0;
    if (read(ended.get(), &n, sizeof n) == sizeof n) done += n;
    for (size_t i = 0; i < runs.size(); ++i) failed = failed || (status[i] != 0);
  }
  const uint64_t one = 1;
  if (write(stop.get(), &one, sizeof one) != sizeof one) {
  }
  for (auto& t : threads) t.join();
  endpoint.reset();
  for (size_t i = 0; i < runs.size(); ++i)
    if (status[i] != 0) {
      fmt::print(stderr, "serve: {} ended with status {}\n", runs[i]->name, status[i].load());
      return status[i];
    }
  return 0;
}

}  // namespace bpfscope::runtime
