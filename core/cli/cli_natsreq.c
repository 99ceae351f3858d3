/*
 * Requests over NATS for the CLI (cli_natsreq.h). nats.c runs its
 * subscriptions' callbacks on threads of its own; each callback only writes
 * a whole frame into one end of a socketpair (send with MSG_NOSIGNAL: a CLI
 * that went away must not be killed by SIGPIPE), under the lock, and the
 * CLI's thread reads the other end. So the stream of the socketpair is a
 * stream of frames, as the engine's socket is.
 */
#include "cli/cli_natsreq.h"

#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/memory.h"
#include "cli/cli_natslive.h"
#include "cli/cli_natsopts.h"
#include "spec/names.h"

/* How many "no responders" answers are remembered until asked about. */
#define CLI_NATSREQ_NORESP_MAX 64

/* How often the server is pinged, and how many pings may go unanswered
 * before the connection counts as lost: a server that vanished without
 * closing the connection (its host gone) is noticed within about half a
 * minute, not nats.c's default of minutes. */
#define CLI_NATSREQ_PING_MS 10000
#define CLI_NATSREQ_PINGS_OUT 2

struct CliNatsReq {
  natsConnection *nc;
  natsSubscription *sub;
  natsSubscription *live;   /* the session's notifications (cli_natsreq_listen), or NULL */
  char subject[512];
  char inbox[128];
  char engine[FLEET_ENGINE_NAME_MAX + 1]; /* whose notifications live takes */
  char session[SESSION_NAME_MAX + 1];
  char live_subject[256];
  int fds[2];        /* [0]: the CLI reads; [1]: the callbacks write */
  atomic_bool closing; /* cli_natsreq_close began: callbacks do nothing */
  /* Under mu: what the callbacks (nats.c's threads) share with the CLI. */
  pthread_mutex_t mu;
  bool lost;         /* the connection ended; fds[1] is shut */
  char lost_why[300];
  unsigned long long live_dropped;
  uint32_t noresp[CLI_NATSREQ_NORESP_MAX]; /* msgids answered "no responders" */
  size_t nnoresp;
};

/* The process's Vigil-Client id (see cli_natsreq.h), made once. */
static pthread_once_t cli_natsreq_client_once = PTHREAD_ONCE_INIT;
static char cli_natsreq_client_id[64];

static void
cli_natsreq_client_make(void)
{
  snprintf(cli_natsreq_client_id, sizeof cli_natsreq_client_id, "vigil-cli-%ld-%08" PRIx32,
           (long)getpid(), (uint32_t)nats_NowInNanoSeconds());
}

/* Writes all of p into the socketpair (nats.c's threads; mu held). */
static void
cli_natsreq_hand_on(CliNatsReq *n, const char *p, size_t len)
{
  while (p && len > 0 && !n->lost && !atomic_load(&n->closing)) {
    ssize_t w = send(n->fds[1], p, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    p += w;
    len -= (size_t)w;
  }
}

/* The server's "no responders" status for the request its subject names
 * (nobody subscribes to the engine's subject: no such engine, or it is not
 * connected): handed on as the engine's error answer to that msgid, so
 * the command says so at once instead of at its deadline. */
static void
cli_natsreq_no_engine(CliNatsReq *n, const char *subject)
{
  const char *dot = strrchr(subject, '.');
  char *end = NULL;
  unsigned long msgid = dot ? strtoul(dot + 1, &end, 10) : 0;
  if (dot == NULL || end == dot + 1 || *end != '\0' || msgid > UINT32_MAX)
    return;
  pthread_mutex_lock(&n->mu);
  n->noresp[n->nnoresp++ % CLI_NATSREQ_NORESP_MAX] = (uint32_t)msgid;
  pthread_mutex_unlock(&n->mu);
  char text[700];
  snprintf(text, sizeof text, "internal: no engine answers on %s (is a vigild --nats-engine of "
           "that name connected to this NATS server, and may this user publish there?)",
           n->subject);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_uint32(&pk, (uint32_t)msgid);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_int(&pk, 0);
  msgpack_pack_str_with_body(&pk, text, strlen(text));
  msgpack_pack_nil(&pk);
  pthread_mutex_lock(&n->mu);
  cli_natsreq_hand_on(n, sb.data, sb.size);
  pthread_mutex_unlock(&n->mu);
  msgpack_sbuffer_destroy(&sb);
}

/* An answer (nats.c's thread): its payload into the socketpair. */
static void
cli_natsreq_on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
  CliNatsReq *n = closure;
  if (natsMsg_IsNoResponders(msg)) {
    cli_natsreq_no_engine(n, natsMsg_GetSubject(msg));
    natsMsg_Destroy(msg);
    return;
  }
  const char *p = natsMsg_GetData(msg);
  int len = natsMsg_GetDataLength(msg);
  pthread_mutex_lock(&n->mu);
  if (len > 0)
    cli_natsreq_hand_on(n, p, (size_t)len);
  pthread_mutex_unlock(&n->mu);
  natsMsg_Destroy(msg);
}

/* A header's value, or NULL when the message has none of that name. */
static const char *
cli_natsreq_header(natsMsg *msg, const char *name)
{
  const char *v = NULL;
  return natsMsgHeader_Get(msg, name, &v) == NATS_OK ? v : NULL;
}

/* A message on the session's notification subject (nats.c's thread): a
 * push frame when it is one of the session's notifications, else dropped
 * and counted. */
static void
cli_natsreq_on_live(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
  CliNatsReq *n = closure;
  int len = natsMsg_GetDataLength(msg);
  FleetMsg m = {
    .subject = natsMsg_GetSubject(msg),
    .msg_id = cli_natsreq_header(msg, "Nats-Msg-Id"),
    .engine = cli_natsreq_header(msg, "Vigil-Engine"),
    .session = cli_natsreq_header(msg, "Vigil-Session"),
    .seq = cli_natsreq_header(msg, "Vigil-Seq"),
    .epoch = cli_natsreq_header(msg, "Vigil-Epoch"),
    .payload = natsMsg_GetData(msg),
    .payload_len = len > 0 ? (size_t)len : 0,
  };
  if (m.payload == NULL)
    m.payload = "";
  msgpack_sbuffer frame;
  msgpack_sbuffer_init(&frame);
  StrBuf why = STRBUF_INIT;
  bool ok = cli_natslive_frame(&m, n->engine, n->session, &frame, &why);
  pthread_mutex_lock(&n->mu);
  if (ok) {
    cli_natsreq_hand_on(n, frame.data, frame.size);
  } else {
    unsigned long long count = ++n->live_dropped;
    /* The first, then at every power of two: a flood of junk on the
     * subject costs a few lines, not one each. */
    if ((count & (count - 1)) == 0)
      fprintf(stderr, "vigil: dropped a message on %s: %s (%llu dropped so far)\n",
              n->live_subject, strbuf_cstr(&why), count);
  }
  pthread_mutex_unlock(&n->mu);
  strbuf_free(&why);
  msgpack_sbuffer_destroy(&frame);
  natsMsg_Destroy(msg);
}

/* The connection ended (nats.c's thread; it does not reconnect): the
 * socketpair's writing end is shut, so the CLI reads the end of its
 * stream, and why is kept. Nothing once cli_natsreq_close began. */
static void
cli_natsreq_on_lost(natsConnection *nc, void *closure)
{
  CliNatsReq *n = closure;
  pthread_mutex_lock(&n->mu);
  if (!atomic_load(&n->closing) && !n->lost) {
    const char *text = NULL;
    natsStatus s = natsConnection_GetLastError(nc, &text);
    snprintf(n->lost_why, sizeof n->lost_why, "the connection to the NATS server ended (%s)",
             text && *text ? text : s != NATS_OK ? natsStatus_GetText(s) : "closed by the server");
    n->lost = true;
    shutdown(n->fds[1], SHUT_WR);
  }
  pthread_mutex_unlock(&n->mu);
}

int
cli_natsreq_subject(char *out, size_t size, const char *engine, const char *session)
{
  size_t elen = strlen(engine);
  if (elen == 0 || elen > 64 || strspn(engine, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-") != elen)
    return -1;
  int used = snprintf(out, size, "vigil.%s.", engine);
  if (used < 0 || (size_t)used >= size)
    return -1;
  for (const char *s = session; s && *s; s++) {
    int w = *s == '.' ? snprintf(out + used, size - (size_t)used, "%%2E")
                      : snprintf(out + used, size - (size_t)used, "%c", *s);
    if (w < 0 || (size_t)(used + w) >= size)
      return -1;
    used += w;
  }
  int w = snprintf(out + used, size - (size_t)used, "%srpc", session ? "." : "");
  return w < 0 || (size_t)(used + w) >= size ? -1 : 0;
}

CliNatsReq *
cli_natsreq_open(const char *url, const char *subject, int *read_fd, bool *denied, char *why,
                 size_t size)
{
  *denied = false;
  CliNatsReq *n = xcalloc(1, sizeof *n);
  n->fds[0] = n->fds[1] = -1;
  atomic_init(&n->closing, false);
  pthread_mutex_init(&n->mu, NULL);
  snprintf(n->subject, sizeof n->subject, "%s", subject);
  pthread_once(&cli_natsreq_client_once, cli_natsreq_client_make);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, n->fds) != 0) {
    snprintf(why, size, "socketpair: %s", strerror(errno));
    pthread_mutex_destroy(&n->mu);
    free(n);
    return NULL;
  }
  natsOptions *o = NULL;
  natsStatus s = natsOptions_Create(&o);
  if (s == NATS_OK)
    s = natsOptions_SetURL(o, url);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout(o, CLI_NATSREQ_CONNECT_MS);
  if (s == NATS_OK)
    s = natsOptions_SetName(o, "vigil");
  /* Each request goes out at once (its answer is waited for). */
  if (s == NATS_OK)
    s = natsOptions_SetSendAsap(o, true);
  /* A lost server is a lost engine, said at once (see cli_natsreq.h). */
  if (s == NATS_OK)
    s = natsOptions_SetAllowReconnect(o, false);
  if (s == NATS_OK)
    s = natsOptions_SetDisconnectedCB(o, cli_natsreq_on_lost, n);
  if (s == NATS_OK)
    s = natsOptions_SetClosedCB(o, cli_natsreq_on_lost, n);
  if (s == NATS_OK)
    s = natsOptions_SetPingInterval(o, CLI_NATSREQ_PING_MS);
  if (s == NATS_OK)
    s = natsOptions_SetMaxPingsOut(o, CLI_NATSREQ_PINGS_OUT);
  char opts_why[1024] = "";
  if (s == NATS_OK)
    s = cli_natsopts_apply(o, url, opts_why, sizeof opts_why);
  if (s == NATS_OK)
    s = natsConnection_Connect(&n->nc, o);
  natsOptions_Destroy(o);
  if (opts_why[0]) {
    snprintf(why, size, "--nats: %s", opts_why);
    cli_natsreq_close(n);
    return NULL;
  }
  natsInbox *inbox = NULL;
  if (s == NATS_OK)
    s = natsInbox_Create(&inbox);
  /* A user's own prefix, where its permissions let it read answers. */
  const char *prefix = getenv("VIGIL_NATS_INBOX");
  char wildcard[sizeof n->inbox + 4] = "";
  if (s == NATS_OK) {
    const char *unique = strchr((const char *)inbox, '.');
    if (prefix && *prefix && unique)
      snprintf(n->inbox, sizeof n->inbox, "%s%s", prefix, unique);
    else
      snprintf(n->inbox, sizeof n->inbox, "%s", (const char *)inbox);
    natsInbox_Destroy(inbox);
    snprintf(wildcard, sizeof wildcard, "%s.*", n->inbox);
    s = natsConnection_Subscribe(&n->sub, n->nc, wildcard, cli_natsreq_on_answer, n);
  }
  /* A round trip: a subscription the user may not make is refused with an
   * -ERR that comes before the PONG. Unchecked, every answer would be
   * dropped by the server and each call would wait out its deadline as if
   * the engine were silent. */
  if (s == NATS_OK)
    s = natsConnection_FlushTimeout(n->nc, CLI_NATSREQ_CONNECT_MS);
  const char *refusal = NULL;
  if (s == NATS_OK && natsConnection_GetLastError(n->nc, &refusal) == NATS_NOT_PERMITTED &&
      refusal && strstr(refusal, wildcard)) {
    snprintf(why, size, "--nats: the NATS server refused this user the subscription to %s, where "
             "the engine's answers come: %s (set $VIGIL_NATS_INBOX to an inbox prefix this NATS "
             "user may subscribe to; %s%s%s)", wildcard, refusal,
             prefix && *prefix ? "it is \"" : "it is unset, so _INBOX",
             prefix && *prefix ? prefix : "", prefix && *prefix ? "\"" : "");
    *denied = true;
    cli_natsreq_close(n);
    return NULL;
  }
  if (s != NATS_OK) {
    const char *text = cli_natsopts_last_error();
    snprintf(why, size, "--nats: cannot reach the NATS server: %s%s",
             *text ? text : natsStatus_GetText(s), cli_natsopts_tls_hint(s, url));
    cli_natsreq_close(n);
    return NULL;
  }
  *read_fd = n->fds[0];
  return n;
}

int
cli_natsreq_send(CliNatsReq *n, uint32_t msgid, const char *data, size_t len, char *why,
                 size_t size)
{
  char reply[sizeof n->inbox + 16];
  snprintf(reply, sizeof reply, "%s.%" PRIu32, n->inbox, msgid);
  natsMsg *msg = NULL;
  natsStatus s = natsMsg_Create(&msg, n->subject, reply, data, (int)len);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(msg, "Vigil-Client", cli_natsreq_client_id);
  if (s == NATS_OK)
    s = natsConnection_PublishMsg(n->nc, msg);
  natsMsg_Destroy(msg);
  /* A round trip: a publish the user may not make is dropped by the
   * server with an -ERR that comes before the PONG, so the command can say
   * so now instead of at its deadline. */
  if (s == NATS_OK)
    s = natsConnection_FlushTimeout(n->nc, CLI_NATSREQ_CONNECT_MS);
  const char *text = NULL;
  if (s == NATS_OK && natsConnection_GetLastError(n->nc, &text) == NATS_NOT_PERMITTED && text &&
      strstr(text, n->subject)) {
    snprintf(why, size, "the NATS server refused the request: %s (this NATS user may not send "
             "to %s)", text, n->subject);
    return -1;
  }
  if (s != NATS_OK) {
    snprintf(why, size, "cannot send to %s: %s", n->subject, natsStatus_GetText(s));
    return -1;
  }
  return 0;
}

void
cli_natsreq_close(CliNatsReq *n)
{
  if (n == NULL)
    return;
  /* Our own close is no loss to report, and no callback writes from now
   * on. Not under mu: a callback may hold it, blocked writing to a full
   * socketpair that nobody reads any more; shutting the writing end makes
   * that write fail at once. */
  atomic_store(&n->closing, true);
  if (n->fds[1] >= 0)
    shutdown(n->fds[1], SHUT_RDWR);
  /* The subscriptions first, so that no callback writes to a closed end. */
  natsSubscription *subs[2] = {n->sub, n->live};
  for (int i = 0; i < 2; i++) {
    if (subs[i]) {
      natsSubscription_Unsubscribe(subs[i]);
      natsSubscription_Destroy(subs[i]);
    }
  }
  if (n->nc) {
    natsConnection_Close(n->nc);
    natsConnection_Destroy(n->nc);
  }
  /* Every thread of nats.c ends before n goes: a callback still queued
   * would use it. Should they not end in time, n is left allocated rather
   * than freed under them. */
  if (nats_CloseAndWait(2000) != NATS_OK)
    return;
  if (n->fds[0] >= 0)
    close(n->fds[0]);
  if (n->fds[1] >= 0)
    close(n->fds[1]);
  pthread_mutex_destroy(&n->mu);
  free(n);
}

int
cli_natsreq_listen(CliNatsReq *n, const char *engine, const char *session, char *why,
                   size_t size)
{
  if (!cli_fleetmsg_engine_ok(engine) || !cli_fleetmsg_session_ok(session)) {
    snprintf(why, size, "no notifications to listen to: \"%.64s\" or \"%.64s\" is no name",
             engine, session);
    return -1;
  }
  snprintf(n->engine, sizeof n->engine, "%s", engine);
  snprintf(n->session, sizeof n->session, "%s", session);
  StrBuf subject = STRBUF_INIT;
  cli_fleetmsg_subject(&subject, engine, session);
  snprintf(n->live_subject, sizeof n->live_subject, "%s", strbuf_cstr(&subject));
  strbuf_free(&subject);
  natsStatus s = natsConnection_Subscribe(&n->live, n->nc, n->live_subject, cli_natsreq_on_live, n);
  /* A round trip: a subscription the user may not make is refused with an
   * -ERR that comes before the PONG. */
  if (s == NATS_OK)
    s = natsConnection_FlushTimeout(n->nc, CLI_NATSREQ_CONNECT_MS);
  const char *text = NULL;
  if (s == NATS_OK && natsConnection_GetLastError(n->nc, &text) == NATS_NOT_PERMITTED && text &&
      strstr(text, n->live_subject)) {
    snprintf(why, size, "the NATS server refused to subscribe to %s: %s (this NATS user may not "
             "subscribe there)", n->live_subject, text);
    return -1;
  }
  if (s != NATS_OK) {
    snprintf(why, size, "cannot subscribe to %s: %s", n->live_subject, natsStatus_GetText(s));
    return -1;
  }
  return 0;
}

unsigned long long
cli_natsreq_live_dropped(CliNatsReq *n)
{
  pthread_mutex_lock(&n->mu);
  unsigned long long count = n->live_dropped;
  pthread_mutex_unlock(&n->mu);
  return count;
}

bool
cli_natsreq_lost(CliNatsReq *n, char *why, size_t size)
{
  pthread_mutex_lock(&n->mu);
  bool lost = n->lost;
  if (lost)
    snprintf(why, size, "%s", n->lost_why);
  pthread_mutex_unlock(&n->mu);
  return lost;
}

bool
cli_natsreq_no_responders(CliNatsReq *n, uint32_t msgid)
{
  bool found = false;
  pthread_mutex_lock(&n->mu);
  size_t kept = n->nnoresp < CLI_NATSREQ_NORESP_MAX ? n->nnoresp : CLI_NATSREQ_NORESP_MAX;
  for (size_t i = 0; i < kept && !found; i++) {
    if (n->noresp[i] == msgid) {
      n->noresp[i] = 0; /* msgids start at 1 */
      found = true;
    }
  }
  pthread_mutex_unlock(&n->mu);
  return found;
}
