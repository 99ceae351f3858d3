/*
 * The invocation's link to the engine (see cli_client.h): resolving where
 * and as whom to connect, opening the session, calls with deadlines, and
 * reporting failures the same way for every subcommand.
 */
#include "cli/cli_client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_json.h"
#include "cli/cli_obj.h"
#include "cli/cli_paths.h"
#include "cli/cli_project.h"
#include "base/config_lookup.h"
#include "rpc/server.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

CliInitResult
cli_client_init(CliClient *c, const char *socket, const char *session, bool json)
{
  memset(c, 0, sizeof *c);
  c->json = json;
  const char *path = socket;
  if (path == NULL || path[0] == '\0')
    path = getenv("VIGIL_SOCKET");
  if (path != NULL && path[0] != '\0') {
    if (strlen(path) >= sizeof c->socket_path) {
      cli_error_set(&c->err, kCliErrTransport, "--socket: path too long");
      return kCliInitBadArgument;
    }
    memcpy(c->socket_path, path, strlen(path) + 1);
  } else if (rpc_default_socket_path(c->socket_path, sizeof c->socket_path) != 0) {
    cli_error_set(&c->err, kCliErrTransport, "the default socket path is too long; give --socket");
    return kCliInitBadArgument;
  }
  if (session == NULL || session[0] == '\0')
    session = getenv("VIGIL_SESSION");
  if (session == NULL || session[0] == '\0') {
    /* The project's, as vigil mcp and vigil hook name it (cli_project.h). */
    if (cli_project_session(NULL, c->session, sizeof c->session) == 0)
      return kCliInitOk;
    cli_error_set(&c->err, kCliErrTransport, "cannot name this directory's session: its real "
                  "path cannot be found (%s); give --session NAME", strerror(errno));
    return kCliInitNoSession;
  }
  if (strlen(session) >= sizeof c->session) {
    cli_error_set(&c->err, kCliErrTransport, "--session: name too long (at most 64 characters)");
    return kCliInitBadArgument;
  }
  memcpy(c->session, session, strlen(session) + 1);
  return kCliInitOk;
}

int
cli_client_call(CliClient *c, const char *method, const CliReq *args, int64_t timeout_ms,
                CliReply *reply)
{
  int64_t deadline = timeout_ms < 0 ? -1 : cli_now_ms() + timeout_ms;
  if (cli_conn_call(c->conn, method, args, deadline, reply, &c->err) == 0)
    return 0;
  if (c->err.kind == kCliErrDeadline) {
    StrBuf d = STRBUF_INIT;
    textfmt_duration(&d, (uint64_t)timeout_ms);
    cli_error_set(&c->err, kCliErrDeadline, "no answer from the engine to %s within %s", method,
                  strbuf_cstr(&d));
    strbuf_free(&d);
  }
  return -1;
}

int
cli_client_monitor_status(CliClient *c, const char *id, CliStartView start, CliReply *reply)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  if (start != kCliStartNone)
    cli_req_bool(&req, "include_start", true);
  if (start == kCliStartRevealed)
    cli_req_bool(&req, "reveal_env", true);
  int rc = cli_client_call(c, "monitor_status", &req, CLI_CALL_TIMEOUT_MS, reply);
  cli_req_free(&req);
  return rc;
}

uint64_t
cli_client_limit(CliClient *c, const char *name, uint64_t def)
{
  CliReply reply;
  CliError saved = c->err;
  if (cli_client_call(c, "api_info", NULL, CLI_CALL_TIMEOUT_MS, &reply) != 0) {
    c->err = saved;
    return def;
  }
  uint64_t value = cli_obj_get_uint(cli_obj_get(reply.result, "limits"), name, def);
  cli_reply_free(&reply);
  return value;
}

/* Opens the named session; see cli_client.h for the linger rule. */
static int
cli_client_open_session(CliClient *c, bool has_last_seq, uint64_t last_seq)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "session", c->session);
  if (has_last_seq)
    cli_req_uint(&req, "last_seq", last_seq);
  CliReply reply;
  int rc = cli_client_call(c, "session_open", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  bool resumed = cli_obj_get_bool(reply.result, "resumed");
  c->next_seq = cli_obj_get_uint(reply.result, "next_seq", 0);
  cli_reply_free(&reply);
  if (resumed)
    return 0;
  /* We created it: ask for the long linger. Opening a session this
   * connection already has open only sets the linger; nothing is replayed
   * twice. An engine configured with a lower ceiling gets its ceiling. */
  uint64_t linger = CLI_SESSION_LINGER_MS;
  for (int attempt = 0; attempt < 2; attempt++) {
    cli_req_init(&req);
    cli_req_str(&req, "session", c->session);
    cli_req_uint(&req, "linger_ms", linger);
    rc = cli_client_call(c, "session_open", &req, CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc == 0) {
      cli_reply_free(&reply);
      return 0;
    }
    if (attempt > 0 || c->err.kind != kCliErrEngine || strstr(c->err.msg, "linger_ms") == NULL)
      return -1;
    linger = cli_client_limit(c, "session.max_linger_ms", 0);
    if (linger == 0)
      return 0; /* the default linger applies; the session is open all the same */
  }
  return -1;
}

int
cli_client_connect(CliClient *c, bool open_session, bool has_last_seq, uint64_t last_seq)
{
  c->conn = c->nats_url ? cli_conn_open_nats(c->nats_url, c->engine,
                                             c->engine_wide ? NULL : c->session, &c->err)
                        : cli_conn_open(c->socket_path, &c->err);
  if (c->conn == NULL)
    return -1;
  cli_conn_set_notify(c->conn, c->notify, c->notify_ctx);
  /* Subscribed before the session is opened: nothing published after the
   * open can be missed by the subscription. */
  c->live = false;
  if (c->nats_url && c->notify && !c->engine_wide)
    c->live = cli_conn_nats_listen(c->conn, c->engine, c->session, &c->live_err) == 0;
  if (open_session && cli_client_open_session(c, has_last_seq, last_seq) != 0)
    return -1;
  return 0;
}

/* See cli_client.h. */
void
cli_client_shell_word(StrBuf *out, const char *path)
{
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                              "_./-+:@%=,";
  if (path[0] != '\0' && strspn(path, plain) == strlen(path)) {
    strbuf_puts(out, path);
    return;
  }
  strbuf_putc(out, '\'');
  for (const char *p = path; *p; p++) {
    if (*p == '\'')
      strbuf_puts(out, "'\\''");
    else
      strbuf_putc(out, *p);
  }
  strbuf_putc(out, '\'');
}

/* Prints how to start an engine on the socket this command wanted: the
 * vigild beside this executable (cli_paths.h) with --daemon, which returns
 * once the engine listens (`vigild &` races the next command), and the
 * config it will find by the same lookup (config_lookup.h), saying how it
 * was found. */
static void
cli_client_how_to_start(const CliClient *c)
{
  char vigild[CLI_PATHS_MAX], config[CLI_PATHS_MAX], def[4096];
  cli_paths_vigild(vigild, sizeof vigild);
  const char *why = NULL;
  bool have_config = config_lookup(NULL, config, sizeof config, &why);
  bool is_default = rpc_default_socket_path(def, sizeof def) == 0 &&
                    strcmp(def, c->socket_path) == 0;
  StrBuf cmd = STRBUF_INIT;
  cli_client_shell_word(&cmd, vigild);
  strbuf_puts(&cmd, " --daemon");
  if (!is_default) {
    strbuf_puts(&cmd, " --listen ");
    cli_client_shell_word(&cmd, c->socket_path);
  }
  fprintf(stderr, "  start one with: %s\n", strbuf_cstr(&cmd));
  strbuf_free(&cmd);
  if (have_config)
    fprintf(stderr, "  (it will use the config %s: %s; stop it with vigil shutdown)\n", config,
            why);
  else
    fprintf(stderr, "  (no config found: until you write %s, set VIGIL_CONFIG, or give\n"
                    "  --config the bundled share/vigil/vigil.lua of an install or "
                    "config/vigil.lua of the source, every start is denied)\n",
            config);
}

int
cli_client_fail(CliClient *c)
{
  fprintf(stderr, "vigil: %s\n", c->err.msg);
  if (c->err.kind == kCliErrNoEngine && c->nats_url == NULL)
    cli_client_how_to_start(c);
  return CLI_EXIT_FAILURE;
}

void
cli_client_close(CliClient *c)
{
  cli_conn_close(c->conn);
  c->conn = NULL;
}

/* Whether s is a whole monitor id: "mon_" and at least 8 of [0-9a-z]. */
static bool
cli_client_is_id(const char *s)
{
  if (strncmp(s, "mon_", 4) != 0 || strlen(s) < 12 || strlen(s) > 60)
    return false;
  for (const char *p = s + 4; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')))
      return false;
  return true;
}

int
cli_client_monitor_id(CliClient *c, const char *arg, char *out)
{
  if (cli_client_is_id(arg)) {
    snprintf(out, 64, "%s", arg);
    return 0;
  }
  CliReq req;
  cli_req_init(&req);
  cli_req_bool(&req, "include_exited", true);
  cli_req_uint(&req, "limit", 10000);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_list", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  const msgpack_object *list = cli_obj_get(reply.result, "monitors");
  size_t alen = strlen(arg);
  char prefix[80];
  snprintf(prefix, sizeof prefix, "mon_%s", arg);
  const char *by_label = NULL, *by_prefix = NULL;
  size_t label_len = 0, prefix_len = 0, nprefix = 0;
  bool label_running = false;
  StrBuf ambiguous = STRBUF_INIT;
  for (uint32_t i = 0; list && list->type == MSGPACK_OBJECT_ARRAY && i < list->via.array.size;
       i++) {
    const msgpack_object *m = &list->via.array.ptr[i];
    size_t idlen, llen;
    const char *id = cli_obj_get_text(m, "monitor_id", &idlen);
    const char *label = cli_obj_get_text(m, "label", &llen);
    if (id == NULL || idlen >= 64)
      continue;
    bool running = cli_obj_get_is(m, "state", "running");
    /* Newest first: the first label match is the newest; a running one
     * further down still beats an ended one. */
    if (label && llen == alen && memcmp(label, arg, alen) == 0 &&
        (by_label == NULL || (running && !label_running))) {
      by_label = id;
      label_len = idlen;
      label_running = running;
    }
    bool prefixed = (idlen >= alen && memcmp(id, arg, alen) == 0) ||
                    (idlen >= strlen(prefix) && memcmp(id, prefix, strlen(prefix)) == 0);
    if (prefixed) {
      nprefix++;
      by_prefix = id;
      prefix_len = idlen;
      strbuf_printf(&ambiguous, "%s%.*s", nprefix > 1 ? ", " : "", (int)idlen, id);
    }
  }
  rc = 0;
  if (by_label) {
    snprintf(out, 64, "%.*s", (int)label_len, by_label);
  } else if (nprefix == 1) {
    snprintf(out, 64, "%.*s", (int)prefix_len, by_prefix);
  } else if (nprefix > 1) {
    rc = cli_error_set(&c->err, kCliErrEngine, "not_found: \"%s\" is ambiguous: %s", arg,
                       strbuf_cstr(&ambiguous));
    c->err.code = 2;
  } else {
    rc = cli_error_set(&c->err, kCliErrEngine,
                       "not_found: no monitor \"%s\" in session \"%s\" (vigil list --all shows "
                       "them)",
                       arg, c->session);
    c->err.code = 2;
  }
  strbuf_free(&ambiguous);
  cli_reply_free(&reply);
  return rc;
}

void
cli_client_print_json(const msgpack_object *o)
{
  StrBuf sb = STRBUF_INIT;
  cli_json_append(&sb, o);
  strbuf_putc(&sb, '\n');
  fwrite(sb.data, 1, sb.len, stdout);
  fflush(stdout);
  strbuf_free(&sb);
}

void
cli_client_stop_signals(void (*handler)(int))
{
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);
}
