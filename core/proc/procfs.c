/*
 * Reading the kernel's small text files (see procfs.h).
 *
 * Files under /proc and a cgroup's directory are generated at each read, and
 * a short read means nothing but "that is all for now", so every read loops
 * until EOF or the caller's bound. Nothing here allocates but PidList.
 */
#include "proc/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/memory.h"

void
pidlist_add(PidList *l, pid_t pid)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 16;
    l->pids = xrealloc(l->pids, l->cap * sizeof *l->pids);
  }
  l->pids[l->n++] = pid;
}

bool
pidlist_has(const PidList *l, pid_t pid)
{
  for (size_t i = 0; i < l->n; i++) {
    if (l->pids[i] == pid)
      return true;
  }
  return false;
}

void
pidlist_free(PidList *l)
{
  free(l->pids);
  memset(l, 0, sizeof *l);
}

/* See procfs.h. */
ssize_t
procfs_read(const char *path, char *buf, size_t cap)
{
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t len = 0;
  while (len < cap - 1) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

/* See procfs.h. */
ssize_t
procfs_read_pid(pid_t pid, const char *name, char *buf, size_t cap)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  return procfs_read(path, buf, cap);
}

/* See procfs.h. A fork bomb's group may list thousands of pids, so the file
 * is parsed chunk by chunk, carrying a number cut at a chunk's end; a
 * number too large to be a pid is skipped. */
bool
procfs_read_pids(const char *path, PidList *out)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[4096];
  long cur = 0;
  bool in_num = false;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        cur = cur * 10 + (buf[i] - '0');
        in_num = cur < (1L << 30);
      } else {
        if (in_num && cur > 0)
          pidlist_add(out, (pid_t)cur);
        cur = 0;
        in_num = false;
      }
    }
  }
  if (in_num && cur > 0)
    pidlist_add(out, (pid_t)cur);
  close(fd);
  return true;
}

/* See procfs.h. Only at the start of a line, and only followed by a blank,
 * so "oom_kill" does not find "oom_kill_disable". */
uint64_t
procfs_value(const char *text, const char *key)
{
  size_t n = strlen(key);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
    if (strncmp(s, key, n) == 0 && (s[n] == ' ' || s[n] == '\t'))
      return strtoull(s + n + 1, NULL, 10);
  }
  return 0;
}
