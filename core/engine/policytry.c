/*
 * `vigild --policy-try` and `--policy-test` (see policytry.h): a policy
 * file, a notification, and the engine's delivery code between them.
 */
#include "engine/policytry.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/datadir.h"
#include "engine/deliver.h"
#include "base/memory.h"
#include "policy/notification_map.h"
#include "policy/policy.h"
#include "policy/policysample.h"
#include "base/strbuf.h"

/* The most --notification-stdin reads. */
#define POLICYTRY_STDIN_MAX (16u << 20)

/* The exit statuses. */
#define POLICYTRY_OK 0
#define POLICYTRY_FAILED 1
#define POLICYTRY_USAGE 2

/* The loaded policy file, in a set of its own. */
typedef struct {
  PolicySet *set;
  Policy *policy;
  char *dir;
} PolicyTry;

static void
policytry_close(PolicyTry *t)
{
  policyset_free(t->set);
  free(t->dir);
}

/* Loads path as the engine would load a policy of that name found in its
 * directory: modules from vigil's lua/ and plugins/, then that directory. */
static int
policytry_open(PolicyTry *t, const char *path)
{
  memset(t, 0, sizeof *t);
  char *copy = xstrdup(path);
  t->dir = xstrdup(dirname(copy));
  free(copy);
  char lua_dir[4096], bundled[4096];
  snprintf(lua_dir, sizeof lua_dir, "%s/lua", datadir_path());
  snprintf(bundled, sizeof bundled, "%s/plugins", datadir_path());
  const char *paths[] = {t->dir};
  PolicyOptions opts = {
    .lua_dir = lua_dir,
    .bundled_dir = bundled,
    .plugin_paths = paths,
    .nplugin_paths = 1,
  };
  t->set = policyset_new(&opts);
  VigilError err = VIGIL_ERROR_INIT;
  t->policy = policyset_get_file(t->set, path, &err);
  if (t->policy == NULL) {
    fprintf(stderr, "vigil: policy: %s\n", err.msg);
    policytry_close(t);
    return -1;
  }
  return 0;
}

/* The notification of a sample; NULL after a usage error. */
static Notification *
policytry_sample(const char *name)
{
  Notification *n = policysample_make(name);
  if (n == NULL) {
    StrBuf all = STRBUF_INIT;
    for (size_t i = 0; policysample_names[i]; i++)
      strbuf_printf(&all, "%s%s", i ? ", " : "", policysample_names[i]);
    fprintf(stderr, "vigil: policy: --sample must be one of %s, not \"%.64s\"\n",
            strbuf_cstr(&all), name);
    strbuf_free(&all);
  }
  return n;
}

/* The notification in len bytes of msgpack; NULL with err. */
static Notification *
policytry_unpack(const char *data, size_t len, VigilError *err)
{
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  Notification *n = NULL;
  if (msgpack_unpack_next(&u, data, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
    error_set(err, kErrInvalidParams, "notification: not one msgpack value");
  else
    n = notification_map_read(&u.data, err);
  msgpack_unpacked_destroy(&u);
  return n;
}

/* Reads stdin whole (at most POLICYTRY_STDIN_MAX bytes). */
static int
policytry_read_stdin(StrBuf *out)
{
  char buf[65536];
  for (;;) {
    ssize_t r = read(0, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      fprintf(stderr, "vigil: policy: reading the notification: %s\n", strerror(errno));
      return -1;
    }
    if (r == 0)
      return 0;
    if (out->len + (size_t)r > POLICYTRY_STDIN_MAX) {
      fprintf(stderr, "vigil: policy: --notification: over the bound of %u bytes\n",
              POLICYTRY_STDIN_MAX);
      return -1;
    }
    strbuf_append(out, buf, (size_t)r);
  }
}

/* What delivery made of n through t's policy. */
typedef struct {
  DeliverOutcome outcome;
  Notification *pe;         /* the policy_error, when the policy failed */
  VigilError err;
} PolicyTryRun;

static void
policytry_run(PolicyTry *t, Notification *n, PolicyTryRun *r)
{
  /* Live mode on: what the policy's route chose is shown as it chose it
   * (the engine turns live_safe into idle where monitor.live_mode_enabled
   * is off, which is the config's business, not the policy's). */
  DeliverTarget target = {t->set, policy_name(t->policy), true};
  r->err = (VigilError)VIGIL_ERROR_INIT;
  r->pe = NULL;
  r->outcome = deliver_prepare(&target, n, &r->pe, &r->err);
}

/* The first line of a message (its traceback cut off). */
static void
policytry_first_line(StrBuf *out, const char *msg)
{
  const char *nl = strchr(msg, '\n');
  strbuf_append(out, msg, nl ? (size_t)(nl - msg) : strlen(msg));
}

static int
policytry_try(int argc, char **argv)
{
  const char *file = NULL, *sample = NULL;
  bool from_stdin = false;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--sample") == 0 && i + 1 < argc)
      sample = argv[++i];
    else if (strcmp(argv[i], "--notification-stdin") == 0)
      from_stdin = true;
    else if (file == NULL && argv[i][0] != '-')
      file = argv[i];
    else {
      fprintf(stderr, "vigil: policy: try: unexpected \"%.64s\"\n", argv[i]);
      return POLICYTRY_USAGE;
    }
  }
  if (file == NULL || (sample && from_stdin)) {
    fprintf(stderr, "usage: vigild --policy-try FILE [--sample NAME | --notification-stdin]\n");
    return POLICYTRY_USAGE;
  }
  Notification *n = NULL;
  if (from_stdin) {
    StrBuf in = STRBUF_INIT;
    VigilError err = VIGIL_ERROR_INIT;
    if (policytry_read_stdin(&in) == 0 &&
        (n = policytry_unpack(in.data ? in.data : "", in.len, &err)) == NULL)
      fprintf(stderr, "vigil: policy: %s\n", err.msg);
    strbuf_free(&in);
  } else {
    n = policytry_sample(sample ? sample : "crash");
  }
  if (n == NULL)
    return POLICYTRY_USAGE;

  PolicyTry t;
  if (policytry_open(&t, file) != 0) {
    notification_free(n);
    return POLICYTRY_FAILED;
  }
  bool had_route = policy_has_route(t.policy);
  PolicyTryRun r;
  policytry_run(&t, n, &r);
  int rc = POLICYTRY_OK;
  if (r.outcome == kDeliverDropped) {
    fprintf(stderr, "route: drop (the agent reads nothing of this notification; it is "
                    "counted in the next one's incidents_dropped and suppressed)\n");
  } else {
    fputs(n->text, stdout);
    if (r.pe) {
      fputs(r.pe->text, stdout);
      rc = POLICYTRY_FAILED;
    }
    if (!had_route)
      fprintf(stderr, "route: %s (no route function: the monitor's mode)\n",
              monitor_mode_name(n->mode));
    else if (r.outcome == kDeliverPolicyFailed && r.pe && strstr(r.err.msg, ": route: "))
      fprintf(stderr, "route: failed, kept %s\n", monitor_mode_name(n->mode));
    else
      fprintf(stderr, "route: %s%s\n", monitor_mode_name(n->mode),
              n->mode == kModeLiveSafe ? " (delivered live where the config's "
                                         "monitor.live_mode_enabled is true, else idle)"
                                       : "");
    if (r.outcome == kDeliverPolicyFailed)
      fprintf(stderr, "vigil: policy: %s failed; the agent reads the built-in envelope and "
                      "then a policy_error: %s\n",
              policy_name(t.policy), r.err.msg);
  }
  fflush(stdout);
  notification_free(r.pe);
  notification_free(n);
  policytry_close(&t);
  return rc;
}

/* Runs one example; appends why it failed to why (nothing when it passed). */
static void
policytry_example(PolicyTry *t, const PolicyExample *ex, StrBuf *why)
{
  if (ex->error) {
    strbuf_printf(why, "%s", ex->error);
    return;
  }
  Notification *n = NULL;
  VigilError err = VIGIL_ERROR_INIT;
  if (ex->sample) {
    n = policysample_make(ex->sample);
    if (n == NULL) {
      strbuf_printf(why, "no sample \"%.64s\" (", ex->sample);
      for (size_t i = 0; policysample_names[i]; i++)
        strbuf_printf(why, "%s%s", i ? ", " : "", policysample_names[i]);
      strbuf_puts(why, ")");
      return;
    }
  } else if ((n = policytry_unpack(ex->notification, ex->notification_len, &err)) == NULL) {
    strbuf_puts(why, err.msg);
    return;
  }
  if (ex->mode) {
    int m = monitor_mode_parse(ex->mode);
    if (m < 0) {
      strbuf_printf(why, "mode must be idle or live_safe, not \"%.64s\"", ex->mode);
      notification_free(n);
      return;
    }
    n->mode = (DeliveryMode)m;
  }
  PolicyTryRun r;
  policytry_run(t, n, &r);
  const char *text = r.outcome == kDeliverDropped ? "" : n->text;
  const char *routed = r.outcome == kDeliverDropped ? "drop" : monitor_mode_name(n->mode);
  if (r.outcome == kDeliverPolicyFailed) {
    strbuf_puts(why, "the policy failed: ");
    policytry_first_line(why, r.err.msg);
  } else {
    if (ex->route && strcmp(ex->route, routed) != 0)
      strbuf_printf(why, "%sroute chose \"%s\", the example wants \"%.64s\"",
                    why->len ? "\n" : "", routed, ex->route);
    for (size_t i = 0; i < ex->nmust; i++)
      if (strstr(text, ex->must[i]) == NULL)
        strbuf_printf(why, "%sthe text lacks \"%s\"", why->len ? "\n" : "", ex->must[i]);
    for (size_t i = 0; i < ex->nmust_not; i++)
      if (strstr(text, ex->must_not[i]) != NULL)
        strbuf_printf(why, "%sthe text holds \"%s\" (must_not)", why->len ? "\n" : "",
                      ex->must_not[i]);
    if (why->len && r.outcome != kDeliverDropped) {
      strbuf_puts(why, "\nthe text:\n");
      strbuf_puts(why, text);
    }
  }
  notification_free(r.pe);
  notification_free(n);
}

static int
policytry_test(int argc, char **argv)
{
  if (argc != 3 || argv[2][0] == '-') {
    fprintf(stderr, "usage: vigild --policy-test FILE\n");
    return POLICYTRY_USAGE;
  }
  PolicyTry t;
  if (policytry_open(&t, argv[2]) != 0)
    return POLICYTRY_FAILED;
  PolicyExample *ex = NULL;
  size_t count = 0;
  VigilError err = VIGIL_ERROR_INIT;
  if (policy_examples(t.policy, &ex, &count, &err) != 0) {
    fprintf(stderr, "vigil: policy: %s\n", err.msg);
    policytry_close(&t);
    return POLICYTRY_FAILED;
  }
  size_t failed = 0;
  StrBuf why = STRBUF_INIT;
  for (size_t i = 0; i < count; i++) {
    strbuf_reset(&why);
    policytry_example(&t, &ex[i], &why);
    const char *what = ex[i].sample ? ex[i].sample : "notification";
    if (why.len == 0) {
      printf("ok   %zu %s (%s)\n", i + 1, ex[i].name, what);
      continue;
    }
    failed++;
    printf("FAIL %zu %s (%s):\n     ", i + 1, ex[i].name, what);
    for (const char *p = strbuf_cstr(&why); *p; p++) {
      putchar(*p);
      if (*p == '\n' && p[1])
        fputs("     ", stdout);
    }
    if (why.data[why.len - 1] != '\n')
      putchar('\n');
  }
  strbuf_free(&why);
  if (count == 0)
    printf("%s has no examples (docs/policies.md section 15 shows how to add them)\n",
           argv[2]);
  else
    printf("%zu examples: %zu passed, %zu failed\n", count, count - failed, failed);
  fflush(stdout);
  policy_examples_free(ex, count);
  policytry_close(&t);
  return count > 0 && failed == 0 ? POLICYTRY_OK : POLICYTRY_FAILED;
}

bool
policytry_wanted(int argc, char **argv)
{
  return argc >= 2 &&
         (strcmp(argv[1], "--policy-try") == 0 || strcmp(argv[1], "--policy-test") == 0);
}

int
policytry_main(int argc, char **argv)
{
  if (strcmp(argv[1], "--policy-try") == 0)
    return policytry_try(argc, argv);
  return policytry_test(argc, argv);
}
