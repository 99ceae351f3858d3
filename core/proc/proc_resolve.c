/*
 * What a child runs, and where, decided before anything is forked (see
 * proc.h and proc_internal.h): the spawn options checked, the directory it
 * runs in opened, and a bare program name looked up.
 *
 * proc_spawn resolves the program first, so "no such program" is a clean
 * command_not_found and not a child that dies at exec; proc_spawn_check
 * makes the same checks without the fork (vigild --check-config). A bare
 * name is searched in the search path the caller gives or the engine's PATH,
 * never in a PATH the child's environment sets: with PATH=. or a directory
 * of the caller's choosing, that variable would decide what runs. The
 * directory the child runs in is opened here and entered with fchdir after
 * the fork, so it is the directory that was checked.
 */
#include "proc/proc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* Below this an address-space limit cannot even load a dynamic executable. */
#define PROC_MIN_MEMORY_LIMIT (1024 * 1024)
/* The search path when the caller gives none and the engine's PATH has no
 * absolute directory. */
#define PROC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* --- the options and the directory --------------------------------------- */

/* Checks argv and the limits (the directory is proc_dir_open's). Returns 0,
 * or -1 with err set. */
static int
proc_check_options(const ProcSpawnOptions *opts, VigilError *err)
{
  if (opts->argv == NULL || opts->argv[0] == NULL || opts->argv[0][0] == '\0')
    return error_set(err, kErrInvalidParams,
                     "argv: must name a program (argv[0] is missing or empty)");
  if (opts->stdin_data != NULL && opts->stdin_len > UINT_MAX) /* one libuv write */
    return error_set(err, kErrInvalidParams, "stdin: must be at most %u bytes, got %zu",
                     UINT_MAX, opts->stdin_len);
  if (opts->memory_limit < 0 ||
      (opts->memory_limit > 0 && opts->memory_limit < PROC_MIN_MEMORY_LIMIT))
    return error_set(err, kErrInvalidParams,
                     "memory_limit: must be 0 (none) or at least %d bytes (1 MiB), got %lld",
                     PROC_MIN_MEMORY_LIMIT, (long long)opts->memory_limit);
  /* A share above what the machine has cannot be enforced (nor exceeded). */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  bool negative = !(opts->cpu_limit >= 0); /* also NaN */
  if (negative || (cores > 0 && opts->cpu_limit > (double)cores)) {
    StrBuf b = STRBUF_INIT;
    textfmt_number(&b, opts->cpu_limit);
    if (negative)
      error_set(err, kErrInvalidParams,
                "cpu_limit: must be 0 (none) or a positive number of cores, got %s",
                strbuf_cstr(&b));
    else
      error_set(err, kErrInvalidParams, "cpu_limit: must be at most this machine's %ld cores, "
                "got %s", cores, strbuf_cstr(&b));
    strbuf_free(&b);
    return -1;
  }
  if (opts->max_processes < 0)
    return error_set(err, kErrInvalidParams,
                     "max_processes: must be 0 (none) or a positive count, got %lld",
                     (long long)opts->max_processes);
  return 0;
}

/* The real path of the open directory fd into a new string, or NULL with
 * errno set. Read from the descriptor, never from the path it was opened
 * by. */
static char *
proc_dir_path(int fd)
{
#if defined(__APPLE__)
  char buf[PATH_MAX];
  if (fcntl(fd, F_GETPATH, buf) != 0)
    return NULL;
  return xstrdup(buf);
#else
  char link[64], buf[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, sizeof buf);
  if (n < 0)
    return NULL;
  if ((size_t)n >= sizeof buf || buf[0] != '/') {
    errno = ENAMETOOLONG; /* or no path at all: nothing that could be checked */
    return NULL;
  }
  return xmemdupz(buf, (size_t)n);
#endif
}

/* See proc.h. */
int
proc_dir_open(const char *cwd, ProcDir *out, VigilError *err)
{
  *out = (ProcDir)PROC_DIR_INIT;
  if (cwd != NULL && cwd[0] == '\0')
    return error_set(err, kErrInvalidParams, "cwd: must not be empty");
#ifdef O_PATH
  /* A directory the engine may enter (x) but not list (r) works as it does
   * with chdir: fchdir takes an O_PATH descriptor. */
  int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
#else
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
#endif
  int fd = proc__fd_lift(open(cwd != NULL ? cwd : ".", flags));
  char *path = NULL;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    if (st.st_nlink == 0)
      errno = ENOENT; /* removed: its path would end in " (deleted)" */
    else
      path = proc_dir_path(fd);
  }
  if (path == NULL) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    if (cwd == NULL)
      return error_set(err, kErrInternal, "cannot read the engine's cwd: %s", strerror(e));
    if (e == ENOENT)
      return error_set(err, kErrInvalidParams, "cwd: \"%s\" does not exist", cwd);
    if (e == ENOTDIR)
      return error_set(err, kErrInvalidParams, "cwd: \"%s\" is not a directory", cwd);
    return error_set(err, kErrInvalidParams, "cwd: \"%s\" cannot be used: %s", cwd,
                     strerror(e));
  }
  out->fd = fd;
  out->path = path;
  return 0;
}

/* See proc.h. */
void
proc_dir_close(ProcDir *d)
{
  if (d->fd >= 0)
    close(d->fd);
  free(d->path);
  *d = (ProcDir)PROC_DIR_INIT;
}

/* --- the program ---------------------------------------------------------- */

/* The directories a bare program name is searched in, as a new string: the
 * caller's search path, else the engine's PATH, else the default. Entries
 * that are not absolute are dropped (an empty entry or "." would be the
 * child's cwd, which a caller of the engine picks), and the engine's PATH
 * is passed over when nothing absolute is left of it. */
static char *
proc_search_path(const char *given)
{
  const char *path = given;
  if (path == NULL)
    path = getenv("PATH");
  for (int pass = 0; pass < 2; pass++) {
    size_t len = path ? strlen(path) : 0;
    char *out = xmalloc(len + 1);
    size_t o = 0;
    for (const char *s = path; s != NULL;) {
      const char *colon = strchr(s, ':');
      size_t n = colon ? (size_t)(colon - s) : strlen(s);
      if (n > 0 && s[0] == '/') {
        if (o > 0)
          out[o++] = ':';
        memcpy(out + o, s, n);
        o += n;
      }
      s = colon ? colon + 1 : NULL;
    }
    out[o] = '\0';
    if (o > 0 || given != NULL)
      return out; /* a given path with nothing absolute searches nothing */
    free(out);
    path = PROC_DEFAULT_PATH;
  }
  return xstrdup(PROC_DEFAULT_PATH); /* not reached: the default is absolute */
}

/* dir + "/" + name, in a new string. */
static char *
proc_join(const char *dir, size_t dir_len, const char *name)
{
  size_t name_len = strlen(name);
  char *s = xmalloc(dir_len + 1 + name_len + 1);
  memcpy(s, dir, dir_len);
  s[dir_len] = '/';
  memcpy(s + dir_len + 1, name, name_len + 1);
  return s;
}

/* Checks that path is an executable regular file. Returns 0, or -1 with why
 * describing the problem ("is not executable"). */
static int
proc_check_exec(const char *path, char *why, size_t why_len)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      snprintf(why, why_len, "does not exist (no such file)");
    else
      snprintf(why, why_len, "cannot be accessed: %s", strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(why, why_len, "is a directory, not a regular file");
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_len, "is not a regular file");
    return -1;
  }
  if (access(path, X_OK) != 0) {
    snprintf(why, why_len, "is not executable");
    return -1;
  }
  return 0;
}

/* Resolves argv0 to the absolute path the child will exec: with a '/',
 * relative to dir (the real path of the directory it runs in); else looked
 * up in search (absolute directories separated by ':', see
 * proc_search_path). Returns a new string, or NULL with err set to
 * command_not_found naming the program and why. */
static char *
proc_resolve(const char *argv0, const char *dir, const char *search, VigilError *err)
{
  char why[256];
  if (strchr(argv0, '/') != NULL) {
    char *path = argv0[0] == '/' ? xstrdup(argv0) : proc_join(dir, strlen(dir), argv0);
    if (proc_check_exec(path, why, sizeof why) == 0)
      return path;
    free(path);
    error_set(err, kErrCommandNotFound, "command: \"%s\" %s", argv0, why);
    return NULL;
  }
  char *found_unusable = NULL; /* the first candidate that exists but cannot run */
  char found_why[256] = "";
  for (const char *s = search; s[0] != '\0';) {
    const char *colon = strchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    char *cand = proc_join(s, len, argv0);
    if (proc_check_exec(cand, why, sizeof why) == 0) {
      free(found_unusable);
      return cand;
    }
    if (found_unusable == NULL && strncmp(why, "does not exist", 14) != 0) {
      found_unusable = cand;
      snprintf(found_why, sizeof found_why, "%s", why);
    } else {
      free(cand);
    }
    if (colon == NULL)
      break;
    s = colon + 1;
  }
  if (found_unusable != NULL) {
    error_set(err, kErrCommandNotFound, "command: \"%s\" was found in PATH at \"%s\", which %s",
              argv0, found_unusable, found_why);
    free(found_unusable);
  } else {
    error_set(err, kErrCommandNotFound,
              "command: \"%s\" was not found in PATH (searched \"%s\"; a PATH in env does "
              "not choose the program)",
              argv0, search);
  }
  return NULL;
}

/* --- both, before the fork ------------------------------------------------ */

/* See proc_internal.h. */
int
proc__prepare(const ProcSpawnOptions *opts, ProcDir *own, const ProcDir **dir, char **program,
             VigilError *err)
{
  *own = (ProcDir)PROC_DIR_INIT;
  *dir = NULL;
  *program = NULL;
  if (proc_check_options(opts, err) != 0)
    return -1;
  if (opts->dir == NULL && proc_dir_open(opts->cwd, own, err) != 0)
    return -1;
  *dir = opts->dir != NULL ? opts->dir : own;
  if (opts->program != NULL) {
    char why[256];
    if (opts->program[0] == '/' && proc_check_exec(opts->program, why, sizeof why) == 0) {
      *program = xstrdup(opts->program);
      return 0;
    }
    return error_set(err, kErrCommandNotFound, "command: \"%s\" %s", opts->program,
                     opts->program[0] == '/' ? why : "is not an absolute path");
  }
  char *search = proc_search_path(opts->search_path);
  *program = proc_resolve(opts->argv[0], (*dir)->path, search, err);
  free(search);
  return *program != NULL ? 0 : -1;
}

/* See proc.h. */
int
proc_spawn_check(const ProcSpawnOptions *opts, char **program, VigilError *err)
{
  ProcDir own;
  const ProcDir *dir;
  int rc = proc__prepare(opts, &own, &dir, program, err);
  proc_dir_close(&own);
  return rc;
}
