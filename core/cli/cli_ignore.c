/*
 * `vigil ignore`, `vigil ignored` and `vigil unignore`: the project's
 * silenced fingerprints (incident_ignore, incident_ignored,
 * incident_unignore in docs/protocol.md; docs/incidents.md section 10).
 * They act in the project's session (docs/cli.md "Where and as whom"), the
 * one its agent's harness uses, so what a person silences here the agent
 * is no longer woken for. A bad argument (the engine's invalid_params)
 * exits 2 like any usage error; an unknown fingerprint or incident 1.
 */
#include "cli/cli_cmds.h"
#include "cli/cli_obj.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static const CliOpt cli_ignore_opts[] = {
  {.name = "for", .arg = "DURATION",
   .help = "how long it stays ignored (a bare number is seconds; at most 30d;\n"
           "default 7d)"},
  {.name = "always", .help = "ignore it until unignored"},
  {.name = "reason", .arg = "TEXT", .help = "why it is known and harmless (at most 256 bytes)"},
  {0},
};

static const CliOpt cli_ignore_no_opts[] = {
  {0},
};

/* The longest `for` (the engine's bound, IGNORE_FOR_MAX_MS). */
#define CLI_IGNORE_FOR_MAX_MS ((uint64_t)30 * 86400 * 1000)

/* Calls method with req (freed here) in the project's session, printing
 * the result as JSON under --json. 0 with reply filled (the caller words
 * it unless c->json, and frees it), or the exit status after printing why
 * (2 for invalid_params). */
static int
cli_ignore_call(CliClient *c, const char *method, CliReq *req, CliReply *reply)
{
  /* MONITOR:INCIDENT connected already, to find the monitor's id. */
  bool ok = (c->conn != NULL || cli_client_connect(c, true, false, 0) == 0) &&
            cli_client_call(c, method, req, CLI_CALL_TIMEOUT_MS, reply) == 0;
  cli_req_free(req);
  if (ok) {
    if (c->json)
      cli_client_print_json(reply->result);
    return 0;
  }
  bool usage = c->err.kind == kCliErrEngine && c->err.code == kErrInvalidParams;
  cli_client_fail(c);
  return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
}

/* "FINGERPRINT" (16 hex digits) or "MONITOR:INCIDENT" into req. */
static int
cli_ignore_target(CliClient *c, const CliParsed *p, CliReq *req)
{
  const char *arg = p->args[0];
  const char *colon = strrchr(arg, ':');
  if (colon == NULL) {
    cli_req_str(req, "fingerprint", arg);
    return 0;
  }
  char *end = NULL;
  unsigned long long id = strtoull(colon + 1, &end, 10);
  if (colon[1] == '\0' || *end != '\0' || id == 0 || colon == arg)
    return cli_opts_usage_error(p->spec, "%s: expected FINGERPRINT or MONITOR:INCIDENT "
                                "(an incident number after the colon)", arg);
  char *mon = strndup(arg, (size_t)(colon - arg));
  char mid[64];
  int rc = cli_client_connect(c, true, false, 0) == 0 && cli_client_monitor_id(c, mon, mid) == 0;
  free(mon);
  if (!rc)
    return cli_client_fail(c);
  cli_req_str(req, "monitor_id", mid);
  cli_req_uint(req, "incident", id);
  return 0;
}

/* Prints an entry: "FINGERPRINT  until T|always  hits N (last T)  REASON". */
static void
cli_ignore_print(const msgpack_object *e)
{
  size_t n = 0;
  StrBuf line = STRBUF_INIT;
  const char *fp = cli_obj_get_text(e, "fingerprint", &n);
  cli_fmt_safe(&line, fp ? fp : "", n, false);
  const char *until = cli_obj_get_text(e, "expires_at", &n);
  strbuf_puts(&line, until ? "  until " : "  always");
  if (until)
    cli_fmt_safe(&line, until, n, false);
  const msgpack_object *hits = cli_obj_get(e, "hits");
  strbuf_printf(&line, "  hits %llu", hits && hits->type == MSGPACK_OBJECT_POSITIVE_INTEGER
                                          ? (unsigned long long)hits->via.u64 : 0ULL);
  const char *last = cli_obj_get_text(e, "last_hit_at", &n);
  if (last) {
    strbuf_puts(&line, " (last ");
    cli_fmt_safe(&line, last, n, false);
    strbuf_putc(&line, ')');
  }
  const char *reason = cli_obj_get_text(e, "reason", &n);
  if (reason) {
    strbuf_puts(&line, "  ");
    cli_fmt_safe(&line, reason, n, false);
  }
  puts(strbuf_cstr(&line));
  strbuf_free(&line);
}

static int
cli_ignore_run(CliClient *c, const CliParsed *p)
{
  uint64_t for_ms = 0;
  int rc = cli_cmds_duration(p, "for", 1, CLI_IGNORE_FOR_MAX_MS, &for_ms);
  if (rc != 0)
    return rc;
  if (cli_opts_has(p, "for") && cli_opts_has(p, "always"))
    return cli_opts_usage_error(p->spec, "--for and --always: give one");
  CliReq req;
  cli_req_init(&req);
  if ((rc = cli_ignore_target(c, p, &req)) != 0) {
    cli_req_free(&req);
    return rc;
  }
  if (cli_opts_has(p, "always"))
    cli_req_str(&req, "for", "always");
  else if (cli_opts_has(p, "for"))
    cli_req_uint(&req, "for", for_ms);
  if (cli_opts_has(p, "reason"))
    cli_req_str(&req, "reason", cli_opts_get(p, "reason"));
  CliReply reply;
  if ((rc = cli_ignore_call(c, "incident_ignore", &req, &reply)) != 0)
    return rc;
  if (!c->json) {
    const msgpack_object *e = cli_obj_get(reply.result, "ignored");
    const msgpack_object *replaced = cli_obj_get(reply.result, "replaced");
    bool again = replaced && replaced->type == MSGPACK_OBJECT_BOOLEAN && replaced->via.boolean;
    fputs(again ? "ignoring (replaced) " : "ignoring ", stdout);
    if (e)
      cli_ignore_print(e);
  }
  cli_reply_free(&reply);
  return 0;
}

static int
cli_ignored_run(CliClient *c, const CliParsed *p)
{
  (void)p;
  CliReq req;
  cli_req_init(&req);
  CliReply reply;
  int rc = cli_ignore_call(c, "incident_ignored", &req, &reply);
  if (rc != 0)
    return rc;
  if (!c->json) {
    const msgpack_object *list = cli_obj_get(reply.result, "ignored");
    uint32_t n = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
    for (uint32_t i = 0; i < n; i++)
      cli_ignore_print(&list->via.array.ptr[i]);
    if (n == 0)
      puts("no fingerprints ignored in this session");
  }
  cli_reply_free(&reply);
  return 0;
}

static int
cli_unignore_run(CliClient *c, const CliParsed *p)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "fingerprint", p->args[0]);
  CliReply reply;
  int rc = cli_ignore_call(c, "incident_unignore", &req, &reply);
  if (rc != 0)
    return rc;
  if (!c->json)
    printf("no longer ignoring %s\n", p->args[0]);
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_ignore = {
  .spec = {.name = "ignore", .args = "FINGERPRINT|MONITOR:INCIDENT",
           .summary = "stop being told about a known incident",
           .about = "Mark an incident's fingerprint as known in this project's session: later\n"
           "incidents with it are logged and counted (counters.ignored), never\n"
           "notified. Name it by its 16 hex digits (a notification's `to silence` line,\n"
           "`vigil events`) or as MONITOR:INCIDENT (a monitor's id or label, and the\n"
           "incident's number). It lasts 7 days unless --for or --always says otherwise,\n"
           "and survives an engine restart. The same fingerprint again replaces it.",
           .opts = cli_ignore_opts, .min_args = 1, .max_args = 1},
  .run = cli_ignore_run,
};

const CliCommand cli_cmd_ignored = {
  .spec = {.name = "ignored", .args = "", .summary = "list the fingerprints ignored here",
           .about = "List this project's session's ignored fingerprints: each one's expiry\n"
           "(or always), how many incidents it silenced and when the last was, and why.",
           .opts = cli_ignore_no_opts},
  .run = cli_ignored_run,
};

const CliCommand cli_cmd_unignore = {
  .spec = {.name = "unignore", .args = "FINGERPRINT",
           .summary = "be told about a fingerprint again",
           .about = "Remove FINGERPRINT from this project's session's ignored fingerprints:\n"
           "its incidents are notified again. One it does not ignore exits 1.",
           .opts = cli_ignore_no_opts, .min_args = 1, .max_args = 1},
  .run = cli_unignore_run,
};
