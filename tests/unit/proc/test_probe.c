/*
 * proc/probe.c: what a probe target may be (loopback only, no lookup, no
 * request line a path could split), and single attempts through a real
 * loop: a listening port answers, a closed one is refused, an answer that
 * never ends its status line is cut at PROBE_RESPONSE_MAX, a cancelled
 * attempt never calls back.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "check.h"
#include "proc/probe.h"

static int
parse(const char *url, ProbeTarget *t, VigilError *err)
{
  *err = (VigilError)VIGIL_ERROR_INIT;
  return probe_target_http(t, url, "ready_http", err);
}

TEST(loopback_urls_are_taken_with_their_port_and_path)
{
  ProbeTarget t;
  VigilError err;
  char words[PROBE_URL_MAX + 32];
  CHECK_INT(parse("http://127.0.0.1:3000/health?x=1#frag", &t, &err), 0);
  probe_target_words(&t, words, sizeof words);
  CHECK_STR(words, "http://127.0.0.1:3000/health?x=1");
  CHECK_INT(parse("http://localhost", &t, &err), 0);
  probe_target_words(&t, words, sizeof words);
  CHECK_STR(words, "http://localhost:80/");
  CHECK_INT(t.addr.ss_family, AF_INET);
  CHECK_INT(parse("HTTP://127.5.6.7:8080", &t, &err), 0);
  CHECK_INT(parse("http://[::1]:9000/x", &t, &err), 0);
  CHECK_INT(t.addr.ss_family, AF_INET6);
  CHECK_INT(t.port, 9000);
}

TEST(anything_off_loopback_is_refused_naming_the_argument_and_the_value)
{
  static const char *const bad[][2] = {
    {"http://example.com/", "must be loopback"},
    {"http://localhost.example.com/", "must be loopback"},
    {"http://10.0.0.1/", "must be loopback"},
    {"http://128.0.0.1/", "must be loopback"},
    {"http://[::2]/", "must be loopback"},
    {"http://[::1/", "must be loopback"},
    {"http://0x7f000001/", "must be loopback"},
    {"https://127.0.0.1/", "an http:// URL"},
    {"ftp://127.0.0.1/", "an http:// URL"},
    {"http://u:p@127.0.0.1/", "no user info"},
    {"http:///x", "HOST[:PORT]"},
    {"http://127.0.0.1:0/", "from 1 to 65535"},
    {"http://127.0.0.1:65536/", "from 1 to 65535"},
    {"http://127.0.0.1:+80/", "from 1 to 65535"},
    {"http://127.0.0.1/a\r\nHost: evil", "no space or control byte"},
    {"http://127.0.0.1/a b", "no space or control byte"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ProbeTarget t;
    VigilError err;
    CHECK_INT(parse(bad[i][0], &t, &err), -1);
    CHECK_INT(err.code, kErrInvalidParams);
    CHECK_CONTAINS(err.msg, "ready_http: ");
    CHECK_CONTAINS(err.msg, bad[i][1]);
  }
  char longer[PROBE_URL_MAX + 64];
  memset(longer, 'a', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  memcpy(longer, "http://127.0.0.1/", 17);
  ProbeTarget t;
  VigilError err;
  CHECK_INT(parse(longer, &t, &err), -1);
  CHECK_CONTAINS(err.msg, "at most 2048 bytes");
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(probe_target_tcp(&t, 70000, "ready_tcp", &err), -1);
  CHECK_CONTAINS(err.msg, "ready_tcp: a port from 1 to 65535, got 70000");
}

/* --- attempts ------------------------------------------------------------- */

typedef struct {
  bool done;
  ProbeResult r;
} Outcome;

static void
on_done(void *data, const ProbeResult *r)
{
  Outcome *o = data;
  o->done = true;
  o->r = *r;
}

static bool
is_done(void *ctx)
{
  return ((Outcome *)ctx)->done;
}

/* A listening socket on 127.0.0.1 (the kernel completes connects to it
 * without an accept); its port in *port. */
static int
listener(unsigned *port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0);
  getsockname(fd, (struct sockaddr *)&a, &len);
  *port = ntohs(a.sin_port);
  return fd;
}

/* A listener and a ready_tcp target on its port; returns the listener. */
static int
tcp_target(ProbeTarget *t)
{
  unsigned port;
  int fd = listener(&port);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(probe_target_tcp(t, port, "ready_tcp", &err), 0);
  return fd;
}

TEST(a_listening_port_answers_and_a_closed_one_is_refused)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  ProbeTarget t;
  int fd = tcp_target(&t);
  Outcome o = {0};
  probe_attempt(&loop, &t, 5000, on_done, &o);
  RUN_UNTIL(&loop, is_done, &o, 10000, "the connect");
  CHECK(o.r.answered);
  close(fd);
  o = (Outcome){0};
  probe_attempt(&loop, &t, 5000, on_done, &o);
  RUN_UNTIL(&loop, is_done, &o, 10000, "the refusal");
  CHECK(!o.r.answered);
  CHECK_CONTAINS(o.r.why, "connect: ");
  test_loop_close(&loop);
}

TEST(an_answer_without_a_status_line_is_cut_and_a_silent_one_times_out)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  unsigned port;
  int fd = listener(&port);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u/", port);
  ProbeTarget t;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(probe_target_http(&t, url, "ready_http", &err), 0);
  /* Silent: accepted by the kernel, never answered. */
  Outcome o = {0};
  probe_attempt(&loop, &t, 200, on_done, &o);
  RUN_UNTIL(&loop, is_done, &o, 10000, "the timeout");
  CHECK(!o.r.answered);
  CHECK_CONTAINS(o.r.why, "no answer within the attempt's 200 ms");
  /* Endless bytes, no newline: the first attempt's connection is in the
   * backlog; the second's is accepted here and flooded. */
  o = (Outcome){0};
  probe_attempt(&loop, &t, 5000, on_done, &o);
  int c1 = accept(fd, NULL, NULL);
  int c2 = accept(fd, NULL, NULL);
  char blob[8192];
  memset(blob, 'y', sizeof blob);
  CHECK(c1 >= 0 && c2 >= 0);
  (void)!write(c2, blob, sizeof blob);
  RUN_UNTIL(&loop, is_done, &o, 10000, "the cut");
  CHECK(!o.r.answered);
  CHECK_CONTAINS(o.r.why, "no status line in the answer's first 4096 bytes");
  close(c1);
  close(c2);
  close(fd);
  test_loop_close(&loop);
}

TEST(a_cancelled_attempt_never_calls_back)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  ProbeTarget t;
  int fd = tcp_target(&t);
  Outcome o = {0};
  Probe *p = probe_attempt(&loop, &t, 5000, on_done, &o);
  probe_cancel(p);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(!o.done);
  close(fd);
  test_loop_close(&loop);
}

int
main(void)
{
  RUN(loopback_urls_are_taken_with_their_port_and_path);
  RUN(anything_off_loopback_is_refused_naming_the_argument_and_the_value);
  RUN(a_listening_port_answers_and_a_closed_one_is_refused);
  RUN(an_answer_without_a_status_line_is_cut_and_a_silent_one_times_out);
  RUN(a_cancelled_attempt_never_calls_back);
  return check_summary();
}
