/*
 * Test helper: child_fill fills its stdout pipe and exits. It writes exactly
 * as many bytes as the pipe holds (F_GETPIPE_SZ), as numbered 16-byte lines
 * ("%015zu\n"), so a reader that starts only after the exit finds the pipe
 * full and every byte still to read, in order. Not a pipe (or no
 * F_GETPIPE_SZ): 64 KiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(void)
{
  long size = 65536;
#ifdef F_GETPIPE_SZ
  int sz = fcntl(STDOUT_FILENO, F_GETPIPE_SZ);
  if (sz > 0)
    size = sz;
#endif
  static char buf[1 << 16];
  size_t line = 0;
  for (long done = 0; done < size;) {
    size_t n = 0;
    while (n + 16 <= sizeof buf && done + (long)n + 16 <= size) {
      char one[17]; /* snprintf's NUL must not land past buf's end */
      snprintf(one, sizeof one, "%015zu\n", line++);
      memcpy(buf + n, one, 16);
      n += 16;
    }
    if (n == 0)
      break; /* a size that is not a multiple of 16: never on Linux */
    for (size_t off = 0; off < n;) {
      ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        return 1;
      off += (size_t)w;
    }
    done += (long)n;
  }
  return 0;
}
