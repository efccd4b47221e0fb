/* CPU and scheduler work of known shape for the CPU tools' tests: each step
 * runs in a function of its own (not inlined, frame pointers kept) that
 * makes its system calls itself (inline `syscall`, no libc wrapper), so that
 * a user stack taken while the thread is off CPU starts in that function.
 * usage: cpu_work [-w] STEP...
 *   spin MS        spin in cpu_spin() for MS milliseconds
 *   sleep MS N     N times: nanosleep MS milliseconds in cpu_sleep()
 *   pipe MS N      N times: cpu_pipe_wait() reads a pipe that a waker thread
 *                  writes (in cpu_wake()) after sleeping MS ms (cpu_waker_nap())
 *   calls N        N getppid() calls and N failed close(-1) calls (EBADF)
 * -w: print "ready" and wait for a line on stdin before the steps, then print
 *     "done" and wait for stdin to close (so that a tracer can symbolize the
 *     process's stacks after the work). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long sys3(long n, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) void cpu_spin(long ms) {
  double end = now_ms() + ms;
  volatile unsigned long x = 0;
  while (now_ms() < end)
    for (int i = 0; i < 200000; i++) x += i;
}

__attribute__((noinline)) void cpu_sleep(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  sys3(SYS_nanosleep, (long)&ts, 0, 0);
  __asm__ volatile("" ::: "memory");
}

static int pipefd[2];
static long waker_ms, rounds;

__attribute__((noinline)) void cpu_waker_nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  sys3(SYS_nanosleep, (long)&ts, 0, 0);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cpu_wake(void) {
  char c = 'w';
  sys3(SYS_write, pipefd[1], (long)&c, 1);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cpu_pipe_wait(void) {
  char c;
  sys3(SYS_read, pipefd[0], (long)&c, 1);
  __asm__ volatile("" ::: "memory");
}

static void *waker_main(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    cpu_waker_nap(waker_ms);
    cpu_wake();
  }
  return NULL;
}

__attribute__((noinline)) void cpu_calls(long n) {
  for (long i = 0; i < n; i++) {
    sys3(SYS_getppid, 0, 0, 0);
    sys3(SYS_close, -1, 0, 0);
  }
}

int main(int argc, char **argv) {
  int a = 1, wait = 0;
  char line[64];
  if (a < argc && strcmp(argv[a], "-w") == 0) wait = 1, a++;
  if (wait) {
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 1;
  }
  while (a < argc) {
    const char *op = argv[a];
    long x = a + 1 < argc ? atol(argv[a + 1]) : 0, n = a + 2 < argc ? atol(argv[a + 2]) : 0;
    if (strcmp(op, "spin") == 0) {
      cpu_spin(x);
      a += 2;
    } else if (strcmp(op, "sleep") == 0) {
      for (long i = 0; i < n; i++) cpu_sleep(x);
      a += 3;
    } else if (strcmp(op, "pipe") == 0) {
      pthread_t t;
      if (pipe(pipefd) != 0) return 1;
      waker_ms = x, rounds = n;
      pthread_create(&t, NULL, waker_main, NULL);
      for (long i = 0; i < n; i++) cpu_pipe_wait();
      pthread_join(t, NULL);
      close(pipefd[0]);
      close(pipefd[1]);
      a += 3;
    } else if (strcmp(op, "calls") == 0) {
      cpu_calls(x);
      a += 2;
    } else {
      fprintf(stderr, "unknown step %s\n", op);
      return 2;
    }
  }
  if (wait) {
    printf("done\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
    }
  }
  return 0;
}
