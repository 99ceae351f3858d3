/*
 * Tests of the line splitter: what an agent would see of a stream's lines
 * however the bytes were chunked, including cut, binary, coloured and
 * malformed lines; and that its AVX2 and SSE2 splitters hand on the same
 * lines, copied or not alike, at every alignment (ctest also runs the whole
 * file with VIGIL_LINEBUF_NO_AVX2).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/linebuf.h"
#include "base/memory.h"
#include "utf8check.h"

/* Everything the splitter handed on, copied out of the callback. */
typedef struct {
  char *text;        /* NUL-terminated copy */
  size_t len;
  unsigned flags;
  const char *orig;  /* Line.text as passed, to see where it pointed */
} Got;

typedef struct {
  Got *lines;
  size_t n;
  size_t cap;
} Collect;

static void
collect_line(void *ctx, const Line *line)
{
  Collect *c = ctx;
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 16;
    c->lines = xrealloc(c->lines, c->cap * sizeof *c->lines);
  }
  Got *g = &c->lines[c->n++];
  g->text = xmemdupz(line->text, line->len);
  g->len = line->len;
  g->flags = line->flags;
  g->orig = line->text;
}

static void
collect_free(Collect *c)
{
  for (size_t i = 0; i < c->n; i++)
    free(c->lines[i].text);
  free(c->lines);
  memset(c, 0, sizeof *c);
}

/* Feeds s in chunks of `chunk` bytes (0: all at once), then finishes. */
static void
feed_all(Linebuf *lb, const char *s, size_t len, size_t chunk, Collect *c)
{
  if (chunk == 0)
    chunk = len ? len : 1;
  for (size_t off = 0; off < len; off += chunk) {
    size_t n = len - off < chunk ? len - off : chunk;
    /* A fresh copy per chunk: the splitter may not keep pointers into it. */
    char *copy = xmalloc(n);
    memcpy(copy, s + off, n);
    linebuf_feed(lb, copy, n, collect_line, c);
    memset(copy, 'Z', n);
    free(copy);
  }
  linebuf_finish(lb, collect_line, c);
}

/* Splits s with line_max and chunk size; c is filled and the Linebuf freed
 * (its counters are copied to *out when out is given). */
static void
split(const char *s, size_t len, size_t line_max, size_t chunk, Collect *c, Linebuf *out)
{
  Linebuf lb;
  linebuf_init(&lb, line_max);
  feed_all(&lb, s, len, chunk, c);
  linebuf_free(&lb);
  if (out)
    *out = lb;
}

#define SPLIT(lit, line_max, chunk, c) split(lit, sizeof(lit) - 1, line_max, chunk, c, NULL)

TEST(lf_lines)
{
  Collect c = {0};
  SPLIT("first\nsecond\nthird\n", 8192, 0, &c);
  CHECK_INT(c.n, 3);
  if (c.n == 3) {
    CHECK_STR(c.lines[0].text, "first");
    CHECK_STR(c.lines[1].text, "second");
    CHECK_STR(c.lines[2].text, "third");
    CHECK_INT(c.lines[2].flags, 0);
  }
  collect_free(&c);
}

TEST(crlf_drops_one_cr)
{
  Collect c = {0};
  SPLIT("dos line\r\nnext\r\ntwo crs\r\r\n", 8192, 0, &c);
  CHECK_INT(c.n, 3);
  if (c.n == 3) {
    CHECK_STR(c.lines[0].text, "dos line");
    CHECK_STR(c.lines[1].text, "next");
    CHECK_MEM(c.lines[2].text, c.lines[2].len, "two crs\r");
  }
  collect_free(&c);
}

TEST(crlf_split_between_chunks)
{
  Collect c = {0};
  SPLIT("abc\r\ndef\r\n", 8192, 4, &c); /* "abc\r" | "\ndef" | "\r\n" */
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_STR(c.lines[0].text, "abc");
    CHECK_STR(c.lines[1].text, "def");
  }
  collect_free(&c);
}

TEST(lone_cr_kept_mid_line)
{
  Collect c = {0};
  SPLIT("progress 10%\rprogress 100%\n", 8192, 0, &c);
  CHECK_INT(c.n, 1);
  if (c.n == 1)
    CHECK_MEM(c.lines[0].text, c.lines[0].len, "progress 10%\rprogress 100%");
  collect_free(&c);
}

TEST(partial_line_held_across_chunks)
{
  Linebuf lb;
  Collect c = {0};
  linebuf_init(&lb, 8192);
  linebuf_feed(&lb, "hel", 3, collect_line, &c);
  CHECK_INT(c.n, 0);
  linebuf_feed(&lb, "lo\nwor", 6, collect_line, &c);
  CHECK_INT(c.n, 1);
  linebuf_feed(&lb, "ld\n", 3, collect_line, &c);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_STR(c.lines[0].text, "hello");
    CHECK_STR(c.lines[1].text, "world");
    CHECK_INT(c.lines[1].flags, 0);
  }
  linebuf_finish(&lb, collect_line, &c);
  CHECK_INT(c.n, 2); /* nothing held: finish hands on nothing */
  CHECK_INT(lb.lines, 2);
  linebuf_free(&lb);
  collect_free(&c);
}

TEST(one_byte_chunks_same_as_whole)
{
  static const char text[] =
      "plain\n\x1b[1;32mgreen\x1b[0m\r\n\xC3\xA9t\xC3\xA9\n\xF0\x9F\x98\x80 smile\n"
      "bad \xE2\x82 seq\n\nnul\0here\n\x1b]0;title\x07shown\nlast no newline";
  Collect whole = {0}, bytes = {0};
  split(text, sizeof text - 1, 8192, 0, &whole, NULL);
  split(text, sizeof text - 1, 8192, 1, &bytes, NULL);
  CHECK_INT(whole.n, 9);
  CHECK_INT(bytes.n, whole.n);
  for (size_t i = 0; i < whole.n && i < bytes.n; i++) {
    CHECK_MEM(bytes.lines[i].text, bytes.lines[i].len, whole.lines[i].text);
    CHECK_INT(bytes.lines[i].flags, whole.lines[i].flags);
  }
  if (whole.n == 9) {
    CHECK_STR(whole.lines[1].text, "green");
    CHECK_STR(whole.lines[2].text, "\xC3\xA9t\xC3\xA9");
    CHECK_STR(whole.lines[3].text, "\xF0\x9F\x98\x80 smile");
    CHECK_STR(whole.lines[4].text, "bad \xEF\xBF\xBD seq");
    CHECK_STR(whole.lines[5].text, "");
    CHECK_INT(whole.lines[6].flags, kLineBinary);
    CHECK_STR(whole.lines[7].text, "shown");
    CHECK_STR(whole.lines[8].text, "last no newline");
    CHECK_INT(whole.lines[8].flags, kLineUnterminated);
  }
  collect_free(&whole);
  collect_free(&bytes);
}

TEST(finish_hands_on_partial_line)
{
  Collect c = {0};
  Linebuf lb;
  split("done\nPassword: ", 15, 8192, 0, &c, &lb);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_STR(c.lines[1].text, "Password: ");
    CHECK_INT(c.lines[1].flags, kLineUnterminated);
    CHECK_INT(c.lines[0].flags, 0);
  }
  CHECK_INT(lb.lines, 2);
  collect_free(&c);
  /* With no newline at all, the CR of the last line is not a line ending. */
  SPLIT("ends in cr\r", 8192, 0, &c);
  CHECK_INT(c.n, 1);
  if (c.n == 1)
    CHECK_MEM(c.lines[0].text, c.lines[0].len, "ends in cr\r");
  collect_free(&c);
}

TEST(empty_lines)
{
  Collect c = {0};
  SPLIT("\n\r\n\nx\n\n", 8192, 0, &c);
  CHECK_INT(c.n, 5);
  if (c.n == 5) {
    CHECK_INT(c.lines[0].len, 0);
    CHECK_INT(c.lines[1].len, 0);
    CHECK_INT(c.lines[2].len, 0);
    CHECK_STR(c.lines[3].text, "x");
    CHECK_INT(c.lines[4].len, 0);
  }
  collect_free(&c);
}

/* A 100 KB line then a short one, fed with the given chunk size. */
static void
check_long_line(size_t chunk)
{
  size_t big = 100 * 1024;
  char *s = xmalloc(big + 16);
  for (size_t i = 0; i < big; i++)
    s[i] = (char)('a' + i % 26);
  memcpy(s + big, "\nnext line\n", 11);
  Collect c = {0};
  Linebuf lb;
  split(s, big + 11, 8192, chunk, &c, &lb);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_INT(c.lines[0].len, 8192);
    CHECK(memcmp(c.lines[0].text, s, 8192) == 0);
    CHECK_INT(c.lines[0].flags, kLineTruncated);
    CHECK_STR(c.lines[1].text, "next line");
    CHECK_INT(c.lines[1].flags, 0);
  }
  CHECK_INT(lb.truncated_lines, 1);
  CHECK_INT(lb.discarded_bytes, 100 * 1024 - 8192);
  CHECK_INT(lb.lines, 2);
  collect_free(&c);
  free(s);
}

TEST(long_line_cut_in_one_chunk)
{
  check_long_line(0);
}

TEST(long_line_cut_in_4k_chunks)
{
  check_long_line(4096);
}

TEST(long_line_cut_in_odd_chunks)
{
  check_long_line(4099);
  check_long_line(1);
}

TEST(long_unterminated_line_at_finish)
{
  size_t big = 20000;
  char *s = xmalloc(big);
  memset(s, 'x', big);
  Collect c = {0};
  Linebuf lb;
  split(s, big, 8192, 4096, &c, &lb);
  CHECK_INT(c.n, 1);
  if (c.n == 1) {
    CHECK_INT(c.lines[0].len, 8192);
    CHECK_INT(c.lines[0].flags, kLineTruncated | kLineUnterminated);
  }
  CHECK_INT(lb.discarded_bytes, big - 8192);
  CHECK_INT(lb.truncated_lines, 1);
  collect_free(&c);
  free(s);
}

TEST(cut_inside_multibyte_character)
{
  /* 9 ASCII bytes then "é" (2 bytes): a cut at 10 would split the é. */
  for (size_t chunk = 0; chunk <= 5; chunk++) {
    Collect c = {0};
    Linebuf lb;
    split("aaaaaaaaa\xC3\xA9" "bbb\nok\n", 18, 10, chunk, &c, &lb);
    CHECK_INT(c.n, 2);
    if (c.n == 2) {
      CHECK_STR(c.lines[0].text, "aaaaaaaaa");
      CHECK_INT(c.lines[0].flags, kLineTruncated);
      CHECK_STR(c.lines[1].text, "ok");
    }
    CHECK_INT(lb.discarded_bytes, 5);
    collect_free(&c);
  }
  /* A 4-byte character straddling the cut, and one ending exactly on it. */
  Collect c = {0};
  SPLIT("12345678\xF0\x9F\x98\x80xyz\n1234567\xE2\x82\xAC!\n", 10, 0, &c);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_STR(c.lines[0].text, "12345678");
    CHECK_STR(c.lines[1].text, "1234567\xE2\x82\xAC");
    CHECK_INT(c.lines[1].flags, kLineTruncated);
  }
  collect_free(&c);
}

TEST(crlf_line_of_exactly_line_max_is_not_cut)
{
  for (size_t chunk = 0; chunk <= 11; chunk++) {
    Collect c = {0};
    Linebuf lb;
    split("0123456789\r\n0123456789A\r\n", 25, 10, chunk, &c, &lb);
    CHECK_INT(c.n, 2);
    if (c.n == 2) {
      CHECK_STR(c.lines[0].text, "0123456789");
      CHECK_INT(c.lines[0].flags, 0);
      CHECK_STR(c.lines[1].text, "0123456789");
      CHECK_INT(c.lines[1].flags, kLineTruncated);
    }
    CHECK_INT(lb.discarded_bytes, 2); /* "A" and the CR past the cut */
    collect_free(&c);
  }
}

TEST(nul_is_replaced_and_marks_binary)
{
  Collect c = {0};
  SPLIT("a\0b\nclean\n", 8192, 0, &c);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_MEM(c.lines[0].text, c.lines[0].len, "a\xEF\xBF\xBD" "b");
    CHECK_INT(c.lines[0].flags, kLineBinary);
    CHECK_INT(c.lines[1].flags, 0);
  }
  collect_free(&c);
}

TEST(ansi_colours_removed)
{
  Collect c = {0};
  SPLIT("\x1b[31mError:\x1b[0m boom\n"
        "\x1b[1;38;5;196mbold\x1b[m \x1b[?25lcursor\x1b(B\x1b[m end\n"
        "\x1b" "7saved\x1b" "8 \x1b=keypad\n"
        "trailing esc\x1b\n",
        8192, 0, &c);
  CHECK_INT(c.n, 4);
  if (c.n == 4) {
    CHECK_STR(c.lines[0].text, "Error: boom");
    CHECK_STR(c.lines[1].text, "bold cursor end");
    CHECK_STR(c.lines[2].text, "saved keypad");
    CHECK_STR(c.lines[3].text, "trailing esc");
    for (size_t i = 0; i < c.n; i++)
      CHECK_INT(c.lines[i].flags, 0);
  }
  collect_free(&c);
}

TEST(osc_title_removed)
{
  Collect c = {0};
  SPLIT("\x1b]0;my window title\x07visible\n"
        "\x1b]2;title\x1b\\after st\n"
        "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ text\n"
        "cut \x1b]0;never ends\n",
        8192, 0, &c);
  CHECK_INT(c.n, 4);
  if (c.n == 4) {
    CHECK_STR(c.lines[0].text, "visible");
    CHECK_STR(c.lines[1].text, "after st");
    CHECK_STR(c.lines[2].text, "link text");
    CHECK_STR(c.lines[3].text, "cut ");
  }
  collect_free(&c);
}

TEST(invalid_utf8_replaced_per_maximal_subpart)
{
  static const struct {
    const char *in;
    const char *out;
  } cases[] = {
      {"\x80", "\xEF\xBF\xBD"},                                   /* stray continuation */
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                   /* overlong lead */
      {"\xE0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},   /* overlong */
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},   /* surrogate */
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* > U+10FFFF */
      {"\xF5\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"\xE2\x82", "\xEF\xBF\xBD"},                               /* truncated at the end */
      {"\xE2\x82" "A", "\xEF\xBF\xBD" "A"},                       /* truncated mid-line */
      {"\xF0\x9F\x98" "x", "\xEF\xBF\xBD" "x"},
      {"\xFF\xFE", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      /* The example of Unicode 15, table 3-8. */
      {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
       "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d"},
      /* Valid text passes untouched. */
      {"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9D\x84\x9E \xF4\x8F\xBF\xBF \xED\x9F\xBF",
       "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9D\x84\x9E \xF4\x8F\xBF\xBF \xED\x9F\xBF"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i].in);
    char *out = xmalloc(linebuf_sanitized_max(len));
    unsigned flags = 0;
    size_t n = linebuf_sanitize(cases[i].in, len, out, &flags);
    CHECK_MEM(out, n, cases[i].out);
    CHECK(test_utf8_valid(out, n));
    CHECK_INT(flags, 0);
    free(out);
  }
}

/* A tiny deterministic generator, so failures reproduce. */
static uint32_t
rnd(uint64_t *state)
{
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*state >> 33);
}

TEST(random_bytes_give_valid_utf8_without_esc)
{
  uint64_t state = 42;
  static const char alphabet[] = "\x1b[]\x07\\;0m\r\n\0\x80\xBF\xC3\xE2\xF0\xF4\xED\xA0xyz";
  for (int round = 0; round < 200; round++) {
    size_t len = rnd(&state) % 3000;
    char *s = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++)
      s[i] = (rnd(&state) & 1) ? (char)rnd(&state) : alphabet[rnd(&state) % (sizeof alphabet - 1)];
    size_t line_max = 16 + rnd(&state) % 300;
    Collect c = {0};
    split(s, len, line_max, 1 + rnd(&state) % 97, &c, NULL);
    for (size_t i = 0; i < c.n; i++) {
      CHECK(test_utf8_valid(c.lines[i].text, c.lines[i].len));
      CHECK(memchr(c.lines[i].text, 0x1B, c.lines[i].len) == NULL);
      CHECK(memchr(c.lines[i].text, '\n', c.lines[i].len) == NULL);
      CHECK(c.lines[i].len <= linebuf_sanitized_max(line_max));
    }
    /* Chunking never changes what comes out. */
    Collect whole = {0};
    split(s, len, line_max, 0, &whole, NULL);
    CHECK_INT(whole.n, c.n);
    for (size_t i = 0; i < c.n && i < whole.n; i++) {
      CHECK_INT(whole.lines[i].len, c.lines[i].len);
      CHECK(memcmp(whole.lines[i].text, c.lines[i].text, c.lines[i].len) == 0);
      CHECK_INT(whole.lines[i].flags, c.lines[i].flags);
    }
    collect_free(&whole);
    collect_free(&c);
    free(s);
  }
}

/* Feeds s (from a buffer at offset align) whole, noting for each line
 * whether it was handed on in place (a pointer into the buffer). */
static void
split_in_place(const char *s, size_t len, size_t align, size_t line_max, Collect *c,
               bool *in_place, size_t cap)
{
  char *buf = xmalloc(len + align + 1);
  memcpy(buf + align, s, len);
  Linebuf lb;
  linebuf_init(&lb, line_max);
  linebuf_feed(&lb, buf + align, len, collect_line, c);
  for (size_t i = 0; i < c->n && i < cap; i++)
    in_place[i] = c->lines[i].orig >= buf + align && c->lines[i].orig < buf + align + len;
  linebuf_finish(&lb, collect_line, c);
  linebuf_free(&lb);
  free(buf);
}

TEST(the_avx2_and_sse2_splitters_agree)
{
  bool had_avx2 = linebuf_use_avx2(1);
  if (!had_avx2) {
    printf("  (no AVX2 on this machine: the SSE2 splitter alone is tested)\n");
    linebuf_use_avx2(-1);
    return;
  }
  uint64_t state = 7;
  /* Newlines dense and sparse, special bytes (ESC, NUL, >= 0x80) now and
   * then, lines shorter and longer than a 64-byte block. */
  static const char alphabet[] = "\n\n\x1b\x80\xC3\xA9\0abcdefghijklmnopqrstuvwxyz0123456789 ";
  for (int round = 0; round < 400; round++) {
    size_t len = rnd(&state) % 700;
    char *s = xmalloc(len + 1);
    unsigned density = 1 + (unsigned)(rnd(&state) % 6);
    for (size_t i = 0; i < len; i++) {
      uint64_t r = rnd(&state);
      s[i] = (r % (density * 16)) == 0 ? '\n'
             : (r % 97) == 1           ? alphabet[rnd(&state) % 7 + 2]
                                       : alphabet[7 + rnd(&state) % (sizeof alphabet - 8)];
    }
    size_t align = (size_t)round % 64;
    size_t line_max = 8 + rnd(&state) % 200;
    enum { CAP = 1024 };
    static bool place_avx2[CAP], place_sse2[CAP];
    Collect a = {0}, b = {0};
    linebuf_use_avx2(1);
    split_in_place(s, len, align, line_max, &a, place_avx2, CAP);
    linebuf_use_avx2(0);
    split_in_place(s, len, align, line_max, &b, place_sse2, CAP);
    CHECK_INT(a.n, b.n);
    for (size_t i = 0; i < a.n && i < b.n; i++) {
      CHECK_INT(a.lines[i].len, b.lines[i].len);
      CHECK(memcmp(a.lines[i].text, b.lines[i].text, a.lines[i].len) == 0);
      CHECK_INT(a.lines[i].flags, b.lines[i].flags);
      if (i < CAP)
        CHECK(place_avx2[i] == place_sse2[i]);
    }
    collect_free(&a);
    collect_free(&b);
    free(s);
  }
  linebuf_use_avx2(-1);
}

TEST(plain_line_is_not_copied)
{
  static const char input[] = "2026-04-24 INFO plain ascii line\nsecond one\npartial";
  Linebuf lb;
  Collect c = {0};
  linebuf_init(&lb, 8192);
  linebuf_feed(&lb, input, sizeof input - 1, collect_line, &c);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK(c.lines[0].orig == input);
    CHECK(c.lines[1].orig == input + 33);
    CHECK_STR(c.lines[1].text, "second one");
  }
  CHECK(lb.scratch == NULL); /* nothing was sanitized */
  linebuf_finish(&lb, collect_line, &c);
  CHECK_INT(c.n, 3);
  linebuf_free(&lb);
  collect_free(&c);
}

TEST(special_line_is_copied_and_neighbours_are_not)
{
  static const char input[] = "before\n\x1b[1mbold\x1b[0m\nafter\n";
  Linebuf lb;
  Collect c = {0};
  linebuf_init(&lb, 8192);
  linebuf_feed(&lb, input, sizeof input - 1, collect_line, &c);
  CHECK_INT(c.n, 3);
  if (c.n == 3) {
    CHECK(c.lines[0].orig == input);
    CHECK(c.lines[1].orig == lb.scratch);
    CHECK_STR(c.lines[1].text, "bold");
    CHECK(c.lines[2].orig == input + sizeof input - 7);
    CHECK_STR(c.lines[2].text, "after");
  }
  linebuf_free(&lb);
  collect_free(&c);
}

TEST(sanitize_helper)
{
  char out[64];
  unsigned flags = 0;
  size_t n = linebuf_sanitize("\x1b[32mok\x1b[0m\0", 12, out, &flags);
  CHECK_MEM(out, n, "ok\xEF\xBF\xBD");
  CHECK_INT(flags, kLineBinary);
  CHECK_INT(linebuf_sanitized_max(10), 30);
  flags = 0;
  n = linebuf_sanitize("", 0, out, &flags);
  CHECK_INT(n, 0);
  CHECK_INT(flags, 0);
}

int
main(void)
{
  RUN(lf_lines);
  RUN(crlf_drops_one_cr);
  RUN(crlf_split_between_chunks);
  RUN(lone_cr_kept_mid_line);
  RUN(partial_line_held_across_chunks);
  RUN(one_byte_chunks_same_as_whole);
  RUN(finish_hands_on_partial_line);
  RUN(empty_lines);
  RUN(long_line_cut_in_one_chunk);
  RUN(long_line_cut_in_4k_chunks);
  RUN(long_line_cut_in_odd_chunks);
  RUN(long_unterminated_line_at_finish);
  RUN(cut_inside_multibyte_character);
  RUN(crlf_line_of_exactly_line_max_is_not_cut);
  RUN(nul_is_replaced_and_marks_binary);
  RUN(ansi_colours_removed);
  RUN(osc_title_removed);
  RUN(invalid_utf8_replaced_per_maximal_subpart);
  RUN(random_bytes_give_valid_utf8_without_esc);
  RUN(the_avx2_and_sse2_splitters_agree);
  RUN(plain_line_is_not_copied);
  RUN(special_line_is_copied_and_neighbours_are_not);
  RUN(sanitize_helper);
  return check_summary();
}
