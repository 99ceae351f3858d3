/*
 * The client's command line: each subcommand declares its options in a
 * table (long name, short letter, value placeholder, help), and one parser
 * reads them, with the options every subcommand shares (--socket,
 * --session, --json, -h/--help) accepted before or after the subcommand
 * name. --help output is generated from the same tables, so every option a
 * subcommand takes is listed in its help.
 *
 * Words: "--name VALUE", "--name=VALUE", "-x VALUE", "-xVALUE", flags
 * "--name", an option whose value may be left out "--name" or
 * "--name=VALUE", and clusters of short options as getopt reads them
 * ("-fn 2", "-fn2": flags, then at most one letter that takes a value). A subcommand that runs a command takes everything after "--"
 * (or from its first plain word on) verbatim: nothing there is parsed or
 * re-split. A usage error is reported on stderr with the subcommand's usage
 * line and ends in exit status 2.
 */
#ifndef VIGIL_CLI_OPTS_H
#define VIGIL_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_OPTS_MAX 48
#define CLI_ARGS_MAX 4

/* The exit status of a usage error. */
#define CLI_EXIT_USAGE 2

/* An option; a table's rows name their fields (`{.name = "label", .arg = "L",
 * .help = ...}`), leaving out what is 0, NULL or false. */
typedef struct {
  const char *name;   /* long form without "--": "label"; NULL ends a table */
  char short_name;    /* 'e' for -e, or 0 */
  const char *arg;    /* placeholder of its value ("DURATION"); NULL for a flag;
                         in brackets ("[SECONDS]") when the value may be left
                         out: "--wait" alone (read as "") or "--wait=VALUE",
                         never "--wait VALUE" */
  bool repeat;        /* may be given more than once, every value kept */
  const char *help;   /* may hold '\n' for more lines */
} CliOpt;

typedef struct {
  const char *name;    /* "start" */
  const char *args;    /* what follows the options in the usage line: "ID" */
  const char *summary; /* one line for the top-level help */
  const char *about;   /* the paragraph of its --help */
  const CliOpt *opts;  /* its own options, ending with {0} */
  int min_args;        /* plain words (an ID) it needs ... */
  int max_args;        /* ... and takes at most */
  bool command;        /* takes "-- CMD [ARGS...]" */
  const char *const *command_unless; /* options that stand in for the command (start's
                                        --file, --ws), NULL-terminated; NULL: none */
} CliSpec;

/* The parsed command line. The strings point into argv. */
typedef struct {
  const CliSpec *spec;
  const char **vals[CLI_OPTS_MAX]; /* per option of spec->opts: its values */
  size_t nvals[CLI_OPTS_MAX];
  const char *args[CLI_ARGS_MAX];
  int nargs;
  char **cmd;                      /* the command words (spec->command) */
  int ncmd;
  const char *socket;              /* the common options */
  const char *session;
  const char *nats;                /* --nats URL: requests over NATS (docs/fleet.md 6) */
  const char *engine;              /* --engine NAME, with --nats */
  bool json;
  bool help;
} CliParsed;

/* Reads one common option at argv[*i] (before the subcommand name). Returns
 * 1 when it was one (and *i moved past its value), 0 when it is not one, or
 * CLI_EXIT_USAGE after printing why (a missing value). */
int cli_opts_common(int argc, char **argv, int *i, CliParsed *p);

/* Parses the words after the subcommand name into p (whose common options
 * may already be set). Returns 0, or CLI_EXIT_USAGE after printing why. */
int cli_opts_parse(const CliSpec *spec, int argc, char **argv, CliParsed *p);

/* Frees what cli_opts_parse allocated. */
void cli_opts_free(CliParsed *p);

/* The last value of option name (NULL when not given), whether it was
 * given at all, and every value given (in order). */
const char *cli_opts_get(const CliParsed *p, const char *name);
bool cli_opts_has(const CliParsed *p, const char *name);
size_t cli_opts_all(const CliParsed *p, const char *name, const char *const **vals);

/* Prints "vigil: NAME: <message>", the usage line and where help is to
 * stderr; returns CLI_EXIT_USAGE. spec NULL: the top level. */
int cli_opts_usage_error(const CliSpec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reports an unknown option word as a usage error, with the closest known
 * option of spec (and the common ones; spec NULL: the common ones alone)
 * when one is close enough: 'unknown option "--tmeout"; did you mean
 * "--timeout"?'. Returns CLI_EXIT_USAGE. */
int cli_opts_unknown(const CliSpec *spec, const char *word);

/* Prints a subcommand's full help (usage, about, its options and the
 * common ones) to f. */
void cli_opts_help(const CliSpec *spec, FILE *f);

/* Prints the common options' help lines to f. */
void cli_opts_help_common(FILE *f);

#endif
