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
 * The target (DESIGN.md): no periodic wake-ups, 0 in the window. A ptrace
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
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

extern char **environ;

#define IDLE_PER_SESSION 16

/* The run's state: the engine, its temp dir, the connection, the monitors'
 * pids. */
typedef struct {
  char dir[64];
  char sock_path[128];
  pid_t vigild;
  bool keep;
  int fd;
  msgpack_unpacker unp;
  uint32_t next_id;
  uint32_t want_id;
  bool have_resp;
  msgpack_unpacked resp;
  pid_t *pids;
  size_t npids;
} Idle;

static Idle *idle_global; /* for idle_die's clean-up */

static int64_t
idle_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
idle_sleep_ms(long ms)
{
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

/* Prints the message, stops the engine (it stops its monitors) and exits 1,
 * keeping the temp dir for its vigild.log. */
static void idle_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
idle_die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("idle: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  Idle *b = idle_global;
  if (b && b->vigild > 0) {
    kill(b->vigild, SIGTERM);
    waitpid(b->vigild, NULL, 0);
    fprintf(stderr, "idle: the engine's log is %s/vigild.log\n", b->dir);
  }
  exit(1);
}

/* SIGTERM, SIGINT, SIGHUP (run.sh's time bound, a ^C): the engine must not
 * outlive the benchmark, so it gets SIGTERM (it stops its monitors) before
 * we go. Only async-signal-safe calls. */
static void
idle_on_signal(int sig)
{
  if (idle_global != NULL && idle_global->vigild > 0)
    kill(idle_global->vigild, SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* --- msgpack helpers ---------------------------------------------------- */

/* Whether o is a str (or bin) equal to s. */
static bool
idle_obj_is(const msgpack_object *o, const char *s)
{
  size_t n = strlen(s);
  if (o->type == MSGPACK_OBJECT_STR)
    return o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
  if (o->type == MSGPACK_OBJECT_BIN)
    return o->via.bin.size == n && memcmp(o->via.bin.ptr, s, n) == 0;
  return false;
}

/* The value under key in map o, or NULL (also when o is not a map). */
static const msgpack_object *
idle_get(const msgpack_object *o, const char *key)
{
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
    return NULL;
  for (uint32_t i = 0; i < o->via.map.size; i++)
    if (idle_obj_is(&o->via.map.ptr[i].key, key))
      return &o->via.map.ptr[i].val;
  return NULL;
}

/* The unsigned integer o, or -1 when o is missing or not one. */
static int64_t
idle_uint(const msgpack_object *o)
{
  return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)o->via.u64 : -1;
}

static void
idle_pack_str(msgpack_packer *pk, const char *s)
{
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

/* --- the connection ----------------------------------------------------- */

/* Reads what the socket has and keeps the awaited response in b->resp.
 * Notifications are not expected (sleep prints nothing) and are skipped. */
static void
idle_socket_read(Idle *b)
{
  if (msgpack_unpacker_buffer_capacity(&b->unp) < 65536 &&
      !msgpack_unpacker_reserve_buffer(&b->unp, 65536))
    idle_die("out of memory");
  ssize_t r = read(b->fd, msgpack_unpacker_buffer(&b->unp), msgpack_unpacker_buffer_capacity(&b->unp));
  if (r == 0)
    idle_die("vigild closed the connection");
  if (r < 0) {
    if (errno == EINTR)
      return;
    idle_die("read from vigild: %s", strerror(errno));
  }
  msgpack_unpacker_buffer_consumed(&b->unp, (size_t)r);
  msgpack_unpacked msg;
  msgpack_unpacked_init(&msg);
  msgpack_unpack_return rc;
  while ((rc = msgpack_unpacker_next(&b->unp, &msg)) == MSGPACK_UNPACK_SUCCESS) {
    const msgpack_object *o = &msg.data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3)
      idle_die("a message that is not msgpack-rpc");
    const msgpack_object *a = o->via.array.ptr;
    if (a[0].via.u64 == 1 && o->via.array.size == 4 && a[1].via.u64 == b->want_id) {
      b->resp = msg; /* keeps the zone; msg starts afresh */
      b->have_resp = true;
      msgpack_unpacked_init(&msg);
    } else if (a[0].via.u64 == 2 && idle_obj_is(&a[1], "vigil.error")) {
      idle_die("vigild sent a vigil.error notification");
    }
  }
  msgpack_unpacked_destroy(&msg);
  if (rc == MSGPACK_UNPACK_PARSE_ERROR)
    idle_die("vigild sent bytes that are not msgpack");
}

/* Packs the header of a request whose params are one map of nargs entries
 * (the caller packs the pairs); returns its msgid. */
static uint32_t
idle_begin(Idle *b, msgpack_sbuffer *sb, msgpack_packer *pk, const char *method, size_t nargs)
{
  msgpack_sbuffer_clear(sb);
  uint32_t id = ++b->next_id;
  msgpack_pack_array(pk, 4);
  msgpack_pack_int(pk, 0);
  msgpack_pack_uint32(pk, id);
  idle_pack_str(pk, method);
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, nargs);
  return id;
}

/* Sends sb (request id) and waits for its response; returns the result map
 * (valid until the next call). Dies on an error response or after 30 s. */
static const msgpack_object *
idle_call(Idle *b, uint32_t id, msgpack_sbuffer *sb)
{
  if (b->have_resp) {
    msgpack_unpacked_destroy(&b->resp);
    b->have_resp = false;
  }
  b->want_id = id;
  for (size_t off = 0; off < sb->size;) {
    ssize_t w = write(b->fd, sb->data + off, sb->size - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      idle_die("write to vigild: %s", strerror(errno));
    off += (size_t)w;
  }
  int64_t deadline = idle_now_ns() + 30000000000LL;
  while (!b->have_resp) {
    struct pollfd p = {b->fd, POLLIN, 0};
    int left = (int)((deadline - idle_now_ns()) / 1000000);
    if (left <= 0)
      idle_die("no answer from vigild in 30 s");
    if (poll(&p, 1, left) > 0)
      idle_socket_read(b);
  }
  const msgpack_object *a = b->resp.data.via.array.ptr;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    const msgpack_object *m = NULL;
    if (a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size == 2)
      m = &a[2].via.array.ptr[1];
    idle_die("request %u failed: %.*s", id, m && m->type == MSGPACK_OBJECT_STR ? (int)m->via.str.size : 0,
             m && m->type == MSGPACK_OBJECT_STR ? m->via.str.ptr : "");
  }
  return &a[3];
}

/* --- the engine --------------------------------------------------------- */

/* Writes the config, starts vigild --listen in the temp dir and connects
 * (waiting up to 10 s for the socket). */
static void
idle_engine_start(Idle *b, const char *vigild)
{
  snprintf(b->dir, sizeof b->dir, "/tmp/vigil-idle-XXXXXX");
  if (mkdtemp(b->dir) == NULL)
    idle_die("mkdtemp: %s", strerror(errno));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.lua", b->dir);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    idle_die("%s: %s", path, strerror(errno));
  fprintf(f,
          "-- written by bench/idle\n"
          "return {\n"
          "  monitor = { allowed_commands = { \"sleep\" }, allow_persistent = true,\n"
          "              max_monitors_per_session = %d, kill_grace_ms = 2000 },\n"
          "}\n",
          IDLE_PER_SESSION);
  fclose(f);
  snprintf(b->sock_path, sizeof b->sock_path, "%s/run/vigil.sock", b->dir);

  char log[PATH_MAX];
  snprintf(log, sizeof log, "%s/vigild.log", b->dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char *argv[] = {(char *)vigild, "--listen", b->sock_path, "--config", path, NULL};
  int rc = posix_spawn(&b->vigild, vigild, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    idle_die("cannot start %s: %s", vigild, strerror(rc));

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(b->sock_path) >= sizeof addr.sun_path)
    idle_die("socket path too long: %s", b->sock_path);
  memcpy(addr.sun_path, b->sock_path, strlen(b->sock_path) + 1);
  int64_t deadline = idle_now_ns() + 10000000000LL;
  for (;;) {
    int status;
    if (waitpid(b->vigild, &status, WNOHANG) == b->vigild) {
      b->vigild = 0;
      idle_die("vigild exited at start; see %s", log);
    }
    b->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(b->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
      break;
    close(b->fd);
    if (idle_now_ns() > deadline)
      idle_die("vigild never listened on %s", b->sock_path);
    idle_sleep_ms(10); /* waiting for the socket to appear, at start only */
  }
  msgpack_unpacker_init(&b->unp, 65536);
}

/* --- /proc -------------------------------------------------------------- */

/* The value of the "Key:" line of /proc/PID[/task/TID]/status, or -1. */
static long long
idle_status_field(const char *status_path, const char *key)
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

/* VmRSS of pid in KiB. */
static long long
idle_rss_kib(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  return idle_status_field(path, "VmRSS");
}

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
    long long v = idle_status_field(path, "voluntary_ctxt_switches");
    long long nv = idle_status_field(path, "nonvoluntary_ctxt_switches");
    if (v >= 0 && nv >= 0) {
      sum += v + nv;
      (*threads)++;
    }
  }
  closedir(d);
  return sum;
}

/* Fills comm (cap bytes) and *state, *pgrp from /proc/PID/stat; -1 if the
 * process is gone. */
static int
idle_proc_stat(pid_t pid, char *comm, size_t cap, char *state, int *pgrp)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *open = strchr(buf, '('), *close = strrchr(buf, ')');
  if (open == NULL || close == NULL)
    return -1;
  size_t len = (size_t)(close - open - 1) < cap - 1 ? (size_t)(close - open - 1) : cap - 1;
  memcpy(comm, open + 1, len);
  comm[len] = '\0';
  int ppid;
  if (sscanf(close + 2, "%c %d %d", state, &ppid, pgrp) != 3)
    return -1;
  return 0;
}

/* How many live (not zombie) processes are in the process groups of the
 * monitors' children (each child leads its own group). */
static size_t
idle_leftovers(const Idle *b)
{
  DIR *d = opendir("/proc");
  if (d == NULL)
    return 0;
  size_t left = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9')
      continue;
    char comm[64], state;
    int pgrp;
    if (idle_proc_stat((pid_t)atoi(de->d_name), comm, sizeof comm, &state, &pgrp) != 0 ||
        state == 'Z')
      continue;
    for (size_t i = 0; i < b->npids; i++)
      if (b->pids[i] == pgrp) {
        left++;
        break;
      }
  }
  closedir(d);
  return left;
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
  idle_sleep_ms(seconds * 1000L);
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
  signal(SIGPIPE, SIG_IGN);
  idle_global = &b;
  signal(SIGTERM, idle_on_signal);
  signal(SIGINT, idle_on_signal);
  signal(SIGHUP, idle_on_signal);

  char vigild[PATH_MAX];
  if (vigild_arg) {
    snprintf(vigild, sizeof vigild, "%s", vigild_arg);
  } else {
    ssize_t n = readlink("/proc/self/exe", vigild, sizeof vigild - 16);
    if (n <= 0)
      idle_die("cannot find my own path");
    vigild[n] = '\0';
    *strrchr(vigild, '/') = '\0';
    char *up = strrchr(vigild, '/');
    strcpy(up ? up + 1 : vigild, "vigild");
  }
  if (access(vigild, X_OK) != 0)
    idle_die("%s: %s (give --vigild PATH)", vigild, strerror(errno));

  idle_engine_start(&b, vigild);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

  /* The sessions, all on this one connection. */
  size_t nsessions = (size_t)(monitors + IDLE_PER_SESSION - 1) / IDLE_PER_SESSION;
  char names[64][32];
  for (size_t s = 0; s < nsessions; s++) {
    snprintf(names[s], sizeof names[s], "bench-idle-%zu", s + 1);
    uint32_t id = idle_begin(&b, &sb, &pk, "session_open", 1);
    idle_pack_str(&pk, "session");
    idle_pack_str(&pk, names[s]);
    idle_call(&b, id, &sb);
  }
  idle_sleep_ms(500);
  long long rss0 = idle_rss_kib(b.vigild);

  /* The monitors. */
  b.pids = calloc((size_t)monitors, sizeof(pid_t));
  int64_t t0 = idle_now_ns();
  for (long i = 0; i < monitors; i++) {
    char label[32];
    snprintf(label, sizeof label, "idle-%ld", i + 1);
    uint32_t id = idle_begin(&b, &sb, &pk, "monitor_start", 4);
    idle_pack_str(&pk, "session");
    idle_pack_str(&pk, names[i / IDLE_PER_SESSION]);
    idle_pack_str(&pk, "argv");
    msgpack_pack_array(&pk, 2);
    idle_pack_str(&pk, "sleep");
    idle_pack_str(&pk, "3600");
    idle_pack_str(&pk, "label");
    idle_pack_str(&pk, label);
    idle_pack_str(&pk, "persistent");
    msgpack_pack_true(&pk);
    const msgpack_object *r = idle_call(&b, id, &sb);
    int64_t pid = idle_uint(idle_get(r, "pid"));
    if (pid <= 0)
      idle_die("monitor_start gave no pid");
    b.pids[b.npids++] = (pid_t)pid;
  }
  double start_ms = (double)(idle_now_ns() - t0) / 1e6;

  /* Every monitor listed as running, every child exec'd into sleep. */
  long running = 0;
  for (size_t s = 0; s < nsessions; s++) {
    uint32_t id = idle_begin(&b, &sb, &pk, "monitor_list", 2);
    idle_pack_str(&pk, "session");
    idle_pack_str(&pk, names[s]);
    idle_pack_str(&pk, "limit");
    msgpack_pack_int(&pk, 1000);
    const msgpack_object *mons = idle_get(idle_call(&b, id, &sb), "monitors");
    for (uint32_t i = 0; mons && mons->type == MSGPACK_OBJECT_ARRAY && i < mons->via.array.size; i++)
      if (idle_obj_is(idle_get(&mons->via.array.ptr[i], "state"), "running"))
        running++;
  }
  if (running != monitors)
    idle_die("%ld of %ld monitors are running", running, monitors);
  int64_t deadline = idle_now_ns() + 10000000000LL;
  for (size_t i = 0; i < b.npids;) {
    char comm[64], state;
    int pgrp;
    if (idle_proc_stat(b.pids[i], comm, sizeof comm, &state, &pgrp) != 0)
      idle_die("the child %d of monitor %zu is gone", (int)b.pids[i], i + 1);
    if (strcmp(comm, "sleep") == 0) {
      i++;
      continue;
    }
    if (idle_now_ns() > deadline)
      idle_die("the child %d never became sleep (it is %s)", (int)b.pids[i], comm);
    idle_sleep_ms(10);
  }
  idle_sleep_ms(1000); /* let the start-up settle */
  long long rss100 = idle_rss_kib(b.vigild);

  printf("idle: %ld idle monitors (sleep 3600, persistent) in %zu sessions, started in %.0f ms\n",
         monitors, nsessions, start_ms);
  fflush(stdout);

  /* Window 1: context switches, nothing attached. */
  int threads = 0;
  long long cs0 = idle_ctxt_switches(b.vigild, &threads);
  idle_sleep_ms(seconds * 1000L);
  long long cs1 = idle_ctxt_switches(b.vigild, &threads);
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
    syscalls = idle_strace(strace, b.vigild, seconds, b.dir);
    if (syscalls >= 0)
      printf("      total %ld  (%.2f/s)\n", syscalls, (double)syscalls / seconds);
  }
  bool met = wakeups == 0 && syscalls <= 0;
  printf("  target: no periodic wake-ups (0 in %d s): %s\n", seconds, met ? "met" : "NOT MET");
  printf("  VmRSS: %lld KiB with 0 monitors, %lld KiB with %ld: %.1f KiB per idle monitor\n",
         rss0, rss100, monitors, (double)(rss100 - rss0) / (double)monitors);

  /* The ending: SIGTERM with the connection still open. */
  int64_t s0 = idle_now_ns();
  kill(b.vigild, SIGTERM);
  int status = -1;
  for (int i = 0; i < 3000; i++) {
    if (waitpid(b.vigild, &status, WNOHANG) == b.vigild) {
      b.vigild = 0;
      break;
    }
    idle_sleep_ms(10);
  }
  if (b.vigild != 0)
    idle_die("vigild did not exit within 30 s of SIGTERM");
  double stop_ms = (double)(idle_now_ns() - s0) / 1e6;
  size_t left = idle_leftovers(&b);
  bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0 && left == 0;
  if (WIFEXITED(status))
    printf("  SIGTERM: vigild exited %d in %.0f ms; %zu process%s of the monitors left%s\n",
           WEXITSTATUS(status), stop_ms, left, left == 1 ? "" : "es", clean ? "" : "  (WRONG)");
  else
    printf("  SIGTERM: vigild was killed by signal %d; %zu processes of the monitors left "
           "(WRONG)\n", WTERMSIG(status), left);

  msgpack_sbuffer_destroy(&sb);
  if (b.have_resp)
    msgpack_unpacked_destroy(&b.resp);
  msgpack_unpacker_destroy(&b.unp);
  close(b.fd);
  free(b.pids);
  char path[PATH_MAX];
  if (b.keep || !clean) {
    printf("  (kept %s: config.lua, vigild.log)\n", b.dir);
  } else {
    snprintf(path, sizeof path, "%s/config.lua", b.dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/vigild.log", b.dir);
    unlink(path);
    unlink(b.sock_path);
    snprintf(path, sizeof path, "%s/run", b.dir);
    rmdir(path);
    rmdir(b.dir);
  }
  return clean ? 0 : 1;
}
