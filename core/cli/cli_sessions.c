/*
 * `vigil sessions`: every named session of the engine with its monitors,
 * so that a person sees what each agent runs (issue 23, item 5). The one
 * this invocation would use (the project's, or --session's) is marked and
 * listed first.
 *
 * session_list {all: true} names the sessions without opening any; their
 * monitors are listed by opening each one that has some (session_open
 * without linger_ms changes nothing of an existing session) and asking
 * monitor_list for it. A connection may hold at most 64 sessions open
 * (docs/protocol.md section 3), so every CLI_SESSIONS_PER_CONN sessions
 * the client reconnects. A session that ended between the two calls is
 * made again by session_open (resumed: false); it is then closed at once,
 * empty, so that listing leaves nothing behind.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_cmds.h"
#include "cli/cli_json.h"
#include "cli/cli_obj.h"
#include "cli/cli_project.h"
#include "base/memory.h"

/* Sessions opened on one connection before reconnecting (the engine's
 * bound is 64 per connection). */
#define CLI_SESSIONS_PER_CONN 60

static const CliOpt cli_sessions_opts[] = {
  {.name = "all", .short_name = 'a',
   .help = "list ended monitors too, and open every session to find them"},
  {0},
};

/* One session of session_list's answer, and what is known of it. */
typedef struct {
  const msgpack_object *entry; /* session_list's entry (in the kept reply) */
  char name[128];
  bool current;        /* the session this invocation uses */
  CliReply monitors;   /* monitor_list's answer, when listed */
  bool listed;
} CliSessionRow;

/* Orders the current session first, then by name. */
static int
cli_sessions_cmp(const void *a, const void *b)
{
  const CliSessionRow *x = a, *y = b;
  if (x->current != y->current)
    return x->current ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Opens session name on c (reconnecting every CLI_SESSIONS_PER_CONN) and
 * lists its monitors into row. Returns 0, 1 when the session had ended
 * meanwhile (nothing listed), or -1 with c->err set. */
static int
cli_sessions_list_one(CliClient *c, CliSessionRow *row, bool all, size_t *opened)
{
  if (*opened == CLI_SESSIONS_PER_CONN) {
    cli_client_close(c);
    if (cli_client_connect(c, false, false, 0) != 0)
      return -1;
    *opened = 0;
  }
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "session", row->name);
  CliReply reply;
  int rc = cli_client_call(c, "session_open", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  (*opened)++;
  bool resumed = cli_obj_get_bool(reply.result, "resumed");
  cli_reply_free(&reply);
  if (!resumed) {
    /* Gone between the list and the open: this call made it anew. */
    cli_req_init(&req);
    cli_req_str(&req, "session", row->name);
    rc = cli_client_call(c, "session_close", &req, CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc == 0)
      cli_reply_free(&reply);
    return rc == 0 ? 1 : -1;
  }
  cli_req_init(&req);
  cli_req_str(&req, "session", row->name);
  cli_req_bool(&req, "include_exited", all);
  cli_req_uint(&req, "limit", 10000);
  rc = cli_client_call(c, "monitor_list", &req, CLI_CALL_TIMEOUT_MS, &row->monitors);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  row->listed = true;
  return 0;
}

/* Prints the sessions as JSON: session_list's entries, each with
 * `current` and, when listed, `monitor_list` (monitor_list's monitors). */
static void
cli_sessions_json(const CliSessionRow *rows, size_t n, const char *root)
{
  json_t *out = json_object();
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *o = rows[i].entry ? cli_json_of(rows[i].entry) : json_object();
    if (rows[i].entry == NULL) {
      json_object_set_new(o, "session", json_string(rows[i].name));
      json_object_set_new(o, "exists", json_false());
    }
    json_object_set_new(o, "current", json_boolean(rows[i].current));
    if (rows[i].current && root)
      json_object_set_new(o, "project", json_string(root));
    if (rows[i].listed)
      json_object_set_new(o, "monitor_list",
                          cli_json_of(cli_obj_get(rows[i].monitors.result, "monitors")));
    json_array_append_new(list, o);
  }
  json_object_set_new(out, "sessions", list);
  char *text = json_dumps(out, JSON_COMPACT);
  if (text) {
    puts(text);
    free(text);
  }
  json_decref(out);
}

/* Prints one session's heading line and its monitors. */
static void
cli_sessions_print(const CliSessionRow *row, const char *root, bool all)
{
  const char *mark = row->current ? "* " : "  ";
  printf("%s%s%s%s", mark, cli_fmt_sgr(kCliColBold), row->name, cli_fmt_reset(kCliColBold));
  if (row->current && root)
    printf("  (this project: %s)", root);
  else if (row->current)
    printf("  (this invocation's session)");
  if (row->entry == NULL) {
    puts(": not in the engine (nothing runs in it)");
    return;
  }
  size_t n;
  const char *state = cli_obj_get_text(row->entry, "state", &n);
  printf("\n    %llu attached, %.*s, %llu running, %llu queued\n",
         (unsigned long long)cli_obj_get_uint(row->entry, "attached", 0), (int)n,
         state ? state : "?", (unsigned long long)cli_obj_get_uint(row->entry, "monitors", 0),
         (unsigned long long)cli_obj_get_uint(row->entry, "queued", 0));
  const msgpack_object *list = row->listed ? cli_obj_get(row->monitors.result, "monitors") : NULL;
  if (list && list->type == MSGPACK_OBJECT_ARRAY && list->via.array.size > 0)
    cli_show_monitor_table(list, NULL);
  else
    printf("    (no %smonitors)\n", all ? "" : "running ");
}

static int
cli_sessions_run(CliClient *c, const CliParsed *p)
{
  bool all = cli_opts_has(p, "all");
  bool given = (p->session && p->session[0]) ||
               (getenv("VIGIL_SESSION") && getenv("VIGIL_SESSION")[0]);
  char root[PATH_MAX];
  bool have_root = !given && cli_project_root(NULL, root, sizeof root, NULL) == 0;
  CliReq req;
  cli_req_init(&req);
  cli_req_bool(&req, "all", true);
  CliReply reply;
  int rc = cli_client_connect(c, false, false, 0) == 0 &&
                   cli_client_call(c, "session_list", &req, CLI_CALL_TIMEOUT_MS, &reply) == 0
               ? 0
               : -1;
  cli_req_free(&req);
  if (rc != 0)
    return cli_client_fail(c);
  const msgpack_object *sessions = cli_obj_get(reply.result, "sessions");
  uint32_t count = sessions && sessions->type == MSGPACK_OBJECT_ARRAY ? sessions->via.array.size
                                                                      : 0;
  /* Every named session, and the current one even when the engine has
   * none of that name yet. */
  CliSessionRow *rows = xcalloc((size_t)count + 1, sizeof *rows);
  size_t n = 0;
  bool current_seen = false;
  for (uint32_t i = 0; i < count; i++) {
    const msgpack_object *e = &sessions->via.array.ptr[i];
    size_t len;
    const char *name = cli_obj_get_text(e, "session", &len);
    /* This connection's own anonymous session (listed first) is not one. */
    if (name == NULL || len >= sizeof rows[n].name || i == 0)
      continue;
    rows[n].entry = e;
    memcpy(rows[n].name, name, len);
    rows[n].current = strcmp(rows[n].name, c->session) == 0;
    current_seen |= rows[n].current;
    n++;
  }
  if (!current_seen) {
    snprintf(rows[n].name, sizeof rows[n].name, "%s", c->session);
    rows[n++].current = true;
  }
  qsort(rows, n, sizeof *rows, cli_sessions_cmp);
  size_t opened = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (rows[i].entry == NULL ||
        (!all && cli_obj_get_uint(rows[i].entry, "monitors", 0) == 0))
      continue;
    int one = cli_sessions_list_one(c, &rows[i], all, &opened);
    if (one < 0)
      rc = -1;
    else if (one > 0)
      rows[i].entry = NULL; /* it ended meanwhile */
  }
  if (rc != 0) {
    rc = cli_client_fail(c);
  } else if (c->json) {
    cli_sessions_json(rows, n, have_root ? root : NULL);
  } else {
    for (size_t i = 0; i < n; i++) {
      if (i > 0)
        putchar('\n');
      cli_sessions_print(&rows[i], have_root ? root : NULL, all);
    }
  }
  for (size_t i = 0; i < n; i++)
    if (rows[i].listed)
      cli_reply_free(&rows[i].monitors);
  free(rows);
  cli_reply_free(&reply);
  return rc;
}

const CliCommand cli_cmd_sessions = {
  .spec = {.name = "sessions", .args = "",
           .summary = "list the engine's sessions and their monitors",
           .about = "List every named session of the engine, with its running monitors (with\n"
           "--all, the ended ones too): an agent's vigil mcp works in the session of its\n"
           "project (mcp- and a hash of the project's top directory), a person's vigil in\n"
           "the same one when run in that project. The session this command would use\n"
           "(marked *) comes first, with the project's directory.",
           .opts = cli_sessions_opts},
  .run = cli_sessions_run,
};
