/*
 * The environment a child gets (see childenv.h): the deny and allow rules
 * for a caller's variables, the inherit filter for the engine's own, and the
 * PREFIX* patterns both are written in.
 *
 * Why a deny list and not an allow list for the caller's variables: an
 * agent legitimately sets many variables (PORT, NODE_ENV, RUST_LOG,
 * PYTHONUNBUFFERED), and those only configure the program the allowlist
 * already let run. What must not pass is a variable that makes something
 * else run: a library loaded into the program, a script sourced before it,
 * a module imported at its start. Those turn "may run make" into "may run
 * anything as the engine's user", which is what the allowlist exists to
 * prevent.
 */
#include "childenv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "memory.h"

#define CHILDENV_STRINGIFY_(x) #x
#define CHILDENV_STRINGIFY(x) CHILDENV_STRINGIFY_(x)

/* The default monitor.env_deny: start-up hooks of the loader and of the
 * interpreters a build runs. Each one makes a program run code that is not
 * its own before (or instead of) its own. */
const char *const childenv_default_deny[] = {
  /* The dynamic loader: LD_PRELOAD and LD_AUDIT load a library into every
   * dynamic program (its constructor runs first); LD_LIBRARY_PATH replaces
   * the libraries it links. The whole family, so a new one is covered. */
  "LD_*",
  /* macOS's loader has the same hooks under these names. */
  "DYLD_*",
  /* glibc loads gconv modules (shared objects) from here for iconv. */
  "GCONV_PATH",
  /* Parsed by the loader of every program; it has held a memory-corruption
   * bug that gave root (CVE-2023-4911), and it changes how malloc behaves. */
  "GLIBC_TUNABLES",
  /* bash sources $BASH_ENV before every non-interactive script; sh, dash
   * and ksh source $ENV. A Makefile recipe or an npm script is such a
   * script. */
  "BASH_ENV",
  "ENV",
  /* bash imports these as functions: BASH_FUNC_make%% replaces `make` in
   * every bash script the child runs. */
  "BASH_FUNC_*",
  /* bash applies them at start: SHELLOPTS=xtrace runs the expansions of a
   * PS4 the caller also sets (command substitution included). */
  "SHELLOPTS",
  "BASHOPTS",
  /* Python runs $PYTHONSTARTUP (interactive) and imports from $PYTHONPATH
   * before its own library; PYTHONHOME replaces that library (site.py,
   * encodings, imported at every start). */
  "PYTHONSTARTUP",
  "PYTHONPATH",
  "PYTHONHOME",
  /* node: --require / --import in NODE_OPTIONS loads a module first. */
  "NODE_OPTIONS",
  /* perl: PERL5OPT adds -M options (a module loaded first); PERL5LIB and
   * PERLLIB are searched before perl's own library for `use strict`, which
   * nearly every script loads while compiling. */
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  /* ruby: RUBYOPT adds -r (a library required first); RUBYLIB is searched
   * first for rubygems, which every ruby requires at start. */
  "RUBYOPT",
  "RUBYLIB",
  /* The JVM reads options from these; -javaagent runs a jar's agent first. */
  "JAVA_TOOL_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "_JAVA_OPTIONS",
  NULL,
};

/* The default monitor.env_inherit: what a program needs to find its tools,
 * its home, its locale and its terminal type, and nothing that is a
 * credential. */
const char *const childenv_default_inherit[] = {
  "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ", "TMPDIR", NULL,
};

/* See childenv.h. */
bool
childenv_match(const char *pattern, const char *name, size_t len)
{
  size_t plen = strlen(pattern);
  if (plen > 0 && pattern[plen - 1] == '*')
    return len >= plen - 1 && memcmp(pattern, name, plen - 1) == 0;
  return plen == len && memcmp(pattern, name, len) == 0;
}

/* See childenv.h. */
const char *
childenv_match_any(const char *const *list, const char *name, size_t len)
{
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (childenv_match(list[i], name, len))
      return list[i];
  }
  return NULL;
}

/* See childenv.h. */
const char *
childenv_pattern_problem(const char *pattern)
{
  size_t len = strlen(pattern);
  if (len == 0)
    return "must not be empty";
  if (len > CHILDENV_PATTERN_MAX)
    return "must be at most " CHILDENV_STRINGIFY(CHILDENV_PATTERN_MAX) " bytes";
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)pattern[i];
    if (c == '=')
      return "must not contain \"=\" (it names a variable, without a value)";
    if (c <= ' ' || c == 0x7f)
      return "must not contain a space or a control character";
    if (c == '*' && i != len - 1)
      return "may hold \"*\" only as its last character (NAME or PREFIX*)";
  }
  return NULL;
}

/* See childenv.h. */
int
childenv_check(char *const *env, const char *const *deny, const char *const *allow,
               VigilError *err)
{
  for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
    const char *eq = strchr(env[i], '=');
    size_t len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
    char *name = xmemdupz(env[i], len);
    char quoted[GATE_QUOTE_BUF];
    gate_quote(quoted, name);
    free(name);
    if (eq == NULL || len == 0)
      return error_set(err, kErrInvalidParams,
                       "env: variable name %s must be non-empty, without \"=\"", quoted);
    const char *hit = childenv_match_any(deny, env[i], len);
    if (hit == NULL || childenv_match_any(allow, env[i], len) != NULL)
      continue;
    char entry[GATE_QUOTE_BUF];
    gate_quote(entry, hit);
    return error_set(err, kErrDenied,
                     "env: %s is refused by monitor.env_deny (entry %s): it can make the "
                     "program run other code; a deployment that needs it lists it in "
                     "monitor.env_allow",
                     quoted, entry);
  }
  return 0;
}

/* The length of the name in "NAME=VALUE", or 0 when there is no '='. */
static size_t
childenv_name_len(const char *kv)
{
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : 0;
}

/* Whether list (NULL-terminated, may be NULL) has an entry for the name of
 * length len that kv starts with. */
static bool
childenv_sets(char *const *list, const char *kv, size_t len)
{
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (childenv_name_len(list[i]) == len && memcmp(list[i], kv, len) == 0)
      return true;
  }
  return false;
}

/* See childenv.h. */
char **
childenv_build(const char *const *inherit, char *const *extra)
{
  if (inherit == NULL)
    inherit = childenv_default_inherit;
  size_t n = 0, m = 0;
  while (environ != NULL && environ[n] != NULL)
    n++;
  while (extra != NULL && extra[m] != NULL)
    m++;
  char **env = xmalloc((n + m + 1) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = childenv_name_len(environ[i]);
    if (len > 0 && childenv_match_any(inherit, environ[i], len) != NULL &&
        !childenv_sets(extra, environ[i], len))
      env[k++] = environ[i];
  }
  for (size_t i = 0; i < m; i++) {
    size_t len = childenv_name_len(extra[i]);
    if (len > 0 && !childenv_sets(extra + i + 1, extra[i], len))
      env[k++] = extra[i];
  }
  env[k] = NULL;
  return env;
}
