/*
 * A named session's journal (docs/restart.md, stage 3): what a session
 * holds, kept in the state directory's sessions/ so that an engine that
 * dies (SIGKILL, a crash, an upgrade) comes back with every named session's
 * numbering and its notifications, waiting and kept, and a host resuming
 * with last_seq gets exactly what it missed.
 *
 * One file per named session, `sessions/session.<name>`: a 16-byte header
 * ("VIGLJRNL", version, 0) and records, each a u32 length, the low 32 bits
 * of the FNV-1a of its body, and a msgpack map:
 *   note  a notification entered the session: waiting (seq 0; `front` when
 *         it went first in line) or pushed at once (its seq);
 *   push  the waiting notification with key k was pushed with seq;
 *   gone  the waiting notification with key k was dropped (queue overflow);
 *   meta  nothing but the session's numbers changed;
 *   cursor  the model cursor named c moved to seq (session_cursor.h;
 *         version 2 on).
 * Every record carries the session's numbers after it (next seq, first
 * seq, the drop counters, queue_max, linger_ms), so the last whole record
 * says where the session stood.
 *
 * A record is appended (one write) before the notification it speaks of
 * is pushed: a host can never hold a seq the journal lacks; likewise a
 * cursor's move before the take that moved it answers. A rewrite holds
 * one cursor record per cursor above 0. Version 1 (before cursors) is
 * read as well; what is written is version 2, which an engine before
 * cursors refuses whole rather than misreading. Past
 * state.journal_max_bytes (or twice the last rewrite, if that is more) the
 * file is rewritten as what the session holds now, through a temporary
 * name. No fsync: the journal must outlive the engine's process, not the
 * machine.
 *
 * Read back (session_registry_restore): a torn last record (a short write
 * cut by the crash: it was never pushed) is dropped; a file that fails any
 * other check (header, a record's sum, a field, a key no note made) is set
 * aside whole (statefile.h), logged, and its session starts afresh.
 *
 * This file is the sessions' own: session.c and session_queue.c call the
 * hooks below; callers outside use session_registry_restore (session.h).
 */
#ifndef VIGIL_SESSION_JOURNAL_H
#define VIGIL_SESSION_JOURNAL_H

#include "session/session_internal.h"

/* The prefix of a session's file name in sessions/. */
#define SESSION_JOURNAL_PREFIX "session."

/* Starts s's journal afresh (a new file holding what s holds now). A
 * no-op for an anonymous session or a registry without a store. */
void session_journal_begin(Session *s);

/* n enters s: waiting (n->seq 0; in front of the queue when front) or
 * pushed (n->seq set). Gives n its key. */
void session_journal_note(Session *s, Notification *n, bool front);
/* The waiting n was just numbered (n->seq) and is being pushed. */
void session_journal_push(Session *s, const Notification *n);
/* The waiting n is dropped. */
void session_journal_gone(Session *s, const Notification *n);
/* Only s's numbers changed (its linger, a raised numbering). */
void session_journal_meta(Session *s);
/* The cursor c of s moved (to c->seq). */
void session_journal_cursor(Session *s, const SessionCursor *c);

/* s is destroyed for good (expired, closed, the engine shutting down):
 * its file goes. */
void session_journal_end(Session *s);

#endif
