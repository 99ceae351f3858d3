/*
 * A monitor's structured event log (see eventlog.h): a circular array of
 * typed events, allocated on the first event so the many monitors that never
 * log more than "started" and "exited" cost one small array each, and capped
 * at event_log_max. When full, the oldest max/10 (at least 1) go at once:
 * dropping in a chunk keeps a crash loop from paying a shift per event, and
 * the count of what went is kept so every rendering can say events were
 * missed. Ids are assigned from next_id, which only grows, so they stay
 * contiguous in the array and a since_id maps to a slot without a search.
 * Only counted events (eventlog_counts) fill the cap; the rest are dropped
 * with the oldest counted ones, always from the front, which keeps the ids
 * contiguous.
 */
#include "pipeline/eventlog.h"
#include "pipeline/incident.h"
#include "base/signals.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/textfmt.h"

static const char *const eventlog_type_names[EVENT_TYPE_COUNT] = {
  "started", "match", "idle_timeout", "timed_out", "overload", "stopped", "exited",
  "incident", "repeat_summary", "restart", "quiet", "resumed", "ready", "not_ready", "health",
};

/* See eventlog.h. */
bool
eventlog_counts(EventType type)
{
  return type != kEventIncident && type != kEventRepeatSummary;
}

/* See eventlog.h. */
size_t
eventlog_slots(size_t max)
{
  return 2 * (max ? max : 1);
}

/* Sets up an empty log that keeps at most max events (0 is taken as 1, so
 * the newest event is always kept). Allocates nothing. */
void
eventlog_init(EventLog *log, size_t max)
{
  memset(log, 0, sizeof *log);
  log->max = max ? max : 1;
  log->next_id = 1;
}

/* The slot of the i-th retained event, oldest first. */
static Event *
eventlog_at(const EventLog *log, size_t i)
{
  return &log->events[(log->head + i) % log->cap];
}

/* Frees what one event owns. */
static void
eventlog_clear_event(Event *ev)
{
  free(ev->line);
  free(ev->reason);
  ev->line = NULL;
  ev->reason = NULL;
}

/* The first slots a log gets: most monitors log a handful of events, so the
 * full cap (1024 by default, 64 KiB) is only reached by a noisy one. */
#define EVENTLOG_FIRST_SLOTS 4

/* Doubles the storage (up to eventlog_slots), unwrapping it so head is 0. */
static void
eventlog_grow(EventLog *log)
{
  size_t cap = log->cap ? log->cap * 2 : EVENTLOG_FIRST_SLOTS;
  if (cap > eventlog_slots(log->max))
    cap = eventlog_slots(log->max);
  Event *events = xcalloc(cap, sizeof *events);
  for (size_t i = 0; i < log->count; i++)
    events[i] = *eventlog_at(log, i);
  free(log->events);
  log->events = events;
  log->cap = cap;
  log->head = 0;
}

/* Drops the n oldest events and counts them. */
static void
eventlog_drop_front(EventLog *log, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    Event *ev = eventlog_at(log, i);
    if (eventlog_counts(ev->type))
      log->counted--;
    else
      log->dropped_incidents++;
    eventlog_clear_event(ev);
  }
  log->head = (log->head + n) % log->cap;
  log->count -= n;
  log->dropped += n;
}

/* The ~10% a full log drops at once: max/10, at least 1. */
static size_t
eventlog_chunk(const EventLog *log)
{
  return log->max / 10 ? log->max / 10 : 1;
}

/* Drops the oldest events up to and including the chunk's worth of counted
 * ones: what a log of counted events alone would drop. */
static void
eventlog_drop_counted(EventLog *log)
{
  size_t want = eventlog_chunk(log), n = 0;
  for (size_t seen = 0; n < log->count && seen < want; n++)
    seen += eventlog_counts(eventlog_at(log, n)->type);
  eventlog_drop_front(log, n);
}

/* See eventlog.h. pattern is kept only for match events (-1 otherwise), so a
 * renderer never shows a stale index. */
const Event *
eventlog_add(EventLog *log, EventType type, int64_t at_ms, int pattern, const char *line,
             size_t line_len, bool has_exit_code, int exit_code, int signal, const char *reason)
{
  bool counts = eventlog_counts(type);
  if (counts && log->counted == log->max)
    eventlog_drop_counted(log);
  if (log->count == eventlog_slots(log->max))
    eventlog_drop_front(log, eventlog_chunk(log));
  if (log->count == log->cap)
    eventlog_grow(log);
  Event *ev = eventlog_at(log, log->count);
  log->count++;
  log->counted += counts;
  ev->id = log->next_id++;
  ev->type = type;
  ev->at_ms = at_ms;
  bool has_pattern = type == kEventMatch || type == kEventIncident || type == kEventRepeatSummary;
  ev->pattern = has_pattern ? pattern : -1;
  ev->line = line ? xmemdupz(line, line_len) : NULL;
  ev->has_exit_code = has_exit_code;
  ev->exit_code = exit_code;
  ev->signal = signal;
  ev->reason = reason ? xstrdup(reason) : NULL;
  ev->exceeded = NULL;
  ev->incident = 0;
  ev->fingerprint = 0;
  ev->kind = 0;
  ev->lines = 0;
  ev->repeats = 0;
  ev->span_ms = 0;
  return ev;
}

/* See eventlog.h. */
const Event *
eventlog_add_kept(EventLog *log, const Event *kept)
{
  log->next_id = kept->id;
  eventlog_add(log, kept->type, kept->at_ms, kept->pattern, kept->line,
               kept->line ? strlen(kept->line) : 0, kept->has_exit_code, kept->exit_code,
               kept->signal, kept->reason);
  Event *ev = eventlog_at(log, log->count - 1);
  ev->exceeded = kept->exceeded;
  ev->incident = kept->incident;
  ev->fingerprint = kept->fingerprint;
  ev->kind = kept->kind;
  ev->lines = kept->lines;
  ev->repeats = kept->repeats;
  ev->span_ms = kept->span_ms;
  return ev;
}

/* See eventlog.h. */
const Event *
eventlog_set_incident(EventLog *log, uint64_t incident, uint64_t fingerprint, int kind,
                      uint64_t lines, uint64_t repeats, uint64_t span_ms)
{
  if (log->count == 0)
    return NULL;
  Event *ev = eventlog_at(log, log->count - 1);
  ev->incident = incident;
  ev->fingerprint = fingerprint;
  ev->kind = kind;
  ev->lines = lines;
  ev->repeats = repeats;
  ev->span_ms = span_ms;
  return ev;
}

/* See eventlog.h. */
const Event *
eventlog_set_exceeded(EventLog *log, const char *exceeded)
{
  if (log->count == 0)
    return NULL;
  Event *ev = eventlog_at(log, log->count - 1);
  ev->exceeded = exceeded;
  return ev;
}

/* The index (0 = oldest retained) of the first event with id > since_id;
 * count when there is none. Relies on retained ids being contiguous. */
static size_t
eventlog_first_after(const EventLog *log, uint64_t since_id)
{
  if (log->count == 0)
    return 0;
  uint64_t first = eventlog_at(log, 0)->id;
  if (since_id < first)
    return 0;
  uint64_t skip = since_id - first + 1;
  return skip >= log->count ? log->count : (size_t)skip;
}

/* See eventlog.h. */
size_t
eventlog_since(const EventLog *log, uint64_t since_id, EventVisit visit, void *ctx)
{
  size_t n = 0;
  for (size_t i = eventlog_first_after(log, since_id); i < log->count; i++, n++)
    visit(ctx, eventlog_at(log, i));
  return n;
}

/* See eventlog.h. */
const Event *
eventlog_find(const EventLog *log, uint64_t since_id, unsigned type_mask)
{
  for (size_t i = eventlog_first_after(log, since_id); i < log->count; i++) {
    const Event *ev = eventlog_at(log, i);
    if (type_mask & (1u << ev->type))
      return ev;
  }
  return NULL;
}

/* See eventlog.h; "unknown" for a value outside the enum. */
const char *
eventlog_type_name(EventType type)
{
  if ((int)type < 0 || (int)type >= EVENT_TYPE_COUNT)
    return "unknown";
  return eventlog_type_names[type];
}

/* Appends a pattern source between double quotes: escaped like a line, and
 * with `"` shown as \" so the closing quote is always vigil's. */
static void
eventlog_quote(StrBuf *out, const char *src)
{
  strbuf_putc(out, '"');
  const char *p = src;
  for (const char *q; (q = strchr(p, '"')) != NULL; p = q + 1) {
    textfmt_escape(out, p, (size_t)(q - p));
    strbuf_append(out, "\\\"", 2);
  }
  textfmt_escape(out, p, strlen(p));
  strbuf_putc(out, '"');
}

/* Appends " signal=SIGKILL" (or " signal=42" for a signal without a name). */
static void
eventlog_put_signal(StrBuf *out, int sig)
{
  const char *name = signals_name(sig);
  if (name)
    strbuf_printf(out, " signal=%s", name);
  else
    strbuf_printf(out, " signal=%d", sig);
}

/* See eventlog.h. The shapes, after "[id] time type":
 *   match         (pattern 0 "^panic:") panic: runtime error
 *   exited        exit=1 | signal=SIGKILL
 *   stopped       signal=SIGTERM [reason]
 *   idle_timeout, timed_out, overload: [reason]
 *   quiet         no output for 5m00s; last line: LINE
 * A reason on any other type is appended too, so nothing the core recorded
 * is hidden. Everything that came from outside vigil is escaped. */
void
eventlog_render_one(const Event *ev, const char *const *pattern_sources, size_t npatterns,
                    StrBuf *out)
{
  strbuf_printf(out, "[%" PRIu64 "] ", ev->id);
  textfmt_time(out, ev->at_ms);
  strbuf_putc(out, ' ');
  strbuf_puts(out, eventlog_type_name(ev->type));
  if (ev->type == kEventIncident || ev->type == kEventRepeatSummary) {
    strbuf_printf(out, " %" PRIu64 " %s", ev->incident,
                  incident_kind_name(ev->kind));
    if (ev->type == kEventIncident)
      strbuf_printf(out, " (%" PRIu64 " %s)", ev->lines, ev->lines == 1 ? "line" : "lines");
    else
      strbuf_printf(out, " repeated %" PRIu64 " times in %" PRIu64 " ms", ev->repeats,
                    ev->span_ms);
    strbuf_printf(out, " fingerprint %016" PRIx64, ev->fingerprint);
    if (ev->reason) {
      strbuf_puts(out, " [");
      textfmt_escape(out, ev->reason, strlen(ev->reason));
      strbuf_putc(out, ']');
    }
    if (ev->line) {
      strbuf_puts(out, ": ");
      textfmt_escape(out, ev->line, strlen(ev->line));
    }
    return;
  }
  if (ev->type == kEventMatch) {
    if (ev->pattern >= 0) {
      strbuf_printf(out, " (pattern %d", ev->pattern);
      if (pattern_sources && (size_t)ev->pattern < npatterns && pattern_sources[ev->pattern]) {
        strbuf_putc(out, ' ');
        eventlog_quote(out, pattern_sources[ev->pattern]);
      }
      strbuf_putc(out, ')');
    }
    if (ev->line) {
      strbuf_putc(out, ' ');
      textfmt_escape(out, ev->line, strlen(ev->line));
    }
    return;
  }
  if (ev->has_exit_code)
    strbuf_printf(out, " exit=%d", ev->exit_code);
  if (ev->signal)
    eventlog_put_signal(out, ev->signal);
  if (ev->reason) {
    strbuf_putc(out, ' ');
    textfmt_escape(out, ev->reason, strlen(ev->reason));
  }
  if (ev->type == kEventQuiet && ev->line) {
    strbuf_puts(out, "; last line: ");
    textfmt_escape(out, ev->line, strlen(ev->line));
  }
}

/* See eventlog.h. The NOTE line appears whenever events were ever dropped,
 * whatever since_id is: the seed's poller relies on it to learn that it may
 * have missed some, and "earlier" stays true. */
void
eventlog_render(const EventLog *log, uint64_t since_id, const char *const *pattern_sources,
                size_t npatterns, StrBuf *out)
{
  if (log->dropped > 0)
    strbuf_printf(out, "NOTE: %" PRIu64 " earlier event%s dropped (per-monitor cap of %zu reached)\n",
                  log->dropped, log->dropped == 1 ? "" : "s", log->max);
  for (size_t i = eventlog_first_after(log, since_id); i < log->count; i++) {
    eventlog_render_one(eventlog_at(log, i), pattern_sources, npatterns, out);
    strbuf_putc(out, '\n');
  }
}

/* Frees every event and the array; the log is left empty and may be reused
 * with the same max (ids keep counting, so they still never repeat). */
void
eventlog_free(EventLog *log)
{
  for (size_t i = 0; i < log->count; i++)
    eventlog_clear_event(eventlog_at(log, i));
  free(log->events);
  log->events = NULL;
  log->cap = 0;
  log->head = 0;
  log->count = 0;
  log->counted = 0;
}
