/* ready [-P] [-H HEADER] -m MARKER OUTFILE CMD [ARGS...]
 *
 * Time to ready of a tracer: fork+exec CMD with its stdout on a pseudo-terminal
 * (-P: on a pipe), read its output line by line, and note the CLOCK_MONOTONIC
 * time (from just before fork) at which a line containing MARKER has been read,
 * after a line containing HEADER (if -H is given; the marker line may be the
 * header itself). Then SIGINT the child (its own PID), drain its output and
 * wait4 it. Writes one line to OUTFILE:
 *     ready_s total_s maxrss_kib exit_status
 * ready_s is -1 if the marker never came (the child is killed after 30 s).
 *
 * Why a pty by default: libbpf-tools use stdio, fully buffered on a pipe, so
 * their header line would only come out at exit; on a terminal stdout is line
 * buffered, as when a user runs them. (stdbuf -oL would add an exec.) The pty
 * is put in raw mode so that lines end in "\n" only.
 * Why a small C launcher: ru_maxrss of a child forked from python counts
 * python's pages (see maxrss.c). stderr goes to /dev/null.
 * ready is a child subreaper and, after taking its figures, waits for every
 * descendant: bpfscope releases its links in a background child after exit
 * (tens of ms of RCU waits that hold the kernel's tracepoint locks); without
 * this, that teardown overlapped and delayed the next tool's start. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  const char *header = NULL, *marker = NULL;
  int use_pipe = 0, opt;
  while ((opt = getopt(argc, argv, "+PH:m:")) != -1) {
    switch (opt) {
    case 'P': use_pipe = 1; break;
    case 'H': header = optarg; break;
    case 'm': marker = optarg; break;
    default: goto usage;
    }
  }
  if (!marker || argc - optind < 2) {
  usage:
    fprintf(stderr, "usage: %s [-P] [-H HEADER] -m MARKER OUTFILE CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  const char *outfile = argv[optind];
  char **cmd = argv + optind + 1;

  int rfd, wfd;
  if (use_pipe) {
    int p[2];
    if (pipe2(p, O_CLOEXEC)) { perror("pipe"); return 2; }
    rfd = p[0];
    wfd = p[1];
  } else {
    struct termios t;
    if (openpty(&rfd, &wfd, NULL, NULL, NULL)) { perror("openpty"); return 2; }
    if (tcgetattr(wfd, &t) == 0) {
      cfmakeraw(&t);
      tcsetattr(wfd, TCSANOW, &t);
    }
    fcntl(rfd, F_SETFD, FD_CLOEXEC);
  }
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

  prctl(PR_SET_CHILD_SUBREAPER, 1);
  double t0 = now();
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    dup2(devnull, 0);
    dup2(wfd, 1);
    dup2(devnull, 2);
    if (wfd > 2) close(wfd);
    execvp(cmd[0], cmd);
    _exit(127);
  }
  close(wfd);

  char buf[65536];
  size_t len = 0;
  int seen_header = header == NULL, done = 0, eof = 0;
  double ready = -1;
  while (!done && !eof) {
    double left = t0 + 30 - now();
    if (left <= 0) break;
    struct pollfd pfd = {.fd = rfd, .events = POLLIN};
    int r = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(rfd, buf + len, sizeof(buf) - 1 - len);
    if (n <= 0) { eof = 1; break; }  /* EOF, or EIO on a pty when the child is gone */
    len += n;
    buf[len] = 0;
    char *line = buf, *nl;
    while ((nl = strchr(line, '\n'))) {
      *nl = 0;
      if (!seen_header && strstr(line, header)) seen_header = 1;
      if (seen_header && strstr(line, marker)) {
        ready = now() - t0;
        done = 1;
        break;
      }
      line = nl + 1;
    }
    if (done) break;
    len = strlen(line);  /* keep a partial line */
    memmove(buf, line, len);
    if (len == sizeof(buf) - 1) len = 0;
  }

  kill(pid, ready >= 0 ? SIGINT : SIGKILL);
  /* Drain its output until it has exited. Not until EOF: bpfscope's teardown
   * child (see BENCHMARKS.md) inherits stdout and outlives the tracer. */
  int status;
  struct rusage ru;
  double deadline = now() + 30;
  for (;;) {
    pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0) { perror("wait4"); return 2; }
    if (now() > deadline) kill(pid, SIGKILL);
    struct pollfd pfd = {.fd = rfd, .events = POLLIN};
    if (poll(&pfd, 1, 2) > 0 && read(rfd, buf, sizeof(buf)) <= 0) {
      /* EOF/EIO: nothing holds the output any more; just wait */
      if (wait4(pid, &status, 0, &ru) < 0) { perror("wait4"); return 2; }
      break;
    }
  }
  double total = now() - t0;
  FILE *f = fopen(outfile, "w");
  if (!f) { perror(outfile); return 2; }
  fprintf(f, "%.6f %.6f %ld %d\n", ready, total, ru.ru_maxrss,
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  fclose(f);
  while (wait(NULL) > 0 || errno == EINTR) {
  }
  return ready >= 0 ? 0 : 1;
}
