/*
 * A WebSocket followed as a source (see wssrc.h): the URL judged, the
 * connection through libuv, the handshake, frames to lines, pings
 * answered, the close.
 */
#include "source/wssrc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "source/wsframe.h"
#include "source/wshandshake.h"

typedef enum {
  kWsConnecting = 0,
  kWsHandshake,
  kWsOpen,
  kWsEnded,
} WsState;

struct WsSource {
  uv_loop_t *loop;
  char *url;
  char host[64];
  int port;
  char *path;
  struct sockaddr_storage addr;
  WsState state;
  bool closing;
  uv_tcp_t tcp;
  uv_connect_t connect;
  uv_timer_t timer;               /* the handshake's bound */
  int open_handles;
  char key[WS_KEY_LEN + 1];
  char head[WS_HANDSHAKE_MAX];
  size_t head_len;
  WsDecoder dec;
  WsSourceCallbacks cb;
  void *data;
  WsSourceCounters counters;
  char rbuf[WSSRC_READ_BYTES];
};

/* The URL, parsed: host (the literal), its address, port and path. */
typedef struct {
  char host[64];
  int port;
  char path[WSSRC_URL_MAX + 1];
  struct sockaddr_storage addr;
} WsUrl;

/* The caller's URL in a message: escaped, quoted, cut at 200 bytes. */
static int
wssrc_refuse(VigilError *err, VigilErrorCode code, const char *url, const char *words)
{
  StrBuf q = STRBUF_INIT;
  size_t n = strlen(url);
  textfmt_escape(&q, url, n > 200 ? 200 : n);
  error_set(err, code, "source.ws: \"%s\"%s %s", strbuf_cstr(&q), n > 200 ? "..." : "", words);
  strbuf_free(&q);
  return -1;
}

static int
wssrc_parse(const char *url, WsUrl *u, VigilError *err)
{
  memset(u, 0, sizeof *u);
  size_t n = strlen(url);
  if (n > WSSRC_URL_MAX)
    return error_set(err, kErrInvalidParams, "source.ws must be at most %d bytes, got %zu",
                     WSSRC_URL_MAX, n);
  if (strncmp(url, "wss://", 6) == 0)
    return wssrc_refuse(err, kErrInvalidParams, url,
                        "is refused: wss:// (TLS) is not supported; a loopback ws:// URL is");
  if (strncmp(url, "ws://", 5) != 0)
    return wssrc_refuse(err, kErrInvalidParams, url, "must start with ws://");
  const char *h = url + 5;
  const char *end;
  if (*h == '[') {
    end = strchr(h, ']');
    if (end == NULL || (size_t)(end - h - 1) >= sizeof u->host)
      return wssrc_refuse(err, kErrInvalidParams, url, "has a bad [host]");
    memcpy(u->host, h + 1, (size_t)(end - h - 1));
    end++;
  } else {
    end = h + strcspn(h, ":/");
    if ((size_t)(end - h) >= sizeof u->host || end == h)
      return wssrc_refuse(err, kErrInvalidParams, url, "has a bad host");
    memcpy(u->host, h, (size_t)(end - h));
  }
  u->port = 80;
  if (*end == ':') {
    char *stop = NULL;
    long port = strtol(end + 1, &stop, 10);
    if (stop == end + 1 || port < 1 || port > 65535 || (*stop != '\0' && *stop != '/'))
      return wssrc_refuse(err, kErrInvalidParams, url, "has a bad port (1..65535)");
    u->port = (int)port;
    end = stop;
  }
  snprintf(u->path, sizeof u->path, "%s", *end == '/' ? end : "/");
  for (const char *p = u->path; *p; p++)
    if (*p <= ' ' || *p > '~')
      return wssrc_refuse(err, kErrInvalidParams, url,
                          "has a path with a space or a byte that is not printable ASCII");
  struct sockaddr_in *in4 = (struct sockaddr_in *)&u->addr;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&u->addr;
  const char *literal = strcmp(u->host, "localhost") == 0 ? "127.0.0.1" : u->host;
  if (uv_ip4_addr(literal, u->port, in4) == 0) {
    if ((ntohl(in4->sin_addr.s_addr) >> 24) != 127)
      return wssrc_refuse(err, kErrDenied, url, "is off loopback: only 127.0.0.0/8, [::1] "
                          "and localhost are followed");
  } else if (uv_ip6_addr(literal, u->port, in6) == 0) {
    if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
      return wssrc_refuse(err, kErrDenied, url, "is off loopback: only 127.0.0.0/8, [::1] "
                          "and localhost are followed");
  } else {
    return wssrc_refuse(err, kErrDenied, url, "is off loopback: only 127.0.0.0/8, [::1] and "
                        "localhost are followed (a host name is never looked up)");
  }
  return 0;
}

/* See wssrc.h. */
int
wssrc_check(const char *url, VigilError *err)
{
  WsUrl u;
  return wssrc_parse(url, &u, err);
}

/* --- writing ------------------------------------------------------------ */

typedef struct {
  uv_write_t req;
  size_t len;
  char buf[];
} WsWrite;

static void
wssrc_written(uv_write_t *req, int status)
{
  (void)status; /* a lost write ends the connection through its read */
  free(req->data);
}

static void
wssrc_write(WsSource *ws, const void *buf, size_t len)
{
  WsWrite *w = xmalloc(sizeof *w + len);
  memcpy(w->buf, buf, len);
  w->len = len;
  w->req.data = w;
  uv_buf_t b = uv_buf_init(w->buf, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)&ws->tcp, &b, 1, wssrc_written) != 0)
    free(w);
}

/* A control frame to the server, masked with a fresh key. */
static void
wssrc_send_control(WsSource *ws, int opcode, const unsigned char *payload, size_t len)
{
  unsigned char frame[WS_HEADER_MAX + WS_CONTROL_MAX];
  unsigned char mask[4];
  random_bytes(mask, sizeof mask);
  size_t n = wsframe_encode(frame, opcode, payload, len, mask);
  wssrc_write(ws, frame, n);
}

static void
wssrc_send_close(WsSource *ws, int code)
{
  unsigned char payload[2] = {(unsigned char)(code >> 8), (unsigned char)code};
  wssrc_send_control(ws, WS_OP_CLOSE, payload, code >= 0 ? 2 : 0);
}

/* --- the end ------------------------------------------------------------ */

static void
wssrc_end(WsSource *ws, bool failed, const char *fmt, const char *a)
{
  if (ws->state == kWsEnded || ws->closing)
    return;
  ws->state = kWsEnded;
  ws->dec.stop = true;
  uv_read_stop((uv_stream_t *)&ws->tcp);
  uv_timer_stop(&ws->timer);
  char reason[320];
  snprintf(reason, sizeof reason, fmt, a);
  ws->cb.on_end(ws->data, failed, reason);
}

/* --- frames ------------------------------------------------------------- */

static void
wssrc_on_data(void *ctx, const char *buf, size_t len)
{
  WsSource *ws = ctx;
  ws->counters.bytes += len;
  ws->cb.on_output(ws->data, buf, len);
}

static void
wssrc_on_message_end(void *ctx)
{
  WsSource *ws = ctx;
  ws->counters.messages++;
  if (!ws->closing)
    ws->cb.on_output(ws->data, "\n", 1);
}

static void
wssrc_on_ping(void *ctx, const unsigned char *payload, size_t len)
{
  WsSource *ws = ctx;
  ws->counters.pings++;
  wssrc_send_control(ws, WS_OP_PONG, payload, len);
}

static void
wssrc_on_close(void *ctx, int code)
{
  WsSource *ws = ctx;
  wssrc_send_close(ws, code >= 0 ? code : 1000);
  char num[32];
  snprintf(num, sizeof num, "%d", code);
  wssrc_end(ws, false, code >= 0 ? "the server closed the WebSocket (code %s)"
                                 : "the server closed the WebSocket%s", code >= 0 ? num : "");
}

static const WsFrameCallbacks wssrc_frames = {wssrc_on_data, wssrc_on_message_end,
                                              wssrc_on_ping, wssrc_on_close};

static void
wssrc_feed(WsSource *ws, const char *buf, size_t len)
{
  if (wsframe_feed(&ws->dec, buf, len, &wssrc_frames, ws) != 0 && !ws->closing) {
    wssrc_send_close(ws, 1002);
    wssrc_end(ws, true, "a WebSocket protocol error: %s", ws->dec.why);
  }
}

/* --- reading ------------------------------------------------------------ */

static void
wssrc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  (void)hint;
  WsSource *ws = h->data;
  *buf = uv_buf_init(ws->rbuf, sizeof ws->rbuf);
}

static void
wssrc_handshake(WsSource *ws, const char *buf, size_t len)
{
  size_t room = sizeof ws->head - ws->head_len;
  size_t take = len < room ? len : room;
  memcpy(ws->head + ws->head_len, buf, take);
  ws->head_len += take;
  size_t head = wshandshake_head_len(ws->head, ws->head_len);
  if (head == 0) {
    if (ws->head_len == sizeof ws->head)
      wssrc_end(ws, true, "the WebSocket handshake's answer is over %s bytes", "8192");
    return;
  }
  const char *no = wshandshake_check(ws->head, head, ws->key);
  if (no != NULL) {
    wssrc_end(ws, true, "the WebSocket handshake failed: %s", no);
    return;
  }
  ws->state = kWsOpen;
  uv_timer_stop(&ws->timer);
  /* What came after the head is frames already. */
  size_t before = ws->head_len - take; /* held before this read */
  size_t used = head - before;
  if (used < len)
    wssrc_feed(ws, buf + used, len - used);
}

static void
wssrc_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  WsSource *ws = s->data;
  if (ws->closing || ws->state == kWsEnded)
    return;
  if (nread == UV_EOF) {
    wssrc_end(ws, ws->state != kWsOpen, ws->state == kWsOpen
                  ? "the server closed the connection without a close frame%s"
                  : "the server closed the connection during the handshake%s", "");
    return;
  }
  if (nread < 0) {
    wssrc_end(ws, true, "the connection broke: %s", uv_strerror((int)nread));
    return;
  }
  if (ws->state == kWsHandshake)
    wssrc_handshake(ws, buf->base, (size_t)nread);
  else
    wssrc_feed(ws, buf->base, (size_t)nread);
}

static void
wssrc_timeout(uv_timer_t *t)
{
  WsSource *ws = t->data;
  wssrc_end(ws, true, "no WebSocket handshake within %s ms", "10000");
}

static void
wssrc_connected(uv_connect_t *req, int status)
{
  WsSource *ws = req->data;
  if (ws->closing || status == UV_ECANCELED)
    return;
  if (status < 0) {
    wssrc_end(ws, true, "cannot connect: %s", uv_strerror(status));
    return;
  }
  StrBuf req_text = STRBUF_INIT;
  wshandshake_request(&req_text, ws->host, ws->port, ws->path, ws->key);
  wssrc_write(ws, strbuf_cstr(&req_text), strlen(strbuf_cstr(&req_text)));
  strbuf_free(&req_text);
  ws->state = kWsHandshake;
  uv_read_start((uv_stream_t *)&ws->tcp, wssrc_alloc, wssrc_read);
}

/* --- open and close ----------------------------------------------------- */

/* See wssrc.h. */
int
wssrc_open(uv_loop_t *loop, const char *url, const WsSourceCallbacks *cb, void *data,
           WsSource **out, VigilError *err)
{
  WsUrl u;
  if (wssrc_parse(url, &u, err) != 0)
    return -1;
  WsSource *ws = xcalloc(1, sizeof *ws);
  ws->loop = loop;
  ws->url = xstrdup(url);
  snprintf(ws->host, sizeof ws->host, "%s", u.host);
  ws->port = u.port;
  ws->path = xstrdup(u.path);
  ws->addr = u.addr;
  ws->cb = *cb;
  ws->data = data;
  wsframe_decoder_init(&ws->dec);
  uv_tcp_init(loop, &ws->tcp);
  ws->tcp.data = ws;
  uv_timer_init(loop, &ws->timer);
  ws->timer.data = ws;
  ws->open_handles = 2;
  ws->connect.data = ws;
  int rc = uv_tcp_connect(&ws->connect, &ws->tcp, (const struct sockaddr *)&ws->addr,
                          wssrc_connected);
  if (rc != 0) {
    error_set(err, kErrInternal, "source.ws: cannot connect: %s", uv_strerror(rc));
    wssrc_close(ws);
    return -1;
  }
  uv_timer_start(&ws->timer, wssrc_timeout, WSSRC_HANDSHAKE_MS, 0);
  *out = ws;
  return 0;
}

static void
wssrc_closed(uv_handle_t *h)
{
  WsSource *ws = h->data;
  if (--ws->open_handles > 0)
    return;
  free(ws->url);
  free(ws->path);
  free(ws);
}

/* See wssrc.h. */
void
wssrc_close(WsSource *ws)
{
  if (ws == NULL || ws->closing)
    return;
  if (ws->state == kWsOpen)
    wssrc_send_close(ws, 1000);
  ws->closing = true;
  ws->dec.stop = true;
  uv_close((uv_handle_t *)&ws->tcp, wssrc_closed);
  uv_close((uv_handle_t *)&ws->timer, wssrc_closed);
}

const char *
wssrc_url(const WsSource *ws)
{
  return ws->url;
}

void
wssrc_counters(const WsSource *ws, WsSourceCounters *out)
{
  *out = ws->counters;
}
