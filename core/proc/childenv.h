/*
 * The environment a child gets. Two rules decide it:
 *
 *  - what the caller may set: a start's `env` (monitor_start, process_run,
 *    a config monitor) may not name a variable by which the caller, not
 *    the allowlisted program, would choose code that runs: a start-up hook
 *    of the loader or an interpreter (LD_PRELOAD, BASH_ENV, NODE_OPTIONS),
 *    a program the child runs by name or by variable (PATH, EDITOR, CC,
 *    GIT_SSH_COMMAND), a place it reads such code or names from (HOME,
 *    npm_config_userconfig). monitor.env_deny lists them, monitor.env_allow
 *    exempts names a deployment needs (by default a few harmless names of
 *    denied families, such as GIT_AUTHOR_NAME). A refused name is
 *    `denied`, naming the name, the entry that matched and the setting;
 *    nothing starts.
 *  - what the child inherits from the engine: only the variables
 *    monitor.env_inherit names (by default a short list of locale and
 *    identity variables), so a secret in the engine's own environment (a
 *    gateway's API key) does not reach every child.
 *
 * The lists hold names or PREFIX* patterns: "LD_*" matches every name that
 * starts with "LD_", "*" alone every name. env_inherit's patterns are
 * case-sensitive, as environment names are; env_deny and env_allow compare
 * without regard to ASCII case, since some programs read their variables
 * so (npm takes NPM_CONFIG_X, npm_config_x and Npm_Config_X alike).
 *
 * On top of both, the engine's own additions, which make the child's
 * stdout line-buffered (monitor.line_buffered, a start's line_buffered): a
 * program without a terminal block-buffers its stdout, so a dev server's
 * lines would arrive only when a buffer fills or it exits. They are the
 * engine's, not the caller's, so monitor.env_deny does not judge them
 * (childenv_check sees the start's env alone), and they never let a
 * caller's variable through that the deny list refuses.
 */
#ifndef VIGIL_CHILDENV_H
#define VIGIL_CHILDENV_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* Longest pattern a config list may hold. */
#define CHILDENV_PATTERN_MAX 256

/* The defaults of monitor.env_deny, env_allow and env_inherit,
 * NULL-terminated (childenv.c says why each deny and allow entry is there). */
extern const char *const childenv_default_deny[];
extern const char *const childenv_default_allow[];
extern const char *const childenv_default_inherit[];

/* Whether the name (len bytes, no '=') matches pattern: equal to it, or
 * starting with what precedes a final '*'. */
bool childenv_match(const char *pattern, const char *name, size_t len);

/* The first pattern of list (NULL-terminated, may be NULL) that matches the
 * name, or NULL. */
const char *childenv_match_any(const char *const *list, const char *name, size_t len);

/* childenv_match_any ignoring ASCII case: how env_deny and env_allow
 * judge a name. */
const char *childenv_match_any_nocase(const char *const *list, const char *name, size_t len);

/* Why pattern cannot be a list entry ("must not be empty", ...), or NULL
 * when it can: non-empty, at most CHILDENV_PATTERN_MAX bytes, no '=', no
 * space or control byte, '*' only as its last byte. */
const char *childenv_pattern_problem(const char *pattern);

/* Checks a start's "NAME=VALUE" entries (NULL-terminated, may be NULL):
 * invalid_params for an entry whose name is empty or that has no '=';
 * denied for a name a deny pattern matches and no allow pattern does (both
 * compared without regard to ASCII case). The
 * message names the variable (quoted), the matching entry and the setting.
 * Returns 0 or -1 with err set. */
int childenv_check(char *const *env, const char *const *deny, const char *const *allow,
                   VigilError *err);

/* childenv_check that also says, when it fails, which entry failed: *at
 * (when not NULL) is then its index in env, so a denial can name the entry
 * to add to monitor.env_allow (config_hint.h). */
int childenv_check_at(char *const *env, const char *const *deny, const char *const *allow,
                      size_t *at, VigilError *err);

/* A start's env_denied "drop" (docs/protocol.md, monitor_start): removes
 * from env (NULL-terminated "NAME=VALUE" entries, each its own allocation)
 * every entry childenv_check would deny, frees it and closes the gap, so
 * the order of the rest is kept. An entry without '=' or with an empty name
 * stays, for childenv_check to refuse. Returns how many were removed; when
 * names is not NULL, *names is then their names (NULL-terminated, in env's
 * order; free each and the array), or NULL when none was. */
size_t childenv_drop(char **env, const char *const *deny, const char *const *allow,
                     char ***names);

/* Where coreutils' libstdbuf.so is looked for, in order (Debian and
 * Fedora, Arch, older multiarch layouts, a build from source);
 * NULL-terminated. */
extern const char *const childenv_stdbuf_paths[];

/* The first of paths (NULL-terminated) that is a library the engine may
 * preload into every child: a regular file owned by root or by the
 * engine's user, writable by no one else. NULL when there is none. */
const char *childenv_stdbuf_find(const char *const *paths);

/* childenv_stdbuf_find(childenv_stdbuf_paths), looked up once (at the
 * first call: the engine makes it at start and logs the answer). */
const char *childenv_stdbuf(void);

/* What the engine adds to make a child's stdout line-buffered. */
typedef struct {
  bool line_buffered;       /* false: add nothing */
  const char *stdbuf;       /* libstdbuf's path; NULL: none (PYTHONUNBUFFERED only) */
} ChildLineBuffering;

/* The child's environment, in three layers, a later one replacing an
 * earlier variable of the same name:
 *  1. the engine's variables whose name matches a pattern of inherit
 *     (NULL: childenv_default_inherit);
 *  2. with lb->line_buffered, the engine's additions: PYTHONUNBUFFERED=1,
 *     and where lb->stdbuf is a library _STDBUF_O=L (stdout line-buffered,
 *     stderr left as the program has it);
 *  3. the entries of extra (the last entry of a name wins).
 * Two variables are merged rather than replaced: with lb->stdbuf, the
 * child's LD_PRELOAD (extra's, else the inherited one) gets the library in
 * front (once), and its ASAN_OPTIONS gets "verify_asan_link_order=0" in
 * front, without which a program built with AddressSanitizer refuses to
 * start when another library is preloaded (a value the caller gives for it
 * comes later, so it still wins). lb may be NULL (nothing added).
 * Returns a new NULL-terminated array, freed with one free(): the merged
 * strings live in the same block, the others are borrowed from environ and
 * extra. Built before fork: the child may not allocate. */
char **childenv_build(const char *const *inherit, char *const *extra,
                      const ChildLineBuffering *lb);

#endif
