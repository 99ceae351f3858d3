/*
 * The subcommands that wait for the engine to tell them something: output
 * (and --follow), wait, and watch. None of them polls: each blocks on the
 * connection until the engine sends something, with monitor_wait as the
 * first-class way to learn of a monitor's events and the session's pushed
 * notifications as the way to learn of its lines. (watch --nats reads the
 * fleet's broker instead of the socket: cli_watchnats.c; both print through
 * cli_watchfmt.c.)
 *
 * How --follow learns of new lines: it keeps one monitor_wait
 * {for: "output", since_sequence} outstanding, which the engine answers as
 * soon as the monitor has a line newer than that (or has ended), and then
 * fetches monitor_output since the last seq it printed. The answer's
 * last_sequence is the next wait's since_sequence, so a filter (--stderr)
 * that leaves a new stdout line unprinted does not make the wait answer
 * again at once. The session's notifications about the monitor wake it too.
 */
#include "cli/cli_cmds.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_obj.h"
#include "cli/cli_watchfmt.h"
#include "cli/cli_watchnats.h"

/* monitor_wait's own ceiling on timeout_ms. */
#define CLI_WAIT_CHUNK_MS 3600000

/* The event types that end a monitor. */
static bool
cli_follow_is_ending(const char *type, size_t n)
{
  static const char *const endings[] = {"exited", "stopped", "timed_out", "idle_timeout",
                                        "overload", "exit", NULL};
  for (size_t i = 0; endings[i]; i++)
    if (strlen(endings[i]) == n && memcmp(endings[i], type, n) == 0)
      return true;
  return false;
}

/* --- output ------------------------------------------------------------- */

static const CliOpt cli_output_opts[] = {
  {.name = "matched", .help = "only the lines that matched a pattern"},
  {.name = "unmatched", .help = "only the lines that matched none"},
  {.name = "stdout", .help = "only stdout lines"},
  {.name = "stderr", .help = "only stderr lines"},
  {.name = "since", .arg = "N", .help = "only the lines after seq N"},
  {.name = "limit", .short_name = 'n', .arg = "N",
   .help =
   "only the last N lines (default: all the ring holds);\nwith --follow, then the new ones"},
  {.name = "tail", .arg = "N", .help = "the same as --limit (docker's and pm2's word)"},
  {.name = "incident", .short_name = 'i', .arg = "N",
   .help = "only the lines of incident N (a crash and its trace;\nits id is in the notification)"},
  {.name = "follow", .short_name = 'f',
   .help =
   "then keep printing new lines as they come, until the\nmonitor ends (with --json: one line "
   "object per line)"},
  {.name = "all", .short_name = 'a',
   .help =
   "every running monitor's lines, each prefixed with its\nlabel (no ID; with -f, interleaved as "
   "they come,\nmonitors started later too, until Ctrl-C)"},
  {0},
};

/* What --follow has learned from notifications since it last looked. */
typedef struct {
  char id[64];
  bool woke;   /* a notification about the monitor arrived */
  bool ended;  /* its ending notification arrived */
} CliFollow;

static void
cli_follow_on_notify(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  CliFollow *f = ctx;
  if (len != strlen("vigil.notification") || memcmp(method, "vigil.notification", len) != 0 ||
      params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size < 1)
    return;
  const msgpack_object *n = &params->via.array.ptr[0];
  if (!cli_obj_get_is(n, "monitor_id", f->id))
    return;
  f->woke = true;
  size_t tn;
  const char *type = cli_obj_get_text(n, "type", &tn);
  if (type && cli_follow_is_ending(type, tn))
    f->ended = true;
}

/* Prints one ring line: "  seq stream  text", a '*' after the stream of a
 * line that matched. */
static void
cli_output_line(const msgpack_object *line, bool json)
{
  if (json) {
    cli_client_print_json(line);
    return;
  }
  size_t sn, tn;
  const char *stream = cli_obj_get_text(line, "stream", &sn);
  const char *text = cli_obj_get_text(line, "text", &tn);
  bool matched = cli_obj_get(line, "pattern") != NULL;
  bool is_err = stream && sn == 6 && memcmp(stream, "stderr", 6) == 0;
  StrBuf sb = STRBUF_INIT;
  cli_fmt_safe(&sb, text ? text : "", tn, true);
  CliColour sc = is_err ? kCliColRed : kCliColDim;
  CliColour tc = matched ? kCliColYellow : kCliColNone;
  printf("%s%5llu%s %s%.*s%s%c %s%s%s%s\n", cli_fmt_sgr(kCliColDim),
         (unsigned long long)cli_obj_get_uint(line, "seq", 0), cli_fmt_reset(kCliColDim),
         cli_fmt_sgr(sc), (int)sn, stream ? stream : "", cli_fmt_reset(sc), matched ? '*' : ' ',
         cli_fmt_sgr(tc), strbuf_cstr(&sb), cli_fmt_reset(tc),
         cli_obj_get_bool(line, "truncated") ? " [truncated]" : "");
  strbuf_free(&sb);
}

/* Fetches and prints the lines after *since; moves *since on. With
 * whole_result, --json prints the result map (a one-off output), else each
 * line. Returns 0 or -1 with c->err set. */
static int
cli_output_fetch(CliClient *c, const char *id, const char *stream, uint64_t *since,
                 uint64_t limit, bool whole_result)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  cli_req_str(&req, "stream", stream);
  cli_req_uint(&req, "since_sequence", *since);
  if (limit)
    cli_req_uint(&req, "limit", limit);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_output", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  if (c->json && whole_result) {
    cli_client_print_json(reply.result);
  } else {
    const msgpack_object *lines = cli_obj_get(reply.result, "lines");
    for (uint32_t i = 0; lines && lines->type == MSGPACK_OBJECT_ARRAY && i < lines->via.array.size;
         i++)
      cli_output_line(&lines->via.array.ptr[i], c->json);
  }
  *since = cli_obj_get_uint(reply.result, "next_sequence", *since);
  fflush(stdout);
  cli_reply_free(&reply);
  return 0;
}

/* --incident: the lines of one incident, as monitor_output {incident}
 * returns them, with a first line saying what it is (or the whole result
 * with --json). */
static int
cli_output_incident(CliClient *c, const char *id, uint64_t incident)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  cli_req_uint(&req, "incident", incident);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_output", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    const msgpack_object *inc = cli_obj_get(reply.result, "incident");
    size_t nlen = 0;
    const char *name = cli_obj_get_text(inc, "pattern_name", &nlen);
    printf("incident %" PRIu64 ": %s", incident,
           cli_obj_get_is(inc, "kind", "crash")    ? "crash"
           : cli_obj_get_is(inc, "kind", "health") ? "health"
                                                   : "message");
    if (name)
      printf(" (%.*s)", (int)nlen, name);
    printf(", %" PRIu64 " lines", cli_obj_get_uint(inc, "lines", 0));
    uint64_t more = cli_obj_get_uint(inc, "truncated_lines", 0);
    uint64_t missing = cli_obj_get_uint(inc, "missing", 0);
    if (more)
      printf(", %" PRIu64 " more not kept", more);
    if (missing)
      printf(", %" PRIu64 " no longer in the ring", missing);
    printf("\n");
    const msgpack_object *lines = cli_obj_get(reply.result, "lines");
    for (uint32_t i = 0; lines && lines->type == MSGPACK_OBJECT_ARRAY && i < lines->via.array.size;
         i++)
      cli_output_line(&lines->via.array.ptr[i], false);
  }
  fflush(stdout);
  cli_reply_free(&reply);
  return 0;
}

/* The id of the newest event of monitor id, and whether it has ended. */
static int
cli_output_last_event(CliClient *c, const char *id, uint64_t *last, bool *ended)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_events", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  const msgpack_object *events = cli_obj_get(reply.result, "events");
  *last = 0;
  *ended = false;
  for (uint32_t i = 0; events && events->type == MSGPACK_OBJECT_ARRAY && i < events->via.array.size;
       i++) {
    const msgpack_object *ev = &events->via.array.ptr[i];
    uint64_t eid = cli_obj_get_uint(ev, "id", 0);
    size_t tn;
    const char *type = cli_obj_get_text(ev, "type", &tn);
    if (eid > *last)
      *last = eid;
    if (type && cli_follow_is_ending(type, tn))
      *ended = true;
  }
  cli_reply_free(&reply);
  return 0;
}

/* Sends monitor_wait {for: "output"} for a line after since_seq. Returns its
 * msgid or -1. */
static int64_t
cli_output_send_wait(CliClient *c, const char *id, uint64_t since_seq)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  cli_req_str(&req, "for", "output");
  cli_req_uint(&req, "since_sequence", since_seq);
  cli_req_uint(&req, "timeout_ms", CLI_WAIT_CHUNK_MS);
  int64_t msgid =
      cli_conn_send(c->conn, "monitor_wait", &req, cli_now_ms() + CLI_CALL_TIMEOUT_MS, &c->err);
  cli_req_free(&req);
  return msgid;
}

/* The --follow loop: see the file's header. Returns 0 or -1 (c->err). */
static int
cli_output_follow(CliClient *c, CliFollow *f, const char *stream, uint64_t since)
{
  uint64_t last_event;
  bool ended;
  if (cli_output_last_event(c, f->id, &last_event, &ended) != 0 ||
      cli_output_fetch(c, f->id, stream, &since, 0, false) != 0)
    return -1;
  int64_t wait_id = -1, wait_deadline = 0;
  uint64_t seen_seq = since; /* the newest seq the engine has told us of */
  while (!ended && !f->ended) {
    if (wait_id < 0) {
      wait_id = cli_output_send_wait(c, f->id, seen_seq);
      if (wait_id < 0)
        return -1;
      wait_deadline = cli_now_ms() + CLI_WAIT_CHUNK_MS + CLI_CALL_TIMEOUT_MS;
    }
    CliReply reply;
    int rc = cli_conn_take(c->conn, (uint32_t)wait_id, &reply, &c->err);
    if (rc < 0)
      return -1;
    if (rc > 0) {
      wait_id = -1;
      uint64_t last = cli_obj_get_uint(reply.result, "last_sequence", seen_seq);
      if (last > seen_seq) {
        seen_seq = last;
        f->woke = true;
      }
      if (!cli_obj_get_is(reply.result, "state", "running"))
        ended = true;
      cli_reply_free(&reply);
    } else {
      rc = cli_conn_pump(c->conn, wait_deadline, &c->err);
      if (rc < 0)
        return -1;
      if (rc == 0)
        return cli_error_set(&c->err, kCliErrDeadline,
                             "the engine did not answer monitor_wait in time");
    }
    if (f->woke) {
      f->woke = false;
      if (cli_output_fetch(c, f->id, stream, &since, 0, false) != 0)
        return -1;
    }
  }
  /* Everything is in the ring once the monitor has ended. */
  return cli_output_fetch(c, f->id, stream, &since, 0, false);
}

/* The exit status that passes on the ending of monitor id, which has ended
 * (cli_cmds_end_status); output --follow and wait give the same. With say
 * (after --follow), also one line on stderr saying how it ended ("[exited
 * with status 4]", "[killed by SIGSEGV]", "[stopped (SIGTERM)]"); wait has
 * already printed the event. */
static int
cli_output_ending(CliClient *c, const char *id, bool say)
{
  CliReply reply;
  if (cli_client_monitor_status(c, id, kCliStartNone, &reply) != 0)
    return cli_client_fail(c);
  StrBuf how = STRBUF_INIT;
  int status = cli_cmds_end_status(reply.result, &how);
  fflush(stdout);
  if (say)
    fprintf(stderr, "[%s]\n", strbuf_cstr(&how));
  strbuf_free(&how);
  cli_reply_free(&reply);
  return status;
}

static int
cli_output_run(CliClient *c, const CliParsed *p)
{
  static const char *const filters[] = {"matched", "unmatched", "stdout", "stderr"};
  const char *stream = "all";
  int given = 0;
  for (size_t i = 0; i < 4; i++) {
    if (cli_opts_has(p, filters[i])) {
      stream = filters[i];
      given++;
    }
  }
  if (given > 1)
    return cli_opts_usage_error(p->spec,
                                "give at most one of --matched, --unmatched, --stdout, --stderr");
  uint64_t since, limit, incident;
  int rc;
  if ((rc = cli_cmds_number(p, "since", 0, &since)) != 0 ||
      (rc = cli_cmds_last_lines(p, &limit)) != 0 ||
      (rc = cli_cmds_number(p, "incident", 0, &incident)) != 0)
    return rc;
  bool follow = cli_opts_has(p, "follow");
  bool limited = cli_opts_has(p, "limit") || cli_opts_has(p, "tail");
  if (cli_opts_has(p, "all")) {
    if (p->nargs > 0)
      return cli_opts_usage_error(p->spec, "--all shows every monitor: give no ID");
    if (cli_opts_has(p, "incident") || cli_opts_has(p, "since") || p->json)
      return cli_opts_usage_error(p->spec, "--all does not go with --incident, --since or --json");
    return cli_tail_run(c, stream, NULL, follow, limited, limit);
  }
  if (p->nargs == 0)
    return cli_opts_usage_error(p->spec, "missing ID (or --all for every monitor)");
  if (cli_opts_has(p, "incident") && (given || follow || cli_opts_has(p, "since") || limited))
    return cli_opts_usage_error(p->spec, "--incident goes with no other option of output");
  CliFollow f = {{0}, false, false};
  if (follow) {
    c->notify = cli_follow_on_notify;
    c->notify_ctx = &f;
  }
  if (cli_client_connect(c, true, false, 0) != 0 || cli_client_monitor_id(c, p->args[0], f.id) != 0)
    return cli_client_fail(c);
  if (cli_opts_has(p, "incident"))
    rc = cli_output_incident(c, f.id, incident);
  else if (follow)
    /* -f -n N (tail -fn N): the last N lines first, then the new ones. */
    return (!limited || cli_output_fetch(c, f.id, stream, &since, limit, false) == 0) &&
                   cli_output_follow(c, &f, stream, since) == 0
               ? cli_output_ending(c, f.id, true)
               : cli_client_fail(c);
  else
    rc = cli_output_fetch(c, f.id, stream, &since, limit, true);
  return rc == 0 ? 0 : cli_client_fail(c);
}

const CliCommand cli_cmd_output = {
  .spec = {.name = "output", .args = "[ID]",
           .summary = "show a monitor's lines (--follow: as they come)",
           .about = "Print a monitor's lines from the engine's ring (ANSI escapes removed, control\n"
           "characters shown escaped), oldest first: seq, stream, '*' when the line matched\n"
           "a pattern, and the text. With --follow, keep printing new lines as they come\n"
           "until the monitor ends, then say how on stderr (\"[exited with status 4]\") and\n"
           "exit with its status: its exit code, 128+N for signal N, 122 stopped, 123\n"
           "stopped for overload, 124 timed out.\n"
           "With --incident N, only the lines of that incident (docs/incidents.md).\n"
           "With --all, every running monitor's lines, each after its label (-f: as they\n"
           "come, interleaved, until Ctrl-C or the engine's end).",
           .opts = cli_output_opts, .max_args = 1},
  .run = cli_output_run,
};

/* --- wait --------------------------------------------------------------- */

static const CliOpt cli_wait_opts[] = {
  {.name = "for", .arg = "exit|match",
   .help = "what to wait for: the monitor's end, whatever ends it\n(default), or a matched line"},
  {.name = "timeout", .arg = "DURATION",
   .help =
   "give up after this long: exit status 1 (default: wait\nuntil it comes or can no longer come)"},
  {.name = "since", .arg = "N",
   .help = "only events after event id N (default: any, even one\nalready logged)"},
  {0},
};

static int
cli_wait_run(CliClient *c, const CliParsed *p)
{
  static const char *const kinds[] = {"exit", "match", NULL};
  uint64_t timeout = 0, since;
  int rc;
  if ((rc = cli_cmds_choice(p, "for", kinds)) != 0 ||
      (rc = cli_cmds_duration(p, "timeout", 0, CLI_DURATION_MAX_MS, &timeout)) != 0 ||
      (rc = cli_cmds_number(p, "since", 0, &since)) != 0)
    return rc;
  const char *kind = cli_opts_get(p, "for") ? cli_opts_get(p, "for") : "exit";
  bool limited = cli_opts_has(p, "timeout");
  char id[64];
  if (cli_client_connect(c, true, false, 0) != 0 || cli_client_monitor_id(c, p->args[0], id) != 0)
    return cli_client_fail(c);
  /* monitor_wait takes at most an hour; longer waits are a series. */
  int64_t deadline = limited ? cli_now_ms() + (int64_t)timeout : -1;
  for (;;) {
    int64_t left = limited ? deadline - cli_now_ms() : CLI_WAIT_CHUNK_MS;
    if (left < 0)
      left = 0;
    uint64_t chunk = left > CLI_WAIT_CHUNK_MS ? CLI_WAIT_CHUNK_MS : (uint64_t)left;
    CliReq req;
    cli_req_init(&req);
    cli_req_str(&req, "monitor_id", id);
    cli_req_str(&req, "for", kind);
    cli_req_uint(&req, "since_event_id", since);
    cli_req_uint(&req, "timeout_ms", chunk);
    CliReply reply;
    rc = cli_client_call(c, "monitor_wait", &req, (int64_t)chunk + CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc != 0)
      return cli_client_fail(c);
    const msgpack_object *r = reply.result;
    const msgpack_object *ev = cli_obj_get(r, "event");
    bool timed_out = cli_obj_get_bool(r, "timed_out");
    if (timed_out && (!limited || cli_now_ms() < deadline)) {
      cli_reply_free(&reply);
      continue; /* one chunk of a longer wait */
    }
    if (c->json)
      cli_client_print_json(r);
    size_t sn;
    const char *state = cli_obj_get_text(r, "state", &sn);
    if (ev) {
      if (!c->json) {
        size_t tn, ln;
        const char *type = cli_obj_get_text(ev, "type", &tn);
        const char *line = cli_obj_get_text(ev, "line", &ln);
        int64_t pattern;
        StrBuf sb = STRBUF_INIT;
        if (line) {
          if (cli_obj_get_int(ev, "pattern", &pattern))
            strbuf_printf(&sb, "pattern %lld: ", (long long)pattern);
          cli_fmt_safe(&sb, line, ln, false);
        } else {
          cli_cmds_ending(&sb, ev);
        }
        printf("%s %.*s%s%s%s\n", id, (int)tn, type ? type : "event", sb.len ? " (" : "",
               strbuf_cstr(&sb), sb.len ? ")" : "");
        strbuf_free(&sb);
      }
      cli_reply_free(&reply);
      /* An ending passes on as output -f and run pass it (docs/cli.md, Exit
       * statuses), so `vigil wait web && deploy` means what it says. */
      return strcmp(kind, "exit") == 0 ? cli_output_ending(c, id, false) : 0;
    }
    if (timed_out) {
      StrBuf d = STRBUF_INIT;
      cli_fmt_duration(&d, timeout);
      fprintf(stderr, "vigil: timed out after %s waiting for %s to %s (state %.*s)\n",
              strbuf_cstr(&d), id, strcmp(kind, "exit") == 0 ? "end" : "match", (int)sn,
              state ? state : "?");
      strbuf_free(&d);
    } else {
      fprintf(stderr, "vigil: %s ended (%.*s) without a match\n", id, (int)sn,
              state ? state : "?");
    }
    cli_reply_free(&reply);
    return 1;
  }
}

const CliCommand cli_cmd_wait = {
  .spec = {.name = "wait", .args = "ID", .summary = "wait for a monitor to end or to match",
           .about = "Wait until a monitor ends (--for exit, the default) or a line matches (--for\n"
           "match), and print what happened. Exit status: for --for exit, the monitor's\n"
           "own, as output --follow gives it (its exit code, 128+N for signal N, 122\n"
           "stopped, 123 stopped for overload, 124 timed out); for --for match, 0 when a\n"
           "line matched; 1 when --timeout passed first or a match can no longer come.",
           .opts = cli_wait_opts, .min_args = 1, .max_args = 1},
  .run = cli_wait_run,
};

/* --- watch -------------------------------------------------------------- */

static const CliOpt cli_watch_opts[] = {
  {.name = "since", .arg = "SEQ",
   .help =
   "first print again the notifications the session still keeps\nafter seq SEQ (0: all it keeps)"},
  {.name = "oneline",
   .help = "one line per notification: SEQ MONITOR TEXT, the text's\nnewlines and backslashes "
   "escaped (\\n, \\\\), flushed at once"},
  {.name = "nats", .arg = "URL",
   .help = "read the session's notifications from a NATS JetStream\n(docs/fleet.md) instead of "
   "the engine's socket, through a\ndurable consumer that resumes where the last watch with it\n"
   "left off"},
  {.name = "engine", .arg = "NAME",
   .help = "with --nats: only the notifications of the engine NAME\n(default: every engine's)"},
  {.name = "durable", .arg = "NAME",
   .help = "with --nats: the durable consumer to read through\n(default: watch-USER-SESSION, "
   "or watch-USER-ENGINE-SESSION\nwith --engine; the session's dots written _)"},
  {.name = "stream", .arg = "NAME",
   .help = "with --nats: the stream the engines publish into\n(default: VIGIL, their nats.stream)"},
  {0},
};

typedef struct {
  CliClient *c;
  WatchStyle style;
} Watch;

/* Prints one notification as it arrives, in the watch's style, and flushes
 * it; engine errors go to stderr. */
static void
cli_watch_on_notify(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  const Watch *w = ctx;
  bool is_error = len == strlen("vigil.error") && memcmp(method, "vigil.error", len) == 0;
  if (is_error) {
    const msgpack_object *msg =
        params->type == MSGPACK_OBJECT_ARRAY && params->via.array.size >= 2
            ? &params->via.array.ptr[1]
            : NULL;
    size_t n;
    const char *text = cli_obj_text(msg, &n);
    fprintf(stderr, "vigil: the engine reported: %.*s\n", (int)n, text ? text : "?");
    return;
  }
  if (len != strlen("vigil.notification") || memcmp(method, "vigil.notification", len) != 0 ||
      params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size < 1)
    return;
  /* A failed write is seen by the wait (the hangup fd), not here. */
  (void)cli_watchfmt_print(&params->via.array.ptr[0], w->style, kWatchFromEngine);
}

static int
cli_watch_run(CliClient *c, const CliParsed *p)
{
  uint64_t since;
  int rc = cli_cmds_number(p, "since", 0, &since);
  if (rc != 0)
    return rc;
  bool oneline = cli_opts_has(p, "oneline");
  if (oneline && c->json)
    return cli_opts_usage_error(p->spec, "give --oneline or --json, not both");
  WatchStyle style = oneline ? kWatchOneline : c->json ? kWatchJson : kWatchText;
  if (cli_opts_has(p, "nats"))
    return cli_watchnats_run(c, p, style);
  static const char *const nats_only[] = {"engine", "durable", "stream", NULL};
  for (size_t i = 0; nats_only[i]; i++)
    if (cli_opts_has(p, nats_only[i]))
      return cli_opts_usage_error(p->spec, "--%s goes with --nats URL", nats_only[i]);
  static Watch w;
  w = (Watch){c, style};
  c->notify = cli_watch_on_notify;
  c->notify_ctx = &w;
  if (cli_client_connect(c, true, cli_opts_has(p, "since"), since) != 0)
    return cli_client_fail(c);
  if (!c->json && !oneline && isatty(fileno(stderr)))
    fprintf(stderr, "vigil: watching session \"%s\" (Ctrl-C to stop)\n", c->session);
  /* Until interrupted, until the engine goes away, or until whoever reads
   * the output stops reading (`vigil watch --oneline | head -n 1`): that is
   * seen while waiting, not at the next write, and ends the watch quietly. */
  cli_conn_set_hangup_fd(c->conn, STDOUT_FILENO);
  for (;;) {
    if (cli_conn_pump(c->conn, -1, &c->err) < 0)
      return c->err.kind == kCliErrHangup ? 0 : cli_client_fail(c);
  }
}

const CliCommand cli_cmd_watch = {
  .spec = {.name = "watch", .args = "",
           .summary = "print the session's notifications as they arrive",
           .about = "Attach to the session and print every notification it is sent, as it arrives,\n"
           "as the text an agent would see, after a line naming it (--- #SEQ LABEL (ID)\n"
           "TYPE, MODE, TIME ---) and followed by a blank line (with --json, one JSON\n"
           "object a line; with --oneline, one line each for a harness's line monitor to\n"
           "wrap), until interrupted. Notifications are sent to every attached connection,\n"
           "so watching takes nothing away from an agent attached to the same session.\n"
           "With --nats URL, the same from a NATS JetStream that engines publish into\n"
           "(docs/fleet.md): each notification is acked once printed, and the next watch\n"
           "with the same durable consumer starts after the last one acked; malformed\n"
           "messages are acked unprinted and counted; Ctrl-C ends it (status 130).",
           .opts = cli_watch_opts},
  .run = cli_watch_run,
};
