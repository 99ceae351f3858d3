/*
 * A session's named model cursors (see session_cursor.h): take, read,
 * advance, and the takes that wait for something to take.
 *
 * A cursor is a name and a seq in the session's array (at most
 * session.max_cursors, read from the registry's limits when a cursor is
 * made, so a reload applies to the next one and never removes any). A
 * read looks at the kept ring (session_queue.c), whose seqs increase from
 * the oldest: what lies above the cursor is taken from there, and the seqs
 * between the cursor and the oldest kept one are the ones the session no
 * longer keeps. Seqs below the session's first_seq (it began numbering
 * above a host's cursor, session.h) were never this session's: they are
 * passed without being counted as dropped, since the `dropped`
 * notification the session numbered first says what is lost there. Seqs
 * a raised numbering skipped between two kept ones were never given, and
 * are passed likewise.
 *
 * A cursor that moves is journaled (session_journal.h) before the take
 * returns, so what a reader was given is never given again after a
 * restart; a cursor at 0 is the same as none, and is not written.
 *
 * Waiters form a FIFO on the session. session_deliver marks the session
 * due for a wake when one waits, and session__leave runs the wake at the
 * end of the outermost call, so a flush of many notifications wakes once
 * and a waiter takes them together. The wake serves the waiters in order,
 * each taking what is above its cursor then; a second waiter of the same
 * cursor finds nothing left and waits on.
 */
#include "session/session_internal.h"
#include "session/session_journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

struct SessionCursorWaiter {
  Session *s;
  char name[SESSION_CURSOR_NAME_MAX + 1];
  size_t limit;
  SessionCursorReady ready;
  void *ctx;
  SessionCursorWaiter *prev;
  SessionCursorWaiter *next;
};

bool
session_cursor_name_ok(const char *name)
{
  return name_word_ok(name, strlen(name), SESSION_CURSOR_NAME_MAX);
}

void
session_read_free(SessionRead *r)
{
  free(r->items);
  memset(r, 0, sizeof *r);
}

/* --- the cursors ---------------------------------------------------------- */

/* The cursor of that name in s, or NULL. */
static SessionCursor *
session_cursor_find(const Session *s, const char *name)
{
  for (size_t i = 0; i < s->ncursors; i++)
    if (strcmp(s->cursors[i].name, name) == 0)
      return &s->cursors[i];
  return NULL;
}

/* The cursor of that name in s, made at 0 when s has none; NULL with err
 * (limit_exceeded) when s already has session.max_cursors. */
static SessionCursor *
session_cursor_make(Session *s, const char *name, VigilError *err)
{
  SessionCursor *c = session_cursor_find(s, name);
  if (c != NULL)
    return c;
  size_t max = s->reg->limits.max_cursors > 0 ? s->reg->limits.max_cursors : 1;
  if (max > SESSION_CURSORS_MAX)
    max = SESSION_CURSORS_MAX;
  if (s->ncursors >= max) {
    /* The names it has, so the reader can tell a typo from a crowd. */
    char names[320];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < s->ncursors && used < sizeof names; i++) {
      int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                       s->cursors[i].name);
      used = w < 0 || (size_t)w >= sizeof names - used ? sizeof names : used + (size_t)w;
    }
    if (used >= sizeof names)
      memcpy(names + sizeof names - 4, "...", 4);
    error_set(err, kErrLimitExceeded,
              "session.max_cursors is %zu and session \"%s\" has %zu cursors (%s); \"%s\" would "
              "be one more", max, s->name, s->ncursors, names, name);
    return NULL;
  }
  s->cursors = xrealloc(s->cursors, (s->ncursors + 1) * sizeof *s->cursors);
  c = &s->cursors[s->ncursors++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

/* Moves c to seq (above it) and journals the move. */
static void
session_cursor_move(Session *s, SessionCursor *c, uint64_t seq)
{
  c->seq = seq;
  session_journal_cursor(s, c);
}

/* --- reading the kept notifications ---------------------------------------- */

/* The first kept index whose seq is above seq (kept_count when none):
 * the ring's seqs increase from the oldest. */
static size_t
session_kept_above(const Session *s, uint64_t seq)
{
  size_t lo = 0, hi = s->kept_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (session__kept_at(s, mid)->seq <= seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* What a cursor at `at` has to take: the seqs above it s no longer keeps,
 * then the kept notifications above it, at most limit (0: all). out's
 * cursor is where the cursor would be after taking them. */
static void
session_read_from(const Session *s, uint64_t at, size_t limit, SessionRead *out)
{
  memset(out, 0, sizeof *out);
  out->last_seq = s->next_seq - 1;
  uint64_t oldest = s->kept_count > 0 ? session__kept_at(s, 0)->seq : s->next_seq;
  if (at + 1 < oldest) {
    uint64_t from = at + 1 > s->first_seq ? at + 1 : s->first_seq;
    if (from < oldest) {
      out->dropped_from = from;
      out->dropped_to = oldest - 1;
      out->dropped = oldest - from;
    }
    at = oldest - 1;
  }
  size_t first = session_kept_above(s, at);
  size_t n = s->kept_count - first;
  if (limit > 0 && n > limit)
    n = limit;
  if (n > 0) {
    out->items = xmalloc(n * sizeof *out->items);
    for (size_t i = 0; i < n; i++)
      out->items[i] = session__kept_at(s, first + i);
    at = out->items[n - 1]->seq;
  }
  out->count = n;
  out->cursor = at;
}

int
session_cursor_take(Session *s, const char *name, size_t limit, SessionRead *out,
                    VigilError *err)
{
  memset(out, 0, sizeof *out);
  SessionCursor *c = session_cursor_make(s, name, err);
  if (c == NULL)
    return -1;
  session_read_from(s, c->seq, limit, out);
  if (out->cursor > c->seq)
    session_cursor_move(s, c, out->cursor);
  return 0;
}

bool
session_cursor_get(const Session *s, const char *name, uint64_t *seq)
{
  const SessionCursor *c = session_cursor_find(s, name);
  *seq = c ? c->seq : 0;
  return c != NULL;
}

int
session_cursor_advance(Session *s, const char *name, uint64_t to, uint64_t *seq,
                       VigilError *err)
{
  uint64_t last = s->next_seq - 1;
  if (to > last)
    return error_set(err, kErrInvalidParams,
                     "to must be 0..%llu (session \"%s\"'s last seq), got %llu",
                     (unsigned long long)last, s->name, (unsigned long long)to);
  SessionCursor *c = session_cursor_make(s, name, err);
  if (c == NULL)
    return -1;
  if (to > c->seq)
    session_cursor_move(s, c, to);
  *seq = c->seq;
  return 0;
}

void
session_read_since(const Session *s, uint64_t since, size_t limit, SessionRead *out)
{
  session_read_from(s, since, limit, out);
  out->cursor = 0;
}

uint64_t
session_kept_from(const Session *s)
{
  return s->kept_count > 0 ? session__kept_at(s, 0)->seq : 0;
}

size_t
session_cursor_count(const Session *s)
{
  return s->ncursors;
}

const char *
session_cursor_at(const Session *s, size_t i, uint64_t *seq)
{
  *seq = s->cursors[i].seq;
  return s->cursors[i].name;
}

/* --- waiters ------------------------------------------------------------------ */

SessionCursorWaiter *
session_cursor_wait(Session *s, const char *name, size_t limit, SessionCursorReady ready,
                    void *ctx)
{
  SessionCursorWaiter *w = xcalloc(1, sizeof *w);
  w->s = s;
  snprintf(w->name, sizeof w->name, "%s", name);
  w->limit = limit;
  w->ready = ready;
  w->ctx = ctx;
  w->prev = s->cw_tail;
  if (s->cw_tail)
    s->cw_tail->next = w;
  else
    s->cw_head = w;
  s->cw_tail = w;
  return w;
}

/* Takes w out of its session's FIFO. */
static void
session_cursor_unlink(SessionCursorWaiter *w)
{
  Session *s = w->s;
  if (w->prev)
    w->prev->next = w->next;
  else
    s->cw_head = w->next;
  if (w->next)
    w->next->prev = w->prev;
  else
    s->cw_tail = w->prev;
}

void
session_cursor_unwait(SessionCursorWaiter *w)
{
  if (w == NULL)
    return;
  session_cursor_unlink(w);
  free(w);
}

/* Ends w with a take for it, told to its reader. */
static void
session_cursor_serve(SessionCursorWaiter *w)
{
  Session *s = w->s;
  session_cursor_unlink(w);
  SessionRead r;
  VigilError err = VIGIL_ERROR_INIT;
  /* Its cursor exists (the take before the wait made it, and cursors are
   * never removed), so the take cannot be refused. */
  if (session_cursor_take(s, w->name, w->limit, &r, &err) != 0)
    r.last_seq = s->next_seq - 1;
  w->ready(w->ctx, s, &r);
  session_read_free(&r);
  free(w);
}

void
session_cursor_wait_end(SessionCursorWaiter *w)
{
  session_cursor_serve(w);
}

void
session_cursor__wake(Session *s)
{
  if (s->kept_count == 0)
    return;
  uint64_t newest = session__kept_at(s, s->kept_count - 1)->seq;
  /* Scanned again from the head after each one served: a reader's callback
   * may have dropped other waiters. */
  SessionCursorWaiter *w = s->cw_head;
  while (w != NULL) {
    const SessionCursor *c = session_cursor_find(s, w->name);
    if (newest > (c ? c->seq : 0)) {
      session_cursor_serve(w);
      w = s->cw_head;
    } else {
      w = w->next;
    }
  }
}

void
session_cursor__cancel(Session *s)
{
  while (s->cw_head != NULL) {
    SessionCursorWaiter *w = s->cw_head;
    session_cursor_unlink(w);
    w->ready(w->ctx, s, NULL);
    free(w);
  }
}
