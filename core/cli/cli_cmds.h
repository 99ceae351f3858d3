/*
 * The subcommands of `vigil`: each is a spec (its name, usage, help and
 * options, see cli_opts.h) and a function that runs it with a resolved
 * client and returns the process's exit status. The table of them, in the
 * order the top-level help lists them, lives in cli_cmds.c; the commands
 * themselves are grouped by what they do: cli_start.c (start, stop, run:
 * what runs), cli_show.c (list, status, events, logs: looking at a monitor),
 * cli_follow.c (output, wait, watch: waiting for the engine to tell them
 * something).
 */
#ifndef VIGIL_CLI_CMDS_H
#define VIGIL_CLI_CMDS_H

#include <msgpack.h>
#include <stdio.h>

#include "cli_client.h"
#include "cli_fmt.h"
#include "cli_opts.h"
#include "strbuf.h"

typedef struct {
  CliSpec spec;
  int (*run)(CliClient *c, const CliParsed *p); /* returns the exit status */
} CliCommand;

extern const CliCommand cli_cmd_start;
extern const CliCommand cli_cmd_stop;
extern const CliCommand cli_cmd_run;
extern const CliCommand cli_cmd_list;
extern const CliCommand cli_cmd_status;
extern const CliCommand cli_cmd_events;
extern const CliCommand cli_cmd_logs;
extern const CliCommand cli_cmd_output;
extern const CliCommand cli_cmd_wait;
extern const CliCommand cli_cmd_watch;
extern const CliCommand cli_cmd_mcp;

/* The subcommand called name, or NULL. */
const CliCommand *cli_cmds_find(const char *name);

/* Prints the top-level help (usage, every subcommand, the common options). */
void cli_cmds_help(FILE *f);

/* Parses an option's DURATION value into ms. Returns 0, or CLI_EXIT_USAGE
 * after printing why. */
int cli_cmds_duration(const CliParsed *p, const char *opt, uint64_t *ms);

/* Parses an option's non-negative integer value. Returns 0 (def when the
 * option was not given), or CLI_EXIT_USAGE after printing why. */
int cli_cmds_number(const CliParsed *p, const char *opt, uint64_t def, uint64_t *out);

/* Checks that an option's value is one of choices (NULL-terminated).
 * Returns 0, or CLI_EXIT_USAGE after printing why. */
int cli_cmds_choice(const CliParsed *p, const char *opt, const char *const *choices);

/* Appends how a monitor or process ended, from the exit_code and signal
 * keys of map: "exit code 0", "killed by SIGTERM"; nothing when neither. */
void cli_cmds_ending(StrBuf *out, const msgpack_object *map);

/* The colour of a state: running green, a clean exit plain, a stop yellow,
 * the rest (failures, timeouts, a non-zero exit) red. */
CliColour cli_cmds_state_colour(const msgpack_object *entry);

#endif
