/*
 * One waiting hook per harness session. A turn-end hook that waits for the
 * next notification (Claude Code's Stop with asyncRewake, OpenCode's
 * session.idle) outlives its turn: when the user types again before
 * anything came, a new turn runs and ends, and a second one would wait
 * beside the first, each holding a connection to the engine for up to an
 * hour. So a waiter holds a lock on a small file named after its harness
 * and the harness's session id, in the socket's directory (checked by the
 * engine as this user's own); a new waiter of that key, and the start of a
 * new turn, end the one that holds it (SIGTERM, which a waiter answers by
 * leaving quietly, having taken nothing: hook_wait only takes once a
 * notification came).
 *
 * The lock is a POSIX record lock (fcntl), so the kernel names its holder
 * (F_GETLK) and drops it when that process ends, however it ends. The file
 * is removed by the waiter that leaves; a waiter that found it just before
 * it went waits on a file no one else will find, which costs at most a
 * second waiter for a while: the cursor still gives each notification to
 * only one of them.
 */
#ifndef VIGIL_HOOK_WAITER_H
#define VIGIL_HOOK_WAITER_H

/* How long a new waiter gives the old one to go before waiting anyway. */
#define HOOK_WAITER_HANDOVER_MS 2000

typedef struct {
  int fd;          /* the locked file, or -1 */
  char path[4200];
} HookWaiter;

/* Ends the waiter of key (a harness and its session id: [A-Za-z0-9._:-],
 * which names a file) in the socket's directory dir, if one waits. */
void hook_waiter_end(const char *dir, const char *key);

/* Makes this process the waiter of key: ends the one before, then holds
 * the lock (within HOOK_WAITER_HANDOVER_MS). Returns 0, or -1 when no lock
 * could be had (w->fd is -1 then; waiting without it is still correct). */
int hook_waiter_begin(HookWaiter *w, const char *dir, const char *key);

/* Holds the lock of key only when no one does, ending no one: for a
 * process that must be the only one of its key (Codex's watcher of a
 * thread). Returns 0 (held now), 1 (another process holds it), or -1. */
int hook_waiter_try(HookWaiter *w, const char *dir, const char *key);

/* Gives the lock up and removes its file. */
void hook_waiter_done(HookWaiter *w);

#endif
