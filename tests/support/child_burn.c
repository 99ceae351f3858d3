/*
 * Test helper: child_burn MS spins until it has used MS milliseconds of CPU
 * time, prints "burned", and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int
main(int argc, char **argv)
{
  long ms = argc > 1 ? atol(argv[1]) : 200;
  volatile unsigned long spin = 0;
  struct timespec ts;
  do {
    for (int i = 0; i < 100000; i++)
      spin++;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  } while (ts.tv_sec * 1000L + ts.tv_nsec / 1000000L < ms);
  printf("burned\n");
  return 0;
}
