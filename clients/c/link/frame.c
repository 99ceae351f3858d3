/*
 * Message boundaries on the engine's stream (see frame.h).
 *
 * The walk keeps, per open container, how many elements have still to
 * begin; the message itself is a container of one. A header is believed
 * only once the bytes it declares, plus a byte for every element declared
 * and not begun anywhere in the message (owed), still fit in the bound; so
 * msgpack-c, which is handed the message only when it is complete, never
 * allocates for elements that are not there. The buffer holds at most the
 * unfinished message (bounded) and the chunk just fed.
 */
#include "link/frame.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The smallest buffer worth allocating; it doubles from there. */
#define FRAME_MIN_CAPACITY 4096
/* An empty buffer that grew past this is freed, not kept for nothing. */
#define FRAME_KEEP_CAPACITY ((size_t)256 << 10)

void
frame_init(Frame *f, size_t max_message)
{
  memset(f, 0, sizeof *f);
  f->max_message = max_message;
  f->remaining[0] = 1;
  f->owed = 1;
}

void
frame_free(Frame *f)
{
  free(f->buf);
  f->buf = NULL;
  f->cap = f->start = f->end = 0;
}

char *
frame_reserve(Frame *f, size_t want, size_t *space)
{
  if (f->start == f->end) {
    f->start = f->end = 0;
    if (f->cap > FRAME_KEEP_CAPACITY) {
      free(f->buf);
      f->buf = NULL;
      f->cap = 0;
    }
  }
  if (f->start > 0 && f->end + want > f->cap) {
    memmove(f->buf, f->buf + f->start, f->end - f->start);
    f->end -= f->start;
    f->start = 0;
  }
  if (f->end + want > f->cap) {
    size_t cap = f->cap ? f->cap : FRAME_MIN_CAPACITY;
    while (cap < f->end + want)
      cap *= 2;
    char *grown = realloc(f->buf, cap);
    if (grown == NULL)
      return NULL;
    f->buf = grown;
    f->cap = cap;
  }
  *space = f->cap - f->end;
  return f->buf + f->end;
}

void
frame_commit(Frame *f, size_t n)
{
  f->end += n;
}

uint64_t
frame_be(const unsigned char *p, unsigned n)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

FrameHeader
frame_header_kind(unsigned char b)
{
  FrameHeader h = {.header = 1};
  if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
    return h;                                       /* fixints, nil, booleans */
  if (b <= 0x8f) {
    h.container = true;
    h.elements = 2u * (b & 0x0fu);                  /* fixmap */
    return h;
  }
  if (b <= 0x9f) {
    h.container = true;
    h.elements = b & 0x0fu;                         /* fixarray */
    return h;
  }
  if (b <= 0xbf) {
    h.payload = b & 0x1fu;                          /* fixstr */
    return h;
  }
  switch (b) {
  case 0xc1: h.reserved = true; return h;
  case 0xc4: case 0xd9: h.size_len = 1; break;       /* bin8, str8 */
  case 0xc5: case 0xda: h.size_len = 2; break;       /* bin16, str16 */
  case 0xc6: case 0xdb: h.size_len = 4; break;       /* bin32, str32 */
  case 0xc7: h.size_len = 1; h.payload = 1; break;   /* ext8: the length, then a type byte */
  case 0xc8: h.size_len = 2; h.payload = 1; break;   /* ext16 */
  case 0xc9: h.size_len = 4; h.payload = 1; break;   /* ext32 */
  case 0xca: h.payload = 4; break;                   /* float32 */
  case 0xcb: h.payload = 8; break;                   /* float64 */
  case 0xcc: case 0xd0: h.payload = 1; break;        /* (u)int8 */
  case 0xcd: case 0xd1: h.payload = 2; break;        /* (u)int16 */
  case 0xce: case 0xd2: h.payload = 4; break;        /* (u)int32 */
  case 0xcf: case 0xd3: h.payload = 8; break;        /* (u)int64 */
  case 0xd4: h.payload = 2; break;                   /* fixext1: type + 1 */
  case 0xd5: h.payload = 3; break;
  case 0xd6: h.payload = 5; break;
  case 0xd7: h.payload = 9; break;
  case 0xd8: h.payload = 17; break;
  case 0xdc: h.size_len = 2; h.container = true; break; /* array16 */
  case 0xdd: h.size_len = 4; h.container = true; break; /* array32 */
  case 0xde: h.size_len = 2; h.container = true; break; /* map16 */
  case 0xdf: h.size_len = 4; h.container = true; break; /* map32 */
  }
  h.header += h.size_len;
  return h;
}

FrameResult
frame_next(Frame *f, const char **msg, size_t *len, char *why, size_t why_size)
{
  const unsigned char *m = (const unsigned char *)f->buf + f->start;
  uint64_t have = f->end - f->start;
  for (;;) {
    /* Close every container whose elements have all begun. */
    while (f->depth > 0 && f->remaining[f->depth] == 0)
      f->depth--;
    if (f->depth == 0 && f->remaining[0] == 0) {
      if (f->pos > have)
        return kFrameNeedMore;            /* the last payload is still arriving */
      *msg = f->buf + f->start;
      *len = (size_t)f->pos;
      f->start += (size_t)f->pos;
      f->pos = 0;
      f->owed = 1;
      f->remaining[0] = 1;
      return kFrameComplete;
    }
    if (f->pos >= have)
      return kFrameNeedMore;
    unsigned char b = m[f->pos];
    FrameHeader h = frame_header_kind(b);
    if (h.reserved) {
      snprintf(why, why_size, "not msgpack: reserved byte 0xc1 at offset %" PRIu64
               " of a message", f->pos);
      return kFrameBad;
    }
    if (f->pos + h.header > have)
      return kFrameNeedMore;              /* the header is still arriving */
    if (h.size_len > 0) {
      uint64_t n = frame_be(m + f->pos + 1, h.size_len);
      if (h.container)
        h.elements = (b == 0xde || b == 0xdf) ? 2 * n : n;
      else
        h.payload += n;
    }
    /* This element begins: it no longer owes its byte. */
    f->remaining[f->depth]--;
    f->owed--;
    uint64_t after = f->pos + h.header + h.payload;
    if (after + f->owed + h.elements > f->max_message) {
      snprintf(why, why_size,
               "a message of at least %" PRIu64 " bytes, over max_message_bytes (%zu): "
               "its %s at offset %" PRIu64 " declares %" PRIu64 " %s",
               after + f->owed + h.elements, f->max_message,
               h.container ? "container" : "value", f->pos,
               h.container ? h.elements : h.payload, h.container ? "elements" : "bytes");
      return kFrameBad;
    }
    f->pos = after;
    if (h.container && h.elements > 0) {
      if (f->depth == FRAME_MAX_DEPTH) {
        snprintf(why, why_size, "a message nested deeper than %d levels", FRAME_MAX_DEPTH);
        return kFrameBad;
      }
      f->remaining[++f->depth] = h.elements;
      f->owed += h.elements;
    }
  }
}

int
frame_unpack_copy(const char *msg, size_t len, msgpack_unpacked *out)
{
  msgpack_zone *zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
  char *copy = zone ? msgpack_zone_malloc(zone, len) : NULL;
  if (copy == NULL) {
    fprintf(stderr, "out of memory for a message of %zu bytes\n", len);
    abort();
  }
  memcpy(copy, msg, len);
  size_t off = 0;
  msgpack_object obj;
  if (msgpack_unpack(copy, len, &off, zone, &obj) != MSGPACK_UNPACK_SUCCESS || off != len) {
    msgpack_zone_free(zone);
    return -1;
  }
  out->zone = zone;
  out->data = obj;
  return 0;
}
