/*
 * The two ways to reach an engine, and the end of a client: a running
 * engine's Unix socket (vigil_client_connect), or an engine of the host's
 * own started as `vigild --stdio` (vigil_client_spawn). Either way the
 * client ends up with one non-blocking socket descriptor: the spawned
 * engine's stdin and stdout are both one end of a socketpair, so the host
 * polls one descriptor, writes never raise SIGPIPE (MSG_NOSIGNAL), and
 * closing our end is the engine's end of input, its signal to shut down.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_error.h"
#include "connection.h"
#include "link/endpoint.h"

extern char **environ;

/* At most this many extra_args are passed to a spawned vigild. */
#define TRANSPORT_SPAWN_ARGS_MAX 64

const char *
vigil_client_version(void)
{
  return VIGIL_CLIENT_VERSION;
}

int
vigil_client_default_socket_path(char *buf, size_t size)
{
  return endpoint_default_path(buf, size);
}

vigil_client *
vigil_client_connect(const char *socket_path, vigil_error *err)
{
  char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (socket_path == NULL) {
    if (endpoint_default_path(def, sizeof def) != 0) {
      client_error(err, VIGIL_ERR_USAGE, "the default socket path is longer than the %zu "
                   "bytes a Unix socket address holds ($XDG_RUNTIME_DIR is too long)",
                   sizeof def - 1);
      return NULL;
    }
    socket_path = def;
  }
  int fd;
  char why[CLIENT_WHERE_MAX + 300];
  switch (endpoint_connect(socket_path, &fd, why, sizeof why)) {
  case kEndpointOk:
    break;
  case kEndpointBadPath:
    client_error(err, VIGIL_ERR_USAGE, "%s", why);
    return NULL;
  case kEndpointNoEngine:
    client_error(err, VIGIL_ERR_NO_ENGINE, "%s (is `vigild --listen` running?)", why);
    return NULL;
  default:
    client_error(err, VIGIL_ERR_CONNECTION, "%s", why);
    return NULL;
  }
  char where[CLIENT_WHERE_MAX];
  snprintf(where, sizeof where, "the engine at %s", socket_path);
  return client_new(fd, -1, where, err);
}

/* Waits for pid and returns its exit status as a shell shows it. */
static int
transport_reap(pid_t pid)
{
  int status;
  pid_t r;
  do
    r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return -1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* Starts vigild with argv on one end of a socketpair; the other end in *fd.
 * The child gets the default disposition of every signal and an empty
 * mask, whatever the host set (an ignored SIGCHLD or SIGPIPE would
 * otherwise reach the engine through exec). */
static pid_t
transport_start(const char *program, char *const argv[], int *fd, vigil_error *err)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    client_error(err, VIGIL_ERR_NO_ENGINE, "socketpair: %s", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int rc = strchr(program, '/') ? posix_spawn(&pid, program, &fa, &attr, argv, environ)
                                : posix_spawnp(&pid, program, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    client_error(err, VIGIL_ERR_NO_ENGINE, "cannot start %s: %s", program, strerror(rc));
    return -1;
  }
  *fd = sv[0];
  return pid;
}

vigil_client *
vigil_client_spawn(const char *vigild_path, const char *config_path,
                   const char *const *extra_args, vigil_error *err)
{
  const char *program = vigild_path ? vigild_path : "vigild";
  char *argv[TRANSPORT_SPAWN_ARGS_MAX + 5];
  size_t argc = 0;
  argv[argc++] = (char *)program;
  argv[argc++] = (char *)"--stdio";
  if (config_path != NULL) {
    argv[argc++] = (char *)"--config";
    argv[argc++] = (char *)config_path;
  }
  for (size_t i = 0; extra_args != NULL && extra_args[i] != NULL; i++) {
    if (i == TRANSPORT_SPAWN_ARGS_MAX) {
      client_error(err, VIGIL_ERR_USAGE, "extra_args: at most %d arguments",
                   TRANSPORT_SPAWN_ARGS_MAX);
      return NULL;
    }
    argv[argc++] = (char *)extra_args[i];
  }
  argv[argc] = NULL;

  int fd;
  pid_t pid = transport_start(program, argv, &fd, err);
  if (pid < 0)
    return NULL;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  char where[CLIENT_WHERE_MAX];
  snprintf(where, sizeof where, "vigild (pid %ld)", (long)pid);
  vigil_client *c = client_new(fd, pid, where, err);
  if (c == NULL) {
    transport_reap(pid); /* it read the end of its input: it exits */
    return NULL;
  }
  /* Its first answer: the config is loaded and it is serving. An engine
   * that refuses its config exits instead; say so, with its status. */
  vigil_error first;
  if (vigil_client_call(c, "ping", NULL, VIGIL_CLIENT_SPAWN_WAIT_MS, NULL, &first) != 0) {
    if (first.code == VIGIL_ERR_TIMEOUT)
      kill(pid, SIGTERM);
    close(c->fd);
    client_release(c);
    free(c);
    int status = transport_reap(pid);
    if (first.code == VIGIL_ERR_TIMEOUT)
      client_error(err, VIGIL_ERR_NO_ENGINE, "%s (%s) did not answer within %d ms; stopped it",
                   program, where, VIGIL_CLIENT_SPAWN_WAIT_MS);
    else
      client_error(err, VIGIL_ERR_NO_ENGINE, "%s exited with status %d before answering; its "
                   "log (on stderr) says why", program, status);
    return NULL;
  }
  return c;
}

int
vigil_client_close(vigil_client *c)
{
  if (c == NULL)
    return 0;
  close(c->fd);
  client_release(c);
  int status = c->engine_pid > 0 ? transport_reap(c->engine_pid) : 0;
  free(c);
  return status;
}

int
vigil_client_fd(const vigil_client *c)
{
  return c ? c->fd : -1;
}

long
vigil_client_engine_pid(const vigil_client *c)
{
  return c && c->engine_pid > 0 ? (long)c->engine_pid : -1;
}
