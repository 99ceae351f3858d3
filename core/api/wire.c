/*
 * The msgpack form of notifications, monitors, lines, events and counters
 * (see wire.h).
 */
#include "api/wire.h"
#include "pipeline/incident.h"


#include <string.h>

#include "store/epoch.h"
#include "pipeline/fingerprint.h"
#include "proc/ports.h"
#include "proc/proc.h"
#include "rpc/pack.h"
#include "base/signals.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* Every string goes through rpc_pack_str: valid UTF-8 on the wire always. */
void
wire_strn(msgpack_packer *pk, const char *s, size_t len)
{
  rpc_pack_str(pk, s, len);
}

void
wire_str(msgpack_packer *pk, const char *s)
{
  if (s == NULL)
    msgpack_pack_nil(pk);
  else
    wire_strn(pk, s, strlen(s));
}

void
wire_key(msgpack_packer *pk, const char *key)
{
  wire_strn(pk, key, strlen(key));
}

void
wire_time(msgpack_packer *pk, int64_t epoch_ms)
{
  if (epoch_ms == 0) {
    msgpack_pack_nil(pk);
    return;
  }
  StrBuf sb = STRBUF_INIT;
  textfmt_time(&sb, epoch_ms);
  wire_strn(pk, sb.data, sb.len);
  strbuf_free(&sb);
}

void
wire_signal(msgpack_packer *pk, int sig)
{
  if (sig == 0) {
    msgpack_pack_nil(pk);
    return;
  }
  const char *name = signals_name(sig);
  if (name)
    wire_str(pk, name);
  else
    msgpack_pack_int(pk, sig);
}

/* A pattern index, nil when < 0 (no pattern). */
static void
wire_pattern(msgpack_packer *pk, int pattern)
{
  if (pattern >= 0)
    msgpack_pack_int(pk, pattern);
  else
    msgpack_pack_nil(pk);
}

/* {seq, stream, text, pattern, truncated}; pattern nil when < 0. */
static void
wire_line(msgpack_packer *pk, uint64_t seq, int stream, const char *text, size_t len,
          int pattern, bool truncated)
{
  msgpack_pack_map(pk, 5);
  wire_key(pk, "seq");
  msgpack_pack_uint64(pk, seq);
  wire_key(pk, "stream");
  wire_str(pk, stream_name(stream));
  wire_key(pk, "text");
  wire_strn(pk, text, len);
  wire_key(pk, "pattern");
  wire_pattern(pk, pattern);
  wire_key(pk, "truncated");
  if (truncated)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}

void
wire_ring_line(msgpack_packer *pk, const RingLine *line)
{
  wire_line(pk, line->seq, line->stream, line->text, line->len, line->pattern,
            (line->flags & 1u) != 0);
}

/* See wire.h. */
void
wire_fingerprint(msgpack_packer *pk, uint64_t fp)
{
  char hex[17];
  fingerprint_hex(fp, hex);
  wire_str(pk, hex);
}

static void
wire_kind(msgpack_packer *pk, int kind)
{
  wire_str(pk, incident_kind_name(kind));
}

/* The seven keys every form of an incident starts with: id, kind,
 * fingerprint, pattern, pattern_name, first_seq, last_seq. */
static void
wire_incident_head(msgpack_packer *pk, const NoteIncident *inc)
{
  wire_key(pk, "id");
  msgpack_pack_uint64(pk, inc->id);
  wire_key(pk, "kind");
  wire_kind(pk, inc->kind);
  wire_key(pk, "fingerprint");
  wire_fingerprint(pk, inc->fingerprint);
  wire_key(pk, "pattern");
  wire_pattern(pk, inc->pattern);
  wire_key(pk, "pattern_name");
  wire_str(pk, inc->pattern_name);
  wire_key(pk, "first_seq");
  msgpack_pack_uint64(pk, inc->first_seq);
  wire_key(pk, "last_seq");
  msgpack_pack_uint64(pk, inc->last_seq);
}

/* One incident entry: {id, kind, fingerprint, pattern, pattern_name,
 * first_seq, last_seq, lines, repeats, repeat_span_ms, last_repeat_at,
 * truncated_lines, summary}; its lines are the notification's lines it
 * indexes. */
static void
wire_incident(msgpack_packer *pk, const Notification *n, const NoteIncident *inc)
{
  msgpack_pack_map(pk, 13);
  wire_incident_head(pk, inc);
  wire_key(pk, "lines");
  size_t end = inc->first_line + inc->nlines;
  if (end > n->nlines)
    end = n->nlines;
  msgpack_pack_array(pk, end > inc->first_line ? end - inc->first_line : 0);
  for (size_t i = inc->first_line; i < end; i++) {
    const NoteLine *l = &n->lines[i];
    wire_line(pk, l->seq, l->stream, l->text, l->len, l->pattern, l->truncated);
  }
  wire_key(pk, "repeats");
  msgpack_pack_uint64(pk, inc->repeats);
  wire_key(pk, "repeat_span_ms");
  msgpack_pack_uint64(pk, inc->repeat_span_ms);
  wire_key(pk, "last_repeat_at");
  wire_time(pk, inc->repeats > 0 ? inc->repeat_last_at : 0);
  wire_key(pk, "truncated_lines");
  msgpack_pack_uint64(pk, inc->truncated_lines);
  wire_key(pk, "summary");
  if (inc->summary)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}

void
wire_incident_record(msgpack_packer *pk, const IncidentRecord *rec, uint64_t missing)
{
  const NoteIncident *inc = &rec->info;
  msgpack_pack_map(pk, 10);
  wire_incident_head(pk, inc);
  wire_key(pk, "lines");
  msgpack_pack_uint64(pk, rec->nseqs);
  wire_key(pk, "truncated_lines");
  msgpack_pack_uint64(pk, inc->truncated_lines);
  wire_key(pk, "missing");
  msgpack_pack_uint64(pk, missing);
}

/* A notification's four incident keys: incidents and the three counts. */
static void
wire_notification_incidents(msgpack_packer *pk, const Notification *n)
{
  wire_key(pk, "incidents");
  msgpack_pack_array(pk, n->nincidents);
  for (size_t i = 0; i < n->nincidents; i++)
    wire_incident(pk, n, &n->incidents[i]);
  wire_key(pk, "incidents_withheld");
  msgpack_pack_uint64(pk, n->incidents_withheld);
  wire_key(pk, "incidents_coalesced");
  msgpack_pack_uint64(pk, n->incidents_coalesced);
  wire_key(pk, "incidents_dropped");
  msgpack_pack_uint64(pk, n->incidents_dropped);
}

void
wire_notification(msgpack_packer *pk, const Notification *n)
{
  bool ending = notification_is_ending(n->type);
  bool dropped = n->type == kNotifDropped;
  msgpack_pack_map(pk, 25);
  wire_key(pk, "session");
  wire_str(pk, n->session);
  wire_key(pk, "seq");
  msgpack_pack_uint64(pk, n->seq);
  wire_key(pk, "type");
  wire_str(pk, notification_type_name(n->type));
  wire_key(pk, "monitor_id");
  wire_str(pk, n->monitor_id[0] ? n->monitor_id : NULL);
  wire_key(pk, "label");
  wire_str(pk, n->label);
  wire_key(pk, "mode");
  wire_str(pk, monitor_mode_name(n->mode));
  wire_key(pk, "batch");
  if (n->type == kNotifOutput)
    msgpack_pack_uint64(pk, n->batch);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "lines");
  msgpack_pack_array(pk, n->nlines);
  for (size_t i = 0; i < n->nlines; i++) {
    const NoteLine *l = &n->lines[i];
    wire_line(pk, l->seq, l->stream, l->text, l->len, l->pattern, l->truncated);
  }
  wire_key(pk, "suppressed");
  msgpack_pack_uint64(pk, n->suppressed);
  wire_notification_incidents(pk, n);
  wire_key(pk, "state");
  wire_str(pk, ending || n->type == kNotifOutput ? monitor_state_name(n->state) : NULL);
  /* An ending's, or a restart's (an output notification telling how the
   * program ended before it starts again: monitor_restart.c). */
  bool how = ending || (n->type == kNotifOutput && n->has_duration);
  wire_key(pk, "exit_code");
  if (how && n->has_exit_code)
    msgpack_pack_int(pk, n->exit_code);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "signal");
  wire_signal(pk, how ? n->signal : 0);
  wire_key(pk, "duration_ms");
  if (how && n->has_duration)
    msgpack_pack_uint64(pk, n->duration_ms);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "reason");
  wire_str(pk, n->reason);
  wire_key(pk, "exceeded");
  wire_str(pk, ending ? n->exceeded : NULL);
  /* dropped: how many (nil when unknown); from_seq/to_seq: the seqs lost
   * (nil when none had a seq yet, to_seq nil when open-ended). */
  wire_key(pk, "dropped");
  if (dropped && n->dropped_count > 0)
    msgpack_pack_uint64(pk, n->dropped_count);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "from_seq");
  if (dropped && n->from_seq > 0)
    msgpack_pack_uint64(pk, n->from_seq);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "to_seq");
  if (dropped && n->to_seq > 0)
    msgpack_pack_uint64(pk, n->to_seq);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "epoch");
  wire_str(pk, epoch_hex());
  wire_key(pk, "text");
  wire_str(pk, n->text);
  wire_key(pk, "at");
  wire_time(pk, n->at_ms);
}

void
wire_counters(msgpack_packer *pk, const MonitorCounters *c)
{
  static const char *const names[] = {
    "lines", "matched", "unmatched", "dropped", "suppressed", "notifications",
    "stdout_bytes", "stderr_bytes", "truncated_lines", "discarded_bytes", "match_errors",
    "capture_evicted", "events_dropped", "policy_dropped", "muted", "incidents",
    "incidents_coalesced", "incidents_withheld", "incidents_dropped", "incidents_forgotten",
    "fingerprints_evicted", "state_unkept_bytes", "state_unkept_events",
    "ignored",
  };
  const uint64_t values[] = {
    c->lines, c->matched, c->unmatched, c->dropped, c->suppressed, c->notifications,
    c->stdout_bytes, c->stderr_bytes, c->truncated_lines, c->discarded_bytes, c->match_errors,
    c->capture_evicted, c->events_dropped, c->policy_dropped, c->muted, c->incidents,
    c->incidents_coalesced, c->incidents_withheld, c->incidents_dropped, c->incidents_forgotten,
    c->fingerprints_evicted, c->state_unkept_bytes, c->state_unkept_events,
    c->incidents_ignored,
  };
  size_t n = sizeof names / sizeof names[0];
  msgpack_pack_map(pk, n);
  for (size_t i = 0; i < n; i++) {
    wire_key(pk, names[i]);
    msgpack_pack_uint64(pk, values[i]);
  }
}

void
wire_event(msgpack_packer *pk, const Event *ev)
{
  bool incident = ev->type == kEventIncident || ev->type == kEventRepeatSummary;
  msgpack_pack_map(pk, incident ? 15 : 9);
  wire_key(pk, "id");
  msgpack_pack_uint64(pk, ev->id);
  wire_key(pk, "type");
  wire_str(pk, eventlog_type_name(ev->type));
  wire_key(pk, "at");
  wire_time(pk, ev->at_ms);
  wire_key(pk, "pattern");
  wire_pattern(pk, ev->pattern);
  wire_key(pk, "line");
  wire_str(pk, ev->line);
  wire_key(pk, "exit_code");
  if (ev->has_exit_code)
    msgpack_pack_int(pk, ev->exit_code);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "signal");
  wire_signal(pk, ev->signal);
  wire_key(pk, "reason");
  wire_str(pk, ev->reason);
  wire_key(pk, "exceeded");
  wire_str(pk, ev->exceeded);
  if (!incident)
    return;
  wire_key(pk, "incident");
  msgpack_pack_uint64(pk, ev->incident);
  wire_key(pk, "kind");
  wire_kind(pk, ev->kind);
  wire_key(pk, "fingerprint");
  wire_fingerprint(pk, ev->fingerprint);
  wire_key(pk, "lines");
  msgpack_pack_uint64(pk, ev->lines);
  wire_key(pk, "repeats");
  msgpack_pack_uint64(pk, ev->repeats);
  wire_key(pk, "repeat_span_ms");
  msgpack_pack_uint64(pk, ev->span_ms);
}

void
wire_exit_status(msgpack_packer *pk, const Monitor *m)
{
  ProcExit x;
  monitor_usage(m, &x);
  bool ended = monitor_finished(m);
  wire_key(pk, "exit_code");
  /* A timed-out process has no exit code, even if it caught the stop signal
   * and exited with one (docs/protocol.md: process_run's exit_code nil on timeout). */
  if (ended && x.exited && x.term_signal == 0 && monitor_state(m) != kMonTimedOut)
    msgpack_pack_int(pk, x.exit_code);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "signal");
  wire_signal(pk, ended ? x.term_signal : 0);
}

void
wire_resource_usage(msgpack_packer *pk, const ProcExit *x)
{
  msgpack_pack_map(pk, 4);
  wire_key(pk, "cpu_ms");
  msgpack_pack_uint64(pk, x->cpu_ms);
  wire_key(pk, "memory_peak_bytes");
  msgpack_pack_uint64(pk, x->memory_peak_bytes);
  wire_key(pk, "io_read_bytes");
  msgpack_pack_uint64(pk, x->io_read_bytes);
  wire_key(pk, "io_write_bytes");
  msgpack_pack_uint64(pk, x->io_write_bytes);
}

/* The `ports` key: [{port, address}] the monitor's processes listen on
 * (ports.h), [] when it runs nothing. */
static void
wire_ports(msgpack_packer *pk, const Monitor *m, PortScan *scan)
{
  PortEntry ports[PORTS_MAX];
  size_t n = 0;
  PidList pids = {0};
  monitor_members(m, &scan->procs, &pids);
  if (pids.n > 0)
    n = ports_of(scan, &pids, ports, PORTS_MAX);
  pidlist_free(&pids);
  wire_key(pk, "ports");
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++) {
    msgpack_pack_map(pk, 2);
    wire_key(pk, "port");
    msgpack_pack_uint16(pk, ports[i].port);
    wire_key(pk, "address");
    wire_str(pk, ports[i].address);
  }
}

/* The restart policy's keys (monitor_restart.c): `restarts` (how many in
 * the monitor's life), `restart` (nil without a policy, else what it is
 * and, while the program waits to start again, how soon) and
 * `run_started_at` (when the running program started: started_at until a
 * restart). */
static void
wire_restart(msgpack_packer *pk, const Monitor *m)
{
  wire_key(pk, "restarts");
  msgpack_pack_uint64(pk, monitor_restarts(m));
  wire_key(pk, "restart");
  if (monitor_restart_policy(m) == kRestartNo) {
    msgpack_pack_nil(pk);
  } else {
    uint64_t in_ms = 0;
    bool waiting = monitor_restart_wait(m, &in_ms);
    msgpack_pack_map(pk, 2);
    wire_key(pk, "policy");
    wire_str(pk, monitor_restart_name(monitor_restart_policy(m)));
    wire_key(pk, "next_in_ms");
    if (waiting)
      msgpack_pack_uint64(pk, in_ms);
    else
      msgpack_pack_nil(pk);
  }
  wire_key(pk, "run_started_at");
  wire_time(pk, monitor_run_started_at(m));
}

/* `source`: nil for a process; for a file source (docs/sources.md) its
 * kind, the path as given, where it has read to and what it met; for a
 * WebSocket its URL and what it received. */
static void
wire_source(msgpack_packer *pk, const Monitor *m)
{
  const char *path;
  FileSourceCounters fc;
  uint64_t offset;
  WsSourceCounters wc;
  wire_key(pk, "source");
  if (monitor_ws_source(m, &path, &wc)) {
    msgpack_pack_map(pk, 5);
    wire_key(pk, "kind");
    wire_str(pk, "ws");
    wire_key(pk, "ws");
    wire_str(pk, path);
    wire_key(pk, "messages");
    msgpack_pack_uint64(pk, wc.messages);
    wire_key(pk, "bytes");
    msgpack_pack_uint64(pk, wc.bytes);
    wire_key(pk, "pings");
    msgpack_pack_uint64(pk, wc.pings);
    return;
  }
  if (!monitor_file_source(m, &path, &fc, &offset)) {
    msgpack_pack_nil(pk);
    return;
  }
  msgpack_pack_map(pk, 7);
  wire_key(pk, "kind");
  wire_str(pk, "file");
  wire_key(pk, "file");
  wire_str(pk, path);
  wire_key(pk, "offset");
  msgpack_pack_uint64(pk, offset);
  wire_key(pk, "bytes");
  msgpack_pack_uint64(pk, fc.bytes);
  wire_key(pk, "rotations");
  msgpack_pack_uint64(pk, fc.rotations);
  wire_key(pk, "truncations");
  msgpack_pack_uint64(pk, fc.truncations);
  wire_key(pk, "deletions");
  msgpack_pack_uint64(pk, fc.deletions);
}

/* Readiness and health (monitor_ready.c, docs/readiness.md): `ready_at`
 * (when it became ready, a time like started_at; nil while not, or with no
 * readiness declared), `health` ("healthy", "unhealthy": the last known;
 * nil when no health probe ever ran) and `probes` (the attempts made). */
#define WIRE_READY_KEYS 3
static void
wire_ready(msgpack_packer *pk, const Monitor *m)
{
  wire_key(pk, "ready_at");
  wire_time(pk, monitor_ready_at(m));
  wire_key(pk, "health");
  wire_str(pk, monitor_health(m));
  wire_key(pk, "probes");
  msgpack_pack_uint64(pk, monitor_probes(m));
}

void
wire_monitor(msgpack_packer *pk, const Monitor *m, bool status, const char *start,
             size_t start_len, PortScan *scan)
{
  MonitorCounters c;
  monitor_counters(m, &c);
  ProcExit x;
  monitor_usage(m, &x);
  /* 13 keys of the contract, and vigil's program, reason, exceeded,
   * incidents, envelope, restarts, restart, run_started_at, source; status
   * adds duration_ms, resource_usage and start; ports, quiet_since, and the
   * readiness keys. */
  msgpack_pack_map(pk, (status ? 25 + 2 : 22 + 2) + WIRE_READY_KEYS);
  wire_key(pk, "monitor_id");
  wire_str(pk, monitor_id(m));
  wire_key(pk, "label");
  wire_str(pk, monitor_label(m));
  wire_key(pk, "description");
  wire_str(pk, monitor_description(m));
  wire_key(pk, "mode");
  wire_str(pk, monitor_mode_name(monitor_mode(m)));
  wire_key(pk, "notify");
  wire_str(pk, monitor_notify_name(monitor_notify(m)));
  /* The signal stage's two switches (docs/incidents.md). */
  wire_key(pk, "incidents");
  if (monitor_incidents_on(m))
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
  wire_key(pk, "envelope");
  wire_str(pk, monitor_envelope_names[monitor_envelope(m) == kEnvelopeCompact ? 1 : 0]);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  wire_key(pk, "pid");
  if (monitor_pid(m) > 0)
    msgpack_pack_int(pk, monitor_pid(m));
  else
    msgpack_pack_nil(pk); /* none while a restart waits */
  /* The resolved program, never the command line (its arguments may hold
   * secrets): what ran, for the caller and the logs to agree on. */
  wire_key(pk, "program");
  wire_str(pk, monitor_program(m));
  wire_key(pk, "started_at");
  wire_time(pk, monitor_started_at(m));
  wire_key(pk, "ended_at");
  wire_time(pk, monitor_ended_at(m));
  wire_restart(pk, m);
  wire_source(pk, m);
  wire_ready(pk, m);
  wire_exit_status(pk, m);
  bool ended = monitor_finished(m);
  wire_key(pk, "reason");
  wire_str(pk, ended ? monitor_reason(m) : NULL);
  wire_key(pk, "exceeded");
  wire_str(pk, ended ? monitor_exceeded(m) : NULL);
  wire_key(pk, "counters");
  wire_counters(pk, &c);
  wire_key(pk, "last_line");
  RingLine last = ring_last(monitor_ring(m));
  if (last.text)
    wire_strn(pk, last.text, last.len);
  else
    msgpack_pack_nil(pk);
  /* Issue 26: the ports its processes listen on, and since when it is
   * quiet (quiet_after_ms). */
  wire_ports(pk, m, scan);
  wire_key(pk, "quiet_since");
  wire_time(pk, monitor_quiet_since(m));
  if (!status)
    return;
  wire_key(pk, "duration_ms");
  msgpack_pack_uint64(pk, monitor_duration_ms(m));
  wire_key(pk, "resource_usage");
  wire_resource_usage(pk, &x);
  /* Packed once at the start (one map), so its bytes go as they are. */
  wire_key(pk, "start");
  if (start != NULL)
    pk->callback(pk->data, start, start_len);
  else
    msgpack_pack_nil(pk);
}
