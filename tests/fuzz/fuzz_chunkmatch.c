/*
 * libFuzzer harness for matching a stream as the engine does: the stream
 * is fed to the line splitter in chunks, each chunk is searched once for the
 * patterns' required literals (match_line_in_chunk), and every line's
 * verdict must be exactly what PCRE2 alone says of that line, whatever the
 * chunk sizes: lines that lie whole in a chunk, lines held across reads,
 * lines cleaned of escapes and invalid UTF-8, lines cut at line_max. The
 * prefilter may only ever spare PCRE2 lines it cannot match.
 *
 * Two sets: all the patterns below, and all but the last, x{3}y, of which
 * the prefilter takes no literal, so that the whole set has none and
 * every line goes to PCRE2: with that one alone the chunk's search would
 * never run. Each input is fed to each set twice: line by line, and with
 * the plain lines in runs
 * (linebuf_feed_runs), taken as the intake takes them: the lines the
 * chunk's search clears (match_chunk_clear) must match nothing, and the
 * others are matched in the chunk as before.
 *
 * The first bytes choose line_max and a cycle of chunk sizes, as
 * fuzz_linebuf's do; the rest is the stream.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/linebuf.h"
#include "pipeline/match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Literal-bearing patterns in the shapes users write, and a few the driver's
 * fragments hit. */
static const char *const fuzz_patterns[] = {
  "^Error:", "\\buncaught\\b", "panic: .*x", "caf\xc3\xa9", "\\d+ms$", "Traceback \\(most",
  "seq=\\d", "[Ee]rror: boom", "x{3}y",
};
#define FUZZ_NPATTERNS (sizeof fuzz_patterns / sizeof *fuzz_patterns)

typedef struct {
  size_t n;          /* the first n of fuzz_patterns */
  PatternSet *set;
  MatchChunk chunk;
  pcre2_code *codes[FUZZ_NPATTERNS];
  pcre2_match_data *match_data;
} FuzzMatch;

/* The first pattern PCRE2 alone matches in the line, or -1. */
static int
fuzz_reference(FuzzMatch *fm, const Line *line)
{
  for (size_t i = 0; i < fm->n; i++)
    if (pcre2_match(fm->codes[i], (PCRE2_SPTR)line->text, line->len, 0, 0, fm->match_data, NULL) >= 0)
      return (int)i;
  return -1;
}

static void
fuzz_line(void *ctx, const Line *line)
{
  FuzzMatch *fm = ctx;
  if (match_line_in_chunk(fm->set, &fm->chunk, line->text, line->len) != fuzz_reference(fm, line))
    abort();
}

/* A run of plain lines, as monitor_on_run takes it. */
static void
fuzz_run(void *ctx, const LineRun *run)
{
  FuzzMatch *fm = ctx;
  const char *clear = NULL;
  for (size_t i = 0; i < run->n; i++) {
    Line line = {run->base + run->start[i], run->len[i], 0, true, run->offset + run->start[i]};
    if (clear == NULL || line.text + line.len > clear)
      clear = match_chunk_clear(fm->set, &fm->chunk, line.text);
    if (line.text + line.len <= clear) {
      if (fuzz_reference(fm, &line) != -1)
        abort();
      continue;
    }
    clear = NULL;
    fuzz_line(fm, &line);
  }
}

/* Feeds the stream in the chunk cycle, in runs or line by line. */
static void
fuzz_feed(FuzzMatch *fm, const uint8_t *data, size_t len, size_t line_max,
          const size_t *chunks, size_t nchunks, bool runs)
{
  Linebuf lb;
  linebuf_init(&lb, line_max);
  size_t off = 0;
  for (size_t turn = 0; off < len; turn++) {
    size_t n = chunks[turn % nchunks];
    if (n > len - off)
      n = len - off;
    char *copy = malloc(n);
    if (copy == NULL)
      abort();
    memcpy(copy, data + off, n);
    match_chunk_begin(&fm->chunk, copy, n);
    linebuf_feed_runs(&lb, copy, n, fuzz_line, runs ? fuzz_run : NULL, fm);
    match_chunk_begin(&fm->chunk, NULL, 0);
    free(copy);
    off += n;
  }
  linebuf_finish(&lb, fuzz_line, fm);
  linebuf_free(&lb);
}

/* Compiles the first n patterns into fm, and each alone for PCRE2. */
static void
fuzz_compile(FuzzMatch *fm, size_t n)
{
  MatchLimits lim = {32, 512, 1000000, 10000};
  VigilError err = VIGIL_ERROR_INIT;
  fm->n = n;
  fm->set = match_compile(fuzz_patterns, n, &lim, "patterns", &err);
  for (size_t i = 0; i < n; i++) {
    int code;
    PCRE2_SIZE off;
    fm->codes[i] = pcre2_compile((PCRE2_SPTR)fuzz_patterns[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
    if (fm->codes[i] == NULL)
      abort();
  }
  fm->match_data = pcre2_match_data_create(16, NULL);
  if (fm->set == NULL || fm->match_data == NULL)
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static FuzzMatch all, literal;
  if (all.set == NULL) {
    fuzz_compile(&all, FUZZ_NPATTERNS);
    fuzz_compile(&literal, FUZZ_NPATTERNS - 1);
  }
  enum { kHeader = 6 };
  if (size < kHeader)
    return 0;
  size_t line_max = 8 + data[0] % 120;
  size_t chunks[kHeader - 1];
  for (size_t i = 0; i < kHeader - 1; i++)
    chunks[i] = data[1 + i] ? data[1 + i] : 1;
  data += kHeader;
  size_t len = size - kHeader;
  for (int runs = 0; runs < 2; runs++) {
    fuzz_feed(&all, data, len, line_max, chunks, kHeader - 1, runs);
    fuzz_feed(&literal, data, len, line_max, chunks, kHeader - 1, runs);
  }
  return 0;
}
