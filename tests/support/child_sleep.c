/*
 * Test helper: child_sleep MS sleeps MS milliseconds, then exits 0.
 */
#include <stdlib.h>
#include <time.h>

int
main(int argc, char **argv)
{
  long ms = argc > 1 ? atol(argv[1]) : 1000;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}
