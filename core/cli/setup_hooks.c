/*
 * The MCP entry, the hooks and list entries of the JSON harnesses (see
 * setup_hooks.h).
 */
#include "cli/setup_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_client.h"

int
setup_jf_open(SetupJsonFile *f, SetupPlan *plan, const char *path, const SetupContext *ctx,
              StrBuf *err)
{
  memset(f, 0, sizeof *f);
  bool user = ctx->scope == kSetupUser;
  f->change = setup_plan_open(plan, path, user ? 0600 : 0644, user ? 0700 : 0755, err);
  if (f->change == NULL)
    return -1;
  const SetupFile *file = &f->change->file;
  return setup_json_load(&f->json, path, file->exists ? file->data : NULL, file->len, err);
}

void
setup_jf_close(SetupJsonFile *f, const SetupContext *ctx, const char *const *own)
{
  const SetupFile *file = &f->change->file;
  bool empty = true;
  const char *key;
  json_t *value;
  json_object_foreach(f->json.root, key, value) {
    bool mine = false;
    for (size_t i = 0; own && own[i]; i++)
      mine |= strcmp(own[i], key) == 0;
    empty &= mine;
  }
  if (ctx->remove && empty) {
    if (file->exists && !file->link)
      setup_change_delete(f->change);
    else if (file->exists)
      setup_change_set(f->change, f->json.text, f->json.len);
  } else if (file->exists || !setup_json_empty(&f->json)) {
    setup_change_set(f->change, f->json.text, f->json.len);
  }
  setup_json_free(&f->json);
}

/* Appends keys[0..n-1] joined by dots. */
static void
setup_dotted(StrBuf *out, const char *const *keys, size_t n)
{
  for (size_t i = 0; i < n; i++)
    strbuf_printf(out, "%s%s", i ? "." : "", keys[i]);
}

int
setup_jf_entry(SetupJsonFile *f, const SetupContext *ctx, const char *const *keys, size_t n,
               json_t *value, StrBuf *err)
{
  SetupJsonStep path[16];
  if (n == 0 || n > 16)
    abort();
  for (size_t i = 0; i < n; i++)
    path[i] = (SetupJsonStep){keys[i], 0};
  bool had = setup_json_get(&f->json, path, n) != NULL;
  int rc;
  if (ctx->remove) {
    json_decref(value);
    rc = setup_json_drop(&f->json, keys, n, err);
  } else {
    rc = setup_json_put(&f->json, keys, n, value, err);
  }
  if (rc > 0) {
    StrBuf dotted = STRBUF_INIT;
    setup_dotted(&dotted, keys, n);
    setup_change_say(f->change, "%s %s", ctx->remove ? "removed" : had ? "updated" : "added",
                     strbuf_cstr(&dotted));
    strbuf_free(&dotted);
  }
  return rc < 0 ? -1 : 0;
}

json_t *
setup_mcp_args(const SetupContext *ctx)
{
  json_t *args = json_array();
  for (size_t i = 0; i < ctx->n_options; i++)
    json_array_append_new(args, json_string(ctx->options[i]));
  json_array_append_new(args, json_string("mcp"));
  return args;
}

void
setup_hook_command(StrBuf *out, const SetupContext *ctx, const char *harness, const char *event)
{
  strbuf_printf(out, "%s%s %s", ctx->hook_prefix, harness, event);
}

/* Reads one shell word at *p (as a POSIX shell would: quotes and
 * backslashes), into out; moves *p past it. */
static void
setup_shell_word(const char **p, StrBuf *out)
{
  const char *s = *p;
  while (*s == ' ' || *s == '\t')
    s++;
  while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != ';' && *s != '&' && *s != '|') {
    if (*s == '\'') {
      for (s++; *s && *s != '\''; s++)
        strbuf_putc(out, *s);
      if (*s)
        s++;
    } else if (*s == '"') {
      for (s++; *s && *s != '"'; s++) {
        if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
          s++;
        strbuf_putc(out, *s);
      }
      if (*s)
        s++;
    } else if (*s == '\\' && s[1]) {
      strbuf_putc(out, s[1]);
      s += 2;
    } else {
      strbuf_putc(out, *s++);
    }
  }
  *p = s;
}

/* vigil's own options that take a value as the next word (cli_opts.c's
 * common table), which a hook's command may carry before "hook". */
static const char *const setup_valued_options[] = {"--socket", "--session", "--nats", "--engine",
                                                   NULL};

/* Whether word is one of setup_valued_options. */
static bool
setup_option_takes_value(const char *word)
{
  for (size_t i = 0; setup_valued_options[i]; i++)
    if (strcmp(word, setup_valued_options[i]) == 0)
      return true;
  return false;
}

bool
setup_is_vigil_hook(const char *command, const char *harness)
{
  const char *p = command;
  StrBuf w = STRBUF_INIT;
  setup_shell_word(&p, &w);
  const char *slash = strrchr(strbuf_cstr(&w), '/');
  bool ok = strcmp(slash ? slash + 1 : strbuf_cstr(&w), "vigil") == 0;
  strbuf_reset(&w);
  setup_shell_word(&p, &w);
  /* Options before the subcommand: --nats URL --engine NAME (setup's own
   * with --nats), --session NAME (a person's), --json. */
  while (ok && strncmp(strbuf_cstr(&w), "--", 2) == 0 && strbuf_cstr(&w)[2] != '\0') {
    bool valued = setup_option_takes_value(strbuf_cstr(&w));
    strbuf_reset(&w);
    setup_shell_word(&p, &w);
    if (valued) {
      strbuf_reset(&w);
      setup_shell_word(&p, &w);
    }
  }
  ok = ok && strcmp(strbuf_cstr(&w), "hook") == 0;
  strbuf_reset(&w);
  setup_shell_word(&p, &w);
  ok = ok && strcmp(strbuf_cstr(&w), harness) == 0;
  strbuf_free(&w);
  return ok;
}

/* Whether a handler object runs vigil's hook. */
static bool
setup_handler_is_vigil(const json_t *h, const char *harness)
{
  const char *cmd = json_string_value(json_object_get(h, "command"));
  return cmd != NULL && setup_is_vigil_hook(cmd, harness);
}

/* How a hooks.EVENT element stands: vigil's alone, the person's with
 * `mixed` handlers of vigil's in it, or the person's. */
typedef enum { kHookTheirs = 0, kHookOurs, kHookMixed } HookOwner;

static HookOwner
setup_hook_owner(const json_t *el, bool grouped, const char *harness)
{
  if (!grouped)
    return setup_handler_is_vigil(el, harness) ? kHookOurs : kHookTheirs;
  const json_t *hooks = json_object_get(el, "hooks");
  size_t ours = 0, n = json_array_size(hooks);
  for (size_t i = 0; i < n; i++)
    ours += setup_handler_is_vigil(json_array_get(hooks, i), harness);
  return ours == 0 ? kHookTheirs : ours == n ? kHookOurs : kHookMixed;
}

/* Takes vigil's handlers out of the person's group i of hooks.event. */
static int
setup_hook_unmix(SetupJsonFile *f, const char *event, size_t i, const char *harness,
                 StrBuf *err)
{
  SetupJsonStep path[4] = {{"hooks", 0}, {event, 0}, {NULL, i}, {"hooks", 0}};
  json_t *hooks = setup_json_get(&f->json, path, 4);
  for (size_t k = json_array_size(hooks); k-- > 0;) {
    if (!setup_handler_is_vigil(json_array_get(setup_json_get(&f->json, path, 4), k), harness))
      continue;
    if (setup_json_remove(&f->json, path, 4, k, err) != 0)
      return -1;
  }
  return 0;
}

/* Adds or removes vigil's hook for one event. Returns 1 added, 2 updated,
 * 3 removed, 0 nothing, -1 error. */
static int
setup_hook_event(SetupJsonFile *f, const SetupContext *ctx, const char *harness,
                 const char *event, bool grouped, json_t *want, StrBuf *err)
{
  SetupJsonStep path[2] = {{"hooks", 0}, {event, 0}};
  json_t *arr = setup_json_get(&f->json, path, 2);
  if (arr == NULL) {
    if (want == NULL)
      return 0;
    const char *keys[] = {"hooks", event};
    json_t *list = json_array();
    json_array_append_new(list, want);
    return setup_json_put(&f->json, keys, 2, list, err) < 0 ? -1 : 1;
  }
  if (!json_is_array(arr)) {
    strbuf_printf(err, "%s: hooks.%s is not a list: setup leaves it alone (fix it, or move the "
                       "file aside)",
                  f->json.name, event);
    json_decref(want);
    return -1;
  }
  /* The first group that is vigil's alone is kept (and brought up to
   * date); every other trace of vigil's goes. */
  size_t n = json_array_size(arr), keep = n;
  for (size_t i = 0; i < n && keep == n; i++)
    if (setup_hook_owner(json_array_get(arr, i), grouped, harness) == kHookOurs)
      keep = want ? i : n;
  bool removed = false;
  for (size_t i = n; i-- > 0;) {
    HookOwner who = setup_hook_owner(json_array_get(setup_json_get(&f->json, path, 2), i),
                                     grouped, harness);
    int rc = 0;
    if (who == kHookOurs && i != keep)
      rc = setup_json_remove(&f->json, path, 2, i, err);
    else if (who == kHookMixed)
      rc = setup_hook_unmix(f, event, i, harness, err);
    if (rc != 0) {
      json_decref(want);
      return -1;
    }
    removed |= who != kHookTheirs && i != keep;
  }
  if (want == NULL) {
    /* An event left empty by taking vigil's out goes; one the person left
     * empty (or that is no event, as Gemini CLI's hooks.disabled) stays. */
    if (removed && json_array_size(setup_json_get(&f->json, path, 2)) == 0) {
      const char *keys[] = {"hooks", event};
      if (setup_json_drop(&f->json, keys, 2, err) < 0)
        return -1;
    }
    return removed ? 3 : 0;
  }
  if (keep == n)
    return setup_json_append(&f->json, path, 2, want, err) != 0 ? -1 : 1;
  if (json_equal(json_array_get(setup_json_get(&f->json, path, 2), keep), want)) {
    json_decref(want);
    return removed ? 2 : 0;
  }
  return setup_json_replace(&f->json, path, 2, keep, want, err) != 0 ? -1 : 2;
}

/* Whether event is one of events[0..n-1]. */
static bool
setup_hook_listed(const char *event, const char *const *events, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(events[i], event) == 0)
      return true;
  return false;
}

int
setup_jf_hooks(SetupJsonFile *f, const SetupContext *ctx, const char *harness,
               const char *const *events, size_t n, bool grouped,
               json_t *(*make)(const SetupContext *ctx, const char *event), StrBuf *err)
{
  StrBuf done[4] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    json_t *want = ctx->remove ? NULL : make(ctx, events[i]);
    int r = setup_hook_event(f, ctx, harness, events[i], grouped, want, err);
    if (r < 0)
      rc = -1;
    else if (r > 0)
      strbuf_printf(&done[r], "%s%s", done[r].len ? ", " : "", events[i]);
  }
  /* A hook of vigil's under any other event is one an earlier setup put
   * there and vigil hook no longer answers (it would fail at every turn):
   * it goes too. The names are copied first, as taking a hook out may
   * drop its event's key from the object being walked. */
  SetupJsonStep top[1] = {{"hooks", 0}};
  json_t *all = setup_json_get(&f->json, top, 1);
  json_t *others = json_array();
  const char *key;
  json_t *value;
  if (json_is_object(all))
    json_object_foreach(all, key, value) {
      if (!setup_hook_listed(key, events, n) && json_is_array(value))
        json_array_append_new(others, json_string(key));
    }
  for (size_t i = 0; i < json_array_size(others) && rc == 0; i++) {
    const char *event = json_string_value(json_array_get(others, i));
    int r = setup_hook_event(f, ctx, harness, event, grouped, NULL, err);
    if (r < 0)
      rc = -1;
    else if (r > 0)
      strbuf_printf(&done[r], "%s%s", done[r].len ? ", " : "", event);
  }
  json_decref(others);
  static const char *const verbs[] = {"", "added hooks", "updated hooks", "removed hooks"};
  for (int k = 1; k < 4; k++) {
    if (rc == 0 && done[k].len)
      setup_change_say(f->change, "%s %s", verbs[k], strbuf_cstr(&done[k]));
    strbuf_free(&done[k]);
  }
  strbuf_free(&done[0]);
  return rc;
}

int
setup_jf_list_item(SetupJsonFile *f, const SetupContext *ctx, const char *const *keys,
                   size_t n, const char *s, StrBuf *err)
{
  SetupJsonStep path[16];
  if (n == 0 || n > 16)
    abort();
  for (size_t i = 0; i < n; i++)
    path[i] = (SetupJsonStep){keys[i], 0};
  json_t *arr = setup_json_get(&f->json, path, n);
  StrBuf dotted = STRBUF_INIT;
  setup_dotted(&dotted, keys, n);
  int rc = 0;
  if (arr != NULL && !json_is_array(arr)) {
    strbuf_printf(err, "%s: %s is not a list: setup leaves it alone", f->json.name,
                  strbuf_cstr(&dotted));
    rc = -1;
  } else if (ctx->remove) {
    for (size_t i = json_array_size(arr); rc == 0 && i-- > 0;) {
      const char *v = json_string_value(json_array_get(setup_json_get(&f->json, path, n), i));
      if (v == NULL || strcmp(v, s) != 0)
        continue;
      rc = setup_json_remove(&f->json, path, n, i, err);
      if (rc == 0)
        setup_change_say(f->change, "removed %s from %s", s, strbuf_cstr(&dotted));
    }
    if (rc == 0 && arr != NULL && json_array_size(setup_json_get(&f->json, path, n)) == 0)
      rc = setup_json_drop(&f->json, keys, n, err) < 0 ? -1 : 0;
  } else {
    bool have = false;
    for (size_t i = 0; i < json_array_size(arr); i++) {
      const char *v = json_string_value(json_array_get(arr, i));
      have |= v != NULL && strcmp(v, s) == 0;
    }
    if (!have) {
      if (arr == NULL) {
        json_t *list = json_array();
        json_array_append_new(list, json_string(s));
        rc = setup_json_put(&f->json, keys, n, list, err) < 0 ? -1 : 0;
      } else {
        rc = setup_json_append(&f->json, path, n, json_string(s), err);
      }
      if (rc == 0)
        setup_change_say(f->change, "added %s to %s", s, strbuf_cstr(&dotted));
    }
  }
  strbuf_free(&dotted);
  return rc;
}
