/*
 * The transports, as a client meets them: the listening socket (its
 * directory and file modes, a ping answered, a stale file replaced, a live
 * engine not displaced, a peer of another uid refused) and --stdio on fds
 * 0 and 1 (a socket for both, two pipes, and a regular file refused).
 * Clients here are plain sockets; every wait is for an event (RUN_UNTIL).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"
#include "base/memory.h"
#include "rpc/server.h"

#define MAX_CHANNELS 16

/* The engine's side: every channel opened and whether it has closed. */
typedef struct {
  RpcChannel *ch[MAX_CHANNELS];
  bool closed[MAX_CHANNELS];
  int opened;
  int closes;
  int calls;
  char last_reason[256];
} Engine;

static const char ping_request[] = "\x94\x00\x07\xa4ping\x90";
/* [1, 7, nil, {"pong": true}] */
static const char ping_response[] = "\x94\x01\x07\xc0\x81\xa4pong\xc3";

static void
engine_on_open(void *data, RpcChannel *ch)
{
  Engine *e = data;
  if (e->opened >= MAX_CHANNELS)
    abort();
  e->ch[e->opened] = ch;
  rpc_channel_set_user(ch, (void *)(intptr_t)(e->opened + 1));
  e->opened++;
}

static void
engine_on_call(void *data, RpcChannel *ch, bool is_request, uint32_t msgid, const char *method,
               size_t method_len, const msgpack_object *args)
{
  Engine *e = data;
  e->calls++;
  if (is_request && method_len == 4 && memcmp(method, "ping", 4) == 0)
    rpc_channel_respond(ch, msgid, NULL, "\x81\xa4pong\xc3", 7);
}

static void
engine_on_close(void *data, RpcChannel *ch, const char *reason)
{
  Engine *e = data;
  intptr_t index = (intptr_t)rpc_channel_user(ch);
  if (index > 0)
    e->closed[index - 1] = true;
  e->closes++;
  snprintf(e->last_reason, sizeof e->last_reason, "%s", reason);
}

static const RpcHandlers engine_handlers = {engine_on_open, engine_on_call, engine_on_close, NULL};
static const RpcLimits limits = {4096, 1 << 20, false, 60000};

/* Closes every channel still open and waits for their on_close. */
static bool
engine_all_closed(void *ctx)
{
  Engine *e = ctx;
  return e->closes == e->opened;
}

static void
engine_finish(Engine *e, uv_loop_t *loop)
{
  for (int i = 0; i < e->opened; i++)
    if (!e->closed[i])
      rpc_channel_close(e->ch[i], "test over");
  RUN_UNTIL(loop, engine_all_closed, e, 5000, "every channel closed");
}

/* --- a plain-socket client ---------------------------------------------- */

typedef struct {
  int fd;
  char buf[4096];
  size_t len;
  size_t want;
  bool eof;
} Sock;

/* Fills a Unix socket address for path (which must fit). */
static void
fill_addr(struct sockaddr_un *addr, const char *path)
{
  memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  size_t len = strlen(path);
  if (len >= sizeof addr->sun_path)
    abort();
  memcpy(addr->sun_path, path, len + 1);
}

/* Connects to path; returns -1 with errno set on failure. */
static int
sock_connect(Sock *s, const char *path)
{
  memset(s, 0, sizeof *s);
  s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  fill_addr(&addr, path);
  if (connect(s->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    int e = errno;
    close(s->fd);
    s->fd = -1;
    errno = e;
    return -1;
  }
  return 0;
}

/* Makes fd non-blocking, for sock_ready. */
static void
set_nonblock(int fd)
{
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Reads what has arrived (the fd is non-blocking: a socket or a pipe);
 * true once want bytes are in or the engine closed the connection. */
static bool
sock_ready(void *ctx)
{
  Sock *s = ctx;
  while (!s->eof && s->len < sizeof s->buf) {
    ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
    if (n > 0)
      s->len += (size_t)n;
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
      s->eof = true;
    else
      break;
  }
  return s->eof || s->len >= s->want;
}

/* Sends a ping and waits for its answer; true if it came. */
static bool
sock_ping(Sock *s, uv_loop_t *loop)
{
  s->len = 0;
  s->want = sizeof ping_response - 1;
  set_nonblock(s->fd);
  if (write(s->fd, ping_request, sizeof ping_request - 1) != (ssize_t)(sizeof ping_request - 1))
    return false;
  if (!RUN_UNTIL(loop, sock_ready, s, 5000, "the ping response"))
    return false;
  return s->len == sizeof ping_response - 1 &&
         memcmp(s->buf, ping_response, sizeof ping_response - 1) == 0;
}

/* --- temporary directories ----------------------------------------------- */

static char tmp_base[64];

/* A fresh private directory for one test. */
static const char *
tmp_dir(void)
{
  snprintf(tmp_base, sizeof tmp_base, "/tmp/vigil-rpc-test-XXXXXX");
  if (mkdtemp(tmp_base) == NULL)
    abort();
  return tmp_base;
}

/* Removes the test's directory tree (two levels are all the tests make). */
static void
tmp_cleanup(void)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_base);
  if (system(cmd) != 0)
    fprintf(stderr, "  could not remove %s\n", tmp_base);
}

/* --- the socket ---------------------------------------------------------- */

TEST(default_socket_path)
{
  char *saved = getenv("XDG_RUNTIME_DIR") ? xstrdup(getenv("XDG_RUNTIME_DIR")) : NULL;
  char path[256], want[256];
  setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
  CHECK_INT(rpc_default_socket_path(path, sizeof path), 0);
  CHECK_STR(path, "/run/user/1000/vigil/vigil.sock");
  CHECK_INT(rpc_default_socket_path(path, 10), -1);
  unsetenv("XDG_RUNTIME_DIR");
  CHECK_INT(rpc_default_socket_path(path, sizeof path), 0);
  snprintf(want, sizeof want, "/tmp/vigil-%u/vigil.sock", (unsigned)geteuid());
  CHECK_STR(path, want);
  setenv("XDG_RUNTIME_DIR", "", 1);
  CHECK_INT(rpc_default_socket_path(path, sizeof path), 0);
  CHECK_STR(path, want);
  if (saved)
    setenv("XDG_RUNTIME_DIR", saved, 1);
  else
    unsetenv("XDG_RUNTIME_DIR");
  free(saved);
}

TEST(listen_makes_private_dir_and_socket_and_answers)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  char dir[128], path[160];
  snprintf(dir, sizeof dir, "%s/vigil", tmp_dir());
  snprintf(path, sizeof path, "%s/vigil.sock", dir);
  mode_t old_umask = umask(0); /* a permissive umask must not widen anything */
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcServer *srv = rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err);
  umask(old_umask);
  CHECK(srv != NULL);
  if (srv == NULL) {
    fprintf(stderr, "  %s\n", err.msg);
    test_loop_close(&loop);
    tmp_cleanup();
    return;
  }
  struct stat st;
  CHECK_INT(stat(dir, &st), 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK_INT(st.st_mode & 07777, 0700);
  CHECK_INT(lstat(path, &st), 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK_INT(st.st_mode & 07777, 0600);

  Sock s;
  CHECK_INT(sock_connect(&s, path), 0);
  CHECK(sock_ping(&s, &loop));
  CHECK_INT(e.opened, 1);
  char peer[64];
  snprintf(peer, sizeof peer, "socket uid=%u pid=%d", (unsigned)geteuid(), (int)getpid());
  if (e.opened == 1)
    CHECK_STR(rpc_channel_peer(e.ch[0]), peer);

  /* Many connections at once. */
  Sock s2;
  CHECK_INT(sock_connect(&s2, path), 0);
  CHECK(sock_ping(&s2, &loop));
  CHECK(sock_ping(&s, &loop));
  CHECK_INT(e.opened, 2);
  CHECK_INT(rpc_server_refused(srv), 0);

  /* Closing the server removes the file; open channels stay. */
  rpc_server_close(srv);
  CHECK(lstat(path, &st) != 0 && errno == ENOENT);
  CHECK(sock_ping(&s, &loop));
  CHECK_INT(e.closes, 0);

  /* The peers leaving close their channels. */
  close(s2.fd);
  close(s.fd);
  RUN_UNTIL(&loop, engine_all_closed, &e, 5000, "both channels closed by their peers");
  CHECK_STR(e.last_reason, "peer closed the connection");
  engine_finish(&e, &loop);
  test_loop_close(&loop);
  tmp_cleanup();
}

/* Listens on dir/vigil.sock; returns the server (closed at once) or NULL
 * with err filled. */
static bool
listen_once(const char *dir, VigilError *err)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  char path[160];
  snprintf(path, sizeof path, "%s/vigil.sock", dir);
  Engine e = {0};
  RpcServer *srv = rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, err);
  if (srv)
    rpc_server_close(srv);
  engine_finish(&e, &loop);
  test_loop_close(&loop);
  return srv != NULL;
}

/* Issue 7: an existing directory is never chmod'ed. One that is ours and
 * that nobody else can write is used as it is; any other is refused with a
 * message naming it, and left as it was. */
TEST(an_existing_directory_is_used_as_it_is_or_refused)
{
  char dir[128];
  snprintf(dir, sizeof dir, "%s/vigil", tmp_dir());
  CHECK_INT(mkdir(dir, 0755), 0);
  CHECK_INT(chmod(dir, 0755), 0);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(listen_once(dir, &err));
  struct stat st;
  CHECK_INT(stat(dir, &st), 0);
  CHECK_INT(st.st_mode & 07777, 0755);

  CHECK_INT(chmod(dir, 0775), 0);
  error_clear(&err);
  CHECK(!listen_once(dir, &err));
  CHECK_CONTAINS(err.msg, dir);
  CHECK_CONTAINS(err.msg, "writable by its group (mode 0775");
  CHECK_INT(stat(dir, &st), 0);
  CHECK_INT(st.st_mode & 07777, 0775);

  if (geteuid() == 0) {
    CHECK_INT(chmod(dir, 0700), 0);
    CHECK_INT(chown(dir, 65534, 65534), 0);
    error_clear(&err);
    CHECK(!listen_once(dir, &err));
    CHECK_CONTAINS(err.msg, "belongs to uid 65534 (mode 0700), not to uid 0");
  }
  tmp_cleanup();
}

TEST(stale_socket_is_replaced_live_one_refused)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  char path[160];
  snprintf(path, sizeof path, "%s/vigil.sock", tmp_dir());
  /* A socket file nobody listens on, as a crashed engine leaves it. */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr;
  fill_addr(&addr, path);
  CHECK_INT(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  close(fd);
  struct stat st;
  CHECK_INT(lstat(path, &st), 0);

  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcServer *srv = rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err);
  CHECK(srv != NULL);
  if (srv == NULL)
    fprintf(stderr, "  %s\n", err.msg);
  Sock s;
  CHECK_INT(sock_connect(&s, path), 0);
  CHECK(sock_ping(&s, &loop));

  /* A second engine on the same path is refused and leaves the first alone. */
  Engine e2 = {0};
  RpcServer *srv2 = rpc_server_listen(&loop, path, &limits, &engine_handlers, &e2, &err);
  CHECK(srv2 == NULL);
  char want[256];
  snprintf(want, sizeof want, "internal: another vigild is listening on %s", path);
  CHECK_STR(err.msg, want);
  CHECK_INT(err.code, kErrInternal);
  CHECK(sock_ping(&s, &loop));
  Sock s3;
  CHECK_INT(sock_connect(&s3, path), 0);
  CHECK(sock_ping(&s3, &loop));
  close(s.fd);
  close(s3.fd);
  rpc_server_close(srv);
  engine_finish(&e, &loop);
  test_loop_close(&loop);
  tmp_cleanup();
}

TEST(listen_refuses_what_is_in_the_way)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  const char *base = tmp_dir();
  char path[600], thing[160];
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;

  /* The directory's place holds a file. */
  snprintf(thing, sizeof thing, "%s/notadir", base);
  int fd = open(thing, O_CREAT | O_WRONLY, 0600);
  close(fd);
  snprintf(path, sizeof path, "%s/vigil.sock", thing);
  CHECK(rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err) == NULL);
  char want[1400];
  snprintf(want, sizeof want, "internal: cannot listen on %s: %s exists and is not a directory",
           path, thing);
  CHECK_STR(err.msg, want);

  /* The socket's place holds a regular file: not ours to remove. */
  error_clear(&err);
  CHECK(rpc_server_listen(&loop, thing, &limits, &engine_handlers, &e, &err) == NULL);
  snprintf(want, sizeof want, "internal: cannot listen on %s: it exists and is not a socket",
           thing);
  CHECK_STR(err.msg, want);
  struct stat st;
  CHECK_INT(stat(thing, &st), 0);

  /* The parent of the directory must exist. */
  error_clear(&err);
  snprintf(path, sizeof path, "%s/a/b/vigil.sock", base);
  CHECK(rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err) == NULL);
  CHECK_CONTAINS(err.msg, "mkdir");
  CHECK_CONTAINS(err.msg, "No such file or directory");

  /* Longer than a socket address holds. */
  error_clear(&err);
  char longname[300];
  memset(longname, 'x', 200);
  longname[200] = '\0';
  snprintf(path, sizeof path, "%s/%s", base, longname);
  CHECK(rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err) == NULL);
  CHECK_CONTAINS(err.msg, "a socket path must be 1..107 bytes, got ");
  test_loop_close(&loop);
  tmp_cleanup();
}

/* What the refused child reports through its exit status. */
enum { kChildSawClose = 0, kChildNoSetuid = 2, kChildNoConnect = 3, kChildGotData = 4 };

static pid_t refuse_child;
static int refuse_status = -1;

static bool
refuse_child_done(void *ctx)
{
  int status;
  if (waitpid(refuse_child, &status, WNOHANG) == refuse_child) {
    refuse_status = status;
    return true;
  }
  return false;
}

static bool
server_refused_one(void *ctx)
{
  return rpc_server_refused(ctx) >= 1;
}

TEST(peer_of_another_uid_is_refused)
{
  if (geteuid() != 0) {
    printf("note: peer_of_another_uid_is_refused needs root to connect as another uid; skipped\n");
    return;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  char dir[128], path[160];
  snprintf(dir, sizeof dir, "%s/vigil", tmp_dir());
  snprintf(path, sizeof path, "%s/vigil.sock", dir);
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcServer *srv = rpc_server_listen(&loop, path, &limits, &engine_handlers, &e, &err);
  CHECK(srv != NULL);
  if (srv == NULL) {
    test_loop_close(&loop);
    tmp_cleanup();
    return;
  }
  /* Let the kernel allow nobody to connect, so only the uid check stands
   * in the way. */
  chmod(tmp_base, 0755);
  chmod(dir, 0755);
  chmod(path, 0666);

  /* Capture the log line: stderr goes to a file for the duration. */
  char logpath[160];
  snprintf(logpath, sizeof logpath, "%s/stderr.log", tmp_base);
  int logfd = open(logpath, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
  int saved_stderr = dup(2);
  dup2(logfd, 2);

  fflush(stdout);
  refuse_child = fork();
  if (refuse_child == 0) {
    alarm(10);
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      _exit(kChildNoSetuid);
    Sock s;
    if (sock_connect(&s, path) != 0)
      _exit(kChildNoConnect);
    if (write(s.fd, ping_request, sizeof ping_request - 1) < 0) {
      /* the engine may have closed already: that is a refusal too */
    }
    char buf[64];
    ssize_t n = read(s.fd, buf, sizeof buf);
    _exit(n <= 0 ? kChildSawClose : kChildGotData);
  }
  RUN_UNTIL(&loop, server_refused_one, srv, 5000, "the refusal");
  RUN_UNTIL(&loop, refuse_child_done, NULL, 5000, "the child to exit");
  CHECK(log_flush(10000)); /* the log's writer thread writes the line */
  dup2(saved_stderr, 2);
  close(saved_stderr);

  CHECK_INT(rpc_server_refused(srv), 1);
  CHECK_INT(e.opened, 0);
  CHECK_INT(e.calls, 0);
  CHECK(WIFEXITED(refuse_status));
  CHECK_INT(WEXITSTATUS(refuse_status), kChildSawClose);
  char log[4096];
  ssize_t n = pread(logfd, log, sizeof log - 1, 0);
  log[n > 0 ? n : 0] = '\0';
  close(logfd);
  CHECK_CONTAINS(log, "refused a connection from uid 65534 (the engine runs as uid 0)");

  /* The engine's own uid still gets in. */
  Sock s;
  CHECK_INT(sock_connect(&s, path), 0);
  CHECK(sock_ping(&s, &loop));
  close(s.fd);
  rpc_server_close(srv);
  engine_finish(&e, &loop);
  test_loop_close(&loop);
  tmp_cleanup();
}

/* --- stdio --------------------------------------------------------------- */

/* In a child whose fd 0 is in_fd and fd 1 is out_fd: opens the stdio
 * channel, sends a ping through client_w, expects the answer on client_r,
 * then closes client_w and expects the channel to close. Exits 0 when all
 * went well (CHECK failures are printed on stderr). */
static void
stdio_child(int in_fd, int out_fd, int client_w, int client_r)
{
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0)
    _exit(90);
  uv_loop_t loop;
  uv_loop_init(&loop);
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcChannel *ch = rpc_stdio_open(&loop, &limits, &engine_handlers, &e, &err);
  CHECK(ch != NULL);
  if (ch == NULL) {
    fprintf(stderr, "  %s\n", err.msg);
    _exit(91);
  }
  CHECK_INT(e.opened, 1);
  CHECK_STR(rpc_channel_peer(ch), "stdio");
  CHECK(write(client_w, ping_request, sizeof ping_request - 1) ==
        (ssize_t)(sizeof ping_request - 1));
  Sock s;
  memset(&s, 0, sizeof s);
  s.fd = client_r;
  set_nonblock(client_r);
  s.want = sizeof ping_response - 1;
  RUN_UNTIL(&loop, sock_ready, &s, 5000, "the ping response on stdout");
  CHECK_INT(s.len, sizeof ping_response - 1);
  CHECK(memcmp(s.buf, ping_response, sizeof ping_response - 1) == 0);
  /* The host closes our stdin: the channel ends. */
  if (client_w == client_r)
    shutdown(client_w, SHUT_WR);
  else
    close(client_w);
  RUN_UNTIL(&loop, engine_all_closed, &e, 5000, "the stdio channel to close");
  CHECK_STR(e.last_reason, "peer closed the connection");
  test_loop_close(&loop);
  _exit(check_failures_in_test == 0 ? 0 : 1);
}

/* Runs stdio_child in a forked process and closes the four fds; returns
 * the child's exit status. */
static int
run_stdio_child(int in_fd, int out_fd, int client_w, int client_r)
{
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0)
    stdio_child(in_fd, out_fd, client_w, client_r);
  /* The child holds the only copies now, so its close of client_w is the
   * engine's EOF. */
  close(in_fd);
  if (out_fd != in_fd)
    close(out_fd);
  close(client_w);
  if (client_r != client_w)
    close(client_r);
  int status;
  if (waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(stdio_on_one_socket_for_both)
{
  int sv[2];
  CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  CHECK_INT(run_stdio_child(sv[0], sv[0], sv[1], sv[1]), 0);
}

TEST(stdio_on_two_pipes)
{
  int to_engine[2], from_engine[2];
  CHECK_INT(pipe(to_engine), 0);
  CHECK_INT(pipe(from_engine), 0);
  CHECK_INT(run_stdio_child(to_engine[0], from_engine[1], to_engine[1], from_engine[0]), 0);
}

/* In a child whose stdin and stdout are a terminal (a pty): the channel
 * opens on tty handles and closes cleanly. (A cooked terminal mangles
 * binary msgpack, so no call is made through it.) */
static void
stdio_tty_child(void)
{
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
    _exit(90);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  if (slave < 0 || dup2(slave, 0) < 0 || dup2(slave, 1) < 0)
    _exit(90);
  uv_loop_t loop;
  uv_loop_init(&loop);
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcChannel *ch = rpc_stdio_open(&loop, &limits, &engine_handlers, &e, &err);
  CHECK(ch != NULL);
  if (ch == NULL) {
    fprintf(stderr, "  %s\n", err.msg);
    _exit(91);
  }
  CHECK_STR(rpc_channel_peer(ch), "stdio");
  CHECK_INT(e.opened, 1);
  rpc_channel_close(ch, "test over");
  RUN_UNTIL(&loop, engine_all_closed, &e, 5000, "the tty channel to close");
  CHECK_STR(e.last_reason, "test over");
  test_loop_close(&loop);
  _exit(check_failures_in_test == 0 ? 0 : 1);
}

TEST(stdio_on_a_terminal)
{
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0)
    stdio_tty_child();
  int status;
  CHECK_INT(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status));
  CHECK_INT(WEXITSTATUS(status), 0);
}

/* In a child: stdin or stdout is a regular file; rpc_stdio_open must refuse
 * with the message and leave nothing open. */
static void
stdio_file_child(int which, const char *file)
{
  int fd = open(file, O_RDWR | O_CREAT, 0600);
  int sv[2];
  if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    _exit(90);
  dup2(which == 0 ? fd : sv[0], 0);
  dup2(which == 1 ? fd : sv[0], 1);
  uv_loop_t loop;
  uv_loop_init(&loop);
  Engine e = {0};
  VigilError err = VIGIL_ERROR_INIT;
  RpcChannel *ch = rpc_stdio_open(&loop, &limits, &engine_handlers, &e, &err);
  CHECK(ch == NULL);
  CHECK_INT(err.code, kErrInternal);
  CHECK_STR(err.msg, which == 0
                         ? "internal: --stdio needs stdin and stdout to be pipes, sockets or a "
                           "terminal (stdin is a file)"
                         : "internal: --stdio needs stdin and stdout to be pipes, sockets or a "
                           "terminal (stdout is a file)");
  CHECK_INT(e.opened, 0);
  test_loop_close(&loop);
  _exit(check_failures_in_test == 0 ? 0 : 1);
}

TEST(stdio_refuses_a_regular_file)
{
  char file[160];
  snprintf(file, sizeof file, "%s/input", tmp_dir());
  for (int which = 0; which < 2; which++) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
      stdio_file_child(which, file);
    int status;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
  }
  tmp_cleanup();
}

int
main(void)
{
  signal(SIGPIPE, SIG_IGN);
  RUN(default_socket_path);
  RUN(listen_makes_private_dir_and_socket_and_answers);
  RUN(an_existing_directory_is_used_as_it_is_or_refused);
  RUN(stale_socket_is_replaced_live_one_refused);
  RUN(listen_refuses_what_is_in_the_way);
  RUN(peer_of_another_uid_is_refused);
  RUN(stdio_on_one_socket_for_both);
  RUN(stdio_on_two_pipes);
  RUN(stdio_on_a_terminal);
  RUN(stdio_refuses_a_regular_file);
  return check_summary();
}
