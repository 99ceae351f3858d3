/*
 * The table of subcommands, the top-level help, and the small checks that
 * every subcommand's option values go through (durations, numbers,
 * choices), so that a bad value is a usage error (exit status 2) named the
 * same way everywhere, before anything is sent to the engine.
 */
#include "cli_cmds.h"

#include <stdlib.h>
#include <string.h>

#include "cli_obj.h"

/* In the order the top-level help lists them. */
static const CliCommand *const cli_cmds_table[] = {
  &cli_cmd_start, &cli_cmd_list, &cli_cmd_status, &cli_cmd_output, &cli_cmd_logs,
  &cli_cmd_events, &cli_cmd_wait, &cli_cmd_stop, &cli_cmd_run, &cli_cmd_watch, &cli_cmd_mcp, NULL,
};

const CliCommand *
cli_cmds_find(const char *name)
{
  for (size_t i = 0; cli_cmds_table[i]; i++)
    if (strcmp(cli_cmds_table[i]->spec.name, name) == 0)
      return cli_cmds_table[i];
  return NULL;
}

void
cli_cmds_help(FILE *f)
{
  fputs("usage: vigil [--socket PATH] [--session NAME] [--json] COMMAND [ARGS...]\n"
        "       vigil --version | --help | help COMMAND\n"
        "\n"
        "The command-line client of vigild: run commands in the background, see what\n"
        "they print, and be told when it matters, in the same engine an agent uses.\n"
        "\n"
        "Commands:\n",
        f);
  for (size_t i = 0; cli_cmds_table[i]; i++)
    fprintf(f, "  %-8s %s\n", cli_cmds_table[i]->spec.name, cli_cmds_table[i]->spec.summary);
  fputs("\nCommon options (before or after the command name):\n", f);
  cli_opts_help_common(f);
  fputs("\n"
        "A monitor is named by its id (mon_...), a unique start of its id, or its label.\n"
        "DURATION is 500ms, 30s, 5m, 2h (or 1m30s, 1.5s), or plain milliseconds.\n"
        "Run 'vigil COMMAND --help' for a command's options.\n",
        f);
}

int
cli_cmds_duration(const CliParsed *p, const char *opt, uint64_t *ms)
{
  const char *v = cli_opts_get(p, opt);
  if (v == NULL)
    return 0;
  if (cli_fmt_parse_duration(v, ms) != 0)
    return cli_opts_usage_error(p->spec,
                                "--%s: \"%s\" is not a duration (use 500ms, 30s, 5m, 2h or "
                                "milliseconds)",
                                opt, v);
  return 0;
}

int
cli_cmds_number(const CliParsed *p, const char *opt, uint64_t def, uint64_t *out)
{
  const char *v = cli_opts_get(p, opt);
  *out = def;
  if (v == NULL)
    return 0;
  char *end = NULL;
  unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  if (end == NULL || *end != '\0' || strlen(v) > 18)
    return cli_opts_usage_error(p->spec, "--%s: \"%s\" is not a non-negative integer", opt, v);
  *out = n;
  return 0;
}

int
cli_cmds_choice(const CliParsed *p, const char *opt, const char *const *choices)
{
  const char *v = cli_opts_get(p, opt);
  if (v == NULL)
    return 0;
  StrBuf all = STRBUF_INIT;
  for (size_t i = 0; choices[i]; i++) {
    if (strcmp(v, choices[i]) == 0) {
      strbuf_free(&all);
      return 0;
    }
    strbuf_printf(&all, "%s%s", i ? ", " : "", choices[i]);
  }
  int rc = cli_opts_usage_error(p->spec, "--%s must be one of %s, not \"%s\"", opt,
                                strbuf_cstr(&all), v);
  strbuf_free(&all);
  return rc;
}

void
cli_cmds_ending(StrBuf *out, const msgpack_object *map)
{
  int64_t code;
  size_t n;
  const char *sig = cli_obj_get_text(map, "signal", &n);
  if (cli_obj_get_int(map, "exit_code", &code))
    strbuf_printf(out, "exit code %lld", (long long)code);
  else if (sig)
    strbuf_printf(out, "killed by %.*s", (int)n, sig);
}

CliColour
cli_cmds_state_colour(const msgpack_object *entry)
{
  int64_t code = 0;
  if (cli_obj_get_is(entry, "state", "running"))
    return kCliColGreen;
  if (cli_obj_get_is(entry, "state", "stopped"))
    return kCliColYellow;
  if (cli_obj_get_is(entry, "state", "exited") && cli_obj_get_int(entry, "exit_code", &code) &&
      code == 0)
    return kCliColNone;
  return kCliColRed;
}
