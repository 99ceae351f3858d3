/*
 * vigild's log file and its rotation (logfile.h).
 *
 * Rotation is rename-then-reopen: FILE becomes FILE.1 (what was FILE.1 is
 * the part dropped, counted), a new FILE is opened and dup2'd over fd 2,
 * so the log's writer, which only ever writes to fd 2, never sees a
 * change. A rename or open that fails leaves fd 2 as it was (the file
 * then grows past its bound, and a warning says why once): a log line is
 * never worth stopping the engine for.
 */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

static char *logfile_path;
static char *logfile_old_path; /* path.1 */
static uint64_t logfile_max;
static uint64_t logfile_dropped;
static uint64_t logfile_rotations;
static bool logfile_failed; /* a rotation failed; said once */

/* Opens path for appending, 0600 when made, as fd 2. */
static int
logfile_open_fd2(const char *path)
{
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return -1;
  if (fd != 2) {
    if (dup2(fd, 2) < 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    close(fd);
  }
  return 0;
}

/* After each batch of log lines: rotates when the file is past its bound. */
static void
logfile_check(void)
{
  struct stat st;
  if (fstat(2, &st) != 0 || (uint64_t)st.st_size < logfile_max)
    return;
  struct stat old;
  uint64_t dropped = stat(logfile_old_path, &old) == 0 ? (uint64_t)old.st_size : 0;
  if (rename(logfile_path, logfile_old_path) != 0 || logfile_open_fd2(logfile_path) != 0) {
    if (!logfile_failed) {
      logfile_failed = true;
      char line[512];
      int n = snprintf(line, sizeof line, "vigild: cannot rotate the log file %s: %s; it grows "
                       "past its bound (%" PRIu64 " bytes)\n", logfile_path, strerror(errno),
                       logfile_max);
      if (n > 0 && write(2, line, (size_t)n) < 0) {
        /* nowhere else to say it */
      }
    }
    return;
  }
  logfile_dropped += dropped;
  logfile_rotations++;
  char line[512];
  int n = snprintf(line, sizeof line, "vigild: log rotated (#%" PRIu64 "): the previous %" PRIu64
                   " bytes are in %s; %" PRIu64 " bytes dropped by rotation so far (bound %"
                   PRIu64 " bytes per file)\n",
                   logfile_rotations, (uint64_t)st.st_size, logfile_old_path, logfile_dropped,
                   logfile_max);
  if (n > 0 && write(2, line, (size_t)n) < 0) {
    /* nowhere else to say it */
  }
}

int
logfile_open(const char *path, uint64_t max_bytes, VigilError *err)
{
  if (max_bytes < LOGFILE_MIN_BYTES || max_bytes > LOGFILE_MAX_MAX_BYTES)
    return error_set(err, kErrInvalidParams, "--log-max-bytes must be %llu..%llu, got %" PRIu64,
                     (unsigned long long)LOGFILE_MIN_BYTES,
                     (unsigned long long)LOGFILE_MAX_MAX_BYTES, max_bytes);
  if (path[0] == '\0')
    return error_set(err, kErrInvalidParams, "--log-file must name a file, got \"\"");
  if (logfile_open_fd2(path) != 0)
    return error_set(err, kErrInternal, "--log-file: cannot open %s: %s", path, strerror(errno));
  size_t len = strlen(path);
  logfile_path = xstrdup(path);
  logfile_old_path = xmalloc(len + 3);
  memcpy(logfile_old_path, path, len);
  memcpy(logfile_old_path + len, ".1", 3);
  logfile_max = max_bytes;
  log_set_after_write(logfile_check);
  return 0;
}
