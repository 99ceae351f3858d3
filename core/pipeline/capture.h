/*
 * Raw byte capture for one stream: the last capture_max_bytes bytes exactly
 * as the child wrote them, addressed by absolute offsets (offset 0 is the
 * stream's first byte ever). Older bytes are evicted and counted. Memory
 * grows with use up to the cap, so an idle or quiet monitor costs little.
 * With a state directory the bytes are kept in a spool file instead
 * (capture_use_spool), which a keeper goes on filling if the engine dies.
 * A spool that breaks (spool.h: no room, or its file cut short) is left
 * for memory at the write it refused: what it kept comes along when it
 * can still be read, and every byte written from then on is counted in
 * state_unkept (not kept for a later engine).
 */
#ifndef VIGIL_CAPTURE_H
#define VIGIL_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct Spool;

typedef struct {
  struct Spool *spool; /* when set, the bytes are kept there instead (spool.h) */
  char *buf;          /* circular storage, cap bytes */
  size_t cap;         /* current allocation, grows up to max */
  size_t max;         /* monitor.capture_max_bytes */
  size_t len;         /* bytes kept */
  size_t head;        /* index in buf of the oldest kept byte */
  uint64_t total;     /* bytes ever written = absolute offset of the next byte */
  uint64_t evicted;   /* bytes dropped from the front to stay under max */
  bool spool_left;    /* it used a spool, which broke */
  uint64_t state_unkept; /* bytes written since then */
} Capture;

/* Up to two spans (the storage wraps) that together are the bytes read. */
typedef struct {
  const char *p1;
  size_t n1;
  const char *p2;
  size_t n2;
  uint64_t offset;    /* absolute offset of the first byte returned */
  bool truncated;     /* the requested offset had been evicted */
} CaptureSpan;

void capture_init(Capture *c, size_t max_bytes);
/* Appends data as the stream's next bytes (see the top of the file). */
void capture_write(Capture *c, const char *data, size_t len);

/* Reads from absolute `offset`, at most `limit` bytes (UINT64_MAX: all).
 * When offset is older than the oldest kept byte, the read starts at the
 * oldest kept byte and truncated is true. An offset at or past total gives
 * an empty span. The spans stay valid until the next capture_write. */
CaptureSpan capture_read(const Capture *c, uint64_t offset, uint64_t limit);

/* Absolute offset of the oldest kept byte. */
uint64_t capture_start(const Capture *c);

/* The read of capture_read over any circular store of these offsets: buf
 * of cap bytes holding [start, total), the byte at start at index
 * start_idx. Shared with the spool (spool.h), which keeps the same
 * offsets in a file. */
CaptureSpan capture_span(const char *buf, size_t cap, size_t start_idx, uint64_t start,
                         uint64_t total, uint64_t offset, uint64_t limit);

void capture_free(Capture *c);

/* Keeps c's bytes in spool from now on (a file of the state directory that
 * outlives the engine, docs/restart.md) instead of memory: the same reads,
 * offsets and eviction, at the spool's capacity. Only on an empty capture;
 * the spool stays its owner's. */
void capture_use_spool(Capture *c, struct Spool *spool);

#endif
