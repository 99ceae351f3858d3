/*
 * The latency benchmark: how long a matching line takes from the child's
 * write(2) to the host receiving its notification, against a bare pipe
 * measured in the same run.
 *
 *   vigil      vigild --listen on a private socket, with a config written to
 *              a temp dir (the allowlist holds latency_child, the rate limit
 *              is raised to 1000 per 10 s so nothing is withheld); this
 *              program connects, opens a session and starts one monitor on
 *              `latency_child LINES INTERVAL` with the pattern "^Error:".
 *              Every line carries the child's CLOCK_MONOTONIC stamp; each
 *              line of each vigil.notification is timed as (time the bytes
 *              came off the socket) - stamp.
 *   bare pipe  the same child with its stdout piped straight into this
 *              program, timed the same way (time read(2) returned - stamp).
 *
 * Both children run at once, the pipe's half an interval out of phase with
 * the monitor's, so neither's wake-ups land on the other's. An interval
 * longer than the flush window (300 ms against 200) keeps one line per
 * batch, so each figure is the window plus what the engine adds: reading,
 * matching, the timer's slack, Lua formatting, packing and the socket.
 *
 * It prints p50, p90, p99 and max for both, what vigil adds over the pipe,
 * and the target from DESIGN.md: p99 <= flush window + 5 ms, the window read
 * from api_info (limits["monitor.flush_interval_ms"]). Not a test: the
 * figures depend on the machine.
 *
 *   latency [--lines 200] [--interval 300] [--vigild PATH] [--keep]
 *
 * vigild and latency_child are looked for next to this program (build/ and
 * build/bench/) unless --vigild names the engine. --keep leaves the temp dir
 * (config and vigild's log) in place and prints its path.
 */
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
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

extern char **environ;

/* One run's state: the engine, the connection, the two children and the
 * samples, in milliseconds. */
typedef struct {
  /* the engine and its temp dir */
  char dir[64];
  char sock_path[128];
  pid_t vigild;
  bool keep;
  /* the connection */
  int fd;
  msgpack_unpacker unp;
  uint32_t next_id;
  uint32_t want_id;              /* the response latency_call waits for */
  bool have_resp;
  msgpack_unpacked resp;
  int64_t read_ns;               /* when the last socket read returned */
  /* the monitor */
  char monitor_id[64];
  bool ended;
  uint64_t notifications, suppressed, merged;
  /* samples */
  double *vigil_ms, *pipe_ms;
  size_t nvigil, npipe, cap;
} Latency;

static Latency *latency_global; /* for latency_die's clean-up */

static int64_t
latency_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints the message, stops the engine (it stops its monitors) and exits 1.
 * The temp dir is kept so its vigild.log can be read. */
static void
latency_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
latency_die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("latency: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  Latency *b = latency_global;
  if (b && b->vigild > 0) {
    kill(b->vigild, SIGTERM);
    waitpid(b->vigild, NULL, 0);
    fprintf(stderr, "latency: the engine's log is %s/vigild.log\n", b->dir);
  }
  exit(1);
}

/* SIGTERM, SIGINT, SIGHUP (run.sh's time bound, a ^C): the engine must not
 * outlive the benchmark, so it gets SIGTERM (it stops its monitors) before
 * we go. Only async-signal-safe calls. */
static void
latency_on_signal(int sig)
{
  if (latency_global != NULL && latency_global->vigild > 0)
    kill(latency_global->vigild, SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* --- msgpack helpers ---------------------------------------------------- */

/* Whether o is a str (or bin) equal to s. */
static bool
latency_obj_is(const msgpack_object *o, const char *s)
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
latency_get(const msgpack_object *o, const char *key)
{
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
    return NULL;
  for (uint32_t i = 0; i < o->via.map.size; i++)
    if (latency_obj_is(&o->via.map.ptr[i].key, key))
      return &o->via.map.ptr[i].val;
  return NULL;
}

/* Copies the str o into out (cap bytes, NUL-terminated); "" if not a str. */
static void
latency_str(const msgpack_object *o, char *out, size_t cap)
{
  out[0] = '\0';
  if (o && o->type == MSGPACK_OBJECT_STR) {
    size_t n = o->via.str.size < cap - 1 ? o->via.str.size : cap - 1;
    memcpy(out, o->via.str.ptr, n);
    out[n] = '\0';
  }
}

static void
latency_pack_str(msgpack_packer *pk, const char *s)
{
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

/* --- the connection ----------------------------------------------------- */

/* Times one line of a notification: the text is "Error: N STAMP". */
static void
latency_vigil_line(Latency *b, const msgpack_object *line)
{
  char text[128];
  latency_str(latency_get(line, "text"), text, sizeof text);
  long n;
  long long stamp;
  if (sscanf(text, "Error: %ld %lld", &n, &stamp) != 2)
    latency_die("unexpected line in a notification: \"%s\"", text);
  if (b->nvigil < b->cap)
    b->vigil_ms[b->nvigil++] = (double)(b->read_ns - stamp) / 1e6;
}

/* Handles a vigil.notification: output lines are timed; the monitor's
 * ending notification ends the run. Other sessions' are none of ours. */
static void
latency_notification(Latency *b, const msgpack_object *n)
{
  char type[32], id[64];
  latency_str(latency_get(n, "type"), type, sizeof type);
  latency_str(latency_get(n, "monitor_id"), id, sizeof id);
  if (strcmp(id, b->monitor_id) != 0)
    return;
  const msgpack_object *sup = latency_get(n, "suppressed");
  if (sup && sup->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    b->suppressed += sup->via.u64;
  if (strcmp(type, "output") == 0) {
    b->notifications++;
    const msgpack_object *lines = latency_get(n, "lines");
    if (lines && lines->type == MSGPACK_OBJECT_ARRAY) {
      if (lines->via.array.size > 1)
        b->merged++;
      for (uint32_t i = 0; i < lines->via.array.size; i++)
        latency_vigil_line(b, &lines->via.array.ptr[i]);
    }
  } else if (strcmp(type, "exit") == 0 || strcmp(type, "stopped") == 0 ||
             strcmp(type, "timed_out") == 0 || strcmp(type, "idle_timeout") == 0 ||
             strcmp(type, "overload") == 0) {
    b->ended = true;
    if (strcmp(type, "exit") != 0)
      fprintf(stderr, "latency: the monitor ended with \"%s\", not \"exit\"\n", type);
  } else {
    fprintf(stderr, "latency: unexpected \"%s\" notification\n", type);
  }
}

/* Reads what the socket has (one read) and handles every whole message in
 * it: the awaited response is kept in b->resp, notifications are handled.
 * Dies when the engine closes the connection. */
static void
latency_socket_read(Latency *b)
{
  if (msgpack_unpacker_buffer_capacity(&b->unp) < 65536 &&
      !msgpack_unpacker_reserve_buffer(&b->unp, 65536))
    latency_die("out of memory");
  ssize_t r = read(b->fd, msgpack_unpacker_buffer(&b->unp), msgpack_unpacker_buffer_capacity(&b->unp));
  b->read_ns = latency_now_ns();
  if (r == 0)
    latency_die("vigild closed the connection");
  if (r < 0) {
    if (errno == EINTR)
      return;
    latency_die("read from vigild: %s", strerror(errno));
  }
  msgpack_unpacker_buffer_consumed(&b->unp, (size_t)r);
  msgpack_unpacked msg;
  msgpack_unpacked_init(&msg);
  msgpack_unpack_return rc;
  while ((rc = msgpack_unpacker_next(&b->unp, &msg)) == MSGPACK_UNPACK_SUCCESS) {
    const msgpack_object *o = &msg.data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3)
      latency_die("a message that is not msgpack-rpc");
    const msgpack_object *a = o->via.array.ptr;
    if (a[0].via.u64 == 1 && o->via.array.size == 4 && a[1].via.u64 == b->want_id) {
      b->resp = msg; /* keeps the zone; msg starts afresh */
      b->have_resp = true;
      msgpack_unpacked_init(&msg);
    } else if (a[0].via.u64 == 2 && latency_obj_is(&a[1], "vigil.notification") &&
               a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size == 1) {
      latency_notification(b, &a[2].via.array.ptr[0]);
    } else if (a[0].via.u64 == 2 && latency_obj_is(&a[1], "vigil.error")) {
      latency_die("vigild sent a vigil.error notification");
    }
  }
  msgpack_unpacked_destroy(&msg);
  if (rc == MSGPACK_UNPACK_PARSE_ERROR)
    latency_die("vigild sent bytes that are not msgpack");
}

/* Sends the request [0, id, method, [params]] packed by the caller: pk has
 * been given the header by latency_begin; params follow it. */
static void
latency_send(Latency *b, msgpack_sbuffer *sb)
{
  size_t off = 0;
  while (off < sb->size) {
    ssize_t w = write(b->fd, sb->data + off, sb->size - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      latency_die("write to vigild: %s", strerror(errno));
    off += (size_t)w;
  }
}

/* Packs the header of a request with one params map of nargs entries;
 * returns its msgid. The caller packs the nargs key/value pairs. */
static uint32_t
latency_begin(Latency *b, msgpack_packer *pk, const char *method, size_t nargs)
{
  uint32_t id = ++b->next_id;
  msgpack_pack_array(pk, 4);
  msgpack_pack_int(pk, 0);
  msgpack_pack_uint32(pk, id);
  latency_pack_str(pk, method);
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, nargs);
  return id;
}

/* Sends sb (a request with msgid id) and waits, handling notifications, for
 * its response; returns its result map (valid until the next call). Dies on
 * an error response or after 30 s. */
static const msgpack_object *
latency_call(Latency *b, uint32_t id, msgpack_sbuffer *sb)
{
  if (b->have_resp) {
    msgpack_unpacked_destroy(&b->resp);
    b->have_resp = false;
  }
  b->want_id = id;
  latency_send(b, sb);
  int64_t deadline = latency_now_ns() + 30000000000LL;
  while (!b->have_resp) {
    struct pollfd p = {b->fd, POLLIN, 0};
    int left = (int)((deadline - latency_now_ns()) / 1000000);
    if (left <= 0)
      latency_die("no answer from vigild in 30 s");
    if (poll(&p, 1, left) > 0)
      latency_socket_read(b);
  }
  const msgpack_object *a = b->resp.data.via.array.ptr;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    char msg[512] = "";
    if (a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size == 2)
      latency_str(&a[2].via.array.ptr[1], msg, sizeof msg);
    latency_die("request %u failed: %s", id, msg);
  }
  return &a[3];
}

/* --- the engine --------------------------------------------------------- */

/* Writes the benchmark's config, starts vigild --listen in the temp dir and
 * connects to it (waiting up to 10 s for the socket to appear). */
static void
latency_engine_start(Latency *b, const char *vigild, const char *child)
{
  snprintf(b->dir, sizeof b->dir, "/tmp/vigil-latency-XXXXXX");
  if (mkdtemp(b->dir) == NULL)
    latency_die("mkdtemp: %s", strerror(errno));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.lua", b->dir);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    latency_die("%s: %s", path, strerror(errno));
  fprintf(f,
          "-- written by bench/latency\n"
          "return {\n"
          "  monitor = { allowed_commands = { \"%s\" }, max_monitors_per_session = 16 },\n"
          "  rate_limit = { max_notifications = 1000, window_ms = 10000 },\n"
          "}\n",
          child);
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
    latency_die("cannot start %s: %s", vigild, strerror(rc));

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(b->sock_path) >= sizeof addr.sun_path)
    latency_die("socket path too long: %s", b->sock_path);
  memcpy(addr.sun_path, b->sock_path, strlen(b->sock_path) + 1);
  int64_t deadline = latency_now_ns() + 10000000000LL;
  for (;;) {
    int status;
    if (waitpid(b->vigild, &status, WNOHANG) == b->vigild) {
      b->vigild = 0;
      latency_die("vigild exited at start; see %s", log);
    }
    b->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(b->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
      break;
    close(b->fd);
    if (latency_now_ns() > deadline)
      latency_die("vigild never listened on %s", b->sock_path);
    usleep(10000); /* waiting for the socket to appear, at start only */
  }
  msgpack_unpacker_init(&b->unp, 65536);
}

/* SIGTERM to the engine; returns its exit status (or -1 after 30 s). */
static int
latency_engine_stop(Latency *b)
{
  kill(b->vigild, SIGTERM);
  for (int i = 0; i < 3000; i++) {
    int status;
    if (waitpid(b->vigild, &status, WNOHANG) == b->vigild) {
      b->vigild = 0;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    usleep(10000);
  }
  return -1;
}

/* Removes the temp dir (unless --keep). */
static void
latency_cleanup(Latency *b)
{
  if (b->keep) {
    printf("  (kept %s: config.lua, vigild.log)\n", b->dir);
    return;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.lua", b->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/vigild.log", b->dir);
  unlink(path);
  unlink(b->sock_path);
  snprintf(path, sizeof path, "%s/run", b->dir);
  rmdir(path);
  rmdir(b->dir);
}

/* --- the bare pipe ------------------------------------------------------ */

/* The peer: the child with stdout on a pipe to us. */
typedef struct {
  pid_t pid;
  int fd;                        /* -1 at EOF */
  char buf[4096];
  size_t len;
} LatencyPipe;

static void
latency_pipe_start(LatencyPipe *p, const char *child, const char *lines, const char *interval)
{
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    latency_die("pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  char *argv[] = {(char *)child, (char *)lines, (char *)interval, NULL};
  int rc = posix_spawn(&p->pid, child, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0)
    latency_die("cannot start %s: %s", child, strerror(rc));
  p->fd = fds[0];
  p->len = 0;
}

/* Reads what the pipe has and times every whole line in it. */
static void
latency_pipe_read(Latency *b, LatencyPipe *p)
{
  ssize_t r = read(p->fd, p->buf + p->len, sizeof p->buf - 1 - p->len);
  int64_t now = latency_now_ns();
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
    long n;
    long long stamp;
    if (sscanf(start, "Error: %ld %lld", &n, &stamp) == 2 && b->npipe < b->cap)
      b->pipe_ms[b->npipe++] = (double)(now - stamp) / 1e6;
    start = nl + 1;
  }
  p->len -= (size_t)(start - p->buf);
  memmove(p->buf, start, p->len);
}

/* --- figures ------------------------------------------------------------ */

static int
latency_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The p-th percentile (nearest rank: the smallest value with at least p%
 * of the samples at or below it) of the sorted v[0..n), n > 0. */
static double
latency_pct(const double *v, size_t n, unsigned p)
{
  size_t rank = (p * n + 99) / 100;
  return v[rank == 0 ? 0 : rank - 1];
}

static void
latency_row(const char *name, const double *v, size_t n)
{
  printf("  %-10s %9.3f %9.3f %9.3f %9.3f   (%zu lines)\n", name, latency_pct(v, n, 50),
         latency_pct(v, n, 90), latency_pct(v, n, 99), v[n - 1], n);
}

int
main(int argc, char **argv)
{
  long lines = 200, interval = 300;
  const char *vigild_arg = NULL;
  Latency b = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc)
      lines = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc)
      interval = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--vigild") == 0 && i + 1 < argc)
      vigild_arg = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      b.keep = true;
    else {
      fprintf(stderr, "usage: latency [--lines 200] [--interval 300] [--vigild PATH] [--keep]\n");
      return 2;
    }
  }
  if (lines < 1 || lines > 1000000 || interval < 1 || interval > 60000) {
    fprintf(stderr, "latency: --lines must be 1..1000000 and --interval 1..60000 ms\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  latency_global = &b;
  signal(SIGTERM, latency_on_signal);
  signal(SIGINT, latency_on_signal);
  signal(SIGHUP, latency_on_signal);

  /* latency_child sits next to this program, vigild one level up. */
  char child[PATH_MAX], vigild[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", child, sizeof child - 32);
  if (n <= 0)
    latency_die("cannot find my own path");
  child[n] = '\0';
  strcpy(strrchr(child, '/') + 1, "latency_child");
  if (vigild_arg) {
    snprintf(vigild, sizeof vigild, "%s", vigild_arg);
  } else {
    snprintf(vigild, sizeof vigild, "%s", child);
    *strrchr(vigild, '/') = '\0';
    char *up = strrchr(vigild, '/');
    strcpy(up ? up + 1 : vigild, "vigild");
  }
  if (access(child, X_OK) != 0)
    latency_die("%s: %s", child, strerror(errno));
  if (access(vigild, X_OK) != 0)
    latency_die("%s: %s (give --vigild PATH)", vigild, strerror(errno));

  b.cap = (size_t)lines;
  b.vigil_ms = calloc(b.cap, sizeof(double));
  b.pipe_ms = calloc(b.cap, sizeof(double));
  latency_engine_start(&b, vigild, child);

  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

  /* The flush window, as the engine has it. */
  uint32_t id = latency_begin(&b, &pk, "api_info", 0);
  const msgpack_object *info = latency_call(&b, id, &sb);
  const msgpack_object *fw = latency_get(latency_get(info, "limits"), "monitor.flush_interval_ms");
  if (fw == NULL || fw->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    latency_die("api_info has no limits[\"monitor.flush_interval_ms\"]");
  long flush_ms = (long)fw->via.u64;
  if (interval <= flush_ms)
    fprintf(stderr, "latency: note: an interval of %ld ms is not above the %ld ms flush window, "
            "so lines will share batches\n", interval, flush_ms);

  msgpack_sbuffer_clear(&sb);
  id = latency_begin(&b, &pk, "session_open", 1);
  latency_pack_str(&pk, "session");
  latency_pack_str(&pk, "bench-latency");
  latency_call(&b, id, &sb);

  char lines_s[32], interval_s[32];
  snprintf(lines_s, sizeof lines_s, "%ld", lines);
  snprintf(interval_s, sizeof interval_s, "%ld", interval);
  msgpack_sbuffer_clear(&sb);
  id = latency_begin(&b, &pk, "monitor_start", 4);
  latency_pack_str(&pk, "argv");
  msgpack_pack_array(&pk, 3);
  latency_pack_str(&pk, child);
  latency_pack_str(&pk, lines_s);
  latency_pack_str(&pk, interval_s);
  latency_pack_str(&pk, "match_pattern");
  latency_pack_str(&pk, "^Error:");
  latency_pack_str(&pk, "label");
  latency_pack_str(&pk, "latency");
  latency_pack_str(&pk, "persistent");
  msgpack_pack_true(&pk);
  const msgpack_object *started = latency_call(&b, id, &sb);
  latency_str(latency_get(started, "monitor_id"), b.monitor_id, sizeof b.monitor_id);

  printf("latency: %ld lines, one every %ld ms; flush window %ld ms (api_info)\n", lines,
         interval, flush_ms);
  fflush(stdout);

  /* The peer starts half an interval later, out of the monitor's phase. */
  struct timespec half = {interval / 2 / 1000, (interval / 2 % 1000) * 1000000L};
  nanosleep(&half, NULL);
  LatencyPipe peer;
  latency_pipe_start(&peer, child, lines_s, interval_s);

  int64_t deadline = latency_now_ns() + (int64_t)(lines + 2) * interval * 1000000LL +
                     30000000000LL;
  while (!b.ended || peer.fd >= 0) {
    struct pollfd p[2] = {{b.fd, POLLIN, 0}, {peer.fd, POLLIN, 0}};
    int left = (int)((deadline - latency_now_ns()) / 1000000);
    if (left <= 0)
      latency_die("timed out: %zu of %ld vigil lines and %zu of %ld pipe lines came", b.nvigil,
                  lines, b.npipe, lines);
    if (poll(p, 2, left) <= 0)
      continue;
    if (p[0].revents)
      latency_socket_read(&b);
    if (peer.fd >= 0 && p[1].revents)
      latency_pipe_read(&b, &peer);
  }
  waitpid(peer.pid, NULL, 0);

  msgpack_sbuffer_clear(&sb);
  id = latency_begin(&b, &pk, "session_close", 0);
  latency_call(&b, id, &sb);
  msgpack_sbuffer_destroy(&sb);
  if (b.have_resp)
    msgpack_unpacked_destroy(&b.resp);
  close(b.fd);
  msgpack_unpacker_destroy(&b.unp);
  int status = latency_engine_stop(&b);

  if (b.nvigil == 0 || b.npipe == 0)
    latency_die("no samples (vigil %zu, pipe %zu)", b.nvigil, b.npipe);
  qsort(b.vigil_ms, b.nvigil, sizeof(double), latency_cmp);
  qsort(b.pipe_ms, b.npipe, sizeof(double), latency_cmp);
  printf("  %-10s %9s %9s %9s %9s   (ms, write -> received)\n", "", "p50", "p90", "p99", "max");
  latency_row("bare pipe", b.pipe_ms, b.npipe);
  latency_row("vigil", b.vigil_ms, b.nvigil);
  double p50 = latency_pct(b.vigil_ms, b.nvigil, 50), p99 = latency_pct(b.vigil_ms, b.nvigil, 99);
  double pp50 = latency_pct(b.pipe_ms, b.npipe, 50), pp99 = latency_pct(b.pipe_ms, b.npipe, 99);
  printf("  added by vigil over the pipe: p50 %.3f ms, p99 %.3f ms; "
         "beyond the flush window: p50 %.3f ms, p99 %.3f ms\n",
         p50 - pp50, p99 - pp99, p50 - (double)flush_ms, p99 - (double)flush_ms);
  bool met = p99 <= (double)flush_ms + 5.0;
  printf("  target: p99 <= flush window + 5 ms = %ld ms: %.3f ms, %s\n", flush_ms + 5, p99,
         met ? "met" : "NOT MET");
  printf("  %llu output notifications, %llu with more than one line, %llu lines suppressed\n",
         (unsigned long long)b.notifications, (unsigned long long)b.merged,
         (unsigned long long)b.suppressed);
  if ((long)b.nvigil != lines || (long)b.npipe != lines)
    printf("  WARNING: expected %ld lines from each, got vigil %zu, pipe %zu\n", lines, b.nvigil,
           b.npipe);
  if (status != 0)
    printf("  WARNING: vigild exited with status %d after SIGTERM (see %s/vigild.log)\n", status,
           b.dir);
  else
    latency_cleanup(&b);
  free(b.vigil_ms);
  free(b.pipe_ms);
  return 0;
}
