/*
 * A monitor's line ring (see ring.h). It owns two circular stores that grow
 * lazily by doubling and then stay put: the entries (seq, stream, pattern,
 * flags and where the text is) up to max_lines slots, and the text arena up
 * to max_bytes. Each line's text is contiguous in the arena, so a reader gets
 * one pointer; a text that does not fit before the arena's end goes to its
 * start, and the oldest lines it would overlap are evicted first.
 *
 * Arena positions are virtual: a text at virtual offset v lives at
 * v % arena_cap, and a text that would straddle the end moves up to the next
 * multiple of arena_cap. Live texts then always span
 * [oldest.off, newest.off + newest.len) in virtual terms, and a new text fits
 * exactly when that span, extended to cover it, is at most arena_cap long.
 * This keeps eviction to one comparison per line, zero-length lines included.
 *
 * Decisions the header leaves open: a text longer than max_bytes is cut at a
 * UTF-8 character boundary and flagged kLineTruncated; with max_lines 0 a
 * pushed line gets its seq and is counted as dropped at once.
 */
#include "pipeline/ring.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/linebuf.h"
#include "base/memory.h"
#include "spec/stream.h"

/* First sizes; both double from here up to their caps. */
#define RING_ENTRIES_MIN 8
#define RING_ARENA_MIN 512

/* Virtual offsets are rebased past this, which only a 32-bit size_t reaches. */
#define RING_REBASE_AT (SIZE_MAX / 4)

/* Sets r to an empty ring keeping at most max_lines lines and max_bytes of
 * their text. Nothing is allocated until the first push. */
void
ring_init(Ring *r, size_t max_lines, size_t max_bytes)
{
  assert(r != NULL);
  memset(r, 0, sizeof *r);
  r->max_lines = max_lines;
  r->max_bytes = max_bytes;
  r->next_seq = 1;
}

/* The i-th live entry, 0 being the oldest. */
static RingEntry *
ring_entry(const Ring *r, size_t i)
{
  size_t slot = r->head + i;
  if (slot >= r->entries_cap)
    slot -= r->entries_cap;
  return &r->entries[slot];
}

/* Virtual offset just past the newest text: where the next text goes. */
static size_t
ring_tail(const Ring *r)
{
  if (r->count == 0)
    return 0;
  const RingEntry *e = ring_entry(r, r->count - 1);
  return e->off + e->len;
}

/* Where virtual offset v lies in the arena. The arena's size is a power of
 * two unless max_bytes capped it, and a mask is much cheaper than a
 * division once per line. */
static inline size_t
ring_phys(const Ring *r, size_t v)
{
  size_t cap = r->arena_cap;
  return (cap & (cap - 1)) == 0 ? v & (cap - 1) : v % cap;
}

/* Drops the oldest line and counts it. */
static void
ring_evict(Ring *r)
{
  r->head++;
  if (r->head == r->entries_cap)
    r->head = 0;
  r->count--;
  r->counters.dropped++;
}

/* Doubles the entry slots (up to max_lines), straightening them to start at
 * slot 0. */
static void
ring_grow_entries(Ring *r)
{
  size_t cap = r->entries_cap ? r->entries_cap * 2 : RING_ENTRIES_MIN;
  if (cap > r->max_lines)
    cap = r->max_lines;
  RingEntry *entries = xmalloc(cap * sizeof *entries);
  for (size_t i = 0; i < r->count; i++)
    entries[i] = *ring_entry(r, i);
  free(r->entries);
  r->entries = entries;
  r->entries_cap = cap;
  r->head = 0;
}

/* Grows the arena (doubling, up to max_bytes) so the live texts plus `more`
 * bytes fit, packing the live texts from offset 0. */
static void
ring_grow_arena(Ring *r, size_t more)
{
  size_t live = 0;
  for (size_t i = 0; i < r->count; i++)
    live += ring_entry(r, i)->len;
  size_t cap = r->arena_cap ? r->arena_cap * 2 : RING_ARENA_MIN;
  while (cap < live + more && cap < r->max_bytes)
    cap *= 2;
  if (cap > r->max_bytes)
    cap = r->max_bytes;
  char *arena = xmalloc(cap);
  size_t pos = 0;
  for (size_t i = 0; i < r->count; i++) {
    RingEntry *e = ring_entry(r, i);
    if (e->len > 0)
      memcpy(arena + pos, r->arena + ring_phys(r, e->off), e->len);
    e->off = pos;
    pos += e->len;
  }
  free(r->arena);
  r->arena = arena;
  r->arena_cap = cap;
}

/* Moves every virtual offset down by whole laps so they stay far from
 * SIZE_MAX; positions in the arena do not change. */
static void
ring_rebase(Ring *r)
{
  size_t laps = ring_entry(r, 0)->off / r->arena_cap * r->arena_cap;
  for (size_t i = 0; i < r->count; i++)
    ring_entry(r, i)->off -= laps;
}

/* Makes room for a text of len bytes (len <= max_bytes) and returns its
 * virtual offset, with its position in the arena in *phys: grows the arena
 * while it may, then evicts the oldest lines until the text fits without
 * overlapping a live one. */
static size_t
ring_place(Ring *r, size_t len, size_t *phys)
{
  *phys = 0;
  if (len == 0)
    return ring_tail(r);
  for (;;) {
    if (r->count > 0 && ring_tail(r) > RING_REBASE_AT)
      ring_rebase(r);
    size_t tail = ring_tail(r);
    if (r->arena_cap >= len) {
      size_t start = tail;
      size_t at = ring_phys(r, tail);
      if (at + len > r->arena_cap) {
        start = tail - at + r->arena_cap; /* to the start of the arena */
        at = 0;
      }
      if (r->count == 0 || start + len - ring_entry(r, 0)->off <= r->arena_cap) {
        *phys = at;
        return start;
      }
    }
    if (r->arena_cap < r->max_bytes)
      ring_grow_arena(r, len);
    else
      ring_evict(r); /* count > 0 here: an empty full-size arena fits len */
  }
}

/* Stores a line (see ring.h) and returns its seq. The text is copied; with
 * the ring grown to its caps nothing is allocated. */
uint64_t
ring_push(Ring *r, int stream, const char *text, size_t len, int pattern, unsigned flags)
{
  /* The caller's side: a text that exists, and a stream, pattern and flags
   * that fit their slots. (next_seq is not checked: a restart sets it from
   * a checkpoint file.) */
  assert(r != NULL && r->count <= r->max_lines && r->count <= r->entries_cap);
  assert(text != NULL || len == 0);
  assert(stream == kStreamStdout || stream == kStreamStderr);
  assert(pattern < INT16_MAX && flags <= UINT8_MAX);
  uint64_t seq = r->next_seq++;
  r->counters.lines++;
  if (pattern >= 0)
    r->counters.matched++;
  else
    r->counters.unmatched++;
  if (r->max_lines == 0) {
    r->counters.dropped++;
    return seq;
  }
  size_t cap = r->max_bytes < UINT32_MAX ? r->max_bytes : UINT32_MAX;
  if (len > cap) {
    /* Texts are valid UTF-8; a cut must not leave half a character. */
    size_t keep = cap;
    while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
      keep--;
    len = keep;
    flags |= kLineTruncated;
  }
  if (r->count == r->max_lines)
    ring_evict(r);
  size_t phys;
  size_t off = ring_place(r, len, &phys);
  if (r->count == r->entries_cap)
    ring_grow_entries(r);
  if (len > 0)
    memcpy(r->arena + phys, text, len);
  RingEntry *e = ring_entry(r, r->count);
  e->seq = seq;
  e->len = (uint32_t)len;
  e->pattern = (int16_t)(pattern < 0 ? -1 : pattern);
  e->stream = (uint8_t)stream;
  e->flags = (uint8_t)flags;
  e->off = off;
  r->count++;
  return seq;
}

/* The public view of a live entry; an empty text is "" so that only an
 * empty ring has a NULL text. */
static RingLine
ring_line(const Ring *r, const RingEntry *e)
{
  RingLine line;
  line.seq = e->seq;
  line.stream = e->stream;
  line.pattern = e->pattern;
  line.flags = e->flags;
  line.text = e->len > 0 ? r->arena + ring_phys(r, e->off) : "";
  line.len = e->len;
  return line;
}

/* Whether e passes filter. */
static bool
ring_passes(const RingEntry *e, RingFilter filter)
{
  switch (filter) {
  case kRingMatched:
    return e->pattern >= 0;
  case kRingUnmatched:
    return e->pattern < 0;
  case kRingStdout:
    return e->stream == kStreamStdout;
  case kRingStderr:
    return e->stream == kStreamStderr;
  case kRingAll:
  default:
    return true;
  }
}

/* Visits, oldest first, the lines passing filter with seq > since_seq; with
 * limit > 0 only the most recent limit of them. Returns the count visited.
 * visit must not push to the ring. */
size_t
ring_query(const Ring *r, RingFilter filter, uint64_t since_seq, size_t limit,
           RingVisit visit, void *ctx)
{
  assert(r != NULL && r->count <= r->entries_cap && visit != NULL);
  assert(filter >= kRingAll && filter <= kRingStderr);
  /* Seqs rise from oldest to newest: binary search for the first one past
   * since_seq. */
  size_t lo = 0, hi = r->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ring_entry(r, mid)->seq <= since_seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t from = lo;
  if (limit > 0) {
    /* Walk back from the newest to find where the last `limit` begin. */
    size_t found = 0, i = r->count;
    while (i > lo && found < limit) {
      i--;
      if (ring_passes(ring_entry(r, i), filter)) {
        found++;
        from = i;
      }
    }
  }
  size_t visited = 0;
  for (size_t i = from; i < r->count; i++) {
    const RingEntry *e = ring_entry(r, i);
    if (!ring_passes(e, filter))
      continue;
    RingLine line = ring_line(r, e);
    visit(ctx, &line);
    visited++;
    if (limit > 0 && visited == limit)
      break;
  }
  return visited;
}

/* The newest line, or a line with NULL text (and seq 0) when the ring is
 * empty. */
RingLine
ring_last(const Ring *r)
{
  assert(r != NULL && r->count <= r->entries_cap);
  if (r->count == 0) {
    RingLine none = {0, 0, -1, 0, NULL, 0};
    return none;
  }
  return ring_line(r, ring_entry(r, r->count - 1));
}

/* Frees both stores; the counters stay readable. */
void
ring_free(Ring *r)
{
  assert(r != NULL);
  free(r->entries);
  free(r->arena);
  r->entries = NULL;
  r->arena = NULL;
  r->entries_cap = 0;
  r->arena_cap = 0;
  r->count = 0;
  r->head = 0;
}
