/*
 * Test helper: child_flood N writes N lines "flood line %08d\n" (20 bytes
 * each) to stdout and N to stderr, interleaved, as fast as it can.
 */
#include <stdio.h>
#include <stdlib.h>

static char outbuf[1 << 16], errbuf[1 << 16];

int
main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : 1000;
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  setvbuf(stderr, errbuf, _IOFBF, sizeof errbuf);
  for (long i = 0; i < n; i++) {
    printf("flood line %08ld\n", i);
    fprintf(stderr, "flood line %08ld\n", i);
  }
  return 0;
}
