/*
 * Tests of the line ring: what monitor_output would return (filters,
 * since_sequence, limit), eviction by either cap with dropped counts, and
 * text that stays intact however often the arena wraps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/linebuf.h"
#include "base/memory.h"
#include "proc/proc.h"
#include "pipeline/ring.h"

/* The lines a query visited, copied out. */
typedef struct {
  uint64_t seq[256];
  int stream[256];
  int pattern[256];
  unsigned flags[256];
  char *text[256];
  size_t n;
} Seen;

static void
seen_visit(void *ctx, const RingLine *line)
{
  Seen *s = ctx;
  if (s->n == 256)
    return;
  s->seq[s->n] = line->seq;
  s->stream[s->n] = line->stream;
  s->pattern[s->n] = line->pattern;
  s->flags[s->n] = line->flags;
  s->text[s->n] = xmemdupz(line->text, line->len);
  s->n++;
}

static void
seen_free(Seen *s)
{
  for (size_t i = 0; i < s->n; i++)
    free(s->text[i]);
  s->n = 0;
}

/* Runs a query and returns the seqs seen as "1,2,3" in buf. */
static const char *
query_seqs(const Ring *r, RingFilter filter, uint64_t since, size_t limit, char *buf,
           size_t size)
{
  Seen s = {0};
  size_t n = ring_query(r, filter, since, limit, seen_visit, &s);
  CHECK_INT(n, s.n);
  buf[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < s.n; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%llu", i ? "," : "",
                             (unsigned long long)s.seq[i]);
  seen_free(&s);
  return buf;
}

static void
push_str(Ring *r, int stream, const char *text, int pattern)
{
  ring_push(r, stream, text, strlen(text), pattern, 0);
}

TEST(empty_ring)
{
  Ring r;
  ring_init(&r, 10, 4096);
  RingLine last = ring_last(&r);
  CHECK(last.text == NULL);
  char buf[256];
  CHECK_STR(query_seqs(&r, kRingAll, 0, 0, buf, sizeof buf), "");
  CHECK(r.entries == NULL && r.arena == NULL); /* nothing until the first line */
  ring_free(&r);
}

TEST(seq_shared_by_both_streams)
{
  Ring r;
  ring_init(&r, 10, 4096);
  CHECK_INT(ring_push(&r, kStreamStdout, "out one", 7, -1, 0), 1);
  CHECK_INT(ring_push(&r, kStreamStderr, "err one", 7, 0, 0), 2);
  CHECK_INT(ring_push(&r, kStreamStdout, "out two", 7, -1, kLineUnterminated), 3);
  Seen s = {0};
  CHECK_INT(ring_query(&r, kRingAll, 0, 0, seen_visit, &s), 3);
  if (s.n == 3) {
    CHECK_INT(s.seq[1], 2);
    CHECK_INT(s.stream[0], kStreamStdout);
    CHECK_INT(s.stream[1], kStreamStderr);
    CHECK_INT(s.pattern[1], 0);
    CHECK_INT(s.pattern[0], -1);
    CHECK_STR(s.text[1], "err one");
    CHECK_INT(s.flags[2], kLineUnterminated);
  }
  seen_free(&s);
  RingLine last = ring_last(&r);
  CHECK_INT(last.seq, 3);
  CHECK_MEM(last.text, last.len, "out two");
  CHECK_INT(r.counters.lines, 3);
  CHECK_INT(r.counters.matched, 1);
  CHECK_INT(r.counters.unmatched, 2);
  CHECK_INT(r.counters.dropped, 0);
  ring_free(&r);
}

TEST(line_cap_evicts_oldest)
{
  Ring r;
  ring_init(&r, 3, 4096);
  for (int i = 1; i <= 5; i++) {
    char text[16];
    snprintf(text, sizeof text, "line %d", i);
    push_str(&r, kStreamStdout, text, -1);
  }
  CHECK_INT(r.count, 3);
  CHECK_INT(r.counters.dropped, 2);
  CHECK_INT(r.counters.lines, 5);
  Seen s = {0};
  ring_query(&r, kRingAll, 0, 0, seen_visit, &s);
  CHECK_INT(s.n, 3);
  if (s.n == 3) {
    CHECK_INT(s.seq[0], 3);
    CHECK_STR(s.text[0], "line 3");
    CHECK_STR(s.text[2], "line 5");
  }
  seen_free(&s);
  ring_free(&r);
}

TEST(byte_cap_evicts_oldest)
{
  Ring r;
  ring_init(&r, 1000, 4096);
  char text[1000];
  for (int i = 0; i < 10; i++) {
    memset(text, 'a' + i, sizeof text);
    ring_push(&r, kStreamStderr, text, sizeof text, -1, 0);
    size_t live = 0;
    for (size_t j = 0; j < r.count; j++)
      live += r.entries[(r.head + j) % r.entries_cap].len;
    CHECK(live <= 4096);
  }
  CHECK(r.arena_cap == 4096);
  CHECK(r.count >= 3 && r.count <= 4);
  CHECK_INT(r.counters.dropped, 10 - r.count);
  Seen s = {0};
  ring_query(&r, kRingAll, 0, 0, seen_visit, &s);
  for (size_t i = 0; i < s.n; i++) {
    size_t n = strlen(s.text[i]);
    CHECK_INT(n, 1000);
    CHECK(s.text[i][0] == (char)('a' + s.seq[i] - 1) && s.text[i][999] == s.text[i][0]);
  }
  CHECK_INT(s.seq[s.n - 1], 10);
  seen_free(&s);
  ring_free(&r);
}

TEST(text_longer_than_max_bytes_is_cut)
{
  Ring r;
  ring_init(&r, 10, 4096);
  char *big = xmalloc(5000);
  memset(big, 'x', 5000);
  memcpy(big + 4095, "\xC3\xA9", 2); /* a character across the cut */
  push_str(&r, kStreamStdout, "small", -1);
  ring_push(&r, kStreamStdout, big, 5000, -1, 0);
  RingLine last = ring_last(&r);
  CHECK_INT(last.len, 4095);
  CHECK(last.flags & kLineTruncated);
  CHECK_INT(r.count, 1); /* the whole arena went to the long line */
  CHECK_INT(r.counters.dropped, 1);
  free(big);
  ring_free(&r);
}

TEST(empty_texts)
{
  Ring r;
  ring_init(&r, 4, 4096);
  for (int i = 0; i < 10; i++)
    ring_push(&r, kStreamStdout, "", 0, -1, 0);
  CHECK_INT(r.count, 4);
  CHECK_INT(r.counters.dropped, 6);
  RingLine last = ring_last(&r);
  CHECK(last.text != NULL);
  CHECK_INT(last.len, 0);
  CHECK_INT(last.seq, 10);
  ring_free(&r);
}

/* seq: 1 out, 2 err m0, 3 out m1, 4 err, 5 out, 6 err m0, 7 out */
static void
fill_mixed(Ring *r)
{
  ring_init(r, 100, 4096);
  push_str(r, kStreamStdout, "1", -1);
  push_str(r, kStreamStderr, "2", 0);
  push_str(r, kStreamStdout, "3", 1);
  push_str(r, kStreamStderr, "4", -1);
  push_str(r, kStreamStdout, "5", -1);
  push_str(r, kStreamStderr, "6", 0);
  push_str(r, kStreamStdout, "7", -1);
}

TEST(every_filter)
{
  Ring r;
  char buf[256];
  fill_mixed(&r);
  CHECK_STR(query_seqs(&r, kRingAll, 0, 0, buf, sizeof buf), "1,2,3,4,5,6,7");
  CHECK_STR(query_seqs(&r, kRingMatched, 0, 0, buf, sizeof buf), "2,3,6");
  CHECK_STR(query_seqs(&r, kRingUnmatched, 0, 0, buf, sizeof buf), "1,4,5,7");
  CHECK_STR(query_seqs(&r, kRingStdout, 0, 0, buf, sizeof buf), "1,3,5,7");
  CHECK_STR(query_seqs(&r, kRingStderr, 0, 0, buf, sizeof buf), "2,4,6");
  ring_free(&r);
}

TEST(since_seq_and_limit)
{
  Ring r;
  char buf[256];
  fill_mixed(&r);
  /* since: only later lines. */
  CHECK_STR(query_seqs(&r, kRingAll, 4, 0, buf, sizeof buf), "5,6,7");
  CHECK_STR(query_seqs(&r, kRingAll, 7, 0, buf, sizeof buf), "");
  CHECK_STR(query_seqs(&r, kRingAll, 100, 0, buf, sizeof buf), "");
  CHECK_STR(query_seqs(&r, kRingMatched, 2, 0, buf, sizeof buf), "3,6");
  /* limit: the most recent ones, still oldest first. */
  CHECK_STR(query_seqs(&r, kRingAll, 0, 2, buf, sizeof buf), "6,7");
  CHECK_STR(query_seqs(&r, kRingAll, 0, 7, buf, sizeof buf), "1,2,3,4,5,6,7");
  CHECK_STR(query_seqs(&r, kRingAll, 0, 50, buf, sizeof buf), "1,2,3,4,5,6,7");
  CHECK_STR(query_seqs(&r, kRingStdout, 0, 3, buf, sizeof buf), "3,5,7");
  CHECK_STR(query_seqs(&r, kRingMatched, 0, 1, buf, sizeof buf), "6");
  /* both: the most recent `limit` after since. */
  CHECK_STR(query_seqs(&r, kRingAll, 3, 2, buf, sizeof buf), "6,7");
  CHECK_STR(query_seqs(&r, kRingAll, 5, 5, buf, sizeof buf), "6,7");
  CHECK_STR(query_seqs(&r, kRingStderr, 1, 2, buf, sizeof buf), "4,6");
  CHECK_STR(query_seqs(&r, kRingStderr, 4, 2, buf, sizeof buf), "6");
  CHECK_STR(query_seqs(&r, kRingUnmatched, 6, 3, buf, sizeof buf), "7");
  CHECK_STR(query_seqs(&r, kRingMatched, 6, 3, buf, sizeof buf), "");
  ring_free(&r);
}

TEST(since_seq_older_than_the_ring)
{
  Ring r;
  char buf[256];
  ring_init(&r, 3, 4096);
  for (int i = 0; i < 8; i++)
    push_str(&r, i % 2 ? kStreamStderr : kStreamStdout, "x", -1);
  /* 1..5 were evicted: asking from 2 gives what is left. */
  CHECK_STR(query_seqs(&r, kRingAll, 2, 0, buf, sizeof buf), "6,7,8");
  CHECK_STR(query_seqs(&r, kRingAll, 6, 0, buf, sizeof buf), "7,8");
  CHECK_STR(query_seqs(&r, kRingStdout, 0, 1, buf, sizeof buf), "7");
  ring_free(&r);
}

/* The text line number seq carries: its digits then a filler of a length
 * derived from seq, so wrapping lands texts at every position. */
static size_t
numbered(uint64_t seq, char *buf)
{
  int n = sprintf(buf, "line %llu:", (unsigned long long)seq);
  size_t fill = (size_t)(seq * 7919 % 300);
  for (size_t i = 0; i < fill; i++)
    buf[n + i] = (char)('a' + (seq + i) % 26);
  return (size_t)n + fill;
}

/* Pushes many numbered lines and checks every kept one, after every push. */
static void
check_many_wraps(size_t max_lines, size_t max_bytes, uint64_t pushes)
{
  Ring r;
  ring_init(&r, max_lines, max_bytes);
  char want[512];
  for (uint64_t seq = 1; seq <= pushes; seq++) {
    size_t n = numbered(seq, want);
    CHECK_INT(ring_push(&r, (int)(seq % 2), want, n, seq % 5 == 0 ? 0 : -1, 0), seq);
    RingLine last = ring_last(&r);
    CHECK_INT(last.len, n);
    CHECK(memcmp(last.text, want, n) == 0);
    CHECK(r.count <= max_lines);
    CHECK_INT(r.counters.dropped, seq - r.count);
    if (check_failures_in_test)
      break;
  }
  /* Every kept line is intact, and the kept ones are the newest. */
  for (size_t i = 0; i < r.count; i++) {
    RingEntry *e = &r.entries[(r.head + i) % r.entries_cap];
    CHECK_INT(e->seq, pushes - r.count + 1 + i);
    size_t n = numbered(e->seq, want);
    CHECK_INT(e->len, n);
    CHECK(memcmp(r.arena + e->off % r.arena_cap, want, n) == 0);
    if (check_failures_in_test)
      break;
  }
  CHECK_INT(r.counters.lines, pushes);
  CHECK_INT(r.counters.matched, pushes / 5);
  ring_free(&r);
}

TEST(text_intact_after_many_wraps)
{
  check_many_wraps(1000, 4096, 100000);       /* the byte cap rules */
  check_many_wraps(50, 1 << 20, 20000);       /* the line cap rules */
  check_many_wraps(1000, 1 << 16, 50000);     /* both, by turns */
  check_many_wraps(1, 4096, 1000);
}

TEST(no_allocation_once_grown)
{
  Ring r;
  ring_init(&r, 1000, 1 << 16);
  char want[512];
  for (uint64_t seq = 1; seq <= 5000; seq++)
    ring_push(&r, 0, want, numbered(seq, want), -1, 0);
  RingEntry *entries = r.entries;
  char *arena = r.arena;
  CHECK_INT(r.arena_cap, 1 << 16);
  for (uint64_t seq = 5001; seq <= 50000; seq++)
    ring_push(&r, 0, want, numbered(seq, want), -1, 0);
  CHECK(r.entries == entries);
  CHECK(r.arena == arena);
  ring_free(&r);
}


/* --- preconditions ------------------------------------------------------ */

/* A push of a stream that is neither stdout nor stderr: a caller's bug,
 * which ring_push asserts instead of storing. */
static void
ring_push_bad_stream(void *arg)
{
  (void)arg;
  Ring r;
  ring_init(&r, 4, 64);
  ring_push(&r, 7, "x", 1, -1, 0);
  ring_free(&r);
}

/* The same push with a real stream: the death test's control. */
static void
ring_push_good_stream(void *arg)
{
  (void)arg;
  Ring r;
  ring_init(&r, 4, 64);
  ring_push(&r, kStreamStderr, "x", 1, -1, 0);
  ring_free(&r);
}

TEST(a_broken_precondition_ends_the_process_by_its_assert)
{
  CHECK_ABORTS(ring_push_bad_stream, NULL);
  CHECK(!test_aborts(ring_push_good_stream, NULL));
}

int
main(void)
{
  RUN(empty_ring);
  RUN(seq_shared_by_both_streams);
  RUN(line_cap_evicts_oldest);
  RUN(byte_cap_evicts_oldest);
  RUN(text_longer_than_max_bytes_is_cut);
  RUN(empty_texts);
  RUN(every_filter);
  RUN(since_seq_and_limit);
  RUN(since_seq_older_than_the_ring);
  RUN(text_intact_after_many_wraps);
  RUN(no_allocation_once_grown);
  RUN(a_broken_precondition_ends_the_process_by_its_assert);
  return check_summary();
}
