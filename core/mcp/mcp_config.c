/*
 * The config `vigil mcp` gives its engine and the warning when the engine
 * runs another (mcp_config.h).
 */
#include "mcp/mcp_config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config_lookup.h"
#include "base/strbuf.h"

/* How long the adapter waits for api_info's answer at start. */
#define MCP_CONFIG_INFO_TIMEOUT_MS 10000

static char mcp_config_path[CONFIG_LOOKUP_PATH_MAX];
static const char *mcp_config_why;
static bool mcp_config_found;
/* The warning not yet put in a tool result (owned), or NULL. */
static char *_Atomic mcp_config_warning;

const char *
mcp_config_resolve(const char *given)
{
  mcp_config_found = config_lookup(given, mcp_config_path, sizeof mcp_config_path,
                                   &mcp_config_why);
  if (mcp_config_found) {
    fprintf(stderr, "vigil mcp: config: %s (%s); an engine this adapter starts gets it\n",
            mcp_config_path, mcp_config_why);
    return mcp_config_path;
  }
  fprintf(stderr, "vigil mcp: no config found (write %s, or set VIGIL_CONFIG or --config); an "
                  "engine this adapter starts has none and denies every command\n",
          mcp_config_path);
  return NULL;
}

/* The warning for an engine (pid) on socket that runs `runs` (NULL: no
 * config file) and not the config found, whose file differs (same is
 * false) or is the same file changed since it was loaded (same true). */
static char *
mcp_config_warning_text(const char *socket, long long pid, const char *runs, bool same)
{
  StrBuf w = STRBUF_INIT;
  if (same) {
    strbuf_printf(&w, "warning: the engine on %s (pid %lld) runs the config %s as it was when "
                      "it loaded it; the file has changed since, so what it allows is not "
                      "what the file says. Make it read the file again: kill -HUP %lld",
                  socket, pid, runs, pid);
  } else {
    if (runs == NULL)
      strbuf_printf(&w, "warning: the engine on %s (pid %lld) runs with no config, so it "
                        "denies every command; ", socket, pid);
    else
      strbuf_printf(&w, "warning: the engine on %s (pid %lld) runs the config %s; ", socket,
                    pid, runs);
    strbuf_printf(&w, "this adapter would have given it %s (%s). To run that one, restart "
                      "the engine with it: vigil shutdown --socket %s (or kill %lld), then the "
                      "next tool call starts one with it (unless --no-spawn), or start it "
                      "yourself: vigild --daemon --listen %s --config %s",
                  mcp_config_path, mcp_config_why, socket, pid, socket, mcp_config_path);
  }
  return strbuf_take(&w);
}

void
mcp_config_check(McpEngine *m)
{
  if (!mcp_config_found)
    return;
  json_t *info = NULL;
  if (mcp_engine_call(m, "api_info", NULL, MCP_CONFIG_INFO_TIMEOUT_MS, &info) != 0) {
    fprintf(stderr, "vigil mcp: cannot ask the engine which config it runs: %s\n",
            mcp_engine_error()->msg);
    return;
  }
  json_t *cfg = json_object_get(info, "config");
  json_t *pid = json_object_get(info, "pid");
  if (cfg == NULL || !json_is_integer(pid)) { /* an engine that does not say */
    json_decref(info);
    return;
  }
  const char *runs = json_string_value(json_object_get(cfg, "path"));
  const char *real = json_string_value(json_object_get(cfg, "real_path"));
  const char *sha = json_string_value(json_object_get(cfg, "sha256"));
  ConfigIdentity mine;
  bool readable = config_identity(mcp_config_path, &mine, NULL);
  char *warning = NULL;
  if (runs == NULL || real == NULL || !readable || strcmp(real, mine.real_path) != 0)
    warning = mcp_config_warning_text(m->cli.socket_path, (long long)json_integer_value(pid),
                                      runs, false);
  else if (sha == NULL || strcmp(sha, mine.sha256) != 0)
    warning = mcp_config_warning_text(m->cli.socket_path, (long long)json_integer_value(pid),
                                      runs, true);
  json_decref(info);
  if (warning == NULL)
    return;
  fprintf(stderr, "vigil mcp: %s\n", warning);
  free(atomic_exchange(&mcp_config_warning, warning));
}

void
mcp_config_note(json_t *result)
{
  if (atomic_load(&mcp_config_warning) == NULL)
    return;
  char *warning = atomic_exchange(&mcp_config_warning, NULL);
  if (warning == NULL)
    return;
  json_t *content = json_object_get(result, "content");
  if (json_is_array(content))
    json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", warning));
  free(warning);
}
