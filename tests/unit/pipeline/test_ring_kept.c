/*
 * Tests of the ring's lines kept as offsets into their stream's capture
 * (ring_push_raw, ring_trim): they read back what the capture holds,
 * right after it wrapped and across its wrap; a line whose bytes the
 * capture evicted leaves the ring with every older line, counted as
 * dropped, and never reads as other bytes; kept and copied lines mix in
 * one ring with one seq order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/capture.h"
#include "pipeline/linebuf.h"
#include "base/memory.h"
#include "pipeline/ring.h"
#include "spec/stream.h"

/* What a query visited: "seq:text" joined by '|'. */
typedef struct {
  char buf[4096];
  size_t used;
} Seen;

static void
seen_visit(void *ctx, const RingLine *line)
{
  Seen *s = ctx;
  s->used += (size_t)snprintf(s->buf + s->used, sizeof s->buf - s->used, "%s%llu:%.*s",
                              s->used ? "|" : "", (unsigned long long)line->seq,
                              (int)line->len, line->text);
}

static const char *
all_lines(const Ring *r, Seen *s)
{
  s->used = 0;
  s->buf[0] = '\0';
  ring_query(r, kRingAll, 0, 0, seen_visit, s);
  return s->buf;
}

/* Writes text and a newline to c, as the intake does, and pushes the text
 * as a raw line kept at its offset. Returns its seq. */
static uint64_t
write_line(Ring *r, Capture *c, int stream, const char *text)
{
  size_t n = strlen(text);
  uint64_t at = c->total;
  capture_write(c, text, n);
  capture_write(c, "\n", 1);
  ring_trim(r);
  return ring_push_raw(r, stream, text, n, c, at, -1, 0);
}

/* A capture of capture_max bytes and a ring of ring_lines lines (4096
 * bytes), both empty. */
static void
both_init(Capture *c, size_t capture_max, Ring *r, size_t ring_lines)
{
  capture_init(c, capture_max);
  ring_init(r, ring_lines, 4096);
}

static void
both_free(Capture *c, Ring *r)
{
  ring_free(r);
  capture_free(c);
}

TEST(a_kept_line_is_no_copy_and_reads_from_the_capture)
{
  Capture c;
  Ring r;
  both_init(&c, 4096, &r, 100);
  write_line(&r, &c, kStreamStdout, "alpha");
  write_line(&r, &c, kStreamStdout, "");
  write_line(&r, &c, kStreamStdout, "gamma");
  CHECK(r.arena == NULL); /* nothing copied */
  Seen s;
  CHECK_STR(all_lines(&r, &s), "1:alpha|2:|3:gamma");
  RingLine last = ring_last(&r);
  CHECK_MEM(last.text, last.len, "gamma");
  CHECK(last.flags == 0); /* the ring's own mark is not shown */
  both_free(&c, &r);
}

TEST(kept_lines_are_bounded_by_max_lines_not_max_bytes)
{
  /* 100 lines of 100 bytes in a ring of 4096 bytes: their text is in the
   * capture, so all of them stay. */
  Capture c;
  Ring r;
  both_init(&c, 65536, &r, 100);
  char text[101];
  for (int i = 0; i < 120; i++) {
    memset(text, 'a' + i % 26, 100);
    text[100] = '\0';
    write_line(&r, &c, kStreamStdout, text);
  }
  CHECK_INT(r.count, 100);
  CHECK_INT(r.counters.dropped, 20); /* by max_lines */
  CHECK(r.arena == NULL);
  RingLine last = ring_last(&r);
  CHECK_INT(last.len, 100);
  CHECK(last.text[0] == 'a' + 119 % 26 && last.text[99] == last.text[0]);
  both_free(&c, &r);
}

/* A line of the wrap test: line seq - 1's text. */
static void
check_wrap_line(void *ctx, const RingLine *line)
{
  (void)ctx;
  char want[32];
  snprintf(want, sizeof want, "line %d of the stream", (int)line->seq - 1);
  CHECK_MEM(line->text, line->len, want);
}

TEST(a_line_reads_back_right_after_the_capture_wrapped)
{
  /* A capture of 64 bytes wraps every few lines; every line still in the
   * ring reads back as written, and the one whose bytes straddle the
   * capture's end is joined. */
  Capture c;
  Ring r;
  both_init(&c, 64, &r, 100);
  bool joined = false;
  for (int i = 0; i < 200; i++) {
    char text[32];
    snprintf(text, sizeof text, "line %d of the stream", i);
    write_line(&r, &c, kStreamStdout, text);
    RingLine last = ring_last(&r);
    CHECK_MEM(last.text, last.len, text);
    if (last.text == r.scratch)
      joined = true;
    /* Every line the ring still has reads as written. */
    CHECK_INT(ring_query(&r, kRingAll, 0, 0, check_wrap_line, NULL), r.count);
    CHECK(r.count <= 3); /* 64 bytes hold at most 3 of these lines whole */
  }
  CHECK(joined);
  CHECK(c.evicted > 0);
  CHECK_INT(r.counters.lines, 200);
  CHECK_INT(r.counters.dropped, 200 - r.count);
  both_free(&c, &r);
}

TEST(a_line_the_capture_dropped_is_evicted_and_counted)
{
  Capture c;
  Ring r;
  both_init(&c, 32, &r, 100);
  write_line(&r, &c, kStreamStdout, "0123456789");  /* [0, 11) */
  write_line(&r, &c, kStreamStdout, "abcdefghij");  /* [11, 22) */
  CHECK_INT(r.count, 2);
  /* Bytes with no line yet (a partial line held by the splitter) push the
   * first line's bytes out of the capture. */
  capture_write(&c, "xxxxxxxxxxx", 11);
  CHECK_INT(ring_trim(&r), 1);
  CHECK_INT(r.count, 1);
  CHECK_INT(r.counters.dropped, 1);
  Seen s;
  CHECK_STR(all_lines(&r, &s), "2:abcdefghij");
  /* The capture keeps [1, 33); ten bytes more and it keeps [11, 43), the
   * second line whole; one byte more and that line's first byte is gone:
   * it goes too. */
  capture_write(&c, "yyyyyyyyyy", 10);
  CHECK_INT(capture_start(&c), 11);
  CHECK_INT(ring_trim(&r), 0);
  CHECK_STR(all_lines(&r, &s), "2:abcdefghij");
  capture_write(&c, "y", 1);
  CHECK_INT(ring_trim(&r), 1);
  CHECK_INT(r.count, 0);
  CHECK_INT(r.counters.dropped, 2);
  CHECK(ring_last(&r).text == NULL);
  CHECK_INT(ring_trim(&r), 0);
  both_free(&c, &r);
}

TEST(older_lines_go_with_a_kept_line_the_capture_dropped)
{
  /* The ring stays the newest lines: a copied stderr line older than the
   * dropped stdout line goes with it, the newer one stays. */
  Capture out, err;
  capture_init(&out, 16);
  capture_init(&err, 4096);
  Ring r;
  ring_init(&r, 100, 4096);
  ring_push(&r, kStreamStderr, "old copy", 8, -1, kLineBinary);
  write_line(&r, &out, kStreamStdout, "kept one");   /* [0, 9) */
  write_line(&r, &err, kStreamStderr, "stderr kept");
  ring_push(&r, kStreamStderr, "new copy", 8, 0, 0);
  write_line(&r, &out, kStreamStdout, "two");        /* [9, 13) */
  Seen s;
  CHECK_STR(all_lines(&r, &s), "1:old copy|2:kept one|3:stderr kept|4:new copy|5:two");
  capture_write(&out, "zzzz", 4); /* 17 bytes: the first one is gone */
  CHECK_INT(ring_trim(&r), 2);
  CHECK_STR(all_lines(&r, &s), "3:stderr kept|4:new copy|5:two");
  CHECK_INT(r.counters.dropped, 2);
  CHECK_INT(r.counters.lines, 5);
  ring_free(&r);
  capture_free(&out);
  capture_free(&err);
}

/* The mixed test's pushes by seq: the text each line had (a kept one's
 * number, or -1 for a copy of 600 times one letter). */
typedef struct {
  int kept[401];
  char letter[401];
  size_t copies; /* copies visited */
  size_t visited;
} Mixed;

static void
check_mixed_line(void *ctx, const RingLine *line)
{
  Mixed *mx = ctx;
  mx->visited++;
  if (line->seq > 400) {
    CHECK(line->seq <= 400);
    return;
  }
  if (mx->kept[line->seq] < 0) {
    mx->copies++;
    CHECK_INT(line->stream, kStreamStderr);
    CHECK_INT(line->flags, kLineBinary);
    char want[600];
    memset(want, mx->letter[line->seq], sizeof want);
    CHECK(line->len == 600 && memcmp(line->text, want, 600) == 0);
    return;
  }
  char want[40];
  snprintf(want, sizeof want, "kept %d", mx->kept[line->seq]);
  CHECK_INT(line->stream, kStreamStdout);
  CHECK_MEM(line->text, line->len, want);
}

TEST(mixed_copies_and_kept_lines_keep_their_order_and_text)
{
  /* Copies wrap the arena many times between kept lines: the copies'
   * bytes are bounded by max_bytes, kept lines are never evicted for
   * them unless older than an evicted copy, and every text reads back. */
  Capture c;
  Ring r;
  both_init(&c, 1 << 20, &r, 50);
  char copy[600];
  Mixed mx = {.copies = 0};
  for (int i = 0; i < 300; i++) {
    char text[40];
    snprintf(text, sizeof text, "kept %d", i);
    uint64_t seq = write_line(&r, &c, kStreamStdout, text);
    mx.kept[seq] = i;
    if (i % 3 == 0) {
      memset(copy, 'A' + i % 26, sizeof copy);
      seq = ring_push(&r, kStreamStderr, copy, sizeof copy, -1, kLineBinary);
      mx.kept[seq] = -1;
      mx.letter[seq] = copy[0];
    }
    size_t copied = 0;
    for (size_t j = 0; j < r.count; j++) {
      const RingEntry *e = &r.entries[(r.head + j) % r.entries_cap];
      if (!(e->flags & RING_KEPT))
        copied += e->len;
      if (j > 0) /* seqs rise without a gap */
        CHECK_INT(e->seq, r.entries[(r.head + j - 1) % r.entries_cap].seq + 1);
    }
    CHECK(copied <= 4096);
  }
  CHECK_INT(r.counters.dropped, r.counters.lines - r.count);
  RingLine last = ring_last(&r);
  CHECK_MEM(last.text, last.len, "kept 299");
  CHECK_INT(ring_query(&r, kRingAll, 0, 0, check_mixed_line, &mx), r.count);
  /* 4096 bytes hold 6 copies; the kept lines between them stay. */
  CHECK(mx.copies > 0 && mx.copies <= 6);
  CHECK(r.count > mx.copies * 2);
  both_free(&c, &r);
}

TEST(a_raw_line_the_capture_no_longer_holds_is_dropped_with_the_older_lines)
{
  /* One read longer than the capture: its first lines are gone from the
   * capture before they are pushed, so they are dropped as ring_trim would
   * drop them after a shorter read, with the lines before them. */
  Capture c;
  Ring r;
  both_init(&c, 16, &r, 100);
  ring_push(&r, kStreamStderr, "a copy", 6, -1, 0);
  const char *read = "first line\nsecond line\nend\n";
  capture_write(&c, read, strlen(read)); /* keeps [11, 27) */
  CHECK_INT(ring_push_raw(&r, kStreamStdout, read, 10, &c, 0, -1, 0), 2);
  CHECK_INT(r.count, 0);
  CHECK_INT(r.counters.dropped, 2);
  ring_push_raw(&r, kStreamStdout, read + 11, 11, &c, 11, -1, 0);
  ring_push_raw(&r, kStreamStdout, read + 23, 3, &c, 23, -1, 0);
  Seen s;
  CHECK_STR(all_lines(&r, &s), "3:second line|4:end");
  CHECK_INT(r.counters.lines, 4);
  CHECK_INT(r.counters.dropped, 2);
  both_free(&c, &r);
}

int
main(void)
{
  RUN(a_kept_line_is_no_copy_and_reads_from_the_capture);
  RUN(kept_lines_are_bounded_by_max_lines_not_max_bytes);
  RUN(a_line_reads_back_right_after_the_capture_wrapped);
  RUN(a_line_the_capture_dropped_is_evicted_and_counted);
  RUN(older_lines_go_with_a_kept_line_the_capture_dropped);
  RUN(mixed_copies_and_kept_lines_keep_their_order_and_text);
  RUN(a_raw_line_the_capture_no_longer_holds_is_dropped_with_the_older_lines);
  return check_summary();
}
