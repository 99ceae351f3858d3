/*
 * A session's named model cursors (issue 23, docs/protocol.md section
 * 5.1): "delivered" means the model has it. A cursor is a name and a seq,
 * the highest seq its reader put into something the model certainly reads
 * (a tool result, a hook's output the harness injects); every reader of
 * the session that shares the name shares the cursor, on any connection,
 * and the engine keeps it (a named session's journal holds it, so it
 * survives an engine restart).
 *
 * Reading by a cursor is a take: the kept notifications (session.h: the
 * last queue_max pushed) with a seq above the cursor, oldest first, and
 * the cursor moves past them in the same step, so two readers never get
 * the same seq. Only numbered notifications are taken: one waiting for
 * idle, or for a connection to attach, has no seq yet. Seqs above the
 * cursor that the session no longer keeps are never skipped silently: the
 * take says how many, and which (dropped_from..dropped_to), and moves past
 * them too.
 *
 * A take that finds nothing may wait (session_cursor_wait): the push path
 * wakes the waiters of a session once a call that numbered notifications
 * has finished (session__leave), each in turn taking what is there, so a
 * notification goes to exactly one waiter of its cursor and the others
 * wait on.
 *
 * This module knows nothing of the wire: a waiter is told through the
 * callback it was given.
 */
#ifndef VIGIL_SESSION_CURSOR_H
#define VIGIL_SESSION_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "session/session.h"

/* The longest cursor name. */
#define SESSION_CURSOR_NAME_MAX 64
/* The most cursors a session may have: session.max_cursors' upper bound,
 * and the most a journal read back may hold. */
#define SESSION_CURSORS_MAX 256

/* Whether name may name a cursor: 1..SESSION_CURSOR_NAME_MAX of A-Z a-z
 * 0-9 . _ - :. */
bool session_cursor_name_ok(const char *name);

/* What a read of the kept notifications found: a take (the cursor moved)
 * or session_read_since (nothing moved). */
typedef struct {
  /* The notifications, oldest first. They stay the session's: valid until
   * it next changes (a push, a take, its end). The array is the read's
   * (session_read_free). */
  const Notification **items;
  size_t count;
  uint64_t cursor;        /* a take: where the cursor is now */
  uint64_t last_seq;      /* the highest seq the session has given (next seq - 1) */
  /* Seqs above the cursor (or since_seq) the session no longer keeps:
   * dropped_from..dropped_to, dropped of them; all 0 when none. */
  uint64_t dropped;
  uint64_t dropped_from;
  uint64_t dropped_to;
} SessionRead;

/* Frees what r holds (not the notifications) and zeroes it. */
void session_read_free(SessionRead *r);

/* Takes, for the cursor `name` (made at 0 when s has none of that name),
 * the kept notifications with a seq above it, at most limit (0: as many
 * as s keeps), and moves the cursor to the last seq taken, or past the
 * seqs s no longer keeps when that is further. Fills out (free it with
 * session_read_free). A named session journals the cursor's move before
 * this returns. Returns 0, or -1 with err (limit_exceeded: s has
 * session.max_cursors cursors and none of that name; nothing changes). */
int session_cursor_take(Session *s, const char *name, size_t limit, SessionRead *out,
                        VigilError *err);

/* The seq of the cursor `name` in *seq: false (and 0) when s has none of
 * that name, which is not made. */
bool session_cursor_get(const Session *s, const char *name, uint64_t *seq);

/* Moves the cursor `name` (made at 0 when s has none) to to, when that is
 * above it (a cursor never goes back); its seq after, in *seq. Returns 0,
 * or -1 with err: invalid_params when to is above the session's last seq,
 * limit_exceeded as for a take. Nothing changes on an error. */
int session_cursor_advance(Session *s, const char *name, uint64_t to, uint64_t *seq,
                           VigilError *err);

/* The kept notifications with a seq above since, at most limit (0: all),
 * and the seqs above since s no longer keeps, as a take would see them
 * from a cursor at since; nothing moves. */
void session_read_since(const Session *s, uint64_t since, size_t limit, SessionRead *out);

/* The oldest seq s keeps, or 0 when it keeps none. */
uint64_t session_kept_from(const Session *s);

/* How many cursors s has, and the i-th (in the order they were made):
 * its name, and its seq in *seq. */
size_t session_cursor_count(const Session *s);
const char *session_cursor_at(const Session *s, size_t i, uint64_t *seq);

/* --- waiting for something to take ---------------------------------------- */

typedef struct SessionCursorWaiter SessionCursorWaiter;

/* A waiter's end. r: what it took (something, or seqs dropped; or nothing
 * when its time ran out: session_cursor_wait_end), valid during the call;
 * NULL when its session is being destroyed, with nothing taken. The
 * waiter is gone when this returns. The callback must not push into, take
 * from, or destroy s. */
typedef void (*SessionCursorReady)(void *ctx, Session *s, const SessionRead *r);

/* Waits for a notification above the cursor `name` of s, which exists
 * (a take made it): the push path takes for the waiter, at most limit,
 * and calls ready, once. Waiters are served in the order they came, so
 * of several on one cursor each notification goes to one of them. */
SessionCursorWaiter *session_cursor_wait(Session *s, const char *name, size_t limit,
                                         SessionCursorReady ready, void *ctx);

/* Its time ran out: ready is called with a take of what is there now
 * (normally nothing), and the waiter goes. */
void session_cursor_wait_end(SessionCursorWaiter *w);

/* Drops w without taking anything or calling ready (its reader went). */
void session_cursor_unwait(SessionCursorWaiter *w);

#endif
