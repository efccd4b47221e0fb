// The metrics endpoint's HTTP server, a module of its own (bpfscope-http.so,
// written in C on Debian's libmicrohttpd) that bpfscope loads only when
// --prometheus or `serve` asks for it: the library and what it brings
// (GnuTLS) would otherwise be loaded at every start. The interface is C: the
// bytes of a page are allocated and released by the binary's own callbacks.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A page, filled by bpfscope_http_options::page.
typedef struct bpfscope_http_page {
  char* body;                // the binary's bytes, until `release`
  size_t size;
  const char* content_type;  // a static string
  void* owner;               // the binary's, for `release`
} bpfscope_http_page;

typedef struct bpfscope_http_options {
  const char* address;  // an IPv4 or IPv6 address to listen on ("127.0.0.1", "::")
  uint16_t port;        // 0: any free port (bpfscope_http_port says which)
  const char* token;    // a request needs "Authorization: Bearer TOKEN"; "" or null: none
  void* ctx;
  // The /metrics page for a request with this Accept header ("" when none).
  // Called from the server's threads, several at once.
  void (*page)(void* ctx, const char* accept, bpfscope_http_page* out);
  void (*release)(void* ctx, bpfscope_http_page* page);
} bpfscope_http_options;

// Starts serving in threads of its own. Returns null and writes why in
// `error` when it cannot (the address is taken, not local...).
void* bpfscope_http_start(const bpfscope_http_options* options, char* error, size_t error_size);
// The port it listens on.
uint16_t bpfscope_http_port(void* server);
// Stops serving (requests under way finish) and frees the server.
void bpfscope_http_stop(void* server);

// The names bpfscope looks the functions up by (dlsym).
typedef void* (*bpfscope_http_start_fn)(const bpfscope_http_options*, char*, size_t);
typedef uint16_t (*bpfscope_http_port_fn)(void*);
typedef void (*bpfscope_http_stop_fn)(void*);

#ifdef __cplusplus
}
#endif
