/*
 * The ingest benchmark: how fast one monitor reads a child that writes a
 * large log as fast as it can, against two peers measured in the same run.
 * It has two parts, and a plain `ingest` runs both.
 *
 * The wire figure, what a user runs: gen_log writes the log once to a temp
 * file, which is read once so that it sits in the page cache, and then
 *
 *   pipe     cat FILE | cat > /dev/null               (the pipe's own speed)
 *   grep -E  cat FILE | grep -cE <the 5 patterns>     (the same matching work)
 *   vigil    the real `vigild --listen` on a private socket, driven by
 *            bench/support/benchrpc: one monitor_start {argv: [cat, FILE],
 *            patterns: <the 5>}, timed from sending the request to receiving
 *            the monitor's ending notification (`exit`); the matched-line
 *            count comes from monitor_status's counters afterwards
 *
 * Every contender has the same writer, cat of a cached file, the fastest a
 * pipe can have (the pipe contender is its speed; gen_log's generator is
 * slower), so what differs between them is the reader's own cost. The
 * engine's config allows `cat` and raises rate_limit.overload_ms (a long
 * --notify-lines run must not be stopped as overloaded); everything else
 * is the defaults, so the rate limit withholds batches exactly as it does
 * for users. Targets (bench/README.md, issue 27): vigil/pipe >= 0.85 and
 * vigil's CPU, its cat included, <= 0.6 ns per byte; vigil/grep is
 * printed as a peer. A plain run (the five patterns, no notify or policy)
 * also times vigil on the built-in crash set in the same rounds and
 * prints its ratio to the five (target: within 15%; --no-builtin-peer
 * leaves it out). Where `perf stat` can count, one
 * more round, untimed, counts cycles (else task-clock) of every process of
 * each contender (the shell and its pipeline; vigild and the cat it forks,
 * perf attached with -p) and prints them per byte.
 *
 * The in-process figure, generator-bound: the core library with no daemon
 * and no wire, one monitor on `gen_log N` against `gen_log N | cat` and
 * `gen_log N | grep -cE`. gen_log writes into the pipe at about 1.5 GB/s,
 * so every contender there partly waits on the same writer; it is kept to
 * compare with earlier figures and to see the engine without a socket.
 *
 * Each contender runs `--runs` times, interleaved, and the best time counts.
 * Not a test: the figures depend on the machine.
 *
 *   ingest [--bytes 400m] [--runs 3] [--patterns 0..5] [--builtin]
 *          [--notify-lines] [--policy NAME] [--locale C.UTF-8]
 *          [--wire-only | --inproc-only] [--vigild PATH] [--timeout 120]
 *          [--no-state] [--no-perf] [--no-builtin-peer] [--nats URL] [--keep]
 *
 * --patterns N gives vigil only the first N patterns (0 shows what the
 * pipeline costs without matching); grep always gets all five. --builtin
 * starts vigil without patterns, so it matches the built-in crash set
 * (docs/crash-patterns.md); grep keeps the five. --notify-lines starts it
 * with notify "lines" (every line batched; the rate limit withholds most
 * batches) and --policy NAME with that Lua policy formatting every
 * notification (Lua runs per notification, never per line). --timeout
 * bounds the wait for each wire monitor's ending (seconds). --no-state
 * starts vigild without a state directory (no keeper, the capture in
 * memory instead of spools: docs/restart.md), to measure what keeping
 * monitors across a restart costs the data path. --nats URL gives the
 * wire engine `nats = {url = URL, engine = "ingest"}`, so it also
 * publishes its session's notifications into JetStream (docs/fleet.md),
 * and prints what it published (bench/fleet runs the figure without and
 * with it: the ratio must not move). --keep leaves
 * the temp dir (config, vigild.log, the generated log, perf's output).
 * gen_log sits next to this program; vigild is looked for one level above
 * it (build/vigild) unless --vigild names it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "engine/deliver.h"
#include "engine/engine.h"
#include "render/envelope.h"
#include "monitor/monitor.h"
#include "policy/policy.h"
#include "support/benchrpc.h"

extern char **environ;

static const char *const crash_patterns[] = {
  "^Error:", "^Fatal:", "^panic:", "\\buncaught\\b", "UnhandledPromiseRejection",
};
#define INGEST_NPATTERNS 5

/* The options and, for the wire figure, the engine and the file. */
typedef struct {
  BenchRpc rpc;                  /* the engine, its temp dir, the connection */
  /* options */
  const char *bytes;
  const char *locale;
  int runs;
  size_t npatterns;
  bool builtin;
  NotifyMode notify;
  const char *policy_name;
  bool keep;
  bool use_perf;
  bool builtin_peer;             /* the built-in set timed beside the five (ingest_builtin_*) */
  long timeout_s;
  const char *nats_url;          /* --nats: the wire engine publishes there */
  /* the wire figure */
  char log_path[PATH_MAX];       /* the generated log, in the engine's dir */
  uint64_t log_bytes;
  const char *perf_event;        /* "cycles", "task-clock", or NULL: no perf */
  char monitor_id[64];           /* the monitor being timed */
  bool ended;                    /* an ending notification came ... */
  char ended_id[64];             /* ... for this monitor */
  char ended_type[32];
  int64_t ended_exit_code;       /* -1: none */
  int64_t ended_ns;              /* when it came off the socket */
  uint64_t outputs;              /* output notifications received this run */
} Ingest;

static Ingest ingest_g;

/* What the signal hook and the exit handler undo: the process group of the
 * child running now (a pipeline, perf, gen_log), and the generated log. */
static volatile sig_atomic_t ingest_pgid;
static volatile sig_atomic_t ingest_log_made;

/* What a signal removes besides: every file of the engine's temp dir, then
 * run/ and the dir, in that order. Written before they exist, because a
 * signal handler cannot format paths. */
#define INGEST_RM_MAX 16
static char ingest_rm[INGEST_RM_MAX][PATH_MAX];
static volatile sig_atomic_t ingest_nrm;

/* SIGTERM to the running child's group, and the big file removed unless
 * --keep. Async-signal-safe: kill and unlink only. */
static void
ingest_undo(void)
{
  if (ingest_pgid > 0)
    kill(-(pid_t)ingest_pgid, SIGTERM);
  if (ingest_log_made && !ingest_g.keep)
    unlink(ingest_g.log_path);
}

/* The BenchRpc signal hook (SIGINT, SIGTERM, SIGHUP): a benchmark that was
 * interrupted leaves nothing behind, unless --keep. The engine is stopped
 * here rather than after, since its dir can go only once it has exited (it
 * writes its log and removes its socket on the way out); after 5 s without
 * an exit the dir stays. Async-signal-safe calls only. */
static void
ingest_on_signal(void)
{
  ingest_undo();
  BenchRpc *rpc = &ingest_g.rpc;
  if (ingest_g.keep || ingest_nrm == 0)
    return;
  if (rpc->vigild > 0) {
    kill(rpc->vigild, SIGTERM);
    struct timespec ms10 = {0, 10000000L};
    for (int i = 0; i < 500 && rpc->vigild > 0; i++) {
      if (waitpid(rpc->vigild, NULL, WNOHANG) == rpc->vigild)
        rpc->vigild = 0;
      else
        nanosleep(&ms10, NULL);
    }
    if (rpc->vigild > 0)
      return;
  }
  for (int i = 0; i < ingest_nrm; i++)
    if (unlink(ingest_rm[i]) != 0)
      rmdir(ingest_rm[i]);
}

/* atexit: bench_rpc_die exits 1 keeping the engine's dir for its log, but
 * the generated log must not stay behind. */
static void
ingest_at_exit(void)
{
  ingest_undo();
  ingest_log_made = 0;
}

static double
ingest_now(void)
{
  return (double)bench_rpc_now_ns() / 1e9;
}

static double
ingest_min(double a, double b)
{
  return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* --- children ----------------------------------------------------------- */

/* Spawns argv (looked up in PATH) in a process group of its own, so that a
 * signal to this program can stop the whole pipeline, and records that
 * group for ingest_undo. fa may be NULL. Returns the pid, or -1 with errno. */
static pid_t
ingest_spawn(char *const argv[], const posix_spawn_file_actions_t *fa)
{
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  ingest_pgid = pid;
  return pid;
}

/* Waits for the child ingest_spawn started; returns its waitpid status. */
static int
ingest_reap(pid_t pid)
{
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  ingest_pgid = 0;
  return status;
}

/* Runs a shell pipeline and returns its wall time; fills out with up to
 * cap-1 bytes of its stdout (for grep's count). With perf_out, the pipeline
 * runs under `perf stat -e EVENT -x, -o perf_out`, which counts the shell
 * and every process it starts. */
static double
ingest_shell(const Ingest *b, const char *script, const char *perf_out, char *out, size_t cap)
{
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    bench_rpc_die("pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  char *sh[] = {"/bin/sh", "-c", (char *)script, NULL};
  char *perf[] = {"perf", "stat", "-e", (char *)b->perf_event, "-x,", "-o", (char *)perf_out,
                  "--", "/bin/sh", "-c", (char *)script, NULL};
  double t0 = ingest_now();
  pid_t pid = ingest_spawn(perf_out ? perf : sh, &fa);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (pid < 0)
    bench_rpc_die("cannot run %s: %s", perf_out ? "perf" : "/bin/sh", strerror(errno));
  size_t n = 0;
  ssize_t r;
  while ((r = read(fds[0], out + n, cap - 1 - n)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    n += (size_t)r;
    if (n == cap - 1)
      n = 0; /* only the tail matters (grep's count) */
  }
  out[n] = '\0';
  close(fds[0]);
  int status = ingest_reap(pid);
  double t = ingest_now() - t0;
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1))
    fprintf(stderr, "ingest: \"%s\" ended with status %d\n", script, status);
  return t;
}

/* --- perf --------------------------------------------------------------- */

/* The count of event in a `perf stat -x,` output file, or -1 when it is not
 * there or perf could not count it ("<not supported>", "<not counted>"). */
static double
ingest_perf_read(const char *path, const char *event)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  char line[512];
  double v = -1;
  size_t elen = strlen(event);
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    /* value,unit,event[:modifiers],run time,... */
    char *c1 = strchr(line, ',');
    char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (c2 == NULL || strncmp(c2 + 1, event, elen) != 0 ||
        (c2[1 + elen] != ',' && c2[1 + elen] != ':'))
      continue;
    if (line[0] != '<') {
      char *end;
      double x = strtod(line, &end);
      if (end != line && x > 0)
        v = x;
    }
    break;
  }
  fclose(f);
  return v;
}

/* What `perf stat -e EVENT -x, true` says of an event. */
typedef enum { kPerfCounts, kPerfCannotCount, kPerfUnusable } IngestPerfProbe;

/* Runs `perf stat -e event -x, true`; why says what failed. */
static IngestPerfProbe
ingest_perf_try(const Ingest *b, const char *event, char *why, size_t cap)
{
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/perf-probe.txt", b->rpc.dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char *argv[] = {"perf", "stat", "-e", (char *)event, "-x,", "-o", out, "--", "true", NULL};
  pid_t pid = ingest_spawn(argv, &fa);
  posix_spawn_file_actions_destroy(&fa);
  if (pid < 0) {
    snprintf(why, cap, "perf is not installed (%s)", strerror(errno));
    return kPerfUnusable;
  }
  int status = ingest_reap(pid);
  double v = ingest_perf_read(out, event);
  unlink(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int paranoid = 99;
    if (f) {
      if (fscanf(f, "%d", &paranoid) != 1)
        paranoid = 99;
      fclose(f);
    }
    snprintf(why, cap, "perf stat fails here (exit %d; kernel.perf_event_paranoid is %d)",
             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), paranoid);
    return kPerfUnusable;
  }
  if (v < 0) {
    snprintf(why, cap, "perf cannot count %s here", event);
    return kPerfCannotCount;
  }
  return kPerfCounts;
}

/* Chooses what perf counts: cycles, else task-clock, else nothing, saying
 * why. */
static void
ingest_perf_probe(Ingest *b)
{
  char why[256] = "";
  b->perf_event = NULL;
  if (!b->use_perf) {
    printf("  perf: not used (--no-perf)\n");
    return;
  }
  IngestPerfProbe p = ingest_perf_try(b, "cycles", why, sizeof why);
  if (p == kPerfCounts) {
    b->perf_event = "cycles";
    printf("  perf: cycles of every process of each contender, in one more untimed round\n");
  } else if (p == kPerfCannotCount &&
             ingest_perf_try(b, "task-clock", why, sizeof why) == kPerfCounts) {
    b->perf_event = "task-clock";
    printf("  perf: cycles cannot be counted here (no access to the PMU: a VM or a container?); "
           "task-clock instead, the CPU time of every process of each contender, in one more "
           "untimed round\n");
  } else {
    printf("  perf: not used: %s\n", why);
  }
}

/* perf stat attached to a running process (-p), counting from the moment
 * it acknowledges "enable" until SIGINT. */
typedef struct {
  pid_t pid;
  int ctl;                       /* we write commands */
  int ack;                       /* perf answers "ack" */
} IngestPerf;

/* Moves fd above the standard ones and the 3 and 4 perf is given, so the
 * dup2s of the spawn never land on it. */
static int
ingest_fd_high(int fd)
{
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

/* Attaches `perf stat -p PID` with its events disabled, enables them and
 * waits (10 s at most) for perf to say they are counting, so nothing the
 * monitor does is missed. False, with a message, when perf could not. */
static bool
ingest_perf_attach(Ingest *b, IngestPerf *p, pid_t target, const char *out)
{
  int ctl[2], ack[2];
  if (pipe2(ctl, O_CLOEXEC) != 0 || pipe2(ack, O_CLOEXEC) != 0)
    bench_rpc_die("pipe: %s", strerror(errno));
  for (int i = 0; i < 2; i++) {
    ctl[i] = ingest_fd_high(ctl[i]);
    ack[i] = ingest_fd_high(ack[i]);
  }
  char pid_s[32];
  snprintf(pid_s, sizeof pid_s, "%ld", (long)target);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  /* Its stdout and stderr away: perf says "Events enabled" there. */
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, ctl[0], 3);
  posix_spawn_file_actions_adddup2(&fa, ack[1], 4);
  char *argv[] = {"perf", "stat", "-e", (char *)b->perf_event, "-x,", "-o", (char *)out,
                  "-D", "-1", "--control", "fd:3,4", "-p", pid_s, NULL};
  p->pid = ingest_spawn(argv, &fa);
  posix_spawn_file_actions_destroy(&fa);
  close(ctl[0]);
  close(ack[1]);
  p->ctl = ctl[1];
  p->ack = ack[0];
  if (p->pid < 0) {
    fprintf(stderr, "ingest: cannot run perf: %s\n", strerror(errno));
    close(p->ctl);
    close(p->ack);
    return false;
  }
  char buf[8] = "";
  size_t n = 0;
  bool ok = write(p->ctl, "enable\n", 7) == 7;
  int64_t deadline = bench_rpc_now_ns() + 10000000000LL;
  while (ok && n < 4) {
    struct pollfd pf = {p->ack, POLLIN, 0};
    int left = (int)((deadline - bench_rpc_now_ns()) / 1000000);
    if (left <= 0 || poll(&pf, 1, left) == 0) {
      ok = false;
      break;
    }
    ssize_t r = read(p->ack, buf + n, 4 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      ok = false;
    else
      n += (size_t)r;
  }
  if (!ok || memcmp(buf, "ack\n", 4) != 0) {
    fprintf(stderr, "ingest: perf stat -p %s did not start counting; going on without it\n",
            pid_s);
    kill(p->pid, SIGKILL);
    ingest_reap(p->pid);
    close(p->ctl);
    close(p->ack);
    return false;
  }
  return true;
}

/* SIGINT (perf then writes its counts and exits), up to 10 s for it. */
static void
ingest_perf_detach(IngestPerf *p)
{
  kill(p->pid, SIGINT);
  int status;
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; i++) {
    if (waitpid(p->pid, &status, WNOHANG) == p->pid)
      gone = true;
    else
      bench_rpc_sleep_ms(10);
  }
  if (!gone) {
    fprintf(stderr, "ingest: perf did not stop after SIGINT; killed\n");
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
  }
  ingest_pgid = 0;
  close(p->ctl);
  close(p->ack);
}

/* --- the wire figure ---------------------------------------------------- */

/* The BenchRpc notify hook: counts output notifications and notes the
 * ending one (exit, stopped, timed_out, idle_timeout or overload). */
static void
ingest_notification(BenchRpc *rpc, const msgpack_object *n, void *data)
{
  Ingest *b = data;
  char type[32];
  bench_rpc_str(bench_rpc_get(n, "type"), type, sizeof type);
  if (strcmp(type, "output") == 0) {
    b->outputs++;
  } else if (strcmp(type, "exit") == 0 || strcmp(type, "stopped") == 0 ||
             strcmp(type, "timed_out") == 0 || strcmp(type, "idle_timeout") == 0 ||
             strcmp(type, "overload") == 0) {
    b->ended = true;
    b->ended_ns = rpc->read_ns;
    memcpy(b->ended_type, type, sizeof type);
    bench_rpc_str(bench_rpc_get(n, "monitor_id"), b->ended_id, sizeof b->ended_id);
    const msgpack_object *code = bench_rpc_get(n, "exit_code");
    b->ended_exit_code = code && code->type == MSGPACK_OBJECT_POSITIVE_INTEGER
                           ? (int64_t)code->via.u64 : -1;
  }
}

/* What monitor_status says of one wire monitor. */
typedef struct {
  uint64_t matched, lines, stdout_bytes, suppressed, notifications;
} IngestCounts;

static uint64_t
ingest_counter(const msgpack_object *counters, const char *key)
{
  int64_t v = bench_rpc_uint(bench_rpc_get(counters, key));
  if (v < 0)
    bench_rpc_die("monitor_status has no counters.%s", key);
  return (uint64_t)v;
}

/* The counters of monitor id, from monitor_status. */
static void
ingest_status(Ingest *b, msgpack_sbuffer *sb, msgpack_packer *pk, IngestCounts *c)
{
  uint32_t id = bench_rpc_begin(&b->rpc, sb, pk, "monitor_status", 1);
  bench_rpc_pack_str(pk, "monitor_id");
  bench_rpc_pack_str(pk, b->monitor_id);
  const msgpack_object *st = bench_rpc_call(&b->rpc, id, sb);
  const msgpack_object *counters = bench_rpc_get(st, "counters");
  c->matched = ingest_counter(counters, "matched");
  c->lines = ingest_counter(counters, "lines");
  c->stdout_bytes = ingest_counter(counters, "stdout_bytes");
  c->suppressed = ingest_counter(counters, "suppressed");
  c->notifications = ingest_counter(counters, "notifications");
}

/* One monitor on `cat FILE` through vigild: returns the time from sending
 * monitor_start to receiving the ending notification, and fills c. With
 * perf_out, perf stat is attached to vigild for the run (its counts go to
 * perf_out; *perf_ok says whether it counted). notify_out gets the notify
 * mode the engine resolved. */
static double
ingest_wire_vigil(Ingest *b, const char *perf_out, bool *perf_ok, IngestCounts *c,
                  char *notify_out, size_t notify_cap)
{
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  IngestPerf perf;
  if (perf_out)
    *perf_ok = ingest_perf_attach(b, &perf, b->rpc.vigild, perf_out);

  b->ended = false;
  b->outputs = 0;
  b->monitor_id[0] = '\0';
  size_t nargs = 2 + (b->builtin ? 0 : 1) + (b->notify == kNotifyLines) + (b->policy_name != NULL);
  uint32_t id = bench_rpc_begin(&b->rpc, &sb, &pk, "monitor_start", nargs);
  bench_rpc_pack_str(&pk, "argv");
  msgpack_pack_array(&pk, 2);
  bench_rpc_pack_str(&pk, "cat");
  bench_rpc_pack_str(&pk, b->log_path);
  bench_rpc_pack_str(&pk, "label");
  bench_rpc_pack_str(&pk, "ingest");
  if (!b->builtin) {
    bench_rpc_pack_str(&pk, "patterns");
    msgpack_pack_array(&pk, b->npatterns);
    for (size_t i = 0; i < b->npatterns; i++)
      bench_rpc_pack_str(&pk, crash_patterns[i]);
  }
  if (b->notify == kNotifyLines) {
    bench_rpc_pack_str(&pk, "notify");
    bench_rpc_pack_str(&pk, "lines");
  }
  if (b->policy_name) {
    bench_rpc_pack_str(&pk, "policy");
    bench_rpc_pack_str(&pk, b->policy_name);
  }
  int64_t t0 = bench_rpc_now_ns();
  const msgpack_object *started = bench_rpc_call(&b->rpc, id, &sb);
  bench_rpc_str(bench_rpc_get(started, "monitor_id"), b->monitor_id, sizeof b->monitor_id);
  bench_rpc_str(bench_rpc_get(started, "notify"), notify_out, notify_cap);

  /* Until its ending notification, bounded: a monitor that never ends must
   * not hang the benchmark. */
  int64_t deadline = t0 + (int64_t)b->timeout_s * 1000000000LL;
  while (!b->ended || strcmp(b->ended_id, b->monitor_id) != 0) {
    int left = (int)((deadline - bench_rpc_now_ns()) / 1000000);
    if (left <= 0) {
      ingest_status(b, &sb, &pk, c);
      bench_rpc_die("the monitor on cat %s did not end within %ld s (--timeout): it had read "
                    "%llu of %llu bytes, %llu lines",
                    b->log_path, b->timeout_s, (unsigned long long)c->stdout_bytes,
                    (unsigned long long)b->log_bytes, (unsigned long long)c->lines);
    }
    struct pollfd p = {b->rpc.fd, POLLIN, 0};
    if (poll(&p, 1, left) > 0)
      bench_rpc_socket_read(&b->rpc);
  }
  double t = (double)(b->ended_ns - t0) / 1e9;
  if (perf_out && *perf_ok)
    ingest_perf_detach(&perf);

  ingest_status(b, &sb, &pk, c);
  msgpack_sbuffer_destroy(&sb);
  if (strcmp(b->ended_type, "exit") != 0 || b->ended_exit_code != 0)
    printf("  WARNING: the monitor ended with \"%s\" (exit code %lld), not a clean exit\n",
           b->ended_type, (long long)b->ended_exit_code);
  if (c->stdout_bytes != b->log_bytes)
    printf("  WARNING: the monitor read %llu bytes of the %llu in the file\n",
           (unsigned long long)c->stdout_bytes, (unsigned long long)b->log_bytes);
  return t;
}

/* gen_log BYTES into the file, then one read of it into the page cache. */
static void
ingest_make_log(Ingest *b, const char *gen)
{
  snprintf(b->log_path, sizeof b->log_path, "%s/ingest.log", b->rpc.dir);
  int fd = open(b->log_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    bench_rpc_die("%s: %s", b->log_path, strerror(errno));
  ingest_log_made = 1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  char *argv[] = {(char *)gen, (char *)b->bytes, NULL};
  double t0 = ingest_now();
  pid_t pid = ingest_spawn(argv, &fa);
  posix_spawn_file_actions_destroy(&fa);
  close(fd);
  if (pid < 0)
    bench_rpc_die("cannot run %s: %s", gen, strerror(errno));
  int status = ingest_reap(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    bench_rpc_die("%s %s failed (status %d)", gen, b->bytes, status);
  double t_gen = ingest_now() - t0;

  /* Read once, so every contender finds it in memory. */
  fd = open(b->log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    bench_rpc_die("%s: %s", b->log_path, strerror(errno));
  static char buf[1 << 20];
  uint64_t total = 0;
  ssize_t r;
  t0 = ingest_now();
  while ((r = read(fd, buf, sizeof buf)) > 0)
    total += (uint64_t)r;
  close(fd);
  b->log_bytes = total;
  if (total == 0)
    bench_rpc_die("%s %s wrote nothing", gen, b->bytes);
  printf("  file: %s, %.1f MiB, written by gen_log in %.2f s, read once in %.2f s "
         "(page cache)\n",
         b->log_path, (double)total / (1 << 20), t_gen, ingest_now() - t0);

  /* A file larger than free memory would be read from the disk. */
  FILE *mi = fopen("/proc/meminfo", "r");
  char line[128];
  while (mi && fgets(line, sizeof line, mi))
    if (strncmp(line, "MemAvailable:", 13) == 0) {
      unsigned long long kib = strtoull(line + 13, NULL, 10);
      if (kib * 1024 < total * 2)
        printf("  WARNING: %llu MiB available: the file may not stay in the page cache\n",
               kib / 1024);
    }
  if (mi)
    fclose(mi);
}

/* Which patterns vigil was given, in words. */
static void
ingest_patterns_desc(const Ingest *b, char *out, size_t cap)
{
  if (b->builtin)
    snprintf(out, cap, "not given (the built-in crash set)");
  else if (b->npatterns == INGEST_NPATTERNS)
    snprintf(out, cap, "the five");
  else
    snprintf(out, cap, "the first %zu of the five", b->npatterns);
}

/* Prints the engine's limits that shape a flood, as api_info reports them. */
static void
ingest_print_limits(Ingest *b, msgpack_sbuffer *sb, msgpack_packer *pk)
{
  static const char *const names[] = {
    "monitor.line_max_bytes", "monitor.ring_max_lines", "monitor.ring_max_bytes",
    "monitor.capture_max_bytes", "monitor.flush_interval_ms", "monitor.batch_max_lines",
    "monitor.batch_max_bytes", "rate_limit.max_notifications", "rate_limit.window_ms",
    "rate_limit.overload_ms",
  };
  uint32_t id = bench_rpc_begin(&b->rpc, sb, pk, "api_info", 0);
  const msgpack_object *limits = bench_rpc_get(bench_rpc_call(&b->rpc, id, sb), "limits");
  printf("  engine limits (api_info):");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int64_t v = bench_rpc_uint(bench_rpc_get(limits, names[i]));
    printf("%s %s %lld", i == 0 ? "" : ",", names[i], (long long)v);
  }
  printf("\n");
}

/* The figure's per-byte cost from perf's count: cycles per byte, or with
 * task-clock (milliseconds) nanoseconds of CPU per byte. */
static void
ingest_perf_cell(const Ingest *b, double count, char *out, size_t cap)
{
  if (b->perf_event == NULL)
    out[0] = '\0';
  else if (count < 0)
    snprintf(out, cap, "  %14s", "(not counted)");
  else if (strcmp(b->perf_event, "cycles") == 0)
    snprintf(out, cap, "  %6.2f cycles/B", count / (double)b->log_bytes);
  else
    snprintf(out, cap, "  %6.2f cpu-ns/B", count * 1e6 / (double)b->log_bytes);
}

/* --- the wire figure's targets and its built-in crash set peer ---------- */

/* Whether a wire figure also times vigil on the built-in crash set, in the
 * same rounds as the five patterns: the plain run (the five, notify and
 * policy not given), unless --no-builtin-peer. */
static bool
ingest_builtin_wanted(const Ingest *b)
{
  return b->builtin_peer && !b->builtin && b->npatterns == INGEST_NPATTERNS &&
         b->notify != kNotifyLines && b->policy_name == NULL;
}

/* One vigil run as ingest_wire_vigil's, with the built-in crash set
 * (monitor_start without patterns) whatever --builtin says. */
static double
ingest_builtin_run(Ingest *b, const char *perf_out, bool *perf_ok, IngestCounts *c)
{
  bool builtin = b->builtin;
  char notify[32];
  b->builtin = true;
  double t = ingest_wire_vigil(b, perf_out, perf_ok, c, notify, sizeof notify);
  b->builtin = builtin;
  return t;
}

/* The built-in set's line under the five's, and its ratios to them: time,
 * and CPU per byte where perf counted both (the steadier figure). Target:
 * within 15% of the five patterns. */
static void
ingest_builtin_print(const Ingest *b, double t, double n, const IngestCounts *c, double t_five,
                     double n_five, const char *cell)
{
  double mib = (double)b->log_bytes / (1 << 20);
  printf("  builtin   %7.3f s  %7.0f MiB/s%s  (vigil on the built-in crash set: %llu matching "
         "lines)\n",
         t, mib / t, cell, (unsigned long long)c->matched);
  if (n > 0 && n_five > 0)
    printf("  built-in set / five patterns: CPU %.2fx, time %.2fx  (target: CPU within 15%%, "
           "<= 1.15x: %s)\n",
           n / n_five, t / t_five, n / n_five <= 1.15 ? "met" : "not met");
  else
    printf("  built-in set / five patterns: time %.2fx  (target: within 15%%, <= 1.15x: %s; "
           "no CPU count)\n",
           t / t_five, t / t_five <= 1.15 ? "met" : "not met");
}

/* --- vigild's own CPU beside the perf round's ------------------------------ */

/* The CPU time of pid's own threads so far, in ns (the first field of each
 * /proc/PID/task/TID/schedstat), or -1 when it cannot be read. perf's count
 * for vigil includes the processes vigild starts (the keeper, cat); this is
 * vigild alone, to tell the two apart: in issue 27's sitting vigil's count
 * swung from 0.7 to 3.2 cpu-ns/B between runs while vigild's own stayed at
 * 0.35-0.38. */
static double
ingest_own_cpu_ns(pid_t pid)
{
  return bench_proc_threads_cpu_ns(pid, NULL);
}

/* vigild's own CPU per byte over the perf round, beside perf's count of
 * everything vigil ran (own_ns < 0: not read). */
static void
ingest_own_cpu_print(const Ingest *b, double own_ns)
{
  if (own_ns < 0)
    return;
  printf("  vigild alone      %.2f cpu-ns/B  (its own threads, from /proc; the rest of vigil's "
         "count is the keeper and cat it starts)\n",
         own_ns / (double)b->log_bytes);
}

/* The wire figure's ratios against their targets (issue 27): vigil/pipe
 * >= 0.85 and, where perf counted task-clock, vigil's CPU per byte, the
 * cat it reads included, <= 0.6 ns. vigil/grep is printed as a peer. */
static void
ingest_targets_print(const Ingest *b, double t_pipe, double t_grep, double t_vigil,
                     double n_vigil)
{
  printf("  ratio vigil/grep  %.2fx  (a peer: no target since issue 27)\n", t_grep / t_vigil);
  printf("  ratio vigil/pipe  %.2fx  (target >= 0.85: %s)\n", t_pipe / t_vigil,
         t_pipe / t_vigil >= 0.85 ? "met" : "not met");
  if (b->perf_event != NULL && strcmp(b->perf_event, "task-clock") == 0 && n_vigil > 0) {
    double ns = n_vigil * 1e6 / (double)b->log_bytes;
    printf("  vigil CPU         %.2f cpu-ns/B, its cat included  (target <= 0.60: %s)\n", ns,
           ns <= 0.6 ? "met" : "not met");
  }
}

/* With --nats: what the engine's publisher did (api_info's nats map). */
static void
ingest_print_nats(Ingest *b, msgpack_sbuffer *sb, msgpack_packer *pk)
{
  uint32_t id = bench_rpc_begin(&b->rpc, sb, pk, "api_info", 0);
  const msgpack_object *ni = bench_rpc_get(bench_rpc_call(&b->rpc, id, sb), "nats");
  char state[32];
  bench_rpc_str(bench_rpc_get(ni, "state"), state, sizeof state);
  printf("  nats: published %lld, acknowledged %lld, retries %lld, in_flight %lld (%s)\n",
         (long long)bench_rpc_uint(bench_rpc_get(ni, "published")),
         (long long)bench_rpc_uint(bench_rpc_get(ni, "acknowledged")),
         (long long)bench_rpc_uint(bench_rpc_get(ni, "retries")),
         (long long)bench_rpc_uint(bench_rpc_get(ni, "in_flight")), state);
}

static void
ingest_wire(Ingest *b, const char *gen, const char *vigild)
{
  printf("ingest, wire: vigild --listen on cat FILE, against cat FILE | cat and "
         "cat FILE | grep -cE\n");
  char nats_cfg[256] = "";
  if (b->nats_url)
    snprintf(nats_cfg, sizeof nats_cfg, "  nats = { url = \"%s\", engine = \"ingest\" },\n",
             b->nats_url);
  bench_rpc_engine_start(&b->rpc, vigild,
                         "-- written by bench/ingest\n"
                         "return {\n"
                         "  monitor = { allowed_commands = { \"cat\" } },\n"
                         "  rate_limit = { overload_ms = 3600000 },\n"
                         "%s"
                         "}\n",
                         nats_cfg);
  /* What a signal is to remove (ingest_on_signal): files, then dirs. */
  static const char *const files[] = {"config.lua",        "vigild.log",
                                      "run/vigil.sock",    "perf-probe.txt",
                                      "perf-pipe.txt",     "perf-grep.txt",
                                      "perf-vigil.txt",    "run/state/lock",
                                      "run/state/monitors", "run/state/sessions",
                                      "run/state",
                                      "run"};
  int nrm = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    snprintf(ingest_rm[nrm++], PATH_MAX, "%s/%s", b->rpc.dir, files[i]);
  snprintf(ingest_rm[nrm++], PATH_MAX, "%s", b->rpc.dir);
  _Static_assert(sizeof files / sizeof files[0] < INGEST_RM_MAX, "ingest_rm is too small");
  ingest_nrm = nrm;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  printf("  engine: %s, config %s/config.lua: allowed_commands {\"cat\"}, "
         "rate_limit.overload_ms 3600000 (a long flood is not stopped as overloaded)%s%s%s; "
         "the rest the defaults\n",
         vigild, b->rpc.dir, b->nats_url ? ", nats {url \"" : "",
         b->nats_url ? b->nats_url : "", b->nats_url ? "\", engine \"ingest\"}" : "");
  ingest_print_limits(b, &sb, &pk);
  uint32_t id = bench_rpc_begin(&b->rpc, &sb, &pk, "session_open", 1);
  bench_rpc_pack_str(&pk, "session");
  bench_rpc_pack_str(&pk, "bench-ingest");
  bench_rpc_call(&b->rpc, id, &sb);

  ingest_make_log(b, gen);
  ingest_perf_probe(b);

  char pipe_script[PATH_MAX + 64], grep_script[PATH_MAX + 512];
  snprintf(pipe_script, sizeof pipe_script, "cat '%s' | cat > /dev/null", b->log_path);
  snprintf(grep_script, sizeof grep_script,
           "cat '%s' | LC_ALL=%s grep -cE -e '^Error:' -e '^Fatal:' -e '^panic:' "
           "-e '\\buncaught\\b' -e 'UnhandledPromiseRejection'",
           b->log_path, b->locale);

  double t_pipe = -1, t_grep = -1, t_vigil = -1;
  char grep_out[64] = "", notify[32] = "";
  IngestCounts c = {0};
  bool counts_differ = false;
  uint64_t first_matched = 0;
  bool builtin_peer = ingest_builtin_wanted(b);
  double t_builtin = -1, n_builtin = -1;
  IngestCounts builtin_c = {0};
  for (int r = 0; r < b->runs; r++) {
    char sink[64];
    t_pipe = ingest_min(t_pipe, ingest_shell(b, pipe_script, NULL, sink, sizeof sink));
    t_grep = ingest_min(t_grep, ingest_shell(b, grep_script, NULL, grep_out, sizeof grep_out));
    if (builtin_peer)
      t_builtin = ingest_min(t_builtin, ingest_builtin_run(b, NULL, NULL, &builtin_c));
    t_vigil = ingest_min(t_vigil, ingest_wire_vigil(b, NULL, NULL, &c, notify, sizeof notify));
    if (r == 0)
      first_matched = c.matched;
    else if (c.matched != first_matched)
      counts_differ = true;
  }
  uint64_t outputs = b->outputs;

  /* One more round under perf, untimed: counting must not disturb the
   * times above. */
  double n_pipe = -1, n_grep = -1, n_vigil = -1, own_ns = -1;
  char perf_pipe[PATH_MAX], perf_grep[PATH_MAX], perf_vigil[PATH_MAX];
  snprintf(perf_pipe, sizeof perf_pipe, "%s/perf-pipe.txt", b->rpc.dir);
  snprintf(perf_grep, sizeof perf_grep, "%s/perf-grep.txt", b->rpc.dir);
  snprintf(perf_vigil, sizeof perf_vigil, "%s/perf-vigil.txt", b->rpc.dir);
  if (b->perf_event) {
    char sink[64];
    IngestCounts pc;
    char pn[32];
    bool ok = false;
    ingest_shell(b, pipe_script, perf_pipe, sink, sizeof sink);
    n_pipe = ingest_perf_read(perf_pipe, b->perf_event);
    ingest_shell(b, grep_script, perf_grep, sink, sizeof sink);
    n_grep = ingest_perf_read(perf_grep, b->perf_event);
    double own0 = ingest_own_cpu_ns(b->rpc.vigild);
    ingest_wire_vigil(b, perf_vigil, &ok, &pc, pn, sizeof pn);
    double own1 = ingest_own_cpu_ns(b->rpc.vigild);
    own_ns = own0 >= 0 && own1 >= own0 ? own1 - own0 : -1;
    if (ok)
      n_vigil = ingest_perf_read(perf_vigil, b->perf_event);
    if (builtin_peer && (ingest_builtin_run(b, perf_vigil, &ok, &pc), ok))
      n_builtin = ingest_perf_read(perf_vigil, b->perf_event);
  }

  /* What the monitors were started with. */
  char patterns[64];
  ingest_patterns_desc(b, patterns, sizeof patterns);
  printf("  monitor_start: argv [cat, FILE], patterns %s, notify %s (%s), policy %s\n", patterns,
         b->notify == kNotifyLines ? "\"lines\"" : "not given", notify,
         b->policy_name ? b->policy_name : "not given (envelope)");

  double mib = (double)b->log_bytes / (1 << 20);
  uint64_t grep_n = strtoull(grep_out, NULL, 10);
  char cell[3][64];
  ingest_perf_cell(b, n_pipe, cell[0], sizeof cell[0]);
  ingest_perf_cell(b, n_grep, cell[1], sizeof cell[1]);
  ingest_perf_cell(b, n_vigil, cell[2], sizeof cell[2]);
  printf("  %.1f MiB, %llu lines, best of %d runs, grep locale %s\n", mib,
         (unsigned long long)c.lines, b->runs, b->locale);
  printf("  pipe      %7.3f s  %7.0f MiB/s%s\n", t_pipe, mib / t_pipe, cell[0]);
  printf("  grep -E   %7.3f s  %7.0f MiB/s%s  (%llu matching lines)\n", t_grep, mib / t_grep,
         cell[1], (unsigned long long)grep_n);
  printf("  vigil     %7.3f s  %7.0f MiB/s%s  (%llu matching lines; %llu notifications, "
         "%llu lines withheld by the rate limit)\n",
         t_vigil, mib / t_vigil, cell[2], (unsigned long long)c.matched,
         (unsigned long long)c.notifications, (unsigned long long)c.suppressed);
  if (builtin_peer) {
    char builtin_cell[64];
    ingest_perf_cell(b, n_builtin, builtin_cell, sizeof builtin_cell);
    ingest_builtin_print(b, t_builtin, n_builtin, &builtin_c, t_vigil, n_vigil, builtin_cell);
  }
  ingest_targets_print(b, t_pipe, t_grep, t_vigil, n_vigil);
  ingest_own_cpu_print(b, own_ns);
  if (outputs + 1 != c.notifications)
    printf("  note: %llu output notifications arrived in the last run, counters say %llu "
           "notifications (the ending included)\n",
           (unsigned long long)outputs, (unsigned long long)c.notifications);
  if (counts_differ)
    printf("  WARNING: vigil's matched-line count changed from run to run\n");
  if (b->builtin || b->npatterns != INGEST_NPATTERNS)
    printf("  (grep matched the five patterns, vigil's were %s: the counts are not comparable)\n",
           patterns);
  else if (grep_n != c.matched)
    printf("  WARNING: grep and vigil counted different matching lines\n");

  if (b->nats_url)
    ingest_print_nats(b, &sb, &pk);
  id = bench_rpc_begin(&b->rpc, &sb, &pk, "session_close", 0);
  bench_rpc_call(&b->rpc, id, &sb);
  msgpack_sbuffer_destroy(&sb);
  bench_rpc_disconnect(&b->rpc);
  int ws, status = -1; /* the exit code, 128 + a signal, or -1 after 30 s */
  if (bench_rpc_engine_stop(&b->rpc, &ws))
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  if (!b->keep) {
    unlink(b->log_path);
    ingest_log_made = 0;
    unlink(perf_pipe);
    unlink(perf_grep);
    unlink(perf_vigil);
  }
  ingest_nrm = 0; /* from here the normal cleanup's */
  if (status != 0) {
    printf("  WARNING: vigild exited with status %d after SIGTERM (see %s/vigild.log)\n", status,
           b->rpc.dir);
  } else {
    if (b->keep)
      printf("  (kept in %s: ingest.log%s)\n", b->rpc.dir,
             b->perf_event ? ", perf-pipe.txt, perf-grep.txt, perf-vigil.txt" : "");
    bench_rpc_cleanup(&b->rpc, b->keep);
  }
}

/* --- the in-process figure ---------------------------------------------- */

typedef struct {
  bool finished;
  uint64_t notified_lines;
  Policy *policy;         /* --policy: formats every notification, as the engine does */
  uint64_t policy_calls;
} IngestRun;

static void
ingest_on_notification(void *data, Monitor *m, Notification *n)
{
  IngestRun *run = data;
  if (n->type == kNotifOutput)
    run->notified_lines += n->nlines;
  if (run->policy) {
    /* What the engine does with a notification's policy. */
    VigilError err = VIGIL_ERROR_INIT;
    StrBuf text = STRBUF_INIT;
    deliver_policy_text(run->policy, n, &text, &err);
    run->policy_calls++;
    strbuf_free(&text);
  }
  notification_free(n);
}

static void
ingest_on_finished(void *data, Monitor *m)
{
  ((IngestRun *)data)->finished = true;
}

/* One monitor on the generator; returns the wall time from start to the
 * ending notification. */
static double
ingest_vigil(const Ingest *b, const char *gen, Policy *policy, uint64_t *policy_calls,
             MonitorCounters *counters)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  VigilSettings settings;
  settings_defaults(&settings);
  IngestRun run = {0};
  run.policy = policy;
  MonitorHooks hooks = {ingest_on_notification, NULL, ingest_on_finished, NULL, NULL, NULL};
  char *argv[] = {(char *)gen, (char *)b->bytes, NULL};
  MonitorSpec spec = {
    .argv = argv,
    .label = "ingest",
    .patterns = crash_patterns,
    .npatterns = b->npatterns,
    .builtin_patterns = b->builtin,
    .notify = b->notify,
    .persistent = true,
    /* The signal stage on, as vigild runs every monitor by default: a line
     * that matches nothing must cost it nothing (docs/incidents.md). */
    .incidents = true,
  };
  VigilError err = VIGIL_ERROR_INIT;
  double t0 = ingest_now();
  Monitor *m = monitor_start(&loop, &settings, &spec, &hooks, &run, &err);
  if (m == NULL)
    bench_rpc_die("%s", err.msg);
  while (!run.finished)
    uv_run(&loop, UV_RUN_ONCE);
  double t = ingest_now() - t0;
  monitor_counters(m, counters);
  *policy_calls = run.policy_calls;
  monitor_free(m);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return t;
}

static void
ingest_inproc(Ingest *b, const char *gen)
{
  char cat_script[PATH_MAX + 64], grep_script[PATH_MAX + 512];
  snprintf(cat_script, sizeof cat_script, "'%s' %s | cat > /dev/null", gen, b->bytes);
  snprintf(grep_script, sizeof grep_script,
           "'%s' %s | LC_ALL=%s grep -cE -e '^Error:' -e '^Fatal:' -e '^panic:' "
           "-e '\\buncaught\\b' -e 'UnhandledPromiseRejection'",
           gen, b->bytes, b->locale);

  /* The core library logs as vigild would (its containment at the first
   * start); that line says nothing about ingest. VIGIL_LOG, when set, wins. */
  setenv("VIGIL_LOG", "warn", 0);
  PolicySet *ps = NULL;
  Policy *policy = NULL;
  if (b->policy_name) {
    ps = engine_policies_for(NULL);
    VigilError err = VIGIL_ERROR_INIT;
    policy = policyset_get(ps, b->policy_name, &err);
    if (policy == NULL)
      bench_rpc_die("%s", err.msg);
  }
  uint64_t policy_calls = 0;
  double t_cat = -1, t_grep = -1, t_vigil = -1;
  char grep_out[64] = "";
  MonitorCounters c = {0};
  for (int r = 0; r < b->runs; r++) {
    char sink[64];
    t_cat = ingest_min(t_cat, ingest_shell(b, cat_script, NULL, sink, sizeof sink));
    t_grep = ingest_min(t_grep, ingest_shell(b, grep_script, NULL, grep_out, sizeof grep_out));
    t_vigil = ingest_min(t_vigil, ingest_vigil(b, gen, policy, &policy_calls, &c));
  }
  double mib = (double)(c.stdout_bytes) / (1 << 20);
  uint64_t grep_n = strtoull(grep_out, NULL, 10);
  printf("ingest, in-process (generator-bound): the core library on gen_log N, no daemon, "
         "no wire; every contender reads gen_log's pipe\n");
  printf("  %.1f MiB, %llu lines, best of %d runs, grep locale %s\n", mib,
         (unsigned long long)c.lines, b->runs, b->locale);
  printf("  cat       %7.3f s  %7.0f MiB/s\n", t_cat, mib / t_cat);
  printf("  grep -E   %7.3f s  %7.0f MiB/s  (%llu matching lines)\n", t_grep, mib / t_grep,
         (unsigned long long)grep_n);
  printf("  vigil     %7.3f s  %7.0f MiB/s  (%llu matching lines)\n", t_vigil, mib / t_vigil,
         (unsigned long long)c.matched);
  if (policy)
    printf("  policy %s formatted %llu notifications (Lua runs per notification, never per line)\n",
           b->policy_name, (unsigned long long)policy_calls);
  printf("  ratio vigil/grep  %.2fx  (generator-bound; the targets are the wire figure's)\n",
         t_grep / t_vigil);
  printf("  ratio vigil/cat   %.2fx\n", t_cat / t_vigil);
  if (b->builtin || b->npatterns != INGEST_NPATTERNS) {
    char patterns[64];
    ingest_patterns_desc(b, patterns, sizeof patterns);
    printf("  (grep matched the five patterns, vigil's were %s: the counts are not comparable)\n",
           patterns);
  }
  else if (grep_n != c.matched)
    printf("  WARNING: grep and vigil counted different matching lines\n");
}

/* --- main --------------------------------------------------------------- */

static void
ingest_usage(void)
{
  fprintf(stderr,
          "usage: ingest [--bytes 400m] [--runs 3] [--patterns 0..5] [--builtin] [--notify-lines]\n"
          "              [--policy NAME] [--locale C.UTF-8] [--wire-only | --inproc-only]\n"
          "              [--vigild PATH] [--timeout 120] [--no-state] [--no-perf]\n"
          "              [--no-builtin-peer] [--nats URL] [--keep]\n");
}

int
main(int argc, char **argv)
{
  Ingest *b = &ingest_g;
  b->bytes = "400m";
  b->locale = "C.UTF-8";
  b->runs = 3;
  b->npatterns = INGEST_NPATTERNS;
  b->notify = kNotifyAuto;
  b->use_perf = true;
  b->builtin_peer = true;
  b->timeout_s = 120;
  bool wire = true, inproc = true;
  const char *vigild_arg = NULL;
  bool no_state = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
      b->bytes = argv[++i];
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      b->runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--patterns") == 0 && i + 1 < argc) {
      int k = atoi(argv[++i]);
      b->npatterns = k < 0 ? 0 : k > INGEST_NPATTERNS ? INGEST_NPATTERNS : (size_t)k;
    } else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
      b->policy_name = argv[++i];
    else if (strcmp(argv[i], "--notify-lines") == 0)
      b->notify = kNotifyLines;
    else if (strcmp(argv[i], "--builtin") == 0)
      b->builtin = true;
    else if (strcmp(argv[i], "--locale") == 0 && i + 1 < argc)
      b->locale = argv[++i];
    else if (strcmp(argv[i], "--wire-only") == 0)
      inproc = false;
    else if (strcmp(argv[i], "--inproc-only") == 0)
      wire = false;
    else if (strcmp(argv[i], "--vigild") == 0 && i + 1 < argc)
      vigild_arg = argv[++i];
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
      b->timeout_s = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--no-state") == 0)
      no_state = true;
    else if (strcmp(argv[i], "--no-perf") == 0)
      b->use_perf = false;
    else if (strcmp(argv[i], "--no-builtin-peer") == 0)
      b->builtin_peer = false;
    else if (strcmp(argv[i], "--nats") == 0 && i + 1 < argc)
      b->nats_url = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      b->keep = true;
    else {
      ingest_usage();
      return 2;
    }
  }
  if (!wire && !inproc) {
    fprintf(stderr, "ingest: --wire-only and --inproc-only exclude each other\n");
    return 2;
  }
  if (b->nats_url && (b->nats_url[0] == '\0' || strlen(b->nats_url) > 200 ||
                     strpbrk(b->nats_url, " \t\r\n\"\\") != NULL)) {
    fprintf(stderr, "ingest: --nats needs a URL (nats://host:port) of at most 200 bytes, "
                    "without spaces or quotes, got \"%s\"\n", b->nats_url);
    return 2;
  }
  if (b->runs < 1 || b->runs > 1000 || b->timeout_s < 1 || b->timeout_s > 86400) {
    fprintf(stderr, "ingest: --runs must be 1..1000 and --timeout 1..86400 s\n");
    return 2;
  }
  /* A line at a time, so what was printed survives an interruption. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  bench_rpc_init(&b->rpc, "ingest");
  b->rpc.no_state = no_state;
  b->rpc.notify = ingest_notification;
  b->rpc.notify_data = b;
  b->rpc.on_signal = ingest_on_signal;
  atexit(ingest_at_exit);

  /* gen_log sits next to this program, vigild one level up. */
  char gen[PATH_MAX], vigild[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", gen, sizeof gen - 32);
  if (n <= 0)
    bench_rpc_die("cannot find my own path");
  gen[n] = '\0';
  strcpy(strrchr(gen, '/') + 1, "gen_log");
  if (vigild_arg) {
    snprintf(vigild, sizeof vigild, "%s", vigild_arg);
  } else {
    snprintf(vigild, sizeof vigild, "%s", gen);
    *strrchr(vigild, '/') = '\0';
    char *up = strrchr(vigild, '/');
    strcpy(up ? up + 1 : vigild, "vigild");
  }
  if (access(gen, X_OK) != 0)
    bench_rpc_die("%s: %s", gen, strerror(errno));
  if (wire && access(vigild, X_OK) != 0)
    bench_rpc_die("%s: %s (give --vigild PATH, or --inproc-only)", vigild, strerror(errno));

  if (wire) {
    ingest_wire(b, gen, vigild);
    fflush(stdout);
  }
  if (wire && inproc)
    printf("\n");
  if (inproc)
    ingest_inproc(b, gen);
  return 0;
}
