/*
 * One probe attempt (probe.h): a TCP connect, or an HTTP/1.1 GET whose
 * status line is read and nothing more. The attempt owns a TCP handle and
 * a timer; it ends once (probe_finish), by its answer, its failure, its
 * timeout or a cancel, and frees itself when both handles have closed.
 */
#include "proc/probe.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/memory.h"

struct Probe {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_connect_t connect;
  uv_write_t write;
  ProbeTarget target;
  ProbeDone done;
  void *data;
  uint64_t timeout_ms;
  int open;                  /* handles not yet closed */
  bool finished;             /* done called, or cancelled */
  bool cancelled;
  ProbeResult early;         /* a connect refused before the loop ran */
  bool has_early;
  char request[PROBE_URL_MAX + 256];
  char answer[PROBE_RESPONSE_MAX];
  size_t got;
};

/* --- targets -------------------------------------------------------------- */

/* See probe.h. */
int
probe_target_tcp(ProbeTarget *t, uint64_t port, const char *what, VigilError *err)
{
  if (port < 1 || port > 65535) {
    error_set(err, kErrInvalidParams, "%s: a port from 1 to 65535, got %llu", what,
              (unsigned long long)port);
    return -1;
  }
  memset(t, 0, sizeof *t);
  t->kind = kProbeTcp;
  t->port = (unsigned)port;
  snprintf(t->host, sizeof t->host, "127.0.0.1");
  struct sockaddr_in *in = (struct sockaddr_in *)&t->addr;
  in->sin_family = AF_INET;
  in->sin_port = htons((uint16_t)port);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return 0;
}

/* Sets t->addr for a loopback host (without its port), or refuses it. */
static int
probe_loopback(ProbeTarget *t, const char *host, bool bracketed, const char *what,
               const char *url, VigilError *err)
{
  if (!bracketed && strcasecmp(host, "localhost") == 0)
    host = "127.0.0.1";
  struct sockaddr_in *in = (struct sockaddr_in *)&t->addr;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&t->addr;
  if (!bracketed && inet_pton(AF_INET, host, &in->sin_addr) == 1) {
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) {
      in->sin_family = AF_INET;
      return 0;
    }
  } else if (bracketed && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
      in6->sin6_family = AF_INET6;
      return 0;
    }
  }
  error_set(err, kErrInvalidParams,
            "%s: the host must be loopback (127.0.0.0/8, [::1] or localhost; no name is looked "
            "up), got %.200s", what, url);
  return -1;
}

/* See probe.h. */
int
probe_target_http(ProbeTarget *t, const char *url, const char *what, VigilError *err)
{
  memset(t, 0, sizeof *t);
  t->kind = kProbeHttp;
  size_t len = strlen(url);
  if (len > PROBE_URL_MAX) {
    error_set(err, kErrInvalidParams, "%s: at most %d bytes, got %zu", what, PROBE_URL_MAX, len);
    return -1;
  }
  if (strncasecmp(url, "http://", 7) != 0) {
    error_set(err, kErrInvalidParams,
              "%s: an http:// URL on loopback (https and other schemes are not probed), got %.200s",
              what, url);
    return -1;
  }
  const char *auth = url + 7;
  size_t alen = strcspn(auth, "/?#");
  const char *rest = auth + alen;
  char authority[300];
  if (alen == 0 || alen >= sizeof authority || memchr(auth, '@', alen) != NULL) {
    error_set(err, kErrInvalidParams,
              "%s: HOST[:PORT] after http:// (no user info, at most %zu bytes), got %.200s", what,
              sizeof authority - 1, url);
    return -1;
  }
  memcpy(authority, auth, alen);
  authority[alen] = '\0';
  char *host = authority;
  char *port = NULL;
  bool bracketed = false;
  if (host[0] == '[') {
    char *close = strchr(host, ']');
    if (close == NULL)
      return probe_loopback(t, "", true, what, url, err);
    *close = '\0';
    host++;
    bracketed = true;
    if (close[1] == ':')
      port = close + 2;
    else if (close[1] != '\0')
      return probe_loopback(t, "", true, what, url, err);
  } else if ((port = strchr(host, ':')) != NULL) {
    *port++ = '\0';
  }
  if (probe_loopback(t, host, bracketed, what, url, err) != 0)
    return -1;
  unsigned long p = 80;
  if (port != NULL) {
    char *end = NULL;
    p = strtoul(port, &end, 10);
    if (port[0] == '\0' || !isdigit((unsigned char)port[0]) || *end != '\0' || p < 1 ||
        p > 65535) {
      error_set(err, kErrInvalidParams, "%s: the port must be from 1 to 65535, got %.200s", what,
                url);
      return -1;
    }
  }
  t->port = (unsigned)p;
  if (t->addr.ss_family == AF_INET)
    ((struct sockaddr_in *)&t->addr)->sin_port = htons((uint16_t)p);
  else
    ((struct sockaddr_in6 *)&t->addr)->sin6_port = htons((uint16_t)p);
  snprintf(t->host, sizeof t->host, "%s%s%s", bracketed ? "[" : "", host, bracketed ? "]" : "");
  /* The request target: the path and query, never the fragment; no byte a
   * request line could be split or smuggled with. */
  size_t plen = strcspn(rest, "#");
  for (size_t i = 0; i < plen; i++) {
    unsigned char c = (unsigned char)rest[i];
    if (c <= 0x20 || c == 0x7f) {
      error_set(err, kErrInvalidParams,
                "%s: the path must hold no space or control byte (byte %zu is 0x%02x)", what,
                (size_t)(rest - url) + i, c);
      return -1;
    }
  }
  snprintf(t->path, sizeof t->path, "%s%.*s", rest[0] == '/' ? "" : "/", (int)plen, rest);
  return 0;
}

/* See probe.h. */
void
probe_target_words(const ProbeTarget *t, char *buf, size_t size)
{
  if (t->kind == kProbeTcp)
    snprintf(buf, size, "port %u", t->port);
  else
    snprintf(buf, size, "http://%s:%u%s", t->host, t->port, t->path);
}

/* --- an attempt ----------------------------------------------------------- */

static void
probe_closed(uv_handle_t *h)
{
  Probe *p = h->data;
  if (--p->open == 0)
    free(p);
}

/* Ends the attempt once: its handles close, and done is told unless it was
 * cancelled. */
static void
probe_finish(Probe *p, const ProbeResult *r)
{
  if (p->finished)
    return;
  p->finished = true;
  uv_close((uv_handle_t *)&p->timer, probe_closed);
  uv_close((uv_handle_t *)&p->tcp, probe_closed);
  if (!p->cancelled && r != NULL)
    p->done(p->data, r);
}

/* A failed attempt, in words. */
static void
probe_fail(Probe *p, const char *fmt, const char *detail)
{
  ProbeResult r = {0};
  snprintf(r.why, sizeof r.why, fmt, detail);
  probe_finish(p, &r);
}

static void
probe_timeout_cb(uv_timer_t *t)
{
  Probe *p = t->data;
  if (p->has_early) {
    probe_finish(p, &p->early);
    return;
  }
  char ms[32];
  snprintf(ms, sizeof ms, "%llu", (unsigned long long)p->timeout_ms);
  probe_fail(p, "no answer within the attempt's %s ms", ms);
}

/* Whether the answer holds a whole status line; its code in *status. */
static int
probe_status_line(Probe *p, int *status)
{
  char *nl = memchr(p->answer, '\n', p->got);
  if (nl == NULL)
    return 0;
  /* "HTTP/1.1 200 OK": a version, one space, three digits. */
  if (p->got < 12 || memcmp(p->answer, "HTTP/1.", 7) != 0 || p->answer[8] != ' ' ||
      !isdigit((unsigned char)p->answer[9]) || !isdigit((unsigned char)p->answer[10]) ||
      !isdigit((unsigned char)p->answer[11]) || nl - p->answer < 12)
    return -1;
  *status = (p->answer[9] - '0') * 100 + (p->answer[10] - '0') * 10 + (p->answer[11] - '0');
  return 1;
}

static void
probe_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  (void)suggested;
  Probe *p = h->data;
  *buf = uv_buf_init(p->answer + p->got, (unsigned)(sizeof p->answer - p->got));
}

static void
probe_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  (void)buf;
  Probe *p = s->data;
  if (p->finished)
    return;
  if (nread < 0) {
    probe_fail(p, "the connection closed before a status line (%s)",
               nread == UV_EOF ? "end of stream" : uv_strerror((int)nread));
    return;
  }
  p->got += (size_t)nread;
  int status = 0;
  int rc = probe_status_line(p, &status);
  if (rc > 0) {
    ProbeResult r = {.answered = true, .status = status};
    probe_finish(p, &r);
  } else if (rc < 0) {
    probe_fail(p, "%s", "the answer is not an HTTP/1.x status line");
  } else if (p->got == sizeof p->answer) {
    probe_fail(p, "%s", "no status line in the answer's first 4096 bytes");
  }
}

static void
probe_write_cb(uv_write_t *w, int status)
{
  Probe *p = w->data;
  if (status < 0 && !p->finished)
    probe_fail(p, "the request could not be sent (%s)", uv_strerror(status));
}

static void
probe_connect_cb(uv_connect_t *c, int status)
{
  Probe *p = c->data;
  if (p->finished)
    return;
  if (status < 0) {
    probe_fail(p, "connect: %s", uv_strerror(status));
    return;
  }
  if (p->target.kind == kProbeTcp) {
    ProbeResult r = {.answered = true};
    probe_finish(p, &r);
    return;
  }
  int n = snprintf(p->request, sizeof p->request,
                   "GET %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: vigil-probe\r\n"
                   "Accept: */*\r\nConnection: close\r\n\r\n",
                   p->target.path, p->target.host, p->target.port);
  uv_buf_t b = uv_buf_init(p->request, (unsigned)n);
  p->write.data = p;
  int rc = uv_write(&p->write, (uv_stream_t *)&p->tcp, &b, 1, probe_write_cb);
  if (rc == 0)
    rc = uv_read_start((uv_stream_t *)&p->tcp, probe_alloc_cb, probe_read_cb);
  if (rc != 0)
    probe_fail(p, "the request could not be sent (%s)", uv_strerror(rc));
}

/* See probe.h. */
Probe *
probe_attempt(uv_loop_t *loop, const ProbeTarget *t, uint64_t timeout_ms, ProbeDone done,
              void *data)
{
  Probe *p = xcalloc(1, sizeof *p);
  p->target = *t;
  p->done = done;
  p->data = data;
  uv_tcp_init(loop, &p->tcp);
  uv_timer_init(loop, &p->timer);
  p->tcp.data = p;
  p->timer.data = p;
  p->open = 2;
  p->connect.data = p;
  /* The timer bounds the attempt as a whole. */
  p->timeout_ms = timeout_ms;
  uv_timer_start(&p->timer, probe_timeout_cb, timeout_ms, 0);
  int rc = uv_tcp_connect(&p->connect, &p->tcp, (const struct sockaddr *)&p->target.addr,
                          probe_connect_cb);
  if (rc != 0) {
    /* Told from the loop, as every other end is. */
    snprintf(p->early.why, sizeof p->early.why, "connect: %s", uv_strerror(rc));
    p->has_early = true;
    uv_timer_start(&p->timer, probe_timeout_cb, 0, 0);
  }
  return p;
}

/* See probe.h. */
void
probe_cancel(Probe *p)
{
  if (p == NULL || p->finished)
    return;
  p->cancelled = true;
  probe_finish(p, NULL);
}
