/*
 * A monitor's signal stage (docs/incidents.md; see monitor_internal.h for
 * the module's files): between its lines and its batches. Matching lines
 * and their traces are assembled into incidents (incident.h), each incident
 * is fingerprinted (fingerprint.h) and judged by the coalescer (coalesce.h)
 * *before* the batch and its rate limit, so a repeat never spends the rate
 * limit's budget; what is notified enters the batch as one whole group.
 *
 * Lines that match nothing and find no incident open cost one test here.
 *
 * One timer serves the stage: it is armed for the sooner of the open
 * incidents' quiet deadline and the coalescer's next summary, and only
 * while one of them is pending, so a quiet monitor never wakes the loop.
 *
 * Nothing is lost silently: an incident that is withheld (rate limit,
 * muted), dropped (a policy's route) or coalesced is counted, and the count
 * reaches the agent on the next notification or the ending
 * (monitor_signal__take_counts).
 */
#include "monitor/monitor_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "pipeline/crashpatterns.h"
#include "pipeline/fingerprint.h"
#include "base/memory.h"
#include "base/strbuf.h"

/* See monitor_internal.h. */
void
monitor_signal__init(Monitor *m, const MonitorSpec *spec)
{
  const VigilSettings *settings = &m->settings;
  m->incidents_on = spec->incidents;
  m->envelope = spec->envelope;
  batch_set_group_caps(&m->batch, (size_t)settings->incident_max_lines + 1,
                       (size_t)settings->incident_max_bytes);
  assembler_init(&m->assembler, (size_t)settings->incident_max_lines,
                 (size_t)settings->incident_max_bytes, (uint64_t)settings->incident_quiet_ms,
                 monitor__incident_done, monitor__incident_plain, m);
  assembler_set_max_open(&m->assembler, (uint64_t)settings->incident_max_open_ms);
  coalesce_init(&m->coalescer, (uint64_t)settings->incident_coalesce_ms,
                (uint64_t)settings->incident_summary_after_ms,
                (size_t)settings->incident_fingerprints_max);
  incidentlog_init(&m->history, (size_t)settings->incident_history_max);
}

/* --- the timer ---------------------------------------------------------- */

static void monitor_signal_timer_cb(uv_timer_t *t);

/* Arms the stage's timer for its next deadline, or stops it. */
static void
monitor_signal_arm(Monitor *m)
{
  if (!m->timers_ready)
    return;
  uint64_t due = assembler_deadline(&m->assembler);
  uint64_t summary = coalesce_deadline(&m->coalescer);
  if (summary < due)
    due = summary;
  if (due == UINT64_MAX) {
    uv_timer_stop(&m->signal_timer);
    return;
  }
  uint64_t now = uv_now(m->loop);
  uv_timer_start(&m->signal_timer, monitor_signal_timer_cb, due > now ? due - now : 0, 0);
}

/* --- into the batch ----------------------------------------------------- */

/* Arms the batch timer for the open batch's deadline, or delivers it now
 * when that has passed (an incident that took longer than the window to
 * assemble is delivered as soon as it is whole). */
static void
monitor_signal_batch_due(Monitor *m)
{
  uint64_t now = uv_now(m->loop);
  uint64_t due = batch_deadline(&m->batch);
  if (due <= now) {
    monitor__flush(m);
    return;
  }
  uv_timer_start(&m->batch_timer, monitor__batch_timer_cb, due - now, 0);
}

/* Adds an incident's lines (lines[0..nlines) of inc, or one summary line)
 * to the batch as one group. The batch window counts from the incident's
 * first line (opened_at), so assembling a trace does not add a window. */
static void
monitor_signal_batch(Monitor *m, const NoteIncident *info, uint64_t opened_at,
                     const IncidentLine *lines, size_t nlines, const char *text)
{
  if (m->muted || m->ending_sent) {
    if (info->summary) {
      m->incidents_coalesced_unreported += info->repeats;
    } else {
      m->incidents_withheld_unreported++;
      m->incidents_withheld_total++;
    }
    monitor__hold_back(m, nlines);
    return;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < nlines; i++)
    bytes += lines[i].len;
  if (!batch_fits_group(&m->batch, nlines, bytes))
    monitor__flush(m);
  bool opening = batch_empty(&m->batch);
  batch_begin_group(&m->batch, opened_at, info);
  for (size_t i = 0; i < nlines; i++) {
    monitor__batch_note(m, lines[i].stream, lines[i].nr);
    batch_add(&m->batch, opened_at, lines[i].seq, lines[i].stream, lines[i].pattern,
              lines[i].flags, text + lines[i].off, lines[i].len);
  }
  if (!info->summary)
    m->batch_incidents++;
  if (batch_end_group(&m->batch)) {
    monitor__flush(m);
    return;
  }
  if (opening)
    monitor_signal_batch_due(m);
}

/* Under notify "lines", a coalesced repeat's lines go out as ordinary
 * lines: that mode promises every line. */
static void
monitor_signal_plain(Monitor *m, const Incident *inc, size_t from, size_t to)
{
  if (m->notify != kNotifyLines)
    return;
  for (size_t i = from; i < to; i++) {
    const IncidentLine *l = &inc->lines[i];
    monitor__batch_line(m, l->seq, l->nr, (StreamId)l->stream, l->pattern, l->flags,
                       incident_line_text(inc, i), l->len);
  }
}

/* The name of a built-in pattern, or NULL for a caller's. */
static const char *
monitor_pattern_name(const Monitor *m, int pattern)
{
  if (!m->builtin_patterns || pattern < 0)
    return NULL;
  return monitor_pattern_label(m, (size_t)pattern);
}

/* The entry a notification gets for an incident. */
static NoteIncident
monitor_signal_info(const Monitor *m, const Incident *inc, uint64_t fp)
{
  NoteIncident info;
  memset(&info, 0, sizeof info);
  info.id = inc->id;
  info.kind = (int)incident_kind(inc);
  info.fingerprint = fp;
  info.pattern = inc->pattern;
  info.pattern_name = monitor_pattern_name(m, inc->pattern);
  info.first_seq = inc->lines[0].seq;
  info.last_seq = inc->lines[0].seq;
  for (size_t i = 1; i < inc->nlines; i++)
    if (inc->lines[i].seq > info.last_seq)
      info.last_seq = inc->lines[i].seq;
  info.truncated_lines = inc->truncated_lines;
  return info;
}

/* A summary's entry and its one line, into the batch (or, for the ending,
 * into n). */
static NoteIncident
monitor_summary_info(const Monitor *m, const CoalesceSummary *s)
{
  NoteIncident info;
  memset(&info, 0, sizeof info);
  info.id = s->incident_id;
  info.kind = s->kind;
  info.fingerprint = s->fingerprint;
  info.pattern = s->pattern;
  info.pattern_name = monitor_pattern_name(m, s->pattern);
  info.first_seq = s->last_seq;
  info.last_seq = s->last_seq;
  info.repeats = s->repeats;
  info.repeat_span_ms = s->span_ms;
  info.repeat_last_at = s->last_wall;
  info.summary = true;
  return info;
}

/* Logs the repeat_summary event of a series. */
static void
monitor_summary_event(Monitor *m, const CoalesceSummary *s)
{
  NoteIncident info = monitor_summary_info(m, s);
  monitor__event_incident(m, kEventRepeatSummary, s->pattern, s->last_line, s->last_len, NULL,
                         &info, 0);
}

/* A series went quiet (or was cut short): its summary is batched. */
static void
monitor_signal_summary(Monitor *m, CoalesceSummary *s)
{
  monitor_summary_event(m, s);
  if (m->notify == kNotifyMatches || m->notify == kNotifyLines) {
    NoteIncident info = monitor_summary_info(m, s);
    /* nr 0: a count of repeats already decided, not a line a restart
     * could tell again (the coalescing table is not kept). */
    IncidentLine line = {.seq = s->last_seq, .stream = s->last_stream, .pattern = s->pattern,
                         .family = kTraceNone, .off = 0, .len = s->last_len, .nr = 0};
    monitor_signal_batch(m, &info, uv_now(m->loop), &line, 1, s->last_line ? s->last_line : "");
  }
  coalesce_summary_free(s);
}

/* --- incidents ---------------------------------------------------------- */

/* An incident to be notified tells the repeats of its fingerprint since it
 * was last notified (prior, from coalesce_judge): they go into info and the
 * event log, and prior is freed. */
static void
monitor_signal_prior(Monitor *m, NoteIncident *info, CoalesceSummary *prior)
{
  if (prior->repeats == 0)
    return;
  info->repeats = prior->repeats;
  info->repeat_span_ms = prior->span_ms;
  info->repeat_last_at = prior->last_wall;
  monitor_summary_event(m, prior);
  coalesce_summary_free(prior);
}

/* The assembler closed an incident: record it, fingerprint it, and notify
 * it or count it as a repeat. */
void
monitor__incident_done(void *ctx, Incident *inc)
{
  Monitor *m = ctx;
  const IncidentLine *sig = incident_signature(inc);
  const char *sig_text = inc->text + sig->off;
  uint64_t fp = fingerprint_of(sig_text, sig->len, inc->pattern);
  NoteIncident info = monitor_signal_info(m, inc, fp);
  incidentlog_add(&m->history, &info, inc);
  m->incidents_total++;
  /* An ignored fingerprint (the agent said so): logged and counted before
   * the coalescer sees it, so it neither wakes anyone nor opens a series. */
  if (m->hooks.is_ignored != NULL && m->hooks.is_ignored(m->data, m, fp)) {
    m->incidents_ignored_total++;
    monitor__event_incident(m, kEventIncident, inc->pattern, incident_line_text(inc, 0),
                           inc->lines[0].len, "ignored", &info,
                           inc->nlines + inc->truncated_lines);
    incident_free(inc);
    return;
  }

  CoalesceSummary prior;
  CoalesceVerdict verdict = kCoalesceNotify;
  bool delivering = m->notify == kNotifyMatches || m->notify == kNotifyLines;
  /* Judged at the time its first line came (opened_at, uv_now's clock),
   * not when it closed, so that a repeat's span is the time between the
   * failures themselves, whatever kept each open. */
  uint64_t now = uv_now(m->loop);
  uint64_t at = inc->opened_at <= now ? inc->opened_at : now;
  if (delivering)
    verdict = coalesce_judge(&m->coalescer, at, clock_now_ms() - (int64_t)(now - at), fp, inc->id,
                             inc->pattern, info.kind, inc->lines[0].seq, inc->lines[0].stream,
                             incident_line_text(inc, 0), inc->lines[0].len, &prior);
  monitor__event_incident(m, kEventIncident, inc->pattern, incident_line_text(inc, 0),
                         inc->lines[0].len,
                         verdict == kCoalesceRepeat ? "repeat (coalesced)" : NULL, &info,
                         inc->nlines + inc->truncated_lines);
  CoalesceSummary evicted;
  if (coalesce_take_evicted(&m->coalescer, &evicted))
    monitor_signal_summary(m, &evicted);
  if (verdict == kCoalesceRepeat) {
    monitor_signal_plain(m, inc, 0, inc->nlines);
  } else if (delivering) {
    monitor_signal_prior(m, &info, &prior);
    monitor_signal_batch(m, &info, inc->opened_at, inc->lines, inc->nlines, inc->text);
  }
  incident_free(inc);
}

/* --- health changes ------------------------------------------------------ */

/* The incident entry of a health change whose lines are n's. */
static NoteIncident
monitor_health_info(Monitor *m, const Notification *n, const char *change, uint64_t fp)
{
  NoteIncident info;
  memset(&info, 0, sizeof info);
  info.id = assembler_take_id(&m->assembler);
  info.kind = kIncidentHealth;
  info.fingerprint = fp;
  info.pattern = -1;
  info.pattern_name = change;
  info.nlines = n->nlines;
  if (n->nlines > 0) {
    info.first_seq = n->lines[0].seq;
    info.last_seq = n->lines[n->nlines - 1].seq;
  }
  return info;
}

/* Records a health incident in the history by its lines' seqs. */
static void
monitor_health_record(Monitor *m, const NoteIncident *info, const Notification *n)
{
  uint64_t *seqs = xmalloc((n->nlines ? n->nlines : 1) * sizeof *seqs);
  for (size_t i = 0; i < n->nlines; i++)
    seqs[i] = n->lines[i].seq;
  incidentlog_add_seqs(&m->history, info, seqs, n->nlines);
  free(seqs);
}

/* See monitor_internal.h. The fingerprint is made of the change and the
 * probe's target in the normal form (so a port that moves between runs
 * does not make it another one), never of the lines, which differ each
 * time. Like an assembled incident it is counted and kept in the history,
 * an ignored fingerprint is logged and not told, and a repeat within the
 * coalescing window is counted into its series. */
void
monitor_signal__health(Monitor *m, const char *change, const char *target, const char *words)
{
  Notification *n = notification_new(kNotifOutput, m->id, m->label, m->mode);
  monitor__copy_last_lines(m, n);
  StrBuf key = STRBUF_INIT;
  strbuf_printf(&key, "health %s %s", change, target);
  uint64_t fp = fingerprint_of(strbuf_cstr(&key), key.len, -1);
  strbuf_free(&key);
  NoteIncident info = monitor_health_info(m, n, change, fp);
  monitor_health_record(m, &info, n);
  m->incidents_total++;

  bool ignored = m->hooks.is_ignored != NULL && m->hooks.is_ignored(m->data, m, fp);
  bool delivering = m->notify == kNotifyMatches || m->notify == kNotifyLines;
  CoalesceVerdict verdict = kCoalesceNotify;
  CoalesceSummary prior;
  memset(&prior, 0, sizeof prior);
  if (ignored) {
    m->incidents_ignored_total++;
  } else if (delivering) {
    const NoteLine *first = n->nlines > 0 ? &n->lines[0] : NULL;
    verdict = coalesce_judge(&m->coalescer, uv_now(m->loop), clock_now_ms(), fp, info.id, -1,
                             info.kind, info.first_seq, first ? first->stream : 0,
                             first ? first->text : "", first ? first->len : 0, &prior);
  }
  StrBuf why = STRBUF_INIT;
  strbuf_puts(&why, words);
  if (ignored)
    strbuf_puts(&why, " (ignored)");
  else if (verdict == kCoalesceRepeat)
    strbuf_puts(&why, " (repeat, coalesced)");
  monitor__event_incident(m, kEventIncident, -1, NULL, 0, strbuf_cstr(&why), &info, n->nlines);
  strbuf_free(&why);
  CoalesceSummary evicted;
  if (coalesce_take_evicted(&m->coalescer, &evicted))
    monitor_signal_summary(m, &evicted);
  monitor_signal_arm(m); /* a new series' summary is due some time */

  if (ignored || verdict == kCoalesceRepeat || m->notify == kNotifyNone) {
    notification_free(n);
    return;
  }
  monitor_signal_prior(m, &info, &prior);
  monitor__flush(m); /* what came before it goes before it */
  if (m->muted || m->ending_sent) {
    m->incidents_withheld_unreported++;
    m->incidents_withheld_total++;
    notification_free(n);
    return;
  }
  notification_add_incident(n, &info);
  if (!monitor__notice(m, n, words)) {
    m->incidents_withheld_unreported++;
    m->incidents_withheld_total++;
  }
}

/* See monitor_internal.h. */
void
monitor__incident_plain(void *ctx, const AssemblerLine *line)
{
  Monitor *m = ctx;
  if (m->notify == kNotifyLines)
    monitor__batch_line(m, line->seq, line->nr, (StreamId)line->stream, line->pattern,
                       line->flags, line->text, line->len);
}

/* See monitor_internal.h. The built-in set is compiled once, at the first
 * caller's pattern that matches, and kept for the engine's life: it is read
 * only on matching lines, which are rare. */
TraceFamily
monitor_signal__family(const char *text, size_t len, bool *generic_header)
{
  static PatternSet *builtin;
  static bool failed;
  *generic_header = false;
  if (builtin == NULL && !failed) {
    MatchLimits limits = {crashpatterns_count(), 65536, 1000000, 10000};
    VigilError err = VIGIL_ERROR_INIT;
    builtin = match_compile(crashpatterns_sources(), crashpatterns_count(), &limits, "patterns",
                            &err);
    failed = builtin == NULL;
  }
  int i = builtin ? match_line(builtin, text, len) : -1;
  if (i < 0)
    return kTraceGeneric;
  const CrashPattern *cp = crashpatterns_get((size_t)i);
  *generic_header = cp->generic_header;
  return cp->family;
}

/* See monitor_internal.h. */
bool
monitor_signal__line(Monitor *m, StreamId stream, uint64_t seq, uint64_t nr, int pattern,
                    const Line *line)
{
  if (!m->incidents_on || (pattern < 0 && !assembler_busy(&m->assembler)))
    return false;
  AssemblerLine al = {seq,        stream,     pattern,   kTraceGeneric, false,
                      line->flags, line->text, line->len, nr};
  if (pattern >= 0 && m->builtin_patterns) {
    const CrashPattern *cp = crashpatterns_get((size_t)pattern);
    al.family = cp->family;
    al.generic_header = cp->generic_header;
  } else if (pattern >= 0) {
    al.family = monitor_signal__family(line->text, line->len, &al.generic_header);
  }
  bool taken = assembler_feed(&m->assembler, uv_now(m->loop), &al);
  monitor_signal_arm(m);
  return taken;
}

/* The stage's timer: incidents gone quiet close, series gone quiet are
 * summarised. */
static void
monitor_signal_timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  uint64_t now = uv_now(m->loop);
  assembler_expire(&m->assembler, now);
  CoalesceSummary s;
  while (coalesce_take_due(&m->coalescer, now, false, &s))
    monitor_signal_summary(m, &s);
  monitor_signal_arm(m);
}

/* See monitor_internal.h. */
void
monitor_signal__close_stream(Monitor *m, StreamId stream)
{
  if (!m->incidents_on)
    return;
  assembler_close(&m->assembler, (int)stream);
  monitor_signal_arm(m);
}

/* See monitor_internal.h. */
void
monitor_signal__pause(Monitor *m)
{
  if (m->incidents_on)
    assembler_close(&m->assembler, -1);
  monitor__flush(m);
  if (m->incidents_on)
    monitor_signal_arm(m);
}

/* See monitor_internal.h. */
void
monitor_signal__finish(Monitor *m, Notification *ending)
{
  if (!m->incidents_on)
    return;
  assembler_close(&m->assembler, -1);
  monitor__flush(m);
  if (m->timers_ready)
    uv_timer_stop(&m->signal_timer);
  CoalesceSummary s;
  while (coalesce_take_due(&m->coalescer, 0, true, &s)) {
    monitor_summary_event(m, &s);
    if (ending) {
      NoteIncident info = monitor_summary_info(m, &s);
      info.first_line = ending->nlines;
      info.nlines = 1;
      notification_add_line(ending, s.last_seq, s.last_stream, s.pattern, false, s.last_line,
                            s.last_len);
      notification_add_incident(ending, &info);
    }
    coalesce_summary_free(&s);
  }
}

/* See monitor_internal.h. */
void
monitor_signal__take_counts(Monitor *m, Notification *n)
{
  n->incidents_withheld = m->incidents_withheld_unreported;
  n->incidents_coalesced = m->incidents_coalesced_unreported;
  n->incidents_dropped = m->incidents_dropped_unreported;
  m->incidents_withheld_unreported = 0;
  m->incidents_coalesced_unreported = 0;
  m->incidents_dropped_unreported = 0;
}

/* See monitor_internal.h: the incidents of a batch the rate limit withheld. */
void
monitor_signal__withheld(Monitor *m, const Batch *b)
{
  for (size_t i = 0; i < batch_group_count(b); i++) {
    const NoteIncident *g = batch_group(b, i);
    if (g->summary) {
      m->incidents_coalesced_unreported += g->repeats;
    } else {
      m->incidents_withheld_unreported++;
      m->incidents_withheld_total++;
    }
  }
}

/* See monitor.h. */
void
monitor_count_policy_drop(Monitor *m, const Notification *n)
{
  m->policy_dropped++;
  /* What n would have told the agent is told by the next one instead. */
  m->suppressed_carry += n->suppressed;
  m->incidents_withheld_unreported += n->incidents_withheld;
  m->incidents_coalesced_unreported += n->incidents_coalesced;
  m->incidents_dropped_unreported += n->incidents_dropped;
  for (size_t i = 0; i < n->nincidents; i++) {
    if (n->incidents[i].summary) {
      m->incidents_coalesced_unreported += n->incidents[i].repeats;
    } else {
      m->incidents_dropped_unreported++;
      m->incidents_dropped_total++;
    }
  }
}
