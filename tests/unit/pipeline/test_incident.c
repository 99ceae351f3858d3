/*
 * Unit tests of incident assembly, on a fake clock: a matching line opens an
 * incident and the lines of its trace join it until a line that does not
 * belong, a quiet gap or the end; each stream assembles its own; the bounds
 * count what they cut; a matching line that belongs to the open trace joins
 * it (a Python traceback is one incident); held maybe-lines join or are
 * handed back. The per-language rules themselves are trace.c's (test_trace);
 * here real traces of each language go through the assembler end to end.
 */
#include <string.h>

#include "check.h"
#include "pipeline/crashpatterns.h"
#include "pipeline/incident.h"
#include "pipeline/match.h"

#define MAX_DONE 16

typedef struct {
  Incident *done[MAX_DONE];
  size_t n;
  size_t plain;          /* held lines handed back as ordinary */
} Closed;

static void
on_done(void *ctx, Incident *inc)
{
  Closed *c = ctx;
  if (c->n < MAX_DONE)
    c->done[c->n++] = inc;
  else
    incident_free(inc);
}

static void
on_plain(void *ctx, const AssemblerLine *line)
{
  (void)line;
  ((Closed *)ctx)->plain++;
}

static void
closed_free(Closed *c)
{
  for (size_t i = 0; i < c->n; i++)
    incident_free(c->done[i]);
  c->n = 0;
}

/* The built-in set, compiled once, to find each line's pattern as the
 * monitor does. */
static PatternSet *
builtin(void)
{
  static PatternSet *ps;
  if (ps == NULL) {
    MatchLimits lim = {crashpatterns_count(), 65536, 1000000, 10000};
    VigilError err = VIGIL_ERROR_INIT;
    ps = match_compile(crashpatterns_sources(), crashpatterns_count(), &lim, "patterns", &err);
    CHECK(ps != NULL);
  }
  return ps;
}

static uint64_t next_seq;

/* Feeds one line of stream at now, matched against the built-in set. */
static bool
feed(Assembler *a, uint64_t now, int stream, const char *text)
{
  size_t len = strlen(text);
  int p = match_line(builtin(), text, len);
  ++next_seq;
  AssemblerLine l = {next_seq, stream, p, kTraceGeneric, false, 0, text, len, 100 + next_seq};
  if (p >= 0) {
    l.family = crashpatterns_get((size_t)p)->family;
    l.generic_header = crashpatterns_get((size_t)p)->generic_header;
  }
  return assembler_feed(a, now, &l);
}

/* Feeds lines 1 ms apart on stream 1 (stderr). */
static void
feed_all(Assembler *a, uint64_t *now, const char *const *lines)
{
  for (size_t i = 0; lines[i]; i++)
    feed(a, (*now)++, 1, lines[i]);
}

static const char *
text_of(const Incident *inc, size_t i)
{
  static char buf[512];
  size_t len = inc->lines[i].len < sizeof buf - 1 ? inc->lines[i].len : sizeof buf - 1;
  memcpy(buf, incident_line_text(inc, i), len);
  buf[len] = '\0';
  return buf;
}

TEST(a_python_traceback_is_one_incident_named_by_its_last_line)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 1000;
  static const char *const tb[] = {
    "Traceback (most recent call last):",
    "  File \"/app/api.py\", line 12, in handler",
    "    return users[user_id]",
    "KeyError: 'user_id'",
    NULL,
  };
  feed_all(&a, &now, tb);
  CHECK(!feed(&a, now++, 1, "INFO GET /health 200"));
  CHECK_INT(c.n, 1);
  Incident *inc = c.done[0];
  CHECK_INT(inc->nlines, 4);
  CHECK_INT(incident_kind(inc), kIncidentCrash);
  CHECK_STR(text_of(inc, 3), "KeyError: 'user_id'");
  /* The fingerprint is taken from the line that names the failure. */
  CHECK(incident_signature(inc) == &inc->lines[3]);
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_chained_python_traceback_stays_one_incident)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 0;
  static const char *const tb[] = {
    "Traceback (most recent call last):",
    "  File \"/app/db.py\", line 3, in get",
    "    return rows[0]",
    "IndexError: list index out of range",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    "  File \"/app/api.py\", line 9, in handler",
    "    user = get(uid)",
    "LookupError: no user 42",
    NULL,
  };
  feed_all(&a, &now, tb);
  assembler_close(&a, -1);
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 11);
  CHECK_STR(text_of(c.done[0], incident_signature(c.done[0]) - c.done[0]->lines),
            "LookupError: no user 42");
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_go_panic_with_goroutines_is_one_incident)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 0;
  static const char *const dump[] = {
    "panic: runtime error: index out of range [5] with length 3",
    "",
    "goroutine 1 [running]:",
    "main.handler(0xc000010000)",
    "\t/app/main.go:12 +0x1d",
    "main.main()",
    "\t/app/main.go:20 +0x25",
    "",
    "goroutine 7 [chan receive]:",
    "main.worker()",
    "\t/app/worker.go:8 +0x2c",
    "exit status 2",
    NULL,
  };
  feed_all(&a, &now, dump);
  feed(&a, now++, 1, "restarting in 1s");
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 12);
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_jvm_trace_with_caused_by_is_one_incident)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 0;
  static const char *const trace[] = {
    "Exception in thread \"main\" java.lang.IllegalStateException: boom",
    "\tat com.example.App.run(App.java:12)",
    "\tat com.example.App.main(App.java:5)",
    "Caused by: java.io.IOException: disk full",
    "\tat com.example.Store.write(Store.java:40)",
    "\t... 2 more",
    NULL,
  };
  feed_all(&a, &now, trace);
  assembler_close(&a, -1);
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 6);
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_rust_panic_with_backtrace_and_a_node_crash)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 0;
  static const char *const rust[] = {
    "thread 'main' panicked at src/main.rs:4:5:",
    "index out of bounds: the len is 3 but the index is 5",
    "stack backtrace:",
    "   0: rust_begin_unwind",
    "             at /rustc/abc/library/std/src/panicking.rs:645:5",
    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.",
    NULL,
  };
  feed_all(&a, &now, rust);
  static const char *const node[] = {
    "TypeError: Cannot read properties of undefined (reading 'id')",
    "    at getUser (/app/src/users.js:42:31)",
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    NULL,
  };
  feed_all(&a, &now, node);
  assembler_close(&a, -1);
  CHECK_INT(c.n, 2);
  CHECK_INT(c.done[0]->nlines, 6);
  CHECK_INT(c.done[1]->nlines, 3);
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_quiet_gap_closes_and_a_line_after_it_does_not_join)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  CHECK(feed(&a, 1000, 1, "TypeError: x is not a function"));
  CHECK(assembler_busy(&a));
  CHECK_INT(assembler_deadline(&a), 1150);
  assembler_expire(&a, 1149);
  CHECK_INT(c.n, 0);
  assembler_expire(&a, 1150);
  CHECK_INT(c.n, 1);
  CHECK_INT(incident_kind(c.done[0]), kIncidentMessage);
  CHECK(!assembler_busy(&a));
  CHECK_INT(assembler_deadline(&a), UINT64_MAX);
  /* An indented line after the gap is an ordinary line. */
  CHECK(!feed(&a, 1200, 1, "    at f (x.js:1:1)"));
  /* A gap the timer has not reported yet still ends the incident. */
  CHECK(feed(&a, 2000, 1, "TypeError: again"));
  CHECK(!feed(&a, 2500, 1, "    at f (x.js:1:1)"));
  CHECK_INT(c.n, 2);
  closed_free(&c);
  assembler_free(&a);
}

/* A trace that never ends (indented lines every 50 ms, never quiet) closes
 * at max_open_ms with the rest counted, instead of holding its
 * notification back for ever. */
TEST(an_incident_that_never_ends_closes_at_max_open)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 10, 8192, 150, on_done, on_plain, &c);
  assembler_set_max_open(&a, 2000);
  CHECK(feed(&a, 1000, 1, "TypeError: x"));
  CHECK_INT(assembler_deadline(&a), 1150);
  uint64_t t = 1000;
  while (c.n == 0 && t < 10000) {
    t += 50;
    feed(&a, t, 1, "    at spin (x.js:1:1)");
    assembler_expire(&a, t);
  }
  CHECK_INT(c.n, 1);
  CHECK(t >= 3000 && t <= 3050);
  CHECK_INT(c.done[0]->nlines, 10);
  CHECK(c.done[0]->truncated_lines > 0);
  closed_free(&c);
  assembler_free(&a);
}

TEST(each_stream_assembles_its_own_incident)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  /* A trace on stderr in two reads, with access-log lines on stdout between. */
  CHECK(feed(&a, 0, 1, "TypeError: boom"));
  CHECK(feed(&a, 1, 1, "    at a (x.js:1:1)"));
  CHECK(!feed(&a, 2, 0, "GET / 200 3ms"));
  CHECK(!feed(&a, 3, 0, "GET /favicon.ico 404 1ms"));
  CHECK(feed(&a, 40, 1, "    at b (x.js:2:1)"));
  CHECK_INT(c.n, 0);
  assembler_close(&a, 1);
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 3);
  closed_free(&c);
  assembler_free(&a);
}

TEST(bounds_count_the_lines_they_cut)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 5, 8192, 150, on_done, on_plain, &c);
  feed(&a, 0, 1, "TypeError: deep recursion");
  for (int i = 0; i < 20; i++)
    CHECK(feed(&a, (uint64_t)i + 1, 1, "    at recurse (x.js:1:1)"));
  assembler_close(&a, -1);
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 5);
  CHECK_INT(c.done[0]->truncated_lines, 16);
  closed_free(&c);

  /* The byte bound: kept lines never exceed it. */
  assembler_init(&a, 60, 300, 150, on_done, on_plain, &c);
  feed(&a, 0, 1, "TypeError: wide");
  char wide[121];
  memset(wide, 'x', sizeof wide - 1);
  wide[0] = ' ';
  wide[1] = ' ';
  wide[120] = '\0';
  for (int i = 0; i < 5; i++)
    feed(&a, (uint64_t)i + 1, 1, wide);
  assembler_close(&a, -1);
  CHECK(c.done[0]->bytes <= 300);
  CHECK_INT(c.done[0]->nlines + c.done[0]->truncated_lines, 6);
  CHECK(c.done[0]->truncated_lines >= 1);
  closed_free(&c);
  assembler_free(&a);
}

TEST(a_held_blank_line_that_nothing_follows_is_handed_back)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 150, on_done, on_plain, &c);
  uint64_t now = 0;
  static const char *const tb[] = {
    "Traceback (most recent call last):",
    "  File \"/app/x.py\", line 1, in <module>",
    "ValueError: bad",
    "",
    NULL,
  };
  feed_all(&a, &now, tb);
  CHECK(!feed(&a, now++, 1, "server restarted"));
  CHECK_INT(c.n, 1);
  CHECK_INT(c.done[0]->nlines, 3);
  CHECK_INT(c.plain, 1);
  closed_free(&c);
  assembler_free(&a);
}

/* Lines the trace could not place yet are judged again when it closes: a
 * crash among them opens its own incident instead of being lost. */
TEST(a_held_line_that_matches_opens_the_next_incident)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 3000, on_done, on_plain, &c);
  CHECK(feed(&a, 0, 1, "TypeError: a is undefined"));
  feed(&a, 300, 1, "RangeError: b out of range");
  feed(&a, 600, 1, "panic: c went wrong");
  assembler_close(&a, -1);
  CHECK_INT(c.n, 3);
  CHECK_STR(text_of(c.done[0], 0), "TypeError: a is undefined");
  CHECK_STR(text_of(c.done[1], 0), "RangeError: b out of range");
  CHECK_STR(text_of(c.done[2], 0), "panic: c went wrong");
  closed_free(&c);
  assembler_free(&a);
}

/* What a restart needs of the stage (monitor_replay.c): the open incident
 * with the number the caller gave its first line, also when a held line
 * opens it, and ids that go on from a number and never back. */
TEST(the_open_incidents_first_line_number_and_the_next_id_are_kept)
{
  Closed c = {0};
  Assembler a;
  assembler_init(&a, 60, 8192, 3000, on_done, on_plain, &c);
  CHECK(assembler_open_incident(&a, 1) == NULL);
  assembler_set_next_id(&a, 40);
  assembler_set_next_id(&a, 5); /* never back */
  CHECK(feed(&a, 0, 1, "TypeError: a is undefined"));
  uint64_t first = 100 + next_seq;
  CHECK_INT(assembler_open_incident(&a, 1)->lines[0].nr, first);
  CHECK(assembler_open_incident(&a, 0) == NULL);
  feed(&a, 300, 1, "RangeError: b out of range"); /* held, then opens the next */
  feed(&a, 600, 1, "panic: c went wrong");
  assembler_close(&a, -1);
  CHECK_INT(c.n, 3);
  CHECK_INT(c.done[0]->id, 40);
  CHECK_INT(c.done[1]->id, 41);
  CHECK_INT(c.done[1]->lines[0].nr, first + 1);
  CHECK_INT(c.done[2]->lines[0].nr, first + 2);
  CHECK(assembler_open_incident(&a, 1) == NULL);
  closed_free(&c);
  assembler_free(&a);
}

int
main(void)
{
  RUN(a_python_traceback_is_one_incident_named_by_its_last_line);
  RUN(a_chained_python_traceback_stays_one_incident);
  RUN(a_go_panic_with_goroutines_is_one_incident);
  RUN(a_jvm_trace_with_caused_by_is_one_incident);
  RUN(a_rust_panic_with_backtrace_and_a_node_crash);
  RUN(a_quiet_gap_closes_and_a_line_after_it_does_not_join);
  RUN(an_incident_that_never_ends_closes_at_max_open);
  RUN(each_stream_assembles_its_own_incident);
  RUN(bounds_count_the_lines_they_cut);
  RUN(a_held_blank_line_that_nothing_follows_is_handed_back);
  RUN(a_held_line_that_matches_opens_the_next_incident);
  RUN(the_open_incidents_first_line_number_and_the_next_id_are_kept);
  return check_summary();
}
