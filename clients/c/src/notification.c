/*
 * Notifications (see notification.h): the map of docs/protocol.md section
 * 6 read into vigil_notification's fields, the type's name to its kind,
 * and a signal's name to its number, each as one table.
 *
 * Reading is lenient about what it does not need: a key that is missing or
 * nil leaves its field NULL (or its has_ flag false), so a host built
 * against this library keeps working with an engine that adds keys or
 * types (an unknown type is VIGIL_NOTIFICATION_OTHER, its name in type).
 */
#include "notification.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_error.h"
#include "message.h"

static const struct {
  const char *type;
  vigil_notification_kind kind;
  bool ending;
} notification_types[] = {
  {"output", VIGIL_NOTIFICATION_OUTPUT, false},
  {"exit", VIGIL_NOTIFICATION_EXIT, true},
  {"stopped", VIGIL_NOTIFICATION_STOPPED, true},
  {"timed_out", VIGIL_NOTIFICATION_TIMED_OUT, true},
  {"idle_timeout", VIGIL_NOTIFICATION_IDLE_TIMEOUT, true},
  {"overload", VIGIL_NOTIFICATION_OVERLOAD, true},
  {"dropped", VIGIL_NOTIFICATION_DROPPED, false},
  {"policy_error", VIGIL_NOTIFICATION_POLICY_ERROR, false},
};

/* The signals the engine names (core/base/signals.c), with this machine's
 * numbers: the engine runs on the same machine as its host. */
static const struct {
  const char *name;
  int number;
} notification_signals[] = {
  {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGILL", SIGILL},
  {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
  {"SIGKILL", SIGKILL}, {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
  {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM}, {"SIGCHLD", SIGCHLD},
  {"SIGCONT", SIGCONT}, {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP}, {"SIGTTIN", SIGTTIN},
  {"SIGTTOU", SIGTTOU}, {"SIGURG", SIGURG},   {"SIGXCPU", SIGXCPU}, {"SIGXFSZ", SIGXFSZ},
  {"SIGVTALRM", SIGVTALRM}, {"SIGPROF", SIGPROF}, {"SIGWINCH", SIGWINCH}, {"SIGSYS", SIGSYS},
};

/* A signal's number from its name, 0 when unknown. */
static int
notification_signal_number(const char *name)
{
  if (name == NULL)
    return 0;
  for (size_t i = 0; i < sizeof notification_signals / sizeof notification_signals[0]; i++)
    if (strcmp(notification_signals[i].name, name) == 0)
      return notification_signals[i].number;
  return 0;
}

/* A uint field into *out; false when missing, nil or not a uint. */
static bool
notification_uint(const msgpack_object *map, const char *key, uint64_t *out)
{
  const msgpack_object *o = vigil_object_get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    return false;
  *out = o->via.u64;
  return true;
}

/* Reads the lines array of map into m->lines. 0, or -1 when memory runs out. */
static int
notification_lines(vigil_notification *n, struct vigil_message *m, const msgpack_object *map)
{
  const msgpack_object *lines = vigil_object_get(map, "lines");
  if (lines == NULL || lines->type != MSGPACK_OBJECT_ARRAY || lines->via.array.size == 0)
    return 0;
  m->lines = calloc(lines->via.array.size, sizeof *m->lines);
  if (m->lines == NULL)
    return -1;
  for (uint32_t i = 0; i < lines->via.array.size; i++) {
    const msgpack_object *l = &lines->via.array.ptr[i];
    vigil_line *out = &m->lines[n->nlines++];
    notification_uint(l, "seq", &out->seq);
    out->stream = vigil_object_str(vigil_object_get(l, "stream"));
    out->text = vigil_object_str(vigil_object_get(l, "text"));
    if (!vigil_object_int(vigil_object_get(l, "pattern"), &out->pattern))
      out->pattern = -1;
    const msgpack_object *t = vigil_object_get(l, "truncated");
    out->truncated = t != NULL && t->type == MSGPACK_OBJECT_BOOLEAN && t->via.boolean;
  }
  n->lines = m->lines;
  return 0;
}

/* Reads [code, message] of a vigil.error. */
static int
notification_engine_error(vigil_notification *n, const msgpack_object *params, char *why,
                          size_t why_size)
{
  int64_t code;
  const char *message;
  if (params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size != 2 ||
      !vigil_object_int(&params->via.array.ptr[0], &code) ||
      (message = vigil_object_str(&params->via.array.ptr[1])) == NULL) {
    snprintf(why, why_size, "a vigil.error notification that is not [code, message]");
    return -1;
  }
  n->kind = VIGIL_NOTIFICATION_ENGINE_ERROR;
  n->type = "vigil.error";
  n->error.code = (int)code;
  snprintf(n->error.message, sizeof n->error.message, "%s", message);
  return 0;
}

int
notification_read(vigil_notification *n, struct vigil_message *m, const msgpack_object *params,
                  bool engine_error, char *why, size_t why_size)
{
  memset(n, 0, sizeof *n);
  if (engine_error) {
    if (notification_engine_error(n, params, why, why_size) != 0)
      return -1;
    n->message_ = m;
    return 0;
  }
  if (params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size != 1 ||
      params->via.array.ptr[0].type != MSGPACK_OBJECT_MAP) {
    snprintf(why, why_size, "a vigil.notification whose params are not [map]");
    return -1;
  }
  const msgpack_object *map = &params->via.array.ptr[0];
  n->type = vigil_object_str(vigil_object_get(map, "type"));
  if (n->type == NULL || !notification_uint(map, "seq", &n->seq)) {
    snprintf(why, why_size, "a vigil.notification without its type or seq");
    return -1;
  }
  n->kind = VIGIL_NOTIFICATION_OTHER;
  for (size_t i = 0; i < sizeof notification_types / sizeof notification_types[0]; i++)
    if (strcmp(notification_types[i].type, n->type) == 0) {
      n->kind = notification_types[i].kind;
      n->ending = notification_types[i].ending;
    }
  n->session = vigil_object_str(vigil_object_get(map, "session"));
  n->epoch = vigil_object_str(vigil_object_get(map, "epoch"));
  n->monitor_id = vigil_object_str(vigil_object_get(map, "monitor_id"));
  n->label = vigil_object_str(vigil_object_get(map, "label"));
  const char *mode = vigil_object_str(vigil_object_get(map, "mode"));
  n->delivery = mode && strcmp(mode, "live_safe") == 0 ? VIGIL_DELIVERY_LIVE_SAFE
                                                       : VIGIL_DELIVERY_IDLE;
  n->text = vigil_object_str(vigil_object_get(map, "text"));
  n->state = vigil_object_str(vigil_object_get(map, "state"));
  notification_uint(map, "batch", &n->batch);
  notification_uint(map, "suppressed", &n->suppressed);
  n->has_exit_code = vigil_object_int(vigil_object_get(map, "exit_code"), &n->exit_code);
  /* A signal without a name is sent as its number. */
  const msgpack_object *sig = vigil_object_get(map, "signal");
  int64_t signo;
  n->signal = vigil_object_str(sig);
  if (n->signal != NULL)
    n->signal_number = notification_signal_number(n->signal);
  else if (vigil_object_int(sig, &signo) && signo > 0 && signo < 256)
    n->signal_number = (int)signo;
  n->has_duration_ms = notification_uint(map, "duration_ms", &n->duration_ms);
  n->reason = vigil_object_str(vigil_object_get(map, "reason"));
  n->exceeded = vigil_object_str(vigil_object_get(map, "exceeded"));
  n->has_dropped = notification_uint(map, "dropped", &n->dropped);
  n->at = vigil_object_str(vigil_object_get(map, "at"));
  n->raw = map;
  if (notification_lines(n, m, map) != 0) {
    snprintf(why, why_size, "out of memory for a notification's lines");
    return -1;
  }
  n->message_ = m;
  return 0;
}

void
vigil_notification_free(vigil_notification *n)
{
  if (n == NULL)
    return;
  message_free(n->message_);
  memset(n, 0, sizeof *n);
}

/* The i-th entry of a cursor_take's (or notifications_since's)
 * "notifications", packed again as [map] into a message of its own, so
 * that the notification outlives the result and reads exactly as a push. */
int
vigil_result_notification(const vigil_result *result, size_t i, vigil_notification *n,
                          vigil_error *err)
{
  memset(n, 0, sizeof *n);
  const msgpack_object *list = vigil_result_get(result, "notifications");
  if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
    return client_error(err, VIGIL_ERR_USAGE, "the result has no \"notifications\" list (a "
                        "cursor_take or notifications_since result has one)");
  if (i >= list->via.array.size)
    return 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_object(&pk, list->via.array.ptr[i]);
  char why[256];
  struct vigil_message *m = message_new(sb.data, sb.size, why, sizeof why);
  msgpack_sbuffer_destroy(&sb);
  if (m == NULL)
    return client_error(err, VIGIL_ERR_PROTOCOL, "notifications[%zu]: %s", i, why);
  if (notification_read(n, m, message_root(m), false, why, sizeof why) != 0) {
    message_free(m);
    return client_error(err, VIGIL_ERR_PROTOCOL, "notifications[%zu]: %s", i, why);
  }
  return 1;
}
