/*
 * Test helper: child_connect_flood PATH PROCS HOLD STOPFILE floods the Unix
 * socket at PATH with connections from PROCS processes until the file
 * STOPFILE exists: each connects and closes as fast as it can, keeping its
 * last HOLD connections open (past rpc.max_connections, they are refused
 * by the engine). It prints "connections N" (the connects that succeeded,
 * all processes) when done, and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: child_connect_flood PATH PROCS HOLD STOPFILE\n");
    return 2;
  }
  const char *path = argv[1], *stop = argv[4];
  int procs = atoi(argv[2]), hold = atoi(argv[3]);
  if (procs < 1 || procs > 64 || hold < 0 || hold > 256 || strlen(path) >= 108)
    return 2;
  int counts[2];
  if (pipe(counts) != 0)
    return 1;
  for (int p = 0; p < procs; p++) {
    if (fork() != 0)
      continue;
    close(counts[0]);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int held[256];
    int nheld = 0;
    long n = 0;
    for (long i = 0;; i++) {
      /* The stop file is looked at now and then, not at each connect. */
      if (i % 256 == 0 && access(stop, F_OK) == 0)
        break;
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0)
        continue;
      if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        n++;
      if (hold > 0) {
        if (nheld == hold) {
          close(held[0]);
          memmove(held, held + 1, (size_t)(hold - 1) * sizeof *held);
          nheld--;
        }
        held[nheld++] = fd;
      } else {
        close(fd);
      }
    }
    if (write(counts[1], &n, sizeof n) != (ssize_t)sizeof n)
      _exit(1);
    _exit(0);
  }
  close(counts[1]);
  long total = 0, n;
  while (read(counts[0], &n, sizeof n) == (ssize_t)sizeof n)
    total += n;
  while (wait(NULL) > 0) {
  }
  printf("connections %ld\n", total);
  return 0;
}
