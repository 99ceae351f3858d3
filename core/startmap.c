/*
 * The start map (startmap.h), packed with msgpack-c. Strings go out as the
 * bytes they were given (statefile.h's packers, as the kept spec's): a
 * start sent again must run exactly the same argv, cwd and env.
 */
#include "startmap.h"

#include <msgpack.h>
#include <string.h>

#include "memory.h"
#include "statefile.h"

#define KEY(k) statefile_pack_str(pk, k)

/* env's "K=V" entries as the map {K: V} monitor_start takes. */
static void
startmap_pack_env(msgpack_packer *pk, char *const *env)
{
  size_t n = 0;
  while (env != NULL && env[n] != NULL)
    n++;
  msgpack_pack_map(pk, n);
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(env[i], '=');
    size_t klen = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
    statefile_pack_strn(pk, env[i], klen);
    statefile_pack_str(pk, eq ? eq + 1 : "");
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
  KEY("argv");
  if (shell)
    msgpack_pack_nil(pk);
  else
    statefile_pack_strv(pk, req->argv.argv);
  KEY("command");
  statefile_pack_str(pk, shell ? req->argv.argv[2] : NULL);
  KEY("shell");
  statefile_pack_bool(pk, shell);
  KEY("cwd");
  statefile_pack_str(pk, spec->dir != NULL ? spec->dir->path : spec->cwd);
  KEY("env");
  startmap_pack_env(pk, req->env);
  KEY("line_buffered");
  statefile_pack_bool(pk, spec->line_buffered);
  KEY("label");
  statefile_pack_str(pk, req->label);
  KEY("description");
  statefile_pack_str(pk, req->description);
  KEY("patterns");
  if (spec->builtin_patterns) {
    msgpack_pack_nil(pk);
  } else {
    msgpack_pack_array(pk, spec->npatterns);
    for (size_t i = 0; i < spec->npatterns; i++)
      statefile_pack_str(pk, spec->patterns[i]);
  }
  KEY("match_streams");
  KEY(monitor_streams_name(spec->match_streams));
  KEY("notify");
  KEY(monitor_notify_name(spec->notify));
  KEY("incidents");
  statefile_pack_bool(pk, spec->incidents);
  KEY("envelope");
  KEY(monitor_envelope_names[spec->envelope == kEnvelopeCompact ? 1 : 0]);
  KEY("mode");
  KEY(monitor_mode_name(spec->mode));
  KEY("policy");
  statefile_pack_str(pk, policy);
  KEY("timeout_ms");
  if (spec->persistent)
    msgpack_pack_nil(pk);
  else
    msgpack_pack_int64(pk, spec->timeout_ms > 0 ? spec->timeout_ms : max_runtime_ms);
  KEY("persistent");
  statefile_pack_bool(pk, spec->persistent);
  KEY("idle_timeout_ms");
  msgpack_pack_int64(pk, spec->idle_timeout_ms);
  KEY("memory_limit");
  startmap_pack_positive(pk, spec->memory_limit);
  KEY("cpu_limit");
  if (spec->cpu_limit > 0)
    msgpack_pack_double(pk, spec->cpu_limit);
  else
    msgpack_pack_nil(pk);
  *len = sb.size;
  char *out = xmemdupz(sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return out;
}
