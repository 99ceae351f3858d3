/*
 * Following one monitor's lines from the client, as they come, until it
 * ends: what `vigil run` prints live and what `vigil start --wait-for`
 * searches. One monitor_wait {for: "output", since_sequence} is outstanding
 * at a time; the engine answers it as soon as a newer line exists (or the
 * monitor has ended), and the new lines are then read with monitor_output.
 * Nothing polls, and nothing depends on the session being notified, so it
 * works in a connection's anonymous session (run) as in a named one.
 *
 * Lines the ring evicted before they were read (a child far faster than the
 * terminal) are not invented: they are counted in `missed`.
 */
#ifndef VIGIL_CLI_STREAM_H
#define VIGIL_CLI_STREAM_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/cli_client.h"

/* Why cli_stream_follow returned. */
typedef enum {
  kCliStreamEnded = 0,   /* the monitor ended and every line it left was handed over */
  kCliStreamDone,        /* the line callback asked to stop */
  kCliStreamDeadline,    /* the deadline passed first */
  kCliStreamInterrupted, /* the connection's wake fd fired (Ctrl-C) */
  kCliStreamFailed,      /* the engine or the connection failed: c->err says why */
} CliStreamEnd;

/* Called with each new line, a monitor_output line map ({seq, stream,
 * text, pattern, truncated}), valid only during the call. Returns true to
 * stop following. */
typedef bool (*CliStreamLineFn)(void *ctx, const msgpack_object *line);

typedef struct {
  const char *monitor_id;
  uint64_t next_seq;       /* lines after this seq are still to come; start at 0 */
  uint64_t missed;         /* lines evicted from the ring before they were read */
  CliStreamLineFn on_line;
  void *ctx;
} CliStream;

/* Follows s's monitor on c until it ends, on_line says stop, deadline
 * (cli_now_ms() time; -1: none) passes, or the wake fd fires. */
CliStreamEnd cli_stream_follow(CliClient *c, CliStream *s, int64_t deadline);

#endif
