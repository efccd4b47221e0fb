// bpfscope-http.so: the metrics endpoint's HTTP server (http.h), on
// libmicrohttpd. It serves GET (and HEAD) /metrics with the page the binary
// renders, a short index on /, and the right status for anything else; with
// a token, every request must carry it. Requests run on a pool of threads of
// the server's own, so a slow or stalled client never holds up bpfscope's
// event loop, only its own connection, and only until the timeout.
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

// Connections are served by a pool of threads; a client that sends nothing
// is dropped after the timeout. The timeout counts from a connection's last
// activity as the server saw it: in a storm of scrapes, one whose request
// waits behind the pages of others (each renders the maps in turn) must not
// be dropped meanwhile, so it is longer than Prometheus's scrape timeout
// (10 s by default). 5 s dropped some of 1,000 at once in the ASan build.
enum { kThreads = 4, kTimeoutSeconds = 30, kBacklog = 1024, kConnections = 4096 };

typedef struct server {
  bpfscope_http_options options;
  char* token;  // "" for none
  struct MHD_Daemon* daemon;
  uint16_t port;
} server;

static const char kIndex[] =
    "<html><head><title>bpfscope</title></head><body><h1>bpfscope</h1>"
    "<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

// Compares in time independent of where the strings differ.
static int same_secret(const char* a, const char* b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char diff = la == lb ? 0 : 1;
  const char* s = la == lb ? b : a;
  for (size_t i = 0; i < la; ++i) diff |= (unsigned char)(a[i] ^ s[i]);
  return diff == 0;
}

static int authorized(const server* s, struct MHD_Connection* c) {
  if (!s->token[0]) return 1;
  const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  static const char prefix[] = "Bearer ";
  return auth && strncmp(auth, prefix, sizeof prefix - 1) == 0 && same_secret(auth + sizeof prefix - 1, s->token);
}

static enum MHD_Result reply(struct MHD_Connection* c, unsigned status, const char* type, const char* body,
                             size_t size, const char* header, const char* value) {
  struct MHD_Response* r = MHD_create_response_from_buffer(size, (void*)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (header) MHD_add_response_header(r, header, value);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result text(struct MHD_Connection* c, unsigned status, const char* body, const char* header,
                            const char* value) {
  return reply(c, status, "text/plain; charset=utf-8", body, strlen(body), header, value);
}

static enum MHD_Result handle(void* cls, struct MHD_Connection* c, const char* url, const char* method,
                              const char* version, const char* upload_data, size_t* upload_data_size,
                              void** con_cls) {
  (void)version;
  (void)upload_data;
  (void)con_cls;
  server* s = cls;
  // A request body is neither wanted nor read: the answer comes first.
  *upload_data_size = 0;
  if (!authorized(s, c))
    return text(c, MHD_HTTP_UNAUTHORIZED, "401 Unauthorized: this endpoint needs its bearer token\n",
                MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"bpfscope\"");
  const int is_metrics = strcmp(url, "/metrics") == 0, is_index = strcmp(url, "/") == 0;
  if (!is_metrics && !is_index) return text(c, MHD_HTTP_NOT_FOUND, "404 Not Found: the metrics are on /metrics\n",
                                            NULL, NULL);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 Method Not Allowed: use GET\n", MHD_HTTP_HEADER_ALLOW,
                "GET, HEAD");
  if (is_index) return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", kIndex, sizeof kIndex - 1, NULL, NULL);
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
  bpfscope_http_page page = {NULL, 0, "text/plain", NULL};
  s->options.page(s->options.ctx, accept ? accept : "", &page);
  enum MHD_Result ret = reply(c, MHD_HTTP_OK, page.content_type, page.body ? page.body : "", page.size, NULL, NULL);
  s->options.release(s->options.ctx, &page);
  return ret;
}

// The listening socket, made here so that a taken address is said plainly
// and the backlog holds a burst of scrapes.
static int listen_on(const char* address, uint16_t port, uint16_t* bound, char* error, size_t error_size) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  struct sockaddr_in* v4 = (struct sockaddr_in*)&ss;
  struct sockaddr_in6* v6 = (struct sockaddr_in6*)&ss;
  const char* host = strcmp(address, "localhost") == 0 ? "127.0.0.1" : address;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    snprintf(error, error_size, "%s is not an IPv4 or IPv6 address", address);
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (fd >= 0 && ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  if (fd < 0 || bind(fd, (struct sockaddr*)&ss, len) != 0 || listen(fd, kBacklog) != 0 ||
      getsockname(fd, (struct sockaddr*)&ss, &len) != 0) {
    snprintf(error, error_size, "cannot listen on %s port %u: %s", address, port, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  *bound = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

void* bpfscope_http_start(const bpfscope_http_options* options, char* error, size_t error_size) {
  server* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->options = *options;
  s->token = strdup(options->token ? options->token : "");
  int fd = listen_on(options->address, options->port, &s->port, error, error_size);
  if (fd < 0 || !s->token) {
    free(s->token);
    free(s);
    return NULL;
  }
  // Each connection holds a descriptor: room for a storm of scrapes.
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, &handle, s,
                               MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)kThreads,
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)kTimeoutSeconds,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)kConnections, MHD_OPTION_END);
  if (!s->daemon) {
    snprintf(error, error_size, "the HTTP server (libmicrohttpd) did not start on %s port %u", options->address,
             s->port);
    close(fd);
    free(s->token);
    free(s);
    return NULL;
  }
  return s;
}

uint16_t bpfscope_http_port(void* server_) { return ((server*)server_)->port; }

void bpfscope_http_stop(void* server_) {
  server* s = server_;
  MHD_stop_daemon(s->daemon);
  free(s->token);
  free(s);
}
