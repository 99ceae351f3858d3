/*
 * The methods of silenced fingerprints (docs/protocol.md section 5,
 * "incident_ignore"; docs/incidents.md section 10): incident_ignore,
 * incident_ignored and incident_unignore, over the caller's session's list
 * (session_ignore.h). The scope is the session: a harness's session is its
 * project's, so one project's ignores never silence another's incidents.
 */
#include "api/api_call.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"
#include "base/clock.h"
#include "monitor/monitor.h"
#include "pipeline/fingerprint.h"
#include "session/session_ignore.h"
#include "spec/gate.h"

/* The longest `fingerprint` read before its form is checked, so a long one
 * is shown cut in the error. */
#define API_IGNORE_FP_ARG_MAX 4096

/* Reads `fingerprint` (16 hex digits) into *fp. kArgAbsent when absent. */
static ArgResult
api_ignore_fingerprint(Call *call, uint64_t *fp)
{
  char *text = NULL;
  ArgResult rc = args_str(&call->args, "fingerprint", API_IGNORE_FP_ARG_MAX, &text, &call->err);
  if (rc != kArgPresent)
    return rc;
  if (!ignorelist_parse(text, fp)) {
    char quoted[GATE_QUOTE_BUF];
    gate_quote(quoted, text);
    error_set(&call->err, kErrInvalidParams,
              "fingerprint must be 16 hex digits (as an incident's `fingerprint`), got %s",
              quoted);
    rc = kArgError;
  }
  free(text);
  return rc;
}

/* The fingerprint an incident_ignore names: `fingerprint`, or `monitor_id`
 * and `incident` (an incident the caller's session can see, still in its
 * monitor's history). 0, or -1 with the call's error. */
static int
api_ignore_target(Call *call, uint64_t *fp)
{
  ArgResult rc = api_ignore_fingerprint(call, fp);
  if (rc == kArgError)
    return -1;
  bool by_incident = args_get(&call->args, "monitor_id") || args_get(&call->args, "incident");
  if (rc == kArgPresent && by_incident)
    return error_set(&call->err, kErrInvalidParams,
                     "fingerprint: give it, or monitor_id and incident, not both");
  if (rc == kArgPresent)
    return 0;
  if (!by_incident)
    return error_set(&call->err, kErrInvalidParams,
                     "fingerprint (or monitor_id and incident) is required");
  uint64_t id = 0;
  rc = args_uint(&call->args, "incident", 1, UINT64_MAX, &id, &call->err);
  if (rc == kArgError)
    return -1;
  if (rc == kArgAbsent)
    return error_set(&call->err, kErrInvalidParams, "incident is required with monitor_id");
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return -1;
  const IncidentRecord *rec = monitor_incident(r->monitor, id);
  if (rec == NULL)
    return error_set(&call->err, kErrNotFound,
                     "incident: monitor %s has no incident %" PRIu64 " (it keeps the last %zu "
                     "incidents it assembled, incident.history_max)",
                     monitor_id(r->monitor), id, monitor_incident_history_max(r->monitor));
  *fp = rec->info.fingerprint;
  return 0;
}

/* Reads `for` into *expires_at (wall ms; 0: "always"): milliseconds
 * 1..IGNORE_FOR_MAX_MS from now, or "always"; IGNORE_FOR_DEFAULT_MS when
 * absent. 0, or -1 with the call's error. */
static int
api_ignore_for(Call *call, int64_t now, int64_t *expires_at)
{
  const msgpack_object *o = args_get(&call->args, "for");
  if (o == NULL) {
    *expires_at = now + IGNORE_FOR_DEFAULT_MS;
    return 0;
  }
  if (o->type == MSGPACK_OBJECT_STR && o->via.str.size == 6 &&
      memcmp(o->via.str.ptr, "always", 6) == 0) {
    *expires_at = 0;
    return 0;
  }
  if (o->type != MSGPACK_OBJECT_STR) {
    uint64_t ms = 0;
    if (args_uint(&call->args, "for", 1, (uint64_t)IGNORE_FOR_MAX_MS, &ms, &call->err) ==
        kArgPresent) {
      *expires_at = now + (int64_t)ms;
      return 0;
    }
    error_clear(&call->err);
  }
  return error_set(&call->err, kErrInvalidParams,
                   "for must be milliseconds 1..%" PRId64 " (30 days) or \"always\"",
                   IGNORE_FOR_MAX_MS);
}

/* One entry as the wire shows it. */
static void
api_ignore_pack(msgpack_packer *pk, const IgnoreEntry *e)
{
  msgpack_pack_map(pk, 6);
  wire_key(pk, "fingerprint");
  wire_fingerprint(pk, e->fingerprint);
  wire_key(pk, "reason");
  wire_str(pk, e->reason);
  wire_key(pk, "added_at");
  wire_time(pk, e->added_at);
  wire_key(pk, "expires_at");
  wire_time(pk, e->expires_at);
  wire_key(pk, "hits");
  msgpack_pack_uint64(pk, e->hits);
  wire_key(pk, "last_hit_at");
  wire_time(pk, e->last_hit_at);
}

/* incident_ignore: docs/protocol.md section 5, "incident_ignore". */
void
api_incident_ignore(Call *call)
{
  Session *s = api_session(call);
  uint64_t fp = 0;
  int64_t now = clock_now_ms(), expires_at = 0;
  char *reason = NULL;
  if (api_ignore_target(call, &fp) != 0 || api_ignore_for(call, now, &expires_at) != 0 ||
      args_str(&call->args, "reason", IGNORE_REASON_MAX, &reason, &call->err) == kArgError)
    return;
  IgnoreList *l = session_ignores(s);
  bool replaced = false;
  if (ignorelist_add(l, fp, expires_at, reason, now, &replaced, &call->err) != 0) {
    call->e->ignores_refused++;
  } else {
    session_ignore_save(s);
    size_t i = 0;
    while (l->v[i].fingerprint != fp)
      i++;
    msgpack_pack_map(&call->pk, 2);
    wire_key(&call->pk, "ignored");
    api_ignore_pack(&call->pk, &l->v[i]);
    wire_key(&call->pk, "replaced");
    if (replaced)
      msgpack_pack_true(&call->pk);
    else
      msgpack_pack_false(&call->pk);
  }
  free(reason);
}

/* incident_ignored: docs/protocol.md section 5, "incident_ignored". */
void
api_incident_ignored(Call *call)
{
  Session *s = api_session(call);
  IgnoreList *l = session_ignores(s);
  if (ignorelist_expire(l, clock_now_ms()) > 0)
    session_ignore_save(s);
  msgpack_pack_map(&call->pk, 4);
  wire_key(&call->pk, "ignored");
  msgpack_pack_array(&call->pk, l->n);
  for (size_t i = 0; i < l->n; i++)
    api_ignore_pack(&call->pk, &l->v[i]);
  wire_key(&call->pk, "max");
  msgpack_pack_uint64(&call->pk, l->max);
  wire_key(&call->pk, "refused");
  msgpack_pack_uint64(&call->pk, l->refused);
  wire_key(&call->pk, "expired");
  msgpack_pack_uint64(&call->pk, l->expired);
}

/* incident_unignore: docs/protocol.md section 5, "incident_unignore". */
void
api_incident_unignore(Call *call)
{
  Session *s = api_session(call);
  uint64_t fp = 0;
  ArgResult rc = api_ignore_fingerprint(call, &fp);
  if (rc == kArgError)
    return;
  if (rc == kArgAbsent) {
    error_set(&call->err, kErrInvalidParams, "fingerprint is required");
    return;
  }
  if (!ignorelist_remove(session_ignores(s), fp, clock_now_ms())) {
    char hex[17];
    fingerprint_hex(fp, hex);
    error_set(&call->err, kErrNotFound, "fingerprint: session \"%s\" does not ignore %s "
              "(incident_ignored lists what it does)", session_name(s), hex);
    return;
  }
  session_ignore_save(s);
  msgpack_pack_map(&call->pk, 1);
  wire_key(&call->pk, "removed");
  msgpack_pack_true(&call->pk);
}
