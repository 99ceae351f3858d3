/*
 * A session's notifications (see session.h for the delivery rules): how
 * they are numbered, pushed, held and kept. session.c is the registry and
 * the life of a session (create, attach, detach, linger, destroy); this
 * file is what happens to a notification once it is in one.
 *
 * A session holds two queues. `waiting` is a FIFO of notifications not yet
 * pushed (they have no seq yet, so seqs always reach a host in order however
 * long an idle one was held). `kept` is a ring of the last queue_max pushed
 * ones, owned, for a re-attach with last_seq. A notification is in exactly
 * one of the two, or in neither once it has been evicted and freed.
 *
 * Pushing one: n->seq = next_seq++, the notification moves into `kept`
 * and its journal record is written (a record that rewrites the journal
 * writes what the session holds, so n must be held by then), then every
 * attachment's callback in attach order. Releasing `waiting` (going
 * idle, or an attach while idle) first pushes one `dropped` notification
 * when output notifications were dropped since the last one went, then every
 * waiting notification in order. An ending notification that goes live
 * while its monitor's output is held first releases that output (and the
 * `dropped` notification, if one is pending, since it speaks of older
 * notifications than any still waiting).
 *
 * Gaps. `first_seq` is the seq the session began numbering at (1, or just
 * above the cursor of the attach that created it), and `seq_jumped` says
 * the numbering was raised after it began. A re-attach that cannot be given
 * everything after its cursor is told so first (session__replay); the count
 * of what it lost is given only when every seq of the range was numbered
 * here (from >= first_seq, no jump), since seqs below first_seq or skipped
 * by a jump were never this engine's to count.
 *
 * Pacing. A push an attachment's connection refuses (it has no room) makes
 * it behind, owed that seq on: it is skipped by later pushes and catches
 * up from `kept` (session__catch_up) when its owner resumes it; a replay is
 * the same catch-up from the cursor on. "Can push" means some attachment
 * is not behind, so while all are, notifications wait in `waiting` as they
 * do with nobody attached, and each catch-up ends by releasing them.
 *
 * With a state directory every change to the two queues is also written
 * to the session's journal (session_journal.h) as it happens, a
 * notification before it is pushed.
 */
#include "session/session_internal.h"
#include "session/session_journal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/envelope.h"
#include "base/memory.h"
#include "base/strbuf.h"

/* --- pushing and holding ------------------------------------------------ */

/* Whether a notification can be pushed now to anyone: the session lives
 * and an attachment has room. One that is behind takes nothing new before
 * it has caught up (session.h, Pacing), so while every one is behind,
 * notifications wait as they do with nobody attached: unnumbered, under
 * the waiting queue's bound and its rules (endings never dropped). */
static bool
session_can_push(const Session *s)
{
  if (s->doomed)
    return false;
  for (const SessionAttachment *a = s->att_head; a; a = a->next)
    if (!a->dead && !a->behind)
      return true;
  return false;
}

/* Moves n, just pushed, into the kept ring, evicting the oldest when full. */
static void
session_keep(Session *s, Notification *n)
{
  if (s->kept == NULL)
    s->kept = xcalloc(s->queue_max, sizeof *s->kept);
  if (s->kept_count == s->queue_max) {
    notification_free(s->kept[s->kept_start]);
    s->kept_start = (s->kept_start + 1) % s->queue_max;
    s->kept_count--;
  }
  s->kept[(s->kept_start + s->kept_count) % s->queue_max] = n;
  s->kept_count++;
}

/* Numbers n, keeps it, journals it and pushes it to every live attachment. */
static void
session_deliver(Session *s, Notification *n)
{
  n->seq = s->next_seq++;
  /* Cursor waiters take it once the call that pushes it is over. */
  if (s->cw_head != NULL)
    s->cursor_wake_due = true;
  /* Kept first: a journal record that finds the file past its bound
   * rewrites it as what the session holds, which must include n. */
  session_keep(s, n);
  /* In the journal before any host can hold its seq (session_journal.h). */
  if (n->store_key != 0)
    session_journal_push(s, n);
  else
    session_journal_note(s, n, false);
  /* A callback may mark any attachment dead but cannot free one while we
   * are inside (depth > 0), so following `next` stays valid. One that is
   * behind gets n later, from `kept`, after what it is owed before it. */
  for (SessionAttachment *a = s->att_head; a; a = a->next) {
    if (!a->dead && !a->behind && !a->push(a->ctx, s, n)) {
      a->behind = true;
      a->owed = n->seq;
      a->owed_by_cursor = false;
    }
  }
}

/* Gives n the session's name, replacing any it had. */
static void
session_stamp(Session *s, Notification *n)
{
  free(n->session);
  n->session = xstrdup(s->name);
}

/* A new, rendered `dropped` notification of s: how many were lost (0:
 * unknown), the first and last seq lost (0: none, or open-ended), and why in
 * words (NULL: the queue overflow, which the envelope words itself). */
static Notification *
session_dropped_new(Session *s, uint64_t count, uint64_t from_seq, uint64_t to_seq,
                    const char *reason)
{
  Notification *n = notification_new(kNotifDropped, "", NULL, kModeIdle);
  n->dropped_count = count;
  n->from_seq = from_seq;
  n->to_seq = to_seq;
  n->reason = reason ? xstrdup(reason) : NULL;
  session_stamp(s, n);
  StrBuf text = STRBUF_INIT;
  envelope_render(n, &text);
  n->text = strbuf_take(&text);
  return n;
}

/* Pushes the `dropped` notification if output notifications were dropped
 * since the last one went. Returns how many it pushed (0 or 1). */
static size_t
session_push_dropped(Session *s)
{
  if (s->dropped_pending == 0 || !session_can_push(s))
    return 0;
  Notification *n = session_dropped_new(s, s->dropped_pending, 0, 0, NULL);
  /* What the dropped ones would have told: their incidents, counted. */
  n->incidents_dropped = s->dropped_incidents_pending;
  n->incidents_coalesced = s->dropped_repeats_pending;
  if (n->incidents_dropped || n->incidents_coalesced) {
    StrBuf text = STRBUF_INIT;
    envelope_render(n, &text);
    free(n->text);
    n->text = strbuf_take(&text);
  }
  s->dropped_pending = 0;
  s->dropped_incidents_pending = 0;
  s->dropped_repeats_pending = 0;
  session_deliver(s, n);
  return 1;
}

/* Unlinks node from the waiting FIFO and returns its notification. */
static Notification *
session_wait_remove(Session *s, WaitNode *node)
{
  if (node->prev)
    node->prev->next = node->next;
  else
    s->wait_head = node->next;
  if (node->next)
    node->next->prev = node->prev;
  else
    s->wait_tail = node->prev;
  s->nwaiting--;
  Notification *n = node->n;
  free(node);
  return n;
}

/* Puts n into the waiting FIFO before node `before`, or at the end when
 * `before` is NULL. */
static void
session_wait_insert(Session *s, Notification *n, WaitNode *before)
{
  WaitNode *node = xmalloc(sizeof *node);
  node->n = n;
  node->next = before;
  node->prev = before ? before->prev : s->wait_tail;
  if (node->prev)
    node->prev->next = node;
  else
    s->wait_head = node;
  if (before)
    before->prev = node;
  else
    s->wait_tail = node;
  s->nwaiting++;
}

/* Appends n to the waiting FIFO, then drops the oldest waiting output
 * notifications while more than queue_max wait. Ending and policy_error
 * notifications are never dropped, so they alone may exceed the bound;
 * their number is bounded anyway (one ending per monitor started). */
static void
session_hold(Session *s, Notification *n)
{
  session_wait_insert(s, n, NULL);
  session_journal_note(s, n, false);
  while (s->nwaiting > s->queue_max) {
    WaitNode *oldest = s->wait_head;
    while (oldest && oldest->n->type != kNotifOutput)
      oldest = oldest->next;
    if (oldest == NULL)
      break;
    Notification *gone = session_wait_remove(s, oldest);
    for (size_t i = 0; i < gone->nincidents; i++) {
      if (gone->incidents[i].summary)
        s->dropped_repeats_pending += gone->incidents[i].repeats;
      else
        s->dropped_incidents_pending++;
    }
    s->dropped_repeats_pending += gone->incidents_coalesced;
    s->dropped_incidents_pending += gone->incidents_dropped + gone->incidents_withheld;
    s->dropped_pending++;
    s->dropped_total++;
    session_journal_gone(s, gone);
    notification_free(gone);
  }
}

/* See session_internal.h. */
size_t
session__flush(Session *s)
{
  assert(s != NULL && s->queue_max > 0);
  size_t pushed = session_push_dropped(s);
  while (s->wait_head && session_can_push(s)) {
    session_deliver(s, session_wait_remove(s, s->wait_head));
    pushed++;
  }
  return pushed;
}

/* Pushes the waiting output notifications of monitor_id, in order, so that
 * monitor's ending notification, pushed next, comes after all of them. The
 * other monitors' notifications stay where they are. */
static void
session_release_monitor(Session *s, const char *monitor_id)
{
  bool any = false;
  for (WaitNode *node = s->wait_head; node && !any; node = node->next)
    any = node->n->type == kNotifOutput && strcmp(node->n->monitor_id, monitor_id) == 0;
  if (!any)
    return;
  /* The dropped notification counts older outputs than these (perhaps some
   * of this very monitor's), so it goes first as it would on a flush. */
  session_push_dropped(s);
  WaitNode *node = s->wait_head;
  while (node && session_can_push(s)) {
    /* Callbacks cannot touch the FIFO (a push callback must not push), so
     * the next node is still there after delivering this one. */
    WaitNode *next = node->next;
    if (node->n->type == kNotifOutput && strcmp(node->n->monitor_id, monitor_id) == 0)
      session_deliver(s, session_wait_remove(s, node));
    node = next;
  }
}

/* See session_internal.h. */
void
session__release_live(Session *s)
{
  assert(s != NULL && s->queue_max > 0);
  WaitNode *node = s->wait_head;
  while (node && session_can_push(s)) {
    WaitNode *next = node->next;
    if (node->n->mode == kModeLiveSafe) {
      /* Its monitor's held output first, as session_push does. */
      if (notification_is_ending(node->n->type))
        session_release_monitor(s, node->n->monitor_id);
      if (!session_can_push(s))
        return;
      next = node->next; /* the release may have taken the nodes after it */
      session_deliver(s, session_wait_remove(s, node));
    }
    node = next;
  }
}

/* Takes n and pushes it now or holds it, by the delivery rules of session.h. */
void
session_push(Session *s, Notification *n)
{
  /* A live session (queue_max is at least 1 once made) and a notification
   * that is in no queue yet: it has no seq before this session gives it
   * one. */
  assert(s != NULL && s->queue_max > 0 && s->kept_count <= s->queue_max);
  assert(n != NULL && n->seq == 0);
  session_stamp(s, n);
  if (s->doomed) {
    notification_free(n);
    return;
  }
  session__enter(s);
  if (session_can_push(s) && (n->mode == kModeLiveSafe || !s->busy)) {
    if (!s->busy && s->wait_head)
      /* Idle with something still waiting (only if a callback cut a flush
       * short): it all goes first, which also keeps endings last. */
      session__flush(s);
    else if (notification_is_ending(n->type))
      session_release_monitor(s, n->monitor_id);
  }
  /* Re-checked: a callback above may have detached the last attachment. */
  if (session_can_push(s) && (n->mode == kModeLiveSafe || !s->busy))
    session_deliver(s, n);
  else
    session_hold(s, n);
  session__leave(s);
}

/* Sets the busy state; going idle releases everything waiting, in order, to
 * whoever is attached. Returns how many were pushed, the `dropped`
 * notification included. */
size_t
session_set_busy(Session *s, bool busy)
{
  assert(s != NULL && s->queue_max > 0);
  s->busy = busy;
  if (busy || s->doomed)
    return 0;
  session__enter(s);
  size_t pushed = session__flush(s);
  session__leave(s);
  return pushed;
}

/* --- a re-attach with a cursor ----------------------------------------- */

/* A cursor this session never reached (last_seq >= next_seq): it comes
 * from an earlier engine, or from an earlier session of this name. The
 * numbering goes on above it, so the host's seqs are never reused (a host
 * that deduplicates by seq would drop the new ones), and a `dropped`
 * notification, first in line for everyone attached, says that what
 * followed last_seq is lost: from last_seq + 1, open-ended, count unknown. */
void
session__continue_after(Session *s, uint64_t last_seq)
{
  /* Only a cursor this session never reached (session_attach checks it;
   * args bound it by SESSION_SEQ_MAX, so last_seq + 1 does not wrap). */
  assert(s != NULL && last_seq >= s->next_seq && last_seq < UINT64_MAX);
  if (s->next_seq > s->first_seq)
    s->seq_jumped = true;
  else
    s->first_seq = last_seq + 1;
  s->next_seq = last_seq + 1;
  /* One still waiting (the session is busy) speaks of an earlier cursor,
   * which covers this one: a second would say less and grow the queue. */
  const Notification *first = s->wait_head ? s->wait_head->n : NULL;
  if (first && first->type == kNotifDropped && first->from_seq > 0 && first->to_seq == 0) {
    session_journal_meta(s);
    return;
  }
  char reason[256];
  snprintf(reason, sizeof reason,
           "notifications after seq %llu are lost: that cursor is from an earlier engine (or an "
           "earlier session of this name), whose notifications this one never had",
           (unsigned long long)last_seq);
  /* First in line: it speaks of what came before everything waiting. Not an
   * output notification, so never dropped. */
  Notification *n = session_dropped_new(s, 0, last_seq + 1, 0, reason);
  session_wait_insert(s, n, s->wait_head);
  session_journal_note(s, n, true);
}

/* Pushes to a alone every kept notification with seq > last_seq, oldest
 * first: what a re-attaching gateway missed. When the oldest kept one is
 * newer than last_seq + 1, a `dropped` notification comes first, to a alone,
 * naming the seqs it cannot have and carrying the last of them as its seq.
 * It is the catch-up of an attachment owed everything after last_seq, so
 * it goes as fast as a's connection takes it. */
void
session__replay(Session *s, SessionAttachment *a, uint64_t last_seq)
{
  assert(s != NULL && a != NULL && a->s == s && last_seq < UINT64_MAX);
  a->behind = true;
  a->owed = last_seq + 1;
  a->owed_by_cursor = true;
  session__catch_up(s, a);
}

/* The `dropped` notification for a, owed seqs from `from` on while the
 * oldest kept one is `oldest` (> from): to a alone, numbered oldest - 1.
 * Returns whether a's connection took it. */
static bool
session_push_gap(Session *s, SessionAttachment *a, uint64_t from, uint64_t oldest)
{
  uint64_t to = oldest - 1;
  bool known = !s->seq_jumped && from >= s->first_seq;
  char reason[256];
  if (known && !a->owed_by_cursor)
    snprintf(reason, sizeof reason,
             "notifications %llu..%llu (%llu) are lost: this connection fell more than the "
             "last %zu behind, which is what this session keeps (session.queue_max)",
             (unsigned long long)from, (unsigned long long)to,
             (unsigned long long)(to - from + 1), s->queue_max);
  else if (known)
    snprintf(reason, sizeof reason,
             "notifications %llu..%llu (%llu) are lost: older than the last %zu this session "
             "keeps for resume (session.queue_max)",
             (unsigned long long)from, (unsigned long long)to,
             (unsigned long long)(to - from + 1), s->queue_max);
  else
    snprintf(reason, sizeof reason,
             "notifications %llu..%llu are lost: older than what this session keeps for "
             "resume (how many is unknown: some of those seqs were an earlier engine's)",
             (unsigned long long)from, (unsigned long long)to);
  Notification *gap = session_dropped_new(s, known ? to - from + 1 : 0, from, to, reason);
  gap->seq = to;
  bool taken = a->push(a->ctx, s, gap);
  notification_free(gap);
  if (taken && known && !a->owed_by_cursor)
    s->reg->lost_behind += to - from + 1;
  return taken;
}

/* See session_internal.h. */
void
session__catch_up(Session *s, SessionAttachment *a)
{
  assert(s != NULL && a != NULL && a->s == s);
  if (!a->behind || a->dead || s->doomed)
    return;
  uint64_t oldest = s->kept_count > 0 ? session__kept_at(s, 0)->seq : s->next_seq;
  if (a->owed < oldest) {
    if (!session_push_gap(s, a, a->owed, oldest))
      return; /* told again, as it then stands, when there is room */
    a->owed = oldest;
  }
  a->owed_by_cursor = false;
  for (size_t i = 0; i < s->kept_count; i++) {
    if (a->dead || s->doomed)
      return;
    const Notification *n = session__kept_at(s, i);
    if (n->seq < a->owed)
      continue;
    if (!a->push(a->ctx, s, n)) {
      a->owed = n->seq;
      return;
    }
  }
  a->behind = false;
}

/* See session_internal.h. */
Notification *
session__kept_at(const Session *s, size_t i)
{
  assert(s != NULL && i < s->kept_count && s->kept_count <= s->queue_max);
  return s->kept[(s->kept_start + i) % s->queue_max];
}

/* See session_internal.h. */
void
session_queue__free(Session *s)
{
  assert(s != NULL);
  while (s->wait_head)
    notification_free(session_wait_remove(s, s->wait_head));
  for (size_t i = 0; i < s->kept_count; i++)
    notification_free(session__kept_at(s, i));
  free(s->kept);
}
