/*
 * libFuzzer harness for matching a stream as the engine does: the stream
 * is fed to the line splitter in chunks, each chunk is searched once for the
 * patterns' required literals (match_line_in_chunk), and every line's
 * verdict must be exactly what PCRE2 alone says of that line, whatever the
 * chunk sizes: lines that lie whole in a chunk, lines held across reads,
 * lines cleaned of escapes and invalid UTF-8, lines cut at line_max. The
 * prefilter may only ever spare PCRE2 lines it cannot match.
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
  PatternSet *set;
  MatchChunk chunk;
  pcre2_code *codes[FUZZ_NPATTERNS];
  pcre2_match_data *match_data;
} FuzzMatch;

/* The first pattern PCRE2 alone matches in the line, or -1. */
static int
fuzz_reference(FuzzMatch *fm, const Line *line)
{
  for (size_t i = 0; i < FUZZ_NPATTERNS; i++)
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static FuzzMatch fm;
  if (fm.set == NULL) {
    MatchLimits lim = {32, 512, 1000000, 10000};
    VigilError err = VIGIL_ERROR_INIT;
    fm.set = match_compile(fuzz_patterns, FUZZ_NPATTERNS, &lim, "patterns", &err);
    for (size_t i = 0; i < FUZZ_NPATTERNS; i++) {
      int code;
      PCRE2_SIZE off;
      fm.codes[i] = pcre2_compile((PCRE2_SPTR)fuzz_patterns[i], PCRE2_ZERO_TERMINATED,
                                  PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
      if (fm.codes[i] == NULL)
        abort();
    }
    fm.match_data = pcre2_match_data_create(16, NULL);
    if (fm.set == NULL || fm.match_data == NULL)
      abort();
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
  Linebuf lb;
  linebuf_init(&lb, line_max);
  size_t off = 0;
  for (size_t turn = 0; off < len; turn++) {
    size_t n = chunks[turn % (kHeader - 1)];
    if (n > len - off)
      n = len - off;
    char *copy = malloc(n);
    if (copy == NULL)
      abort();
    memcpy(copy, data + off, n);
    match_chunk_begin(&fm.chunk, copy, n);
    linebuf_feed(&lb, copy, n, fuzz_line, &fm);
    match_chunk_begin(&fm.chunk, NULL, 0);
    free(copy);
    off += n;
  }
  linebuf_finish(&lb, fuzz_line, &fm);
  linebuf_free(&lb);
  return 0;
}
