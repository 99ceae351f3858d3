/*
 * Codex CLI's wake of an idle agent (docs/mcp.md, "Wake paths": Codex).
 * Codex gives MCP notifications to nobody and runs no hook between turns;
 * what starts a turn on an idle thread with nobody typing is `codex queue
 * --thread ID --message TEXT --resume`, and only on Codex's app-server
 * daemon: found working with the TUI started on the daemon (`codex app-
 * server daemon start`, then `codex --remote unix://`), which shows the
 * queued turn, nobody typing. A standalone TUI keeps its thread to itself:
 * there the queue cannot resume it, and the message waits for the user's
 * next turn (which the hooks serve anyway).
 *
 * So Codex's SessionStart hook, when it runs under the daemon (an ancestor
 * is `codex app-server ... --managed-daemon`; the hook input's session_id
 * is the thread's id), starts a watcher for that thread: a process of its
 * own (detached: its own session, stdio on /dev/null), one per thread (a
 * lock in the socket's directory; a second SessionStart of the thread
 * finds it held and starts none), living while the daemon does, at most
 * HOOK_CODEX_WATCH_MAX_MS, and while the engine and the session are there.
 * It waits for a notification pushed to the session; when the session is
 * idle (a turn's hooks serve it while busy), it takes what fits one answer
 * from the model cursor (hook_take.h) and hands it to the daemon's own
 * `codex queue ... --resume`, the binary the daemon runs. The queue is
 * Codex's own store: the message reaches the model even when the resume
 * fails, at the thread's next turn. A queue that fails ends the watcher
 * (what it took is then read again with notifications_read); Codex's Stop
 * hook, which blocks a turn's end with what is above the cursor, stays the
 * fallback.
 */
#ifndef VIGIL_HOOK_CODEX_H
#define VIGIL_HOOK_CODEX_H

#include <stddef.h>
#include <sys/types.h>

#include "cli/cli_client.h"

/* The longest a watcher lives. */
#define HOOK_CODEX_WATCH_MAX_MS (24LL * 3600 * 1000)
/* How long `codex queue` may take. */
#define HOOK_CODEX_QUEUE_WAIT_MS 30000
/* How many ancestors are looked at for the daemon: the hook's shell, the
 * daemon, and a wrapper or two. */
#define HOOK_CODEX_ANCESTORS 4

/* Whether this process runs under Codex's app-server daemon: its pid in
 * *pid and its executable's path in exe (cap bytes). Returns 1, or 0 when
 * not (or when /proc cannot tell). */
int hook_codex_daemon(pid_t *pid, char *exe, size_t cap);

/* Starts the watcher of thread (the hook input's session_id) for the
 * daemon pid running exe, on c's socket and session, with a connection of
 * its own (c, not connected yet, is left as it is). Returns 0 once the
 * watcher runs (or found one already watching the thread and left), -1
 * when none could be started (fork failed). The caller's stdio is flushed
 * first. */
int hook_codex_watch(const CliClient *c, const char *thread, pid_t daemon, const char *exe);

#endif
