/*
 * Tests of the raw byte capture: what monitor_logs would return for a given
 * offset after the stream wrote, wrapped and evicted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/capture.h"
#include "check.h"
#include "base/memory.h"
#include "pipeline/spool.h"

/* Joins the two spans of a read into a NUL-terminated copy. */
static char *
span_join(CaptureSpan s)
{
  char *out = xmalloc(s.n1 + s.n2 + 1);
  if (s.n1)
    memcpy(out, s.p1, s.n1);
  if (s.n2)
    memcpy(out + s.n1, s.p2, s.n2);
  out[s.n1 + s.n2] = '\0';
  return out;
}

/* Reads and joins in one step. */
static char *
read_str(const Capture *c, uint64_t offset, uint64_t limit, CaptureSpan *span)
{
  *span = capture_read(c, offset, limit);
  return span_join(*span);
}

TEST(empty_capture)
{
  Capture c;
  capture_init(&c, 4096);
  CaptureSpan s = capture_read(&c, 0, UINT64_MAX);
  CHECK_INT(s.n1 + s.n2, 0);
  CHECK(!s.truncated);
  CHECK_INT(capture_start(&c), 0);
  CHECK(c.buf == NULL); /* a quiet stream allocates nothing */
  capture_write(&c, "", 0);
  CHECK(c.buf == NULL);
  capture_free(&c);
}

TEST(writes_read_back_with_offsets)
{
  Capture c;
  capture_init(&c, 4096);
  capture_write(&c, "hello ", 6);
  capture_write(&c, "world\n", 6);
  CHECK_INT(c.total, 12);
  CaptureSpan s;
  char *all = read_str(&c, 0, UINT64_MAX, &s);
  CHECK_STR(all, "hello world\n");
  CHECK_INT(s.offset, 0);
  CHECK(!s.truncated);
  free(all);
  char *mid = read_str(&c, 6, 5, &s);
  CHECK_STR(mid, "world");
  CHECK_INT(s.offset, 6);
  free(mid);
  /* At or past the end: nothing, and not truncated. */
  s = capture_read(&c, 12, UINT64_MAX);
  CHECK_INT(s.n1 + s.n2, 0);
  CHECK(!s.truncated);
  s = capture_read(&c, 1000, UINT64_MAX);
  CHECK_INT(s.n1 + s.n2, 0);
  CHECK(!s.truncated);
  s = capture_read(&c, 0, 0);
  CHECK_INT(s.n1 + s.n2, 0);
  capture_free(&c);
}

TEST(grows_from_small_to_max)
{
  Capture c;
  capture_init(&c, 1 << 20);
  capture_write(&c, "x", 1);
  CHECK(c.cap <= 4096); /* starts small */
  char block[1000];
  for (int i = 0; i < 100; i++) {
    memset(block, 'a' + i % 26, sizeof block);
    capture_write(&c, block, sizeof block);
  }
  CHECK_INT(c.total, 100001);
  CHECK_INT(c.evicted, 0);
  CHECK(c.cap >= 100001 && c.cap <= (1 << 20));
  CaptureSpan s = capture_read(&c, 1 + 57 * 1000, 1000);
  CHECK_INT(s.n1 + s.n2, 1000);
  CHECK(s.p1[0] == 'a' + 57 % 26 && s.p1[999 - s.n2] == 'a' + 57 % 26);
  capture_free(&c);
}

TEST(wraparound_evicts_oldest)
{
  Capture c;
  capture_init(&c, 10);
  capture_write(&c, "0123456", 7);
  capture_write(&c, "789ABC", 6); /* 3 bytes evicted, storage wraps */
  CHECK_INT(c.total, 13);
  CHECK_INT(c.evicted, 3);
  CHECK_INT(capture_start(&c), 3);
  CaptureSpan s;
  char *all = read_str(&c, 0, UINT64_MAX, &s);
  CHECK_STR(all, "3456789ABC");
  CHECK(s.truncated);
  CHECK_INT(s.offset, 3);
  CHECK(s.n2 > 0); /* the read really crosses the wrap */
  free(all);
  /* Exactly the oldest kept byte is not truncated. */
  char *from3 = read_str(&c, 3, UINT64_MAX, &s);
  CHECK_STR(from3, "3456789ABC");
  CHECK(!s.truncated);
  free(from3);
  /* A window across the wrap, and one after it. */
  char *win = read_str(&c, 8, 4, &s);
  CHECK_STR(win, "89AB");
  free(win);
  char *tail = read_str(&c, 11, UINT64_MAX, &s);
  CHECK_STR(tail, "BC");
  CHECK_INT(s.offset, 11);
  free(tail);
  capture_free(&c);
}

TEST(huge_single_write_keeps_its_end)
{
  Capture c;
  capture_init(&c, 10);
  capture_write(&c, "abc", 3);
  capture_write(&c, "0123456789ABCDEFGHIJ", 20);
  CHECK_INT(c.total, 23);
  CHECK_INT(c.evicted, 13); /* "abc" and the write's first 10 bytes */
  CaptureSpan s;
  char *all = read_str(&c, 0, UINT64_MAX, &s);
  CHECK_STR(all, "ABCDEFGHIJ");
  CHECK(s.truncated);
  CHECK_INT(s.offset, 13);
  free(all);
  capture_write(&c, "xy", 2);
  char *after = read_str(&c, 13, UINT64_MAX, &s);
  CHECK_STR(after, "CDEFGHIJxy");
  CHECK(s.truncated);
  CHECK_INT(c.evicted, 15);
  free(after);
  capture_free(&c);
}

TEST(write_of_exactly_max)
{
  Capture c;
  capture_init(&c, 8);
  capture_write(&c, "12345678", 8);
  CHECK_INT(c.evicted, 0);
  CaptureSpan s;
  char *all = read_str(&c, 0, UINT64_MAX, &s);
  CHECK_STR(all, "12345678");
  CHECK(!s.truncated);
  free(all);
  capture_free(&c);
}

/* A tiny deterministic generator, so failures reproduce. */
static uint32_t
rnd(uint64_t *state)
{
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*state >> 33);
}

TEST(matches_a_full_copy_over_many_writes)
{
  /* Keep everything written in a plain array and compare every read, with
   * a cap that makes the buffer grow and then wrap many times. */
  const size_t max = 5000;
  const size_t total = 300000;
  char *ref = xmalloc(total);
  uint64_t state = 7;
  for (size_t i = 0; i < total; i++)
    ref[i] = (char)rnd(&state);
  Capture c;
  capture_init(&c, max);
  size_t written = 0;
  while (written < total) {
    size_t n = rnd(&state) % 1500;
    if (rnd(&state) % 50 == 0)
      n = max + rnd(&state) % 3000; /* now and then, more than fits */
    if (n > total - written)
      n = total - written;
    capture_write(&c, ref + written, n);
    written += n;
    CHECK_INT(c.total, written);
    size_t kept = written < max ? written : max;
    CHECK_INT(capture_start(&c), written - kept);
    CHECK_INT(c.evicted, written - kept);
    uint64_t off = written ? rnd(&state) % (written + 10) : 0;
    uint64_t limit = rnd(&state) % 4 == 0 ? UINT64_MAX : rnd(&state) % 6000;
    CaptureSpan s = capture_read(&c, off, limit);
    uint64_t start = written - kept;
    uint64_t want_off = off < start ? start : off;
    uint64_t want_n = want_off >= written ? 0 : written - want_off;
    if (want_n > limit)
      want_n = limit;
    CHECK_INT(s.truncated, off < start);
    CHECK_INT(s.n1 + s.n2, want_n);
    if (want_n > 0) {
      CHECK_INT(s.offset, want_off);
      CHECK(memcmp(s.p1, ref + want_off, s.n1) == 0);
      if (s.n2)
        CHECK(memcmp(s.p2, ref + want_off + s.n1, s.n2) == 0);
    }
    if (check_failures_in_test)
      break;
  }
  CHECK(c.cap == max);
  capture_free(&c);
  free(ref);
}


/* A capture that has bytes already is given a spool (capture.h: only on an
 * empty capture, since those bytes would be lost uncounted). */
static void
capture_spool_after_bytes(void *arg)
{
  (void)arg;
  Capture c;
  capture_init(&c, 64);
  capture_write(&c, "abc", 3);
  Spool sp;
  memset(&sp, 0, sizeof sp);
  capture_use_spool(&c, &sp);
}

TEST(a_broken_precondition_ends_the_process_by_its_assert)
{
  CHECK_ABORTS(capture_spool_after_bytes, NULL);
}

int
main(void)
{
  RUN(empty_capture);
  RUN(writes_read_back_with_offsets);
  RUN(grows_from_small_to_max);
  RUN(wraparound_evicts_oldest);
  RUN(huge_single_write_keeps_its_end);
  RUN(write_of_exactly_max);
  RUN(matches_a_full_copy_over_many_writes);
  RUN(a_broken_precondition_ends_the_process_by_its_assert);
  return check_summary();
}
