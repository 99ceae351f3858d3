/*
 * The table of subcommands, the top-level help, and the small checks that
 * every subcommand's option values go through (durations, numbers,
 * choices), so that a bad value is a usage error (exit status 2) named the
 * same way everywhere, before anything is sent to the engine.
 */
#include "cli/cli_cmds.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli_obj.h"
#include "cli/cli_suggest.h"
#include "base/signals.h"

/* In the order the top-level help lists them. */
static const CliCommand *const cli_cmds_table[] = {
  &cli_cmd_start,  &cli_cmd_list,     &cli_cmd_status, &cli_cmd_output, &cli_cmd_logs,
  &cli_cmd_events, &cli_cmd_wait,     &cli_cmd_stop,   &cli_cmd_restart, &cli_cmd_run,
  &cli_cmd_watch,  &cli_cmd_sessions, &cli_cmd_up,     &cli_cmd_down,  &cli_cmd_groups,
  &cli_cmd_ignore, &cli_cmd_ignored,  &cli_cmd_unignore,
  &cli_cmd_setup,  &cli_cmd_reload,   &cli_cmd_policy, &cli_cmd_engine, &cli_cmd_shutdown,
  &cli_cmd_mcp,    &cli_cmd_hook,     NULL,
};

/* Other names for a command, the words docker and pm2 users type
 * (`docker ps`, `pm2 ls`). Not in the help's list of commands; the command's
 * own help names them. */
static const struct {
  const char *alias;
  const CliCommand *cmd;
} cli_cmds_aliases[] = {
  {"ps", &cli_cmd_list},
  {"ls", &cli_cmd_list},
};

const CliCommand *
cli_cmds_find(const char *name)
{
  for (size_t i = 0; cli_cmds_table[i]; i++)
    if (strcmp(cli_cmds_table[i]->spec.name, name) == 0)
      return cli_cmds_table[i];
  for (size_t i = 0; i < sizeof cli_cmds_aliases / sizeof *cli_cmds_aliases; i++)
    if (strcmp(cli_cmds_aliases[i].alias, name) == 0)
      return cli_cmds_aliases[i].cmd;
  /* Not in the help: what the shell completions call. */
  if (strcmp(name, cli_cmd_complete_ids.spec.name) == 0)
    return &cli_cmd_complete_ids;
  return NULL;
}

bool
cli_cmds_suggest(const char *typed, StrBuf *out)
{
  CliSuggest s;
  cli_suggest_init(&s, typed);
  for (size_t i = 0; cli_cmds_table[i]; i++)
    cli_suggest_offer(&s, cli_cmds_table[i]->spec.name);
  cli_suggest_offer(&s, "help");
  /* Every command as close as the closest: "stup" is one edit from both
   * stop and setup, and naming one would be a coin toss. */
  size_t named = 0;
  for (size_t i = 0; cli_cmds_table[i]; i++) {
    if (cli_suggest_is_near(&s, cli_cmds_table[i]->spec.name))
      strbuf_printf(out, "%s\"%s\"", named++ ? " or " : "", cli_cmds_table[i]->spec.name);
  }
  if (cli_suggest_is_near(&s, "help"))
    strbuf_printf(out, "%s\"help\"", named++ ? " or " : "");
  return named > 0;
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
        "DURATION is 500ms, 30s, 5m, 2h (or 1m30s, 1.5s); a bare number is seconds.\n"
        "Run 'vigil COMMAND --help' for a command's options.\n",
        f);
}

int
cli_cmds_duration(const CliParsed *p, const char *opt, uint64_t min_ms, uint64_t max_ms,
                  uint64_t *ms)
{
  const char *v = cli_opts_get(p, opt);
  if (v == NULL)
    return 0;
  const char *why;
  if (cli_fmt_parse_duration(v, ms, &why) != 0)
    return cli_opts_usage_error(p->spec,
                                "--%s: \"%s\" is not a duration: %s (use 500ms, 30s, 5m, 1h30m, "
                                "7d; a bare number is seconds)",
                                opt, v, why);
  if (*ms < min_ms || *ms > max_ms) {
    StrBuf range = STRBUF_INIT;
    if (max_ms >= CLI_DURATION_MAX_MS)
      strbuf_puts(&range, "at least ");
    cli_fmt_duration(&range, min_ms);
    if (max_ms < CLI_DURATION_MAX_MS) {
      strbuf_puts(&range, "..");
      cli_fmt_duration(&range, max_ms);
    }
    int rc = cli_opts_usage_error(p->spec, "--%s: \"%s\" is out of range (%s)", opt, v,
                                  strbuf_cstr(&range));
    strbuf_free(&range);
    return rc;
  }
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
cli_cmds_last_lines(const CliParsed *p, uint64_t *n)
{
  if (cli_opts_has(p, "limit") && cli_opts_has(p, "tail"))
    return cli_opts_usage_error(p->spec, "--tail is --limit (-n): give one of them");
  return cli_cmds_number(p, cli_opts_has(p, "tail") ? "tail" : "limit", 0, n);
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

int
cli_cmds_end_status(const msgpack_object *m, StrBuf *how)
{
  int64_t code;
  size_t sn = 0, rn = 0;
  const char *sig = cli_obj_get_text(m, "signal", &sn);
  const char *reason = cli_obj_get_text(m, "reason", &rn);
  char signame[32] = "";
  if (sig && sn < sizeof signame) {
    memcpy(signame, sig, sn);
    signame[sn] = '\0';
  }
  /* The engine's reason when it says more than the state. */
  StrBuf why = STRBUF_INIT;
  if (reason)
    strbuf_printf(&why, ": %.*s", (int)rn, reason);
  else if (signame[0])
    strbuf_printf(&why, " (%s)", signame);
  int status;
  if (cli_obj_get_is(m, "state", "stopped")) {
    /* Its reason ("stopped by request (SIGTERM)") says it all. */
    if (reason && rn >= 7 && memcmp(reason, "stopped", 7) == 0)
      strbuf_printf(how, "%.*s", (int)rn, reason);
    else
      strbuf_printf(how, "stopped%s", strbuf_cstr(&why));
    status = CLI_EXIT_STOPPED;
  } else if (cli_obj_get_is(m, "state", "timed_out") ||
             cli_obj_get_is(m, "state", "idle_timeout")) {
    strbuf_printf(how, "%s%s",
                  cli_obj_get_is(m, "state", "timed_out") ? "timed out" : "idle timeout",
                  strbuf_cstr(&why));
    status = CLI_EXIT_TIMED_OUT;
  } else if (cli_obj_get_is(m, "state", "overloaded")) {
    strbuf_printf(how, "stopped for overload%s", strbuf_cstr(&why));
    status = CLI_EXIT_OVERLOADED;
  } else if (cli_obj_get_int(m, "exit_code", &code)) {
    strbuf_printf(how, "exited with status %lld%s", (long long)code, strbuf_cstr(&why));
    status = (int)(code & 0xff);
  } else if (signame[0]) {
    int n = signals_number(signame);
    if (n <= 0 && strspn(signame, "0123456789") == strlen(signame))
      n = atoi(signame);
    strbuf_printf(how, "killed by %s", signame);
    if (reason)
      strbuf_printf(how, ": %.*s", (int)rn, reason);
    status = n > 0 ? 128 + n : CLI_EXIT_RUN_FAILED;
  } else {
    size_t n;
    const char *state = cli_obj_get_text(m, "state", &n);
    strbuf_printf(how, "%.*s%s", (int)n, state ? state : "ended", strbuf_cstr(&why));
    status = CLI_EXIT_RUN_FAILED;
  }
  strbuf_free(&why);
  return status;
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
