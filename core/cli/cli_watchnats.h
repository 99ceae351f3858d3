/*
 * `vigil watch --nats URL`: a session's notifications read from the NATS
 * JetStream stream that engines publish into (docs/fleet.md), through a
 * durable pull consumer, printed as `vigil watch` prints them from the
 * engine's socket (cli_watchfmt.h). See cli_watchnats.c.
 */
#ifndef VIGIL_CLI_WATCHNATS_H
#define VIGIL_CLI_WATCHNATS_H

#include "cli/cli_client.h"
#include "cli/cli_opts.h"
#include "cli/cli_watchfmt.h"

/* Runs watch with --nats (p holds watch's options, c the session's name;
 * nothing is asked of the engine's socket) in style, until Ctrl-C (exit
 * status 128+N for signal N), until the reader of stdout goes (0), or an
 * error (1, said on stderr). A bad option is a usage error (2). */
int cli_watchnats_run(CliClient *c, const CliParsed *p, WatchStyle style);

#endif
