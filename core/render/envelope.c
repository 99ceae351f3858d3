/*
 * The built-in envelope (see envelope.h): the text an agent reads for a
 * notification, and the fallback whenever a Lua policy fails.
 *
 * Every guarantee of docs/protocol.md section 7 is kept here by construction
 * rather than by checks: everything that came from outside vigil (line text,
 * label, reason) goes through textfmt_escape, so it holds no raw control
 * character and no raw newline; every output line therefore starts with the
 * "[stdout seq=N] " prefix vigil wrote, and a fake marker printed by the
 * process stays inside such a line. The markers carry a fresh 128-bit nonce
 * the process cannot know in advance. Anything vigil adds about a line other
 * than its truncation (which pattern matched) goes on a line of its own, so
 * the process cannot fake that either.
 */
#include "render/envelope.h"
#include "pipeline/incident.h"
#include "base/signals.h"
#include "spec/stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/monitor_defs.h"
#include "base/obsframe.h"
#include "pipeline/fingerprint.h"
#include "render/prefixrule.h"
#include "base/textfmt.h"

/* Appends an escaped NUL-terminated string. */
static void
envelope_escape_str(StrBuf *out, const char *s)
{
  textfmt_escape(out, s, strlen(s));
}

/* Appends "label (mon_...)", or "mon_..." without a label, and returns
 * true; nothing (false) for a notification that belongs to no monitor. The
 * command is not in the notification at all, so it cannot leak here. */
static bool
envelope_who(StrBuf *out, const Notification *n)
{
  size_t idlen = strnlen(n->monitor_id, sizeof n->monitor_id);
  /* A monitor started without a label is labelled with its id: say it once. */
  bool has_label = n->label && n->label[0] && strcmp(n->label, n->monitor_id) != 0;
  if (idlen == 0 && !has_label)
    return false;
  if (has_label) {
    envelope_escape_str(out, n->label);
    if (idlen > 0) {
      strbuf_puts(out, " (");
      textfmt_escape(out, n->monitor_id, idlen);
      strbuf_putc(out, ')');
    }
  } else {
    textfmt_escape(out, n->monitor_id, idlen);
  }
  return true;
}

/* Appends "monitor: label (mon_...)\n", or nothing for no monitor. */
static void
envelope_monitor_line(StrBuf *out, const Notification *n)
{
  size_t before = out->len;
  strbuf_puts(out, "monitor: ");
  if (!envelope_who(out, n)) {
    out->len = before;
    out->data[before] = '\0';
    return;
  }
  strbuf_putc(out, '\n');
}

/* Appends one line, "[stream seq=N] text". Stream 1 is stderr
 * (StreamId's kStreamStderr); anything else is shown as stdout. */
static void
envelope_line(StrBuf *out, const NoteLine *l)
{
  strbuf_printf(out, "[%s seq=%" PRIu64 "] ", stream_name(l->stream), l->seq);
  textfmt_escape(out, l->text, l->len);
  if (l->truncated)
    strbuf_puts(out, " [truncated]");
  strbuf_putc(out, '\n');
}

/* "crash (node-error)" or "message (pattern 2)": what an incident is. */
static void
envelope_incident_what(StrBuf *out, const NoteIncident *inc)
{
  strbuf_puts(out, incident_kind_name(inc->kind));
  if (inc->pattern_name)
    strbuf_printf(out, " (%s)", inc->pattern_name);
  else if (inc->pattern >= 0)
    strbuf_printf(out, " (pattern %d)", inc->pattern);
}

/* " N times in D (last at T)" of a series of repeats. */
static void
envelope_repeats(StrBuf *out, const NoteIncident *inc)
{
  strbuf_printf(out, " %" PRIu64 " %s in ", inc->repeats, inc->repeats == 1 ? "time" : "times");
  textfmt_duration(out, inc->repeat_span_ms);
  strbuf_puts(out, " (last at ");
  textfmt_time(out, inc->repeat_last_at);
  strbuf_putc(out, ')');
}

/* The line that opens an incident's lines:
 *   incident 2: crash (node-error)
 *   incident 2: crash (node-error), repeated 39 times in 4m58s (last at T) before this
 *   incident 1 repeated 39 times in 58.2s (last at T): crash (node-error)   (a summary) */
static void
envelope_incident_head(StrBuf *out, const NoteIncident *inc)
{
  strbuf_printf(out, "incident %" PRIu64, inc->id);
  if (inc->summary) {
    strbuf_puts(out, " repeated");
    envelope_repeats(out, inc);
    strbuf_puts(out, ": ");
    envelope_incident_what(out, inc);
  } else {
    strbuf_puts(out, ": ");
    envelope_incident_what(out, inc);
    if (inc->repeats > 0) {
      strbuf_puts(out, ", repeated");
      envelope_repeats(out, inc);
      strbuf_puts(out, " before this");
    }
  }
  strbuf_putc(out, '\n');
}

/* The line after an incident whose trace was longer than was kept. */
static void
envelope_incident_tail(StrBuf *out, const NoteIncident *inc)
{
  if (inc->truncated_lines == 0)
    return;
  strbuf_printf(out, "incident %" PRIu64 ": %" PRIu64 " more %s not shown (monitor_output "
                "incident %" PRIu64 ")\n", inc->id, inc->truncated_lines,
                inc->truncated_lines == 1 ? "line" : "lines", inc->id);
}

/* The incident whose lines start at line i, or NULL. Incidents are in the
 * order of their lines, so *next walks forward. */
static const NoteIncident *
envelope_incident_at(const Notification *n, size_t i, size_t *next)
{
  while (*next < n->nincidents && n->incidents[*next].nlines == 0)
    (*next)++;
  if (*next < n->nincidents && n->incidents[*next].first_line == i)
    return &n->incidents[(*next)++];
  return NULL;
}

/* Appends the lines, one "[stream seq=N] text" each, each incident's lines
 * behind the line that says what it is, then, when any line outside an
 * incident matched a pattern, one "matched:" line naming those. */
static void
envelope_lines(StrBuf *out, const Notification *n)
{
  bool any_match = false;
  size_t next = 0;
  const NoteIncident *open = NULL;
  size_t open_end = 0;
  /* An incident without lines (a health change of a monitor that printed
   * nothing yet) is said first, on its own. */
  for (size_t i = 0; i < n->nincidents; i++)
    if (n->incidents[i].nlines == 0 && !n->incidents[i].summary)
      envelope_incident_head(out, &n->incidents[i]);
  for (size_t i = 0; i < n->nlines; i++) {
    if (open && i == open_end) {
      envelope_incident_tail(out, open);
      open = NULL;
    }
    const NoteIncident *inc = envelope_incident_at(n, i, &next);
    if (inc) {
      envelope_incident_head(out, inc);
      open = inc;
      open_end = inc->first_line + inc->nlines;
    }
    envelope_line(out, &n->lines[i]);
    any_match = any_match || (open == NULL && n->lines[i].pattern >= 0);
  }
  if (open)
    envelope_incident_tail(out, open);
  if (!any_match)
    return;
  strbuf_puts(out, "matched:");
  const char *sep = " ";
  next = 0;
  open_end = 0;
  for (size_t i = 0; i < n->nlines; i++) {
    const NoteIncident *inc = envelope_incident_at(n, i, &next);
    if (inc)
      open_end = inc->first_line + inc->nlines;
    if (n->lines[i].pattern < 0 || i < open_end)
      continue;
    strbuf_printf(out, "%sseq=%" PRIu64 " (pattern %d)", sep, n->lines[i].seq,
                  n->lines[i].pattern);
    sep = ", ";
  }
  strbuf_putc(out, '\n');
}

/* Appends "note: N THING(S) WAS/WERE WHAT" when count > 0. */
static void
envelope_note(StrBuf *out, uint64_t count, const char *one, const char *many, const char *what)
{
  if (count == 0)
    return;
  strbuf_printf(out, "note: %" PRIu64 " %s %s %s\n", count, count == 1 ? one : many,
                count == 1 ? "was" : "were", what);
}

/* Appends the notes of what was not delivered: lines withheld by the rate
 * limit, and incidents withheld, coalesced without a summary, or dropped. */
static void
envelope_withheld(StrBuf *out, const Notification *n)
{
  envelope_note(out, n->suppressed, "earlier line", "earlier lines", "withheld by the rate limit");
  envelope_note(out, n->incidents_withheld, "incident", "incidents",
                "withheld by the rate limit");
  envelope_note(out, n->incidents_coalesced, "repeat of an earlier incident",
                "repeats of earlier incidents", "counted but not shown");
  envelope_note(out, n->incidents_dropped, "incident", "incidents",
                n->type == kNotifDropped ? "among them" : "dropped by a policy");
}

/* Appends how the process itself ended, for states where vigil ended it:
 * " (SIGTERM)", " (exit code 0)", or nothing when unknown. */
static void
envelope_how(StrBuf *out, const Notification *n)
{
  if (n->signal) {
    const char *name = signals_name(n->signal);
    if (name)
      strbuf_printf(out, " (%s)", name);
    else
      strbuf_printf(out, " (signal %d)", n->signal);
  } else if (n->has_exit_code) {
    strbuf_printf(out, " (exit code %d)", n->exit_code);
  }
}

/* Appends the "status:" line of an ending notification, and a "reason:" line
 * when the core gave one:
 *   status: exited with code 1 after 3m12s
 *   status: killed by SIGKILL after 12.3s
 *   status: stopped by request (SIGTERM) after 5m00s
 *   status: timed out (SIGTERM) after 30m00s
 * An overload notification for a muted monitor (state still running) says the
 * process runs on, since the agent may need to stop it. */
static void
envelope_ending_words(StrBuf *out, const Notification *n)
{
  switch (n->state) {
  case kMonExited:
    if (n->signal) {
      const char *name = signals_name(n->signal);
      if (name)
        strbuf_printf(out, "killed by %s", name);
      else
        strbuf_printf(out, "killed by signal %d", n->signal);
    } else if (n->has_exit_code) {
      strbuf_printf(out, "exited with code %d", n->exit_code);
    } else {
      strbuf_puts(out, "exited");
    }
    break;
  case kMonStopped:
    strbuf_puts(out, "stopped by request");
    envelope_how(out, n);
    break;
  case kMonTimedOut:
    strbuf_puts(out, "timed out");
    envelope_how(out, n);
    break;
  case kMonIdleTimeout:
    strbuf_puts(out, "idle timeout");
    envelope_how(out, n);
    break;
  case kMonOverloaded:
    strbuf_puts(out, "overloaded, stopped");
    envelope_how(out, n);
    break;
  case kMonFailed:
    strbuf_puts(out, "failed");
    envelope_how(out, n);
    break;
  case kMonRunning:
  default:
    if (n->type == kNotifOverload)
      strbuf_puts(out, "overloaded, output muted; the process is still running");
    else
      strbuf_puts(out, monitor_state_name(n->state));
    break;
  }
  if (n->has_duration) {
    strbuf_puts(out, " after ");
    textfmt_duration(out, n->duration_ms);
  }
}

/* The "reason:" line, when the core gave one. */
static void
envelope_reason(StrBuf *out, const Notification *n)
{
  if (n->reason && n->reason[0]) {
    strbuf_puts(out, "reason: ");
    envelope_escape_str(out, n->reason);
    strbuf_putc(out, '\n');
  }
}

static void
envelope_ending_status(StrBuf *out, const Notification *n)
{
  strbuf_puts(out, "status: ");
  envelope_ending_words(out, n);
  strbuf_putc(out, '\n');
  envelope_reason(out, n);
}

/* Appends the part after the monitor line, by type. */
static void
envelope_type_body(StrBuf *out, const Notification *n)
{
  switch (n->type) {
  case kNotifOutput:
    strbuf_printf(out, "event: output batch %" PRIu64 "\n", n->batch);
    envelope_lines(out, n);
    envelope_withheld(out, n);
    strbuf_printf(out, "status: %s\n", monitor_state_name(n->state));
    envelope_reason(out, n); /* a restart's: how the program ended, when it starts again */
    return;
  case kNotifDropped:
    strbuf_puts(out, "event: dropped\n");
    if (n->reason && n->reason[0]) { /* a resume gap, or a cursor from an earlier engine */
      strbuf_puts(out, "note: ");
      envelope_escape_str(out, n->reason);
      strbuf_putc(out, '\n');
    } else if (n->dropped_count == 1)
      strbuf_puts(out, "note: 1 notification was dropped because the session queue was full\n");
    else
      strbuf_printf(out,
                    "note: %" PRIu64
                    " notifications were dropped because the session queue was full\n",
                    n->dropped_count);
    envelope_withheld(out, n);
    return;
  case kNotifPolicyError:
    strbuf_puts(out, "event: policy_error\n");
    strbuf_puts(out, "reason: ");
    envelope_escape_str(out, n->reason && n->reason[0] ? n->reason : "(none given)");
    strbuf_putc(out, '\n');
    return;
  default:
    strbuf_printf(out, "event: %s\n", notification_type_name(n->type));
    envelope_ending_status(out, n);
    if (n->nlines > 0) {
      strbuf_puts(out, "last lines:\n");
      envelope_lines(out, n);
    }
    envelope_withheld(out, n);
    return;
  }
}

/* The compact body: one line says whose and what, then the lines and the
 * notes; nothing is repeated that the wire already says (no "status:
 * running", no "event:" line):
 *   web (mon_3k2j...): output 3
 *   web (mon_3k2j...): exited with code 1 after 3m12s */
static void
envelope_compact_body(const Notification *n, StrBuf *out)
{
  if (envelope_who(out, n))
    strbuf_puts(out, ": ");
  switch (n->type) {
  case kNotifOutput:
    strbuf_printf(out, "output %" PRIu64 "\n", n->batch);
    break;
  case kNotifDropped:
  case kNotifPolicyError:
    strbuf_printf(out, "%s\n", notification_type_name(n->type));
    if (n->type == kNotifDropped && !(n->reason && n->reason[0]))
      envelope_note(out, n->dropped_count, "notification", "notifications",
                    "dropped because the session queue was full");
    break;
  default:
    envelope_ending_words(out, n);
    strbuf_putc(out, '\n');
    break;
  }
  envelope_reason(out, n);
  envelope_lines(out, n);
  envelope_withheld(out, n);
}

/* See envelope.h. */
void
envelope_body(const Notification *n, StrBuf *out)
{
  if (n->style == kEnvelopeCompact) {
    envelope_compact_body(n, out);
    return;
  }
  envelope_monitor_line(out, n);
  envelope_type_body(out, n);
}

/* See envelope.h. The frame's words are obsframe's, which vigil mcp's
 * results share. */
void
envelope_frame(const char *body, size_t len, const char *nonce, EnvelopeStyle style, StrBuf *out)
{
  obsframe_wrap(body, len, nonce, style == kEnvelopeCompact, out);
}

/* See envelope.h. The nonce is written as given; envelope_render makes one. */
void
envelope_render_with_nonce(const Notification *n, const char *nonce, StrBuf *out)
{
  StrBuf body = STRBUF_INIT;
  envelope_body(n, &body);
  envelope_frame(strbuf_cstr(&body), body.len, nonce, n->style, out);
  envelope_silence_hint(n, out);
  strbuf_free(&body);
}

/* See envelope.h. */
void
envelope_silence_hint(const Notification *n, StrBuf *out)
{
  for (size_t i = 0; i < n->nincidents; i++) {
    const NoteIncident *inc = &n->incidents[i];
    if (!inc->summary && inc->repeats == 0)
      continue;
    char hex[17];
    fingerprint_hex(inc->fingerprint, hex);
    strbuf_printf(out, "to silence incident %" PRIu64 ": incident_ignore {fingerprint: \"%s\"}\n",
                  inc->id, hex);
    return;
  }
}

/* What every check so far did (see envelope.h). The engine runs on one
 * thread, so plain counters do. */
static EnvelopeCheckStats envelope_check_totals;

/* See envelope.h. */
size_t
envelope_body_max(const Notification *n)
{
  size_t text = 0;
  for (size_t i = 0; i < n->nlines; i++)
    text += n->lines[i].len + ENVELOPE_BODY_LINE_EXTRA;
  return ENVELOPE_BODY_FACTOR * text + ENVELOPE_BODY_SLACK;
}

/* See envelope.h. */
int
envelope_check_policy_body(const Notification *n, const char *body, size_t len, StrBuf *out,
                           VigilError *err)
{
  envelope_check_totals.checked++;
  /* The bound comes first, so an oversized body costs nothing more. */
  size_t max = envelope_body_max(n);
  if (len > max) {
    envelope_check_totals.refused_size++;
    return error_set(err, kErrInternal,
                     "format: the body is %zu bytes, over the bound of %zu bytes for this "
                     "notification (%d times its lines' bytes, %d more per line, plus %d)",
                     len, max, ENVELOPE_BODY_FACTOR, ENVELOPE_BODY_LINE_EXTRA,
                     ENVELOPE_BODY_SLACK);
  }
  /* Escape line by line, keeping the newlines the policy wrote. The body is
   * made of lines the engine escaped already, so only raw characters are
   * escaped now, and backslashes are left as they are. */
  StrBuf clean = STRBUF_INIT;
  const char *p = body, *stop = body + len;
  while (p < stop) {
    const char *nl = memchr(p, '\n', (size_t)(stop - p));
    const char *line_end = nl ? nl : stop;
    textfmt_sanitize(&clean, p, (size_t)(line_end - p));
    if (nl)
      strbuf_putc(&clean, '\n');
    p = nl ? nl + 1 : stop;
  }
  /* The prefix rule (envelope.h), in one pass over the clean body. */
  PrefixRuleResult r = {0, 0};
  int rc = prefixrule_check(n, strbuf_cstr(&clean), clean.len, &r);
  envelope_check_totals.work += len + r.work;
  if (rc < 0) {
    envelope_check_totals.refused++;
    error_set(err, kErrInternal,
              "format: the text of line seq=%" PRIu64
              " appears on a body line without a [stdout seq=N] / [stderr seq=N] prefix",
              r.seq);
  } else {
    strbuf_append(out, clean.data ? clean.data : "", clean.len);
  }
  strbuf_free(&clean);
  return rc;
}

/* See envelope.h. */
void
envelope_check_stats(EnvelopeCheckStats *out)
{
  *out = envelope_check_totals;
}

/* See envelope.h. */
void
envelope_nonce(char out[ENVELOPE_NONCE_HEX + 1])
{
  obsframe_nonce(out);
}

/* See envelope.h. */
void
envelope_render(const Notification *n, StrBuf *out)
{
  char nonce[ENVELOPE_NONCE_HEX + 1];
  envelope_nonce(nonce);
  envelope_render_with_nonce(n, nonce, out);
}
