/*
 * Finding the config file (config_lookup.h): the path given, then
 * $VIGIL_CONFIG, then the user's own, then the bundled one. Each step is
 * an environment read or a stat; nothing is created or opened. And a
 * config's identity (its real path and digest), by which the engine and
 * `vigil mcp` tell whether they mean the same file in the same state.
 */
#include "base/config_lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/datadir.h"
#include "base/sha256.h"

/* Whether path is a regular file. */
static bool
config_lookup_is_file(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Writes path to out made absolute (joined to the working directory when
 * relative). Returns false when it does not fit or the directory is
 * unknown. */
static bool
config_lookup_absolute(const char *path, char *out, size_t n)
{
  int len;
  if (path[0] == '/') {
    len = snprintf(out, n, "%s", path);
  } else {
    char cwd[CONFIG_LOOKUP_PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
      return false;
    len = snprintf(out, n, "%s/%s", cwd, path);
  }
  return len >= 0 && (size_t)len < n && (size_t)len < CONFIG_LOOKUP_PATH_MAX;
}

/* See config_lookup.h. */
bool
config_lookup_user(char *out, size_t n)
{
  const char *xdg = getenv("XDG_CONFIG_HOME");
  const char *home = getenv("HOME");
  int len = -1;
  if (xdg != NULL && xdg[0] == '/')
    len = snprintf(out, n, "%s/vigil/vigil.lua", xdg);
  else if (home != NULL && home[0] == '/')
    len = snprintf(out, n, "%s/.config/vigil/vigil.lua", home);
  if (len < 0 || (size_t)len >= n) {
    out[0] = '\0';
    return false;
  }
  return true;
}

/* The bundled config of the data directory, when one is there. */
static bool
config_lookup_bundled(char *out, size_t n)
{
  /* An install's share/vigil holds vigil.lua; a source tree config/. */
  static const char *const names[] = {"vigil.lua", "config/vigil.lua", NULL};
  const char *dir = datadir_path();
  for (size_t i = 0; names[i] != NULL; i++) {
    char path[CONFIG_LOOKUP_PATH_MAX + 32];
    int len = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (len < 0 || (size_t)len >= sizeof path || !config_lookup_is_file(path))
      continue;
    char *real = realpath(path, NULL);
    bool fits = real != NULL && config_lookup_absolute(real, out, n);
    free(real);
    if (fits)
      return true;
  }
  return false;
}

/* See config_lookup.h. */
bool
config_lookup(const char *given, char *out, size_t n, const char **why)
{
  const char *how = CONFIG_LOOKUP_NONE;
  bool found = false;
  const char *env = getenv("VIGIL_CONFIG");
  char user[CONFIG_LOOKUP_PATH_MAX];
  config_lookup_user(user, sizeof user);
  if (given != NULL && given[0] != '\0') {
    found = config_lookup_absolute(given, out, n);
    how = CONFIG_LOOKUP_GIVEN;
  } else if (env != NULL && env[0] != '\0') {
    found = config_lookup_absolute(env, out, n);
    how = CONFIG_LOOKUP_ENV;
  } else if (user[0] != '\0' && config_lookup_is_file(user) && strlen(user) < n) {
    snprintf(out, n, "%s", user);
    found = true;
    how = CONFIG_LOOKUP_USER;
  } else if (config_lookup_bundled(out, n)) {
    found = true;
    how = CONFIG_LOOKUP_BUNDLED;
  }
  if (!found) {
    snprintf(out, n, "%s", user[0] ? user : "vigil.lua");
    how = CONFIG_LOOKUP_NONE;
  }
  if (why != NULL)
    *why = how;
  return found;
}

/* See config_lookup.h. */
bool
config_identity(const char *path, ConfigIdentity *id, StrBuf *text)
{
  memset(id, 0, sizeof *id);
  char *real = realpath(path, NULL);
  if (real == NULL || strlen(real) >= sizeof id->real_path) {
    free(real);
    return false;
  }
  FILE *f = fopen(real, "rb");
  if (f == NULL) {
    free(real);
    return false;
  }
  snprintf(id->real_path, sizeof id->real_path, "%s", real);
  free(real);
  Sha256 s;
  sha256_init(&s);
  char buf[8192];
  size_t n;
  bool ok = true;
  while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) {
    ok = id->size + n <= CONFIG_IDENTITY_MAX_BYTES;
    sha256_update(&s, buf, n);
    if (text != NULL)
      strbuf_append(text, buf, n);
    id->size += n;
  }
  ok = ok && !ferror(f);
  fclose(f);
  unsigned char digest[SHA256_DIGEST_BYTES];
  sha256_final(&s, digest);
  for (size_t i = 0; i < SHA256_DIGEST_BYTES; i++)
    snprintf(id->sha256 + 2 * i, 3, "%02x", digest[i]);
  if (!ok)
    memset(id, 0, sizeof *id);
  return ok;
}
