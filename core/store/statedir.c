/*
 * The state directory (see statedir.h). Everything is checked on the open
 * descriptor, not on the path a second time, so a directory swapped for a
 * link between the check and the use is not followed: the directory is
 * opened O_NOFOLLOW and every file in it is reached with openat from it.
 *
 * The rules are stricter than for the socket's directory (rpc/server.c),
 * which may be readable by others: the state holds the output of every
 * monitor and the text of every notification, so no one but the engine's
 * user may list or read it.
 */
#include "store/statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/epoch.h"
#include "base/log.h"
#include "base/memory.h"

/* Opens path as a directory without following a link, explaining why not. */
static int
statedir_open_dir(const char *path, VigilError *err)
{
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0)
    return fd;
  struct stat st;
  if ((errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    return error_set(err, kErrInternal,
                     "state.dir: %s is a symbolic link; give the real directory (owned by "
                     "uid %u, mode 0700)",
                     path, (unsigned)geteuid());
  if (errno == ENOTDIR)
    return error_set(err, kErrInternal, "state.dir: %s exists and is not a directory", path);
  return error_set(err, kErrInternal, "state.dir: cannot open %s: %s", path, strerror(errno));
}

/* Whether the opened directory is the engine user's and private to it. */
static int
statedir_check_dir(int fd, const char *path, VigilError *err)
{
  struct stat st;
  uid_t euid = geteuid();
  if (fstat(fd, &st) != 0)
    return error_set(err, kErrInternal, "state.dir: %s: %s", path, strerror(errno));
  if (st.st_uid != euid)
    return error_set(err, kErrInternal,
                     "state.dir: %s belongs to uid %u (mode %04o), not to uid %u that vigild "
                     "runs as: its owner could read and change the engine's state. Use a "
                     "private directory of your own (mode 0700)",
                     path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)euid);
  if ((st.st_mode & 077) != 0)
    return error_set(err, kErrInternal,
                     "state.dir: %s grants access to %s (mode %04o): it will hold every "
                     "monitor's output, so it must be private. vigild never changes an "
                     "existing directory's mode: make it 0700 or give another",
                     path, (st.st_mode & 007) ? "others" : "its group",
                     (unsigned)(st.st_mode & 07777));
  return 0;
}

/* The pid written in an existing lock file, or 0 when it holds none. */
static long
statedir_lock_holder(int fd)
{
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  long pid = strtol(buf, NULL, 10);
  return pid > 0 ? pid : 0;
}

/* Opens, checks and takes the lock file; returns its descriptor. */
static int
statedir_lock(int dir_fd, const char *path, VigilError *err)
{
  int fd = openat(dir_fd, STATEDIR_LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return error_set(err, kErrInternal, "state.dir: cannot open %s/%s: %s", path,
                     STATEDIR_LOCK_NAME, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      st.st_nlink != 1 || (st.st_mode & 077) != 0) {
    close(fd);
    return error_set(err, kErrInternal,
                     "state.dir: %s/%s is not a private regular file of uid %u (a link, or "
                     "mode or owner changed): remove it or give another directory",
                     path, STATEDIR_LOCK_NAME, (unsigned)geteuid());
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    long holder = statedir_lock_holder(fd);
    close(fd);
    if (e == EWOULDBLOCK && holder > 0)
      return error_set(err, kErrInternal,
                       "state.dir: %s is in use by another engine (pid %ld); give each engine "
                       "its own", path, holder);
    if (e == EWOULDBLOCK)
      return error_set(err, kErrInternal, "state.dir: %s is in use by another engine", path);
    return error_set(err, kErrInternal, "state.dir: cannot lock %s/%s: %s", path,
                     STATEDIR_LOCK_NAME, strerror(e));
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
    LOG_WARN("statedir", "cannot write the pid into %s/%s: %s", path, STATEDIR_LOCK_NAME,
             strerror(errno));
  return fd;
}

/* Opens (making it 0700 when missing) the subdirectory `name` of the state
 * directory, reached with mkdirat and openat from dir_fd so that the path
 * is not walked again, and checks it exactly as the directory itself: ours,
 * not a link, nothing for group or others; an existing one is never
 * chmod'ed. *made says whether this call made it. Returns its descriptor. */
static int
statedir_open_sub(int dir_fd, const char *path, const char *name, bool *made, VigilError *err)
{
  size_t len = strlen(path) + 1 + strlen(name) + 1;
  char *sub = xmalloc(len);
  snprintf(sub, len, "%s/%s", path, name);
  *made = mkdirat(dir_fd, name, 0700) == 0;
  int fd = -1;
  if (!*made && errno != EEXIST) {
    error_set(err, kErrInternal, "state.dir: cannot make %s: %s", sub, strerror(errno));
    goto done;
  }
  fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    struct stat st;
    bool is_link = fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    if (is_link)
      error_set(err, kErrInternal,
                "state.dir: %s is a symbolic link; it must be a directory of uid %u with mode "
                "0700: remove it or give another state directory",
                sub, (unsigned)geteuid());
    else if (e == ENOTDIR)
      error_set(err, kErrInternal, "state.dir: %s exists and is not a directory", sub);
    else
      error_set(err, kErrInternal, "state.dir: cannot open %s: %s", sub, strerror(e));
    goto done;
  }
  /* As for the directory itself: the umask may have taken bits from a
   * directory just made, never added any. */
  if (*made && fchmod(fd, 0700) != 0)
    LOG_WARN("statedir", "cannot set mode 0700 on %s: %s", sub, strerror(errno));
  if (statedir_check_dir(fd, sub, err) != 0) {
    close(fd);
    fd = -1;
  }
done:
  if (fd < 0 && *made) {
    unlinkat(dir_fd, name, AT_REMOVEDIR);
    *made = false;
  }
  free(sub);
  return fd;
}

/* Removes, each only while empty, what an open made in a directory it made
 * itself: the monitors and sessions directories, the epoch, the lock file,
 * then the directory. */
static void
statedir_unmake(int dir_fd, const char *path)
{
  unlinkat(dir_fd, STATEDIR_MONITORS_NAME, AT_REMOVEDIR);
  unlinkat(dir_fd, STATEDIR_SESSIONS_NAME, AT_REMOVEDIR);
  unlinkat(dir_fd, EPOCH_FILE_NAME, 0);
  unlinkat(dir_fd, STATEDIR_LOCK_NAME, 0);
  rmdir(path);
}

/* See statedir.h. */
int
statedir_open(StateDir *sd, const char *path, VigilError *err)
{
  memset(sd, 0, sizeof *sd);
  sd->dir_fd = sd->lock_fd = sd->monitors_fd = sd->sessions_fd = -1;
  if (path == NULL || path[0] == '\0')
    return error_set(err, kErrInternal, "state.dir: empty path");
  bool made = mkdir(path, 0700) == 0;
  if (!made && errno != EEXIST)
    return error_set(err, kErrInternal, "state.dir: cannot make %s: %s", path, strerror(errno));
  int lock_fd = -1, monitors_fd = -1, sessions_fd = -1;
  bool monitors_made = false, sessions_made = false;
  int dir_fd = statedir_open_dir(path, err);
  if (dir_fd < 0)
    goto fail;
  /* mkdir's mode went through the umask: 0700 is asked for, and a umask
   * can only take bits away, so a directory we made is at most 0700; it is
   * made exactly that so that the engine's own files can be reached. */
  if (made && fchmod(dir_fd, 0700) != 0)
    LOG_WARN("statedir", "cannot set mode 0700 on %s: %s", path, strerror(errno));
  if (statedir_check_dir(dir_fd, path, err) != 0)
    goto fail;
  lock_fd = statedir_lock(dir_fd, path, err);
  if (lock_fd < 0)
    goto fail;
  /* After the lock: what is in the directory is the holder's, and a second
   * engine must be told whose it is, not what it thinks of the contents. */
  monitors_fd = statedir_open_sub(dir_fd, path, STATEDIR_MONITORS_NAME, &monitors_made, err);
  if (monitors_fd < 0)
    goto fail;
  sessions_fd = statedir_open_sub(dir_fd, path, STATEDIR_SESSIONS_NAME, &sessions_made, err);
  if (sessions_fd < 0)
    goto fail;
  if (made)
    LOG_INFO("statedir", "made the state directory %s (mode 0700)", path);
  else if (monitors_made)
    LOG_INFO("statedir", "made %s/%s (mode 0700)", path, STATEDIR_MONITORS_NAME);
  if (!made && sessions_made)
    LOG_INFO("statedir", "made %s/%s (mode 0700)", path, STATEDIR_SESSIONS_NAME);
  sd->path = xstrdup(path);
  sd->dir_fd = dir_fd;
  sd->lock_fd = lock_fd;
  sd->monitors_fd = monitors_fd;
  sd->sessions_fd = sessions_fd;
  sd->made = made;
  return 0;
fail:
  /* Undo only what this open made: in a directory it made, all of it, but
   * only while holding the lock. Without it, the lock file (and what is
   * beside it) may be another engine's that raced this one to a directory
   * this one had just made: then only an empty directory is removed. */
  if (made && lock_fd >= 0)
    statedir_unmake(dir_fd, path);
  else if (made)
    rmdir(path);
  if (monitors_fd >= 0)
    close(monitors_fd);
  if (lock_fd >= 0)
    close(lock_fd);
  if (dir_fd >= 0)
    close(dir_fd);
  return -1;
}

/* See statedir.h. The pid is left in the lock file: it names the last
 * holder, and a lock file is only believed while it is locked. */
void
statedir_close(StateDir *sd)
{
  if (sd->monitors_fd >= 0)
    close(sd->monitors_fd);
  if (sd->sessions_fd >= 0)
    close(sd->sessions_fd);
  if (sd->lock_fd >= 0)
    close(sd->lock_fd); /* closing the last descriptor releases the flock */
  if (sd->dir_fd >= 0)
    close(sd->dir_fd);
  free(sd->path);
  memset(sd, 0, sizeof *sd);
  sd->dir_fd = sd->lock_fd = sd->monitors_fd = sd->sessions_fd = -1;
}

/* See statedir.h. The removal happens while the lock is still held, so no
 * other engine can have begun to use the directory meanwhile. */
void
statedir_abandon(StateDir *sd)
{
  if (sd->made && sd->dir_fd >= 0)
    statedir_unmake(sd->dir_fd, sd->path);
  statedir_close(sd);
}
