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

#include "error.h"

/* The lock's file name in the directory; it holds the holder's pid. */
#define STATEDIR_LOCK_NAME "lock"

typedef struct {
  char *path;  /* as given */
  int dir_fd;  /* the directory, opened without following a link */
  int lock_fd; /* the lock file, locked while this is open */
  bool made;   /* the directory was made by this open */
} StateDir;

/* Opens (making it if missing) the state directory at path and takes its
 * lock. Fails, changing nothing it did not make, when path is a symbolic
 * link or not a directory, belongs to another user, or grants any access
 * to group or others (vigild never changes an existing directory's mode),
 * when the lock file is not a private regular file, and when another
 * engine holds the lock (the message names its pid). */
int statedir_open(StateDir *sd, const char *path, VigilError *err);

/* Releases the lock and closes the directory. */
void statedir_close(StateDir *sd);

#endif
