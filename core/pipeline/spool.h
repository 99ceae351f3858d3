/*
 * A spool: one stream's last bytes in a file of the state directory
 * (docs/restart.md), mapped shared, so that what the engine kept is still
 * there after the engine dies, and a keeper can go on appending while no
 * engine reads. It is a capture (capture.h) that outlives its process: the
 * same absolute offsets, the same eviction of the oldest bytes, fixed at
 * its capacity. The file is sparse: a stream that wrote little holds
 * little, on tmpfs as on disk.
 *
 * A spool that cannot keep more breaks, and from then on keeps nothing and
 * counts what it was given (spool_why, spool_unkept): when the file system
 * has no room for the next blocks (reserved before they are first written,
 * mapfile.h, so that a full disk is an error here and never a SIGBUS), or
 * when its file was cut short under the mapping (a SIGBUS caught). Its
 * counters are read from this process's copy, never from the mapping, so
 * a header page gone from under it reads nothing wrong.
 *
 * Layout: a header, then cap bytes in which absolute offset o is at o mod
 * cap. The header holds what never changes (magic, version, stream, cap,
 * under a checksum) and two counters: head, the bytes ever appended, and
 * cut, how far an engine has processed (set by its checkpoints). Bytes
 * evicted before the cut were processed; evicted past it, they are lost,
 * and spool_lost counts them. Version 2 (made now) has a 512-byte header
 * whose second half is the owner's (spool_owner_area: the monitor keeps its
 * checkpoint in its stdout spool's), so the header, the checkpoint and the
 * first bytes of data share one page: a quiet monitor's state costs a page
 * per file, not two (issue 27). Version 1 (a 4096-byte header, no owner's
 * area) is still read: a spool made by an engine before.
 *
 * The file is mapped at its first use (an append, a read of a byte, a cut,
 * the owner's area), never when it is made or opened: the header is
 * written with pwrite, so a stream that never writes (most monitors'
 * stderr) costs the engine's memory no page, and its file one block.
 *
 * One writer at a time: the engine while it is attached, the keeper while
 * it is not (the hand-over between them is the keeper protocol's).
 */
#ifndef VIGIL_SPOOL_H
#define VIGIL_SPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/capture.h"
#include "base/error.h"

#define SPOOL_VERSION 2
/* The header's size by version; the data follows it. */
#define SPOOL_HEADER_V1_BYTES 4096
#define SPOOL_HEADER_BYTES 512
/* The owner's part of a version 2 header: its offset and size. */
#define SPOOL_OWNER_OFFSET 256
#define SPOOL_OWNER_BYTES 256
/* The smallest and largest capacity a spool file may declare (the bounds
 * of monitor.capture_max_bytes: 3584 bytes and a version 2 header make a
 * file of one page). */
#define SPOOL_MIN_CAP 1024
#define SPOOL_MAX_CAP ((uint64_t)1 << 30)
/* The most bytes a stream's head may count: 2^62 (4 EiB), which no
 * program writes; a file that says more is refused, so that an append can
 * never wrap the counter. */
#define SPOOL_MAX_HEAD ((uint64_t)1 << 62)

typedef struct SpoolHeader SpoolHeader;

/* The blocks reserved ahead of the writes at a time, a page of the file
 * (the last step ends at the capacity): 256 posix_fallocate calls per MiB,
 * only until the spool first wraps, and a quiet stream holds one page, its
 * header and its first bytes. On tmpfs (the state directory's default)
 * what is reserved is memory: a step of 16 KiB cost every stream 20 KiB
 * (issue 27). */
#define SPOOL_RESERVE_STEP 4096u

typedef struct Spool {
  int fd;
  char *map;       /* header and data, mapped shared; NULL until first used */
  SpoolHeader *h;  /* at map */
  char *data;      /* map + header */
  uint64_t cap;
  size_t header;   /* the header's bytes: SPOOL_HEADER_BYTES, or a version 1
                      file's SPOOL_HEADER_V1_BYTES */
  uint32_t version;
  int stream;
  uint64_t head, cut; /* the header's counters as this process has them */
  uint64_t reserved;  /* the data's bytes [0, reserved) have their blocks */
  int guard;          /* the mapping's mapfile slot */
  bool broken;        /* keeps nothing more; why says why */
  bool map_lost;      /* pages of the mapping are gone: nothing can be read */
  char why[96];    /* the longest reason with its strerror fits (spool.c) */
  uint64_t unkept;    /* bytes given since it broke */
  /* A spool whose file is made at its first append (spool_defer): */
  bool deferred;      /* no file yet */
  int dir_fd;         /* its directory (borrowed) */
  const char *name;   /* its name there (borrowed) */
} Spool;

/* Creates the file name in the directory dir_fd (which must not exist:
 * O_EXCL), mode 0600, for stream (0 stdout, 1 stderr) with cap bytes
 * (SPOOL_MIN_CAP..SPOOL_MAX_CAP), and maps it. A file system with no room
 * for its header gives a spool made broken (spool_why says so), not an
 * error: its monitor goes on without it. */
int spool_create(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap,
                 VigilError *err);

/* Sets s up as an empty spool of stream with cap bytes whose file, name in
 * the directory dir_fd, is made at its first append (as spool_create makes
 * it, under name.tmp renamed into place once its header is written, so that
 * no reader, a keeper or an engine taking over, ever finds it half made).
 * Until then it reads empty and costs no file and no page: a monitor's
 * stderr, which most programs never write (issue 27). A file that cannot be
 * made then breaks the spool (spool_why says why). dir_fd and name are
 * borrowed: they must outlive s. Nothing to fail here. */
void spool_defer(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap);

/* Whether s is a deferred spool whose file is not made yet. */
bool spool_deferred(const Spool *s);

/* Opens and maps an existing spool after checking it: a private regular
 * file of this user, not a link, the size its header declares, the magic,
 * version and checksum, counters that agree (cut <= head). The error says
 * which check failed; nothing from a refused file is used. */
int spool_open(Spool *s, int dir_fd, const char *name, VigilError *err);

/* Appends len bytes, evicting the oldest beyond cap. False when the spool
 * is broken, or breaks now (no room for the blocks it needs, or its file
 * cut short): nothing of data is kept then, and len is counted unkept. */
bool spool_append(Spool *s, const char *data, size_t len);

/* Reads from absolute offset, at most limit bytes, as capture_read does
 * (truncated when offset had been evicted). Valid until the next append.
 * A spool whose file is shorter than it was made (checked first) or whose
 * mapping lost pages breaks, and reads as if everything was evicted. */
CaptureSpan spool_read(Spool *s, uint64_t offset, uint64_t limit);

/* Why the spool keeps nothing more ("no room to grow it: ..."), or NULL
 * while it keeps. */
const char *spool_why(const Spool *s);

/* Whether what the spool kept before it broke can still be read (it
 * broke for want of room, its pages intact). */
bool spool_readable(const Spool *s);

/* Bytes given to spool_append since it broke. */
uint64_t spool_unkept(const Spool *s);

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

/* The owner's part of a version 2 header (SPOOL_OWNER_BYTES at
 * SPOOL_OWNER_OFFSET, mapped shared with the rest), zeros when the spool
 * was made; NULL for a version 1 spool, a deferred one, and one whose
 * header could not be written (spool_why). Valid until spool_close; a SIGBUS on its page
 * (spool_readable turns false) means what is written there is lost. */
void *spool_owner_area(Spool *s);

/* Unmaps and closes (the file stays). */
void spool_close(Spool *s);

#endif
