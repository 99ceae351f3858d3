/*
 * A monitor's line ring (see ring.h). It owns two circular stores that grow
 * lazily by doubling and then stay put: the entries (seq, stream, pattern,
 * flags and where the text is) up to max_lines slots, and the text arena up
 * to max_bytes for the lines that are copied. Each copied text is contiguous
 * in the arena, so a reader gets one pointer; a text that does not fit
 * before the arena's end goes to its start, and the oldest lines it would
 * overlap are evicted first.
 *
 * A kept line (RING_KEPT) has no text here: its entry holds the absolute
 * offset of its bytes in its stream's capture, which a read asks for
 * (capture_read). Bytes that wrap in the capture are joined in the ring's
 * scratch buffer, at most the longest kept line. The ring stays the newest
 * lines in push order: a kept line whose bytes the capture evicted goes
 * with every line older than it (ring_trim). Within a stream offsets rise
 * with seqs, so the gone lines of a stream are its oldest kept ones; a
 * cursor per stream (kept_from) and one for the copies (copy_from) only
 * move forward over the entries, so finding them costs O(1) per line
 * amortized.
 *
 * Arena positions are virtual: a text at virtual offset v lives at
 * v % arena_cap, and a text that would straddle the end moves up to the next
 * multiple of arena_cap. Live copies then always span
 * [oldest copy's off, arena_tail) in virtual terms, and a new text fits
 * exactly when that span, extended to cover it, is at most arena_cap long.
 * This keeps eviction to one comparison per line, zero-length lines included.
 * Kept lines take no room in the arena, but a copy that needs room evicts
 * the oldest lines, kept or copied, as a push past max_lines does.
 *
 * Decisions the header leaves open: a text longer than max_bytes is cut at a
 * UTF-8 character boundary and flagged kLineTruncated; with max_lines 0 a
 * pushed line gets its seq and is counted as dropped at once; a raw line
 * whose bytes its capture no longer holds when it is pushed (a read longer
 * than the capture) is dropped at once with every older line, as ring_trim
 * would drop it a moment later, so what the ring holds does not depend on
 * how the bytes were read; a raw line longer than max_bytes (which the
 * settings rule out: ring_max_bytes >= line_max_bytes) is copied and cut.
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

/* Whether e is kept as an offset into its capture rather than copied. */
static inline bool
ring_kept(const RingEntry *e)
{
  return (e->flags & RING_KEPT) != 0;
}

/* The oldest live copy, or NULL when no line is copied. Moves copy_from
 * forward past kept lines (entries before it are never copies). */
static RingEntry *
ring_oldest_copy(Ring *r)
{
  while (r->copy_from < r->count && ring_kept(ring_entry(r, r->copy_from)))
    r->copy_from++;
  return r->copy_from < r->count ? ring_entry(r, r->copy_from) : NULL;
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

/* Drops the oldest line and counts it; the cursors, which count from the
 * oldest line, follow. */
static void
ring_evict(Ring *r)
{
  r->head++;
  if (r->head == r->entries_cap)
    r->head = 0;
  r->count--;
  r->counters.dropped++;
  if (r->copy_from > 0)
    r->copy_from--;
  for (int s = 0; s < 2; s++)
    if (r->kept_from[s] > 0)
      r->kept_from[s]--;
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

/* Grows the arena (doubling, up to max_bytes) so the live copies plus
 * `more` bytes fit, packing the live copies from offset 0. */
static void
ring_grow_arena(Ring *r, size_t more)
{
  size_t live = 0;
  for (size_t i = 0; i < r->count; i++)
    if (!ring_kept(ring_entry(r, i)))
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
    if (ring_kept(e))
      continue;
    if (e->len > 0)
      memcpy(arena + pos, r->arena + ring_phys(r, (size_t)e->off), e->len);
    e->off = pos;
    pos += e->len;
  }
  free(r->arena);
  r->arena = arena;
  r->arena_cap = cap;
  r->arena_tail = pos;
}

/* Moves every virtual offset of the copies down by whole laps so they stay
 * far from SIZE_MAX; positions in the arena do not change. */
static void
ring_rebase(Ring *r)
{
  const RingEntry *oldest = ring_oldest_copy(r);
  size_t from = oldest != NULL ? (size_t)oldest->off : r->arena_tail;
  size_t laps = from / r->arena_cap * r->arena_cap;
  for (size_t i = 0; i < r->count; i++)
    if (!ring_kept(ring_entry(r, i)))
      ring_entry(r, i)->off -= laps;
  r->arena_tail -= laps;
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
    return r->arena_tail;
  for (;;) {
    if (r->arena_cap > 0 && r->arena_tail > RING_REBASE_AT)
      ring_rebase(r);
    size_t tail = r->arena_tail;
    if (r->arena_cap >= len) {
      size_t start = tail;
      size_t at = ring_phys(r, tail);
      if (at + len > r->arena_cap) {
        start = tail - at + r->arena_cap; /* to the start of the arena */
        at = 0;
      }
      const RingEntry *oldest = ring_oldest_copy(r);
      if (oldest == NULL || start + len - (size_t)oldest->off <= r->arena_cap) {
        *phys = at;
        return start;
      }
    }
    if (r->arena_cap < r->max_bytes)
      ring_grow_arena(r, len);
    else
      ring_evict(r); /* a copy is live here: an arena without one fits len */
  }
}

/* Counts a pushed line and gives it its seq; false when max_lines is 0 and
 * the line is dropped at once. */
static bool
ring_count(Ring *r, int stream, int pattern, unsigned flags, uint64_t *seq)
{
  /* The caller's side: a stream, pattern and flags that fit their slots.
   * (next_seq is not checked: a restart sets it from a checkpoint file.) */
  assert(r != NULL && r->count <= r->max_lines && r->count <= r->entries_cap);
  assert(stream == kStreamStdout || stream == kStreamStderr);
  assert(pattern < INT16_MAX && flags < RING_KEPT);
  (void)stream;
  (void)flags;
  *seq = r->next_seq++;
  r->counters.lines++;
  if (pattern >= 0)
    r->counters.matched++;
  else
    r->counters.unmatched++;
  if (r->max_lines == 0) {
    r->counters.dropped++;
    return false;
  }
  return true;
}

/* Takes a free slot for the newest line (the caller made room below
 * max_lines) and fills it in. */
static void
ring_append(Ring *r, uint64_t seq, int stream, uint64_t off, size_t len, int pattern,
            unsigned flags)
{
  if (r->count == r->entries_cap)
    ring_grow_entries(r);
  RingEntry *e = ring_entry(r, r->count);
  e->seq = seq;
  e->len = (uint32_t)len;
  e->pattern = (int16_t)(pattern < 0 ? -1 : pattern);
  e->stream = (uint8_t)stream;
  e->flags = (uint8_t)flags;
  e->off = off;
  r->count++;
}

/* Stores a copy of a counted line's text (see ring.h). */
static void
ring_copy(Ring *r, uint64_t seq, int stream, const char *text, size_t len, int pattern,
          unsigned flags)
{
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
  if (len > 0)
    memcpy(r->arena + phys, text, len);
  r->arena_tail = off + len;
  ring_append(r, seq, stream, off, len, pattern, flags);
}

/* Stores a line (see ring.h) and returns its seq. The text is copied; with
 * the ring grown to its caps nothing is allocated. */
uint64_t
ring_push(Ring *r, int stream, const char *text, size_t len, int pattern, unsigned flags)
{
  assert(text != NULL || len == 0);
  uint64_t seq;
  if (ring_count(r, stream, pattern, flags, &seq))
    ring_copy(r, seq, stream, text, len, pattern, flags);
  return seq;
}

/* Drops every line, counting them: ring_evict for all at once. */
static void
ring_drop_all(Ring *r)
{
  r->counters.dropped += r->count;
  r->count = 0;
  r->head = 0;
  r->copy_from = 0;
  r->kept_from[0] = r->kept_from[1] = 0;
}

/* Grows the scratch buffer to hold a kept line of len bytes (len <=
 * max_bytes), doubling. */
static void
ring_scratch_fit(Ring *r, size_t len)
{
  if (len <= r->scratch_cap)
    return;
  size_t cap = r->scratch_cap ? r->scratch_cap : RING_ARENA_MIN;
  while (cap < len)
    cap *= 2;
  if (cap > r->max_bytes)
    cap = r->max_bytes;
  free(r->scratch);
  r->scratch = xmalloc(cap);
  r->scratch_cap = cap;
}

/* Stores a counted raw line (see ring_push_raw); start is
 * capture_start(capture), which a run asks once. */
static void
ring_keep_raw(Ring *r, uint64_t seq, int stream, const char *text, size_t len,
              const Capture *capture, uint64_t start, uint64_t offset, int pattern,
              unsigned flags)
{
  r->capture[stream] = capture;
  if (offset < start) {
    /* Gone before it came (a read longer than the capture): as ring_trim
     * would have it, the line and every older one are dropped. */
    ring_drop_all(r);
    r->counters.dropped++;
    return;
  }
  if (len > r->max_bytes || len > UINT32_MAX || offset + len > capture->total) {
    ring_copy(r, seq, stream, text, len, pattern, flags); /* cut, or not the bytes */
    return;
  }
  ring_scratch_fit(r, len);
  if (r->count == r->max_lines)
    ring_evict(r);
  ring_append(r, seq, stream, offset, len, pattern, flags | RING_KEPT);
}

/* The bulk of ring_push_raw_run, for a ring full at max_lines with all its
 * slots: each of lines [from, to) takes the oldest line's slot, as
 * ring_evict and ring_append would one by one, while they are kept lines
 * (within max_bytes; their bytes in the capture, which the caller
 * checked). Returns the index of the first line it did not push. */
static size_t
ring_overwrite_run(Ring *r, int stream, const LineRun *run, size_t from, size_t to)
{
  size_t longest = 0, i = from;
  uint64_t seq = r->next_seq;
  for (; i < to; i++) {
    uint32_t len = run->len[i];
    if (len > r->max_bytes)
      break;
    longest = len > longest ? len : longest;
    RingEntry *e = &r->entries[r->head];
    e->seq = seq++;
    e->len = len;
    e->pattern = -1;
    e->stream = (uint8_t)stream;
    e->flags = RING_KEPT;
    e->off = run->offset + run->start[i];
    if (++r->head == r->entries_cap)
      r->head = 0;
  }
  size_t k = i - from;
  r->next_seq = seq;
  r->counters.lines += k;
  r->counters.unmatched += k;
  r->counters.dropped += k;
  r->copy_from = r->copy_from > k ? r->copy_from - k : 0;
  for (int s = 0; s < 2; s++)
    r->kept_from[s] = r->kept_from[s] > k ? r->kept_from[s] - k : 0;
  ring_scratch_fit(r, longest);
  return i;
}

/* See ring.h. The scratch buffer grows here, never in a read: a reader
 * gets a const Ring. */
uint64_t
ring_push_raw(Ring *r, int stream, const char *text, size_t len, const Capture *capture,
              uint64_t offset, int pattern, unsigned flags)
{
  assert(text != NULL || len == 0);
  assert(r != NULL && (stream == kStreamStdout || stream == kStreamStderr));
  assert(capture != NULL && (r->capture[stream] == NULL || r->capture[stream] == capture));
  uint64_t seq;
  if (ring_count(r, stream, pattern, flags, &seq))
    ring_keep_raw(r, seq, stream, text, len, capture, capture_start(capture), offset, pattern,
                  flags);
  return seq;
}

/* See ring.h. A run's last max_lines pushes leave none of the lines
 * before them in the ring: each appends its line (evicting the oldest when
 * the ring is full) or, for a line its capture no longer holds, drops
 * every line. So the lines of a longer run before its last max_lines, and
 * every line before the run, are counted as pushed and dropped at once,
 * as their pushes and evictions one by one would have counted them, and
 * only the last max_lines are stored. */
uint64_t
ring_push_raw_run(Ring *r, int stream, const Capture *capture, const LineRun *run, size_t from,
                  size_t to)
{
  assert(r != NULL && (stream == kStreamStdout || stream == kStreamStderr));
  assert(capture != NULL && (r->capture[stream] == NULL || r->capture[stream] == capture));
  assert(run != NULL && from <= to && to <= run->n);
  uint64_t first = r->next_seq;
  size_t n = to - from;
  if (n > r->max_lines) {
    size_t skip = n - r->max_lines;
    ring_drop_all(r);
    r->next_seq += skip;
    r->counters.lines += skip;
    r->counters.unmatched += skip;
    r->counters.dropped += skip;
    from += skip;
  }
  if (from == to)
    return first;
  uint64_t start = capture_start(capture);
  /* Offsets rise within a run: when its first line's bytes are still in
   * the capture and its last line's are all there, so are every line's. */
  r->capture[stream] = capture;
  if (r->count == r->max_lines && r->entries_cap == r->max_lines &&
      run->offset + run->start[from] >= start &&
      run->offset + run->start[to - 1] + run->len[to - 1] <= capture->total)
    from = ring_overwrite_run(r, stream, run, from, to);
  for (size_t i = from; i < to; i++) {
    uint64_t seq;
    ring_count(r, stream, -1, 0, &seq);
    ring_keep_raw(r, seq, stream, run->base + run->start[i], run->len[i], capture, start,
                  run->offset + run->start[i], -1, 0);
  }
  return first;
}

/* See ring.h. */
size_t
ring_trim(Ring *r)
{
  assert(r != NULL && r->count <= r->entries_cap);
  size_t cut = 0;
  for (int s = 0; s < 2; s++) {
    if (r->capture[s] == NULL)
      continue;
    uint64_t start = capture_start(r->capture[s]);
    size_t i = r->kept_from[s];
    for (; i < r->count; i++) {
      const RingEntry *e = ring_entry(r, i);
      if (!ring_kept(e) || e->stream != s)
        continue;
      if (e->off >= start)
        break; /* this stream's newer kept lines lie further on */
      cut = i + 1;
    }
    r->kept_from[s] = i;
  }
  for (size_t i = 0; i < cut; i++)
    ring_evict(r);
  return cut;
}

/* The public view of a live entry; an empty text is "" so that only an
 * empty ring has a NULL text. A kept line's text is read from its capture,
 * joined in the scratch buffer when it wraps there. */
static RingLine
ring_line(const Ring *r, const RingEntry *e)
{
  RingLine line;
  line.seq = e->seq;
  line.stream = e->stream;
  line.pattern = e->pattern;
  line.flags = e->flags & ~RING_KEPT;
  line.text = "";
  line.len = e->len;
  if (e->len == 0)
    return line;
  if (!ring_kept(e)) {
    line.text = r->arena + ring_phys(r, (size_t)e->off);
    return line;
  }
  CaptureSpan span = capture_read(r->capture[e->stream], e->off, e->len);
  if (span.truncated || span.n1 + span.n2 != e->len) {
    line.len = 0; /* unreadable (ring.h): nothing rather than other bytes */
    return line;
  }
  if (span.n2 == 0) {
    line.text = span.p1;
    return line;
  }
  /* The scratch buffer is the ring's, grown at the push to hold any kept
   * line; a const Ring still lends it to the reader (see RingLine.text). */
  assert(e->len <= r->scratch_cap);
  memcpy(r->scratch, span.p1, span.n1);
  memcpy(r->scratch + span.n1, span.p2, span.n2);
  line.text = r->scratch;
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
  free(r->scratch);
  r->entries = NULL;
  r->arena = NULL;
  r->scratch = NULL;
  r->entries_cap = 0;
  r->arena_cap = 0;
  r->scratch_cap = 0;
  r->arena_tail = 0;
  r->count = 0;
  r->head = 0;
  r->copy_from = 0;
  r->kept_from[0] = r->kept_from[1] = 0;
}
