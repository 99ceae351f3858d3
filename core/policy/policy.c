/*
 * The Lua policy host (see policy.h for the API): finds a policy file by
 * name, loads it into a sandbox of its own (luasandbox.h), and keeps the
 * loaded ones in a set from which monitors take theirs by name, turning
 * everything that can go wrong in Lua into a VigilError. This file is the
 * set and the loading; what a state holds besides the sandbox, what a
 * policy is handed and how its functions are called are the other files
 * of the host (policy_internal.h lists them).
 *
 * Loading runs the file inside luasandbox_run_file, after policy__setup has
 * given the state its `vigil` module and require, then checks the table it
 * returned (raw fields, so no metamethod runs) and keeps its functions in
 * the registry. A policy that fails to load is not kept: asking for it
 * again tries again, so fixing the file is enough.
 */
#include "policy/policy_internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/memory.h"
#include "base/textfmt.h"

/* See policy_internal.h: indexed by kPolicyFormat... */
const char *const policy__fn_names[kPolicyFnCount] = {"format", "route", "gate"};

/* --- helpers of every file of the host ----------------------------------- */

/* See policy_internal.h. */
void
policy__quote(StrBuf *out, const char *s, size_t len)
{
  bool cut = len > POLICY_QUOTE_MAX;
  textfmt_escape(out, s, cut ? POLICY_QUOTE_MAX : len);
  if (cut)
    strbuf_puts(out, "...");
}

/* See policy_internal.h. */
bool
policy__join(char *out, size_t size, const char *dir, const char *rel)
{
  size_t dl = strlen(dir);
  bool slash = dl > 0 && dir[dl - 1] == '/';
  int n = snprintf(out, size, "%s%s%s", dir, slash ? "" : "/", rel);
  return n >= 0 && (size_t)n < size;
}

/* See policy_internal.h. */
bool
policy__is_file(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* See policy_internal.h. */
const char *
policy__inner(const VigilError *e)
{
  const char *name = error_name(e->code);
  size_t len = strlen(name);
  if (strncmp(e->msg, name, len) == 0 && e->msg[len] == ':' && e->msg[len + 1] == ' ')
    return e->msg + len + 2;
  return e->msg;
}

/* See policy_internal.h. */
void
policy__push_scratch(lua_State *L, Policy *p)
{
  lua_pushlstring(L, p->scratch.data ? p->scratch.data : "", p->scratch.len);
  if (p->scratch.cap > POLICY_SCRATCH_KEEP)
    strbuf_free(&p->scratch);
  else
    strbuf_reset(&p->scratch);
}

/* See policy_internal.h. The work is charged at a quarter instruction a
 * byte, about what escaping costs next to a VM instruction. */
void
policy__push_filtered(lua_State *L, Policy *p, const char *text, size_t len,
                     void (*filter)(StrBuf *, const char *, size_t))
{
  luasandbox_charge(L, len / 4);
  strbuf_reset(&p->scratch);
  filter(&p->scratch, text, len);
  policy__push_scratch(L, p);
}

/* --- loading ------------------------------------------------------------- */

/* Whether name is a policy name: 1..64 bytes of [a-z0-9_-]. */
static bool
policy_name_ok(const char *name)
{
  size_t len = strlen(name);
  if (len == 0 || len > POLICY_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* Runs inside luasandbox_call with the table a policy file returned and the
 * Policy (light userdata): checks format/route/gate (raw fields, so no
 * metamethod runs) and keeps them and the table in the registry. Returns
 * nothing when they are fine, else a message. */
static int
policy_collect(lua_State *L)
{
  Policy *p = lua_touserdata(L, 2);
  for (int i = 0; i < kPolicyFnCount; i++) {
    lua_pushstring(L, policy__fn_names[i]);
    int t = lua_rawget(L, 1);
    if (t == LUA_TFUNCTION) {
      p->fn[i] = luaL_ref(L, LUA_REGISTRYINDEX);
    } else if (t == LUA_TNIL) {
      lua_pop(L, 1);
    } else {
      lua_pushfstring(L, "field '%s' is a %s, not a function (format, route and gate are "
                         "functions or absent)",
                      policy__fn_names[i], luaL_typename(L, -1));
      return 1;
    }
  }
  lua_pushvalue(L, 1);
  p->table_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* Frees a policy and its state; NULL is ignored. */
static void
policy_free(Policy *p)
{
  if (p == NULL)
    return;
  policy__log_end(p, true);
  luasandbox_free(p->sb);
  free(p->name);
  free(p->path);
  strbuf_free(&p->scratch);
  free(p);
}

/* Loads policy `name` from path into a new state. NULL with err
 * (invalid_params, "policy \"NAME\": ...") on failure. */
static Policy *
policy_load(PolicySet *ps, const char *name, const char *path, VigilError *err)
{
  Policy *p = xcalloc(1, sizeof *p);
  p->set = ps;
  p->name = xstrdup(name);
  p->path = xstrdup(path);
  p->table_ref = LUA_NOREF;
  for (int i = 0; i < kPolicyFnCount; i++)
    p->fn[i] = LUA_NOREF;
  p->sb = luasandbox_new(&ps->limits);
  if (p->sb == NULL) {
    error_set(err, kErrInvalidParams,
              "policy \"%s\": a memory cap of %zu bytes is too small for a Lua state", name,
              ps->limits.memory_max);
    policy_free(p);
    return NULL;
  }
  lua_State *L = luasandbox_state(p->sb);
  VigilError local = VIGIL_ERROR_INIT;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 4)) {
    error_set(err, kErrInvalidParams, "policy \"%s\": no room on the Lua stack", name);
    policy_free(p);
    return NULL;
  }
  lua_pushcfunction(L, policy__setup);
  lua_pushlightuserdata(L, p);
  policy__log_begin(p);
  int rc = luasandbox_call(p->sb, 1, 0, &local);
  if (rc == 0)
    rc = luasandbox_run_file(p->sb, path, POLICY_FILE_MAX, 1, &local);
  policy__log_end(p, false);
  if (rc != 0) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s", name, policy__inner(&local));
    policy_free(p);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TTABLE) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s: returns a %s, not a table", name,
              path, luaL_typename(L, -1));
    policy_free(p);
    return NULL;
  }
  lua_pushcfunction(L, policy_collect);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, p);
  if (luasandbox_call(p->sb, 2, 1, &local) != 0) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s", name, policy__inner(&local));
    policy_free(p);
    return NULL;
  }
  if (lua_type(L, -1) == LUA_TSTRING) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s: %s", name, path, lua_tostring(L, -1));
    policy_free(p);
    return NULL;
  }
  lua_settop(L, top);
  return p;
}

/* --- the set ------------------------------------------------------------- */

static Policy *policyset_add(PolicySet *ps, const char *name, const char *path,
                             VigilError *err);

/* See policy.h. */
PolicySet *
policyset_new(const PolicyOptions *opts)
{
  PolicySet *ps = xcalloc(1, sizeof *ps);
  ps->lua_dir = opts->lua_dir ? xstrdup(opts->lua_dir) : NULL;
  ps->bundled_dir = opts->bundled_dir ? xstrdup(opts->bundled_dir) : NULL;
  ps->nplugin_paths = opts->nplugin_paths;
  ps->plugin_paths = xcalloc(opts->nplugin_paths + 1, sizeof *ps->plugin_paths);
  for (size_t i = 0; i < opts->nplugin_paths; i++)
    ps->plugin_paths[i] = xstrdup(opts->plugin_paths[i]);
  ps->limits.memory_max = opts->limits.memory_max ? opts->limits.memory_max
                                                  : POLICY_DEFAULT_MEMORY;
  ps->limits.instruction_max = opts->limits.instruction_max ? opts->limits.instruction_max
                                                            : POLICY_DEFAULT_INSTRUCTIONS;
  ps->limits.time_max_ms = opts->limits.time_max_ms; /* 0: the sandbox's derived default */
  ps->log_per_s = opts->log_lines_per_s ? opts->log_lines_per_s : POLICY_DEFAULT_LOG_PER_S;
  ps->clock_ms = opts->clock_ms ? opts->clock_ms : clock_mono_ms;
  ps->log_per_call = opts->log_lines_per_call ? opts->log_lines_per_call
                                              : POLICY_DEFAULT_LOG_PER_CALL;
  return ps;
}

/* See policy.h. */
void
policyset_free(PolicySet *ps)
{
  if (ps == NULL)
    return;
  for (size_t i = 0; i < ps->npolicies; i++)
    policy_free(ps->policies[i]);
  free(ps->policies);
  free(ps->names);
  for (size_t i = 0; i < ps->nplugin_paths; i++)
    free(ps->plugin_paths[i]);
  free(ps->plugin_paths);
  free(ps->lua_dir);
  free(ps->bundled_dir);
  free(ps);
}

/* See policy.h. */
Policy *
policyset_get(PolicySet *ps, const char *name, VigilError *err)
{
  if (name == NULL || !policy_name_ok(name)) {
    StrBuf q = STRBUF_INIT;
    if (name)
      policy__quote(&q, name, strlen(name));
    error_set(err, kErrInvalidParams,
              "policy: bad policy name \"%s\" (want 1..%d bytes of [a-z0-9_-])",
              strbuf_cstr(&q), POLICY_NAME_MAX);
    strbuf_free(&q);
    return NULL;
  }
  for (size_t i = 0; i < ps->npolicies; i++)
    if (strcmp(ps->policies[i]->name, name) == 0)
      return ps->policies[i];

  char rel[POLICY_NAME_MAX + 8];
  snprintf(rel, sizeof rel, "%s.lua", name);
  const char *dirs[2];
  size_t ndirs = 0;
  if (ps->bundled_dir)
    dirs[ndirs++] = ps->bundled_dir;
  char path[4096];
  bool found = false;
  for (size_t i = 0; !found && i < ndirs + ps->nplugin_paths; i++) {
    const char *dir = i < ndirs ? dirs[i] : ps->plugin_paths[i - ndirs];
    found = policy__join(path, sizeof path, dir, rel) && policy__is_file(path);
  }
  if (!found) {
    StrBuf looked = STRBUF_INIT;
    for (size_t i = 0; i < ndirs + ps->nplugin_paths; i++) {
      if (i > 0)
        strbuf_puts(&looked, ", ");
      strbuf_puts(&looked, i < ndirs ? dirs[i] : ps->plugin_paths[i - ndirs]);
    }
    error_set(err, kErrInvalidParams, "policy: unknown policy \"%s\" (looked in %s)", name,
              looked.len ? strbuf_cstr(&looked) : "no directory");
    strbuf_free(&looked);
    return NULL;
  }

  return policyset_add(ps, name, path, err);
}

/* See policy.h. */
Policy *
policyset_get_file(PolicySet *ps, const char *path, VigilError *err)
{
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  char name[POLICY_NAME_MAX + 1];
  if (len < 5 || strcmp(base + len - 4, ".lua") != 0 || len - 4 > POLICY_NAME_MAX) {
    StrBuf q = STRBUF_INIT;
    policy__quote(&q, base, len);
    error_set(err, kErrInvalidParams,
              "policy: file \"%s\" is not NAME.lua with NAME 1..%d bytes of [a-z0-9_-]",
              strbuf_cstr(&q), POLICY_NAME_MAX);
    strbuf_free(&q);
    return NULL;
  }
  memcpy(name, base, len - 4);
  name[len - 4] = '\0';
  if (!policy_name_ok(name))
    return policyset_get(ps, name, err); /* the bad name's message */
  for (size_t i = 0; i < ps->npolicies; i++) {
    if (strcmp(ps->policies[i]->name, name) == 0) {
      error_set(err, kErrInvalidParams, "policy: \"%s\" is loaded already", name);
      return NULL;
    }
  }
  if (!policy__is_file(path)) {
    error_set(err, kErrInvalidParams, "policy: %s: no such file", path);
    return NULL;
  }
  return policyset_add(ps, name, path, err);
}

/* Loads the policy called name from path and adds it to the set. */
static Policy *
policyset_add(PolicySet *ps, const char *name, const char *path, VigilError *err)
{
  Policy *p = policy_load(ps, name, path, err);
  if (p == NULL)
    return NULL;
  if (ps->npolicies == ps->cap) {
    ps->cap = ps->cap ? 2 * ps->cap : 4;
    ps->policies = xrealloc(ps->policies, ps->cap * sizeof *ps->policies);
    ps->names = xrealloc(ps->names, ps->cap * sizeof *ps->names);
  }
  ps->policies[ps->npolicies] = p;
  ps->names[ps->npolicies] = p->name;
  ps->npolicies++;
  return p;
}

/* See policy.h. The array stays owned by ps and valid until the next
 * policyset_get or policyset_free. */
size_t
policyset_names(const PolicySet *ps, const char ***names)
{
  *names = ps->names;
  return ps->npolicies;
}

const char *
policy_name(const Policy *p)
{
  return p->name;
}

const char *
policy_path(const Policy *p)
{
  return p->path;
}

bool
policy_has_format(const Policy *p)
{
  return p->fn[kPolicyFormat] != LUA_NOREF;
}

bool
policy_has_route(const Policy *p)
{
  return p->fn[kPolicyRoute] != LUA_NOREF;
}

bool
policy_has_gate(const Policy *p)
{
  return p->fn[kPolicyGate] != LUA_NOREF;
}
