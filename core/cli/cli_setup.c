/*
 * `vigil setup HARNESS [--project | --user] [--dry-run] [--remove] [--yes]`:
 * one command that sets a harness up to use vigil (issue 23, item 4;
 * docs/mcp.md, "vigil setup"): its MCP entry and its hooks or plugin
 * (setup_harness.h), merged into the files it has, and the project-aware
 * allowlist (setup_allow.h).
 *
 * The scope: --project (the project's own files, at the top
 * cli_project_root finds) or --user (the person's, for every project). By
 * default --project when the working directory is in a project a marker
 * names (a repository, a manifest, a harness's directory), else --user;
 * Goose has only the user's file. The plan is made in full first: a file
 * that cannot be read or edited with certainty stops setup before anything
 * is written. Then it is printed (a unified diff with --dry-run, which
 * writes nothing), or applied, every file atomically, and a second run
 * changes nothing and says so. --remove takes out exactly what setup puts
 * in; a file it leaves empty goes (never a link, never a directory).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_cmds.h"
#include "cli/cli_natsurl.h"
#include "cli/cli_obj.h"
#include "cli/cli_project.h"
#include "cli/cli_suggest.h"
#include "cli/setup_allow.h"
#include "cli/setup_harness.h"
#include "spec/names.h"

static const CliOpt cli_setup_opts[] = {
  {.name = "project", .help = "the project's own files (default inside a project)"},
  {.name = "user", .help = "your own files, for every project (default elsewhere)"},
  {.name = "dry-run", .short_name = 'n',
   .help = "print the changes as a unified diff; write nothing"},
  {.name = "remove", .help = "take out what setup put in"},
  {.name = "yes", .short_name = 'y',
   .help = "write your vigil config (the bundled one with the\n"
   "project's commands allowed) without asking, if you have none"},
  {0},
};

/* This executable's absolute path. */
static bool
cli_setup_self(char *out)
{
  ssize_t n = readlink("/proc/self/exe", out, PATH_MAX - 1);
  if (n <= 0 || n >= PATH_MAX - 1)
    return false;
  out[n] = '\0';
  /* A binary replaced while it runs reads "... (deleted)": not a path to
   * write into a harness's config. */
  return out[0] == '/' && strstr(out, " (deleted)") == NULL;
}

/* Fills the context from the options and the environment. Returns 0, or
 * the exit status after printing why. */
static int
cli_setup_context(const CliClient *c, const CliParsed *p, const SetupHarness *h,
                  SetupContext *ctx)
{
  memset(ctx, 0, sizeof *ctx);
  ctx->remove = cli_opts_has(p, "remove");
  if (cli_opts_has(p, "project") && cli_opts_has(p, "user"))
    return cli_opts_usage_error(p->spec, "--project and --user: give one");
  const char *home = getenv("HOME");
  if (home == NULL || home[0] != '/' || realpath(home, ctx->home) == NULL) {
    fprintf(stderr, "vigil: setup: HOME is %s: setup needs your home directory\n",
            home ? "not an absolute path that exists" : "not set");
    return CLI_EXIT_FAILURE;
  }
  const char *xdg = getenv("XDG_CONFIG_HOME");
  int n = xdg && xdg[0] == '/'
              ? snprintf(ctx->config_home, sizeof ctx->config_home, "%s", xdg)
              : snprintf(ctx->config_home, sizeof ctx->config_home, "%.*s/.config",
                         (int)(sizeof ctx->config_home - 16), ctx->home);
  if (n < 0 || (size_t)n >= sizeof ctx->config_home) {
    fprintf(stderr, "vigil: setup: the path of your config directory is too long\n");
    return CLI_EXIT_FAILURE;
  }
  bool marked = false;
  if (cli_project_root(NULL, ctx->root, sizeof ctx->root, &marked) != 0) {
    fprintf(stderr, "vigil: setup: the working directory's real path cannot be found\n");
    return CLI_EXIT_FAILURE;
  }
  if (cli_opts_has(p, "project"))
    ctx->scope = kSetupProject;
  else if (cli_opts_has(p, "user"))
    ctx->scope = kSetupUser;
  else
    ctx->scope = marked && h->has_project ? kSetupProject : kSetupUser;
  if (ctx->scope == kSetupProject && !h->has_project)
    return cli_opts_usage_error(p->spec, "%s has no project-level config: use --user", h->name);
  if (ctx->scope == kSetupProject && strcmp(ctx->root, ctx->home) == 0 && !marked)
    return cli_opts_usage_error(p->spec, "--project: your home directory is not a project; "
                                         "run setup in the project, or use --user");
  if (!cli_setup_self(ctx->vigil)) {
    fprintf(stderr, "vigil: setup: cannot find this vigil's own path (/proc/self/exe)\n");
    return CLI_EXIT_FAILURE;
  }
  if (c->nats_url != NULL) {
    /* Written into the harness's files, which others may read (a project's
     * .mcp.json is often committed): no secret goes there. */
    if (cli_natsurl_has_secret(c->nats_url))
      return cli_opts_usage_error(p->spec,
                                  "--nats: the URL carries a user, password or token, which "
                                  "setup would write into the harness's files: give the "
                                  "server's URL alone, and the credentials in a creds file "
                                  "named by VIGIL_NATS_CREDS in the harness's environment "
                                  "(and for TLS the files of VIGIL_NATS_CA, VIGIL_NATS_CERT "
                                  "and VIGIL_NATS_KEY)");
    ctx->options[ctx->n_options++] = "--nats";
    ctx->options[ctx->n_options++] = c->nats_url;
    ctx->options[ctx->n_options++] = "--engine";
    ctx->options[ctx->n_options++] = c->engine;
    ctx->remote = true;
  }
  /* --session given on this command line (not $VIGIL_SESSION, nor the
   * project's, which each entry finds again where it runs). */
  if (p->session != NULL) {
    if (!session_name_ok(c->session))
      return cli_opts_usage_error(p->spec, "--session: \"%s\" is not a session name "
                                  "([A-Za-z0-9._:-], 1 to %d characters, not starting with "
                                  "anon-)", c->session, SESSION_NAME_MAX);
    ctx->options[ctx->n_options++] = "--session";
    ctx->options[ctx->n_options++] = c->session;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < ctx->n_options; i++)
    bytes += strlen(ctx->options[i]) + 1;
  if (bytes > SETUP_OPTIONS_MAX)
    return cli_opts_usage_error(p->spec, "--nats, --engine and --session: %zu bytes together, "
                                "over the %d setup writes into an entry", bytes,
                                SETUP_OPTIONS_MAX);
  StrBuf prefix = STRBUF_INIT;
  cli_client_shell_word(&prefix, ctx->vigil);
  for (size_t i = 0; i < ctx->n_options; i++) {
    strbuf_putc(&prefix, ' ');
    cli_client_shell_word(&prefix, ctx->options[i]);
  }
  strbuf_puts(&prefix, " hook ");
  snprintf(ctx->hook_prefix, sizeof ctx->hook_prefix, "%s", strbuf_cstr(&prefix));
  strbuf_free(&prefix);
  return 0;
}

/* Says which config the engine now running uses, when one answers. */
static void
cli_setup_engine_config(CliClient *c)
{
  if (cli_client_connect(c, false, false, 0) != 0)
    return;
  CliReply reply;
  if (cli_client_call(c, "api_info", NULL, CLI_CALL_TIMEOUT_MS, &reply) != 0)
    return;
  const msgpack_object *cfg = cli_obj_get(reply.result, "config");
  size_t n = 0;
  const char *path = cli_obj_get_text(cfg, "path", &n);
  if (path == NULL)
    path = cli_obj_get_text(reply.result, "config_path", &n);
  if (path == NULL && cfg && cfg->type == MSGPACK_OBJECT_STR)
    path = cli_obj_text(cfg, &n);
  if (path)
    printf("The engine running on %s uses %.*s.\n", c->socket_path, (int)n, path);
  else
    printf("An engine runs on %s (it does not say which config it uses).\n", c->socket_path);
  cli_reply_free(&reply);
}

static int
cli_setup_run(CliClient *c, const CliParsed *p)
{
  const SetupHarness *h = setup_harness_find(p->args[0]);
  if (h == NULL) {
    size_t n;
    const SetupHarness *all = setup_harness_list(&n);
    CliSuggest s;
    cli_suggest_init(&s, p->args[0]);
    StrBuf names = STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
      cli_suggest_offer(&s, all[i].name);
      strbuf_printf(&names, "%s%s", i ? ", " : "", all[i].name);
    }
    const char *best = cli_suggest_best(&s);
    /* "claude" for claude-code: a start of one name is as good a guess. */
    for (size_t i = 0; best == NULL && p->args[0][0] && i < n; i++)
      if (strncmp(all[i].name, p->args[0], strlen(p->args[0])) == 0)
        best = all[i].name;
    int rc = best ? cli_opts_usage_error(p->spec, "no harness \"%s\"; did you mean \"%s\"?",
                                         p->args[0], best)
                  : cli_opts_usage_error(p->spec, "no harness \"%s\" (one of %s)", p->args[0],
                                         strbuf_cstr(&names));
    strbuf_free(&names);
    return rc;
  }
  SetupContext ctx;
  int rc = cli_setup_context(c, p, h, &ctx);
  if (rc != 0)
    return rc;
  bool dry = cli_opts_has(p, "dry-run");
  printf("vigil setup %s%s (%s)\n", h->name, ctx.remove ? " --remove" : "",
         ctx.scope == kSetupProject ? ctx.root : "your user files");
  SetupPlan plan;
  setup_plan_init(&plan);
  StrBuf err = STRBUF_INIT;
  if (h->plan(&ctx, &plan, &err) != 0) {
    fprintf(stderr, "vigil: setup: %s\n", strbuf_cstr(&err));
    strbuf_free(&err);
    setup_plan_free(&plan);
    return CLI_EXIT_FAILURE;
  }
  bool codex = strcmp(h->name, "codex") == 0;
  SetupCodexTrust trust;
  if (codex)
    setup_codex_trust_begin(&ctx, &trust);
  size_t count = setup_plan_count(&plan);
  if (count == 0) {
    printf("  nothing to %s: %s is %s\n", ctx.remove ? "remove" : "change", h->title,
           ctx.remove ? "not set up here" : "already set up");
  } else if (dry) {
    setup_plan_print(&plan, stdout, true, false);
    setup_plan_print(&plan, stdout, false, false);
    printf("  (dry run: nothing was written)\n");
  } else if (setup_plan_apply(&plan, &err) != 0) {
    fprintf(stderr, "vigil: setup: %s\n", strbuf_cstr(&err));
    strbuf_free(&err);
    setup_plan_free(&plan);
    if (codex)
      json_decref(trust.keys), free(trust.error);
    return CLI_EXIT_FAILURE;
  } else {
    setup_plan_print(&plan, stdout, false, true);
  }
  if (codex)
    setup_codex_trust_end(&ctx, &trust, dry, stdout);
  fputs(strbuf_cstr(&plan.notes), stdout);
  setup_plan_free(&plan);
  strbuf_free(&err);
  if (ctx.remove)
    return 0;
  if (ctx.remote) {
    /* The engine, its config and allowlist are on its own host. */
    printf("  %s reaches engine %s through the NATS server at %s: what the agent may run is "
           "that engine's config, on its host (docs/fleet.md section 6). Give the harness "
           "VIGIL_NATS_CREDS (and VIGIL_NATS_INBOX) in its environment if the server asks for "
           "them, and VIGIL_NATS_CA (with VIGIL_NATS_CERT and VIGIL_NATS_KEY for client "
           "certificates) if it speaks TLS with a private CA.\n",
           h->title, c->engine, c->nats_url);
    return rc;
  }
  /* What the agent may run there: the project's commands and the config. */
  bool marked = false;
  char root[PATH_MAX];
  if (cli_project_root(NULL, root, sizeof root, &marked) == 0 && marked) {
    SetupAllow allow;
    setup_allow_detect(root, &allow);
    if (setup_allow_advise(&allow, root, !dry, cli_opts_has(p, "yes"), stdout) != 0)
      rc = CLI_EXIT_FAILURE;
  }
  cli_setup_engine_config(c);
  return rc;
}

const CliCommand cli_cmd_setup = {
  .spec = {.name = "setup", .args = "HARNESS", .summary = "set an agent harness up to use vigil",
           .about = "Set HARNESS (claude-code, codex, gemini, opencode, cursor, goose) up to use\n"
           "vigil: its MCP server entry (this vigil's path, \"mcp\") and its hooks or\n"
           "plugin (vigil hook HARNESS EVENT), merged into the files it has, every other\n"
           "key kept; then which of the project's commands the engine's config allows.\n"
           "--project writes the project's files (the default inside a project), --user\n"
           "yours. A second run changes nothing; --remove takes out what setup put in.\n"
           "A file that is not valid JSON, TOML or YAML is left as it is, and nothing is\n"
           "written. With --nats URL --engine NAME before setup, the entries reach that\n"
           "engine through NATS (docs/fleet.md section 6). docs/mcp.md has every file per\n"
           "harness.",
           .opts = cli_setup_opts, .min_args = 1, .max_args = 1},
  .run = cli_setup_run,
};
