/*
 * Randomness from the OS, for what must not be predictable: envelope nonces
 * (a process that could guess one could forge an end marker), hash keys (a
 * process that knew them could make the prefix filter's lookups collide),
 * the engine's epoch and monitor ids. Every draw goes to the OS; there is no
 * user-space generator to seed or to fork badly.
 */
#ifndef VIGIL_RANDOM_H
#define VIGIL_RANDOM_H

#include <stddef.h>

/* Fills buf with len bytes from the OS's random source (getrandom, else
 * /dev/urandom); never blocks; aborts when there is neither, since vigil's
 * nonces and hash keys must not be predictable. */
void random_bytes(void *buf, size_t len);

/* Fills out with 2*nbytes lowercase hex digits from the OS's random source
 * and a NUL; out must hold 2*nbytes+1. nbytes >= 8 gives >= 64 bits. */
void random_hex(char *out, size_t nbytes);

/* Fills out (>= 17 bytes) with "mon_" and 12 random [0-9a-z]. */
void random_monitor_id(char *out);

#endif
