/*
 * Finding vigild and a config from where this executable is (see
 * cli_paths.h). Every lookup is a stat or one bounded read; nothing is
 * created.
 */
#include "cli_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The longest CMakeCache.txt line looked at; the line wanted is short. */
#define CLI_PATHS_LINE_MAX (CLI_PATHS_MAX + 64)

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

/* The source directory of the CMake build tree dir, from its
 * CMakeCache.txt. Returns false when dir is not one. */
static bool
cli_paths_source_dir(const char *dir, char *out, size_t size)
{
  static const char key[] = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  char cache[CLI_PATHS_MAX + 32];
  snprintf(cache, sizeof cache, "%s/CMakeCache.txt", dir);
  FILE *f = fopen(cache, "r");
  if (f == NULL)
    return false;
  char line[CLI_PATHS_LINE_MAX];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, sizeof key - 1) != 0)
      continue;
    char *value = line + sizeof key - 1;
    value[strcspn(value, "\r\n")] = '\0';
    found = value[0] == '/' && (size_t)snprintf(out, size, "%s", value) < size;
  }
  fclose(f);
  return found;
}

bool
cli_paths_config(char *out, size_t size)
{
  char user[CLI_PATHS_MAX + 32] = "";
  const char *xdg = getenv("XDG_CONFIG_HOME");
  const char *home = getenv("HOME");
  if (xdg && xdg[0] == '/')
    snprintf(user, sizeof user, "%s/vigil/vigil.lua", xdg);
  else if (home && home[0] == '/')
    snprintf(user, sizeof user, "%s/.config/vigil/vigil.lua", home);
  if (user[0] && cli_paths_is_file(user, false) && strlen(user) < size) {
    snprintf(out, size, "%s", user);
    return true;
  }
  char dir[CLI_PATHS_MAX], path[CLI_PATHS_MAX + 32], src[CLI_PATHS_MAX];
  if (cli_paths_bindir(dir, sizeof dir)) {
    /* An install: <prefix>/bin/vigil beside <prefix>/share/vigil/. */
    snprintf(path, sizeof path, "%s/../share/vigil/vigil.lua", dir);
    char resolved[PATH_MAX];
    if (cli_paths_is_file(path, false) && realpath(path, resolved) && strlen(resolved) < size) {
      snprintf(out, size, "%s", resolved);
      return true;
    }
    /* A build tree: its source's bundled config. */
    if (cli_paths_source_dir(dir, src, sizeof src)) {
      snprintf(path, sizeof path, "%s/config/vigil.lua", src);
      if (cli_paths_is_file(path, false) && strlen(path) < size) {
        snprintf(out, size, "%s", path);
        return true;
      }
    }
  }
  snprintf(out, size, "%s", user[0] ? user : "vigil.lua");
  return false;
}
