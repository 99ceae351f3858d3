/*
 * Bytes to lines, for one stream. LF ends a line and a CR just before it is
 * dropped. A partial line is held (up to line_max_bytes) until its newline
 * arrives, and handed on by linebuf_finish when the stream ends. A line
 * longer than line_max_bytes is cut there, marked truncated, and the rest of
 * it, up to its newline, is discarded and counted.
 *
 * The text handed on is what an agent may read: ANSI escape sequences (CSI,
 * OSC, two-byte ESC sequences) removed, NUL bytes replaced by U+FFFD and the
 * line marked binary, invalid UTF-8 replaced by U+FFFD, so it is always
 * valid UTF-8. Other control characters stay (renderers escape them). The
 * raw bytes are not kept here; capture.c keeps them.
 *
 * The common case (a line of plain ASCII or valid UTF-8 with no ESC or NUL
 * that lies whole in one read) is handed on without a copy.
 */
#ifndef VIGIL_LINEBUF_H
#define VIGIL_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  kLineTruncated = 1 << 0, /* cut at line_max_bytes; the rest was discarded */
  kLineBinary = 1 << 1,    /* held NUL bytes */
  kLineUnterminated = 1 << 2, /* the stream ended before its newline */
};

typedef struct {
  const char *text;  /* sanitized UTF-8; valid only during the callback; not NUL-terminated */
  size_t len;
  unsigned flags;    /* kLine* */
  bool raw;          /* text is the stream's bytes [offset, offset + len) as read:
                        nothing repaired, not truncated (a newline and a CRLF's CR
                        are not part of a text) */
  uint64_t offset;   /* absolute offset in the stream of the line's first byte */
} Line;

typedef void (*LinebufEmit)(void *ctx, const Line *line);

/* Lines of one chunk handed on together (linebuf_feed_runs): n plain lines
 * in order, line i being base[start[i], start[i] + len[i]), at stream
 * offset offset + start[i]. Each is what a Line with raw set, flags 0 and
 * that text would be: whole in the chunk, no special byte (ESC, NUL,
 * >= 0x80), not cut, its newline and a CRLF's CR left out. The arrays are
 * valid only during the callback. */
typedef struct {
  const char *base;      /* the chunk being fed */
  uint64_t offset;       /* absolute offset in the stream of base[0] */
  size_t n;              /* 1..LINEBUF_RUN_MAX */
  const uint32_t *start; /* from base */
  const uint32_t *len;
} LineRun;

typedef void (*LinebufEmitRun)(void *ctx, const LineRun *run);

/* The most lines one LineRun carries: its arrays live on the feeding
 * stack (1 KiB), so a Linebuf costs no memory for them. */
#define LINEBUF_RUN_MAX 128

typedef struct {
  size_t line_max;       /* monitor.line_max_bytes */
  char *hold;            /* the partial line so far (raw), line_max + 1 bytes (room for the
                            CR of a CRLF), lazily allocated */
  size_t hold_len;
  unsigned hold_flags;   /* kLineTruncated once the held line passed line_max */
  char *scratch;         /* sanitizing output, lazily allocated */
  size_t scratch_cap;
  uint64_t offset;       /* absolute offset in the stream of the next byte fed; 0 at
                            init, its owner sets it when a feed does not follow the
                            last one (a restart resumes a stream mid-way) */
  uint64_t hold_offset;  /* absolute offset of the held line's first byte */
  const char *chunk;     /* the data being fed, at offset */
  /* Counters. */
  uint64_t lines;            /* lines handed on */
  uint64_t truncated_lines;  /* lines cut at line_max */
  uint64_t discarded_bytes;  /* bytes past line_max that were thrown away */
} Linebuf;

void linebuf_init(Linebuf *lb, size_t line_max_bytes);

/* Splits data into lines and calls emit for each completed one, in order.
 * data is the stream's bytes from lb->offset on, which moves past them. */
void linebuf_feed(Linebuf *lb, const char *data, size_t len, LinebufEmit emit, void *ctx);

/* linebuf_feed, with the plain lines of data (see LineRun) handed to
 * emit_run in runs instead of to emit one by one: every other line (one
 * held across reads, repaired, or cut) still goes to emit. Lines come in
 * stream order either way (a run is handed on before the line after it),
 * and the counters are the same. A chunk of 4 GiB or more, whose offsets
 * do not fit a run's, goes to emit alone. */
void linebuf_feed_runs(Linebuf *lb, const char *data, size_t len, LinebufEmit emit,
                       LinebufEmitRun emit_run, void *ctx);

/* The stream ended: hands on the held partial line, if any, marked
 * kLineUnterminated. */
void linebuf_finish(Linebuf *lb, LinebufEmit emit, void *ctx);

void linebuf_free(Linebuf *lb);

/* Which splitter linebuf_feed uses, for every Linebuf: want 1 asks for the
 * AVX2 one (granted only where the CPU has AVX2), 0 for the SSE2 one, -1
 * for the default (AVX2 where there is, unless VIGIL_LINEBUF_NO_AVX2 is
 * set). Returns whether AVX2 is used now. For the tests, which compare the
 * two; the engine leaves it to the default. */
bool linebuf_use_avx2(int want);

/* Sanitizes raw bytes (ANSI removal, NUL and invalid UTF-8 replacement) into
 * out, which must hold at least linebuf_sanitized_max(len) bytes. Returns the
 * output length; adds kLineBinary to *flags when a NUL was seen. Exposed for
 * the tests and for anything else that must show raw bytes to an agent. */
size_t linebuf_sanitize(const char *raw, size_t len, char *out, unsigned *flags);
size_t linebuf_sanitized_max(size_t len);

#endif
