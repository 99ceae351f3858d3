/*
 * The methods that read what a monitor produced (docs/protocol.md section
 * 5): monitor_output (its lines), monitor_logs (its raw captured bytes,
 * paged) and monitor_events.
 */
#include "api/api_call.h"

#include <inttypes.h>
#include <stdlib.h>

#include "base/memory.h"
#include "api/wire.h"

/* ring_query visitor packing lines into an array (counted beforehand). */
typedef struct {
  msgpack_packer *pk;
  uint64_t last_seq;
} LinePack;

static void
api_pack_ring_line(void *ctx, const RingLine *line)
{
  LinePack *lp = ctx;
  wire_ring_line(lp->pk, line);
  lp->last_seq = line->seq;
}

static void
api_count_line(void *ctx, const RingLine *line)
{
  (*(size_t *)ctx)++;
}

/* ring_query visitor for an incident: only the lines whose seq is one of
 * the record's (ascending), counted or packed. */
typedef struct {
  const IncidentRecord *rec;
  size_t next;          /* the next of rec->seqs to look for */
  msgpack_packer *pk;   /* NULL: count only */
  size_t found;
} IncidentPick;

static void
api_pick_incident_line(void *ctx, const RingLine *line)
{
  IncidentPick *ip = ctx;
  while (ip->next < ip->rec->nseqs && ip->rec->seqs[ip->next] < line->seq)
    ip->next++;
  if (ip->next >= ip->rec->nseqs || ip->rec->seqs[ip->next] != line->seq)
    return;
  ip->found++;
  if (ip->pk)
    wire_ring_line(ip->pk, line);
}

/* monitor_output {incident: ID}: the incident's kept lines that the ring
 * still holds, and what it is; `missing` counts lines the ring evicted
 * since (monitor_logs has the raw bytes while the capture keeps them). */
static void
api_monitor_output_incident(Call *call, MonRecord *r, uint64_t id)
{
  if (args_get(&call->args, "stream") || args_get(&call->args, "since_sequence") ||
      args_get(&call->args, "limit")) {
    error_set(&call->err, kErrInvalidParams,
              "incident: not together with stream, since_sequence or limit");
    return;
  }
  const IncidentRecord *rec = monitor_incident(r->monitor, id);
  if (rec == NULL) {
    error_set(&call->err, kErrNotFound,
              "incident: monitor %s has no incident %" PRIu64 " (it keeps the last %zu "
              "incidents it assembled, incident.history_max)",
              monitor_id(r->monitor), id, monitor_incident_history_max(r->monitor));
    return;
  }
  const Ring *ring = monitor_ring(r->monitor);
  uint64_t since = rec->nseqs ? rec->seqs[0] - 1 : 0;
  IncidentPick count = {rec, 0, NULL, 0};
  ring_query(ring, kRingAll, since, 0, api_pick_incident_line, &count);
  msgpack_pack_map(&call->pk, 4);
  wire_key(&call->pk, "lines");
  msgpack_pack_array(&call->pk, count.found);
  IncidentPick pack = {rec, 0, &call->pk, 0};
  ring_query(ring, kRingAll, since, 0, api_pick_incident_line, &pack);
  wire_key(&call->pk, "counters");
  MonitorCounters c;
  monitor_counters(r->monitor, &c);
  wire_counters(&call->pk, &c);
  wire_key(&call->pk, "next_sequence");
  msgpack_pack_uint64(&call->pk, rec->info.last_seq);
  wire_key(&call->pk, "incident");
  wire_incident_record(&call->pk, rec, rec->nseqs - count.found);
}

/* monitor_output: docs/protocol.md section 5, "monitor_output". */
void
api_monitor_output(Call *call)
{
  static const char *const streams[] = {"all", "matched", "unmatched", "stdout", "stderr", NULL};
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  if (args_get(&call->args, "incident")) {
    uint64_t id = 0;
    if (args_uint(&call->args, "incident", 1, UINT64_MAX, &id, &call->err) == kArgPresent)
      api_monitor_output_incident(call, r, id);
    return;
  }
  int stream = 0;
  uint64_t since = 0, limit = 0;
  const Ring *ring = monitor_ring(r->monitor);
  if (args_choice(&call->args, "stream", streams, &stream, &call->err) < 0 ||
      args_uint(&call->args, "since_sequence", 0, UINT64_MAX, &since, &call->err) < 0 ||
      args_uint(&call->args, "limit", 1, ring->max_lines, &limit, &call->err) < 0)
    return;
  static const RingFilter filters[] = {kRingAll, kRingMatched, kRingUnmatched, kRingStdout,
                                       kRingStderr};
  size_t count = 0;
  ring_query(ring, filters[stream], since, (size_t)limit, api_count_line, &count);
  msgpack_pack_map(&call->pk, 3);
  wire_key(&call->pk, "lines");
  msgpack_pack_array(&call->pk, count);
  LinePack lp = {&call->pk, since};
  ring_query(ring, filters[stream], since, (size_t)limit, api_pack_ring_line, &lp);
  wire_key(&call->pk, "counters");
  MonitorCounters c;
  monitor_counters(r->monitor, &c);
  wire_counters(&call->pk, &c);
  wire_key(&call->pk, "next_sequence");
  msgpack_pack_uint64(&call->pk, lp.last_seq);
}

/* What monitor_logs read from one stream: wanted, the span, and where the
 * next page starts. */
typedef struct {
  bool wanted;
  CaptureSpan span;
  uint64_t next_offset;    /* the offset to ask next: past the last byte returned */
  bool more;               /* bytes exist past next_offset now */
} LogRead;

/* Reads one stream's capture from offset (limit bytes at most). */
static LogRead
api_read_capture(const Capture *cap, bool wanted, uint64_t offset, uint64_t limit)
{
  LogRead lr = {wanted, {NULL, 0, NULL, 0, offset, false}, 0, false};
  if (!wanted)
    return lr;
  lr.span = capture_read(cap, offset, limit);
  lr.next_offset = lr.span.offset + lr.span.n1 + lr.span.n2;
  lr.more = lr.next_offset < cap->total;
  return lr;
}

/* Packs a stream's bytes (bin), or nil when not asked for. */
static void
api_pack_capture(msgpack_packer *pk, const LogRead *lr)
{
  if (!lr->wanted) {
    msgpack_pack_nil(pk);
    return;
  }
  msgpack_pack_bin(pk, lr->span.n1 + lr->span.n2);
  msgpack_pack_bin_body(pk, lr->span.p1, lr->span.n1);
  msgpack_pack_bin_body(pk, lr->span.p2, lr->span.n2);
}

/* Packs a stream's next offset, or nil when not asked for. */
static void
api_pack_next_offset(msgpack_packer *pk, const LogRead *lr)
{
  if (lr->wanted)
    msgpack_pack_uint64(pk, lr->next_offset);
  else
    msgpack_pack_nil(pk);
}

/* monitor_logs. Two flags that are easy to confuse, side by side:
 * `truncated` (the contract, binding; docs/protocol.md) says the start asked for had been
 * evicted, so the bytes begin later than `offset`; `more` (vigil's) says
 * bytes exist past what was returned, in either stream asked for, so a
 * pager asks again from `*_next_offset` until `more` is false.
 * docs/protocol.md section 5, "monitor_logs". */
void
api_monitor_logs(Call *call)
{
  /* Which captures: the names (and order) of a monitor's match_streams. */
  const char *const *streams = monitor_streams_names;
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int stream = 0;
  uint64_t offset = 0, limit = UINT64_MAX;
  if (args_choice(&call->args, "stream", streams, &stream, &call->err) < 0 ||
      args_uint(&call->args, "offset", 0, UINT64_MAX, &offset, &call->err) < 0 ||
      args_uint(&call->args, "limit", 0, UINT64_MAX, &limit, &call->err) < 0)
    return;
  const Capture *out = monitor_capture(r->monitor, kStreamStdout);
  const Capture *errc = monitor_capture(r->monitor, kStreamStderr);
  LogRead o = api_read_capture(out, stream != kStreamsStderr, offset, limit);
  LogRead e = api_read_capture(errc, stream != kStreamsStdout, offset, limit);
  bool truncated = o.span.truncated || e.span.truncated;
  msgpack_packer *pk = &call->pk;
  msgpack_pack_map(pk, 9);
  wire_key(pk, "stdout");
  api_pack_capture(pk, &o);
  wire_key(pk, "stderr");
  api_pack_capture(pk, &e);
  wire_key(pk, "stdout_size");
  msgpack_pack_uint64(pk, out->total);
  wire_key(pk, "stderr_size");
  msgpack_pack_uint64(pk, errc->total);
  wire_key(pk, "truncated");
  truncated ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "more");
  o.more || e.more ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "stdout_next_offset");
  api_pack_next_offset(pk, &o);
  wire_key(pk, "stderr_next_offset");
  api_pack_next_offset(pk, &e);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(r->monitor)));
}

static void
api_pack_event_visit(void *ctx, const Event *ev)
{
  wire_event(ctx, ev);
}

static void
api_count_event(void *ctx, const Event *ev)
{
  (*(size_t *)ctx)++;
}

/* monitor_events: docs/protocol.md section 5, "monitor_events". */
void
api_monitor_events(Call *call)
{
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  uint64_t since = 0;
  if (args_uint(&call->args, "since_event_id", 0, UINT64_MAX, &since, &call->err) < 0)
    return;
  const EventLog *log = monitor_events(r->monitor);
  size_t count = 0;
  eventlog_since(log, since, api_count_event, &count);
  msgpack_pack_map(&call->pk, 4);
  wire_key(&call->pk, "events");
  msgpack_pack_array(&call->pk, count);
  eventlog_since(log, since, api_pack_event_visit, &call->pk);
  wire_key(&call->pk, "dropped");
  msgpack_pack_uint64(&call->pk, log->dropped);
  /* Of those, incident events: a reader of the other kinds alone (seed
   * 000's) numbers its events from this (docs/protocol.md). */
  wire_key(&call->pk, "dropped_incidents");
  msgpack_pack_uint64(&call->pk, log->dropped_incidents);
  wire_key(&call->pk, "text");
  StrBuf text = STRBUF_INIT;
  size_t npatterns = monitor_pattern_count(r->monitor);
  const char **labels = xcalloc(npatterns ? npatterns : 1, sizeof *labels);
  for (size_t i = 0; i < npatterns; i++)
    labels[i] = monitor_pattern_label(r->monitor, i);
  eventlog_render(log, since, labels, npatterns, &text);
  free(labels);
  wire_strn(&call->pk, strbuf_cstr(&text), text.len);
  strbuf_free(&text);
}
