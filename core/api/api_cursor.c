/*
 * The model cursor methods (docs/protocol.md section 5, "Model cursors";
 * session_cursor.h): cursor_take, which may wait for something to take,
 * cursor_get, cursor_advance and notifications_since. The notifications
 * they answer with are packed as a push packs them (wire_notification):
 * the same maps, text included, framed as the untrusted observations they
 * are.
 *
 * A cursor_take that finds nothing and may wait becomes a Waiter
 * (api_wait.c) on its connection, with a cursor waiter on its session
 * (session_cursor_wait) and a timer: the session's push path answers it
 * with what it took, its timer with nothing, its session's end with
 * not_found; a connection that closes drops it (api_wait_done), and then
 * it has taken nothing.
 */
#include "api/api_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"

/* --- arguments ------------------------------------------------------------- */

/* The required `cursor` argument, checked (session_cursor_name_ok); NULL
 * with call->err when absent or not a cursor name. The caller frees it. */
static char *
api_cursor_name(Call *call)
{
  char *name = NULL;
  ArgResult rc = args_str(&call->args, "cursor", SIZE_MAX, &name, &call->err);
  if (rc == kArgAbsent)
    error_set(&call->err, kErrInvalidParams, "cursor is required");
  if (rc != kArgPresent)
    return NULL;
  if (!session_cursor_name_ok(name)) {
    error_set(&call->err, kErrInvalidParams,
              "cursor: \"%.64s\" must be 1..%d characters of [A-Za-z0-9._:-]", name,
              SESSION_CURSOR_NAME_MAX);
    free(name);
    return NULL;
  }
  return name;
}

/* The session a cursor method acts on and its required `cursor` argument
 * (in *name, which the caller frees); NULL with call->err. */
static Session *
api_cursor_of(Call *call, char **name)
{
  Session *s = api_session(call);
  *name = s != NULL ? api_cursor_name(call) : NULL;
  return *name != NULL ? s : NULL;
}

/* The `limit` argument: 1..the session's queue bound (what it keeps),
 * which is also what an absent limit means. */
static ArgResult
api_cursor_limit(Call *call, Session *s, size_t *limit)
{
  size_t max = session_queue_max(s);
  uint64_t value = 0;
  ArgResult rc = args_uint(&call->args, "limit", 1, max, &value, &call->err);
  if (rc == kArgError) {
    /* Where the bound comes from: the session keeps no more than that. */
    size_t used = strlen(call->err.msg);
    snprintf(call->err.msg + used, sizeof call->err.msg - used,
             " (session \"%s\" keeps at most %zu notifications: session.queue_max)",
             session_name(s), max);
  }
  *limit = rc == kArgPresent ? (size_t)value : max;
  return rc;
}

/* A required seq argument (0..SESSION_SEQ_MAX). */
static ArgResult
api_cursor_seq(Call *call, const char *key, uint64_t *out)
{
  ArgResult rc = args_uint(&call->args, key, 0, SESSION_SEQ_MAX, out, &call->err);
  if (rc == kArgAbsent) {
    error_set(&call->err, kErrInvalidParams, "%s is required", key);
    return kArgError;
  }
  return rc;
}

/* --- answers ----------------------------------------------------------------- */

/* A read as an answer: {notifications, cursor (a take's), last_seq,
 * dropped, dropped_from, dropped_to}; the last two nil when nothing was
 * dropped. */
static void
api_pack_read(msgpack_packer *pk, const SessionRead *r, bool take)
{
  msgpack_pack_map(pk, take ? 6 : 5);
  wire_key(pk, "notifications");
  msgpack_pack_array(pk, r->count);
  for (size_t i = 0; i < r->count; i++)
    wire_notification(pk, r->items[i]);
  if (take) {
    wire_key(pk, "cursor");
    msgpack_pack_uint64(pk, r->cursor);
  }
  wire_key(pk, "last_seq");
  msgpack_pack_uint64(pk, r->last_seq);
  wire_key(pk, "dropped");
  msgpack_pack_uint64(pk, r->dropped);
  wire_key(pk, "dropped_from");
  r->dropped ? msgpack_pack_uint64(pk, r->dropped_from) : msgpack_pack_nil(pk);
  wire_key(pk, "dropped_to");
  r->dropped ? msgpack_pack_uint64(pk, r->dropped_to) : msgpack_pack_nil(pk);
}

/* A waiting take's end (session_cursor.h): what it took, or its session
 * went (r NULL). */
static void
api_cursor_ready(void *ctx, Session *s, const SessionRead *r)
{
  Waiter *w = ctx;
  w->cursor = NULL; /* the session let it go */
  if (r == NULL) {
    VigilError err = VIGIL_ERROR_INIT;
    error_set(&err, kErrNotFound, "session: session \"%s\" was closed while cursor_take waited",
              session_name(s));
    api_wait_answer_packed(w, NULL, &err);
    return;
  }
  msgpack_sbuffer sb;
  msgpack_packer pk;
  api_answer_begin(&sb, &pk);
  api_pack_read(&pk, r, true);
  api_wait_answer_packed(w, &sb, NULL);
  msgpack_sbuffer_destroy(&sb);
}

/* A waiting take's time ran out: it answers with what is there (nothing). */
static void
api_cursor_timeout(uv_timer_t *t)
{
  Waiter *w = t->data;
  session_cursor_wait_end(w->cursor);
}

/* --- methods ------------------------------------------------------------------ */

/* cursor_take: docs/protocol.md section 5, "cursor_take". */
void
api_cursor_take(Call *call)
{
  char *name = NULL;
  Session *s = api_cursor_of(call, &name);
  if (s == NULL)
    return;
  size_t limit = 0;
  uint64_t wait_ms = 0;
  if (api_cursor_limit(call, s, &limit) < 0 ||
      args_uint(&call->args, "wait_ms", 0, API_WAIT_MAX_MS, &wait_ms, &call->err) < 0)
    goto done;
  if (!call->is_request) {
    /* Its answer is what it takes: sent as a notification, nobody would
     * read what the cursor moved past. */
    error_set(&call->err, kErrInvalidParams,
              "cursor_take must be sent as a request: what it takes is in its answer, and a "
              "notification is answered to nobody");
    goto done;
  }
  SessionRead r;
  if (session_cursor_take(s, name, limit, &r, &call->err) != 0)
    goto done;
  bool found = r.count > 0 || r.dropped > 0;
  if (found || wait_ms == 0) {
    api_pack_read(&call->pk, &r, true);
    session_read_free(&r);
    goto done;
  }
  session_read_free(&r);
  if (!api_reserve_pending(call))
    goto done;
  Waiter *w = api_wait_add(call->c, NULL, kWaitCursor, call->msgid, true);
  w->cursor = session_cursor_wait(s, name, limit, api_cursor_ready, w);
  uv_timer_start(&w->timer, api_cursor_timeout, wait_ms, 0);
  call->deferred = true;
done:
  free(name);
}

/* cursor_get: docs/protocol.md section 5, "cursor_get". */
void
api_cursor_get(Call *call)
{
  char *name = NULL;
  Session *s = api_cursor_of(call, &name);
  if (s == NULL)
    return;
  uint64_t seq = 0;
  session_cursor_get(s, name, &seq);
  uint64_t kept_from = session_kept_from(s);
  msgpack_pack_map(&call->pk, 3);
  wire_key(&call->pk, "cursor");
  msgpack_pack_uint64(&call->pk, seq);
  wire_key(&call->pk, "last_seq");
  msgpack_pack_uint64(&call->pk, session_next_seq(s) - 1);
  wire_key(&call->pk, "kept_from");
  kept_from ? msgpack_pack_uint64(&call->pk, kept_from) : msgpack_pack_nil(&call->pk);
  free(name);
}

/* cursor_advance: docs/protocol.md section 5, "cursor_advance". */
void
api_cursor_advance(Call *call)
{
  char *name = NULL;
  Session *s = api_cursor_of(call, &name);
  if (s == NULL)
    return;
  uint64_t to = 0, seq = 0;
  if (api_cursor_seq(call, "to", &to) == kArgPresent &&
      session_cursor_advance(s, name, to, &seq, &call->err) == 0) {
    msgpack_pack_map(&call->pk, 1);
    wire_key(&call->pk, "cursor");
    msgpack_pack_uint64(&call->pk, seq);
  }
  free(name);
}

/* notifications_since: docs/protocol.md section 5, "notifications_since". */
void
api_notifications_since(Call *call)
{
  Session *s = api_session(call);
  if (s == NULL)
    return;
  uint64_t since = 0;
  size_t limit = 0;
  if (api_cursor_seq(call, "since_seq", &since) != kArgPresent ||
      api_cursor_limit(call, s, &limit) < 0)
    return;
  SessionRead r;
  session_read_since(s, since, limit, &r);
  api_pack_read(&call->pk, &r, false);
  session_read_free(&r);
}
