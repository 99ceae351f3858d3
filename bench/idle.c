/*
 * The idle benchmark: what 100 idle monitors cost the engine while nothing
 * happens, in wake-ups and in memory.
 *
 * It starts vigild --listen on a private socket with a config written to a
 * temp dir (the allowlist holds `sleep`, 16 monitors per session), connects,
 * opens 7 sessions on the one connection (the per-session cap is at most 16)
 * and starts 100 persistent monitors on `sleep 3600`, which print nothing.
 * Once every monitor is listed as running and every child has become
 * `sleep`, and after a second to settle, it watches the engine for two
 * windows of --seconds (10) each, the connection open and silent:
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
 * the 100, and the difference per monitor.
 *
 * Then SIGTERM: the engine must stop every process group and exit 0, and no
 * process of any monitor's group may be left.
 *
 *   idle [--monitors 100] [--seconds 10] [--vigild PATH] [--keep]
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

int
main(int argc, char **argv)
{
  long monitors = 100;
  int seconds = 10;
  const char *vigild_arg = NULL;
  Idle b = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--monitors") == 0 && i + 1 < argc)
      monitors = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--vigild") == 0 && i + 1 < argc)
      vigild_arg = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      b.keep = true;
    else {
      fprintf(stderr, "usage: idle [--monitors 100] [--seconds 10] [--vigild PATH] [--keep]\n");
      return 2;
    }
  }
  if (monitors < 1 || monitors > 1000 || seconds < 1 || seconds > 3600) {
    fprintf(stderr, "idle: --monitors must be 1..1000 and --seconds 1..3600\n");
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

  bench_rpc_engine_start(&b.rpc, vigild,
                         "-- written by bench/idle\n"
                         "return {\n"
                         "  monitor = { allowed_commands = { \"sleep\" }, allow_persistent = true,\n"
                         "              max_monitors_per_session = %d, kill_grace_ms = 2000 },\n"
                         "}\n",
                         IDLE_PER_SESSION);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

  /* The sessions, all on this one connection. */
  size_t nsessions = (size_t)(monitors + IDLE_PER_SESSION - 1) / IDLE_PER_SESSION;
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

  /* The monitors. */
  b.pids = calloc((size_t)monitors, sizeof(pid_t));
  int64_t t0 = bench_rpc_now_ns();
  for (long i = 0; i < monitors; i++) {
    char label[32];
    snprintf(label, sizeof label, "idle-%ld", i + 1);
    uint32_t id = bench_rpc_begin(&b.rpc, &sb, &pk, "monitor_start", 4);
    bench_rpc_pack_str(&pk, "session");
    bench_rpc_pack_str(&pk, names[i / IDLE_PER_SESSION]);
    bench_rpc_pack_str(&pk, "argv");
    msgpack_pack_array(&pk, 2);
    bench_rpc_pack_str(&pk, "sleep");
    bench_rpc_pack_str(&pk, "3600");
    bench_rpc_pack_str(&pk, "label");
    bench_rpc_pack_str(&pk, label);
    bench_rpc_pack_str(&pk, "persistent");
    msgpack_pack_true(&pk);
    const msgpack_object *r = bench_rpc_call(&b.rpc, id, &sb);
    int64_t pid = bench_rpc_uint(bench_rpc_get(r, "pid"));
    if (pid <= 0)
      bench_rpc_die("monitor_start gave no pid");
    b.pids[b.npids++] = (pid_t)pid;
  }
  double start_ms = (double)(bench_rpc_now_ns() - t0) / 1e6;

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
  if (running != monitors)
    bench_rpc_die("%ld of %ld monitors are running", running, monitors);
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

  printf("idle: %ld idle monitors (sleep 3600, persistent) in %zu sessions, started in %.0f ms\n",
         monitors, nsessions, start_ms);
  fflush(stdout);

  /* Window 1: context switches, nothing attached. */
  int threads = 0;
  long long cs0 = idle_ctxt_switches(b.rpc.vigild, &threads);
  bench_rpc_sleep_ms(seconds * 1000L);
  long long cs1 = idle_ctxt_switches(b.rpc.vigild, &threads);
  long long wakeups = cs1 - cs0;
  printf("  wake-ups (context switches of vigild's %d thread%s) in %d s: %lld  (%.2f/s)\n",
         threads, threads == 1 ? "" : "s", seconds, wakeups, (double)wakeups / seconds);

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
  printf("  VmRSS: %lld KiB with 0 monitors, %lld KiB with %ld: %.1f KiB per idle monitor\n",
         rss0, rss100, monitors, (double)(rss100 - rss0) / (double)monitors);

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
  free(b.pids);
  bench_rpc_cleanup(&b.rpc, b.keep || !clean);
  return clean ? 0 : 1;
}
