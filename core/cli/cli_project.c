/*
 * A directory's project root and session (see cli_project.h). Each step up
 * is a few fstatat() calls on names in a fixed table; nothing is read or
 * created.
 */
#include "cli/cli_project.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sha256.h"

/* How many bytes of the digest name the session: 128 bits. */
#define CLI_PROJECT_HASH_BYTES 16

/* What version control leaves at a repository's top. */
static const char *const cli_project_vcs[] = {".git", ".hg", ".jj", ".svn", NULL};

/* What a harness's project config or a package manifest leaves at a
 * project's top (a Makefile is not among them: docs/ and test/ hold their
 * own). */
static const char *const cli_project_markers[] = {
  ".mcp.json",    ".claude", ".codex",  ".gemini", ".opencode",      "opencode.json",
  ".cursor",      "package.json", "Cargo.toml", "go.mod", "pyproject.toml", NULL,
};

/* Whether dir holds an entry with one of names (a link counts: it is
 * there). */
static bool
cli_project_holds(const char *dir, const char *const *names)
{
  char path[PATH_MAX + 32];
  struct stat st;
  for (size_t i = 0; names[i]; i++) {
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
      continue;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
      return true;
  }
  return false;
}

/* The real path of $HOME, or "" when it is unset, relative or gone. */
static void
cli_project_home(char *out)
{
  const char *home = getenv("HOME");
  out[0] = '\0';
  if (home == NULL || home[0] != '/' || realpath(home, out) == NULL)
    out[0] = '\0';
}

/* Cuts path (a real path, not "/") to its parent, in place. */
static void
cli_project_up(char *path)
{
  char *slash = strrchr(path, '/');
  if (slash == path)
    slash[1] = '\0';
  else
    *slash = '\0';
}

/* The nearest of start and its ancestors holding one of names, stopping
 * before home and "/"; written to out (PATH_MAX). Returns false when none
 * does. */
static bool
cli_project_nearest(const char *start, const char *home, const char *const *names, char *out)
{
  char dir[PATH_MAX];
  memcpy(dir, start, strlen(start) + 1);
  while (strcmp(dir, "/") != 0 && strcmp(dir, home) != 0) {
    if (cli_project_holds(dir, names)) {
      memcpy(out, dir, strlen(dir) + 1);
      return true;
    }
    cli_project_up(dir);
  }
  return false;
}

int
cli_project_root(const char *dir, char *out, size_t cap, bool *marked)
{
  /* realpath(".") is the working directory with every link resolved. */
  char real[PATH_MAX], home[PATH_MAX], root[PATH_MAX];
  if (realpath(dir != NULL ? dir : ".", real) == NULL)
    return -1;
  cli_project_home(home);
  bool found = cli_project_nearest(real, home, cli_project_vcs, root) ||
               cli_project_nearest(real, home, cli_project_markers, root);
  if (!found)
    memcpy(root, real, strlen(real) + 1);
  if (strlen(root) >= cap) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(out, root, strlen(root) + 1);
  if (marked)
    *marked = found;
  return 0;
}

int
cli_project_session(const char *dir, char *out, size_t cap)
{
  if (cap < CLI_PROJECT_SESSION_SIZE) {
    errno = ERANGE;
    return -1;
  }
  char root[PATH_MAX];
  if (cli_project_root(dir, root, sizeof root, NULL) != 0)
    return -1;
  unsigned char digest[SHA256_DIGEST_BYTES];
  sha256(root, strlen(root), digest);
  static const char hex[] = "0123456789abcdef";
  memcpy(out, "mcp-", 4);
  for (int i = 0; i < CLI_PROJECT_HASH_BYTES; i++) {
    out[4 + 2 * i] = hex[digest[i] >> 4];
    out[4 + 2 * i + 1] = hex[digest[i] & 15];
  }
  out[4 + 2 * CLI_PROJECT_HASH_BYTES] = '\0';
  return 0;
}
