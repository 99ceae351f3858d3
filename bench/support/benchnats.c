/*
 * A benchmark's private nats-server (benchnats.h).
 *
 * The port: the kernel picks a free one for a socket bound to
 * 127.0.0.1:0, which is closed and handed to nats-server. Another program
 * could take the port in between; then nats-server exits at once, and the
 * start is tried again on a new port (three times at most). Readiness is
 * what a client sees: a nats.c connection that gets JetStream's account
 * information, waited for with a deadline, never a fixed sleep.
 */
#include "benchnats.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include "benchrpc.h"

extern char **environ;

/* How long the server has to answer with JetStream. */
#define BENCH_NATS_READY_MS 15000
/* How many ports are tried when the one picked was taken meanwhile. */
#define BENCH_NATS_TRIES 3

/* See benchnats.h. */
bool
bench_nats_find(const char *name, const char *arg, char *out, size_t cap)
{
  if (arg != NULL) {
    snprintf(out, cap, "%s", arg);
    if (access(out, X_OK) == 0)
      return true;
    fprintf(stderr, "%s: --nats-server %s cannot be run\n", name, arg);
    return false;
  }
  const char *path = getenv("PATH");
  char dirs[8192];
  snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/usr/local/bin:/usr/bin", path ? path : "");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(out, cap, "%s/nats-server", d);
    if (d[0] == '/' && access(out, X_OK) == 0)
      return true;
  }
  fprintf(stderr, "%s: nats-server is not installed (Debian: apt-get install nats-server; "
                  "or give --nats-server PATH)\n", name);
  return false;
}

/* A port on 127.0.0.1 that was free a moment ago, or dies. */
static int
bench_nats_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    bench_rpc_die("socket: %s", strerror(errno));
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0)
    bench_rpc_die("cannot find a free port on 127.0.0.1: %s", strerror(errno));
  close(fd);
  return ntohs(a.sin_port);
}

/* Whether a client reaches the server at n->url and JetStream answers. */
static bool
bench_nats_answers(const BenchNats *n)
{
  natsOptions *o = NULL;
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  jsAccountInfo *ai = NULL;
  bool ok = natsOptions_Create(&o) == NATS_OK && natsOptions_SetURL(o, n->url) == NATS_OK &&
            natsOptions_SetTimeout(o, 1000) == NATS_OK &&
            natsOptions_SetAllowReconnect(o, false) == NATS_OK &&
            natsConnection_Connect(&nc, o) == NATS_OK && natsConnection_JetStream(&js, nc, NULL) ==
            NATS_OK && js_GetAccountInfo(&ai, js, NULL, NULL) == NATS_OK;
  jsAccountInfo_Destroy(ai);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  natsOptions_Destroy(o);
  return ok;
}

/* Starts the server once on a new port; returns whether it answered, false
 * when it exited (the port taken); dies when it neither answers nor exits. */
static bool
bench_nats_try(BenchNats *n)
{
  n->port = bench_nats_free_port();
  snprintf(n->url, sizeof n->url, "nats://127.0.0.1:%d", n->port);
  char store[320], log[320], port[16];
  snprintf(store, sizeof store, "%s/js", n->dir);
  snprintf(log, sizeof log, "%s/nats-server.log", n->dir);
  snprintf(port, sizeof port, "%d", n->port);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[] = {n->path, "-js", "-sd", store, "-a", "127.0.0.1", "-p", port, NULL};
  int rc = posix_spawn(&n->pid, n->path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    bench_rpc_die("cannot start %s: %s", n->path, strerror(rc));
  bench_rpc_also_stop(n->pid);
  int64_t deadline = bench_rpc_now_ns() + (int64_t)BENCH_NATS_READY_MS * 1000000;
  for (;;) {
    int status;
    if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
      bench_rpc_forget(n->pid);
      n->pid = 0;
      return false;
    }
    if (bench_nats_answers(n))
      return true;
    if (bench_rpc_now_ns() > deadline)
      bench_rpc_die("nats-server on %s did not answer with JetStream in %d ms (log: %s)", n->url,
                    BENCH_NATS_READY_MS, log);
    bench_rpc_sleep_ms(20); /* waiting for the server to listen, at start only */
  }
}

/* See benchnats.h. */
void
bench_nats_start(BenchNats *n, const char *dir)
{
  snprintf(n->dir, sizeof n->dir, "%s", dir);
  for (int i = 0; i < BENCH_NATS_TRIES; i++)
    if (bench_nats_try(n))
      return;
  bench_rpc_die("nats-server exited at start %d times (see %s/nats-server.log)", BENCH_NATS_TRIES,
                n->dir);
}

/* See benchnats.h. */
bool
bench_nats_stop(BenchNats *n)
{
  if (n->pid <= 0)
    return true;
  kill(n->pid, SIGTERM);
  bool exited = false;
  for (int i = 0; i < 1500 && !exited; i++) {
    int status;
    if (waitpid(n->pid, &status, WNOHANG) == n->pid)
      exited = true;
    else
      bench_rpc_sleep_ms(10);
  }
  if (!exited) {
    kill(n->pid, SIGKILL);
    waitpid(n->pid, NULL, 0);
  }
  bench_rpc_forget(n->pid);
  n->pid = 0;
  return exited;
}
