/*
 * A spool: one stream's last bytes in a file of the state directory
 * (docs/restart.md), mapped shared, so that what the engine kept is still
 * there after the engine dies, and a keeper can go on appending while no
 * engine reads. It is a capture (capture.h) that outlives its process: the
 * same absolute offsets, the same eviction of the oldest bytes, fixed at
 * its capacity. The file is sparse: a stream that wrote little holds
 * little, on tmpfs as on disk.
 *
 * Layout: a 4096-byte header, then cap bytes in which absolute offset o is
 * at o mod cap. The header holds what never changes (magic, version,
 * stream, cap, under a checksum) and two counters: head, the bytes ever
 * appended, and cut, how far an engine has processed (set by its
 * checkpoints). Bytes evicted before the cut were processed; evicted past
 * it, they are lost, and spool_lost counts them.
 *
 * One writer at a time: the engine while it is attached, the keeper while
 * it is not (the hand-over between them is the keeper protocol's).
 */
#ifndef VIGIL_SPOOL_H
#define VIGIL_SPOOL_H

#include <stdint.h>

#include "capture.h"
#include "error.h"

#define SPOOL_HEADER_BYTES 4096
#define SPOOL_VERSION 1
/* The smallest and largest capacity a spool file may declare. */
#define SPOOL_MIN_CAP 4096
#define SPOOL_MAX_CAP ((uint64_t)1 << 30)

typedef struct SpoolHeader SpoolHeader;

typedef struct Spool {
  int fd;
  char *map;       /* header and data, mapped shared */
  SpoolHeader *h;  /* at map */
  char *data;      /* map + SPOOL_HEADER_BYTES */
  uint64_t cap;
} Spool;

/* Creates the file name in the directory dir_fd (which must not exist:
 * O_EXCL), mode 0600, for stream (0 stdout, 1 stderr) with cap bytes
 * (SPOOL_MIN_CAP..SPOOL_MAX_CAP), and maps it. */
int spool_create(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap,
                 VigilError *err);

/* Opens and maps an existing spool after checking it: a private regular
 * file of this user, not a link, the size its header declares, the magic,
 * version and checksum, counters that agree (cut <= head). The error says
 * which check failed; nothing from a refused file is used. */
int spool_open(Spool *s, int dir_fd, const char *name, VigilError *err);

/* Appends len bytes, evicting the oldest beyond cap. */
void spool_append(Spool *s, const char *data, size_t len);

/* Reads from absolute offset, at most limit bytes, as capture_read does
 * (truncated when offset had been evicted). Valid until the next append. */
CaptureSpan spool_read(const Spool *s, uint64_t offset, uint64_t limit);

/* The stream, bytes ever appended, the oldest kept offset, the cut. */
int spool_stream(const Spool *s);
uint64_t spool_head(const Spool *s);
uint64_t spool_start(const Spool *s);
uint64_t spool_cut(const Spool *s);

/* Records that an engine has processed everything before offset (at most
 * head; never moves back). */
void spool_set_cut(Spool *s, uint64_t offset);

/* Bytes evicted before any engine processed them. */
uint64_t spool_lost(const Spool *s);

/* Unmaps and closes (the file stays). */
void spool_close(Spool *s);

#endif
