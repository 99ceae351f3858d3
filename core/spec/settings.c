/*
 * The settings table: names, defaults and bounds of every core limit.
 *
 * Bounds follow the seed 003 document where it gives one (line_max_bytes at
 * least 256, batch_max_bytes at least 1024, max_runtime_ms at least 1000).
 * flush_interval_ms defaults to 200 as the product card says, so its lower
 * bound is vigil's own (10 ms), not seed 003's 250. Settings no seed bounds
 * take bounds that still allow small values for tests.
 *
 * keeper.unattended_ms (docs/restart.md) defaults to 15 minutes: long enough
 * for an engine to be restarted or upgraded by hand, short enough that a
 * process nobody will adopt does not run for the rest of the day; its upper
 * bound is monitor.max_runtime_ms's, a week.
 *
 * monitor.max_processes defaults to 4096: a dev server with its watchers and
 * workers, or a parallel build, runs a few hundred processes and threads
 * (pids.max counts threads), so 4096 leaves room for any of them while a
 * fork bomb stops there, far below pid_max.
 */
#include "spec/settings.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "spec/gate.h"

static const char *const overload_choices[] = {"stop", "mute", NULL};
static const char *const envelope_choices[] = {"readable", "compact", NULL};

#define INT_SETTING(cname, field, d, lo, hi, u, text) \
  {cname, kSettingInt, offsetof(VigilSettings, field), d, lo, hi, NULL, u, text}

const SettingSpec settings_table[] = {
  INT_SETTING("monitor.line_max_bytes", line_max_bytes, 8192, 256, 1048576, "bytes",
              "longest line kept; the rest of a longer line is discarded and counted"),
  INT_SETTING("monitor.capture_max_bytes", capture_max_bytes, 1048576, 1024, 1073741824,
              "bytes", "raw bytes kept per stream (the last ones) for monitor_logs; the ring's "
              "plain lines are read from them, so a line whose bytes are gone leaves "
              "monitor_output too (counted as dropped). With a state directory each stream's "
              "spool file is a 512-byte header and these bytes: 3584 makes it one 4 KiB page"),
  INT_SETTING("monitor.ring_max_lines", ring_max_lines, 1000, 1, 1000000, "lines",
              "lines kept per monitor for monitor_output (fewer when capture_max_bytes "
              "holds fewer)"),
  INT_SETTING("monitor.ring_max_bytes", ring_max_bytes, 1048576, 4096, 1073741824, "bytes",
              "copied line text kept per monitor for monitor_output: lines that needed "
              "repair (ANSI, NUL, bad UTF-8) or were cut; plain lines stay in the capture"),
  INT_SETTING("monitor.max_patterns", max_patterns, 32, 1, 32, "patterns",
              "patterns per monitor"),
  INT_SETTING("monitor.pattern_max_length", pattern_max_length, 512, 1, 65536, "bytes",
              "longest pattern source"),
  INT_SETTING("monitor.match_limit", match_limit, 1000000, 1000, 100000000, "steps",
              "PCRE2 match limit per line; a line over it is a counted match error"),
  INT_SETTING("monitor.depth_limit", depth_limit, 10000, 100, 10000000, "frames",
              "PCRE2 backtracking depth limit per line"),
  INT_SETTING("monitor.flush_interval_ms", flush_interval_ms, 200, 10, 60000, "ms",
              "a batch is delivered this long after its first line"),
  INT_SETTING("monitor.batch_max_lines", batch_max_lines, 50, 1, 10000, "lines",
              "a batch is delivered early at this many lines"),
  INT_SETTING("monitor.batch_max_bytes", batch_max_bytes, 16384, 1024, 1048576, "bytes",
              "a batch is delivered early at this many text bytes"),
  INT_SETTING("monitor.max_runtime_ms", max_runtime_ms, 1800000, 1000, 604800000, "ms",
              "runtime cap of a monitor that gives no timeout_ms"),
  INT_SETTING("monitor.kill_grace_ms", kill_grace_ms, 2000, 0, 600000, "ms",
              "time between the stop signal and SIGKILL to the process group"),
  INT_SETTING("monitor.exit_drain_ms", exit_drain_ms, 1000, 0, 60000, "ms",
              "after the child exits, how long to keep reading pipes a grandchild holds open"),
  INT_SETTING("monitor.max_processes", max_processes, 4096, 0, 4194304, "processes",
              "processes and threads a monitor may have at once, 0: no limit (cgroup "
              "pids.max; without one RLIMIT_NPROC, which counts per user and does not bind root)"),
  INT_SETTING("monitor.event_log_max", event_log_max, 1024, 16, 1000000, "events",
              "events kept per monitor, incident events aside (at most as many again); the "
              "oldest ~10% go at once when full"),
  INT_SETTING("monitor.exit_lines", exit_lines, 10, 0, 1000, "lines",
              "last lines carried by an ending notification"),
  INT_SETTING("rate_limit.max_notifications", rate_max_notifications, 8, 1, 1000,
              "notifications", "output notifications per monitor in any window"),
  INT_SETTING("rate_limit.window_ms", rate_window_ms, 10000, 1000, 3600000, "ms",
              "the rate limit's sliding window"),
  INT_SETTING("rate_limit.overload_ms", rate_overload_ms, 45000, 1000, 86400000, "ms",
              "withholding this long with no clean window is sustained overload"),
  {"rate_limit.on_overload", kSettingEnum, offsetof(VigilSettings, rate_on_overload),
   kOverloadStop, 0, 1, overload_choices, NULL,
   "\"stop\" the process group or \"mute\" its output on sustained overload"},
  INT_SETTING("incident.quiet_ms", incident_quiet_ms, 150, 10, 10000, "ms",
              "an open incident (a header and its trace) closes after this long without a line"),
  INT_SETTING("incident.max_open_ms", incident_max_open_ms, 2000, 100, 60000, "ms",
              "an incident still growing this long after its first line closes as it stands"),
  INT_SETTING("incident.max_lines", incident_max_lines, 60, 1, 1000, "lines",
              "lines kept per incident; the rest of its trace is counted (truncated_lines)"),
  INT_SETTING("incident.max_bytes", incident_max_bytes, 8192, 256, 1048576, "bytes",
              "text bytes kept per incident; the rest of its trace is counted"),
  INT_SETTING("incident.coalesce_ms", incident_coalesce_ms, 300000, 0, 86400000, "ms",
              "an incident whose fingerprint was notified this recently is counted as a repeat, "
              "not notified again; 0: off"),
  INT_SETTING("incident.summary_after_ms", incident_summary_after_ms, 10000, 100, 3600000, "ms",
              "a series of repeats is summarised this long after its last repeat"),
  INT_SETTING("incident.fingerprints_max", incident_fingerprints_max, 256, 1, 100000,
              "fingerprints", "fingerprints remembered per monitor for coalescing; the oldest "
              "goes first (its repeats reported)"),
  INT_SETTING("incident.ignore_max", incident_ignore_max, 256, 1, 4096, "fingerprints",
              "fingerprints a session may ignore (incident_ignore); one more is refused"),
  INT_SETTING("incident.history_max", incident_history_max, 256, 1, 100000, "incidents",
              "incidents kept per monitor for monitor_output {incident}; the oldest go first"),
  {"envelope.style", kSettingEnum, offsetof(VigilSettings, envelope_style), 0, 0, 1,
   envelope_choices, NULL,
   "the built-in frame: \"readable\" or \"compact\" (the same guarantees in fewer bytes)"},
  INT_SETTING("keeper.unattended_ms", keeper_unattended_ms, 900000, 1000, 604800000, "ms",
              "how long a monitored process may run while no engine is attached before its "
              "keeper stops it"),
  INT_SETTING("monitor.max_monitors_per_session", max_monitors_per_session, 16, 1, 16, "monitors",
              "running monitors per session (ended ones free their slot)"),
  INT_SETTING("monitor.max_monitors", max_monitors, 1000, 1, 100000, "monitors",
              "running monitors in the whole engine"),
  INT_SETTING("monitor.max_ended_monitors", max_ended_monitors, 64, 0, 10000, "monitors",
              "ended monitors a session keeps for list/status/output; the oldest go first"),
  INT_SETTING("session.queue_max", session_queue_max, 256, 1, 100000, "notifications",
              "notifications a session holds (waiting, and kept for resume)"),
  INT_SETTING("session.linger_ms", session_linger_ms, 300000, 0, 86400000, "ms",
              "how long a named session outlives its last connection"),
  INT_SETTING("session.max_linger_ms", session_max_linger_ms, 604800000, 0, 2592000000,
              "ms", "the longest linger a client may ask for in session_open"),
  INT_SETTING("session.max_sessions", session_max_sessions, 1024, 1, 100000, "sessions",
              "named sessions in the whole engine (a connection's own one does not count)"),
  INT_SETTING("session.max_cursors", session_max_cursors, 16, 1, 256, "cursors",
              "named model cursors per session (cursor_take, cursor_advance); a reload applies "
              "to cursors made after it, none is removed"),
  INT_SETTING("state.journal_max_bytes", state_journal_max_bytes, 16777216, 1048576,
              1073741824, "bytes", "how long a named session's journal in the state directory "
              "may grow before it is rewritten as what the session holds (or twice that "
              "rewrite's size, if more)"),
  INT_SETTING("log.buffer_bytes", log_buffer_bytes, 1048576, 16384, 67108864, "bytes",
              "log lines waiting for stderr; past it lines are dropped, counted and reported"),
  INT_SETTING("log.policy_lines_per_s", log_policy_lines_per_s, 100, 1, 100000, "lines",
              "vigil.log lines one policy may write per second; the rest are dropped, counted"),
  INT_SETTING("log.policy_lines_per_call", log_policy_lines_per_call, 20, 1, 10000, "lines",
              "vigil.log lines one policy call (or load) may write; the rest are dropped, counted"),
  INT_SETTING("rpc.max_message_bytes", rpc_max_message_bytes, 1048576, 1024, 67108864, "bytes",
              "largest msgpack-rpc message accepted (process_run's stdin included); a "
              "larger one is skipped unread and answered limit_exceeded, then a socket "
              "connection is closed (stdio goes on)"),
  INT_SETTING("rpc.max_output_bytes", rpc_max_output_bytes, 16777216, 65536, 1073741824, "bytes",
              "bytes waiting to be written to one connection: notifications wait in their "
              "session past it, and the connection's calls wait past it for answers"),
  INT_SETTING("rpc.output_stall_ms", rpc_output_stall_ms, 60000, 1000, 3600000, "ms",
              "a connection whose output waits past rpc.max_output_bytes and that reads "
              "none of it for this long has stopped reading, and is closed"),
  INT_SETTING("rpc.max_pending", rpc_max_pending, 64, 1, 10000, "requests",
              "slow requests (monitor_wait, process_run) one connection may have waiting"),
  INT_SETTING("rpc.max_connections", rpc_max_connections, 256, 1, 65536, "connections",
              "connections at once; one more is closed at once, counted, and logged (in "
              "full once per 10 s, the rest with their count: docs/protocol.md 2.2)"),
  INT_SETTING("nats.connect_timeout_ms", nats_connect_timeout_ms, 2000, 100, 60000, "ms",
              "a connect to the NATS server, and each request to its JetStream API; at start "
              "vigild waits this long (three times, for the stream) before it serves anyway"),
  INT_SETTING("nats.ack_timeout_ms", nats_ack_timeout_ms, 5000, 100, 600000, "ms",
              "how long a published notification waits for JetStream's acknowledgment "
              "before it is sent again"),
  INT_SETTING("nats.max_in_flight", nats_max_in_flight, 32, 1, 1024, "notifications",
              "how many of one session's notifications may wait for JetStream's "
              "acknowledgment at once (1: one at a time, the stream in seq order even "
              "through faults; docs/fleet.md section 2)"),
  INT_SETTING("nats.retry_min_ms", nats_retry_min_ms, 100, 10, 60000, "ms",
              "the first wait before a notification is sent again (or a connect tried "
              "again); it doubles each time up to nats.retry_max_ms"),
  INT_SETTING("nats.retry_max_ms", nats_retry_max_ms, 10000, 100, 3600000, "ms",
              "the longest wait between two sends of a notification, or two connects"),
  INT_SETTING("nats.max_age_ms", nats_max_age_ms, 604800000, 60000, 31536000000, "ms",
              "how long the stream keeps a notification, when the engine creates it"),
  INT_SETTING("nats.max_bytes", nats_max_bytes, 1073741824, 1048576, 1099511627776, "bytes",
              "how much the stream keeps (the oldest go first), when the engine creates it"),
  INT_SETTING("nats.duplicate_window_ms", nats_duplicate_window_ms, 120000, 1000, 86400000, "ms",
              "how long JetStream remembers a message id to drop a republish, when the "
              "engine creates the stream"),
  INT_SETTING("nats.max_clients", nats_max_clients, 128, 1, 4096, "connections",
              "requesters served over NATS at once (docs/fleet.md section 6), each a virtual "
              "connection; a request from one more is refused limit_exceeded, counted"),
  INT_SETTING("nats.client_idle_ms", nats_client_idle_ms, 60000, 1000, 86400000, "ms",
              "a requester's virtual connection with no request and no answer pending for "
              "this long is closed, as a socket connection closing (its anonymous session "
              "ends, named ones linger)"),
  {NULL, kSettingInt, 0, 0, 0, 0, NULL, NULL, NULL},
};

static int64_t *
settings_field(VigilSettings *s, const SettingSpec *spec)
{
  return (int64_t *)(void *)((char *)s + spec->offset);
}

int64_t
settings_get(const VigilSettings *s, const SettingSpec *spec)
{
  return *(const int64_t *)(const void *)((const char *)s + spec->offset);
}

void
settings_defaults(VigilSettings *s)
{
  memset(s, 0, sizeof *s);
  for (const SettingSpec *spec = settings_table; spec->name; spec++)
    *settings_field(s, spec) = spec->def;
}

const SettingSpec *
settings_find(const char *name)
{
  for (const SettingSpec *spec = settings_table; spec->name; spec++)
    if (strcmp(spec->name, name) == 0)
      return spec;
  return NULL;
}

int
settings_set_int(VigilSettings *s, const char *name, int64_t value, VigilError *err)
{
  const SettingSpec *spec = settings_find(name);
  if (spec == NULL)
    return error_set(err, kErrInvalidParams, "%s: unknown setting", name);
  if (spec->kind != kSettingInt)
    return error_set(err, kErrInvalidParams, "%s must be a string (one of the choices), got %" PRId64,
                     name, value);
  if (value < spec->min || value > spec->max)
    return error_set(err, kErrInvalidParams, "%s must be %" PRId64 "..%" PRId64 ", got %" PRId64,
                     name, spec->min, spec->max, value);
  *settings_field(s, spec) = value;
  return 0;
}

int
settings_set_choice(VigilSettings *s, const char *name, const char *choice, VigilError *err)
{
  const SettingSpec *spec = settings_find(name);
  if (spec == NULL)
    return error_set(err, kErrInvalidParams, "%s: unknown setting", name);
  if (spec->kind != kSettingEnum)
    return error_set(err, kErrInvalidParams, "%s must be an integer, got \"%s\"", name, choice);
  for (int64_t i = 0; spec->choices[i]; i++) {
    if (strcmp(spec->choices[i], choice) == 0) {
      *settings_field(s, spec) = i;
      return 0;
    }
  }
  char list[256] = "";
  for (int64_t i = 0; spec->choices[i]; i++) {
    strncat(list, i ? " | \"" : "\"", sizeof list - strlen(list) - 1);
    strncat(list, spec->choices[i], sizeof list - strlen(list) - 1);
    strncat(list, "\"", sizeof list - strlen(list) - 1);
  }
  return error_set(err, kErrInvalidParams, "%s must be %s, got \"%s\"", name, list, choice);
}

UnitKind
settings_unit_kind(const SettingSpec *spec)
{
  if (spec->kind != kSettingInt || spec->unit == NULL)
    return kUnitNone;
  if (strcmp(spec->unit, "ms") == 0)
    return kUnitMs;
  if (strcmp(spec->unit, "bytes") == 0)
    return kUnitBytes;
  return kUnitNone;
}

int
settings_set_text(VigilSettings *s, const char *name, const char *text, VigilError *err)
{
  const SettingSpec *spec = settings_find(name);
  if (spec == NULL)
    return error_set(err, kErrInvalidParams, "%s: unknown setting", name);
  if (spec->kind == kSettingEnum)
    return settings_set_choice(s, name, text, err);
  char quoted[GATE_QUOTE_BUF];
  gate_quote(quoted, text);
  UnitKind kind = settings_unit_kind(spec);
  if (kind == kUnitNone)
    return error_set(err, kErrInvalidParams, "%s must be an integer, got %s", name, quoted);
  /* The bounds as a person would write them too: 1000..604800000 ms (1s..7d). */
  char bounds[UNITS_BOUNDS_MAX];
  units_bounds(kind, spec->min, spec->max, NULL, bounds);
  int64_t v = 0;
  const char *why = NULL;
  if (units_parse(kind, text, &v, &why) != 0)
    return error_set(err, kErrInvalidParams,
                     "%s must be %s, a number or a string such as %s, got %s: %s", name, bounds,
                     units_examples(kind), quoted, why);
  if (v < spec->min || v > spec->max)
    return error_set(err, kErrInvalidParams, "%s must be %s, got %s (%" PRId64 ")", name, bounds,
                     quoted, v);
  *settings_field(s, spec) = v;
  return 0;
}

int
settings_check(const VigilSettings *s, VigilError *err)
{
  if (s->rate_overload_ms < s->rate_window_ms)
    return error_set(err, kErrInvalidParams,
                     "rate_limit.overload_ms must be at least rate_limit.window_ms (%" PRId64
                     "), got %" PRId64,
                     s->rate_window_ms, s->rate_overload_ms);
  if (s->ring_max_bytes < s->line_max_bytes)
    return error_set(err, kErrInvalidParams,
                     "monitor.ring_max_bytes must be at least monitor.line_max_bytes (%" PRId64
                     "), got %" PRId64,
                     s->line_max_bytes, s->ring_max_bytes);
  if (s->nats_retry_max_ms < s->nats_retry_min_ms)
    return error_set(err, kErrInvalidParams,
                     "nats.retry_max_ms must be at least nats.retry_min_ms (%" PRId64
                     "), got %" PRId64,
                     s->nats_retry_min_ms, s->nats_retry_max_ms);
  return 0;
}

void
settings_render_markdown(StrBuf *out)
{
  strbuf_puts(out,
              "# Settings\n\n"
              "Every limit of the engine, with its default and bounds. Generated from\n"
              "`core/spec/settings.c` (the single source of truth); `test_settings` fails when\n"
              "this file and the table disagree. A value out of range is refused with the\n"
              "name, the bound and the value: `monitor.line_max_bytes must be 256..1048576,\n"
              "got 12`. Cross-field rules: `rate_limit.overload_ms` >= `rate_limit.window_ms`,\n"
              "`monitor.ring_max_bytes` >= `monitor.line_max_bytes`, `nats.retry_max_ms` >=\n"
              "`nats.retry_min_ms`.\n\n"
              "## Durations and sizes\n\n"
              "One grammar (`core/spec/units.c`) serves the config and the command line. A\n"
              "duration is one or more numbers, each directly followed by its unit, `ms`,\n"
              "`s`, `m`, `h` or `d`, the units largest first and each at most once:\n"
              "`500ms`, `30s`, `5m`, `2h`, `7d`, `1m30s`, `1h30m`, `1.5s` (`30m1h` and\n"
              "`5m5m` are refused); no sign, no space. A size is one number and its unit,\n"
              "`B`, `KiB`, `MiB` or `GiB` (powers of 1024): `64KiB`, `16MiB`, `1GiB`. The\n"
              "value must be whole milliseconds or bytes. A refusal names the setting or\n"
              "the option, the value and what is wrong: `--timeout: \"30m1h\" is not a\n"
              "duration: the units must come largest first, each at most once\n"
              "(\"1h30m\")`.\n\n"
              "In a config file, a setting in ms also takes a duration as a string, and a\n"
              "setting in bytes a size; a string without a unit is refused, since a plain\n"
              "number is milliseconds or bytes, as the table says. A config monitor's\n"
              "`timeout_ms`, `idle_timeout_ms` and `memory_limit` take the same strings.\n"
              "On the command line (`vigil`, docs/cli.md) a bare number is seconds, as\n"
              "for `sleep(1)`. The wire takes numbers only.\n\n"
              "## The ring and the capture\n\n"
              "`monitor_output`'s lines (the ring) and `monitor_logs`' raw bytes (the\n"
              "capture, one per stream) share their bytes: a line whose text is its raw\n"
              "bytes (no ANSI escape, NUL or invalid UTF-8 repaired, not cut) is kept as\n"
              "its place in the capture, not copied. The ring's lines are then bounded by\n"
              "`monitor.ring_max_lines`, by `monitor.ring_max_bytes` for the lines it\n"
              "copies (those that needed repair or were cut), and by what\n"
              "`monitor.capture_max_bytes` keeps: once the capture drops a line's bytes,\n"
              "that line and every older one leave the ring, counted in\n"
              "`counters.dropped`. So a plain line longer than\n"
              "`monitor.capture_max_bytes` (set below `monitor.line_max_bytes`) is never\n"
              "kept. With the defaults (1 MiB of capture per stream, 1000 lines)\n"
              "the ring holds its 1000 lines unless they average over 1 KiB.\n\n"
              "## The settings\n\n"
              "| setting | default | bounds | meaning |\n"
              "|---|---|---|---|\n");
  for (const SettingSpec *spec = settings_table; spec->name; spec++) {
    if (spec->kind == kSettingEnum) {
      strbuf_printf(out, "| `%s` | `\"%s\"` |", spec->name, spec->choices[spec->def]);
      for (size_t i = 0; spec->choices[i]; i++)
        strbuf_printf(out, "%s`\"%s\"`", i ? " or " : " ", spec->choices[i]);
      strbuf_printf(out, " | %s |\n", spec->doc);
    } else {
      strbuf_printf(out, "| `%s` | %" PRId64 " | %" PRId64 "..%" PRId64 " %s | %s |\n",
                    spec->name, spec->def, spec->min, spec->max, spec->unit, spec->doc);
    }
  }
}
