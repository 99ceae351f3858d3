/*
 * libFuzzer harness for the line splitter. The first bytes choose line_max
 * and a cycle of chunk sizes; the rest is fed in those chunks, then the
 * stream is finished. Every line handed on must be valid UTF-8, hold no ESC
 * and no LF, and be no longer than line_max bytes after sanitizing could
 * expand it. The same input fed whole must give the same lines, and so must
 * the chunks fed with the plain lines in runs (linebuf_feed_runs), each
 * run's line checked as the Line it stands for.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Icore -Itests/support \
 *   tests/fuzz/fuzz_linebuf.c tests/support/utf8check.c core/pipeline/linebuf.c core/base/memory.c
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/linebuf.h"
#include "utf8check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What one run saw, to compare chunked and whole feeding. */
typedef struct {
  size_t line_max;
  uint64_t lines;
  uint64_t hash; /* FNV-1a over every line's text, length and flags */
} FuzzSeen;

static void
fuzz_hash(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 1099511628211ull;
  }
}

/* Checks one line and folds it into the run's hash; aborts on a violation
 * so libFuzzer records the input. */
static void
fuzz_line(void *ctx, const Line *line)
{
  FuzzSeen *seen = ctx;
  const unsigned char *t = (const unsigned char *)line->text;
  if (line->text == NULL && line->len > 0)
    abort();
  if (line->len > linebuf_sanitized_max(seen->line_max))
    abort();
  if (!test_utf8_valid(line->text, line->len))
    abort();
  if (memchr(t, 0x1B, line->len) != NULL || memchr(t, '\n', line->len) != NULL)
    abort();
  if (line->flags & ~(unsigned)(kLineTruncated | kLineBinary | kLineUnterminated))
    abort();
  seen->lines++;
  fuzz_hash(&seen->hash, t, line->len);
  fuzz_hash(&seen->hash, &line->len, sizeof line->len);
  fuzz_hash(&seen->hash, &line->flags, sizeof line->flags);
}

/* A run of plain lines: each must be what its Line says (no special byte,
 * within line_max), and is checked and hashed as that Line. */
static void
fuzz_run(void *ctx, const LineRun *run)
{
  FuzzSeen *seen = ctx;
  for (size_t i = 0; i < run->n; i++) {
    Line line = {run->base + run->start[i], run->len[i], 0, true, run->offset + run->start[i]};
    for (size_t k = 0; k < line.len; k++) {
      unsigned char c = (unsigned char)line.text[k];
      if (c == 0 || c >= 0x80)
        abort();
    }
    if (line.len > seen->line_max)
      abort();
    fuzz_line(ctx, &line);
  }
}

/* Feeds data in the chunk cycle, in runs or line by line; returns the
 * Linebuf's discarded bytes and checks its line count. */
static uint64_t
fuzz_feed(const uint8_t *data, size_t len, const size_t *chunks, size_t nchunks, bool runs,
          FuzzSeen *seen)
{
  Linebuf lb;
  linebuf_init(&lb, seen->line_max);
  size_t off = 0;
  for (size_t turn = 0; off < len; turn++) {
    size_t n = chunks[turn % nchunks];
    if (n > len - off)
      n = len - off;
    /* A private copy, so a pointer kept past the call would be caught. */
    char *copy = malloc(n);
    if (copy == NULL)
      abort();
    memcpy(copy, data + off, n);
    linebuf_feed_runs(&lb, copy, n, fuzz_line, runs ? fuzz_run : NULL, seen);
    free(copy);
    off += n;
  }
  linebuf_finish(&lb, fuzz_line, seen);
  if (seen->lines != lb.lines)
    abort();
  uint64_t discarded = lb.discarded_bytes;
  linebuf_free(&lb);
  return discarded;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  enum { kHeader = 6 };
  if (size < kHeader)
    return 0;
  /* Byte 0: line_max (small, so cuts happen often). Bytes 1..5: chunk
   * sizes, used in turn (0 means 1). */
  size_t line_max = data[0] % 64;
  size_t chunks[kHeader - 1];
  for (size_t i = 0; i < kHeader - 1; i++)
    chunks[i] = data[1 + i] ? data[1 + i] : 1;
  data += kHeader;
  size_t len = size - kHeader;

  FuzzSeen chunked = {line_max, 0, 1469598103934665603ull};
  uint64_t discarded = fuzz_feed(data, len, chunks, kHeader - 1, false, &chunked);
  FuzzSeen in_runs = {line_max, 0, 1469598103934665603ull};
  if (fuzz_feed(data, len, chunks, kHeader - 1, true, &in_runs) != discarded ||
      in_runs.lines != chunked.lines || in_runs.hash != chunked.hash)
    abort();

  Linebuf lb;
  FuzzSeen whole = {line_max, 0, 1469598103934665603ull};
  linebuf_init(&lb, line_max);
  linebuf_feed(&lb, (const char *)data, len, fuzz_line, &whole);
  linebuf_finish(&lb, fuzz_line, &whole);
  if (whole.lines != chunked.lines || whole.hash != chunked.hash ||
      lb.discarded_bytes != discarded)
    abort();
  linebuf_free(&lb);
  return 0;
}
