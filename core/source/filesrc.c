/*
 * A file followed as `tail -F` follows it (see filesrc.h): the judging of
 * a path against the workspace roots, the open that cannot be moved by a
 * symlink, and the poll that each inotify event of the path's directory
 * runs (read what was appended, then look at the path again: truncated,
 * rotated, deleted, reappeared).
 */
#include "source/filesrc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

struct FileSource {
  uv_loop_t *loop;
  char *path;                     /* as given */
  char *real;                     /* the real path of the file open (fd) */
  char **roots;                   /* copies, NULL-terminated */
  size_t nroots;
  int fd;                         /* -1: none (deleted, waiting) */
  dev_t dev;
  ino_t ino;
  uint64_t offset;
  bool missing;                   /* the path was found gone; told once */
  bool renamed;                   /* the path is gone but the file open has a name
                                     still (a rotation under way): every event of
                                     the directory may be a write to it */
  bool failed;                    /* a reopen was refused: nothing more */
  bool closing;
  int open_handles;
  uv_fs_event_t watch;            /* the directory of the path as given */
  const char *base;               /* the path's last component (in path) */
  uv_fs_event_t watch_real;       /* the directory of the file open, when the path
                                     is a link into another one */
  char *real_dir;                 /* what watch_real watches; NULL: nothing */
  uv_timer_t more;                /* the next turn's read, when a turn's bound was hit */
  FileSourceCallbacks cb;
  void *data;
  FileSourceCounters counters;
  char buf[FILESRC_READ_BYTES];
};

/* The caller's bytes in a message: escaped and quoted. */
static void
filesrc_quote(StrBuf *out, const char *s)
{
  strbuf_putc(out, '"');
  textfmt_escape(out, s, strlen(s));
  strbuf_putc(out, '"');
}

/* Whether real lies under one of the roots. */
static bool
filesrc_under_roots(const char *real, const char *const *roots, size_t nroots)
{
  for (size_t i = 0; i < nroots; i++) {
    size_t n = strlen(roots[i]);
    if (strncmp(real, roots[i], n) == 0 &&
        (real[n] == '/' || real[n] == '\0' || strcmp(roots[i], "/") == 0))
      return true;
  }
  return false;
}

/* What a non-regular file is, in words, or NULL for a regular file. */
static const char *
filesrc_kind_refused(mode_t mode)
{
  if (S_ISREG(mode))
    return NULL;
  if (S_ISDIR(mode))
    return "is a directory";
  if (S_ISFIFO(mode))
    return "is a FIFO (a named pipe): only regular files are followed";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "is a device: only regular files are followed";
  if (S_ISSOCK(mode))
    return "is a socket: only regular files are followed";
  return "is not a regular file";
}

/* Sets err: code, "source.file: "PATH" (REAL) <words>". */
static int
filesrc_refuse(VigilError *err, VigilErrorCode code, const char *path, const char *real,
               const char *words)
{
  StrBuf sb = STRBUF_INIT;
  filesrc_quote(&sb, path);
  if (real != NULL && strcmp(real, path) != 0) {
    strbuf_puts(&sb, " (");
    filesrc_quote(&sb, real);
    strbuf_puts(&sb, ")");
  }
  error_set(err, code, "source.file: %s %s", strbuf_cstr(&sb), words);
  strbuf_free(&sb);
  return -1;
}

/* Judges path and opens it: *fd, *real (owned) and *st on success. */
static int
filesrc_open_judged(const char *path, const char *const *roots, size_t nroots, int *fd,
                    char **real, struct stat *st, VigilError *err)
{
  *fd = -1;
  *real = NULL;
  if (path[0] != '/')
    return filesrc_refuse(err, kErrInvalidParams, path, NULL, "must be an absolute path");
  if (nroots == 0)
    return filesrc_refuse(err, kErrDenied, path, NULL,
                          "cannot be followed: file sources need monitor.workspace_roots, and "
                          "none is set");
  char *r = realpath(path, NULL);
  if (r == NULL) {
    if (errno == ENOENT || errno == ENOTDIR)
      return filesrc_refuse(err, kErrInvalidParams, path, NULL, "does not exist");
    char words[160];
    snprintf(words, sizeof words, "cannot be resolved: %s", strerror(errno));
    return filesrc_refuse(err, kErrInvalidParams, path, NULL, words);
  }
  int rc = -1;
  struct stat lst;
  const char *kind;
  if (!filesrc_under_roots(r, roots, nroots)) {
    filesrc_refuse(err, kErrDenied, path, r, "is outside monitor.workspace_roots");
  } else if (lstat(r, &lst) != 0) {
    filesrc_refuse(err, kErrInvalidParams, path, r, "does not exist");
  } else if ((kind = filesrc_kind_refused(lst.st_mode)) != NULL) {
    /* Before the open: opening a FIFO or a device can block or act. */
    filesrc_refuse(err, kErrInvalidParams, path, r, kind);
  } else {
    int f = open(r, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    char fdpath[64], seen[PATH_MAX];
    ssize_t n = -1;
    if (f < 0) {
      char words[160];
      snprintf(words, sizeof words, errno == ELOOP
                                        ? "changed into a symlink while it was checked"
                                        : "cannot be read: %s", strerror(errno));
      filesrc_refuse(err, errno == ELOOP ? kErrDenied : kErrInvalidParams, path, r, words);
    } else if (fstat(f, st) != 0 || (kind = filesrc_kind_refused(st->st_mode)) != NULL) {
      filesrc_refuse(err, kErrInvalidParams, path, r, kind ? kind : "cannot be examined");
    } else if ((snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", f),
                n = readlink(fdpath, seen, sizeof seen - 1)) < 0 ||
               (seen[n] = '\0', !filesrc_under_roots(seen, roots, nroots))) {
      /* What was opened is not what was checked: a directory on the way
       * was swapped between the two. */
      filesrc_refuse(err, kErrDenied, path, n >= 0 ? seen : r,
                     "is outside monitor.workspace_roots (it changed while it was checked)");
    } else {
      *fd = f;
      f = -1;
      *real = xstrdup(seen);
      rc = 0;
    }
    if (f >= 0)
      close(f);
  }
  free(r);
  return rc;
}

/* See filesrc.h. */
int
filesrc_check(const FileSourceOptions *opts, VigilError *err)
{
  int fd;
  char *real;
  struct stat st;
  if (filesrc_open_judged(opts->path, opts->roots, opts->nroots, &fd, &real, &st, err) != 0)
    return -1;
  close(fd);
  free(real);
  return 0;
}

static void filesrc_poll(FileSource *fs);

static void
filesrc_more_cb(uv_timer_t *t)
{
  filesrc_poll(t->data);
}

/* Whether name (an event's, in a watched directory) is the file's: the
 * path's last component or, in the real file's directory, the real one's. */
static bool
filesrc_names_file(const char *name, const char *file)
{
  const char *slash = strrchr(file, '/');
  return strcmp(name, slash != NULL ? slash + 1 : file) == 0;
}

static void
filesrc_watch_cb(uv_fs_event_t *h, const char *filename, int events, int status)
{
  (void)events;
  (void)status;
  FileSource *fs = h->data;
  /* A write to the file, a rename, a creation or a deletion at its path.
   * The directory's other files (a busy log directory) wake nothing; while
   * a rotation is under way the file open may have any name there. */
  if (filename != NULL && !fs->renamed && strcmp(filename, fs->base) != 0 &&
      !filesrc_names_file(filename, fs->real))
    return;
  filesrc_poll(fs);
}

/* An event in the directory of the file a link at the path points to. */
static void
filesrc_watch_real_cb(uv_fs_event_t *h, const char *filename, int events, int status)
{
  (void)events;
  (void)status;
  FileSource *fs = h->data;
  if (filename != NULL && !filesrc_names_file(filename, fs->real))
    return;
  filesrc_poll(fs);
}

/* The directory part of path, a new string ("/" for a file at the top). */
static char *
filesrc_dir_of(const char *path)
{
  char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash != NULL)
    *slash = '\0';
  return dir;
}

/* Watches the directory of the file open when it is not the path's (the
 * path is a link into another directory: a write there makes no event in
 * the path's), after an open and every reopen. A directory that cannot be
 * watched leaves the path's watch alone: rotations are still seen. */
static void
filesrc_watch_real(FileSource *fs)
{
  char *dir = filesrc_dir_of(fs->path);
  char *real_dir = filesrc_dir_of(fs->real);
  bool same = strcmp(dir, real_dir) == 0;
  free(dir);
  if (fs->real_dir != NULL && !same && strcmp(fs->real_dir, real_dir) == 0) {
    free(real_dir);
    return; /* watched already */
  }
  uv_fs_event_stop(&fs->watch_real);
  free(fs->real_dir);
  fs->real_dir = NULL;
  if (same || uv_fs_event_start(&fs->watch_real, filesrc_watch_real_cb, real_dir, 0) != 0) {
    free(real_dir);
    return;
  }
  fs->real_dir = real_dir;
}

/* Tells a note, in words. */
static void
filesrc_note(FileSource *fs, const char *fmt, const char *a)
{
  StrBuf sb = STRBUF_INIT;
  strbuf_printf(&sb, fmt, a);
  if (fs->cb.on_note)
    fs->cb.on_note(fs->data, strbuf_cstr(&sb));
  strbuf_free(&sb);
}

/* Reads what the open file holds past the offset, at most a turn's bound.
 * Returns false when the bound was hit (the next turn reads on). */
static bool
filesrc_read(FileSource *fs)
{
  struct stat st;
  if (fstat(fs->fd, &st) == 0 && (uint64_t)st.st_size < fs->offset) {
    fs->offset = 0;
    fs->counters.truncations++;
    filesrc_note(fs, "%s was truncated: reading it again from its start", fs->path);
    if (fs->closing)
      return true;
  }
  size_t turn = 0;
  while (turn < FILESRC_TURN_BYTES) {
    ssize_t n = pread(fs->fd, fs->buf, sizeof fs->buf, (off_t)fs->offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return true;
    fs->offset += (uint64_t)n;
    fs->counters.bytes += (uint64_t)n;
    turn += (size_t)n;
    fs->cb.on_output(fs->data, fs->buf, (size_t)n);
    if (fs->closing)
      return true;
  }
  uv_timer_start(&fs->more, filesrc_more_cb, 0, 0);
  return false;
}

/* A reopen was refused: nothing more is read. */
static void
filesrc_fail(FileSource *fs, const VigilError *err)
{
  fs->failed = true;
  fs->counters.reopen_refused++;
  if (fs->fd >= 0) {
    close(fs->fd);
    fs->fd = -1;
  }
  uv_fs_event_stop(&fs->watch);
  uv_fs_event_stop(&fs->watch_real);
  const char *msg = err->msg;
  const char *code = error_name(err->code);
  if (strncmp(msg, code, strlen(code)) == 0 && strncmp(msg + strlen(code), ": ", 2) == 0)
    msg += strlen(code) + 2;
  if (fs->cb.on_fail)
    fs->cb.on_fail(fs->data, msg);
}

/* One look: read the open file, then the path. */
static void
filesrc_poll(FileSource *fs)
{
  for (int round = 0; round < 2 && !fs->closing && !fs->failed; round++) {
    if (fs->fd >= 0 && !filesrc_read(fs))
      return;
    if (fs->closing)
      return;
    struct stat st;
    if (stat(fs->path, &st) != 0) {
      struct stat own;
      if (fs->fd >= 0 && fstat(fs->fd, &own) == 0 && own.st_nlink > 0) {
        /* Renamed away, not deleted: a rotation whose new file is not there
         * yet; the old one is read on until it is. */
        fs->renamed = true;
        return;
      }
      if (!fs->missing) {
        fs->missing = true;
        fs->counters.deletions++;
        if (fs->fd >= 0) {
          close(fs->fd);
          fs->fd = -1;
        }
        filesrc_note(fs, "%s was deleted: waiting for it to reappear", fs->path);
      }
      return;
    }
    if (fs->fd >= 0 && st.st_dev == fs->dev && st.st_ino == fs->ino)
      return; /* the same file: all read */
    /* Another file at the path (or the path back): judged again. */
    int fd;
    char *real;
    struct stat nst;
    VigilError err = VIGIL_ERROR_INIT;
    if (filesrc_open_judged(fs->path, (const char *const *)fs->roots, fs->nroots, &fd, &real,
                            &nst, &err) != 0) {
      filesrc_fail(fs, &err);
      return;
    }
    bool reappeared = fs->missing;
    if (fs->fd >= 0) {
      close(fs->fd);
      fs->counters.rotations++;
    }
    fs->fd = fd;
    free(fs->real);
    fs->real = real;
    fs->dev = nst.st_dev;
    fs->ino = nst.st_ino;
    fs->offset = 0;
    fs->missing = false;
    fs->renamed = false;
    filesrc_watch_real(fs);
    if (reappeared)
      filesrc_note(fs, "%s reappeared: following it from its start", fs->path);
  }
}

/* See filesrc.h. */
int
filesrc_open(uv_loop_t *loop, const FileSourceOptions *opts, const FileSourceCallbacks *cb,
             void *data, FileSource **out, VigilError *err)
{
  int fd;
  char *real;
  struct stat st;
  if (filesrc_open_judged(opts->path, opts->roots, opts->nroots, &fd, &real, &st, err) != 0)
    return -1;
  FileSource *fs = xcalloc(1, sizeof *fs);
  fs->loop = loop;
  fs->path = xstrdup(opts->path);
  fs->real = real;
  fs->roots = xcalloc(opts->nroots + 1, sizeof *fs->roots);
  for (size_t i = 0; i < opts->nroots; i++)
    fs->roots[i] = xstrdup(opts->roots[i]);
  fs->nroots = opts->nroots;
  fs->fd = fd;
  fs->dev = st.st_dev;
  fs->ino = st.st_ino;
  uint64_t size = (uint64_t)st.st_size;
  fs->offset = opts->from == kFileFromStart ? 0
               : opts->from == kFileFromOffset ? (opts->offset < size ? opts->offset : size)
                                               : size;
  fs->cb = *cb;
  fs->data = data;
  /* The directory of the path as given: a rotation or a deletion happens
   * there, and so does the write of a file that reappears. */
  char *dir = filesrc_dir_of(opts->path);
  const char *slash = strrchr(fs->path, '/');
  fs->base = slash != NULL ? slash + 1 : fs->path;
  uv_fs_event_init(loop, &fs->watch);
  fs->watch.data = fs;
  uv_fs_event_init(loop, &fs->watch_real);
  fs->watch_real.data = fs;
  uv_timer_init(loop, &fs->more);
  fs->more.data = fs;
  fs->open_handles = 3;
  int rc = uv_fs_event_start(&fs->watch, filesrc_watch_cb, dir, 0);
  if (rc != 0) {
    StrBuf sb = STRBUF_INIT;
    filesrc_quote(&sb, dir);
    error_set(err, kErrInternal, "source.file: its directory %s cannot be watched: %s",
              strbuf_cstr(&sb), uv_strerror(rc));
    strbuf_free(&sb);
    free(dir);
    filesrc_close(fs);
    return -1;
  }
  free(dir);
  filesrc_watch_real(fs);
  /* What is there already (from start or an offset) is read from the
   * loop, like everything after. */
  uv_timer_start(&fs->more, filesrc_more_cb, 0, 0);
  *out = fs;
  return 0;
}

static void
filesrc_closed(uv_handle_t *h)
{
  FileSource *fs = h->data;
  if (--fs->open_handles > 0)
    return;
  free(fs->path);
  free(fs->real);
  free(fs->real_dir);
  for (size_t i = 0; i < fs->nroots; i++)
    free(fs->roots[i]);
  free(fs->roots);
  free(fs);
}

/* See filesrc.h. */
void
filesrc_close(FileSource *fs)
{
  if (fs == NULL || fs->closing)
    return;
  fs->closing = true;
  if (fs->fd >= 0) {
    close(fs->fd);
    fs->fd = -1;
  }
  uv_close((uv_handle_t *)&fs->watch, filesrc_closed);
  uv_close((uv_handle_t *)&fs->watch_real, filesrc_closed);
  uv_close((uv_handle_t *)&fs->more, filesrc_closed);
}

const char *
filesrc_path(const FileSource *fs)
{
  return fs->path;
}

const char *
filesrc_real_path(const FileSource *fs)
{
  return fs->real;
}

uint64_t
filesrc_offset(const FileSource *fs)
{
  return fs->offset;
}

void
filesrc_counters(const FileSource *fs, FileSourceCounters *out)
{
  *out = fs->counters;
}
