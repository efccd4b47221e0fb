/* A target for profile cases: spins in spin_here() for MS milliseconds on
 * THREADS threads (default 1). Built with frame pointers so that user stacks
 * taken in a timer interrupt walk from spin_here to main.
 * usage: spin_target MS [THREADS] */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static long spin_ms;

static double elapsed_ms(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start->tv_sec) * 1e3 + (now.tv_nsec - start->tv_nsec) / 1e6;
}

__attribute__((noinline)) void spin_here(void) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  volatile unsigned long x = 0;
  while (elapsed_ms(&start) < spin_ms)
    for (int i = 0; i < 100000; i++) x += i;
}

static void *thread_main(void *arg) {
  (void)arg;
  spin_here();
  return NULL;
}

int main(int argc, char **argv) {
  spin_ms = argc > 1 ? atol(argv[1]) : 500;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  pthread_t tids[64];
  if (threads > 64) threads = 64;
  for (int i = 1; i < threads; i++) pthread_create(&tids[i], NULL, thread_main, NULL);
  spin_here();
  for (int i = 1; i < threads; i++) pthread_join(tids[i], NULL);
  return 0;
}
