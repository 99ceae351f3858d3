/*
 * The event log: ids from 1 that never repeat, the cap that drops the oldest
 * ~10% at once and says so, since_id filtering and lookup by type, and the
 * exact one-line rendering of every event type (docs/protocol.md, monitor_events).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "pipeline/eventlog.h"

/* 2026-04-24T14:59:59.120Z, shown as 15:59:59.120+01:00 in CET-1. */
#define T0 1777042799120LL

static void
use_plus_one_zone(void)
{
  setenv("TZ", "CET-1", 1);
  tzset();
}

static const Event *
add_simple(EventLog *log, EventType type)
{
  return eventlog_add(log, type, T0, -1, NULL, 0, false, 0, 0, NULL);
}

typedef struct {
  uint64_t ids[4096];
  size_t n;
} Seen;

static void
collect(void *ctx, const Event *ev)
{
  Seen *s = ctx;
  if (s->n < sizeof s->ids / sizeof s->ids[0])
    s->ids[s->n] = ev->id;
  s->n++;
}

TEST(ids_start_at_one_and_count_up)
{
  EventLog log;
  eventlog_init(&log, 1024);
  CHECK(log.events == NULL); /* nothing allocated until the first event */
  CHECK_INT(add_simple(&log, kEventStarted)->id, 1);
  CHECK_INT(add_simple(&log, kEventMatch)->id, 2);
  CHECK_INT(add_simple(&log, kEventExited)->id, 3);
  CHECK_INT(log.count, 3);
  CHECK_INT(log.dropped, 0);
  eventlog_free(&log);
}

TEST(cap_drops_a_tenth_at_once)
{
  EventLog log;
  eventlog_init(&log, 1024);
  for (int i = 0; i < 1024; i++)
    add_simple(&log, kEventMatch);
  CHECK_INT(log.count, 1024);
  CHECK_INT(log.dropped, 0);
  const Event *ev = add_simple(&log, kEventMatch);
  CHECK_INT(ev->id, 1025);
  CHECK_INT(log.dropped, 102);
  CHECK_INT(log.count, 1024 - 102 + 1);
  Seen seen = {.n = 0};
  CHECK_INT(eventlog_since(&log, 0, collect, &seen), 923);
  CHECK_INT(seen.ids[0], 103);
  CHECK_INT(seen.ids[seen.n - 1], 1025);
  /* No further drop until the log is full again. */
  for (int i = 0; i < 101; i++)
    add_simple(&log, kEventMatch);
  CHECK_INT(log.dropped, 102);
  add_simple(&log, kEventMatch);
  CHECK_INT(log.dropped, 204);
  eventlog_free(&log);
}

/* Issue 22 point 21: incident events filled the cap, so 1100 matches with
 * their incidents left 489 matches. The cap counts the other kinds only;
 * incident events go with the oldest of those. */
TEST(incident_events_ride_along_and_leave_the_cap_to_the_others)
{
  EventLog log;
  eventlog_init(&log, 1024);
  add_simple(&log, kEventStarted);
  for (int i = 0; i < 1100; i++) {
    add_simple(&log, kEventMatch);
    add_simple(&log, i % 2 ? kEventIncident : kEventRepeatSummary);
  }
  add_simple(&log, kEventExited);
  /* Seed 000's log of 1102 events: 102 dropped at the 1025th, 1000 kept. */
  CHECK_INT(log.counted, 1000);
  CHECK_INT(log.dropped - log.dropped_incidents, 102);
  Seen seen = {.n = 0};
  eventlog_since(&log, 0, collect, &seen);
  CHECK_INT(seen.n, log.count);
  CHECK(log.count <= eventlog_slots(1024));
  /* The oldest retained event is the 102nd match's incident or the 103rd
   * counted event; ids stay contiguous. */
  for (size_t i = 1; i < seen.n && i < sizeof seen.ids / sizeof seen.ids[0]; i++)
    CHECK_INT(seen.ids[i], seen.ids[0] + i);
  size_t counted = 0;
  for (size_t i = 0; i < seen.n; i++) {
    const Event *ev = eventlog_find(&log, seen.ids[i] - 1, ~0u);
    counted += eventlog_counts(ev->type);
  }
  CHECK_INT(counted, 1000);
  eventlog_free(&log);

  /* Only incident events: the hard bound of twice the cap holds. */
  eventlog_init(&log, 16);
  for (int i = 0; i < 100; i++)
    add_simple(&log, kEventIncident);
  CHECK(log.count <= eventlog_slots(16));
  CHECK_INT(log.dropped, log.dropped_incidents);
  CHECK_INT(log.dropped + log.count, 100);
  eventlog_free(&log);
}

TEST(ids_never_repeat_across_many_wraps)
{
  EventLog log;
  eventlog_init(&log, 16); /* drops 1 at a time: 16/10 rounds down to 1 */
  for (int i = 1; i <= 5000; i++) {
    const Event *ev = eventlog_add(&log, kEventMatch, T0, 0, "x", 1, false, 0, 0, NULL);
    if (ev->id != (uint64_t)i) {
      check_fail(__FILE__, __LINE__, "event %d got id %llu", i, (unsigned long long)ev->id);
      break;
    }
  }
  CHECK_INT(log.count, 16);
  CHECK_INT(log.dropped, 5000 - 16);
  Seen seen = {.n = 0};
  eventlog_since(&log, 0, collect, &seen);
  CHECK_INT(seen.n, 16);
  for (size_t i = 0; i < seen.n; i++)
    CHECK_INT(seen.ids[i], 5000 - 16 + 1 + i);
  eventlog_free(&log);
}

TEST(since_filters_by_id)
{
  EventLog log;
  eventlog_init(&log, 20);
  /* Cap 20 drops 2 when full: at the 21st, 23rd and 25th add, so 7..25 stay. */
  for (int i = 0; i < 25; i++)
    add_simple(&log, kEventMatch);
  CHECK_INT(log.dropped, 6);
  Seen seen = {.n = 0};
  CHECK_INT(eventlog_since(&log, 0, collect, &seen), 19);
  CHECK_INT(seen.ids[0], 7);
  /* A since_id inside the dropped range gives everything kept. */
  seen.n = 0;
  CHECK_INT(eventlog_since(&log, 1, collect, &seen), log.count);
  seen.n = 0;
  CHECK_INT(eventlog_since(&log, 20, collect, &seen), 5);
  CHECK_INT(seen.ids[0], 21);
  seen.n = 0;
  CHECK_INT(eventlog_since(&log, 24, collect, &seen), 1);
  CHECK_INT(seen.ids[0], 25);
  CHECK_INT(eventlog_since(&log, 25, collect, &seen), 0);
  CHECK_INT(eventlog_since(&log, 1000, collect, &seen), 0);
  eventlog_free(&log);

  EventLog empty;
  eventlog_init(&empty, 10);
  CHECK_INT(eventlog_since(&empty, 0, collect, &seen), 0);
  CHECK(eventlog_find(&empty, 0, ~0u) == NULL);
  eventlog_free(&empty);
}

TEST(find_by_type_mask)
{
  EventLog log;
  eventlog_init(&log, 100);
  add_simple(&log, kEventStarted);
  eventlog_add(&log, kEventMatch, T0, 0, "panic: a", 8, false, 0, 0, NULL);
  eventlog_add(&log, kEventMatch, T0, 1, "panic: b", 8, false, 0, 0, NULL);
  eventlog_add(&log, kEventExited, T0, -1, NULL, 0, true, 2, 0, NULL);
  unsigned match = 1u << kEventMatch;
  unsigned ending = 1u << kEventExited | 1u << kEventStopped | 1u << kEventTimedOut |
                    1u << kEventIdleTimeout | 1u << kEventOverload;
  const Event *ev = eventlog_find(&log, 0, match);
  CHECK(ev != NULL && ev->id == 2 && ev->pattern == 0);
  ev = eventlog_find(&log, 2, match);
  CHECK(ev != NULL && ev->id == 3 && ev->pattern == 1);
  CHECK_STR(ev->line, "panic: b");
  CHECK(eventlog_find(&log, 3, match) == NULL);
  ev = eventlog_find(&log, 0, ending);
  CHECK(ev != NULL && ev->id == 4 && ev->has_exit_code && ev->exit_code == 2);
  CHECK(eventlog_find(&log, 4, ~0u) == NULL);
  CHECK(eventlog_find(&log, 0, 1u << kEventStopped) == NULL);
  eventlog_free(&log);
}

TEST(type_names)
{
  CHECK_STR(eventlog_type_name(kEventStarted), "started");
  CHECK_STR(eventlog_type_name(kEventMatch), "match");
  CHECK_STR(eventlog_type_name(kEventIdleTimeout), "idle_timeout");
  CHECK_STR(eventlog_type_name(kEventTimedOut), "timed_out");
  CHECK_STR(eventlog_type_name(kEventOverload), "overload");
  CHECK_STR(eventlog_type_name(kEventStopped), "stopped");
  CHECK_STR(eventlog_type_name(kEventExited), "exited");
}

TEST(render_every_type)
{
  use_plus_one_zone();
  EventLog log;
  eventlog_init(&log, 1024);
  const char *sources[] = {"^panic:", "\\buncaught\\b"};
  add_simple(&log, kEventStarted);
  eventlog_add(&log, kEventMatch, T0, 0, "panic: runtime error", 20, false, 0, 0, NULL);
  eventlog_add(&log, kEventExited, T0, -1, NULL, 0, true, 1, 0, NULL);
  eventlog_add(&log, kEventExited, T0, -1, NULL, 0, false, 0, SIGKILL, NULL);
  eventlog_add(&log, kEventStopped, T0, -1, NULL, 0, false, 0, SIGTERM, NULL);
  eventlog_add(&log, kEventIdleTimeout, T0, -1, NULL, 0, false, 0, 0, "no output for 60s");
  eventlog_add(&log, kEventTimedOut, T0, -1, NULL, 0, false, 0, 0, "runtime cap of 30m00s");
  eventlog_add(&log, kEventOverload, T0, -1, NULL, 0, false, 0, 0,
               "withheld output for 45.0s; process group stopped");
  eventlog_add(&log, kEventMatch, T0 + 5, 1, "an uncaught thing", 17, false, 0, 0, NULL);
  StrBuf sb = STRBUF_INIT;
  eventlog_render(&log, 0, sources, 2, &sb);
  CHECK_STR(strbuf_cstr(&sb),
            "[1] 2026-04-24T15:59:59.120+01:00 started\n"
            "[2] 2026-04-24T15:59:59.120+01:00 match (pattern 0 \"^panic:\") panic: runtime error\n"
            "[3] 2026-04-24T15:59:59.120+01:00 exited exit=1\n"
            "[4] 2026-04-24T15:59:59.120+01:00 exited signal=SIGKILL\n"
            "[5] 2026-04-24T15:59:59.120+01:00 stopped signal=SIGTERM\n"
            "[6] 2026-04-24T15:59:59.120+01:00 idle_timeout no output for 60s\n"
            "[7] 2026-04-24T15:59:59.120+01:00 timed_out runtime cap of 30m00s\n"
            "[8] 2026-04-24T15:59:59.120+01:00 overload withheld output for 45.0s; process group "
            "stopped\n"
            "[9] 2026-04-24T15:59:59.125+01:00 match (pattern 1 \"\\buncaught\\b\") an uncaught "
            "thing\n");
  /* since_id leaves out what the caller has seen. */
  strbuf_reset(&sb);
  eventlog_render(&log, 7, sources, 2, &sb);
  CHECK_STR(strbuf_cstr(&sb),
            "[8] 2026-04-24T15:59:59.120+01:00 overload withheld output for 45.0s; process group "
            "stopped\n"
            "[9] 2026-04-24T15:59:59.125+01:00 match (pattern 1 \"\\buncaught\\b\") an uncaught "
            "thing\n");
  strbuf_reset(&sb);
  eventlog_render(&log, 9, sources, 2, &sb);
  CHECK_STR(strbuf_cstr(&sb), "");
  strbuf_free(&sb);
  eventlog_free(&log);
}

TEST(render_one_has_no_newline)
{
  use_plus_one_zone();
  EventLog log;
  eventlog_init(&log, 16);
  const Event *ev = eventlog_add(&log, kEventStopped, T0, -1, NULL, 0, false, 0, SIGTERM,
                                 "session closed");
  StrBuf sb = STRBUF_INIT;
  eventlog_render_one(ev, NULL, 0, &sb);
  CHECK_STR(strbuf_cstr(&sb), "[1] 2026-04-24T15:59:59.120+01:00 stopped signal=SIGTERM session closed");
  strbuf_reset(&sb);
  ev = eventlog_add(&log, kEventExited, T0, -1, NULL, 0, false, 0, 77, NULL);
  eventlog_render_one(ev, NULL, 0, &sb);
  CHECK_STR(strbuf_cstr(&sb), "[2] 2026-04-24T15:59:59.120+01:00 exited signal=77");
  strbuf_free(&sb);
  eventlog_free(&log);
}

TEST(render_match_without_a_source)
{
  use_plus_one_zone();
  EventLog log;
  eventlog_init(&log, 16);
  eventlog_add(&log, kEventMatch, T0, 3, "Error: x", 8, false, 0, 0, NULL);
  StrBuf sb = STRBUF_INIT;
  eventlog_render(&log, 0, NULL, 0, &sb);
  CHECK_STR(strbuf_cstr(&sb), "[1] 2026-04-24T15:59:59.120+01:00 match (pattern 3) Error: x\n");
  strbuf_reset(&sb);
  const char *one[] = {"^Error:"};
  eventlog_render(&log, 0, one, 1, &sb); /* index 3 is past the table: no source */
  CHECK_STR(strbuf_cstr(&sb), "[1] 2026-04-24T15:59:59.120+01:00 match (pattern 3) Error: x\n");
  strbuf_free(&sb);
  eventlog_free(&log);
}

TEST(render_escapes_lines_and_sources)
{
  use_plus_one_zone();
  EventLog log;
  eventlog_init(&log, 16);
  const char line[] = "\x1b[31mpanic:\x1b[0m boom\r\n[2] fake event\x07";
  eventlog_add(&log, kEventMatch, T0, 0, line, sizeof line - 1, false, 0, 0, NULL);
  eventlog_add(&log, kEventIdleTimeout, T0, -1, NULL, 0, false, 0, 0, "quiet\ttoo long\n");
  const char *sources[] = {"say \"hi\"\t\\d+"};
  StrBuf sb = STRBUF_INIT;
  eventlog_render(&log, 0, sources, 1, &sb);
  CHECK_STR(strbuf_cstr(&sb),
            "[1] 2026-04-24T15:59:59.120+01:00 match (pattern 0 \"say \\\"hi\\\"\\t\\d+\") "
            "\\e[31mpanic:\\e[0m boom\\r\\n[2] fake event\\x07\n"
            "[2] 2026-04-24T15:59:59.120+01:00 idle_timeout quiet\\ttoo long\\n\n");
  strbuf_free(&sb);
  eventlog_free(&log);
}

TEST(note_line_when_events_were_dropped)
{
  use_plus_one_zone();
  EventLog log;
  eventlog_init(&log, 1024);
  for (int i = 0; i < 1025; i++)
    add_simple(&log, kEventStarted);
  StrBuf sb = STRBUF_INIT;
  eventlog_render(&log, 1024, NULL, 0, &sb);
  CHECK_STR(strbuf_cstr(&sb),
            "NOTE: 102 earlier events dropped (per-monitor cap of 1024 reached)\n"
            "[1025] 2026-04-24T15:59:59.120+01:00 started\n");
  strbuf_reset(&sb);
  eventlog_render(&log, 0, NULL, 0, &sb);
  CHECK(strncmp(strbuf_cstr(&sb), "NOTE: 102 earlier events dropped", 32) == 0);
  CHECK_CONTAINS(strbuf_cstr(&sb), "\n[103] 2026-04-24T15:59:59.120+01:00 started\n");
  CHECK(strstr(strbuf_cstr(&sb), "[102]") == NULL);
  strbuf_free(&sb);
  eventlog_free(&log);

  /* No note before anything was dropped. */
  eventlog_init(&log, 16);
  add_simple(&log, kEventStarted);
  eventlog_render(&log, 0, NULL, 0, &sb);
  CHECK(strstr(strbuf_cstr(&sb), "NOTE") == NULL);
  strbuf_free(&sb);
  eventlog_free(&log);
}

TEST(free_and_reuse)
{
  EventLog log;
  eventlog_init(&log, 16);
  eventlog_free(&log); /* never used: nothing to free */
  eventlog_add(&log, kEventMatch, T0, 0, "a", 1, false, 0, 0, "r");
  eventlog_free(&log);
  CHECK_INT(log.count, 0);
  CHECK_INT(add_simple(&log, kEventStarted)->id, 2); /* ids keep counting */
  eventlog_free(&log);
}

int
main(void)
{
  RUN(ids_start_at_one_and_count_up);
  RUN(cap_drops_a_tenth_at_once);
  RUN(incident_events_ride_along_and_leave_the_cap_to_the_others);
  RUN(ids_never_repeat_across_many_wraps);
  RUN(since_filters_by_id);
  RUN(find_by_type_mask);
  RUN(type_names);
  RUN(render_every_type);
  RUN(render_one_has_no_newline);
  RUN(render_match_without_a_source);
  RUN(render_escapes_lines_and_sources);
  RUN(note_line_when_events_were_dropped);
  RUN(free_and_reuse);
  return check_summary();
}
