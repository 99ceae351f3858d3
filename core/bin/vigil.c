/*
 * vigil, the command-line client of vigild: a person at a terminal starts,
 * lists, reads, waits on and stops monitors in the same engine an agent
 * uses, over its Unix socket (docs/cli.md).
 *
 *   vigil [--socket PATH] [--session NAME] [--json] COMMAND [OPTIONS] [ARGS...]
 *   vigil --version | --help | help [COMMAND]
 *
 * This file only finds the subcommand and hands over: the options every
 * subcommand shares may come before its name (read here) or after it (read
 * with its own options). Exit status: what the subcommand returns; 2 for a
 * usage error; 1 when the engine refuses or cannot be reached.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli_cmds.h"
#include "cli/cli_fmt.h"
#include "cli/cli_natsurl.h"
#include "base/strbuf.h"
#include "spec/fleet_names.h"
#include "base/version.h"

/* The usage error for a word that names no subcommand, with the closest
 * one when it is close ("strat": did you mean "start"?). */
static int
vigil_no_command(const char *word)
{
  StrBuf near = STRBUF_INIT;
  if (cli_cmds_suggest(word, &near)) {
    int rc = cli_opts_usage_error(NULL, "no command \"%s\"; did you mean %s?", word,
                                  strbuf_cstr(&near));
    strbuf_free(&near);
    return rc;
  }
  strbuf_free(&near);
  return cli_opts_usage_error(NULL, "no command \"%s\" (try: start, list, status, output, "
                                    "logs, events, wait, stop, restart, run, watch, mcp, hook)",
                              word);
}

/* `vigil help [COMMAND]`: the top-level help, or one subcommand's. */
static int
vigil_help(int argc, char **argv, int i)
{
  if (i + 1 >= argc) {
    cli_cmds_help(stdout);
    return 0;
  }
  const CliCommand *cmd = cli_cmds_find(argv[i + 1]);
  if (cmd == NULL)
    return vigil_no_command(argv[i + 1]);
  cli_opts_help(&cmd->spec, stdout);
  return 0;
}

/* The commands that work through NATS (docs/fleet.md section 6): those
 * that need no notification stream, which a fleet reads from JetStream,
 * and mcp and hook, which read their session's from its subject
 * (cli_natslive.h) and take from the engine's model cursor. */
static const char *const vigil_nats_commands[] = {"start", "list", "status",   "output", "logs",
                                                  "stop",  "mcp",  "hook", "sessions", "setup",
                                                  NULL};

/* --nats URL and --engine NAME: checks them and points client at NATS.
 * 0, or the usage error's status. */
static int
vigil_nats_options(const CliCommand *cmd, const CliParsed *parsed, CliClient *client)
{
  if (parsed->nats == NULL && parsed->engine == NULL)
    return 0;
  if (parsed->nats == NULL || parsed->nats[0] == '\0')
    return cli_opts_usage_error(parsed->spec, "--engine names an engine reached through NATS: "
                                "give --nats URL too");
  if (parsed->engine == NULL)
    return cli_opts_usage_error(parsed->spec, "--nats needs --engine NAME, the engine's name "
                                "in the fleet (vigild --nats-engine)");
  if (parsed->socket != NULL)
    return cli_opts_usage_error(parsed->spec, "--socket and --nats name two ways to the engine: "
                                "give one");
  const char *why = cli_natsurl_problem(parsed->nats);
  if (why != NULL) {
    char shown[NATS_URL_MAX + 1];
    StrBuf q = STRBUF_INIT;
    if (strlen(parsed->nats) <= NATS_URL_MAX) {
      cli_natsurl_shown(shown, parsed->nats);
      cli_fmt_safe(&q, shown, strlen(shown), false);
    }
    int rc = cli_opts_usage_error(parsed->spec,
                                  "--nats: \"%s\" is not a NATS URL: %s (give nats://HOST:PORT, "
                                  "tls://HOST:PORT or HOST:PORT, several joined by commas)",
                                  strbuf_cstr(&q), why);
    strbuf_free(&q);
    return rc;
  }
  if (!fleet_engine_name_ok(parsed->engine))
    return cli_opts_usage_error(parsed->spec, "--engine: \"%s\" is not an engine name "
                                "([A-Za-z0-9_-], 1 to 64 characters)", parsed->engine);
  size_t i = 0;
  while (vigil_nats_commands[i] && strcmp(vigil_nats_commands[i], cmd->spec.name) != 0)
    i++;
  if (vigil_nats_commands[i] == NULL)
    return cli_opts_usage_error(parsed->spec, "%s does not work through --nats (these do: start, "
                                "list, status, output, logs, stop, mcp, hook, sessions, setup)",
                                cmd->spec.name);
  client->nats_url = parsed->nats;
  client->engine = parsed->engine;
  /* sessions lists every session: the engine's subject; the rest act on
   * the session alone, on its subject, so a NATS user granted that one
   * session can use them. */
  client->engine_wide = strcmp(cmd->spec.name, "sessions") == 0;
  return 0;
}

int
main(int argc, char **argv)
{
  CliParsed parsed;
  memset(&parsed, 0, sizeof parsed);
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--version") == 0) {
      printf("vigil %s (api level %d)\n", VIGIL_VERSION, VIGIL_API_LEVEL);
      return 0;
    }
    int rc = cli_opts_common(argc, argv, &i, &parsed);
    if (rc == 1)
      continue;
    if (rc != 0)
      return rc;
    return cli_opts_unknown(NULL, argv[i]);
  }
  if (i >= argc) {
    if (parsed.help) {
      cli_cmds_help(stdout);
      return 0;
    }
    fputs("vigil: a command is needed\n\n", stderr);
    cli_cmds_help(stderr);
    return CLI_EXIT_USAGE;
  }
  if (strcmp(argv[i], "help") == 0)
    return vigil_help(argc, argv, i);
  const CliCommand *cmd = cli_cmds_find(argv[i]);
  if (cmd == NULL)
    return vigil_no_command(argv[i]);
  int rc = cli_opts_parse(&cmd->spec, argc - i - 1, argv + i + 1, &parsed);
  if (rc == 0 && parsed.help) {
    cli_opts_help(&cmd->spec, stdout);
  } else if (rc == 0) {
    cli_fmt_init();
    CliClient client;
    switch (cli_client_init(&client, parsed.socket, parsed.session, parsed.json)) {
    case kCliInitOk:
      rc = 0;
      break;
    case kCliInitBadArgument:
      rc = cli_opts_usage_error(parsed.spec, "%s", client.err.msg);
      break;
    case kCliInitNoSession:
      fprintf(stderr, "vigil: %s\n", client.err.msg);
      rc = CLI_EXIT_FAILURE;
      break;
    }
    if (rc == 0)
      rc = vigil_nats_options(cmd, &parsed, &client);
    if (rc == 0) {
      rc = cmd->run(&client, &parsed);
      cli_client_close(&client);
    } else if (cmd == &cli_cmd_hook) {
      rc = CLI_EXIT_FAILURE;
    }
  } else if (cmd == &cli_cmd_hook) {
    /* A harness reads a hook's status 2 as its answer (Claude Code: a
     * blocking error, fed to the model): vigil hook's usage errors are 1. */
    rc = CLI_EXIT_FAILURE;
  }
  cli_opts_free(&parsed);
  fflush(stdout);
  return rc;
}
