/*
 * The engine's pidfile beside its socket (pidfile.h): its name, written
 * once the engine listens through a temporary name, replaced only when
 * what is there is a regular file of this user, and removed at exit only
 * while it still names this engine.
 */
#include "base/pidfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* See pidfile.h. */
int
pidfile_path(const char *socket_path, char *out, size_t n)
{
  size_t len = strlen(socket_path);
  static const char suffix[] = ".sock";
  size_t keep = len;
  /* "vigil.sock" -> "vigil.pid"; a bare ".sock" file name keeps its name. */
  if (len >= sizeof suffix && strcmp(socket_path + len - (sizeof suffix - 1), suffix) == 0 &&
      socket_path[len - sizeof suffix] != '/')
    keep = len - (sizeof suffix - 1);
  int w = snprintf(out, n, "%.*s.pid", (int)keep, socket_path);
  if (w < 0 || (size_t)w >= n || (size_t)w >= PIDFILE_PATH_MAX) {
    if (n > 0)
      out[0] = '\0';
    return -1;
  }
  return 0;
}

/* What is at path, when it is not a file this engine may replace: a
 * phrase for the error, else NULL (a regular file of ours, or nothing). */
static const char *
pidfile_foreign(const char *path, struct stat *st)
{
  if (lstat(path, st) != 0)
    return NULL;
  if (S_ISLNK(st->st_mode))
    return "a symbolic link";
  if (!S_ISREG(st->st_mode))
    return "not a regular file";
  if (st->st_uid != geteuid())
    return "another user's file";
  return NULL;
}

/* See pidfile.h. */
pid_t
pidfile_read(const char *path)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return 0;
  struct stat st;
  char buf[32];
  ssize_t got = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
    got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0)
    return 0;
  buf[got] = '\0';
  char *end = NULL;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno != 0 || end == buf || (*end != '\n' && *end != '\0') || v <= 0 || v > 0x3fffffff)
    return 0;
  return (pid_t)v;
}

/* See pidfile.h. */
int
pidfile_write(const char *path, pid_t pid, pid_t *replaced, VigilError *err)
{
  *replaced = 0;
  struct stat st;
  const char *foreign = pidfile_foreign(path, &st);
  if (foreign != NULL)
    return error_set(err, kErrInternal, "pidfile: %s is %s, not a pidfile this engine wrote; "
                     "it is left as it is and the engine runs without one", path, foreign);
  *replaced = pidfile_read(path);
  char tmp[PIDFILE_PATH_MAX + 32];
  int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)pid);
  if (n < 0 || (size_t)n >= sizeof tmp)
    return error_set(err, kErrInternal, "pidfile: %s: the path is too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return error_set(err, kErrInternal, "pidfile: cannot create %s: %s", tmp, strerror(errno));
  char text[32];
  int len = snprintf(text, sizeof text, "%ld\n", (long)pid);
  bool ok = write(fd, text, (size_t)len) == len;
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  /* rename replaces a stale file (never following a link: there is none,
   * checked above, and rename would replace the link itself anyway). */
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    unlink(tmp);
    return error_set(err, kErrInternal, "pidfile: cannot write %s: %s", path, strerror(saved));
  }
  return 0;
}

/* See pidfile.h. */
void
pidfile_remove(const char *path, pid_t pid)
{
  if (pidfile_read(path) == pid)
    unlink(path);
}
