/*
 * Sessions (see session.h): a registry of named and anonymous sessions, each
 * numbering, pushing, holding and keeping its notifications.
 *
 * This file is the registry and the life of a session: create, find,
 * attach, detach, linger, destroy, and the guard that makes callbacks safe.
 * What happens to a notification once it is in a session (numbering, the
 * waiting and kept queues, replay) is session_queue.c.
 *
 * Callbacks may call back in. A push callback (a connection whose write
 * failed, say) may detach any attachment, and it or on_expire may destroy
 * the session; a session_each visitor may do either to any session. To make
 * that safe each session counts the calls that are inside it (`depth`):
 * while that is above zero, a detached attachment is only marked dead and a
 * destroyed session is only unlinked and marked doomed; their memory goes
 * when the outermost call leaves. A push callback must not push into or set
 * the busy state of its own session: that would number a notification while
 * another is half-delivered.
 *
 * The linger timer is initialised the first time a session needs it. A
 * uv handle is closed asynchronously, so a session whose timer exists is
 * freed in the timer's close callback; nothing in that callback touches the
 * registry, which can therefore be freed at once. With a NULL loop (unit
 * tests of delivery alone) sessions never linger out.
 *
 * Decisions the header leaves open: sessions sit in a list in creation order
 * (session_find is linear, which is fine for the tens of sessions an engine
 * serves); an anonymous name skips numbers a named session already took; a
 * queue_max of 0 counts as 1; a notification pushed when a callback has just
 * detached the last attachment is held rather than numbered for nobody.
 */
#include "session/session_internal.h"
#include "session/session_ignore.h"
#include "session/session_journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

static void session_free_now(Session *s);

/* --- the registry ------------------------------------------------------- */

/* A registry creating sessions with the given limits on loop (NULL: sessions
 * never linger out), calling hooks with data. */
SessionRegistry *
session_registry_new(uv_loop_t *loop, const SessionLimits *limits, const SessionHooks *hooks,
                     void *data)
{
  SessionRegistry *reg = xcalloc(1, sizeof *reg);
  reg->loop = loop;
  if (limits)
    reg->limits = *limits;
  if (hooks)
    reg->hooks = *hooks;
  reg->data = data;
  reg->store_fd = -1;
  reg->state_fd = -1;
  return reg;
}

/* Destroys every session without calling on_expire, then the registry.
 * Sessions with a linger timer finish freeing when the loop next runs their
 * close callbacks, which no longer need the registry. Must not be called from
 * inside a session callback. */
void
session_registry_free(SessionRegistry *reg)
{
  if (reg == NULL)
    return;
  /* No hooks: whoever watched may be gone already. */
  reg->hooks = (SessionHooks){0};
  while (reg->head)
    session_destroy(reg->head);
  free(reg->checkpoints);
  free(reg);
}

/* Limits for sessions created from now on; existing ones keep theirs, so a
 * reload never shrinks a queue under a session's feet. max_cursors is read
 * when a cursor is made (session_cursor.c), so it applies at once and
 * never removes a cursor. */
void
session_registry_set_limits(SessionRegistry *reg, const SessionLimits *limits)
{
  reg->limits = *limits;
}

/* Links s at the end of the registry. */
static void
session_link(SessionRegistry *reg, Session *s)
{
  s->prev = reg->tail;
  s->next = NULL;
  if (reg->tail)
    reg->tail->next = s;
  else
    reg->head = s;
  reg->tail = s;
  reg->count++;
}

/* Unlinks s from the registry (once). */
static void
session_unlink(Session *s)
{
  SessionRegistry *reg = s->reg;
  if (s->prev)
    s->prev->next = s->next;
  else
    reg->head = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    reg->tail = s->prev;
  s->prev = s->next = NULL;
  reg->count--;
}

/* The session named name, or NULL. Doomed sessions are already unlinked. */
Session *
session_find(SessionRegistry *reg, const char *name)
{
  if (name == NULL)
    return NULL;
  for (Session *s = reg->head; s; s = s->next)
    if (strcmp(s->name, name) == 0)
      return s;
  return NULL;
}

/* A new idle session with nobody attached, named name or, when name is NULL,
 * "anon-N" with N never given before. NULL if the name is taken. */
Session *
session_create(SessionRegistry *reg, const char *name, bool pinned)
{
  char anon[32];
  if (name == NULL) {
    /* Skip numbers a named session took: an anonymous name must be unique
     * too, and the counter never goes back, so none is reused. */
    do
      snprintf(anon, sizeof anon, "anon-%llu", (unsigned long long)++reg->anon_counter);
    while (session_find(reg, anon) != NULL);
  } else if (session_find(reg, name) != NULL) {
    return NULL;
  }
  Session *s = xcalloc(1, sizeof *s);
  s->reg = reg;
  s->name = xstrdup(name ? name : anon);
  s->anonymous = name == NULL;
  s->pinned = pinned;
  s->queue_max = reg->limits.queue_max > 0 ? reg->limits.queue_max : 1;
  s->linger_ms = reg->limits.linger_ms;
  s->next_seq = 1;
  s->first_seq = 1;
  s->journal_fd = -1;
  session_link(reg, s);
  session_journal_begin(s);
  if (reg->hooks.on_create)
    reg->hooks.on_create(reg->data, s);
  return s;
}

/* --- the in-use guard --------------------------------------------------- */

/* See session_internal.h. */
void
session__enter(Session *s)
{
  s->depth++;
}

/* Takes attachment a out of s's list and frees it. */
static void
session_attachment_remove(Session *s, SessionAttachment *a)
{
  if (a->prev)
    a->prev->next = a->next;
  else
    s->att_head = a->next;
  if (a->next)
    a->next->prev = a->prev;
  else
    s->att_tail = a->prev;
  free(a);
}

/* Frees attachments detached while s was in use. */
static void
session_sweep(Session *s)
{
  SessionAttachment *a = s->att_head;
  while (a) {
    SessionAttachment *next = a->next;
    if (a->dead)
      session_attachment_remove(s, a);
    a = next;
  }
  s->has_dead = false;
}

/* See session_internal.h. */
void
session__leave(Session *s)
{
  /* The call that numbered notifications is over: the cursor waiters take
   * them now, all of them at once, while s is still held (a waiter's
   * callback cannot free it under the wake). */
  if (s->depth == 1 && s->cursor_wake_due && !s->doomed) {
    s->cursor_wake_due = false;
    session_cursor__wake(s);
  }
  if (--s->depth > 0)
    return;
  if (s->doomed)
    session_free_now(s);
  else if (s->has_dead)
    session_sweep(s);
}

/* --- attach, detach, linger, destroy ------------------------------------ */

/* Attaches a connection; see session.h. Returns NULL only when a push
 * callback destroyed the session during the attach. */
static SessionAttachment *
session_attach_as(Session *s, SessionPush push, void *ctx, bool has_last_seq, uint64_t last_seq,
                  bool tap)
{
  SessionAttachment *a = xcalloc(1, sizeof *a);
  a->s = s;
  a->push = push;
  a->ctx = ctx;
  a->tap = tap;
  session__enter(s);
  if (!tap && s->nattached == 0) {
    if (s->linger_ready)
      uv_timer_stop(&s->linger);
    /* Whoever held the busy state has gone; a new agent starts idle. */
    s->busy = false;
  }
  if (has_last_seq && last_seq >= s->next_seq)
    session__continue_after(s, last_seq);
  a->prev = s->att_tail;
  if (s->att_tail)
    s->att_tail->next = a;
  else
    s->att_head = a;
  s->att_tail = a;
  if (!tap)
    s->nattached++;
  if (has_last_seq)
    session__replay(s, a, last_seq);
  if (!s->busy)
    session__flush(s);
  bool gone = s->doomed;
  session__leave(s);
  return gone ? NULL : a;
}

SessionAttachment *
session_attach(Session *s, SessionPush push, void *ctx, bool has_last_seq, uint64_t last_seq)
{
  return session_attach_as(s, push, ctx, has_last_seq, last_seq, false);
}

/* See session.h. */
SessionAttachment *
session_attach_tap(Session *s, SessionPush push, void *ctx, bool has_last_seq, uint64_t last_seq)
{
  return session_attach_as(s, push, ctx, has_last_seq, last_seq, true);
}

/* The linger ran out: the owner stops the session's monitors, then it goes. */
static void
session_linger_cb(uv_timer_t *t)
{
  Session *s = t->data;
  SessionRegistry *reg = s->reg;
  session__enter(s);
  if (reg->hooks.on_expire)
    reg->hooks.on_expire(reg->data, s);
  session_destroy(s);
  session__leave(s);
}

void
session_set_linger(Session *s, uint64_t linger_ms)
{
  if (s->linger_ms == linger_ms)
    return;
  s->linger_ms = linger_ms;
  session_journal_meta(s);
}

/* Starts (or restarts) the linger countdown of s. */
static void
session_linger_start(Session *s)
{
  if (s->reg->loop == NULL)
    return;
  if (!s->linger_ready) {
    uv_timer_init(s->reg->loop, &s->linger);
    s->linger.data = s;
    s->linger_ready = true;
  }
  /* linger_ms 0 fires on the next loop iteration, not inside this call, so
   * the caller never sees the session vanish under it. */
  uv_timer_start(&s->linger, session_linger_cb, s->linger_ms, 0);
}

/* See session.h. */
void
session_linger_unattached(Session *s)
{
  if (s->nattached == 0 && !s->anonymous && !s->pinned && !s->doomed)
    session_linger_start(s);
}

/* See session.h. */
void
session_resume(SessionAttachment *a)
{
  if (a == NULL || a->dead || !a->behind)
    return;
  Session *s = a->s;
  session__enter(s);
  session__catch_up(s, a);
  /* Caught up: what waited while every attachment was behind goes now, in
   * order (while busy, only the live_safe ones). */
  if (!a->behind && s->wait_head) {
    if (!s->busy)
      session__flush(s);
    else
      session__release_live(s);
  }
  session__leave(s);
}

uint64_t
session_registry_lost_behind(const SessionRegistry *reg)
{
  return reg->lost_behind;
}

/* Detaches a; a named, unpinned session left with nobody starts lingering.
 * Detaching an attachment a callback already detached is a no-op. */
void
session_detach(SessionAttachment *a)
{
  if (a == NULL || a->dead)
    return;
  Session *s = a->s;
  bool tap = a->tap;
  if (!tap)
    s->nattached--;
  if (s->depth > 0) {
    /* Someone may be walking the list: unlink at the outermost leave. */
    a->dead = true;
    s->has_dead = true;
  } else {
    session_attachment_remove(s, a);
  }
  if (!tap && s->nattached == 0 && !s->anonymous && !s->pinned && !s->doomed)
    session_linger_start(s);
}

/* The linger timer is closed: the last thing of the session to go. */
static void
session_closed_cb(uv_handle_t *h)
{
  free(h->data);
}

/* Frees everything s holds, then s itself (in the timer's close callback
 * when the timer exists). */
static void
session_free_now(Session *s)
{
  SessionAttachment *a = s->att_head;
  while (a) {
    SessionAttachment *next = a->next;
    free(a);
    a = next;
  }
  session_queue__free(s);
  session_ignore__free(s);
  free(s->cursors);
  free(s->name);
  if (s->linger_ready)
    uv_close((uv_handle_t *)&s->linger, session_closed_cb);
  else
    free(s);
}

/* Destroys s: it leaves the registry at once (its name is free again), its
 * attachments are detached, and its memory goes now or, when called from a
 * callback inside s, as soon as that call returns. Destroying twice is a
 * no-op while the memory is still there. */
void
session_destroy(Session *s)
{
  if (s == NULL || s->doomed)
    return;
  if (s->reg->hooks.on_destroy)
    s->reg->hooks.on_destroy(s->reg->data, s);
  session_cursor__cancel(s);
  session_journal_end(s);
  /* Its ignores outlive it (session_ignore.h), with the hits counted
   * since the last change. */
  session_ignore_save(s);
  s->doomed = true;
  session_unlink(s);
  if (s->linger_ready)
    uv_timer_stop(&s->linger);
  for (SessionAttachment *a = s->att_head; a; a = a->next)
    a->dead = true;
  s->nattached = 0;
  if (s->depth == 0)
    session_free_now(s);
}

/* --- names -------------------------------------------------------------- */

/* --- accessors ---------------------------------------------------------- */

const char *
session_name(const Session *s)
{
  return s->name;
}

bool
session_anonymous(const Session *s)
{
  return s->anonymous;
}

bool
session_busy(const Session *s)
{
  return s->busy;
}

size_t
session_attached(const Session *s)
{
  return s->nattached;
}

size_t
session_queued(const Session *s)
{
  return s->nwaiting;
}

size_t
session_queue_max(const Session *s)
{
  return s->queue_max;
}

uint64_t
session_next_seq(const Session *s)
{
  return s->next_seq;
}

uint64_t
session_dropped_total(const Session *s)
{
  return s->dropped_total;
}

uint64_t
session_journal_errors(const Session *s)
{
  return s->journal_errors;
}

void
session_set_user(Session *s, void *user)
{
  s->user = user;
}

void *
session_user(const Session *s)
{
  return s->user;
}

/* Visits every session in creation order. The set visited is fixed when the
 * call starts (sessions created meanwhile are not visited), and each one is
 * held in use until the end, so the visitor may destroy any session, the
 * visited one included: a destroyed session is not visited afterwards. */
void
session_each(SessionRegistry *reg, SessionVisit visit, void *ctx)
{
  size_t count = reg->count;
  if (count == 0)
    return;
  Session **all = xmalloc(count * sizeof *all);
  size_t i = 0;
  for (Session *s = reg->head; s; s = s->next) {
    all[i++] = s;
    session__enter(s);
  }
  for (i = 0; i < count; i++)
    if (!all[i]->doomed)
      visit(ctx, all[i]);
  for (i = 0; i < count; i++)
    session__leave(all[i]);
  free(all);
}
