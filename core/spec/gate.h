/*
 * The command gate: turns a command line into an argv the way a shell splits
 * words (without ever running a shell), and decides whether an argv may run
 * under an allowlist.
 *
 * Splitting follows POSIX word rules for the parts vigil supports: single
 * quotes keep everything literally; double quotes keep everything except
 * that a backslash escapes $ ` " \ and newline; outside quotes a backslash
 * escapes any character. Refused, with the 0-based byte position named:
 * an unbalanced quote, a trailing lone backslash, an empty command, and the
 * shell operators | & ; < > newline, `$(` and backtick outside single quotes
 * (inside double quotes a shell would still substitute them). A caller that
 * wants those runs the command with shell mode instead.
 *
 * The allowlist names programs. An entry without a slash matches an argv[0]
 * without a slash (which the spawner then resolves through PATH); an entry
 * with a slash matches exactly that path; an argv[0] with a slash never
 * matches a bare entry; an empty allowlist denies everything.
 */
#ifndef VIGIL_GATE_H
#define VIGIL_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef struct {
  char **argv; /* argc entries then NULL; each string owned */
  size_t argc;
} Argv;

#define ARGV_INIT {NULL, 0}

/* Splits `command` into out. On error returns -1 with invalid_params naming
 * `arg_name` (e.g. "command") and the position, and leaves out empty. */
int gate_split(const char *command, const char *arg_name, Argv *out, VigilError *err);

/* Builds the argv of shell mode: /bin/sh -c command. The command is passed
 * whole, unsplit; whether shell mode is allowed at all is the caller's
 * decision (monitor.allow_shell or a policy), not the allowlist's. */
void gate_shell_argv(const char *command, Argv *out);

/* Copies a NULL-terminated or counted list of strings into out: appends
 * items[0..n), stopping early at a NULL item (pass SIZE_MAX as n for a
 * NULL-terminated list). out must be initialised (ARGV_INIT). */
void argv_from(Argv *out, const char *const *items, size_t n);

/* Appends one copy of s. */
void argv_push(Argv *a, const char *s);

void argv_free(Argv *a);

typedef struct {
  char **entries; /* owned */
  size_t n;
} Allowlist;

#define ALLOWLIST_INIT {NULL, 0}

void allowlist_add(Allowlist *al, const char *entry);
void allowlist_free(Allowlist *al);

/* Whether argv0 is allowed (rules above). */
bool gate_allows(const Allowlist *al, const char *argv0);

/* 0 when argv[0] is allowed; otherwise denied naming the program and, when
 * the allowlist is empty, saying that nothing is allowed. */
int gate_check(const Allowlist *al, const Argv *argv, VigilError *err);

/* Longest part of a caller's string quoted in a message; a longer one is cut
 * (at a UTF-8 character boundary) and marked with "...". */
#define GATE_QUOTE_MAX_INPUT 128
/* Room for GATE_QUOTE_MAX_INPUT bytes escaped as \xNN, the quotes and "...". */
#define GATE_QUOTE_BUF (GATE_QUOTE_MAX_INPUT * 4 + 8)

/* Writes s into buf (of GATE_QUOTE_BUF bytes) as a double-quoted string a
 * person can read in an error message: quote and backslash escaped, control
 * bytes as \n, \t or \xNN, and at most GATE_QUOTE_MAX_INPUT bytes of s. For
 * anything a caller names (a program, an environment variable). */
void gate_quote(char *buf, const char *s);

#endif
