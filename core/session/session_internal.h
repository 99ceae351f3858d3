/*
 * The inside of sessions, shared by session.c (the registry and the life of
 * a session) and session_queue.c (what happens to its notifications), and
 * by nothing else: callers include session.h.
 */
#ifndef VIGIL_SESSION_INTERNAL_H
#define VIGIL_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "pipeline/ignorelist.h"
#include "pipeline/notification.h"
#include "session/session.h"
#include "session/session_cursor.h"

/* A waiting notification: one node of the FIFO. */
typedef struct WaitNode {
  Notification *n;
  struct WaitNode *prev;
  struct WaitNode *next;
} WaitNode;

/* A named model cursor (session_cursor.h). */
typedef struct {
  char name[SESSION_CURSOR_NAME_MAX + 1];
  uint64_t seq;
} SessionCursor;

struct SessionAttachment {
  Session *s;
  SessionPush push;
  void *ctx;
  bool dead;                     /* detached while the session was in use */
  bool tap;                      /* session_attach_tap: not a connection */
  /* Behind (session.h, "Pacing"): its connection refused a push, or a
   * replay is under way. It is owed every kept notification from seq
   * `owed` on, taken from `kept` by session_resume; new ones are kept for
   * it, not pushed, until it has caught up. */
  bool behind;
  uint64_t owed;
  bool owed_by_cursor;           /* owed since an attach's last_seq, not a refusal */
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
  size_t nattached;              /* live connections (dead ones and taps excluded) */
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
  uint64_t dropped_incidents_pending; /* incidents in those (docs/incidents.md) */
  uint64_t dropped_repeats_pending;   /* repeats their summaries reported */
  uint64_t dropped_total;

  /* Its model cursors, in the order they were made, and the takes that
   * wait for something above one (session_cursor.c), in the order they
   * came. A push that numbers a notification while one waits sets
   * cursor_wake_due; the outermost session__leave wakes them. */
  SessionCursor *cursors;
  size_t ncursors;
  SessionCursorWaiter *cw_head;
  SessionCursorWaiter *cw_tail;
  bool cursor_wake_due;

  uv_timer_t linger;
  bool linger_ready;             /* linger has been initialised */

  /* Its journal (session_journal.h); journal_fd -1 while it has none. */
  int journal_fd;
  size_t journal_bytes;          /* the file's length */
  size_t journal_rewrite_bytes;  /* its length after the last rewrite */
  uint64_t journal_next_key;     /* the last key a note got */
  uint64_t journal_errors;       /* writes that failed */
  bool journal_broken;           /* a write failed: rewrite at the next change */

  /* Its silenced fingerprints (session_ignore.h), read at first use. */
  IgnoreList ignores;
  bool ignores_loaded;

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
  /* The journals' directory (session_journal.h), -1: none kept. */
  int store_fd;
  int state_fd;                  /* the state directory, for aside/ */
  size_t journal_max_bytes;      /* state.journal_max_bytes */
  bool restoring;                /* a journal is being read back */
  /* Notifications a connection that fell behind lost: evicted from `kept`
   * before it could take them (session_registry_lost_behind). */
  uint64_t lost_behind;
  uint64_t set_aside;            /* journals set aside at the restore */
  uint64_t ignores_set_aside;    /* ignore files set aside (session_ignore.h) */
  /* The latest checkpoint a restored journal holds for each monitor
   * (session_registry_checkpoint): kept from the restore on. */
  struct SessionCheckpoint *checkpoints;
  size_t ncheckpoints;
};

/* A monitor's checkpoint as its notifications' journal records had it. */
typedef struct SessionCheckpoint {
  char monitor_id[24];
  uint64_t v[NOTIFICATION_CHECKPOINT_WORDS];
} SessionCheckpoint;

/* --- session.c: the in-use guard ---------------------------------------- */

/* Marks a call in progress inside s, so callbacks cannot free it under us. */
void session__enter(Session *s);

/* Ends a call inside s; the outermost one carries out a deferred destroy or
 * frees deferred detachments. s may be freed when this returns. */
void session__leave(Session *s);

/* --- session_queue.c ---------------------------------------------------- */

/* Pushes everything waiting, in order, after the `dropped` notification if
 * one is due; stops early (leaving the rest waiting) if a callback detached
 * the last attachment or destroyed the session. Returns how many it pushed. */
size_t session__flush(Session *s);

/* Pushes the waiting live_safe notifications, in order (an ending's held
 * output before it), leaving the idle ones waiting: what a busy session
 * does when an attachment catches up after everyone was behind. */
void session__release_live(Session *s);

/* An attach with a cursor this session never reached (last_seq >=
 * next_seq): raises the numbering above it and queues, first in line, a
 * `dropped` notification saying what followed last_seq is lost. */
void session__continue_after(Session *s, uint64_t last_seq);

/* Pushes to a alone every kept notification with seq > last_seq, oldest
 * first, after a `dropped` one naming the seqs it cannot have, if any: as
 * much as its connection takes now, the rest by session_resume. */
void session__replay(Session *s, SessionAttachment *a, uint64_t last_seq);

/* Pushes to a, which is behind, what it is owed, until its connection
 * refuses one (it stays behind) or it has caught up. s is in use. */
void session__catch_up(Session *s, SessionAttachment *a);

/* Frees every notification s holds, waiting or kept. */
void session_queue__free(Session *s);

/* The i-th kept notification of s, oldest first (i < kept_count). */
Notification *session__kept_at(const Session *s, size_t i);

/* --- session_cursor.c ---------------------------------------------------- */

/* Serves the cursor waiters of s that have something above their cursor
 * now, in the order they came (session__leave, while s is still in use). */
void session_cursor__wake(Session *s);

/* s is being destroyed: every waiter is told (ready with NULL) and goes. */
void session_cursor__cancel(Session *s);

#endif
