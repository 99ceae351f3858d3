/*
 * A thread that turns Ctrl-C (SIGINT, and SIGTERM, SIGHUP) and the going
 * away of stdout's reader into one call, for a command that waits inside a
 * library it does not own (nats.c's Fetch) and so has no poll() of its own
 * to add a wake descriptor to (cli_conn.h does that for the engine's
 * socket). The signals are blocked in every thread and read from a
 * signalfd, so no handler runs in the middle of the library; the call
 * (wake) runs on the waker's thread, once, and must only nudge the waiting
 * thread (unsubscribe, close). A second signal after it ends the process
 * at once (status 128+N), for a wait that does not give way.
 */
#ifndef VIGIL_CLI_WAKER_H
#define VIGIL_CLI_WAKER_H

#include <stdbool.h>

typedef struct CliWaker CliWaker;

/* Why the waker called. */
typedef enum {
  kCliWakeNone = 0,
  kCliWakeSignal, /* a stopping signal came */
  kCliWakeHangup, /* the hangup fd's reader went away */
} CliWakeReason;

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGPIPE in the calling thread, so that
 * every thread started after it (a library's) has them blocked too: call
 * it before anything starts a thread. A write to a pipe whose reader went
 * away then fails with EPIPE instead of killing the process. */
void cli_waker_block_signals(void);

/* Starts the waker: it calls wake(ctx) when a stopping signal comes or the
 * reader of hangup_fd (-1: none) goes away (as cli_conn_set_hangup_fd
 * counts it). Returns NULL when it cannot (no memory, no thread): errno
 * says why. */
CliWaker *cli_waker_start(int hangup_fd, void (*wake)(void *ctx), void *ctx);

/* Ends the waker's thread and frees it. Returns why it called (kCliWakeNone
 * when it did not) and, for a signal, sets *signo to its number. */
CliWakeReason cli_waker_finish(CliWaker *w, int *signo);

#endif
