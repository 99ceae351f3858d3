/*
 * The inside of the policy host, shared by its files and by nothing else
 * (callers include policy.h): what a Policy and a PolicySet hold, the
 * bounds the host applies, and the helpers more than one of its files uses.
 * The host is four files, one concept each:
 *   policy.c       the set: names, finding and loading a policy file;
 *   policy_lib.c   what a policy's state holds besides the sandbox: the
 *                  `vigil` module (and vigil.log's rate limit) and require;
 *   policy_view.c  what a policy is handed: a notification or a start
 *                  request as a read-only Lua table;
 *   policy_call.c  calling format, route and gate, and checking what they
 *                  return.
 */
#ifndef VIGIL_POLICY_INTERNAL_H
#define VIGIL_POLICY_INTERNAL_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "policy/luasandbox.h"
#include "policy/policy.h"
#include "base/strbuf.h"

/* Largest policy or module file read. */
#define POLICY_FILE_MAX (1u << 20)
/* Longest policy name, and longest module name given to require. */
#define POLICY_NAME_MAX 64
#define POLICY_MODULE_NAME_MAX 128
/* A gate's reason and a vigil.log message are cut to these many bytes. */
#define POLICY_REASON_MAX 512
#define POLICY_LOG_MAX 1024
/* Longest piece of a bad value (a name, a route) quoted in a message. */
#define POLICY_QUOTE_MAX 64
/* A scratch buffer that grew past this is given back after use. */
#define POLICY_SCRATCH_KEEP (64u << 10)
/* The least time between two "vigil.log lines dropped" lines of a policy. */
#define POLICY_LOG_SUMMARY_MS 10000u

/* The three functions a policy may define, indexes of Policy.fn. */
enum { kPolicyFormat = 0, kPolicyRoute, kPolicyGate, kPolicyFnCount };
extern const char *const policy__fn_names[kPolicyFnCount];

struct Policy {
  PolicySet *set;
  char *name;
  char *path;
  LuaSandbox *sb;
  int table_ref;             /* the returned table, kept in the registry */
  int fn[kPolicyFnCount];    /* registry refs of the functions, LUA_NOREF when absent */
  uint64_t failures;
  /* Text built in C for Lua (escapes, times). Owned here rather than by the
   * C function, so an error raised while pushing it cannot leak it. */
  StrBuf scratch;
  /* vigil.log's rate limit (policy_lib.c). */
  uint64_t log_window_ms;    /* start of the current one-second window */
  uint32_t log_in_window;    /* lines written in it */
  uint32_t log_in_call;      /* lines written in the current call or load */
  uint64_t log_untold;       /* dropped and not yet summed up in the log */
  uint64_t log_told_ms;      /* when the last summary was written; 0: never */
};

struct PolicySet {
  char *lua_dir;             /* may be NULL */
  char *bundled_dir;         /* may be NULL */
  char **plugin_paths;
  size_t nplugin_paths;
  LuaSandboxLimits limits;   /* zeros already replaced by the defaults */
  uint32_t log_per_s;        /* vigil.log's rate limit, likewise */
  uint32_t log_per_call;
  uint64_t (*clock_ms)(void); /* the rate limit's clock (never NULL) */
  Policy **policies;         /* in load order */
  const char **names;        /* their names, for policyset_names */
  size_t npolicies;
  size_t cap;
};

/* --- policy.c: helpers of every file ------------------------------------ */

/* Appends s (len bytes) to out escaped and cut to POLICY_QUOTE_MAX bytes,
 * for quoting a bad value in a message. */
void policy__quote(StrBuf *out, const char *s, size_t len);

/* Writes dir "/" rel into out (size bytes); false when it does not fit. */
bool policy__join(char *out, size_t size, const char *dir, const char *rel);

/* Whether path is a regular file (following links). */
bool policy__is_file(const char *path);

/* The message of a sandbox error without its "code: " prefix. */
const char *policy__inner(const VigilError *e);

/* Pushes the contents of p->scratch and gives back a scratch that grew
 * large. May raise a memory error, after which scratch is still owned by p. */
void policy__push_scratch(lua_State *L, Policy *p);

/* Pushes text passed through filter (textfmt_escape or textfmt_sanitize),
 * charging the work to the running call. */
void policy__push_filtered(lua_State *L, Policy *p, const char *text, size_t len,
                          void (*filter)(StrBuf *, const char *, size_t));

/* --- policy_lib.c ------------------------------------------------------- */

/* Sets up a new state for policy p (argument 1, light userdata): the vigil
 * module, require and its tables. Runs inside luasandbox_call. */
int policy__setup(lua_State *L);

/* Start and end the per-call count of vigil.log lines of a call or load;
 * the end sums up the lines dropped so far in one log line, at most every
 * POLICY_LOG_SUMMARY_MS unless `force` (the policy is being freed). */
void policy__log_begin(Policy *p);
void policy__log_end(Policy *p, bool force);

/* --- policy_view.c ------------------------------------------------------ */

/* Push the read-only table n of a notification (shaped as on the wire, its
 * untrusted text escaped) and req of a start request. May raise (memory,
 * budget): call inside luasandbox_call. */
void policy__push_notification(lua_State *L, Policy *p, const Notification *n);
void policy__push_request(lua_State *L, const PolicyGateRequest *req);

#endif
