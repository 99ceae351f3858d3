/*
 * The capacity benchmark (issue 27, point 4): how many monitors this machine
 * can serve, measured where it can be, and what the engine costs per
 * monitor apart from what its children cost the machine. bench/scale
 * measures 1000 monitors whatever the machine; on a shared 2-core VM its
 * bare-pipe control misses the latency target too, so its vigil figure says
 * more about the neighbours than about vigil. Three parts, in one run:
 *
 *   sweep    The control alone (no engine): N `scale_child quiet` children
 *            (10 lines/s, a stamped match a second each) piped straight to
 *            this program, read with poll, for --seconds, for N on a ladder
 *            (50, 100, 200, 300, 500, 700, 1000, ... up to --max). The
 *            largest N whose control p99 meets the flush window + 5 ms (the
 *            target vigil is held to: the control has no window, so missing
 *            it means the machine cannot run N such children on time) is
 *            the machine's N. The ladder stops at the first N that misses.
 *   at-N     vigild with N monitors on the same children (a match every 2 s
 *            each), with 10 control pipes beside it in the same window:
 *            vigil's p99 against window + 5 ms, the control's beside it.
 *   cheap    The engine's own cost per monitor: --cheap (1000) monitors
 *            whose children (`scale_child lend`) hand their stdout to this
 *            program and sleep in the kernel, so that one process writes for
 *            every pipe and no child wakes. First quiet (nothing written):
 *            the engine's CPU per 1000 quiet monitors (target < 10% of a
 *            core); then 10 lines/s into every pipe, a stamped match every
 *            2 s each: the engine's CPU per 1000 monitors at that rate and
 *            vigil's match latency, with a machine that runs one writer
 *            instead of a thousand children.
 *
 * The engine's CPU is utime + stime of vigild from /proc (its keepers, which
 * sleep, are not in it); the machine's idle share is printed beside every
 * window, since the figures depend on the neighbours. Not a test: it prints
 * figures and exits 1 only when it could not measure.
 *
 *   capacity [--max 1000] [--seconds 10] [--cheap 1000] [--only sweep|cheap]
 *            [--vigild PATH] [--no-state] [--keep]
 *
 * vigild and scale_child are found as bench/scale finds them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "support/benchrpc.h"

#define CAP_PER_SESSION 16    /* the setting's bound (as bench/scale) */
#define CAP_MAX_SESSIONS 64   /* per connection */
#define CAP_PEERS 10          /* control pipes beside vigil */
#define CAP_MATCH_MS 2000     /* a stamped match every 2 s per monitor */
#define CAP_TICK_MS 100       /* 10 lines/s */
#define CAP_SLICES 20         /* the writer's ticks per CAP_TICK_MS */

static const long cap_ladder[] = {50, 100, 200, 300, 500, 700, 1000, 1500, 2000, 3000};

typedef struct {
  BenchRpc rpc;
  const char *vigild, *child;
  bool keep, no_state;
  long flush_ms;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  BenchSamples samples;          /* matches through vigil */
  BenchSamples peer_samples;     /* the control pipes beside it */
  BenchStampPipe peers[CAP_PEERS];
  int npeers;
} Cap;

/* --- the engine --------------------------------------------------------- */

/* The notify hook: times every "Error: K STAMP" line of an output
 * notification. */
static void
cap_notification(BenchRpc *rpc, const msgpack_object *n, void *data)
{
  Cap *c = data;
  if (!bench_rpc_obj_is(bench_rpc_get(n, "type"), "output"))
    return;
  const msgpack_object *lines = bench_rpc_get(n, "lines");
  if (lines == NULL || lines->type != MSGPACK_OBJECT_ARRAY)
    return;
  for (uint32_t i = 0; i < lines->via.array.size; i++) {
    char text[128];
    long k;
    long long stamp;
    bench_rpc_str(bench_rpc_get(&lines->via.array.ptr[i], "text"), text, sizeof text);
    if (sscanf(text, "Error: %ld %lld", &k, &stamp) == 2)
      bench_samples_add(&c->samples, stamp, rpc->read_ns);
  }
}

/* A fresh engine for n monitors, and its flush window. The rate limit
 * allows a match every CAP_MATCH_MS and some room. */
static void
cap_engine_start(Cap *c, long n)
{
  bench_rpc_init(&c->rpc, "capacity");
  c->rpc.no_state = c->no_state;
  c->rpc.notify = cap_notification;
  c->rpc.notify_data = c;
  bench_rpc_engine_start(&c->rpc, c->vigild,
                         "-- written by bench/capacity\n"
                         "return {\n"
                         "  monitor = { allowed_commands = { \"%s\" },\n"
                         "              max_monitors_per_session = %d, max_monitors = %ld },\n"
                         "  rate_limit = { max_notifications = %d, window_ms = 10000 },\n"
                         "}\n",
                         c->child, CAP_PER_SESSION, n < 1 ? 1 : n, 10000 / CAP_MATCH_MS + 4);
  msgpack_sbuffer_init(&c->sb);
  msgpack_packer_init(&c->pk, &c->sb, msgpack_sbuffer_write);
  uint32_t id = bench_rpc_begin(&c->rpc, &c->sb, &c->pk, "api_info", 0);
  const msgpack_object *fw = bench_rpc_get(
      bench_rpc_get(bench_rpc_call(&c->rpc, id, &c->sb), "limits"), "monitor.flush_interval_ms");
  if (fw == NULL || fw->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    bench_rpc_die("api_info has no limits[\"monitor.flush_interval_ms\"]");
  c->flush_ms = (long)fw->via.u64;
  size_t sessions = (size_t)(n + CAP_PER_SESSION - 1) / CAP_PER_SESSION;
  for (size_t s = 0; s < sessions; s++) {
    char name[48];
    snprintf(name, sizeof name, "bench-capacity-%zu", s + 1);
    id = bench_rpc_begin(&c->rpc, &c->sb, &c->pk, "session_open", 1);
    bench_rpc_pack_str(&c->pk, "session");
    bench_rpc_pack_str(&c->pk, name);
    bench_rpc_call(&c->rpc, id, &c->sb);
  }
}

/* Starts monitor i on scale_child with args (nargs); dies on a refusal. */
static void
cap_start(Cap *c, long i, char *const *args, int nargs)
{
  char session[48];
  snprintf(session, sizeof session, "bench-capacity-%ld", i / CAP_PER_SESSION + 1);
  uint32_t id = bench_rpc_begin(&c->rpc, &c->sb, &c->pk, "monitor_start", 4);
  bench_rpc_pack_str(&c->pk, "session");
  bench_rpc_pack_str(&c->pk, session);
  bench_rpc_pack_str(&c->pk, "argv");
  msgpack_pack_array(&c->pk, (size_t)nargs + 1);
  bench_rpc_pack_str(&c->pk, c->child);
  for (int k = 0; k < nargs; k++)
    bench_rpc_pack_str(&c->pk, args[k]);
  bench_rpc_pack_str(&c->pk, "match_pattern");
  bench_rpc_pack_str(&c->pk, "^Error:");
  bench_rpc_pack_str(&c->pk, "incidents");
  msgpack_pack_false(&c->pk);
  bench_rpc_call(&c->rpc, id, &c->sb);
}

/* Stops the engine (its monitors with it) and says whether it went
 * cleanly. */
static bool
cap_engine_end(Cap *c)
{
  int status = -1;
  bool stopped = bench_rpc_engine_stop(&c->rpc, &status);
  bool clean = stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean)
    printf("  vigild did not exit cleanly (status %d)\n", status);
  msgpack_sbuffer_destroy(&c->sb);
  bench_rpc_disconnect(&c->rpc);
  bench_rpc_cleanup(&c->rpc, c->keep || !clean);
  bench_samples_free(&c->samples);
  bench_samples_free(&c->peer_samples);
  return clean;
}

/* Reads the socket and the control pipes until until_ns, calling tick (when
 * not NULL) whenever its next time *next_ns comes. */
static void
cap_pump_until(Cap *c, int64_t until_ns, void (*tick)(void *), void *tick_ctx, int64_t *next_ns)
{
  for (;;) {
    int64_t now = bench_rpc_now_ns();
    if (now >= until_ns)
      return;
    if (tick != NULL && now >= *next_ns) {
      tick(tick_ctx);
      continue;
    }
    int64_t wake = tick != NULL && *next_ns < until_ns ? *next_ns : until_ns;
    struct pollfd p[1 + CAP_PEERS];
    p[0] = (struct pollfd){c->rpc.fd, POLLIN, 0};
    for (int i = 0; i < c->npeers; i++)
      p[1 + i] = (struct pollfd){c->peers[i].fd, POLLIN, 0};
    int ms = (int)((wake - now + 999999) / 1000000);
    if (poll(p, 1 + (nfds_t)c->npeers, ms) <= 0)
      continue;
    if (p[0].revents)
      bench_rpc_socket_read(&c->rpc);
    for (int i = 0; i < c->npeers; i++)
      if (c->peers[i].fd >= 0 && p[1 + i].revents)
        bench_stamp_pipe_read(&c->peers[i], bench_samples_stamp, &c->peer_samples);
  }
}

/* The arguments of `scale_child quiet` number i of n: 10 lines/s for
 * seconds, a match every match_ms, schedules spread so that the children
 * do not write in step. */
static void
cap_quiet_args(long i, long n, long seconds, long match_ms, char buf[5][24], char *args[6])
{
  snprintf(buf[0], 24, "10");
  snprintf(buf[1], 24, "%ld", seconds);
  snprintf(buf[2], 24, "%ld", match_ms);
  snprintf(buf[3], 24, "%ld", 1000 + i * match_ms / (n > 0 ? n : 1));
  snprintf(buf[4], 24, "%ld", (i * 37) % CAP_TICK_MS);
  args[0] = "quiet";
  for (int k = 0; k < 5; k++)
    args[1 + k] = buf[k];
}

static void
cap_print_latency(const char *name, BenchLatency l)
{
  if (l.n == 0)
    printf("    %-26s no matches\n", name);
  else
    printf("    %-26s %9.3f %9.3f %9.3f   (%zu matches)\n", name, l.p50, l.p99, l.max, l.n);
}

/* --- the sweep ---------------------------------------------------------- */

/* The control alone with n children for seconds: its latency over the
 * window from 1.5 s in to 1 s before the end, and the machine's idle share
 * meanwhile. */
static BenchLatency
cap_control(const Cap *c, long n, long seconds, double *idle)
{
  BenchStampPipe *p = calloc((size_t)n, sizeof *p);
  struct pollfd *fds = calloc((size_t)n, sizeof *fds);
  if (p == NULL || fds == NULL)
    bench_rpc_die("out of memory");
  BenchSamples s = {0};
  int64_t t0 = bench_rpc_now_ns();
  for (long i = 0; i < n; i++) {
    char buf[5][24], *args[6];
    cap_quiet_args(i, n, seconds, 1000, buf, args);
    char *argv[] = {(char *)c->child, args[0], args[1], args[2], args[3], args[4], args[5], NULL};
    bench_stamp_pipe_start(&p[i], argv);
  }
  unsigned long long idle_prev[2] = {0, 0};
  bench_machine_idle(idle_prev);
  int64_t deadline = t0 + (seconds + 10) * 1000000000LL;
  long open = n;
  while (open > 0 && bench_rpc_now_ns() < deadline) {
    for (long i = 0; i < n; i++)
      fds[i] = (struct pollfd){p[i].fd, POLLIN, 0};
    if (poll(fds, (nfds_t)n, 200) <= 0)
      continue;
    for (long i = 0; i < n; i++) {
      if (p[i].fd < 0 || fds[i].revents == 0)
        continue;
      bench_stamp_pipe_read(&p[i], bench_samples_stamp, &s);
      open -= p[i].fd < 0;
    }
  }
  *idle = bench_machine_idle(idle_prev);
  for (long i = 0; i < n; i++) {
    if (p[i].fd >= 0)
      close(p[i].fd);
    kill(p[i].pid, SIGTERM);
    waitpid(p[i].pid, NULL, 0);
  }
  BenchLatency l = bench_samples_latency(&s, t0 + 1500000000LL, t0 + (seconds - 1) * 1000000000LL);
  bench_samples_free(&s);
  free(p);
  free(fds);
  return l;
}

/* The ladder: the largest N whose control meets window + 5 ms. */
static long
cap_sweep(const Cap *c, long max, long seconds, long window_ms)
{
  printf("sweep: the control alone (N `scale_child quiet`, 10 lines/s and a match a second "
         "each, piped to one reader), %ld s per step; target p99 <= window + 5 = %ld ms\n",
         seconds, window_ms + 5);
  printf("    %-26s %9s %9s %9s   (ms, stamp -> read)\n", "", "p50", "p99", "max");
  long best = 0;
  for (size_t k = 0; k < sizeof cap_ladder / sizeof cap_ladder[0] && cap_ladder[k] <= max; k++) {
    long n = cap_ladder[k];
    double idle;
    BenchLatency l = cap_control(c, n, seconds, &idle);
    char name[64];
    snprintf(name, sizeof name, "control, N = %ld", n);
    cap_print_latency(name, l);
    bool met = l.n > 0 && l.p99 <= (double)window_ms + 5.0;
    printf("      machine %.0f%% idle over the step: %s\n", idle, met ? "met" : "NOT MET");
    fflush(stdout);
    if (!met)
      break;
    best = n;
  }
  if (best == 0)
    printf("  the machine serves none of the ladder on time\n");
  else
    printf("  the machine's N: %ld (the largest step whose control met the target)\n", best);
  return best;
}

/* vigil at n monitors, the control pipes beside it. */
static bool
cap_at_n(Cap *c, long n, long seconds)
{
  cap_engine_start(c, n);
  printf("\nat-N: vigild with %ld monitors on `scale_child quiet` (10 lines/s, a match every "
         "%.0f s each)%s, %d control pipes beside it; flush window %ld ms\n", n,
         CAP_MATCH_MS / 1000.0, c->no_state ? ", no state directory" : "", CAP_PEERS,
         c->flush_ms);
  int64_t t0 = bench_rpc_now_ns();
  for (long i = 0; i < n; i++) {
    char buf[5][24], *args[6];
    cap_quiet_args(i, n, 3600, CAP_MATCH_MS, buf, args);
    cap_start(c, i, args, 6);
  }
  int64_t started = bench_rpc_now_ns();
  printf("  started in %.0f ms\n", (double)(started - t0) / 1e6);
  for (int i = 0; i < CAP_PEERS; i++) {
    char buf[5][24], *args[6];
    cap_quiet_args(i, CAP_PEERS, seconds + 5, 1000, buf, args);
    char *argv[] = {(char *)c->child, args[0], args[1], args[2], args[3], args[4], args[5], NULL};
    bench_stamp_pipe_start(&c->peers[i], argv);
  }
  c->npeers = CAP_PEERS;
  int64_t w0 = bench_rpc_now_ns() + 2000000000LL, w1 = w0 + seconds * 1000000000LL;
  cap_pump_until(c, w0, NULL, NULL, NULL);
  unsigned long long idle_prev[2] = {0, 0};
  bench_machine_idle(idle_prev);
  long long cpu0 = bench_cpu_ticks(c->rpc.vigild);
  cap_pump_until(c, w1 + 1000000000LL, NULL, NULL, NULL);
  long long cpu1 = bench_cpu_ticks(c->rpc.vigild);
  double idle = bench_machine_idle(idle_prev);
  for (int i = 0; i < c->npeers; i++) {
    if (c->peers[i].fd >= 0)
      close(c->peers[i].fd);
    kill(c->peers[i].pid, SIGTERM);
    waitpid(c->peers[i].pid, NULL, 0);
  }
  c->npeers = 0;
  double cpu = (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) /
               ((double)(w1 + 1000000000LL - w0) / 1e9) * 100.0;
  printf("  window %ld s: engine CPU %.1f%% of a core; the machine %.0f%% idle\n", seconds, cpu,
         idle);
  printf("    %-26s %9s %9s %9s   (ms, stamp -> read)\n", "", "p50", "p99", "max");
  BenchLatency v = bench_samples_latency(&c->samples, w0, w1);
  cap_print_latency("vigil", v);
  cap_print_latency("bare pipe (control)", bench_samples_latency(&c->peer_samples, w0, w1));
  if (v.n > 0)
    printf("  target p99 <= window + 5 = %ld ms: %.3f ms, %s\n", c->flush_ms + 5, v.p99,
           v.p99 <= (double)c->flush_ms + 5.0 ? "met" : "NOT MET");
  fflush(stdout);
  return cap_engine_end(c);
}

/* --- the cheap children -------------------------------------------------- */

/* The pipes the lending children handed over, and the writer's schedule. */
typedef struct {
  int *fds;
  long n;
  long ticks;       /* ticks written */
  long match_every; /* ticks between a monitor's matches */
  int64_t *next_ns; /* shared with cap_pump_until */
  long lines, full; /* written; refused by a full pipe (EAGAIN) */
} CapWriter;

/* One tick: a line into one slice of the pipes (CAP_SLICES ticks per
 * CAP_TICK_MS, so each pipe gets a line every CAP_TICK_MS, and the writes
 * are spread over it as independent children's would be, not all in the
 * same millisecond), a stamped match for the monitors whose turn it is. */
static void
cap_writer_tick(void *ctx)
{
  CapWriter *w = ctx;
  long slice = w->ticks % CAP_SLICES, round = w->ticks / CAP_SLICES;
  for (long i = slice; i < w->n; i += CAP_SLICES) {
    char line[96];
    int len;
    if ((round + i / CAP_SLICES) % w->match_every == 0)
      len = snprintf(line, sizeof line, "Error: %ld %lld\n", round,
                     (long long)bench_rpc_now_ns());
    else
      len = snprintf(line, sizeof line, "info %ld: request handled in 12 ms, status ok\n",
                     round);
    if (write(w->fds[i], line, (size_t)len) == len)
      w->lines++;
    else
      w->full++;
  }
  w->ticks++;
  *w->next_ns += CAP_TICK_MS * 1000000LL / CAP_SLICES;
}

/* Accepts what is pending on the listening socket lsock and takes the
 * descriptor each lending child sent. */
static void
cap_accept(int lsock, CapWriter *w, long want)
{
  for (;;) {
    int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0)
      return;
    char byte;
    struct iovec iov = {&byte, 1};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    struct pollfd p = {s, POLLIN, 0};
    poll(&p, 1, 10000);
    ssize_t r = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
    struct cmsghdr *cm = r == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (cm != NULL && cm->cmsg_type == SCM_RIGHTS && w->n < want) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm), sizeof fd);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      w->fds[w->n++] = fd;
    }
    close(s);
  }
}

/* The engine's CPU (% of a core) over the next `seconds`, pumping (and
 * ticking the writer when w is not NULL) meanwhile; *idle the machine's. */
static double
cap_cpu_window(Cap *c, long seconds, CapWriter *w, int64_t *next, double *idle)
{
  unsigned long long idle_prev[2] = {0, 0};
  bench_machine_idle(idle_prev);
  long long cpu0 = bench_cpu_ticks(c->rpc.vigild);
  int64_t t0 = bench_rpc_now_ns(), t1 = t0 + seconds * 1000000000LL;
  cap_pump_until(c, t1, w ? cap_writer_tick : NULL, w, next);
  long long cpu1 = bench_cpu_ticks(c->rpc.vigild);
  *idle = bench_machine_idle(idle_prev);
  return (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) /
         ((double)(bench_rpc_now_ns() - t0) / 1e9) * 100.0;
}

static bool
cap_cheap(Cap *c, long n, long seconds)
{
  cap_engine_start(c, n);
  printf("\ncheap: %ld monitors whose children lend their stdout to this program and sleep "
         "(one writer for every pipe)%s; flush window %ld ms\n", n,
         c->no_state ? ", no state directory" : "", c->flush_ms);
  char path[128];
  snprintf(path, sizeof path, "%s/lend.sock", c->rpc.dir);
  int lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path)
    bench_rpc_die("the socket path %s is too long", path);
  memcpy(addr.sun_path, path, strlen(path) + 1);
  if (lsock < 0 || bind(lsock, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(lsock, 4096) != 0)
    bench_rpc_die("cannot listen on %s: %s", path, strerror(errno));
  int64_t next = 0;
  CapWriter w = {calloc((size_t)n, sizeof(int)), 0, 0, CAP_MATCH_MS / CAP_TICK_MS, &next, 0, 0};
  if (w.fds == NULL)
    bench_rpc_die("out of memory");
  int64_t t0 = bench_rpc_now_ns();
  for (long i = 0; i < n; i++) {
    char *args[] = {"lend", path};
    cap_start(c, i, args, 2);
    cap_accept(lsock, &w, n);
  }
  printf("  started in %.0f ms\n", (double)(bench_rpc_now_ns() - t0) / 1e6);
  int64_t give_up = bench_rpc_now_ns() + 30000000000LL;
  while (w.n < n && bench_rpc_now_ns() < give_up) {
    struct pollfd p = {lsock, POLLIN, 0};
    poll(&p, 1, 100);
    cap_accept(lsock, &w, n);
  }
  close(lsock);
  if (w.n < n)
    bench_rpc_die("only %ld of %ld children lent their stdout", w.n, n);
  cap_pump_until(c, bench_rpc_now_ns() + 2000000000LL, NULL, NULL, NULL);
  double idle;
  double quiet = cap_cpu_window(c, seconds, NULL, NULL, &idle);
  printf("  quiet, %ld s: engine CPU %.2f%% of a core = %.2f%% per 1000 quiet monitors "
         "(target < 10%%): %s; the machine %.0f%% idle\n", seconds, quiet,
         quiet * 1000.0 / (double)n, quiet * 1000.0 / (double)n < 10.0 ? "met" : "NOT MET", idle);
  next = bench_rpc_now_ns();
  int64_t w0 = next + 1000000000LL;
  double busy = cap_cpu_window(c, seconds, &w, &next, &idle);
  int64_t w1 = bench_rpc_now_ns() - 1000000000LL;
  cap_pump_until(c, bench_rpc_now_ns() + 1000000000LL, NULL, NULL, NULL);
  printf("  10 lines/s each, %ld s: engine CPU %.2f%% of a core = %.2f%% per 1000 monitors "
         "(%ld lines written, %ld refused by a full pipe); the machine %.0f%% idle\n", seconds,
         busy, busy * 1000.0 / (double)n, w.lines, w.full, idle);
  printf("    %-26s %9s %9s %9s   (ms, stamp -> read)\n", "", "p50", "p99", "max");
  BenchLatency v = bench_samples_latency(&c->samples, w0, w1);
  cap_print_latency("vigil, cheap children", v);
  if (v.n > 0)
    printf("  target p99 <= window + 5 = %ld ms: %.3f ms, %s\n", c->flush_ms + 5, v.p99,
           v.p99 <= (double)c->flush_ms + 5.0 ? "met" : "NOT MET");
  for (long i = 0; i < w.n; i++)
    close(w.fds[i]); /* so that each child's pipe can end */
  free(w.fds);
  fflush(stdout);
  return cap_engine_end(c);
}

/* --- main ---------------------------------------------------------------- */

static void
cap_usage(void)
{
  fprintf(stderr, "usage: capacity [--max 1000] [--seconds 10] [--cheap 1000] "
                  "[--only sweep|cheap]\n"
                  "                [--vigild PATH] [--no-state] [--keep]\n");
}

int
main(int argc, char **argv)
{
  long max = 1000, seconds = 10, cheap = 1000;
  const char *only = NULL, *vigild_arg = NULL;
  Cap c = {0};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    bool v = i + 1 < argc;
    if (strcmp(o, "--max") == 0 && v)
      max = strtol(argv[++i], NULL, 10);
    else if (strcmp(o, "--seconds") == 0 && v)
      seconds = strtol(argv[++i], NULL, 10);
    else if (strcmp(o, "--cheap") == 0 && v)
      cheap = strtol(argv[++i], NULL, 10);
    else if (strcmp(o, "--only") == 0 && v)
      only = argv[++i];
    else if (strcmp(o, "--vigild") == 0 && v)
      vigild_arg = argv[++i];
    else if (strcmp(o, "--no-state") == 0)
      c.no_state = true;
    else if (strcmp(o, "--keep") == 0)
      c.keep = true;
    else {
      cap_usage();
      return 2;
    }
  }
  long cap_monitors = CAP_PER_SESSION * CAP_MAX_SESSIONS;
  if (max < cap_ladder[0] || max > cap_monitors || seconds < 4 || seconds > 600 || cheap < 1 ||
      cheap > cap_monitors ||
      (only && strcmp(only, "sweep") != 0 && strcmp(only, "cheap") != 0)) {
    fprintf(stderr, "capacity: --max %ld..%ld, --seconds 4..600, --cheap 1..%ld, "
                    "--only sweep|cheap\n", cap_ladder[0], cap_monitors, cap_monitors);
    return 2;
  }
  static char child[PATH_MAX], vigild[PATH_MAX];
  if (!bench_find_programs("capacity", "scale_child", vigild_arg, child, vigild))
    return 1;
  c.child = child;
  c.vigild = vigild;
  /* Every monitor holds two pipes in the engine, every control child one
   * here: the soft limit up to the hard one (the engine inherits it). */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }

  /* The window the targets are of: the engine's, read once. */
  cap_engine_start(&c, 1);
  long window_ms = c.flush_ms;
  bool ok = cap_engine_end(&c);
  if (only == NULL || strcmp(only, "sweep") == 0) {
    long n = cap_sweep(&c, max, seconds, window_ms);
    if (n > 0)
      ok = cap_at_n(&c, n, seconds) && ok;
  }
  if (only == NULL || strcmp(only, "cheap") == 0)
    ok = cap_cheap(&c, cheap, seconds) && ok;
  return ok ? 0 : 1;
}
