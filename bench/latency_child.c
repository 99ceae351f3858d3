/*
 * The child of the latency benchmark: writes COUNT lines to stdout, one
 * every INTERVAL_MS milliseconds, each of the form
 *
 *   Error: <n> <CLOCK_MONOTONIC nanoseconds at the write>
 *
 * so a reader on the same machine can tell how long the line took to reach
 * it (now - stamp). The lines start with "Error:", one of the default crash
 * patterns, so a vigil monitor with that pattern notifies each of them.
 *
 * The schedule is absolute (clock_nanosleep to start + k * interval), so the
 * phase does not drift with the time each write takes. The first line comes
 * one interval after the start, and the child waits one more interval after
 * the last line before it exits: a process that ends right after its last
 * write would have that line's batch flushed at the exit instead of at the
 * end of the window, which would flatter the last figure. Each line is one
 * write(2) of a whole line, never buffered by stdio.
 *
 *   latency_child COUNT INTERVAL_MS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Sleeps until the absolute CLOCK_MONOTONIC time t (restarting on EINTR). */
static void
latency_child_sleep_until(const struct timespec *t)
{
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR)
    ;
}

/* Adds ms milliseconds to t, keeping tv_nsec in 0..999999999. */
static void
latency_child_add_ms(struct timespec *t, long ms)
{
  t->tv_sec += ms / 1000;
  t->tv_nsec += (ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

int
main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: latency_child COUNT INTERVAL_MS\n");
    return 2;
  }
  long count = strtol(argv[1], NULL, 10);
  long interval = strtol(argv[2], NULL, 10);
  if (count < 1 || interval < 1) {
    fprintf(stderr, "latency_child: COUNT and INTERVAL_MS must be positive\n");
    return 2;
  }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (long n = 1; n <= count; n++) {
    latency_child_add_ms(&next, interval);
    latency_child_sleep_until(&next);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    char line[96];
    int len = snprintf(line, sizeof line, "Error: %ld %lld\n", n,
                       (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    if (write(STDOUT_FILENO, line, (size_t)len) != len)
      return 1;
  }
  latency_child_add_ms(&next, interval);
  latency_child_sleep_until(&next);
  return 0;
}
