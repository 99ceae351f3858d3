/*
 * Unit tests of the batch window, with a fake clock: a batch is due a fixed
 * interval after its first line however fast lines keep coming (kimi's
 * trailing debounce is the bug this guards against), closes early at its
 * caps, and hands back its lines in order.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/batch.h"
#include "check.h"
#include "pipeline/linebuf.h"

/* Adds a NUL-terminated line with default metadata. */
static bool
add(Batch *b, uint64_t now, const char *text)
{
  return batch_add(b, now, 0, 1, -1, 0, text, strlen(text));
}

TEST(window_opens_at_first_line_and_never_moves)
{
  Batch b;
  batch_init(&b, 10000, 1048576, 200);
  CHECK(batch_empty(&b));
  CHECK(!batch_due(&b, 5000));
  CHECK(b.lines == NULL); /* nothing allocated before the first line */

  /* One line every ms: the batch opened at 1000 is due at 1200 whatever
   * arrives meanwhile. */
  uint64_t t = 1000;
  add(&b, t, "first");
  CHECK_INT(batch_deadline(&b), 1200);
  for (t = 1001; t < 1200; t++) {
    CHECK(batch_fits(&b, 4));
    add(&b, t, "more");
    CHECK_INT(batch_deadline(&b), 1200);
    CHECK(!batch_due(&b, t));
  }
  CHECK(batch_due(&b, 1200));
  CHECK_INT(b.count, 200);

  /* A steady stream for 2 s: a monitor that delivers when due sends one batch
   * every 200 ms, each exactly 200 ms after its first line. */
  Batch s;
  batch_init(&s, 10000, 1048576, 200);
  int delivered = 0;
  for (uint64_t now = 0; now <= 2000; now++) {
    if (batch_due(&s, now)) {
      CHECK_INT(now, batch_deadline(&s));
      CHECK_INT(now - s.opened_at, 200);
      CHECK_INT(s.count, 200);
      batch_take(&s);
      delivered++;
    }
    add(&s, now, "tick");
  }
  CHECK_INT(delivered, 10);
  batch_free(&s);
  batch_free(&b);
}

TEST(full_at_max_lines)
{
  Batch b;
  batch_init(&b, 3, 1024, 200);
  CHECK(!add(&b, 0, "a"));
  CHECK(!add(&b, 1, "b"));
  CHECK(batch_fits(&b, 1));
  CHECK(add(&b, 2, "c")); /* the third line fills it */
  CHECK(!batch_fits(&b, 0));
  CHECK(!batch_fits(&b, 1));
  CHECK_INT(batch_take(&b), 1);
  CHECK(batch_empty(&b));
  CHECK(batch_fits(&b, 1));
  batch_free(&b);
}

TEST(max_bytes_boundary)
{
  Batch b;
  batch_init(&b, 100, 10, 200);
  CHECK(!add(&b, 0, "abcd"));
  CHECK_INT(b.bytes, 4);
  CHECK(batch_fits(&b, 6));  /* exactly the room left */
  CHECK(!batch_fits(&b, 7)); /* one byte over */
  CHECK(add(&b, 1, "efghij")); /* exactly full: deliver now */
  CHECK_INT(b.bytes, 10);
  CHECK(batch_fits(&b, 0)); /* an empty line needs no room */
  CHECK(!batch_fits(&b, 1));
  /* Nothing was cut. */
  CHECK_INT(b.lines[1].flags & kLineTruncated, 0);
  CHECK_MEM(b.text + b.lines[1].off, b.lines[1].len, "efghij");
  batch_take(&b);

  /* The storage is reused and the room is whole again. */
  CHECK(!add(&b, 2, "0123456"));
  CHECK(batch_fits(&b, 3));
  CHECK(!batch_fits(&b, 4));
  batch_free(&b);
}

TEST(oversized_line_is_cut_and_flagged)
{
  Batch b;
  batch_init(&b, 100, 8, 200);
  /* An empty batch takes any line, cut to max_bytes. */
  CHECK(batch_fits(&b, 1000));
  CHECK(batch_add(&b, 0, 7, 2, 0, kLineBinary, "0123456789AB", 12));
  CHECK_INT(b.lines[0].len, 8);
  CHECK_MEM(b.text, b.lines[0].len, "01234567");
  CHECK_INT(b.lines[0].flags, kLineTruncated | kLineBinary);
  CHECK_INT(b.lines[0].seq, 7);
  CHECK(!batch_fits(&b, 1));
  batch_take(&b);

  /* Never in the middle of a character: "é" is bytes 7 and 8. */
  CHECK(!add(&b, 1, "abcdefg\xc3\xa9xyz"));
  CHECK_INT(b.lines[0].len, 7);
  CHECK_MEM(b.text, b.lines[0].len, "abcdefg");
  CHECK_INT(b.lines[0].flags, kLineTruncated);
  batch_take(&b);

  /* A 4-byte character straddling the cut goes whole. */
  CHECK(!add(&b, 2, "abcdef\xf0\x9f\x98\x80"));
  CHECK_INT(b.lines[0].len, 6);
  batch_take(&b);

  /* A line of exactly max_bytes is not truncated. */
  CHECK(add(&b, 3, "01234567"));
  CHECK_INT(b.lines[0].flags, 0);
  batch_free(&b);
}

TEST(numbers_count_up)
{
  Batch b;
  batch_init(&b, 10, 1024, 200);
  CHECK_INT(batch_take(&b), 0); /* nothing open: no number used */
  add(&b, 0, "x");
  CHECK_INT(batch_take(&b), 1);
  add(&b, 300, "y");
  CHECK_INT(batch_take(&b), 2);
  add(&b, 600, "z");
  add(&b, 601, "z");
  CHECK_INT(batch_take(&b), 3);
  CHECK_INT(b.number, 3);
  batch_free(&b);
}

/* The lines batch_each showed (at most 8). */
typedef struct {
  int n;
  uint64_t seq[8];
  int stream[8];
  int pattern[8];
  char text[8][32];
} Seen;

/* A BatchVisit that records what it is shown, in order. */
static void
collect(void *ctx, const BatchLine *line, const char *text)
{
  Seen *s = ctx;
  if (s->n >= 8)
    return;
  s->seq[s->n] = line->seq;
  s->stream[s->n] = line->stream;
  s->pattern[s->n] = line->pattern;
  snprintf(s->text[s->n], sizeof s->text[0], "%.*s", (int)line->len, text);
  s->n++;
}

TEST(each_visits_lines_in_order)
{
  Batch b;
  batch_init(&b, 10, 1024, 200);
  batch_add(&b, 10, 41, 1, -1, 0, "one", 3);
  batch_add(&b, 11, 42, 2, 0, 0, "two", 3);
  batch_add(&b, 12, 43, 1, 3, 0, "three", 5);
  batch_add(&b, 13, 44, 2, -1, 0, "", 0);
  Seen s = {0};
  batch_each(&b, collect, &s);
  CHECK_INT(s.n, 4);
  CHECK_INT(s.seq[0], 41);
  CHECK_INT(s.seq[3], 44);
  CHECK_INT(s.stream[1], 2);
  CHECK_INT(s.pattern[1], 0);
  CHECK_INT(s.pattern[2], 3);
  CHECK_STR(s.text[0], "one");
  CHECK_STR(s.text[1], "two");
  CHECK_STR(s.text[2], "three");
  CHECK_STR(s.text[3], "");

  /* The next batch shows only its own lines (its storage, which stayed
   * within the first allocations, was released and made again:
   * a_small_batch_taken_releases_its_storage). */
  CHECK_INT(batch_take(&b), 1);
  batch_add(&b, 500, 45, 1, -1, 0, "four", 4);
  CHECK_INT(batch_deadline(&b), 700);
  Seen t = {0};
  batch_each(&b, collect, &t);
  CHECK_INT(t.n, 1);
  CHECK_STR(t.text[0], "four");
  CHECK_INT(t.seq[0], 45);
  batch_free(&b);
  CHECK(b.lines == NULL);
}

/* Checks that the open batch holds lines n0..n0+n-1 as add_numbered made
 * them, in order. */
typedef struct {
  size_t next;
  bool ok;
} Numbered;

static void
numbered(void *ctx, const BatchLine *line, const char *text)
{
  Numbered *c = ctx;
  char want[64];
  int len = snprintf(want, sizeof want, "line %04zu of a batch that grows", c->next++);
  if (line->len != (size_t)len || memcmp(text, want, (size_t)len) != 0)
    c->ok = false;
}

/* A monitor whose batches are a line or two holds storage for that, not for
 * the caps (110 slots and 24 KiB of text by default, which every monitor
 * that matched once used to keep); a batch that fills up still gets every
 * line, in order, up to the caps. */
TEST(storage_grows_with_what_the_batches_hold)
{
  Batch b;
  batch_init(&b, 50, 16384, 200);
  batch_set_group_caps(&b, 61, 8192);
  add(&b, 10, "Error: 1 a quiet monitor's one match");
  CHECK(b.lines_cap <= 4);
  CHECK(b.text_cap <= 512);
  batch_take(&b);

  bool full = false;
  size_t n = 0;
  char text[64];
  while (!full) {
    int len = snprintf(text, sizeof text, "line %04zu of a batch that grows", n++);
    full = batch_add(&b, 500, n, 1, -1, 0, text, (size_t)len);
  }
  CHECK_INT(n, 50); /* 50 lines of 31 bytes: max_lines comes first */
  CHECK(b.lines_cap >= 50 && b.lines_cap <= 50 + 61);
  CHECK(b.text_cap >= 50 * 32 && b.text_cap <= 16384 + 8192);
  Numbered c = {0, true};
  batch_each(&b, numbered, &c);
  CHECK(c.ok);
  CHECK_INT(c.next, 50);
  batch_free(&b);
  CHECK(b.lines == NULL && b.lines_cap == 0 && b.text_cap == 0);
}

/* Issue 27: a quiet monitor's batch (a line or two, now and then) holds
 * nothing between its batches: taking one that stayed within the first
 * allocations releases them; one that grew keeps what it grew to (a busy
 * monitor's batches come every window), until a small batch is taken. */
TEST(a_small_batch_taken_releases_its_storage)
{
  Batch b;
  batch_init(&b, 50, 16384, 200);
  add(&b, 10, "Error: 1 a quiet monitor's one match");
  CHECK(b.lines != NULL && b.text != NULL);
  CHECK_INT(batch_take(&b), 1);
  CHECK(b.lines == NULL && b.text == NULL && b.lines_cap == 0 && b.text_cap == 0);
  add(&b, 20, "Error: 2 the next one");
  CHECK(b.lines != NULL && b.lines_cap <= 4);
  CHECK_INT(batch_take(&b), 2); /* numbers go on */
  char text[64];
  for (size_t n = 0; n < 20; n++) {
    int len = snprintf(text, sizeof text, "line %04zu of a busy monitor's batch", n);
    batch_add(&b, 30, n, 1, -1, 0, text, (size_t)len);
  }
  CHECK_INT(batch_take(&b), 3);
  CHECK(b.lines != NULL && b.lines_cap >= 20); /* grown: kept for the next window */
  batch_free(&b);
}

/* An incident enters a batch whole: into an empty batch even past
 * max_lines and max_bytes, into an open one only when it fits; its lines
 * are marked with its group and the group indexes them. */
TEST(an_incident_is_never_split)
{
  Batch b;
  batch_init(&b, 4, 1024, 200);
  batch_set_group_caps(&b, 61, 8192);
  NoteIncident info;
  memset(&info, 0, sizeof info);
  info.id = 7;
  /* 10 lines into an empty batch whose max is 4. */
  CHECK(batch_fits_group(&b, 10, 100));
  batch_begin_group(&b, 500, &info);
  for (int i = 0; i < 10; i++)
    CHECK(!batch_add(&b, 500, (uint64_t)i + 1, 1, i == 0 ? 3 : -1, 0, "    at f", 8));
  CHECK(batch_end_group(&b)); /* past max_lines: deliver now */
  CHECK_INT(batch_group_count(&b), 1);
  CHECK_INT(batch_group(&b, 0)->first_line, 0);
  CHECK_INT(batch_group(&b, 0)->nlines, 10);
  CHECK_INT(batch_group(&b, 0)->id, 7);
  CHECK_INT(b.lines[9].group, 0);
  CHECK_INT(batch_deadline(&b), 700);
  /* A plain line does not fit a batch an incident filled past its caps. */
  CHECK(!batch_fits(&b, 1));
  CHECK_INT(batch_take(&b), 1);
  CHECK_INT(batch_group_count(&b), 0);

  /* One plain line, then an incident that does not fit: the caller flushes. */
  add(&b, 1000, "plain");
  CHECK_INT(b.lines[0].group, -1);
  CHECK(!batch_fits_group(&b, 4, 10));
  CHECK(batch_fits_group(&b, 3, 10));
  batch_begin_group(&b, 1000, &info);
  batch_add(&b, 1000, 2, 1, 0, 0, "Error: x", 8);
  CHECK(!batch_end_group(&b));
  CHECK_INT(batch_group(&b, 0)->first_line, 1);
  CHECK_INT(batch_group(&b, 0)->nlines, 1);
  batch_free(&b);
}


/* An incident begun while another is open: incidents do not nest. */
static void
batch_nested_groups(void *arg)
{
  (void)arg;
  Batch b;
  batch_init(&b, 8, 256, 200);
  batch_set_group_caps(&b, 4, 128);
  NoteIncident info;
  memset(&info, 0, sizeof info);
  batch_begin_group(&b, 1, &info);
  batch_begin_group(&b, 1, &info);
  batch_free(&b);
}

TEST(a_broken_precondition_ends_the_process_by_its_assert)
{
  CHECK_ABORTS(batch_nested_groups, NULL);
}

int
main(void)
{
  RUN(window_opens_at_first_line_and_never_moves);
  RUN(full_at_max_lines);
  RUN(max_bytes_boundary);
  RUN(oversized_line_is_cut_and_flagged);
  RUN(numbers_count_up);
  RUN(each_visits_lines_in_order);
  RUN(an_incident_is_never_split);
  RUN(storage_grows_with_what_the_batches_hold);
  RUN(a_small_batch_taken_releases_its_storage);
  RUN(a_broken_precondition_ends_the_process_by_its_assert);
  return check_summary();
}
