/*
 * A notification kept in the state directory (notification_state.h).
 *
 * The map's keys are short (a session keeps up to session.queue_max of
 * these, each written once) and the lines and incidents are arrays of
 * arrays, in the order of their struct fields. A field this version does
 * not know is ignored; a field it needs that is missing or out of range
 * refuses the whole notification.
 */
#include "session/notification_state.h"
#include "pipeline/incident.h"

#include <stdlib.h>
#include <string.h>

#include "spec/limits.h"
#include "base/memory.h"
#include "store/statefile.h"

#define W "notification"

void
notification_state_pack(msgpack_packer *pk, const Notification *n)
{
  msgpack_pack_map(pk, 28);
  statefile_pack_str(pk, "type"); msgpack_pack_int(pk, n->type);
  statefile_pack_str(pk, "monitor"); statefile_pack_str(pk, n->monitor_id);
  statefile_pack_str(pk, "label"); statefile_pack_str(pk, n->label);
  statefile_pack_str(pk, "mode"); msgpack_pack_int(pk, n->mode);
  statefile_pack_str(pk, "batch"); msgpack_pack_uint64(pk, n->batch);
  statefile_pack_str(pk, "lines");
  msgpack_pack_array(pk, n->nlines);
  for (size_t i = 0; i < n->nlines; i++) {
    const NoteLine *l = &n->lines[i];
    msgpack_pack_array(pk, 5);
    msgpack_pack_uint64(pk, l->seq);
    msgpack_pack_int(pk, l->stream);
    msgpack_pack_int(pk, l->pattern);
    statefile_pack_bool(pk, l->truncated);
    statefile_pack_strn(pk, l->text, l->len);
  }
  statefile_pack_str(pk, "suppressed"); msgpack_pack_uint64(pk, n->suppressed);
  statefile_pack_str(pk, "incidents");
  msgpack_pack_array(pk, n->nincidents);
  for (size_t i = 0; i < n->nincidents; i++) {
    const NoteIncident *inc = &n->incidents[i];
    msgpack_pack_array(pk, 14);
    msgpack_pack_uint64(pk, inc->id);
    msgpack_pack_int(pk, inc->kind);
    msgpack_pack_uint64(pk, inc->fingerprint);
    msgpack_pack_int(pk, inc->pattern);
    statefile_pack_str(pk, inc->pattern_name);
    msgpack_pack_uint64(pk, inc->first_seq);
    msgpack_pack_uint64(pk, inc->last_seq);
    msgpack_pack_uint64(pk, inc->first_line);
    msgpack_pack_uint64(pk, inc->nlines);
    msgpack_pack_uint64(pk, inc->truncated_lines);
    msgpack_pack_uint64(pk, inc->repeats);
    msgpack_pack_uint64(pk, inc->repeat_span_ms);
    msgpack_pack_int64(pk, inc->repeat_last_at);
    statefile_pack_bool(pk, inc->summary);
  }
  statefile_pack_str(pk, "inc_withheld"); msgpack_pack_uint64(pk, n->incidents_withheld);
  statefile_pack_str(pk, "inc_coalesced"); msgpack_pack_uint64(pk, n->incidents_coalesced);
  statefile_pack_str(pk, "inc_dropped"); msgpack_pack_uint64(pk, n->incidents_dropped);
  statefile_pack_str(pk, "style"); msgpack_pack_int(pk, n->style);
  statefile_pack_str(pk, "state"); msgpack_pack_int(pk, n->state);
  statefile_pack_str(pk, "has_exit_code"); statefile_pack_bool(pk, n->has_exit_code);
  statefile_pack_str(pk, "exit_code"); msgpack_pack_int(pk, n->exit_code);
  statefile_pack_str(pk, "signal"); msgpack_pack_int(pk, n->signal);
  statefile_pack_str(pk, "has_duration"); statefile_pack_bool(pk, n->has_duration);
  statefile_pack_str(pk, "duration_ms"); msgpack_pack_uint64(pk, n->duration_ms);
  statefile_pack_str(pk, "at"); msgpack_pack_int64(pk, n->at_ms);
  statefile_pack_str(pk, "reason"); statefile_pack_str(pk, n->reason);
  statefile_pack_str(pk, "exceeded"); statefile_pack_str(pk, n->exceeded);
  statefile_pack_str(pk, "seq"); msgpack_pack_uint64(pk, n->seq);
  statefile_pack_str(pk, "text"); statefile_pack_str(pk, n->text);
  statefile_pack_str(pk, "dropped_count"); msgpack_pack_uint64(pk, n->dropped_count);
  statefile_pack_str(pk, "from_seq"); msgpack_pack_uint64(pk, n->from_seq);
  statefile_pack_str(pk, "to_seq"); msgpack_pack_uint64(pk, n->to_seq);
  statefile_pack_str(pk, "store_key"); msgpack_pack_uint64(pk, n->store_key);
  statefile_pack_str(pk, "checkpoint");
  if (n->has_checkpoint) {
    msgpack_pack_array(pk, NOTIFICATION_CHECKPOINT_WORDS);
    for (int i = 0; i < NOTIFICATION_CHECKPOINT_WORDS; i++)
      msgpack_pack_uint64(pk, n->checkpoint[i]);
  } else {
    msgpack_pack_nil(pk);
  }
}

/* --- reading ------------------------------------------------------------- */

/* An unsigned integer element of an array. */
static bool
element_uint(const msgpack_object *a, uint32_t i, uint64_t *out)
{
  if (a->via.array.ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    return false;
  *out = a->via.array.ptr[i].via.u64;
  return true;
}

/* A small signed integer element within lo..hi. */
static bool
element_int(const msgpack_object *a, uint32_t i, int64_t lo, int64_t hi, int64_t *out)
{
  const msgpack_object *o = &a->via.array.ptr[i];
  int64_t v;
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
    v = (int64_t)o->via.u64;
  else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    v = o->via.i64;
  else
    return false;
  if (v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* Reads the lines array into n. */
static bool
notification_state_lines(const msgpack_object *map, Notification *n, VigilError *err)
{
  const msgpack_object *a = statefile_get(map, "lines");
  if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY) {
    error_set(err, kErrInvalidParams, W ": lines: missing or not an array");
    return false;
  }
  for (uint32_t i = 0; i < a->via.array.size; i++) {
    const msgpack_object *l = &a->via.array.ptr[i];
    uint64_t seq;
    int64_t stream, pattern;
    if (l->type != MSGPACK_OBJECT_ARRAY || l->via.array.size != 5 || !element_uint(l, 0, &seq) ||
        !element_int(l, 1, 0, 1, &stream) || !element_int(l, 2, -1, INT32_MAX, &pattern) ||
        l->via.array.ptr[3].type != MSGPACK_OBJECT_BOOLEAN ||
        l->via.array.ptr[4].type != MSGPACK_OBJECT_STR) {
      error_set(err, kErrInvalidParams, W ": lines[%u]: not [seq, stream, pattern, truncated, "
                "text]", i);
      return false;
    }
    const msgpack_object *text = &l->via.array.ptr[4];
    notification_add_line(n, seq, (int)stream, (int)pattern, l->via.array.ptr[3].via.boolean,
                          text->via.str.ptr, text->via.str.size);
  }
  return true;
}

/* A built-in pattern's name as this engine has it (static), or NULL. */
static const char *
notification_state_pattern_name(const msgpack_object *o, bool *ok)
{
  *ok = true;
  if (o->type == MSGPACK_OBJECT_NIL)
    return NULL;
  char name[128];
  if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= sizeof name) {
    *ok = false;
    return NULL;
  }
  memcpy(name, o->via.str.ptr, o->via.str.size);
  name[o->via.str.size] = '\0';
  /* A pattern this version no longer has: the name is lost, not the rest. */
  return incident_pattern_name_find(name);
}

/* Reads the incidents array into n; their lines must be within n's. */
static bool
notification_state_incidents(const msgpack_object *map, Notification *n, VigilError *err)
{
  const msgpack_object *a = statefile_get(map, "incidents");
  if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY) {
    error_set(err, kErrInvalidParams, W ": incidents: missing or not an array");
    return false;
  }
  for (uint32_t i = 0; i < a->via.array.size; i++) {
    const msgpack_object *e = &a->via.array.ptr[i];
    NoteIncident inc;
    memset(&inc, 0, sizeof inc);
    int64_t kind, pattern, last_at;
    uint64_t first_line, nlines;
    bool ok = e->type == MSGPACK_OBJECT_ARRAY && e->via.array.size == 14 &&
              element_uint(e, 0, &inc.id) && element_int(e, 1, 0, kIncidentKindCount - 1, &kind) &&
              element_uint(e, 2, &inc.fingerprint) &&
              element_int(e, 3, -1, INT32_MAX, &pattern) && element_uint(e, 5, &inc.first_seq) &&
              element_uint(e, 6, &inc.last_seq) && element_uint(e, 7, &first_line) &&
              element_uint(e, 8, &nlines) && element_uint(e, 9, &inc.truncated_lines) &&
              element_uint(e, 10, &inc.repeats) && element_uint(e, 11, &inc.repeat_span_ms) &&
              element_int(e, 12, INT64_MIN, INT64_MAX, &last_at) &&
              e->via.array.ptr[13].type == MSGPACK_OBJECT_BOOLEAN &&
              first_line <= n->nlines && nlines <= n->nlines - first_line;
    if (ok)
      inc.pattern_name = notification_state_pattern_name(&e->via.array.ptr[4], &ok);
    if (!ok) {
      error_set(err, kErrInvalidParams, W ": incidents[%u]: malformed, or its lines are not "
                "the notification's", i);
      return false;
    }
    inc.kind = (int)kind;
    inc.pattern = (int)pattern;
    inc.first_line = (size_t)first_line;
    inc.nlines = (size_t)nlines;
    inc.repeat_last_at = last_at;
    inc.summary = e->via.array.ptr[13].via.boolean;
    notification_add_incident(n, &inc);
  }
  return true;
}

/* The exceeded limit's static name, or NULL; false when it is none this
 * engine knows. */
static bool
notification_state_exceeded(const msgpack_object *map, const char **out, VigilError *err)
{
  char *name = NULL;
  if (!statefile_get_str(W, map, "exceeded", true, &name, err))
    return false;
  *out = NULL;
  if (name == NULL)
    return true;
  *out = limit_name(limit_by_name(name));
  bool ok = *out != NULL;
  if (!ok)
    error_set(err, kErrInvalidParams, W ": exceeded: \"%s\" is no limit this engine knows", name);
  free(name);
  return ok;
}

Notification *
notification_state_unpack(const msgpack_object *o, VigilError *err)
{
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP) {
    error_set(err, kErrInvalidParams, W ": not a map");
    return NULL;
  }
  int64_t type, mode, style, state, exit_code, sig, at;
  char *monitor = NULL;
  if (!statefile_get_int(W, o, "type", 0, NOTIFICATION_TYPE_COUNT - 1, &type, err) ||
      !statefile_get_int(W, o, "mode", kModeIdle, kModeLiveSafe, &mode, err) ||
      !statefile_get_str(W, o, "monitor", false, &monitor, err))
    return NULL;
  Notification *n = notification_new((NotificationType)type, monitor, NULL, (DeliveryMode)mode);
  bool fits = strlen(monitor) < sizeof n->monitor_id;
  free(monitor);
  if (!fits) {
    error_set(err, kErrInvalidParams, W ": monitor: longer than a monitor id");
    notification_free(n);
    return NULL;
  }
  bool ok = statefile_get_str(W, o, "label", true, &n->label, err) &&
            statefile_get_uint(W, o, "batch", UINT64_MAX, &n->batch, err) &&
            notification_state_lines(o, n, err) &&
            statefile_get_uint(W, o, "suppressed", UINT64_MAX, &n->suppressed, err) &&
            notification_state_incidents(o, n, err) &&
            statefile_get_uint(W, o, "inc_withheld", UINT64_MAX, &n->incidents_withheld, err) &&
            statefile_get_uint(W, o, "inc_coalesced", UINT64_MAX, &n->incidents_coalesced, err) &&
            statefile_get_uint(W, o, "inc_dropped", UINT64_MAX, &n->incidents_dropped, err) &&
            statefile_get_int(W, o, "style", kEnvelopeReadable, kEnvelopeCompact, &style, err) &&
            statefile_get_int(W, o, "state", 0, MONITOR_STATE_COUNT - 1, &state, err) &&
            statefile_get_bool(W, o, "has_exit_code", &n->has_exit_code, err) &&
            statefile_get_int(W, o, "exit_code", INT32_MIN, INT32_MAX, &exit_code, err) &&
            statefile_get_int(W, o, "signal", 0, 128, &sig, err) &&
            statefile_get_bool(W, o, "has_duration", &n->has_duration, err) &&
            statefile_get_uint(W, o, "duration_ms", UINT64_MAX, &n->duration_ms, err) &&
            statefile_get_int(W, o, "at", INT64_MIN, INT64_MAX, &at, err) &&
            statefile_get_str(W, o, "reason", true, &n->reason, err) &&
            notification_state_exceeded(o, &n->exceeded, err) &&
            statefile_get_uint(W, o, "seq", UINT64_MAX, &n->seq, err) &&
            statefile_get_str(W, o, "text", false, &n->text, err) &&
            statefile_get_uint(W, o, "dropped_count", UINT64_MAX, &n->dropped_count, err) &&
            statefile_get_uint(W, o, "from_seq", UINT64_MAX, &n->from_seq, err) &&
            statefile_get_uint(W, o, "to_seq", UINT64_MAX, &n->to_seq, err) &&
            statefile_get_uint(W, o, "store_key", UINT64_MAX, &n->store_key, err);
  const msgpack_object *ck = ok ? statefile_get(o, "checkpoint") : NULL;
  /* An older engine's record has the first words only; the rest stay 0. */
  if (ok && ck != NULL && ck->type == MSGPACK_OBJECT_ARRAY &&
      (ck->via.array.size == NOTIFICATION_CHECKPOINT_WORDS ||
       ck->via.array.size == NOTIFICATION_CHECKPOINT_WORDS_V1)) {
    n->has_checkpoint = true;
    for (uint32_t i = 0; i < ck->via.array.size && n->has_checkpoint; i++)
      n->has_checkpoint = element_uint(ck, i, &n->checkpoint[i]);
  }
  if (ok && ck != NULL && ck->type != MSGPACK_OBJECT_NIL && !n->has_checkpoint) {
    ok = false;
    error_set(err, kErrInvalidParams,
              W ": checkpoint: neither nil nor %d or %d unsigned integers",
              NOTIFICATION_CHECKPOINT_WORDS_V1, NOTIFICATION_CHECKPOINT_WORDS);
  }
  if (!ok) {
    notification_free(n);
    return NULL;
  }
  n->style = (EnvelopeStyle)style;
  n->state = (MonitorState)state;
  n->exit_code = (int)exit_code;
  n->signal = (int)sig;
  n->at_ms = at;
  return n;
}
