/*
 * The environment a child gets. Two rules decide it:
 *
 *  - what the caller may set: a start's `env` (monitor_start, process_run,
 *    a config monitor) may not name a variable that makes a loader or an
 *    interpreter run code at start-up (LD_PRELOAD, BASH_ENV, NODE_OPTIONS,
 *    ...): monitor.env_deny lists them, monitor.env_allow exempts names a
 *    deployment needs. A refused name is `denied`, naming the name, the
 *    entry that matched and the setting; nothing starts.
 *  - what the child inherits from the engine: only the variables
 *    monitor.env_inherit names (by default a short list of locale and
 *    identity variables), so a secret in the engine's own environment (a
 *    gateway's API key) does not reach every child.
 *
 * Both lists hold names or PREFIX* patterns: "LD_*" matches every name that
 * starts with "LD_", "*" alone every name. A pattern is case-sensitive, as
 * environment names are.
 */
#ifndef VIGIL_CHILDENV_H
#define VIGIL_CHILDENV_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Longest pattern a config list may hold. */
#define CHILDENV_PATTERN_MAX 256

/* The defaults of monitor.env_deny and monitor.env_inherit, NULL-terminated
 * (childenv.c says why each deny entry is there). */
extern const char *const childenv_default_deny[];
extern const char *const childenv_default_inherit[];

/* Whether the name (len bytes, no '=') matches pattern: equal to it, or
 * starting with what precedes a final '*'. */
bool childenv_match(const char *pattern, const char *name, size_t len);

/* The first pattern of list (NULL-terminated, may be NULL) that matches the
 * name, or NULL. */
const char *childenv_match_any(const char *const *list, const char *name, size_t len);

/* Why pattern cannot be a list entry ("must not be empty", ...), or NULL
 * when it can: non-empty, at most CHILDENV_PATTERN_MAX bytes, no '=', no
 * space or control byte, '*' only as its last byte. */
const char *childenv_pattern_problem(const char *pattern);

/* Checks a start's "NAME=VALUE" entries (NULL-terminated, may be NULL):
 * invalid_params for an entry whose name is empty or that has no '=';
 * denied for a name a deny pattern matches and no allow pattern does. The
 * message names the variable (quoted), the matching entry and the setting.
 * Returns 0 or -1 with err set. */
int childenv_check(char *const *env, const char *const *deny, const char *const *allow,
                   VigilError *err);

/* The child's environment: the engine's variables whose name matches a
 * pattern of inherit (NULL: childenv_default_inherit), then the entries of
 * extra, each replacing an inherited one of the same name (the last entry
 * of a name in extra wins). Returns a new NULL-terminated array (free it;
 * the strings are borrowed from environ and extra). Built before fork: the
 * child may not allocate. */
char **childenv_build(const char *const *inherit, char *const *extra);

#endif
