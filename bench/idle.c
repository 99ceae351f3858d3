/*
 * The idle benchmark: what 100 idle monitors and 20 idle file sources cost
 * the engine while nothing happens, in wake-ups and in memory; then what
 * readiness probes that repeat (health) cost, against the probes made.
 *
 * It starts vigild --listen on a private socket with a config written to a
 * temp dir (the allowlist holds `sleep`, 16 monitors per session, the temp
 * dirs a workspace root), connects, opens the sessions on the one
 * connection (the per-session cap is at most 16) and starts 100 persistent
 * monitors on `sleep 3600`, which print nothing, and --files (20) persistent
 * file sources (docs/sources.md) on files nobody writes: one inotify watch
 * each, no process. Once every monitor is listed as running and every child
 * has become `sleep`, and after a second to settle, it watches the engine
 * for two windows of --seconds (10) each, the connection open and silent:
 *
 *   context switches  the sum of voluntary + involuntary context switches of
 *                     every thread of vigild (/proc/PID/task/N/status),
 *                     before and after; nothing is attached to the engine
 *   syscalls          `strace -f -c -p PID` over the window: every system
 *                     call of every thread, by name (skipped, with a note,
 *                     when strace is not installed)
 *
 * The target (bench/README.md): no periodic wake-ups, 0 in the window. A ptrace
 * attach or detach can itself restart a blocked epoll_wait; strace does not
 * count that, and the context-switch window has no tracer at all.
 *
 * Memory: VmRSS of vigild with the sessions open and no monitor, then with
 * the 100, and the difference per monitor; the keepers' PSS and private
 * memory each, and where their private pages are (bench_keepers_print).
 *
 * Probes: then --probes (10) more monitors on `sleep 3600` with a readiness
 * probe on a TCP port this program listens on (it accepts and closes each
 * connection on a thread of its own) and health_interval_ms of
 * --health-interval (1000). Once every one is ready, a third window counts
 * vigild's context switches against the probes the engine made in it (the
 * monitors' `probes` counts, read before and after): a probe costs a few
 * wake-ups (its timer, the connect, the answer), nothing else may.
 *
 * Then SIGTERM: the engine must stop every process group and exit 0, and no
 * process of any monitor's group may be left.
 *
 *   idle [--monitors 100] [--files 20] [--probes 10] [--health-interval 1000]
 *        [--seconds 10] [--vigild PATH] [--keep]
 *
 * vigild is looked for one level above this program (build/vigild) unless
 * --vigild names it. Not a test: it prints figures, and exits 1 only when it
 * could not measure or the engine did not end cleanly.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msgpack.h>

#include "proc/procfs.h"
#include "support/benchrpc.h"

extern char **environ;

#define IDLE_PER_SESSION 16

/* The run's state: the engine and the connection, the monitors' pids. */
typedef struct {
  BenchRpc rpc;
  bool keep;
  pid_t *pids;
  size_t npids;
} Idle;

/* --- /proc -------------------------------------------------------------- */


/* Context switches (voluntary + involuntary) summed over every thread of
 * pid; *threads gets the number of threads. */
static long long
idle_ctxt_switches(pid_t pid, int *threads)
{
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  if (d == NULL)
    return -1;
  long long sum = 0;
  *threads = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/status", dir, de->d_name);
    long long v = bench_proc_status_field(path, "voluntary_ctxt_switches");
    long long nv = bench_proc_status_field(path, "nonvoluntary_ctxt_switches");
    if (v >= 0 && nv >= 0) {
      sum += v + nv;
      (*threads)++;
    }
  }
  closedir(d);
  return sum;
}

/* Fills comm (cap bytes, its newline cut) from /proc/PID/comm; -1 if the
 * process is gone. */
static int
idle_proc_comm(pid_t pid, char *comm, size_t cap)
{
  ssize_t n = procfs_read_pid(pid, "comm", comm, cap);
  if (n <= 0)
    return -1;
  comm[strcspn(comm, "\n")] = '\0';
  return 0;
}


/* --- strace ------------------------------------------------------------- */

/* Where strace is (on PATH), or NULL. */
static const char *
idle_find_strace(char *out, size_t cap)
{
  const char *path = getenv("PATH");
  if (path == NULL)
    path = "/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    snprintf(out, cap, "%.*s/strace", (int)n, path);
    if (n > 0 && access(out, X_OK) == 0)
      return out;
    path += n + (path[n] == ':');
  }
  return NULL;
}

/* Runs `strace -f -c -p pid` for seconds and prints its table; returns the
 * total number of system calls, or -1 when strace could not run. */
static long
idle_strace(const char *strace, pid_t pid, int seconds, const char *dir)
{
  char out[PATH_MAX], errpath[PATH_MAX], pidstr[16];
  snprintf(out, sizeof out, "%s/strace.txt", dir);
  snprintf(errpath, sizeof errpath, "%s/strace.err", dir);
  snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char *argv[] = {(char *)strace, "-f", "-c", "-o", out, "-p", pidstr, NULL};
  pid_t sp;
  int rc = posix_spawn(&sp, strace, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return -1;
  bench_rpc_sleep_ms(seconds * 1000L);
  kill(sp, SIGINT);
  int status;
  waitpid(sp, &status, 0);
  /* No table is also what a tracer that never attached leaves: its own
   * "Process N attached" line tells the two apart. */
  char msg[512] = "";
  FILE *f = fopen(errpath, "r");
  if (f) {
    size_t n = fread(msg, 1, sizeof msg - 1, f);
    msg[n] = '\0';
    fclose(f);
  }
  unlink(errpath);
  if (strstr(msg, "attached") == NULL) {
    msg[strcspn(msg, "\n")] = '\0';
    printf("      strace did not attach: %s\n", msg);
    unlink(out);
    return -1;
  }
  f = fopen(out, "r");
  if (f == NULL)
    return 0; /* attached, and not one system call to report */
  long total = 0;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    double pct, secs;
    long usecs, calls;
    char *name = strrchr(line, ' ');
    if (sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) != 4 || name == NULL)
      continue;
    name[strcspn(name, "\n")] = '\0';
    if (strcmp(name + 1, "total") == 0)
      total = calls;
    else
      printf("      %-22s %ld\n", name + 1, calls);
  }
  fclose(f);
  unlink(out);
  return total;
}

/* --- the probes' peer ------------------------------------------------- */

/* A TCP listener on 127.0.0.1 whose connections are accepted and closed at
 * once, on a thread of its own, so a probe always finds the port answering
 * and the backlog never fills. */
typedef struct {
  int fd;
  int port;
  pthread_t thread;
} IdlePeer;

static void *
idle_peer_run(void *arg)
{
  IdlePeer *p = arg;
  for (;;) {
    int c = accept(p->fd, NULL, NULL);
    if (c >= 0)
      close(c);
    else if (errno != EINTR && errno != ECONNABORTED)
      return NULL; /* the listener was shut down */
  }
}

static void
idle_peer_start(IdlePeer *p)
{
  p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  if (p->fd < 0 || bind(p->fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(p->fd, 128) != 0 ||
      getsockname(p->fd, (struct sockaddr *)&sa, &len) != 0)
    bench_rpc_die("the probes' listener: %s", strerror(errno));
  p->port = ntohs(sa.sin_port);
  if (pthread_create(&p->thread, NULL, idle_peer_run, p) != 0)
    bench_rpc_die("the probes' listener thread could not start");
}

static void
idle_peer_stop(IdlePeer *p)
{
  shutdown(p->fd, SHUT_RDWR);
  pthread_join(p->thread, NULL);
  close(p->fd);
}

/* --- monitors ------------------------------------------------------------ */

/* What a monitor of the run follows. */
typedef enum { kIdleSleep, kIdleFile, kIdleProbe } IdleKind;

/* Starts monitor number i (its session: i / IDLE_PER_SESSION): `sleep 3600`,
 * a file source on path, or `sleep 3600` with a TCP readiness probe on port
 * and its health repeated every interval_ms. Returns its id in id_out. */
static void
idle_start(Idle *b, msgpack_sbuffer *sb, msgpack_packer *pk, const char *session, IdleKind kind,
           long i, const char *path, int port, long interval_ms, char *id_out, size_t id_cap)
{
  char label[32];
  snprintf(label, sizeof label, "idle-%ld", i + 1);
  uint32_t id = bench_rpc_begin(&b->rpc, sb, pk, "monitor_start", kind == kIdleProbe ? 6 : 4);
  bench_rpc_pack_str(pk, "session");
  bench_rpc_pack_str(pk, session);
  if (kind == kIdleFile) {
    bench_rpc_pack_str(pk, "source");
    msgpack_pack_map(pk, 2);
    bench_rpc_pack_str(pk, "file");
    bench_rpc_pack_str(pk, path);
    bench_rpc_pack_str(pk, "from");
    bench_rpc_pack_str(pk, "end");
  } else {
    bench_rpc_pack_str(pk, "argv");
    msgpack_pack_array(pk, 2);
    bench_rpc_pack_str(pk, "sleep");
    bench_rpc_pack_str(pk, "3600");
  }
  if (kind == kIdleProbe) {
    bench_rpc_pack_str(pk, "ready_tcp");
    msgpack_pack_int(pk, port);
    bench_rpc_pack_str(pk, "health_interval_ms");
    msgpack_pack_int64(pk, interval_ms);
  }
  bench_rpc_pack_str(pk, "label");
  bench_rpc_pack_str(pk, label);
  bench_rpc_pack_str(pk, "persistent");
  msgpack_pack_true(pk);
  const msgpack_object *r = bench_rpc_call(&b->rpc, id, sb);
  bench_rpc_str(bench_rpc_get(r, "monitor_id"), id_out, id_cap);
  if (kind != kIdleFile) {
    int64_t pid = bench_rpc_uint(bench_rpc_get(r, "pid"));
    if (pid <= 0)
      bench_rpc_die("monitor_start gave no pid");
    b->pids[b->npids++] = (pid_t)pid;
  }
}

/* The probes the engine made for a monitor so far (its status's `probes`),
 * or -1 when it is not ready yet. */
static long long
idle_probes_made(Idle *b, msgpack_sbuffer *sb, msgpack_packer *pk, const char *session,
                 const char *monitor_id)
{
  uint32_t id = bench_rpc_begin(&b->rpc, sb, pk, "monitor_status", 2);
  bench_rpc_pack_str(pk, "session");
  bench_rpc_pack_str(pk, session);
  bench_rpc_pack_str(pk, "monitor_id");
  bench_rpc_pack_str(pk, monitor_id);
  const msgpack_object *st = bench_rpc_call(&b->rpc, id, sb);
  const msgpack_object *ready_at = bench_rpc_get(st, "ready_at");
  if (ready_at == NULL || ready_at->type == MSGPACK_OBJECT_NIL)
    return -1;
  return bench_rpc_uint(bench_rpc_get(st, "probes"));
}

/* Context switches of vigild over a window of seconds, printed. */
static long long
idle_window(Idle *b, int seconds, const char *what)
{
  int threads = 0;
  long long cs0 = idle_ctxt_switches(b->rpc.vigild, &threads);
  bench_rpc_sleep_ms(seconds * 1000L);
  long long cs1 = idle_ctxt_switches(b->rpc.vigild, &threads);
  long long wakeups = cs1 - cs0;
  printf("  wake-ups (context switches of vigild's %d thread%s) in %d s%s: %lld  (%.2f/s)\n",
         threads, threads == 1 ? "" : "s", seconds, what, wakeups, (double)wakeups / seconds);
  return wakeups;
}

int
main(int argc, char **argv)
{
  long monitors = 100, files = 20, probes = 10, interval_ms = 1000;
  int seconds = 10;
  const char *vigild_arg = NULL;
  Idle b = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--monitors") == 0 && i + 1 < argc)
      monitors = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc)
      files = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--probes") == 0 && i + 1 < argc)
      probes = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--health-interval") == 0 && i + 1 < argc)
      interval_ms = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--vigild") == 0 && i + 1 < argc)
      vigild_arg = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      b.keep = true;
    else {
      fprintf(stderr, "usage: idle [--monitors 100] [--files 20] [--probes 10] "
                      "[--health-interval 1000] [--seconds 10] [--vigild PATH] [--keep]\n");
      return 2;
    }
  }
  if (monitors < 1 || files < 0 || probes < 0 || monitors + files + probes > 1000 ||
      interval_ms < 100 || interval_ms > 3600000 || seconds < 1 || seconds > 3600) {
    fprintf(stderr, "idle: --monitors must be 1.., --files and --probes 0.., the three at most "
                    "1000 together, --health-interval 100..3600000 (ms) and --seconds 1..3600\n");
    return 2;
  }
  bench_rpc_init(&b.rpc, "idle");

  char vigild[PATH_MAX];
  if (vigild_arg) {
    snprintf(vigild, sizeof vigild, "%s", vigild_arg);
  } else {
    ssize_t n = readlink("/proc/self/exe", vigild, sizeof vigild - 16);
    if (n <= 0)
      bench_rpc_die("cannot find my own path");
    vigild[n] = '\0';
    *strrchr(vigild, '/') = '\0';
    char *up = strrchr(vigild, '/');
    strcpy(up ? up + 1 : vigild, "vigild");
  }
  if (access(vigild, X_OK) != 0)
    bench_rpc_die("%s: %s (give --vigild PATH)", vigild, strerror(errno));

  /* Every directory a workspace root: the sleeps run in this one, the
   * files are in the run's directory under /tmp. */
  bench_rpc_engine_start(&b.rpc, vigild,
                         "-- written by bench/idle\n"
                         "return {\n"
                         "  monitor = { allowed_commands = { \"sleep\" }, allow_persistent = true,\n"
                         "              max_monitors_per_session = %d, kill_grace_ms = 2000,\n"
                         "              workspace_roots = { \"/\" } },\n"
                         "}\n",
                         IDLE_PER_SESSION);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

  /* The sessions, all on this one connection. */
  long total = monitors + files + probes;
  size_t nsessions = (size_t)(total + IDLE_PER_SESSION - 1) / IDLE_PER_SESSION;
  char names[64][32];
  for (size_t s = 0; s < nsessions; s++) {
    snprintf(names[s], sizeof names[s], "bench-idle-%zu", s + 1);
    uint32_t id = bench_rpc_begin(&b.rpc, &sb, &pk, "session_open", 1);
    bench_rpc_pack_str(&pk, "session");
    bench_rpc_pack_str(&pk, names[s]);
    bench_rpc_call(&b.rpc, id, &sb);
  }
  bench_rpc_sleep_ms(500);
  long long rss0 = bench_proc_rss_kib(b.rpc.vigild);

  /* The monitors, then the file sources on files nobody writes. */
  b.pids = calloc((size_t)(monitors + probes), sizeof(pid_t));
  char (*ids)[40] = calloc((size_t)total, sizeof *ids);
  int64_t t0 = bench_rpc_now_ns();
  for (long i = 0; i < monitors; i++)
    idle_start(&b, &sb, &pk, names[i / IDLE_PER_SESSION], kIdleSleep, i, NULL, 0, 0, ids[i],
               sizeof ids[i]);
  double start_ms = (double)(bench_rpc_now_ns() - t0) / 1e6;
  /* In a directory of their own: strace writes its table in the run's,
   * and a file source wakes (and looks no further) for an event of its
   * directory that names another file. */
  char files_dir[PATH_MAX - 64];
  snprintf(files_dir, sizeof files_dir, "%s/files", b.rpc.dir);
  if (files > 0 && mkdir(files_dir, 0700) != 0)
    bench_rpc_die("%s: %s", files_dir, strerror(errno));
  for (long i = monitors; i < monitors + files; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/file-%ld.log", files_dir, i - monitors + 1);
    FILE *f = fopen(path, "w");
    if (f == NULL)
      bench_rpc_die("%s: %s", path, strerror(errno));
    fputs("a line before the start, never read\n", f);
    fclose(f);
    idle_start(&b, &sb, &pk, names[i / IDLE_PER_SESSION], kIdleFile, i, path, 0, 0, ids[i],
               sizeof ids[i]);
  }

  /* Every monitor listed as running, every child exec'd into sleep. */
  long running = 0;
  for (size_t s = 0; s < nsessions; s++) {
    uint32_t id = bench_rpc_begin(&b.rpc, &sb, &pk, "monitor_list", 2);
    bench_rpc_pack_str(&pk, "session");
    bench_rpc_pack_str(&pk, names[s]);
    bench_rpc_pack_str(&pk, "limit");
    msgpack_pack_int(&pk, 1000);
    const msgpack_object *mons = bench_rpc_get(bench_rpc_call(&b.rpc, id, &sb), "monitors");
    for (uint32_t i = 0; mons && mons->type == MSGPACK_OBJECT_ARRAY && i < mons->via.array.size; i++)
      if (bench_rpc_obj_is(bench_rpc_get(&mons->via.array.ptr[i], "state"), "running"))
        running++;
  }
  if (running != monitors + files)
    bench_rpc_die("%ld of %ld monitors are running", running, monitors + files);
  int64_t deadline = bench_rpc_now_ns() + 10000000000LL;
  for (size_t i = 0; i < b.npids;) {
    char comm[64];
    if (idle_proc_comm(b.pids[i], comm, sizeof comm) != 0)
      bench_rpc_die("the child %d of monitor %zu is gone", (int)b.pids[i], i + 1);
    if (strcmp(comm, "sleep") == 0) {
      i++;
      continue;
    }
    if (bench_rpc_now_ns() > deadline)
      bench_rpc_die("the child %d never became sleep (it is %s)", (int)b.pids[i], comm);
    bench_rpc_sleep_ms(10);
  }
  bench_rpc_sleep_ms(1000); /* let the start-up settle */
  long long rss100 = bench_proc_rss_kib(b.rpc.vigild);

  printf("idle: %ld idle monitors (sleep 3600, persistent) and %ld file sources in %zu sessions, "
         "the monitors started in %.0f ms\n",
         monitors, files, nsessions, start_ms);
  fflush(stdout);

  /* Window 1: context switches, nothing attached. */
  long long wakeups = idle_window(&b, seconds, "");

  /* Window 2: every system call, by strace. */
  char strace_buf[PATH_MAX];
  const char *strace = idle_find_strace(strace_buf, sizeof strace_buf);
  long syscalls = -1;
  if (strace == NULL) {
    printf("  syscalls: strace is not installed (apt-get install strace); skipped\n");
  } else {
    printf("  syscalls (strace -f -c) in %d s:\n", seconds);
    fflush(stdout);
    syscalls = idle_strace(strace, b.rpc.vigild, seconds, b.rpc.dir);
    if (syscalls >= 0)
      printf("      total %ld  (%.2f/s)\n", syscalls, (double)syscalls / seconds);
  }
  bool met = wakeups == 0 && syscalls <= 0;
  printf("  target: no periodic wake-ups (0 in %d s): %s\n", seconds, met ? "met" : "NOT MET");
  printf("  VmRSS: %lld KiB with 0 monitors, %lld KiB with %ld: %.1f KiB per idle monitor or "
         "file source\n",
         rss0, rss100, monitors + files, (double)(rss100 - rss0) / (double)(monitors + files));
  BenchKeepers keepers;
  bench_keepers(b.rpc.vigild, &keepers);
  bench_keepers_print(&keepers, "  ");

  /* Window 3: the probes. Every probe monitor ready first. */
  if (probes > 0) {
    IdlePeer peer;
    idle_peer_start(&peer);
    for (long i = monitors + files; i < total; i++)
      idle_start(&b, &sb, &pk, names[i / IDLE_PER_SESSION], kIdleProbe, i, NULL, peer.port,
                 interval_ms, ids[i], sizeof ids[i]);
    deadline = bench_rpc_now_ns() + 30000000000LL;
    long long made0 = 0;
    for (long i = monitors + files; i < total; i++) {
      long long n;
      while ((n = idle_probes_made(&b, &sb, &pk, names[i / IDLE_PER_SESSION], ids[i])) < 0) {
        if (bench_rpc_now_ns() > deadline)
          bench_rpc_die("the probe monitor %s was not ready within 30 s", ids[i]);
        bench_rpc_sleep_ms(50);
      }
    }
    bench_rpc_sleep_ms(1000); /* every probe's first repeat under way */
    for (long i = monitors + files; i < total; i++)
      made0 += idle_probes_made(&b, &sb, &pk, names[i / IDLE_PER_SESSION], ids[i]);
    printf("  %ld monitors with a TCP probe on 127.0.0.1:%d repeated every %ld ms (health), "
           "all ready\n", probes, peer.port, interval_ms);
    fflush(stdout);
    long long probe_wakeups = idle_window(&b, seconds, " with the probes");
    long long made1 = 0;
    for (long i = monitors + files; i < total; i++)
      made1 += idle_probes_made(&b, &sb, &pk, names[i / IDLE_PER_SESSION], ids[i]);
    /* The window's probes are read around it, with two status calls' worth
     * of slack: what the engine counted, not what the interval promises. */
    long long made = made1 - made0;
    printf("  probes made in the window (the engine's count): %lld (%.2f/s; the interval "
           "promises %.2f/s)\n", made, (double)made / seconds,
           (double)probes * 1000.0 / (double)interval_ms);
    printf("  wake-ups per probe: %.2f (a probe's timer, its connect and its answer; the "
           "monitors and file sources above add none)\n",
           made > 0 ? (double)probe_wakeups / (double)made : 0.0);
    idle_peer_stop(&peer);
  }

  /* The ending: SIGTERM with the connection still open. */
  int64_t s0 = bench_rpc_now_ns();
  int status = -1;
  if (!bench_rpc_engine_stop(&b.rpc, &status))
    bench_rpc_die("vigild did not exit within 30 s of SIGTERM");
  double stop_ms = (double)(bench_rpc_now_ns() - s0) / 1e6;
  size_t left = bench_leftovers(b.pids, b.npids);
  bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0 && left == 0;
  if (WIFEXITED(status))
    printf("  SIGTERM: vigild exited %d in %.0f ms; %zu process%s of the monitors left%s\n",
           WEXITSTATUS(status), stop_ms, left, left == 1 ? "" : "es", clean ? "" : "  (WRONG)");
  else
    printf("  SIGTERM: vigild was killed by signal %d; %zu processes of the monitors left "
           "(WRONG)\n", WTERMSIG(status), left);

  msgpack_sbuffer_destroy(&sb);
  bench_rpc_disconnect(&b.rpc);
  free(ids);
  free(b.pids);
  bench_rpc_cleanup(&b.rpc, b.keep || !clean);
  return clean ? 0 : 1;
}
