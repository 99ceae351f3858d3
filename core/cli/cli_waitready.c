/*
 * `vigil start --wait-for-ready` (cli_waitready.h): one monitor_wait {for:
 * "ready"} and its answer in words for a person or a script.
 */
#include "cli/cli_waitready.h"

#include <stdio.h>

#include "base/strbuf.h"
#include "cli/cli_cmds.h"
#include "cli/cli_fmt.h"
#include "cli/cli_obj.h"

/* monitor_wait's own ceiling on timeout_ms (API_WAIT_MAX_MS). */
#define CLI_WAITREADY_MAX_MS 3600000
/* What the call may take beyond the wait itself. */
#define CLI_WAITREADY_SLACK_MS 10000

/* Prints a text field of an answer, escaped, or `none`. */
static void
cli_waitready_text(StrBuf *out, const msgpack_object *map, const char *key, const char *none)
{
  size_t n = 0;
  const char *s = map ? cli_obj_get_text(map, key, &n) : NULL;
  if (s)
    cli_fmt_safe(out, s, n, false);
  else
    strbuf_puts(out, none);
}

/* See cli_waitready.h. */
int
cli_waitready_run(CliClient *c, const char *id, uint64_t timeout_ms)
{
  if (timeout_ms > CLI_WAITREADY_MAX_MS)
    timeout_ms = CLI_WAITREADY_MAX_MS;
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  cli_req_str(&req, "for", "ready");
  cli_req_uint(&req, "timeout_ms", timeout_ms);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_wait", &req, (int64_t)(timeout_ms + CLI_WAITREADY_SLACK_MS),
                           &reply);
  cli_req_free(&req);
  if (rc != 0)
    return cli_client_fail(c);
  const msgpack_object *r = reply.result;
  const msgpack_object *ev = cli_obj_get(r, "event");
  if (ev != NULL && ev->type != MSGPACK_OBJECT_MAP)
    ev = NULL;
  StrBuf out = STRBUF_INIT;
  if (cli_obj_get_bool(r, "ready")) {
    strbuf_printf(&out, "vigil: %s is ready: ", id);
    cli_waitready_text(&out, ev, "reason", "(ready)");
    fprintf(stderr, "%s\n", strbuf_cstr(&out));
    strbuf_free(&out);
    cli_reply_free(&reply);
    return 0;
  }
  strbuf_printf(&out, "vigil: %s ", id);
  if (ev != NULL) {
    cli_waitready_text(&out, ev, "reason", "is not ready");
    strbuf_puts(&out, "; it is still running");
  } else if (cli_obj_get_bool(r, "timed_out")) {
    StrBuf d = STRBUF_INIT;
    cli_fmt_duration(&d, timeout_ms);
    strbuf_printf(&out, "was not ready within %s; it is still running (vigil stop %s)",
                  strbuf_cstr(&d), id);
    strbuf_free(&d);
  } else {
    strbuf_puts(&out, "ended before it was ready (state ");
    cli_waitready_text(&out, r, "state", "unknown");
    strbuf_puts(&out, ")");
  }
  fprintf(stderr, "%s\n", strbuf_cstr(&out));
  const msgpack_object *tail = cli_obj_get(r, "tail");
  if (tail == NULL || tail->type != MSGPACK_OBJECT_ARRAY || tail->via.array.size == 0) {
    fputs("  (it printed nothing)\n", stderr);
  } else {
    fprintf(stderr, "  its last %u line%s:\n", tail->via.array.size,
            tail->via.array.size == 1 ? "" : "s");
    for (uint32_t i = 0; i < tail->via.array.size; i++) {
      const msgpack_object *l = &tail->via.array.ptr[i];
      if (l->type != MSGPACK_OBJECT_STR)
        continue;
      strbuf_reset(&out);
      cli_fmt_safe(&out, l->via.str.ptr, l->via.str.size, true);
      fprintf(stderr, "    %s\n", strbuf_cstr(&out));
    }
  }
  strbuf_free(&out);
  cli_reply_free(&reply);
  return CLI_EXIT_FAILURE;
}
