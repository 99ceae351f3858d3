/*
 * The engine's configuration: a Lua file returning one table, evaluated in
 * the sandbox (no I/O), checked field by field against the settings table
 * and the rules below, and turned into one VigilConfig. Unknown keys are
 * refused (a typo must not silently fall back to a default), and every
 * refusal names the file, the field, the bound and the value:
 *   config/vigil.lua: monitor.max_monitors_per_session must be 1..16, got 40
 *
 * Shape (every key optional; config/vigil.lua documents each):
 *   return {
 *     monitor = { enabled, live_mode_enabled, allowed_commands = {...},
 *                 allow_shell, allow_persistent, line_buffered,
 *                 workspace_roots = {...},
 *                 path = "/usr/bin:/bin", env_deny = {...}, env_allow = {...},
 *                 env_inherit = {...}, <every monitor.* setting> },
 *     rate_limit = { <every rate_limit.* setting> },
 *     incident = { <every incident.* setting> }, envelope = { style },
 *     keeper = { <every keeper.* setting> },
 *     session = { <every session.* setting> },
 *     log = { <every log.* setting> },
 *     rpc = { <every rpc.* setting> },
 *     state = { dir = "/absolute/path" },
 *     policy = "envelope", gate = "name", plugin_paths = { ... },
 *     monitors = { { session = "dev", command = "...", label = ..., ... }, ... },
 *   }
 *
 * Without any config file the engine is safe: the allowlist is empty and
 * every start is denied (fail closed).
 */
#ifndef VIGIL_CONFIG_H
#define VIGIL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/config_hint.h"
#include "base/config_lookup.h"
#include "base/error.h"
#include "spec/gate.h"
#include "spec/monitor_defs.h"
#include "engine/monitor_fields.h"
#include "spec/settings.h"

/* A group's name (an entry's `group`): 1..CONFIG_GROUP_MAX bytes of
 * A-Z a-z 0-9 . _ - (docs/protocol.md, group_up). */
#define CONFIG_GROUP_MAX 64

/* One entry of `monitors`: the session it starts in, and what to start
 * (the same fields monitor_start takes: monitor_fields.h). An entry
 * without a group starts at boot; one with a group starts when its group
 * is brought up (engine_group.h), or at boot too when autostart is set. */
typedef struct {
  char *session;          /* required */
  char *group;            /* NULL: none; else a name config_group_name_ok takes,
                             and the entry has a label unique in its group */
  bool autostart;         /* started at boot although it has a group */
  StartRequest req;
} ConfigMonitor;

/* Whether name is a group's name: 1..CONFIG_GROUP_MAX bytes of
 * A-Z a-z 0-9 . _ -. */
bool config_group_name_ok(const char *name);

typedef struct {
  char *path;             /* the file it came from, or NULL for the built-in defaults */
  ConfigIdentity ident;   /* that file's real path and digest as loaded (api_info
                             "config"); zeroed when unknown (no file, or one
                             that changed under the load) */
  ConfigKeyLines key_lines; /* where its keys are set, for denials (config_hint.h) */
  VigilSettings settings;
  bool enabled;           /* monitor.enabled (default true) */
  bool live_mode_enabled; /* default false */
  bool allow_shell;       /* default false */
  bool allow_persistent;  /* default true */
  bool line_buffered;     /* monitor.line_buffered: a start that does not say
                             makes its child's stdout line-buffered (childenv.h);
                             default true */
  Allowlist allowed_commands;  /* default empty: every start denied */
  char **workspace_roots; /* nroots absolute paths; none: any cwd */
  size_t nroots;
  char *search_path;      /* monitor.path: where a bare program name is looked
                             up, absolute directories separated by ':'; NULL:
                             the engine's own PATH (proc.h) */
  char **env_deny;        /* monitor.env_deny: NULL-terminated childenv.h
                             patterns; default childenv_default_deny */
  char **env_allow;       /* monitor.env_allow: names exempted from env_deny;
                             default childenv_default_allow */
  char **env_inherit;     /* monitor.env_inherit: the engine's variables a
                             child gets; default childenv_default_inherit */
  char *state_dir;        /* state.dir: the engine's state directory, an absolute
                             path; NULL: vigild's default (docs/restart.md).
                             vigild's --state-dir and --no-state override it,
                             and a reload does not move it */
  /* nats: the fleet (docs/fleet.md), read at start only (vigild's --nats
   * and --nats-engine override url and engine); NULL when not set. */
  char *nats_url;         /* nats.url */
  char *nats_creds;       /* nats.creds: a .creds file, an absolute path */
  char *nats_tls_ca;      /* nats.tls_ca: PEM CA certificates to trust, absolute */
  char *nats_tls_cert;    /* nats.tls_cert: PEM client certificate (with tls_key) */
  char *nats_tls_key;     /* nats.tls_key: its PEM private key (with tls_cert) */
  char *nats_stream;      /* nats.stream; NULL: "VIGIL" */
  char *nats_engine;      /* nats.engine; NULL: the host name (fleet_names.h) */
  char *policy;           /* default "envelope" */
  char *gate;             /* the policy whose gate decides every start; NULL: policy's */
  char **plugin_paths;    /* nplugin_paths entries */
  size_t nplugin_paths;
  ConfigMonitor *monitors;
  size_t nmonitors;
} VigilConfig;

/* The built-in configuration: every default, an empty allowlist. */
void config_defaults(VigilConfig *cfg);

/* Loads and checks a file. cfg is overwritten (not freed first) and always
 * needs config_free afterwards. On error returns -1, err (invalid_params)
 * names the file and the field or line ("invalid_params: PATH: monitors[2].notify
 * must be ...", "invalid_params: PATH:LINE: <Lua's message>"), and cfg is
 * left as config_defaults. */
int config_load(const char *path, VigilConfig *cfg, VigilError *err);

/* The same for a config held in memory, named `name` in messages and as the
 * Lua chunk (the fuzz harness uses it; so could a reload from a socket). */
int config_load_buffer(const char *text, size_t len, const char *name, VigilConfig *cfg,
                       VigilError *err);

void config_free(VigilConfig *cfg);

#endif
