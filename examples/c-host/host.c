/*
 * host.c: the smallest useful vigil host, in C with msgpack-c.
 *
 * Connects to a running `vigild --listen` over its Unix socket, opens a
 * session, starts the command given on the command line as a monitor, prints
 * the text of every notification the engine pushes (the envelope an agent
 * would read) until the monitor's ending notification, and exits with the
 * monitored command's exit code. Blocking I/O throughout: a real host would
 * put the socket in its event loop, but the protocol is the same.
 *
 *   vigil-c-host [-s SOCKET] [-l LABEL] [-p PATTERN]... [-n NOTIFY] -- PROGRAM [ARG...]
 *
 * Exit status: the command's own exit code; 128+N when it died of signal N;
 * 127 when the engine could not find the program, 126 when the allowlist
 * denied it, 125 for any other failure (no engine, a bad argument).
 *
 * The wire (docs/protocol.md): a stream of msgpack arrays, no length prefix:
 *   request      [0, msgid, method, [ {named arguments} ]]
 *   response     [1, msgid, error, result]     error = [code, message] or nil
 *   notification [2, "vigil.notification", [ {session, seq, type, text, ...} ]]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getopt, and nothing past POSIX... */
#endif
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* ...but struct ucred, to ask who serves the socket (SO_PEERCRED) */
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <msgpack.h>

#define HOST_MAX_PATTERNS 32
#define EXIT_HOST_ERROR 125
#define EXIT_DENIED 126
#define EXIT_NOT_FOUND 127

/* vigil's error codes this host treats specially (docs/protocol.md section 4). */
#define VIGIL_ERR_DENIED 3
#define VIGIL_ERR_COMMAND_NOT_FOUND 6

static int host_fd = -1;
static msgpack_unpacker host_unpacker;
static uint32_t host_next_msgid = 1;

/* What the ending notification says; filled in by host_on_notification. */
static bool host_ended;
static int host_exit_status;
static char host_monitor_id[64];

/* Prints a message and exits with status. */
static void
host_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

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

/* --- reading msgpack objects -------------------------------------------- */

/* The value under key in a msgpack map, or NULL when absent (or not a map). */
static const msgpack_object *
obj_get(const msgpack_object *map, const char *key)
{
  if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
    return NULL;
  size_t len = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object_kv *kv = &map->via.map.ptr[i];
    if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == len &&
        memcmp(kv->key.via.str.ptr, key, len) == 0)
      return &kv->val;
  }
  return NULL;
}

/* Copies a str (or bin) object into buf as a C string; "" for anything else. */
static const char *
obj_str(const msgpack_object *o, char *buf, size_t size)
{
  const char *p = NULL;
  size_t n = 0;
  if (o && o->type == MSGPACK_OBJECT_STR) {
    p = o->via.str.ptr;
    n = o->via.str.size;
  } else if (o && o->type == MSGPACK_OBJECT_BIN) {
    p = o->via.bin.ptr;
    n = o->via.bin.size;
  }
  if (n >= size)
    n = size - 1;
  if (n > 0)
    memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

/* An integer object's value, or def when o is missing or nil. */
static int64_t
obj_int(const msgpack_object *o, int64_t def)
{
  if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    return (int64_t)o->via.u64;
  if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    return o->via.i64;
  return def;
}

/* --- writing requests --------------------------------------------------- */

static void
pack_cstr(msgpack_packer *pk, const char *s)
{
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

/* Writes the whole buffer to the socket. */
static void
host_send(const msgpack_sbuffer *sb)
{
  size_t off = 0;
  while (off < sb->size) {
    ssize_t n = write(host_fd, sb->data + off, sb->size - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      host_die(EXIT_HOST_ERROR, "write: %s", strerror(errno));
    off += (size_t)n;
  }
}

/* Starts a request: packs [0, msgid, method, [ and leaves the packer ready
 * for the argument map, which the caller packs. Returns the msgid. */
static uint32_t
host_request_begin(msgpack_sbuffer *sb, msgpack_packer *pk, const char *method)
{
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
  msgpack_pack_array(pk, 4);
  msgpack_pack_int(pk, 0);
  msgpack_pack_uint32(pk, host_next_msgid);
  pack_cstr(pk, method);
  msgpack_pack_array(pk, 1);
  return host_next_msgid++;
}

/* --- reading the stream ------------------------------------------------- */

/* Maps a signal name ("SIGKILL") to its number, 0 if unknown. */
static int
host_signal_number(const char *name)
{
  static const struct { const char *name; int sig; } sigs[] = {
    {"SIGHUP", SIGHUP}, {"SIGINT", SIGINT}, {"SIGQUIT", SIGQUIT}, {"SIGILL", SIGILL},
    {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS}, {"SIGFPE", SIGFPE}, {"SIGKILL", SIGKILL},
    {"SIGSEGV", SIGSEGV}, {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
  };
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    if (strcmp(name, sigs[i].name) == 0)
      return sigs[i].sig;
  return 0;
}

/* Handles one vigil.notification: prints its text; on the monitor's ending
 * notification, records the exit status. */
static void
host_on_notification(const msgpack_object *n)
{
  char type[32], text_id[64], sig[32];
  obj_str(obj_get(n, "type"), type, sizeof type);
  const msgpack_object *text = obj_get(n, "text");
  printf("--- notification seq=%lld type=%s ---\n", (long long)obj_int(obj_get(n, "seq"), 0), type);
  if (text && text->type == MSGPACK_OBJECT_STR)
    fwrite(text->via.str.ptr, 1, text->via.str.size, stdout);
  fflush(stdout);

  bool ending = strcmp(type, "exit") == 0 || strcmp(type, "stopped") == 0 ||
                strcmp(type, "timed_out") == 0 || strcmp(type, "idle_timeout") == 0 ||
                strcmp(type, "overload") == 0;
  obj_str(obj_get(n, "monitor_id"), text_id, sizeof text_id);
  if (!ending || strcmp(text_id, host_monitor_id) != 0)
    return;
  host_ended = true;
  int64_t code = obj_int(obj_get(n, "exit_code"), -1);
  int signo = host_signal_number(obj_str(obj_get(n, "signal"), sig, sizeof sig));
  if (code >= 0)
    host_exit_status = (int)(code & 0xff);
  else
    host_exit_status = signo ? 128 + signo : EXIT_HOST_ERROR;
}

/* Reads messages until the response to msgid arrives (printing any
 * notification on the way) and returns it in *out, which the caller must
 * destroy; with msgid 0, reads until the monitor has ended. Exits when the
 * engine answers with an error or closes the connection. */
static void
host_wait(uint32_t msgid, const char *method, msgpack_unpacked *out)
{
  msgpack_unpacked msg;
  msgpack_unpacked_init(&msg);
  for (;;) {
    msgpack_unpack_return rc;
    while ((rc = msgpack_unpacker_next(&host_unpacker, &msg)) == MSGPACK_UNPACK_SUCCESS) {
      const msgpack_object *o = &msg.data;
      if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3)
        continue;
      const msgpack_object *a = o->via.array.ptr;
      int64_t kind = obj_int(&a[0], -1);
      if (kind == 2 && o->via.array.size == 3 && a[2].type == MSGPACK_OBJECT_ARRAY &&
          a[2].via.array.size == 1) {
        char name[32];
        if (strcmp(obj_str(&a[1], name, sizeof name), "vigil.notification") == 0)
          host_on_notification(&a[2].via.array.ptr[0]);
        if (msgid == 0 && host_ended) {
          msgpack_unpacked_destroy(&msg);
          return;
        }
      } else if (kind == 1 && o->via.array.size == 4 && obj_int(&a[1], -1) == (int64_t)msgid) {
        if (a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size == 2) {
          char message[1024];
          int64_t code = obj_int(&a[2].via.array.ptr[0], 0);
          obj_str(&a[2].via.array.ptr[1], message, sizeof message);
          host_die(code == VIGIL_ERR_COMMAND_NOT_FOUND ? EXIT_NOT_FOUND
                   : code == VIGIL_ERR_DENIED          ? EXIT_DENIED
                                                       : EXIT_HOST_ERROR,
                   "%s: %s", method, message);
        }
        *out = msg; /* the caller reads the result and destroys it */
        return;
      }
    }
    if (rc == MSGPACK_UNPACK_PARSE_ERROR)
      host_die(EXIT_HOST_ERROR, "the engine sent bytes that are not msgpack");

    /* Need more bytes: read straight into the unpacker's buffer. */
    if (!msgpack_unpacker_reserve_buffer(&host_unpacker, 65536))
      host_die(EXIT_HOST_ERROR, "out of memory");
    ssize_t n = read(host_fd, msgpack_unpacker_buffer(&host_unpacker),
                     msgpack_unpacker_buffer_capacity(&host_unpacker));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      host_die(EXIT_HOST_ERROR, "read: %s", strerror(errno));
    if (n == 0)
      host_die(EXIT_HOST_ERROR, "the engine closed the connection");
    msgpack_unpacker_buffer_consumed(&host_unpacker, (size_t)n);
  }
}

/* --- main --------------------------------------------------------------- */

/* The engine's default socket: $XDG_RUNTIME_DIR/vigil/vigil.sock, else
 * /tmp/vigil-$UID/vigil.sock (as vigild --listen chooses it). */
static void
host_default_socket(char *buf, size_t size)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg && xdg[0])
    snprintf(buf, size, "%s/vigil/vigil.sock", xdg);
  else
    snprintf(buf, size, "/tmp/vigil-%u/vigil.sock", (unsigned)getuid());
}

static void
host_usage(void)
{
  fprintf(stderr, "usage: vigil-c-host [-s SOCKET] [-l LABEL] [-p PATTERN]... [-n NOTIFY] "
                  "-- PROGRAM [ARG...]\n");
  exit(EXIT_HOST_ERROR);
}

/* Refuses a server that runs as neither this user nor root, before a byte
 * is sent: whoever owns the socket's directory could have put their own
 * socket there and would read the argv (and any token in it) we send. */
static void
host_check_server(int fd, const char *path)
{
  uid_t uid;
#if defined(SO_PEERCRED)
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    host_die(EXIT_HOST_ERROR, "cannot tell who serves %s: %s", path, strerror(errno));
  uid = cred.uid;
#else
  gid_t gid;
  if (getpeereid(fd, &uid, &gid) != 0)
    host_die(EXIT_HOST_ERROR, "cannot tell who serves %s: %s", path, strerror(errno));
#endif
  if (uid != geteuid() && uid != 0)
    host_die(EXIT_HOST_ERROR, "refusing the engine at %s: it runs as uid %u, not as uid %u "
             "(yours) or root", path, (unsigned)uid, (unsigned)geteuid());
}

int
main(int argc, char **argv)
{
  char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  const char *label = NULL, *notify = NULL;
  const char *patterns[HOST_MAX_PATTERNS];
  size_t npatterns = 0;
  int opt;

  host_default_socket(socket_path, sizeof socket_path);
  while ((opt = getopt(argc, argv, "s:l:p:n:h")) != -1) {
    switch (opt) {
    case 's':
      if (strlen(optarg) >= sizeof socket_path)
        host_die(EXIT_HOST_ERROR, "socket path too long: %s", optarg);
      strcpy(socket_path, optarg);
      break;
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

  /* Connect. The engine checks that we run as its own uid; we check that
   * it runs as ours (or root). */
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strcpy(addr.sun_path, socket_path);
  host_fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (host_fd < 0 || connect(host_fd, (struct sockaddr *)&addr, sizeof addr) != 0)
    host_die(EXIT_HOST_ERROR, "cannot connect to %s: %s (is `vigild --listen` running?)",
             socket_path, strerror(errno));
  host_check_server(host_fd, socket_path);
  if (!msgpack_unpacker_init(&host_unpacker, 65536))
    host_die(EXIT_HOST_ERROR, "out of memory");

  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_unpacked res;
  char buf[256];

  /* session_open {linger_ms: 0}: a fresh session the engine names for us.
   * A named session normally outlives its connection (so a restarted host
   * can resume it); with no linger, if this host dies, the engine stops the
   * command at once instead of leaving it to run unwatched. */
  uint32_t id = host_request_begin(&sb, &pk, "session_open");
  msgpack_pack_map(&pk, 1);
  pack_cstr(&pk, "linger_ms");
  msgpack_pack_int(&pk, 0);
  host_send(&sb);
  msgpack_sbuffer_destroy(&sb);
  host_wait(id, "session_open", &res);
  fprintf(stderr, "vigil-c-host: session %s\n",
          obj_str(obj_get(&res.data.via.array.ptr[3], "session"), buf, sizeof buf));
  msgpack_unpacked_destroy(&res);

  /* monitor_start {argv, cwd, label?, patterns?, notify?}: cwd is ours, so a
   * relative path in the command means what it means here. */
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == NULL)
    host_die(EXIT_HOST_ERROR, "getcwd: %s", strerror(errno));
  id = host_request_begin(&sb, &pk, "monitor_start");
  msgpack_pack_map(&pk, 2 + (label != NULL) + (npatterns > 0) + (notify != NULL));
  pack_cstr(&pk, "argv");
  msgpack_pack_array(&pk, (size_t)(argc - optind));
  for (int i = optind; i < argc; i++)
    pack_cstr(&pk, argv[i]);
  pack_cstr(&pk, "cwd");
  pack_cstr(&pk, cwd);
  if (label) {
    pack_cstr(&pk, "label");
    pack_cstr(&pk, label);
  }
  if (npatterns > 0) {
    pack_cstr(&pk, "patterns");
    msgpack_pack_array(&pk, npatterns);
    for (size_t i = 0; i < npatterns; i++)
      pack_cstr(&pk, patterns[i]);
  }
  if (notify) {
    pack_cstr(&pk, "notify");
    pack_cstr(&pk, notify);
  }
  host_send(&sb);
  msgpack_sbuffer_destroy(&sb);
  host_wait(id, "monitor_start", &res);
  const msgpack_object *result = &res.data.via.array.ptr[3];
  obj_str(obj_get(result, "monitor_id"), host_monitor_id, sizeof host_monitor_id);
  fprintf(stderr, "vigil-c-host: started %s (pid %lld)\n", host_monitor_id,
          (long long)obj_int(obj_get(result, "pid"), -1));
  msgpack_unpacked_destroy(&res);

  /* Print notifications until the monitor's ending one. */
  host_wait(0, "monitor_start", NULL);
  msgpack_unpacker_destroy(&host_unpacker);
  close(host_fd);
  return host_exit_status;
}
