/* tcpstorm N [hold]: N loopback TCP sessions, one after another, in a new network
 * namespace (only its lo, brought up here; so nothing else runs there and the
 * TIME_WAIT sockets vanish with it). Each cycle: connect to a listener on
 * 127.0.0.1, accept, the accepted side closes first (FIN_WAIT1, FIN_WAIT2,
 * TIME_WAIT), then the client (CLOSE_WAIT, LAST_ACK, CLOSE). That is 10
 * sock:inet_sock_set_state events and two ended sessions per cycle.
 * Prints the mean ns per cycle (CLOCK_MONOTONIC around the loop).
 *
 * With "hold": open N sessions and keep them (4 events each, all before
 * any session ends: CLOSE->SYN_SENT, LISTEN->SYN_RECV, SYN_RECV->ESTABLISHED,
 * SYN_SENT->ESTABLISHED), print the mean ns per connection, then wait for a
 * line on stdin before closing them all. This is tcplife's path that prints
 * nothing, for every tool. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "hold"))) {
    fprintf(stderr, "usage: %s N [hold]\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]);
  int hold = argc == 3;
  int *fds = NULL;
  if (hold) {
    struct rlimit rl = {2 * n + 64, 2 * n + 64};
    if (setrlimit(RLIMIT_NOFILE, &rl)) die("setrlimit(RLIMIT_NOFILE)");
    fds = calloc(2 * n, sizeof(int));
    if (!fds) die("calloc");
  }
  if (unshare(CLONE_NEWNET)) die("unshare(CLONE_NEWNET)");
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  strcpy(ifr.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &ifr)) die("SIOCGIFFLAGS");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr)) die("SIOCSIFFLAGS");
  close(s);

  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (bind(l, (struct sockaddr *)&a, sizeof(a))) die("bind");
  if (listen(l, 4096)) die("listen");
  if (getsockname(l, (struct sockaddr *)&a, &alen)) die("getsockname");

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; i++) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0) die("socket");
    if (connect(c, (struct sockaddr *)&a, sizeof(a))) die("connect");
    int sv = accept(l, NULL, NULL);
    if (sv < 0) die("accept");
    if (hold) {
      fds[2 * i] = sv;
      fds[2 * i + 1] = c;
      continue;
    }
    close(sv);
    close(c);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
  printf("%.1f\n", n ? ns / n : 0.0);
  fflush(stdout);
  if (hold) {
    char line[16];
    if (!fgets(line, sizeof(line), stdin)) { /* EOF: close anyway */ }
    for (long i = 0; i < 2 * n; i++) close(fds[i]);
  }
  close(l);
  return 0;
}
