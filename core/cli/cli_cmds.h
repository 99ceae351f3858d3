/*
 * The subcommands of `vigil`: each is a spec (its name, usage, help and
 * options, see cli_opts.h) and a function that runs it with a resolved
 * client and returns the process's exit status. The table of them, in the
 * order the top-level help lists them, lives in cli_cmds.c; the commands
 * themselves are grouped by what they do: cli_start.c (start, stop, run:
 * what runs), cli_show.c (list, status, events, logs: looking at a monitor),
 * cli_follow.c (output, wait, watch: waiting for the engine to tell them
 * something; watch --nats reads a fleet's broker instead, cli_watchnats.c), cli_groups.c (up, down, groups: the config's groups),
 * cli_ignore.c (ignore, ignored, unignore: silenced fingerprints),
 * cli_hook.c (hook: what a harness runs at its hook events).
 */
#ifndef VIGIL_CLI_CMDS_H
#define VIGIL_CLI_CMDS_H

#include <msgpack.h>
#include <stdio.h>

#include "cli/cli_client.h"
#include "cli/cli_fmt.h"
#include "cli/cli_opts.h"
#include "base/strbuf.h"

/* A command: `{.spec = {.name = "start", ...}, .run = cli_start_run}`, the
 * spec's unused fields (no options past its table, no arguments, no
 * "-- CMD") left out. */
typedef struct {
  CliSpec spec;
  int (*run)(CliClient *c, const CliParsed *p); /* returns the exit status */
} CliCommand;

extern const CliCommand cli_cmd_start;
extern const CliCommand cli_cmd_stop;
extern const CliCommand cli_cmd_restart;
extern const CliCommand cli_cmd_run;
extern const CliCommand cli_cmd_list;
extern const CliCommand cli_cmd_status;
extern const CliCommand cli_cmd_events;
extern const CliCommand cli_cmd_logs;
extern const CliCommand cli_cmd_output;
extern const CliCommand cli_cmd_wait;
extern const CliCommand cli_cmd_watch;
extern const CliCommand cli_cmd_mcp;
extern const CliCommand cli_cmd_hook;
extern const CliCommand cli_cmd_sessions;
extern const CliCommand cli_cmd_setup;
extern const CliCommand cli_cmd_reload;
extern const CliCommand cli_cmd_engine;
extern const CliCommand cli_cmd_shutdown;
extern const CliCommand cli_cmd_policy;
extern const CliCommand cli_cmd_up;
extern const CliCommand cli_cmd_down;
extern const CliCommand cli_cmd_groups;
extern const CliCommand cli_cmd_ignore;
extern const CliCommand cli_cmd_ignored;
extern const CliCommand cli_cmd_unignore;
extern const CliCommand cli_cmd_complete_ids; /* "__complete-ids", not in the help */

/* The engine's bounds the client checks before sending (docs/protocol.md):
 * monitor_stop's grace_ms, monitor_start's idle_timeout_ms, and the longest
 * exit drain (monitor.exit_drain_ms) a stop may add. */
#define CLI_GRACE_MAX_MS 600000
#define CLI_IDLE_TIMEOUT_MAX_MS 3600000
#define CLI_EXIT_DRAIN_MAX_MS 60000

/* How long after a stop the engine may still take to answer: the longest
 * grace and exit drain it accepts, and some slack. */
#define CLI_STOP_MARGIN_MS (CLI_GRACE_MAX_MS + CLI_EXIT_DRAIN_MAX_MS + CLI_CALL_TIMEOUT_MS)

/* --- shared by start, restart and run (cli_start.c) --- */

/* The options start and run share, which cli_start_command reads: where
 * the command runs, what it gets of the environment, how it is sent. */
#define CLI_START_PROCESS_OPTS                                                                           \
  {.name = "cwd", .arg = "DIR", .help = "where it runs (default: the current directory)"},               \
  {.name = "env", .arg = "K=V", .repeat = true,                                                          \
   .help = "set K to V on top of the engine's environment (the child\ngets only that and what "          \
   "monitor.env_inherit passes of the\nengine's: not your shell's variables)"},                          \
  {.name = "pass-env", .arg = "NAME", .repeat = true,                                                    \
   .help = "pass your variable NAME on (PREFIX*: every one starting\nso); monitor.env_deny still "       \
   "refuses PATH, LD_* ..."},                                                                            \
  {.name = "pass-env-all",                                                                               \
   .help = "pass your whole environment on, but what monitor.env_deny\nrefuses (PATH, HOME, LD_* ...): " \
   "that is left out, not\nrefused, and a note on stderr names it; --env still wins"},                   \
  {.name = "caller-path",                                                                                \
   .help = "find the program in your PATH (a venv's python) and start\nthat absolute path, which the "   \
   "allowlist must allow; the\nchild keeps the engine's PATH"},                                          \
  {.name = "shell",                                                                                      \
   .help = "run CMD as one command line with /bin/sh -c (when the\nengine allows shell commands)"},      \
  {.name = "no-line-buffer",                                                                             \
   .help = "leave its stdout buffered as the program chooses (by\ndefault the engine makes it "          \
   "line-buffered)"}

/* Adds command/argv, shell, cwd, env and line_buffered (the options start
 * and run share) to req. Returns 0, or CLI_EXIT_USAGE after printing why. */
int cli_start_command(const CliParsed *p, CliReq *req);

/* How long to wait for monitor_stop's answer, given the --grace (if any). */
int64_t cli_start_stop_wait_ms(bool has_grace, uint64_t grace);

/* Checks a --timeout of timeout ms against the engine's
 * monitor.max_runtime_ms (asked on c, connected). Returns 0, or
 * CLI_EXIT_USAGE after printing why. */
int cli_start_check_timeout(CliClient *c, const CliParsed *p, uint64_t timeout);

/* Sends monitor_start with req on c (connected, in its session), prints the
 * new id (or the result with --json), and with wait_for waits up to
 * wait_timeout ms for a matching line (cli_waitfor.h). Sets new_id (64
 * bytes) to the new monitor's id, "" when none started. Returns the exit
 * status. */
int cli_start_send(CliClient *c, CliReq *req, const char *wait_for, uint64_t wait_timeout,
                   char *new_id);

/* --- the interleaved view (cli_tail.c) --- */

/* Prints the lines of the session's running monitors (stream: monitor_output's
 * filter), each prefixed with its label; with limited, only the last first
 * lines of each. With only_arg (an ID argument), that one monitor alone,
 * ended or not. With follow, then every new line as it comes, of those and
 * of monitors started since, until SIGINT, the engine goes (status 0) or,
 * with only_arg, that monitor has ended. Returns the exit status. */
int cli_tail_run(CliClient *c, const char *stream, const char *only_arg, bool follow, bool limited,
                 uint64_t first);

/* --- shared by list and sessions (cli_show.c) --- */

/* Prints monitor_list's `monitors` array as list's table on stdout: id,
 * label, state, pid, uptime, lines, matched lines, the last line, cut to
 * the terminal's width, columns padded by display width. With c (a client
 * in the monitors' own session), also each monitor's CPU time, peak memory
 * and command, from one monitor_status call per row; sessions, which shows
 * other sessions' monitors, passes NULL. */
void cli_show_monitor_table(const msgpack_object *list, CliClient *c);

/* The subcommand called name, or NULL. */
const CliCommand *cli_cmds_find(const char *name);

/* The subcommands closest to a mistyped name (cli_suggest.h), each quoted,
 * joined by " or ", appended to out: "\"stop\" or \"setup\"". Returns
 * whether any is close enough to name. */
bool cli_cmds_suggest(const char *typed, StrBuf *out);

/* Prints the top-level help (usage, every subcommand, the common options). */
void cli_cmds_help(FILE *f);

/* Parses an option's DURATION value into ms (a bare number is seconds) and
 * checks it is within min_ms..max_ms (max_ms CLI_DURATION_MAX_MS: no bound
 * but the parser's). Returns 0 (*ms untouched when the option was not
 * given), or CLI_EXIT_USAGE after printing why: the option, the value and
 * the bound it broke. */
int cli_cmds_duration(const CliParsed *p, const char *opt, uint64_t min_ms, uint64_t max_ms,
                      uint64_t *ms);

/* Parses an option's non-negative integer value. Returns 0 (def when the
 * option was not given), or CLI_EXIT_USAGE after printing why. */
int cli_cmds_number(const CliParsed *p, const char *opt, uint64_t def, uint64_t *out);

/* The number of last lines asked for by --limit (-n) or its docker/pm2
 * name --tail (0 when neither): one of them, a usage error for both. */
int cli_cmds_last_lines(const CliParsed *p, uint64_t *n);

/* Checks that an option's value is one of choices (NULL-terminated).
 * Returns 0, or CLI_EXIT_USAGE after printing why. */
int cli_cmds_choice(const CliParsed *p, const char *opt, const char *const *choices);

/* Appends how a monitor or process ended, from the exit_code and signal
 * keys of map: "exit code 0", "killed by SIGTERM"; nothing when neither. */
void cli_cmds_ending(StrBuf *out, const msgpack_object *map);

/* The exit statuses that pass on a monitor's ending where it has no exit
 * code of its own (run and output --follow; docs/cli.md, Exit statuses):
 * stopped by a request, stopped for sustained overload, stopped by its
 * runtime cap or idle timeout (124, as timeout(1) has it), failed to run. */
#define CLI_EXIT_STOPPED 122
#define CLI_EXIT_OVERLOADED 123
#define CLI_EXIT_TIMED_OUT 124
#define CLI_EXIT_RUN_FAILED 125

/* From a monitor_status map (or a list entry) of an ended monitor: the exit
 * status that passes its ending on (its exit code; 128+N when signal N
 * killed it and no request did; else a status above), and appends how it
 * ended to how: "exited with status 4", "killed by SIGSEGV", "stopped by
 * request (SIGTERM)", "timed out: runtime cap of 300 ms reached". */
int cli_cmds_end_status(const msgpack_object *m, StrBuf *how);

/* The colour of a state: running green, a clean exit plain, a stop yellow,
 * the rest (failures, timeouts, a non-zero exit) red. */
CliColour cli_cmds_state_colour(const msgpack_object *entry);

#endif
