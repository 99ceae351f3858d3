/*
 * The engine's state directory (docs/restart.md): where what must outlive
 * the engine is kept. Opening it makes it if missing (mode 0700), refuses
 * one that anybody but the engine's user could read or change, or that is
 * a symbolic link, and takes its lock, so that two engines never share
 * one. The lock is flock(2) on a file in it: the kernel drops it when the
 * holder dies, however it dies, so a crashed engine never leaves it stale.
 */
#ifndef VIGIL_STATEDIR_H
#define VIGIL_STATEDIR_H

#include <stdbool.h>

#include "base/error.h"

/* The lock's file name in the directory; it holds the holder's pid. */
#define STATEDIR_LOCK_NAME "lock"
/* The subdirectory that holds one directory per monitor. */
#define STATEDIR_MONITORS_NAME "monitors"
/* The subdirectory that holds each named session's journal. */
#define STATEDIR_SESSIONS_NAME "sessions"

typedef struct {
  char *path;      /* as given */
  int dir_fd;      /* the directory, opened without following a link */
  int lock_fd;     /* the lock file, locked while this is open */
  int monitors_fd; /* STATEDIR_MONITORS_NAME in it, opened the same way:
                      each monitor's directory is made and reached from it */
  int sessions_fd; /* STATEDIR_SESSIONS_NAME, the same way: the journals */
  bool made;       /* the directory was made by this open */
} StateDir;

/* Opens (making it if missing) the state directory at path, takes its
 * lock, then opens (making it if missing) its monitors directory. Fails,
 * changing nothing it did not make, when path or the monitors directory is
 * a symbolic link or not a directory, belongs to another user, or grants
 * any access to group or others (vigild never changes an existing
 * directory's mode), when the lock file is not a private regular file, and
 * when another engine holds the lock (the message names its pid). Every
 * message starts "state.dir: " and names the path. */
int statedir_open(StateDir *sd, const char *path, VigilError *err);

/* Releases the lock and closes the directories. */
void statedir_close(StateDir *sd);

/* statedir_close for a start that failed after the open succeeded: when
 * this open made the directory, what it made (the monitors directory, the
 * lock file, the directory) is removed again, each only while empty, so a
 * failed start leaves nothing behind. In a directory that was there before
 * the lock file and the monitors directory stay: the lock file is never
 * removed from a directory another engine may be opening. */
void statedir_abandon(StateDir *sd);

#endif
