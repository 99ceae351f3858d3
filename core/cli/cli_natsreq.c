/*
 * Requests over NATS for the CLI (cli_natsreq.h). nats.c runs its
 * subscription's callback on a thread of its own; the callback only writes
 * the answer's payload into one end of a socketpair (send with
 * MSG_NOSIGNAL: a CLI that went away must not be killed by SIGPIPE), and
 * the CLI's thread reads the other end. Each payload is one whole frame,
 * so the stream of the socketpair is a stream of frames, as the engine's
 * socket is.
 */
#include "cli/cli_natsreq.h"

#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <nats/nats.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/memory.h"

struct CliNatsReq {
  natsConnection *nc;
  natsSubscription *sub;
  char subject[512];
  char inbox[128];
  char client[64];   /* this run's Vigil-Client */
  int fds[2];        /* [0]: the CLI reads; [1]: the callback writes */
};

/* Writes all of p into the socketpair (nats.c's thread). */
static void
cli_natsreq_hand_on(CliNatsReq *n, const char *p, size_t len)
{
  while (p && len > 0) {
    ssize_t w = send(n->fds[1], p, len, MSG_NOSIGNAL);
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
  cli_natsreq_hand_on(n, sb.data, sb.size);
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
  if (len > 0)
    cli_natsreq_hand_on(n, p, (size_t)len);
  natsMsg_Destroy(msg);
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
cli_natsreq_open(const char *url, const char *subject, int *read_fd, char *why, size_t size)
{
  CliNatsReq *n = xcalloc(1, sizeof *n);
  n->fds[0] = n->fds[1] = -1;
  snprintf(n->subject, sizeof n->subject, "%s", subject);
  snprintf(n->client, sizeof n->client, "vigil-cli-%ld-%08" PRIx32, (long)getpid(),
           (uint32_t)nats_NowInNanoSeconds());
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, n->fds) != 0) {
    snprintf(why, size, "socketpair: %s", strerror(errno));
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
  const char *creds = getenv("VIGIL_NATS_CREDS");
  if (s == NATS_OK && creds && *creds)
    s = natsOptions_SetUserCredentialsFromFiles(o, creds, NULL);
  if (s == NATS_OK)
    s = natsConnection_Connect(&n->nc, o);
  natsOptions_Destroy(o);
  natsInbox *inbox = NULL;
  if (s == NATS_OK)
    s = natsInbox_Create(&inbox);
  if (s == NATS_OK) {
    /* A user's own prefix, where its permissions let it read answers. */
    const char *prefix = getenv("VIGIL_NATS_INBOX");
    const char *unique = strchr((const char *)inbox, '.');
    if (prefix && *prefix && unique)
      snprintf(n->inbox, sizeof n->inbox, "%s%s", prefix, unique);
    else
      snprintf(n->inbox, sizeof n->inbox, "%s", (const char *)inbox);
    natsInbox_Destroy(inbox);
    char wildcard[sizeof n->inbox + 4];
    snprintf(wildcard, sizeof wildcard, "%s.*", n->inbox);
    s = natsConnection_Subscribe(&n->sub, n->nc, wildcard, cli_natsreq_on_answer, n);
  }
  if (s != NATS_OK) {
    const char *text = nats_GetLastError(NULL);
    snprintf(why, size, "--nats: cannot reach the NATS server: %s",
             text && *text ? text : natsStatus_GetText(s));
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
    s = natsMsgHeader_Set(msg, "Vigil-Client", n->client);
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
  /* The subscription first, so that no callback writes to a closed end. */
  if (n->sub) {
    natsSubscription_Unsubscribe(n->sub);
    natsSubscription_Destroy(n->sub);
  }
  if (n->nc) {
    natsConnection_Close(n->nc);
    natsConnection_Destroy(n->nc);
  }
  nats_CloseAndWait(2000);
  if (n->fds[0] >= 0)
    close(n->fds[0]);
  if (n->fds[1] >= 0)
    close(n->fds[1]);
  free(n);
}
