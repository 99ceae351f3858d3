/*
 * Finding vigild from where this executable is (see cli_paths.h). Every
 * lookup is a stat or a readlink; nothing is created.
 */
#include "cli/cli_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory holding this executable, resolved (no trailing slash).
 * Returns false when /proc/self/exe cannot be read. */
static bool
cli_paths_bindir(char *out, size_t size)
{
  char exe[CLI_PATHS_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0 || (size_t)n >= sizeof exe - 1)
    return false;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash == NULL)
    return false;
  *slash = '\0';
  return (size_t)snprintf(out, size, "%s", exe[0] ? exe : "/") < size;
}

/* Whether path is a regular file (and, with exec, one we may run). */
static bool
cli_paths_is_file(const char *path, bool exec)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (!exec || access(path, X_OK) == 0);
}

void
cli_paths_vigild(char *out, size_t size)
{
  char dir[CLI_PATHS_MAX], path[CLI_PATHS_MAX + 16];
  if (cli_paths_bindir(dir, sizeof dir)) {
    snprintf(path, sizeof path, "%s/vigild", dir);
    if (cli_paths_is_file(path, true) && strlen(path) < size) {
      snprintf(out, size, "%s", path);
      return;
    }
  }
  snprintf(out, size, "vigild");
}
