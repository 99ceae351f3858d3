/*
 * Reading and replacing the files `vigil setup` edits (see setup_file.h).
 */
#include "cli/setup_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memory.h"

/* Whether a directory's owner and mode let this user trust what is in it:
 * its own or root's, and, if group or others may write it, sticky. Sets
 * err naming it otherwise. */
static bool
setup_file_dir_ok(const char *dir, const struct stat *st, StrBuf *err)
{
  uid_t me = geteuid();
  if (st->st_uid != me && st->st_uid != 0) {
    strbuf_printf(err, "%s is owned by uid %u, not by you (uid %u) or root: setup does not "
                       "write through another user's directory",
                  dir, (unsigned)st->st_uid, (unsigned)me);
    return false;
  }
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
    strbuf_printf(err, "%s may be written by %s (mode %04o): another user could swap the file "
                       "setup edits there",
                  dir, (st->st_mode & S_IWOTH) ? "everyone" : "its group",
                  (unsigned)(st->st_mode & 07777));
    return false;
  }
  return true;
}

/* Checks dir (a real path) and every directory above it. */
static bool
setup_file_chain_ok(const char *dir, StrBuf *err)
{
  char cur[PATH_MAX];
  snprintf(cur, sizeof cur, "%s", dir);
  for (;;) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISDIR(st.st_mode)) {
      strbuf_printf(err, "%s: not a directory", cur);
      return false;
    }
    if (!setup_file_dir_ok(cur, &st, err))
      return false;
    if (strcmp(cur, "/") == 0)
      return true;
    char *slash = strrchr(cur, '/');
    if (slash == cur)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}

/* The real path of path, which need not exist: its nearest existing
 * ancestor resolved, and the rest appended. Returns false when nothing of
 * it resolves. */
static bool
setup_file_resolve(const char *path, char *real)
{
  char head[PATH_MAX];
  snprintf(head, sizeof head, "%s", path);
  const char *tail = "";
  char tailbuf[PATH_MAX] = "";
  for (;;) {
    if (realpath(head, real) != NULL)
      break;
    if (errno != ENOENT)
      return false;
    char *slash = strrchr(head, '/');
    if (slash == NULL || slash == head)
      return false;
    char rest[PATH_MAX];
    snprintf(rest, sizeof rest, "%s%s%s", slash + 1, tail[0] ? "/" : "", tail);
    snprintf(tailbuf, sizeof tailbuf, "%s", rest);
    tail = tailbuf;
    *slash = '\0';
  }
  if (tail[0]) {
    size_t n = strlen(real);
    if (n + 1 + strlen(tail) >= PATH_MAX)
      return false;
    snprintf(real + n, PATH_MAX - n, "%s%s", strcmp(real, "/") == 0 ? "" : "/", tail);
  }
  return true;
}

/* Reads the regular file at real (already checked) into f. */
static int
setup_file_slurp(SetupFile *f, StrBuf *err)
{
  int fd = open(f->real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    strbuf_printf(err, "%s: cannot read it: %s", f->path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    strbuf_printf(err, "%s: not a regular file", f->path);
    close(fd);
    return -1;
  }
  if (st.st_uid != geteuid()) {
    strbuf_printf(err, "%s is owned by uid %u, not by you (uid %u): setup edits only your own "
                       "files",
                  f->path, (unsigned)st.st_uid, (unsigned)geteuid());
    close(fd);
    return -1;
  }
  if ((unsigned long long)st.st_size > SETUP_FILE_MAX) {
    strbuf_printf(err, "%s is %llu bytes, more than setup reads (%u)", f->path,
                  (unsigned long long)st.st_size, SETUP_FILE_MAX);
    close(fd);
    return -1;
  }
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *data = xmalloc(cap + 1);
  for (;;) {
    ssize_t n = read(fd, data + len, cap - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      strbuf_printf(err, "%s: cannot read it: %s", f->path, strerror(errno));
      free(data);
      close(fd);
      return -1;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (len == cap) { /* it grew while being read */
      if (cap > SETUP_FILE_MAX) {
        strbuf_printf(err, "%s grew past %u bytes while being read", f->path, SETUP_FILE_MAX);
        free(data);
        close(fd);
        return -1;
      }
      cap *= 2;
      data = xrealloc(data, cap + 1);
    }
  }
  close(fd);
  data[len] = '\0';
  f->data = data;
  f->len = len;
  f->mode = st.st_mode & 07777;
  f->exists = true;
  return 0;
}

int
setup_file_read(SetupFile *f, const char *path, StrBuf *err)
{
  memset(f, 0, sizeof *f);
  if (path[0] != '/' || strlen(path) >= sizeof f->path) {
    strbuf_printf(err, "%s: not an absolute path that fits", path);
    return -1;
  }
  snprintf(f->path, sizeof f->path, "%s", path);
  struct stat st;
  f->link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
  if (!setup_file_resolve(path, f->real)) {
    strbuf_printf(err, "%s: cannot find where it is: %s", path, strerror(errno));
    return -1;
  }
  /* The directory the target lives in, or its nearest existing ancestor
   * when it is still to be made. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", f->real);
  do {
    char *slash = strrchr(dir, '/');
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
  } while (strcmp(dir, "/") != 0 && lstat(dir, &st) != 0);
  if (!setup_file_chain_ok(dir, err)) {
    StrBuf why = STRBUF_INIT;
    strbuf_printf(&why, "%s: %s", path, strbuf_cstr(err));
    strbuf_reset(err);
    strbuf_puts(err, strbuf_cstr(&why));
    strbuf_free(&why);
    return -1;
  }
  if (lstat(f->real, &st) != 0) {
    if (errno == ENOENT && !f->link)
      return 0;
    if (errno == ENOENT)
      strbuf_printf(err, "%s is a link to %s, which does not exist: make it, or remove the "
                         "link",
                    path, f->real);
    else
      strbuf_printf(err, "%s: %s", path, strerror(errno));
    return -1;
  }
  return setup_file_slurp(f, err);
}

/* Makes the missing directories above real (dir_mode less the umask). */
static int
setup_file_mkdirs(const char *real, mode_t dir_mode, StrBuf *err)
{
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", real);
  char *last = strrchr(dir, '/');
  if (last == NULL || last == dir)
    return 0;
  *last = '\0';
  for (char *p = dir + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(dir, dir_mode) != 0 && errno != EEXIST) {
      strbuf_printf(err, "cannot make the directory %s: %s", dir, strerror(errno));
      return -1;
    }
    *p = saved;
    if (saved == '\0')
      return 0;
  }
}

/* Whether the target still holds what was read (or is still absent). */
static int
setup_file_unchanged(const SetupFile *f, StrBuf *err)
{
  SetupFile now;
  StrBuf why = STRBUF_INIT;
  int rc = setup_file_read(&now, f->path, &why);
  bool same = rc == 0 && now.exists == f->exists &&
              (!now.exists || (now.len == f->len && memcmp(now.data, f->data, f->len) == 0));
  if (rc != 0)
    strbuf_printf(err, "%s", strbuf_cstr(&why));
  else if (!same)
    strbuf_printf(err, "%s changed while vigil setup ran (its harness may have rewritten it): "
                       "nothing was written to it; run setup again",
                  f->path);
  setup_file_free(&now);
  strbuf_free(&why);
  return same ? 0 : -1;
}

int
setup_file_write(const SetupFile *f, const char *data, size_t len, mode_t new_mode,
                 mode_t dir_mode, StrBuf *err)
{
  if (setup_file_mkdirs(f->real, dir_mode, err) != 0)
    return -1;
  char tmp[PATH_MAX + 32];
  const char *base = strrchr(f->real, '/') + 1;
  snprintf(tmp, sizeof tmp, "%.*s.%s.vigil-setup.XXXXXX", (int)(base - f->real), f->real, base);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    strbuf_printf(err, "%s: cannot make a temporary file beside it: %s", f->path,
                  strerror(errno));
    return -1;
  }
  mode_t mode = f->exists ? f->mode : new_mode;
  if (!f->exists) {
    mode_t mask = umask(0);
    umask(mask);
    mode &= ~mask;
  }
  size_t off = 0;
  bool ok = true;
  while (ok && off < len) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok)
      off += (size_t)n;
  }
  ok = ok && fchmod(fd, mode) == 0 && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0)
    ok = false;
  if (!ok) {
    strbuf_printf(err, "%s: cannot write it: %s", f->path, strerror(saved));
    unlink(tmp);
    return -1;
  }
  if (setup_file_unchanged(f, err) != 0) {
    unlink(tmp);
    return -1;
  }
  if (rename(tmp, f->real) != 0) {
    strbuf_printf(err, "%s: cannot replace it: %s", f->path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

int
setup_file_remove(const SetupFile *f, StrBuf *err)
{
  if (!f->exists || f->link) {
    strbuf_printf(err, "%s: %s", f->path, f->link ? "a link is not removed" : "not there");
    return -1;
  }
  if (setup_file_unchanged(f, err) != 0)
    return -1;
  if (unlink(f->real) != 0) {
    strbuf_printf(err, "%s: cannot remove it: %s", f->path, strerror(errno));
    return -1;
  }
  return 0;
}

void
setup_file_free(SetupFile *f)
{
  free(f->data);
  f->data = NULL;
}

char *
setup_splice(const char *text, size_t len, size_t a, size_t b, const char *ins, size_t inslen,
             size_t *out_len)
{
  size_t n = len - (b - a) + inslen;
  char *out = xmalloc(n + 1);
  memcpy(out, text, a);
  memcpy(out + a, ins, inslen);
  memcpy(out + a + inslen, text + b, len - b);
  out[n] = '\0';
  *out_len = n;
  return out;
}
