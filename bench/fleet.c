/*
 * The fleet benchmark (issue 28): notifications per second and latency
 * from a child's write to a gateway, through NATS JetStream against the
 * engine's own socket, in one run, with 3 engines of 100 monitors each;
 * then the engine's ingest figure with and without NATS.
 *
 *   nats-server   a private `nats-server -js` on a free port of 127.0.0.1,
 *                 its store in a temp dir (bench/support/benchnats.c)
 *   engines e1..eN  real `vigild --listen` with `nats = {url, engine}` in
 *                 their config, each with its own socket and state dir;
 *                 each publishes every named session's notifications into
 *                 the stream VIGIL (docs/fleet.md)
 *   control       one more engine without NATS (--no-control: none), with
 *                 as many monitors: its CPU per notification is the
 *                 engine's without a publisher, in the same run
 *   monitors      M per engine, in sessions of `--per-session` (the
 *                 engine allows 16 at most), each on `latency_child COUNT
 *                 INTERVAL`: a line "Error: N STAMP" (STAMP the child's
 *                 CLOCK_MONOTONIC at the write) every INTERVAL ms, matched
 *                 by "^Error:" with incidents off, so every line is a
 *                 notification of its own
 *   socket path   this program's connection to each engine, the one that
 *                 opened the sessions and started the monitors: each line
 *                 is timed when its notification's bytes came off the
 *                 socket
 *   JetStream path  a gateway per engine (bench/support/benchgateway.c):
 *                 its own connection and a durable consumer with explicit
 *                 ack per session, vigil.<engine>.<session>.n (--consumers
 *                 engine: one on vigil.<engine>.*.n); each line is timed
 *                 when the stream stored it, when the message reached the
 *                 gateway and when it was acked: the ack sent, as vigil's
 *                 readers send it (natsMsg_Ack), or with --ack sync the
 *                 server's confirmation returned (natsMsg_AckSync, each
 *                 message of a consumer then waiting for the one before)
 *
 * The rate: the flush window (200 ms) batches what a monitor writes within
 * it, so one line per window per monitor gives at most 5 notifications/s a
 * monitor. An INTERVAL of 300 ms (3.33 a second) keeps one line per batch
 * and, with 300 monitors, makes 1000 notifications/s through JetStream.
 * The rate limit (8 per 10 s by default) is raised only as far as that
 * needs (1.25 x 10000 / INTERVAL + 8 per 10 s); the output says what was
 * chosen and whether anything was withheld.
 *
 * Figures are read in a window where every monitor runs: from two
 * intervals after the last start to one second before the first child's
 * last line; the engines' and the server's CPU are read at its two ends.
 * The JetStream target (issue 28): p99(JetStream, acked) - p99(socket)
 * under 5 ms at about 1000 notifications/s.
 *
 * The ingest part runs bench/ingest's wire figure without and with `--nats
 * URL` (the same server), --ingest-rounds times each in alternating order,
 * and prints each run's vigil/pipe and vigild's CPU per byte and the best
 * of each mode side by side: the target is that they do not move.
 *
 *   fleet [--engines 3] [--monitors 100] [--per-session 10] [--interval 300]
 *         [--seconds 60] [--consumers session|engine] [--no-control]
 *         [--max-in-flight N]   (the engines' nats.max_in_flight; default theirs)
 *         [--ack async|sync]    (how the gateways ack; default async)
 *         [--ingest-bytes 400m] [--ingest-runs 3] [--ingest-rounds 2] [--no-ingest]
 *         [--nats-server PATH] [--vigild PATH] [--keep]
 *
 * latency_child and ingest are looked for beside this program, vigild one
 * level above it (build/vigild) unless --vigild names it, nats-server on
 * $PATH and in /usr/sbin unless --nats-server names it. Every process it
 * starts is stopped at the end, and on a failure or a signal
 * (bench_rpc_die stops the engines, then the server). --keep leaves the
 * temp dirs (configs, logs, the server's store) and prints where.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>
#include <nats/nats.h>

#include "support/benchgateway.h"
#include "support/benchnats.h"
#include "support/benchrpc.h"

extern char **environ;

/* At most this many engines with NATS (the control is one more). */
#define FLEET_MAX_ENGINES 8
/* The engine's own bound on running monitors per session. */
#define FLEET_PER_SESSION_MAX 16
/* The most sessions an engine has here (1000 monitors, 1 a session). */
#define FLEET_MAX_SESSIONS 1000
/* The gap kept between the window's end and the first child's last line. */
#define FLEET_TAIL_NS 1000000000LL

/* One engine: its process and connection, what came over its socket, and
 * the gateway reading its subjects through JetStream (none for the
 * control). */
typedef struct {
  BenchRpc rpc;
  char name[24];          /* e1.. (its nats.engine), or "control" */
  char rpc_name[40];      /* for its temp dir and messages */
  bool nats;
  BenchGateway *gw;
  BenchSamples socket;    /* stamped lines, timed off the socket */
  uint64_t outputs, merged, endings, other, suppressed;
  /* its CPU (ns, all threads, and its loop thread) at the window's ends,
   * and its threads' waits for a CPU */
  double cpu[2], cpu_loop[2], wait[2];
} FleetEngine;

/* The run. */
typedef struct {
  /* options */
  long engines, monitors, per_session, interval_ms, seconds;
  long max_in_flight;     /* the engines' nats.max_in_flight; 0: their default */
  bool ack_sync;          /* --ack sync: gateways wait for each ack's confirmation */
  bool control, ingest, keep;
  bool per_session_consumers;  /* --consumers session (else one per engine) */
  const char *ingest_bytes;
  long ingest_runs, ingest_rounds;
  /* programs */
  char child[PATH_MAX], vigild[PATH_MAX], ingest_prog[PATH_MAX];
  char dir[64];           /* the fleet's temp dir: the server's store and log */
  BenchNats nats;
  FleetEngine eng[FLEET_MAX_ENGINES + 1];
  size_t neng;            /* engines with NATS, then the control */
  long count;             /* lines per child */
  long flush_ms;
  long rate_per_10s;
  int64_t first_start_ns, last_start_ns;
  int64_t from_ns, to_ns;
  double nats_cpu[2], nats_wait[2];
  double self_cpu[2];     /* this program's: the gateways and the sockets */
  double machine_idle;    /* % of the machine's CPU idle over the window */
  unsigned long long idle_prev[2];
  bool sampled[2];
  msgpack_sbuffer sb;
  msgpack_packer pk;
} Fleet;

static Fleet fleet_g;

/* --- the socket path ---------------------------------------------------- */

/* A vigil.notification on an engine's connection (the BenchRpc notify
 * hook; data: the FleetEngine): output lines timed, endings counted. */
static void
fleet_notification(BenchRpc *rpc, const msgpack_object *n, void *data)
{
  FleetEngine *e = data;
  char type[32];
  bench_rpc_str(bench_rpc_get(n, "type"), type, sizeof type);
  int64_t sup = bench_rpc_uint(bench_rpc_get(n, "suppressed"));
  if (sup > 0)
    e->suppressed += (uint64_t)sup;
  if (strcmp(type, "output") == 0) {
    e->outputs++;
    const msgpack_object *lines = bench_rpc_get(n, "lines");
    if (lines == NULL || lines->type != MSGPACK_OBJECT_ARRAY)
      return;
    if (lines->via.array.size > 1)
      e->merged++;
    for (uint32_t i = 0; i < lines->via.array.size; i++) {
      char text[128];
      long k;
      long long stamp;
      bench_rpc_str(bench_rpc_get(&lines->via.array.ptr[i], "text"), text, sizeof text);
      if (sscanf(text, "Error: %ld %lld", &k, &stamp) != 2)
        bench_rpc_die("unexpected line in a notification from %s: \"%s\"", e->name, text);
      bench_samples_add(&e->socket, (int64_t)stamp, rpc->read_ns);
    }
  } else if (strcmp(type, "exit") == 0 || strcmp(type, "stopped") == 0 ||
             strcmp(type, "timed_out") == 0 || strcmp(type, "idle_timeout") == 0 ||
             strcmp(type, "overload") == 0) {
    e->endings++;
    if (strcmp(type, "exit") != 0)
      fprintf(stderr, "fleet: a monitor of %s ended with \"%s\", not \"exit\"\n", e->name, type);
  } else {
    e->other++;
  }
}

/* --- the engines -------------------------------------------------------- */

/* The session of monitor i. */
static void
fleet_session_name(const Fleet *f, long i, char *out, size_t cap)
{
  snprintf(out, cap, "agent-%02ld", i / f->per_session + 1);
}

/* Starts engine e, named name (its nats.engine when nats; the control has
 * no NATS), reads its flush window, checks that api_info's nats map is
 * there exactly when nats (and says so when it is not yet connected), and
 * opens its sessions. */
static void
fleet_engine_start(Fleet *f, FleetEngine *e, const char *name, bool nats)
{
  snprintf(e->name, sizeof e->name, "%s", name);
  snprintf(e->rpc_name, sizeof e->rpc_name, "fleet-%s", name);
  bench_rpc_init(&e->rpc, e->rpc_name);
  e->nats = nats;
  e->rpc.notify = fleet_notification;
  e->rpc.notify_data = e;
  char nats_cfg[320] = "", window[64] = "";
  if (f->max_in_flight > 0)
    snprintf(window, sizeof window, ", max_in_flight = %ld", f->max_in_flight);
  if (nats)
    snprintf(nats_cfg, sizeof nats_cfg, "  nats = { url = \"%s\", engine = \"%s\"%s },\n",
             f->nats.url, name, window);
  bench_rpc_engine_start(&e->rpc, f->vigild,
                         "-- written by bench/fleet\n"
                         "return {\n"
                         "  monitor = { allowed_commands = { \"%s\" },\n"
                         "              max_monitors_per_session = %ld },\n"
                         "  rate_limit = { max_notifications = %ld, window_ms = 10000 },\n"
                         "%s"
                         "}\n",
                         f->child, f->per_session, f->rate_per_10s, nats_cfg);
  uint32_t id = bench_rpc_begin(&e->rpc, &f->sb, &f->pk, "api_info", 0);
  const msgpack_object *info = bench_rpc_call(&e->rpc, id, &f->sb);
  int64_t fw = bench_rpc_uint(bench_rpc_get(bench_rpc_get(info, "limits"),
                                            "monitor.flush_interval_ms"));
  if (fw < 0)
    bench_rpc_die("api_info has no limits[\"monitor.flush_interval_ms\"]");
  f->flush_ms = (long)fw;
  const msgpack_object *ni = bench_rpc_get(info, "nats");
  if (nats) {
    char state[32];
    bench_rpc_str(bench_rpc_get(ni, "state"), state, sizeof state);
    if (ni == NULL || ni->type != MSGPACK_OBJECT_MAP)
      bench_rpc_die("engine %s has no nats map in api_info: is it built with NATS?", name);
    if (strcmp(state, "connected") != 0)
      fprintf(stderr, "fleet: note: engine %s says nats.state \"%s\" at start\n", name, state);
  } else if (ni != NULL && ni->type != MSGPACK_OBJECT_NIL) {
    bench_rpc_die("the control engine has a nats map in api_info");
  }
  long sessions = (f->monitors + f->per_session - 1) / f->per_session;
  for (long s = 0; s < sessions; s++) {
    char session[32];
    fleet_session_name(f, s * f->per_session, session, sizeof session);
    id = bench_rpc_begin(&e->rpc, &f->sb, &f->pk, "session_open", 1);
    bench_rpc_pack_str(&f->pk, "session");
    bench_rpc_pack_str(&f->pk, session);
    bench_rpc_call(&e->rpc, id, &f->sb);
  }
}

/* Starts monitor i of engine e on latency_child. */
static void
fleet_monitor_start(Fleet *f, FleetEngine *e, long i)
{
  char session[32], label[32], count[32], interval[32];
  fleet_session_name(f, i, session, sizeof session);
  snprintf(label, sizeof label, "fleet-%ld", i + 1);
  snprintf(count, sizeof count, "%ld", f->count);
  snprintf(interval, sizeof interval, "%ld", f->interval_ms);
  uint32_t id = bench_rpc_begin(&e->rpc, &f->sb, &f->pk, "monitor_start", 5);
  bench_rpc_pack_str(&f->pk, "session");
  bench_rpc_pack_str(&f->pk, session);
  bench_rpc_pack_str(&f->pk, "argv");
  msgpack_pack_array(&f->pk, 3);
  bench_rpc_pack_str(&f->pk, f->child);
  bench_rpc_pack_str(&f->pk, count);
  bench_rpc_pack_str(&f->pk, interval);
  bench_rpc_pack_str(&f->pk, "label");
  bench_rpc_pack_str(&f->pk, label);
  bench_rpc_pack_str(&f->pk, "match_pattern");
  bench_rpc_pack_str(&f->pk, "^Error:");
  /* incidents false: every line is notified on its own (with the incident
   * stage the lines, one fingerprint, would be counted as repeats). */
  bench_rpc_pack_str(&f->pk, "incidents");
  msgpack_pack_false(&f->pk);
  bench_rpc_call(&e->rpc, id, &f->sb);
}

/* Reads every engine's CPU and the server's into slot w (0: the window's
 * start, 1: its end). */
static void
fleet_sample_cpu(Fleet *f, int w)
{
  for (size_t k = 0; k < f->neng; k++) {
    f->eng[k].cpu[w] = bench_proc_threads_cpu_ns(f->eng[k].rpc.vigild, &f->eng[k].cpu_loop[w]);
    f->eng[k].wait[w] = bench_proc_threads_wait_ns(f->eng[k].rpc.vigild);
  }
  f->nats_cpu[w] = bench_proc_threads_cpu_ns(f->nats.pid, NULL);
  f->nats_wait[w] = bench_proc_threads_wait_ns(f->nats.pid);
  f->self_cpu[w] = bench_proc_threads_cpu_ns(getpid(), NULL);
  f->machine_idle = bench_machine_idle(f->idle_prev);
  f->sampled[w] = true;
}

/* Whether every monitor's ending came over every socket and through every
 * gateway. */
static bool
fleet_done(Fleet *f)
{
  for (size_t k = 0; k < f->neng; k++) {
    FleetEngine *e = &f->eng[k];
    if (e->endings < (uint64_t)f->monitors)
      return false;
    if (e->gw != NULL && bench_gateway_counts(e->gw).endings < (uint64_t)f->monitors)
      return false;
  }
  return true;
}

/* Reads the sockets until every ending has come both ways, sampling CPU at
 * the window's ends; bounded by the children's schedule plus 60 s. */
static void
fleet_run(Fleet *f)
{
  int64_t deadline = f->last_start_ns + (f->count + 2) * f->interval_ms * 1000000LL +
                     60000000000LL;
  struct pollfd p[FLEET_MAX_ENGINES + 1];
  while (!fleet_done(f)) {
    int64_t now = bench_rpc_now_ns();
    if (!f->sampled[0] && now >= f->from_ns)
      fleet_sample_cpu(f, 0);
    if (!f->sampled[1] && now >= f->to_ns)
      fleet_sample_cpu(f, 1);
    if (now > deadline) {
      for (size_t k = 0; k < f->neng; k++) {
        FleetEngine *e = &f->eng[k];
        fprintf(stderr, "fleet: %s: %llu of %ld endings over the socket, %llu through JetStream\n",
                e->name, (unsigned long long)e->endings, f->monitors,
                e->gw ? (unsigned long long)bench_gateway_counts(e->gw).endings : 0ULL);
      }
      bench_rpc_die("timed out waiting for the monitors' endings");
    }
    /* The next CPU sample or, once the sockets have all their endings, the
     * gateways' progress: at most 100 ms apart. */
    int64_t next = now + 100000000LL;
    if (!f->sampled[0] && f->from_ns < next)
      next = f->from_ns;
    else if (!f->sampled[1] && f->to_ns < next)
      next = f->to_ns;
    int timeout = (int)((next - now + 999999) / 1000000);
    for (size_t k = 0; k < f->neng; k++)
      p[k] = (struct pollfd){f->eng[k].rpc.fd, POLLIN, 0};
    if (poll(p, (nfds_t)f->neng, timeout < 0 ? 0 : timeout) <= 0)
      continue;
    for (size_t k = 0; k < f->neng; k++)
      if (p[k].revents)
        bench_rpc_socket_read(&f->eng[k].rpc);
  }
  if (!f->sampled[1])
    bench_rpc_die("the run ended before its window did");
}

/* Prints an engine's publisher counters from api_info's nats map. */
static void
fleet_print_publisher(Fleet *f, FleetEngine *e)
{
  uint32_t id = bench_rpc_begin(&e->rpc, &f->sb, &f->pk, "api_info", 0);
  const msgpack_object *ni = bench_rpc_get(bench_rpc_call(&e->rpc, id, &f->sb), "nats");
  static const char *const keys[] = {"published", "acknowledged", "duplicates", "retries",
                                     "timeouts",  "refusals",     "lost",       "foreign_ids",
                                     "in_flight"};
  char state[32], last_error[160];
  bench_rpc_str(bench_rpc_get(ni, "state"), state, sizeof state);
  bench_rpc_str(bench_rpc_get(ni, "last_error"), last_error, sizeof last_error);
  printf("    %-8s %s", e->name, state);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int64_t v = bench_rpc_uint(bench_rpc_get(ni, keys[i]));
    if (v >= 0) /* an engine that does not report it: left out */
      printf(", %s %lld", keys[i], (long long)v);
  }
  if (last_error[0] != '\0')
    printf(", last_error \"%s\"", last_error);
  printf("\n");
}

/* --- figures ------------------------------------------------------------ */

/* Appends src's samples to dst. */
static void
fleet_merge(BenchSamples *dst, const BenchSamples *src)
{
  for (size_t i = 0; i < src->n; i++)
    bench_samples_add(dst, src->v[i].stamp_ns,
                      src->v[i].stamp_ns + (int64_t)llround(src->v[i].ms * 1e6));
}

/* Lines per second that arrived (stamp + latency) within the window. */
static double
fleet_rate(const Fleet *f, const BenchSamples *s)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    int64_t at = s->v[i].stamp_ns + (int64_t)llround(s->v[i].ms * 1e6);
    if (at >= f->from_ns && at < f->to_ns)
      n++;
  }
  return (double)n / ((double)(f->to_ns - f->from_ns) / 1e9);
}

/* One row: the rate, the latency of the lines stamped in the window. */
static BenchLatency
fleet_row(const Fleet *f, const char *name, const BenchSamples *s)
{
  BenchLatency l = bench_samples_latency(s, f->from_ns, f->to_ns);
  if (l.n == 0) {
    printf("  %-34s no lines in the window\n", name);
    return l;
  }
  printf("  %-34s %8.1f %9.3f %9.3f %9.3f %8zu\n", name, fleet_rate(f, s), l.p50, l.p99, l.max,
         l.n);
  return l;
}

/* The engines' CPU over the window per notification that went over their
 * sockets in it (each of those was also published, for an engine with
 * NATS): us in all threads and in the loop thread, summed over the engines
 * of one kind. Returns false when nothing was read. */
static bool
fleet_cpu_per_notification(const Fleet *f, bool nats, double *us, double *loop_us,
                           double *wait_us, size_t *n)
{
  double cpu = 0, loop = 0, wait = 0;
  *n = 0;
  for (size_t k = 0; k < f->neng; k++) {
    const FleetEngine *e = &f->eng[k];
    if (e->nats != nats)
      continue;
    if (e->cpu[0] < 0 || e->cpu[1] < e->cpu[0] || e->cpu_loop[0] < 0)
      return false;
    cpu += e->cpu[1] - e->cpu[0];
    loop += e->cpu_loop[1] - e->cpu_loop[0];
    wait += e->wait[1] - e->wait[0];
    *n += bench_samples_latency(&e->socket, f->from_ns, f->to_ns).n;
  }
  if (*n == 0)
    return false;
  *us = cpu / 1e3 / (double)*n;
  *loop_us = loop / 1e3 / (double)*n;
  *wait_us = wait / 1e3 / (double)*n;
  return true;
}

static void
fleet_print(Fleet *f)
{
  double window_s = (double)(f->to_ns - f->from_ns) / 1e9;
  printf("  window: %.1f s, from %.1f s after the first monitor_start to %.1f s after it "
         "(every monitor running)\n",
         window_s, (double)(f->from_ns - f->first_start_ns) / 1e9,
         (double)(f->to_ns - f->first_start_ns) / 1e9);
  printf("  %-34s %8s %9s %9s %9s %8s\n", "path (lines of e1..)", "notif/s", "p50 ms", "p99 ms",
         "max ms", "lines");
  BenchSamples sock = {0}, stored = {0}, got = {0}, acked = {0};
  size_t nn = 0;
  for (size_t k = 0; k < f->neng; k++) {
    FleetEngine *e = &f->eng[k];
    if (!e->nats)
      continue;
    nn++;
    fleet_merge(&sock, &e->socket);
    fleet_merge(&stored, bench_gateway_stored(e->gw));
    fleet_merge(&got, bench_gateway_received(e->gw));
    fleet_merge(&acked, bench_gateway_acked(e->gw));
  }
  char label[64];
  snprintf(label, sizeof label, "socket (%zu engines)", nn);
  BenchLatency ls = fleet_row(f, label, &sock);
  BenchLatency lt = fleet_row(f, "JetStream, stored in the stream", &stored);
  BenchLatency lg = fleet_row(f, "JetStream, at the gateway", &got);
  BenchLatency la = fleet_row(f, f->ack_sync ? "JetStream, its ack returned" : "JetStream, acked",
                             &acked);
  for (size_t k = 0; k < f->neng; k++)
    if (!f->eng[k].nats)
      fleet_row(f, "socket, control engine (no NATS)", &f->eng[k].socket);
  for (size_t k = 0; k < f->neng; k++) {
    FleetEngine *e = &f->eng[k];
    if (!e->nats)
      continue;
    char a[48], b[48];
    snprintf(a, sizeof a, "  %s socket", e->name);
    snprintf(b, sizeof b, "  %s JetStream acked", e->name);
    fleet_row(f, a, &e->socket);
    fleet_row(f, b, bench_gateway_acked(e->gw));
  }
  if (ls.n > 0 && la.n > 0) {
    double d = la.p99 - ls.p99;
    double rate = fleet_rate(f, &acked);
    printf("  JetStream adds at p99: %.3f ms to the gateway, %.3f ms to %s "
           "(target < 5 ms at ~1000 notifications/s, here %.0f/s: %s)\n",
           lg.p99 - ls.p99, d, f->ack_sync ? "its ack returned" : "its ack", rate,
           d < 5.0 ? "met" : "NOT MET");
    printf("  at p50: %.3f ms to the gateway, %.3f ms to the ack\n", lg.p50 - ls.p50,
           la.p50 - ls.p50);
    if (lt.n > 0)
      printf("  stored in the stream, over the socket: p50 %.3f ms, p99 %.3f ms (the engine's "
             "publisher and the server; the rest is delivery to the gateway)\n",
             lt.p50 - ls.p50, lt.p99 - ls.p99);
  }

  double us = 0, loop = 0, wait = 0, cus = 0, cloop = 0, cwait = 0;
  size_t n = 0, cn = 0;
  bool have = fleet_cpu_per_notification(f, true, &us, &loop, &wait, &n);
  bool chave = fleet_cpu_per_notification(f, false, &cus, &cloop, &cwait, &cn);
  if (have)
    printf("  engine CPU per notification, with NATS: %.1f us (loop thread %.1f, other threads "
           "%.1f: the NATS link, nats.c's own, libuv's pool); its threads waited %.1f us for a "
           "CPU\n",
           us, loop, us - loop, wait);
  if (chave)
    printf("  engine CPU per notification, control:   %.1f us (loop thread %.1f, other threads "
           "%.1f); its threads waited %.1f us for a CPU\n",
           cus, cloop, cus - cloop, cwait);
  if (have && chave)
    printf("  what publishing costs an engine: %.1f us per notification (%.1f of it on the "
           "loop)\n",
           us - cus, loop - cloop);
  if (n > 0 && f->nats_cpu[0] >= 0 && f->nats_cpu[1] >= f->nats_cpu[0])
    printf("  nats-server CPU per notification: %.1f us (%.1f%% of a core over the window); its "
           "threads waited %.1f us for a CPU\n",
           (f->nats_cpu[1] - f->nats_cpu[0]) / 1e3 / (double)n,
           (f->nats_cpu[1] - f->nats_cpu[0]) / 1e7 / window_s,
           (f->nats_wait[1] - f->nats_wait[0]) / 1e3 / (double)n);
  if (f->self_cpu[0] >= 0 && f->self_cpu[1] >= f->self_cpu[0])
    printf("  this program (the gateways and the sockets): %.1f%% of a core\n",
           (f->self_cpu[1] - f->self_cpu[0]) / 1e7 / window_s);
  double load[3] = {-1, -1, -1};
  if (getloadavg(load, 3) != 3)
    load[0] = load[1] = load[2] = -1;
  printf("  the machine: %.0f%% idle over the window (%ld cpus, shared); load average at the end "
         "%.2f %.2f %.2f\n",
         f->machine_idle, sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);

  /* What each path delivered over the whole run, and the gateways'
   * checks. */
  uint64_t sock_lines = 0, js_lines = 0, merged = 0, suppressed = 0, other = 0;
  BenchGatewayCounts t = {0};
  for (size_t k = 0; k < f->neng; k++) {
    FleetEngine *e = &f->eng[k];
    merged += e->merged;
    suppressed += e->suppressed;
    other += e->other;
    if (!e->nats)
      continue;
    sock_lines += e->socket.n;
    BenchGatewayCounts c = bench_gateway_counts(e->gw);
    js_lines += c.lines;
    t.messages += c.messages;
    t.bad += c.bad;
    t.duplicates += c.duplicates;
    t.gaps += c.gaps;
    t.redelivered += c.redelivered;
    t.ack_errors += c.ack_errors;
    if (c.max_pending > t.max_pending)
      t.max_pending = c.max_pending;
    t.other += c.other;
  }
  printf("  whole run: %llu lines over the sockets of e1..e%zu, %llu through JetStream "
         "(%llu messages); gateway checks: %llu bad, %llu duplicates, %llu seqs skipped, "
         "%llu redelivered, %llu failed acks; at most %llu waiting behind a message\n",
         (unsigned long long)sock_lines, nn, (unsigned long long)js_lines,
         (unsigned long long)t.messages, (unsigned long long)t.bad,
         (unsigned long long)t.duplicates, (unsigned long long)t.gaps,
         (unsigned long long)t.redelivered, (unsigned long long)t.ack_errors,
         (unsigned long long)t.max_pending);
  if (sock_lines != js_lines)
    printf("  WARNING: the socket and JetStream delivered different numbers of lines\n");
  if (merged > 0 || suppressed > 0 || other + t.other > 0)
    printf("  note: %llu notifications carried more than one line, %llu lines were withheld by "
           "the rate limit, %llu notifications of other types\n",
           (unsigned long long)merged, (unsigned long long)suppressed,
           (unsigned long long)(other + t.other));
  printf("  publishers (api_info nats):\n");
  for (size_t k = 0; k < f->neng; k++)
    if (f->eng[k].nats)
      fleet_print_publisher(f, &f->eng[k]);
  bench_samples_free(&sock);
  bench_samples_free(&stored);
  bench_samples_free(&got);
  bench_samples_free(&acked);
}

/* --- ingest with and without NATS --------------------------------------- */

/* The number after prefix on a line of file path, or -1. */
static double
fleet_figure(const char *path, const char *prefix)
{
  FILE *fp = fopen(path, "r");
  if (fp == NULL)
    return -1;
  char line[1024];
  double v = -1;
  size_t n = strlen(prefix);
  while (fgets(line, sizeof line, fp)) {
    const char *p = line;
    while (*p == ' ')
      p++;
    if (strncmp(p, prefix, n) == 0) {
      v = strtod(p + n, NULL);
      break;
    }
  }
  fclose(fp);
  return v;
}

/* Runs bench/ingest's wire figure (nats_url: with --nats) with its output
 * in out; returns whether it ran to the end. */
static bool
fleet_ingest_run(Fleet *f, const char *nats_url, const char *out)
{
  char runs[16];
  snprintf(runs, sizeof runs, "%ld", f->ingest_runs);
  char *argv[16];
  int a = 0;
  argv[a++] = f->ingest_prog;
  argv[a++] = "--wire-only";
  argv[a++] = "--no-builtin-peer";
  argv[a++] = "--bytes";
  argv[a++] = (char *)f->ingest_bytes;
  argv[a++] = "--runs";
  argv[a++] = runs;
  argv[a++] = "--vigild";
  argv[a++] = f->vigild;
  if (nats_url) {
    argv[a++] = "--nats";
    argv[a++] = (char *)nats_url;
  }
  argv[a] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, f->ingest_prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    printf("  cannot start %s: %s\n", f->ingest_prog, strerror(rc));
    return false;
  }
  bench_rpc_also_stop(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  bench_rpc_forget(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("  ingest%s failed (its output: %s)\n", nats_url ? " --nats" : "", out);
    return false;
  }
  return true;
}

/* The ingest figure without and with NATS, the same server: --ingest-rounds
 * rounds, each one run of each, their order alternating (off on, on off,
 * ...) so that a drift of the machine's load falls on both; each mode's
 * best round (its highest vigil/pipe, its lowest CPU per byte) is
 * compared. */
static void
fleet_ingest(Fleet *f)
{
  printf("\nfleet: ingest's wire figure (bench/ingest --wire-only --bytes %s --runs %ld), "
         "without and with --nats %s, %ld rounds alternating\n",
         f->ingest_bytes, f->ingest_runs, f->nats.url, f->ingest_rounds);
  fflush(stdout);
  static const char *const names[2] = {"without NATS", "with NATS"};
  double best_ratio[2] = {-1, -1}, best_own[2] = {-1, -1}, best_vigil[2] = {-1, -1};
  double published = -1;
  for (long r = 0; r < f->ingest_rounds; r++) {
    for (int k = 0; k < 2; k++) {
      int mode = r % 2 == 0 ? k : 1 - k;
      char out[PATH_MAX];
      snprintf(out, sizeof out, "%s/ingest-%ld-%s.txt", f->dir, r + 1,
               mode ? "with-nats" : "without-nats");
      if (!fleet_ingest_run(f, mode ? f->nats.url : NULL, out))
        return;
      double ratio = fleet_figure(out, "ratio vigil/pipe");
      double vigil = fleet_figure(out, "vigil     ");
      double pipe_s = fleet_figure(out, "pipe      ");
      double own = fleet_figure(out, "vigild alone");
      if (mode)
        published = fleet_figure(out, "nats: published");
      printf("  round %ld, %-13s vigil %.3f s, pipe %.3f s: vigil/pipe %.2fx", r + 1, names[mode],
             vigil, pipe_s, ratio);
      if (own >= 0)
        printf(", vigild alone %.2f cpu-ns/B", own);
      printf("\n");
      fflush(stdout);
      if (ratio > best_ratio[mode])
        best_ratio[mode] = ratio;
      if (vigil > 0 && (best_vigil[mode] < 0 || vigil < best_vigil[mode]))
        best_vigil[mode] = vigil;
      if (own > 0 && (best_own[mode] < 0 || own < best_own[mode]))
        best_own[mode] = own;
    }
  }
  if (published >= 0)
    printf("  with NATS the ingest engine published %.0f notifications (its session's)\n",
           published);
  if (best_ratio[0] > 0 && best_ratio[1] > 0)
    printf("  best vigil/pipe with NATS / without: %.2fx / %.2fx = %.2f (target: does not move; "
           "the pipe's own speed swings between runs, so read the CPU per byte beside it)\n",
           best_ratio[1], best_ratio[0], best_ratio[1] / best_ratio[0]);
  if (best_vigil[0] > 0 && best_vigil[1] > 0)
    printf("  best vigil time with NATS / without: %.3f s / %.3f s = %.2f\n", best_vigil[1],
           best_vigil[0], best_vigil[1] / best_vigil[0]);
  if (best_own[0] > 0 && best_own[1] > 0)
    printf("  lowest vigild CPU per byte with NATS / without: %.2f / %.2f = %.2f\n", best_own[1],
           best_own[0], best_own[1] / best_own[0]);
}

/* --- main --------------------------------------------------------------- */

/* Removes one entry of a temp dir being emptied (nftw, depth first). */
static int
fleet_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void)st;
  (void)ftw;
  if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0)
    fprintf(stderr, "fleet: cannot remove %s: %s\n", path, strerror(errno));
  return 0;
}

/* Removes dir, one of this program's /tmp/vigil-fleet-* dirs, and all in it. */
static void
fleet_rm_tree(const char *dir)
{
  if (strncmp(dir, "/tmp/vigil-fleet-", 17) != 0)
    return;
  nftw(dir, fleet_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void
fleet_usage(void)
{
  fprintf(stderr,
          "usage: fleet [--engines 3] [--monitors 100] [--per-session 10] [--interval 300]\n"
          "             [--seconds 60] [--consumers session|engine] [--no-control]\n"
          "             [--max-in-flight N] [--ack async|sync]\n"
          "             [--ingest-bytes 400m] [--ingest-runs 3] [--ingest-rounds 2] [--no-ingest]\n"
          "             [--nats-server PATH] [--vigild PATH] [--keep]\n");
}

/* Reads a long option value within [lo, hi], or exits with the bound. */
static long
fleet_long(const char *opt, const char *v, long lo, long hi)
{
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    fprintf(stderr, "fleet: %s must be %ld..%ld, got \"%s\"\n", opt, lo, hi, v);
    exit(2);
  }
  return x;
}

int
main(int argc, char **argv)
{
  Fleet *f = &fleet_g;
  f->engines = 3;
  f->monitors = 100;
  f->per_session = 10;
  f->interval_ms = 300;
  f->seconds = 60;
  f->control = true;
  f->per_session_consumers = true;
  f->ingest = true;
  f->ingest_bytes = "400m";
  f->ingest_runs = 3;
  f->ingest_rounds = 2;
  const char *vigild_arg = NULL, *nats_arg = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--engines") == 0 && v)
      f->engines = fleet_long(a, argv[++i], 1, FLEET_MAX_ENGINES);
    else if (strcmp(a, "--monitors") == 0 && v)
      f->monitors = fleet_long(a, argv[++i], 1, 1000);
    else if (strcmp(a, "--per-session") == 0 && v)
      f->per_session = fleet_long(a, argv[++i], 1, FLEET_PER_SESSION_MAX);
    else if (strcmp(a, "--interval") == 0 && v)
      f->interval_ms = fleet_long(a, argv[++i], 10, 60000);
    else if (strcmp(a, "--seconds") == 0 && v)
      f->seconds = fleet_long(a, argv[++i], 5, 3600);
    else if (strcmp(a, "--ack") == 0 && v) {
      const char *m = argv[++i];
      if (strcmp(m, "async") != 0 && strcmp(m, "sync") != 0) {
        fprintf(stderr, "fleet: --ack must be async or sync, got \"%s\"\n", m);
        return 2;
      }
      f->ack_sync = strcmp(m, "sync") == 0;
    } else if (strcmp(a, "--max-in-flight") == 0 && v)
      f->max_in_flight = fleet_long(a, argv[++i], 1, 1024);
    else if (strcmp(a, "--ingest-bytes") == 0 && v)
      f->ingest_bytes = argv[++i];
    else if (strcmp(a, "--ingest-runs") == 0 && v)
      f->ingest_runs = fleet_long(a, argv[++i], 1, 20);
    else if (strcmp(a, "--ingest-rounds") == 0 && v)
      f->ingest_rounds = fleet_long(a, argv[++i], 1, 20);
    else if (strcmp(a, "--nats-server") == 0 && v)
      nats_arg = argv[++i];
    else if (strcmp(a, "--vigild") == 0 && v)
      vigild_arg = argv[++i];
    else if (strcmp(a, "--consumers") == 0 && v) {
      const char *c = argv[++i];
      if (strcmp(c, "session") != 0 && strcmp(c, "engine") != 0) {
        fprintf(stderr, "fleet: --consumers must be session or engine, got \"%s\"\n", c);
        return 2;
      }
      f->per_session_consumers = strcmp(c, "session") == 0;
    } else if (strcmp(a, "--no-control") == 0)
      f->control = false;
    else if (strcmp(a, "--no-ingest") == 0)
      f->ingest = false;
    else if (strcmp(a, "--keep") == 0)
      f->keep = true;
    else {
      fleet_usage();
      return 2;
    }
  }
  f->count = f->seconds * 1000 / f->interval_ms;
  if (f->count < 3) {
    fprintf(stderr, "fleet: --seconds %ld at --interval %ld ms gives %ld lines per child; "
                    "at least 3 are needed\n", f->seconds, f->interval_ms, f->count);
    return 2;
  }
  /* The rate limit: what a monitor writes in 10 s, a quarter more, and the
   * default's 8 on top, so nothing is withheld. */
  f->rate_per_10s = 10000 / f->interval_ms * 5 / 4 + 8;

  if (!bench_find_programs("fleet", "latency_child", vigild_arg, f->child, f->vigild) ||
      !bench_find_programs("fleet", "ingest", vigild_arg, f->ingest_prog, f->vigild) ||
      !bench_nats_find("fleet", nats_arg, f->nats.path, sizeof f->nats.path))
    return 1;
  signal(SIGPIPE, SIG_IGN);
  msgpack_sbuffer_init(&f->sb);
  msgpack_packer_init(&f->pk, &f->sb, msgpack_sbuffer_write);

  snprintf(f->dir, sizeof f->dir, "/tmp/vigil-fleet-XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    fprintf(stderr, "fleet: mkdtemp: %s\n", strerror(errno));
    return 1;
  }

  /* The engines are recorded (bench_rpc_init) before anything can fail,
   * so that bench_rpc_die stops what is running; the server is started
   * first, since every engine connects to it at start. */
  f->neng = (size_t)f->engines + (f->control ? 1 : 0);
  bench_nats_start(&f->nats, f->dir);
  double rate = (double)f->engines * (double)f->monitors * 1000.0 / (double)f->interval_ms;
  printf("fleet: %ld engines x %ld monitors (sessions of %ld), each monitor a line every %ld ms "
         "for %ld s: %.0f notifications/s through JetStream",
         f->engines, f->monitors, f->per_session, f->interval_ms, f->seconds, rate);
  if (f->control)
    printf("; a control engine without NATS with %ld more", f->monitors);
  printf("\n  nats-server %s on %s, store %s/js; gateways: one per engine, %s\n", f->nats.path,
         f->nats.url, f->dir,
         f->per_session_consumers
             ? "a durable consumer per session (vigil.<engine>.<session>.n)"
             : "one durable consumer for all its sessions (vigil.<engine>.*.n)");
  fflush(stdout);

  for (long k = 0; k < f->engines; k++) {
    char name[24];
    snprintf(name, sizeof name, "e%ld", k + 1);
    fleet_engine_start(f, &f->eng[k], name, true);
  }
  if (f->control)
    fleet_engine_start(f, &f->eng[f->engines], "control", false);
  printf("  chosen: interval %ld ms against the %ld ms flush window (%s), rate_limit %ld per "
         "10 s (a monitor writes %ld), incidents false (every line its own notification)\n",
         f->interval_ms, f->flush_ms,
         f->interval_ms > f->flush_ms ? "one line per batch" : "lines share batches",
         f->rate_per_10s, 10000 / f->interval_ms);
  if (f->max_in_flight > 0)
    printf("  the engines' nats.max_in_flight: %ld\n", f->max_in_flight);
  printf("  the gateways ack %s\n", f->ack_sync ? "and wait for the server's confirmation "
         "(--ack sync: natsMsg_AckSync)" : "without waiting for the server (natsMsg_Ack, as "
         "vigil's readers do)");

  /* The gateways subscribe before any monitor runs; they would get every
   * message anyway (deliver all), but their clocks then start with the
   * first. */
  long sessions = (f->monitors + f->per_session - 1) / f->per_session;
  for (long k = 0; k < f->engines; k++) {
    FleetEngine *e = &f->eng[k];
    char name[32], err[512];
    char filters[FLEET_MAX_SESSIONS][96];
    const char *fp[FLEET_MAX_SESSIONS];
    size_t nf = 0;
    snprintf(name, sizeof name, "bench-%s", e->name);
    if (f->per_session_consumers) {
      /* Session names here have no '.', so each is its own token. */
      for (long s = 0; s < sessions; s++, nf++) {
        char session[32];
        fleet_session_name(f, s * f->per_session, session, sizeof session);
        snprintf(filters[nf], sizeof filters[nf], "vigil.%s.%s.n", e->name, session);
      }
    } else {
      snprintf(filters[nf++], sizeof filters[0], "vigil.%s.*.n", e->name);
    }
    for (size_t i = 0; i < nf; i++)
      fp[i] = filters[i];
    e->gw = bench_gateway_start(f->nats.url, "VIGIL", name, fp, nf, f->ack_sync, err,
                                sizeof err);
    if (e->gw == NULL)
      bench_rpc_die("gateway for %s: %s", e->name, err);
  }

  /* The monitors, engine by engine in turn, so that the engines' children
   * are spread over the same phases. */
  f->first_start_ns = bench_rpc_now_ns();
  for (long i = 0; i < f->monitors; i++)
    for (size_t k = 0; k < f->neng; k++)
      fleet_monitor_start(f, &f->eng[k], i);
  f->last_start_ns = bench_rpc_now_ns();
  printf("  %zu x %ld monitors started in %.2f s\n", f->neng, f->monitors,
         (double)(f->last_start_ns - f->first_start_ns) / 1e9);
  fflush(stdout);
  f->from_ns = f->last_start_ns + 2 * f->interval_ms * 1000000LL;
  f->to_ns = f->first_start_ns + f->count * f->interval_ms * 1000000LL - FLEET_TAIL_NS;
  if (f->to_ns - f->from_ns < 2000000000LL)
    bench_rpc_die("the window where every monitor runs is under 2 s: give more --seconds "
                  "(starting the monitors took %.1f s)",
                  (double)(f->last_start_ns - f->first_start_ns) / 1e9);

  fleet_run(f);
  fleet_print(f);
  for (size_t k = 0; k < f->neng; k++)
    if (f->eng[k].gw)
      bench_gateway_stop(f->eng[k].gw);

  int bad = 0;
  for (size_t k = 0; k < f->neng; k++) {
    FleetEngine *e = &f->eng[k];
    bench_rpc_disconnect(&e->rpc);
    int ws;
    if (!bench_rpc_engine_stop(&e->rpc, &ws) || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      printf("  WARNING: engine %s did not exit cleanly after SIGTERM (see %s/vigild.log)\n",
             e->name, e->rpc.dir);
      bad++;
    } else if (!f->keep) {
      fleet_rm_tree(e->rpc.dir);
    }
  }
  fflush(stdout);

  if (f->ingest)
    fleet_ingest(f);

  bench_nats_stop(&f->nats);
  for (size_t k = 0; k < f->neng; k++) {
    bench_gateway_free(f->eng[k].gw);
    bench_samples_free(&f->eng[k].socket);
  }
  msgpack_sbuffer_destroy(&f->sb);
  nats_Close();
  if (f->keep || bad > 0) {
    printf("  (kept %s: nats-server.log, js/%s)\n", f->dir,
           f->ingest ? ", ingest-*.txt" : "");
    for (size_t k = 0; k < f->neng && f->keep; k++)
      printf("  (kept %s: config.lua, vigild.log)\n", f->eng[k].rpc.dir);
  } else {
    fleet_rm_tree(f->dir);
  }
  return 0;
}
