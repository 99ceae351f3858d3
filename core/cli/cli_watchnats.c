/*
 * `vigil watch --nats URL --session S`: a person's gateway (docs/fleet.md
 * section 3). It reads the session's notifications from the stream the
 * engines publish into (VIGIL, subjects vigil.*.*.n) through a durable pull
 * consumer with explicit ack, prints each as `vigil watch` prints it from
 * the engine's socket (cli_watchfmt.h), and acks it once printed and
 * flushed, so the next watch with the same durable starts after it.
 *
 * Every message is checked first (cli_fleetmsg.h): one whose headers
 * disagree with its subject or payload, or whose payload is not a
 * notification, is acked without being printed and counted (the first is
 * described on stderr; the count comes at the end). Within one run a
 * message at or below the last seq printed of its engine under the same
 * epoch is acked unprinted too (cli_fleetonce.h): JetStream delivers at
 * least once. And only the next seq of an engine is printed: one further
 * ahead (JetStream delivers a message whose ack never came again behind
 * what it delivered since) is held back, nak'ed with a delay of a quarter
 * of the consumer's ack_wait, and printed with the gap counted only once
 * it has been held for twice the ack_wait and 30 s (cli_fleethold.h). The
 * record each engine starts from is the message the durable acked last
 * (its ack floor, read back from the stream when the watch starts), so a
 * watch run again goes on from where the last one printed; an engine
 * without one starts at its first message of the run.
 *
 * The consumer is created by this command when it is missing (js_AddConsumer,
 * then bound to), never by the subscribe call, so that nats.c never deletes
 * it on the way out: the durable outlives the watch, which is the point.
 * Nothing waits without a bound: the connect (WATCHNATS_CONNECT_MS), each
 * JetStream API call and flush (WATCHNATS_API_MS), each pull request
 * (WATCHNATS_PULL_MS, then the next one). Ctrl-C, SIGTERM and SIGHUP are
 * read by a waker thread (cli_waker.h) that unsubscribes the pull
 * subscription, which ends the Fetch in progress at once; the messages of a
 * batch not yet printed are then nak'ed so the next watch gets them without
 * waiting for their ack wait to pass.
 */
#include "cli/cli_watchnats.h"

#include <errno.h>
#include <nats/nats.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/cli_fleethold.h"
#include "cli/cli_fleetmsg.h"
#include "cli/cli_fleetonce.h"
#include "cli/cli_fmt.h"
#include "cli/cli_natsopts.h"
#include "cli/cli_natsurl.h"
#include "cli/cli_waker.h"

/* How long the connect may take before the server counts as unreachable. */
#define WATCHNATS_CONNECT_MS 5000
/* How long a JetStream API call (stream and consumer info, consumer create)
 * and a flush of acks may take. */
#define WATCHNATS_API_MS 5000
/* How long one pull request waits at the server for messages before the
 * next one is sent; at most WATCHNATS_BATCH messages come per request. */
#define WATCHNATS_PULL_MS 30000
#define WATCHNATS_BATCH 64
/* The longest stream or consumer name JetStream takes. */
#define WATCHNATS_NAME_MAX 255
/* How much of the user's name goes into the default durable's name. */
#define WATCHNATS_USER_MAX 32

/* The stream engines publish into by default (their nats.stream). */
#define WATCHNATS_STREAM_DEFAULT "VIGIL"
/* The subjects a stream must take for the engines (docs/fleet.md). */
#define WATCHNATS_STREAM_SUBJECTS "vigil.*.*.n"

/* Why a message's turn ended. */
typedef enum {
  kTakeDone = 0, /* printed, skipped or counted, and acked */
  kTakeHangup,   /* stdout did not take it: the watch ends, the message not acked */
} TakeResult;

typedef struct {
  /* What to read. */
  const char *url;
  char shown_url[NATS_URL_MAX + 1]; /* url as messages show it: no password */
  const char *session;
  const char *engine; /* NULL: every engine's */
  const char *stream;
  char durable[WATCHNATS_NAME_MAX + 1];
  StrBuf subject;
  WatchStyle style;
  /* The link. */
  natsOptions *opts;
  natsConnection *nc;
  jsCtx *js;
  natsSubscription *sub;
  /* Between the waker's thread and the loop: the waker unsubscribes only
   * while the loop is inside a Fetch. */
  pthread_mutex_t lock;
  bool fetching;
  bool stop;
  /* The last "Permissions Violation" the server sent (nats.c's error
   * callback, on its own thread), which names the subject refused. */
  pthread_mutex_t err_lock;
  char denied[512];
  /* A refusal that is not the watch's end: reading back the message the
   * durable acked last, which a user may not be allowed (then every engine
   * starts at its first message). */
  char denied_ignored[512];
  /* What was done. */
  FleetOnce once;
  FleetHold hold;
  uint64_t printed;
  uint64_t malformed;
  uint64_t repeats;
  uint64_t held_back; /* deliveries nak'ed to come again in order */
  uint64_t gaps;      /* printed after the hold bound, seqs before them missing */
} WatchNats;

/* Prints "vigil: <message>" on stderr; returns CLI_EXIT_FAILURE. */
static int
watchnats_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
watchnats_fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("vigil: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CLI_EXIT_FAILURE;
}

/* --- the command line --------------------------------------------------- */

/* Whether name is a stream or consumer name JetStream takes: 1..255
 * printable ASCII characters, none of them a space, '.', '*', '>', '/' or
 * '\' (the subject and path separators), nor '%': nats.c 3.4.1 never hands
 * over the messages of a consumer named "x%2Ey" (the server delivers them,
 * Fetch times out), so such a name is refused rather than watched in
 * silence. */
static bool
watchnats_js_name_ok(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n > WATCHNATS_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)name[i];
    if (ch <= 0x20 || ch >= 0x7F || strchr(".*>/\\%", ch) != NULL)
      return false;
  }
  return true;
}

/* The default durable's name: watch-USER-SESSION (watch-USER-ENGINE-SESSION
 * with --engine), the session's dots written '_' (a consumer's name holds
 * no '.', and no '%', see watchnats_js_name_ok), the user's name with every
 * character but letters, digits, '_' and '-' written '-'. A person who runs
 * the same watch again resumes where the last one left off; two people, or
 * one person watching two sessions, do not share a cursor. Sessions "a.b"
 * and "a_b" would: the second watch is then refused (the durable reads the
 * other's subject) and --durable names another. */
static void
watchnats_default_durable(StrBuf *out, const char *engine, const char *session)
{
  const struct passwd *pw = getpwuid(geteuid());
  const char *user = pw && pw->pw_name && pw->pw_name[0] ? pw->pw_name : getenv("USER");
  strbuf_puts(out, "watch-");
  if (user && user[0]) {
    for (size_t i = 0; user[i] && i < WATCHNATS_USER_MAX; i++) {
      char ch = user[i];
      bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '_' || ch == '-';
      strbuf_putc(out, ok ? ch : '-');
    }
  } else {
    strbuf_printf(out, "uid%u", (unsigned)geteuid());
  }
  strbuf_putc(out, '-');
  if (engine)
    strbuf_printf(out, "%s-", engine);
  for (const char *c = session; *c; c++)
    strbuf_putc(out, *c == '.' ? '_' : *c);
}

/* Reads and checks watch's options for --nats into w. Returns 0, or
 * CLI_EXIT_USAGE after printing why. */
static int
watchnats_args(WatchNats *w, const CliClient *c, const CliParsed *p)
{
  const CliSpec *spec = p->spec;
  if (cli_opts_has(p, "since"))
    return cli_opts_usage_error(spec, "--since replays what the engine keeps: with --nats the "
                                      "durable consumer says where to resume (see --durable)");
  w->url = cli_opts_get(p, "nats");
  cli_natsurl_shown(w->shown_url, w->url);
  const char *why = cli_natsurl_problem(w->url);
  if (why) {
    StrBuf q = STRBUF_INIT;
    cli_fmt_safe(&q, w->shown_url, strlen(w->shown_url), false);
    int rc = cli_opts_usage_error(spec,
                                  "--nats: \"%s\" is not a NATS URL: %s (give nats://HOST:PORT, "
                                  "tls://HOST:PORT or HOST:PORT, several joined by commas)",
                                  strbuf_cstr(&q), why);
    strbuf_free(&q);
    return rc;
  }
  w->session = c->session;
  if (!cli_fleetmsg_session_ok(w->session))
    return cli_opts_usage_error(spec,
                                "--session: \"%s\" is not a session name the fleet carries "
                                "([A-Za-z0-9._:-], 1 to 64 characters)",
                                w->session);
  w->engine = cli_opts_get(p, "engine");
  if (w->engine && !cli_fleetmsg_engine_ok(w->engine))
    return cli_opts_usage_error(spec,
                                "--engine: \"%s\" is not an engine name ([A-Za-z0-9_-], 1 to 64 "
                                "characters)",
                                w->engine);
  w->stream = cli_opts_get(p, "stream") ? cli_opts_get(p, "stream") : WATCHNATS_STREAM_DEFAULT;
  if (!watchnats_js_name_ok(w->stream))
    return cli_opts_usage_error(spec,
                                "--stream: \"%s\" is not a stream name (1 to 255 printable "
                                "characters, none of them a space . * > / \\ %%)",
                                w->stream);
  const char *durable = cli_opts_get(p, "durable");
  StrBuf def = STRBUF_INIT;
  if (durable == NULL) {
    watchnats_default_durable(&def, w->engine, w->session);
    durable = strbuf_cstr(&def);
    if (def.len > WATCHNATS_NAME_MAX) {
      strbuf_free(&def);
      return cli_opts_usage_error(spec, "the default durable name would be longer than 255 "
                                        "characters: give --durable NAME");
    }
  } else if (!watchnats_js_name_ok(durable)) {
    return cli_opts_usage_error(spec,
                                "--durable: \"%s\" is not a consumer name (1 to 255 printable "
                                "characters, none of them a space . * > / \\ %%)",
                                durable);
  }
  snprintf(w->durable, sizeof w->durable, "%s", durable);
  strbuf_free(&def);
  cli_fleetmsg_subject(&w->subject, w->engine, w->session);
  return 0;
}

/* --- the server ------------------------------------------------------- */

/* nats.c's asynchronous errors: a "Permissions Violation" names the subject
 * the server refused; it is kept for the failure it explains (a request
 * that then times out, a Fetch that never gets its messages). */
static void
watchnats_on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
  WatchNats *w = closure;
  const char *text = NULL;
  if (err != NATS_NOT_PERMITTED)
    return;
  (void)natsConnection_GetLastError(nc, &text);
  if (text == NULL)
    return;
  pthread_mutex_lock(&w->err_lock);
  if (strcmp(text, w->denied_ignored) != 0)
    snprintf(w->denied, sizeof w->denied, "%s", text);
  pthread_mutex_unlock(&w->err_lock);
}

/* Whether the server has refused a permission. The connection's own last
 * error is read too: nats.c sets it as the refusal is read, while the
 * error callback runs later, on a thread of its own. */
static bool
watchnats_denied(WatchNats *w)
{
  const char *text = NULL;
  if (w->nc && natsConnection_GetLastError(w->nc, &text) == NATS_NOT_PERMITTED && text) {
    pthread_mutex_lock(&w->err_lock);
    if (w->denied[0] == '\0' && strcmp(text, w->denied_ignored) != 0)
      snprintf(w->denied, sizeof w->denied, "%s", text);
    pthread_mutex_unlock(&w->err_lock);
  }
  pthread_mutex_lock(&w->err_lock);
  bool denied = w->denied[0] != '\0';
  pthread_mutex_unlock(&w->err_lock);
  return denied;
}

/* Reports a failed call on the server: the permission the server refused
 * when it refused one (that is why the call failed), else what nats.c says.
 * Returns CLI_EXIT_FAILURE. */
static int
watchnats_fail_call(WatchNats *w, const char *doing, natsStatus s)
{
  char denied[sizeof w->denied];
  (void)watchnats_denied(w);
  pthread_mutex_lock(&w->err_lock);
  memcpy(denied, w->denied, sizeof denied);
  pthread_mutex_unlock(&w->err_lock);
  if (denied[0])
    return watchnats_fail("%s at %s: permission denied: the server says \"%s\"", doing, w->shown_url,
                          denied);
  const char *last = cli_natsopts_last_error();
  return watchnats_fail("%s at %s failed: %s%s%s%s", doing, w->shown_url, natsStatus_GetText(s),
                        last && last[0] ? ": " : "", last && last[0] ? last : "",
                        cli_natsopts_tls_hint(s, w->url));
}

/* Connects to the server. Returns 0 or CLI_EXIT_FAILURE after saying why. */
static int
watchnats_connect(WatchNats *w)
{
  natsStatus s = natsOptions_Create(&w->opts);
  if (s == NATS_OK)
    s = natsOptions_SetURL(w->opts, w->url);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout(w->opts, WATCHNATS_CONNECT_MS);
  if (s == NATS_OK)
    s = natsOptions_SetName(w->opts, "vigil watch");
  if (s == NATS_OK)
    s = natsOptions_SetErrorHandler(w->opts, watchnats_on_error, w);
  char opts_why[1024] = "";
  if (s == NATS_OK)
    s = cli_natsopts_apply(w->opts, w->url, opts_why, sizeof opts_why);
  if (opts_why[0])
    return watchnats_fail("--nats %s: %s", w->shown_url, opts_why);
  /* The pulled messages come to the inbox: a user whose permissions give
   * it a prefix of its own (docs/fleet.md section 5) names it, so that no
   * other user may read what it pulls. */
  const char *inbox = getenv("VIGIL_NATS_INBOX");
  if (s == NATS_OK && inbox && *inbox)
    s = natsOptions_SetCustomInboxPrefix(w->opts, inbox);
  if (s != NATS_OK)
    return watchnats_fail("--nats %s: %s", w->shown_url, cli_natsopts_last_error());
  s = natsConnection_Connect(&w->nc, w->opts);
  if (s == NATS_NO_SERVER || s == NATS_TIMEOUT || s == NATS_IO_ERROR)
    return watchnats_fail("cannot reach a NATS server at %s (refused, or no answer within %d s): "
                          "%s",
                          w->shown_url, WATCHNATS_CONNECT_MS / 1000, cli_natsopts_last_error());
  if (s != NATS_OK)
    return watchnats_fail_call(w, "connecting", s);
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = WATCHNATS_API_MS;
  s = natsConnection_JetStream(&w->js, w->nc, &jo);
  return s == NATS_OK ? 0 : watchnats_fail_call(w, "opening JetStream", s);
}

/* Checks that the stream is there and takes the engines' subjects. Returns
 * 0 or CLI_EXIT_FAILURE after saying why. */
static int
watchnats_check_stream(WatchNats *w)
{
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetStreamInfo(&si, w->js, w->stream, NULL, &jerr);
  if (s == NATS_NO_RESPONDERS || jerr == JSNotEnabledErr)
    return watchnats_fail("the NATS server at %s has no JetStream (start it with -js, or "
                          "jetstream {} in its config)",
                          w->shown_url);
  if (jerr == JSNotEnabledForAccountErr)
    return watchnats_fail("the NATS server at %s has JetStream, but not for this account",
                          w->shown_url);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)
    return watchnats_fail("the NATS server at %s has no stream %s: no engine has published "
                          "into it yet (vigild --nats creates it), or the engines' nats.stream "
                          "names another (give it with --stream)",
                          w->shown_url, w->stream);
  if (s != NATS_OK) {
    StrBuf doing = STRBUF_INIT;
    strbuf_printf(&doing, "asking for stream %s", w->stream);
    int rc = watchnats_fail_call(w, strbuf_cstr(&doing), s);
    strbuf_free(&doing);
    return rc;
  }
  bool takes = false;
  StrBuf has = STRBUF_INIT;
  for (int i = 0; si->Config && i < si->Config->SubjectsLen; i++) {
    const char *subj = si->Config->Subjects[i];
    takes = takes || strcmp(subj, WATCHNATS_STREAM_SUBJECTS) == 0;
    strbuf_printf(&has, "%s%s", i ? ", " : "", subj);
  }
  int rc = 0;
  if (!takes) {
    StrBuf q = STRBUF_INIT;
    cli_fmt_safe(&q, strbuf_cstr(&has), has.len, false);
    rc = watchnats_fail("stream %s at %s does not take %s, the engines' subjects (it takes: %s)",
                        w->stream, w->shown_url, WATCHNATS_STREAM_SUBJECTS,
                        has.len ? strbuf_cstr(&q) : "none");
    strbuf_free(&q);
  }
  strbuf_free(&has);
  jsStreamInfo_Destroy(si);
  return rc;
}

/* The record each engine starts from: the message at the durable's ack
 * floor (stream seq ack_floor, 0 when nothing was acked) is the last one a
 * watch with this durable printed, so its engine's next seq follows it
 * (without it, a watch run again after seq 3 came before seq 2 would print
 * 3 as its start and skip 2 as printed). A floor that cannot be read (gone
 * with the stream's max_age, malformed, or a user not allowed
 * $JS.API.STREAM.MSG.GET) leaves no record, said on stderr when refused:
 * that engine starts at its first message of the run. */
static void
watchnats_seed(WatchNats *w, uint64_t ack_floor)
{
  if (ack_floor == 0)
    return;
  natsMsg *m = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetMsg(&m, w->js, w->stream, ack_floor, NULL, &jerr);
  if (s != NATS_OK) {
    if (watchnats_denied(w)) {
      /* Not the watch's end: every later check passes over this refusal. */
      pthread_mutex_lock(&w->err_lock);
      fprintf(stderr,
              "vigil: cannot read back the message durable %s acked last (permission denied: "
              "the server says \"%s\"): each engine starts at its first message of this run\n",
              w->durable, w->denied);
      memcpy(w->denied_ignored, w->denied, sizeof w->denied_ignored);
      w->denied[0] = '\0';
      pthread_mutex_unlock(&w->err_lock);
    }
    return;
  }
  const char *v[5] = {NULL};
  static const char *const keys[5] = {"Nats-Msg-Id", "Vigil-Engine", "Vigil-Session", "Vigil-Seq",
                                      "Vigil-Epoch"};
  for (int i = 0; i < 5; i++)
    if (natsMsgHeader_Get(m, keys[i], &v[i]) != NATS_OK)
      v[i] = NULL;
  FleetMsg fm = {
      .subject = natsMsg_GetSubject(m),
      .msg_id = v[0],
      .engine = v[1],
      .session = v[2],
      .seq = v[3],
      .epoch = v[4],
      .payload = natsMsg_GetData(m),
      .payload_len = (size_t)natsMsg_GetDataLength(m),
  };
  FleetNote note;
  StrBuf why = STRBUF_INIT;
  if (cli_fleetmsg_check(&fm, w->session, &note, &why)) {
    cli_fleetonce_mark(&w->once, note.engine, note.epoch, note.seq);
    cli_fleetmsg_release(&note);
  }
  strbuf_free(&why);
  natsMsg_Destroy(m);
}

/* Creates the durable pull consumer when it is missing, checks the one that
 * is there (it must read this session's subject, by pull, with explicit
 * ack), and binds a pull subscription to it. Returns 0 or CLI_EXIT_FAILURE
 * after saying why. */
static int
watchnats_bind(WatchNats *w)
{
  jsConsumerInfo *ci = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetConsumerInfo(&ci, w->js, w->stream, w->durable, NULL, &jerr);
  if (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = w->durable;
    cc.Description = "vigil watch";
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.FilterSubject = strbuf_cstr(&w->subject);
    jerr = 0;
    s = js_AddConsumer(&ci, w->js, w->stream, &cc, NULL, &jerr);
  }
  if (s != NATS_OK) {
    StrBuf doing = STRBUF_INIT;
    strbuf_printf(&doing, "setting up the durable consumer %s on stream %s", w->durable,
                  w->stream);
    int rc = watchnats_fail_call(w, strbuf_cstr(&doing), s);
    strbuf_free(&doing);
    return rc;
  }
  const jsConsumerConfig *cfg = ci->Config;
  const char *filter = cfg && cfg->FilterSubject ? cfg->FilterSubject : "";
  cli_fleethold_init(&w->hold, cfg ? cfg->AckWait / 1000000 : 0);
  uint64_t ack_floor = ci->AckFloor.Stream;
  int rc = 0;
  if (strcmp(filter, strbuf_cstr(&w->subject)) != 0 || (cfg && cfg->DeliverSubject) ||
      (cfg && cfg->AckPolicy != js_AckExplicit)) {
    StrBuf q = STRBUF_INIT;
    cli_fmt_safe(&q, filter, strlen(filter), false);
    rc = watchnats_fail("the durable consumer %s on stream %s is not this watch's: it reads "
                        "\"%s\"%s, not %s by pull with explicit ack; give another --durable",
                        w->durable, w->stream, strbuf_cstr(&q),
                        cfg && cfg->DeliverSubject ? " by push" : "",
                        strbuf_cstr(&w->subject));
    strbuf_free(&q);
  }
  jsConsumerInfo_Destroy(ci);
  if (rc != 0)
    return rc;
  watchnats_seed(w, ack_floor);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = w->stream;
  so.Consumer = w->durable;
  so.ManualAck = true;
  jerr = 0;
  s = js_PullSubscribe(&w->sub, w->js, strbuf_cstr(&w->subject), w->durable, NULL, &so, &jerr);
  /* The server refuses a subscription after the fact: a round trip makes a
   * refused inbox an error now rather than a silent first pull. */
  if (s == NATS_OK)
    s = natsConnection_FlushTimeout(w->nc, WATCHNATS_API_MS);
  if (s == NATS_OK && watchnats_denied(w))
    s = NATS_NOT_PERMITTED;
  if (s != NATS_OK)
    return watchnats_fail_call(w, "subscribing to the durable consumer", s);
  return 0;
}

/* --- reading ---------------------------------------------------------- */

/* The value of header key of m, or NULL. */
static const char *
watchnats_header(natsMsg *m, const char *key)
{
  const char *v = NULL;
  return natsMsgHeader_Get(m, key, &v) == NATS_OK ? v : NULL;
}

/* The stream seq of m (0 when its metadata cannot be read). */
static uint64_t
watchnats_stream_seq(natsMsg *m)
{
  jsMsgMetaData *meta = NULL;
  if (natsMsg_GetMetaData(&meta, m) != NATS_OK)
    return 0;
  uint64_t seq = meta->Sequence.Stream;
  jsMsgMetaData_Destroy(meta);
  return seq;
}

/* Says on stderr why the first malformed message was skipped. */
static void
watchnats_report_malformed(natsMsg *m, const char *why)
{
  uint64_t stream_seq = watchnats_stream_seq(m);
  const char *subject = natsMsg_GetSubject(m);
  StrBuf q = STRBUF_INIT;
  cli_fmt_safe(&q, subject ? subject : "", subject ? strlen(subject) : 0, false);
  fprintf(stderr,
          "vigil: skipped a malformed message on %s (stream seq %llu), acked unprinted: %s "
          "(further ones are counted, not described)\n",
          strbuf_cstr(&q), (unsigned long long)stream_seq, why);
  strbuf_free(&q);
}

/* Says on stderr that a notification is printed after its hold bound: the
 * seqs before it never came. */
static void
watchnats_report_gap(const FleetNote *note, int64_t held_ms)
{
  fprintf(stderr,
          "vigil: seq %llu of engine %s came ahead of seqs not yet printed and waited %lld s for "
          "them (the bound: twice the consumer's ack wait and 30 s): printed with a gap\n",
          (unsigned long long)note->seq, note->engine, (long long)(held_ms / 1000));
}

/* One message: checked, skipped when printed already, held back when it is
 * ahead of the next seq, else printed, and acked unless stdout did not take
 * it. */
static TakeResult
watchnats_take(WatchNats *w, natsMsg *m)
{
  FleetMsg fm = {
    .subject = natsMsg_GetSubject(m),
    .msg_id = watchnats_header(m, "Nats-Msg-Id"),
    .engine = watchnats_header(m, "Vigil-Engine"),
    .session = watchnats_header(m, "Vigil-Session"),
    .seq = watchnats_header(m, "Vigil-Seq"),
    .epoch = watchnats_header(m, "Vigil-Epoch"),
    .payload = natsMsg_GetData(m),
    .payload_len = (size_t)natsMsg_GetDataLength(m),
  };
  FleetNote note;
  StrBuf why = STRBUF_INIT;
  if (!cli_fleetmsg_check(&fm, w->session, &note, &why)) {
    if (w->malformed++ == 0)
      watchnats_report_malformed(m, strbuf_cstr(&why));
    strbuf_free(&why);
    natsMsg_Ack(m, NULL);
    return kTakeDone;
  }
  strbuf_free(&why);
  uint64_t stream_seq = watchnats_stream_seq(m);
  FleetPlace place = cli_fleetonce_place(&w->once, note.engine, note.epoch, note.seq, note.from_seq);
  if (place == kFleetPlaceAhead) {
    int64_t held_ms = 0;
    if (cli_fleethold_hold(&w->hold, stream_seq, (int64_t)clock_mono_ms(), &held_ms) ==
        kFleetHoldWait) {
      /* Not acked: JetStream delivers it again after the delay. */
      w->held_back++;
      cli_fleetmsg_release(&note);
      natsMsg_NakWithDelay(m, w->hold.nak_delay_ms, NULL);
      return kTakeDone;
    }
    w->gaps++;
    watchnats_report_gap(&note, held_ms);
  }
  cli_fleethold_forget(&w->hold, stream_seq);
  TakeResult r = kTakeDone;
  if (place == kFleetPlaceDuplicate) {
    w->repeats++;
  } else if (cli_watchfmt_print(note.map, w->style, kWatchFromBroker) != 0) {
    r = kTakeHangup;
  } else {
    cli_fleetonce_mark(&w->once, note.engine, note.epoch, note.seq);
    w->printed++;
  }
  cli_fleetmsg_release(&note);
  if (r == kTakeDone)
    natsMsg_Ack(m, NULL);
  return r;
}

/* The waker's call: ends the Fetch in progress (an unsubscribe wakes it; the
 * consumer stays, this command made it), or makes the loop stop before the
 * next. */
static void
watchnats_wake(void *ctx)
{
  WatchNats *w = ctx;
  pthread_mutex_lock(&w->lock);
  w->stop = true;
  if (w->fetching)
    natsSubscription_Unsubscribe(w->sub);
  pthread_mutex_unlock(&w->lock);
}

/* Whether the loop is to stop (the waker said so). */
static bool
watchnats_stopping(WatchNats *w)
{
  pthread_mutex_lock(&w->lock);
  bool stop = w->stop;
  pthread_mutex_unlock(&w->lock);
  return stop;
}

/* Reads, prints and acks until stopped. Returns 0 when stopped (by the
 * waker or stdout's reader going), or CLI_EXIT_FAILURE after saying why. */
static int
watchnats_loop(WatchNats *w)
{
  for (;;) {
    pthread_mutex_lock(&w->lock);
    bool stop = w->stop;
    w->fetching = !stop;
    pthread_mutex_unlock(&w->lock);
    if (stop)
      return 0;
    natsMsgList list = {0};
    jsErrCode jerr = 0;
    natsStatus s = natsSubscription_Fetch(&list, w->sub, WATCHNATS_BATCH, WATCHNATS_PULL_MS, &jerr);
    pthread_mutex_lock(&w->lock);
    w->fetching = false;
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    if (s == NATS_TIMEOUT && !stop && !watchnats_denied(w))
      continue; /* nothing new in this pull: the next one */
    if (s != NATS_OK && stop)
      return 0;
    if (s != NATS_OK)
      return watchnats_fail_call(w, "reading the durable consumer", s);
    int i = 0;
    bool hangup = false;
    for (; i < list.Count && !hangup && !watchnats_stopping(w); i++)
      hangup = watchnats_take(w, list.Msgs[i]) == kTakeHangup;
    /* Not printed: handed back for the next watch at once. A message whose
     * print failed is among them (i went past it). */
    for (int j = hangup ? i - 1 : i; j < list.Count; j++)
      natsMsg_Nak(list.Msgs[j], NULL);
    natsMsgList_Destroy(&list);
    /* The acks reach the server before more is asked for: a watch ended
     * next leaves its durable's ack floor past what it printed. */
    s = natsConnection_FlushTimeout(w->nc, WATCHNATS_API_MS);
    if (s != NATS_OK && s != NATS_TIMEOUT)
      return watchnats_fail_call(w, "acking", s);
    if (watchnats_denied(w))
      return watchnats_fail_call(w, "reading the durable consumer", NATS_NOT_PERMITTED);
    if (hangup)
      return 0;
  }
}

/* Frees what the watch made: the consumer is left on the server (it is
 * durable; destroying a subscription bound to it never deletes it). */
static void
watchnats_close(WatchNats *w)
{
  if (w->sub)
    natsSubscription_Destroy(w->sub);
  if (w->js)
    jsCtx_Destroy(w->js);
  if (w->nc)
    natsConnection_Destroy(w->nc);
  if (w->opts)
    natsOptions_Destroy(w->opts);
  nats_CloseAndWait(WATCHNATS_API_MS);
  strbuf_free(&w->subject);
  pthread_mutex_destroy(&w->lock);
  pthread_mutex_destroy(&w->err_lock);
}

int
cli_watchnats_run(CliClient *c, const CliParsed *p, WatchStyle style)
{
  static WatchNats w; /* large (the exactly-once table); one per process */
  memset(&w, 0, sizeof w);
  w.style = style;
  pthread_mutex_init(&w.lock, NULL);
  pthread_mutex_init(&w.err_lock, NULL);
  cli_fleetonce_init(&w.once);
  int rc = watchnats_args(&w, c, p);
  if (rc != 0) {
    strbuf_free(&w.subject);
    return rc;
  }
  /* Before nats.c starts its threads, so that they inherit the mask. */
  cli_waker_block_signals();
  CliWaker *waker = NULL;
  if ((rc = watchnats_connect(&w)) == 0 && (rc = watchnats_check_stream(&w)) == 0 &&
      (rc = watchnats_bind(&w)) == 0) {
    waker = cli_waker_start(STDOUT_FILENO, watchnats_wake, &w);
    if (waker == NULL)
      rc = watchnats_fail("cannot start the thread that waits for Ctrl-C: %s", strerror(errno));
  }
  if (waker && !c->json && style != kWatchOneline && isatty(fileno(stderr)))
    fprintf(stderr, "vigil: watching session \"%s\" at %s through %s (Ctrl-C to stop)\n",
            w.session, w.shown_url, w.durable);
  if (waker)
    rc = watchnats_loop(&w);
  int signo = 0;
  CliWakeReason why = waker ? cli_waker_finish(waker, &signo) : kCliWakeNone;
  if (waker && (rc != 0 || why != kCliWakeHangup)) {
    fprintf(stderr, "vigil: %llu printed", (unsigned long long)w.printed);
    if (w.malformed)
      fprintf(stderr, ", %llu malformed skipped", (unsigned long long)w.malformed);
    if (w.repeats)
      fprintf(stderr, ", %llu already printed skipped", (unsigned long long)w.repeats);
    if (w.held_back)
      fprintf(stderr, ", %llu held back to come in order", (unsigned long long)w.held_back);
    if (w.gaps)
      fprintf(stderr, ", %llu printed after a gap", (unsigned long long)w.gaps);
    fprintf(stderr, " (durable %s)\n", w.durable);
  }
  watchnats_close(&w);
  if (rc == 0 && why == kCliWakeSignal)
    rc = 128 + signo;
  return rc;
}
