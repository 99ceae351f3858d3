/*
 * `vigil setup goose`: Goose's extensions.vigil in its config.yaml
 * ($XDG_CONFIG_HOME/goose/config.yaml, else ~/.config/goose/config.yaml),
 * a stdio extension as `goose configure` writes one (setup_yaml.h). Goose
 * has no hooks and no project-level config: the MCP extension is all, and
 * notifications reach the model with vigil's tool results.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/setup_harness.h"
#include "cli/setup_hooks.h"
#include "cli/setup_yaml.h"

/* How long Goose waits for one of vigil's tools, in seconds (its default). */
#define SETUP_GOOSE_TIMEOUT_S 300

int
setup_goose_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char config[PATH_MAX];
  if (snprintf(config, sizeof config, "%s/goose/config.yaml", ctx->config_home) >=
      (int)sizeof config) {
    strbuf_puts(err, "the path of Goose's config is too long");
    return -1;
  }
  SetupChange *c = setup_plan_open(plan, config, 0600, 0700, err);
  if (c == NULL)
    return -1;
  SetupYaml y;
  if (setup_yaml_load(&y, config, c->file.exists ? c->file.data : NULL, c->file.len, err) != 0)
    return -1;
  int rc;
  if (ctx->remove) {
    rc = setup_yaml_drop_entry(&y, "extensions", "vigil", err);
  } else {
    /* Strings as JSON strings: every one is a YAML double-quoted scalar.
     * --delivery piggyback: Goose drops server notifications and has no
     * hooks, so vigil's tool results are the only way a notification
     * reaches its model unasked (the harnesses with hooks get plain "mcp":
     * their hooks deliver, on the session's model cursor, and a piggyback
     * beside them would give the model each notification twice). */
    json_t *cmd = json_string(ctx->vigil);
    char *quoted = json_dumps(cmd, JSON_ENCODE_ANY);
    json_decref(cmd);
    json_t *args = setup_mcp_args(ctx);
    json_array_append_new(args, json_string("--delivery"));
    json_array_append_new(args, json_string("piggyback"));
    char *args_text = json_dumps(args, 0); /* ["mcp", "--delivery", ...] */
    json_decref(args);
    StrBuf body = STRBUF_INIT;
    strbuf_printf(&body,
                  "  name: vigil\n"
                  "  type: stdio\n"
                  "  cmd: %s\n"
                  "  args: %s\n"
                  "  enabled: true\n"
                  "  timeout: %d\n"
                  "  description: \"vigil: long-running commands and what matters in their "
                  "output\"\n"
                  "  envs: {}\n"
                  "  env_keys: []\n",
                  quoted ? quoted : "\"vigil\"", args_text ? args_text : "[\"mcp\"]",
                  SETUP_GOOSE_TIMEOUT_S);
    free(quoted);
    free(args_text);
    rc = setup_yaml_set_entry(&y, "extensions", "vigil", strbuf_cstr(&body), err);
    strbuf_free(&body);
    if (rc > 0)
      setup_change_say(c, "%s extensions.vigil", rc == 2 ? "updated" : "added");
  }
  if (rc > 0 && ctx->remove)
    setup_change_say(c, "removed extensions.vigil");
  if (rc >= 0)
    setup_change_text(c, ctx->remove, y.text, y.len);
  setup_yaml_free(&y);
  if (rc >= 0 && !ctx->remove)
    setup_plan_note(plan, "Goose has no hooks: notifications reach the model with vigil's tool "
                          "results, and notifications_read");
  return rc < 0 ? -1 : 0;
}
