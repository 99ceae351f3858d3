/*
 * process_run (docs/protocol.md section 5): run a command to its end and
 * answer with its exit and the tail of its output (foreground), or start it
 * as a monitor that says when it ends (background).
 */
#include "api/api_call.h"

#include <stdlib.h>

#include "base/memory.h"
#include "engine/monitor_fields.h"
#include "api/wire.h"

/* --- process_run -------------------------------------------------------- */

/* The last n lines of one stream, joined by '\n'. */
typedef struct {
  StrBuf *sb;
} Summary;

static void
api_summary_line(void *ctx, const RingLine *line)
{
  Summary *s = ctx;
  if (s->sb->len)
    strbuf_putc(s->sb, '\n');
  strbuf_append(s->sb, line->text, line->len);
}

/* The process_run result map for r. */
void
api_pack_run(msgpack_packer *pk, MonRecord *r, uint64_t stdout_lines, const char *note)
{
  Monitor *m = r->monitor;
  ProcExit x;
  monitor_usage(m, &x);
  msgpack_pack_map(pk, 9);
  wire_key(pk, "process_id");
  wire_str(pk, monitor_id(m));
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  wire_exit_status(pk, m);
  static const RingFilter filters[] = {kRingStdout, kRingStderr};
  static const char *const keys[] = {"stdout_summary", "stderr_summary"};
  for (int i = 0; i < 2; i++) {
    wire_key(pk, keys[i]);
    StrBuf sb = STRBUF_INIT;
    Summary s = {&sb};
    if (stdout_lines > 0)
      ring_query(monitor_ring(m), filters[i], 0, (size_t)stdout_lines, api_summary_line, &s);
    wire_strn(pk, strbuf_cstr(&sb), sb.len);
    strbuf_free(&sb);
  }
  wire_key(pk, "duration_ms");
  msgpack_pack_uint64(pk, monitor_duration_ms(m));
  wire_key(pk, "resource_usage");
  wire_resource_usage(pk, &x);
  wire_key(pk, "note");
  wire_str(pk, note);
}

/* process_run: docs/protocol.md section 5, "process_run". */
void
api_process_run(Call *call)
{
  Args *a = &call->args;
  VigilError *err = &call->err;
  Session *s = api_session(call);
  if (s == NULL)
    return;
  StartRequest req = {0};
  /* process_run's own fields: their bounds are the start table's rows. */
  const MonitorField *ft = monitor_field("timeout_s"), *fl = monitor_field("stdout_lines");
  uint64_t timeout_s = 300, lines = 100;
  ArgResult has_timeout = kArgAbsent;
  bool background = false;
  const char *stdin_data = NULL;
  size_t stdin_len = 0;
  if (api_read_start(call, kFormRun, &req) < 0 ||
      /* A larger stdin cannot arrive: the message holding it is skipped. */
      args_bytes(a, "stdin", (size_t)call->e->config.settings.rpc_max_message_bytes,
                 &stdin_data, &stdin_len, err) < 0 ||
      (has_timeout = args_uint(a, "timeout_s", ft->min, ft->max, &timeout_s, err)) < 0 ||
      args_uint(a, "stdout_lines", fl->min, fl->max, &lines, err) < 0 ||
      args_bool(a, "background", &background, err) < 0)
    goto done;
  if (stdin_data) {
    req.stdin_data = xmemdupz(stdin_data, stdin_len);
    req.stdin_len = stdin_len;
  }
  if (background) {
    /* A background run says when it ends. Without timeout_s it outlives any
     * foreground cap (seed 001: multi-hour builds go to the background): it
     * is persistent where the config allows it. */
    req.notify = kNotifyExit;
    if (has_timeout == kArgPresent) {
      req.timeout_ms = (int64_t)timeout_s * 1000;
      req.process_run = true;
    } else {
      req.persistent = call->e->config.allow_persistent;
    }
  } else {
    if (!call->is_request) {
      error_set(err, kErrInvalidParams, "a foreground process_run must be a request (it answers)");
      goto done;
    }
    if (!api_reserve_pending(call))
      goto done;
    req.notify = kNotifyNone;
    req.timeout_ms = (int64_t)timeout_s * 1000;
    req.process_run = true;
  }
  char *note = NULL;
  MonRecord *r = engine_start(call->e, s, &req, &note, err);
  if (r == NULL)
    goto done;
  if (background && call->is_request && monitor_starting(r->monitor)) {
    /* Through a keeper: answered at its hello, as monitor_start is. */
    Waiter *w = api_wait_add(call->c, r, kWaitStart, call->msgid, true);
    w->start_as_run = true;
    w->stdout_lines = lines;
    w->note = note;
    call->deferred = true;
  } else if (background) {
    api_pack_run(&call->pk, r, lines, note);
    free(note);
  } else {
    Waiter *w = api_wait_add(call->c, r, kWaitRun, call->msgid, true);
    w->stdout_lines = lines;
    w->note = note;
    call->deferred = true;
  }
done:
  start_request_free(&req);
}

