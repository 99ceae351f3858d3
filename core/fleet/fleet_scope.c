/*
 * The rules of a session's request subject (fleet_scope.h): one table of
 * the API's methods that act on one session or on none, and the check of
 * a call's `session` arguments against the subject's session.
 */
#include "fleet/fleet_scope.h"

#include <stdbool.h>
#include <string.h>

#include "api/api.h"

/* The methods a session's subject serves, and what each acts on. Every
 * other method of the API spans sessions (or is new here) and is refused. */
static const struct {
  const char *name;
  FleetScopeKind kind;
} fleet_scope_methods[] = {
  {"ping", kScopeFree},
  {"api_info", kScopeFree},
  {"session_open", kScopeSession},
  {"session_state", kScopeSession},
  {"session_close", kScopeSession},
  {"cursor_take", kScopeSession},
  {"cursor_get", kScopeSession},
  {"cursor_advance", kScopeSession},
  {"notifications_since", kScopeSession},
  {"monitor_start", kScopeSession},
  {"monitor_stop", kScopeSession},
  {"monitor_list", kScopeSession},
  {"monitor_status", kScopeSession},
  {"monitor_output", kScopeSession},
  {"monitor_logs", kScopeSession},
  {"monitor_events", kScopeSession},
  {"monitor_wait", kScopeSession},
  {"process_run", kScopeSession},
  {"incident_ignore", kScopeSession},
  {"incident_ignored", kScopeSession},
  {"incident_unignore", kScopeSession},
};

FleetScopeKind
fleet_scope_of(const char *method, size_t len)
{
  for (size_t i = 0; i < sizeof fleet_scope_methods / sizeof fleet_scope_methods[0]; i++)
    if (strlen(fleet_scope_methods[i].name) == len &&
        memcmp(fleet_scope_methods[i].name, method, len) == 0)
      return fleet_scope_methods[i].kind;
  for (size_t i = 0; api_method_name(i) != NULL; i++)
    if (strlen(api_method_name(i)) == len && memcmp(api_method_name(i), method, len) == 0)
      return kScopeDenied;
  return kScopeUnknown;
}

/* Whether a name the caller sent may be shown in the refusal as it is:
 * short, printable ASCII (anything else is not shown, so the message stays
 * one line of valid UTF-8). */
static bool
fleet_scope_printable(const char *p, size_t n)
{
  if (n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '"')
      return false;
  return true;
}

int
fleet_scope_check_session(const msgpack_object *args, const char *session, const char *subject,
                          VigilError *err)
{
  if (args == NULL || args->type != MSGPACK_OBJECT_MAP)
    return 0;
  size_t want = strlen(session);
  for (uint32_t i = 0; i < args->via.map.size; i++) {
    const msgpack_object *k = &args->via.map.ptr[i].key;
    const msgpack_object *v = &args->via.map.ptr[i].val;
    if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 7 ||
        memcmp(k->via.str.ptr, "session", 7) != 0)
      continue;
    if (v->type == MSGPACK_OBJECT_NIL)
      continue;
    if ((v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) &&
        v->via.str.size == want && memcmp(v->via.str.ptr, session, want) == 0)
      continue;
    if ((v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) &&
        fleet_scope_printable(v->via.str.ptr, v->via.str.size))
      return error_set(err, kErrDenied, "session: %s serves the session \"%s\" alone, not "
                       "\"%.*s\"", subject, session, (int)v->via.str.size, v->via.str.ptr);
    return error_set(err, kErrDenied, "session: %s serves the session \"%s\" alone; session "
                     "must be that name or absent", subject, session);
  }
  return 0;
}
