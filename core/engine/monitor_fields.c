/*
 * The table of a monitor's start fields and the one reader that applies it
 * (see monitor_fields.h). Simple fields land in their StartRequest slot by
 * offset; the few that shape another (command and argv become req->argv,
 * match_pattern becomes patterns) are read into locals and settled by the
 * rules at the end, which every form shares.
 */
#include "engine/monitor_fields.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "monitor/monitor.h"
#include "pipeline/notification.h"
#include "base/utf8.h"

/* A row's slot (MonitorField.slot): where in a StartRequest its value lands,
 * one past the offset so that a row without one (0) says nothing. */
#define SLOT(f) (offsetof(StartRequest, f) + 1)

_Static_assert(sizeof(MatchStreams) == sizeof(int) && sizeof(NotifyMode) == sizeof(int) &&
                   sizeof(DeliveryMode) == sizeof(int) && sizeof(EnvelopeStyle) == sizeof(int) &&
                   sizeof(StartEnvDenied) == sizeof(int),
               "a choice is stored as an int");

#define ALL (kFormStart | kFormRun | kFormConfig)
#define WATCH (kFormStart | kFormConfig)

const char *const start_env_denied_names[] = {"refuse", "drop", NULL};

const MonitorField monitor_fields[] = {
  {.name = "session", .kind = kFieldString, .forms = kFormConfig, .by_form = true, .nonempty = true,
   .fallback = "", .consumer = "engine",
   .doc = "the (pinned) session the monitor starts in; on the wire every call's `session`"},
  {.name = "group", .kind = kFieldString, .forms = kFormConfig, .by_form = true, .nonempty = true,
   .max = 64, .fallback = "none", .consumer = "engine",
   .doc = "a name of A-Z a-z 0-9 . _ -: the entry starts with its group (group_up, `vigil up`), "
     "not at boot; needs a label, unique in the group"},
  {.name = "autostart", .kind = kFieldBool, .forms = kFormConfig, .by_form = true,
   .fallback = "false", .consumer = "engine", .doc = "with group: start at boot as well"},
  {.name = "command", .kind = kFieldString, .forms = ALL, .nonempty = true, .max = 65536,
   .fallback = "", .consumer = "gate",
   .doc = "split like a POSIX shell splits words, without a shell; exactly one of command and argv"},
  {.name = "argv", .kind = kFieldStrings, .forms = ALL, .max = 4096, .fallback = "",
   .consumer = "gate",
   .doc = "the program and its arguments, each at most 65536 bytes; argv[0] non-empty"},
  {.name = "shell", .kind = kFieldBool, .forms = ALL, .slot = SLOT(shell), .fallback = "false",
   .consumer = "gate", .doc = "run `/bin/sh -c COMMAND` (needs command and monitor.allow_shell)"},
  {.name = "source", .kind = kFieldEnv, .forms = WATCH, .max = 2, .fallback = "none",
   .consumer = "source",
   .doc = "`{file: PATH, from: \"end\"|\"start\"|\"OFFSET\"}`: follow a file as `tail -F` does "
     "instead of running a command (docs/sources.md), from its end by default; judged by "
     "monitor.workspace_roots, not the allowlist; or `{ws: \"ws://127.0.0.1:PORT/PATH\"}`: a "
     "WebSocket on loopback (no TLS), each message a line; exactly one of command, argv and "
     "source"},
  {.name = "label", .kind = kFieldText, .forms = ALL, .slot = SLOT(label), .nonempty = true,
   .max = MONITOR_LABEL_MAX, .fallback = "the monitor id", .consumer = "monitor",
   .doc = "shown in notifications instead of the command"},
  {.name = "description", .kind = kFieldText, .forms = WATCH, .slot = SLOT(description),
   .max = MONITOR_DESCRIPTION_MAX, .fallback = "none", .consumer = "monitor",
   .doc = "shown by list and status"},
  {.name = "cwd", .kind = kFieldString, .forms = ALL, .slot = SLOT(cwd), .nonempty = true,
   .max = 4096, .fallback = "the engine's cwd", .consumer = "engine",
   .doc = "the directory the child runs in, checked against monitor.workspace_roots"},
  {.name = "env", .kind = kFieldEnv, .forms = ALL, .slot = SLOT(env), .max = 1024,
   .fallback = "none", .consumer = "proc",
   .doc = "variables set on top of what monitor.env_inherit passes (monitor.env_deny applies)"},
  {.name = "env_denied", .kind = kFieldChoice, .forms = ALL, .slot = SLOT(env_denied),
   .choices = start_env_denied_names, .fallback = "refuse", .consumer = "engine",
   .doc = "what a name of env that monitor.env_deny refuses does: refuse the start (denied), or "
     "drop it and name it in the result's note (a config monitor's: in the log)"},
  {.name = "line_buffered", .kind = kFieldBool, .forms = ALL, .slot = SLOT(line_buffered),
   .fallback = "monitor.line_buffered", .consumer = "proc",
   .doc = "make the child's stdout line-buffered: PYTHONUNBUFFERED=1 and, where coreutils' "
     "libstdbuf is installed, LD_PRELOAD of it with _STDBUF_O=L (the start's env wins); false: "
     "the program buffers as it would without a terminal"},
  /* The matcher bounds patterns as it compiles them (monitor.max_patterns,
   * monitor.pattern_max_length: limit_exceeded, invalid_pattern). */
  {.name = "patterns", .kind = kFieldStrings, .forms = WATCH,
   .fallback = "the built-in crash patterns", .consumer = "match",
   .doc = "PCRE2 patterns, at most monitor.max_patterns of at most monitor.pattern_max_length "
     "bytes; the first that matches a line wins; [] matches nothing (docs/crash-patterns.md lists "
     "the built-in set)"},
  {.name = "match_pattern", .kind = kFieldString, .forms = WATCH, .fallback = "none",
   .consumer = "match",
   .doc = "one pattern, the same as patterns: [it]; not together with patterns"},
  {.name = "match_streams", .kind = kFieldChoice, .forms = WATCH, .slot = SLOT(match_streams),
   .choices = monitor_streams_names, .fallback = "both", .consumer = "monitor",
   .doc = "which streams patterns apply to"},
  {.name = "notify", .kind = kFieldChoice, .forms = WATCH, .slot = SLOT(notify),
   .choices = monitor_notify_names, .fallback = "auto", .consumer = "monitor",
   .doc = "what produces a notification"},
  {.name = "incidents", .kind = kFieldBool, .forms = WATCH, .slot = SLOT(incidents),
   .fallback = "true", .consumer = "monitor",
   .doc = "gather a matching line and its trace into one incident, and coalesce repeats by "
     "fingerprint (docs/incidents.md); false: every matching line on its own"},
  {.name = "envelope", .kind = kFieldChoice, .forms = WATCH, .slot = SLOT(envelope),
   .choices = monitor_envelope_names, .fallback = "envelope.style", .consumer = "deliver",
   .doc = "the built-in frame: readable, or compact (the same guarantees in fewer bytes)"},
  {.name = "mode", .kind = kFieldChoice, .forms = WATCH, .slot = SLOT(mode),
   .choices = monitor_mode_names, .fallback = "idle", .consumer = "session",
   .doc = "live_safe interrupts a turn (needs monitor.live_mode_enabled)"},
  {.name = "policy", .kind = kFieldString, .forms = WATCH, .slot = SLOT(policy), .nonempty = true,
   .max = 256, .fallback = "the config's policy", .consumer = "deliver",
   .doc = "the policy that words (and may gate) this monitor's notifications"},
  {.name = "timeout_ms", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(timeout_ms), .min = 1,
   .max_setting = "monitor.max_runtime_ms", .fallback = "monitor.max_runtime_ms",
   .consumer = "monitor", .doc = "runtime cap; not together with persistent"},
  {.name = "persistent", .kind = kFieldBool, .forms = WATCH, .slot = SLOT(persistent),
   .fallback = "false", .consumer = "monitor",
   .doc = "no runtime cap (needs monitor.allow_persistent)"},
  {.name = "idle_timeout_ms", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(idle_timeout_ms),
   .max = MONITOR_IDLE_TIMEOUT_MAX_MS, .fallback = "0 (off)", .consumer = "monitor",
   .doc = "stop when neither stream produced a byte for this long"},
  {.name = "quiet_after_ms", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(quiet_after_ms),
   .max = MONITOR_QUIET_AFTER_MAX_MS, .fallback = "0 (off)", .consumer = "monitor",
   .doc = "0, or 100..86400000: after this long with no line on either stream, one notification "
     "(no output for ...; its last line) and a `quiet` event, and one more (output resumed after "
     "...) and a `resumed` event when lines come again; never stops anything"},
  {.name = "restart", .kind = kFieldChoice, .forms = WATCH, .slot = SLOT(restart),
   .choices = monitor_restart_names, .fallback = "no", .consumer = "monitor",
   .doc = "start the program again when it ends by itself: on-failure (a status other than 0, or "
     "a signal vigil did not send) or always; never after stop, the runtime cap, the idle timeout "
     "or overload"},
  {.name = "max_restarts", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(max_restarts), .min = 1,
   .max = MONITOR_MAX_RESTARTS_MAX, .fallback = "5", .consumer = "monitor",
   .doc = "restarts in a row before the monitor ends with the last exit; a run of 60 s or more "
     "starts a new row"},
  {.name = "restart_backoff_ms", .kind = kFieldUint, .forms = WATCH,
   .slot = SLOT(restart_backoff_ms), .max = MONITOR_RESTART_BACKOFF_MAX_MS, .fallback = "1000",
   .consumer = "monitor",
   .doc = "the delay before the first restart of a row, doubled for each next one up to 60 s (or "
     "this, if longer)"},
  {.name = "ready_log", .kind = kFieldString, .forms = WATCH, .slot = SLOT(ready_log),
   .nonempty = true, .max_setting = "monitor.pattern_max_length", .fallback = "none",
   .consumer = "monitor",
   .doc = "ready when an output line (stdout or stderr) matches this regex (docs/readiness.md)"},
  {.name = "ready_tcp", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(ready_tcp), .min = 1,
   .max = 65535, .fallback = "none", .consumer = "monitor",
   .doc = "ready when this port of 127.0.0.1 accepts a connection"},
  {.name = "ready_http", .kind = kFieldString, .forms = WATCH, .slot = SLOT(ready_http),
   .nonempty = true, .max = 2048, .fallback = "none", .consumer = "monitor",
   .doc = "ready when a GET of this http:// URL on loopback (127.0.0.0/8, [::1], localhost) "
     "answers with a status in ready_status; redirects are answers, never followed"},
  {.name = "ready_status", .kind = kFieldString, .forms = WATCH, .slot = SLOT(ready_status),
   .nonempty = true, .max = 16, .fallback = "200..399", .consumer = "monitor",
   .doc = "ready_http's statuses that mean ready: \"200..399\" or one status"},
  {.name = "ready", .kind = kFieldEnv, .forms = WATCH, .max = 2, .fallback = "none",
   .consumer = "monitor",
   .doc = "the same in one map (the issue's form): `{log: REGEX}`, `{tcp: PORT}` or `{http: URL, "
     "status: \"200..399\"}`; not with ready_log, ready_tcp, ready_http or ready_status"},
  {.name = "ready_timeout_ms", .kind = kFieldUint, .forms = WATCH, .slot = SLOT(ready_timeout_ms),
   .min = 1, .max = 3600000, .fallback = "60000", .consumer = "monitor",
   .doc = "without readiness by then: a not_ready event and notification with the last lines "
     "(the monitor runs on)"},
  {.name = "health_interval_ms", .kind = kFieldUint, .forms = WATCH,
   .slot = SLOT(health_interval_ms), .min = 100, .max = 3600000, .fallback = "0 (off)",
   .consumer = "monitor",
   .doc = "once ready, probe ready_tcp or ready_http this often; only changes are told"},
  {.name = "health_failures", .kind = kFieldUint, .forms = WATCH,
   .slot = SLOT(health_failures), .min = 1, .max = 100, .fallback = "3", .consumer = "monitor",
   .doc = "failed health probes in a row that make the monitor unhealthy"},
  {.name = "memory_limit", .kind = kFieldUint, .forms = ALL, .slot = SLOT(memory_limit), .min = 1,
   .max = INT64_MAX, .fallback = "none", .consumer = "proc",
   .doc = "bytes, at least 1 MiB: the cgroup's memory.max, else RLIMIT_AS"},
  {.name = "cpu_limit", .kind = kFieldNumber, .forms = ALL, .slot = SLOT(cpu_limit), .max = 4096,
   .fallback = "none", .consumer = "proc",
   .doc = "cores (above 0.001, at most the machine's): cgroup cpu.max, else a duty cycle"},
  {.name = "stdin", .kind = kFieldBytes, .forms = kFormRun, .by_form = true,
   .max_setting = "rpc.max_message_bytes", .fallback = "none", .consumer = "process_run",
   .doc = "bytes written to the child's stdin, which is then closed"},
  {.name = "timeout_s", .kind = kFieldUint, .forms = kFormRun, .by_form = true, .min = 1,
   .max = 3600, .fallback = "300", .consumer = "process_run", .doc = "runtime cap in seconds"},
  {.name = "stdout_lines", .kind = kFieldUint, .forms = kFormRun, .by_form = true, .max = 10000,
   .fallback = "100", .consumer = "process_run",
   .doc = "lines of each stream in the answer's summaries"},
  {.name = "background", .kind = kFieldBool, .forms = kFormRun, .by_form = true,
   .fallback = "false", .consumer = "process_run", .doc = "answer at once and notify when it ends"},
  {0},
};

/* The rows, less the terminator. */
#define MONITOR_FIELD_COUNT (sizeof monitor_fields / sizeof monitor_fields[0] - 1)

/* The longest argv entry. */
#define MONITOR_FIELD_ENTRY_MAX 65536

/* cpu_limit's lower bound: a number row's min is whole, so it is kept here. */
#define MONITOR_CPU_LIMIT_MIN 0.001

/* --- the request -------------------------------------------------------- */

void
start_request_free(StartRequest *req)
{
  argv_free(&req->argv);
  free(req->cwd);
  xstrv_free(req->env);
  free(req->label);
  free(req->description);
  xstrv_free(req->patterns);
  free(req->policy);
  free(req->stdin_data);
  free(req->group);
  free(req->source_file);
  free(req->source_ws);
  free(req->ready_log);
  free(req->ready_http);
  free(req->ready_status);
  memset(req, 0, sizeof *req);
}

void
start_request_copy(StartRequest *dst, const StartRequest *src)
{
  *dst = *src;
  dst->argv = (Argv)ARGV_INIT;
  argv_from(&dst->argv, (const char *const *)src->argv.argv, src->argv.argc);
  dst->cwd = src->cwd ? xstrdup(src->cwd) : NULL;
  dst->env = xstrv_dup((const char *const *)src->env);
  dst->label = src->label ? xstrdup(src->label) : NULL;
  dst->description = src->description ? xstrdup(src->description) : NULL;
  dst->patterns = xstrv_dup((const char *const *)src->patterns);
  if (dst->patterns == NULL)
    dst->patterns = xcalloc(1, sizeof *dst->patterns);
  dst->policy = src->policy ? xstrdup(src->policy) : NULL;
  dst->stdin_data = src->stdin_data ? xmemdupz(src->stdin_data, src->stdin_len) : NULL;
  dst->group = src->group ? xstrdup(src->group) : NULL;
  dst->source_file = src->source_file ? xstrdup(src->source_file) : NULL;
  dst->source_ws = src->source_ws ? xstrdup(src->source_ws) : NULL;
  dst->ready_log = src->ready_log ? xstrdup(src->ready_log) : NULL;
  dst->ready_http = src->ready_http ? xstrdup(src->ready_http) : NULL;
  dst->ready_status = src->ready_status ? xstrdup(src->ready_status) : NULL;
}

/* --- names -------------------------------------------------------------- */

const MonitorField *
monitor_field(const char *name)
{
  for (const MonitorField *f = monitor_fields; f->name; f++)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}

bool
monitor_fields_accepts(unsigned form, const char *name)
{
  for (const MonitorField *f = monitor_fields; f->name; f++)
    if ((f->forms & form) && strcmp(f->name, name) == 0)
      return true;
  return false;
}

const char *const *
monitor_fields_names(unsigned form, const char *extra)
{
  /* One list per form bit; the engine is single-threaded. */
  static const char *lists[3][MONITOR_FIELD_COUNT + 2];
  static bool built[3];
  int k = form == kFormStart ? 0 : form == kFormRun ? 1 : 2;
  if (!built[k]) {
    size_t n = 0;
    if (extra)
      lists[k][n++] = extra;
    for (const MonitorField *f = monitor_fields; f->name; f++)
      if (f->forms & form)
        lists[k][n++] = f->name;
    lists[k][n] = NULL;
    built[k] = true;
  }
  return lists[k];
}

/* --- reading ------------------------------------------------------------ */

/* What start_request_read holds between reading and the rules. */
typedef struct {
  char *command;
  char **argv;
  size_t argc;
  char *match_pattern;
  bool has_patterns;
  bool has_timeout;
} FieldScratch;

/* invalid_params with fmt's one %s replaced by the field's name. */
static int
monitor_fields_fail(const FieldSource *src, const char *key, VigilError *err, const char *fmt)
{
  char name[FIELD_NAME_MAX];
  src->name(src, key, name, sizeof name);
  return error_set(err, kErrInvalidParams, fmt, name);
}

/* The row's upper bound: its setting's value, or max. */
static uint64_t
monitor_field_max(const MonitorField *f, const VigilSettings *s)
{
  if (f->max_setting == NULL)
    return f->max;
  const SettingSpec *spec = settings_find(f->max_setting);
  return spec ? (uint64_t)settings_get(s, spec) : f->max;
}

/* The checks of one string value: non-empty, its length, and text. */
static int
monitor_fields_check_string(const FieldSource *src, const MonitorField *f, uint64_t max,
                            const char *s, VigilError *err)
{
  char name[FIELD_NAME_MAX];
  src->name(src, f->name, name, sizeof name);
  size_t len = strlen(s);
  if (f->nonempty && len == 0)
    return error_set(err, kErrInvalidParams, "%s must be a non-empty string, got \"\"", name);
  if (max > 0 && len > max)
    return error_set(err, kErrInvalidParams, "%s must be at most %" PRIu64 " bytes, got %zu",
                     name, max, len);
  size_t at = 0;
  Utf8Verdict v = f->kind == kFieldText ? utf8_check_text(s, len, &at) : kUtf8Text;
  if (v != kUtf8Text)
    return error_set(err, kErrInvalidParams,
                     "%s: must be UTF-8 text without control characters: %s at byte %zu", name,
                     utf8_verdict_name(v), at);
  return 0;
}

/* A list's entries: how many, and each one's length. */
static int
monitor_fields_check_list(const FieldSource *src, const MonitorField *f, char **list, size_t n,
                          VigilError *err)
{
  char name[FIELD_NAME_MAX];
  src->name(src, f->name, name, sizeof name);
  if (f->max > 0 && n > f->max)
    return error_set(err, kErrInvalidParams, "%s must have at most %" PRIu64 " entries, got %zu",
                     name, f->max, n);
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) > MONITOR_FIELD_ENTRY_MAX)
      return error_set(err, kErrInvalidParams, "%s: entry %zu is %zu bytes, over %d", name,
                       i + 1, strlen(list[i]), MONITOR_FIELD_ENTRY_MAX);
  return 0;
}

/* Reads one string row into *dst (freeing what was there). */
static int
monitor_fields_read_string(const FieldSource *src, const MonitorField *f,
                           const VigilSettings *s, char **dst, VigilError *err)
{
  char *v = NULL;
  int rc = src->string(src, f->name, &v, err);
  if (rc <= 0)
    return rc;
  if (monitor_fields_check_string(src, f, monitor_field_max(f, s), v, err) != 0) {
    free(v);
    return -1;
  }
  free(*dst);
  *dst = v;
  return 1;
}

/* Reads one row the table places by offset. */
static int
monitor_fields_read_slot(const FieldSource *src, const MonitorField *f, const VigilSettings *s,
                         void *slot, VigilError *err)
{
  switch (f->kind) {
  case kFieldString:
  case kFieldText:
    return monitor_fields_read_string(src, f, s, slot, err);
  case kFieldBool:
    return src->boolean(src, f->name, slot, err);
  case kFieldUint: {
    uint64_t v = 0;
    uint64_t max = monitor_field_max(f, s);
    char why[80] = "";
    if (f->max_setting)
      snprintf(why, sizeof why, " (%s)", f->max_setting);
    int rc = src->uint(src, f->name, f->min, max, why, &v, err);
    if (rc == 1)
      *(int64_t *)slot = (int64_t)v;
    return rc;
  }
  case kFieldNumber:
    return src->number(src, f->name, MONITOR_CPU_LIMIT_MIN, (double)f->max, slot, err);
  case kFieldChoice:
    return src->choice(src, f->name, f->choices, slot, err);
  case kFieldEnv:
    return src->env(src, f->name, (size_t)f->max, false, slot, err);
  default:
    return 0;
  }
}

/* A map field (source, ready) read as the env getter reads one, a number
 * allowed where a string is: each item's "K=V" cut in two in place (the key
 * items[i], its value after the key's end); name gets the field's name for
 * messages. Returns the getter's 1, 0 or -1. */
static int
monitor_fields_read_map(const FieldSource *src, const MonitorField *f, char ***items,
                        char name[FIELD_NAME_MAX], VigilError *err)
{
  int rc = src->env(src, f->name, (size_t)f->max, true, items, err);
  if (rc <= 0)
    return rc;
  src->name(src, f->name, name, FIELD_NAME_MAX);
  for (size_t i = 0; (*items)[i]; i++)
    *strchr((*items)[i], '=') = '\0';
  return rc;
}

/* source: a map of file (an absolute path) and from ("end", "start" or a
 * decimal byte offset), read as the env getter reads a map of strings. */
static int
monitor_fields_read_source(const FieldSource *src, const MonitorField *f, StartRequest *req,
                           VigilError *err)
{
  char **items = NULL;
  char name[FIELD_NAME_MAX];
  int rc = monitor_fields_read_map(src, f, &items, name, err);
  if (rc <= 0)
    return rc;
  const char *from = NULL;
  for (size_t i = 0; rc == 1 && items[i]; i++) {
    const char *v = items[i] + strlen(items[i]) + 1;
    char quoted[GATE_QUOTE_BUF];
    if (strcmp(items[i], "file") == 0 && v[0] != '\0' && strlen(v) <= 4096) {
      free(req->source_file);
      req->source_file = xstrdup(v);
    } else if (strcmp(items[i], "file") == 0) {
      rc = error_set(err, kErrInvalidParams, "%s.file must be a path of 1..4096 bytes, got %zu",
                     name, strlen(v));
    } else if (strcmp(items[i], "ws") == 0 && v[0] != '\0') {
      free(req->source_ws);
      req->source_ws = xstrdup(v);
    } else if (strcmp(items[i], "from") == 0) {
      from = v;
      char *end = NULL;
      if (strcmp(v, "end") == 0)
        req->source_from = kFileFromEnd;
      else if (strcmp(v, "start") == 0)
        req->source_from = kFileFromStart;
      else if (v[0] >= '0' && v[0] <= '9' && strlen(v) <= 19 &&
               (req->source_offset = strtoull(v, &end, 10), *end == '\0'))
        req->source_from = kFileFromOffset;
      else {
        gate_quote(quoted, v);
        rc = error_set(err, kErrInvalidParams, "%s.from must be \"end\", \"start\" or a byte "
                       "offset (decimal digits), got %s", name, quoted);
      }
    } else {
      gate_quote(quoted, items[i]);
      rc = error_set(err, kErrInvalidParams, "%s: unknown key %s (a source is {file, from} "
                     "or {ws})", name, quoted);
    }
  }
  xstrv_free(items);
  if (rc == 1 && (req->source_file == NULL) == (req->source_ws == NULL))
    rc = error_set(err, kErrInvalidParams, "%s must give exactly one of file and ws, got %s",
                   name, req->source_ws ? "both" : from ? "only from" : "neither");
  else if (rc == 1 && req->source_ws != NULL && from != NULL)
    rc = error_set(err, kErrInvalidParams, "%s.from goes with file, not with ws", name);
  return rc;
}

/* ready: {log: REGEX} | {tcp: PORT} | {http: URL, status: "200..399"},
 * the flat ready_* fields in one map (read after them: one form or the
 * other). The values' own bounds are the flat fields' (monitor_ready.c
 * checks them at start). */
static int
monitor_fields_read_ready(const FieldSource *src, const MonitorField *f, StartRequest *req,
                          VigilError *err)
{
  char **items = NULL;
  char name[FIELD_NAME_MAX];
  int rc = monitor_fields_read_map(src, f, &items, name, err);
  if (rc <= 0)
    return rc;
  if (req->ready_log != NULL || req->ready_tcp != 0 || req->ready_http != NULL ||
      req->ready_status != NULL) {
    xstrv_free(items);
    return error_set(err, kErrInvalidParams, "%s must not be given with ready_log, ready_tcp, "
                     "ready_http or ready_status (one form or the other)", name);
  }
  size_t kinds = 0;
  for (size_t i = 0; rc == 1 && items[i]; i++) {
    const char *v = items[i] + strlen(items[i]) + 1;
    char quoted[GATE_QUOTE_BUF];
    char *end = NULL;
    if (strcmp(items[i], "log") == 0 && v[0] != '\0') {
      free(req->ready_log);
      req->ready_log = xstrdup(v), kinds++;
    } else if (strcmp(items[i], "http") == 0 && v[0] != '\0' && strlen(v) <= 2048) {
      free(req->ready_http);
      req->ready_http = xstrdup(v), kinds++;
    } else if (strcmp(items[i], "status") == 0 && v[0] != '\0' && strlen(v) <= 16) {
      free(req->ready_status);
      req->ready_status = xstrdup(v);
    } else if (strcmp(items[i], "tcp") == 0 && v[0] >= '0' && v[0] <= '9' && strlen(v) <= 5 &&
               (req->ready_tcp = (int64_t)strtoul(v, &end, 10), *end == '\0') &&
               req->ready_tcp >= 1 && req->ready_tcp <= 65535) {
      kinds++;
    } else if (strcmp(items[i], "log") == 0 || strcmp(items[i], "http") == 0 ||
               strcmp(items[i], "status") == 0 || strcmp(items[i], "tcp") == 0) {
      gate_quote(quoted, v);
      req->ready_tcp = 0;
      rc = error_set(err, kErrInvalidParams, "%s.%s must be %s, got %s", name, items[i],
                     strcmp(items[i], "tcp") == 0      ? "a port of 1..65535"
                     : strcmp(items[i], "http") == 0   ? "a URL of 1..2048 bytes"
                     : strcmp(items[i], "status") == 0 ? "a status or a range (\"200..399\")"
                                                       : "a non-empty regex",
                     quoted);
    } else {
      gate_quote(quoted, items[i]);
      rc = error_set(err, kErrInvalidParams, "%s: unknown key %s (ready is {log}, {tcp} or "
                     "{http, status})", name, quoted);
    }
  }
  xstrv_free(items);
  if (rc == 1 && kinds != 1)
    rc = error_set(err, kErrInvalidParams, "%s must give exactly one of log, tcp and http, got %zu",
                   name, kinds);
  else if (rc == 1 && req->ready_status != NULL && req->ready_http == NULL)
    rc = error_set(err, kErrInvalidParams, "%s.status goes with http", name);
  return rc;
}

/* A file source runs nothing: what shapes a process is refused with it. */
static int
monitor_fields_settle_source(const FieldSource *src, StartRequest *req, FieldScratch *sc,
                             VigilError *err)
{
  if (sc->command != NULL || sc->argv != NULL)
    return error_set(err, kErrInvalidParams,
                     "%s must give exactly one of command, argv and source, got source and %s",
                     src->base, sc->command ? "command" : "argv");
  const char *process_only = req->shell ? "shell" : req->cwd ? "cwd"
                             : req->env ? "env" : req->line_buffered_given ? "line_buffered"
                             : req->restart != 0 ? "restart" : req->memory_limit ? "memory_limit"
                             : req->cpu_limit > 0 ? "cpu_limit" : NULL;
  if (process_only != NULL)
    return monitor_fields_fail(src, process_only, err, "%s applies to a command, not to a "
                               "source (source)");
  return 0;
}

/* Reads one of the rows that shape another field into the scratch. */
static int
monitor_fields_read_special(const FieldSource *src, const MonitorField *f,
                            const VigilSettings *s, StartRequest *req, FieldScratch *sc,
                            VigilError *err)
{
  if (strcmp(f->name, "command") == 0)
    return monitor_fields_read_string(src, f, s, &sc->command, err);
  if (strcmp(f->name, "match_pattern") == 0)
    return monitor_fields_read_string(src, f, s, &sc->match_pattern, err);
  if (strcmp(f->name, "source") == 0)
    return monitor_fields_read_source(src, f, req, err);
  if (strcmp(f->name, "ready") == 0)
    return monitor_fields_read_ready(src, f, req, err);
  char **list = NULL;
  size_t n = 0;
  int rc = src->strings(src, f->name, &list, &n, err);
  if (rc == 1 && strcmp(f->name, "argv") == 0) {
    sc->argv = list, sc->argc = n;
    return monitor_fields_check_list(src, f, list, n, err);
  }
  if (rc == 1) {
    xstrv_free(req->patterns);
    req->patterns = list, req->npatterns = n;
    sc->has_patterns = true;
    return 1;
  }
  xstrv_free(list);
  return rc;
}

/* command | argv (exactly one), shell only with command; the command is
 * split, or handed whole to /bin/sh -c. */
static int
monitor_fields_settle_command(const FieldSource *src, StartRequest *req, FieldScratch *sc,
                              VigilError *err)
{
  if ((sc->command != NULL) == (sc->argv != NULL))
    return error_set(err, kErrInvalidParams,
                     "%s must give exactly one of command and argv, got %s", src->base,
                     sc->argv ? "both" : "neither");
  if (sc->argv) {
    if (req->shell)
      return monitor_fields_fail(src, "shell", err, "%s needs command, not argv");
    if (sc->argc == 0)
      return monitor_fields_fail(src, "argv", err, "%s must have at least one entry");
    if (sc->argv[0][0] == '\0')
      return monitor_fields_fail(src, "argv", err,
                                 "%s: its first entry (the program) must not be empty");
    argv_from(&req->argv, (const char *const *)sc->argv, sc->argc);
    return 0;
  }
  if (req->shell) {
    gate_shell_argv(sc->command, &req->argv);
    return 0;
  }
  char name[FIELD_NAME_MAX];
  src->name(src, "command", name, sizeof name);
  return gate_split(sc->command, name, &req->argv, err);
}

/* The rules that involve several fields. */
static int
monitor_fields_settle(const FieldSource *src, StartRequest *req, FieldScratch *sc,
                      VigilError *err)
{
  if (req->source_file != NULL || req->source_ws != NULL
          ? monitor_fields_settle_source(src, req, sc, err) != 0
                              : monitor_fields_settle_command(src, req, sc, err) != 0)
    return -1;
  if (sc->match_pattern) {
    if (sc->has_patterns)
      return error_set(err, kErrInvalidParams,
                       "%s must give at most one of patterns and match_pattern, got both",
                       src->base);
    xstrv_free(req->patterns);
    req->patterns = xcalloc(2, sizeof *req->patterns);
    req->patterns[0] = sc->match_pattern;
    req->npatterns = 1;
    sc->match_pattern = NULL;
  }
  if (req->persistent && sc->has_timeout)
    return error_set(err, kErrInvalidParams,
                     "%s must give at most one of timeout_ms and persistent, got both",
                     src->base);
  req->patterns_given = sc->has_patterns || req->npatterns > 0;
  if (req->patterns == NULL)
    req->patterns = xcalloc(1, sizeof *req->patterns);
  return 0;
}

int
start_request_read(const FieldSource *src, unsigned form, const VigilSettings *settings,
                   StartRequest *req, VigilError *err)
{
  FieldScratch sc = {NULL, NULL, 0, NULL, false, false};
  int rc = 0;
  for (size_t i = 0; rc >= 0 && monitor_fields[i].name; i++) {
    const MonitorField *f = &monitor_fields[i];
    if (!(f->forms & form) || f->by_form)
      continue;
    if (f->slot == 0)
      rc = monitor_fields_read_special(src, f, settings, req, &sc, err);
    else
      rc = monitor_fields_read_slot(src, f, settings, (char *)req + f->slot - 1, err);
    if (rc == 1 && strcmp(f->name, "timeout_ms") == 0)
      sc.has_timeout = true;
    if (rc == 1 && strcmp(f->name, "incidents") == 0)
      req->incidents_given = true;
    if (rc == 1 && strcmp(f->name, "envelope") == 0)
      req->envelope_given = true;
    if (rc == 1 && strcmp(f->name, "line_buffered") == 0)
      req->line_buffered_given = true;
    if (rc == 1 && strcmp(f->name, "restart_backoff_ms") == 0)
      req->restart_backoff_given = true;
  }
  if (rc >= 0)
    rc = monitor_fields_settle(src, req, &sc, err);
  free(sc.command);
  xstrv_free(sc.argv);
  free(sc.match_pattern);
  return rc < 0 ? -1 : 0;
}

/* --- the docs ----------------------------------------------------------- */

static const char *const monitor_field_kind_names[] = {
  "string", "text", "[string]", "bool", "uint", "number", "choice", "{name: value}", "bytes",
};

void
monitor_fields_render_markdown(StrBuf *out)
{
  strbuf_puts(out, "# A monitor's start fields\n\n"
                   "Generated from the table in core/engine/monitor_fields.c (a unit test checks that "
                   "this file is what it renders).\nWhich form accepts a field: **S** "
                   "monitor_start, **R** process_run, **C** an entry of the config's "
                   "`monitors`.\n\n"
                   "| field | type | S | R | C | bound | default | consumed by | meaning |\n"
                   "|---|---|---|---|---|---|---|---|---|\n");
  for (const MonitorField *f = monitor_fields; f->name; f++) {
    strbuf_printf(out, "| `%s` | %s | %s | %s | %s | ", f->name, monitor_field_kind_names[f->kind],
                  f->forms & kFormStart ? "S" : "", f->forms & kFormRun ? "R" : "",
                  f->forms & kFormConfig ? "C" : "");
    if (f->kind == kFieldChoice) {
      for (size_t i = 0; f->choices[i]; i++)
        strbuf_printf(out, "%s`\"%s\"`", i ? " / " : "", f->choices[i]);
    } else if (f->kind == kFieldUint || f->kind == kFieldNumber) {
      if (f->kind == kFieldNumber)
        strbuf_printf(out, "%g", MONITOR_CPU_LIMIT_MIN);
      else
        strbuf_printf(out, "%" PRIu64, f->min);
      if (f->max_setting)
        strbuf_printf(out, "..`%s`", f->max_setting);
      else
        strbuf_printf(out, "..%" PRIu64, f->max);
    } else if (f->max_setting) {
      strbuf_printf(out, "at most `%s`", f->max_setting);
    } else if (f->nonempty && f->max == 0) {
      strbuf_puts(out, "non-empty");
    } else if (f->max > 0) {
      strbuf_printf(out, "%s%" PRIu64 " %s", f->nonempty ? "1.." : "at most ", f->max,
                    f->kind == kFieldStrings || f->kind == kFieldEnv ? "entries" : "bytes");
    }
    strbuf_printf(out, " | %s | %s | %s |\n", f->fallback, f->consumer, f->doc);
  }
}
