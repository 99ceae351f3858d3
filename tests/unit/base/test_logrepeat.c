/*
 * Tests of a log line said once per window (logrepeat.h): the first
 * occurrence is the caller's to log, the rest are counted and told in one
 * line when the window ends; a quiet window closes, so the next occurrence
 * is the first again; what is counted when it is freed is told then.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"
#include "base/logrepeat.h"

static char log_path[64];
static int saved_stderr = -1;

/* Sends the log (fd 2) to a file of the test's. */
static void
log_to_file(void)
{
  snprintf(log_path, sizeof log_path, "/tmp/vigil-logrepeat-XXXXXX");
  int fd = mkstemp(log_path);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
}

/* The log so far (after the writer has written it), malloc'd. */
static char *
log_text(void)
{
  log_flush(5000);
  FILE *f = fopen(log_path, "r");
  static char buf[65536];
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  return strdup(buf);
}

static bool
nothing_pending(void *ctx)
{
  return logrepeat_pending(ctx) == 0;
}

typedef struct {
  LogRepeat *r;
  uv_loop_t *loop;
  uint64_t until;
} Quiet;

/* A window has gone by since the count was told. */
static bool
window_passed(void *ctx)
{
  Quiet *q = ctx;
  return uv_now(q->loop) >= q->until;
}

TEST(the_first_is_logged_the_rest_counted_and_told_once_a_window)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  LogRepeat *r = logrepeat_new(&loop, "test", "refused", "connections", 50);
  CHECK(logrepeat_hit(r, "rpc.max_connections (8) reached"));
  for (int i = 0; i < 1000; i++)
    CHECK(!logrepeat_hit(r, "rpc.max_connections (8) reached"));
  CHECK_INT(logrepeat_pending(r), 1000);
  RUN_UNTIL(&loop, nothing_pending, r, 10000, "the window's count to be told");
  char *log = log_text();
  CHECK_CONTAINS(log, "refused 1000 more connections in the last 1 s: rpc.max_connections (8) "
                      "reached");
  free(log);
  /* A window with a count opens the next: still counted. */
  CHECK(!logrepeat_hit(r, "again"));
  CHECK_INT(logrepeat_pending(r), 1);
  RUN_UNTIL(&loop, nothing_pending, r, 10000, "the second window's count");
  /* A quiet window closes it: the next occurrence is logged in full. */
  uv_update_time(&loop);
  Quiet q = {r, &loop, uv_now(&loop) + 200};
  RUN_UNTIL(&loop, window_passed, &q, 10000, "a quiet window");
  CHECK(logrepeat_hit(r, "after a quiet window"));
  CHECK(!logrepeat_hit(r, "counted, told when freed"));
  logrepeat_free(r);
  log = log_text();
  CHECK_CONTAINS(log, "refused 1 more connections in the last 1 s: counted, told when freed");
  free(log);
  test_loop_close(&loop);
}

int
main(void)
{
  log_to_file();
  RUN(the_first_is_logged_the_rest_counted_and_told_once_a_window);
  log_flush(5000);
  dup2(saved_stderr, 2);
  /* The checks' messages went to the file too: shown on failure. */
  if (check_failures_in_test != 0) {
    char *log = log_text();
    fputs(log, stderr);
    free(log);
  }
  unlink(log_path);
  return check_summary();
}
