/*
 * `vigil setup codex`: Codex CLI's MCP server table in config.toml
 * (setup_toml.h), its hooks in hooks.json (setup_hooks.h), and its trust
 * of those hooks.
 *
 * Codex runs a hook only once the person has trusted it: it keeps, in
 * config.toml, [hooks.state."<hooks.json>:<event>:<group>:<handler>"]
 * trusted_hash = the hash of the hook's definition, which its TUI writes
 * when the person accepts the hook under /hooks. Running `vigil setup
 * codex` is the person asking for exactly these hooks, so setup records
 * that trust the way Codex itself does, by asking Codex: `codex app-server`
 * (the JSON-RPC server on stdio its IDE extensions use) lists the hooks
 * with their keys and current hashes (hooks/list), and writes each
 * vigil hook's hash (config/value/write), with Codex's own TOML editing.
 * Nothing of Codex's hashing is copied here, so a later Codex that hashes
 * otherwise is still right. Only vigil's hooks in the hooks.json setup
 * wrote are trusted, and only when their command is vigil's. Without a
 * codex on PATH, or when it fails, setup prints the one step the person
 * takes instead (/hooks in Codex). --remove clears the same entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_fmt.h"
#include "cli/setup_harness.h"
#include "cli/setup_hooks.h"
#include "cli/setup_toml.h"

extern char **environ;

/* How long codex app-server may take to answer one request (it starts a
 * 300 MB binary first). */
#define SETUP_CODEX_TIMEOUT_MS 60000
/* The longest line taken from it. */
#define SETUP_CODEX_LINE_MAX (8u * 1024 * 1024)

/* The variables vigil mcp needs from Codex's environment, which passes an
 * MCP server only USER, HOME, TMPDIR, LOGNAME, PATH, LANG and PWD (seen,
 * tests/harness/README.md): without XDG_RUNTIME_DIR it would look for the
 * engine's socket in /tmp and find another engine, or none. */
static const char *const setup_codex_env[] = {"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
                                               "VIGIL_SOCKET", "VIGIL_CONFIG", NULL};
/* And through NATS, the broker's credentials, the inbox prefix the
 * user's permissions allow and the TLS files (docs/fleet.md section 5). */
static const char *const setup_codex_nats_env[] = {"VIGIL_NATS_CREDS", "VIGIL_NATS_INBOX",
                                                    "VIGIL_NATS_CA",    "VIGIL_NATS_CERT",
                                                    "VIGIL_NATS_KEY",   NULL};

static const char *const setup_codex_events[] = {"SessionStart", "UserPromptSubmit",
                                                 "PostToolUse", "Stop"};

/* Codex's directory for the scope: $CODEX_HOME (else ~/.codex), or the
 * project's .codex. */
static bool
setup_codex_dir(const SetupContext *ctx, char *out)
{
  const char *env = getenv("CODEX_HOME");
  int n;
  if (ctx->scope == kSetupProject)
    n = snprintf(out, PATH_MAX, "%s/.codex", ctx->root);
  else if (env && env[0] == '/')
    n = snprintf(out, PATH_MAX, "%s", env);
  else
    n = snprintf(out, PATH_MAX, "%s/.codex", ctx->home);
  return n > 0 && n < PATH_MAX;
}

static json_t *
setup_codex_group(const SetupContext *ctx, const char *event)
{
  StrBuf cmd = STRBUF_INIT;
  setup_hook_command(&cmd, ctx, "codex", event);
  json_t *hooks = json_array();
  json_array_append_new(hooks, json_pack("{s:s, s:s}", "type", "command", "command",
                                         strbuf_cstr(&cmd)));
  strbuf_free(&cmd);
  return json_pack("{s:o}", "hooks", hooks);
}

int
setup_codex_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char dir[PATH_MAX], config[PATH_MAX + 16], hooks[PATH_MAX + 16];
  if (!setup_codex_dir(ctx, dir)) {
    strbuf_puts(err, "the path of Codex's directory is too long");
    return -1;
  }
  snprintf(config, sizeof config, "%s/config.toml", dir);
  snprintf(hooks, sizeof hooks, "%s/hooks.json", dir);
  bool user = ctx->scope == kSetupUser;
  SetupChange *c = setup_plan_open(plan, config, user ? 0600 : 0644, user ? 0700 : 0755, err);
  if (c == NULL)
    return -1;
  SetupToml t;
  if (setup_toml_load(&t, config, c->file.exists ? c->file.data : NULL, c->file.len, err) != 0)
    return -1;
  static const char *const table[] = {"mcp_servers", "vigil"};
  int rc;
  if (ctx->remove) {
    rc = setup_toml_drop_table(&t, table, 2, err);
  } else {
    StrBuf body = STRBUF_INIT;
    strbuf_puts(&body, "command = ");
    setup_toml_string(&body, ctx->vigil);
    strbuf_puts(&body, "\nargs = [");
    json_t *args = setup_mcp_args(ctx);
    for (size_t i = 0; i < json_array_size(args); i++) {
      strbuf_puts(&body, i ? ", " : "");
      setup_toml_string(&body, json_string_value(json_array_get(args, i)));
    }
    json_decref(args);
    strbuf_puts(&body, "]\nenv_vars = [");
    for (size_t i = 0; setup_codex_env[i]; i++) {
      strbuf_puts(&body, i ? ", " : "");
      setup_toml_string(&body, setup_codex_env[i]);
    }
    for (size_t i = 0; ctx->remote && setup_codex_nats_env[i]; i++) {
      strbuf_puts(&body, ", ");
      setup_toml_string(&body, setup_codex_nats_env[i]);
    }
    strbuf_puts(&body, "]\n");
    rc = setup_toml_set_table(&t, table, 2, strbuf_cstr(&body), err);
    strbuf_free(&body);
  }
  if (rc > 0)
    setup_change_say(c, "%s [mcp_servers.vigil]",
                     ctx->remove ? "removed" : rc == 2 ? "updated" : "added");
  if (rc >= 0)
    setup_change_text(c, ctx->remove, t.text, t.len);
  setup_toml_free(&t);
  if (rc < 0)
    return -1;

  SetupJsonFile f;
  if (setup_jf_open(&f, plan, hooks, ctx, err) != 0 ||
      setup_jf_hooks(&f, ctx, "codex", setup_codex_events, 4, true, setup_codex_group, err) != 0)
    return -1;
  setup_jf_close(&f, ctx, NULL);
  if (ctx->scope == kSetupProject)
    setup_plan_note(plan, "Codex reads %s only in a project you trust: it asks the first time "
                          "you start codex in %s",
                    dir, ctx->root);
  return 0;
}

/* --- trust, through codex app-server ------------------------------------- */

typedef struct {
  pid_t pid;
  int to, from;    /* its stdin, its stdout */
  StrBuf buf;      /* what was read and not yet taken */
  int next_id;
} CodexRpc;

/* The codex on PATH (an executable file), into out. */
static bool
setup_codex_find(char *out)
{
  const char *path = getenv("PATH");
  if (path == NULL)
    return false;
  for (const char *p = path; *p;) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    if (n > 0 && p[0] == '/' && n + 8 < PATH_MAX) {
      snprintf(out, PATH_MAX, "%.*s/codex", (int)n, p);
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
        return true;
    }
    p += n + (colon ? 1 : 0);
  }
  return false;
}

static int
codex_rpc_start(CodexRpc *r, const char *codex, StrBuf *err)
{
  memset(r, 0, sizeof *r);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    strbuf_printf(err, "pipe: %s", strerror(errno));
    return -1;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    strbuf_printf(err, "pipe: %s", strerror(errno));
    close(in[0]);
    close(in[1]);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)codex, "app-server", NULL};
  int rc = posix_spawn(&r->pid, codex, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    strbuf_printf(err, "cannot run %s: %s", codex, strerror(rc));
    close(in[1]);
    close(out[0]);
    return -1;
  }
  r->to = in[1];
  r->from = out[0];
  return 0;
}

/* Ends codex app-server: its stdin closed, it exits; killed when it has
 * not within a few seconds. */
static void
codex_rpc_stop(CodexRpc *r)
{
  if (r->to >= 0)
    close(r->to);
  /* Its stdout's end says it exited (or closed it). */
  int64_t deadline = cli_fmt_now_ms() + 5000;
  char sink[4096];
  for (;;) {
    int64_t left = deadline - cli_fmt_now_ms();
    struct pollfd pfd = {r->from, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
      kill(r->pid, SIGKILL);
      break;
    }
    if (read(r->from, sink, sizeof sink) <= 0)
      break;
  }
  close(r->from);
  while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  strbuf_free(&r->buf);
}

/* Sends a request and waits for its answer's result (a new reference), or
 * NULL with err set. Notifications on the way are passed over. */
static json_t *
codex_rpc_call(CodexRpc *r, const char *method, json_t *params, StrBuf *err)
{
  int id = ++r->next_id;
  json_t *req = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
                          "params", params);
  char *line = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  size_t len = strlen(line);
  line[len] = '\n';
  bool sent = write(r->to, line, len + 1) == (ssize_t)(len + 1);
  free(line);
  if (!sent) {
    strbuf_printf(err, "codex app-server did not take the %s request", method);
    return NULL;
  }
  int64_t deadline = cli_fmt_now_ms() + SETUP_CODEX_TIMEOUT_MS;
  for (;;) {
    char *nl;
    while ((nl = r->buf.len ? memchr(r->buf.data, '\n', r->buf.len) : NULL) != NULL) {
      size_t n = (size_t)(nl - r->buf.data);
      json_t *msg = json_loadb(r->buf.data, n, 0, NULL);
      memmove(r->buf.data, nl + 1, r->buf.len - n - 1);
      r->buf.len -= n + 1;
      r->buf.data[r->buf.len] = '\0';
      if (msg && json_integer_value(json_object_get(msg, "id")) == id &&
          json_object_get(msg, "method") == NULL) {
        json_t *result = json_incref(json_object_get(msg, "result"));
        if (result == NULL) {
          const char *m = json_string_value(json_object_get(json_object_get(msg, "error"),
                                                            "message"));
          strbuf_printf(err, "codex app-server refused %s: %.300s", method, m ? m : "(no message)");
        }
        json_decref(msg);
        return result;
      }
      json_decref(msg);
    }
    int64_t left = deadline - cli_fmt_now_ms();
    struct pollfd pfd = {r->from, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
      strbuf_printf(err, "codex app-server did not answer %s within %d s", method,
                    SETUP_CODEX_TIMEOUT_MS / 1000);
      return NULL;
    }
    char chunk[65536];
    ssize_t got = read(r->from, chunk, sizeof chunk);
    if (got <= 0) {
      strbuf_printf(err, "codex app-server ended before answering %s", method);
      return NULL;
    }
    if (r->buf.len + (size_t)got > SETUP_CODEX_LINE_MAX) {
      strbuf_printf(err, "codex app-server's answer to %s is over %u bytes", method,
                    SETUP_CODEX_LINE_MAX);
      return NULL;
    }
    strbuf_append(&r->buf, chunk, (size_t)got);
  }
}

/* vigil's hooks in hooks (the hooks.json of the scope), as codex lists
 * them: their keys and current hashes, into keys (a JSON object
 * key -> hash); with untrusted, only those codex does not trust yet.
 * *seen counts them all. */
static int
codex_vigil_hooks(CodexRpc *r, const char *cwd, const char *hooks_real, bool untrusted,
                  json_t *keys, size_t *seen, StrBuf *err)
{
  *seen = 0;
  json_t *cwds = json_array();
  json_array_append_new(cwds, json_string(cwd));
  json_t *res = codex_rpc_call(r, "hooks/list", json_pack("{s:o}", "cwds", cwds), err);
  if (res == NULL)
    return -1;
  json_t *data = json_object_get(res, "data"), *entry, *hook;
  size_t i, k;
  json_array_foreach(data, i, entry) {
    json_array_foreach(json_object_get(entry, "hooks"), k, hook) {
      const char *key = json_string_value(json_object_get(hook, "key"));
      const char *src = json_string_value(json_object_get(hook, "sourcePath"));
      const char *cmd = json_string_value(json_object_get(hook, "command"));
      const char *hash = json_string_value(json_object_get(hook, "currentHash"));
      char real[PATH_MAX];
      if (key == NULL || src == NULL || cmd == NULL || hash == NULL ||
          realpath(src, real) == NULL || strcmp(real, hooks_real) != 0 ||
          !setup_is_vigil_hook(cmd, "codex"))
        continue;
      (*seen)++;
      const char *status = json_string_value(json_object_get(hook, "trustStatus"));
      if (untrusted && status && strcmp(status, "trusted") == 0)
        continue;
      /* The key goes into a TOML key path in quotes: one that would need
       * escapes is left to the person. */
      if (strpbrk(key, "\"\\\n") == NULL)
        json_object_set_new(keys, key, json_string(hash));
    }
  }
  json_decref(res);
  return 0;
}

/* Writes (hash) or clears (NULL) the trust of one hook key. */
static int
codex_set_trust(CodexRpc *r, const char *key, const char *hash, StrBuf *err)
{
  StrBuf path = STRBUF_INIT;
  strbuf_printf(&path, "hooks.state.\"%s\"%s", key, hash ? ".trusted_hash" : "");
  json_t *params = json_pack("{s:s, s:o, s:s}", "keyPath", strbuf_cstr(&path), "value",
                             hash ? json_string(hash) : json_null(), "mergeStrategy", "replace");
  strbuf_free(&path);
  json_t *res = codex_rpc_call(r, "config/value/write", params, err);
  if (res == NULL)
    return -1;
  json_decref(res);
  return 0;
}

/* Prints what to do by hand instead. */
static void
setup_codex_step(FILE *f, bool remove, const char *why)
{
  if (remove)
    fprintf(f, "Codex's trust of vigil's hooks was not cleared (%s): it is harmless; clear it "
               "under /hooks in codex if you wish.\n",
            why);
  else
    fprintf(f, "One step left (%s): Codex runs a hook only once you trust it: start codex, "
               "type /hooks, and trust vigil's %zu hooks.\n",
            why, sizeof setup_codex_events / sizeof setup_codex_events[0]);
}

/* Starts codex app-server and says hello. */
static int
codex_open(CodexRpc *r, const char *codex, StrBuf *err)
{
  if (codex_rpc_start(r, codex, err) != 0)
    return -1;
  json_t *init = codex_rpc_call(r, "initialize",
                                json_pack("{s:{s:s, s:s}}", "clientInfo", "name", "vigil-setup",
                                          "version", "1"),
                                err);
  if (init == NULL)
    return -1;
  json_decref(init);
  static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}\n";
  if (write(r->to, note, sizeof note - 1) != (ssize_t)(sizeof note - 1)) {
    strbuf_puts(err, "codex app-server did not take the initialized notification");
    return -1;
  }
  return 0;
}

/* Where the scope's hooks.json is, resolved; false when it is not there. */
static bool
setup_codex_hooks_real(const SetupContext *ctx, char *real)
{
  char dir[PATH_MAX], hooks[PATH_MAX + 16];
  if (!setup_codex_dir(ctx, dir))
    return false;
  snprintf(hooks, sizeof hooks, "%s/hooks.json", dir);
  return realpath(hooks, real) != NULL;
}

void
setup_codex_trust_begin(const SetupContext *ctx, SetupCodexTrust *t)
{
  memset(t, 0, sizeof *t);
  t->found = setup_codex_find(t->codex);
  char real[PATH_MAX];
  if (!ctx->remove || !t->found || !setup_codex_hooks_real(ctx, real))
    return;
  /* Before the files change: which of codex's trust keys are vigil's
   * hooks', while hooks.json still has them. */
  CodexRpc r;
  StrBuf err = STRBUF_INIT;
  t->keys = json_object();
  size_t seen;
  if (codex_open(&r, t->codex, &err) != 0 ||
      codex_vigil_hooks(&r, ctx->scope == kSetupProject ? ctx->root : ctx->home, real, false,
                        t->keys, &seen, &err) != 0)
    t->error = strbuf_take(&err);
  if (r.pid > 0)
    codex_rpc_stop(&r);
  strbuf_free(&err);
}

void
setup_codex_trust_end(const SetupContext *ctx, SetupCodexTrust *t, bool dry_run, FILE *f)
{
  if (!t->found) {
    setup_codex_step(f, ctx->remove, "no codex on PATH to ask");
  } else if (dry_run) {
    fprintf(f, "would %s Codex's trust of vigil's hooks (asking %s app-server)\n",
            ctx->remove ? "clear" : "record", t->codex);
  } else if (t->error) {
    setup_codex_step(f, ctx->remove, t->error);
  } else if (!ctx->remove || json_object_size(t->keys) > 0) {
    char real[PATH_MAX];
    CodexRpc r;
    StrBuf err = STRBUF_INIT;
    int rc = codex_open(&r, t->codex, &err);
    size_t seen = 0;
    if (!ctx->remove) {
      t->keys = json_object();
      if (rc == 0 && (!setup_codex_hooks_real(ctx, real) ||
                      codex_vigil_hooks(&r, ctx->scope == kSetupProject ? ctx->root : ctx->home,
                                        real, true, t->keys, &seen, &err) != 0))
        rc = -1;
    }
    size_t n = 0;
    const char *key;
    json_t *hash;
    json_object_foreach(t->keys, key, hash) {
      if (rc == 0 && codex_set_trust(&r, key, ctx->remove ? NULL : json_string_value(hash),
                                     &err) == 0)
        n++;
      else
        rc = -1;
    }
    if (rc != 0)
      setup_codex_step(f, ctx->remove, err.len ? strbuf_cstr(&err) : "codex failed");
    else if (n == 0 && seen > 0)
      fprintf(f, "Codex already trusts vigil's %zu hooks\n", seen);
    else if (n == 0)
      setup_codex_step(f, false,
                       ctx->scope == kSetupProject
                           ? "codex does not list the project's hooks: it reads .codex/ only in "
                             "a project you trust"
                           : "codex does not list vigil's hooks");
    else
      fprintf(f, "%s Codex's trust of vigil's %zu hooks (asking %s app-server, as /hooks does)\n",
              ctx->remove ? "cleared" : "recorded", n, t->codex);
    if (r.pid > 0)
      codex_rpc_stop(&r);
    strbuf_free(&err);
  }
  json_decref(t->keys);
  free(t->error);
  memset(t, 0, sizeof *t);
}
