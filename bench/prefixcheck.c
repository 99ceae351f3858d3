/*
 * The cost of the prefix-rule check (envelope_check_policy_body) on its
 * worst cases, against a render of the built-in envelope of the same
 * notification (a linear pass over the same text). The body checked is the
 * one the default policy returns: the built-in body itself. Cases:
 *
 *   typical      50 distinct log lines of about 90 bytes (the everyday case)
 *   repetitive   50 identical lines of 300 bytes of "y" (a default-sized
 *                batch: 50 lines, 16 KiB)
 *   yes_batch    10000 identical 100-byte lines "y y y ..." (the largest
 *                batch the settings allow: monitor.batch_max_lines 10000,
 *                monitor.batch_max_bytes 1 MiB)
 *   line_1m      one line of 1 MiB of "y" (monitor.line_max_bytes at its
 *                bound)
 *
 * Each case runs in a child process under a time limit, so a check that
 * would take hours (the first, super-linear version on yes_batch) is
 * reported as "over N s" and the others still run. It prints milliseconds
 * per check, per render, and their ratio.
 *
 *   prefixcheck [--limit SECONDS] [--seconds SECONDS] [CASE ...]
 *
 * --limit (default 60) bounds one case; --seconds (default 1) is how long a
 * case repeats its check to average it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "render/envelope.h"
#include "pipeline/notification.h"

typedef struct {
  const char *name;
  size_t lines, len;
  const char *what;
} PrefixCase;

static const PrefixCase prefix_cases[] = {
  {"typical", 50, 0, "50 distinct log lines"},
  {"repetitive", 50, 300, "50 identical lines of 300 bytes"},
  {"yes_batch", 10000, 100, "10000 identical lines of 100 bytes (1 MiB)"},
  {"line_1m", 1, 1u << 20, "one line of 1 MiB"},
};

static double
prefix_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The notification of a case, as the core would hand it over. */
static Notification *
prefix_notification(const PrefixCase *c)
{
  Notification *n = notification_new(kNotifOutput, "mon_3k2j9x0a1b2c", "bench", kModeIdle);
  char *text = malloc(c->len + 1);
  if (c->len > 0) {
    for (size_t i = 0; i < c->len; i++)
      text[i] = strcmp(c->name, "yes_batch") == 0 && i % 2 ? ' ' : 'y';
  }
  for (size_t i = 0; i < c->lines; i++) {
    if (c->len == 0) {
      char line[160];
      int len = snprintf(line, sizeof line,
                         "2026-11-21T10:00:%02zu.123Z INFO  [http] GET /api/v1/users/%zu 200 "
                         "12.%zums ua=\"Mozilla/5.0\"",
                         i % 60, 1000 + i, i % 10);
      notification_add_line(n, 41 + i, 0, -1, false, line, (size_t)len);
    } else {
      notification_add_line(n, 41 + i, (int)(i % 2), -1, false, text, c->len);
    }
  }
  free(text);
  n->batch = 1;
  n->state = kMonRunning;
  return n;
}

/* Runs one case (in the child): checks and renders repeatedly for about
 * `seconds`, prints the figures. Exit status 0, or 1 if the check refused
 * the body. */
static int
prefix_run(const PrefixCase *c, double seconds)
{
  Notification *n = prefix_notification(c);
  StrBuf body = STRBUF_INIT;
  envelope_body(n, &body);
  long checks = 0;
  double t0 = prefix_now(), spent;
  do {
    StrBuf out = STRBUF_INIT;
    VigilError err = VIGIL_ERROR_INIT;
    if (envelope_check_policy_body(n, strbuf_cstr(&body), body.len, &out, &err) != 0) {
      fprintf(stderr, "prefixcheck: %s: refused: %s\n", c->name, err.msg);
      return 1;
    }
    strbuf_free(&out);
    checks++;
    spent = prefix_now() - t0;
  } while (spent < seconds);
  double check_ms = spent / (double)checks * 1e3;
  long renders = 0;
  t0 = prefix_now();
  do {
    StrBuf out = STRBUF_INIT;
    envelope_render(n, &out);
    strbuf_free(&out);
    renders++;
    spent = prefix_now() - t0;
  } while (spent < seconds / 4);
  double render_ms = spent / (double)renders * 1e3;
  printf("  %-11s %10.3f ms per check %9.3f ms per render %8.1fx  (%s, body %zu bytes)\n",
         c->name, check_ms, render_ms, check_ms / render_ms, c->what, body.len);
  strbuf_free(&body);
  notification_free(n);
  fflush(stdout); /* the child leaves with _exit, which flushes nothing */
  return 0;
}

int
main(int argc, char **argv)
{
  double limit = 60, seconds = 1;
  const char *only[8];
  size_t nonly = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc)
      limit = atof(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (argv[i][0] != '-' && nonly < sizeof only / sizeof only[0])
      only[nonly++] = argv[i];
    else {
      fprintf(stderr, "usage: prefixcheck [--limit 60] [--seconds 1] [typical|repetitive|"
                      "yes_batch|line_1m ...]\n");
      return 2;
    }
  }
  printf("prefixcheck: the prefix-rule check of the default policy's body, per notification\n");
  int status = 0;
  for (size_t k = 0; k < sizeof prefix_cases / sizeof prefix_cases[0]; k++) {
    const PrefixCase *c = &prefix_cases[k];
    bool wanted = nonly == 0;
    for (size_t j = 0; j < nonly; j++)
      wanted = wanted || strcmp(only[j], c->name) == 0;
    if (!wanted)
      continue;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
      _exit(prefix_run(c, seconds));
    if (pid < 0) {
      perror("prefixcheck: fork");
      return 1;
    }
    /* Wait for the child, killing it at the limit. */
    double t0 = prefix_now();
    int ws = 0;
    pid_t got;
    while ((got = waitpid(pid, &ws, WNOHANG)) == 0 && prefix_now() - t0 < limit)
      usleep(20000);
    if (got == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      printf("  %-11s over %.0f s for one check: stopped  (%s)\n", c->name, limit, c->what);
    } else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      status = 1;
    }
  }
  return status;
}
