/* maxrss OUTFILE CMD [ARGS...]: runs CMD and writes its peak RSS in KiB to
 * OUTFILE. A small launcher, because a child's ru_maxrss also counts the
 * pages it had before exec: forked from python, that is python's RSS. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OUTFILE CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) return 2;
  FILE *f = fopen(argv[1], "w");
  if (!f) return 2;
  fprintf(f, "%ld\n", ru.ru_maxrss);
  fclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
