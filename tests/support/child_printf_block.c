/*
 * Test helper: child_printf_block MARKER prints "early" with printf (C
 * stdio, which block-buffers a stdout that is not a terminal), creates the
 * file MARKER to say the printf has returned, then waits for SIGUSR1,
 * prints "late" and exits 0 (stdio flushes at exit). Whether "early" is
 * read while it waits tells whether its stdout was line-buffered.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: child_printf_block MARKER\n");
    return 2;
  }
  /* Blocked before the marker exists, so a SIGUSR1 sent once it does waits
   * for sigwait instead of killing the process. */
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, NULL);
  printf("early\n");
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  close(fd);
  int sig = 0;
  sigwait(&usr1, &sig);
  printf("late\n");
  return 0;
}
