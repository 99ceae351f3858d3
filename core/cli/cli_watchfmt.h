/*
 * How `vigil watch` shows a notification, whether it came over the
 * engine's socket or off the broker (docs/cli.md, watch): the envelope an
 * agent would see after a header line naming it, one JSON object a line
 * (--json), or one escaped line (--oneline) for a harness's line monitor.
 *
 * A notification from the socket was rendered by the engine the client
 * talks to, whose envelope has already escaped everything a process
 * printed. One off the broker was put there by anyone who could publish:
 * its text is sanitized on the way out (each line as textfmt_sanitize
 * leaves it, which changes nothing in a real envelope), so that no raw
 * control or invisible character reaches the terminal either way.
 */
#ifndef VIGIL_CLI_WATCHFMT_H
#define VIGIL_CLI_WATCHFMT_H

#include <msgpack.h>
#include <stdbool.h>

/* How watch prints each notification. */
typedef enum {
  kWatchText = 0, /* the envelope as an agent sees it */
  kWatchJson,     /* the whole map, one JSON object a line */
  kWatchOneline,  /* SEQ MONITOR TEXT on one line, for a harness's line monitor */
} WatchStyle;

/* Where a notification came from, which says how far its text is trusted. */
typedef enum {
  kWatchFromEngine = 0, /* the engine's socket: the envelope is printed as it is */
  kWatchFromBroker,     /* a message on the broker: its text is sanitized */
} WatchSource;

/* Prints notification n (a map) on stdout in style and flushes it. Returns
 * 0, or -1 when stdout did not take it all (its reader gone, a full disk). */
int cli_watchfmt_print(const msgpack_object *n, WatchStyle style, WatchSource from);

#endif
