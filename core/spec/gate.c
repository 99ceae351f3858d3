/*
 * The command gate: the one place that decides what a command line means and
 * whether it may run (see gate.h).
 *
 * Splitting is a small left-to-right scanner over the bytes of the command
 * line. It never runs or imitates a shell beyond word splitting: anything a
 * shell would treat as syntax (pipes, lists, redirections, command
 * substitution) is refused rather than passed on as a literal argument,
 * because an agent that writes `make | tee log` expects a pipe, and silently
 * running `make` with the arguments "|", "tee" and "log" would do something
 * else than it asked. Refusing, with the position, tells it to quote the
 * character or to ask for shell mode. `$NAME`, globs, `~`, `#`, parentheses
 * and braces are not refused; they reach the program literally, since vigil
 * never expands anything.
 *
 * Backslash-newline is a line continuation, as in POSIX: outside quotes and
 * inside double quotes both characters vanish, so a command pasted across
 * lines with trailing backslashes splits as one line.
 *
 * The allowlist check is plain string equality between argv[0] and an entry.
 * Equality already gives every rule in gate.h: a string with a slash can only
 * equal a string with a slash, so "rm" never admits "/bin/rm" or "./rm", and
 * "/bin/rm" never admits "rm" (which PATH could resolve anywhere). No path is
 * normalised, so "/bin/../bin/rm" is not "/bin/rm".
 */
#include "spec/gate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/strbuf.h"

/* See gate.h. The name comes from the agent, so it may hold anything. */
void
gate_quote(char *buf, const char *s)
{
  size_t len = strlen(s);
  bool cut = false;
  if (len > GATE_QUOTE_MAX_INPUT) {
    len = GATE_QUOTE_MAX_INPUT;
    /* Do not end the message in the middle of a UTF-8 character. */
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
      len--;
    cut = true;
  }
  size_t o = 0;
  buf[o++] = '"';
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      buf[o++] = '\\';
      buf[o++] = (char)c;
    } else if (c == '\n') {
      buf[o++] = '\\';
      buf[o++] = 'n';
    } else if (c == '\t') {
      buf[o++] = '\\';
      buf[o++] = 't';
    } else if (c < 0x20 || c == 0x7f) {
      o += (size_t)snprintf(buf + o, GATE_QUOTE_BUF - o, "\\x%02x", c);
    } else {
      buf[o++] = (char)c;
    }
  }
  if (cut) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o++] = '"';
  buf[o] = '\0';
}

/* The shell operator that starts at s[i] outside quotes, as it should be
 * named in a message, or NULL if s[i] starts none. Two-character operators
 * are named whole ("&&", ">>") so the message shows what the agent wrote. */
static const char *
gate_operator_at(const char *s, size_t i)
{
  char c = s[i], n = s[i + 1];
  switch (c) {
  case '|':
    return n == '|' ? "||" : "|";
  case '&':
    return n == '&' ? "&&" : "&";
  case ';':
    return n == ';' ? ";;" : ";";
  case '<':
    return n == '<' ? "<<" : "<";
  case '>':
    return n == '>' ? ">>" : ">";
  case '\n':
    return "\\n";
  default:
    return NULL;
  }
}

/* Ends the word being built (if any) by moving it onto words. A word exists
 * once any character or any quote pair has been seen, so '' gives "". */
static void
gate_end_word(Argv *words, StrBuf *word, bool *in_word)
{
  if (!*in_word)
    return;
  char *w = strbuf_take(word);
  argv_push(words, w);
  free(w);
  *in_word = false;
}

/* Splits command into out (see gate.h). out is overwritten, not freed first:
 * pass an empty Argv. On success out owns argc >= 1 strings followed by NULL;
 * on error out is empty, nothing is leaked and err holds invalid_params
 * naming arg_name, what was found and its 0-based byte position.
 *
 * Long on purpose: it is one pass over the bytes with the quoting state
 * (none, single, double) in locals, and every quoting rule of
 * docs/protocol.md is a branch of that one loop; cut into helpers, each
 * would need the whole state passed back and forth, and the rules could no
 * longer be read side by side against the docs. */
int
gate_split(const char *command, const char *arg_name, Argv *out, VigilError *err)
{
  const char *name = arg_name ? arg_name : "command";
  const char *s = command ? command : "";
  Argv words = ARGV_INIT;
  StrBuf word = STRBUF_INIT;
  bool in_word = false;
  size_t i = 0;

  *out = (Argv)ARGV_INIT;
  while (s[i] != '\0') {
    char c = s[i];

    if (c == ' ' || c == '\t') {
      gate_end_word(&words, &word, &in_word);
      i++;
      continue;
    }

    if (c == '\\') {
      if (s[i + 1] == '\0') {
        error_set(err, kErrInvalidParams,
                  "%s: trailing backslash at position %zu escapes nothing", name, i);
        goto fail;
      }
      if (s[i + 1] != '\n') {
        strbuf_putc(&word, s[i + 1]);
        in_word = true;
      }
      i += 2;
      continue;
    }

    if (c == '\'') {
      size_t open = i++;
      in_word = true;
      while (s[i] != '\0' && s[i] != '\'')
        strbuf_putc(&word, s[i++]);
      if (s[i] == '\0') {
        error_set(err, kErrInvalidParams, "%s: unbalanced single quote opened at position %zu",
                  name, open);
        goto fail;
      }
      i++;
      continue;
    }

    if (c == '"') {
      size_t open = i++;
      in_word = true;
      for (;;) {
        char d = s[i];
        if (d == '\0') {
          error_set(err, kErrInvalidParams,
                    "%s: unbalanced double quote opened at position %zu", name, open);
          goto fail;
        }
        if (d == '"') {
          i++;
          break;
        }
        if (d == '\\') {
          char e = s[i + 1];
          if (e == '\n') {
            i += 2;
          } else if (e == '$' || e == '`' || e == '"' || e == '\\') {
            strbuf_putc(&word, e);
            i += 2;
          } else {
            /* Any other backslash is an ordinary character here. */
            strbuf_putc(&word, '\\');
            i++;
          }
          continue;
        }
        /* A shell substitutes these even inside double quotes, so passing
         * them on literally would not be what the command line says. */
        if (d == '`' || (d == '$' && s[i + 1] == '(')) {
          error_set(err, kErrInvalidParams,
                    "%s: command substitution \"%s\" inside double quotes at position %zu "
                    "is not allowed without shell mode",
                    name, d == '`' ? "`" : "$(", i);
          goto fail;
        }
        strbuf_putc(&word, d);
        i++;
      }
      continue;
    }

    if (c == '`' || (c == '$' && s[i + 1] == '(')) {
      error_set(err, kErrInvalidParams,
                "%s: command substitution \"%s\" at position %zu is not allowed without "
                "shell mode",
                name, c == '`' ? "`" : "$(", i);
      goto fail;
    }

    const char *op = gate_operator_at(s, i);
    if (op != NULL) {
      error_set(err, kErrInvalidParams,
                "%s: shell operator \"%s\" at position %zu is not allowed without shell mode",
                name, op, i);
      goto fail;
    }

    strbuf_putc(&word, c);
    in_word = true;
    i++;
  }
  gate_end_word(&words, &word, &in_word);
  strbuf_free(&word);

  if (words.argc == 0) {
    error_set(err, kErrInvalidParams, "%s: empty command", name);
    argv_free(&words);
    return -1;
  }
  *out = words;
  return 0;

fail:
  strbuf_free(&word);
  argv_free(&words);
  return -1;
}

/* Appends copies of items[0] .. items[n - 1] to out (which must be
 * initialised, e.g. ARGV_INIT), stopping early at a NULL item; pass
 * SIZE_MAX as n for a NULL-terminated list. The caller keeps items. */
/* See gate.h. */
void
gate_shell_argv(const char *command, Argv *out)
{
  argv_push(out, "/bin/sh");
  argv_push(out, "-c");
  argv_push(out, command);
}

void
argv_from(Argv *out, const char *const *items, size_t n)
{
  for (size_t i = 0; i < n && items != NULL && items[i] != NULL; i++)
    argv_push(out, items[i]);
}

/* Appends a copy of s, keeping argv[argc] == NULL. The array grows by one
 * slot per call: argvs are short, and an Argv built by hand (argv/argc set
 * directly) stays safe to push onto, which a hidden capacity would not. */
void
argv_push(Argv *a, const char *s)
{
  a->argv = xrealloc(a->argv, (a->argc + 2) * sizeof *a->argv);
  a->argv[a->argc++] = xstrdup(s);
  a->argv[a->argc] = NULL;
}

/* Frees every string and the array, and leaves a empty (ARGV_INIT), so
 * freeing twice is harmless. */
void
argv_free(Argv *a)
{
  for (size_t i = 0; i < a->argc; i++)
    free(a->argv[i]);
  free(a->argv);
  a->argv = NULL;
  a->argc = 0;
}

/* Adds a copy of entry to al (initialised, e.g. ALLOWLIST_INIT). Entries are
 * kept as written: no normalisation, duplicates harmless. */
void
allowlist_add(Allowlist *al, const char *entry)
{
  al->entries = xrealloc(al->entries, (al->n + 1) * sizeof *al->entries);
  al->entries[al->n++] = xstrdup(entry);
}

/* Frees every entry and leaves al empty (ALLOWLIST_INIT). */
void
allowlist_free(Allowlist *al)
{
  for (size_t i = 0; i < al->n; i++)
    free(al->entries[i]);
  free(al->entries);
  al->entries = NULL;
  al->n = 0;
}

/* Whether argv0 equals an entry of al (see the file comment for why equality
 * is exactly the rules of gate.h). An empty or NULL argv0 names no program
 * and is never allowed, whatever the list holds. */
bool
gate_allows(const Allowlist *al, const char *argv0)
{
  if (al == NULL || argv0 == NULL || argv0[0] == '\0')
    return false;
  for (size_t i = 0; i < al->n; i++) {
    if (strcmp(al->entries[i], argv0) == 0)
      return true;
  }
  return false;
}

/* The part of p after its last slash. */
static const char *
gate_basename(const char *p)
{
  const char *slash = strrchr(p, '/');
  return slash ? slash + 1 : p;
}

/* 0 when argv's program is allowed by al; otherwise -1 with err set to
 * denied. The message names the program and, when the list holds the same
 * program in the other form (bare name vs path), says which form to use,
 * since that mismatch is the denial an agent is most likely to hit. */
int
gate_check(const Allowlist *al, const Argv *argv, VigilError *err)
{
  if (al == NULL || al->n == 0)
    return error_set(err, kErrDenied,
                     "command: monitor.allowed_commands is empty, so every command is denied "
                     "(fail closed)");
  if (argv == NULL || argv->argc == 0 || argv->argv == NULL)
    return error_set(err, kErrDenied, "command: no program given (argv is empty)");

  const char *argv0 = argv->argv[0];
  if (argv0[0] == '\0')
    return error_set(err, kErrDenied, "command: the program name (argv[0]) is empty");
  if (gate_allows(al, argv0))
    return 0;

  char prog[GATE_QUOTE_BUF], other[GATE_QUOTE_BUF];
  gate_quote(prog, argv0);
  bool argv0_is_path = strchr(argv0, '/') != NULL;
  for (size_t i = 0; i < al->n; i++) {
    const char *e = al->entries[i];
    bool entry_is_path = strchr(e, '/') != NULL;
    if (argv0_is_path && !entry_is_path && strcmp(e, gate_basename(argv0)) == 0) {
      gate_quote(other, e);
      return error_set(err, kErrDenied,
                       "command: program %s is not in monitor.allowed_commands (the entry %s "
                       "allows only that bare name, found through PATH)",
                       prog, other);
    }
    if (!argv0_is_path && entry_is_path && strcmp(gate_basename(e), argv0) == 0) {
      gate_quote(other, e);
      return error_set(err, kErrDenied,
                       "command: program %s is not in monitor.allowed_commands (only the path "
                       "%s is listed; give that path as the program)",
                       prog, other);
    }
  }
  return error_set(err, kErrDenied, "command: program %s is not in monitor.allowed_commands",
                   prog);
}
