/*
 * The benchmarks' blocking msgpack-rpc client and engine handling
 * (benchrpc.h). Connecting (with the check of who serves the socket),
 * writing a request and cutting the stream into bounded messages are the
 * C clients' shared ones (clients/c/link: endpoint.h, frame.h).
 *
 * Every engine a program starts is recorded: bench_rpc_init adds its
 * BenchRpc to the engines that bench_rpc_die and the signal handlers stop
 * (most programs have one; bench/fleet has several), and
 * bench_rpc_also_stop adds a process of the benchmark's own (a broker)
 * stopped after them, so a failure or a ^C never leaves a vigild or a
 * nats-server behind. The client is deliberately simple: one request in
 * flight, written whole, then poll and read until the response with its
 * msgid has come, handing any notification read on the way to the hook. The
 * engine runs in a fresh /tmp/vigil-NAME-XXXXXX/ holding config.lua,
 * vigild.log, run/vigil.sock and the state directory beside it, run/state/
 * (its lock and its empty monitors/ and sessions/); bench_rpc_cleanup
 * removes exactly those.
 */
#include "benchrpc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "proc/reaper.h"
#include "link/endpoint.h"

extern char **environ;

/* The largest message a benchmark accepts: the engine caps what it queues
 * for one connection at rpc.max_output_bytes (at most 1 GiB). */
#define BENCH_RPC_MESSAGE_MAX ((size_t)1100 << 20)
/* How much is read at a time. */
#define BENCH_RPC_READ_CHUNK ((size_t)64 << 10)

/* What bench_rpc_die and the signal handlers stop: the engines in the
 * order they were recorded (the first one's name prefixes the messages),
 * then the benchmark's own processes (bench_rpc_also_stop). Written only
 * outside the handlers; a slot is cleared, never moved, so a handler sees
 * each entry whole. */
#define BENCH_RPC_MAX_ENGINES 16
#define BENCH_RPC_MAX_OTHERS 4
static BenchRpc *bench_rpc_engines[BENCH_RPC_MAX_ENGINES];
static volatile sig_atomic_t bench_rpc_others[BENCH_RPC_MAX_OTHERS];

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t
bench_rpc_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleeps ms milliseconds, resuming after signals. */
void
bench_rpc_sleep_ms(long ms)
{
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

/* See benchrpc.h. */
long long
bench_proc_status_field(const char *status_path, const char *key)
{
  FILE *f = fopen(status_path, "r");
  if (f == NULL)
    return -1;
  char line[256];
  size_t n = strlen(key);
  long long v = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      v = strtoll(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* See benchrpc.h. */
long long
bench_proc_rss_kib(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  return bench_proc_status_field(path, "VmRSS");
}

/* Adds one keeper's private pages (smaps at path) to out's kinds: a
 * mapping's header line names its file or [heap], [stack]; anonymous ones
 * name nothing. */
static void
bench_keeper_where(const char *path, BenchKeepers *out)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return;
  char line[512];
  long long *kind = &out->other_kib;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    int name = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name) == 2 && name > 0) {
      const char *n = line + name;
      if (*n == '\n' || *n == '\0')
        kind = &out->anon_kib;
      else if (strncmp(n, "[heap]", 6) == 0)
        kind = &out->heap_kib;
      else if (strncmp(n, "[stack]", 7) == 0)
        kind = &out->stack_kib;
      else if (strstr(n, "vigil-keeper") != NULL)
        kind = &out->image_kib;
      else
        kind = &out->other_kib;
    } else if (strncmp(line, "Private_Clean:", 14) == 0 ||
               strncmp(line, "Private_Dirty:", 14) == 0) {
      *kind += strtoll(line + 14, NULL, 10);
    }
  }
  fclose(f);
}

/* See benchrpc.h. */
void
bench_keepers(pid_t engine, BenchKeepers *out)
{
  memset(out, 0, sizeof *out);
  ReaperTable t = {0};
  reaper_scan(&t);
  for (size_t i = 0; i < t.n; i++) {
    pid_t pid = t.procs[i].pid;
    char path[64], comm[32];
    if (t.procs[i].ppid != engine ||
        procfs_read_pid(pid, "comm", comm, sizeof comm) <= 0 ||
        strcmp(comm, "vigil-keeper\n") != 0)
      continue;
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    out->count++;
    out->pss_kib += bench_proc_status_field(path, "Pss");
    out->private_kib += bench_proc_status_field(path, "Private_Clean") +
                        bench_proc_status_field(path, "Private_Dirty");
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    bench_keeper_where(path, out);
  }
  reaper_table_free(&t);
}

/* See benchrpc.h. */
void
bench_keepers_print(const BenchKeepers *k, const char *indent)
{
  if (k->count == 0) {
    printf("%skeepers: none (no state directory)\n", indent);
    return;
  }
  double n = (double)k->count;
  printf("%skeepers (docs/restart.md): %zu, %.1f KiB of PSS and %.1f KiB private each "
         "(target <= 32 KiB private)\n",
         indent, k->count, (double)k->pss_kib / n, (double)k->private_kib / n);
  printf("%s  private per keeper: %.1f KiB the program's data, %.1f anonymous (.bss), %.1f heap, "
         "%.1f stack, %.1f other mappings\n",
         indent, (double)k->image_kib / n, (double)k->anon_kib / n, (double)k->heap_kib / n,
         (double)k->stack_kib / n, (double)k->other_kib / n);
}

/* The kind of the mapping whose smaps header names n (after the fields;
 * "\n" for an anonymous one). */
static BenchMemKind
bench_memory_kind(const char *n)
{
  size_t len = strcspn(n, "\n");
  const char *base = n + len;
  while (base > n && base[-1] != '/')
    base--;
  size_t blen = (size_t)(n + len - base);
  if (len == 0 || strncmp(n, "[heap]", 6) == 0 || strncmp(n, "[anon", 5) == 0)
    return kBenchMemHeap;
  if (strncmp(n, "[stack]", 7) == 0)
    return kBenchMemStack;
  if (n[0] == '/' && strstr(n, "/state/monitors/") != NULL) {
    if (blen == 6 && strncmp(base, "stdout", 6) == 0)
      return kBenchMemSpoolOut;
    if (blen == 6 && strncmp(base, "stderr", 6) == 0)
      return kBenchMemSpoolErr;
    if (blen == 6 && strncmp(base, "events", 6) == 0)
      return kBenchMemEvents;
    if (blen == 10 && strncmp(base, "checkpoint", 10) == 0)
      return kBenchMemCheckpoint;
  }
  return kBenchMemOther;
}

/* See benchrpc.h. */
void
bench_engine_memory(pid_t engine, BenchMemory *out)
{
  memset(out, 0, sizeof *out);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/smaps", (int)engine);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return;
  out->read = true;
  char line[4096 + 128];
  BenchMemKind kind = kBenchMemOther;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    int name = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name) == 2 && name > 0) {
      kind = bench_memory_kind(line + name);
      out->mappings[kind]++;
    } else if (strncmp(line, "Rss:", 4) == 0) {
      out->rss_kib[kind] += strtoll(line + 4, NULL, 10);
    } else if (strncmp(line, "Private_Dirty:", 14) == 0 ||
               strncmp(line, "Shared_Dirty:", 13) == 0) {
      out->dirty_kib[kind] += strtoll(strchr(line, ':') + 1, NULL, 10);
    }
  }
  fclose(f);
}

/* See benchrpc.h. */
void
bench_engine_memory_print(const BenchMemory *m, const BenchMemory *base, long monitors,
                          const char *indent)
{
  static const char *const names[kBenchMemKinds] = {
    "stdout spools", "stderr spools", "event logs", "checkpoint files", "heap (malloc)",
    "stack", "other (program, libraries)",
  };
  if (!m->read || monitors <= 0) {
    printf("%sengine memory by mapping: not read\n", indent);
    return;
  }
  double n = (double)monitors, rss = 0, dirty = 0;
  printf("%sengine memory per monitor by mapping (smaps; KiB resident, of it dirty; mappings "
         "per monitor):\n", indent);
  for (int k = 0; k < kBenchMemKinds; k++) {
    long long r = m->rss_kib[k] - (base != NULL ? base->rss_kib[k] : 0);
    long long d = m->dirty_kib[k] - (base != NULL ? base->dirty_kib[k] : 0);
    long long c = m->mappings[k] - (base != NULL ? base->mappings[k] : 0);
    rss += (double)r / n;
    dirty += (double)d / n;
    printf("%s  %-28s %6.1f  %6.1f  %5.2f\n", indent, names[k], (double)r / n, (double)d / n,
           (double)c / n);
  }
  printf("%s  %-28s %6.1f  %6.1f\n", indent, "sum", rss, dirty);
}

/* See benchrpc.h. */
void
bench_state_usage(const BenchRpc *rpc, BenchStateUsage *out)
{
  memset(out, 0, sizeof *out);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/run/state/monitors", rpc->dir);
  struct statfs fs;
  out->tmpfs = statfs(path, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
  DIR *d = opendir(path);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *m = sub >= 0 ? fdopendir(sub) : NULL;
    if (m == NULL) {
      if (sub >= 0)
        close(sub);
      continue;
    }
    out->dirs++;
    int fd = dirfd(m);
    struct dirent *fe;
    while ((fe = readdir(m)) != NULL) {
      struct stat st;
      if (fe->d_name[0] == '.' || fstatat(fd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      long long kib = (long long)st.st_blocks / 2;
      if (strcmp(fe->d_name, "stdout") == 0) {
        out->stdout_kib += kib;
      } else if (strcmp(fe->d_name, "stderr") == 0) {
        out->stderr_kib += kib;
        out->stderr_files++;
      } else if (strcmp(fe->d_name, "events") == 0) {
        out->events_kib += kib;
      } else {
        out->other_kib += kib;
      }
    }
    closedir(m);
  }
  closedir(d);
}

/* See benchrpc.h. */
void
bench_state_usage_print(const BenchStateUsage *u, const char *indent)
{
  if (u->dirs == 0) {
    printf("%sstate directory: no monitor directories (no state directory)\n", indent);
    return;
  }
  double n = (double)u->dirs;
  printf("%sstate directory per monitor (blocks of its files, %s): stdout spool %.1f KiB, "
         "stderr spool %.1f (%lld of %ld exist), event log %.1f, other %.1f; sum %.1f KiB%s\n",
         indent, u->tmpfs ? "tmpfs" : "not tmpfs", (double)u->stdout_kib / n,
         (double)u->stderr_kib / n, u->stderr_files, u->dirs, (double)u->events_kib / n,
         (double)u->other_kib / n,
         (double)(u->stdout_kib + u->stderr_kib + u->events_kib + u->other_kib) / n,
         u->tmpfs ? " (memory, the engine's mapped part of it within its RSS above)"
                  : " (page cache while in use; on tmpfs, the default, memory)");
}

/* See benchrpc.h. */
size_t
bench_leftovers(const pid_t *groups, size_t n)
{
  ReaperTable t = {0};
  reaper_scan(&t);
  size_t left = 0;
  for (size_t i = 0; i < t.n; i++) {
    if (t.procs[i].state == 'Z')
      continue;
    for (size_t g = 0; g < n; g++)
      if (groups[g] == t.procs[i].pgrp) {
        left++;
        break;
      }
  }
  reaper_table_free(&t);
  return left;
}

/* See benchrpc.h. */
void
bench_stamp_pipe_start(BenchStampPipe *p, char *const argv[])
{
  extern char **environ;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    bench_rpc_die("pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0)
    bench_rpc_die("cannot start %s: %s", argv[0], strerror(rc));
  p->fd = fds[0];
  p->len = 0;
}

/* See benchrpc.h. */
void
bench_stamp_pipe_read(BenchStampPipe *p, BenchStampFn fn, void *ctx)
{
  ssize_t r = read(p->fd, p->buf + p->len, sizeof p->buf - 1 - p->len);
  int64_t now = bench_rpc_now_ns();
  if (r < 0 && errno == EINTR)
    return;
  if (r <= 0) {
    close(p->fd);
    p->fd = -1;
    return;
  }
  p->len += (size_t)r;
  p->buf[p->len] = '\0';
  char *start = p->buf, *nl;
  while ((nl = memchr(start, '\n', p->len - (size_t)(start - p->buf))) != NULL) {
    *nl = '\0';
    long k;
    long long stamp;
    if (sscanf(start, "Error: %ld %lld", &k, &stamp) == 2)
      fn(ctx, (int64_t)stamp, now);
    start = nl + 1;
  }
  p->len -= (size_t)(start - p->buf);
  memmove(p->buf, start, p->len);
}

/* SIGTERM, SIGINT, SIGHUP (run.sh's time bound, a ^C): the engines must
 * not outlive the benchmark, so each gets SIGTERM (it stops its monitors)
 * before we go, after the benchmark's own hook; then its own processes.
 * Only async-signal-safe calls. */
static void
bench_rpc_on_signal(int sig)
{
  BenchRpc *first = bench_rpc_engines[0];
  if (first != NULL && first->on_signal != NULL)
    first->on_signal();
  for (int i = 0; i < BENCH_RPC_MAX_ENGINES; i++)
    if (bench_rpc_engines[i] != NULL && bench_rpc_engines[i]->vigild > 0)
      kill(bench_rpc_engines[i]->vigild, SIGTERM);
  for (int i = 0; i < BENCH_RPC_MAX_OTHERS; i++)
    if (bench_rpc_others[i] > 0)
      kill((pid_t)bench_rpc_others[i], SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Clears rpc, names it, adds it to the engines to stop, and installs the
 * handlers. A BenchRpc already recorded is not added twice. */
void
bench_rpc_init(BenchRpc *rpc, const char *name)
{
  memset(rpc, 0, sizeof *rpc);
  rpc->name = name;
  rpc->fd = -1;
  signal(SIGPIPE, SIG_IGN);
  int slot = -1;
  for (int i = 0; i < BENCH_RPC_MAX_ENGINES; i++) {
    if (bench_rpc_engines[i] == rpc)
      slot = i;
    else if (bench_rpc_engines[i] == NULL && slot < 0)
      slot = i;
    if (bench_rpc_engines[i] == rpc)
      break;
  }
  if (slot < 0) {
    fprintf(stderr, "%s: more than %d engines in one benchmark\n", name, BENCH_RPC_MAX_ENGINES);
    bench_rpc_die("too many engines");
  }
  bench_rpc_engines[slot] = rpc;
  signal(SIGTERM, bench_rpc_on_signal);
  signal(SIGINT, bench_rpc_on_signal);
  signal(SIGHUP, bench_rpc_on_signal);
}

/* See benchrpc.h. */
void
bench_rpc_also_stop(pid_t pid)
{
  for (int i = 0; i < BENCH_RPC_MAX_OTHERS; i++)
    if (bench_rpc_others[i] == 0) {
      bench_rpc_others[i] = pid;
      return;
    }
  kill(pid, SIGTERM);
  bench_rpc_die("more than %d processes of its own to stop", BENCH_RPC_MAX_OTHERS);
}

/* See benchrpc.h. */
void
bench_rpc_forget(pid_t pid)
{
  for (int i = 0; i < BENCH_RPC_MAX_OTHERS; i++)
    if (bench_rpc_others[i] == pid)
      bench_rpc_others[i] = 0;
}

/* Prints the message, stops the engines (each one's temp dir is kept for
 * its vigild.log) and the benchmark's own processes, and exits 1. */
void
bench_rpc_die(const char *fmt, ...)
{
  BenchRpc *first = bench_rpc_engines[0];
  const char *name = first ? first->name : "bench";
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  for (int i = 0; i < BENCH_RPC_MAX_ENGINES; i++) {
    BenchRpc *rpc = bench_rpc_engines[i];
    if (rpc != NULL && rpc->vigild > 0) {
      kill(rpc->vigild, SIGTERM);
      waitpid(rpc->vigild, NULL, 0);
      rpc->vigild = 0;
      fprintf(stderr, "%s: the engine's log is %s/vigild.log\n", rpc->name, rpc->dir);
    }
  }
  for (int i = 0; i < BENCH_RPC_MAX_OTHERS; i++)
    if (bench_rpc_others[i] > 0) {
      pid_t pid = (pid_t)bench_rpc_others[i];
      bench_rpc_others[i] = 0;
      kill(pid, SIGTERM);
      waitpid(pid, NULL, 0);
    }
  exit(1);
}

/* --- msgpack helpers ---------------------------------------------------- */

/* Whether o is a str (or bin) equal to s. */
bool
bench_rpc_obj_is(const msgpack_object *o, const char *s)
{
  size_t n = strlen(s);
  if (o->type == MSGPACK_OBJECT_STR)
    return o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
  if (o->type == MSGPACK_OBJECT_BIN)
    return o->via.bin.size == n && memcmp(o->via.bin.ptr, s, n) == 0;
  return false;
}

/* The value under key in map o, or NULL. */
const msgpack_object *
bench_rpc_get(const msgpack_object *o, const char *key)
{
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
    return NULL;
  for (uint32_t i = 0; i < o->via.map.size; i++)
    if (bench_rpc_obj_is(&o->via.map.ptr[i].key, key))
      return &o->via.map.ptr[i].val;
  return NULL;
}

/* The unsigned integer o, or -1. */
int64_t
bench_rpc_uint(const msgpack_object *o)
{
  return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)o->via.u64 : -1;
}

/* Copies the str o into out (cap bytes, NUL-terminated); "" if not a str. */
void
bench_rpc_str(const msgpack_object *o, char *out, size_t cap)
{
  out[0] = '\0';
  if (o && o->type == MSGPACK_OBJECT_STR) {
    size_t n = o->via.str.size < cap - 1 ? o->via.str.size : cap - 1;
    memcpy(out, o->via.str.ptr, n);
    out[n] = '\0';
  }
}

/* Packs s as a msgpack str. */
void
bench_rpc_pack_str(msgpack_packer *pk, const char *s)
{
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

/* --- the engine --------------------------------------------------------- */

/* Writes the config, starts vigild --listen in the temp dir and connects
 * (waiting up to 10 s for the socket to appear). */
void
bench_rpc_engine_start(BenchRpc *rpc, const char *vigild, const char *config_fmt, ...)
{
  snprintf(rpc->dir, sizeof rpc->dir, "/tmp/vigil-%s-XXXXXX", rpc->name);
  if (mkdtemp(rpc->dir) == NULL)
    bench_rpc_die("mkdtemp: %s", strerror(errno));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.lua", rpc->dir);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    bench_rpc_die("%s: %s", path, strerror(errno));
  va_list ap;
  va_start(ap, config_fmt);
  vfprintf(f, config_fmt, ap);
  va_end(ap);
  fclose(f);
  snprintf(rpc->sock_path, sizeof rpc->sock_path, "%s/run/vigil.sock", rpc->dir);

  char log[PATH_MAX];
  snprintf(log, sizeof log, "%s/vigild.log", rpc->dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char *argv[] = {(char *)vigild, "--listen", rpc->sock_path, "--config", path,
                  rpc->no_state ? "--no-state" : NULL, NULL};
  int rc = posix_spawn(&rpc->vigild, vigild, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    bench_rpc_die("cannot start %s: %s", vigild, strerror(rc));

  int64_t deadline = bench_rpc_now_ns() + 10000000000LL;
  for (;;) {
    int status;
    if (waitpid(rpc->vigild, &status, WNOHANG) == rpc->vigild) {
      rpc->vigild = 0;
      bench_rpc_die("vigild exited at start; see %s", log);
    }
    /* The engine is ours: endpoint_connect refuses a socket served by
     * another user (someone who could write to the directory), as every
     * vigil client does. */
    char why[512];
    EndpointResult r = endpoint_connect(rpc->sock_path, &rpc->fd, why, sizeof why);
    if (r == kEndpointOk)
      break;
    if (r != kEndpointNoEngine)
      bench_rpc_die("%s", why);
    if (bench_rpc_now_ns() > deadline)
      bench_rpc_die("vigild never listened on %s", rpc->sock_path);
    bench_rpc_sleep_ms(10); /* waiting for the socket to appear, at start only */
  }
  frame_init(&rpc->frame, BENCH_RPC_MESSAGE_MAX);
}

/* SIGTERM, then up to 30 s (3000 polls 10 ms apart) for the exit. */
bool
bench_rpc_engine_stop(BenchRpc *rpc, int *status)
{
  kill(rpc->vigild, SIGTERM);
  for (int i = 0; i < 3000; i++) {
    if (waitpid(rpc->vigild, status, WNOHANG) == rpc->vigild) {
      rpc->vigild = 0;
      return true;
    }
    bench_rpc_sleep_ms(10);
  }
  return false;
}

/* Prints that the temp dir is kept, or removes what the engine left in it. */
void
bench_rpc_cleanup(BenchRpc *rpc, bool keep)
{
  if (keep) {
    printf("  (kept %s: config.lua, vigild.log)\n", rpc->dir);
    return;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.lua", rpc->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/vigild.log", rpc->dir);
  unlink(path);
  unlink(rpc->sock_path);
  snprintf(path, sizeof path, "%s/run/state/monitors", rpc->dir);
  rmdir(path);
  snprintf(path, sizeof path, "%s/run/state/sessions", rpc->dir);
  rmdir(path); /* named sessions' journals, gone once they were closed */
  snprintf(path, sizeof path, "%s/run/state/lock", rpc->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/run/state", rpc->dir);
  rmdir(path);
  snprintf(path, sizeof path, "%s/run", rpc->dir);
  rmdir(path);
  rmdir(rpc->dir);
}

/* --- the connection ----------------------------------------------------- */

/* Reads once and handles every whole message: keeps the awaited response,
 * hands notifications to the hook, dies on vigil.error. */
void
bench_rpc_socket_read(BenchRpc *rpc)
{
  size_t space;
  char *room = frame_reserve(&rpc->frame, BENCH_RPC_READ_CHUNK, &space);
  if (room == NULL)
    bench_rpc_die("out of memory");
  ssize_t r = read(rpc->fd, room, space);
  rpc->read_ns = bench_rpc_now_ns();
  if (r == 0)
    bench_rpc_die("vigild closed the connection");
  if (r < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
      return;
    bench_rpc_die("read from vigild: %s", strerror(errno));
  }
  frame_commit(&rpc->frame, (size_t)r);
  const char *data;
  size_t len;
  char why[300];
  FrameResult fr;
  while ((fr = frame_next(&rpc->frame, &data, &len, why, sizeof why)) == kFrameComplete) {
    msgpack_unpacked msg;
    if (frame_unpack_copy(data, len, &msg) != 0)
      bench_rpc_die("vigild sent bytes that are not msgpack");
    const msgpack_object *o = &msg.data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3)
      bench_rpc_die("a message that is not msgpack-rpc");
    const msgpack_object *a = o->via.array.ptr;
    if (a[0].via.u64 == 1 && o->via.array.size == 4 && a[1].via.u64 == rpc->want_id) {
      rpc->resp = msg; /* keeps the zone */
      rpc->have_resp = true;
      continue;
    }
    if (a[0].via.u64 == 1 && o->via.array.size == 4 && rpc->on_response != NULL)
      rpc->on_response(rpc, (uint32_t)a[1].via.u64, &a[2], &a[3], rpc->notify_data);
    if (a[0].via.u64 == 2 && rpc->notify != NULL &&
        bench_rpc_obj_is(&a[1], "vigil.notification") && a[2].type == MSGPACK_OBJECT_ARRAY &&
        a[2].via.array.size == 1)
      rpc->notify(rpc, &a[2].via.array.ptr[0], rpc->notify_data);
    else if (a[0].via.u64 == 2 && bench_rpc_obj_is(&a[1], "vigil.error"))
      bench_rpc_die("vigild sent a vigil.error notification");
    msgpack_unpacked_destroy(&msg);
  }
  if (fr == kFrameBad)
    bench_rpc_die("vigild sent %s", why);
}

/* Clears sb and packs [0, id, method, [{...nargs}]] up to the pairs. */
uint32_t
bench_rpc_begin(BenchRpc *rpc, msgpack_sbuffer *sb, msgpack_packer *pk, const char *method,
                size_t nargs)
{
  msgpack_sbuffer_clear(sb);
  uint32_t id = ++rpc->next_id;
  msgpack_pack_array(pk, 4);
  msgpack_pack_int(pk, 0);
  msgpack_pack_uint32(pk, id);
  bench_rpc_pack_str(pk, method);
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, nargs);
  return id;
}

/* Writes sb whole, then reads until the response to id has come; returns
 * its result, or NULL with the error's message in err. */
const msgpack_object *
bench_rpc_try_call(BenchRpc *rpc, uint32_t id, msgpack_sbuffer *sb, char *err, size_t cap)
{
  if (rpc->have_resp) {
    msgpack_unpacked_destroy(&rpc->resp);
    rpc->have_resp = false;
  }
  rpc->want_id = id;
  char why[300];
  if (endpoint_write(rpc->fd, sb->data, sb->size, endpoint_now_ms() + 30000, why, sizeof why) !=
      kEndpointOk)
    bench_rpc_die("write to vigild: %s", why);
  int64_t deadline = bench_rpc_now_ns() + 30000000000LL;
  while (!rpc->have_resp) {
    struct pollfd p = {rpc->fd, POLLIN, 0};
    int left = (int)((deadline - bench_rpc_now_ns()) / 1000000);
    if (left <= 0)
      bench_rpc_die("no answer from vigild in 30 s");
    if (poll(&p, 1, left) > 0)
      bench_rpc_socket_read(rpc);
  }
  const msgpack_object *a = rpc->resp.data.via.array.ptr;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    const msgpack_object *m = NULL;
    if (a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size == 2)
      m = &a[2].via.array.ptr[1];
    bench_rpc_str(m, err, cap);
    return NULL;
  }
  return &a[3];
}

/* bench_rpc_try_call, dying on an error response. */
const msgpack_object *
bench_rpc_call(BenchRpc *rpc, uint32_t id, msgpack_sbuffer *sb)
{
  char err[512];
  const msgpack_object *r = bench_rpc_try_call(rpc, id, sb, err, sizeof err);
  if (r == NULL)
    bench_rpc_die("request %u failed: %s", id, err);
  return r;
}

/* Drops the kept response and the framer, closes the socket. */
void
bench_rpc_disconnect(BenchRpc *rpc)
{
  if (rpc->have_resp) {
    msgpack_unpacked_destroy(&rpc->resp);
    rpc->have_resp = false;
  }
  frame_free(&rpc->frame);
  close(rpc->fd);
  rpc->fd = -1;
}

/* --- timed lines and CPU ------------------------------------------------ */

/* See benchrpc.h. */
void
bench_samples_add(BenchSamples *s, int64_t stamp_ns, int64_t now_ns)
{
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4096;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (s->v == NULL)
      bench_rpc_die("out of memory");
  }
  s->v[s->n++] = (BenchSample){stamp_ns, (double)(now_ns - stamp_ns) / 1e6};
}

/* See benchrpc.h. */
void
bench_samples_stamp(void *ctx, int64_t stamp_ns, int64_t now_ns)
{
  bench_samples_add(ctx, stamp_ns, now_ns);
}

/* See benchrpc.h. */
void
bench_samples_free(BenchSamples *s)
{
  free(s->v);
  memset(s, 0, sizeof *s);
}

static int
bench_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* See benchrpc.h. */
BenchLatency
bench_samples_latency(const BenchSamples *s, int64_t from_ns, int64_t to_ns)
{
  BenchLatency l = {0, -1, -1, -1};
  double *v = malloc((s->n + 1) * sizeof *v);
  if (v == NULL)
    bench_rpc_die("out of memory");
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].stamp_ns >= from_ns && s->v[i].stamp_ns < to_ns)
      v[l.n++] = s->v[i].ms;
  if (l.n > 0) {
    qsort(v, l.n, sizeof *v, bench_cmp_double);
    size_t r50 = (50 * l.n + 99) / 100, r99 = (99 * l.n + 99) / 100;
    l.p50 = v[r50 == 0 ? 0 : r50 - 1];
    l.p99 = v[r99 == 0 ? 0 : r99 - 1];
    l.max = v[l.n - 1];
  }
  free(v);
  return l;
}

/* Field (0: run time, 1: run-queue wait) of schedstat summed over pid's
 * live threads, or -1; *main_ns (may be NULL) gets the main thread's. */
static double
bench_proc_threads_schedstat(pid_t pid, int field, double *main_ns)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  if (main_ns != NULL)
    *main_ns = -1;
  DIR *d = opendir(path);
  if (d == NULL)
    return -1;
  double total = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.')
      continue;
    char stat_path[320];
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/task/%s/schedstat", (long)pid, e->d_name);
    FILE *f = fopen(stat_path, "r");
    unsigned long long v[2] = {0, 0};
    if (f != NULL && fscanf(f, "%llu %llu", &v[0], &v[1]) == 2) {
      double ns = (double)v[field];
      total += ns;
      if (main_ns != NULL && strtol(e->d_name, NULL, 10) == (long)pid)
        *main_ns = ns;
    }
    if (f != NULL)
      fclose(f);
  }
  closedir(d);
  return total;
}

/* See benchrpc.h. */
double
bench_proc_threads_cpu_ns(pid_t pid, double *main_ns)
{
  return bench_proc_threads_schedstat(pid, 0, main_ns);
}

/* See benchrpc.h. */
double
bench_proc_threads_wait_ns(pid_t pid)
{
  return bench_proc_threads_schedstat(pid, 1, NULL);
}

/* See benchrpc.h. */
long long
bench_cpu_ticks(pid_t pid)
{
  ReaperProc rp;
  return reaper_read(pid, &rp) ? (long long)rp.self_ticks : -1;
}

/* See benchrpc.h. */
double
bench_machine_idle(unsigned long long prev[2])
{
  unsigned long long v[10] = {0}, total = 0;
  FILE *f = fopen("/proc/stat", "r");
  if (f == NULL)
    return -1;
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 5)
    return -1;
  for (int i = 0; i < 8; i++) /* guest time is already in user */
    total += v[i];
  unsigned long long idle = v[3] + v[4];
  double share = prev[0] > 0 && total > prev[0]
                     ? (double)(idle - prev[1]) / (double)(total - prev[0]) * 100.0
                     : -1;
  prev[0] = total;
  prev[1] = idle;
  return share;
}

/* See benchrpc.h. */
bool
bench_find_programs(const char *name, const char *child_name, const char *vigild_arg,
                    char *child, char *vigild)
{
  ssize_t n = readlink("/proc/self/exe", child, PATH_MAX - 64);
  if (n <= 0) {
    fprintf(stderr, "%s: cannot find my own path\n", name);
    return false;
  }
  child[n] = '\0';
  snprintf(strrchr(child, '/') + 1, 64, "%s", child_name);
  if (vigild_arg) {
    snprintf(vigild, PATH_MAX, "%s", vigild_arg);
  } else {
    snprintf(vigild, PATH_MAX, "%s", child);
    *strrchr(vigild, '/') = '\0';
    char *up = strrchr(vigild, '/');
    strcpy(up ? up + 1 : vigild, "vigild");
  }
  if (access(child, X_OK) != 0 || access(vigild, X_OK) != 0) {
    fprintf(stderr, "%s: %s or %s is missing (give --vigild PATH)\n", name, child, vigild);
    return false;
  }
  return true;
}
