/*
 * The monitor methods that start, stop and list (docs/protocol.md section
 * 5): monitor_start, monitor_stop (answered once the process is gone),
 * monitor_list and monitor_status.
 */
#include "api/api_call.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/signals.h"
#include "engine/startmap.h"
#include "proc/ports.h"
#include "api/wire.h"

/* --- methods: monitors -------------------------------------------------- */

/* monitor_start: docs/protocol.md section 5, "monitor_start". */
void
api_monitor_start(Call *call)
{
  VigilError *err = &call->err;
  Session *s = api_session(call);
  if (s == NULL)
    return;
  StartRequest req = {0};
  if (api_read_start(call, kFormStart, &req) < 0)
    goto done;
  char *note = NULL;
  MonRecord *r = engine_start(call->e, s, &req, &note, err);
  if (r == NULL)
    goto done;
  if (monitor_starting(r->monitor) && call->is_request) {
    /* Through a keeper: answered when the keeper says hello (or why the
     * start failed), from the loop, so that nothing waits behind it
     * (api_on_started). The answer is the same either way. */
    Waiter *w = api_wait_add(call->c, r, kWaitStart, call->msgid, true);
    w->note = note;
    call->deferred = true;
    goto done;
  }
  api_pack_start(&call->pk, r->monitor, note);
  free(note);
done:
  start_request_free(&req);
}

/* monitor_start's answer: docs/protocol.md section 5, "monitor_start". */
void
api_pack_start(msgpack_packer *pk, const Monitor *m, const char *note)
{
  msgpack_pack_map(pk, 7);
  wire_key(pk, "monitor_id");
  wire_str(pk, monitor_id(m));
  wire_key(pk, "label");
  wire_str(pk, monitor_label(m));
  wire_key(pk, "mode");
  wire_str(pk, monitor_mode_name(monitor_mode(m)));
  wire_key(pk, "notify");
  wire_str(pk, monitor_notify_name(monitor_notify(m)));
  wire_key(pk, "pid");
  if (monitor_pid(m) > 0)
    msgpack_pack_int(pk, monitor_pid(m));
  else
    msgpack_pack_nil(pk); /* a file source: no process */
  wire_key(pk, "started_at");
  wire_time(pk, monitor_started_at(m));
  wire_key(pk, "note");
  wire_str(pk, note);
}

/* {status, state, exit_code, signal} of a stop. */
void
api_pack_stop(msgpack_packer *pk, const char *status, const Monitor *m)
{
  msgpack_pack_map(pk, 4);
  wire_key(pk, "status");
  wire_str(pk, status);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  wire_exit_status(pk, m);
}

/* monitor_stop: docs/protocol.md section 5, "monitor_stop". */
void
api_monitor_stop(Call *call)
{
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int sig = SIGTERM;
  const msgpack_object *so = args_get(&call->args, "signal");
  if (so != NULL) {
    if (so->type == MSGPACK_OBJECT_POSITIVE_INTEGER && so->via.u64 > 0 && so->via.u64 < 65 &&
        signals_name((int)so->via.u64) != NULL) {
      sig = (int)so->via.u64;
    } else if (so->type == MSGPACK_OBJECT_STR && so->via.str.size < 16) {
      char name[16];
      memcpy(name, so->via.str.ptr, so->via.str.size);
      name[so->via.str.size] = '\0';
      sig = signals_number(name);
      if (sig < 0) {
        error_set(&call->err, kErrInvalidParams,
                  "signal must be a signal name such as \"SIGTERM\" or \"SIGKILL\", got \"%s\"",
                  name);
        return;
      }
    } else {
      error_set(&call->err, kErrInvalidParams,
                "signal must be a signal name such as \"SIGTERM\" or \"SIGKILL\"");
      return;
    }
  }
  uint64_t grace = (uint64_t)call->e->config.settings.kill_grace_ms;
  bool escalate = true;
  ArgResult given = args_uint(&call->args, "grace_ms", 0, 600000, &grace, &call->err);
  if (given < 0 || args_bool(&call->args, "escalate", &escalate, &call->err) < 0)
    return;
  if (!escalate && given == kArgPresent) {
    error_set(&call->err, kErrInvalidParams,
              "grace_ms must not be given with escalate: false (no SIGKILL follows the signal)");
    return;
  }
  Monitor *m = r->monitor;
  if (!r->running) {
    if (monitor_state(m) != kMonStopped) {
      error_set(&call->err, kErrAlreadyExited, "monitor_id: %s has already ended (%s)",
                monitor_id(m), monitor_state_name(monitor_state(m)));
      return;
    }
    api_pack_stop(&call->pk, "already_stopped", m);
    return;
  }
  MonitorStopResult rc = monitor_stop(m, sig, escalate ? (int64_t)grace : MONITOR_GRACE_NEVER);
  if (rc == kMonitorStopExited) {
    error_set(&call->err, kErrAlreadyExited,
              "monitor_id: the process of %s has already exited (its output is being read)",
              monitor_id(m));
    return;
  }
  if (rc == kMonitorStopAlready) {
    /* A stop is already under way, and this one asks for nothing sooner. */
    api_pack_stop(&call->pk, "already_stopped", m);
    return;
  }
  /* Started, or hastened (a stronger stop than the one under way): either
   * way answered once the process is gone. */
  if (!call->is_request)
    return;
  api_wait_add(call->c, r, kWaitStop, call->msgid, true);
  call->deferred = true;
}

/* Whether r passes monitor_list's filters. */
static bool
api_list_wants(MonRecord *r, bool include_exited, int state)
{
  MonitorState st = monitor_state(r->monitor);
  if (state >= 0)
    return (int)st == state;
  return include_exited || r->running;
}

/* monitor_list: docs/protocol.md section 5, "monitor_list". */
void
api_monitor_list(Call *call)
{
  Session *s = api_session(call);
  if (s == NULL)
    return;
  bool include_exited = false;
  int state = -1;
  uint64_t limit = 50;
  if (args_bool(&call->args, "include_exited", &include_exited, &call->err) < 0 ||
      args_choice(&call->args, "state", monitor_state_names, &state, &call->err) < 0 ||
      args_uint(&call->args, "limit", 1, 10000, &limit, &call->err) < 0)
    return;
  size_t total = 0;
  for (MonRecord *r = call->e->records; r; r = r->next)
    total += r->session == s && api_list_wants(r, include_exited, state);
  size_t shown = total < limit ? total : (size_t)limit;
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "monitors");
  msgpack_pack_array(&call->pk, shown);
  size_t n = 0;
  PortScan scan = PORT_SCAN_INIT; /* /proc/net/tcp read once for the list */
  for (MonRecord *r = call->e->records; r && n < shown; r = r->next) {
    if (r->session == s && api_list_wants(r, include_exited, state)) {
      wire_monitor(&call->pk, r->monitor, false, NULL, 0, &scan);
      n++;
    }
  }
  ports_scan_free(&scan);
  wire_key(&call->pk, "total");
  msgpack_pack_uint64(&call->pk, total);
}

/* monitor_status: docs/protocol.md section 5, "monitor_status". The start
 * map (startmap.h) only when include_start asks for it, and its env values
 * only when reveal_env asks for them too: both can hold secrets, and
 * whoever reads a status (a model, through a client that forwards it) must
 * not get them by default. */
void
api_monitor_status(Call *call)
{
  bool include_start = false, reveal_env = false;
  if (args_bool(&call->args, "include_start", &include_start, &call->err) < 0 ||
      args_bool(&call->args, "reveal_env", &reveal_env, &call->err) < 0)
    return;
  if (reveal_env && !include_start) {
    error_set(&call->err, kErrInvalidParams,
              "reveal_env goes with include_start: true (it reveals the env values of the "
              "start map, which is sent only when asked for)");
    return;
  }
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  PortScan scan = PORT_SCAN_INIT;
  if (!include_start || r->start == NULL) {
    wire_monitor(&call->pk, r->monitor, true, NULL, 0, &scan);
  } else if (reveal_env) {
    wire_monitor(&call->pk, r->monitor, true, r->start, r->start_len, &scan);
  } else {
    size_t len = 0;
    char *redacted = startmap_redact(r->start, r->start_len, &len);
    wire_monitor(&call->pk, r->monitor, true, redacted, len, &scan);
    free(redacted);
  }
  ports_scan_free(&scan);
}
