/*
 * Lua policies: how a notification is worded (format), how it is delivered
 * (route), and which commands may start (gate). A policy is a Lua file that
 * returns a table of optional functions:
 *
 *   format(n)   -> string             the body of the envelope for notification n
 *   route(n)    -> "idle" | "live_safe" | "drop"
 *   gate(req)   -> true | false, reason
 *
 * `n` is a read-only table shaped like the wire notification (type,
 * monitor_id, label, mode, batch, lines = {{seq, stream, text, pattern,
 * truncated}, ...}, suppressed, state, exit_code, signal, duration_ms,
 * reason, dropped, at); `req` is {program, argv, shell, cwd, session, label,
 * env = {NAME = value, ...}}.
 * Both are read-only (a write raises "notification is read-only"), and the
 * untrusted text in `n` (each line's text, the label, the reason) is already
 * escaped with textfmt_escape: no raw control character, ANSI escape or
 * bidi control reaches a policy at all.
 *
 * Each policy lives in its own sandboxed Lua state (luasandbox.h: base without
 * dofile/loadfile/bytecode, string, table, math, utf8), with a memory cap per
 * state and an instruction budget per call, plus:
 *   - `require`, limited to the Lua modules vigil ships (lua/, e.g.
 *     require "vigil.envelope") and the plugin paths, text only;
 *   - a `vigil` module: vigil.nonce(), vigil.escape(text), vigil.time(),
 *     vigil.log(level, msg), the last rate-limited per policy (lines per
 *     call and per second; the rest dropped, counted and summed up).
 * A call that errors, loops, recurses without end or runs out of memory is
 * cut off and reported (message with traceback); the caller then uses the
 * built-in C envelope for that notification and sends a policy_error. Lua is
 * called per notification, never per line.
 *
 * Names: a policy is named by its file name without ".lua" ([a-z0-9_-],
 * 1..64 bytes) and found in the bundled plugins/ directory first, then in
 * each of the config's plugin_paths in order.
 */
#ifndef VIGIL_POLICY_H
#define VIGIL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "policy/luasandbox.h"
#include "spec/monitor_defs.h"
#include "pipeline/notification.h"
#include "base/strbuf.h"

typedef struct Policy Policy;
typedef struct PolicySet PolicySet;

typedef struct {
  const char *lua_dir;            /* vigil's own Lua modules (lua/) */
  const char *bundled_dir;        /* the bundled policies (plugins/) */
  const char *const *plugin_paths; /* the user's directories, searched after bundled_dir */
  size_t nplugin_paths;
  LuaSandboxLimits limits;        /* per policy state: memory cap, budget per call */
  uint32_t log_lines_per_s;       /* vigil.log lines per policy per second */
  uint32_t log_lines_per_call;    /* and per call (or load) */
  uint64_t (*clock_ms)(void);     /* what vigil.log's rate limit reads the time from
                                     (ms of a monotonic clock); NULL: CLOCK_MONOTONIC.
                                     Tests give a fake one, as ratelimit.h takes its
                                     time from the caller */
} PolicyOptions;

/* Defaults: 16 MiB per state, 1,000,000 instructions per call, and the
 * defaults of log.policy_lines_per_s and log.policy_lines_per_call. */
#define POLICY_DEFAULT_MEMORY (16u << 20)
#define POLICY_DEFAULT_INSTRUCTIONS 1000000u
#define POLICY_DEFAULT_LOG_PER_S 100u
#define POLICY_DEFAULT_LOG_PER_CALL 20u

/* A start request as gate(req) sees it. */
typedef struct {
  const char *program;            /* argv[0] */
  const char *const *argv;        /* NULL-terminated */
  bool shell;
  const char *cwd;                /* may be NULL */
  const char *session;
  const char *label;              /* may be NULL */
  const char *const *env;         /* "K=V" the start adds, NULL-terminated; may be NULL */
} PolicyGateRequest;

/* A set of loaded policies, from which monitors take theirs by name. The
 * options are copied. Nothing is loaded until policyset_get asks. */
PolicySet *policyset_new(const PolicyOptions *opts);
void policyset_free(PolicySet *ps);

/* The policy called `name`, loading it on first use. Errors (invalid_params,
 * naming it): a bad name, no such file in any search directory ("policy:
 * unknown policy \"x\" (looked in plugins/, /etc/vigil/policies)"), a syntax
 * or runtime error while loading (file and line), a file that does not return
 * a table, or a table field among format/route/gate that is not a function. */
Policy *policyset_get(PolicySet *ps, const char *name, VigilError *err);

/* The policy in the file at path, loaded as policyset_get loads one (the
 * same sandbox, limits and checks) under the name its file name gives
 * ("brief.lua" -> brief), whatever directory it is in; policyset_get finds
 * it by that name afterwards. For `vigil policy try` (policytry.h), which
 * tries a file before it is installed. Errors (invalid_params): a file name
 * that is not NAME.lua with a good name, a name loaded already, no such
 * file, and every error of loading. */
Policy *policyset_get_file(PolicySet *ps, const char *path, VigilError *err);

/* The names loaded so far, in load order (for config_reload's answer). */
size_t policyset_names(const PolicySet *ps, const char ***names);

const char *policy_name(const Policy *p);
const char *policy_path(const Policy *p);
bool policy_has_format(const Policy *p);
bool policy_has_route(const Policy *p);
bool policy_has_gate(const Policy *p);

/* Calls format(n). On success appends the returned string to body and
 * returns 0; returns 1 (nothing appended) when the policy has no format;
 * -1 with err (internal, "policy xml: format: <message and traceback>")
 * when the call failed or did not return a string. */
int policy_format(Policy *p, const Notification *n, StrBuf *body, VigilError *err);

/* Calls route(n): 0 with *mode / *drop set from "idle", "live_safe" or
 * "drop"; 1 when there is no route (nothing changed); -1 with err on failure
 * or any other return value. */
int policy_route(Policy *p, const Notification *n, DeliveryMode *mode, bool *drop,
                 VigilError *err);

/* Calls gate(req): 0 with *allow and, when denied, *reason (owned, may be
 * NULL); 1 when there is no gate; -1 with err on failure. */
int policy_gate(Policy *p, const PolicyGateRequest *req, bool *allow, char **reason,
                VigilError *err);

/* One of the examples a policy carries in its table's `examples` field
 * (docs/policies.md section 15), for `vigil policy test` (policytry.h). */
typedef struct {
  char *name;              /* its `name`, else "example N" */
  char *sample;            /* a sample's name (policysample.h), or NULL */
  char *notification;      /* its `notification` table packed as msgpack, or NULL */
  size_t notification_len;
  char *mode;              /* the monitor's mode to give it, or NULL */
  char *route;             /* the mode route must choose ("drop" too), or NULL */
  char **must;             /* substrings the text must hold */
  size_t nmust;
  char **must_not;         /* and must not */
  size_t nmust_not;
  char *error;             /* what is wrong with the example's shape, or NULL */
} PolicyExample;

/* Reads p's examples, in order (none when it has no `examples` field):
 * 0 with *out (free with policy_examples_free) and *n; -1 with err
 * (invalid_params) when `examples` is not a table, or reading it passed a
 * sandbox limit. An example that is badly shaped (an unknown key, a value
 * of the wrong type, a function in its notification, both or neither of
 * sample and notification) is returned with `error` set. */
int policy_examples(Policy *p, PolicyExample **out, size_t *n, VigilError *err);
void policy_examples_free(PolicyExample *ex, size_t n);

/* Calls cut off so far (errors, budget, memory), for api_info. */
uint64_t policy_failures(const Policy *p);

/* vigil.log lines dropped by the rate limit, by every policy since start
 * (api_info counters.policy_log_lines_dropped). */
uint64_t policy_log_lines_dropped(void);

#endif
