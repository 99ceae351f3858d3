/*
 * Message boundaries on the engine's stream. msgpack-rpc has no length
 * prefix: a message ends where its one top-level value ends. The framer
 * keeps the bytes received and walks the headers of the message at their
 * front, resuming where it stopped when more arrive, and hands out each
 * complete message as an exact slice. It trusts no declared size: a
 * string, or a container's element count (each element takes a byte at
 * least), that could not fit in the bound is refused as soon as its header
 * is read, before anything is allocated for it.
 */
#ifndef VIGIL_CLIENT_FRAME_H
#define VIGIL_CLIENT_FRAME_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Containers nested deeper than this are refused (the engine's own bound:
 * the message array is level 1). */
#define FRAME_MAX_DEPTH 32

typedef struct Frame {
  size_t max_message;  /* the bound, in bytes */
  char *buf;
  size_t start;        /* the first byte of the message at the front */
  size_t end;          /* one past the last byte received */
  size_t cap;
  /* The walk of the message at the front; offsets from its first byte. */
  uint64_t pos;        /* the next header, or the end of a payload not all here */
  uint64_t owed;       /* elements declared and not begun: a byte each at least */
  unsigned depth;
  uint64_t remaining[FRAME_MAX_DEPTH + 1]; /* per open container; [0] is the message */
} Frame;

/* What one msgpack header declares, from its first byte: the one table of
 * msgpack's headers that the framer here and the engine's decoder
 * (core/rpc/decoder.c) walk with. */
typedef struct {
  unsigned header;   /* bytes of the header itself (type byte included) */
  unsigned size_len; /* bytes of a length field after the type byte, 0 if none */
  uint64_t payload;  /* bytes of payload after the header (scalars; for an ext, its
                        type byte, to which the length field's value is added) */
  uint64_t elements; /* elements it contains (containers; a map's are 2 per entry);
                        for a container with a length field, read from it */
  bool container;
  bool reserved;     /* 0xc1: never valid msgpack */
} FrameHeader;

/* Reads the big-endian unsigned integer of n bytes (at most 8) at p: a
 * header's length field. */
uint64_t frame_be(const unsigned char *p, unsigned n);

/* Decodes the fixed part of the header that starts with byte b; for the
 * variable-length ones it says how long the length field is (the caller
 * reads it once it has arrived). */
FrameHeader frame_header_kind(unsigned char b);

typedef enum {
  kFrameNeedMore,   /* no complete message yet */
  kFrameComplete,   /* *msg, *len: the message; valid until the next frame_reserve */
  kFrameBad,        /* why[] says what; the stream cannot be read further */
} FrameResult;

void frame_init(Frame *f, size_t max_message);
void frame_free(Frame *f);

/* Room for at least want more bytes after those received: returns where
 * to read them to, and in *space how many fit. NULL when memory runs out.
 * A message handed out by frame_next is invalid after this. */
char *frame_reserve(Frame *f, size_t want, size_t *space);
/* Counts n bytes read into the room frame_reserve gave. */
void frame_commit(Frame *f, size_t n);

/* The next complete message, if any. On kFrameBad, why (of why_size
 * bytes) holds the reason. */
FrameResult frame_next(Frame *f, const char **msg, size_t *len, char *why, size_t why_size);

/* Decodes a message frame_next handed out into out (free it with
 * msgpack_unpacked_destroy), from a copy of its bytes in out's own zone,
 * so that it outlives the framer's buffer (a kept answer does). 0, or -1
 * when the bytes are not exactly one msgpack value. Aborts when memory
 * runs out. */
int frame_unpack_copy(const char *msg, size_t len, msgpack_unpacked *out);

#endif
