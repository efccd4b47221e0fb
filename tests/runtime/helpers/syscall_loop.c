/* Makes an exact number of system calls, for runtime cases and benchmarks.
 * usage: syscall_loop OP N [OP N]...
 *   OP: getppid, getpid, getpgid, openat (of /dev/null), sleep (N milliseconds) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3 || argc % 2 == 0) {
    fprintf(stderr, "usage: %s OP N [OP N]... (OP: getppid getpid getpgid openat sleep)\n", argv[0]);
    return 2;
  }
  for (int a = 1; a + 1 < argc; a += 2) {
    const char *op = argv[a];
    long n = atol(argv[a + 1]);
    if (strcmp(op, "sleep") == 0) {
      struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    for (long i = 0; i < n; i++) {
      if (strcmp(op, "getppid") == 0) {
        syscall(SYS_getppid);
      } else if (strcmp(op, "getpid") == 0) {
        syscall(SYS_getpid);
      } else if (strcmp(op, "getpgid") == 0) {
        syscall(SYS_getpgid, 0);
      } else if (strcmp(op, "openat") == 0) {
        int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
        if (fd >= 0) close(fd);
      } else {
        fprintf(stderr, "unknown op %s\n", op);
        return 2;
      }
    }
  }
  return 0;
}
