/*
 * What every method family of the msgpack-rpc front end shares (see
 * api_call.h): finding the session and the record a call names, reading a
 * command, and the bound on requests waiting per connection.
 */
#include "api_call.h"

#include <stdlib.h>
#include <string.h>

#include "gate.h"

#define API_COMMAND_MAX 65536
#define API_ARGV_MAX 4096
#define API_ENV_MAX 1024

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
  Session *s = client_session(call->c->client, name, &call->err);
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
  int rc = args_str(&call->args, key, 64, &id, &call->err);
  if (rc < 0)
    return NULL;
  if (rc == 0) {
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

/* Reads the arguments that monitor_start and process_run share into req:
 * command | argv, shell, cwd, env, memory_limit, cpu_limit. */
int
api_read_command(Call *call, StartRequest *req)
{
  Args *a = &call->args;
  VigilError *err = &call->err;
  char *command = NULL;
  char **argv = NULL;
  size_t argc = 0;
  if (args_str(a, "command", API_COMMAND_MAX, &command, err) < 0 ||
      args_strv(a, "argv", API_ARGV_MAX, API_COMMAND_MAX, &argv, &argc, err) < 0 ||
      args_bool(a, "shell", &req->shell, err) < 0) {
    free(command);
    args_free_strv(argv);
    return -1;
  }
  int rc = 0;
  if (command && argv) {
    rc = error_set(err, kErrInvalidParams, "give command or argv, not both");
  } else if (!command && !argv) {
    rc = error_set(err, kErrInvalidParams, "command or argv is required");
  } else if (argv) {
    if (req->shell)
      rc = error_set(err, kErrInvalidParams, "shell: needs command, not argv");
    else if (argc == 0 || argv[0][0] == '\0')
      rc = error_set(err, kErrInvalidParams, "argv: must name a program (argv[0])");
    else
      argv_from(&req->argv, (const char *const *)argv, argc);
  } else if (req->shell) {
    if (command[0] == '\0')
      rc = error_set(err, kErrInvalidParams, "command: empty command");
    else
      gate_shell_argv(command, &req->argv);
  } else {
    rc = gate_split(command, "command", &req->argv, err);
  }
  free(command);
  args_free_strv(argv);
  if (rc != 0)
    return -1;
  uint64_t mem = 0;
  double cpu = 0;
  if (args_str(a, "cwd", 4096, &req->cwd, err) < 0 ||
      args_env(a, "env", API_ENV_MAX, &req->env, err) < 0 ||
      args_uint(a, "memory_limit", 1, INT64_MAX, &mem, err) < 0 ||
      args_double(a, "cpu_limit", 0.001, 4096, &cpu, err) < 0)
    return -1;
  req->memory_limit = (int64_t)mem;
  req->cpu_limit = cpu;
  return 0;
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
