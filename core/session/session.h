/*
 * Sessions: where notifications go. Every monitor belongs to one session;
 * a session numbers its notifications (seq from 1, +1 per notification,
 * assigned when a notification is first pushed), pushes them to every
 * connection attached to it, holds them when they cannot go yet, and keeps
 * the last ones so that a gateway that comes back loses nothing.
 *
 * Delivery rules (docs/protocol.md sections 3 and 6):
 *  - An `idle` notification waits while the session is busy, and while no
 *    connection is attached; `live_safe` ones go at once whenever someone is
 *    attached, busy or not.
 *  - An ending notification (exit, stopped, ...) never overtakes its own
 *    monitor's output: held output of that monitor is pushed first, so it
 *    always comes last for its monitor.
 *  - Waiting notifications are bounded by session.queue_max: on overflow the
 *    oldest waiting *output* notification is dropped (never an ending one),
 *    and one `dropped` notification, pushed before the next waiting ones,
 *    says how many went.
 *  - Pushed notifications are also kept (the last queue_max of them), so a
 *    re-attach with last_seq can have every kept one with a larger seq
 *    pushed again, in order, before anything new.
 *  - Nothing is lost silently (issue 7). A re-attach whose last_seq is
 *    older than the oldest kept notification first gets, to that
 *    attachment alone, a `dropped` notification naming the seqs it cannot
 *    have (from_seq..to_seq, with their count when it is known), carrying
 *    to_seq as its own seq, so a host that keeps the seq it processed last
 *    as its cursor is right after it. A last_seq this session never reached
 *    (the host's cursor comes from an earlier engine, or a session of that
 *    name that has since been recreated) raises the numbering above it, so a
 *    seq is never reused for a session name, and a `dropped` notification
 *    numbered last_seq + 1, open-ended and of unknown count, tells every
 *    attached connection that what followed last_seq is lost (one such
 *    notification waits at a time: it covers any later cursor).
 *  - Pacing (issue 22). A connection may refuse a push (its output is at
 *    its bound: a burst, a replay, a slow reader). Its attachment then
 *    falls behind: the refused notification is kept as always, and nothing
 *    more is pushed to it until its owner calls session_resume (the
 *    connection has room again), which pushes it what it is owed from the
 *    kept notifications, in order, as far as it takes them. While every
 *    attachment is behind, new notifications wait as they do with nobody
 *    attached (unnumbered, bounded, endings never dropped) and go once one
 *    has caught up; other connections are never held back by a slow one.
 *    One that falls more than queue_max notifications behind (others took
 *    them meanwhile) gets, in their place, a `dropped` notification naming
 *    the seqs it lost, as for a resume older than what is kept, counted in
 *    session_registry_lost_behind. A replay (an attach with last_seq) is
 *    such a catch-up from the cursor on.
 *  - A named session outlives its connections for session.linger_ms after
 *    the last one detaches (monitors running, notifications kept), then
 *    expires; a pinned session (declared by the config) never expires. An
 *    anonymous session belongs to one connection and is closed with it by
 *    the caller.
 *
 * This module knows nothing of monitors or the wire: the owner pushes
 * rendered notifications in, receives them through SessionPush callbacks,
 * and is told when a session expires (to stop its monitors).
 *
 * Calling back in: a push callback may detach any attachment of its session
 * and may destroy the session (a connection whose write failed); on_expire
 * and a session_each visitor may too. A push callback must not push into,
 * or set the busy state of, its own session.
 */
#ifndef VIGIL_SESSION_H
#define VIGIL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "pipeline/notification.h"
#include "spec/names.h"

/* The largest seq a host may name as its cursor (session_open's last_seq):
 * 2^53 - 1, the largest integer every JSON and JavaScript host holds
 * exactly, and far from where a seq + 1 would wrap. */
#define SESSION_SEQ_MAX 9007199254740991ull

/* SESSION_NAME_MAX and session_name_ok: spec/names.h. */

typedef struct Session Session;
typedef struct SessionRegistry SessionRegistry;
typedef struct SessionAttachment SessionAttachment;

/* Where one attached connection receives its notifications. The
 * notification stays owned by the session (valid only during the call).
 * Returns true when taken, false when the connection has no room for it
 * now: the attachment falls behind (see Pacing) until session_resume. */
typedef bool (*SessionPush)(void *ctx, Session *s, const Notification *n);

typedef struct {
  size_t queue_max;     /* session.queue_max */
  uint64_t linger_ms;   /* session.linger_ms */
  size_t max_cursors;   /* session.max_cursors (session_cursor.h); 0 counts as 1 */
  size_t ignore_max;    /* incident.ignore_max (session_ignore.h); 0 counts as 1 */
} SessionLimits;

typedef struct {
  /* A named session lingered out with nobody attached: stop its monitors.
   * The session is destroyed right after this returns. */
  void (*on_expire)(void *data, Session *s);
  /* A session was made (any way: a host's open, a config, a restore) or
   * is about to go (its attachments and taps go with it). Either may be
   * NULL. A tap (session_attach_tap) is made in on_create and forgotten in
   * on_destroy, without a detach. */
  void (*on_create)(void *data, Session *s);
  void (*on_destroy)(void *data, Session *s);
} SessionHooks;

/* loop may be NULL (tests of delivery alone): sessions then never linger out. */
SessionRegistry *session_registry_new(uv_loop_t *loop, const SessionLimits *limits,
                                      const SessionHooks *hooks, void *data);
/* Destroys every session (no hooks called) and the registry. */
void session_registry_free(SessionRegistry *reg);

/* New limits (a config reload): queue_max and linger_ms for sessions
 * created from now on, max_cursors for every cursor made from now on. */
void session_registry_set_limits(SessionRegistry *reg, const SessionLimits *limits);

/* Creates a session. name NULL: an anonymous session, named "anon-N".
 * A pinned session never lingers out. Returns NULL if the name is taken. */
Session *session_create(SessionRegistry *reg, const char *name, bool pinned);

/* The session of that name, or NULL. */
Session *session_find(SessionRegistry *reg, const char *name);

/* Destroys a session now: detaches everyone and frees what it holds. The
 * caller has stopped its monitors. */
void session_destroy(Session *s);

/* Attaches a connection. The first attachment after none resets the state
 * to idle and cancels a pending expiry. With has_last_seq, every kept
 * notification with seq > last_seq is pushed to this attachment first, in
 * order, after a `dropped` one for any seqs between last_seq and the
 * oldest kept; a last_seq at or past next_seq raises the numbering and
 * queues a `dropped` notification for everyone (see above). Then everything
 * waiting that may go is pushed to all. Returns NULL only if a push
 * callback destroyed the session meanwhile. */
SessionAttachment *session_attach(Session *s, SessionPush push, void *ctx, bool has_last_seq,
                                  uint64_t last_seq);

/* Attaches a tap: a reader that is not a connection (the fleet's
 * publisher, docs/fleet.md). It is pushed to, replayed to, and falls
 * behind and resumes exactly as a connection does, and its presence lets
 * notifications be numbered and pushed while no connection is attached;
 * but it is not counted in session_attached, so it never keeps a session
 * from lingering out, never resets the busy state, and its detach never
 * starts the linger. */
SessionAttachment *session_attach_tap(Session *s, SessionPush push, void *ctx, bool has_last_seq,
                                      uint64_t last_seq);

/* Detaches; when it was the last attachment of a named, unpinned session,
 * the linger timer starts. */
void session_detach(SessionAttachment *a);

/* The connection of a, which refused a push, has room again: pushes it
 * what it is owed, in order, until it refuses one more or has caught up
 * (see Pacing). Nothing when a is not behind. Must not be called from
 * inside a push callback. */
void session_resume(SessionAttachment *a);

/* Notifications connections lost, in every session of reg so far, by
 * falling more than session.queue_max behind (see Pacing). */
uint64_t session_registry_lost_behind(const SessionRegistry *reg);

/* Takes ownership of n (rendered already: n->text set) and delivers or holds
 * it by the rules above. Fills n->session and, when pushed, n->seq. */
void session_push(Session *s, Notification *n);

/* Sets how long this session outlives its last connection (session_open's
 * linger_ms); applies from the next detach. */
void session_set_linger(Session *s, uint64_t linger_ms);
/* A named session made with nobody attached (one a restarted engine
 * brings back for the monitors it takes over): it lingers from now, as if
 * its last host had just left. */
void session_linger_unattached(Session *s);

/* Sets busy or idle. Going idle pushes everything waiting, in order, and
 * returns how many notifications that released (0 otherwise). */
size_t session_set_busy(Session *s, bool busy);

const char *session_name(const Session *s);
bool session_anonymous(const Session *s);
bool session_busy(const Session *s);
size_t session_attached(const Session *s);
size_t session_queued(const Session *s);         /* waiting, not yet pushed */
size_t session_queue_max(const Session *s);      /* its bound: waiting, and kept */
uint64_t session_next_seq(const Session *s);     /* the seq the next push gets */
uint64_t session_dropped_total(const Session *s); /* output notifications dropped ever */
uint64_t session_journal_errors(const Session *s); /* journal writes that failed */

/* Keeps every named session's journal in sessions_fd from now on
 * (session_journal.h; state_fd is the state directory, for aside/), after
 * bringing back the sessions an earlier engine's journals there hold:
 * each made (or, when a config pinned it already, filled) with its
 * numbering and its notifications, waiting and kept, lingering as if its
 * last host had just left. A journal that fails its checks is set aside
 * and logged. Returns how many sessions came back. Call once, before any
 * monitor is taken over. */
int session_registry_restore(SessionRegistry *reg, int state_fd, int sessions_fd,
                             uint64_t journal_max_bytes);

/* After a restore: the checkpoint that went with the latest notification of
 * monitor_id in the journals brought back (Notification's checkpoint), for
 * a monitor taken over whose own checkpoint the crash left behind it.
 * False when there is none. */
bool session_registry_checkpoint(const SessionRegistry *reg, const char *monitor_id,
                                 uint64_t out[NOTIFICATION_CHECKPOINT_WORDS]);

/* Per-session state of the owner (its monitors, ...). */
void session_set_user(Session *s, void *user);
void *session_user(const Session *s);

/* Visits every session (those that exist when it starts, in creation order).
 * The visitor may destroy any session; a destroyed one is not visited. */
typedef void (*SessionVisit)(void *ctx, Session *s);
void session_each(SessionRegistry *reg, SessionVisit visit, void *ctx);

#endif
