/*
 * The monitor with real children: what a host would see from start to the
 * ending notification. Each test starts a child through monitor_start,
 * collects every notification and event, runs the loop until the monitor
 * has finished (an event, never a sleep), and checks what arrived and in
 * which order. Children are /bin/sh one-liners or the helpers built from
 * tests/support/child_*.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "render/envelope.h"
#include "pipeline/linebuf.h"
#include "monitor/monitor.h"
#include "base/strbuf.h"


TEST(normal_exit_delivers_lines_then_exit)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo one; echo two >&2; echo three"), .label = "demo"};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    CHECK_INT(monitor_state(h.m), kMonExited);
    char *text = harness_output_text(&h);
    /* stdout and stderr are separate pipes: only the order within a stream is fixed. */
    CHECK_CONTAINS(text, "one\n");
    CHECK_CONTAINS(text, "two\n");
    CHECK(strstr(text, "one\n") < strstr(text, "three\n"));
    free(text);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifExit);
      CHECK(end->has_exit_code);
      CHECK_INT(end->exit_code, 0);
      CHECK_INT(end->signal, 0);
      CHECK_STR(end->label, "demo");
      CHECK_INT(end->nlines, 3);
    }
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK_INT(c.lines, 3);
    CHECK_INT(c.stdout_bytes, 10);
    CHECK_INT(c.stderr_bytes, 4);
    CHECK_INT(c.notifications, h.nnotes);
  }
  harness_close(&h);
}

TEST(nonzero_exit_code_reported)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo failing; exit 3")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifExit);
      CHECK_INT(end->exit_code, 3);
      CHECK_INT(end->state, kMonExited);
    }
    const EventLog *log = monitor_events(h.m);
    const Event *ev = eventlog_find(log, 0, 1u << kEventExited);
    CHECK(ev != NULL);
    if (ev) {
      CHECK(ev->has_exit_code);
      CHECK_INT(ev->exit_code, 3);
    }
  }
  harness_close(&h);
}

TEST(killed_by_own_signal_is_exited_with_signal)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo bye; kill -SEGV $$")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    Notification *end = harness_ending(&h);
    CHECK_INT(monitor_state(h.m), kMonExited);
    if (end) {
      CHECK_INT(end->signal, SIGSEGV);
      CHECK(!end->has_exit_code);
    }
  }
  harness_close(&h);
}

TEST(stop_escalates_to_sigkill_for_a_child_ignoring_sigterm)
{
  Harness h;
  harness_init(&h);
  h.stop_on_first_output = true;
  /* It announces itself, so the stop is sent only once the trap is in place. */
  MonitorSpec spec = {.argv = SH("trap '' TERM; echo ready; while :; do sleep 1; done")};
  if (harness_start(&h, &spec) && harness_wait(&h, 15000)) {
    CHECK_INT(monitor_state(h.m), kMonStopped);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifStopped);
      CHECK_INT(end->signal, SIGKILL);
    }
    CHECK_INT(monitor_stop(h.m, SIGTERM, 0), kMonitorStopAlready); /* idempotent: already stopped */
    const Event *ev = eventlog_find(monitor_events(h.m), 0, 1u << kEventStopped);
    CHECK(ev != NULL);
  }
  harness_close(&h);
}

TEST(grandchild_holding_the_pipe_cannot_stall_the_end)
{
  Harness h;
  harness_init(&h);
  h.settings.exit_drain_ms = 200;
  /* The background sleep inherits stdout and keeps it open for 60 s. */
  MonitorSpec spec = {.argv = SH("sleep 60 & echo parent done")};
  uint64_t t0 = uv_hrtime();
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    uint64_t took_ms = (uv_hrtime() - t0) / 1000000;
    CHECK(took_ms < 10000);
    CHECK_INT(monitor_state(h.m), kMonExited);
    char *text = harness_output_text(&h);
    CHECK_CONTAINS(text, "parent done");
    free(text);
    ProcExit x;
    monitor_usage(h.m, &x);
    CHECK(x.drain_cut);
    CHECK_INT(x.exit_code, 0);
  }
  harness_close(&h);
}

TEST(partial_last_line_is_delivered_before_the_end)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("printf 'first\\nno newline at the end'")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    char *text = harness_output_text(&h);
    CHECK_STR(text, "first\nno newline at the end\n");
    free(text);
    harness_ending(&h);
    RingLine last = ring_last(monitor_ring(h.m));
    CHECK_MEM(last.text, last.len, "no newline at the end");
    CHECK(last.flags & kLineUnterminated);
  }
  harness_close(&h);
}

TEST(binary_output_is_flagged_and_kept_raw_in_the_capture)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("printf 'a\\000b\\n'")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    RingLine last = ring_last(monitor_ring(h.m));
    CHECK(last.flags & kLineBinary);
    CHECK_MEM(last.text, last.len, "a\xEF\xBF\xBD" "b");
    CaptureSpan span = capture_read(monitor_capture(h.m, kStreamStdout), 0, UINT64_MAX);
    CHECK_INT(span.n1 + span.n2, 4);
    if (span.n1 == 4)
      CHECK(memcmp(span.p1, "a\0b\n", 4) == 0);
  }
  harness_close(&h);
}

TEST(a_100kb_line_is_cut_and_counted)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {
      .argv = SH("head -c 102400 /dev/zero | tr '\\000' x; echo; echo after")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK_INT(c.lines, 2);
    CHECK_INT(c.truncated_lines, 1);
    CHECK_INT(c.discarded_bytes, 102400 - h.settings.line_max_bytes);
    CHECK_INT(c.stdout_bytes, 102400 + 1 + 6);
    RingLine last = ring_last(monitor_ring(h.m));
    CHECK_MEM(last.text, last.len, "after");
    harness_ending(&h);
    Notification *first = h.notes[0];
    CHECK_INT(first->type, kNotifOutput);
    if (first->nlines > 0) {
      CHECK_INT(first->lines[0].len, h.settings.line_max_bytes);
      CHECK(first->lines[0].truncated);
    }
  }
  harness_close(&h);
}

TEST(ansi_coloured_stderr_matches_error_pattern)
{
  Harness h;
  harness_init(&h);
  const char *patterns[] = {"^Error:"};
  MonitorSpec spec = {
      .argv = SH("echo 'starting'; printf '\\033[31mError:\\033[0m boom\\n' >&2; echo done"),
      .patterns = patterns,
      .npatterns = 1,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    CHECK_INT(monitor_notify(h.m), kNotifyMatches);
    char *text = harness_output_text(&h);
    CHECK_STR(text, "Error: boom\n"); /* only the matched line, escapes removed */
    free(text);
    const Event *ev = eventlog_find(monitor_events(h.m), 0, 1u << kEventMatch);
    CHECK(ev != NULL);
    if (ev) {
      CHECK_INT(ev->pattern, 0);
      CHECK_STR(ev->line, "Error: boom");
    }
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK_INT(c.matched, 1);
    CHECK_INT(c.unmatched, 2);
    /* The capture keeps the raw bytes, escapes included. */
    CaptureSpan span = capture_read(monitor_capture(h.m, kStreamStderr), 0, UINT64_MAX);
    CHECK_MEM(span.p1, span.n1, "\033[31mError:\033[0m boom\n");
  }
  harness_close(&h);
}

TEST(match_streams_limits_matching_to_one_stream)
{
  Harness h;
  harness_init(&h);
  const char *patterns[] = {"^Error:"};
  MonitorSpec spec = {
      .argv = SH("echo 'Error: on stdout'; echo 'Error: on stderr' >&2"),
      .patterns = patterns,
      .npatterns = 1,
      .match_streams = kStreamsStderr,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    char *text = harness_output_text(&h);
    CHECK_STR(text, "Error: on stderr\n");
    free(text);
  }
  harness_close(&h);
}

TEST(flood_on_both_streams_is_rate_limited_and_accounted)
{
  Harness h;
  harness_init(&h);
  h.settings.ring_max_lines = 1000;
  MonitorSpec spec = {
      .argv = SH("i=0; while [ $i -lt 5000 ]; do echo \"out $i\"; echo \"err $i\" >&2; "
                 "i=$((i+1)); done"),
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 60000)) {
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK_INT(c.lines, 10000);
    CHECK_INT(c.dropped, 9000); /* only the last 1000 stay in the ring */
    size_t outputs = harness_count(&h, kNotifOutput);
    CHECK(outputs <= (size_t)h.settings.rate_max_notifications);
    /* Every line was either delivered or counted as withheld. */
    uint64_t delivered = 0, reported = 0;
    for (size_t i = 0; i < h.nnotes; i++) {
      reported += h.notes[i]->suppressed;
      if (h.notes[i]->type == kNotifOutput)
        delivered += h.notes[i]->nlines;
    }
    CHECK_INT(delivered + reported, 10000);
    CHECK_INT(c.suppressed, reported);
    harness_ending(&h);
  }
  harness_close(&h);
}

TEST(batch_window_is_not_postponed_by_a_steady_stream)
{
  Harness h;
  harness_init(&h);
  /* A line every 20 ms for 3 s: a trailing debounce would deliver nothing
   * until the end; the window delivers while the child is still writing. */
  MonitorSpec spec = {
      .argv = SH("i=0; while [ $i -lt 150 ]; do echo tick $i; sleep 0.02; i=$((i+1)); done"),
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 30000)) {
    CHECK(h.output_while_running);
    CHECK(h.nnotes >= 3);
    if (h.nnotes > 0)
      CHECK(h.notes[0]->nlines < 150);
    harness_ending(&h);
  }
  harness_close(&h);
}

TEST(batch_closes_early_at_max_lines)
{
  Harness h;
  harness_init(&h);
  h.settings.flush_interval_ms = 60000; /* only the line cap or the exit can close it */
  h.settings.rate_max_notifications = 100;
  MonitorSpec spec = {.argv = SH("i=0; while [ $i -lt 120 ]; do echo l$i; i=$((i+1)); done")};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    CHECK_INT(harness_count(&h, kNotifOutput), 3);
    if (h.nnotes >= 3) {
      CHECK_INT(h.notes[0]->nlines, 50);
      CHECK_INT(h.notes[1]->nlines, 50);
      CHECK_INT(h.notes[2]->nlines, 20);
      CHECK_INT(h.notes[0]->batch, 1);
      CHECK_INT(h.notes[2]->batch, 3);
      CHECK_INT(h.notes[0]->lines[0].seq, 1);
    }
    harness_ending(&h);
  }
  harness_close(&h);
}

TEST(sustained_overload_stops_the_process_group)
{
  Harness h;
  harness_init(&h);
  /* The rule at a smaller scale: 1 notification per 1 s window, overload
   * after 3 s of withholding with no clean window. */
  h.settings.rate_max_notifications = 1;
  h.settings.rate_window_ms = 1000;
  h.settings.rate_overload_ms = 3000;
  h.settings.flush_interval_ms = 50;
  const char *patterns[] = {"^Error:"};
  MonitorSpec spec = {
      .argv = SH("while :; do echo 'Error: again'; sleep 0.1; done"),
      .patterns = patterns,
      .npatterns = 1,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 30000)) {
    CHECK_INT(monitor_state(h.m), kMonOverloaded);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifOverload);
      CHECK(end->reason != NULL);
    }
    CHECK(eventlog_find(monitor_events(h.m), 0, 1u << kEventOverload) != NULL);
    CHECK(eventlog_find(monitor_events(h.m), 0, 1u << kEventExited) == NULL);
    CHECK(monitor_duration_ms(h.m) >= 3000);
  }
  harness_close(&h);
}

/* The withheld lines the notifications reported, summed over all of them. */
static uint64_t
reported_suppressed(const Harness *h)
{
  uint64_t sum = 0;
  for (size_t i = 0; i < h->nnotes; i++)
    sum += h->notes[i]->suppressed;
  return sum;
}

TEST(suppressed_counter_agrees_with_the_notifications_after_an_overload_stop)
{
  /* Overload in stop mode, with a child that ignores SIGTERM and keeps
   * printing through the kill grace: the lines of the grace are withheld
   * too, reported by the ending notification, and the counter must still
   * count them afterwards (it used to shrink at the ending). */
  Harness h;
  harness_init(&h);
  h.settings.rate_max_notifications = 1;
  h.settings.rate_window_ms = 1000;
  h.settings.rate_overload_ms = 1000;
  h.settings.flush_interval_ms = 20;
  h.settings.kill_grace_ms = 1500;
  const char *patterns[] = {"^Error:"};
  MonitorSpec spec = {
      .argv = SH("trap '' TERM; while :; do echo 'Error: again'; sleep 0.02; done"),
      .patterns = patterns,
      .npatterns = 1,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 60000)) {
    CHECK_INT(monitor_state(h.m), kMonOverloaded);
    Notification *end = harness_ending(&h);
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK(end != NULL && end->suppressed > 0);
    CHECK_INT(c.suppressed, reported_suppressed(&h));
    CHECK_INT(c.muted, 0);
  }
  harness_close(&h);
}

TEST(suppressed_counter_agrees_with_the_notifications_after_an_exit_or_a_stop)
{
  /* The other ending paths: lines withheld by the rate limit and then the
   * process exits by itself, or is stopped; the ending carries the rest. */
  for (int stop = 0; stop < 2; stop++) {
    Harness h;
    harness_init(&h);
    h.settings.rate_max_notifications = 1;
    h.settings.rate_window_ms = 60000;
    h.settings.rate_overload_ms = 600000;
    h.settings.flush_interval_ms = 10;
    h.stop_on_first_output = stop == 1;
    MonitorSpec spec = {
        .argv = SH(stop ? "i=0; while :; do echo line $i; i=$((i+1)); sleep 0.01; done"
                        : "for i in 1 2 3; do echo first $i; done; sleep 0.1; "
                          "for i in 1 2 3 4 5; do echo then $i; done; sleep 0.1; echo last"),
    };
    if (harness_start(&h, &spec) && harness_wait(&h, 30000)) {
      MonitorCounters c;
      monitor_counters(h.m, &c);
      harness_ending(&h);
      CHECK(stop || c.suppressed > 0);
      CHECK_INT(c.suppressed, reported_suppressed(&h));
      CHECK_INT(c.muted, 0);
    }
    harness_close(&h);
  }
}

TEST(overload_in_mute_mode_keeps_the_process_running)
{
  Harness h;
  harness_init(&h);
  h.settings.rate_max_notifications = 1;
  h.settings.rate_window_ms = 1000;
  h.settings.rate_overload_ms = 2000;
  h.settings.flush_interval_ms = 50;
  h.settings.rate_on_overload = kOverloadMute;
  const char *patterns[] = {"^Error:"};
  /* Noisy for about 4 s, then quiet, then exits by itself. */
  MonitorSpec spec = {
      .argv = SH("i=0; while [ $i -lt 40 ]; do echo 'Error: again'; sleep 0.1; i=$((i+1)); "
                 "done; exit 4"),
      .patterns = patterns,
      .npatterns = 1,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 30000)) {
    CHECK_INT(monitor_state(h.m), kMonExited);
    Notification *end = harness_ending(&h);
    if (end)
      CHECK_INT(end->type, kNotifOverload);
    /* The process ran to its own end: the exit is logged as an event. */
    const Event *ev = eventlog_find(monitor_events(h.m), 0, 1u << kEventExited);
    CHECK(ev != NULL);
    if (ev)
      CHECK_INT(ev->exit_code, 4);
    /* What the notifications reported is what the counter says was
     * suppressed; the lines after the ending notification, which no
     * notification can report, are counted apart as muted. */
    MonitorCounters c;
    monitor_counters(h.m, &c);
    CHECK_INT(c.suppressed, reported_suppressed(&h));
    CHECK(c.muted > 0);
  }
  harness_close(&h);
}

TEST(idle_timeout_stops_a_silent_child)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo started; exec sleep 60"), .idle_timeout_ms = 300};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    CHECK_INT(monitor_state(h.m), kMonIdleTimeout);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifIdleTimeout);
      CHECK_INT(end->signal, SIGTERM);
      CHECK_CONTAINS(end->reason, "no output for 300 ms");
    }
    CHECK(monitor_duration_ms(h.m) >= 300);
  }
  harness_close(&h);
}

TEST(output_postpones_the_idle_timeout)
{
  Harness h;
  harness_init(&h);
  /* Output every 100 ms for 1 s keeps a 400 ms idle timeout from firing. */
  MonitorSpec spec = {
      .argv = SH("i=0; while [ $i -lt 10 ]; do echo $i; sleep 0.1; i=$((i+1)); done"),
      .idle_timeout_ms = 400,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 10000))
    CHECK_INT(monitor_state(h.m), kMonExited);
  harness_close(&h);
}

TEST(runtime_cap_times_out)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo working; exec sleep 60"), .timeout_ms = 300};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    CHECK_INT(monitor_state(h.m), kMonTimedOut);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifTimedOut);
      CHECK_CONTAINS(end->reason, "runtime cap of 300 ms");
    }
    CHECK(eventlog_find(monitor_events(h.m), 0, 1u << kEventTimedOut) != NULL);
  }
  harness_close(&h);
}

TEST(notify_none_sends_nothing_notify_exit_only_the_end)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo a; echo b"), .notify = kNotifyNone};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000))
    CHECK_INT(h.nnotes, 0);
  harness_close(&h);

  harness_init(&h);
  MonitorSpec spec2 = {.argv = SH("echo a; echo b"), .notify = kNotifyExit};
  if (harness_start(&h, &spec2) && harness_wait(&h, 10000)) {
    CHECK_INT(h.nnotes, 1);
    harness_ending(&h);
  }
  harness_close(&h);
}

/* Counts active timers on a loop. */
static void
count_active_timers(uv_handle_t *handle, void *arg)
{
  if (handle->type == UV_TIMER && uv_is_active(handle))
    (*(int *)arg)++;
}

static bool
monitor_has_output(void *ctx)
{
  Harness *h = ctx;
  return h->nnotes > 0;
}

TEST(a_quiet_monitor_arms_no_timer)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo hello; exec sleep 60"), .persistent = true};
  if (harness_start(&h, &spec)) {
    int active = -1;
    /* Before the first line: nothing pending at all. */
    if (RUN_UNTIL(&h.loop, monitor_has_output, &h, 10000, "the first batch")) {
      /* The batch went out; nothing is pending any more. */
      active = 0;
      uv_walk(&h.loop, count_active_timers, &active);
      CHECK_INT(active, 0);
    }
    monitor_stop(h.m, SIGTERM, 0);
    harness_wait(&h, 10000);
  }
  harness_close(&h);
}

TEST(unknown_program_is_command_not_found_and_leaves_nothing)
{
  Harness h;
  harness_init(&h);
  VigilError err = VIGIL_ERROR_INIT;
  MonitorSpec spec = {.argv = (char *const[]){"vigil-no-such-program", NULL}};
  Monitor *m = monitor_start(&h.loop, &h.settings, &spec, &harness_hooks, &h, &err);
  CHECK(m == NULL);
  CHECK_INT(err.code, kErrCommandNotFound);
  CHECK_CONTAINS(err.msg, "vigil-no-such-program");
  CHECK_INT(h.nnotes, 0);
  CHECK_INT(h.nevents, 0);
  harness_close(&h);
}

TEST(non_executable_file_is_command_not_found)
{
  Harness h;
  harness_init(&h);
  char dir[] = "/tmp/vigil-test-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/script.sh", dir);
  FILE *f = fopen(path, "w");
  fputs("#!/bin/sh\necho hi\n", f);
  fclose(f);
  chmod(path, 0644);
  VigilError err = VIGIL_ERROR_INIT;
  MonitorSpec spec = {.argv = (char *const[]){path, NULL}};
  Monitor *m = monitor_start(&h.loop, &h.settings, &spec, &harness_hooks, &h, &err);
  CHECK(m == NULL);
  CHECK_INT(err.code, kErrCommandNotFound);
  CHECK_CONTAINS(err.msg, "not executable");
  unlink(path);
  rmdir(dir);
  harness_close(&h);
}

TEST(bad_arguments_are_refused_naming_bound_and_value)
{
  Harness h;
  harness_init(&h);
  VigilError err = VIGIL_ERROR_INIT;
  MonitorSpec spec = {.argv = SH("true"), .idle_timeout_ms = 3600001};
  CHECK(monitor_start(&h.loop, &h.settings, &spec, &harness_hooks, &h, &err) == NULL);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_STR(err.msg, "invalid_params: idle_timeout_ms must be 0..3600000, got 3600001");

  error_clear(&err);
  const char *bad[] = {"ok", "(unclosed"};
  MonitorSpec spec2 = {.argv = SH("true"), .patterns = bad, .npatterns = 2};
  CHECK(monitor_start(&h.loop, &h.settings, &spec2, &harness_hooks, &h, &err) == NULL);
  CHECK_INT(err.code, kErrInvalidPattern);
  CHECK_CONTAINS(err.msg, "patterns[1]");

  error_clear(&err);
  const char *many[33];
  for (int i = 0; i < 33; i++)
    many[i] = "x";
  MonitorSpec spec3 = {.argv = SH("true"), .patterns = many, .npatterns = 33};
  CHECK(monitor_start(&h.loop, &h.settings, &spec3, &harness_hooks, &h, &err) == NULL);
  CHECK_INT(err.code, kErrLimitExceeded);
  CHECK_CONTAINS(err.msg, "33");

  error_clear(&err);
  MonitorSpec spec4 = {.argv = SH("true"), .timeout_ms = h.settings.max_runtime_ms + 1};
  CHECK(monitor_start(&h.loop, &h.settings, &spec4, &harness_hooks, &h, &err) == NULL);
  CHECK_CONTAINS(err.msg, "timeout_ms must be 1..1800000");
  CHECK_INT(h.nnotes, 0);
  harness_close(&h);
}

TEST(events_record_start_matches_and_exit_in_order)
{
  Harness h;
  harness_init(&h);
  const char *patterns[] = {"^panic:", "^Error:"};
  MonitorSpec spec = {
      .argv = SH("echo 'Error: one' >&2; echo 'fine'; echo 'panic: two' >&2; exit 1"),
      .patterns = patterns,
      .npatterns = 2,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 10000)) {
    StrBuf sb = STRBUF_INIT;
    eventlog_render(monitor_events(h.m), 0, monitor_pattern_sources(h.m),
                    monitor_pattern_count(h.m), &sb);
    const char *text = strbuf_cstr(&sb);
    CHECK_CONTAINS(text, "] ");
    CHECK_CONTAINS(text, " started\n");
    CHECK_CONTAINS(text, "match (pattern 1 \"^Error:\") Error: one\n");
    CHECK_CONTAINS(text, "match (pattern 0 \"^panic:\") panic: two\n");
    CHECK_CONTAINS(text, "exited exit=1\n");
    CHECK(strncmp(text, "[1] ", 4) == 0);
    CHECK_INT(monitor_events(h.m)->count, 4);
    strbuf_free(&sb);
  }
  harness_close(&h);
}

TEST(envelope_of_a_real_batch_names_label_not_command)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("echo 'secret-command-output'"), .label = "web"};
  if (harness_start(&h, &spec) && harness_wait(&h, 10000) && h.nnotes > 0) {
    StrBuf sb = STRBUF_INIT;
    envelope_render(h.notes[0], &sb);
    CHECK_CONTAINS(strbuf_cstr(&sb), "untrusted_observation");
    CHECK_CONTAINS(strbuf_cstr(&sb), "[stdout seq=1] secret-command-output");
    CHECK_CONTAINS(strbuf_cstr(&sb), "web");
    CHECK(strstr(strbuf_cstr(&sb), "/bin/sh") == NULL);
    strbuf_free(&sb);
  }
  harness_close(&h);
}

TEST(freeing_a_running_monitor_kills_its_group)
{
  Harness h;
  harness_init(&h);
  MonitorSpec spec = {.argv = SH("sleep 60 & sleep 60"), .persistent = true};
  if (harness_start(&h, &spec)) {
    pid_t pid = monitor_pid(h.m);
    CHECK(test_pid_alive(pid));
    monitor_free(h.m);
    h.m = NULL;
    test_loop_close(&h.loop);
    /* The whole group is gone, the background sleep included (SIGKILL was
     * sent; each process still has to be scheduled to die). */
    CHECK(test_wait_group_gone(pid, 10000));
    CHECK(!test_pid_alive(pid));
    uv_loop_init(&h.loop); /* harness_close closes it again */
  }
  harness_close(&h);
}

TEST(the_loop_stays_alive_until_the_exit_is_seen)
{
  /* An embedder may simply run the loop until it has nothing left to do.
   * That must not end before the monitor does, even when both pipes reach
   * EOF well before the child exits: this child closes both streams, then
   * lives on for a moment, and it is persistent, so no runtime-cap timer
   * keeps the loop alive either. */
  for (int i = 0; i < 3; i++) {
    Harness h;
    harness_init(&h);
    MonitorSpec spec = {.argv = SH("exec >&- 2>&-; sleep 0.2"), .persistent = true};
    if (!harness_start(&h, &spec)) {
      harness_close(&h);
      return;
    }
    uv_run(&h.loop, UV_RUN_DEFAULT);
    CHECK(h.finished);
    harness_close(&h);
    if (!h.finished)
      return;
  }
}

int
main(void)
{
  RUN(normal_exit_delivers_lines_then_exit);
  RUN(nonzero_exit_code_reported);
  RUN(killed_by_own_signal_is_exited_with_signal);
  RUN(stop_escalates_to_sigkill_for_a_child_ignoring_sigterm);
  RUN(grandchild_holding_the_pipe_cannot_stall_the_end);
  RUN(partial_last_line_is_delivered_before_the_end);
  RUN(binary_output_is_flagged_and_kept_raw_in_the_capture);
  RUN(a_100kb_line_is_cut_and_counted);
  RUN(ansi_coloured_stderr_matches_error_pattern);
  RUN(match_streams_limits_matching_to_one_stream);
  RUN(flood_on_both_streams_is_rate_limited_and_accounted);
  RUN(batch_window_is_not_postponed_by_a_steady_stream);
  RUN(batch_closes_early_at_max_lines);
  RUN(sustained_overload_stops_the_process_group);
  RUN(suppressed_counter_agrees_with_the_notifications_after_an_overload_stop);
  RUN(suppressed_counter_agrees_with_the_notifications_after_an_exit_or_a_stop);
  RUN(overload_in_mute_mode_keeps_the_process_running);
  RUN(idle_timeout_stops_a_silent_child);
  RUN(output_postpones_the_idle_timeout);
  RUN(runtime_cap_times_out);
  RUN(notify_none_sends_nothing_notify_exit_only_the_end);
  RUN(a_quiet_monitor_arms_no_timer);
  RUN(unknown_program_is_command_not_found_and_leaves_nothing);
  RUN(non_executable_file_is_command_not_found);
  RUN(bad_arguments_are_refused_naming_bound_and_value);
  RUN(events_record_start_matches_and_exit_in_order);
  RUN(envelope_of_a_real_batch_names_label_not_command);
  RUN(freeing_a_running_monitor_kills_its_group);
  RUN(the_loop_stays_alive_until_the_exit_is_seen);
  return check_summary();
}
