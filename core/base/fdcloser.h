/*
 * Descriptors closed off the loop. Closing the last descriptor of a file
 * that was unlinked frees its blocks, and on a file system mounted with
 * `discard` (ext4 on the project's VM) that waits for the disk: 1000
 * monitors' directories removed at a SIGTERM held the loop for seconds
 * (perf: blkdev_issue_discard under close and unlinkat). fdcloser_close
 * hands such a descriptor to libuv's thread pool instead, in batches, one
 * batch in the pool at a time.
 *
 * Bound: FDCLOSER_MAX_PENDING descriptors wait at most; past it a
 * descriptor is closed at once, on the loop, and counted. 4096 was reached
 * at a SIGTERM with 1000 monitors (five or six each, and the pool's closes
 * wait for the disk); the monitors' own descriptors are closed meanwhile,
 * so what waits here never adds to what the engine held before.
 */
#ifndef VIGIL_FDCLOSER_H
#define VIGIL_FDCLOSER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define FDCLOSER_MAX_PENDING 16384

typedef struct {
  uint64_t closed;        /* closed by the pool */
  uint64_t closed_inline; /* closed on the loop: the bound was reached, or no pool */
  size_t pending;         /* waiting or being closed now */
} FdCloserStats;

/* The loop whose pool closes from now on (vigild's); NULL: none. Until
 * one is given (a unit test, the CLI), descriptors are closed at once. */
void fdcloser_use_loop(uv_loop_t *loop);

/* Closes fd off the loop (see above). fd < 0 is ignored. */
void fdcloser_close(int fd);

/* Takes a duplicate of fd to close off the loop, so that the caller's own
 * close of fd (a module that closes its descriptors itself) is not the
 * last one. fd < 0, or a duplicate that cannot be made, is ignored. */
void fdcloser_hold(int fd);

/* Opens name in dir_fd only to hold its file across an unlink, or a rename
 * that replaces it, so that the pool's fdcloser_close of the result is its
 * last close. Not followed, not waited on (a FIFO put there); a socket is
 * not opened. Returns the descriptor, or -1 when nothing is held. */
int fdcloser_open_held(int dir_fd, const char *name);

void fdcloser_stats(FdCloserStats *out);

#endif
