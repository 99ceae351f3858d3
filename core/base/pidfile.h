/*
 * The engine's pidfile, beside its socket: vigil.sock's is vigil.pid (the
 * socket's file name with ".sock" replaced by ".pid", else ".pid"
 * appended), so that two engines listening in one directory on two
 * sockets each have their own. vigild writes it once it listens and
 * removes it at its exit; it holds the pid as decimal text and a newline.
 *
 * It is a convenience for people and scripts (`kill $(cat ...)`), never
 * the authority: `vigil shutdown` and `vigil engine status` ask the socket
 * who serves it (SO_PEERCRED) and the engine itself (api_info), since a
 * pidfile an engine killed with SIGKILL left behind names a pid the kernel
 * may have given to another process since.
 *
 * A file already there when the engine listens is stale (the engine holds
 * the socket now, so whoever wrote it no longer serves it). It is replaced
 * only when it is a regular file of this user, reached without following a
 * symbolic link; anything else there (a link, a directory, another user's
 * file) is left as it is, and the engine runs without a pidfile, saying so.
 * The file is written through a temporary name and renamed into place, so
 * a reader never sees half of it.
 */
#ifndef VIGIL_PIDFILE_H
#define VIGIL_PIDFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

/* The longest pidfile path handled. */
#define PIDFILE_PATH_MAX 4096

/* The pidfile's path for the socket at socket_path, into out (n bytes).
 * Returns 0, or -1 when it does not fit. */
int pidfile_path(const char *socket_path, char *out, size_t n);

/* Writes pid to the pidfile at path (see above for a file already there).
 * Sets *replaced to the pid a stale file named (0: none, or unreadable).
 * Returns 0, or -1 with err saying what is there or what failed; nothing
 * already there is then changed. Blocking file I/O: called once, at start. */
int pidfile_write(const char *path, pid_t pid, pid_t *replaced, VigilError *err);

/* Reads the pid in the pidfile at path: > 0, or 0 when there is none or it
 * is not a regular file of this user holding a pid (a link is not
 * followed). */
pid_t pidfile_read(const char *path);

/* Removes the pidfile at path if it still names pid (a later engine's is
 * left alone). */
void pidfile_remove(const char *path, pid_t pid);

#endif
