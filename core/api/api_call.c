/*
 * What every method family of the msgpack-rpc front end shares (see
 * api_call.h): finding the session and the record a call names, reading a
 * command, and the bound on requests waiting per connection.
 */
#include "api/api_call.h"

#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "engine/monitor_fields.h"

/* Starts an answer for a deferred call: a fresh buffer and packer. */
void
api_answer_begin(msgpack_sbuffer *sb, msgpack_packer *pk)
{
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

/* --- shared argument readers -------------------------------------------- */

/* The session a call acts on (its `session` argument or the current one). */
Session *
api_session(Call *call)
{
  char *name = NULL;
  if (args_str(&call->args, "session", API_SESSION_NAME_MAX, &name, &call->err) < 0)
    return NULL;
  Session *s = seat_session(call->c->client, name, &call->err);
  free(name);
  return s;
}

/* The record named by the required monitor_id (or process_id) argument, in
 * the caller's session; another session's is not_found like an unknown id. */
MonRecord *
api_record(Call *call, const char *key)
{
  Session *s = api_session(call);
  if (s == NULL)
    return NULL;
  char *id = NULL;
  ArgResult rc = args_str(&call->args, key, 64, &id, &call->err);
  if (rc == kArgError)
    return NULL;
  if (rc == kArgAbsent) {
    error_set(&call->err, kErrInvalidParams, "%s is required", key);
    return NULL;
  }
  MonRecord *r = engine_find(call->e, s, id);
  if (r == NULL)
    error_set(&call->err, kErrNotFound, "%s: no monitor \"%s\" in session \"%s\"", key, id,
              session_name(s));
  free(id);
  return r;
}

/* --- the arguments of a start, as a FieldSource (monitor_fields.h) ------- */

static void
api_field_name(const FieldSource *src, const char *key, char *buf, size_t size)
{
  snprintf(buf, size, "%s", key);
}

static int
api_field_string(const FieldSource *src, const char *key, char **out, VigilError *err)
{
  return args_str(src->ctx, key, SIZE_MAX, out, err);
}

static int
api_field_strings(const FieldSource *src, const char *key, char ***out, size_t *n,
                  VigilError *err)
{
  return args_strv(src->ctx, key, SIZE_MAX, SIZE_MAX, out, n, err);
}

static int
api_field_bool(const FieldSource *src, const char *key, bool *out, VigilError *err)
{
  return args_bool(src->ctx, key, out, err);
}

static int
api_field_uint(const FieldSource *src, const char *key, uint64_t min, uint64_t max,
               const char *why, uint64_t *out, VigilError *err)
{
  return args_uint(src->ctx, key, min, max, out, err);
}

static int
api_field_number(const FieldSource *src, const char *key, double min, double max, double *out,
                 VigilError *err)
{
  return args_double(src->ctx, key, min, max, out, err);
}

static int
api_field_choice(const FieldSource *src, const char *key, const char *const *choices, int *out,
                 VigilError *err)
{
  return args_choice(src->ctx, key, choices, out, err);
}

static int
api_field_env(const FieldSource *src, const char *key, size_t max, bool numbers, char ***out,
              VigilError *err)
{
  return args_env(src->ctx, key, max, numbers, out, err);
}

int
api_read_start(Call *call, unsigned form, StartRequest *req)
{
  FieldSource src = {
    &call->args, call->args.method, api_field_name, api_field_string, api_field_strings,
    api_field_bool, api_field_uint, api_field_number, api_field_choice, api_field_env,
  };
  return start_request_read(&src, form, &call->e->config.settings, req, &call->err);
}

/* Whether this connection may have one more slow request waiting
 * (rpc.max_pending); sets limit_exceeded when not. */
bool
api_reserve_pending(Call *call)
{
  long long max = (long long)call->e->config.settings.rpc_max_pending;
  if (call->c->npending < (size_t)max)
    return true;
  error_set(&call->err, kErrLimitExceeded,
            "rpc.max_pending is %lld and this connection has %zu requests waiting", max,
            call->c->npending);
  return false;
}


/* session_each visitor: counts sessions and their dropped notifications. */
static void
api_tally_session(void *ctx, Session *s)
{
  SessionTally *t = ctx;
  t->sessions++;
  t->named += !session_anonymous(s);
  t->dropped += session_dropped_total(s);
}

SessionTally
api_tally_sessions(Engine *e)
{
  SessionTally tally = {0, 0, 0};
  session_each(e->sessions, api_tally_session, &tally);
  return tally;
}
