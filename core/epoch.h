/*
 * The engine's epoch: 64 random bits drawn once per engine start, written
 * as 16 lowercase hex digits. Seqs are per session and per engine; an
 * engine that restarts knows nothing of the seqs the last one gave. The
 * epoch is in session_open's answer and in every notification, so a host
 * that stores (epoch, seq) can tell a restart from a gap, and never
 * mistakes a new notification for one it has already seen.
 */
#ifndef VIGIL_EPOCH_H
#define VIGIL_EPOCH_H

/* The epoch of this process, drawn (from the OS's random source) on the
 * first call; the same string every later call. */
const char *epoch_hex(void);

#endif
