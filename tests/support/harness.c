/*
 * The monitor harness (see harness.h).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"



static void
on_notification(void *data, Monitor *m, Notification *n)
{
  Harness *h = data;
  if (h->nnotes < MAX_NOTES)
    h->notes[h->nnotes++] = n;
  else
    notification_free(n);
  if (n->type == kNotifOutput && h->first_output_at == 0) {
    h->first_output_at = uv_now(&h->loop);
    h->output_while_running = !monitor_finished(m) && monitor_ended_at(m) == 0;
    if (h->stop_on_first_output)
      monitor_stop(m, SIGTERM, 1000);
  }
}

static void
on_event(void *data, Monitor *m, const Event *ev)
{
  Harness *h = data;
  h->nevents++;
}

static void
on_finished(void *data, Monitor *m)
{
  Harness *h = data;
  h->finished = true;
}

const MonitorHooks harness_hooks = {on_notification, on_event, on_finished, NULL, NULL, NULL};

void
harness_init(Harness *h)
{
  memset(h, 0, sizeof *h);
  uv_loop_init(&h->loop);
  settings_defaults(&h->settings);
  h->settings.kill_grace_ms = 300;
  h->settings.exit_drain_ms = 300;
}

static bool
harness_done(void *ctx)
{
  return ((Harness *)ctx)->finished;
}

/* Starts a monitor on argv with the spec's other fields given; fails the test
 * and returns false when the start fails. */
bool
harness_start(Harness *h, MonitorSpec *spec)
{
  VigilError err = VIGIL_ERROR_INIT;
  if (spec->env_inherit == NULL)
    spec->env_inherit = test_env_inherit;
  h->m = monitor_start(&h->loop, &h->settings, spec, &harness_hooks, h, &err);
  if (h->m == NULL) {
    check_fail(__FILE__, __LINE__, "monitor_start failed: %s", err.msg);
    return false;
  }
  return true;
}

bool
harness_wait(Harness *h, uint64_t ms)
{
  return RUN_UNTIL(&h->loop, harness_done, h, ms, "the monitor to finish");
}

void
harness_close(Harness *h)
{
  if (h->m) {
    pid_t pid = monitor_pid(h->m);
    monitor_free(h->m);
    test_loop_close(&h->loop);
    CHECK(!test_pid_alive(pid));
  } else {
    test_loop_close(&h->loop);
  }
  for (size_t i = 0; i < h->nnotes; i++)
    notification_free(h->notes[i]);
}

/* The invariant every test checks: exactly one ending notification, last. */
Notification *
harness_ending(Harness *h)
{
  size_t endings = 0;
  for (size_t i = 0; i < h->nnotes; i++)
    if (notification_is_ending(h->notes[i]->type))
      endings++;
  CHECK_INT(endings, 1);
  if (h->nnotes == 0)
    return NULL;
  Notification *last = h->notes[h->nnotes - 1];
  CHECK(notification_is_ending(last->type));
  return last;
}

/* All output lines delivered, in order, joined by '\n'. */
char *
harness_output_text(Harness *h)
{
  StrBuf sb = STRBUF_INIT;
  for (size_t i = 0; i < h->nnotes; i++) {
    if (h->notes[i]->type != kNotifOutput)
      continue;
    for (size_t j = 0; j < h->notes[i]->nlines; j++) {
      strbuf_append(&sb, h->notes[i]->lines[j].text, h->notes[i]->lines[j].len);
      strbuf_putc(&sb, '\n');
    }
  }
  return strbuf_take(&sb);
}

size_t
harness_count(Harness *h, NotificationType type)
{
  size_t n = 0;
  for (size_t i = 0; i < h->nnotes; i++)
    n += h->notes[i]->type == type;
  return n;
}

