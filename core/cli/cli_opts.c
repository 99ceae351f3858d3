/*
 * Option parsing and generated help (see cli_opts.h). Options are found by
 * a linear search of small tables; values are pointers into argv, kept per
 * option in arrays sized by argc, so nothing here can grow past the command
 * line it was given.
 */
#include "cli/cli_opts.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_suggest.h"
#include "base/memory.h"

/* The options every subcommand takes. */
static const CliOpt cli_opts_common_table[] = {
  {.name = "socket", .arg = "PATH",
   .help = "the engine's socket (default: $VIGIL_SOCKET, else\n"
   "$XDG_RUNTIME_DIR/vigil/vigil.sock, else /tmp/vigil-$UID/vigil.sock)"},
  {.name = "session", .arg = "NAME",
   .help = "the session to work in (default: $VIGIL_SESSION, else the\n"
   "project's, the one vigil mcp uses in this directory's project)"},
  {.name = "json", .help = "print the engine's answer as JSON instead of text"},
  {.name = "nats", .arg = "URL",
   .help = "reach the engine through a NATS server instead of its socket\n"
   "(docs/fleet.md section 6; with --engine; start, list, status,\n"
   "output, logs, stop, sessions, mcp, hook and setup)"},
  {.name = "engine", .arg = "NAME", .help = "the engine's name in the fleet (with --nats)"},
  {.name = "help", .short_name = 'h', .help = "show this help"},
  {0},
};

/* The commands --json does not apply to: mcp speaks JSON-RPC (MCP) on its
 * stdout whatever is given, so the flag would be ignored in silence. Their
 * --help does not list it and giving it is a usage error. */
static const char *const cli_opts_no_json[] = {"mcp", NULL};

/* Whether --json applies to spec's command. */
static bool
cli_opts_takes_json(const CliSpec *spec)
{
  for (size_t i = 0; cli_opts_no_json[i]; i++) {
    if (strcmp(spec->name, cli_opts_no_json[i]) == 0)
      return false;
  }
  return true;
}

/* Stores a common option's value in p. */
static void
cli_opts_set_common(CliParsed *p, const CliOpt *o, const char *value)
{
  if (strcmp(o->name, "socket") == 0)
    p->socket = value;
  else if (strcmp(o->name, "session") == 0)
    p->session = value;
  else if (strcmp(o->name, "json") == 0)
    p->json = true;
  else if (strcmp(o->name, "nats") == 0)
    p->nats = value;
  else if (strcmp(o->name, "engine") == 0)
    p->engine = value;
  else
    p->help = true;
}

/* Finds the option that word names in table: "--name", "--name=value",
 * "-x" or "-xvalue". Sets *inline_value to what follows '=' (or the letter),
 * NULL when nothing does. Returns the option or NULL. */
static const CliOpt *
cli_opts_find(const CliOpt *table, const char *word, const char **inline_value)
{
  *inline_value = NULL;
  if (word[0] != '-' || word[1] == '\0')
    return NULL;
  if (word[1] == '-') {
    const char *name = word + 2;
    const char *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    for (const CliOpt *o = table; o->name; o++) {
      if (strlen(o->name) == n && strncmp(o->name, name, n) == 0) {
        *inline_value = eq ? eq + 1 : NULL;
        return o;
      }
    }
    return NULL;
  }
  for (const CliOpt *o = table; o->name; o++) {
    if (o->short_name && o->short_name == word[1]) {
      *inline_value = word[2] ? word + 2 : NULL;
      return o;
    }
  }
  return NULL;
}

/* Reads the value of option o found at argv[*i]. Returns 0 with *value set
 * (NULL for a flag), or CLI_EXIT_USAGE after printing why. */
static int
cli_opts_value(const CliSpec *spec, const CliOpt *o, int argc, char **argv, int *i,
               const char *inline_value, const char **value)
{
  *value = NULL;
  if (o->arg == NULL) {
    if (inline_value != NULL)
      return cli_opts_usage_error(spec, "--%s takes no value", o->name);
    return 0;
  }
  if (inline_value != NULL) {
    *value = inline_value;
    return 0;
  }
  if (o->arg[0] == '[') {
    *value = ""; /* a value that may be left out was */
    return 0;
  }
  if (*i + 1 >= argc)
    return cli_opts_usage_error(spec, "--%s needs a value (%s)", o->name, o->arg);
  *value = argv[++*i];
  return 0;
}

int
cli_opts_unknown(const CliSpec *spec, const char *word)
{
  const char *suggestion = NULL;
  if (word[0] == '-' && word[1] == '-') {
    char typed[CLI_SUGGEST_MAX_LEN + 1];
    snprintf(typed, sizeof typed, "%.*s", (int)strcspn(word + 2, "="), word + 2);
    CliSuggest s;
    cli_suggest_init(&s, typed);
    for (const CliOpt *o = spec ? spec->opts : cli_opts_common_table; o->name; o++)
      cli_suggest_offer(&s, o->name);
    for (const CliOpt *o = cli_opts_common_table; spec && o->name; o++)
      cli_suggest_offer(&s, o->name);
    suggestion = cli_suggest_best(&s);
  }
  if (suggestion)
    return cli_opts_usage_error(spec, "unknown option \"%s\"; did you mean \"--%s\"?", word,
                                suggestion);
  return cli_opts_usage_error(spec, "unknown option \"%s\"", word);
}

/* The short option letter of spec (or of the common options), or NULL. */
static const CliOpt *
cli_opts_short(const CliSpec *spec, char letter)
{
  for (const CliOpt *o = spec->opts; o->name; o++)
    if (o->short_name == letter)
      return o;
  for (const CliOpt *o = cli_opts_common_table; o->name; o++)
    if (o->short_name == letter)
      return o;
  return NULL;
}

/* Whether letter is a short option of spec that takes no value: a word
 * starting with one is a cluster of short options ("-fn 2"). */
static bool
cli_opts_short_flag(const CliSpec *spec, char letter)
{
  const CliOpt *o = cli_opts_short(spec, letter);
  return o != NULL && o->arg == NULL;
}

/* Stores value (NULL for a flag) for option o of spec in p; common options
 * go to their fields. Returns 0, or CLI_EXIT_USAGE for a second value of an
 * option that takes one. */
static int
cli_opts_store(const CliSpec *spec, const CliOpt *o, const char *value, CliParsed *p)
{
  size_t k = 0;
  while (spec->opts[k].name && &spec->opts[k] != o)
    k++;
  if (spec->opts[k].name == NULL) {
    cli_opts_set_common(p, o, value);
    return 0;
  }
  if (k >= CLI_OPTS_MAX)
    return 0;
  if (p->nvals[k] > 0 && !o->repeat)
    return cli_opts_usage_error(spec, "--%s given more than once", o->name);
  p->vals[k][p->nvals[k]++] = value ? value : "";
  return 0;
}

/* Reads the cluster of short options at argv[*i], as getopt does: "-fn 2",
 * "-fn2", "-af": each letter a flag of spec, except that the first letter
 * taking a value takes the rest of the word, or the next word when none is
 * left. Returns 0 (with *i past what it took), or CLI_EXIT_USAGE after
 * printing why (a letter that is no short option of spec, a missing
 * value). */
static int
cli_opts_cluster(const CliSpec *spec, int argc, char **argv, int *i, CliParsed *p)
{
  const char *w = argv[*i];
  for (size_t j = 1; w[j]; j++) {
    const CliOpt *o = cli_opts_short(spec, w[j]);
    if (o == NULL) {
      char letter[3] = {'-', w[j], '\0'};
      if (p->help)
        return 0;
      return cli_opts_usage_error(spec, "unknown option \"%s\" (in \"%s\")", letter, w);
    }
    const char *value = NULL;
    if (o->arg != NULL) {
      /* A value that may be left out is never taken from the next word. */
      if (w[j + 1] != '\0')
        value = w + j + 1;
      else if (o->arg[0] == '[')
        value = "";
      else if (*i + 1 < argc)
        value = argv[++*i];
      else
        return cli_opts_usage_error(spec, "--%s needs a value (%s)", o->name, o->arg);
    }
    int rc = cli_opts_store(spec, o, value, p);
    if (rc != 0 || o->arg != NULL)
      return rc;
  }
  return 0;
}

int
cli_opts_common(int argc, char **argv, int *i, CliParsed *p)
{
  const char *inline_value;
  const CliOpt *o = cli_opts_find(cli_opts_common_table, argv[*i], &inline_value);
  if (o == NULL)
    return 0;
  const char *value;
  int rc = cli_opts_value(NULL, o, argc, argv, i, inline_value, &value);
  if (rc != 0)
    return rc;
  cli_opts_set_common(p, o, value);
  return 1;
}

int
cli_opts_parse(const CliSpec *spec, int argc, char **argv, CliParsed *p)
{
  p->spec = spec;
  size_t nopts = 0;
  while (spec->opts[nopts].name)
    nopts++;
  if (nopts > CLI_OPTS_MAX) {
    /* A table past the bound would lose its last options' values without
     * a word (start's --wait-timeout once did): a programming error, said
     * at once by every use of the command, so no test of it can pass. */
    fprintf(stderr, "vigil: internal: %s has %zu options, more than CLI_OPTS_MAX (%d)\n",
            spec->name, nopts, CLI_OPTS_MAX);
    exit(70);
  }
  for (size_t k = 0; k < nopts; k++) {
    p->vals[k] = xcalloc((size_t)argc + 1, sizeof(char *));
    p->nvals[k] = 0;
  }
  for (int i = 0; i < argc; i++) {
    const char *w = argv[i];
    if (strcmp(w, "--") == 0) {
      if (spec->command) {
        p->cmd = argv + i + 1;
        p->ncmd = argc - i - 1;
        break;
      }
      /* Anything after "--" is a plain word, even if it starts with '-'. */
      for (i++; i < argc; i++) {
        if (p->nargs >= spec->max_args)
          return cli_opts_usage_error(spec, "unexpected argument \"%s\"", argv[i]);
        p->args[p->nargs++] = argv[i];
      }
      break;
    }
    if (w[0] == '-' && w[1] != '-' && w[1] != '\0' && w[2] != '\0' &&
        cli_opts_short_flag(spec, w[1])) {
      int rc = cli_opts_cluster(spec, argc, argv, &i, p);
      if (rc != 0)
        return rc;
      continue;
    }
    if (w[0] == '-' && w[1] != '\0') {
      const char *inline_value, *value;
      const CliOpt *o = cli_opts_find(spec->opts, w, &inline_value);
      if (o != NULL) {
        int rc = cli_opts_value(spec, o, argc, argv, &i, inline_value, &value);
        if (rc != 0)
          return rc;
        size_t k = (size_t)(o - spec->opts);
        if (k >= CLI_OPTS_MAX)
          continue;
        if (p->nvals[k] > 0 && !o->repeat)
          return cli_opts_usage_error(spec, "--%s given more than once", o->name);
        p->vals[k][p->nvals[k]++] = value ? value : "";
        continue;
      }
      o = cli_opts_find(cli_opts_common_table, w, &inline_value);
      if (o != NULL) {
        int rc = cli_opts_value(spec, o, argc, argv, &i, inline_value, &value);
        if (rc != 0)
          return rc;
        cli_opts_set_common(p, o, value);
        continue;
      }
      if (p->help)
        continue; /* --help wins over whatever else is wrong */
      return cli_opts_unknown(spec, w);
    }
    if (p->nargs < spec->max_args) {
      p->args[p->nargs++] = argv[i];
      continue;
    }
    if (spec->command) {
      /* The first word past the plain arguments starts the command; what
       * follows is its own, options included. */
      p->cmd = argv + i;
      p->ncmd = argc - i;
      break;
    }
    if (!p->help)
      return cli_opts_usage_error(spec, "unexpected argument \"%s\"", w);
  }
  if (p->help)
    return 0;
  if (p->json && !cli_opts_takes_json(spec))
    return cli_opts_usage_error(spec, "--json does not apply to %s (it writes JSON-RPC already)",
                                spec->name);
  if (p->nargs < spec->min_args)
    return cli_opts_usage_error(spec, "missing %s", spec->args);
  const char *instead = NULL; /* the option given in place of the command */
  for (size_t i = 0; spec->command_unless != NULL && spec->command_unless[i]; i++)
    if (cli_opts_has(p, spec->command_unless[i]))
      instead = spec->command_unless[i];
  if (spec->command && instead != NULL && p->ncmd > 0)
    return cli_opts_usage_error(spec, "give --%s or a command to run, not both", instead);
  if (spec->command && p->ncmd == 0 && instead == NULL) {
    char alt[128] = "";
    for (size_t i = 0, at = 0; spec->command_unless != NULL && spec->command_unless[i]; i++)
      at += (size_t)snprintf(alt + at, at < sizeof alt ? sizeof alt - at : 0, " or --%s",
                             spec->command_unless[i]);
    return cli_opts_usage_error(spec, "missing the command to run (after \"--\")%s", alt);
  }
  return 0;
}

void
cli_opts_free(CliParsed *p)
{
  for (size_t k = 0; k < CLI_OPTS_MAX; k++) {
    free(p->vals[k]);
    p->vals[k] = NULL;
    p->nvals[k] = 0;
  }
}

/* The index of option name in p's spec, or -1. */
static int
cli_opts_index(const CliParsed *p, const char *name)
{
  for (int k = 0; p->spec && p->spec->opts[k].name && k < CLI_OPTS_MAX; k++)
    if (strcmp(p->spec->opts[k].name, name) == 0)
      return k;
  return -1;
}

const char *
cli_opts_get(const CliParsed *p, const char *name)
{
  int k = cli_opts_index(p, name);
  return k >= 0 && p->nvals[k] > 0 ? p->vals[k][p->nvals[k] - 1] : NULL;
}

bool
cli_opts_has(const CliParsed *p, const char *name)
{
  int k = cli_opts_index(p, name);
  return k >= 0 && p->nvals[k] > 0;
}

size_t
cli_opts_all(const CliParsed *p, const char *name, const char *const **vals)
{
  int k = cli_opts_index(p, name);
  if (k < 0 || p->nvals[k] == 0) {
    *vals = NULL;
    return 0;
  }
  *vals = p->vals[k];
  return p->nvals[k];
}

/* Prints "usage: vigil NAME [OPTIONS] ARGS". */
static void
cli_opts_usage_line(const CliSpec *spec, FILE *f)
{
  if (spec == NULL) {
    fputs("usage: vigil [--socket PATH] [--session NAME] [--json] COMMAND [ARGS...]\n", f);
    return;
  }
  fprintf(f, "usage: vigil %s [OPTIONS]%s%s\n", spec->name, spec->args[0] ? " " : "",
          spec->args);
}

int
cli_opts_usage_error(const CliSpec *spec, const char *fmt, ...)
{
  fputs("vigil: ", stderr);
  if (spec)
    fprintf(stderr, "%s: ", spec->name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  cli_opts_usage_line(spec, stderr);
  if (spec)
    fprintf(stderr, "Try 'vigil %s --help' for its options.\n", spec->name);
  else
    fputs("Try 'vigil --help' for the commands.\n", stderr);
  return CLI_EXIT_USAGE;
}

/* The text "-e, --pattern PATTERN" of an option's help line. */
static void
cli_opts_label(const CliOpt *o, char *out, size_t size)
{
  /* "--wait[=SECONDS]" for a value that may be left out. */
  bool optional = o->arg != NULL && o->arg[0] == '[';
  char arg[64] = "";
  if (optional)
    snprintf(arg, sizeof arg, "[=%s", o->arg + 1);
  else if (o->arg != NULL)
    snprintf(arg, sizeof arg, " %s", o->arg);
  if (o->short_name)
    snprintf(out, size, "-%c, --%s%s", o->short_name, o->name, arg);
  else
    snprintf(out, size, "    --%s%s", o->name, arg);
}

/* Prints a table of options, each help line indented to one column, all
 * but the one named skip (NULL: none). */
static void
cli_opts_print_table(const CliOpt *table, FILE *f, size_t column, const char *skip)
{
  for (const CliOpt *o = table; o->name; o++) {
    if (skip && strcmp(o->name, skip) == 0)
      continue;
    char label[96];
    cli_opts_label(o, label, sizeof label);
    fprintf(f, "  %-*s  ", (int)column, label);
    for (const char *h = o->help; *h; h++) {
      fputc(*h, f);
      if (*h == '\n')
        fprintf(f, "  %-*s  ", (int)column, "");
    }
    if (o->repeat)
      fputs(" (repeatable)", f);
    fputc('\n', f);
  }
}

/* The widest option label of a table. */
static size_t
cli_opts_label_width(const CliOpt *table)
{
  size_t w = 0;
  for (const CliOpt *o = table; o->name; o++) {
    char label[96];
    cli_opts_label(o, label, sizeof label);
    if (strlen(label) > w)
      w = strlen(label);
  }
  return w;
}

void
cli_opts_help_common(FILE *f)
{
  cli_opts_print_table(cli_opts_common_table, f, cli_opts_label_width(cli_opts_common_table),
                       NULL);
}

void
cli_opts_help(const CliSpec *spec, FILE *f)
{
  cli_opts_usage_line(spec, f);
  fprintf(f, "\n%s\n", spec->about);
  size_t w = cli_opts_label_width(spec->opts);
  size_t wc = cli_opts_label_width(cli_opts_common_table);
  if (wc > w)
    w = wc;
  if (spec->opts[0].name) {
    fputs("\nOptions:\n", f);
    cli_opts_print_table(spec->opts, f, w, NULL);
  }
  fputs("\nCommon options (before or after the command name):\n", f);
  cli_opts_print_table(cli_opts_common_table, f, w, cli_opts_takes_json(spec) ? NULL : "json");
}
