/* Makes an exact number of system calls, for runtime cases and benchmarks.
 * usage: syscall_loop getppid|getpid|openat N [delay_ms_before] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s getppid|getpid|openat N [delay_ms]\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  if (argc > 3) {
    struct timespec ts = {atol(argv[3]) / 1000, (atol(argv[3]) % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  for (long i = 0; i < n; i++) {
    if (strcmp(argv[1], "getppid") == 0) {
      syscall(SYS_getppid);
    } else if (strcmp(argv[1], "getpid") == 0) {
      syscall(SYS_getpid);
    } else if (strcmp(argv[1], "openat") == 0) {
      int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
      if (fd >= 0) close(fd);
    } else {
      return 2;
    }
  }
  return 0;
}
