/*
 * libFuzzer harness for the signal stage's pure parts: the built-in crash
 * patterns (match.c over crashpatterns.c), the trace rules (trace.c),
 * incident assembly (incident.c) and fingerprints (fingerprint.c), on
 * hostile process output. The first bytes choose the bounds (max_lines,
 * max_bytes, quiet gap); each following line is "T" + text, where the byte
 * T gives its stream (low bit) and how far the fake clock moves before it.
 *
 * Checked, aborting on a violation: every line is taken by the assembler or
 * handed back exactly once, counted against what was fed; a closed incident
 * is never empty, keeps at most max_lines lines and max_bytes bytes, holds
 * lines of its own stream in seq order, and its signature is one of its
 * lines; nothing is left open after the final close; fingerprinting the
 * signature gives the same value twice.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/crashpatterns.h"
#include "pipeline/fingerprint.h"
#include "pipeline/incident.h"
#include "pipeline/match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  const Assembler *a;
  uint64_t kept;     /* lines kept in closed incidents */
  uint64_t counted;  /* lines counted past the bounds */
  uint64_t plain;    /* held lines handed back */
} FuzzSeen;

static void
fuzz_done(void *ctx, Incident *inc)
{
  FuzzSeen *seen = ctx;
  if (inc->nlines == 0 || inc->nlines > seen->a->max_lines || inc->bytes > seen->a->max_bytes)
    abort();
  for (size_t i = 0; i < inc->nlines; i++) {
    if (inc->lines[i].stream != inc->stream)
      abort();
    if (i > 0 && inc->lines[i].seq <= inc->lines[i - 1].seq)
      abort();
    if (inc->lines[i].off + inc->lines[i].len > inc->bytes)
      abort();
  }
  const IncidentLine *sig = incident_signature(inc);
  if (sig < inc->lines || sig >= inc->lines + inc->nlines)
    abort();
  const char *text = incident_line_text(inc, (size_t)(sig - inc->lines));
  if (fingerprint_of(text, sig->len, inc->pattern) != fingerprint_of(text, sig->len, inc->pattern))
    abort();
  seen->kept += inc->nlines;
  seen->counted += inc->truncated_lines;
  incident_free(inc);
}

static void
fuzz_plain(void *ctx, const AssemblerLine *line)
{
  (void)line;
  ((FuzzSeen *)ctx)->plain++;
}

/* The built-in set, compiled once for the process. */
static PatternSet *
fuzz_patterns(void)
{
  static PatternSet *ps;
  if (ps == NULL) {
    MatchLimits lim = {crashpatterns_count(), 65536, 100000, 1000};
    VigilError err = VIGIL_ERROR_INIT;
    ps = match_compile(crashpatterns_sources(), crashpatterns_count(), &lim, "patterns", &err);
    if (ps == NULL)
      abort();
  }
  return ps;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 3)
    return 0;
  size_t max_lines = 1 + data[0] % 16;
  size_t max_bytes = 64 + (size_t)data[1] * 4;
  uint64_t quiet = 1 + data[2] % 50;
  data += 3;
  size -= 3;

  FuzzSeen seen = {NULL, 0, 0, 0};
  Assembler a;
  assembler_init(&a, max_lines, max_bytes, quiet, fuzz_done, fuzz_plain, &seen);
  assembler_set_max_open(&a, quiet * 8);
  seen.a = &a;
  uint64_t now = 0, seq = 0, taken = 0;
  const uint8_t *p = data, *end = data + size;
  while (p < end) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *stop = nl ? nl : end;
    if (stop > p) {
      uint8_t t = p[0];
      now += t >> 3;
      assembler_expire(&a, now);
      const char *text = (const char *)p + 1;
      size_t len = (size_t)(stop - p) - 1;
      int pattern = match_line(fuzz_patterns(), text, len);
      AssemblerLine line = {++seq, t & 1, pattern, kTraceGeneric, false, 0, text, len, seq};
      if (pattern >= 0) {
        line.family = crashpatterns_get((size_t)pattern)->family;
        line.generic_header = crashpatterns_get((size_t)pattern)->generic_header;
      }
      if (assembler_feed(&a, now, &line))
        taken++;
    }
    p = nl ? nl + 1 : end;
  }
  assembler_close(&a, -1);
  if (assembler_busy(&a))
    abort();
  /* A line taken is kept, counted or handed back (a held line may be taken
   * twice: held, handed back, then taken again on its own). */
  if (seen.kept + seen.counted + seen.plain < taken || seen.kept + seen.counted > seq)
    abort();
  assembler_free(&a);
  return 0;
}
