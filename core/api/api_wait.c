/*
 * Requests that answer later: monitor_wait (docs/protocol.md section 5),
 * and the waiters of every such request (monitor_wait, monitor_stop, a
 * foreground process_run, a cursor_take that waits). A waiter hangs on its
 * connection and on the record it waits for; the engine's hooks
 * (api_engine_hooks) answer it when what it waits for happens, when the
 * monitor ends, or when the record leaves its session. A cursor_take's
 * waiter hangs on its session instead (api_cursor.c), which answers it.
 */
#include "api/api_call.h"

#include <stdlib.h>

#include "base/memory.h"
#include "api/wire.h"

/* --- waiters ------------------------------------------------------------ */

Waiter *
api_wait_add(Conn *c, MonRecord *r, WaitKind kind, uint32_t msgid, bool is_request)
{
  Waiter *w = xcalloc(1, sizeof *w);
  w->kind = kind;
  w->conn = c;
  w->rec = r;
  w->msgid = msgid;
  w->is_request = is_request;
  if (r != NULL) {
    w->rec_next = r->watchers;
    r->watchers = w;
  }
  w->conn_next = c->waiters;
  c->waiters = w;
  c->npending++;
  uv_timer_init(c->api->engine->loop, &w->timer);
  w->timer.data = w;
  return w;
}

static void
api_waiter_closed(uv_handle_t *h)
{
  Waiter *w = h->data;
  free(w->note);
  free(w);
}

void
api_wait_done(Waiter *w)
{
  for (Waiter **p = w->rec ? (Waiter **)&w->rec->watchers : NULL; p && *p; p = &(*p)->rec_next) {
    if (*p == w) {
      *p = w->rec_next;
      break;
    }
  }
  /* A take still waiting takes nothing now (its reader went). */
  session_cursor_unwait(w->cursor);
  w->cursor = NULL;
  for (Waiter **p = &w->conn->waiters; *p; p = &(*p)->conn_next) {
    if (*p == w) {
      *p = w->conn_next;
      break;
    }
  }
  w->conn->npending--;
  uv_close((uv_handle_t *)&w->timer, api_waiter_closed);
}

/* Sends a packed result (or err) for a waiter when its call was a request,
 * then retires it. */
void
api_wait_answer_packed(Waiter *w, msgpack_sbuffer *sb, const VigilError *err)
{
  if (w->is_request)
    rpc_channel_respond(w->conn->ch, w->msgid, err, sb ? sb->data : NULL, sb ? sb->size : 0);
  else if (err)
    rpc_channel_error_notify(w->conn->ch, err);
  api_wait_done(w);
}

/* --- monitor_wait ------------------------------------------------------- */


/* The event types that end a monitor (monitor_wait for: "exit"). */
#define API_ENDING_EVENTS                                                             \
  ((1u << kEventStopped) | (1u << kEventExited) | (1u << kEventTimedOut) |            \
   (1u << kEventIdleTimeout) | (1u << kEventOverload))

/* The lines a monitor_wait for "ready" that failed answers with. */
#define API_READY_TAIL_LINES 20

static void
api_pack_tail_line(void *ctx, const RingLine *line)
{
  wire_strn(ctx, line->text, line->len);
}

static void
api_count_tail_line(void *ctx, const RingLine *line)
{
  (void)line;
  (*(size_t *)ctx)++;
}

/* {event, timed_out, state, last_sequence}, and for "ready": ready (the
 * monitor is ready) and tail (when it is not: the output's last lines,
 * oldest first). */
void
api_pack_wait(msgpack_packer *pk, const Event *ev, bool timed_out, const Monitor *m,
              bool for_ready)
{
  msgpack_pack_map(pk, for_ready ? 6 : 4);
  if (for_ready) {
    bool ready = monitor_ready_at(m) != 0;
    wire_key(pk, "ready");
    ready ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    wire_key(pk, "tail");
    if (ready) {
      msgpack_pack_nil(pk);
    } else {
      const Ring *ring = monitor_ring(m);
      size_t n = 0;
      ring_query(ring, kRingAll, 0, API_READY_TAIL_LINES, api_count_tail_line, &n);
      msgpack_pack_array(pk, n);
      ring_query(ring, kRingAll, 0, API_READY_TAIL_LINES, api_pack_tail_line, pk);
    }
  }
  wire_key(pk, "event");
  if (ev)
    wire_event(pk, ev);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "timed_out");
  timed_out ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  /* The newest line's seq: a follower passes it back as since_sequence. */
  wire_key(pk, "last_sequence");
  msgpack_pack_uint64(pk, ring_last(monitor_ring(m)).seq);
}

/* Whether the ring holds a line with seq > since (for: "output"). */
static bool
api_has_output_after(const Monitor *m, uint64_t since)
{
  RingLine last = ring_last(monitor_ring(m));
  return last.text != NULL && last.seq > since;
}

/* Answers a monitor_wait and retires its waiter. */
static void
api_wait_answer(Waiter *w, const Event *ev, bool timed_out)
{
  msgpack_sbuffer sb;
  msgpack_packer pk;
  api_answer_begin(&sb, &pk);
  api_pack_wait(&pk, ev, timed_out, w->rec->monitor, w->for_ready);
  api_wait_answer_packed(w, &sb, NULL);
  msgpack_sbuffer_destroy(&sb);
}

static void
api_wait_timeout(uv_timer_t *t)
{
  api_wait_answer(t->data, NULL, true);
}

/* monitor_wait: docs/protocol.md section 5, "monitor_wait". */
void
api_monitor_wait(Call *call)
{
  static const char *const kinds[] = {"exit", "match", "event", "output", "ready", NULL};
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int kind = 0;
  uint64_t since = 0, since_seq = 0, timeout = 30000;
  if (args_choice(&call->args, "for", kinds, &kind, &call->err) < 0 ||
      args_uint(&call->args, "since_event_id", 0, UINT64_MAX, &since, &call->err) < 0 ||
      args_uint(&call->args, "since_sequence", 0, UINT64_MAX, &since_seq, &call->err) < 0 ||
      args_uint(&call->args, "timeout_ms", 0, API_WAIT_MAX_MS, &timeout, &call->err) < 0)
    return;
  bool for_output = kind == 3;
  bool for_ready = kind == 4;
  if (for_ready && !monitor_ready_declared(r->monitor)) {
    error_set(&call->err, kErrInvalidParams,
              "for: \"ready\" needs a monitor started with ready_log, ready_tcp or ready_http; "
              "%s has none", monitor_id(r->monitor));
    return;
  }
  unsigned mask = kind == 0 ? API_ENDING_EVENTS : kind == 1 ? (1u << kEventMatch)
                  : kind == 2 ? ~0u
                  : for_ready ? (1u << kEventReady) | (1u << kEventNotReady) : 0u;
  const Event *ev = for_output ? NULL : eventlog_find(monitor_events(r->monitor), since, mask);
  bool ready = ev != NULL || (for_output && api_has_output_after(r->monitor, since_seq));
  if (ready || timeout == 0 || !r->running) {
    /* Already there, or it can never come (the monitor has ended). */
    api_pack_wait(&call->pk, ev, !ready && r->running, r->monitor, for_ready);
    return;
  }
  if (!call->is_request)
    return;
  if (!api_reserve_pending(call))
    return;
  Waiter *w = api_wait_add(call->c, r, kWaitEvent, call->msgid, true);
  w->type_mask = mask;
  w->since_event_id = since;
  w->for_output = for_output;
  w->for_ready = for_ready;
  w->since_sequence = since_seq;
  uv_timer_start(&w->timer, api_wait_timeout, timeout, 0);
  call->deferred = true;
}


/* --- hooks from the engine ---------------------------------------------- */

static void
api_on_event(void *ctx, MonRecord *r, const Event *ev)
{
  Waiter *next;
  for (Waiter *w = r->watchers; w; w = next) {
    next = w->rec_next;
    if (w->kind == kWaitEvent && (w->type_mask & (1u << ev->type)) && ev->id > w->since_event_id)
      api_wait_answer(w, ev, false);
  }
}

static void
api_on_lines(void *ctx, MonRecord *r)
{
  Waiter *next;
  for (Waiter *w = r->watchers; w; w = next) {
    next = w->rec_next;
    if (w->kind == kWaitEvent && w->for_output &&
        api_has_output_after(r->monitor, w->since_sequence))
      api_wait_answer(w, NULL, false);
  }
}

/* The monitor ended: every waiter is answered with what it now is. */
static void
api_on_finished(void *ctx, MonRecord *r)
{
  while (r->watchers) {
    Waiter *w = r->watchers;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    api_answer_begin(&sb, &pk);
    switch (w->kind) {
    case kWaitStop:
      api_pack_stop(&pk, "stopped", r->monitor);
      break;
    case kWaitRun:
      api_pack_run(&pk, r, w->stdout_lines, w->note);
      break;
    case kWaitStart:
      if (w->start_as_run)
        api_pack_run(&pk, r, w->stdout_lines, w->note);
      else
        api_pack_start(&pk, r->monitor, w->note);
      break;
    default:
      /* What it waited for can no longer happen. */
      api_pack_wait(&pk, NULL, false, r->monitor, w->for_ready);
      break;
    }
    api_wait_answer_packed(w, &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
  }
}

/* The record left its session: what waits on it is told it went away. */
static void
api_on_forget(void *ctx, MonRecord *r)
{
  while (r->watchers) {
    Waiter *w = r->watchers;
    VigilError err = VIGIL_ERROR_INIT;
    error_set(&err, kErrNotFound, "monitor_id: %s went away with its session",
              monitor_id(w->rec->monitor));
    api_wait_answer_packed(w, NULL, &err);
  }
}

/* A start through a keeper is decided: its monitor_start is answered,
 * with the start's answer or the reason it failed. */
static void
api_on_started(void *ctx, MonRecord *r, const VigilError *err)
{
  Waiter *next;
  for (Waiter *w = r->watchers; w; w = next) {
    next = w->rec_next;
    if (w->kind != kWaitStart)
      continue;
    if (err != NULL) {
      api_wait_answer_packed(w, NULL, err);
      continue;
    }
    msgpack_sbuffer sb;
    msgpack_packer pk;
    api_answer_begin(&sb, &pk);
    if (w->start_as_run)
      api_pack_run(&pk, r, w->stdout_lines, w->note);
    else
      api_pack_start(&pk, r->monitor, w->note);
    api_wait_answer_packed(w, &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
  }
}

/* The engine is shutting down: no new connection is accepted. */
static void
api_on_shutdown(void *ctx)
{
  Api *api = ctx;
  if (api->server) {
    rpc_server_close(api->server);
    api->server = NULL;
  }
}

const EngineHooks api_engine_hooks = {
  api_on_event, api_on_lines, api_on_finished, api_on_forget, api_on_shutdown, api_on_started,
};
