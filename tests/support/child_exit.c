/*
 * Test helper: child_exit CODE [out:TEXT | err:TEXT | kill:SIGNUM]...
 * Prints each out: TEXT as a line on stdout and each err: TEXT as a line on
 * stderr, in order; kill:SIGNUM makes it kill itself with that signal (after
 * flushing); otherwise it exits with CODE.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int
main(int argc, char **argv)
{
  int code = argc > 1 ? atoi(argv[1]) : 0;
  for (int i = 2; i < argc; i++) {
    if (strncmp(argv[i], "out:", 4) == 0) {
      printf("%s\n", argv[i] + 4);
    } else if (strncmp(argv[i], "err:", 4) == 0) {
      fflush(stdout);
      fprintf(stderr, "%s\n", argv[i] + 4);
    } else if (strncmp(argv[i], "kill:", 5) == 0) {
      int sig = atoi(argv[i] + 5);
      struct rlimit none = {0, 0}; /* no core file */
      setrlimit(RLIMIT_CORE, &none);
      fflush(stdout);
      signal(sig, SIG_DFL);
      raise(sig);
    }
  }
  fflush(stdout);
  return code;
}
