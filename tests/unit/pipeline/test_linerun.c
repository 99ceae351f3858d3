/*
 * Tests of the plain lines handed on in runs (linebuf_feed_runs, LineRun)
 * and of the ring's bulk push of them (ring_push_raw_run). Each is checked
 * against the one-line path it stands for, on the same random buffers: the
 * splitter gives the same lines, flags, offsets and counters however the
 * bytes are chunked and with the AVX2 and SSE2 splitters; the ring holds
 * the same lines with the same seqs and counts whether a run is pushed
 * whole or line by line, through captures that evict. The chunk search's
 * match_chunk_clear, which tells the intake which lines of a run match
 * nothing, is tested with the rest of that search in test_prefilter.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "check.h"
#include "pipeline/capture.h"
#include "pipeline/linebuf.h"
#include "pipeline/ring.h"
#include "spec/stream.h"

static uint64_t
rnd(uint64_t *state)
{
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* Random bytes: lines of every length around line_max, with CRLFs, and
 * special bytes (ESC, NUL, >= 0x80) now and then. */
static void
random_text(uint64_t *state, char *s, size_t len)
{
  static const char plain[] = "abcdefghijklmnopqrstuvwxyz0123456789 :";
  static const char special[] = "\x1b\x80\xC3\xA9\0\r";
  unsigned density = 1 + (unsigned)(rnd(state) % 6);
  for (size_t i = 0; i < len; i++) {
    uint64_t r = rnd(state);
    s[i] = (r % (density * 8)) == 0 ? '\n'
           : (r % 61) == 1          ? special[rnd(state) % (sizeof special - 1)]
                                    : plain[rnd(state) % (sizeof plain - 1)];
  }
}

/* --- linebuf_feed_runs ------------------------------------------------- */

typedef struct {
  char *text;
  size_t len;
  unsigned flags;
  bool raw;
  uint64_t offset;
} Got;

typedef struct {
  Got *lines;
  size_t n, cap;
  size_t runs;
} Gots;

static void
gots_add(Gots *g, const char *text, size_t len, unsigned flags, bool raw, uint64_t offset)
{
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->lines = xrealloc(g->lines, g->cap * sizeof *g->lines);
  }
  Got *l = &g->lines[g->n++];
  l->text = xmalloc(len + 1);
  memcpy(l->text, text, len);
  l->text[len] = '\0';
  l->len = len;
  l->flags = flags;
  l->raw = raw;
  l->offset = offset;
}

static void
gots_line(void *ctx, const Line *line)
{
  gots_add(ctx, line->text, line->len, line->flags, line->raw, line->offset);
}

/* A run's lines, each as the Line it stands for. */
static void
gots_run(void *ctx, const LineRun *run)
{
  Gots *g = ctx;
  CHECK(run->n >= 1 && run->n <= LINEBUF_RUN_MAX);
  g->runs++;
  for (size_t i = 0; i < run->n; i++) {
    const char *text = run->base + run->start[i];
    CHECK(memchr(text, '\n', run->len[i]) == NULL);
    gots_add(g, text, run->len[i], 0, true, run->offset + run->start[i]);
  }
}

static void
gots_free(Gots *g)
{
  for (size_t i = 0; i < g->n; i++)
    free(g->lines[i].text);
  free(g->lines);
  memset(g, 0, sizeof *g);
}

/* Feeds s in chunks of step bytes (each copied to a buffer of its own at
 * alignment align, so no line is read past its chunk), in runs or not. */
static void
feed(const char *s, size_t len, size_t step, size_t align, size_t line_max, bool runs, Gots *g,
     Linebuf *lb)
{
  linebuf_init(lb, line_max);
  lb->offset = 77;
  for (size_t at = 0; at < len; at += step) {
    size_t n = len - at < step ? len - at : step;
    char *buf = xmalloc(n + align);
    memcpy(buf + align, s + at, n);
    if (runs)
      linebuf_feed_runs(lb, buf + align, n, gots_line, gots_run, g);
    else
      linebuf_feed(lb, buf + align, n, gots_line, g);
    free(buf);
  }
  linebuf_finish(lb, gots_line, g);
}

TEST(runs_hand_on_the_lines_one_by_one_would)
{
  uint64_t state = 99;
  size_t runs = 0;
  for (int round = 0; round < 300; round++) {
    size_t len = rnd(&state) % 3000;
    char *s = xmalloc(len + 1);
    random_text(&state, s, len);
    size_t line_max = 4 + rnd(&state) % 120;
    size_t step = 1 + rnd(&state) % (len + 1);
    size_t align = (size_t)round % 64;
    for (int avx2 = 0; avx2 < 2; avx2++) {
      if (avx2 && !linebuf_use_avx2(1))
        break; /* no AVX2 here: the SSE2 splitter alone */
      if (!avx2)
        linebuf_use_avx2(0);
      Gots one = {0}, run = {0};
      Linebuf a, b;
      feed(s, len, step, align, line_max, false, &one, &a);
      feed(s, len, step, align, line_max, true, &run, &b);
      CHECK_INT(run.n, one.n);
      for (size_t i = 0; i < one.n && i < run.n; i++) {
        CHECK_INT(run.lines[i].len, one.lines[i].len);
        CHECK(memcmp(run.lines[i].text, one.lines[i].text, one.lines[i].len) == 0);
        CHECK_INT(run.lines[i].flags, one.lines[i].flags);
        CHECK(run.lines[i].raw == one.lines[i].raw);
        if (one.lines[i].raw)
          CHECK_INT(run.lines[i].offset, one.lines[i].offset);
      }
      CHECK_INT(b.lines, a.lines);
      CHECK_INT(b.truncated_lines, a.truncated_lines);
      CHECK_INT(b.discarded_bytes, a.discarded_bytes);
      CHECK_INT(b.offset, a.offset);
      runs += run.runs;
      linebuf_free(&a);
      linebuf_free(&b);
      gots_free(&one);
      gots_free(&run);
    }
    free(s);
  }
  linebuf_use_avx2(-1);
  CHECK(runs > 1000); /* the runs were used, not only the one-line path */
}

TEST(a_run_holds_at_most_its_max_and_only_plain_lines)
{
  /* 300 plain lines, one with an ESC, one cut, one CRLF: runs of at most
   * LINEBUF_RUN_MAX, the others one by one in their place. */
  char s[4096];
  size_t len = 0;
  for (int i = 0; i < 300; i++) {
    const char *line = i == 150 ? "es\x1b[0mc\n" : i == 200 ? "0123456789abcdef\n"
                       : i == 250 ? "crlf\r\n" : "ab\n";
    memcpy(s + len, line, strlen(line));
    len += strlen(line);
  }
  Gots g = {0};
  Linebuf lb;
  linebuf_init(&lb, 10);
  linebuf_feed_runs(&lb, s, len, gots_line, gots_run, &g);
  CHECK_INT(g.n, 300);
  CHECK_INT(lb.lines, 300);
  CHECK_STR(g.lines[150].text, "esc");
  CHECK(!g.lines[150].raw);
  CHECK_INT(g.lines[200].flags, kLineTruncated);
  CHECK_STR(g.lines[250].text, "crlf");
  CHECK(g.lines[250].raw);
  /* 0..149 (two runs: at most 128 each), 151..199, 201..299 */
  CHECK_INT(g.runs, 4);
  linebuf_free(&lb);
  gots_free(&g);
}

/* --- ring_push_raw_run ------------------------------------------------- */

typedef struct {
  char buf[1 << 16];
  size_t used;
} Seen;

static void
seen_visit(void *ctx, const RingLine *line)
{
  Seen *s = ctx;
  if (s->used < sizeof s->buf)
    s->used += (size_t)snprintf(s->buf + s->used, sizeof s->buf - s->used, "%llu/%d/%d/%u:%.*s|",
                                (unsigned long long)line->seq, line->stream, line->pattern,
                                line->flags, (int)line->len, line->text);
}

static void
ring_text(const Ring *r, Seen *s)
{
  s->used = 0;
  s->buf[0] = '\0';
  ring_query(r, kRingAll, 0, 0, seen_visit, s);
}

/* The lines of one chunk, as linebuf would give them as a run (plain text
 * of random lengths, each with its newline). */
typedef struct {
  char text[8192];
  size_t len;
  uint32_t start[LINEBUF_RUN_MAX];
  uint32_t len_of[LINEBUF_RUN_MAX];
  size_t n;
} Chunk;

static void
random_chunk(uint64_t *state, Chunk *c, size_t nlines)
{
  c->len = 0;
  c->n = 0;
  for (size_t i = 0; i < nlines; i++) {
    size_t n = rnd(state) % 40;
    c->start[c->n] = (uint32_t)c->len;
    c->len_of[c->n] = (uint32_t)n;
    for (size_t k = 0; k < n; k++)
      c->text[c->len++] = (char)('a' + rnd(state) % 26);
    c->text[c->len++] = '\n';
    c->n++;
  }
}

TEST(a_run_pushed_whole_is_the_lines_pushed_one_by_one)
{
  uint64_t state = 12345;
  static const size_t max_lines[] = {0, 1, 2, 5, 64, 1000};
  static const size_t capture_max[] = {64, 700, 4096, 1 << 20};
  for (size_t ml = 0; ml < sizeof max_lines / sizeof *max_lines; ml++) {
    for (size_t cm = 0; cm < sizeof capture_max / sizeof *capture_max; cm++) {
      Capture cap[2];
      Ring one, all;
      capture_init(&cap[0], capture_max[cm]);
      capture_init(&cap[1], capture_max[cm]);
      ring_init(&one, max_lines[ml], 2048);
      ring_init(&all, max_lines[ml], 2048);
      for (int round = 0; round < 200; round++) {
        int stream = rnd(&state) % 3 == 0 ? kStreamStderr : kStreamStdout;
        if (rnd(&state) % 7 == 0) {
          /* A copied line between runs, as a repaired line is. */
          ring_push(&one, stream, "copy", 4, 2, kLineBinary);
          ring_push(&all, stream, "copy", 4, 2, kLineBinary);
        }
        static Chunk c;
        random_chunk(&state, &c, 1 + rnd(&state) % LINEBUF_RUN_MAX);
        uint64_t at = cap[stream].total;
        capture_write(&cap[stream], c.text, c.len);
        CHECK_INT(ring_trim(&all), ring_trim(&one));
        LineRun run = {c.text, at, c.n, c.start, c.len_of};
        /* Pushed in one to three parts, as a run is cut by its matches. */
        size_t cut1 = rnd(&state) % (c.n + 1), cut2 = cut1 + rnd(&state) % (c.n - cut1 + 1);
        size_t cuts[4] = {0, cut1, cut2, c.n};
        for (int p = 0; p < 3; p++) {
          uint64_t first = one.next_seq;
          for (size_t i = cuts[p]; i < cuts[p + 1]; i++)
            ring_push_raw(&one, stream, c.text + c.start[i], c.len_of[i], &cap[stream],
                          at + c.start[i], -1, 0);
          CHECK_INT(ring_push_raw_run(&all, stream, &cap[stream], &run, cuts[p], cuts[p + 1]),
                    first);
        }
        CHECK_INT(all.next_seq, one.next_seq);
        CHECK_INT(all.count, one.count);
        CHECK_INT(all.counters.lines, one.counters.lines);
        CHECK_INT(all.counters.matched, one.counters.matched);
        CHECK_INT(all.counters.unmatched, one.counters.unmatched);
        CHECK_INT(all.counters.dropped, one.counters.dropped);
        static Seen a, b;
        ring_text(&one, &a);
        ring_text(&all, &b);
        CHECK_STR(b.buf, a.buf);
      }
      ring_free(&one);
      ring_free(&all);
      capture_free(&cap[0]);
      capture_free(&cap[1]);
    }
  }
}

int
main(void)
{
  RUN(runs_hand_on_the_lines_one_by_one_would);
  RUN(a_run_holds_at_most_its_max_and_only_plain_lines);
  RUN(a_run_pushed_whole_is_the_lines_pushed_one_by_one);
  return check_summary();
}
