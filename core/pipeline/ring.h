/*
 * A monitor's line ring: the last ring_max_lines lines (and at most
 * ring_max_bytes of their text) of both streams, each with a sequence number
 * from one counter shared by both streams (starting at 1), its stream, the
 * index of the pattern that matched it (or -1), and its line flags. Evicted
 * lines are counted as dropped. Text lives in one circular arena, so pushing
 * a line never allocates once the arena has grown to its size.
 */
#ifndef VIGIL_RING_H
#define VIGIL_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t seq;
  int stream;       /* StreamId */
  int pattern;      /* index of the matching pattern, -1 if none */
  unsigned flags;   /* kLine* of linebuf.h */
  const char *text; /* valid until the next ring_push; not NUL-terminated */
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
  uint8_t flags;
  size_t off;          /* start of the text in the arena */
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
  uint64_t next_seq;   /* starts at 1 */
  RingCounters counters;
} Ring;

void ring_init(Ring *r, size_t max_lines, size_t max_bytes);

/* Stores a line (text cut to max_bytes if longer) and returns its seq.
 * Evicts the oldest lines as needed. */
uint64_t ring_push(Ring *r, int stream, const char *text, size_t len, int pattern,
                   unsigned flags);

typedef void (*RingVisit)(void *ctx, const RingLine *line);

/* Visits, oldest first, the lines passing `filter` with seq > since_seq; with
 * limit > 0 only the most recent `limit` of them. Returns how many were
 * visited. */
size_t ring_query(const Ring *r, RingFilter filter, uint64_t since_seq, size_t limit,
                  RingVisit visit, void *ctx);

/* The newest line, or NULL text when empty. */
RingLine ring_last(const Ring *r);

void ring_free(Ring *r);

#endif
