/*
 * `vigild --daemon`: the engine started from a terminal or a script goes
 * into the background by itself, and the command returns only once the
 * engine listens, so the very next `vigil start` finds it (`vigild &`
 * returns at once and races it).
 *
 * The process forks before anything else happens (no thread, no log line
 * yet): the child starts its own session (no terminal, so no SIGHUP when
 * the terminal closes, no job-control stops), reads /dev/null and writes
 * its log to a file; the parent waits on a pipe for the child's word. On
 * "ready" it prints the warnings and errors the start logged (an empty
 * allowlist, a containment it could not set up), where the engine listens,
 * its pid and its log, and exits 0; when the child exits first it prints the end of the child's
 * log (the reason) and exits 1.
 */
#ifndef VIGIL_DAEMON_H
#define VIGIL_DAEMON_H

#include <stdint.h>

/* How much of the log the parent shows when the engine did not start. */
#define DAEMON_LOG_TAIL_BYTES 4096

/* How much of the log written while the engine started the parent reads
 * for its warnings and errors, and how many of those it shows (a count
 * of the rest, with the log's path, follows). */
#define DAEMON_WARN_BYTES 65536
#define DAEMON_WARN_LINES 20

/* Forks; only the child returns, with the descriptor to tell the parent
 * on (daemon_ready), and with log_path as its stderr. The parent exits
 * (0 once told ready, 1 otherwise). -1 in the calling process when the
 * fork or the log file fails, said on stderr. */
int daemon_detach(const char *log_path, uint64_t log_max_bytes);

/* Tells the waiting parent the engine listens on listen_path, and closes
 * the pipe. Does nothing when fd < 0. */
void daemon_ready(int fd, const char *listen_path);

#endif
