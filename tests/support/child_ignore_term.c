/*
 * Test helper: ignores SIGTERM, prints "ready" once it does (so a test sends
 * the signal only after that), then waits forever. Only SIGKILL ends it.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int
main(void)
{
  signal(SIGTERM, SIG_IGN);
  printf("ready\n");
  fflush(stdout);
  for (;;)
    pause();
}
