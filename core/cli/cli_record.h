/*
 * What `vigil start` started, kept so that `vigil restart` can start it
 * again exactly. The engine reports a monitor's label, description, mode,
 * notify, incidents, envelope and program, but not its argv or command,
 * shell, cwd, env, patterns, match_streams, policy, timeouts, persistent,
 * memory or cpu limit, or line buffering (docs/protocol.md, monitor_list:
 * "the raw command is never included"). So the client keeps the very
 * monitor_start arguments it sent, one file per monitor, and restart sends
 * them again; a monitor started any other way (by an agent, by the config)
 * has no record and is refused rather than restarted with guesses.
 *
 * The files: $XDG_STATE_HOME/vigil/starts/<monitor id> (else
 * ~/.local/state/vigil/starts/), mode 0600 in a 0700 directory since they
 * hold the --env values, each a msgpack map {socket, session, started_at,
 * request}. A record counts only for the same socket, session and
 * started_at as the monitor the engine reports, so a record never applies
 * to another engine's monitor. At most CLI_RECORD_MAX files are kept; the
 * oldest go first.
 */
#ifndef VIGIL_CLI_RECORD_H
#define VIGIL_CLI_RECORD_H

#include <msgpack.h>
#include <stddef.h>

#include "cli_client.h"

/* How many start records are kept (the newest). */
#define CLI_RECORD_MAX 256

/* The largest record read back: a request is one engine message
 * (rpc.max_message_bytes, 1 MiB by default) and a little more. */
#define CLI_RECORD_MAX_BYTES (4u << 20)

/* Keeps req, the arguments monitor id was started with at started_at (len
 * bytes), on c's socket and session. Returns 0, or -1 when it could not be
 * written (restart will then say there is no record). */
int cli_record_save(const CliClient *c, const char *id, const char *started_at, size_t len,
                    const CliReq *req);

/* Reads the record of monitor id back into req (initialised here; free it
 * with cli_req_free) when it was made on c's socket and session for the
 * monitor started at started_at (len bytes). Returns 0, or -1 when there is
 * no such record. */
int cli_record_load(const CliClient *c, const char *id, const char *started_at, size_t len,
                    CliReq *req);

/* Removes the record of monitor id, if any. */
void cli_record_forget(const char *id);

#endif
