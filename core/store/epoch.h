/*
 * The engine's epoch: 64 random bits drawn once per engine start, written
 * as 16 lowercase hex digits. Seqs are per session and per engine; an
 * engine that restarts knows nothing of the seqs the last one gave, unless
 * it restores them from its state directory (docs/restart.md): then it
 * keeps the earlier engine's epoch too. The
 * epoch is in session_open's answer and in every notification, so a host
 * that stores (epoch, seq) can tell a restart from a gap, and never
 * mistakes a new notification for one it has already seen.
 */
#ifndef VIGIL_EPOCH_H
#define VIGIL_EPOCH_H

#include <stdbool.h>

#include "base/error.h"

/* The epoch of this process, drawn (from the OS's random source) on the
 * first call; the same string every later call. */
const char *epoch_hex(void);

/* Whether hex is an epoch as epoch_hex writes it (16 lowercase hex digits). */
bool epoch_valid(const char *hex);

/* Takes an earlier engine's epoch as this one's: only before the first
 * epoch_hex() call, and only a valid one. Returns whether it did. */
bool epoch_restore(const char *hex);

/* The epoch's file in the state directory. */
#define EPOCH_FILE_NAME "epoch"

/* Keeps the epoch in the state directory state_fd (its file "epoch"): an
 * earlier engine's is taken back when it is there and sound (true), else
 * this engine's is drawn and written (false; err set if it could not be). */
bool epoch_keep(int state_fd, VigilError *err);

#endif
