/*
 * A notification from a wire-shaped map (see notification_map.h). One
 * reader per kind of value (an unsigned integer, a name among a table, a
 * string, a time), each naming the key it read in its error, and the map's
 * keys in one table: known, and read, or known and ignored.
 */
#include "policy/notification_map.h"
#include "pipeline/incident.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/memory.h"
#include "rpc/typename.h"
#include "base/signals.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "base/utf8.h"

/* Where a value is, for its error: "lines[2].seq". */
typedef struct {
  char at[128];
} NmKey;

static int
nm_fail(VigilError *err, const NmKey *k, const char *why)
{
  return error_set(err, kErrInvalidParams, "notification: %s: %s", k->at, why);
}

static int
nm_want(VigilError *err, const NmKey *k, const char *want, const msgpack_object *o)
{
  return error_set(err, kErrInvalidParams, "notification: %s: want %s, not %s", k->at, want,
                   rpc_type_name(o));
}

static bool
nm_key_is(const msgpack_object *key, const char *name)
{
  size_t len = strlen(name);
  return key->type == MSGPACK_OBJECT_STR && key->via.str.size == len &&
         memcmp(key->via.str.ptr, name, len) == 0;
}

/* An empty array where a map is wanted, and the reverse, are the same
 * thing: Lua's {} and a JSON [] or {} the writer did not think about. */
static bool
nm_empty(const msgpack_object *o)
{
  return (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 0) ||
         (o->type == MSGPACK_OBJECT_MAP && o->via.map.size == 0);
}

/* An unsigned integer (an integral float too: Lua and JSON writers). */
static int
nm_uint(const msgpack_object *o, const NmKey *k, uint64_t *out, VigilError *err)
{
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    *out = o->via.u64;
    return 0;
  }
  if ((o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32) &&
      o->via.f64 >= 0 && o->via.f64 < 9.0e15 && o->via.f64 == (double)(uint64_t)o->via.f64) {
    *out = (uint64_t)o->via.f64;
    return 0;
  }
  return nm_want(err, k, "an unsigned integer", o);
}

/* An integer within lo..hi. */
static int
nm_int(const msgpack_object *o, const NmKey *k, int64_t lo, int64_t hi, int64_t *out,
       VigilError *err)
{
  int64_t v;
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
    v = (int64_t)o->via.u64;
  else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    v = o->via.i64;
  else if ((o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32) &&
           o->via.f64 > -9.0e15 && o->via.f64 < 9.0e15 &&
           o->via.f64 == (double)(int64_t)o->via.f64)
    v = (int64_t)o->via.f64;
  else
    return nm_want(err, k, "an integer", o);
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof why, "%lld is out of range (%lld..%lld)", (long long)v, (long long)lo,
             (long long)hi);
    return nm_fail(err, k, why);
  }
  *out = v;
  return 0;
}

static int
nm_bool(const msgpack_object *o, const NmKey *k, bool *out, VigilError *err)
{
  if (o->type != MSGPACK_OBJECT_BOOLEAN)
    return nm_want(err, k, "a boolean", o);
  *out = o->via.boolean;
  return 0;
}

/* A string of at most NOTIFICATION_MAP_TEXT_MAX bytes of valid UTF-8
 * without NUL, appended to out as it is: the form the wire and the engine's
 * lines have (every renderer escapes what it shows). */
static int
nm_text(const msgpack_object *o, const NmKey *k, StrBuf *out, VigilError *err)
{
  if (o->type != MSGPACK_OBJECT_STR)
    return nm_want(err, k, "a string", o);
  if (o->via.str.size > NOTIFICATION_MAP_TEXT_MAX) {
    char why[96];
    snprintf(why, sizeof why, "%u bytes, over the bound of %d", (unsigned)o->via.str.size,
             NOTIFICATION_MAP_TEXT_MAX);
    return nm_fail(err, k, why);
  }
  if (!utf8_valid(o->via.str.ptr, o->via.str.size))
    return nm_fail(err, k, "not valid UTF-8");
  if (memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
    return nm_fail(err, k, "holds a NUL byte");
  strbuf_append(out, o->via.str.ptr, o->via.str.size);
  return 0;
}

/* One of names (NULL-terminated): its index. */
static int
nm_name(const msgpack_object *o, const NmKey *k, const char *const *names, int *out,
        VigilError *err)
{
  if (o->type == MSGPACK_OBJECT_STR) {
    for (int i = 0; names[i]; i++) {
      if (strlen(names[i]) == o->via.str.size &&
          memcmp(names[i], o->via.str.ptr, o->via.str.size) == 0) {
        *out = i;
        return 0;
      }
    }
  }
  StrBuf want = STRBUF_INIT;
  strbuf_puts(&want, "one of ");
  for (int i = 0; names[i]; i++)
    strbuf_printf(&want, "%s\"%s\"", i ? ", " : "", names[i]);
  if (o->type == MSGPACK_OBJECT_STR) {
    strbuf_puts(&want, ", not \"");
    textfmt_escape(&want, o->via.str.ptr, o->via.str.size > 64 ? 64 : o->via.str.size);
    strbuf_puts(&want, "\"");
    nm_fail(err, k, strbuf_cstr(&want));
  } else {
    nm_want(err, k, strbuf_cstr(&want), o);
  }
  strbuf_free(&want);
  return -1;
}

/* A time, RFC 3339, or nil (0). */
static int
nm_time(const msgpack_object *o, const NmKey *k, int64_t *ms, VigilError *err)
{
  if (o->type == MSGPACK_OBJECT_NIL) {
    *ms = 0;
    return 0;
  }
  if (o->type != MSGPACK_OBJECT_STR || notification_map_time(o->via.str.ptr, o->via.str.size,
                                                             ms) != 0)
    return nm_want(err, k, "an RFC 3339 time (2026-11-21T06:41:42.980+00:00)", o);
  return 0;
}

/* A pattern index, nil for none (-1). */
static int
nm_pattern(const msgpack_object *o, const NmKey *k, int *out, VigilError *err)
{
  int64_t v = -1;
  if (o->type != MSGPACK_OBJECT_NIL && nm_int(o, k, 0, 65535, &v, err) != 0)
    return -1;
  *out = (int)v;
  return 0;
}

static void
nm_sub(NmKey *out, const char *key)
{
  snprintf(out->at, sizeof out->at, "%s", key);
}

/* Entry index of the array `what` (lines, incidents): its key in k ("lines[2]"),
 * and whether it is a map. */
static int
nm_entry_open(NmKey *k, const char *what, uint32_t index, const msgpack_object *o,
              const char *want, VigilError *err)
{
  snprintf(k->at, sizeof k->at, "%s[%u]", what, index);
  if (o->type != MSGPACK_OBJECT_MAP)
    return nm_want(err, k, want, o);
  return 0;
}

/* The key of a field of an entry: "lines[2].seq" (a key's first 24 bytes;
 * "?" for a key that is not a string). */
static void
nm_entry_key(NmKey *out, const NmKey *entry, const msgpack_object *key)
{
  bool str = key->type == MSGPACK_OBJECT_STR;
  int len = str ? (int)(key->via.str.size > 24 ? 24 : key->via.str.size) : 1;
  snprintf(out->at, sizeof out->at, "%.64s.%.*s", entry->at, len, str ? key->via.str.ptr : "?");
}

int
notification_map_time(const char *s, size_t len, int64_t *ms)
{
  char buf[48];
  if (len < 20 || len >= sizeof buf)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  struct tm tm = {0};
  int used = 0;
  if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 || used != 19)
    return -1;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const char *p = buf + 19;
  int64_t frac = 0;
  if (*p == '.') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (digits < 3)
        frac = frac * 10 + (*p - '0');
    if (digits == 0)
      return -1;
    for (; digits < 3; digits++)
      frac *= 10;
  }
  int64_t offset = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int hh, mm, n = 0;
    if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5 || hh > 23 || mm > 59)
      return -1;
    offset = (int64_t)(hh * 60 + mm) * 60000 * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return -1;
  }
  if (*p != '\0')
    return -1;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *ms = (int64_t)t * 1000 + frac - offset;
  return 0;
}

/* --- lines and incidents ------------------------------------------------- */

static int
nm_line(const msgpack_object *o, uint32_t index, Notification *n, VigilError *err)
{
  NmKey k;
  if (nm_entry_open(&k, "lines", index, o, "a map {seq, stream, text, pattern, truncated}",
                    err) != 0)
    return -1;
  uint64_t seq = index + 1;
  int stream = 0, pattern = -1;
  bool truncated = false, has_text = false;
  StrBuf text = STRBUF_INIT;
  static const char *const streams[] = {"stdout", "stderr", NULL};
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < o->via.map.size; i++) {
    const msgpack_object *key = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
    NmKey sub;
    nm_entry_key(&sub, &k, key);
    if (nm_key_is(key, "seq"))
      rc = nm_uint(v, &sub, &seq, err);
    else if (nm_key_is(key, "stream"))
      rc = nm_name(v, &sub, streams, &stream, err);
    else if (nm_key_is(key, "text"))
      rc = nm_text(v, &sub, &text, err), has_text = true;
    else if (nm_key_is(key, "pattern"))
      rc = nm_pattern(v, &sub, &pattern, err);
    else if (nm_key_is(key, "truncated"))
      rc = nm_bool(v, &sub, &truncated, err);
    else if (!nm_key_is(key, "incident"))
      rc = nm_fail(err, &sub, "unknown key (a line has seq, stream, text, pattern, truncated)");
  }
  if (rc == 0 && !has_text)
    rc = nm_fail(err, &k, "no text");
  if (rc == 0)
    notification_add_line(n, seq, stream, pattern, truncated, strbuf_cstr(&text), text.len);
  strbuf_free(&text);
  return rc;
}

/* The lines of n an incident covers: those its `lines` name by seq when it
 * has them, else those with a seq in first_seq..last_seq; either way
 * consecutive lines of n, at least one. */
static int
nm_incident_lines(const msgpack_object *lines, NoteIncident *inc, const Notification *n,
                  const NmKey *k, VigilError *err)
{
  size_t first = SIZE_MAX, count = 0;
  for (size_t i = 0; i < n->nlines; i++) {
    bool in;
    if (lines) {
      in = false;
      for (uint32_t j = 0; j < lines->via.array.size; j++) {
        const msgpack_object *l = &lines->via.array.ptr[j];
        for (uint32_t f = 0; l->type == MSGPACK_OBJECT_MAP && f < l->via.map.size; f++)
          if (nm_key_is(&l->via.map.ptr[f].key, "seq") &&
              l->via.map.ptr[f].val.type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
              l->via.map.ptr[f].val.via.u64 == n->lines[i].seq)
            in = true;
      }
    } else {
      in = n->lines[i].seq >= inc->first_seq && n->lines[i].seq <= inc->last_seq;
    }
    if (!in)
      continue;
    if (first == SIZE_MAX)
      first = i;
    else if (first + count != i)
      return nm_fail(err, k, "its lines are not consecutive lines of the notification");
    count++;
  }
  if (count == 0 || (lines && count != lines->via.array.size)) {
    char why[160];
    snprintf(why, sizeof why,
             "its lines (seq %llu..%llu) are not among the notification's lines",
             (unsigned long long)inc->first_seq, (unsigned long long)inc->last_seq);
    return nm_fail(err, k, why);
  }
  inc->first_line = first;
  inc->nlines = count;
  return 0;
}

static int
nm_incident(const msgpack_object *o, uint32_t index, Notification *n, VigilError *err)
{
  NmKey k;
  if (nm_entry_open(&k, "incidents", index, o, "a map", err) != 0)
    return -1;
  NoteIncident inc = {.pattern = -1};
  static const char *const kinds[] = {"message", "crash", "health", NULL};
  const msgpack_object *lines = NULL;
  bool has_id = false, has_first = false, has_last = false;
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < o->via.map.size; i++) {
    const msgpack_object *key = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
    NmKey sub;
    nm_entry_key(&sub, &k, key);
    if (nm_key_is(key, "id")) {
      rc = nm_uint(v, &sub, &inc.id, err), has_id = true;
    } else if (nm_key_is(key, "kind")) {
      rc = nm_name(v, &sub, kinds, &inc.kind, err);
    } else if (nm_key_is(key, "fingerprint")) {
      char hex[17];
      if (v->type != MSGPACK_OBJECT_STR || v->via.str.size != 16)
        rc = nm_want(err, &sub, "16 hex digits", v);
      for (int d = 0; rc == 0 && d < 16; d++) {
        char c = v->via.str.ptr[d];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
          rc = nm_want(err, &sub, "16 hex digits", v);
        hex[d] = c;
      }
      hex[16] = '\0';
      if (rc == 0)
        inc.fingerprint = strtoull(hex, NULL, 16);
    } else if (nm_key_is(key, "pattern")) {
      rc = nm_pattern(v, &sub, &inc.pattern, err);
    } else if (nm_key_is(key, "pattern_name")) {
      char pname[64];
      if (v->type == MSGPACK_OBJECT_NIL) {
        inc.pattern_name = NULL;
      } else if (v->type != MSGPACK_OBJECT_STR || v->via.str.size >= sizeof pname) {
        rc = nm_want(err, &sub, "a built-in pattern's name or nil", v);
      } else {
        memcpy(pname, v->via.str.ptr, v->via.str.size);
        pname[v->via.str.size] = '\0';
        inc.pattern_name = incident_pattern_name_find(pname);
        if (inc.pattern_name == NULL)
          rc = nm_fail(err, &sub, "not the name of a built-in pattern (docs/crash-patterns.md) "
                       "or a health change (unhealthy, healthy)");
      }
    } else if (nm_key_is(key, "first_seq")) {
      rc = nm_uint(v, &sub, &inc.first_seq, err), has_first = true;
    } else if (nm_key_is(key, "last_seq")) {
      rc = nm_uint(v, &sub, &inc.last_seq, err), has_last = true;
    } else if (nm_key_is(key, "lines")) {
      if (v->type != MSGPACK_OBJECT_ARRAY && !nm_empty(v))
        rc = nm_want(err, &sub, "an array of lines", v);
      lines = v->type == MSGPACK_OBJECT_ARRAY ? v : NULL;
    } else if (nm_key_is(key, "repeats")) {
      rc = nm_uint(v, &sub, &inc.repeats, err);
    } else if (nm_key_is(key, "repeat_span_ms")) {
      rc = nm_uint(v, &sub, &inc.repeat_span_ms, err);
    } else if (nm_key_is(key, "last_repeat_at")) {
      rc = nm_time(v, &sub, &inc.repeat_last_at, err);
    } else if (nm_key_is(key, "truncated_lines")) {
      rc = nm_uint(v, &sub, &inc.truncated_lines, err);
    } else if (nm_key_is(key, "summary")) {
      rc = nm_bool(v, &sub, &inc.summary, err);
    } else {
      rc = nm_fail(err, &sub, "unknown key (docs/protocol.md section 6 lists an incident's)");
    }
  }
  if (rc != 0)
    return rc;
  if (!has_id || !has_first || !has_last)
    return nm_fail(err, &k, "id, first_seq and last_seq are needed");
  if (inc.first_seq > inc.last_seq)
    return nm_fail(err, &k, "first_seq is after last_seq");
  if (lines && lines->via.array.size == 0)
    lines = NULL;
  if (nm_incident_lines(lines, &inc, n, &k, err) != 0)
    return -1;
  notification_add_incident(n, &inc);
  return 0;
}

/* --- the map ------------------------------------------------------------- */

/* The notification's own keys, in the wire's order; then the ones it
 * ignores. */
enum {
  kNmType, kNmMonitorId, kNmLabel, kNmMode, kNmBatch, kNmLines, kNmSuppressed, kNmIncidents,
  kNmWithheld, kNmCoalesced, kNmDropped, kNmState, kNmExitCode, kNmSignal, kNmDuration,
  kNmReason, kNmExceeded, kNmAt, kNmStyle, kNmKeys
};
static const char *const nm_keys[kNmKeys] = {
  "type", "monitor_id", "label", "mode", "batch", "lines", "suppressed", "incidents",
  "incidents_withheld", "incidents_coalesced", "incidents_dropped", "state", "exit_code",
  "signal", "duration_ms", "reason", "exceeded", "at", "style",
};
static const char *const nm_ignored[] = {
  "session", "seq", "epoch", "text", "dropped", "from_seq", "to_seq", NULL,
};

/* The types a policy is given (dropped and policy_error never are). */
static const char *const nm_types[] = {
  "output", "exit", "stopped", "timed_out", "idle_timeout", "overload", NULL,
};
static const char *const nm_exceeded[] = {"memory_limit", "max_processes", "cpu_time", NULL};

/* Whether id is a monitor id: "mon_" and 12 of [0-9a-z]. */
static bool
nm_monitor_id_ok(const msgpack_object *v)
{
  if (v->type != MSGPACK_OBJECT_STR || v->via.str.size != 16 ||
      memcmp(v->via.str.ptr, "mon_", 4) != 0)
    return false;
  for (int i = 4; i < 16; i++) {
    char c = v->via.str.ptr[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')))
      return false;
  }
  return true;
}

/* Reads the scalar key `which` (not lines or incidents) into n. */
static int
nm_scalar(int which, const msgpack_object *v, const NmKey *k, Notification *n, bool *has,
          VigilError *err)
{
  int idx;
  int64_t i64;
  StrBuf s = STRBUF_INIT;
  int rc = 0;
  switch (which) {
  case kNmMonitorId:
    if (!nm_monitor_id_ok(v))
      return nm_want(err, k, "a monitor id (\"mon_\" and 12 of [0-9a-z])", v);
    snprintf(n->monitor_id, sizeof n->monitor_id, "%.*s", 16, v->via.str.ptr);
    return 0;
  case kNmLabel:
  case kNmReason:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if ((rc = nm_text(v, k, &s, err)) == 0) {
      char **to = which == kNmLabel ? &n->label : &n->reason;
      free(*to);
      *to = strbuf_take(&s);
    }
    strbuf_free(&s);
    return rc;
  case kNmMode:
    if ((rc = nm_name(v, k, monitor_mode_names, &idx, err)) == 0)
      n->mode = (DeliveryMode)idx;
    return rc;
  case kNmStyle:
    if ((rc = nm_name(v, k, monitor_envelope_names, &idx, err)) == 0)
      n->style = (EnvelopeStyle)idx;
    return rc;
  case kNmState:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if ((rc = nm_name(v, k, monitor_state_names, &idx, err)) == 0)
      n->state = (MonitorState)idx, *has = true;
    return rc;
  case kNmBatch:
    return v->type == MSGPACK_OBJECT_NIL ? 0 : nm_uint(v, k, &n->batch, err);
  case kNmSuppressed:
    return nm_uint(v, k, &n->suppressed, err);
  case kNmWithheld:
    return nm_uint(v, k, &n->incidents_withheld, err);
  case kNmCoalesced:
    return nm_uint(v, k, &n->incidents_coalesced, err);
  case kNmDropped:
    return nm_uint(v, k, &n->incidents_dropped, err);
  case kNmExitCode:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if ((rc = nm_int(v, k, -255, 255, &i64, err)) == 0)
      n->has_exit_code = true, n->exit_code = (int)i64;
    return rc;
  case kNmSignal:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if (v->type == MSGPACK_OBJECT_STR) {
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)(v->via.str.size > 31 ? 31 : v->via.str.size),
               v->via.str.ptr);
      int sig = v->via.str.size < 32 ? signals_number(name) : -1;
      if (sig <= 0)
        return nm_fail(err, k, "not a signal's name (\"SIGTERM\", \"SIGKILL\", ...)");
      n->signal = sig;
      return 0;
    }
    if ((rc = nm_int(v, k, 1, 64, &i64, err)) == 0)
      n->signal = (int)i64;
    return rc;
  case kNmDuration:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if ((rc = nm_uint(v, k, &n->duration_ms, err)) == 0)
      n->has_duration = true;
    return rc;
  case kNmExceeded:
    if (v->type == MSGPACK_OBJECT_NIL)
      return 0;
    if ((rc = nm_name(v, k, nm_exceeded, &idx, err)) == 0)
      n->exceeded = nm_exceeded[idx];
    return rc;
  case kNmAt:
    if ((rc = nm_time(v, k, &i64, err)) == 0 && i64 != 0)
      n->at_ms = i64;
    return rc;
  }
  return 0;
}

Notification *
notification_map_read(const msgpack_object *o, VigilError *err)
{
  NmKey top = {"--notification"};
  if (o->type != MSGPACK_OBJECT_MAP && !nm_empty(o)) {
    nm_want(err, &top, "a map of a notification's keys (docs/protocol.md section 6)", o);
    return NULL;
  }
  const msgpack_object *at[kNmKeys] = {0};
  uint32_t size = o->type == MSGPACK_OBJECT_MAP ? o->via.map.size : 0;
  for (uint32_t i = 0; i < size; i++) {
    const msgpack_object *key = &o->via.map.ptr[i].key;
    int which = -1;
    for (int w = 0; which < 0 && w < kNmKeys; w++)
      if (nm_key_is(key, nm_keys[w]))
        which = w;
    bool ignored = false;
    for (int w = 0; which < 0 && nm_ignored[w]; w++)
      ignored = ignored || nm_key_is(key, nm_ignored[w]);
    if (which >= 0) {
      at[which] = &o->via.map.ptr[i].val;
    } else if (!ignored) {
      NmKey k;
      if (key->type == MSGPACK_OBJECT_STR) {
        StrBuf q = STRBUF_INIT;
        textfmt_escape(&q, key->via.str.ptr, key->via.str.size > 48 ? 48 : key->via.str.size);
        snprintf(k.at, sizeof k.at, "%s", strbuf_cstr(&q));
        strbuf_free(&q);
      } else {
        snprintf(k.at, sizeof k.at, "a key that is %s", rpc_type_name(key));
      }
      nm_fail(err, &k, "unknown key (docs/protocol.md section 6 lists a notification's)");
      return NULL;
    }
  }

  NmKey k;
  int type = 0;
  if (at[kNmType]) {
    nm_sub(&k, "type");
    if (nm_name(at[kNmType], &k, nm_types, &type, err) != 0)
      return NULL;
  }
  Notification *n = notification_new((NotificationType)type, NOTIFICATION_MAP_DEFAULT_ID, NULL,
                                     kModeIdle);
  n->at_ms = NOTIFICATION_MAP_DEFAULT_AT_MS;
  n->batch = type == kNotifOutput ? 1 : 0;
  bool has_state = false;
  for (int w = kNmMonitorId; w < kNmKeys; w++) {
    if (at[w] == NULL || w == kNmLines || w == kNmIncidents)
      continue;
    nm_sub(&k, nm_keys[w]);
    if (nm_scalar(w, at[w], &k, n, &has_state, err) != 0)
      goto fail;
  }
  if (n->label == NULL)
    n->label = xstrdup(n->monitor_id);
  if (!has_state && notification_is_ending(n->type))
    n->state = n->type == kNotifExit      ? kMonExited
               : n->type == kNotifStopped ? kMonStopped
               : n->type == kNotifTimedOut ? kMonTimedOut
               : n->type == kNotifIdleTimeout ? kMonIdleTimeout
                                               : kMonOverloaded;

  for (int w = kNmLines; w <= kNmIncidents; w += kNmIncidents - kNmLines) {
    const msgpack_object *v = at[w];
    nm_sub(&k, nm_keys[w]);
    if (v == NULL || nm_empty(v))
      continue;
    size_t max = w == kNmLines ? NOTIFICATION_MAP_LINES_MAX : NOTIFICATION_MAP_INCIDENTS_MAX;
    if (v->type != MSGPACK_OBJECT_ARRAY) {
      nm_want(err, &k, "an array", v);
      goto fail;
    }
    if (v->via.array.size > max) {
      char why[96];
      snprintf(why, sizeof why, "%u entries, over the bound of %zu", v->via.array.size, max);
      nm_fail(err, &k, why);
      goto fail;
    }
    for (uint32_t i = 0; i < v->via.array.size; i++) {
      int rc = w == kNmLines ? nm_line(&v->via.array.ptr[i], i, n, err)
                             : nm_incident(&v->via.array.ptr[i], i, n, err);
      if (rc != 0)
        goto fail;
    }
  }
  return n;

fail:
  notification_free(n);
  return NULL;
}
