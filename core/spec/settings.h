/*
 * Every limit the core obeys, as one typed struct with a table that gives
 * each field its dotted config name, default, bounds and a line of
 * documentation. The table is the single source of truth: config loading,
 * api_info's `limits`, `--check-config` and the docs all read it.
 *
 * A monitor takes a copy of the settings when it starts, so a later config
 * reload changes new monitors only.
 */
#ifndef VIGIL_SETTINGS_H
#define VIGIL_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "spec/units.h"

typedef enum {
  kOverloadStop = 0, /* stop the process group, state overloaded */
  kOverloadMute = 1, /* keep running, stop output notifications */
} OverloadAction;

typedef struct {
  /* Lines, capture and ring. */
  int64_t line_max_bytes;
  int64_t capture_max_bytes;
  int64_t ring_max_lines;
  int64_t ring_max_bytes;
  /* Patterns. */
  int64_t max_patterns;
  int64_t pattern_max_length;
  int64_t match_limit;
  int64_t depth_limit;
  /* Batching. */
  int64_t flush_interval_ms;
  int64_t batch_max_lines;
  int64_t batch_max_bytes;
  /* Lifetime. */
  int64_t max_runtime_ms;
  int64_t kill_grace_ms;
  int64_t exit_drain_ms;
  int64_t max_processes;    /* 0: no limit */
  int64_t event_log_max;
  int64_t exit_lines;
  /* Rate limit. */
  int64_t rate_max_notifications;
  int64_t rate_window_ms;
  int64_t rate_overload_ms;
  int64_t rate_on_overload; /* OverloadAction */
  /* The signal stage (incident.h, coalesce.h). */
  int64_t incident_quiet_ms;
  int64_t incident_max_open_ms;
  int64_t incident_max_lines;
  int64_t incident_max_bytes;
  int64_t incident_coalesce_ms;   /* 0: off */
  int64_t incident_summary_after_ms;
  int64_t incident_fingerprints_max;
  int64_t incident_ignore_max;
  int64_t incident_history_max;
  int64_t envelope_style;         /* EnvelopeStyle */
  /* The keeper of a monitored process (docs/restart.md). */
  int64_t keeper_unattended_ms;
  int64_t state_journal_max_bytes;
  /* Sessions and the engine. */
  int64_t max_monitors_per_session;
  int64_t max_monitors;
  int64_t max_ended_monitors;
  int64_t session_queue_max;
  int64_t session_linger_ms;
  int64_t session_max_linger_ms;
  int64_t session_max_sessions;
  int64_t session_max_cursors;
  /* The engine's log. */
  int64_t log_buffer_bytes;
  int64_t log_policy_lines_per_s;
  int64_t log_policy_lines_per_call;
  /* The wire. */
  int64_t rpc_max_message_bytes;
  int64_t rpc_max_output_bytes;
  int64_t rpc_output_stall_ms;
  int64_t rpc_max_pending;
  int64_t rpc_max_connections;
  /* The fleet (docs/fleet.md): read at start, a reload does not change them. */
  int64_t nats_connect_timeout_ms;
  int64_t nats_ack_timeout_ms;
  int64_t nats_max_in_flight;
  int64_t nats_retry_min_ms;
  int64_t nats_retry_max_ms;
  int64_t nats_max_age_ms;
  int64_t nats_max_bytes;
  int64_t nats_duplicate_window_ms;
  int64_t nats_max_clients;       /* requesters' virtual connections (fleet_rpc.h) */
  int64_t nats_client_idle_ms;
} VigilSettings;

typedef enum {
  kSettingInt,  /* integer within [min, max] */
  kSettingEnum, /* one of `choices`, stored as its index */
} SettingKind;

typedef struct {
  const char *name;   /* dotted config name: "monitor.line_max_bytes" */
  SettingKind kind;
  size_t offset;      /* offsetof(VigilSettings, field) */
  int64_t def;
  int64_t min;
  int64_t max;
  const char *const *choices; /* kSettingEnum: NULL-terminated names */
  const char *unit;   /* "bytes", "ms", "lines", ... for messages and docs */
  const char *doc;
} SettingSpec;

/* The table, terminated by an entry whose name is NULL. */
extern const SettingSpec settings_table[];

/* Fills s with every default. */
void settings_defaults(VigilSettings *s);

/* The spec named `name`, or NULL. */
const SettingSpec *settings_find(const char *name);

/* Sets an integer setting. Refuses an unknown name or a value out of range
 * with invalid_params naming the setting, the bound and the value
 * ("monitor.line_max_bytes must be 256..1048576, got 12"); s is unchanged. */
int settings_set_int(VigilSettings *s, const char *name, int64_t value, VigilError *err);

/* Sets an enum setting by choice name; same refusal rules. */
int settings_set_choice(VigilSettings *s, const char *name, const char *choice, VigilError *err);

/* Whether an integer setting also takes a string with units, and which:
 * kUnitMs for a setting in "ms", kUnitBytes for one in "bytes", else
 * kUnitNone. */
UnitKind settings_unit_kind(const SettingSpec *spec);

/* Sets a setting from a string a person wrote: an enum setting's choice,
 * or a duration ("1m30s") or size ("64KiB") for a setting that takes one
 * (units.h). A malformed string is refused naming the setting, its bounds
 * (with their units), the examples, the string and what is wrong; a value
 * out of range naming the setting, the bounds, the string and its value:
 *   keeper.unattended_ms must be 1000..604800000 ms (1s..7d), got "8d" (691200000)
 * s is unchanged then. */
int settings_set_text(VigilSettings *s, const char *name, const char *text, VigilError *err);

/* The current value of a setting. */
int64_t settings_get(const VigilSettings *s, const SettingSpec *spec);

/* Appends the table as Markdown (docs/settings.md is this output). */
void settings_render_markdown(StrBuf *out);

/* Checks the rules that involve two settings (overload_ms >= window_ms ...).
 * Call after setting every field. */
int settings_check(const VigilSettings *s, VigilError *err);

#endif
