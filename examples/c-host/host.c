/*
 * host.c: the smallest useful vigil host, in C on libvigilclient.
 *
 * Connects to a running `vigild --listen` over its Unix socket, opens a
 * session, starts the command given on the command line as a monitor,
 * prints the text of every notification the engine pushes (the envelope an
 * agent would read) until the monitor's ending notification, and exits
 * with the monitored command's exit code. The library does the wire
 * (msgpack-rpc, docs/protocol.md), checks who serves the socket, and
 * bounds what it reads; this file is only what a host decides.
 *
 *   vigil-c-host [-s SOCKET] [-l LABEL] [-p PATTERN]... [-n NOTIFY] -- PROGRAM [ARG...]
 *
 * Exit status: the command's own exit code; 128+N when it died of signal N;
 * 127 when the engine could not find the program, 126 when the allowlist
 * denied it, 125 for any other failure (no engine, a bad argument).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getopt, getcwd */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vigil/client.h>

#define HOST_MAX_PATTERNS 32
#define HOST_CWD_MAX 4096
#define EXIT_HOST_ERROR 125
#define EXIT_DENIED 126
#define EXIT_NOT_FOUND 127

/* Prints a message and exits with status. */
static void host_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void
host_die(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("vigil-c-host: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(status);
}

/* Exits on a failed call: the engine's refusals become the shell's
 * conventions (127 not found, 126 denied). */
static void
host_die_on(const vigil_error *err)
{
  host_die(err->code == VIGIL_ERR_COMMAND_NOT_FOUND ? EXIT_NOT_FOUND
           : err->code == VIGIL_ERR_DENIED          ? EXIT_DENIED
                                                    : EXIT_HOST_ERROR,
           "%s", err->message);
}

static void
host_usage(void)
{
  fprintf(stderr, "usage: vigil-c-host [-s SOCKET] [-l LABEL] [-p PATTERN]... [-n NOTIFY] "
                  "-- PROGRAM [ARG...]\n");
  exit(EXIT_HOST_ERROR);
}

int
main(int argc, char **argv)
{
  const char *socket_path = NULL, *label = NULL, *notify = NULL;
  const char *patterns[HOST_MAX_PATTERNS];
  size_t npatterns = 0;
  int opt;
  while ((opt = getopt(argc, argv, "s:l:p:n:h")) != -1) {
    switch (opt) {
    case 's': socket_path = optarg; break;
    case 'l': label = optarg; break;
    case 'n': notify = optarg; break;
    case 'p':
      if (npatterns == HOST_MAX_PATTERNS)
        host_die(EXIT_HOST_ERROR, "at most %d patterns", HOST_MAX_PATTERNS);
      patterns[npatterns++] = optarg;
      break;
    default: host_usage();
    }
  }
  if (optind >= argc)
    host_usage();

  /* NULL: the engine's default socket. The library refuses an engine that
   * runs as neither this user nor root before sending it a byte. */
  vigil_error err;
  vigil_client *c = vigil_client_connect(socket_path, &err);
  if (c == NULL)
    host_die(EXIT_HOST_ERROR, "%s", err.message);

  /* session_open {linger_ms: 0}: a fresh session the engine names for us.
   * A named session normally outlives its connection (so a restarted host
   * can resume it); with no linger, if this host dies, the engine stops the
   * command at once instead of leaving it to run unwatched. */
  vigil_args *args = vigil_args_new();
  vigil_args_uint(args, "linger_ms", 0);
  vigil_result res;
  if (vigil_client_call(c, "session_open", args, VIGIL_CLIENT_FOREVER, &res, &err) != 0)
    host_die_on(&err);
  fprintf(stderr, "vigil-c-host: session %s\n", vigil_result_str(&res, "session"));
  vigil_result_free(&res);
  vigil_args_free(args);

  /* monitor_start {argv, cwd, label?, patterns?, notify?}: cwd is ours, so a
   * relative path in the command means what it means here. */
  char cwd[HOST_CWD_MAX];
  if (getcwd(cwd, sizeof cwd) == NULL)
    host_die(EXIT_HOST_ERROR, "getcwd: cannot read the current directory");
  args = vigil_args_new();
  vigil_args_str_array(args, "argv", (const char *const *)&argv[optind], (size_t)(argc - optind));
  vigil_args_str(args, "cwd", cwd);
  if (label)
    vigil_args_str(args, "label", label);
  if (npatterns > 0)
    vigil_args_str_array(args, "patterns", patterns, npatterns);
  if (notify)
    vigil_args_str(args, "notify", notify);
  if (vigil_client_call(c, "monitor_start", args, VIGIL_CLIENT_FOREVER, &res, &err) != 0)
    host_die_on(&err);
  vigil_args_free(args);
  char monitor_id[64];
  int64_t pid = -1;
  snprintf(monitor_id, sizeof monitor_id, "%s", vigil_result_str(&res, "monitor_id"));
  vigil_result_int(&res, "pid", &pid);
  fprintf(stderr, "vigil-c-host: started %s (pid %lld)\n", monitor_id, (long long)pid);
  vigil_result_free(&res);

  /* Print notifications until our monitor's ending one: each monitor has
   * exactly one, and it comes after all of its output. */
  int status = EXIT_HOST_ERROR;
  for (;;) {
    vigil_notification n;
    if (vigil_client_next_notification(c, VIGIL_CLIENT_FOREVER, &n, &err) < 0)
      host_die(EXIT_HOST_ERROR, "%s", err.message);
    printf("--- notification seq=%llu type=%s ---\n", (unsigned long long)n.seq, n.type);
    if (n.text)
      fputs(n.text, stdout);
    fflush(stdout);
    bool ours_ended = n.ending && n.monitor_id && strcmp(n.monitor_id, monitor_id) == 0;
    if (ours_ended) {
      if (n.has_exit_code)
        status = (int)(n.exit_code & 0xff);
      else if (n.signal_number > 0)
        status = 128 + n.signal_number;
    }
    vigil_notification_free(&n);
    if (ours_ended)
      break;
  }
  vigil_client_close(c);
  return status;
}
