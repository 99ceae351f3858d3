/*
 * The files of the state directory (docs/restart.md) as one format, shared
 * by every kind of them (a monitor's spec, a session's journal, the
 * engine's epoch): what makes one safe to write and safe to read back.
 *
 * Writing: a whole file goes to a temporary name (0600, O_EXCL |
 * O_NOFOLLOW) and is renamed into place, so a process dying mid-write
 * leaves the old file or the new one, never half of one. No fsync: the
 * state must outlive the engine's process, not the machine (which takes
 * every child with it).
 *
 * Reading: a file is opened without following a link and accepted only as
 * a regular file of this user with no access for anyone else, within a
 * size bound. A whole file is a 24-byte header (an 8-byte magic naming its
 * kind, the version, the body's length, a 64-bit FNV-1a of the body) and a
 * msgpack body; a file whose magic, version, length or sum does not match
 * is refused whole. The msgpack readers below check every field as a
 * request's would be checked and name it in the error, with the file's
 * kind as a prefix ("spec: argv[2]: not a string").
 */
#ifndef VIGIL_STATEFILE_H
#define VIGIL_STATEFILE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define STATEFILE_HEADER 24
/* Where a file that fails its checks goes (docs/restart.md): renamed into
 * this directory of the state directory, never read again. */
#define STATEFILE_ASIDE_NAME "aside"

/* 64-bit FNV-1a of p[0..n). */
uint64_t statefile_sum(const void *p, size_t n);

/* Writes header (magic, version) and body as dir_fd/name through
 * name.tmp; err names the file's kind (`what`). */
int statefile_write(int dir_fd, const char *name, const char magic[8], uint32_t version,
                    const void *body, size_t len, const char *what, VigilError *err);

/* Opens dir_fd/name for reading if it is a private regular file of this
 * user of at most max_bytes: the descriptor, or -1 with err set. *size
 * gets its size. */
int statefile_open(int dir_fd, const char *name, size_t max_bytes, const char *what,
                   size_t *size, VigilError *err);

/* Reads size bytes of fd (from statefile_open) into a new buffer, one
 * byte more for a NUL; returns how many it read (fewer: the file shrank). */
size_t statefile_read_fd(int fd, size_t size, char **out);

/* Reads and checks a whole file: its body (malloc'd) in *body, its length
 * in *len. */
int statefile_read(int dir_fd, const char *name, const char magic[8], uint32_t version,
                   size_t max_bytes, const char *what, char **body, size_t *len,
                   VigilError *err);

/* Moves dir_fd/name into the state directory's aside/ (made 0700 when
 * missing) as `as` plus the time, so it is kept for a person to look at
 * and never read again. Returns the name it got there in out (or "" when
 * it could not be moved, and then it is removed). */
void statefile_set_aside(int state_fd, int dir_fd, const char *name, const char *as, char *out,
                         size_t size);

/* --- reading a msgpack body ---------------------------------------------- */

/* map[key], or NULL. */
const msgpack_object *statefile_get(const msgpack_object *map, const char *key);
/* A string (or nil, as NULL, when nil_ok), copied. */
bool statefile_get_str(const char *what, const msgpack_object *map, const char *key,
                       bool nil_ok, char **out, VigilError *err);
/* An array of strings, as a NULL-terminated vector (freed by the caller
 * even on failure). */
bool statefile_get_strv(const char *what, const msgpack_object *map, const char *key,
                        char ***out, VigilError *err);
/* An integer within lo..hi. */
bool statefile_get_int(const char *what, const msgpack_object *map, const char *key, int64_t lo,
                       int64_t hi, int64_t *out, VigilError *err);
/* An unsigned integer within 0..hi. */
bool statefile_get_uint(const char *what, const msgpack_object *map, const char *key,
                        uint64_t hi, uint64_t *out, VigilError *err);
bool statefile_get_bool(const char *what, const msgpack_object *map, const char *key, bool *out,
                        VigilError *err);

/* --- writing a msgpack body ---------------------------------------------- */

/* The bytes as they are (wire.h's wire_str makes them valid UTF-8 for a
 * host; a state file keeps an argv or a line exactly). */

void statefile_pack_str(msgpack_packer *pk, const char *s); /* nil when NULL */
void statefile_pack_strn(msgpack_packer *pk, const char *s, size_t n);
void statefile_pack_strv(msgpack_packer *pk, char *const *v);
void statefile_pack_bool(msgpack_packer *pk, bool b);

#endif
