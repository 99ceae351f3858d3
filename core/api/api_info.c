/*
 * The methods that describe the engine (docs/protocol.md section 5): ping,
 * api_info (version, methods, error codes, limits, counters, containment,
 * the state directory) and config_reload.
 */
#include "api/api_call.h"

#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/loopwatch.h"
#include "proc/contain.h"
#include "proc/ports.h"
#include "proc/proc.h"
#include "render/envelope.h"
#include "store/epoch.h"
#include "base/log.h"
#include "policy/policy.h"
#include "session/session_ignore.h"
#include "api/wire.h"

/* --- methods: basics ---------------------------------------------------- */

/* ping: docs/protocol.md section 5, "ping". */
void
api_ping(Call *call)
{
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "version");
  wire_str(&call->pk, VIGIL_VERSION);
  wire_key(&call->pk, "api_level");
  msgpack_pack_int(&call->pk, VIGIL_API_LEVEL);
}

/* api_info's "counters": what the engine's bounds have thrown away, and how
 * much it holds. */
static void
api_pack_engine_counters(Call *call)
{
  msgpack_packer *pk = &call->pk;
  Engine *e = call->e;
  Api *api = call->c->api;
  SessionTally tally = api_tally_sessions(e);
  EnvelopeCheckStats bodies;
  envelope_check_stats(&bodies);
  wire_key(pk, "counters");
  msgpack_pack_map(pk, 16 + 1); /* + keeper_hello_timeouts */
  wire_key(pk, "connections");
  msgpack_pack_uint64(pk, api->nconns);
  wire_key(pk, "sessions");
  msgpack_pack_uint64(pk, tally.sessions);
  wire_key(pk, "monitors_running");
  msgpack_pack_uint64(pk, e->running);
  wire_key(pk, "notifications_dropped");
  msgpack_pack_uint64(pk, tally.dropped);
  /* Lost by connections that fell more than session.queue_max behind. */
  wire_key(pk, "notifications_lost_behind");
  msgpack_pack_uint64(pk, session_registry_lost_behind(e->sessions));
  wire_key(pk, "connections_closed_slow");
  msgpack_pack_uint64(pk, rpc_channel_slow_closed());
  wire_key(pk, "connections_refused");
  msgpack_pack_uint64(pk, api->server ? rpc_server_refused(api->server) : 0);
  wire_key(pk, "connections_over_limit");
  msgpack_pack_uint64(pk, api->conns_refused);
  wire_key(pk, "log_lines_truncated");
  msgpack_pack_uint64(pk, log_lines_truncated());
  wire_key(pk, "log_lines_dropped");
  msgpack_pack_uint64(pk, log_lines_dropped());
  wire_key(pk, "policy_log_lines_dropped");
  msgpack_pack_uint64(pk, policy_log_lines_dropped());
  /* Policy bodies the engine refused (the built-in envelope was used): by
   * the prefix rule, and for being over their size bound. */
  wire_key(pk, "policy_bodies_refused");
  msgpack_pack_uint64(pk, bodies.refused);
  wire_key(pk, "policy_bodies_too_large");
  msgpack_pack_uint64(pk, bodies.refused_size);
  /* Silenced fingerprints (api_ignore.c): incidents they kept from the
   * agent, ignores refused at incident.ignore_max, and ignore files that
   * failed their checks at a load. */
  wire_key(pk, "ignored");
  msgpack_pack_uint64(pk, e->incidents_ignored);
  wire_key(pk, "ignores_refused");
  msgpack_pack_uint64(pk, e->ignores_refused);
  wire_key(pk, "ignore_files_set_aside");
  msgpack_pack_uint64(pk, session_registry_ignores_set_aside(e->sessions));
  /* Starts failed because their keeper said nothing within its bound
   * (proc_keeper.c): each keeper killed, its start answered with why. */
  wire_key(pk, "keeper_hello_timeouts");
  msgpack_pack_uint64(pk, proc_keeper_hello_timeouts());
}

/* api_info's "containment": how monitors' processes are tracked and their
 * limits enforced on this machine (contain.h), and the orphans it ended. */
static void
api_pack_containment(msgpack_packer *pk)
{
  ContainInfo ci;
  contain_info(&ci);
  wire_key(pk, "containment");
  msgpack_pack_map(pk, 10 + 2); /* + ports_truncated, proc_walks */
  wire_key(pk, "mode");
  wire_str(pk, ci.mode);
  wire_key(pk, "tracking");
  wire_str(pk, ci.tracking);
  wire_key(pk, "subreaper");
  ci.subreaper ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "cgroup");
  wire_str(pk, ci.cgroup);
  wire_key(pk, "max_processes");
  wire_str(pk, ci.max_processes);
  wire_key(pk, "cpu_limit");
  wire_str(pk, ci.cpu_limit);
  wire_key(pk, "memory_limit");
  wire_str(pk, ci.memory_limit);
  wire_key(pk, "orphans_reaped");
  msgpack_pack_uint64(pk, ci.orphans_reaped);
  wire_key(pk, "orphans_killed");
  msgpack_pack_uint64(pk, ci.orphans_killed);
  wire_key(pk, "scans_truncated");
  msgpack_pack_uint64(pk, ci.scans_truncated);
  /* Issue 26: what the bounds of the ports' scans left out (ports.h). */
  wire_key(pk, "ports_truncated");
  msgpack_pack_uint64(pk, ports_truncated());
  /* Issue 27: the /proc walks for members (one per round of the loop at
   * most, shared by that round's endings). */
  wire_key(pk, "proc_walks");
  msgpack_pack_uint64(pk, ci.proc_walks);
}

/* api_info's "loop": how busy the engine's loop has been between two
 * waits, turn by turn (loopwatch.h): what a request or a line waited at
 * most for the loop. turns_over_ms counts turns longer than each threshold
 * by the wall clock, turns_over_cpu_ms by the loop thread's own CPU time
 * (a turn long only by the wall clock waited for a CPU or in the kernel). */
static void
api_pack_loop(msgpack_packer *pk)
{
  LoopWatchStats s;
  loopwatch_stats(&s);
  wire_key(pk, "loop");
  msgpack_pack_map(pk, 6);
  wire_key(pk, "turns");
  msgpack_pack_uint64(pk, s.turns);
  wire_key(pk, "busy_ms");
  msgpack_pack_uint64(pk, s.busy_ms);
  wire_key(pk, "longest_ms");
  msgpack_pack_double(pk, s.longest_ms);
  wire_key(pk, "longest_cpu_ms");
  msgpack_pack_double(pk, s.longest_cpu_ms);
  const uint64_t *counts[2] = {s.over, s.over_cpu};
  const char *names[2] = {"turns_over_ms", "turns_over_cpu_ms"};
  for (int k = 0; k < 2; k++) {
    wire_key(pk, names[k]);
    msgpack_pack_map(pk, LOOPWATCH_THRESHOLDS);
    for (int i = 0; i < LOOPWATCH_THRESHOLDS; i++) {
      char key[16];
      snprintf(key, sizeof key, "%u", loopwatch_threshold_ms[i]);
      wire_key(pk, key);
      msgpack_pack_uint64(pk, counts[k][i]);
    }
  }
}

/* api_info's "config": the file the running config came from, as loaded
 * (config_lookup.h's identity), so a client can tell whether the engine
 * runs the config it means (`vigil mcp` warns when not); nil when the
 * engine runs with no config file. sha256 and size are nil when the file
 * could not be read whole beside the load. */
static void
api_pack_config(msgpack_packer *pk, const VigilConfig *cfg)
{
  wire_key(pk, "config");
  if (cfg->path == NULL) {
    msgpack_pack_nil(pk);
    return;
  }
  bool known = cfg->ident.real_path[0] != '\0';
  msgpack_pack_map(pk, 4);
  wire_key(pk, "path");
  wire_str(pk, cfg->path);
  wire_key(pk, "real_path");
  wire_str(pk, known ? cfg->ident.real_path : cfg->path);
  wire_key(pk, "sha256");
  if (known)
    wire_str(pk, cfg->ident.sha256);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "size");
  if (known)
    msgpack_pack_uint64(pk, cfg->ident.size);
  else
    msgpack_pack_nil(pk);
}

/* api_info: docs/protocol.md section 5, "api_info". */
void
api_info(Call *call)
{
  msgpack_packer *pk = &call->pk;
  const VigilConfig *cfg = &call->e->config;
  /* version, api_level, epoch, methods, error_codes, notification_types,
   * limits, counters, containment, loop, state_dir, config, nats, pid, uptime_ms */
  msgpack_pack_map(pk, 15);
  wire_key(pk, "version");
  wire_str(pk, VIGIL_VERSION);
  wire_key(pk, "api_level");
  msgpack_pack_int(pk, VIGIL_API_LEVEL);
  wire_key(pk, "epoch");
  wire_str(pk, epoch_hex());
  wire_key(pk, "methods");
  size_t n = 0;
  while (api_method_name(n))
    n++;
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++)
    wire_str(pk, api_method_name(i));
  wire_key(pk, "error_codes");
  msgpack_pack_map(pk, VIGIL_ERROR_COUNT);
  for (int i = 0; i < VIGIL_ERROR_COUNT; i++) {
    wire_key(pk, error_name(i));
    msgpack_pack_int(pk, i);
  }
  wire_key(pk, "notification_types");
  msgpack_pack_array(pk, NOTIFICATION_TYPE_COUNT);
  for (int i = 0; i < NOTIFICATION_TYPE_COUNT; i++)
    wire_str(pk, notification_type_name((NotificationType)i));
  wire_key(pk, "limits");
  size_t nlimits = 0;
  for (const SettingSpec *spec = settings_table; spec->name; spec++)
    nlimits++;
  msgpack_pack_map(pk, nlimits + 6);
  for (const SettingSpec *spec = settings_table; spec->name; spec++) {
    wire_key(pk, spec->name);
    if (spec->kind == kSettingEnum)
      wire_str(pk, spec->choices[settings_get(&cfg->settings, spec)]);
    else
      msgpack_pack_int64(pk, settings_get(&cfg->settings, spec));
  }
  wire_key(pk, "monitor.enabled");
  cfg->enabled ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.live_mode_enabled");
  cfg->live_mode_enabled ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.allow_shell");
  cfg->allow_shell ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.allow_persistent");
  cfg->allow_persistent ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.line_buffered");
  cfg->line_buffered ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.idle_timeout_max_ms");
  msgpack_pack_int(pk, MONITOR_IDLE_TIMEOUT_MAX_MS);
  api_pack_engine_counters(call);
  api_pack_containment(pk);
  api_pack_loop(pk);
  /* Where what outlives this engine is kept (docs/restart.md), as vigild
   * opened it (absolute); nil when it runs without one. */
  wire_key(pk, "state_dir");
  if (call->e->state != NULL)
    wire_str(pk, call->e->state->path);
  else
    msgpack_pack_nil(pk);
  api_pack_config(pk, cfg);
  /* Whom to send SIGHUP to reload (a denial says so too). */
  wire_key(pk, "pid");
  msgpack_pack_int64(pk, (int64_t)getpid());
  /* How long this engine has run (`vigil engine status`); a SIGUSR2
   * restart starts it again. */
  wire_key(pk, "nats");
  Api *api = call->c ? call->c->api : NULL;
  if (api && api->nats_info)
    api->nats_info(api->nats_info_data, pk);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "uptime_ms");
  msgpack_pack_uint64(pk, clock_mono_ms() - call->e->started_ms);
}

/* config_reload: docs/protocol.md section 5, "config_reload". */
void
api_config_reload(Call *call)
{
  if (engine_reload(call->e, &call->err) != 0)
    return;
  const char **names = NULL;
  size_t n = policyset_names(call->e->policies, &names);
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "reloaded");
  msgpack_pack_true(&call->pk);
  wire_key(&call->pk, "policies");
  msgpack_pack_array(&call->pk, n);
  for (size_t i = 0; i < n; i++)
    wire_str(&call->pk, names[i]);
}


void
api_set_nats_info(Api *api, void (*pack)(void *data, msgpack_packer *pk), void *data)
{
  api->nats_info = pack;
  api->nats_info_data = data;
}
