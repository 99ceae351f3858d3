/*
 * `vigil mcp`: an MCP server on stdio that is a client of vigild
 * (docs/mcp.md). It speaks JSON-RPC 2.0, one JSON object per line, to the
 * harness (mcp_rpc.c) and msgpack-rpc to the engine (mcp_engine.c).
 * Requests are served concurrently: this thread reads stdin and answers
 * what needs no engine; each tools/call runs in a thread of its own
 * (mcp_calls.h, bounded), and the engine's connection is the link's thread's
 * (mcp_link.c), which routes answers by msgid and pushes notifications, so
 * a monitor_wait holds back nothing else; bad input is answered with its JSON-RPC error
 * and the server goes on; stdout carries nothing but protocol, logs go to
 * stderr. stdin's end ends the adapter
 * with 0, and the monitors keep running in the engine; the engine's end
 * does not end it: the link reconnects (mcp_engine.h) while it serves.
 *
 * With --nats URL --engine NAME the engine is another machine's, reached
 * through the broker (docs/fleet.md section 6, "vigil mcp and hooks"): the
 * same tools on the session's own request subject, its notifications read
 * live from its subject, none started (there is none to start here), and
 * no config of this machine's compared with that engine's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_cmds.h"
#include "mcp/mcp_calls.h"
#include "mcp/mcp_config.h"
#include "mcp/mcp_deliver.h"
#include "mcp/mcp_io.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_tools.h"

static const CliOpt cli_mcp_opts[] = {
  {.name = "profile", .arg = "NAME[,NAME]", .repeat = true,
   .help = "which tools to list: vigil (default), watch_process, process,\nmonitor, hermes"},
  {.name = "delivery", .arg = "MODE",
   .help =
   "how notifications reach the model: auto (default: pushed,\nand with the next tool result), channel, piggyback or poll"},
  {.name = "tool-names", .arg = "STYLE",
   .help = "exact (default) or underscore (process_run for process.run)"},
  {.name = "no-spawn", .help = "do not start an engine when none answers"},
  {.name = "config", .arg = "FILE",
   .help =
   "the config a started engine gets (default: $VIGIL_CONFIG,\n~/.config/vigil/vigil.lua, else the bundled one)"},
  {0},
};

/* --profile values into the server's profile bits. */
static int
cli_mcp_profiles(const CliParsed *p, McpServer *s)
{
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"vigil", kMcpProfileVigil},       {"watch_process", kMcpProfileWatchProcess},
               {"process", kMcpProfileProcess},   {"monitor", kMcpProfileMonitor},
               {"hermes", kMcpProfileHermes}};
  const char *const *vals;
  size_t n = cli_opts_all(p, "profile", &vals);
  s->profiles = n ? 0 : kMcpProfileVigil;
  for (size_t i = 0; i < n; i++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", vals[i]);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      size_t k = 0;
      while (k < sizeof names / sizeof names[0] && strcmp(names[k].name, tok) != 0)
        k++;
      if (k == sizeof names / sizeof names[0])
        return cli_opts_usage_error(p->spec, "--profile: no profile \"%s\" (vigil, "
                                             "watch_process, process, monitor, hermes)", tok);
      s->profiles |= names[k].bit;
    }
  }
  return 0;
}

static int
cli_mcp_options(const CliParsed *p, McpServer *s)
{
  static const char *const deliveries[] = {"auto", "channel", "piggyback", "poll", NULL};
  static const char *const styles[] = {"exact", "underscore", NULL};
  if (cli_cmds_choice(p, "delivery", deliveries) != 0 ||
      cli_cmds_choice(p, "tool-names", styles) != 0)
    return CLI_EXIT_USAGE;
  const char *d = cli_opts_get(p, "delivery");
  s->delivery = d == NULL || strcmp(d, "auto") == 0 ? kMcpAuto
                : strcmp(d, "channel") == 0         ? kMcpChannel
                : strcmp(d, "piggyback") == 0       ? kMcpPiggyback
                                                    : kMcpPoll;
  const char *t = cli_opts_get(p, "tool-names");
  s->underscore = t && strcmp(t, "underscore") == 0;
  s->log_level = 1;
  if (getcwd(s->cwd, sizeof s->cwd) == NULL)
    snprintf(s->cwd, sizeof s->cwd, "/");
  int rc = cli_mcp_profiles(p, s);
  char clash[256];
  if (rc == 0 && mcp_tools_name_clash(s, clash, sizeof clash) != 0)
    return cli_opts_usage_error(p->spec, "%s", clash);
  return rc;
}

/* Serves until stdin ends: reads the harness's lines and dispatches them;
 * a tools/call runs in a thread of its own (mcp_calls.h) and the engine is
 * read by the link's thread (mcp_engine.h), so this thread only waits for
 * stdin. At its end the calls in flight are cancelled (their monitors keep
 * running in the engine). */
static int
cli_mcp_serve(McpServer *s)
{
  McpReader in;
  mcp_reader_init(&in, STDIN_FILENO);
  for (;;) {
    const char *line;
    size_t len;
    McpRead r = mcp_reader_next(&in, &line, &len);
    if (r == kMcpLine) {
      if (len > 0)
        mcp_rpc_line(s, line, len);
      continue;
    }
    if (r == kMcpTooLong) {
      mcp_rpc_too_long(in.line_max);
      continue;
    }
    if (r == kMcpEof)
      break;
    struct pollfd fd = {STDIN_FILENO, POLLIN, 0};
    if (poll(&fd, 1, -1) < 0 && errno != EINTR)
      break;
  }
  mcp_calls_end_all(s);
  mcp_reader_free(&in);
  return 0;
}

static int
cli_mcp_run(CliClient *c, const CliParsed *p)
{
  static McpServer s;
  memset(&s, 0, sizeof s);
  int rc = cli_mcp_options(p, &s);
  if (rc != 0)
    return rc;
  bool nats = c->nats_url != NULL;
  if (nats && cli_opts_has(p, "config"))
    return cli_opts_usage_error(p->spec, "--config is the config of an engine vigil mcp starts; "
                                "through --nats it starts none (the remote engine runs its own)");
  /* c's session is the project's unless one was given (cli_client.h). */
  s.engine.cli = *c;
  s.engine.on_notification = mcp_deliver_on_notification;
  s.engine.ctx = &s;
  mcp_engine_init(&s.engine, !nats && !cli_opts_has(p, "no-spawn"),
                  nats ? NULL : mcp_config_resolve(cli_opts_get(p, "config")));
  if (mcp_engine_open(&s.engine) != 0) {
    fprintf(stderr, "vigil mcp: %s\n", s.engine.cli.err.msg);
    mcp_engine_close(&s.engine);
    return CLI_EXIT_FAILURE;
  }
  if (!nats)
    mcp_config_check(&s.engine);
  if (mcp_deliver_start(&s) != 0) {
    fprintf(stderr, "vigil mcp: cannot start the thread that moves the model cursor\n");
    mcp_engine_close(&s.engine);
    return CLI_EXIT_FAILURE;
  }
  if (nats)
    fprintf(stderr, "vigil mcp: serving session \"%s\" of engine \"%s\" through NATS: requests "
                    "on %s, notifications %s\n",
            s.engine.cli.session, s.engine.cli.engine, s.engine.where,
            s.engine.cli.live ? "read live from the session's subject"
                              : "with tool results only (see above)");
  else
    fprintf(stderr, "vigil mcp: serving session \"%s\" of %s\n", s.engine.cli.session,
            s.engine.where);
  rc = cli_mcp_serve(&s);
  mcp_deliver_stop();
  mcp_engine_close(&s.engine);
  return rc;
}

const CliCommand cli_cmd_mcp = {
  .spec = {.name = "mcp", .args = "",
           .summary = "serve vigil's tools to an agent harness over MCP (stdio)",
           .about =
           "Run an MCP server on stdin and stdout for an agent harness (Claude Code, Codex\n"
           "CLI, Gemini CLI, ...), as a client of the engine: it connects to the socket,\n"
           "starting an engine when none answers, and works in a named session (--session,\n"
           "else $VIGIL_SESSION, else the project's: mcp- and a hash of the project's top\n"
           "directory, the session vigil and vigil hook use there too) that a restarted\n"
           "harness resumes, so no notification is lost or given twice. When the engine\n"
           "restarts or crashes it reconnects (for up to 30 s) and goes on. docs/mcp.md has\n"
           "the set-up per harness.\n"
           "\n"
           "With --nats URL --engine NAME (before or after mcp) it serves the session of an\n"
           "engine on another machine through a NATS server instead, starting none; the\n"
           "NATS user needs publish on vigil.NAME.SESSION.> and subscribe on\n"
           "vigil.NAME.SESSION.n and its inbox (docs/fleet.md section 6, \"vigil mcp and\n"
           "hooks\").",
           .opts = cli_mcp_opts},
  .run = cli_mcp_run,
};
