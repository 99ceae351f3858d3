/*
 * The transports of vigild (see server.h): the listening Unix socket, which
 * checks every peer's uid before a channel exists for it, and --stdio.
 *
 * Starting to listen is done with blocking calls (mkdir, stat, a connect to
 * probe an existing socket file): they run once at startup, and a connect
 * to a local Unix socket answers at once, accepted or refused.
 *
 * Decisions the header leaves open:
 * - Whoever can write to the socket's directory can replace the socket with
 *   their own and read what clients send (argv, tokens). So the socket's own
 *   directory (the last path component before the file: "." for a bare
 *   name) must be a real directory, not a symbolic link, owned by the
 *   engine's euid (or by root, who could replace anything anyway: a
 *   service manager's /run/vigil) and not writable by group or others;
 *   anything else is
 *   refused with a message naming the directory, the owner and mode found
 *   and what is needed. There is no exception for a sticky directory such
 *   as /tmp: another user could bind the name first. An existing directory
 *   is never chmod'ed (a project directory given with --listen ./v.sock
 *   keeps its mode); only a directory vigild has just made is set to 0700,
 *   through a descriptor so a swapped path cannot redirect the fchmod. Its
 *   parent must exist. The parent itself is not checked: clients check
 *   the server's uid (SO_PEERCRED) after connecting, which covers the rest.
 * - A file at the socket path that is not a socket is refused rather than
 *   removed: it is not ours to delete.
 * - A path longer than a sockaddr_un holds is refused (libuv 1.44 would
 *   silently cut it).
 * - A peer whose credentials cannot be read is refused like a foreign uid.
 * - The server's memory is freed by its handle's close callback, so after
 *   rpc_server_close (or a failed listen) the loop must run once more.
 * - rpc_stdio_open calls on_open too, as the header's "accepted, or stdio"
 *   says.
 * - Accepting is fair: libuv accepts a listener's connections in a loop
 *   until none is left, so a flood of connects from processes of the
 *   engine's own user (each refused past rpc.max_connections, or closed at
 *   once by its peer) kept the loop there, and an established connection's
 *   ping waited seconds. At most RPC_SERVER_ACCEPTS_PER_TURN are accepted
 *   in a turn of the loop; the next is left in libuv's hands (which stops
 *   watching the listener meanwhile) and accepted right after the turn's
 *   I/O, from a check handle, so every other connection's input is read
 *   between two handfuls of accepts.
 * - A refusal's log line is said once per LOGREPEAT_WINDOW_MS, the rest
 *   counted (logrepeat.h); so is a failed accept (EMFILE, under a flood).
 */
#include "rpc/server.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "link/endpoint.h"
#include "base/log.h"
#include "base/logrepeat.h"
#include "base/memory.h"

/* Connections the kernel may queue before vigild accepts them. */
#define RPC_SERVER_BACKLOG 128
/* Connections accepted in one turn of the loop at most (see above). */
#define RPC_SERVER_ACCEPTS_PER_TURN 16

struct RpcServer {
  uv_loop_t *loop;
  uv_pipe_t pipe;
  uv_check_t turn;    /* after a turn's I/O: the count of accepts starts again */
  int open_handles;   /* pipe and turn, until their close callbacks */
  int accepted_in_turn;
  bool deferred;      /* a connection is waiting for the next turn */
  char *path;
  RpcLimits limits;
  RpcHandlers handlers;
  void *data;
  uint64_t refused;
  LogRepeat *refusals; /* the log lines of refused connections */
  LogRepeat *failures; /* the log lines of failed accepts */
  bool keep_file; /* the socket's file is a service manager's: left at close */
};

int
rpc_default_socket_path(char *out, size_t size)
{
  /* The one rule every client follows too (clients/c/link/endpoint.h). */
  return endpoint_default_path(out, size);
}

/* Frees a server once its handles have closed. */
static void
rpc_server_closed(uv_handle_t *handle)
{
  RpcServer *srv = handle->data;
  if (--srv->open_handles > 0)
    return;
  free(srv->path);
  free(srv);
}

/* Closes a server's handles and its log counters; freed once closed. */
static void
rpc_server_free(RpcServer *srv)
{
  logrepeat_free(srv->refusals);
  logrepeat_free(srv->failures);
  srv->refusals = srv->failures = NULL;
  uv_close((uv_handle_t *)&srv->pipe, rpc_server_closed);
  uv_close((uv_handle_t *)&srv->turn, rpc_server_closed);
}

/* Frees a handle allocated here once it has closed. */
static void
rpc_server_free_handle(uv_handle_t *handle)
{
  free(handle);
}

/* Reads the uid and pid of the process at the other end of a Unix socket.
 * Returns 0, or -1 with errno set. pid is -1 where the OS does not say. */
static int
rpc_peer_credentials(int fd, uid_t *uid, pid_t *pid)
{
#if defined(SO_PEERCRED)
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return -1;
  *uid = cred.uid;
  *pid = cred.pid;
  return 0;
#else
  gid_t gid;
  if (getpeereid(fd, uid, &gid) != 0)
    return -1;
  *pid = -1;
  return 0;
#endif
}

static void rpc_server_turn_ended(uv_check_t *turn);

/* An accept failed (EMFILE under a flood, say): logged once a window. */
static void
rpc_server_accept_failed(RpcServer *srv, int status)
{
  if (logrepeat_hit(srv->failures, uv_strerror(status)))
    LOG_WARN("rpc", "%s: accept failed: %s (more failures are counted, said every %d s)",
             srv->path, uv_strerror(status), LOGREPEAT_WINDOW_MS / 1000);
}

/* Refuses the accepted client: counted, and logged once a window. */
static void
rpc_server_refuse(RpcServer *srv, uv_pipe_t *client, const char *reason)
{
  srv->refused++;
  if (logrepeat_hit(srv->refusals, reason))
    LOG_WARN("rpc", "%s: refused a connection %s (more refusals are counted, said every %d s)",
             srv->path, reason, LOGREPEAT_WINDOW_MS / 1000);
  uv_close((uv_handle_t *)client, rpc_server_free_handle);
}

/* Accepts the connection waiting on the listener, checks its uid, and
 * gives it a channel. */
static void
rpc_server_take(RpcServer *srv)
{
  if (srv->accepted_in_turn++ == 0)
    uv_check_start(&srv->turn, rpc_server_turn_ended);
  uv_pipe_t *client = xmalloc(sizeof *client);
  uv_pipe_init(srv->loop, client, 0);
  int r = uv_accept((uv_stream_t *)&srv->pipe, (uv_stream_t *)client);
  if (r < 0) {
    rpc_server_accept_failed(srv, r);
    uv_close((uv_handle_t *)client, rpc_server_free_handle);
    return;
  }
  uv_os_fd_t fd;
  uid_t uid = 0;
  pid_t pid = -1;
  char reason[128];
  if (uv_fileno((uv_handle_t *)client, &fd) != 0 || rpc_peer_credentials(fd, &uid, &pid) != 0) {
    snprintf(reason, sizeof reason, "whose credentials could not be read (%s)", strerror(errno));
    rpc_server_refuse(srv, client, reason);
    return;
  }
  if (uid != geteuid()) {
    snprintf(reason, sizeof reason, "from uid %u (the engine runs as uid %u)", (unsigned)uid,
             (unsigned)geteuid());
    rpc_server_refuse(srv, client, reason);
    return;
  }
  char peer[64];
  snprintf(peer, sizeof peer, "socket uid=%u pid=%d", (unsigned)uid, (int)pid);
  LOG_DEBUG("rpc", "%s: accepted a connection (%s)", srv->path, peer);
  RpcChannel *ch = rpc_channel_open(srv->loop, (uv_stream_t *)client, (uv_stream_t *)client,
                                    &srv->limits, &srv->handlers, srv->data, peer);
  if (srv->handlers.on_open != NULL)
    srv->handlers.on_open(srv->data, ch);
}

/* After a turn's I/O: the count of accepts starts again, and a connection
 * left waiting is accepted now (which has libuv watch the listener again). */
static void
rpc_server_turn_ended(uv_check_t *turn)
{
  RpcServer *srv = turn->data;
  srv->accepted_in_turn = 0;
  if (!srv->deferred) {
    uv_check_stop(turn);
    return;
  }
  srv->deferred = false;
  rpc_server_take(srv);
}

/* A peer is waiting (libuv calls again for each while the turn lasts): it
 * is accepted now, or, past the turn's share, after the turn's I/O. */
static void
rpc_server_connection(uv_stream_t *listener, int status)
{
  RpcServer *srv = listener->data;
  if (status < 0) {
    rpc_server_accept_failed(srv, status);
    return;
  }
  if (srv->accepted_in_turn >= RPC_SERVER_ACCEPTS_PER_TURN) {
    srv->deferred = true;
    return;
  }
  rpc_server_take(srv);
}

/* See server.h. */
char *
rpc_server_dir_of(const char *path)
{
  const char *slash = strrchr(path, '/');
  if (slash == NULL)
    return xstrdup(".");
  size_t n = (size_t)(slash - path);
  while (n > 0 && path[n - 1] == '/')
    n--;
  return n == 0 ? xstrdup("/") : xmemdupz(path, n);
}

/* Sets the mode of a directory just made by mkdir to exactly 0700 (mkdir's
 * mode went through the umask), through a descriptor opened without
 * following a symbolic link, so whatever took its place meanwhile is not
 * touched. The checks that follow judge what is there. */
static void
rpc_server_fix_new_dir(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_uid == geteuid())
    (void)fchmod(fd, 0700);
  close(fd);
}

/* Makes the socket's directory (0700) unless it exists (*made says so),
 * then refuses it unless it is a real directory of the engine's euid (or
 * root's) that group and others cannot write (see the decisions above).
 * Logs nothing: vigild --daemon runs it before it forks, when no log line
 * may start the log's thread yet. */
static int
rpc_server_make_dir(const char *path, bool *made, VigilError *err)
{
  char *dir = rpc_server_dir_of(path);
  uid_t euid = geteuid();
  int rc = 0;
  struct stat st;
  *made = false;
  if (mkdir(dir, 0700) == 0) {
    *made = true;
    rpc_server_fix_new_dir(dir);
  } else if (errno != EEXIST) {
    rc = error_set(err, kErrInternal, "cannot listen on %s: mkdir %s: %s", path, dir,
                   strerror(errno));
    goto done;
  }
  if (lstat(dir, &st) != 0) {
    rc = error_set(err, kErrInternal, "cannot listen on %s: %s: %s", path, dir, strerror(errno));
  } else if (S_ISLNK(st.st_mode)) {
    rc = error_set(err, kErrInternal,
                   "cannot listen on %s: the socket's directory %s is a symbolic link; give a "
                   "path in the real directory (owned by uid %u, mode 0700)",
                   path, dir, (unsigned)euid);
  } else if (!S_ISDIR(st.st_mode)) {
    rc = error_set(err, kErrInternal, "cannot listen on %s: %s exists and is not a directory",
                   path, dir);
  } else if (st.st_uid != euid && st.st_uid != 0) {
    rc = error_set(err, kErrInternal,
                   "cannot listen on %s: the socket's directory %s belongs to uid %u (mode "
                   "%04o), not to uid %u that vigild runs as (or root): its owner could "
                   "replace the socket. Use a private directory of your own (mode 0700)",
                   path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                   (unsigned)euid);
  } else if ((st.st_mode & 022) != 0) {
    rc = error_set(err, kErrInternal,
                   "cannot listen on %s: the socket's directory %s is writable by %s (mode "
                   "%04o, owner uid %u), so another user could %s. vigild "
                   "never changes an existing directory's mode: use a private directory "
                   "(owned by uid %u, not writable by group or others, e.g. mode 0700)",
                   path, dir, (st.st_mode & 002) ? "others" : "its group",
                   (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
                   (st.st_mode & S_ISVTX) ? "bind the socket's name first" : "replace the socket",
                   (unsigned)euid);
  }
done:
  free(dir);
  return rc;
}

/* Clears the way for bind: nothing there is fine, a stale socket is
 * removed, a live one (or something that is not a socket) is an error. */
static int
rpc_server_clear_path(const char *path, VigilError *err)
{
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT)
      return 0;
    return error_set(err, kErrInternal, "cannot listen on %s: %s", path, strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    return error_set(err, kErrInternal, "cannot listen on %s: it exists and is not a socket",
                     path);
  /* Non-blocking, so a live engine whose backlog is full (EAGAIN) counts
   * as live instead of hanging this probe. */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return error_set(err, kErrInternal, "cannot listen on %s: socket: %s", path, strerror(errno));
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  int connect_errno = errno;
  bool live = rc == 0 || connect_errno == EAGAIN || connect_errno == EINPROGRESS;
  close(fd);
  if (live)
    return error_set(err, kErrInternal, "another vigild is listening on %s", path);
  if (connect_errno != ECONNREFUSED && connect_errno != ENOENT)
    return error_set(err, kErrInternal, "cannot listen on %s: probing the existing socket: %s",
                     path, strerror(connect_errno));
  if (unlink(path) != 0 && errno != ENOENT)
    return error_set(err, kErrInternal, "cannot listen on %s: removing the stale socket: %s",
                     path, strerror(errno));
  LOG_INFO("rpc", "%s: replaced a stale socket file", path);
  return 0;
}

/* See server.h. */
int
rpc_server_check_path(const char *path, bool *made, VigilError *err)
{
  *made = false;
  struct sockaddr_un addr;
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof addr.sun_path)
    return error_set(err, kErrInternal,
                     "cannot listen on %s: a socket path must be 1..%zu bytes, got %zu", path,
                     sizeof addr.sun_path - 1, len);
  return rpc_server_make_dir(path, made, err);
}

/* See server.h. */
void
rpc_server_log_made_dir(const char *path)
{
  char *dir = rpc_server_dir_of(path);
  LOG_INFO("rpc", "made the socket's directory %s (mode 0700)", dir);
  free(dir);
}

/* A server for path, its pipe initialised but not yet bound or opened. */
static RpcServer *
rpc_server_new(uv_loop_t *loop, const char *path, const RpcLimits *limits,
               const RpcHandlers *handlers, void *data)
{
  RpcServer *srv = xcalloc(1, sizeof *srv);
  srv->loop = loop;
  srv->path = xstrdup(path);
  srv->limits = *limits;
  /* A socket keeps the contract's rule (docs/protocol.md section 2.4): an oversized message is answered and
   * its connection closed (the peer can reconnect and resume its session). */
  srv->limits.oversize_closes = true;
  srv->handlers = *handlers;
  srv->data = data;
  uv_pipe_init(loop, &srv->pipe, 0);
  srv->pipe.data = srv;
  uv_check_init(loop, &srv->turn);
  srv->turn.data = srv;
  srv->open_handles = 2;
  srv->refusals = logrepeat_new(loop, "rpc", "refused", "connections", LOGREPEAT_WINDOW_MS);
  srv->failures = logrepeat_new(loop, "rpc", "failed", "accepts", LOGREPEAT_WINDOW_MS);
  return srv;
}

/* See server.h. */
RpcServer *
rpc_server_bind(uv_loop_t *loop, const char *path, const RpcLimits *limits,
                const RpcHandlers *handlers, void *data, VigilError *err)
{
  bool made = false;
  if (rpc_server_check_path(path, &made, err) != 0 || rpc_server_clear_path(path, err) != 0)
    return NULL;
  if (made)
    rpc_server_log_made_dir(path);
  RpcServer *srv = rpc_server_new(loop, path, limits, handlers, data);
  const char *step = "bind";
  int r = uv_pipe_bind(&srv->pipe, path);
  if (r == 0) {
    step = "chmod";
    /* Before listen, so no peer ever connects while it is wider. */
    r = chmod(path, 0600) == 0 ? 0 : uv_translate_sys_error(errno);
  }
  if (r != 0) {
    error_set(err, kErrInternal, "cannot listen on %s: %s: %s", path, step, uv_strerror(r));
    if (strcmp(step, "bind") != 0)
      unlink(path);
    rpc_server_free(srv);
    return NULL;
  }
  return srv;
}

/* See server.h. */
int
rpc_server_start(RpcServer *srv, VigilError *err)
{
  int r = uv_listen((uv_stream_t *)&srv->pipe, RPC_SERVER_BACKLOG, rpc_server_connection);
  if (r != 0) {
    error_set(err, kErrInternal, "cannot listen on %s: listen: %s", srv->path, uv_strerror(r));
    unlink(srv->path);
    rpc_server_free(srv);
    return -1;
  }
  LOG_INFO("rpc", "listening on %s", srv->path);
  return 0;
}

RpcServer *
rpc_server_listen(uv_loop_t *loop, const char *path, const RpcLimits *limits,
                  const RpcHandlers *handlers, void *data, VigilError *err)
{
  RpcServer *srv = rpc_server_bind(loop, path, limits, handlers, data, err);
  return srv != NULL && rpc_server_start(srv, err) == 0 ? srv : NULL;
}

/* Whether fd is a listening Unix stream socket bound to path, and path's
 * file that very socket. */
static bool
rpc_server_fd_is(int fd, const char *path)
{
  struct sockaddr_un addr;
  socklen_t len = sizeof addr;
  int type = 0, listening = 0;
  socklen_t ilen = sizeof type;
  struct stat by_fd, by_path;
  if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0 || addr.sun_family != AF_UNIX ||
      len <= offsetof(struct sockaddr_un, sun_path) ||
      strncmp(addr.sun_path, path, sizeof addr.sun_path) != 0)
    return false;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) != 0 || type != SOCK_STREAM)
    return false;
  ilen = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) != 0 || !listening)
    return false;
  /* A socket's inode is not its file's; the file must at least still be a
   * socket of ours (or root's: a service manager's), not something put in
   * its place. */
  return fstat(fd, &by_fd) == 0 && lstat(path, &by_path) == 0 && S_ISSOCK(by_path.st_mode) &&
         (by_path.st_uid == geteuid() || by_path.st_uid == 0);
}

RpcServer *
rpc_server_listen_fd(uv_loop_t *loop, int fd, const char *path, const RpcLimits *limits,
                     const RpcHandlers *handlers, void *data, VigilError *err)
{
  if (!rpc_server_fd_is(fd, path)) {
    close(fd);
    error_set(err, kErrInternal, "the socket handed over (fd %d) is not one listening on %s",
              fd, path);
    return NULL;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  RpcServer *srv = rpc_server_new(loop, path, limits, handlers, data);
  int r = uv_pipe_open(&srv->pipe, fd);
  if (r == 0)
    r = uv_listen((uv_stream_t *)&srv->pipe, RPC_SERVER_BACKLOG, rpc_server_connection);
  if (r != 0) {
    error_set(err, kErrInternal, "cannot listen on the socket handed over (%s): %s", path,
              uv_strerror(r));
    rpc_server_free(srv);
    return NULL;
  }
  LOG_INFO("rpc", "listening on %s (the socket handed over, fd %d)", path, fd);
  return srv;
}

int
rpc_server_fd(const RpcServer *srv)
{
  uv_os_fd_t fd = -1;
  if (srv == NULL || uv_fileno((const uv_handle_t *)&srv->pipe, &fd) != 0)
    return -1;
  return fd;
}

void
rpc_server_close(RpcServer *srv)
{
  if (srv == NULL)
    return;
  if (!srv->keep_file)
    unlink(srv->path);
  rpc_server_free(srv);
}

void
rpc_server_keep_file(RpcServer *srv)
{
  srv->keep_file = true;
}

uint64_t
rpc_server_refused(const RpcServer *srv)
{
  return srv->refused;
}

/* Frees a stdio handle that could not be opened, once closed. */
static void
rpc_stdio_free_handle(uv_handle_t *handle)
{
  free(handle);
}

/* Wraps fd (0 or 1) in the libuv stream its kind needs: a pipe handle for
 * pipes and Unix sockets, a tty handle for a terminal. Returns NULL and
 * fills err for anything else. */
static uv_stream_t *
rpc_stdio_stream(uv_loop_t *loop, int fd, VigilError *err)
{
  const char *name = fd == 0 ? "stdin" : "stdout";
  uv_handle_type type = uv_guess_handle(fd);
  int r;
  if (type == UV_NAMED_PIPE) {
    uv_pipe_t *p = xmalloc(sizeof *p);
    uv_pipe_init(loop, p, 0);
    r = uv_pipe_open(p, fd);
    if (r == 0)
      return (uv_stream_t *)p;
    uv_close((uv_handle_t *)p, rpc_stdio_free_handle);
  } else if (type == UV_TTY) {
    uv_tty_t *t = xmalloc(sizeof *t);
    r = uv_tty_init(loop, t, fd, fd == 0);
    if (r == 0)
      return (uv_stream_t *)t;
    free(t); /* a failed uv_tty_init leaves nothing to close */
  } else {
    const char *kind = type == UV_FILE ? "a file" : type == UV_TCP ? "a TCP socket"
                       : type == UV_UDP ? "a UDP socket" : "unknown or closed";
    error_set(err, kErrInternal,
              "--stdio needs stdin and stdout to be pipes, sockets or a terminal (%s is %s)",
              name, kind);
    return NULL;
  }
  error_set(err, kErrInternal, "--stdio: cannot use %s: %s", name, uv_strerror(r));
  return NULL;
}

RpcChannel *
rpc_stdio_open(uv_loop_t *loop, const RpcLimits *limits, const RpcHandlers *handlers, void *data,
               VigilError *err)
{
  uv_stream_t *in = rpc_stdio_stream(loop, 0, err);
  if (in == NULL)
    return NULL;
  uv_stream_t *out = rpc_stdio_stream(loop, 1, err);
  if (out == NULL) {
    uv_close((uv_handle_t *)in, rpc_stdio_free_handle);
    return NULL;
  }
  /* Over stdio the one connection is the engine's life: an oversized message
   * is answered and skipped, and the connection goes on (docs/protocol.md,
   * known differences). */
  RpcLimits stdio_limits = *limits;
  stdio_limits.oversize_closes = false;
  RpcChannel *ch = rpc_channel_open(loop, in, out, &stdio_limits, handlers, data, "stdio");
  if (handlers->on_open != NULL)
    handlers->on_open(data, ch);
  return ch;
}
