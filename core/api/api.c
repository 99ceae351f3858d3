/*
 * The msgpack-rpc front end (see api.h): one table maps a method name to
 * its handler (api_*.c, by family) and to the arguments it takes; anything
 * else a caller sends is refused before the handler runs. A handler reads
 * its arguments, acts on the engine and packs a result map into the call's
 * buffer, or sets the call's error; the dispatcher then answers (a request)
 * or reports a failure with a vigil.error notification (a notification
 * call). This file also holds the connections (each with its Seat in the
 * engine, and the push that packs its notifications) and the transports.
 */
#include "api/api_call.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/epoch.h"
#include "base/log.h"
#include "base/logrepeat.h"
#include "base/memory.h"
#include "engine/monitor_fields.h"
#include "api/wire.h"

typedef void (*ApiMethod)(Call *call);

/* --- the table and dispatch --------------------------------------------- */

/* The arguments a method takes: "session" and these. */
#define ARGS(...) ((const char *const[]){"session", __VA_ARGS__, NULL})
#define ARGS_NONE ((const char *const[]){"session", NULL})

/* A method, and the arguments it takes: `known`, or, for the two that
 * start a monitor, the fields of `form` in the start table
 * (monitor_fields.h) and "session". Rows name their fields; one leaves
 * out what it does not use. */
static const struct {
  const char *name;
  ApiMethod fn;
  const char *const *known;
  unsigned form;
} api_methods[] = {
  {.name = "ping", .fn = api_ping, .known = ARGS_NONE},
  {.name = "api_info", .fn = api_info, .known = ARGS_NONE},
  {.name = "config_reload", .fn = api_config_reload, .known = ARGS_NONE},
  {.name = "session_open", .fn = api_session_open, .known = ARGS("last_seq", "linger_ms")},
  {.name = "session_state", .fn = api_session_state, .known = ARGS("state")},
  {.name = "session_close", .fn = api_session_close, .known = ARGS_NONE},
  {.name = "session_list", .fn = api_session_list, .known = ARGS("all")},
  {.name = "monitor_start", .fn = api_monitor_start, .form = kFormStart},
  {.name = "monitor_stop", .fn = api_monitor_stop,
   .known = ARGS("monitor_id", "signal", "grace_ms", "escalate")},
  {.name = "monitor_list", .fn = api_monitor_list,
   .known = ARGS("include_exited", "state", "limit")},
  {.name = "monitor_status", .fn = api_monitor_status,
   .known = ARGS("monitor_id", "include_start", "reveal_env")},
  {.name = "monitor_output", .fn = api_monitor_output,
   .known = ARGS("monitor_id", "stream", "since_sequence", "limit", "incident")},
  {.name = "monitor_logs", .fn = api_monitor_logs,
   .known = ARGS("monitor_id", "stream", "offset", "limit")},
  {.name = "monitor_events", .fn = api_monitor_events,
   .known = ARGS("monitor_id", "since_event_id")},
  {.name = "monitor_wait", .fn = api_monitor_wait,
   .known = ARGS("monitor_id", "for", "since_event_id", "since_sequence", "timeout_ms")},
  {.name = "process_run", .fn = api_process_run, .form = kFormRun},
  {.name = "cursor_take", .fn = api_cursor_take, .known = ARGS("cursor", "limit", "wait_ms")},
  {.name = "cursor_get", .fn = api_cursor_get, .known = ARGS("cursor")},
  {.name = "cursor_advance", .fn = api_cursor_advance, .known = ARGS("cursor", "to")},
  {.name = "notifications_since", .fn = api_notifications_since,
   .known = ARGS("since_seq", "limit")},
  {.name = "group_up", .fn = api_group_up, .known = ARGS("group")},
  {.name = "group_down", .fn = api_group_down, .known = ARGS("group")},
  {.name = "group_list", .fn = api_group_list, .known = ARGS_NONE},
  {.name = "incident_ignore", .fn = api_incident_ignore,
   .known = ARGS("fingerprint", "monitor_id", "incident", "for", "reason")},
  {.name = "incident_ignored", .fn = api_incident_ignored, .known = ARGS_NONE},
  {.name = "incident_unignore", .fn = api_incident_unignore, .known = ARGS("fingerprint")},
};

#define API_METHOD_COUNT (sizeof api_methods / sizeof api_methods[0])

const char *
api_method_name(size_t i)
{
  return i < API_METHOD_COUNT ? api_methods[i].name : NULL;
}

/* The arguments the i-th method takes, NULL-terminated. */
static const char *const *
api_method_known(size_t i)
{
  const char *const *known = api_methods[i].known;
  return known ? known : monitor_fields_names(api_methods[i].form, "session");
}

const char *const *
api_method_args(const char *name)
{
  for (size_t i = 0; i < API_METHOD_COUNT; i++)
    if (strcmp(api_methods[i].name, name) == 0)
      return api_method_known(i);
  return NULL;
}

static void
api_on_call(void *data, RpcChannel *ch, bool is_request, uint32_t msgid, const char *method,
            size_t method_len, const msgpack_object *args)
{
  Conn *c = rpc_channel_user(ch);
  if (c == NULL)
    return;
  Call call = {.e = c->api->engine, .c = c, .is_request = is_request, .msgid = msgid};
  call.err.set = false;
  size_t i = 0;
  while (i < API_METHOD_COUNT &&
         !(strlen(api_methods[i].name) == method_len &&
           memcmp(api_methods[i].name, method, method_len) == 0))
    i++;
  api_answer_begin(&call.sb, &call.pk);
  if (i == API_METHOD_COUNT) {
    error_set(&call.err, kErrUnknownMethod, "no method \"%.*s\" (api_info lists them)",
              (int)method_len, method);
  } else {
    call.args.map = args;
    call.args.method = api_methods[i].name;
    /* `session` names a session this connection opened, for every method
     * (session_open excepted: there it names the session to open). */
    bool session_ok = api_methods[i].fn == api_session_open || api_session(&call) != NULL;
    if (session_ok && args_check_known(&call.args, api_method_known(i), &call.err) == 0)
      api_methods[i].fn(&call);
  }
  if (call.err.set) {
    if (is_request)
      rpc_channel_respond(ch, msgid, &call.err, NULL, 0);
    else
      rpc_channel_error_notify(ch, &call.err);
  } else if (!call.deferred && is_request) {
    if (call.sb.size == 0)
      msgpack_pack_map(&call.pk, 0);
    rpc_channel_respond(ch, msgid, NULL, call.sb.data, call.sb.size);
  }
  msgpack_sbuffer_destroy(&call.sb);
}

/* --- connections -------------------------------------------------------- */

/* Pushes a notification of a session the connection holds, paced to the
 * connection's output bound: false when it has no room now (the session
 * holds it, and the rest, until api_on_room). */
static bool
api_push(void *ctx, const Notification *n)
{
  Conn *c = ctx;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 1);
  wire_notification(&pk, n);
  bool sent = rpc_channel_notify_paced(c->ch, "vigil.notification", sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return sent;
}

static Conn *
api_conn_open(Api *api, RpcChannel *ch)
{
  Conn *c = xcalloc(1, sizeof *c);
  c->api = api;
  c->ch = ch;
  c->client = seat_open(api->engine, api_push, c);
  c->next = api->conns;
  if (api->conns)
    api->conns->prev = c;
  api->conns = c;
  api->nconns++;
  rpc_channel_set_user(ch, c);
  return c;
}

/* Forgets a connection whose channel is closing (or the engine exiting):
 * its waiters are dropped unanswered, since nobody is left to read the
 * answer, and its client is closed. The stdio connection's end ends the
 * engine. */
static void
api_conn_close(Conn *c)
{
  Api *api = c->api;
  while (c->waiters)
    api_wait_done(c->waiters);
  seat_close(c->client);
  if (c->prev)
    c->prev->next = c->next;
  else
    api->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  api->nconns--;
  bool adopted = c->adopted;
  if (adopted)
    api->nadopted--;
  free(c);
  /* The stdio connection, not a virtual one served beside it. */
  if (api->stdio_mode && !adopted && !api->engine->shutting_down) {
    LOG_INFO("engine", "stdin closed: stopping every monitor");
    engine_shutdown(api->engine, false);
  }
}

/* The user of a refused connection's channel: it is closing, with nothing
 * to forget and nothing to log. */
static Conn api_refused;

static void
api_on_open(void *data, RpcChannel *ch)
{
  Api *api = data;
  Engine *e = api->engine;
  if (api->nconns - api->nadopted >= (size_t)e->config.settings.rpc_max_connections) {
    /* Past the bound the connection is not served at all (it never gets a
     * session), so it costs nothing beyond its close; its close is not
     * logged, and the refusal once a window (a flood of connects would
     * otherwise write two lines each). */
    api->conns_refused++;
    char reason[96];
    snprintf(reason, sizeof reason, "rpc.max_connections (%lld) reached",
             (long long)e->config.settings.rpc_max_connections);
    if (api->refusals == NULL)
      api->refusals = logrepeat_new(e->loop, "api", "refused", "connections",
                                    LOGREPEAT_WINDOW_MS);
    if (logrepeat_hit(api->refusals, reason))
      LOG_WARN("api", "refused a connection from %s: %s (more refusals are counted, said every "
               "%d s)", rpc_channel_peer(ch), reason, LOGREPEAT_WINDOW_MS / 1000);
    rpc_channel_set_user(ch, &api_refused);
    rpc_channel_close(ch, "rpc.max_connections reached");
    return;
  }
  Conn *c = api_conn_open(api, ch);
  LOG_INFO("api", "connection from %s (session %s)", rpc_channel_peer(ch),
           session_name(c->client->anon));
}

static void
api_on_close(void *data, RpcChannel *ch, const char *reason)
{
  Conn *c = rpc_channel_user(ch);
  if (c == &api_refused)
    return;
  LOG_INFO("api", "connection from %s closed: %s", rpc_channel_peer(ch), reason);
  if (c != NULL) {
    rpc_channel_set_user(ch, NULL);
    api_conn_close(c);
  }
}

/* The connection read what was waiting: its sessions push what they held
 * back for it. */
static void
api_on_room(void *data, RpcChannel *ch)
{
  Conn *c = rpc_channel_user(ch);
  if (c != NULL)
    seat_resume(c->client);
}

static const RpcHandlers api_handlers = {api_on_open, api_on_call, api_on_close, api_on_room};

static RpcLimits
api_limits(const Engine *e)
{
  /* oversize_closes is the transport's to decide (rpc/server.c). */
  RpcLimits l = {(size_t)e->config.settings.rpc_max_message_bytes,
                 (size_t)e->config.settings.rpc_max_output_bytes, false,
                 (uint64_t)e->config.settings.rpc_output_stall_ms};
  return l;
}

/* Draws the engine's epoch as the engine starts serving, and logs it, so
 * that a log line ties a host's (epoch, seq) to this run. */
static void
api_draw_epoch(void)
{
  LOG_INFO("api", "engine epoch %s", epoch_hex());
}

Api *
api_new(Engine *e)
{
  Api *api = xcalloc(1, sizeof *api);
  api->engine = e;
  engine_set_hooks(e, &api_engine_hooks, api);
  return api;
}

void
api_free(Api *api)
{
  if (api->server)
    rpc_server_close(api->server);
  api->server = NULL;
  logrepeat_free(api->refusals);
  api->refusals = NULL;
  /* Each connection is taken off its channel first, so the channel's later
   * on_close finds nothing to do. */
  while (api->conns) {
    Conn *c = api->conns;
    RpcChannel *ch = c->ch;
    rpc_channel_set_user(ch, NULL);
    api->stdio_mode = false; /* the engine is exiting anyway */
    api_conn_close(c);
    rpc_channel_close(ch, "engine exiting");
  }
  engine_set_hooks(api->engine, NULL, NULL);
  free(api);
}

int
api_bind(Api *api, const char *path, VigilError *err)
{
  Engine *e = api->engine;
  api_draw_epoch();
  RpcLimits limits = api_limits(e);
  api->server = rpc_server_bind(e->loop, path, &limits, &api_handlers, api, err);
  return api->server ? 0 : -1;
}

int
api_start_listening(Api *api, VigilError *err)
{
  if (rpc_server_start(api->server, err) == 0)
    return 0;
  api->server = NULL; /* freed, its file removed */
  return -1;
}

int
api_listen_handed_over(Api *api, int fd, const char *path, VigilError *err)
{
  Engine *e = api->engine;
  api_draw_epoch();
  RpcLimits limits = api_limits(e);
  api->server = rpc_server_listen_fd(e->loop, fd, path, &limits, &api_handlers, api, err);
  return api->server ? 0 : -1;
}

void
api_keep_socket_file(Api *api)
{
  if (api->server != NULL)
    rpc_server_keep_file(api->server);
}

int
api_listen_fd(const Api *api)
{
  return rpc_server_fd(api->server);
}

static void
api_free_handle(uv_handle_t *h)
{
  free(h);
}

int
api_adopt(Api *api, int fd, const char *peer, VigilError *err)
{
  Engine *e = api->engine;
  uv_pipe_t *pipe = xmalloc(sizeof *pipe);
  uv_pipe_init(e->loop, pipe, 0);
  int r = uv_pipe_open(pipe, fd);
  if (r != 0) {
    error_set(err, kErrInternal, "cannot serve %s: %s", peer, uv_strerror(r));
    close(fd);
    uv_close((uv_handle_t *)pipe, api_free_handle);
    return -1;
  }
  /* The bridge checks sizes before it writes; a message that got past it
   * anyway is answered, and the virtual connection goes on. */
  RpcLimits limits = api_limits(e);
  limits.oversize_closes = false;
  RpcChannel *ch = rpc_channel_open(e->loop, (uv_stream_t *)pipe, (uv_stream_t *)pipe, &limits,
                                    &api_handlers, api, peer);
  Conn *c = api_conn_open(api, ch);
  c->adopted = true;
  api->nadopted++;
  LOG_INFO("api", "connection from %s (session %s)", peer, session_name(c->client->anon));
  return 0;
}

int
api_open_stdio(Api *api, VigilError *err)
{
  Engine *e = api->engine;
  api_draw_epoch();
  RpcLimits limits = api_limits(e);
  RpcChannel *ch = rpc_stdio_open(e->loop, &limits, &api_handlers, api, err);
  if (ch == NULL)
    return -1;
  api->stdio_mode = true;
  return 0;
}
