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

#endif
