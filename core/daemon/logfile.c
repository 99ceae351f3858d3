/*
 * vigild's log file and its rotation (logfile.h).
 *
 * Rotation is rename-then-reopen: FILE becomes FILE.1 (what was FILE.1 is
 * the part dropped, counted), a new FILE is made (O_EXCL: whatever took
 * the name meanwhile is not used) and dup2'd over fd 2, so the log's
 * writer, which only ever writes to fd 2, never sees a change. A rename or
 * open that fails leaves fd 2 as it was (the file then grows past its
 * bound, and a warning says why once): a log line is never worth stopping
 * the engine for.
 *
 * The check runs before each line (log.h's before-line hook), against the
 * file's size as fstat gives it: a check after each batch of lines (as it
 * was) let the file grow past its bound by a whole batch, up to
 * log.buffer_bytes, seven times a 64 KiB bound in a burst.
 */
#include "daemon/logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/memory.h"

static char *logfile_path;
static char *logfile_old_path; /* path.1 */
static uint64_t logfile_max;
static uint64_t logfile_dropped;
static uint64_t logfile_rotations;
static bool logfile_failed; /* a rotation failed; said once */

/* Opens path for appending (made 0600 when missing; fresh: it must not
 * exist) as fd 2, if it is safe to append to (logfile.h). Returns 0, or
 * -1 with err naming the path and why. */
static int
logfile_open_fd2(const char *path, bool fresh, VigilError *err)
{
  /* O_NONBLOCK: a FIFO must not hold the start up waiting for a reader
   * (it is refused below); taken off again for the file's writes. */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
                          (fresh ? O_EXCL : 0), 0600);
  if (fd < 0 && errno == ELOOP)
    return error_set(err, kErrInvalidParams, "--log-file: %s is a symbolic link: give the file "
                     "itself (vigild never follows a link to write its log)", path);
  if (fd < 0 && (errno == ENXIO || errno == ENODEV))
    return error_set(err, kErrInvalidParams, "--log-file: %s is not a regular file", path);
  if (fd < 0)
    return error_set(err, kErrInternal, "--log-file: cannot open %s: %s", path,
                     strerror(errno));
  struct stat st;
  uid_t euid = geteuid();
  if (fstat(fd, &st) != 0)
    error_set(err, kErrInternal, "--log-file: %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    error_set(err, kErrInvalidParams, "--log-file: %s is not a regular file", path);
  else if (st.st_uid != euid)
    error_set(err, kErrInvalidParams,
              "--log-file: %s belongs to uid %u (mode %04o), not to uid %u that vigild runs "
              "as: its owner could read, forge or erase the engine's log. Give a file of your "
              "own (or a path where vigild makes one, 0600)",
              path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)euid);
  else if ((st.st_mode & 022) != 0)
    error_set(err, kErrInvalidParams,
              "--log-file: %s is writable by %s (mode %04o): anyone there could forge or "
              "erase the engine's log lines. vigild never changes an existing file's mode: "
              "make it not writable by group and others (chmod go-w) or give another path",
              path, (st.st_mode & 002) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
  else if (st.st_nlink != 1)
    error_set(err, kErrInvalidParams,
              "--log-file: %s has %lu hard links: the log would grow the file under its other "
              "names too. Give a file of its own",
              path, (unsigned long)st.st_nlink);
  if (err->set) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (fd != 2) {
    if (dup2(fd, 2) < 0) {
      int saved = errno;
      close(fd);
      return error_set(err, kErrInternal, "--log-file: %s: dup2: %s", path, strerror(saved));
    }
    close(fd);
  }
  return 0;
}

/* Before each log line of len bytes: rotates first when the line would
 * take the file past its bound (an empty file takes any line). */
static void
logfile_before_line(size_t len)
{
  struct stat st;
  if (fstat(2, &st) != 0 || st.st_size == 0 || (uint64_t)st.st_size + len <= logfile_max)
    return;
  struct stat old;
  uint64_t dropped = stat(logfile_old_path, &old) == 0 ? (uint64_t)old.st_size : 0;
  VigilError err = VIGIL_ERROR_INIT;
  if (rename(logfile_path, logfile_old_path) != 0)
    error_set(&err, kErrInternal, "rename to %s: %s", logfile_old_path, strerror(errno));
  else
    logfile_open_fd2(logfile_path, true, &err);
  if (err.set) {
    if (!logfile_failed) {
      logfile_failed = true;
      char line[1024];
      int n = snprintf(line, sizeof line, "vigild: cannot rotate the log file %s: %s; it grows "
                       "past its bound (%" PRIu64 " bytes)\n", logfile_path,
                       err.msg + strlen(error_name(err.code)) + 2, logfile_max);
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
  if (logfile_open_fd2(path, false, err) != 0)
    return -1;
  size_t len = strlen(path);
  logfile_path = xstrdup(path);
  logfile_old_path = xmalloc(len + 3);
  memcpy(logfile_old_path, path, len);
  memcpy(logfile_old_path + len, ".1", 3);
  logfile_max = max_bytes;
  log_set_before_line(logfile_before_line);
  return 0;
}
