/*
 * client_test.c: libvigilclient against the real vigild of this build
 * ($VIGIL_BUILD_DIR/vigild), as a host uses it: over the socket of an
 * engine started here with a config written to a temporary directory, and
 * over a spawned `vigild --stdio`. Each test is a function; the first
 * failed check prints what was expected and the engine's log, and exits 1.
 *
 * Also a fake engine (a forked child serving a socket of its own) that
 * sends what vigild never would: bytes that are not msgpack, and a header
 * declaring four billion elements. The client must give up the connection
 * with a clear error, allocating nothing for what was declared.
 *
 * No sleeps: every wait is on an event (a notification, an answer, the
 * socket accepting) with a generous bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vigil/client.h"

#include "link/frame.h" /* compiled in from base/: the framer is tested directly too */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long anything may take on a loaded machine. */
#define WAIT_MS 30000

static char test_dir[256];
static char test_config[300];
static char test_socket[300];
static char test_log[300];
static char test_vigild[512];
static pid_t test_engine = -1;
static pid_t test_fake = -1; /* a fake engine (test_fake_engine) while it serves */
static const char *test_current = "setup";

/* --- checks ---------------------------------------------------------------- */

static void
test_print_log(void)
{
  FILE *f = fopen(test_log, "r");
  if (f == NULL)
    return;
  char line[2048];
  fprintf(stderr, "--- vigild log ---\n");
  while (fgets(line, sizeof line, f))
    fputs(line, stderr);
  fclose(f);
}

static void test_fail(int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void
test_fail(int line, const char *cond, const char *fmt, ...)
{
  fprintf(stderr, "FAIL %s (client_test.c:%d): %s\n  ", test_current, line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  test_print_log();
  exit(1);
}

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond))                                                                                  \
      test_fail(__LINE__, #cond, __VA_ARGS__);                                                    \
  } while (0)

/* A call that must succeed. */
#define CALL_OK(c, method, args, res)                                                             \
  do {                                                                                            \
    vigil_error call_err_;                                                                        \
    int call_rc_ = vigil_client_call((c), (method), (args), WAIT_MS, (res), &call_err_);          \
    CHECK(call_rc_ == 0, "%s failed: %s", (method), call_err_.message);                           \
  } while (0)

/* --- the engine under test ------------------------------------------------ */

static int
test_remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

/* Stops the listening engine and removes the directory: at exit, whatever
 * happened, so no process outlives the test. */
static void
test_cleanup(void)
{
  if (test_fake > 0) {
    kill(test_fake, SIGKILL);
    waitpid(test_fake, NULL, 0);
    test_fake = -1;
  }
  if (test_engine > 0) {
    kill(test_engine, SIGTERM);
    waitpid(test_engine, NULL, 0);
    test_engine = -1;
  }
  if (test_dir[0])
    nftw(test_dir, test_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void
test_write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

/* Starts vigild --listen on test_socket and waits until it accepts. */
static void
test_start_engine(void)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, test_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  char *argv[] = {test_vigild, "--listen", test_socket, "--config", test_config, NULL};
  int rc = posix_spawn(&test_engine, test_vigild, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  CHECK(rc == 0, "cannot start %s: %s", test_vigild, strerror(rc));
  /* The socket appears when the engine listens: polled at start-up only. */
  struct timespec start, now, tick = {0, 10 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    vigil_client *c = vigil_client_connect(test_socket, NULL);
    if (c != NULL) {
      vigil_client_close(c);
      return;
    }
    int status;
    CHECK(waitpid(test_engine, &status, WNOHANG) == 0, "vigild exited at start (status %d)",
          status);
    clock_gettime(CLOCK_MONOTONIC, &now);
    CHECK(now.tv_sec - start.tv_sec < 20, "vigild never listened on %s", test_socket);
    nanosleep(&tick, NULL);
  }
}

static vigil_client *
test_connect(void)
{
  vigil_error err;
  vigil_client *c = vigil_client_connect(test_socket, &err);
  CHECK(c != NULL, "connect: %s", err.message);
  return c;
}

/* The next notification, which must come within WAIT_MS. */
static void
test_next(vigil_client *c, vigil_notification *n)
{
  vigil_error err;
  int rc = vigil_client_next_notification(c, WAIT_MS, n, &err);
  CHECK(rc == 1, "no notification within %d ms (rc %d: %s)", WAIT_MS, rc,
        rc < 0 ? err.message : "none");
}

/* Starts `sh -c script` as a monitor and returns its id in id. */
static void
test_start_sh(vigil_client *c, const char *script, const char *const *patterns,
              size_t npatterns, char *id, size_t size)
{
  const char *argv[] = {"sh", "-c", script};
  vigil_args *a = vigil_args_new();
  vigil_args_str_array(a, "argv", argv, 3);
  vigil_args_str_array(a, "patterns", patterns, npatterns);
  vigil_result res;
  CALL_OK(c, "monitor_start", a, &res);
  const char *mid = vigil_result_str(&res, "monitor_id");
  CHECK(mid != NULL && strncmp(mid, "mon_", 4) == 0, "monitor_id %s", mid ? mid : "(none)");
  snprintf(id, size, "%s", mid);
  vigil_result_free(&res);
  vigil_args_free(a);
}

/* --- tests ------------------------------------------------------------------ */

/* Feeds len bytes to f one at a time; returns how many complete messages
 * came out, their lengths in lens. */
static size_t
test_frame_trickle(Frame *f, const char *data, size_t len, size_t *lens, size_t max)
{
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    size_t space;
    char *room = frame_reserve(f, 1, &space);
    CHECK(room != NULL && space >= 1, "room");
    *room = data[i];
    frame_commit(f, 1);
    const char *msg;
    size_t mlen;
    char why[300];
    FrameResult r;
    while ((r = frame_next(f, &msg, &mlen, why, sizeof why)) == kFrameComplete) {
      CHECK(n < max, "too many messages");
      lens[n++] = mlen;
    }
    CHECK(r == kFrameNeedMore, "byte %zu: %s", i, why);
  }
  return n;
}

/* The framer finds message boundaries however the bytes arrive: every
 * kind of header, split anywhere. */
static void
test_frame(void)
{
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  /* Message 1: [2, "vigil.notification", [{every kind of value}]] */
  msgpack_pack_array(&pk, 3);
  msgpack_pack_int(&pk, 2);
  msgpack_pack_str_with_body(&pk, "vigil.notification", 18);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 9);
  char big[70000];
  memset(big, 'y', sizeof big);
  msgpack_pack_str_with_body(&pk, "s8", 2), msgpack_pack_str_with_body(&pk, big, 200);
  msgpack_pack_str_with_body(&pk, "s16", 3), msgpack_pack_str_with_body(&pk, big, 300);
  msgpack_pack_str_with_body(&pk, "s32", 3), msgpack_pack_str_with_body(&pk, big, sizeof big);
  msgpack_pack_str_with_body(&pk, "bin", 3), msgpack_pack_bin_with_body(&pk, big, 5);
  msgpack_pack_str_with_body(&pk, "ext", 3), msgpack_pack_ext_with_body(&pk, big, 3, 7);
  msgpack_pack_str_with_body(&pk, "f", 1), msgpack_pack_double(&pk, 1.5);
  msgpack_pack_str_with_body(&pk, "n", 1), msgpack_pack_int64(&pk, -5000000000LL);
  msgpack_pack_str_with_body(&pk, "u", 1), msgpack_pack_uint64(&pk, 1ULL << 40);
  msgpack_pack_str_with_body(&pk, "empty", 5), msgpack_pack_map(&pk, 0);
  size_t first = sb.size;
  /* Message 2: [1, 7, nil, {}] */
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_int(&pk, 7);
  msgpack_pack_nil(&pk);
  msgpack_pack_map(&pk, 0);
  Frame f;
  frame_init(&f, (size_t)1 << 20);
  size_t lens[4];
  CHECK(test_frame_trickle(&f, sb.data, sb.size, lens, 4) == 2, "two messages");
  CHECK(lens[0] == first && lens[1] == sb.size - first, "lengths %zu %zu", lens[0], lens[1]);
  frame_free(&f);

  /* The same bytes under a bound they pass: refused at the long string's
   * header, with the bound and what it declared. */
  frame_init(&f, 4096);
  size_t space;
  char *room = frame_reserve(&f, sb.size, &space);
  memcpy(room, sb.data, sb.size);
  frame_commit(&f, sb.size);
  const char *msg;
  size_t mlen;
  char why[300];
  CHECK(frame_next(&f, &msg, &mlen, why, sizeof why) == kFrameBad, "over the bound");
  CHECK(strstr(why, "over max_message_bytes (4096)") && strstr(why, "declares 70000 bytes"),
        "%s", why);
  frame_free(&f);
  msgpack_sbuffer_destroy(&sb);

  /* Nesting past FRAME_MAX_DEPTH. */
  char deep[FRAME_MAX_DEPTH + 2];
  memset(deep, 0x91, sizeof deep - 1);
  deep[sizeof deep - 1] = 0x00;
  frame_init(&f, 4096);
  room = frame_reserve(&f, sizeof deep, &space);
  memcpy(room, deep, sizeof deep);
  frame_commit(&f, sizeof deep);
  CHECK(frame_next(&f, &msg, &mlen, why, sizeof why) == kFrameBad &&
            strstr(why, "nested deeper than 32 levels"),
        "%s", why);
  frame_free(&f);
}

/* ping answers with the engine's version, the one this library came with. */
static void
test_ping(void)
{
  vigil_client *c = test_connect();
  vigil_result res;
  CALL_OK(c, "ping", NULL, &res);
  const char *version = vigil_result_str(&res, "version");
  int64_t level = 0;
  CHECK(version && strcmp(version, vigil_client_version()) == 0, "version %s, library %s",
        version ? version : "(none)", vigil_client_version());
  CHECK(vigil_result_int(&res, "api_level", &level) && level == 1, "api_level %lld",
        (long long)level);
  CHECK(vigil_result_str(&res, "no_such_key") == NULL, "an absent key reads as NULL");
  vigil_result_free(&res);
  CHECK(vigil_client_close(c) == 0, "closing a socket connection gives 0");
}

/* A monitor's match and its exit arrive as typed notifications. */
static void
test_monitor_notifications(void)
{
  vigil_client *c = test_connect();
  vigil_args *a = vigil_args_new();
  vigil_args_uint(a, "linger_ms", 0);
  vigil_result res;
  CALL_OK(c, "session_open", a, &res);
  vigil_args_free(a);
  char session[80];
  snprintf(session, sizeof session, "%s", vigil_result_str(&res, "session"));
  CHECK(strncmp(session, "ses_", 4) == 0, "session %s", session);
  vigil_result_free(&res);

  const char *patterns[] = {"^Error: "};
  char id[64];
  test_start_sh(c, "echo hello; echo 'Error: boom' >&2; exit 3", patterns, 1, id, sizeof id);

  vigil_notification n;
  test_next(c, &n);
  CHECK(n.kind == VIGIL_NOTIFICATION_OUTPUT && !n.ending, "first is output, got %s", n.type);
  CHECK(strcmp(n.type, "output") == 0 && n.seq == 1, "type %s seq %llu", n.type,
        (unsigned long long)n.seq);
  CHECK(n.monitor_id && strcmp(n.monitor_id, id) == 0, "monitor_id %s", n.monitor_id);
  CHECK(n.session && strcmp(n.session, session) == 0, "session %s", n.session);
  CHECK(n.delivery == VIGIL_DELIVERY_IDLE && n.batch == 1, "idle, batch 1");
  CHECK(n.text && strstr(n.text, "<<<VIGIL OBSERVATION ") && strstr(n.text, "Error: boom"),
        "the envelope: %s", n.text ? n.text : "(none)");
  CHECK(n.nlines == 1, "one matching line, got %zu", n.nlines);
  CHECK(strcmp(n.lines[0].text, "Error: boom") == 0 && strcmp(n.lines[0].stream, "stderr") == 0 &&
            n.lines[0].pattern == 0 && !n.lines[0].truncated,
        "line %s on %s, pattern %lld", n.lines[0].text, n.lines[0].stream,
        (long long)n.lines[0].pattern);
  CHECK(n.epoch && strlen(n.epoch) == 16 && n.raw != NULL, "epoch and raw map");
  vigil_notification_free(&n);

  test_next(c, &n);
  CHECK(n.kind == VIGIL_NOTIFICATION_EXIT && n.ending && n.seq == 2, "then exit, got %s seq %llu",
        n.type, (unsigned long long)n.seq);
  CHECK(n.has_exit_code && n.exit_code == 3 && n.signal == NULL && n.signal_number == 0,
        "exit code 3, got %lld", (long long)n.exit_code);
  CHECK(n.state && strcmp(n.state, "exited") == 0 && n.has_duration_ms, "state exited");
  CHECK(n.nlines == 2 && strcmp(n.lines[0].text, "hello") == 0 && n.lines[1].pattern == 0,
        "the last lines, both streams: %zu", n.nlines);
  vigil_notification_free(&n);

  /* A signal's death: the name and this machine's number. */
  test_start_sh(c, "kill -9 $$", NULL, 0, id, sizeof id);
  test_next(c, &n);
  CHECK(n.kind == VIGIL_NOTIFICATION_EXIT && !n.has_exit_code, "an exit by signal: %s", n.type);
  CHECK(n.signal && strcmp(n.signal, "SIGKILL") == 0 && n.signal_number == SIGKILL,
        "signal %s (%d)", n.signal ? n.signal : "(none)", n.signal_number);
  vigil_notification_free(&n);
  vigil_client_close(c);
}

/* Notifications read while a call waits for its answer are queued, in
 * order, and the queue says how many wait. */
static void
test_queued_during_call(void)
{
  vigil_client *c = test_connect();
  char id[64];
  test_start_sh(c, "echo one; sleep 1; exit 0", NULL, 0, id, sizeof id);
  CHECK(vigil_client_queued(c) == 0, "nothing queued yet");
  vigil_args *a = vigil_args_new();
  vigil_args_str(a, "monitor_id", id);
  vigil_args_str(a, "for", "exit");
  vigil_result res;
  CALL_OK(c, "monitor_wait", a, &res);
  vigil_args_free(a);
  const msgpack_object *event = vigil_result_get(&res, "event");
  CHECK(event && strcmp(vigil_object_str(vigil_object_get(event, "type")), "exited") == 0,
        "monitor_wait answers with the exited event");
  vigil_result_free(&res);
  /* The output notification came while monitor_wait waited (the process
   * slept a second after printing): it is queued, not lost. */
  CHECK(vigil_client_queued(c) >= 1, "the output queued during the call");
  vigil_notification n;
  CHECK(vigil_client_next_notification(c, 0, &n, NULL) == 1, "taken without waiting");
  CHECK(n.kind == VIGIL_NOTIFICATION_OUTPUT && n.nlines == 1 &&
            strcmp(n.lines[0].text, "one") == 0 && n.lines[0].pattern == -1,
        "the output: %s", n.type);
  vigil_notification_free(&n);
  test_next(c, &n);
  CHECK(n.kind == VIGIL_NOTIFICATION_EXIT && n.exit_code == 0, "then the exit: %s", n.type);
  vigil_notification_free(&n);
  CHECK(vigil_client_next_notification(c, 0, &n, NULL) == 0, "then nothing");
  vigil_client_close(c);
}

/* A session's model cursor (docs/protocol.md, "Model cursors"): a take
 * gives what is above the cursor once, typed as pushed notifications, and
 * a take that waits is answered by the next notification. */
static void
test_cursor(void)
{
  vigil_client *c = test_connect();
  vigil_args *a = vigil_args_new();
  vigil_args_str(a, "session", "cursor-test");
  vigil_args_uint(a, "linger_ms", 0);
  vigil_result res;
  CALL_OK(c, "session_open", a, &res);
  vigil_result_free(&res);
  vigil_args_free(a);
  char id[64];
  test_start_sh(c, "echo built", NULL, 0, id, sizeof id);
  vigil_notification n;
  test_next(c, &n); /* the output, pushed */
  vigil_notification_free(&n);
  test_next(c, &n); /* the exit */
  vigil_notification_free(&n);

  a = vigil_args_new();
  vigil_args_str(a, "cursor", "model");
  vigil_args_uint(a, "limit", 1);
  CALL_OK(c, "cursor_take", a, &res);
  vigil_args_free(a);
  int64_t cursor = -1, last = -1, dropped = -1;
  CHECK(vigil_result_int(&res, "cursor", &cursor) && cursor == 1 &&
            vigil_result_int(&res, "last_seq", &last) && last == 2 &&
            vigil_result_int(&res, "dropped", &dropped) && dropped == 0,
        "cursor %lld, last_seq %lld, dropped %lld", (long long)cursor, (long long)last,
        (long long)dropped);
  vigil_error err;
  CHECK(vigil_result_notification(&res, 0, &n, &err) == 1, "the first: %s", err.message);
  vigil_result_free(&res); /* n is a copy: it outlives the result */
  CHECK(n.kind == VIGIL_NOTIFICATION_OUTPUT && n.seq == 1 && n.nlines == 1 &&
            strcmp(n.lines[0].text, "built") == 0 && strstr(n.text, "<<<VIGIL OBSERVATION "),
        "taken as pushed: %s seq %llu", n.type, (unsigned long long)n.seq);
  vigil_notification_free(&n);

  /* The rest, then nothing; the list is only a take's. */
  a = vigil_args_new();
  vigil_args_str(a, "cursor", "model");
  CALL_OK(c, "cursor_take", a, &res);
  CHECK(vigil_result_notification(&res, 0, &n, &err) == 1 && n.kind == VIGIL_NOTIFICATION_EXIT &&
            n.seq == 2,
        "then the exit");
  vigil_notification_free(&n);
  CHECK(vigil_result_notification(&res, 1, &n, &err) == 0, "and no more");
  vigil_result_free(&res);
  CALL_OK(c, "ping", NULL, &res);
  CHECK(vigil_result_notification(&res, 0, &n, &err) == -1 && err.code == VIGIL_ERR_USAGE,
        "ping has no notifications: %s", err.message);
  vigil_result_free(&res);

  /* A take that waits, answered by the next notification. */
  vigil_args_uint(a, "wait_ms", WAIT_MS);
  uint32_t msgid;
  CHECK(vigil_client_request(c, "cursor_take", a, &msgid, &err) == 0, "%s", err.message);
  vigil_args_free(a);
  CALL_OK(c, "ping", NULL, &res); /* the take is waiting in the engine */
  vigil_result_free(&res);
  test_start_sh(c, "echo again", NULL, 0, id, sizeof id);
  CHECK(vigil_client_response(c, msgid, WAIT_MS, &res, &err) == 1, "woken: %s", err.message);
  CHECK(vigil_result_notification(&res, 0, &n, &err) == 1 && n.seq == 3, "seq 3 taken");
  vigil_notification_free(&n);
  vigil_result_free(&res);

  a = vigil_args_new();
  vigil_args_str(a, "cursor", "model");
  CALL_OK(c, "cursor_get", a, &res);
  CHECK(vigil_result_int(&res, "cursor", &cursor) && cursor >= 3, "cursor_get %lld",
        (long long)cursor);
  vigil_result_free(&res);
  vigil_args_uint(a, "to", 1);
  CALL_OK(c, "cursor_advance", a, &res);
  CHECK(vigil_result_int(&res, "cursor", &last) && last == cursor, "never back");
  vigil_result_free(&res);
  vigil_args_free(a);
  a = vigil_args_new();
  vigil_args_uint(a, "since_seq", 0);
  CALL_OK(c, "notifications_since", a, &res);
  CHECK(vigil_result_notification(&res, 0, &n, &err) == 1 && n.seq == 1, "a re-read from 1");
  vigil_notification_free(&n);
  vigil_result_free(&res);
  vigil_args_free(a);
  vigil_client_close(c);
}

/* The engine's refusals come back with the protocol's code and message;
 * the library's own are refused before anything is sent. */
static void
test_errors(void)
{
  vigil_client *c = test_connect();
  vigil_error err;
  CHECK(vigil_client_call(c, "bogus", NULL, WAIT_MS, NULL, &err) == -1, "bogus fails");
  CHECK(err.code == VIGIL_ERR_UNKNOWN_METHOD &&
            strncmp(err.message, "unknown_method: no method \"bogus\"", 33) == 0,
        "%d %s", err.code, err.message);

  const char *python[] = {"python3", "-V"};
  vigil_args *a = vigil_args_new();
  vigil_args_str_array(a, "argv", python, 2);
  CHECK(vigil_client_call(c, "monitor_start", a, WAIT_MS, NULL, &err) == -1, "denied");
  CHECK(err.code == VIGIL_ERR_DENIED && strncmp(err.message, "denied: ", 8) == 0 &&
            strstr(err.message, "\"python3\""),
        "%d %s", err.code, err.message);
  vigil_args_free(a);

  a = vigil_args_new();
  vigil_args_str(a, "monitor_id", "mon_zzzzzzzzzzzz");
  CHECK(vigil_client_call(c, "monitor_stop", a, WAIT_MS, NULL, &err) == -1, "not found");
  CHECK(err.code == VIGIL_ERR_NOT_FOUND && strcmp(vigil_error_name(err.code), "not_found") == 0,
        "%d %s", err.code, err.message);
  vigil_args_free(a);

  a = vigil_args_new();
  vigil_args_str(a, "command", "sleep 1");
  vigil_args_uint(a, "timeout_ms", 0);
  CHECK(vigil_client_call(c, "monitor_start", a, WAIT_MS, NULL, &err) == -1, "invalid");
  CHECK(err.code == VIGIL_ERR_INVALID_PARAMS &&
            strstr(err.message, "timeout_ms must be 1..") != NULL,
        "%d %s", err.code, err.message);

  /* A key given twice is the builder's refusal, reported by the call,
   * which sends nothing. */
  CHECK(vigil_args_str(a, "command", "sleep 2") == -1, "a key twice is refused");
  CHECK(vigil_client_call(c, "monitor_start", a, WAIT_MS, NULL, &err) == -1, "not sent");
  CHECK(err.code == VIGIL_ERR_USAGE && strstr(err.message, "\"command\" is given twice") &&
            strstr(err.message, "(monitor_start was not sent)"),
        "%d %s", err.code, err.message);
  vigil_args_free(a);

  /* Limits out of range change nothing. */
  CHECK(vigil_client_set_limit(c, VIGIL_CLIENT_LIMIT_MESSAGE_BYTES, 12, &err) == -1, "12");
  CHECK(err.code == VIGIL_ERR_USAGE &&
            strcmp(err.message, "usage: max_message_bytes must be 1024..1073741824, got 12") == 0,
        "%s", err.message);
  CHECK(vigil_client_get_limit(c, VIGIL_CLIENT_LIMIT_MESSAGE_BYTES) == (size_t)16 << 20,
        "the limit stays at its default");
  CHECK(vigil_client_response(c, 999999, 0, NULL, &err) == -1 && err.code == VIGIL_ERR_USAGE,
        "an answer to nothing asked: %s", err.message);

  /* A failed call sent as a notification comes back as a vigil.error. */
  CHECK(vigil_client_notify(c, "bogus", NULL, &err) == 0, "notify: %s", err.message);
  vigil_notification n;
  test_next(c, &n);
  CHECK(n.kind == VIGIL_NOTIFICATION_ENGINE_ERROR && strcmp(n.type, "vigil.error") == 0 &&
            n.error.code == VIGIL_ERR_UNKNOWN_METHOD &&
            strncmp(n.error.message, "unknown_method: ", 16) == 0,
        "%s %d %s", n.type, n.error.code, n.error.message);
  vigil_notification_free(&n);

  /* The connection is still good after all of that. */
  CALL_OK(c, "ping", NULL, NULL);
  vigil_client_close(c);

  char missing[400];
  snprintf(missing, sizeof missing, "%s/none.sock", test_dir);
  CHECK(vigil_client_connect(missing, &err) == NULL && err.code == VIGIL_ERR_NO_ENGINE &&
            strstr(err.message, missing),
        "%s", err.message);
}

/* A call given up at its timeout: the late answer is discarded, and the
 * calls after it get their own answers. */
static void
test_timeout(void)
{
  vigil_client *c = test_connect();
  const char *argv[] = {"sleep", "60"};
  vigil_args *a = vigil_args_new();
  vigil_args_str_array(a, "argv", argv, 2);
  vigil_args_str(a, "notify", "none");
  vigil_result res;
  CALL_OK(c, "monitor_start", a, &res);
  vigil_args_free(a);
  char id[64];
  snprintf(id, sizeof id, "%s", vigil_result_str(&res, "monitor_id"));
  vigil_result_free(&res);

  a = vigil_args_new();
  vigil_args_str(a, "monitor_id", id);
  vigil_args_str(a, "for", "exit");
  vigil_error err;
  CHECK(vigil_client_call(c, "monitor_wait", a, 200, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_TIMEOUT,
        "%s", err.message);
  CHECK(strcmp(err.message, "timeout: no answer to monitor_wait within 200 ms (it will be "
                            "discarded when it comes)") == 0,
        "%s", err.message);
  vigil_args_free(a);

  /* monitor_stop ends the wait too: its late answer comes first and is
   * dropped; monitor_stop's own answer is the one returned. */
  a = vigil_args_new();
  vigil_args_str(a, "monitor_id", id);
  CALL_OK(c, "monitor_stop", a, &res);
  CHECK(strcmp(vigil_result_str(&res, "status"), "stopped") == 0, "stopped");
  vigil_result_free(&res);
  vigil_args_free(a);
  CALL_OK(c, "ping", NULL, &res);
  CHECK(vigil_result_str(&res, "version") != NULL, "ping's own answer");
  vigil_result_free(&res);
  vigil_client_close(c);
}

/* A host with its own loop: send, poll the descriptor, read, take. */
static void
test_event_loop(void)
{
  vigil_client *c = test_connect();
  uint32_t msgid;
  vigil_error err;
  CHECK(vigil_client_request(c, "ping", NULL, &msgid, &err) == 0, "%s", err.message);
  vigil_result res;
  struct pollfd pfd = {.fd = vigil_client_fd(c), .events = POLLIN};
  int got = 0;
  while (got == 0) {
    CHECK(poll(&pfd, 1, WAIT_MS) == 1, "the descriptor becomes readable");
    CHECK(vigil_client_read(c, &err) == 0, "%s", err.message);
    got = vigil_client_response(c, msgid, 0, &res, &err);
    CHECK(got >= 0, "%s", err.message);
  }
  CHECK(vigil_result_str(&res, "version") != NULL, "the answer");
  vigil_result_free(&res);
  CHECK(vigil_client_response(c, msgid, 0, NULL, &err) == -1 && err.code == VIGIL_ERR_USAGE,
        "an answer is taken once");
  vigil_client_close(c);
}

/* Requests over max_request_bytes are refused before a byte leaves;
 * messages over max_message_bytes give the connection up cleanly. */
static void
test_bounds(void)
{
  vigil_client *c = test_connect();
  vigil_error err;
  CHECK(vigil_client_set_limit(c, VIGIL_CLIENT_LIMIT_REQUEST_BYTES, 1024, &err) == 0, "set");
  char label[2001];
  memset(label, 'x', 2000);
  label[2000] = '\0';
  vigil_args *a = vigil_args_new();
  vigil_args_str(a, "label", label);
  vigil_args_str(a, "command", "true");
  CHECK(vigil_client_call(c, "monitor_start", a, WAIT_MS, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_USAGE,
        "%s", err.message);
  CHECK(strstr(err.message, "monitor_start: a request of ") &&
            strstr(err.message, "bytes, over max_request_bytes (1024); nothing was sent"),
        "%s", err.message);
  vigil_args_free(a);
  CALL_OK(c, "ping", NULL, NULL); /* nothing was sent: the stream is intact */

  /* api_info's answer (every limit of the engine) is over 1024 bytes. */
  CHECK(vigil_client_set_limit(c, VIGIL_CLIENT_LIMIT_MESSAGE_BYTES, 1024, &err) == 0, "set");
  CHECK(vigil_client_call(c, "api_info", NULL, WAIT_MS, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_PROTOCOL,
        "%s", err.message);
  CHECK(strstr(err.message, "over max_message_bytes (1024)") &&
            strstr(err.message, "the connection is given up"),
        "%s", err.message);
  vigil_error again;
  CHECK(vigil_client_call(c, "ping", NULL, WAIT_MS, NULL, &again) == -1 &&
            strcmp(again.message, err.message) == 0,
        "later calls report the same: %s", again.message);
  vigil_client_close(c);

  /* The notification queue drops its oldest past its bound, and says so
   * on the one after. Notifications are held while the session is busy,
   * then all released during session_state idle. */
  c = test_connect();
  a = vigil_args_new();
  vigil_args_str(a, "state", "busy");
  CALL_OK(c, "session_state", a, NULL);
  vigil_args_free(a);
  char id[64];
  test_start_sh(c, "echo a; sleep 0.5; echo b; sleep 0.5; echo c", NULL, 0, id, sizeof id);
  a = vigil_args_new();
  vigil_args_str(a, "monitor_id", id);
  CALL_OK(c, "monitor_wait", a, NULL);
  vigil_args_free(a);
  CHECK(vigil_client_queued(c) == 0, "held while busy");
  CHECK(vigil_client_set_limit(c, VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS, 1, &err) == 0, "set");
  a = vigil_args_new();
  vigil_args_str(a, "state", "idle");
  vigil_result res;
  CALL_OK(c, "session_state", a, &res);
  vigil_args_free(a);
  int64_t delivered = 0;
  CHECK(vigil_result_int(&res, "delivered", &delivered) && delivered >= 2, "delivered %lld",
        (long long)delivered);
  vigil_result_free(&res);
  CHECK(vigil_client_queued(c) == 1, "one kept, got %zu", vigil_client_queued(c));
  vigil_notification n;
  CHECK(vigil_client_next_notification(c, 0, &n, NULL) == 1, "the newest");
  CHECK(n.kind == VIGIL_NOTIFICATION_EXIT && n.lost_before == (uint64_t)delivered - 1,
        "%s after %llu lost", n.type, (unsigned long long)n.lost_before);
  vigil_notification_free(&n);
  vigil_client_close(c);
}

/* A fake engine: serves one connection per entry of replies, sending that
 * reply once the client has sent something, then hanging up. */
static pid_t
test_fake_engine(const char *path, const char *const *replies, const size_t *lengths, size_t n)
{
  int srv = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  CHECK(strlen(path) < sizeof addr.sun_path, "fake engine: path too long: %s", path);
  memcpy(addr.sun_path, path, strlen(path) + 1);
  CHECK(bind(srv, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(srv, 4) == 0,
        "fake engine: %s", strerror(errno));
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    for (size_t i = 0; i < n; i++) {
      int fd = accept(srv, NULL, NULL);
      char buf[4096];
      if (fd < 0 || read(fd, buf, sizeof buf) <= 0)
        _exit(1);
      if (write(fd, replies[i], lengths[i]) != (ssize_t)lengths[i])
        _exit(1);
      close(fd);
    }
    _exit(0);
  }
  close(srv);
  return pid;
}

static void
test_fake_engine_garbage(void)
{
  char path[400];
  snprintf(path, sizeof path, "%s/fake.sock", test_dir);
  const char *replies[] = {"\xc1", "\xdd\xff\xff\xff\xff", "\x94\x01\x01\xc0"};
  size_t lengths[] = {1, 5, 4};
  test_fake = test_fake_engine(path, replies, lengths, 3);
  vigil_error err;

  vigil_client *c = vigil_client_connect(path, &err);
  CHECK(c != NULL, "%s", err.message);
  CHECK(vigil_client_call(c, "ping", NULL, WAIT_MS, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_PROTOCOL,
        "%s", err.message);
  CHECK(strstr(err.message, "not msgpack: reserved byte 0xc1 at offset 0 of a message"),
        "%s", err.message);
  vigil_client_close(c);

  /* Four billion elements declared in five bytes: refused at the header. */
  c = vigil_client_connect(path, &err);
  CHECK(c != NULL, "%s", err.message);
  CHECK(vigil_client_call(c, "ping", NULL, WAIT_MS, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_PROTOCOL,
        "%s", err.message);
  CHECK(strstr(err.message, "declares 4294967295 elements") &&
            strstr(err.message, "over max_message_bytes (16777216)"),
        "%s", err.message);
  vigil_client_close(c);

  /* An answer cut short: the engine hangs up inside a message. */
  c = vigil_client_connect(path, &err);
  CHECK(c != NULL, "%s", err.message);
  CHECK(vigil_client_call(c, "ping", NULL, WAIT_MS, NULL, &err) == -1 &&
            err.code == VIGIL_ERR_CONNECTION && strstr(err.message, "closed the connection"),
        "%s", err.message);
  vigil_client_close(c);

  int status;
  CHECK(waitpid(test_fake, &status, 0) == test_fake && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "the fake engine served all three");
  test_fake = -1;
}

/* An engine of our own over --stdio: the same calls, and close waits for it. */
static void
test_spawn(void)
{
  vigil_error err;
  vigil_client *c = vigil_client_spawn(test_vigild, test_config, NULL, &err);
  CHECK(c != NULL, "spawn: %s", err.message);
  CHECK(vigil_client_engine_pid(c) > 0, "a pid");
  const char *patterns[] = {"^Error: "};
  char id[64];
  test_start_sh(c, "echo 'Error: spawned'; exit 5", patterns, 1, id, sizeof id);
  vigil_notification n;
  do {
    test_next(c, &n);
    bool end = n.ending;
    if (end) {
      CHECK(n.kind == VIGIL_NOTIFICATION_EXIT && n.exit_code == 5, "exit 5: %s", n.type);
      CHECK(strcmp(n.monitor_id, id) == 0, "ours");
    }
    vigil_notification_free(&n);
    if (end)
      break;
  } while (1);
  CHECK(vigil_client_close(c) == 0, "the engine shuts down cleanly at the end of its input");

  c = vigil_client_spawn("/nonexistent/vigild", NULL, NULL, &err);
  CHECK(c == NULL && err.code == VIGIL_ERR_NO_ENGINE &&
            strstr(err.message, "cannot start /nonexistent/vigild: No such file"),
        "%s", err.message);

  /* A config the engine refuses: it exits 1 before answering. */
  char bad[400];
  snprintf(bad, sizeof bad, "%s/bad.lua", test_dir);
  test_write_file(bad, "return { monitor = { max_monitors_per_session = 99 } }\n");
  const char *no_extra_args[] = {NULL};
  c = vigil_client_spawn(test_vigild, bad, no_extra_args, &err);
  CHECK(c == NULL && err.code == VIGIL_ERR_NO_ENGINE &&
            strstr(err.message, "exited with status 1 before answering"),
        "%s", err.message);
}

/* pwd -P run through process_run with cwd (NULL: none given), into out. */
static void
test_pwd(vigil_client *c, const char *cwd, char *out, size_t cap)
{
  vigil_args *args = vigil_args_new();
  const char *argv[] = {"sh", "-c", "pwd -P"};
  vigil_args_str_array(args, "argv", argv, 3);
  if (cwd != NULL)
    vigil_args_str(args, "cwd", cwd);
  vigil_result res;
  CALL_OK(c, "process_run", args, &res);
  const char *said = vigil_result_str(&res, "stdout_summary");
  CHECK(said != NULL, "process_run has a stdout_summary");
  snprintf(out, cap, "%s", said);
  out[strcspn(out, "\n")] = '\0';
  vigil_result_free(&res);
  vigil_args_free(args);
}

/* A start runs in the host's working directory, as from a shell (the
 * engine's is where this test began); cwd "." asks for the engine's. */
static void
test_caller_cwd(void)
{
  char engine_dir[PATH_MAX], project[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
  CHECK(realpath(".", engine_dir) != NULL, "realpath .: %s", strerror(errno));
  snprintf(project, sizeof project, "%s/project", test_dir);
  CHECK(mkdir(project, 0700) == 0, "mkdir %s: %s", project, strerror(errno));
  CHECK(realpath(project, want) != NULL, "realpath %s: %s", project, strerror(errno));
  CHECK(chdir(project) == 0, "chdir %s: %s", project, strerror(errno));
  vigil_client *c = test_connect();
  test_pwd(c, NULL, got, sizeof got);
  CHECK(strcmp(got, want) == 0, "without a cwd the command ran in %s, not the host's %s", got,
        want);
  test_pwd(c, ".", got, sizeof got);
  CHECK(strcmp(got, engine_dir) == 0, "with cwd \".\" it ran in %s, not the engine's %s", got,
        engine_dir);
  vigil_client_close(c);
  CHECK(chdir(engine_dir) == 0, "chdir %s: %s", engine_dir, strerror(errno));
}

int
main(void)
{
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *build = getenv("VIGIL_BUILD_DIR");
  CHECK(build != NULL, "VIGIL_BUILD_DIR names the build with vigild");
  snprintf(test_vigild, sizeof test_vigild, "%s/vigild", build);
  snprintf(test_dir, sizeof test_dir, "/tmp/vigil-client-c-XXXXXX");
  CHECK(mkdtemp(test_dir) != NULL, "mkdtemp: %s", strerror(errno));
  atexit(test_cleanup);
  snprintf(test_config, sizeof test_config, "%s/config.lua", test_dir);
  snprintf(test_socket, sizeof test_socket, "%s/run/vigil.sock", test_dir);
  snprintf(test_log, sizeof test_log, "%s/vigild.log", test_dir);
  /* What children inherit: the engine's default list plus this run's tag
   * (the no_orphans check finds leftovers by it) and the sanitizers'. */
  test_write_file(test_config,
                  "return { monitor = {\n"
                  "  allowed_commands = { \"sh\", \"sleep\", \"true\" },\n"
                  "  kill_grace_ms = 500, exit_drain_ms = 300,\n"
                  "  env_inherit = { \"PATH\", \"HOME\", \"LANG\", \"VIGIL_TEST_RUN\",\n"
                  "                  \"ASAN_OPTIONS\", \"UBSAN_OPTIONS\", \"LSAN_OPTIONS\" },\n"
                  "} }\n");
  test_start_engine();

  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
    {"frame", test_frame},
    {"ping", test_ping},
    {"monitor_notifications", test_monitor_notifications},
    {"queued_during_call", test_queued_during_call},
    {"cursor", test_cursor},
    {"caller_cwd", test_caller_cwd},
    {"errors", test_errors},
    {"timeout", test_timeout},
    {"event_loop", test_event_loop},
    {"bounds", test_bounds},
    {"fake_engine_garbage", test_fake_engine_garbage},
    {"spawn", test_spawn},
  };
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    test_current = tests[i].name;
    tests[i].fn();
    printf("ok   %s\n", tests[i].name);
  }
  printf("%zu passed\n", sizeof tests / sizeof tests[0]);
  return 0;
}
