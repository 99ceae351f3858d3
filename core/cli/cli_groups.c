/*
 * `vigil up [GROUP]`, `vigil down [GROUP]` and `vigil groups`: the config's
 * named groups (group_up, group_down, group_list in docs/protocol.md), what
 * `docker compose up/down` and process-compose do for a Procfile. The
 * monitors start in the sessions their config entries name, so these
 * commands open no session of their own. An unknown group (the engine's
 * invalid_params) exits 2 like any usage error; a refused start exits 1.
 */
#include "cli/cli_cmds.h"
#include "cli/cli_obj.h"

#include "base/error.h"

static const CliOpt cli_groups_no_opts[] = {
  {0},
};

/* Prints one line a monitor: "WHAT LABEL ID (session S)". Labels and
 * sessions are the config's, shown safe all the same. */
static void
cli_groups_print(const msgpack_object *result, const char *key, const char *what)
{
  const msgpack_object *list = cli_obj_get(result, key);
  for (uint32_t i = 0; list && list->type == MSGPACK_OBJECT_ARRAY && i < list->via.array.size;
       i++) {
    const msgpack_object *m = &list->via.array.ptr[i];
    size_t ln = 0, idn = 0, sn = 0;
    const char *label = cli_obj_get_text(m, "label", &ln);
    const char *id = cli_obj_get_text(m, "monitor_id", &idn);
    const char *session = cli_obj_get_text(m, "session", &sn);
    StrBuf line = STRBUF_INIT;
    strbuf_printf(&line, "%s ", what);
    cli_fmt_safe(&line, label ? label : "", ln, false);
    strbuf_putc(&line, ' ');
    cli_fmt_safe(&line, id ? id : "", idn, false);
    strbuf_puts(&line, " (session ");
    cli_fmt_safe(&line, session ? session : "", sn, false);
    strbuf_puts(&line, ")");
    puts(strbuf_cstr(&line));
    strbuf_free(&line);
  }
}

static uint32_t
cli_groups_count(const msgpack_object *result, const char *key)
{
  const msgpack_object *list = cli_obj_get(result, key);
  return list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
}

/* Calls method with the optional GROUP; 0 with reply filled, or the exit
 * status after printing why (2 for the engine's invalid_params: an unknown
 * or malformed group). */
static int
cli_groups_call(CliClient *c, const CliParsed *p, const char *method, CliReply *reply)
{
  CliReq req;
  cli_req_init(&req);
  if (p->nargs > 0)
    cli_req_str(&req, "group", p->args[0]);
  int rc = cli_client_connect(c, false, false, 0) == 0 &&
                   cli_client_call(c, method, &req, CLI_CALL_TIMEOUT_MS, reply) == 0
               ? 0
               : -1;
  cli_req_free(&req);
  if (rc == 0)
    return 0;
  bool usage = c->err.kind == kCliErrEngine && c->err.code == kErrInvalidParams;
  cli_client_fail(c);
  return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
}

static int
cli_up_run(CliClient *c, const CliParsed *p)
{
  CliReply reply;
  int rc = cli_groups_call(c, p, "group_up", &reply);
  if (rc != 0)
    return rc;
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    cli_groups_print(reply.result, "started", "started");
    cli_groups_print(reply.result, "running", "already running");
    if (cli_groups_count(reply.result, "started") + cli_groups_count(reply.result, "running") == 0)
      puts("no groups in the engine's config");
  }
  cli_reply_free(&reply);
  return 0;
}

static int
cli_down_run(CliClient *c, const CliParsed *p)
{
  CliReply reply;
  int rc = cli_groups_call(c, p, "group_down", &reply);
  if (rc != 0)
    return rc;
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    cli_groups_print(reply.result, "stopped", "stopped");
    if (cli_groups_count(reply.result, "stopped") == 0) {
      if (p->nargs > 0)
        printf("nothing of group %s is running\n", p->args[0]);
      else
        puts("nothing of any group is running");
    }
  }
  cli_reply_free(&reply);
  return 0;
}

/* One row of `vigil groups`: a cell of text from the entry's map, or "-". */
static void
cli_groups_cell(CliTable *t, size_t col, const msgpack_object *m, const char *key,
                CliColour colour)
{
  size_t n = 0;
  const char *text = cli_obj_get_text(m, key, &n);
  StrBuf cell = STRBUF_INIT;
  if (text)
    cli_fmt_safe(&cell, text, n, false);
  cli_table_set(t, col, text ? strbuf_cstr(&cell) : "-", text ? colour : kCliColNone);
  strbuf_free(&cell);
}

static int
cli_groups_run(CliClient *c, const CliParsed *p)
{
  CliReply reply;
  int rc = cli_groups_call(c, p, "group_list", &reply);
  if (rc != 0)
    return rc;
  if (c->json) {
    cli_client_print_json(reply.result);
    cli_reply_free(&reply);
    return 0;
  }
  static const char *const headers[] = {"GROUP", "LABEL", "SESSION", "STATE", "ID"};
  static const bool right[] = {false, false, false, false, false};
  CliTable t;
  cli_table_init(&t, 5, headers, right);
  const msgpack_object *groups = cli_obj_get(reply.result, "groups");
  uint32_t ng = groups && groups->type == MSGPACK_OBJECT_ARRAY ? groups->via.array.size : 0;
  for (uint32_t i = 0; i < ng; i++) {
    const msgpack_object *g = &groups->via.array.ptr[i];
    const msgpack_object *mons = cli_obj_get(g, "monitors");
    uint32_t nm = mons && mons->type == MSGPACK_OBJECT_ARRAY ? mons->via.array.size : 0;
    for (uint32_t k = 0; k < nm; k++) {
      const msgpack_object *m = &mons->via.array.ptr[k];
      cli_table_row(&t);
      cli_groups_cell(&t, 0, g, "group", kCliColNone);
      cli_groups_cell(&t, 1, m, "label", kCliColCyan);
      cli_groups_cell(&t, 2, m, "session", kCliColNone);
      cli_groups_cell(&t, 3, m, "state", cli_cmds_state_colour(m));
      cli_groups_cell(&t, 4, m, "monitor_id", kCliColNone);
    }
  }
  if (ng == 0)
    puts("no groups in the engine's config");
  else
    cli_table_print(&t, stdout, cli_fmt_width());
  cli_table_free(&t);
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_up = {
  .spec = {.name = "up", .args = "[GROUP]", .summary = "start a group of the config's monitors",
           .about = "Start every monitor of GROUP, a group of the engine config's monitors (its\n"
           "entries with group = \"GROUP\"), or of every group, each in the session its\n"
           "entry names. Those already running are left alone and said so. Every one\n"
           "is checked first: when one is refused, none starts. Prints one line a\n"
           "monitor. An unknown group exits 2, a refused start 1.",
           .opts = cli_groups_no_opts, .max_args = 1},
  .run = cli_up_run,
};

const CliCommand cli_cmd_down = {
  .spec = {.name = "down", .args = "[GROUP]", .summary = "stop a group of the config's monitors",
           .about = "Stop the running monitors started for GROUP (for every group without\n"
           "one): SIGTERM, then SIGKILL after monitor.kill_grace_ms. Prints one line\n"
           "a monitor stopped; it answers as the stops begin. An unknown group exits 2.",
           .opts = cli_groups_no_opts, .max_args = 1},
  .run = cli_down_run,
};

const CliCommand cli_cmd_groups = {
  .spec = {.name = "groups", .args = "", .summary = "list the config's groups and their monitors",
           .about = "List the groups of the engine config's monitors: each entry's group, label\n"
           "and session, and the state and id of its newest monitor (- when it has\n"
           "not run since the engine started).",
           .opts = cli_groups_no_opts},
  .run = cli_groups_run,
};
