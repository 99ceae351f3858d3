/*
 * `vigil start --wait-for PATTERN` (and restart's): after a start, wait
 * until a line of the monitor matches PATTERN, so that a script can go on
 * once a dev server says it is listening.
 *
 * The match is made here, in the client, with PCRE2 compiled as the engine
 * compiles -e (UTF, invalid bytes tolerated, the engine's default match and
 * depth limits), so the same pattern means the same in both ((?i), \d,
 * lookarounds), against each line's text as monitor_output gives it (ANSI
 * escapes removed), from the monitor's first line on. Not in the engine, on
 * purpose: passing PATTERN as one of the monitor's patterns would change
 * what the agent is notified about (a ready line would become a match, and
 * without -e the built-in crash patterns would be replaced).
 *
 * On a terminal (stderr), a waiting line says what it waits for while it
 * waits, erased when the wait ends.
 */
#ifndef VIGIL_CLI_WAITFOR_H
#define VIGIL_CLI_WAITFOR_H

#include <stdint.h>

#include "cli/cli_client.h"
#include "cli/cli_opts.h"

/* How long --wait-for waits when --wait-timeout is not given. */
#define CLI_WAITFOR_DEFAULT_MS 60000

/* How many of the monitor's last lines a failed wait shows. */
#define CLI_WAITFOR_TAIL_LINES 20

/* Checks that pattern compiles. Returns 0, or CLI_EXIT_USAGE after printing
 * why (naming opt). */
int cli_waitfor_check(const CliSpec *spec, const char *opt, const char *pattern);

/* Waits up to timeout_ms for a line of monitor id matching pattern. On a
 * match prints it (stderr: "vigil: mon_x is ready: LINE") and returns 0;
 * when the monitor ends first or the time runs out, prints why and the
 * monitor's last CLI_WAITFOR_TAIL_LINES lines to stderr and returns 1 (the
 * monitor is left as it is: running after a timeout). */
int cli_waitfor_run(CliClient *c, const char *id, const char *pattern, uint64_t timeout_ms);

#endif
