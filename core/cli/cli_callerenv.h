/*
 * What a start may take from the caller's own environment (issue 24, item
 * 3). By default a child gets only the engine's environment (what
 * monitor.env_inherit passes) and what --env sets: `FOO=bar vigil run ...`
 * does not reach it, and an activated venv's python is not the one found.
 * Two opt-ins, both still judged by the engine as any start is:
 *
 * - --pass-env NAME (or PREFIX*, repeatable) copies those variables of the
 *   caller's environment into the start's env; monitor.env_deny still
 *   refuses a dangerous one (PATH, LD_*, ...), by name.
 * - --pass-env-all copies every variable, and asks the engine to leave out
 *   (env_denied "drop") what monitor.env_deny refuses instead of refusing
 *   the start: the deny list is the engine's, which the CLI cannot see. The
 *   engine's note, printed on stderr, names what was left out. With it a
 *   denied --env or --pass-env name is left out too.
 * - --caller-path resolves a bare program name through the caller's PATH
 *   (absolute entries only, as the engine does with its own) and sends the
 *   absolute path found: the allowlist sees, and must allow, that path
 *   ("/home/me/venv/bin/python3", not "python3"). The child still gets the
 *   engine's PATH: a PATH the caller chose would let an allowlisted script
 *   run the caller's interpreter (docs/protocol.md, monitor_start).
 */
#ifndef VIGIL_CLI_CALLERENV_H
#define VIGIL_CLI_CALLERENV_H

#include <stddef.h>

#include "cli/cli_opts.h"

/* The most variables a start's env holds (monitor_start's bound). */
#define CLI_CALLERENV_MAX 1024

/* Checks the --pass-env patterns of p: NAME or PREFIX* of [A-Za-z0-9_].
 * Returns 0, or CLI_EXIT_USAGE after saying which is wrong. */
int cli_callerenv_check(const CliParsed *p);

/* The caller's variables that p's --pass-env patterns name (with
 * --pass-env-all: every one) and no --env of p sets, as "NAME=VALUE"
 * pointers into environ, in *out (at most cap). The count, or (size_t)-1
 * when more than cap match. */
size_t cli_callerenv_pick(const CliParsed *p, const char **out, size_t cap);

/* How many entries the caller's environment has. */
size_t cli_callerenv_count(void);

/* Resolves name (no '/') through the caller's PATH into out (cap bytes):
 * the first absolute entry holding an executable regular file of that
 * name. Returns 0, or -1 when none has one. */
int cli_callerenv_which(const char *name, char *out, size_t cap);

#endif
