/*
 * Finding the data directory (datadir.h).
 *
 * The executable's own path is read from /proc/self/exe, as the kernel
 * names it, so neither argv[0] nor PATH chooses where policies come from.
 * VIGIL_DATA_DIR_FROM_BIN (the install's data directory relative to its
 * bin directory, e.g. "../share/vigil") and VIGIL_DATA_DIR (the source
 * tree) are compile definitions from CMakeLists.txt.
 */
#include "base/datadir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char datadir_found[4096];
static const char *datadir_how;

/* Whether dir holds a plugins/ directory. */
static bool
datadir_holds_plugins(const char *dir)
{
  char path[4200];
  struct stat st;
  snprintf(path, sizeof path, "%s/plugins", dir);
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Keeps dir as the answer when it fits and holds plugins/. */
static bool
datadir_take(const char *dir, const char *how)
{
  if (dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof datadir_found)
    return false;
  if (!datadir_holds_plugins(dir))
    return false;
  strcpy(datadir_found, dir);
  datadir_how = how;
  return true;
}

static void
datadir_find(void)
{
  const char *env = getenv("VIGIL_DATA_DIR");
  if (env != NULL && env[0] != '\0') {
    /* An override is taken as given, even without plugins/: its absence
     * is then reported by the policies' load, naming it. */
    snprintf(datadir_found, sizeof datadir_found, "%s", env);
    datadir_how = "VIGIL_DATA_DIR";
    return;
  }
#ifdef VIGIL_DATA_DIR_FROM_BIN
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash != NULL) {
      *slash = '\0';
      char dir[4200];
      snprintf(dir, sizeof dir, "%s/%s", exe, VIGIL_DATA_DIR_FROM_BIN);
      char *real = realpath(dir, NULL);
      bool taken = real != NULL && datadir_take(real, "the install");
      free(real);
      if (taken)
        return;
    }
  }
#endif
#ifdef VIGIL_DATA_DIR
  if (datadir_take(VIGIL_DATA_DIR, "the source tree"))
    return;
#endif
  strcpy(datadir_found, ".");
  datadir_how = "nothing found";
}

const char *
datadir_path(void)
{
  if (datadir_how == NULL)
    datadir_find();
  return datadir_found;
}

const char *
datadir_source(void)
{
  if (datadir_how == NULL)
    datadir_find();
  return datadir_how;
}
