/*
 * A monitor's intake (steps 2 to 5 of docs/core.md, "The data path"; see
 * monitor_internal.h for the module's files): a read chunk becomes
 * captured bytes, lines in the ring and matches; a matching line goes on to
 * the signal stage (monitor_signal.c), an ordinary one to the outlet
 * (monitor_outlet.c). A line only ever moves forward: intake, signal,
 * outlet.
 */
#include "monitor/monitor_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/memory.h"
#include "proc/keeper_wire.h"

/* --- lines ------------------------------------------------------------- */

/* Whether patterns apply to a stream under the match_streams setting. */
static bool
monitor_matches_stream(const Monitor *m, StreamId stream)
{
  switch (m->match_streams) {
  case kStreamsStdout:
    return stream == kStreamStdout;
  case kStreamsStderr:
    return stream == kStreamStderr;
  default:
    return true;
  }
}

static void monitor_on_line_pass(MonitorStream *ms, const Line *line, uint64_t seq,
                                 int pattern, uint64_t nr);

/* One complete line from a stream: match it, keep it, log and batch it. */
static void
monitor_on_line(void *ctx, const Line *line)
{
  MonitorStream *ms = ctx;
  Monitor *m = ms->m;
  int pattern = -1;
  if (m->npatterns > 0 && monitor_matches_stream(m, ms->stream))
    pattern = match_line_in_chunk(m->patterns, &ms->chunk, line->text, line->len);
  uint64_t nr = ++m->stream_nr[ms->stream];
  /* A line that is its raw bytes is kept as their offset in the capture
   * (ring.h), which holds them already. */
  uint64_t seq = line->raw ? ring_push_raw(&m->ring, ms->stream, line->text, line->len,
                                           &m->capture[ms->stream], line->offset, pattern,
                                           line->flags)
                           : ring_push(&m->ring, ms->stream, line->text, line->len, pattern,
                                       line->flags);
  if (m->replay_silent)
    return; /* already told by the engine before (monitor_replay) */
  monitor_on_line_pass(ms, line, seq, pattern, nr);
  /* After the line went its way: a ready notification follows it. */
  if (m->ready != NULL) {
    RingLine rl = {seq, ms->stream, pattern, line->flags, line->text, line->len};
    monitor_ready__line(m, &rl);
  }
}

/* monitor_on_line's telling of a line: its match event, the signal stage
 * or the batch. */
static void
monitor_on_line_pass(MonitorStream *ms, const Line *line, uint64_t seq, int pattern,
                     uint64_t nr)
{
  Monitor *m = ms->m;
  if (pattern >= 0)
    monitor__event(m, kEventMatch, pattern, line->text, line->len, false, 0, 0, NULL);
  if (nr <= m->told_floor[ms->stream])
    return; /* decided by the engine before: counted again, never told again */
  if (monitor_signal__line(m, ms->stream, seq, nr, pattern, line))
    return;
  bool wanted = m->notify == kNotifyLines || (m->notify == kNotifyMatches && pattern >= 0);
  if (!wanted)
    return;
  if (m->muted || m->ending_sent) {
    monitor__hold_back(m, 1);
    return;
  }
  monitor__batch_line(m, seq, nr, ms->stream, pattern, line->flags, line->text, line->len);
}

/* Whether a line that matched nothing needs no more than its count and its
 * place in the ring, as monitor_on_line would find: it is not told (no
 * notify "lines"), no incident is gathering the lines after a match, and
 * no ready condition reads lines; or the lines are a replay, only kept. */
static bool
monitor_unmatched_is_kept_only(Monitor *m)
{
  if (m->replay_silent)
    return true;
  return m->ready == NULL && m->notify != kNotifyLines &&
         !(m->incidents_on && assembler_busy(&m->assembler));
}

/* Plain lines of a read (linebuf.h's LineRun), in order. Those the chunk's
 * literal search clears, while unmatched lines are only kept, are counted
 * and pushed to the ring together (ring_push_raw_run); any other goes
 * through monitor_on_line. The same lines, seqs, counters and notices as
 * monitor_on_line one line at a time, without its calls for most lines. */
static void
monitor_on_run(void *ctx, const LineRun *run)
{
  MonitorStream *ms = ctx;
  Monitor *m = ms->m;
  bool matching = m->npatterns > 0 && monitor_matches_stream(m, ms->stream);
  size_t i = 0;
  while (i < run->n) {
    size_t j = i;
    if (monitor_unmatched_is_kept_only(m)) {
      j = run->n;
      if (matching) {
        const char *clear = match_chunk_clear(m->patterns, &ms->chunk, run->base + run->start[i]);
        for (j = i; j < run->n && run->base + run->start[j] + run->len[j] <= clear; j++)
          ;
      }
    }
    if (j > i) {
      m->stream_nr[ms->stream] += j - i;
      ring_push_raw_run(&m->ring, ms->stream, &m->capture[ms->stream], run, i, j);
      i = j;
      continue;
    }
    Line line = {run->base + run->start[i], run->len[i], 0, true, run->offset + run->start[i]};
    monitor_on_line(ms, &line);
    i++;
  }
}

/* Says once in the log that a stream's spool broke (capture.h): the
 * monitor goes on, its output kept in memory and counted. */
static void
monitor_tell_capture_left(Monitor *m, StreamId stream)
{
  m->capture_left_told[stream] = true;
  const Capture *c = &m->capture[stream];
  const char *why = m->keep != NULL ? spool_why(&m->keep->spool[stream]) : NULL;
  LOG_WARN("state", "monitor %s: its %s can no longer be kept in the state directory (%s): "
           "from byte %" PRIu64 " on it is kept in memory only and counted in "
           "state_unkept_bytes, and an engine restart would not have it; the monitor goes on",
           m->id, stream == kStreamStdout ? "stdout" : "stderr", why ? why : "its spool broke",
           c->total - c->state_unkept);
}

/* Bytes read from a stream: captured, split into lines, and the owner told
 * once per read that lines were added. */
void
monitor__on_output(void *data, StreamId stream, const char *buf, size_t len)
{
  Monitor *m = data;
  m->stream_bytes[stream] += len;
  m->last_output_mono = uv_now(m->loop);
  capture_write(&m->capture[stream], buf, len);
  /* The ring's kept lines whose bytes the capture just evicted go too. */
  ring_trim(&m->ring);
  if (m->capture[stream].spool_left && !m->capture_left_told[stream])
    monitor_tell_capture_left(m, stream);
  monitor__take(m, stream, m->capture[stream].total - len, buf, len);
  monitor__checkpoint(m);
}

/* Splits, matches and keeps bytes of a stream (captured already). */
/* See monitor_internal.h. */
void
monitor__take(Monitor *m, StreamId stream, uint64_t at, const char *buf, size_t len)
{
  uint64_t lines_before = m->ring.counters.lines;
  /* Clean lines are handed on as pointers into buf, so buf is searched for
   * the patterns' literals once instead of line by line; the chunk is
   * forgotten before buf is reused. */
  match_chunk_begin(&m->streams[stream].chunk, buf, len);
  m->linebuf[stream].offset = at;
  linebuf_feed_runs(&m->linebuf[stream], buf, len, monitor_on_line, monitor_on_run,
                    &m->streams[stream]);
  match_chunk_begin(&m->streams[stream].chunk, NULL, 0);
  if (m->ring.counters.lines != lines_before && !m->replay_silent)
    monitor_quiet__lines(m);
  if (m->hooks.on_lines && m->ring.counters.lines != lines_before && !m->replay_silent)
    m->hooks.on_lines(m->data, m);
}

/* A stream ended: its partial last line becomes a line. */
void
monitor__on_eof(void *data, StreamId stream)
{
  Monitor *m = data;
  linebuf_finish(&m->linebuf[stream], monitor_on_line, &m->streams[stream]);
  monitor_signal__close_stream(m, stream);
}
