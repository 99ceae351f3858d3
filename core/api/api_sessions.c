/*
 * The session methods (docs/protocol.md section 5): session_open (create or
 * resume a named session, with a cursor), session_state (busy / idle),
 * session_close and session_list.
 */
#include "api/api_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/epoch.h"
#include "base/memory.h"
#include "base/random.h"
#include "api/wire.h"

/* --- methods: sessions -------------------------------------------------- */

/* session_open: docs/protocol.md section 5, "session_open". */
void
api_session_open(Call *call)
{
  char *name = NULL;
  uint64_t last_seq = 0, linger = 0;
  ArgResult has_last = kArgAbsent, has_linger = kArgAbsent;
  if (args_str(&call->args, "session", 256, &name, &call->err) < 0 ||
      (has_last = args_uint(&call->args, "last_seq", 0, SESSION_SEQ_MAX, &last_seq,
                            &call->err)) < 0 ||
      (has_linger = args_uint(&call->args, "linger_ms", 0,
                              (uint64_t)call->e->config.settings.session_max_linger_ms, &linger,
                              &call->err)) < 0)
    goto done;
  if (name == NULL) {
    /* No name: a new named session with a generated one, which the gateway
     * can resume later like any other. */
    char id[24];
    random_monitor_id(id);
    name = xmalloc(32);
    snprintf(name, 32, "ses_%s", id + 4);
  } else if (!session_name_ok(name)) {
    error_set(&call->err, kErrInvalidParams,
              "session: \"%.64s\" must be 1..%d characters of [A-Za-z0-9._:-], not starting "
              "with \"anon-\"",
              name, API_SESSION_NAME_MAX);
    goto done;
  }
  Session *s = session_find(call->e->sessions, name);
  bool resumed = s != NULL;
  if (s == NULL) {
    SessionTally tally = api_tally_sessions(call->e);
    long long max = (long long)call->e->config.settings.session_max_sessions;
    if ((long long)tally.named >= max) {
      error_set(&call->err, kErrLimitExceeded,
                "session.max_sessions is %lld and %llu named sessions exist", max,
                (unsigned long long)tally.named);
      goto done;
    }
    s = session_create(call->e->sessions, name, false);
  }
  if (has_linger == kArgPresent)
    session_set_linger(s, linger); /* a terminal's session outlives its commands */
  if (seat_attach(call->c->client, s, has_last == kArgPresent, last_seq, &call->err) != 0)
    goto done;
  msgpack_pack_map(&call->pk, 4);
  wire_key(&call->pk, "session");
  wire_str(&call->pk, session_name(s));
  wire_key(&call->pk, "resumed");
  resumed ? msgpack_pack_true(&call->pk) : msgpack_pack_false(&call->pk);
  wire_key(&call->pk, "next_seq");
  msgpack_pack_uint64(&call->pk, session_next_seq(s));
  /* Seqs are this engine's: with the epoch a host can tell a restart. */
  wire_key(&call->pk, "epoch");
  wire_str(&call->pk, epoch_hex());
done:
  free(name);
}

/* session_state: docs/protocol.md section 5, "session_state". */
void
api_session_state(Call *call)
{
  static const char *const states[] = {"busy", "idle", NULL};
  Session *s = api_session(call);
  if (s == NULL)
    return;
  int state = -1;
  ArgResult rc = args_choice(&call->args, "state", states, &state, &call->err);
  if (rc == kArgError)
    return;
  if (rc == kArgAbsent) {
    error_set(&call->err, kErrInvalidParams, "state is required (\"busy\" | \"idle\")");
    return;
  }
  size_t delivered = session_set_busy(s, state == 0);
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "state");
  wire_str(&call->pk, states[state]);
  wire_key(&call->pk, "delivered");
  msgpack_pack_uint64(&call->pk, delivered);
}

/* session_close: docs/protocol.md section 5, "session_close". */
void
api_session_close(Call *call)
{
  Session *s = api_session(call);
  if (s == NULL)
    return;
  size_t stopped = engine_close_session(call->e, s);
  msgpack_pack_map(&call->pk, 1);
  wire_key(&call->pk, "stopped");
  msgpack_pack_uint64(&call->pk, stopped);
}

/* One session_list entry. */
static void
api_pack_session(Call *call, Session *s)
{
  msgpack_packer *pk = &call->pk;
  msgpack_pack_map(pk, 6);
  wire_key(pk, "session");
  wire_str(pk, session_name(s));
  wire_key(pk, "attached");
  msgpack_pack_uint64(pk, session_attached(s));
  wire_key(pk, "monitors");
  msgpack_pack_uint64(pk, engine_running_in(call->e, s));
  wire_key(pk, "state");
  wire_str(pk, session_busy(s) ? "busy" : "idle");
  wire_key(pk, "queued");
  msgpack_pack_uint64(pk, session_queued(s));
  /* Its model cursors (session_cursor.h) and where each stands. */
  wire_key(pk, "cursors");
  msgpack_pack_map(pk, session_cursor_count(s));
  for (size_t i = 0; i < session_cursor_count(s); i++) {
    uint64_t seq = 0;
    wire_str(pk, session_cursor_at(s, i, &seq));
    msgpack_pack_uint64(pk, seq);
  }
}

/* The named sessions of the engine, for session_list {all: true}. */
typedef struct {
  Session **list;
  size_t count, cap;
} ApiNamedSessions;

static void
api_collect_named(void *ctx, Session *s)
{
  ApiNamedSessions *named = ctx;
  if (session_anonymous(s))
    return;
  if (named->count == named->cap) {
    named->cap = named->cap ? 2 * named->cap : 16;
    named->list = xrealloc(named->list, named->cap * sizeof *named->list);
  }
  named->list[named->count++] = s;
}

/* session_list: docs/protocol.md section 5, "session_list". With `all`,
 * every named session of the engine, not only this connection's: a person
 * asks what runs (vigil sessions), and any connection of the engine's uid
 * may open any named session by name anyway. Another connection's
 * anonymous session, which nobody else can name, is never listed. */
void
api_session_list(Call *call)
{
  Seat *c = call->c->client;
  bool all = false;
  if (args_bool(&call->args, "all", &all, &call->err) == kArgError)
    return;
  msgpack_pack_map(&call->pk, 1);
  wire_key(&call->pk, "sessions");
  if (!all) {
    msgpack_pack_array(&call->pk, 1 + c->nopened);
    api_pack_session(call, c->anon);
    for (size_t i = 0; i < c->nopened; i++)
      api_pack_session(call, c->opened[i].s);
    return;
  }
  /* Bounded by session.max_sessions (and the pinned ones of the config). */
  ApiNamedSessions named = {NULL, 0, 0};
  session_each(call->e->sessions, api_collect_named, &named);
  msgpack_pack_array(&call->pk, 1 + named.count);
  api_pack_session(call, c->anon);
  for (size_t i = 0; i < named.count; i++)
    api_pack_session(call, named.list[i]);
  free(named.list);
}

