/* pingpong N: two processes pass a byte back and forth over two pipes, N
 * round trips. Each trip wakes each side once (two sched_wakeup events and
 * about four context switches), the run-queue work runqlat traces. Both are
 * pinned to CPU 0 so that every wakeup goes through the run queue.
 * Prints the mean ns per round trip (CLOCK_MONOTONIC around the loop). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pingpong N\n");
    return 2;
  }
  long n = atol(argv[1]);
  int ping[2], pong[2];
  if (pipe(ping) || pipe(pong)) die("pipe");
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof(one), &one)) die("sched_setaffinity");
  pid_t child = fork();
  if (child < 0) die("fork");
  char c = 'x';
  if (child == 0) {
    for (long i = 0; i < n; ++i)
      if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) die("child");
    _exit(0);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; ++i)
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) die("parent");
  clock_gettime(CLOCK_MONOTONIC, &b);
  waitpid(child, NULL, 0);
  printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  return 0;
}
