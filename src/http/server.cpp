// bpfscope-http.so: the metrics endpoint's HTTP server (http.h), on
// cpp-httplib. It serves GET /metrics with the page the binary renders, a
// short index on /, and the right status for anything else; with a token,
// every request must carry it. Requests run on a pool of threads of the
// server's own, so a slow or stalled client never holds up bpfscope's event
// loop, only its own connection, and only until the read timeout.
#include "http/http.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

namespace {

// Connections are read by a pool of threads: scrapes beyond it wait in the
// pool's queue, a client that sends nothing is dropped after the timeout.
constexpr size_t kThreads = 4;
constexpr time_t kTimeoutSeconds = 5;
// The kernel queues this many connections not yet accepted (the library
// listens with 5, which makes a burst of scrapes wait for SYN retries).
constexpr int kBacklog = 1024;
constexpr size_t kMaxBody = 4096;

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::string& s = a.size() == b.size() ? b : a;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ s[i]);
  return diff == 0;
}

const char kIndex[] =
    "<html><head><title>bpfscope</title></head><body><h1>bpfscope</h1>"
    "<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

struct Server {
  bpfscope_http_options options;
  std::string token;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  int listen_fd = -1;

  bool authorized(const httplib::Request& req) const {
    if (token.empty()) return true;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    return auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
           same_secret(auth.substr(prefix.size()), token);
  }

  void metrics(const httplib::Request& req, httplib::Response& res) {
    bpfscope_http_page page{nullptr, 0, "text/plain", nullptr};
    options.page(options.ctx, req.get_header_value("Accept").c_str(), &page);
    res.set_content(page.body ? page.body : "", page.size, page.content_type);
    options.release(options.ctx, &page);
  }

  void routes() {
    http.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
    http.set_read_timeout(kTimeoutSeconds, 0);
    http.set_write_timeout(kTimeoutSeconds, 0);
    http.set_keep_alive_timeout(kTimeoutSeconds);
    http.set_payload_max_length(kMaxBody);
    http.set_socket_options([this](int fd) {
      int on = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
      listen_fd = fd;
    });
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"bpfscope\"");
      res.set_content("401 Unauthorized: this endpoint needs its bearer token\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    });
    http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) { metrics(req, res); });
    http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kIndex, "text/html"); });
    auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("405 Method Not Allowed: use GET\n", "text/plain");
    };
    for (const char* path : {"/metrics", "/"}) {
      http.Post(path, not_allowed);
      http.Put(path, not_allowed);
      http.Delete(path, not_allowed);
      http.Patch(path, not_allowed);
    }
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.status == 404) res.set_content("404 Not Found: the metrics are on /metrics\n", "text/plain");
    });
  }
};

}  // namespace

extern "C" {

void* bpfscope_http_start(const bpfscope_http_options* options, char* error, size_t error_size) {
  auto s = std::make_unique<Server>();
  s->options = *options;
  s->token = options->token ? options->token : "";
  s->routes();
  const std::string address = options->address;
  s->port = options->port ? (s->http.bind_to_port(address, options->port) ? options->port : -1)
                          : s->http.bind_to_any_port(address);
  if (s->port <= 0) {
    snprintf(error, error_size, "cannot listen on %s port %u: %s", address.c_str(), options->port,
             errno ? strerror(errno) : "the address is not this machine's");
    return nullptr;
  }
  if (s->listen_fd >= 0) listen(s->listen_fd, kBacklog);
  Server* raw = s.get();
  raw->thread = std::thread([raw] { raw->http.listen_after_bind(); });
  return s.release();
}

uint16_t bpfscope_http_port(void* server) { return static_cast<uint16_t>(static_cast<Server*>(server)->port); }

void bpfscope_http_stop(void* server) {
  auto* s = static_cast<Server*>(server);
  s->http.stop();
  if (s->thread.joinable()) s->thread.join();
  delete s;
}
}
