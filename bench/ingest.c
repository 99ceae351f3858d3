/*
 * The ingest benchmark: how fast one monitor reads a child that writes a
 * large log as fast as it can, against two peers measured in the same run
 * over the same pipe:
 *
 *   cat      gen_log N | cat > /dev/null          (the pipe's own speed)
 *   grep -E  gen_log N | grep -cE <the 5 patterns>  (the same matching work)
 *   vigil    one monitor on gen_log N with the five default crash patterns
 *            of seed 000 (lines split, sanitized, matched, kept in the ring
 *            and the capture, matches batched and notified)
 *
 * Each contender runs `--runs` times, interleaved, and the best time counts.
 * It prints the throughputs and the ratios vigil/grep (target >= 1.0) and
 * vigil/cat (target >= 0.5). Not a test: the figures depend on the machine.
 *
 *   ingest [--bytes 400m] [--runs 3] [--patterns 0..5] [--locale C.UTF-8]
 *
 * --policy NAME formats every notification with that Lua policy, as the
 * engine does (the ratio must not drop: Lua runs per notification, not per
 * line); --notify-lines makes every line wanted, so batches fill and the
 * rate limit withholds most of them.
 *
 * --patterns N uses only the first N patterns for vigil (0 shows what the
 * pipeline costs without matching); grep always gets all five. --builtin
 * gives vigil the built-in crash patterns instead (what a monitor started
 * without patterns matches, docs/crash-patterns.md); grep keeps the five.
 */
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deliver.h"
#include "engine.h"
#include "policy.h"
#include "envelope.h"
#include "monitor.h"
#include "policy.h"

extern char **environ;

static const char *const crash_patterns[] = {
  "^Error:", "^Fatal:", "^panic:", "\\buncaught\\b", "UnhandledPromiseRejection",
};

static double
ingest_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs a shell pipeline and returns its wall time; fills out with up to
 * cap-1 bytes of its stdout (for grep's count). */
static double
ingest_shell(const char *script, char *out, size_t cap)
{
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
  double t0 = ingest_now();
  pid_t pid;
  if (posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ) != 0)
    return -1;
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while ((r = read(fds[0], out + n, cap - 1 - n)) > 0)
    n += (size_t)r;
  out[n] = '\0';
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  double t = ingest_now() - t0;
  posix_spawn_file_actions_destroy(&fa);
  return t;
}

typedef struct {
  bool finished;
  uint64_t matched_lines;
  uint64_t notified_lines;
  Policy *policy;         /* --policy: formats every notification, as the engine does */
  uint64_t policy_calls;
} IngestRun;

static void
ingest_on_notification(void *data, Monitor *m, Notification *n)
{
  IngestRun *run = data;
  if (n->type == kNotifOutput)
    run->notified_lines += n->nlines;
  if (run->policy) {
    /* What the engine does with a notification's policy. */
    VigilError err = VIGIL_ERROR_INIT;
    StrBuf text = STRBUF_INIT;
    deliver_policy_text(run->policy, n, &text, &err);
    run->policy_calls++;
    strbuf_free(&text);
  }
  notification_free(n);
}

static void
ingest_on_finished(void *data, Monitor *m)
{
  ((IngestRun *)data)->finished = true;
}

/* One monitor on the generator; returns the wall time from start to the
 * ending notification. */
static double
ingest_vigil(const char *gen, const char *bytes, size_t npatterns, bool builtin, Policy *policy,
             NotifyMode notify, uint64_t *matched, uint64_t *policy_calls,
             MonitorCounters *counters)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  VigilSettings settings;
  settings_defaults(&settings);
  IngestRun run = {0};
  run.policy = policy;
  MonitorHooks hooks = {ingest_on_notification, NULL, ingest_on_finished, NULL};
  char *argv[] = {(char *)gen, (char *)bytes, NULL};
  MonitorSpec spec = {
    .argv = argv,
    .label = "ingest",
    .patterns = crash_patterns,
    .npatterns = npatterns,
    .builtin_patterns = builtin,
    .notify = notify,
    .persistent = true,
    /* The signal stage on, as vigild runs every monitor by default: a line
     * that matches nothing must cost it nothing (docs/incidents.md). */
    .incidents = true,
  };
  VigilError err = VIGIL_ERROR_INIT;
  double t0 = ingest_now();
  Monitor *m = monitor_start(&loop, &settings, &spec, &hooks, &run, &err);
  if (m == NULL) {
    fprintf(stderr, "ingest: %s\n", err.msg);
    exit(1);
  }
  while (!run.finished)
    uv_run(&loop, UV_RUN_ONCE);
  double t = ingest_now() - t0;
  monitor_counters(m, counters);
  *matched = counters->matched;
  *policy_calls = run.policy_calls;
  monitor_free(m);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return t;
}

static double
ingest_min(double a, double b)
{
  return a < 0 || (b >= 0 && b < a) ? b : a;
}

int
main(int argc, char **argv)
{
  const char *bytes = "400m";
  const char *locale = "C.UTF-8";
  int runs = 3;
  size_t npatterns = 5;
  const char *policy_name = NULL;
  NotifyMode notify = kNotifyAuto;
  bool builtin = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
      bytes = argv[++i];
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--patterns") == 0 && i + 1 < argc)
    {
      int k = atoi(argv[++i]);
      npatterns = k < 0 ? 0 : k > 5 ? 5 : (size_t)k;
    }
    else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
      policy_name = argv[++i];
    else if (strcmp(argv[i], "--notify-lines") == 0)
      notify = kNotifyLines;
    else if (strcmp(argv[i], "--builtin") == 0)
      builtin = true;
    else if (strcmp(argv[i], "--locale") == 0 && i + 1 < argc)
      locale = argv[++i];
    else {
      fprintf(stderr, "usage: ingest [--bytes 400m] [--runs 3] [--patterns 0..5] [--policy NAME] [--notify-lines] [--builtin] [--locale C.UTF-8]\n");
      return 2;
    }
  }
  /* gen_log sits next to this program. */
  char gen[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", gen, sizeof gen - 1);
  if (n <= 0)
    return 1;
  gen[n] = '\0';
  char *slash = strrchr(gen, '/');
  strcpy(slash + 1, "gen_log");

  char cat_script[PATH_MAX + 64], grep_script[PATH_MAX + 512];
  snprintf(cat_script, sizeof cat_script, "'%s' %s | cat > /dev/null", gen, bytes);
  snprintf(grep_script, sizeof grep_script,
           "'%s' %s | LC_ALL=%s grep -cE -e '^Error:' -e '^Fatal:' -e '^panic:' "
           "-e '\\buncaught\\b' -e 'UnhandledPromiseRejection'",
           gen, bytes, locale);

  PolicySet *ps = NULL;
  Policy *policy = NULL;
  if (policy_name) {
    ps = engine_policies_for(NULL);
    VigilError err = VIGIL_ERROR_INIT;
    policy = policyset_get(ps, policy_name, &err);
    if (policy == NULL) {
      fprintf(stderr, "ingest: %s\n", err.msg);
      return 1;
    }
  }
  uint64_t policy_calls = 0;
  double t_cat = -1, t_grep = -1, t_vigil = -1;
  char grep_out[64] = "";
  uint64_t vigil_matched = 0;
  MonitorCounters c = {0};
  for (int r = 0; r < runs; r++) {
    char sink[64];
    t_cat = ingest_min(t_cat, ingest_shell(cat_script, sink, sizeof sink));
    t_grep = ingest_min(t_grep, ingest_shell(grep_script, grep_out, sizeof grep_out));
    t_vigil = ingest_min(t_vigil, ingest_vigil(gen, bytes, npatterns, builtin, policy, notify, &vigil_matched,
                                               &policy_calls, &c));
  }
  double mib = (double)(c.stdout_bytes) / (1 << 20);
  printf("ingest: %.1f MiB, %llu lines, best of %d runs, grep locale %s\n", mib,
         (unsigned long long)c.lines, runs, locale);
  printf("  cat       %7.3f s  %7.0f MiB/s\n", t_cat, mib / t_cat);
  printf("  grep -E   %7.3f s  %7.0f MiB/s  (%llu matching lines)\n", t_grep, mib / t_grep,
         strtoull(grep_out, NULL, 10));
  printf("  vigil     %7.3f s  %7.0f MiB/s  (%llu matching lines)\n", t_vigil, mib / t_vigil,
         (unsigned long long)vigil_matched);
  if (policy)
    printf("  policy %s formatted %llu notifications (Lua runs per notification, never per line)\n",
           policy_name, (unsigned long long)policy_calls);
  printf("  ratio vigil/grep  %.2fx  (target >= 1.0)\n", t_grep / t_vigil);
  printf("  ratio vigil/cat   %.2fx  (target >= 0.5)\n", t_cat / t_vigil);
  if (strtoull(grep_out, NULL, 10) != vigil_matched)
    printf("  WARNING: grep and vigil counted different matching lines\n");
  return 0;
}
