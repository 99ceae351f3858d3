/*
 * `vigil hook HARNESS EVENT`: what a harness runs at its hook events
 * (docs/mcp.md, "Wake paths"). It reads the hook's JSON on stdin
 * (hook_input.h), works in the project's session (cli_project_session of
 * the input's cwd, like every vigil process of the project), tells the
 * engine when a turn starts and ends (session_state busy and idle), takes
 * what lies above the session's model cursor (hook_take.h), and answers in
 * the harness's own form (hook_harness.h). What it answers with counts as
 * delivered: the cursor has moved past it.
 *
 * A hook must be fast and quiet when vigil is not in use: with no engine
 * listening it answers nothing, says nothing and exits 0; it never starts
 * one. Its own failures are status 1 (a harness shows them, and goes on),
 * never 2, which Claude Code, Codex and Gemini CLI read as an answer.
 *
 * A turn end that waits (Claude Code's Stop, which runs in the background
 * with asyncRewake; anything given --wait) waits for a notification pushed
 * to its connection and only then takes: so a waiter ended early (its
 * harness gone, a new turn started, a newer waiter of the same harness
 * session, hook_waiter.h) has taken nothing, and nothing is lost. Two
 * waiters of a session never answer with the same seq: every take is the
 * engine's, atomic.
 *
 * Through NATS (--nats URL --engine NAME, docs/fleet.md section 6, "vigil
 * mcp and hooks") the hook works the same on the session's request
 * subject: the pushes it waits for are the session's notifications read
 * from its subject (cli_client_connect subscribes), the waiter's lock is
 * kept in this machine's socket directory (checked, and made when missing,
 * as an engine would make it), and a broker or an engine that cannot be
 * reached is, as a socket with no engine, nothing to say.
 */
#include "cli/cli_cmds.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_obj.h"
#include "cli/cli_project.h"
#include "cli/hook_codex.h"
#include "cli/hook_harness.h"
#include "cli/hook_input.h"
#include "cli/hook_take.h"
#include "cli/hook_waiter.h"
#include "rpc/server.h"

static const CliOpt cli_hook_opts[] = {
  {.name = "wait", .arg = "[SECONDS]",
   .help = "at a turn's end, when nothing is above the cursor, wait up\nto this long for the next "
   "notification (a DURATION; alone:\nan hour; claude-code Stop waits an hour unless told,\n"
   "--wait=0 not at all)"},
  {0},
};

/* What the connection has learned while the hook waits. */
typedef struct {
  bool pushed; /* a notification was pushed to the session */
} CliHookSeen;

static void
cli_hook_on_notify(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  (void)params;
  CliHookSeen *seen = ctx;
  if (len == strlen("vigil.notification") && memcmp(method, "vigil.notification", len) == 0)
    seen->pushed = true;
}

/* The pipe a stopping signal writes to while the hook waits (its read end
 * is the connection's wake fd). */
static int cli_hook_wake[2] = {-1, -1};

static void
cli_hook_on_signal(int sig)
{
  (void)sig;
  int saved = errno;
  if (write(cli_hook_wake[1], "", 1) < 0) {
    /* Full: a wake is pending already. */
  }
  errno = saved;
}

/* A failure of the hook: one line on stderr, status 1. */
static int
cli_hook_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
cli_hook_fail(const char *fmt, ...)
{
  fputs("vigil hook: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_EXIT_FAILURE;
}

/* The row for harness and event, or NULL after saying why. */
static const HookEvent *
cli_hook_event(const char *harness, const char *event)
{
  if (!hook_harness_known(harness)) {
    fprintf(stderr, "vigil hook: no harness \"%s\" (one of: ", harness);
    hook_harness_names(stderr);
    fputs(")\n", stderr);
    return NULL;
  }
  const HookEvent *ev = hook_harness_find(harness, event);
  if (ev == NULL) {
    fprintf(stderr, "vigil hook: %s has no event \"%s\" vigil answers; its events: ", harness,
            event);
    hook_harness_events(stderr, harness);
    fputc('\n', stderr);
  }
  return ev;
}

/* Cursor runs Claude Code's hooks too, and waits for each: a claude-code
 * hook that Cursor runs answers as Cursor's own (its Stop as Cursor's
 * stop, never waiting; the start of a prompt as beforeSubmitPrompt), and
 * does nothing at the events Cursor has no answer for. */
static const HookEvent *
cli_hook_under_cursor(const HookEvent *ev, const HookInput *in)
{
  if (in->cursor_version == NULL || strcmp(ev->harness, "claude-code") != 0)
    return ev;
  if (ev->moment == kHookTurnEnd)
    return hook_harness_find("cursor", "stop");
  if (ev->moment == kHookTurnStart)
    return hook_harness_find("cursor", "beforeSubmitPrompt");
  return NULL;
}

/* How long to wait at a turn's end: --wait, else the row's own. Returns
 * 0 with *wait_ms set, or CLI_EXIT_FAILURE after saying why. */
static int
cli_hook_wait_ms(const CliParsed *p, const HookEvent *ev, uint64_t *wait_ms)
{
  *wait_ms = (uint64_t)ev->wait_s * 1000;
  const char *v = cli_opts_get(p, "wait");
  if (v == NULL)
    return 0;
  if (v[0] == '\0') {
    *wait_ms = (uint64_t)HOOK_WAIT_DEFAULT_S * 1000;
    return 0;
  }
  const char *why = "it is too long";
  if (cli_fmt_parse_duration(v, wait_ms, &why) != 0 ||
      *wait_ms > (uint64_t)HOOK_WAIT_MAX_S * 1000) {
    cli_opts_usage_error(p->spec,
                         "--wait: \"%s\" is not a duration of at most %d s: %s (use 30, 500ms, "
                         "5m, 1h; a bare number is seconds)",
                         v, HOOK_WAIT_MAX_S, why);
    return CLI_EXIT_FAILURE;
  }
  return 0;
}

/* The session: --session, else $VIGIL_SESSION, else the project's (of the
 * input's cwd, else of the working directory), as vigil mcp chooses it. */
static int
cli_hook_session(CliClient *c, const CliParsed *p, const HookInput *in)
{
  const char *env = getenv("VIGIL_SESSION");
  if ((p->session != NULL && p->session[0] != '\0') || (env != NULL && env[0] != '\0'))
    return 0; /* cli_client_init took it */
  if (cli_project_session(in->cwd, c->session, sizeof c->session) != 0)
    return cli_hook_fail("cannot name the project's session: the real path of %s: %s",
                         in->cwd ? in->cwd : "the working directory", strerror(errno));
  return 0;
}

/* session_state busy or idle. Returns 0 or -1 (c->err). */
static int
cli_hook_state(CliClient *c, const char *state)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "state", state);
  CliReply reply;
  int rc = cli_client_call(c, "session_state", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc == 0)
    cli_reply_free(&reply);
  return rc;
}

/* The key of this harness session's waiter: "HARNESS-SESSION_ID". */
static void
cli_hook_waiter_key(const HookEvent *ev, const HookInput *in, char *out, size_t cap)
{
  snprintf(out, cap, "%s-%s", ev->harness, in->session_id);
}

/* Ends this harness session's waiting hook, if one waits: a turn starts. */
static void
cli_hook_end_waiter(CliClient *c, const HookEvent *ev, const HookInput *in)
{
  char key[HOOK_NAME_MAX + HOOK_ID_MAX + 2];
  cli_hook_waiter_key(ev, in, key, sizeof key);
  char *dir = rpc_server_dir_of(c->socket_path);
  hook_waiter_end(dir, key);
  free(dir);
}

/* A hook that may wait: it becomes its harness session's waiter, and
 * takes the stopping signals, before it connects, so that the start of a
 * turn that comes while it connects and takes ends it all the same. A
 * signal only wakes the wait: a take under way is finished and answered. */
typedef struct {
  bool on;
  HookWaiter waiter;
} CliHookWaiting;

static void
cli_hook_wait_begin(CliHookWaiting *w, const CliClient *c, const HookEvent *ev,
                    const HookInput *in)
{
  w->on = pipe(cli_hook_wake) == 0;
  if (!w->on)
    return; /* no wake pipe: the hook answers what is there, no wait */
  cli_client_stop_signals(cli_hook_on_signal);
  char key[HOOK_NAME_MAX + HOOK_ID_MAX + 2];
  cli_hook_waiter_key(ev, in, key, sizeof key);
  if (c->nats_url != NULL) {
    /* No engine of this machine made the directory the lock lives in:
     * checked (and made) as vigild would, or the lock is done without. */
    bool made = false;
    VigilError err = VIGIL_ERROR_INIT;
    if (rpc_server_check_path(c->socket_path, &made, &err) != 0)
      return;
  }
  char *dir = rpc_server_dir_of(c->socket_path);
  hook_waiter_begin(&w->waiter, dir, key); /* without the lock, it waits all the same */
  free(dir);
}

static void
cli_hook_wait_end(CliHookWaiting *w)
{
  if (!w->on)
    return;
  hook_waiter_done(&w->waiter);
  cli_client_stop_signals(SIG_DFL);
  close(cli_hook_wake[0]);
  close(cli_hook_wake[1]);
  cli_hook_wake[0] = cli_hook_wake[1] = -1;
  w->on = false;
}

/* Waits up to wait_ms for a notification above the cursor and takes it
 * into text. Ends quietly, with nothing taken, at the deadline, at a
 * stopping signal, and when out_fd's reader goes. Returns 0 or -1
 * (c->err). */
static int
cli_hook_wait(CliClient *c, CliHookSeen *seen, uint64_t wait_ms, int out_fd, StrBuf *text)
{
  /* Through NATS a push is a message on the session's subject: without the
   * subscription nothing would ever wake the wait. */
  if (c->nats_url != NULL && !c->live)
    return cli_error_set(&c->err, kCliErrTransport, "cannot wait for the next notification: %s",
                         c->live_err.msg);
  cli_conn_set_wake_fd(c->conn, cli_hook_wake[0]);
  cli_conn_set_hangup_fd(c->conn, out_fd);
  int64_t deadline = cli_now_ms() + (int64_t)wait_ms;
  int rc = 0;
  size_t taken = 0;
  /* A push that came while the hook took before is taken again here: a
   * take finding nothing costs a round trip, a missed one a lost wake. */
  while (taken == 0) {
    if (seen->pushed) {
      seen->pushed = false;
      if ((rc = hook_take(c, text, &taken)) != 0)
        break;
      continue;
    }
    int got = cli_conn_pump(c->conn, deadline, &c->err);
    if (got == 0)
      break; /* the wait is over: nothing came */
    if (got < 0) {
      rc = c->err.kind == kCliErrInterrupted || c->err.kind == kCliErrHangup ? 0 : -1;
      break;
    }
  }
  cli_conn_set_wake_fd(c->conn, -1);
  cli_conn_set_hangup_fd(c->conn, -1);
  return rc;
}

/* What the hook does with the engine at ev's moment; the text to answer
 * with goes to text. Returns 0 or -1 (c->err). */
static int
cli_hook_act(CliClient *c, CliHookSeen *seen, const HookEvent *ev, const HookInput *in,
             uint64_t wait_ms, StrBuf *text)
{
  switch (ev->moment) {
  case kHookSessionStart:
    /* No turn runs yet: a busy state left by a harness that died is over. */
    if (cli_hook_state(c, "idle") != 0)
      return -1;
    break;
  case kHookTurnStart:
  case kHookBusyOnly:
    cli_hook_end_waiter(c, ev, in);
    if (cli_hook_state(c, "busy") != 0)
      return -1;
    break;
  case kHookAfterTool: break;
  case kHookTurnEnd:
    if (cli_hook_state(c, "idle") != 0)
      return -1;
    /* Cursor's stop of a turn the user aborted, or that failed: no
     * follow-up message starts another. */
    if (in->status != NULL && strcmp(ev->harness, "cursor") == 0 &&
        strcmp(in->status, "completed") != 0)
      return 0;
    break;
  case kHookStatus:
    /* OpenCode's session.status: "busy" starts a turn, "idle" ends one;
     * anything else ("retry") changes nothing. */
    if (in->status != NULL && strcmp(in->status, "busy") == 0) {
      cli_hook_end_waiter(c, ev, in);
      return cli_hook_state(c, "busy");
    }
    if (in->status != NULL && strcmp(in->status, "idle") == 0)
      return cli_hook_state(c, "idle");
    return 0;
  }
  if (ev->form == kHookAnswerNone)
    return 0; /* nothing taken where nothing can be said */
  size_t taken;
  if (hook_take(c, text, &taken) != 0)
    return -1;
  if (text->len > 0 || ev->moment != kHookTurnEnd || wait_ms == 0 || cli_hook_wake[0] < 0)
    return 0;
  return cli_hook_wait(c, seen, wait_ms,
                       ev->form == kHookAnswerRewake ? STDERR_FILENO : STDOUT_FILENO, text);
}

/* Codex's SessionStart under its app-server daemon starts the thread's
 * watcher, the wake of the idle thread (hook_codex.h); elsewhere Codex has
 * no wake, and nothing is started. */
static void
cli_hook_codex_wake(const CliClient *c, const HookEvent *ev, const HookInput *in)
{
  if (strcmp(ev->harness, "codex") != 0 || ev->moment != kHookSessionStart)
    return;
  /* The watcher asks session_list whether a turn runs, which a session's
   * subject refuses (it spans sessions): through NATS Codex has its hooks
   * only (docs/fleet.md section 6, "vigil mcp and hooks"). */
  if (c->nats_url != NULL)
    return;
  pid_t daemon;
  char exe[4096];
  if (hook_codex_daemon(&daemon, exe, sizeof exe))
    hook_codex_watch(c, in->session_id, daemon, exe);
}

static int
cli_hook_run(CliClient *c, const CliParsed *p)
{
  const HookEvent *ev = cli_hook_event(p->args[0], p->args[1]);
  if (ev == NULL)
    return CLI_EXIT_FAILURE;
  uint64_t wait_ms;
  if (cli_hook_wait_ms(p, ev, &wait_ms) != 0)
    return CLI_EXIT_FAILURE;
  HookInput in;
  char why[HOOK_INPUT_ERROR_MAX];
  if (hook_input_read(STDIN_FILENO, HOOK_INPUT_MAX_BYTES, HOOK_INPUT_WAIT_MS, &in, why,
                      sizeof why) != 0)
    return cli_hook_fail("%s", why);
  int status = 0;
  const HookEvent *asked = ev;
  ev = cli_hook_under_cursor(ev, &in);
  if (ev != asked)
    wait_ms = 0; /* Cursor waits for its hooks: one that waited would hold it */
  if (ev == NULL || cli_hook_session(c, p, &in) != 0) {
    status = ev == NULL ? 0 : CLI_EXIT_FAILURE;
    hook_input_free(&in);
    return status;
  }
  CliHookSeen seen = {false};
  c->notify = cli_hook_on_notify;
  c->notify_ctx = &seen;
  StrBuf text = STRBUF_INIT;
  CliHookWaiting waiting = {false, {-1, ""}};
  if (ev->moment == kHookTurnEnd && ev->form != kHookAnswerNone && wait_ms > 0)
    cli_hook_wait_begin(&waiting, c, ev, &in);
  cli_hook_codex_wake(c, ev, &in);
  if (cli_client_connect(c, true, false, 0) != 0) {
    /* No engine: vigil is not in use here, and a hook says nothing. */
    status = c->err.kind == kCliErrNoEngine ? 0 : cli_hook_fail("%s", c->err.msg);
  } else if (cli_hook_act(c, &seen, ev, &in, wait_ms, &text) != 0) {
    status = cli_hook_fail("%s", c->err.msg);
  }
  cli_hook_wait_end(&waiting);
  /* What was taken is answered even when a later step failed. */
  HookAnswer answer;
  hook_harness_answer(ev, text.data, text.len, &answer);
  if (answer.out.len > 0) {
    fwrite(answer.out.data, 1, answer.out.len, stdout);
    fflush(stdout);
  }
  if (answer.err.len > 0) {
    fwrite(answer.err.data, 1, answer.err.len, stderr);
    fflush(stderr);
  }
  if (text.len > 0)
    status = answer.status;
  hook_harness_answer_free(&answer);
  strbuf_free(&text);
  hook_input_free(&in);
  return status;
}

const CliCommand cli_cmd_hook = {
  .spec = {.name = "hook", .args = "HARNESS EVENT",
           .summary = "answer a harness's hook (what `vigil setup` installs)",
           .about =
           "Run by an agent harness at its hook EVENT, with the hook's JSON on stdin: tell\n"
           "the engine a turn started (busy) or ended (idle), and answer, in the harness's\n"
           "own form, with the notifications above the session's model cursor, which\n"
           "then count as delivered. HARNESS is claude-code, codex, gemini, opencode,\n"
           "cursor or qwen (goose has no hooks); EVENT is spelled as the harness spells\n"
           "it, and an unknown one is answered with the list of the harness's events.\n"
           "The session is the project's (of the input's cwd) unless --session or\n"
           "$VIGIL_SESSION names one. Quiet, with status 0, when no engine runs; status 2\n"
           "only for the wake of claude-code Stop; failures are status 1 (never 2, which\n"
           "harnesses read as an answer).",
           .opts = cli_hook_opts, .min_args = 2, .max_args = 2},
  .run = cli_hook_run,
};
