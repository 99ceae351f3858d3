/*
 * Test helper: child_tick MS [N] prints "tick I" (I from 1) every MS
 * milliseconds, N times (0 or absent: forever), then exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int
main(int argc, char **argv)
{
  long ms = argc > 1 ? atol(argv[1]) : 100;
  long n = argc > 2 ? atol(argv[2]) : 0;
  for (long i = 1; n == 0 || i <= n; i++) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    printf("tick %ld\n", i);
    fflush(stdout);
  }
  return 0;
}
