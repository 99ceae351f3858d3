/*
 * Codex CLI's wake: the watcher that hands notifications to Codex's daemon
 * (see hook_codex.h).
 */
#include "cli/hook_codex.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_obj.h"
#include "cli/hook_input.h"
#include "cli/hook_take.h"
#include "cli/hook_waiter.h"
#include "rpc/server.h"

/* A pidfd of pid (readable once it has ended), or -1 where the kernel has
 * none (before Linux 5.3): then the watcher's bounded life is the bound. */
static int
hook_codex_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

/* Reads /proc/PID/NAME into buf (cap bytes, NUL added); the bytes read,
 * or 0 when none could be. */
static size_t
hook_codex_proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  return (size_t)n;
}

/* The parent of pid from /proc/PID/stat, or 0. */
static pid_t
hook_codex_parent(pid_t pid)
{
  char buf[1024];
  if (hook_codex_proc_read(pid, "stat", buf, sizeof buf) == 0)
    return 0;
  /* The command name may hold anything: the fields after its last ')'. */
  char *p = strrchr(buf, ')');
  int ppid = 0;
  char state;
  if (p == NULL || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
    return 0;
  return (pid_t)ppid;
}

/* Whether pid's command line is Codex's daemon: `... app-server ...
 * --managed-daemon`. */
static int
hook_codex_is_daemon(pid_t pid)
{
  char buf[8192];
  size_t n = hook_codex_proc_read(pid, "cmdline", buf, sizeof buf);
  if (n == 0)
    return 0;
  int app_server = 0, managed = 0;
  for (char *arg = buf; arg < buf + n; arg += strlen(arg) + 1) {
    if (arg != buf && strcmp(arg, "app-server") == 0 && !app_server)
      app_server = 1;
    if (strcmp(arg, "--managed-daemon") == 0)
      managed = 1;
  }
  return app_server && managed;
}

int
hook_codex_daemon(pid_t *pid, char *exe, size_t cap)
{
  pid_t p = getppid();
  for (int i = 0; i < HOOK_CODEX_ANCESTORS && p > 1; i++, p = hook_codex_parent(p)) {
    if (!hook_codex_is_daemon(p))
      continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)p);
    ssize_t n = readlink(path, exe, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1)
      return 0;
    exe[n] = '\0';
    *pid = p;
    return 1;
  }
  return 0;
}

/* Runs `exe queue --thread=THREAD --message=TEXT --resume` (stdio on
 * /dev/null) and waits for it, at most HOOK_CODEX_QUEUE_WAIT_MS. Returns
 * 0 when it exited 0. */
static int
hook_codex_queue(const char *exe, const char *thread, const char *text)
{
  /* As --OPTION=VALUE: a value that starts with a dash (a thread id is any
   * [A-Za-z0-9._:-]) is then never read as an option of its own. */
  StrBuf thread_arg = STRBUF_INIT, message_arg = STRBUF_INIT;
  strbuf_printf(&thread_arg, "--thread=%s", thread);
  strbuf_printf(&message_arg, "--message=%s", text);
  pid_t pid = fork();
  if (pid < 0) {
    strbuf_free(&thread_arg);
    strbuf_free(&message_arg);
    return -1;
  }
  if (pid == 0) {
    char *argv[] = {(char *)exe, "queue", thread_arg.data, message_arg.data, "--resume", NULL};
    execv(exe, argv);
    _exit(127);
  }
  strbuf_free(&thread_arg);
  strbuf_free(&message_arg);
  int status = 0;
  int pfd = hook_codex_pidfd(pid);
  if (pfd >= 0) {
    struct pollfd p = {pfd, POLLIN, 0};
    int64_t deadline = cli_now_ms() + HOOK_CODEX_QUEUE_WAIT_MS;
    int ready = 0;
    while (ready == 0 && cli_now_ms() < deadline) {
      ready = poll(&p, 1, (int)(deadline - cli_now_ms()));
      if (ready < 0 && errno == EINTR)
        ready = 0;
    }
    close(pfd);
    if (ready <= 0)
      kill(pid, SIGKILL);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Whether c's current session is busy (session_list's entry for it). A
 * failure reads as busy: nothing is taken then. */
static int
hook_codex_busy(CliClient *c)
{
  CliReply reply;
  if (cli_client_call(c, "session_list", NULL, CLI_CALL_TIMEOUT_MS, &reply) != 0)
    return 1;
  int busy = 1;
  const msgpack_object *list = cli_obj_get(reply.result, "sessions");
  for (uint32_t i = 0; list && list->type == MSGPACK_OBJECT_ARRAY && i < list->via.array.size;
       i++) {
    const msgpack_object *s = &list->via.array.ptr[i];
    if (cli_obj_get_is(s, "session", c->session))
      busy = cli_obj_get_is(s, "state", "busy");
  }
  cli_reply_free(&reply);
  return busy;
}

static void
hook_codex_on_notify(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  (void)params;
  if (len == strlen("vigil.notification") && memcmp(method, "vigil.notification", len) == 0)
    *(int *)ctx = 1;
}

/* The watcher's life (in its own process): see hook_codex.h. */
static void
hook_codex_watcher(CliClient *c, const char *thread, pid_t daemon, const char *exe)
{
  char key[sizeof "codex-watch-" + HOOK_ID_MAX];
  snprintf(key, sizeof key, "codex-watch-%s", thread);
  char *dir = rpc_server_dir_of(c->socket_path);
  HookWaiter lock;
  int held = hook_waiter_try(&lock, dir, key);
  free(dir);
  if (held != 0)
    return; /* one watches the thread already (or no lock: none is better than two) */
  int pushed = 0;
  c->notify = hook_codex_on_notify;
  c->notify_ctx = &pushed;
  int daemon_fd = hook_codex_pidfd(daemon);
  if (cli_client_connect(c, true, false, 0) == 0) {
    /* The daemon's end wakes the wait (its pidfd becomes readable). */
    cli_conn_set_wake_fd(c->conn, daemon_fd);
    int64_t deadline = cli_now_ms() + HOOK_CODEX_WATCH_MAX_MS;
    for (;;) {
      int got = cli_conn_pump(c->conn, deadline, &c->err);
      if (got <= 0)
        break; /* the bound, the daemon gone, the engine gone */
      if (!pushed)
        continue;
      pushed = 0;
      if (hook_codex_busy(c))
        continue; /* the turn's own hooks serve it */
      StrBuf text = STRBUF_INIT;
      size_t taken = 0;
      cli_conn_set_wake_fd(c->conn, -1); /* a take under way is finished */
      int rc = hook_take(c, &text, &taken);
      cli_conn_set_wake_fd(c->conn, daemon_fd);
      if (rc == 0 && text.len > 0)
        rc = hook_codex_queue(exe, thread, strbuf_cstr(&text));
      strbuf_free(&text);
      if (rc != 0)
        break;
    }
  }
  if (daemon_fd >= 0)
    close(daemon_fd);
  cli_client_close(c);
  hook_waiter_done(&lock);
}

/* Closes every descriptor above stderr: the watcher outlives the hook, and
 * one it kept of Codex's (a pipe Codex reads to its end) would hold Codex. */
static void
hook_codex_close_inherited(void)
{
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
    return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
    close((int)fd);
}

int
hook_codex_watch(const CliClient *c, const char *thread, pid_t daemon, const char *exe)
{
  fflush(NULL);
  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child > 0) {
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return 0;
  }
  /* The child: a grandchild in a session of its own does the watching, so
   * that the hook returns at once and the harness, which waits for the
   * hook's output to close, is not held. */
  if (setsid() < 0 && errno != EPERM)
    _exit(0);
  pid_t grandchild = fork();
  if (grandchild != 0)
    _exit(0);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
    _exit(0);
  hook_codex_close_inherited();
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  /* Its own connection (the hook has not connected yet). */
  CliClient mine = *c;
  mine.conn = NULL;
  hook_codex_watcher(&mine, thread, daemon, exe);
  _exit(0);
}
