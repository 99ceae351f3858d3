/*
 * The start map (startmap.h), packed with msgpack-c. Strings go out as the
 * bytes they were given: a start sent again must run exactly the same
 * argv, cwd and env. A string that is not valid UTF-8 (a directory's name,
 * an argument, is bytes to the OS) goes as msgpack bin rather than str, so
 * that no client's str decoder fails on it and monitor_start, which takes
 * bin wherever it takes str (docs/protocol.md section 2.6), gets it back
 * unchanged.
 */
#include "engine/startmap.h"

#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "base/memory.h"
#include "base/utf8.h"

#define KEY(k) startmap_pack_str(pk, k)

/* n bytes of s: str when valid UTF-8, else bin. */
static void
startmap_pack_strn(msgpack_packer *pk, const char *s, size_t n)
{
  if (utf8_valid(s, n)) {
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
  } else {
    msgpack_pack_bin(pk, n);
    msgpack_pack_bin_body(pk, s, n);
  }
}

/* s as startmap_pack_strn packs it; nil when NULL. */
static void
startmap_pack_str(msgpack_packer *pk, const char *s)
{
  if (s == NULL)
    msgpack_pack_nil(pk);
  else
    startmap_pack_strn(pk, s, strlen(s));
}

/* The length of a NULL-terminated list (0 for NULL). */
static size_t
startmap_count(char *const *v)
{
  size_t n = 0;
  while (v != NULL && v[n] != NULL)
    n++;
  return n;
}

/* A NULL-terminated list of strings as an array. */
static void
startmap_pack_strv(msgpack_packer *pk, char *const *v)
{
  size_t n = startmap_count(v);
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++)
    startmap_pack_str(pk, v[i]);
}

static void
startmap_pack_bool(msgpack_packer *pk, bool b)
{
  if (b)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}

/* env's "K=V" entries as the map {K: V} monitor_start takes. */
static void
startmap_pack_env(msgpack_packer *pk, char *const *env)
{
  size_t n = startmap_count(env);
  msgpack_pack_map(pk, n);
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(env[i], '=');
    size_t klen = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
    startmap_pack_strn(pk, env[i], klen);
    startmap_pack_str(pk, eq ? eq + 1 : "");
  }
}

/* A whole number, or nil when it is 0 (the field's "none"). */
static void
startmap_pack_positive(msgpack_packer *pk, int64_t v)
{
  if (v > 0)
    msgpack_pack_int64(pk, v);
  else
    msgpack_pack_nil(pk);
}

/* source as it was asked: {file, from} or {ws}, or nil for a command. */
static void
startmap_pack_source(msgpack_packer *pk, const StartRequest *req)
{
  if (req->source_ws != NULL) {
    msgpack_pack_map(pk, 1);
    KEY("ws");
    startmap_pack_str(pk, req->source_ws);
    return;
  }
  if (req->source_file == NULL) {
    msgpack_pack_nil(pk);
    return;
  }
  char offset[24];
  snprintf(offset, sizeof offset, "%" PRIu64, req->source_offset);
  msgpack_pack_map(pk, 2);
  KEY("file");
  startmap_pack_str(pk, req->source_file);
  KEY("from");
  KEY(req->source_from == kFileFromStart ? "start"
      : req->source_from == kFileFromOffset ? offset : "end");
}

/* Readiness and health (docs/readiness.md) in the flat form: nil where
 * none was declared, the defaults told where one was. */
static void
startmap_pack_ready(msgpack_packer *pk, const MonitorSpec *spec)
{
  bool declared = spec->ready_log != NULL || spec->ready_tcp > 0 || spec->ready_http != NULL;
  KEY("ready_log");
  startmap_pack_str(pk, spec->ready_log);
  KEY("ready_tcp");
  startmap_pack_positive(pk, spec->ready_tcp);
  KEY("ready_http");
  startmap_pack_str(pk, spec->ready_http);
  KEY("ready_status");
  startmap_pack_str(pk, spec->ready_http == NULL ? NULL
                        : spec->ready_status != NULL ? spec->ready_status : "200..399");
  KEY("ready_timeout_ms");
  startmap_pack_positive(pk, !declared ? 0
                             : spec->ready_timeout_ms > 0 ? spec->ready_timeout_ms
                                                          : MONITOR_READY_TIMEOUT_DEFAULT_MS);
  KEY("health_interval_ms");
  startmap_pack_positive(pk, spec->health_interval_ms);
  KEY("health_failures");
  startmap_pack_positive(pk, spec->health_interval_ms <= 0 ? 0
                             : spec->health_failures > 0 ? spec->health_failures
                                                         : MONITOR_HEALTH_FAILURES_DEFAULT);
}

/* See startmap.h. */
char *
startmap_pack(const StartRequest *req, const MonitorSpec *spec, const char *policy,
              int64_t max_runtime_ms, size_t *len)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pkr;
  msgpack_packer *pk = &pkr;
  msgpack_packer_init(pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(pk, STARTMAP_KEYS);
  /* A shell start's argv is /bin/sh -c COMMAND (gate_shell_argv): it is
   * told as the command and shell it was, so the shell rule applies again. */
  bool shell = req->shell && req->argv.argc == 3;
  /* A source (docs/sources.md) runs nothing: no argv, env or buffering. */
  bool source = req->source_file != NULL || req->source_ws != NULL;
  KEY("argv");
  if (shell || source)
    msgpack_pack_nil(pk);
  else
    startmap_pack_strv(pk, req->argv.argv);
  KEY("command");
  startmap_pack_str(pk, shell ? req->argv.argv[2] : NULL);
  KEY("shell");
  startmap_pack_bool(pk, shell);
  KEY("cwd");
  startmap_pack_str(pk, spec->dir != NULL ? spec->dir->path : spec->cwd);
  KEY("env");
  if (source)
    msgpack_pack_nil(pk);
  else
    startmap_pack_env(pk, req->env);
  KEY("line_buffered");
  if (source)
    msgpack_pack_nil(pk);
  else
    startmap_pack_bool(pk, spec->line_buffered);
  KEY("label");
  startmap_pack_str(pk, req->label);
  KEY("description");
  startmap_pack_str(pk, req->description);
  KEY("patterns");
  if (spec->builtin_patterns) {
    msgpack_pack_nil(pk);
  } else {
    msgpack_pack_array(pk, spec->npatterns);
    for (size_t i = 0; i < spec->npatterns; i++)
      startmap_pack_str(pk, spec->patterns[i]);
  }
  KEY("match_streams");
  KEY(monitor_streams_name(spec->match_streams));
  KEY("notify");
  KEY(monitor_notify_name(spec->notify));
  KEY("incidents");
  startmap_pack_bool(pk, spec->incidents);
  KEY("envelope");
  KEY(monitor_envelope_names[spec->envelope == kEnvelopeCompact ? 1 : 0]);
  KEY("mode");
  KEY(monitor_mode_name(spec->mode));
  KEY("policy");
  startmap_pack_str(pk, policy);
  KEY("timeout_ms");
  if (spec->persistent)
    msgpack_pack_nil(pk);
  else
    msgpack_pack_int64(pk, spec->timeout_ms > 0 ? spec->timeout_ms : max_runtime_ms);
  KEY("persistent");
  startmap_pack_bool(pk, spec->persistent);
  KEY("idle_timeout_ms");
  msgpack_pack_int64(pk, spec->idle_timeout_ms);
  KEY("quiet_after_ms");
  msgpack_pack_int64(pk, spec->quiet_after_ms);
  KEY("restart");
  KEY(monitor_restart_name(spec->restart));
  KEY("max_restarts");
  msgpack_pack_int64(pk, spec->max_restarts > 0 ? spec->max_restarts
                                                : MONITOR_MAX_RESTARTS_DEFAULT);
  KEY("restart_backoff_ms");
  msgpack_pack_int64(pk, spec->restart_backoff_ms >= 0 ? spec->restart_backoff_ms
                                                       : MONITOR_RESTART_BACKOFF_DEFAULT_MS);
  KEY("memory_limit");
  startmap_pack_positive(pk, spec->memory_limit);
  KEY("cpu_limit");
  if (spec->cpu_limit > 0)
    msgpack_pack_double(pk, spec->cpu_limit);
  else
    msgpack_pack_nil(pk);
  KEY("source");
  startmap_pack_source(pk, req);
  startmap_pack_ready(pk, spec);
  *len = sb.size;
  char *out = xmemdupz(sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return out;
}

/* See startmap.h. */
char *
startmap_redact(const char *start, size_t start_len, size_t *len)
{
  msgpack_unpacked up;
  msgpack_unpacked_init(&up);
  char *out = NULL;
  if (msgpack_unpack_next(&up, start, start_len, NULL) == MSGPACK_UNPACK_SUCCESS &&
      up.data.type == MSGPACK_OBJECT_MAP) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const msgpack_object_map *map = &up.data.via.map;
    msgpack_pack_map(&pk, map->size);
    for (uint32_t i = 0; i < map->size; i++) {
      const msgpack_object *k = &map->ptr[i].key, *v = &map->ptr[i].val;
      msgpack_pack_object(&pk, *k);
      bool env = k->type == MSGPACK_OBJECT_STR && k->via.str.size == 3 &&
                 memcmp(k->via.str.ptr, "env", 3) == 0;
      if (!env) {
        msgpack_pack_object(&pk, *v);
      } else if (v->type == MSGPACK_OBJECT_MAP) {
        /* The names stay: what a reader may know is set, not to what. */
        msgpack_pack_map(&pk, v->via.map.size);
        for (uint32_t j = 0; j < v->via.map.size; j++) {
          msgpack_pack_object(&pk, v->via.map.ptr[j].key);
          msgpack_pack_nil(&pk);
        }
      } else {
        msgpack_pack_nil(&pk);
      }
    }
    *len = sb.size;
    out = xmemdupz(sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
  }
  msgpack_unpacked_destroy(&up);
  return out;
}
