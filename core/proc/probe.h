/*
 * A readiness or health probe of a monitored program, from outside: one
 * attempt is a TCP connect to a loopback port, or an HTTP/1.1 GET on
 * loopback whose status line is the answer (docs/readiness.md).
 *
 * It lives in proc/ beside the pipes, signals and /proc readers: like them
 * it looks at the program through the kernel, with libuv, and knows
 * nothing of monitors, batches or the wire. The monitor (monitor_ready.c)
 * spaces the attempts and decides what an answer means.
 *
 * Bounds: a target is loopback only (127.0.0.0/8, ::1, or "localhost",
 * which is 127.0.0.1 without any lookup); an attempt ends within its
 * timeout (connect, write and read together); an HTTP answer is read up
 * to the end of its status line and at most PROBE_RESPONSE_MAX bytes, so an
 * endless body or an endless header is cut, never read; redirects are
 * never followed (a 3xx is an answer like any status). Nothing blocks the
 * loop and nothing runs a shell.
 */
#ifndef VIGIL_PROBE_H
#define VIGIL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "base/error.h"

#define PROBE_URL_MAX 2048          /* bytes of a ready_http URL */
#define PROBE_RESPONSE_MAX 4096     /* bytes of an answer read, at most */
#define PROBE_ATTEMPT_TIMEOUT_MS 1000 /* one attempt: connect, write, read */

typedef enum {
  kProbeTcp = 0,
  kProbeHttp,
} ProbeKind;

/* What to probe, checked (probe_target_tcp, probe_target_http). */
typedef struct {
  ProbeKind kind;
  struct sockaddr_storage addr; /* loopback, with the port */
  unsigned port;
  char host[304];               /* as given, for the Host header and for words */
  char path[PROBE_URL_MAX];     /* http: the request target, from "/" */
} ProbeTarget;

/* A TCP target on 127.0.0.1:port. Refuses a port outside 1..65535 with an
 * invalid_params error naming `what`. */
int probe_target_tcp(ProbeTarget *t, uint64_t port, const char *what, VigilError *err);

/* An HTTP target from url ("http://HOST[:PORT][/PATH]"), HOST loopback
 * only. Refused with an invalid_params error naming `what` and the value:
 * another scheme, a host that is not loopback (no name is looked up but
 * "localhost"), user info, a bad port, a path with spaces or control bytes,
 * an URL longer than PROBE_URL_MAX. */
int probe_target_http(ProbeTarget *t, const char *url, const char *what, VigilError *err);

/* The target in words: "port 3000", "http://127.0.0.1:3000/health". */
void probe_target_words(const ProbeTarget *t, char *buf, size_t size);

/* How an attempt ended. */
typedef struct {
  bool answered;     /* tcp: connected; http: a status line was read */
  int status;        /* http: the status code; else 0 */
  char why[128];     /* when not answered: what went wrong, in words */
} ProbeResult;

typedef void (*ProbeDone)(void *data, const ProbeResult *r);

typedef struct Probe Probe;

/* Starts one attempt; done is called once from the loop, unless the attempt
 * is cancelled first. timeout_ms bounds it as a whole. Returns the attempt
 * (never NULL). */
Probe *probe_attempt(uv_loop_t *loop, const ProbeTarget *t, uint64_t timeout_ms, ProbeDone done,
                     void *data);

/* Cancels an attempt whose done has not been called: it is never called,
 * and the attempt's handles close and free it from the loop. */
void probe_cancel(Probe *p);

#endif
