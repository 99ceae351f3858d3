/*
 * vigild's log in a file (`--log-file FILE`), for an engine started in the
 * background from a terminal, where its lines would interleave with the
 * person's own commands.
 *
 * The file is bounded: once it holds LOGFILE_MAX_BYTES (or what
 * --log-max-bytes says) it is renamed to FILE.1, replacing the one before,
 * and a new FILE is started with a line saying so; so the log never takes
 * more than twice the bound on disk. The oldest half is what is dropped,
 * and each rotation's line in the new file counts the bytes dropped so
 * far. The file is made
 * 0600: a log names commands and paths.
 *
 * It works under the log (log.h) by making the file the engine's fd 2,
 * which the log's writer thread writes to; the rotation runs in that
 * thread, never in the event loop.
 */
#ifndef VIGIL_LOGFILE_H
#define VIGIL_LOGFILE_H

#include <stdint.h>

#include "error.h"

#define LOGFILE_MAX_BYTES (16ull << 20)
#define LOGFILE_MIN_BYTES (64ull << 10)
#define LOGFILE_MAX_MAX_BYTES (1ull << 30)

/* Opens (appends to) path, 0600 when made, as fd 2, and rotates it past
 * max_bytes (LOGFILE_MIN_BYTES..LOGFILE_MAX_MAX_BYTES). -1 with err when
 * the bound is out of range or the file cannot be opened; nothing changed
 * then. */
int logfile_open(const char *path, uint64_t max_bytes, VigilError *err);

#endif
