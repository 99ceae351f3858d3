/*
 * vigild's log in a file (`--log-file FILE`), for an engine started in the
 * background from a terminal, where its lines would interleave with the
 * person's own commands.
 *
 * The file is bounded: before a line that would take it past
 * LOGFILE_MAX_BYTES (or what --log-max-bytes says) it is renamed to FILE.1,
 * replacing the one before, and a new FILE is started with a line saying
 * so; so neither file ever holds more than the bound, and the log never
 * takes more than twice the bound on disk. The oldest half is what is
 * dropped, and each rotation's line in the new file counts the bytes
 * dropped so far. The file is made 0600: a log names commands and paths.
 *
 * An existing FILE is appended to only when it is safe to: a regular file
 * (not a symbolic link, which is never followed, nor a FIFO or a device),
 * of the engine's user, that neither its group nor others can write, with
 * no other name (one hard link). Anything else is refused at start with
 * the reason: another user's file, or one others can write, would let
 * them forge or erase the engine's lines, and a link or a second name
 * would have the engine grow a file it was not given.
 *
 * It works under the log (log.h) by making the file the engine's fd 2,
 * which the log's writer thread writes to; the rotation runs in that
 * thread, never in the event loop.
 */
#ifndef VIGIL_LOGFILE_H
#define VIGIL_LOGFILE_H

#include <stdint.h>

#include "base/error.h"

#define LOGFILE_MAX_BYTES (16ull << 20)
#define LOGFILE_MIN_BYTES (64ull << 10)
#define LOGFILE_MAX_MAX_BYTES (1ull << 30)

/* Opens (appends to) path, 0600 when made, as fd 2, and rotates it at
 * max_bytes (LOGFILE_MIN_BYTES..LOGFILE_MAX_MAX_BYTES). -1 with err when
 * the bound is out of range, or the file cannot be opened or is not safe
 * to append to (above; the message names the path and why); nothing
 * changed then. */
int logfile_open(const char *path, uint64_t max_bytes, VigilError *err);

#endif
