/*
 * Test helper: child_forks N forks up to N children, each of which puts
 * /dev/null on its stdin, stdout and stderr and sleeps for five minutes.
 * It stops at the first refused fork, prints "forked X refused Y" (Y is 0
 * or 1), kills and reaps its children (so a sanitizer's exit-time helper
 * can still be started under the limit) and exits 3 when a fork was
 * refused, else 0. A bounded stand-in for a fork bomb: even where nothing
 * limits it, it adds at most N processes.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : 10;
  if (n < 0 || n > 4096)
    n = 4096;
  long forked = 0, refused = 0;
  static pid_t kids[4096];
  fflush(stdout);
  for (long i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      refused = 1;
      break;
    }
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
      for (int s = 0; s < 300; s++)
        sleep(1);
      _exit(0);
    }
    kids[forked++] = pid;
  }
  printf("forked %ld refused %ld\n", forked, refused);
  fflush(stdout);
  for (long i = 0; i < forked; i++)
    kill(kids[i], SIGKILL);
  for (long i = 0; i < forked; i++)
    waitpid(kids[i], NULL, 0);
  return refused ? 3 : 0;
}
