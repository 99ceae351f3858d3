/*
 * The caller's environment and PATH, taken only when asked (see
 * cli_callerenv.h).
 */
#include "cli/cli_callerenv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* Whether pattern (NAME, or PREFIX*) names the variable name[0..len). */
static bool
cli_callerenv_matches(const char *pattern, const char *name, size_t len)
{
  size_t plen = strlen(pattern);
  if (plen > 0 && pattern[plen - 1] == '*')
    return len >= plen - 1 && memcmp(pattern, name, plen - 1) == 0;
  return plen == len && memcmp(pattern, name, len) == 0;
}

int
cli_callerenv_check(const CliParsed *p)
{
  const char *const *pats;
  size_t n = cli_opts_all(p, "pass-env", &pats);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(pats[i]);
    bool ok = len > 0 && len <= 256;
    for (size_t k = 0; ok && k < len; k++) {
      char c = pats[i][k];
      bool word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_';
      ok = word || (c == '*' && k == len - 1 && k > 0);
    }
    if (!ok)
      return cli_opts_usage_error(p->spec,
                                  "--pass-env: \"%.64s\" must be a variable's name or a prefix "
                                  "followed by * (1..256 characters of [A-Za-z0-9_])",
                                  pats[i]);
  }
  return 0;
}

/* Whether an --env of p sets the variable name[0..len). */
static bool
cli_callerenv_set_by_env(const CliParsed *p, const char *name, size_t len)
{
  const char *const *envs;
  size_t n = cli_opts_all(p, "env", &envs);
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(envs[i], '=');
    if (eq != NULL && (size_t)(eq - envs[i]) == len && memcmp(envs[i], name, len) == 0)
      return true;
  }
  return false;
}

size_t
cli_callerenv_pick(const CliParsed *p, const char **out, size_t cap)
{
  const char *const *pats;
  size_t npat = cli_opts_all(p, "pass-env", &pats);
  bool all = cli_opts_has(p, "pass-env-all");
  size_t count = 0;
  for (char **e = environ; (npat > 0 || all) && e != NULL && *e != NULL; e++) {
    const char *eq = strchr(*e, '=');
    if (eq == NULL || eq == *e)
      continue;
    size_t len = (size_t)(eq - *e);
    bool named = all;
    for (size_t i = 0; i < npat && !named; i++)
      named = cli_callerenv_matches(pats[i], *e, len);
    if (!named || cli_callerenv_set_by_env(p, *e, len))
      continue; /* an explicit --env wins */
    if (count == cap)
      return (size_t)-1;
    out[count++] = *e;
  }
  return count;
}

size_t
cli_callerenv_count(void)
{
  size_t n = 0;
  while (environ != NULL && environ[n] != NULL)
    n++;
  return n;
}

int
cli_callerenv_which(const char *name, char *out, size_t cap)
{
  const char *path = getenv("PATH");
  if (path == NULL || name[0] == '\0' || strchr(name, '/') != NULL)
    return -1;
  while (*path != '\0') {
    const char *end = strchr(path, ':');
    size_t len = end ? (size_t)(end - path) : strlen(path);
    /* Only absolute entries: an empty or relative one would be the
     * caller's current directory, which the engine never searches. */
    if (len > 0 && path[0] == '/') {
      int n = snprintf(out, cap, "%.*s/%s", (int)len, path, name);
      struct stat st;
      if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
          access(out, X_OK) == 0)
        return 0;
    }
    path += len + (end != NULL);
  }
  return -1;
}
