/*
 * A monitor's line ring: the last ring_max_lines lines (and at most
 * ring_max_bytes of their text) of both streams, each with a sequence number
 * from one counter shared by both streams (starting at 1), its stream, the
 * index of the pattern that matched it (or -1), and its line flags. Evicted
 * lines are counted as dropped.
 *
 * A line's text is kept one of two ways. A line whose text is exactly the
 * bytes its stream's capture holds (ring_push_raw: no repair, no cut) is
 * kept as its offset in that capture, without a copy; the ring's text is
 * derived from the capture, so once the capture evicts a line's bytes the
 * line is evicted too (ring_trim), with every older line, and counted as
 * dropped. Any other line is copied into one circular arena of at most
 * max_bytes, so pushing a line never allocates once the arena has grown to
 * its size.
 */
#ifndef VIGIL_RING_H
#define VIGIL_RING_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/capture.h"
#include "pipeline/linebuf.h"

/* RingEntry.flags: the line is kept as an offset into its stream's capture
 * (above the kLine* flags of linebuf.h, never shown to readers). */
#define RING_KEPT 0x80u

typedef struct {
  uint64_t seq;
  int stream;       /* StreamId */
  int pattern;      /* index of the matching pattern, -1 if none */
  unsigned flags;   /* kLine* of linebuf.h */
  const char *text; /* not NUL-terminated; valid until the next push, ring_trim,
                       write to a capture of the ring, or read of the ring
                       (ring_query's next visit, ring_last) */
  size_t len;
} RingLine;

typedef enum {
  kRingAll = 0,
  kRingMatched,
  kRingUnmatched,
  kRingStdout,
  kRingStderr,
} RingFilter;

typedef struct {
  uint64_t lines;      /* pushed ever */
  uint64_t matched;    /* pushed with a pattern */
  uint64_t unmatched;  /* pushed without one */
  uint64_t dropped;    /* evicted */
} RingCounters;

typedef struct {
  uint64_t seq;
  uint32_t len;
  int16_t pattern;
  uint8_t stream;
  uint8_t flags;       /* kLine*, and RING_KEPT for a line kept as an offset */
  uint64_t off;        /* a copy: virtual start of the text in the arena; a kept
                          line: absolute offset of its bytes in its capture */
} RingEntry;

typedef struct {
  RingEntry *entries;  /* circular, max_lines slots, grows up to it */
  size_t entries_cap;
  size_t max_lines;
  size_t head;         /* slot of the oldest entry */
  size_t count;
  char *arena;         /* circular text storage */
  size_t arena_cap;    /* grows up to max_bytes */
  size_t max_bytes;
  size_t arena_tail;   /* virtual offset just past the newest copy */
  size_t copy_from;    /* no copy lies among the entries before this index */
  const Capture *capture[2]; /* of each stream's kept lines (ring_push_raw) */
  size_t kept_from[2]; /* no kept line of that stream lies before this index */
  char *scratch;       /* a kept line whose bytes wrap in the capture, joined */
  size_t scratch_cap;  /* the longest kept line so far, at most max_bytes */
  uint64_t next_seq;   /* starts at 1 */
  RingCounters counters;
} Ring;

void ring_init(Ring *r, size_t max_lines, size_t max_bytes);

/* Stores a line (text cut to max_bytes if longer) and returns its seq.
 * Evicts the oldest lines as needed. */
uint64_t ring_push(Ring *r, int stream, const char *text, size_t len, int pattern,
                   unsigned flags);

/* As ring_push, for a text that is also capture's bytes [offset,
 * offset + len) of the stream: kept as that offset. When capture holds
 * them no longer (a read longer than the capture), the line is dropped at
 * once with every older line, as ring_trim does; a text longer than
 * max_bytes is copied as ring_push does. A stream's kept lines all come
 * from one capture, which must outlive the ring's lines. */
uint64_t ring_push_raw(Ring *r, int stream, const char *text, size_t len,
                       const Capture *capture, uint64_t offset, int pattern, unsigned flags);

/* Pushes lines [from, to) of a run of plain lines (linebuf.h), none of
 * which matched, as that many ring_push_raw calls would, with the same
 * seqs, counters and lines kept; the run's bytes are capture's. Costs O(1)
 * for the lines of a run before its last max_lines, which those push out.
 * Returns the seq of line `from` (the next seq when from == to). */
uint64_t ring_push_raw_run(Ring *r, int stream, const Capture *capture, const LineRun *run,
                           size_t from, size_t to);

/* Evicts, counting them as dropped, the kept lines whose bytes their
 * capture no longer holds, and every line older than those. Its owner
 * calls it after each write to a capture of the ring. Returns how many
 * lines went. */
size_t ring_trim(Ring *r);

typedef void (*RingVisit)(void *ctx, const RingLine *line);

/* Visits, oldest first, the lines passing `filter` with seq > since_seq; with
 * limit > 0 only the most recent `limit` of them. Returns how many were
 * visited. */
size_t ring_query(const Ring *r, RingFilter filter, uint64_t since_seq, size_t limit,
                  RingVisit visit, void *ctx);

/* The newest line, or NULL text when empty. A kept line whose bytes can no
 * longer be read (a spool cut short under the engine, until the next write
 * leaves it: capture.h) reads as an empty text, never as other bytes. */
RingLine ring_last(const Ring *r);

void ring_free(Ring *r);

#endif
