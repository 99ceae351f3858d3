/*
 * A monitor whose source is a file or a WebSocket, not a process (see
 * monitor_internal.h; docs/sources.md). The source's bytes enter the
 * intake as the stdout stream, so lines, patterns, incidents, batches and
 * the envelope are the same as for a process; what a file source notes (a
 * truncation, a deletion, the file reappearing) is told as an output
 * notification with a reason, as a restart is, and logged.
 *
 * There is no process: no pid, no keeper, no restart. A stop, the runtime
 * cap and the idle timeout close the source and the monitor ends from the
 * loop (its restart_timer, which a source never needs otherwise), stopped,
 * timed_out or idle_timeout as a process would; a file reopen the judging
 * refuses ends it failed, and so does a WebSocket that cannot connect, fails
 * its handshake or breaks the protocol; a WebSocket the server closes ends
 * it exited. The reason says which. The ending has no exit code; its
 * duration is the time the source was followed.
 */
#include "monitor/monitor_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/memory.h"
#include "base/strbuf.h"

static FileSourceOptions
monitor_source_options(const MonitorSpec *spec)
{
  FileSourceOptions o = {
    .path = spec->source_file,
    .roots = spec->workspace_roots,
    .nroots = spec->nroots,
    .from = spec->source_from,
    .offset = spec->source_offset,
  };
  return o;
}

static void
monitor_source_output(void *data, const char *buf, size_t len)
{
  monitor__on_output(data, kStreamStdout, buf, len);
}

static void
monitor_source_note(void *data, const char *text)
{
  Monitor *m = data;
  LOG_INFO("monitor", "%s: %s", m->id, text);
  monitor__tell(m, text);
}

/* Keeps what the source counted and closes it. */
void
monitor_source__close(Monitor *m)
{
  if (m->file != NULL) {
    filesrc_counters(m->file, &m->file_counters);
    m->file_offset = filesrc_offset(m->file);
    filesrc_close(m->file);
    m->file = NULL;
  }
  if (m->ws != NULL) {
    wssrc_counters(m->ws, &m->ws_counters);
    wssrc_close(m->ws);
    m->ws = NULL;
  }
}

/* See monitor_internal.h. */
bool
monitor_source__given(const MonitorSpec *spec)
{
  return spec->source_file != NULL || spec->source_ws != NULL;
}

/* See monitor_internal.h. */
bool
monitor_source__is(const Monitor *m)
{
  return m->file_path != NULL || m->ws_url != NULL;
}

/* See monitor_internal.h. */
const char *
monitor_source__name(const Monitor *m)
{
  if (m->file != NULL)
    return filesrc_real_path(m->file);
  return m->ws_url != NULL ? m->ws_url : m->file_path;
}

/* The restart_timer's callback for a file source: the ending, from the
 * loop. The partial last line becomes a line first. */
static void
monitor_source_end_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  if (m->finished)
    return;
  monitor__on_eof(m, kStreamStdout);
  m->exit = (ProcExit){0};
  m->exit.duration_ms = uv_now(m->loop) - m->started_mono;
  monitor__end(m);
}

static void
monitor_source_fail(void *data, const char *reason)
{
  Monitor *m = data;
  LOG_WARN("monitor", "%s: %s", m->id, reason);
  StrBuf words = STRBUF_INIT;
  strbuf_printf(&words, "the file can no longer be followed: %s", reason);
  monitor_source__terminate(m, kMonFailed, strbuf_cstr(&words));
  strbuf_free(&words);
}

/* The WebSocket is over: the server closed it, or it failed. */
static void
monitor_source_ws_end(void *data, bool failed, const char *reason)
{
  Monitor *m = data;
  if (failed)
    LOG_WARN("monitor", "%s: %s", m->id, reason);
  else
    LOG_INFO("monitor", "%s: %s", m->id, reason);
  monitor_source__terminate(m, failed ? kMonFailed : kMonExited, reason);
}

/* See monitor_internal.h. */
int
monitor_source__check(const MonitorSpec *spec, VigilError *err)
{
  if (spec->source_ws != NULL)
    return wssrc_check(spec->source_ws, err);
  FileSourceOptions o = monitor_source_options(spec);
  return filesrc_check(&o, err);
}

/* See monitor_internal.h. */
int
monitor_source__open(Monitor *m, const MonitorSpec *spec, VigilError *err)
{
  if (spec->source_ws != NULL) {
    WsSourceCallbacks wcb = {monitor_source_output, monitor_source_ws_end};
    if (wssrc_open(m->loop, spec->source_ws, &wcb, m, &m->ws, err) != 0)
      return -1;
    m->ws_url = xstrdup(spec->source_ws);
    return 0;
  }
  FileSourceOptions o = monitor_source_options(spec);
  FileSourceCallbacks cb = {monitor_source_output, monitor_source_note, monitor_source_fail};
  if (filesrc_open(m->loop, &o, &cb, m, &m->file, err) != 0)
    return -1;
  m->file_path = xstrdup(spec->source_file);
  return 0;
}

/* See monitor_internal.h. */
MonitorStopResult
monitor_source__terminate(Monitor *m, MonitorState why, const char *reason)
{
  if (m->finished || m->ending != kMonRunning)
    return kMonitorStopAlready;
  m->ending = why;
  free(m->ending_reason);
  m->ending_reason = reason ? xstrdup(reason) : NULL;
  monitor_source__close(m);
  uv_timer_start(monitor__timer(m, &m->restart_timer), monitor_source_end_cb, 0, 0);
  return kMonitorStopping;
}

/* See monitor.h. */
bool
monitor_file_source(const Monitor *m, const char **path, FileSourceCounters *counters,
                    uint64_t *offset)
{
  if (m->file_path == NULL)
    return false;
  *path = m->file_path;
  if (m->file != NULL) {
    filesrc_counters(m->file, counters);
    *offset = filesrc_offset(m->file);
  } else {
    *counters = m->file_counters;
    *offset = m->file_offset;
  }
  return true;
}

/* See monitor.h. */
bool
monitor_ws_source(const Monitor *m, const char **url, WsSourceCounters *counters)
{
  if (m->ws_url == NULL)
    return false;
  *url = m->ws_url;
  if (m->ws != NULL)
    wssrc_counters(m->ws, counters);
  else
    *counters = m->ws_counters;
  return true;
}
