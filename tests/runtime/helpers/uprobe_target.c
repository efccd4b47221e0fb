/* A target for uprobe cases: calls work() N times and add() once.
 * usage: uprobe_target N [WHO [LINGER_MS]]: LINGER_MS keeps the process (and
 * its /proc/PID/maps, for user stacks) alive a while after the calls. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Data symbols for uaddr(): main sets them before the calls. */
volatile int target_global;
volatile short target_short;

__attribute__((noinline)) int work(int n) {
  __asm__ volatile("" ::: "memory");
  return n * 2;
}

__attribute__((noinline)) long add(long a, long b) {
  __asm__ volatile("" ::: "memory");
  return a + b;
}

__attribute__((noinline)) const char *greet(const char *who) {
  __asm__ volatile("" ::: "memory");
  return who;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1;
  target_global = 4200 + n;
  target_short = -7;
  int total = 0;
  for (int i = 0; i < n; i++) total += work(i);
  long s = add(2, 3);
  // The string is on the stack: a uprobe cannot fault in a page the program
  // never touched (a literal in .rodata may not be resident yet).
  char who[32];
  snprintf(who, sizeof who, "uprobe %s", argc > 2 ? argv[2] : "world");
  greet(who);
  if (argc > 3) {
    long ms = atol(argv[3]);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return total + (int)s == -1;
}
