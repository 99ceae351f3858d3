/*
 * The subcommands that look at monitors without waiting: list (a table of
 * the session's monitors), status (one monitor in detail), events (its
 * event log, as the engine renders it) and logs (its raw captured bytes).
 */
#include "cli/cli_cmds.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_obj.h"

/* Connects, opens the session and resolves the ID argument into id.
 * Returns 0, or the exit status after reporting why. */
static int
cli_show_open(CliClient *c, const CliParsed *p, char *id)
{
  if (cli_client_connect(c, true, false, 0) != 0 || cli_client_monitor_id(c, p->args[0], id) != 0)
    return cli_client_fail(c);
  return 0;
}

/* Appends text made safe for a terminal (tabs as spaces) and cut to width. */
static void
cli_show_cell(StrBuf *out, const char *text, size_t len, size_t width)
{
  StrBuf safe = STRBUF_INIT;
  cli_fmt_safe(&safe, text, len, false);
  cli_fmt_cut(out, strbuf_cstr(&safe), safe.len, width);
  strbuf_free(&safe);
}

/* How long a monitor has run: until now while it runs, else until it ended.
 * Returns false when the times cannot be read. */
static bool
cli_show_age(const msgpack_object *m, uint64_t *ms)
{
  size_t n;
  int64_t start, end;
  /* A restarted program's age is its own run's (pm2's uptime). */
  const char *s = cli_obj_get_text(m, "run_started_at", &n);
  if (s == NULL)
    s = cli_obj_get_text(m, "started_at", &n);
  if (s == NULL || cli_fmt_parse_time(s, n, &start) != 0)
    return false;
  const char *e = cli_obj_get_text(m, "ended_at", &n);
  if (e == NULL || cli_fmt_parse_time(e, n, &end) != 0)
    end = cli_fmt_now_ms();
  *ms = end > start ? (uint64_t)(end - start) : 0;
  return true;
}

/* "exited", "exited 1", "stopped SIGTERM": the state and, for a monitor
 * that ended badly, how. */
static void
cli_show_state(StrBuf *out, const msgpack_object *m)
{
  size_t n;
  const char *state = cli_obj_get_text(m, "state", &n);
  /* Its program ended and waits to start again (the restart policy). */
  const msgpack_object *restart = cli_obj_get(m, "restart");
  const msgpack_object *next = restart ? cli_obj_get(restart, "next_in_ms") : NULL;
  if (next != NULL && next->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    strbuf_puts(out, "restarting");
    return;
  }
  strbuf_printf(out, "%.*s", (int)n, state ? state : "?");
  int64_t code;
  const char *sig = cli_obj_get_text(m, "signal", &n);
  if (cli_obj_get_int(m, "exit_code", &code) && code != 0)
    strbuf_printf(out, " %lld", (long long)code);
  else if (sig)
    strbuf_printf(out, " %.*s", (int)n, sig);
}

/* --- list --------------------------------------------------------------- */

static const CliOpt cli_list_opts[] = {
  {.name = "all", .short_name = 'a', .help = "include monitors that have ended"},
  {.name = "limit", .arg = "N", .help = "show at most N monitors, newest first (default 50)"},
  {0},
};

/* The widest a COMMAND cell is: enough to tell "npm run dev" from "npm
 * test -- --watch", short enough to leave room for the last line. */
#define CLI_LIST_COMMAND_WIDTH 32

/* Appends a byte count as a person reads it, the unit after sep: 512 B,
 * 3.4 KiB, 12.0 MiB (sep " ", status) or 512B, 3.4KiB (sep "", a table). */
static void
cli_show_bytes(StrBuf *out, uint64_t n, const char *sep)
{
  if (n < 1024)
    strbuf_printf(out, "%llu%sB", (unsigned long long)n, sep);
  else if (n < 1024 * 1024)
    strbuf_printf(out, "%.1f%sKiB", (double)n / 1024, sep);
  else if (n < 1024ULL * 1024 * 1024)
    strbuf_printf(out, "%.1f%sMiB", (double)n / (1024 * 1024), sep);
  else
    strbuf_printf(out, "%.1f%sGiB", (double)n / (1024.0 * 1024 * 1024), sep);
}

static void cli_status_command(StrBuf *out, const msgpack_object *st);

/* A source's words (docs/sources.md), as `vigil start` takes it: "--file
 * PATH" or "--ws URL", escaped; nothing for a process. */
static void
cli_show_source(StrBuf *out, const msgpack_object *m)
{
  const msgpack_object *src = cli_obj_get(m, "source");
  size_t n;
  const char *kind = src ? cli_obj_get_text(src, "kind", &n) : NULL;
  if (kind == NULL)
    return;
  bool ws = n == 2 && memcmp(kind, "ws", 2) == 0;
  const char *where = cli_obj_get_text(src, ws ? "ws" : "file", &n);
  strbuf_puts(out, ws ? "--ws " : "--file ");
  cli_fmt_safe(out, where ? where : "", where ? n : 0, false);
}

/* The CPU and MEM cells (at col, col + 1) and the COMMAND cell (at
 * cmd_col) of one monitor, from its monitor_status (st, NULL when it could
 * not be had: then each is "-"). The command is the start's argv as shell
 * words (env values are never asked for), cut to CLI_LIST_COMMAND_WIDTH
 * with an ellipsis. */
static void
cli_list_usage_cells(CliTable *t, size_t col, size_t cmd_col, const msgpack_object *st)
{
  StrBuf cell = STRBUF_INIT;
  const msgpack_object *u = st ? cli_obj_get(st, "resource_usage") : NULL;
  if (u != NULL)
    cli_fmt_duration(&cell, cli_obj_get_uint(u, "cpu_ms", 0));
  cli_table_set(t, col, u ? strbuf_cstr(&cell) : "-", kCliColNone);
  strbuf_reset(&cell);
  if (u != NULL)
    cli_show_bytes(&cell, cli_obj_get_uint(u, "memory_peak_bytes", 0), "");
  cli_table_set(t, col + 1, u ? strbuf_cstr(&cell) : "-", kCliColNone);
  strbuf_reset(&cell);
  const msgpack_object *start = st ? cli_obj_get(st, "start") : NULL;
  if (st != NULL) {
    StrBuf words = STRBUF_INIT;
    cli_show_source(&words, st);
    cli_fmt_cut(&cell, strbuf_cstr(&words), words.len, CLI_LIST_COMMAND_WIDTH);
    strbuf_free(&words);
  }
  if (cell.len == 0 && start != NULL && start->type == MSGPACK_OBJECT_MAP) {
    StrBuf words = STRBUF_INIT;
    cli_status_command(&words, start);
    cli_fmt_cut(&cell, strbuf_cstr(&words), words.len, CLI_LIST_COMMAND_WIDTH);
    strbuf_free(&words);
  }
  cli_table_set(t, cmd_col, cell.len ? strbuf_cstr(&cell) : "-", kCliColNone);
  strbuf_free(&cell);
}

/* The widest a PORTS cell is: a few ports, then an ellipsis (vigil status
 * lists them all, with their addresses). */
#define CLI_LIST_PORTS_WIDTH 24

/* Appends the ports of a monitor_list or monitor_status entry (its
 * `ports`: [{port, address}]) as "3000,8080", nothing when it has none. */
static void
cli_show_ports(StrBuf *out, const msgpack_object *m, bool addresses)
{
  const msgpack_object *ports = cli_obj_get(m, "ports");
  if (ports == NULL || ports->type != MSGPACK_OBJECT_ARRAY)
    return;
  for (uint32_t i = 0; i < ports->via.array.size; i++) {
    const msgpack_object *p = &ports->via.array.ptr[i];
    if (out->len > 0)
      strbuf_puts(out, addresses ? ", " : ",");
    strbuf_printf(out, "%llu", (unsigned long long)cli_obj_get_uint(p, "port", 0));
    size_t n;
    const char *a = addresses ? cli_obj_get_text(p, "address", &n) : NULL;
    if (a != NULL) {
      strbuf_puts(out, " on ");
      cli_fmt_safe(out, a, n, false);
    }
  }
}

/* One monitor_list entry as a row of the table; with c, also the cells
 * its monitor_status gives (command, CPU time, peak memory). */
static void
cli_list_row(CliTable *t, const msgpack_object *m, CliClient *c)
{
  const msgpack_object *counters = cli_obj_get(m, "counters");
  StrBuf cell = STRBUF_INIT;
  size_t n;
  const char *text;
  size_t col = 0;
  cli_table_row(t);
  size_t idn;
  const char *id = cli_obj_get_text(m, "monitor_id", &idn);
  cli_show_cell(&cell, id ? id : "", idn, 64);
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColCyan);
  strbuf_reset(&cell);
  /* A monitor started without a label is labelled with its id: say it once. */
  text = cli_obj_get_text(m, "label", &n);
  if (text == NULL || (id && n == idn && memcmp(text, id, n) == 0))
    strbuf_puts(&cell, "-");
  else
    cli_show_cell(&cell, text, n, 24);
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColNone);
  strbuf_reset(&cell);
  cli_show_state(&cell, m);
  cli_table_set(t, col++, strbuf_cstr(&cell), cli_cmds_state_colour(m));
  strbuf_reset(&cell);
  int64_t pid;
  if (cli_obj_get_is(m, "state", "running") && cli_obj_get_int(m, "pid", &pid))
    strbuf_printf(&cell, "%lld", (long long)pid);
  else
    strbuf_puts(&cell, "-");
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColNone);
  strbuf_reset(&cell);
  uint64_t age;
  if (cli_show_age(m, &age))
    cli_fmt_duration(&cell, age);
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColNone);
  strbuf_reset(&cell);
  uint64_t restarts = cli_obj_get_uint(m, "restarts", 0);
  strbuf_printf(&cell, "%llu", (unsigned long long)restarts);
  cli_table_set(t, col++, strbuf_cstr(&cell), restarts ? kCliColYellow : kCliColNone);
  strbuf_reset(&cell);
  CliReply status;
  bool have_status = false;
  if (c != NULL) {
    /* A monitor gone between the list and this call (forgotten, another
     * session's) only loses these cells; the error is not the list's. */
    CliError saved = c->err;
    char idz[64];
    snprintf(idz, sizeof idz, "%.*s", (int)idn, id ? id : "");
    have_status = id != NULL && cli_client_monitor_status(c, idz, kCliStartRedacted, &status) == 0;
    c->err = saved;
    cli_list_usage_cells(t, col, col + 5, have_status ? status.result : NULL);
    col += 2;
  }
  strbuf_printf(&cell, "%llu", (unsigned long long)cli_obj_get_uint(counters, "lines", 0));
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColNone);
  strbuf_reset(&cell);
  uint64_t matched = cli_obj_get_uint(counters, "matched", 0);
  strbuf_printf(&cell, "%llu", (unsigned long long)matched);
  cli_table_set(t, col++, strbuf_cstr(&cell), matched ? kCliColYellow : kCliColNone);
  strbuf_reset(&cell);
  StrBuf ports = STRBUF_INIT;
  cli_show_ports(&ports, m, false);
  cli_fmt_cut(&cell, ports.len ? strbuf_cstr(&ports) : "-", ports.len ? ports.len : 1,
              CLI_LIST_PORTS_WIDTH);
  strbuf_free(&ports);
  cli_table_set(t, col++, strbuf_cstr(&cell), kCliColNone);
  strbuf_reset(&cell);
  if (c != NULL)
    col++; /* COMMAND, set with the usage cells */
  if (have_status)
    cli_reply_free(&status);
  /* Cut again by the table to what the terminal has left; this bound
   * only keeps a long line from being escaped in full first. */
  text = cli_obj_get_text(m, "last_line", &n);
  cli_show_cell(&cell, text ? text : "", n, 1024);
  cli_table_set(t, col, strbuf_cstr(&cell), kCliColDim);
  strbuf_free(&cell);
}

void
cli_show_monitor_table(const msgpack_object *list, CliClient *c)
{
  static const char *const plain[] = {"ID",       "LABEL", "STATE",   "PID",   "UPTIME",
                                      "RESTARTS", "LINES", "MATCHED", "PORTS", "LAST LINE"};
  static const bool plain_right[] = {false, false, false, true, true,
                                     true,  true,  true,  false, false};
  static const char *const full[] = {"ID",    "LABEL",   "STATE",   "PID",     "UPTIME",
                                     "RESTARTS", "CPU",   "MEM",     "LINES",   "MATCHED",
                                     "PORTS", "COMMAND", "LAST LINE"};
  static const bool full_right[] = {false, false, false, true, true,  true,  true,
                                    true,  true,  true,  false, false, false};
  CliTable t;
  if (c != NULL)
    cli_table_init(&t, 13, full, full_right);
  else
    cli_table_init(&t, 10, plain, plain_right);
  for (uint32_t i = 0; list && list->type == MSGPACK_OBJECT_ARRAY && i < list->via.array.size;
       i++)
    cli_list_row(&t, &list->via.array.ptr[i], c);
  cli_table_print(&t, stdout, cli_fmt_width());
  cli_table_free(&t);
}

static int
cli_list_run(CliClient *c, const CliParsed *p)
{
  uint64_t limit;
  int rc = cli_cmds_number(p, "limit", 50, &limit);
  if (rc != 0)
    return rc;
  if (limit < 1 || limit > 10000)
    return cli_opts_usage_error(p->spec, "--limit must be 1..10000");
  bool all = cli_opts_has(p, "all");
  CliReq req;
  cli_req_init(&req);
  cli_req_bool(&req, "include_exited", all);
  cli_req_uint(&req, "limit", limit);
  CliReply reply;
  rc = cli_client_connect(c, true, false, 0) == 0 &&
               cli_client_call(c, "monitor_list", &req, CLI_CALL_TIMEOUT_MS, &reply) == 0
           ? 0
           : -1;
  cli_req_free(&req);
  if (rc != 0)
    return cli_client_fail(c);
  if (c->json) {
    cli_client_print_json(reply.result);
    cli_reply_free(&reply);
    return 0;
  }
  const msgpack_object *list = cli_obj_get(reply.result, "monitors");
  uint32_t count = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
  uint64_t total = cli_obj_get_uint(reply.result, "total", count);
  if (count == 0) {
    printf("no %smonitors in session \"%s\" (%svigil sessions lists every session)\n",
           all ? "" : "running ", c->session, all ? "" : "--all shows ended ones too; ");
    cli_reply_free(&reply);
    return 0;
  }
  cli_show_monitor_table(list, c);
  if (total > count)
    printf("(%u of %llu shown; --limit shows more)\n", count, (unsigned long long)total);
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_list = {
  .spec = {.name = "list", .args = "", .summary = "list the session's monitors",
           .about = "List the session's running monitors (with --all, the ended ones too), newest\n"
           "first: id, label, state, pid, uptime (how long its program has run, or ran:\n"
           "since its last restart), restarts (--restart), CPU time, peak memory, lines,\n"
           "matched lines, the TCP ports its processes listen on (found from /proc), its\n"
           "command (cut at 32 columns) and the last line, cut to the terminal's width. A program that ended and waits to start again is shown as\n"
           "\"restarting\". The session is --session, else $VIGIL_SESSION, else the\n"
           "project's this directory is in: the one vigil mcp started there works in, so\n"
           "an agent's monitors are listed.\n"
           "vigil sessions lists every session and its monitors. vigil ps and vigil ls are\n"
           "other names for it.",
           .opts = cli_list_opts},
  .run = cli_list_run,
};

/* --- status ------------------------------------------------------------- */

static const CliOpt cli_no_opts[] = {{0}};

/* Prints "  key          value" for the text at key of m, when present. */
static void
cli_status_text(const char *title, const msgpack_object *m, const char *key)
{
  size_t n;
  const char *text = cli_obj_get_text(m, key, &n);
  if (text == NULL)
    return;
  StrBuf safe = STRBUF_INIT;
  cli_fmt_safe(&safe, text, n, false);
  printf("  %-13s %s\n", title, strbuf_cstr(&safe));
  strbuf_free(&safe);
}

static const CliOpt cli_status_opts[] = {
  {.name = "show-start",
   .help = "also show how it was started: its command, cwd and env names\n(the values hidden)"},
  {.name = "show-env", .help = "as --show-start, with the env values (they may be secrets)"},
  {0},
};

/* Appends the text s (len bytes: a word of a command, a name) made safe for
 * a terminal, as one shell word. */
static void
cli_status_word(StrBuf *out, const char *s, size_t len)
{
  StrBuf safe = STRBUF_INIT;
  cli_fmt_safe(&safe, s, len, false);
  cli_client_shell_word(out, strbuf_cstr(&safe));
  strbuf_free(&safe);
}

/* Appends the command of a start map (st) as words a shell reads back the
 * same: its argv, or "/bin/sh -c COMMAND" in shell mode. */
static void
cli_status_command(StrBuf *out, const msgpack_object *st)
{
  size_t n;
  const msgpack_object *argv = cli_obj_get(st, "argv");
  const char *command = cli_obj_get_text(st, "command", &n);
  if (argv != NULL && argv->type == MSGPACK_OBJECT_ARRAY) {
    for (uint32_t i = 0; i < argv->via.array.size; i++) {
      size_t len;
      const char *w = cli_obj_text(&argv->via.array.ptr[i], &len);
      if (i > 0)
        strbuf_putc(out, ' ');
      cli_status_word(out, w ? w : "", w ? len : 0);
    }
  } else if (command != NULL) {
    strbuf_puts(out, "/bin/sh -c ");
    cli_status_word(out, command, n);
  }
}

/* Prints how the monitor was started, from monitor_status's `start` (st):
 * the command as words a shell reads back the same, its cwd, and its env,
 * names only unless the values were asked for (they came back nil). */
static void
cli_status_start(const msgpack_object *st)
{
  StrBuf line = STRBUF_INIT;
  cli_status_command(&line, st);
  printf("  %-13s %s\n", "command", strbuf_cstr(&line));
  cli_status_text("cwd", st, "cwd");
  const msgpack_object *env = cli_obj_get(st, "env");
  if (env != NULL && env->type == MSGPACK_OBJECT_MAP && env->via.map.size > 0) {
    strbuf_reset(&line);
    bool hidden = false;
    for (uint32_t i = 0; i < env->via.map.size; i++) {
      const msgpack_object_kv *kv = &env->via.map.ptr[i];
      size_t klen, vlen;
      const char *k = cli_obj_text(&kv->key, &klen), *v = cli_obj_text(&kv->val, &vlen);
      if (i > 0)
        strbuf_putc(&line, ' ');
      cli_fmt_safe(&line, k ? k : "", k ? klen : 0, false);
      if (v != NULL) {
        StrBuf value = STRBUF_INIT;
        cli_fmt_safe(&value, v, vlen, false);
        strbuf_putc(&line, '=');
        cli_client_shell_word(&line, strbuf_cstr(&value));
        strbuf_free(&value);
      } else {
        hidden = true;
      }
    }
    printf("  %-13s %s%s\n", "env", strbuf_cstr(&line),
           hidden ? " (values hidden: --show-env shows them)" : "");
  }
  strbuf_free(&line);
}

static int
cli_status_run(CliClient *c, const CliParsed *p)
{
  char id[64];
  int rc = cli_show_open(c, p, id);
  if (rc != 0)
    return rc;
  CliStartView view = cli_opts_has(p, "show-env")     ? kCliStartRevealed
                      : cli_opts_has(p, "show-start") ? kCliStartRedacted
                                                      : kCliStartNone;
  CliReply reply;
  rc = cli_client_monitor_status(c, id, view, &reply);
  if (rc != 0)
    return cli_client_fail(c);
  const msgpack_object *m = reply.result;
  if (c->json) {
    cli_client_print_json(m);
    cli_reply_free(&reply);
    return 0;
  }
  StrBuf sb = STRBUF_INIT;
  size_t n;
  const char *label = cli_obj_get_text(m, "label", &n);
  printf("%s%s%s", cli_fmt_sgr(kCliColBold), id, cli_fmt_reset(kCliColBold));
  if (label && !(n == strlen(id) && memcmp(label, id, n) == 0)) {
    cli_fmt_safe(&sb, label, n, false);
    printf(" (%s)", strbuf_cstr(&sb));
    strbuf_reset(&sb);
  }
  putchar('\n');
  CliColour col = cli_cmds_state_colour(m);
  const char *state = cli_obj_get_text(m, "state", &n);
  strbuf_printf(&sb, "%.*s", (int)n, state ? state : "?");
  StrBuf how = STRBUF_INIT;
  cli_cmds_ending(&how, m);
  if (how.len)
    strbuf_printf(&sb, " (%s)", strbuf_cstr(&how));
  strbuf_free(&how);
  printf("  %-13s %s%s%s\n", "state", cli_fmt_sgr(col), strbuf_cstr(&sb), cli_fmt_reset(col));
  strbuf_reset(&sb);
  cli_status_text("description", m, "description");
  cli_status_text("mode", m, "mode");
  cli_status_text("notify", m, "notify");
  StrBuf source = STRBUF_INIT;
  cli_show_source(&source, m);
  if (source.len > 0)
    printf("  %-13s %s\n", "source", strbuf_cstr(&source));
  strbuf_free(&source);
  int64_t pid;
  if (cli_obj_get_int(m, "pid", &pid))
    printf("  %-13s %lld%s\n", "pid", (long long)pid,
           cli_obj_get_is(m, "state", "running") ? "" : " (ended)");
  cli_show_ports(&sb, m, true);
  if (sb.len > 0)
    printf("  %-13s %s\n", "ports", strbuf_cstr(&sb));
  strbuf_reset(&sb);
  cli_status_text("quiet since", m, "quiet_since");
  cli_status_text("ready at", m, "ready_at");
  cli_status_text("health", m, "health");
  cli_status_text("started", m, "started_at");
  cli_status_text("ended", m, "ended_at");
  cli_fmt_duration(&sb, cli_obj_get_uint(m, "duration_ms", 0));
  printf("  %-13s %s\n", "duration", strbuf_cstr(&sb));
  strbuf_reset(&sb);
  const msgpack_object *k = cli_obj_get(m, "counters");
  printf("  %-13s %llu (%llu matched, %llu unmatched, %llu dropped from the ring)\n", "lines",
         (unsigned long long)cli_obj_get_uint(k, "lines", 0),
         (unsigned long long)cli_obj_get_uint(k, "matched", 0),
         (unsigned long long)cli_obj_get_uint(k, "unmatched", 0),
         (unsigned long long)cli_obj_get_uint(k, "dropped", 0));
  printf("  %-13s %llu (%llu lines withheld by the rate limit)\n", "notifications",
         (unsigned long long)cli_obj_get_uint(k, "notifications", 0),
         (unsigned long long)cli_obj_get_uint(k, "suppressed", 0));
  cli_show_bytes(&sb, cli_obj_get_uint(k, "stdout_bytes", 0), " ");
  strbuf_puts(&sb, " stdout, ");
  cli_show_bytes(&sb, cli_obj_get_uint(k, "stderr_bytes", 0), " ");
  strbuf_puts(&sb, " stderr");
  printf("  %-13s %s\n", "output", strbuf_cstr(&sb));
  strbuf_reset(&sb);
  const msgpack_object *u = cli_obj_get(m, "resource_usage");
  cli_fmt_duration(&sb, cli_obj_get_uint(u, "cpu_ms", 0));
  strbuf_puts(&sb, " cpu, ");
  cli_show_bytes(&sb, cli_obj_get_uint(u, "memory_peak_bytes", 0), " ");
  strbuf_puts(&sb, " peak memory");
  printf("  %-13s %s\n", "usage", strbuf_cstr(&sb));
  strbuf_free(&sb);
  cli_status_text("last line", m, "last_line");
  if (view != kCliStartNone && cli_obj_get(m, "start") != NULL)
    cli_status_start(cli_obj_get(m, "start"));
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_status = {
  .spec = {.name = "status", .args = "ID", .summary = "show one monitor in detail",
           .about = "Show one monitor: its state and how it ended, mode, pid, the TCP ports its\n"
           "processes listen on, since when it is quiet (--quiet-after), times, line and\n"
           "notification counts, bytes written, resource usage and its last line. How it\n"
           "was started (its command and env, which may hold secrets) only on asking:\n"
           "--show-start, or --show-env for the env values too.",
           .opts = cli_status_opts, .min_args = 1, .max_args = 1},
  .run = cli_status_run,
};

/* --- events ------------------------------------------------------------- */

static const CliOpt cli_events_opts[] = {
  {.name = "since", .arg = "N", .help = "only the events after event id N"},
  {0},
};

static int
cli_events_run(CliClient *c, const CliParsed *p)
{
  uint64_t since;
  int rc = cli_cmds_number(p, "since", 0, &since);
  if (rc != 0)
    return rc;
  char id[64];
  if ((rc = cli_show_open(c, p, id)) != 0)
    return rc;
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  cli_req_uint(&req, "since_event_id", since);
  CliReply reply;
  rc = cli_client_call(c, "monitor_events", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return cli_client_fail(c);
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    size_t n;
    const char *text = cli_obj_get_text(reply.result, "text", &n);
    if (text && n) {
      fwrite(text, 1, n, stdout);
      if (text[n - 1] != '\n')
        putchar('\n');
    }
  }
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_events = {
  .spec = {.name = "events", .args = "ID", .summary = "show a monitor's event log",
           .about =
           "Print a monitor's event log (started, matches, how it ended), one event a line,\n"
           "as the engine renders it: [id] time type details.",
           .opts = cli_events_opts, .min_args = 1, .max_args = 1},
  .run = cli_events_run,
};

/* --- logs --------------------------------------------------------------- */

static const CliOpt cli_logs_opts[] = {
  {.name = "stdout", .help = "only the stdout capture (written to stdout)"},
  {.name = "stderr", .help = "only the stderr capture (written to stdout)"},
  {.name = "offset", .arg = "N", .help = "start at absolute byte N of the stream (default 0)"},
  {.name = "limit", .arg = "N", .help = "at most N bytes of each stream"},
  {.name = "tail", .short_name = 'n', .arg = "N",
   .help = "only the last N lines of each stream (with -f, of each\nmonitor)"},
  {.name = "follow", .short_name = 'f',
   .help = "follow every running monitor's lines, each after its\nlabel, interleaved as they come "
   "(with ID: that one,\nuntil it ends)"},
  {0},
};

/* Bytes asked for per call, well under the engine's per-connection output
 * cap (rpc.max_output_bytes, at least 64 KiB... 16 MiB by default). */
#define CLI_LOGS_CHUNK (1u << 20)

/* Writes all of len bytes to fd. Returns 0 or -1. */
static int
cli_logs_write(int fd, const char *p, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes the last n lines of buf to fd (a last line without its newline
 * counts as one). Returns 0 or -1. */
static int
cli_logs_tail(int fd, const StrBuf *buf, uint64_t n)
{
  if (n == 0 || buf->len == 0)
    return 0;
  size_t start = buf->len;
  if (start > 0 && buf->data[start - 1] == '\n')
    start--; /* the last line's own newline */
  for (uint64_t seen = 0; start > 0; start--) {
    if (buf->data[start - 1] == '\n' && ++seen == n)
      break;
  }
  return cli_logs_write(fd, buf->data + start, buf->len - start);
}

/* Copies one stream's capture (from offset, at most limit bytes) to fd,
 * a chunk per call; with keep, appends it there instead (for --tail: the
 * capture is bounded by the engine's monitor.capture_max_bytes). Returns
 * 0, or the exit status after reporting why. */
static int
cli_logs_stream(CliClient *c, const char *id, const char *stream, uint64_t offset,
                uint64_t limit, int fd, bool note, StrBuf *keep)
{
  bool first = true;
  for (;;) {
    uint64_t want = limit < CLI_LOGS_CHUNK ? limit : CLI_LOGS_CHUNK;
    CliReq req;
    cli_req_init(&req);
    cli_req_str(&req, "monitor_id", id);
    cli_req_str(&req, "stream", stream);
    cli_req_uint(&req, "offset", offset);
    cli_req_uint(&req, "limit", want);
    CliReply reply;
    int rc = cli_client_call(c, "monitor_logs", &req, CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc != 0)
      return cli_client_fail(c);
    size_t n;
    const char *bytes = cli_obj_get_text(reply.result, stream, &n);
    bool truncated = cli_obj_get_bool(reply.result, "truncated");
    if (truncated && first && n == want && limit > want) {
      /* The start was evicted, so this chunk began at the oldest kept byte,
       * whose offset the engine does not say: take the rest in one call
       * from there instead of guessing where the next chunk starts. */
      cli_reply_free(&reply);
      cli_req_init(&req);
      cli_req_str(&req, "monitor_id", id);
      cli_req_str(&req, "stream", stream);
      cli_req_uint(&req, "offset", offset);
      if (limit != UINT64_MAX)
        cli_req_uint(&req, "limit", limit);
      rc = cli_client_call(c, "monitor_logs", &req, CLI_CALL_TIMEOUT_MS, &reply);
      cli_req_free(&req);
      if (rc != 0)
        return cli_client_fail(c);
      bytes = cli_obj_get_text(reply.result, stream, &n);
      want = limit;
    }
    if (truncated && first && note)
      fprintf(stderr,
              "vigil: the start of %s's %s was evicted from the capture; it begins at the "
              "oldest byte kept\n",
              id, stream);
    first = false;
    if (keep != NULL)
      strbuf_append(keep, bytes, n);
    else if (n > 0 && cli_logs_write(fd, bytes, n) != 0) {
      cli_reply_free(&reply);
      return CLI_EXIT_FAILURE;
    }
    cli_reply_free(&reply);
    if (n < want || truncated)
      return 0;
    offset += n;
    if (limit != UINT64_MAX)
      limit -= n;
    if (limit == 0)
      return 0;
  }
}

/* cli_logs_stream to fd, or with tail (--tail given: tail_n > 0 or the
 * option present) only the last tail_n lines of it. */
static int
cli_logs_copy(CliClient *c, const char *id, const char *stream, uint64_t offset, uint64_t limit,
              int fd, bool note, const uint64_t *tail)
{
  if (tail == NULL)
    return cli_logs_stream(c, id, stream, offset, limit, fd, note, NULL);
  StrBuf keep = STRBUF_INIT;
  int rc = cli_logs_stream(c, id, stream, offset, limit, fd, note, &keep);
  if (rc == 0 && cli_logs_tail(fd, &keep, *tail) != 0)
    rc = CLI_EXIT_FAILURE;
  strbuf_free(&keep);
  return rc;
}

static int
cli_logs_run(CliClient *c, const CliParsed *p)
{
  uint64_t offset, limit, tail_n;
  int rc;
  if ((rc = cli_cmds_number(p, "offset", 0, &offset)) != 0 ||
      (rc = cli_cmds_number(p, "limit", UINT64_MAX, &limit)) != 0 ||
      (rc = cli_cmds_number(p, "tail", 0, &tail_n)) != 0)
    return rc;
  const uint64_t *tail = cli_opts_has(p, "tail") ? &tail_n : NULL;
  bool out = cli_opts_has(p, "stdout"), err = cli_opts_has(p, "stderr");
  if (out && err)
    return cli_opts_usage_error(p->spec, "give --stdout or --stderr, not both (neither: both)");
  if (cli_opts_has(p, "follow")) {
    if (cli_opts_has(p, "offset") || cli_opts_has(p, "limit") || p->json)
      return cli_opts_usage_error(p->spec, "-f does not go with --offset, --limit or --json");
    return cli_tail_run(c, out ? "stdout" : err ? "stderr" : "all", p->nargs ? p->args[0] : NULL,
                        true, tail != NULL, tail_n);
  }
  if (p->nargs == 0)
    return cli_opts_usage_error(p->spec, "missing ID (or -f to follow every monitor)");
  if (tail && p->json)
    return cli_opts_usage_error(p->spec, "--tail does not go with --json (use --offset/--limit)");
  char id[64];
  if ((rc = cli_show_open(c, p, id)) != 0)
    return rc;
  if (c->json) {
    CliReq req;
    cli_req_init(&req);
    cli_req_str(&req, "monitor_id", id);
    cli_req_str(&req, "stream", out ? "stdout" : err ? "stderr" : "both");
    cli_req_uint(&req, "offset", offset);
    if (limit != UINT64_MAX)
      cli_req_uint(&req, "limit", limit);
    CliReply reply;
    rc = cli_client_call(c, "monitor_logs", &req, CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc != 0)
      return cli_client_fail(c);
    cli_client_print_json(reply.result);
    cli_reply_free(&reply);
    return 0;
  }
  fflush(stdout);
  /* Both streams: each goes where the process wrote it, so that
   * `vigil logs ID >out 2>err` splits them back. One stream: to stdout. */
  if (out || err)
    return cli_logs_copy(c, id, out ? "stdout" : "stderr", offset, limit, STDOUT_FILENO, true,
                         tail);
  rc = cli_logs_copy(c, id, "stdout", offset, limit, STDOUT_FILENO, false, tail);
  if (rc == 0)
    rc = cli_logs_copy(c, id, "stderr", offset, limit, STDERR_FILENO, false, tail);
  return rc;
}

const CliCommand cli_cmd_logs = {
  .spec = {.name = "logs", .args = "[ID]", .summary = "write a monitor's raw captured bytes",
           .about =
           "Write the bytes a monitor's process wrote, exactly as written (colours and all),\n"
           "from the engine's capture (the last monitor.capture_max_bytes of each stream).\n"
           "Without --stdout or --stderr, its stdout goes to stdout and its stderr to stderr.\n"
           "--tail N keeps the last N lines of each. With -f, every running monitor's lines\n"
           "(ANSI escapes removed) after its label, interleaved as they come, monitors\n"
           "started later too, until Ctrl-C or the engine's end; with an ID, that one's.",
           .opts = cli_logs_opts, .max_args = 1},
  .run = cli_logs_run,
};

/* --- __complete-ids (for the shell completions) -------------------------- */

/* Prints the ids of the session's monitors, ended ones too, newest first,
 * then their labels (those that are not their id), one a line: the words
 * an ID argument may be. Silent on any failure (no engine, no session): a
 * completion must never print an error into the command line being typed. */
static int
cli_complete_ids_run(CliClient *c, const CliParsed *p)
{
  (void)p;
  CliReq req;
  cli_req_init(&req);
  cli_req_bool(&req, "include_exited", true);
  cli_req_uint(&req, "limit", 200);
  CliReply reply;
  int rc = cli_client_connect(c, true, false, 0) == 0 &&
                   cli_client_call(c, "monitor_list", &req, CLI_CALL_TIMEOUT_MS, &reply) == 0
               ? 0
               : -1;
  cli_req_free(&req);
  if (rc != 0)
    return CLI_EXIT_FAILURE;
  const msgpack_object *list = cli_obj_get(reply.result, "monitors");
  uint32_t count = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < count; i++) {
      const msgpack_object *m = &list->via.array.ptr[i];
      size_t idn, ln;
      const char *id = cli_obj_get_text(m, "monitor_id", &idn);
      const char *label = cli_obj_get_text(m, "label", &ln);
      const char *word = pass == 0 ? id : label;
      size_t wn = pass == 0 ? idn : ln;
      /* A label that is its id, or that a shell could not take as one
       * word, is left out. */
      if (word == NULL || (pass == 1 && id && ln == idn && memcmp(label, id, ln) == 0) ||
          memchr(word, '\n', wn) || memchr(word, ' ', wn) || memchr(word, '\t', wn))
        continue;
      printf("%.*s\n", (int)wn, word);
    }
  }
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_complete_ids = {
  .spec = {.name = "__complete-ids", .args = "",
           .summary = "the ids and labels of the session's monitors, for completion",
           .about =
           "Print the session's monitor ids, then their labels, one a line (ended ones too),\n"
           "and nothing at all when the engine cannot be reached: what the shell completions\n"
           "offer for an ID.",
           .opts = cli_no_opts},
  .run = cli_complete_ids_run,
};
