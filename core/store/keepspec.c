/*
 * The spec file of a kept monitor (keepspec.h): packed with msgpack-c,
 * read back into a KeepSpec with every field checked. The header is
 * 24 bytes: "VIGLSPEC", version (u32), body length (u32), FNV-1a of the
 * body (u64), statefile.h's format; a file whose sum does not match was
 * torn or garbled and is refused, never half-used.
 */
#include "store/keepspec.h"

#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memory.h"
#include "spec/monitor_defs.h"
#include "store/statefile.h"

#define KEEPSPEC_VERSION 1
static const char keepspec_magic[8] = {'V', 'I', 'G', 'L', 'S', 'P', 'E', 'C'};

#define KEY(k) statefile_pack_str(pk, k)
/* The keys of readiness and health (get_ready). */
#define KEEPSPEC_READY_KEYS 8

/* See keepspec.h. */
int
keepspec_write(int dir_fd, const KeepSpec *s, VigilError *err)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pkr;
  msgpack_packer *pk = &pkr;
  msgpack_packer_init(pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(pk, (s->start != NULL ? 33 : 32) + 1 + KEEPSPEC_READY_KEYS); /* + quiet_after_ms */
  KEY("id"); statefile_pack_str(pk, s->id);
  KEY("session"); statefile_pack_str(pk, s->session);
  KEY("session_anonymous"); statefile_pack_bool(pk, s->session_anonymous);
  KEY("label"); statefile_pack_str(pk, s->label);
  KEY("description"); statefile_pack_str(pk, s->description);
  KEY("policy"); statefile_pack_str(pk, s->policy);
  KEY("argv"); statefile_pack_strv(pk, s->argv);
  KEY("program"); statefile_pack_str(pk, s->program);
  KEY("cwd"); statefile_pack_str(pk, s->cwd);
  KEY("patterns"); statefile_pack_strv(pk, s->patterns);
  KEY("builtin_patterns"); statefile_pack_bool(pk, s->builtin_patterns);
  KEY("incidents"); statefile_pack_bool(pk, s->incidents);
  KEY("envelope"); msgpack_pack_int64(pk, s->envelope);
  KEY("match_streams"); msgpack_pack_int64(pk, s->match_streams);
  KEY("notify"); msgpack_pack_int64(pk, s->notify);
  KEY("mode"); msgpack_pack_int64(pk, s->mode);
  KEY("timeout_ms"); msgpack_pack_int64(pk, s->timeout_ms);
  KEY("idle_timeout_ms"); msgpack_pack_int64(pk, s->idle_timeout_ms);
  KEY("quiet_after_ms"); msgpack_pack_int64(pk, s->quiet_after_ms);
  KEY("memory_limit"); msgpack_pack_int64(pk, s->memory_limit);
  KEY("cpu_limit"); msgpack_pack_double(pk, s->cpu_limit);
  KEY("env"); statefile_pack_strv(pk, s->env);
  KEY("group"); statefile_pack_str(pk, s->group);
  KEY("restart"); msgpack_pack_int64(pk, s->restart);
  KEY("max_restarts"); msgpack_pack_int64(pk, s->max_restarts);
  KEY("restart_backoff_ms"); msgpack_pack_int64(pk, s->restart_backoff_ms);
  KEY("restarts"); msgpack_pack_int64(pk, s->restarts);
  KEY("restarts_in_row"); msgpack_pack_int64(pk, s->restarts_in_row);
  KEY("run_started_at_ms"); msgpack_pack_int64(pk, s->run_started_at_ms);
  KEY("started_at_ms"); msgpack_pack_int64(pk, s->started_at_ms);
  KEY("ready_log"); statefile_pack_str(pk, s->ready_log);
  KEY("ready_http"); statefile_pack_str(pk, s->ready_http);
  KEY("ready_status"); statefile_pack_str(pk, s->ready_status);
  KEY("ready_tcp"); msgpack_pack_int64(pk, s->ready_tcp);
  KEY("ready_timeout_ms"); msgpack_pack_int64(pk, s->ready_timeout_ms);
  KEY("health_interval_ms"); msgpack_pack_int64(pk, s->health_interval_ms);
  KEY("health_failures"); msgpack_pack_int64(pk, s->health_failures);
  KEY("ready_at_ms"); msgpack_pack_int64(pk, s->ready_at_ms);
  KEY("pid"); msgpack_pack_int64(pk, s->pid);
  KEY("keeper"); msgpack_pack_int64(pk, s->keeper);
  KEY("settings");
  size_t nset = 0;
  for (const SettingSpec *sp = settings_table; sp->name; sp++)
    nset++;
  msgpack_pack_map(pk, nset);
  for (const SettingSpec *sp = settings_table; sp->name; sp++) {
    KEY(sp->name);
    int64_t v = settings_get(&s->settings, sp);
    if (sp->kind == kSettingEnum)
      statefile_pack_str(pk, sp->choices[v]);
    else
      msgpack_pack_int64(pk, v);
  }
  if (s->start != NULL) {
    /* Already msgpack (one map): its bytes follow the key as they are. */
    KEY("start");
    msgpack_sbuffer_write(&sb, s->start, s->start_len);
  }
  int rc = statefile_write(dir_fd, KEEPSPEC_NAME, keepspec_magic, KEEPSPEC_VERSION, sb.data,
                           sb.size, "spec", err);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* --- reading ------------------------------------------------------------- */

/* The kind every error names. */
#define W "spec"

/* The settings map: every known setting, each within its bounds. */
static bool
get_settings(const msgpack_object *map, VigilSettings *s, VigilError *err)
{
  const msgpack_object *o = statefile_get(map, "settings");
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP) {
    error_set(err, kErrInvalidParams, "spec: settings: missing or not a map");
    return false;
  }
  settings_defaults(s);
  for (const SettingSpec *sp = settings_table; sp->name; sp++) {
    if (sp->kind == kSettingEnum) {
      char *choice = NULL;
      bool ok = statefile_get_str(W, o, sp->name, false, &choice, err) &&
                settings_set_choice(s, sp->name, choice, err) == 0;
      free(choice);
      if (!ok)
        return false;
    } else {
      int64_t v;
      if (!statefile_get_int(W, o, sp->name, INT64_MIN, INT64_MAX, &v, err) ||
          settings_set_int(s, sp->name, v, err) != 0)
        return false;
    }
  }
  return settings_check(s, err) == 0;
}

/* The start map, when there is one (a spec written before it was kept has
 * none): a map, packed again into bytes of its own. */
static bool
get_start(const msgpack_object *map, KeepSpec *s, VigilError *err)
{
  const msgpack_object *o = statefile_get(map, "start");
  if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
    return true;
  if (o->type != MSGPACK_OBJECT_MAP) {
    error_set(err, kErrInvalidParams, "spec: start: not a map");
    return false;
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, *o);
  s->start = xmemdupz(sb.data, sb.size);
  s->start_len = sb.size;
  msgpack_sbuffer_destroy(&sb);
  return true;
}

/* An integer within lo..hi that a spec from before it was kept lacks
 * (then *out stays 0). */
static bool
get_int_opt(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
            VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
    return true;
  return statefile_get_int(W, map, key, lo, hi, out, err);
}

/* The start's env and the restart policy, each absent from a spec written
 * before it was kept. */
static bool
get_restart(const msgpack_object *map, KeepSpec *s, VigilError *err)
{
  const msgpack_object *env = statefile_get(map, "env");
  if (env != NULL && env->type != MSGPACK_OBJECT_NIL &&
      !statefile_get_strv(W, map, "env", &s->env, err))
    return false;
  for (size_t i = 0; s->env != NULL && s->env[i] != NULL; i++) {
    if (strchr(s->env[i], '=') == NULL || s->env[i][0] == '=') {
      error_set(err, kErrInvalidParams, "spec: env[%zu]: not NAME=VALUE", i);
      return false;
    }
  }
  int64_t restart = 0;
  if (!get_int_opt(map, "restart", kRestartNo, kRestartAlways, &restart, err) ||
      !get_int_opt(map, "max_restarts", 0, MONITOR_MAX_RESTARTS_MAX, &s->max_restarts, err) ||
      !get_int_opt(map, "restart_backoff_ms", -1, MONITOR_RESTART_BACKOFF_MAX_MS,
                   &s->restart_backoff_ms, err) ||
      !get_int_opt(map, "restarts", 0, INT64_MAX, &s->restarts, err) ||
      !get_int_opt(map, "restarts_in_row", 0, MONITOR_MAX_RESTARTS_MAX, &s->restarts_in_row, err) ||
      !get_int_opt(map, "run_started_at_ms", 0, INT64_MAX, &s->run_started_at_ms, err) ||
      !get_int_opt(map, "quiet_after_ms", 0, MONITOR_QUIET_AFTER_MAX_MS, &s->quiet_after_ms, err))
    return false;
  s->restart = (int)restart;
  const msgpack_object *group = statefile_get(map, "group");
  if (group != NULL && group->type != MSGPACK_OBJECT_NIL &&
      !statefile_get_str(W, map, "group", true, &s->group, err))
    return false;
  return true;
}

/* Readiness and health, absent from a spec written before they were kept.
 * Their values are checked again when the monitor is taken over
 * (monitor_ready__check), as a start's are. */
static bool
get_ready(const msgpack_object *map, KeepSpec *s, VigilError *err)
{
  const char *strs[] = {"ready_log", "ready_http", "ready_status"};
  char **dst[] = {&s->ready_log, &s->ready_http, &s->ready_status};
  for (size_t i = 0; i < 3; i++) {
    const msgpack_object *o = statefile_get(map, strs[i]);
    if (o != NULL && o->type != MSGPACK_OBJECT_NIL &&
        !statefile_get_str(W, map, strs[i], true, dst[i], err))
      return false;
  }
  return get_int_opt(map, "ready_tcp", 0, 65535, &s->ready_tcp, err) &&
         get_int_opt(map, "ready_timeout_ms", 0, INT32_MAX, &s->ready_timeout_ms, err) &&
         get_int_opt(map, "health_interval_ms", 0, INT32_MAX, &s->health_interval_ms, err) &&
         get_int_opt(map, "health_failures", 0, INT32_MAX, &s->health_failures, err) &&
         get_int_opt(map, "ready_at_ms", 0, INT64_MAX, &s->ready_at_ms, err);
}

/* See keepspec.h. */
int
keepspec_read(int dir_fd, KeepSpec *s, VigilError *err)
{
  memset(s, 0, sizeof *s);
  char *buf = NULL;
  size_t len = 0;
  if (statefile_read(dir_fd, KEEPSPEC_NAME, keepspec_magic, KEEPSPEC_VERSION, KEEPSPEC_MAX_BYTES,
                     "spec", &buf, &len, err) != 0)
    return -1;
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  bool ok = msgpack_unpack_next(&u, buf, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
            u.data.type == MSGPACK_OBJECT_MAP;
  if (!ok)
    error_set(err, kErrInvalidParams, "spec: its body is not a msgpack map");
  const msgpack_object *m = &u.data;
  int64_t v;
  ok = ok && statefile_get_str(W, m, "id", false, &s->id, err) &&
       statefile_get_str(W, m, "session", false, &s->session, err) &&
       statefile_get_bool(W, m, "session_anonymous", &s->session_anonymous, err) &&
       statefile_get_str(W, m, "label", false, &s->label, err) &&
       statefile_get_str(W, m, "description", true, &s->description, err) &&
       statefile_get_str(W, m, "policy", false, &s->policy, err) && statefile_get_strv(W, m, "argv", &s->argv, err) &&
       statefile_get_str(W, m, "program", false, &s->program, err) && statefile_get_str(W, m, "cwd", false, &s->cwd, err) &&
       statefile_get_strv(W, m, "patterns", &s->patterns, err) &&
       statefile_get_bool(W, m, "builtin_patterns", &s->builtin_patterns, err) &&
       statefile_get_bool(W, m, "incidents", &s->incidents, err);
  ok = ok && statefile_get_int(W, m, "envelope", 0, 16, &v, err) && ((s->envelope = (int)v), true);
  ok = ok && statefile_get_int(W, m, "match_streams", 0, 16, &v, err) && ((s->match_streams = (int)v), true);
  ok = ok && statefile_get_int(W, m, "notify", 0, 16, &v, err) && ((s->notify = (int)v), true);
  ok = ok && statefile_get_int(W, m, "mode", 0, 16, &v, err) && ((s->mode = (int)v), true);
  ok = ok && statefile_get_int(W, m, "timeout_ms", 0, INT64_MAX, &s->timeout_ms, err) &&
       statefile_get_int(W, m, "idle_timeout_ms", 0, INT64_MAX, &s->idle_timeout_ms, err) &&
       statefile_get_int(W, m, "memory_limit", 0, INT64_MAX, &s->memory_limit, err) &&
       statefile_get_int(W, m, "started_at_ms", 0, INT64_MAX, &s->started_at_ms, err);
  ok = ok && statefile_get_int(W, m, "pid", 0, INT32_MAX, &v, err) && ((s->pid = (pid_t)v), true) &&
       (s->pid != 1 || (error_set(err, kErrInvalidParams, "spec: pid must be 0 or 2..%d, got 1",
                                  INT32_MAX), false));
  /* keeper 0: the spec was written while its keeper was being launched
   * (proc_spawn), and an engine died before it was named; the keeper that
   * listens in the monitor's directory is then taken as its own. */
  ok = ok && statefile_get_int(W, m, "keeper", 0, INT32_MAX, &v, err) &&
       ((s->keeper = (pid_t)v), true) &&
       (s->keeper != 1 || (error_set(err, kErrInvalidParams, "spec: keeper must be 0 or 2..%d, "
                                     "got 1", INT32_MAX), false));
  const msgpack_object *cpu = ok ? statefile_get(m, "cpu_limit") : NULL;
  if (ok && (cpu == NULL || (cpu->type != MSGPACK_OBJECT_FLOAT64 &&
                             cpu->type != MSGPACK_OBJECT_FLOAT32))) {
    ok = false;
    error_set(err, kErrInvalidParams, "spec: cpu_limit: missing or not a number");
  } else if (ok) {
    s->cpu_limit = cpu->via.f64;
  }
  ok = ok && get_settings(m, &s->settings, err) && get_start(m, s, err) &&
       get_restart(m, s, err);
  ok = ok && get_ready(m, s, err);
  if (ok && s->argv[0] == NULL) {
    ok = false;
    error_set(err, kErrInvalidParams, "spec: argv: empty");
  }
  msgpack_unpacked_destroy(&u);
  free(buf);
  if (!ok) {
    keepspec_free(s);
    return -1;
  }
  return 0;
}

/* See keepspec.h. */
void
keepspec_free(KeepSpec *s)
{
  free(s->id);
  free(s->session);
  free(s->label);
  free(s->description);
  free(s->policy);
  xstrv_free(s->argv);
  free(s->program);
  free(s->cwd);
  xstrv_free(s->patterns);
  xstrv_free(s->env);
  free(s->group);
  free(s->start);
  free(s->ready_log);
  free(s->ready_http);
  free(s->ready_status);
  memset(s, 0, sizeof *s);
}
