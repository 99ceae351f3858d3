/*
 * The sample notifications (see policysample.h): each one a table of lines
 * and the fields that differ, built the way the engine builds a
 * notification. Built-in pattern indexes are looked up by the patterns'
 * names, so the samples follow the table in crashpatterns.c.
 */
#include "policy/policysample.h"

#include <stdlib.h>
#include <string.h>

#include "pipeline/crashpatterns.h"
#include "base/memory.h"
#include "policy/notification_map.h"
#include "base/signals.h"
#include "spec/stream.h"

const char *const policysample_names[] = {"crash", "loop", "exit", "lines", "overload", NULL};

typedef struct {
  uint64_t seq;
  int stream;
  const char *pattern; /* a built-in pattern's name, "0" for the monitor's first, or NULL */
  const char *text;
} SampleLine;

static int
policysample_pattern(const char *name)
{
  if (name == NULL)
    return -1;
  if (strcmp(name, "0") == 0)
    return 0;
  return crashpatterns_find(name);
}

static Notification *
policysample_new(NotificationType type, const char *id, const char *label,
                 const SampleLine *lines, size_t nlines)
{
  Notification *n = notification_new(type, id, label, kModeIdle);
  n->at_ms = NOTIFICATION_MAP_DEFAULT_AT_MS;
  for (size_t i = 0; i < nlines; i++)
    notification_add_line(n, lines[i].seq, lines[i].stream,
                          policysample_pattern(lines[i].pattern), false, lines[i].text,
                          strlen(lines[i].text));
  return n;
}

/* One crash incident over all of n's lines. */
static void
policysample_crash_incident(Notification *n, uint64_t id, uint64_t fingerprint)
{
  NoteIncident inc = {
    .id = id,
    .kind = 1,
    .fingerprint = fingerprint,
    .first_seq = n->lines[0].seq,
    .last_seq = n->lines[n->nlines - 1].seq,
    .first_line = 0,
    .nlines = n->nlines,
  };
  int p = crashpatterns_find("python-traceback");
  inc.pattern = p;
  inc.pattern_name = p >= 0 ? crashpatterns_get((size_t)p)->name : NULL;
  notification_add_incident(n, &inc);
}

static Notification *
policysample_crash(void)
{
  static const SampleLine lines[] = {
    {3, kStreamStderr, "python-traceback", "Traceback (most recent call last):"},
    {4, kStreamStderr, NULL, "  File \"/app/api.py\", line 12, in handler"},
    {5, kStreamStderr, NULL, "    return users[user_id]"},
    {6, kStreamStderr, "error", "KeyError: 'user_id'"},
  };
  Notification *n = policysample_new(kNotifOutput, "mon_sample0crash", "api", lines, 4);
  n->batch = 1;
  policysample_crash_incident(n, 1, UINT64_C(0x950e1b5cdac3b032));
  return n;
}

static Notification *
policysample_loop(void)
{
  static const SampleLine lines[] = {
    {58, kStreamStderr, "python-traceback", "Traceback (most recent call last):"},
  };
  Notification *n = policysample_new(kNotifOutput, "mon_sample00loop", "worker", lines, 1);
  n->batch = 6;
  policysample_crash_incident(n, 2, UINT64_C(0x3d5a0c9e7b41f826));
  NoteIncident *inc = &n->incidents[0];
  inc->repeats = 5;
  inc->repeat_span_ms = 4200;
  inc->repeat_last_at = n->at_ms - 150;
  inc->summary = true;
  return n;
}

static Notification *
policysample_exit(void)
{
  static const SampleLine lines[] = {
    {1201, kStreamStdout, NULL, "tests/test_api.py::test_create_user PASSED"},
    {1202, kStreamStdout, "0", "tests/test_api.py::test_delete_user FAILED"},
    {1203, kStreamStdout, NULL,
     "=================================== FAILURES ==================================="},
    {1204, kStreamStdout, NULL, "E       AssertionError: assert 404 == 204"},
    {1205, kStreamStdout, NULL,
     "=========================== short test summary info ============================"},
    {1206, kStreamStdout, "0",
     "FAILED tests/test_api.py::test_delete_user - AssertionError: assert 404 == 204"},
    {1207, kStreamStdout, NULL,
     "========================= 1 failed, 41 passed in 83.41s ========================="},
  };
  Notification *n = policysample_new(kNotifExit, "mon_sample00exit", "tests", lines, 7);
  n->state = kMonExited;
  n->has_exit_code = true;
  n->exit_code = 1;
  n->has_duration = true;
  n->duration_ms = 83412;
  return n;
}

static Notification *
policysample_lines(void)
{
  static const SampleLine lines[] = {
    {17, kStreamStdout, NULL, "  VITE v5.4.2  ready in 412 ms"},
    {18, kStreamStdout, NULL, "  \xe2\x9e\x9c  Local:   http://localhost:5173/"},
    {19, kStreamStderr, "0",
     "12:04:31 PM [vite] warning: \"src/App.tsx\" imports \"./Chart\", which has no export"},
    {20, kStreamStdout, NULL, "12:04:33 PM [vite] hmr update /src/App.tsx"},
  };
  Notification *n = policysample_new(kNotifOutput, "mon_sample0lines", "web", lines, 4);
  n->batch = 3;
  return n;
}

static Notification *
policysample_overload(void)
{
  static const SampleLine lines[] = {
    {20511, kStreamStdout, NULL, "DEBUG poll: queue depth 0 (tick 20511)"},
    {20512, kStreamStdout, NULL, "DEBUG poll: queue depth 0 (tick 20512)"},
    {20513, kStreamStdout, NULL, "DEBUG poll: queue depth 0 (tick 20513)"},
  };
  Notification *n = policysample_new(kNotifOverload, "mon_sample0ovrld", "logs", lines, 3);
  n->state = kMonOverloaded;
  n->signal = signals_number("SIGTERM");
  n->has_duration = true;
  n->duration_ms = 47310;
  n->suppressed = 18234;
  n->reason = xstrdup("output withheld by the rate limit for 45000 ms with no clean 10000 ms "
                      "window");
  return n;
}

Notification *
policysample_make(const char *name)
{
  static Notification *(*const make[])(void) = {
    policysample_crash, policysample_loop, policysample_exit, policysample_lines,
    policysample_overload,
  };
  for (size_t i = 0; policysample_names[i]; i++)
    if (strcmp(name, policysample_names[i]) == 0)
      return make[i]();
  return NULL;
}
