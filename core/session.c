/*
 * Sessions (see session.h): a registry of named and anonymous sessions, each
 * numbering, pushing, holding and keeping its notifications.
 *
 * A session holds two queues. `waiting` is a FIFO of notifications not yet
 * pushed (they have no seq yet, so seqs always reach a host in order however
 * long an idle one was held). `kept` is a ring of the last queue_max pushed
 * ones, owned, for a re-attach with last_seq. A notification is in exactly
 * one of the two, or in neither once it has been evicted and freed.
 *
 * Pushing one: n->seq = next_seq++, every attachment's callback in attach
 * order, then the notification moves into `kept`. Releasing `waiting` (going
 * idle, or an attach while idle) first pushes one `dropped` notification
 * when output notifications were dropped since the last one went, then every
 * waiting notification in order. An ending notification that goes live
 * while its monitor's output is held first releases that output (and the
 * `dropped` notification, if one is pending, since it speaks of older
 * notifications than any still waiting).
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
 * Gaps. `first_seq` is the seq the session began numbering at (1, or just
 * above the cursor of the attach that created it), and `seq_jumped` says
 * the numbering was raised after it began. A re-attach that cannot be given
 * everything after its cursor is told so first (session_replay); the count
 * of what it lost is given only when every seq of the range was numbered
 * here (from >= first_seq, no jump), since seqs below first_seq or skipped
 * by a jump were never this engine's to count.
 *
 * Decisions the header leaves open: sessions sit in a list in creation order
 * (session_find is linear, which is fine for the tens of sessions an engine
 * serves); an anonymous name skips numbers a named session already took; a
 * queue_max of 0 counts as 1; a notification pushed when a callback has just
 * detached the last attachment is held rather than numbered for nobody.
 */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.h"
#include "memory.h"
#include "strbuf.h"

/* A waiting notification: one node of the FIFO. */
typedef struct WaitNode {
  Notification *n;
  struct WaitNode *prev;
  struct WaitNode *next;
} WaitNode;

struct SessionAttachment {
  Session *s;
  SessionPush push;
  void *ctx;
  bool dead;                     /* detached while the session was in use */
  SessionAttachment *prev;
  SessionAttachment *next;
};

struct Session {
  SessionRegistry *reg;
  Session *prev;                 /* registry list */
  Session *next;
  char *name;
  bool pinned;
  bool anonymous;
  bool busy;
  size_t queue_max;              /* at least 1 */
  uint64_t linger_ms;

  SessionAttachment *att_head;   /* attach order */
  SessionAttachment *att_tail;
  size_t nattached;              /* live ones (dead ones excluded) */
  bool has_dead;                 /* dead attachments wait for the sweep */

  uint64_t next_seq;
  uint64_t first_seq;            /* the first seq this session gave (or will give) */
  bool seq_jumped;               /* numbering raised by a cursor after it began */
  WaitNode *wait_head;
  WaitNode *wait_tail;
  size_t nwaiting;
  Notification **kept;           /* ring of queue_max slots, allocated at first push */
  size_t kept_start;
  size_t kept_count;
  uint64_t dropped_pending;      /* dropped since the last `dropped` notification */
  uint64_t dropped_total;

  uv_timer_t linger;
  bool linger_ready;             /* linger has been initialised */

  void *user;
  unsigned depth;                /* calls in progress inside this session */
  bool doomed;                   /* destroyed; freed when depth reaches 0 */
};

struct SessionRegistry {
  uv_loop_t *loop;
  SessionLimits limits;
  SessionHooks hooks;
  void *data;
  Session *head;                 /* creation order */
  Session *tail;
  size_t count;
  uint64_t anon_counter;         /* last anonymous number given */
};

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
  while (reg->head)
    session_destroy(reg->head);
  free(reg);
}

/* Limits for sessions created from now on; existing ones keep theirs, so a
 * reload never shrinks a queue under a session's feet. */
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
  session_link(reg, s);
  return s;
}

/* --- the in-use guard --------------------------------------------------- */

/* Marks a call in progress inside s, so callbacks cannot free it under us. */
static void
session_enter(Session *s)
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

/* Ends a call inside s; the outermost one carries out a deferred destroy or
 * frees deferred detachments. s may be freed when this returns. */
static void
session_leave(Session *s)
{
  if (--s->depth > 0)
    return;
  if (s->doomed)
    session_free_now(s);
  else if (s->has_dead)
    session_sweep(s);
}

/* --- delivery ----------------------------------------------------------- */

/* Whether a notification can be pushed now to anyone. */
static bool
session_can_push(const Session *s)
{
  return !s->doomed && s->nattached > 0;
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

/* Numbers n, pushes it to every live attachment and keeps it. */
static void
session_deliver(Session *s, Notification *n)
{
  n->seq = s->next_seq++;
  /* A callback may mark any attachment dead but cannot free one while we
   * are inside (depth > 0), so following `next` stays valid. */
  for (SessionAttachment *a = s->att_head; a; a = a->next)
    if (!a->dead)
      a->push(a->ctx, s, n);
  session_keep(s, n);
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
  s->dropped_pending = 0;
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

/* Puts n at the front of the waiting FIFO (it speaks of what came before
 * everything waiting). Not an output notification, so never dropped. */
static void
session_hold_first(Session *s, Notification *n)
{
  WaitNode *node = xmalloc(sizeof *node);
  node->n = n;
  node->prev = NULL;
  node->next = s->wait_head;
  if (s->wait_head)
    s->wait_head->prev = node;
  else
    s->wait_tail = node;
  s->wait_head = node;
  s->nwaiting++;
}

/* Appends n to the waiting FIFO, then drops the oldest waiting output
 * notifications while more than queue_max wait. Ending and policy_error
 * notifications are never dropped, so they alone may exceed the bound;
 * their number is bounded anyway (one ending per monitor started). */
static void
session_hold(Session *s, Notification *n)
{
  WaitNode *node = xmalloc(sizeof *node);
  node->n = n;
  node->next = NULL;
  node->prev = s->wait_tail;
  if (s->wait_tail)
    s->wait_tail->next = node;
  else
    s->wait_head = node;
  s->wait_tail = node;
  s->nwaiting++;

  while (s->nwaiting > s->queue_max) {
    WaitNode *oldest = s->wait_head;
    while (oldest && oldest->n->type != kNotifOutput)
      oldest = oldest->next;
    if (oldest == NULL)
      break;
    notification_free(session_wait_remove(s, oldest));
    s->dropped_pending++;
    s->dropped_total++;
  }
}

/* Pushes everything waiting, in order, after the `dropped` notification if
 * one is due; stops early (leaving the rest waiting) if a callback detached
 * the last attachment or destroyed the session. Returns how many it pushed. */
static size_t
session_flush(Session *s)
{
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

/* Takes n and pushes it now or holds it, by the delivery rules of session.h. */
void
session_push(Session *s, Notification *n)
{
  session_stamp(s, n);
  if (s->doomed) {
    notification_free(n);
    return;
  }
  session_enter(s);
  if (session_can_push(s) && (n->mode == kModeLiveSafe || !s->busy)) {
    if (!s->busy && s->wait_head)
      /* Idle with something still waiting (only if a callback cut a flush
       * short): it all goes first, which also keeps endings last. */
      session_flush(s);
    else if (notification_is_ending(n->type))
      session_release_monitor(s, n->monitor_id);
  }
  /* Re-checked: a callback above may have detached the last attachment. */
  if (session_can_push(s) && (n->mode == kModeLiveSafe || !s->busy))
    session_deliver(s, n);
  else
    session_hold(s, n);
  session_leave(s);
}

/* Sets the busy state; going idle releases everything waiting, in order, to
 * whoever is attached. Returns how many were pushed, the `dropped`
 * notification included. */
size_t
session_set_busy(Session *s, bool busy)
{
  s->busy = busy;
  if (busy || s->doomed)
    return 0;
  session_enter(s);
  size_t pushed = session_flush(s);
  session_leave(s);
  return pushed;
}

/* --- attach, detach, linger, destroy ------------------------------------ */

/* A cursor this session never reached (last_seq >= next_seq): it comes
 * from an earlier engine, or from an earlier session of this name. The
 * numbering goes on above it, so the host's seqs are never reused (a host
 * that deduplicates by seq would drop the new ones), and a `dropped`
 * notification, first in line for everyone attached, says that what
 * followed last_seq is lost: from last_seq + 1, open-ended, count unknown. */
static void
session_continue_after(Session *s, uint64_t last_seq)
{
  if (s->next_seq > s->first_seq)
    s->seq_jumped = true;
  else
    s->first_seq = last_seq + 1;
  s->next_seq = last_seq + 1;
  /* One still waiting (the session is busy) speaks of an earlier cursor,
   * which covers this one: a second would say less and grow the queue. */
  const Notification *first = s->wait_head ? s->wait_head->n : NULL;
  if (first && first->type == kNotifDropped && first->from_seq > 0 && first->to_seq == 0)
    return;
  char reason[256];
  snprintf(reason, sizeof reason,
           "notifications after seq %llu are lost: that cursor is from an earlier engine (or an "
           "earlier session of this name), whose notifications this one never had",
           (unsigned long long)last_seq);
  session_hold_first(s, session_dropped_new(s, 0, last_seq + 1, 0, reason));
}

/* Pushes to a alone every kept notification with seq > last_seq, oldest
 * first: what a re-attaching gateway missed. When the oldest kept one is
 * newer than last_seq + 1, a `dropped` notification comes first, to a alone,
 * naming the seqs it cannot have and carrying the last of them as its seq. */
static void
session_replay(Session *s, SessionAttachment *a, uint64_t last_seq)
{
  uint64_t oldest = s->kept_count > 0 ? s->kept[s->kept_start]->seq : s->next_seq;
  if (last_seq + 1 < oldest) {
    uint64_t from = last_seq + 1, to = oldest - 1;
    bool known = !s->seq_jumped && from >= s->first_seq;
    char reason[256];
    if (known)
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
    a->push(a->ctx, s, gap);
    notification_free(gap);
  }
  for (size_t i = 0; i < s->kept_count && !a->dead && !s->doomed; i++) {
    const Notification *n = s->kept[(s->kept_start + i) % s->queue_max];
    if (n->seq > last_seq)
      a->push(a->ctx, s, n);
  }
}

/* Attaches a connection; see session.h. Returns NULL only when a push
 * callback destroyed the session during the attach. */
SessionAttachment *
session_attach(Session *s, SessionPush push, void *ctx, bool has_last_seq, uint64_t last_seq)
{
  SessionAttachment *a = xcalloc(1, sizeof *a);
  a->s = s;
  a->push = push;
  a->ctx = ctx;
  session_enter(s);
  if (s->nattached == 0) {
    if (s->linger_ready)
      uv_timer_stop(&s->linger);
    /* Whoever held the busy state has gone; a new agent starts idle. */
    s->busy = false;
  }
  if (has_last_seq && last_seq >= s->next_seq)
    session_continue_after(s, last_seq);
  a->prev = s->att_tail;
  if (s->att_tail)
    s->att_tail->next = a;
  else
    s->att_head = a;
  s->att_tail = a;
  s->nattached++;
  if (has_last_seq)
    session_replay(s, a, last_seq);
  if (!s->busy)
    session_flush(s);
  bool gone = s->doomed;
  session_leave(s);
  return gone ? NULL : a;
}

/* The linger ran out: the owner stops the session's monitors, then it goes. */
static void
session_linger_cb(uv_timer_t *t)
{
  Session *s = t->data;
  SessionRegistry *reg = s->reg;
  session_enter(s);
  if (reg->hooks.on_expire)
    reg->hooks.on_expire(reg->data, s);
  session_destroy(s);
  session_leave(s);
}

void
session_set_linger(Session *s, uint64_t linger_ms)
{
  s->linger_ms = linger_ms;
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

/* Detaches a; a named, unpinned session left with nobody starts lingering.
 * Detaching an attachment a callback already detached is a no-op. */
void
session_detach(SessionAttachment *a)
{
  if (a == NULL || a->dead)
    return;
  Session *s = a->s;
  s->nattached--;
  if (s->depth > 0) {
    /* Someone may be walking the list: unlink at the outermost leave. */
    a->dead = true;
    s->has_dead = true;
  } else {
    session_attachment_remove(s, a);
  }
  if (s->nattached == 0 && !s->anonymous && !s->pinned && !s->doomed)
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
  while (s->wait_head)
    notification_free(session_wait_remove(s, s->wait_head));
  for (size_t i = 0; i < s->kept_count; i++)
    notification_free(s->kept[(s->kept_start + i) % s->queue_max]);
  free(s->kept);
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
    session_enter(s);
  }
  for (i = 0; i < count; i++)
    if (!all[i]->doomed)
      visit(ctx, all[i]);
  for (i = 0; i < count; i++)
    session_leave(all[i]);
  free(all);
}
