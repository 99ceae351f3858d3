/*
 * Raw byte capture for one stream (see capture.h): a circular buffer that
 * owns the last `max` bytes the child wrote, addressed by absolute offsets.
 * The buffer starts small and doubles as bytes arrive, up to max, so a quiet
 * stream holds only what it wrote; once full, every write evicts the oldest
 * bytes and counts them.
 */
#include "pipeline/capture.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "pipeline/spool.h"

/* The first allocation; it doubles from here up to max. */
#define CAPTURE_CAP_MIN 512

/* Sets c to an empty capture that will keep at most max_bytes bytes.
 * Nothing is allocated until the first write. */
void
capture_init(Capture *c, size_t max_bytes)
{
  assert(c != NULL);
  memset(c, 0, sizeof *c);
  c->max = max_bytes;
}

/* Copies the kept bytes, oldest first, to dst (c->len bytes). */
static void
capture_copy_out(const Capture *c, char *dst)
{
  size_t first = c->cap - c->head;
  if (first >= c->len) {
    memcpy(dst, c->buf + c->head, c->len);
  } else {
    memcpy(dst, c->buf + c->head, first);
    memcpy(dst + first, c->buf, c->len - first);
  }
}

/* Grows the buffer so it holds at least need bytes (or max, if smaller),
 * straightening the kept bytes to start at index 0. */
static void
capture_grow(Capture *c, size_t need)
{
  size_t cap = c->cap ? c->cap : CAPTURE_CAP_MIN;
  while (cap < need && cap < c->max)
    cap = cap > c->max / 2 ? c->max : cap * 2;
  if (cap > c->max)
    cap = c->max;
  if (cap <= c->cap)
    return;
  char *buf = xmalloc(cap);
  if (c->len > 0)
    capture_copy_out(c, buf);
  free(c->buf);
  c->buf = buf;
  c->cap = cap;
  c->head = 0;
}

/* Appends data[0..len) to the buffer in memory. Evicts (and counts) the
 * oldest bytes beyond max; of a write longer than max only its last max
 * bytes are kept. */
static void
capture_keep(Capture *c, const char *data, size_t len)
{
  if (len == 0)
    return;
  c->total += len;
  if (len >= c->max) {
    /* The write alone fills the capture: everything kept so far and the
     * write's own head are evicted. */
    c->evicted += c->len + (len - c->max);
    if (c->max == 0)
      return;
    capture_grow(c, c->max);
    memcpy(c->buf, data + (len - c->max), c->max);
    c->head = 0;
    c->len = c->max;
    return;
  }
  if (c->len + len > c->cap)
    capture_grow(c, c->len + len);
  if (c->len + len > c->cap) {
    /* Full at max: make room by dropping the oldest bytes. */
    size_t drop = c->len + len - c->cap;
    c->head = (c->head + drop) % c->cap;
    c->len -= drop;
    c->evicted += drop;
  }
  size_t tail = (c->head + c->len) % c->cap;
  size_t first = c->cap - tail;
  if (first >= len) {
    memcpy(c->buf + tail, data, len);
  } else {
    memcpy(c->buf + tail, data, first);
    memcpy(c->buf, data + first, len - first);
  }
  c->len += len;
}

/* Leaves a spool that broke for memory: its kept bytes are copied when
 * they can still be read, else they count as evicted. */
static void
capture_leave_spool(Capture *c)
{
  Spool *sp = c->spool;
  c->spool = NULL;
  c->spool_left = true;
  c->buf = NULL;
  c->cap = c->len = c->head = 0;
  c->total = spool_head(sp);
  c->evicted = c->total;
  if (!spool_readable(sp))
    return;
  CaptureSpan kept = spool_read(sp, spool_start(sp), UINT64_MAX);
  c->total = c->evicted = kept.offset;
  capture_keep(c, kept.p1, kept.n1);
  capture_keep(c, kept.p2, kept.n2);
}

/* See capture.h. */
void
capture_write(Capture *c, const char *data, size_t len)
{
  /* Its own counters agree (kept bytes within both the allocation and the
   * cap, all of them written); the text exists. */
  assert(c != NULL && c->len <= c->cap && c->cap <= c->max && c->len <= c->total);
  assert(data != NULL || len == 0);
  if (len == 0)
    return;
  if (c->spool != NULL) {
    if (spool_append(c->spool, data, len)) {
      /* The engine splits and matches every byte as it writes it, so what
       * is in the spool is processed as soon as it is there: the cut
       * follows. */
      spool_set_cut(c->spool, spool_head(c->spool));
      c->total = spool_head(c->spool);
      c->evicted = spool_start(c->spool);
      return;
    }
    capture_leave_spool(c);
  }
  if (c->spool_left)
    c->state_unkept += len;
  capture_keep(c, data, len);
}

/* Absolute offset of the oldest kept byte (total when nothing is kept). */
uint64_t
capture_start(const Capture *c)
{
  assert(c != NULL && c->len <= c->total);
  if (c->spool != NULL)
    return spool_start(c->spool);
  return c->total - c->len;
}

/* See capture.h. The spans point into buf; nothing is copied or
 * allocated. An empty read has both spans NULL and offset set to the
 * requested offset (moved up to the oldest kept byte when that was
 * evicted). */
CaptureSpan
capture_span(const char *buf, size_t cap, size_t start_idx, uint64_t start, uint64_t total,
             uint64_t offset, uint64_t limit)
{
  /* The store's own shape (the caller's, never a file's: the spool passes
   * its counters as this process keeps them): [start, total) fits cap,
   * and a store that holds bytes exists. */
  assert(start <= total && total - start <= cap);
  assert(total == start || (buf != NULL && start_idx < cap));
  CaptureSpan span = {NULL, 0, NULL, 0, offset, false};
  if (offset < start) {
    offset = start;
    span.offset = start;
    span.truncated = true;
  }
  if (offset >= total || limit == 0)
    return span;
  uint64_t avail = total - offset;
  size_t n = (size_t)(avail < limit ? avail : limit);
  size_t idx = (size_t)((start_idx + (offset - start)) % cap);
  size_t first = cap - idx;
  span.p1 = buf + idx;
  span.n1 = n < first ? n : first;
  if (n > span.n1) {
    span.p2 = buf;
    span.n2 = n - span.n1;
  }
  return span;
}

/* Reads up to limit bytes from absolute offset (see capture.h). */
CaptureSpan
capture_read(const Capture *c, uint64_t offset, uint64_t limit)
{
  assert(c != NULL);
  if (c->spool != NULL)
    return spool_read(c->spool, offset, limit);
  return capture_span(c->buf, c->cap, c->head, capture_start(c), c->total, offset, limit);
}

/* Frees the buffer (a spool is its owner's); the counters stay readable. */
void
capture_free(Capture *c)
{
  assert(c != NULL);
  c->spool = NULL; /* its owner unmaps it */
  free(c->buf);
  c->buf = NULL;
  c->cap = 0;
  c->len = 0;
  c->head = 0;
}

/* See capture.h. */
void
capture_use_spool(Capture *c, struct Spool *spool)
{
  /* Only on an empty capture (capture.h): bytes written before would be
   * lost without a count. */
  assert(c != NULL && spool != NULL);
  assert(c->spool == NULL && c->total == 0);
  free(c->buf);
  c->buf = NULL;
  c->cap = c->len = c->head = 0;
  c->spool = spool;
  c->total = spool_head(spool);
  c->evicted = spool_start(spool);
}
