/*
 * The interleaved view of the session's monitors (vigil logs -f, vigil
 * output --all -f), what overmind, foreman, `pm2 logs` and `docker compose
 * logs -f` show of a dev stack: every monitor's lines as they come, each
 * prefixed with its label padded to the longest label (display width,
 * cli_width.h), the label in its own colour on a terminal (a fixed palette
 * picked by a hash of the label, so a monitor keeps its colour from one run
 * to the next; plain when stdout is no terminal or NO_COLOR is set).
 *
 * How it learns of lines: as output --follow does (cli_follow.c), one
 * monitor_wait {for: "output"} outstanding per followed monitor, answered
 * when that monitor has a newer line or has ended, then monitor_output from
 * the last seq printed. How it learns of monitors started after it began:
 * the engine has no event for a start, so it reads the session's
 * monitor_list every CLI_TAIL_LIST_MS (one cheap call; the waits, not the
 * list, carry the lines). It ends on SIGINT (the default action: nothing to
 * clean up), when the reader of its output goes, or when the engine goes
 * (status 0, a note on stderr); with one monitor named, once that one has
 * ended.
 */
#include "cli/cli_cmds.h"

#include <string.h>
#include <unistd.h>

#include "cli/cli_obj.h"
#include "cli/cli_width.h"

/* Monitors one view tracks (followed or seen ended): a session has at
 * most 16 running and 64 ended ones by default; what does not fit is
 * counted in CliTail.untracked and said once. */
#define CLI_TAIL_MAX_MONITORS 128

/* How often the session's list is read for monitors started since. */
#define CLI_TAIL_LIST_MS 500

/* The newest monitors each list read asks for. */
#define CLI_TAIL_LIST_LIMIT 100

/* The widest a label prefix is, in display columns (a longer one is cut
 * with an ellipsis, so one long label cannot push every line right). */
#define CLI_TAIL_LABEL_WIDTH 24

/* monitor_wait's own ceiling on timeout_ms. */
#define CLI_TAIL_WAIT_MS 3600000

typedef struct {
  char id[64];
  char label[128];   /* made safe for a terminal and cut */
  CliColour colour;
  uint64_t since;    /* the seq after the last line printed */
  uint64_t seen;     /* the newest seq the engine has told of */
  int64_t wait_id;   /* the outstanding monitor_wait, or -1 */
  bool done;         /* ended (or forgotten) and printed to its end */
} CliTailMon;

typedef struct {
  CliClient *c;
  const char *stream;    /* monitor_output's stream filter */
  const char *only;      /* the one monitor's id to follow, or NULL: all */
  bool limited;          /* -n/--tail: the last `first` lines of those */
  uint64_t first;        /* already running when the view began */
  size_t label_width;    /* the widest label so far */
  CliTailMon mons[CLI_TAIL_MAX_MONITORS];
  size_t n;
  uint64_t untracked;    /* monitors not followed: mons was full */
} CliTail;

/* The palette labels are coloured from. */
static const CliColour cli_tail_palette[] = {kCliColCyan, kCliColYellow, kCliColGreen,
                                             kCliColMagenta, kCliColBlue, kCliColRed};

/* The colour of a label: FNV-1a of its bytes, into the palette. */
static CliColour
cli_tail_colour(const char *label)
{
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)label; *p; p++)
    h = (h ^ *p) * 16777619u;
  return cli_tail_palette[h % (sizeof cli_tail_palette / sizeof *cli_tail_palette)];
}

/* Prints one ring line of m: "label | text", the label padded to the
 * widest so far. */
static void
cli_tail_line(const CliTail *t, const CliTailMon *m, const msgpack_object *line)
{
  size_t tn;
  const char *text = cli_obj_get_text(line, "text", &tn);
  StrBuf sb = STRBUF_INIT;
  cli_fmt_safe(&sb, text ? text : "", text ? tn : 0, true);
  size_t w = cli_width_text(m->label, strlen(m->label));
  int pad = w < t->label_width ? (int)(t->label_width - w) : 0;
  printf("%s%s%*s |%s %s\n", cli_fmt_sgr(m->colour), m->label, pad, "",
         cli_fmt_reset(m->colour), strbuf_cstr(&sb));
  strbuf_free(&sb);
}

/* Fetches and prints m's lines after m->since (the last limit of them when
 * limit is not 0). Returns 0, or -1 with c->err set. */
static int
cli_tail_fetch(CliTail *t, CliTailMon *m, uint64_t limit)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", m->id);
  cli_req_str(&req, "stream", t->stream);
  cli_req_uint(&req, "since_sequence", m->since);
  if (limit)
    cli_req_uint(&req, "limit", limit);
  CliReply reply;
  int rc = cli_client_call(t->c, "monitor_output", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  const msgpack_object *lines = cli_obj_get(reply.result, "lines");
  for (uint32_t i = 0; lines && lines->type == MSGPACK_OBJECT_ARRAY && i < lines->via.array.size;
       i++)
    cli_tail_line(t, m, &lines->via.array.ptr[i]);
  m->since = cli_obj_get_uint(reply.result, "next_sequence", m->since);
  if (m->since > m->seen)
    m->seen = m->since;
  fflush(stdout);
  cli_reply_free(&reply);
  return 0;
}

/* Starts tracking the monitor of list entry e. On the first read (first),
 * an ended monitor is only marked seen, and a running one shows its last
 * t->first lines with -n; a monitor that came later shows all its lines.
 * Returns 0, or -1 with c->err set. */
static int
cli_tail_adopt(CliTail *t, const msgpack_object *e, bool first)
{
  size_t idn, ln;
  const char *id = cli_obj_get_text(e, "monitor_id", &idn);
  if (id == NULL || idn >= sizeof t->mons[0].id)
    return 0;
  for (size_t i = 0; i < t->n; i++)
    if (strlen(t->mons[i].id) == idn && memcmp(t->mons[i].id, id, idn) == 0)
      return 0;
  if (t->only && (strlen(t->only) != idn || memcmp(t->only, id, idn) != 0))
    return 0;
  if (t->n == CLI_TAIL_MAX_MONITORS) {
    if (t->untracked++ == 0)
      fprintf(stderr, "vigil: following at most %d monitors; the others are left out\n",
              CLI_TAIL_MAX_MONITORS);
    return 0;
  }
  CliTailMon *m = &t->mons[t->n++];
  memset(m, 0, sizeof *m);
  memcpy(m->id, id, idn);
  m->wait_id = -1;
  bool running = cli_obj_get_is(e, "state", "running");
  if (first && !running && t->only == NULL) {
    m->done = true; /* ended before the view began: not part of it */
    return 0;
  }
  const char *label = cli_obj_get_text(e, "label", &ln);
  StrBuf safe = STRBUF_INIT, cut = STRBUF_INIT;
  cli_fmt_safe(&safe, label ? label : id, label ? ln : idn, false);
  cli_fmt_cut(&cut, strbuf_cstr(&safe), safe.len, CLI_TAIL_LABEL_WIDTH);
  snprintf(m->label, sizeof m->label, "%s", strbuf_cstr(&cut));
  strbuf_free(&safe);
  strbuf_free(&cut);
  m->colour = cli_tail_colour(m->label);
  size_t w = cli_width_text(m->label, strlen(m->label));
  if (w > t->label_width)
    t->label_width = w;
  if (cli_tail_fetch(t, m, first && t->limited ? t->first : 0) != 0)
    return -1;
  if (!running)
    m->done = true; /* all its lines are printed */
  return 0;
}

/* Reads the session's list and adopts the monitors not tracked yet, the
 * oldest first. Returns 0, or -1 with c->err set. */
static int
cli_tail_list(CliTail *t, bool first)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_bool(&req, "include_exited", true);
  cli_req_uint(&req, "limit", CLI_TAIL_LIST_LIMIT);
  CliReply reply;
  int rc = cli_client_call(t->c, "monitor_list", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  const msgpack_object *list = cli_obj_get(reply.result, "monitors");
  uint32_t count = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
  for (uint32_t i = count; i > 0 && rc == 0; i--)
    rc = cli_tail_adopt(t, &list->via.array.ptr[i - 1], first);
  cli_reply_free(&reply);
  return rc;
}

/* Takes the answer to m's outstanding wait if it has come, and prints what
 * it announced. Returns 0, or -1 with c->err set. */
static int
cli_tail_answer(CliTail *t, CliTailMon *m)
{
  CliReply reply;
  int rc = cli_conn_take(t->c->conn, (uint32_t)m->wait_id, &reply, &t->c->err);
  if (rc == 0)
    return 0;
  m->wait_id = -1;
  if (rc < 0) {
    /* The monitor was forgotten (its session's ended ones are bounded):
     * nothing more to show of it. */
    m->done = true;
    return 0;
  }
  uint64_t last = cli_obj_get_uint(reply.result, "last_sequence", m->seen);
  if (last > m->seen)
    m->seen = last;
  bool ended = !cli_obj_get_is(reply.result, "state", "running");
  cli_reply_free(&reply);
  if (cli_tail_fetch(t, m, 0) != 0)
    return -1;
  if (ended)
    m->done = true;
  return 0;
}

/* Sends m's monitor_wait for a line after the newest it has been told of.
 * Returns 0, or -1 with c->err set. */
static int
cli_tail_wait(CliTail *t, CliTailMon *m)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", m->id);
  cli_req_str(&req, "for", "output");
  cli_req_uint(&req, "since_sequence", m->seen);
  cli_req_uint(&req, "timeout_ms", CLI_TAIL_WAIT_MS);
  m->wait_id = cli_conn_send(t->c->conn, "monitor_wait", &req, cli_now_ms() + CLI_CALL_TIMEOUT_MS,
                             &t->c->err);
  cli_req_free(&req);
  return m->wait_id < 0 ? -1 : 0;
}

/* Whether the one monitor followed (t->only) has been shown to its end. */
static bool
cli_tail_only_done(const CliTail *t)
{
  return t->only != NULL && t->n > 0 && t->mons[0].done;
}

int
cli_tail_run(CliClient *c, const char *stream, const char *only_arg, bool follow, bool limited,
             uint64_t first)
{
  static CliTail t; /* 128 monitors: kept off the stack */
  memset(&t, 0, sizeof t);
  t.c = c;
  t.stream = stream;
  t.limited = limited;
  t.first = first;
  char only[64];
  if (cli_client_connect(c, true, false, 0) != 0)
    return cli_client_fail(c);
  if (only_arg != NULL) {
    if (cli_client_monitor_id(c, only_arg, only) != 0)
      return cli_client_fail(c);
    t.only = only;
  }
  if (cli_tail_list(&t, true) != 0)
    return cli_client_fail(c);
  if (!follow || cli_tail_only_done(&t))
    return 0;
  /* Until the reader of the output goes (`| head`), seen while waiting. */
  cli_conn_set_hangup_fd(c->conn, STDOUT_FILENO);
  int64_t next_list = cli_now_ms() + CLI_TAIL_LIST_MS;
  for (;;) {
    for (size_t i = 0; i < t.n; i++)
      if (!t.mons[i].done && t.mons[i].wait_id < 0 && cli_tail_wait(&t, &t.mons[i]) != 0)
        goto failed;
    int rc = cli_conn_pump(c->conn, next_list, &c->err);
    if (rc < 0)
      goto failed;
    for (size_t i = 0; i < t.n; i++)
      if (t.mons[i].wait_id >= 0 && cli_tail_answer(&t, &t.mons[i]) != 0)
        goto failed;
    if (cli_tail_only_done(&t))
      return 0;
    if (cli_now_ms() >= next_list) {
      if (t.only == NULL && cli_tail_list(&t, false) != 0)
        goto failed;
      next_list = cli_now_ms() + CLI_TAIL_LIST_MS;
    }
  }
failed:
  if (c->err.kind == kCliErrHangup)
    return 0;
  if (c->err.kind == kCliErrTransport) {
    fflush(stdout);
    fprintf(stderr, "vigil: the engine went away; nothing more to follow\n");
    return 0;
  }
  return cli_client_fail(c);
}
