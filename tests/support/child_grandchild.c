/*
 * Test helper: forks a grandchild that inherits stdout and stderr and sleeps
 * for five minutes, holding both pipes open; the parent prints
 * "grandchild PID" and "parent done" and exits 0 at once. The grandchild
 * stays in the parent's process group.
 */
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

int
main(void)
{
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0) {
    sleep(300);
    _exit(0);
  }
  printf("grandchild %d\nparent done\n", (int)pid);
  fflush(stdout);
  return 0;
}
