/*
 * Tests of what the line splitter tells the ring about a line's raw bytes
 * (Line.raw and Line.offset): a line whose text is exactly the stream's
 * bytes says where they start in the stream, however the bytes were
 * chunked; a line that was repaired or cut says it is not raw. The ring
 * keeps raw lines as offsets into the capture (ring.h), so a wrong offset
 * or a repaired line called raw would show an agent other bytes.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/linebuf.h"
#include "base/memory.h"

typedef struct {
  char text[64][128];
  size_t len[64];
  bool raw[64];
  uint64_t offset[64];
  size_t n;
} Raws;

static void
raws_line(void *ctx, const Line *line)
{
  Raws *r = ctx;
  if (r->n == 64)
    return;
  size_t n = line->len < 127 ? line->len : 127;
  memcpy(r->text[r->n], line->text, n);
  r->text[r->n][n] = '\0';
  r->len[r->n] = line->len;
  r->raw[r->n] = line->raw;
  r->offset[r->n] = line->offset;
  r->n++;
}

/* Feeds stream (len bytes, from stream offset `base`) in chunks of `step`,
 * then finishes, and checks every raw line's text against the stream's
 * bytes at its offset. */
static void
feed_chunks(Raws *out, const char *stream, size_t len, uint64_t base, size_t step,
            size_t line_max)
{
  Linebuf lb;
  linebuf_init(&lb, line_max);
  lb.offset = base;
  memset(out, 0, sizeof *out);
  for (size_t at = 0; at < len; at += step)
    linebuf_feed(&lb, stream + at, len - at < step ? len - at : step, raws_line, out);
  linebuf_finish(&lb, raws_line, out);
  CHECK_INT(lb.offset, base + len);
  for (size_t i = 0; i < out->n; i++) {
    if (!out->raw[i])
      continue;
    CHECK(out->offset[i] >= base && out->offset[i] - base + out->len[i] <= len);
    CHECK_MEM(stream + (out->offset[i] - base), out->len[i], out->text[i]);
  }
  linebuf_free(&lb);
}

TEST(plain_lines_are_raw_at_their_offsets_however_chunked)
{
  const char *s = "one\ntwo\r\n\nthree is longer\nfour";
  for (size_t step = 1; step <= strlen(s); step++) {
    Raws r;
    feed_chunks(&r, s, strlen(s), 1000, step, 256);
    CHECK_INT(r.n, 5);
    CHECK_STR(r.text[1], "two"); /* the CR of a CRLF is not part of the text */
    CHECK(r.raw[0] && r.raw[1] && r.raw[2] && r.raw[3] && r.raw[4]);
    CHECK_INT(r.offset[0], 1000);
    CHECK_INT(r.offset[1], 1004);
    CHECK_INT(r.offset[2], 1009);
    CHECK_INT(r.offset[3], 1010);
    CHECK_INT(r.offset[4], 1026); /* the unterminated last line, at finish */
  }
}

TEST(valid_utf8_is_raw_and_repaired_lines_are_not)
{
  const char *s = "caf\xC3\xA9 ok\n"
                  "\x1B[31mred\x1B[0m\n"
                  "nul\0here\n"
                  "bad \xFF byte\n"
                  "\xE2\x82\xAC euro\n";
  size_t len = 9 + 13 + 9 + 11 + 9;
  for (size_t step = 1; step <= len; step += 3) {
    Raws r;
    feed_chunks(&r, s, len, 0, step, 256);
    CHECK_INT(r.n, 5);
    CHECK(r.raw[0]);
    CHECK(!r.raw[1]); /* escapes removed */
    CHECK(!r.raw[2]); /* NUL replaced */
    CHECK(!r.raw[3]); /* invalid UTF-8 replaced */
    CHECK(r.raw[4]);
    CHECK_INT(r.offset[4], len - 9);
  }
}

TEST(a_cut_line_is_not_raw)
{
  char s[700];
  memset(s, 'x', 600);
  s[600] = '\n';
  memcpy(s + 601, "after\n", 6);
  for (size_t step = 1; step <= 607; step += 50) {
    Raws r;
    feed_chunks(&r, s, 607, 7, step, 256);
    CHECK_INT(r.n, 2);
    CHECK(!r.raw[0]);
    CHECK(r.raw[1]);
    CHECK_INT(r.offset[1], 7 + 601);
  }
}

TEST(an_owner_may_move_the_offset_between_feeds)
{
  /* A restart resumes a stream mid-way: the owner says where. */
  Linebuf lb;
  linebuf_init(&lb, 256);
  Raws r;
  memset(&r, 0, sizeof r);
  lb.offset = 5000;
  linebuf_feed(&lb, "abc\nde", 6, raws_line, &r);
  CHECK_INT(lb.offset, 5006);
  linebuf_feed(&lb, "f\n", 2, raws_line, &r);
  CHECK_INT(r.n, 2);
  CHECK_INT(r.offset[0], 5000);
  CHECK_INT(r.offset[1], 5004); /* held across the two feeds */
  CHECK_STR(r.text[1], "def");
  CHECK(r.raw[1]);
  linebuf_free(&lb);
}

int
main(void)
{
  RUN(plain_lines_are_raw_at_their_offsets_however_chunked);
  RUN(valid_utf8_is_raw_and_repaired_lines_are_not);
  RUN(a_cut_line_is_not_raw);
  RUN(an_owner_may_move_the_offset_between_feeds);
  return check_summary();
}
