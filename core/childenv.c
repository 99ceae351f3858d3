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
 *
 * The line-buffering additions (childenv_build's second layer) use the
 * same hook on purpose, with a library the engine chose: coreutils'
 * libstdbuf, which is what `stdbuf -oL` preloads. It sets the buffering of
 * stdout from _STDBUF_O before main, so every dynamically linked program
 * that writes with C stdio (and whatever it starts: the variables are
 * inherited) writes each line as it ends. A statically linked or setuid
 * program ignores LD_PRELOAD and stays as it was; Python buffers on its own,
 * hence PYTHONUNBUFFERED. Node, Go and Rust write each call unbuffered
 * already.
 */
#include "childenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* --- line buffering -------------------------------------------------------- */

/* See childenv.h. */
const char *const childenv_stdbuf_paths[] = {
  "/usr/libexec/coreutils/libstdbuf.so",
  "/usr/lib/coreutils/libstdbuf.so",
  "/usr/lib/x86_64-linux-gnu/coreutils/libstdbuf.so",
  "/usr/lib/aarch64-linux-gnu/coreutils/libstdbuf.so",
  "/usr/lib64/coreutils/libstdbuf.so",
  "/usr/local/libexec/coreutils/libstdbuf.so",
  NULL,
};

/* The variables the additions set or merge, as "NAME=" prefixes. */
#define CHILDENV_PYTHON "PYTHONUNBUFFERED="
#define CHILDENV_STDBUF_OUT "_STDBUF_O="
#define CHILDENV_PRELOAD "LD_PRELOAD="
#define CHILDENV_ASAN "ASAN_OPTIONS="
/* What ASAN_OPTIONS gets in front: ASan refuses to start when a library
 * other than its runtime comes first among the loaded ones, which a
 * preload always does. Later options override earlier ones, so a caller's
 * own verify_asan_link_order still decides. */
#define CHILDENV_ASAN_LINK_ORDER "verify_asan_link_order=0"

/* Whether st (of a file or a directory) is one no other user can change:
 * owned by root or by the engine's user, writable by neither group nor
 * others. */
static bool
childenv_trusted(const struct stat *st)
{
  return (st->st_uid == 0 || st->st_uid == geteuid()) && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* See childenv.h. The directory is checked too: one writable by others
 * would let them put another file in the library's place. */
const char *
childenv_stdbuf_find(const char *const *paths)
{
  for (size_t i = 0; paths != NULL && paths[i] != NULL; i++) {
    struct stat st, dir;
    const char *slash = strrchr(paths[i], '/');
    if (slash == NULL || stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode) ||
        !childenv_trusted(&st))
      continue;
    char *parent = xmemdupz(paths[i], slash == paths[i] ? 1 : (size_t)(slash - paths[i]));
    bool ok = stat(parent, &dir) == 0 && childenv_trusted(&dir);
    free(parent);
    if (ok)
      return paths[i];
  }
  return NULL;
}

/* See childenv.h. Spawns happen on the engine's loop thread only, so a
 * plain flag is enough. */
const char *
childenv_stdbuf(void)
{
  static bool looked;
  static const char *found;
  if (!looked) {
    found = childenv_stdbuf_find(childenv_stdbuf_paths);
    looked = true;
  }
  return found;
}

/* The value of the last entry of list (NULL-terminated, may be NULL) that
 * sets the name of "NAME=" prefix, or NULL. */
static const char *
childenv_value(char *const *list, const char *prefix)
{
  const char *value = NULL;
  size_t len = strlen(prefix);
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (strncmp(list[i], prefix, len) == 0)
      value = list[i] + len;
  }
  return value;
}

/* The value the child would get for the name of "NAME=" prefix without
 * the merge: extra's, else the inherited one. */
static const char *
childenv_base(const char *const *inherit, char *const *extra, const char *prefix)
{
  const char *v = childenv_value(extra, prefix);
  if (v == NULL && childenv_match_any(inherit, prefix, strlen(prefix) - 1) != NULL)
    v = childenv_value(environ, prefix);
  return v;
}

/* Whether the LD_PRELOAD value list (entries separated by ':' or ' ')
 * holds lib. */
static bool
childenv_preloads(const char *list, const char *lib)
{
  size_t len = strlen(lib);
  for (const char *p = list; *p != '\0';) {
    size_t n = strcspn(p, ": ");
    if (n == len && memcmp(p, lib, len) == 0)
      return true;
    p += n;
    if (*p != '\0')
      p++;
  }
  return false;
}

/* Writes "PREFIXfirst[:rest]" at *at (advancing it) and returns it: rest
 * joined only when non-empty. */
static char *
childenv_join(char **at, const char *prefix, const char *first, const char *rest)
{
  char *s = *at;
  size_t n = (size_t)sprintf(s, "%s%s%s%s", prefix, first, rest && *rest ? ":" : "",
                             rest && *rest ? rest : "");
  *at += n + 1;
  return s;
}

/* The bytes childenv_join needs for these parts, its NUL included. */
static size_t
childenv_join_size(const char *prefix, const char *first, const char *rest)
{
  return strlen(prefix) + strlen(first) + (rest && *rest ? 1 + strlen(rest) : 0) + 1;
}

/* Whether the name of kv (len bytes) is one of the NULL-terminated "NAME="
 * prefixes in names. */
static bool
childenv_named(const char *const *names, const char *kv, size_t len)
{
  for (size_t i = 0; names[i] != NULL; i++) {
    if (strlen(names[i]) == len + 1 && memcmp(names[i], kv, len) == 0)
      return true;
  }
  return false;
}

/* See childenv.h. */
char **
childenv_build(const char *const *inherit, char *const *extra, const ChildLineBuffering *lb)
{
  if (inherit == NULL)
    inherit = childenv_default_inherit;
  size_t n = 0, m = 0;
  while (environ != NULL && environ[n] != NULL)
    n++;
  while (extra != NULL && extra[m] != NULL)
    m++;

  /* Layer 2, and the two merged variables (with their sizes, to allocate
   * them in the same block as the array). */
  static char python[] = CHILDENV_PYTHON "1";
  static char stdbuf_out[] = CHILDENV_STDBUF_OUT "L";
  char *adds[3] = {NULL, NULL, NULL};
  const char *merged_names[3] = {NULL, NULL, NULL};
  const char *first = NULL, *rest = NULL, *asan = NULL;
  size_t nadds = 0, bytes = 0;
  if (lb != NULL && lb->line_buffered) {
    adds[nadds++] = python;
    if (lb->stdbuf != NULL) {
      adds[nadds++] = stdbuf_out;
      /* The library first, then what the child would have preloaded
       * anyway; kept as it is when the library is there already. */
      first = lb->stdbuf;
      rest = childenv_base(inherit, extra, CHILDENV_PRELOAD);
      if (rest != NULL && childenv_preloads(rest, first))
        first = rest, rest = NULL;
      asan = childenv_base(inherit, extra, CHILDENV_ASAN);
      bytes = childenv_join_size(CHILDENV_PRELOAD, first, rest) +
              childenv_join_size(CHILDENV_ASAN, CHILDENV_ASAN_LINK_ORDER, asan);
      merged_names[0] = CHILDENV_PRELOAD;
      merged_names[1] = CHILDENV_ASAN;
    }
  }
  size_t slots = n + nadds + m + 2 + 1;
  char **env = xmalloc(slots * sizeof *env + bytes);
  char *strings = (char *)(env + slots);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = childenv_name_len(environ[i]);
    if (len > 0 && childenv_match_any(inherit, environ[i], len) != NULL &&
        !childenv_sets(adds, environ[i], len) && !childenv_sets(extra, environ[i], len) &&
        !childenv_named(merged_names, environ[i], len))
      env[k++] = environ[i];
  }
  for (size_t i = 0; i < nadds; i++) {
    if (!childenv_sets(extra, adds[i], childenv_name_len(adds[i])))
      env[k++] = adds[i];
  }
  for (size_t i = 0; i < m; i++) {
    size_t len = childenv_name_len(extra[i]);
    if (len > 0 && !childenv_sets(extra + i + 1, extra[i], len) &&
        !childenv_named(merged_names, extra[i], len))
      env[k++] = extra[i];
  }
  if (merged_names[0] != NULL) {
    env[k++] = childenv_join(&strings, CHILDENV_PRELOAD, first, rest);
    env[k++] = childenv_join(&strings, CHILDENV_ASAN, CHILDENV_ASAN_LINK_ORDER, asan);
  }
  env[k] = NULL;
  return env;
}
