/*
 * `vigil start --wait-for-ready`: after a start that declared readiness
 * (--ready-log, --ready-tcp, --ready-http), wait for the engine to say the
 * monitor is ready (monitor_wait {for: "ready"}, docs/readiness.md). Unlike
 * --wait-for (cli_waitfor.h), the judging is the engine's: the same
 * readiness the agent is told about, with its probes.
 */
#ifndef VIGIL_CLI_WAITREADY_H
#define VIGIL_CLI_WAITREADY_H

#include <stdint.h>

#include "cli/cli_client.h"

/* Waits up to timeout_ms for monitor id to be ready. Ready: prints "vigil:
 * ID is ready: REASON" to stderr and returns 0. Not ready in time, not ready
 * by its ready_timeout_ms, or ended first: prints why and the monitor's last
 * lines (escaped for a terminal) to stderr and returns CLI_EXIT_FAILURE
 * (the monitor is left as it is). */
int cli_waitready_run(CliClient *c, const char *id, uint64_t timeout_ms);

#endif
