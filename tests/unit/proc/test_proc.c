/*
 * Unit tests of the process module with real children: the helpers built
 * from tests/support/child_*.c, a few system programs (/bin/sh, cat) and
 * files made in a temporary directory. Each test runs the loop until the
 * event it waits for (on_exit, some output, a pid gone), never sleeps, and
 * ends with no child of ours left, reaped or running, and the loop closed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/signals.h"
#include "proc/proc.h"
#include "base/strbuf.h"

typedef struct {
  uv_loop_t loop;
  Proc *p;
  StrBuf out[2];
  int eofs[2];
  int exits;
  int outputs_after_exit;
  bool eofs_before_exit;  /* both streams had ended when on_exit came */
  ProcExit x;
  uint64_t exit_ns;
  bool close_in_exit;     /* proc_close from inside on_exit */
  size_t turn_bytes;      /* output in this loop turn (a prepare resets it) */
  size_t max_turn_bytes;  /* the most output of any one turn */
  int turns_with_output;
} Run;

static char tmpdir[64];

static void
on_output(void *data, StreamId s, const char *buf, size_t len)
{
  Run *r = data;
  if (r->exits > 0)
    r->outputs_after_exit++;
  strbuf_append(&r->out[s], buf, len);
  if (r->turn_bytes == 0)
    r->turns_with_output++;
  r->turn_bytes += len;
  if (r->turn_bytes > r->max_turn_bytes)
    r->max_turn_bytes = r->turn_bytes;
}

static void
on_eof(void *data, StreamId s)
{
  Run *r = data;
  r->eofs[s]++;
}

static void
on_exit_cb(void *data, const ProcExit *x)
{
  Run *r = data;
  r->exits++;
  r->x = *x;
  r->exit_ns = uv_hrtime();
  r->eofs_before_exit = r->eofs[0] == 1 && r->eofs[1] == 1;
  if (r->close_in_exit) {
    proc_close(r->p);
    r->p = NULL;
  }
}

static const ProcCallbacks callbacks = {on_output, on_eof, on_exit_cb, NULL, NULL};

static void
run_init(Run *r)
{
  memset(r, 0, sizeof *r);
  uv_loop_init(&r->loop);
}

/* Options with the given argv, the usual drain bound and the test's
 * inherit list (the run's tag and the sanitizers' options pass). */
static ProcSpawnOptions
opts_for(char **argv)
{
  ProcSpawnOptions o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.exit_drain_ms = 1000;
  o.env_inherit = test_env_inherit;
  return o;
}

/* Spawns; on failure records it with the error message. */
static bool
run_start_at(Run *r, const ProcSpawnOptions *o, const char *file, int line)
{
  VigilError err = VIGIL_ERROR_INIT;
  if (proc_spawn(&r->loop, o, &callbacks, r, &r->p, &err) != 0) {
    check_fail(file, line, "proc_spawn(%s) failed: %s", o->argv[0], err.msg);
    return false;
  }
  if (err.set)
    check_fail(file, line, "proc_spawn succeeded but set err: %s", err.msg);
  return true;
}
#define run_start(r, o) run_start_at(r, o, __FILE__, __LINE__)

static bool
run_exited(void *ctx)
{
  return ((Run *)ctx)->exits > 0;
}

#define run_wait(r, ms) RUN_UNTIL(&(r)->loop, run_exited, r, ms, "on_exit")

/* Whether this process has no child at all, running or zombie. */
static bool
no_children(void *ctx)
{
  siginfo_t info;
  memset(&info, 0, sizeof info);
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

/* Closes the Proc, waits until every child is reaped and closes the loop. */
static void
run_close(Run *r)
{
  if (r->p != NULL)
    proc_close(r->p);
  r->p = NULL;
  RUN_UNTIL(&r->loop, no_children, NULL, 5000, "every child reaped");
  test_loop_close(&r->loop);
  strbuf_free(&r->out[0]);
  strbuf_free(&r->out[1]);
}

typedef struct {
  Run *r;
  StreamId s;
  const char *needle;
} Wait;

static bool
output_has(void *ctx)
{
  Wait *w = ctx;
  return strstr(strbuf_cstr(&w->r->out[w->s]), w->needle) != NULL;
}

/* Runs the loop until stream s of r has shown needle. */
static bool
wait_output(Run *r, StreamId s, const char *needle)
{
  Wait w = {r, s, needle};
  return RUN_UNTIL(&r->loop, output_has, &w, 5000, needle);
}

static bool
pid_gone(void *ctx)
{
  return !test_pid_alive(*(int *)ctx);
}

/* Reaped, not just dead: the pid no longer exists at all. */
static bool
pid_reaped(void *ctx)
{
  return kill(*(int *)ctx, 0) != 0 && errno == ESRCH;
}

/* Expects proc_spawn to fail with code and a message containing want. */
static void
expect_spawn_error(const ProcSpawnOptions *o, VigilErrorCode code, const char *want,
                   const char *file, int line)
{
  Run r;
  run_init(&r);
  VigilError err = VIGIL_ERROR_INIT;
  Proc *p = (Proc *)1;
  int rc = proc_spawn(&r.loop, o, &callbacks, &r, &p, &err);
  if (rc != -1 || p != NULL)
    check_fail(file, line, "proc_spawn(%s) returned %d, want -1 and no Proc",
               o->argv && o->argv[0] ? o->argv[0] : "", rc);
  if (!err.set || err.code != code)
    check_fail(file, line, "error code %s, want %s (%s)", err.set ? error_name(err.code) : "unset",
               error_name(code), err.msg);
  if (strstr(err.msg, want) == NULL)
    check_fail(file, line, "message \"%s\" lacks \"%s\"", err.msg, want);
  if (rc == 0 && p != NULL && p != (Proc *)1)
    proc_close(p);
  /* Nothing was started, nothing is called back, and the loop closes. */
  uv_run(&r.loop, UV_RUN_NOWAIT);
  if (r.exits != 0 || r.eofs[0] != 0 || r.out[0].len != 0)
    check_fail(file, line, "a callback fired for a failed spawn");
  if (!no_children(NULL))
    check_fail(file, line, "a child was left behind by a failed spawn");
  run_close(&r);
}
#define EXPECT_SPAWN_ERROR(o, code, want) expect_spawn_error(o, code, want, __FILE__, __LINE__)

/* Writes a file in tmpdir with the given content and mode; returns its path
 * (static storage per slot). */
static const char *
make_file(int slot, const char *name, const char *content, mode_t mode)
{
  static char paths[4][256];
  snprintf(paths[slot], sizeof paths[slot], "%s/%s", tmpdir, name);
  FILE *f = fopen(paths[slot], "w");
  if (f == NULL)
    return paths[slot];
  fputs(content, f);
  fclose(f);
  chmod(paths[slot], mode);
  return paths[slot];
}

TEST(exit_zero_with_output_collected)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv[] = {path, "0", "out:hello", "err:oops", "out:world", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "hello\nworld\n");
    CHECK_STR(strbuf_cstr(&r.out[kStreamStderr]), "oops\n");
    CHECK(r.x.exited);
    CHECK_INT(r.x.exit_code, 0);
    CHECK_INT(r.x.term_signal, 0);
    CHECK(!r.x.drain_cut);
    CHECK(r.eofs_before_exit);
    CHECK(proc_exited(r.p));
    CHECK(!proc_stop_requested(r.p));
    CHECK(proc_pid(r.p) > 0);
    CHECK_INT(proc_stop(r.p, SIGTERM, 1000), kProcStopExited); /* already exited: nothing sent */
    CHECK(!proc_stop_requested(r.p));
    ProcExit u;
    proc_usage(r.p, &u);
    CHECK_INT(u.exit_code, 0);
    CHECK(u.exited);
  }
  run_close(&r);
  CHECK_INT(r.exits, 1);
  CHECK_INT(r.eofs[0], 1);
  CHECK_INT(r.eofs[1], 1);
  CHECK_INT(r.outputs_after_exit, 0);
}

TEST(nonzero_exit_code)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv[] = {path, "3", "err:failing", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_INT(r.x.exit_code, 3);
    CHECK_INT(r.x.term_signal, 0);
    CHECK_STR(strbuf_cstr(&r.out[kStreamStderr]), "failing\n");
  }
  run_close(&r);
}

TEST(killed_by_its_own_signal)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv[] = {path, "0", "out:before", "kill:11", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK(r.x.exited);
    CHECK_INT(r.x.exit_code, -1);
    CHECK_INT(r.x.term_signal, SIGSEGV);
    CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "before\n");
  }
  run_close(&r);
}

/* Starts child_ignore_term in r (run_init'd here) and waits for its
 * "ready", printed once SIGTERM is ignored. */
static bool
start_term_ignorer(Run *r)
{
  run_init(r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_ignore_term"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  return run_start(r, &o) && wait_output(r, kStreamStdout, "ready\n");
}

TEST(stop_with_sigterm_ends_a_sleeping_child)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_sleep"));
  char *argv[] = {path, "60000", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o)) {
    CHECK_INT(proc_stop(r.p, SIGTERM, 10000), kProcStopping);
    CHECK(proc_stop_requested(r.p));
    if (run_wait(&r, 5000)) {
      CHECK_INT(r.x.term_signal, SIGTERM);
      CHECK_INT(r.x.exit_code, -1);
      CHECK(proc_stop_requested(r.p));
    }
  }
  run_close(&r);
}

TEST(stop_escalates_to_sigkill_once)
{
  Run r;
  if (start_term_ignorer(&r)) {
    uint64_t t0 = uv_hrtime();
    CHECK_INT(proc_stop(r.p, SIGTERM, 300), kProcStopping);
    /* A weaker stop is a no-op: nothing sent, and the 300 ms deadline is not
     * re-armed to 60 s (the wait below would time out if it were). */
    CHECK_INT(proc_stop(r.p, SIGTERM, 60000), kProcStopPending);
    CHECK_INT(proc_stop(r.p, SIGTERM, PROC_GRACE_NEVER), kProcStopPending);
    if (run_wait(&r, 5000)) {
      CHECK_INT(r.x.term_signal, SIGKILL);
      CHECK((r.exit_ns - t0) / 1000000 >= 250); /* SIGTERM was ignored, SIGKILL came later */
      CHECK(proc_stop_requested(r.p));
      CHECK_INT(proc_stop(r.p, SIGTERM, 0), kProcStopExited);
    }
  }
  run_close(&r);
}

/* Issue 22 point 18: SIGKILL during a long grace was "already under way"
 * and sent nothing, so the kill waited out the grace. */
TEST(a_stronger_stop_goes_through_during_a_grace)
{
  Run r;
  if (start_term_ignorer(&r)) {
    uint64_t t0 = uv_hrtime();
    CHECK_INT(proc_stop(r.p, SIGTERM, 600000), kProcStopping);
    CHECK_INT(proc_stop(r.p, SIGTERM, 600000), kProcStopPending); /* its deadline is later */
    CHECK_INT(proc_stop(r.p, SIGKILL, 0), kProcStopHastened);
    /* SIGKILL is sent once (or the child is already seen gone). */
    ProcStopResult again = proc_stop(r.p, SIGKILL, 0);
    CHECK(again == kProcStopPending || again == kProcStopExited);
    if (run_wait(&r, 30000)) {
      CHECK_INT(r.x.term_signal, SIGKILL);
      CHECK((r.exit_ns - t0) / 1000000 < 30000); /* not the 10 min grace */
    }
  }
  run_close(&r);
}

/* A stop that never escalates (process.kill's force_after 0) sends its
 * signal only; a later stop with a grace brings the SIGKILL. */
TEST(a_stop_without_escalation_is_hastened_by_one_with_a_grace)
{
  Run r;
  if (start_term_ignorer(&r)) {
    CHECK_INT(proc_stop(r.p, SIGTERM, PROC_GRACE_NEVER), kProcStopping);
    CHECK(proc_stop_requested(r.p));
    CHECK_INT(proc_stop(r.p, SIGTERM, PROC_GRACE_NEVER), kProcStopPending);
    uint64_t t0 = uv_hrtime();
    CHECK_INT(proc_stop(r.p, SIGTERM, 200), kProcStopHastened);
    ProcStopResult later = proc_stop(r.p, SIGTERM, 60000); /* gone already, on a slow machine */
    CHECK(later == kProcStopPending || later == kProcStopExited);
    if (run_wait(&r, 30000)) {
      CHECK_INT(r.x.term_signal, SIGKILL);
      CHECK((r.exit_ns - t0) / 1000000 >= 150); /* after the grace asked for */
    }
  }
  run_close(&r);
}

TEST(stop_with_zero_grace_kills_at_once)
{
  Run r;
  if (start_term_ignorer(&r)) {
    CHECK_INT(proc_stop(r.p, SIGTERM, 0), kProcStopping);
    if (run_wait(&r, 5000))
      CHECK_INT(r.x.term_signal, SIGKILL);
  }
  run_close(&r);
}

/* The grandchild's pid, from child_grandchild's "grandchild PID" line. */
static int
grandchild_pid(const Run *r)
{
  const char *s = strstr(strbuf_cstr(&r->out[kStreamStdout]), "grandchild ");
  return s ? atoi(s + 11) : 0;
}

TEST(grandchild_holding_the_pipe_is_cut_by_the_drain_bound)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_grandchild"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.exit_drain_ms = 200;
  uint64_t t0 = uv_hrtime();
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK((r.exit_ns - t0) / 1000000 < 5000);
    CHECK(r.x.drain_cut);
    CHECK_INT(r.x.exit_code, 0);
    CHECK(r.eofs_before_exit);
    CHECK_CONTAINS(strbuf_cstr(&r.out[kStreamStdout]), "parent done\n");
    int gc = grandchild_pid(&r);
    CHECK(gc > 0);
    /* SIGKILL went to the group at the end: the grandchild dies. */
    if (gc > 0)
      RUN_UNTIL(&r.loop, pid_gone, &gc, 5000, "the grandchild gone");
  }
  run_close(&r);
}

TEST(zero_drain_still_delivers_what_the_child_wrote)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_grandchild"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.exit_drain_ms = 0;
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK(r.x.drain_cut);
    CHECK_CONTAINS(strbuf_cstr(&r.out[kStreamStdout]), "parent done\n");
    int gc = grandchild_pid(&r);
    if (gc > 0)
      RUN_UNTIL(&r.loop, pid_gone, &gc, 5000, "the grandchild gone");
  }
  run_close(&r);
}

TEST(zero_drain_loses_nothing_of_a_fast_writer)
{
  /* With no drain time at all, every byte the child wrote before its exit
   * is still delivered (what is left in the pipe is read at the deadline). */
  for (int round = 0; round < 3; round++) {
    Run r;
    run_init(&r);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_child_path("child_flood"));
    char *argv[] = {path, "100000", NULL};
    ProcSpawnOptions o = opts_for(argv);
    o.exit_drain_ms = 0;
    if (run_start(&r, &o) && run_wait(&r, 20000)) {
      CHECK_INT(r.out[kStreamStdout].len, 100000 * 20);
      CHECK_INT(r.out[kStreamStderr].len, 100000 * 20);
      CHECK(!r.x.drain_cut);
    }
    run_close(&r);
  }
}

TEST(a_grandchild_writing_forever_cannot_stall_the_end)
{
  /* The pipe never goes quiet: the drain reads at most one pipe buffer at
   * the deadline, cuts, and the group kill ends the writer. */
  Run r;
  run_init(&r);
  char *argv[] = {"/bin/sh", "-c", "(while :; do echo x; done) & echo \"bg $!\"; echo parent done",
                  NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.exit_drain_ms = 100;
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK(r.x.drain_cut);
    CHECK_INT(r.x.exit_code, 0);
    const char *text = strbuf_cstr(&r.out[kStreamStdout]);
    CHECK_CONTAINS(text, "parent done\n");
    const char *bg = strstr(text, "bg ");
    int pid = bg ? atoi(bg + 3) : 0;
    CHECK(pid > 0);
    if (pid > 0)
      RUN_UNTIL(&r.loop, pid_gone, &pid, 5000, "the writer gone");
  }
  run_close(&r);
}

TEST(unknown_program_is_command_not_found)
{
  char *argv[] = {"vigil-no-such-program-4711", NULL};
  ProcSpawnOptions o = opts_for(argv);
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound,
                     "command_not_found: command: \"vigil-no-such-program-4711\" was not "
                     "found in PATH");
  char *argv2[] = {"/nonexistent-vigil/prog", NULL};
  o = opts_for(argv2);
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, "\"/nonexistent-vigil/prog\" does not exist");
}

TEST(non_executable_file_is_command_not_found)
{
  const char *path = make_file(0, "plain.sh", "#!/bin/sh\necho hi\n", 0644);
  char *argv[] = {(char *)path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  char want[512];
  snprintf(want, sizeof want, "command_not_found: command: \"%s\" is not executable", path);
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, want);

  /* Found in the search path but not executable: says where. */
  char search[256];
  snprintf(search, sizeof search, "/nonexistent-vigil:%s", tmpdir);
  char *argv2[] = {"plain.sh", NULL};
  o = opts_for(argv2);
  o.search_path = search;
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, "is not executable");
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, path);
  unlink(path);
}

TEST(directory_is_command_not_found)
{
  char *argv[] = {tmpdir, NULL};
  ProcSpawnOptions o = opts_for(argv);
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, "is a directory");
  char *argv2[] = {"/dev/null", NULL};
  o = opts_for(argv2);
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, "\"/dev/null\" is not a regular file");
}

TEST(bad_cwd_is_invalid_params)
{
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv[] = {path, "0", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.cwd = "/nonexistent-vigil";
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams,
                     "invalid_params: cwd: \"/nonexistent-vigil\" does not exist");
  o.cwd = "/dev/null";
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, "cwd: \"/dev/null\" is not a directory");
}

TEST(exec_failure_is_spawn_failed_and_leaves_nothing)
{
  /* Executable, passes resolution, but neither ELF nor "#!": ENOEXEC. */
  const char *path = make_file(0, "garbage", "\x01\x02garbage, not a program\n", 0755);
  char *argv[] = {(char *)path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  char want[512];
  snprintf(want, sizeof want, "spawn_failed: exec \"%s\": %s", path, strerror(ENOEXEC));
  EXPECT_SPAWN_ERROR(&o, kErrSpawnFailed, want);
  unlink(path);
}

TEST(bad_argv_is_invalid_params)
{
  char *argv[] = {"", NULL};
  ProcSpawnOptions o = opts_for(argv);
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, "argv: must name a program");
  char *argv2[] = {NULL};
  o = opts_for(argv2);
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, "argv: must name a program");
}

TEST(a_script_with_a_shebang_runs)
{
  const char *path = make_file(1, "hello.sh", "#!/bin/sh\necho \"hi $1\"\nexit 4\n", 0755);
  Run r;
  run_init(&r);
  char *argv[] = {(char *)path, "there", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "hi there\n");
    CHECK_INT(r.x.exit_code, 4);
  }
  run_close(&r);
  unlink(path);
}

/* The value of "key=" on its own line of text, in buf. */
static const char *
line_value(const char *text, const char *key, char *buf, size_t cap)
{
  size_t klen = strlen(key);
  for (const char *s = text; s != NULL && *s != '\0';) {
    const char *nl = strchr(s, '\n');
    if (strncmp(s, key, klen) == 0 && s[klen] == '=') {
      const char *v = s + klen + 1;
      size_t n = strcspn(v, "\n");
      snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), v);
      return buf;
    }
    s = nl ? nl + 1 : NULL;
  }
  snprintf(buf, cap, "(missing %s)", key);
  return buf;
}

TEST(child_environment)
{
  Run r;
  run_init(&r);
  setenv("VIGIL_TEST_VAR", "from the engine", 1);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_env_fds"));
  char *argv[] = {path, "VIGIL_TEST_VAR", NULL};
  char *env[] = {"VIGIL_TEST_VAR=from env_extra", "VIGIL_TEST_OTHER=x", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.cwd = tmpdir;
  o.env_extra = env;
  char v[4096];
  /* Inheritable on purpose (no O_CLOEXEC): the child must not get it. */
  int stray = open("/dev/null", O_RDONLY);
  CHECK(stray >= 3);
  bool started = run_start(&r, &o);
  close(stray);
  if (started && run_wait(&r, 5000)) {
    const char *text = strbuf_cstr(&r.out[kStreamStdout]);
    CHECK_STR(line_value(text, "cwd", v, sizeof v), tmpdir);
    CHECK_STR(line_value(text, "env", v, sizeof v), "from env_extra");
    CHECK_STR(line_value(text, "fds", v, sizeof v), "0,1,2");
    CHECK_STR(line_value(text, "stdin", v, sizeof v), "/dev/null");
    CHECK_STR(line_value(text, "stdin_read", v, sizeof v), "eof");
    /* The test ignores SIGPIPE; the child must not inherit that. */
    CHECK_STR(line_value(text, "sigign", v, sizeof v), "0000000000000000");
    CHECK_STR(line_value(text, "sigblk", v, sizeof v), "0000000000000000");
    char want[128];
    int pid = proc_pid(r.p);
    snprintf(want, sizeof want, "pid=%d pgid=%d sid=%d\n", pid, pid, pid);
    CHECK_CONTAINS(text, want);
    CHECK_INT(r.x.exit_code, 0);
  }
  unsetenv("VIGIL_TEST_VAR");
  run_close(&r);
}

TEST(engine_with_fd_0_closed)
{
  /* New descriptors land on 0 then; proc keeps its own above 2 (libuv will
   * not close a handle's fd 0..2) and the child still gets a clean 0, 1, 2.
   * Only around the spawns, and with the loop's SIGCHLD state made before:
   * libuv needs 0..2 open when it makes its own fds (the daemon must keep
   * them open). */
  char path[4096], sleeper_path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_env_fds"));
  snprintf(sleeper_path, sizeof sleeper_path, "%s", test_child_path("child_sleep"));
  char *argv[] = {path, NULL};
  char *sleeper_argv[] = {sleeper_path, "60000", NULL};
  for (int with_stdin = 0; with_stdin < 2; with_stdin++) {
    Run r, sleeper;
    run_init(&r);
    memset(&sleeper, 0, sizeof sleeper);
    ProcSpawnOptions so = opts_for(sleeper_argv);
    VigilError err = VIGIL_ERROR_INIT;
    CHECK_INT(proc_spawn(&r.loop, &so, &callbacks, &sleeper, &sleeper.p, &err), 0);
    ProcSpawnOptions o = opts_for(argv);
    if (with_stdin) {
      o.stdin_data = "in";
      o.stdin_len = 2;
    }
    int saved0 = dup(0);
    close(0);
    bool started = run_start(&r, &o);
    dup2(saved0, 0);
    close(saved0);
    char v[4096];
    if (started && run_wait(&r, 5000)) {
      const char *text = strbuf_cstr(&r.out[kStreamStdout]);
      CHECK_STR(line_value(text, "fds", v, sizeof v), "0,1,2");
      CHECK_STR(line_value(text, "stdin_read", v, sizeof v), with_stdin ? "in" : "eof");
      if (!with_stdin)
        CHECK_STR(line_value(text, "stdin", v, sizeof v), "/dev/null");
    }
    if (sleeper.p != NULL)
      proc_close(sleeper.p);
    run_close(&r);
  }
}

TEST(program_found_through_the_search_path_and_relative_to_cwd)
{
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", test_child_path(""));
  dir[strlen(dir) - 1] = '\0'; /* the helpers' directory, without the "/" */

  /* A bare name is looked up in the search path given. */
  Run r;
  run_init(&r);
  char search[4200], want[4200];
  snprintf(search, sizeof search, "/nonexistent-vigil:%s", dir);
  snprintf(want, sizeof want, "%s/child_exit", dir);
  char *argv[] = {"child_exit", "5", "out:via the search path", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.search_path = search;
  if (run_start(&r, &o)) {
    CHECK_STR(proc_program(r.p), want);
    if (run_wait(&r, 5000)) {
      CHECK_INT(r.x.exit_code, 5);
      CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "via the search path\n");
    }
  }
  run_close(&r);

  /* An empty or relative entry is not the child's cwd: it is skipped. */
  o.search_path = "::.:child-dir";
  o.cwd = dir;
  EXPECT_SPAWN_ERROR(&o, kErrCommandNotFound, "\"child_exit\" was not found in PATH");

  /* "./x" is relative to cwd, not to the engine's directory. */
  run_init(&r);
  char *argv3[] = {"./child_exit", "6", NULL};
  o = opts_for(argv3);
  o.cwd = dir;
  if (run_start(&r, &o) && run_wait(&r, 5000))
    CHECK_INT(r.x.exit_code, 6);
  run_close(&r);
}

/* The reproductions: a caller that sets PATH in env (to a directory
 * of its own, to "" or "." with a program planted in the cwd it picks) must
 * still run the real program. The PATH reaches the child all the same. */
TEST(the_childs_path_never_chooses_the_program)
{
  char evilbin[128], evilpath[160];
  snprintf(evilbin, sizeof evilbin, "%s/evilbin", tmpdir);
  snprintf(evilpath, sizeof evilpath, "PATH=%s", evilbin);
  mkdir(evilbin, 0755);
  const char *planted[2] = {make_file(0, "evilbin/echo", "#!/bin/sh\necho PLANTED\n", 0755),
                            make_file(1, "echo", "#!/bin/sh\necho PLANTED\n", 0755)};
  char *paths[] = {evilpath, "PATH=", "PATH=.", "PATH=evilbin", "PATH=:/nonexistent-vigil"};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    Run r;
    run_init(&r);
    char *argv[] = {"echo", "the real one", NULL};
    char *env[] = {paths[i], NULL};
    ProcSpawnOptions o = opts_for(argv);
    o.env_extra = env;
    o.cwd = tmpdir;
    if (run_start(&r, &o)) {
      const char *program = proc_program(r.p);
      CHECK(program[0] == '/' && strncmp(program, tmpdir, strlen(tmpdir)) != 0);
      if (run_wait(&r, 5000))
        CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "the real one\n");
    }
    run_close(&r);
  }
  Run r;
  run_init(&r);
  char *argv[] = {"/bin/sh", "-c", "echo \"$PATH\"", NULL};
  char *env[] = {evilpath, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.env_extra = env;
  char want[200];
  snprintf(want, sizeof want, "%s\n", evilbin);
  if (run_start(&r, &o) && run_wait(&r, 5000))
    CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), want);
  run_close(&r);
  unlink(planted[0]);
  unlink(planted[1]);
  rmdir(evilbin);
}

/* Runs echo with the engine's PATH set to path (NULL: unset) in tmpdir,
 * where an "echo" is planted; checks the real one ran, from a directory
 * that starts with want_dir. */
static void
run_echo_with_engine_path(const char *path, const char *want_dir, const char *file, int line)
{
  if (path != NULL)
    setenv("PATH", path, 1);
  else
    unsetenv("PATH");
  Run r;
  run_init(&r);
  char *argv[] = {"echo", "real", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.cwd = tmpdir;
  if (run_start_at(&r, &o, file, line)) {
    const char *program = proc_program(r.p);
    if (strncmp(program, want_dir, strlen(want_dir)) != 0)
      check_fail(file, line, "PATH=%s ran %s, want one in %s", path ? path : "(unset)", program,
                 want_dir);
    if (run_wait(&r, 5000) && strcmp(strbuf_cstr(&r.out[kStreamStdout]), "real\n") != 0)
      check_fail(file, line, "PATH=%s printed \"%s\"", path ? path : "(unset)",
                 strbuf_cstr(&r.out[kStreamStdout]));
  }
  run_close(&r);
}

TEST(relative_entries_of_the_engines_path_are_ignored)
{
  const char *planted = make_file(0, "echo", "#!/bin/sh\necho PLANTED\n", 0755);
  char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
  run_echo_with_engine_path(".::plain:/bin:/usr/bin", "/bin/", __FILE__, __LINE__);
  /* Nothing absolute left, or no PATH at all: the default search path. */
  run_echo_with_engine_path(".:plain", "/usr/", __FILE__, __LINE__);
  run_echo_with_engine_path(NULL, "/usr/", __FILE__, __LINE__);
  if (saved != NULL)
    setenv("PATH", saved, 1);
  free(saved);
  unlink(planted);
}

TEST(spawn_check_resolves_without_starting)
{
  char *argv[] = {"echo", "x", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.search_path = "/nonexistent-vigil:/bin:/usr/bin";
  char *program = NULL;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(proc_spawn_check(&o, &program, &err), 0);
  CHECK_STR(program, "/bin/echo");
  free(program);
  CHECK(no_children(NULL));
  /* Its refusals are proc_spawn's. */
  o.cwd = "/nonexistent-vigil";
  program = (char *)1;
  CHECK_INT(proc_spawn_check(&o, &program, &err), -1);
  CHECK(program == NULL);
  CHECK_CONTAINS(err.msg, "cwd: \"/nonexistent-vigil\" does not exist");
  error_clear(&err);
  char *argv2[] = {"vigil-no-such-program-4711", NULL};
  o = opts_for(argv2);
  CHECK_INT(proc_spawn_check(&o, &program, &err), -1);
  CHECK_INT(err.code, kErrCommandNotFound);
  CHECK(no_children(NULL));
}

/* Runs child_env_fds NAME with env_inherit set to inherit; returns what it
 * printed for $NAME in buf. */
static const char *
inherited_value(const char *const *inherit, const char *name, char *buf, size_t cap)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_env_fds"));
  char *argv[] = {path, (char *)name, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.env_inherit = inherit;
  snprintf(buf, cap, "(no run)");
  if (run_start(&r, &o) && run_wait(&r, 5000))
    line_value(strbuf_cstr(&r.out[kStreamStdout]), "env", buf, cap);
  run_close(&r);
  return buf;
}

TEST(child_inherits_only_env_inherit)
{
  /* A secret in the engine's environment, as a gateway's API key is. */
  setenv("VIGIL_TEST_API_KEY", "sk-from-the-gateway", 1);
  setenv("VIGIL_TEST_KEPT", "kept", 1);
  char v[4096];
  CHECK_STR(inherited_value(test_env_inherit, "VIGIL_TEST_API_KEY", v, sizeof v), "(unset)");
  CHECK_STR(inherited_value(NULL, "VIGIL_TEST_API_KEY", v, sizeof v), "(unset)");
  /* The default list passes HOME; a PREFIX* entry passes what it names. */
  if (getenv("HOME") != NULL)
    CHECK_STR(inherited_value(NULL, "HOME", v, sizeof v), getenv("HOME"));
  const char *const kept[] = {"VIGIL_TEST_KE*", NULL};
  CHECK_STR(inherited_value(kept, "VIGIL_TEST_KEPT", v, sizeof v), "kept");
  CHECK_STR(inherited_value(kept, "VIGIL_TEST_API_KEY", v, sizeof v), "(unset)");
  CHECK_STR(inherited_value(kept, "HOME", v, sizeof v), "(unset)");
  unsetenv("VIGIL_TEST_API_KEY");
  unsetenv("VIGIL_TEST_KEPT");
}

/* What is checked is where the child runs: the directory opened through a
 * symlink is entered even after the symlink points elsewhere. */
TEST(the_opened_directory_is_entered_even_after_its_path_changes)
{
  char inside[128], outside[128], link[128];
  snprintf(inside, sizeof inside, "%s/inside", tmpdir);
  snprintf(outside, sizeof outside, "%s/outside", tmpdir);
  snprintf(link, sizeof link, "%s/link", tmpdir);
  mkdir(inside, 0755);
  mkdir(outside, 0755);
  CHECK_INT(symlink(inside, link), 0);
  char real_inside[4096];
  CHECK(realpath(inside, real_inside) != NULL);

  ProcDir d;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(proc_dir_open(link, &d, &err), 0);
  CHECK_STR(d.path, real_inside);
  unlink(link);
  CHECK_INT(symlink(outside, link), 0); /* flipped after the check */

  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_env_fds"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.cwd = link; /* not used: dir wins */
  o.dir = &d;
  char v[4096];
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_STR(line_value(strbuf_cstr(&r.out[kStreamStdout]), "cwd", v, sizeof v), real_inside);
    /* The directory's descriptor did not leak into the child. */
    CHECK_STR(line_value(strbuf_cstr(&r.out[kStreamStdout]), "fds", v, sizeof v), "0,1,2");
  }
  run_close(&r);
  proc_dir_close(&d);
  CHECK_INT(d.fd, -1);
  CHECK(d.path == NULL);

  /* Its refusals. */
  CHECK_INT(proc_dir_open("/nonexistent-vigil", &d, &err), -1);
  CHECK_STR(err.msg, "invalid_params: cwd: \"/nonexistent-vigil\" does not exist");
  error_clear(&err);
  CHECK_INT(proc_dir_open("/dev/null", &d, &err), -1);
  CHECK_STR(err.msg, "invalid_params: cwd: \"/dev/null\" is not a directory");
  error_clear(&err);
  CHECK_INT(proc_dir_open("", &d, &err), -1);
  CHECK_STR(err.msg, "invalid_params: cwd: must not be empty");
  CHECK_INT(d.fd, -1);
  unlink(link);
  rmdir(inside);
  rmdir(outside);
}

TEST(stdin_data_is_delivered)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_env_fds"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.stdin_data = "hello stdin";
  o.stdin_len = 11;
  char v[4096];
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    const char *text = strbuf_cstr(&r.out[kStreamStdout]);
    CHECK_STR(line_value(text, "stdin_read", v, sizeof v), "hello stdin");
    CHECK_STR(line_value(text, "fds", v, sizeof v), "0,1,2");
  }
  run_close(&r);

  /* Empty data: a pipe that reads EOF at once. */
  run_init(&r);
  o.stdin_len = 0;
  if (run_start(&r, &o) && run_wait(&r, 5000))
    CHECK_STR(line_value(strbuf_cstr(&r.out[kStreamStdout]), "stdin_read", v, sizeof v), "eof");
  run_close(&r);

  /* More than a pipe holds: written as cat reads it. */
  run_init(&r);
  size_t big = 3 * 1024 * 1024 + 17;
  char *data = malloc(big);
  for (size_t i = 0; i < big; i++)
    data[i] = (char)('a' + i % 26);
  char *argv2[] = {"cat", NULL};
  o = opts_for(argv2);
  o.stdin_data = data;
  o.stdin_len = big;
  if (run_start(&r, &o)) {
    free(data); /* proc keeps its own copy */
    data = NULL;
    if (run_wait(&r, 10000)) {
      CHECK_INT(r.out[kStreamStdout].len, big);
      const StrBuf *got = &r.out[kStreamStdout];
      CHECK(got->len == big && got->data[big - 1] == (char)('a' + (big - 1) % 26));
      CHECK_INT(r.x.exit_code, 0);
    }
  }
  free(data);
  run_close(&r);
}

TEST(memory_limit_is_enforced)
{
  /* The limit is set: the child's own view of it. With a memory cgroup that
   * is the group's limit, and the address space is left alone (so a
   * program that reserves much more than it uses, as sanitizers and
   * runtimes do, still runs); else it is RLIMIT_AS. */
  ContainInfo ci;
  contain_info(&ci);
  bool by_rlimit = strcmp(ci.memory_limit, "RLIMIT_AS") == 0;
  Run r;
  run_init(&r);
  char *argv[] = {"cat", "/proc/self/limits", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.memory_limit = 64 * 1024 * 1024;
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    const char *s = strstr(strbuf_cstr(&r.out[kStreamStdout]), "Max address space");
    CHECK(s != NULL);
    if (s != NULL) {
      char line[256];
      snprintf(line, sizeof line, "%.*s", (int)strcspn(s, "\n"), s);
      CHECK_CONTAINS(line, by_rlimit ? "67108864" : "unlimited");
    }
  }
  run_close(&r);

  /* A shell building a 100 MB string under 64 MiB fails; 1000 bytes is fine.
   * (A system shell, not a helper: a sanitizer-built helper could not even
   * start under an address-space limit.) */
  const char *scripts[2] = {"x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ok ${#x}",
                            "x=$(head -c 1000 /dev/zero | tr '\\0' a); echo ok ${#x}"};
  for (int i = 0; i < 2; i++) {
    run_init(&r);
    char *argv2[] = {"/bin/sh", "-c", (char *)scripts[i], NULL};
    o = opts_for(argv2);
    o.memory_limit = 64 * 1024 * 1024;
    if (run_start(&r, &o) && run_wait(&r, 10000)) {
      if (i == 0) {
        CHECK(r.x.exit_code != 0);
        CHECK(strstr(strbuf_cstr(&r.out[kStreamStdout]), "ok") == NULL);
        /* Only the cgroup's OOM kill is known to be the limit's doing. */
        CHECK_INT(r.x.exceeded, by_rlimit ? kLimitNone : kLimitMemory);
        CHECK(by_rlimit || r.x.oom_kills >= 1);
      } else {
        CHECK_INT(r.x.exit_code, 0);
        CHECK_STR(strbuf_cstr(&r.out[kStreamStdout]), "ok 1000\n");
      }
    }
    run_close(&r);
  }

  char *argv3[] = {"cat", NULL};
  o = opts_for(argv3);
  o.memory_limit = 1000;
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams,
                     "invalid_params: memory_limit: must be 0 (none) or at least 1048576 "
                     "bytes (1 MiB), got 1000");
  o.memory_limit = -1;
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, "got -1");
}

TEST(cpu_limit_is_accepted_within_the_machine)
{
  /* A share of a core runs (test_contain shows it is held to it); more
   * cores than the machine has, or a negative share, is refused. */
  Run r;
  run_init(&r);
  char *argv[] = {"cat", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.cpu_limit = 0.5;
  if (run_start(&r, &o) && run_wait(&r, 5000))
    CHECK_INT(r.x.exit_code, 0);
  run_close(&r);

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  o.cpu_limit = (double)cores + 1;
  char want[128];
  snprintf(want, sizeof want,
           "invalid_params: cpu_limit: must be at most this machine's %ld cores, got %ld", cores,
           cores + 1);
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, want);
  o.cpu_limit = -2;
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams, "cpu_limit: must be 0 (none)");
  o.cpu_limit = 0;
  o.max_processes = -1;
  EXPECT_SPAWN_ERROR(&o, kErrInvalidParams,
                     "invalid_params: max_processes: must be 0 (none) or a positive count, got -1");
}

TEST(resource_usage)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_burn"));
  char *argv[] = {path, "200", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 10000)) {
    CHECK(r.x.cpu_ms >= 100);
    CHECK(r.x.memory_peak_bytes > 0);
    CHECK(r.x.duration_ms >= 100);
    ProcExit u;
    proc_usage(r.p, &u);
    CHECK_INT(u.cpu_ms, r.x.cpu_ms);
  }
  run_close(&r);

  /* io: everything written is counted, and every byte arrives. */
  run_init(&r);
  snprintf(path, sizeof path, "%s", test_child_path("child_flood"));
  char *argv2[] = {path, "200000", NULL};
  o = opts_for(argv2);
  if (run_start(&r, &o) && run_wait(&r, 20000)) {
    CHECK_INT(r.out[kStreamStdout].len, 200000 * 20);
    CHECK_INT(r.out[kStreamStderr].len, 200000 * 20);
    CHECK(r.x.io_write_bytes >= 2 * 200000 * 20);
    CHECK_CONTAINS(strbuf_cstr(&r.out[kStreamStderr]), "flood line 00199999\n");
    CHECK(!r.x.drain_cut);
  }
  run_close(&r);

  /* A live sample while it runs. */
  run_init(&r);
  snprintf(path, sizeof path, "%s", test_child_path("child_ignore_term"));
  char *argv3[] = {path, NULL};
  o = opts_for(argv3);
  if (run_start(&r, &o) && wait_output(&r, kStreamStdout, "ready\n")) {
    ProcExit u;
    proc_usage(r.p, &u);
    CHECK(!u.exited);
    CHECK(u.memory_peak_bytes > 0);
    CHECK(u.io_write_bytes >= 6);
    CHECK(!proc_exited(r.p));
  }
  run_close(&r);
}

TEST(raw_bytes_arrive_unchanged)
{
  static const struct {
    const char *child;
    const char *out;
    size_t out_len;
    const char *err;
  } cases[] = {
    {"child_binary", "a\0b\0\0c\xff\n", 8, ""},
    {"child_partial", "first\nno newline at the end", 27, ""},
    {"child_ansi", "", 0, "\x1b[31mError:\x1b[0m boom\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Run r;
    run_init(&r);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_child_path(cases[i].child));
    char *argv[] = {path, NULL};
    ProcSpawnOptions o = opts_for(argv);
    if (run_start(&r, &o) && run_wait(&r, 5000)) {
      CHECK_INT(r.out[kStreamStdout].len, cases[i].out_len);
      CHECK(memcmp(strbuf_cstr(&r.out[kStreamStdout]), cases[i].out, cases[i].out_len) == 0);
      CHECK_STR(strbuf_cstr(&r.out[kStreamStderr]), cases[i].err);
    }
    run_close(&r);
  }

  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_longline"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_INT(r.out[kStreamStdout].len, 102400 + 7);
    CHECK_CONTAINS(strbuf_cstr(&r.out[kStreamStdout]), "x\nafter\n");
  }
  run_close(&r);
}

/* A prepare handle's callback: a new loop turn begins. */
static void
new_turn(uv_prepare_t *h)
{
  ((Run *)h->data)->turn_bytes = 0;
}

TEST(a_full_pipe_is_read_one_buffer_per_loop_turn)
{
  /* The child fills its pipe (1 MiB where the engine grew it) and exits
   * before the loop reads anything: libuv alone would read all of it in one
   * turn, holding every other monitor's timers and pipes that long. Each
   * turn now takes at most one read buffer (256 KiB) of a stream; the bytes
   * still all come, in order, then EOF, then the exit. */
  Run r;
  run_init(&r);
  uv_prepare_t turn;
  uv_prepare_init(&r.loop, &turn);
  turn.data = &r;
  uv_prepare_start(&turn, new_turn);
  uv_unref((uv_handle_t *)&turn);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_fill"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o)) {
    /* Its exit, without reaping it (the module does): a blocking wait for
     * an event that is bound to come, as the child writes only what fits. */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    while (waitid(P_PID, (id_t)proc_pid(r.p), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR)
      ;
    if (run_wait(&r, 10000)) {
      const StrBuf *out = &r.out[kStreamStdout];
      CHECK(out->len >= 65536 && out->len % 16 == 0);
      for (size_t i = 0; i < out->len / 16; i++) {
        char want[32];
        snprintf(want, sizeof want, "%015zu\n", i);
        if (memcmp(strbuf_cstr(out) + i * 16, want, 16) != 0) {
          check_fail(__FILE__, __LINE__, "line %zu is out of order", i);
          break;
        }
      }
      CHECK(r.max_turn_bytes <= 256 * 1024);
      CHECK(r.turns_with_output >= (int)((out->len + 256 * 1024 - 1) / (256 * 1024)));
      CHECK(r.eofs_before_exit);
      CHECK_INT(r.outputs_after_exit, 0);
    }
  }
  run_close(&r);
}

TEST(close_on_a_running_child_kills_its_group)
{
  Run r;
  run_init(&r);
  char *argv[] = {"/bin/sh", "-c", "sleep 60 & echo bg $!; wait", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && wait_output(&r, kStreamStdout, "\n")) {
    int pid = proc_pid(r.p);
    int bg = atoi(strbuf_cstr(&r.out[kStreamStdout]) + 3);
    CHECK(bg > 0);
    proc_close(r.p);
    r.p = NULL;
    RUN_UNTIL(&r.loop, pid_gone, &pid, 5000, "the child gone");
    RUN_UNTIL(&r.loop, pid_reaped, &pid, 5000, "the child reaped");
    if (bg > 0)
      RUN_UNTIL(&r.loop, pid_gone, &bg, 5000, "its background job gone");
    /* No callback after proc_close. */
    CHECK_INT(r.exits, 0);
    CHECK_INT(r.eofs[0] + r.eofs[1], 0);
  }
  run_close(&r);
}

TEST(close_while_draining_kills_the_grandchild)
{
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_grandchild"));
  char *argv[] = {path, NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.exit_drain_ms = 60000;
  if (run_start(&r, &o) && wait_output(&r, kStreamStdout, "parent done\n")) {
    int pid = proc_pid(r.p);
    int gc = grandchild_pid(&r);
    RUN_UNTIL(&r.loop, pid_gone, &pid, 5000, "the child exited");
    proc_close(r.p);
    r.p = NULL;
    if (gc > 0)
      RUN_UNTIL(&r.loop, pid_gone, &gc, 5000, "the grandchild gone");
    CHECK_INT(r.exits, 0);
  }
  run_close(&r);
}

TEST(close_from_inside_on_exit)
{
  Run r;
  run_init(&r);
  r.close_in_exit = true;
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv[] = {path, "7", "out:x", NULL};
  ProcSpawnOptions o = opts_for(argv);
  if (run_start(&r, &o) && run_wait(&r, 5000)) {
    CHECK_INT(r.x.exit_code, 7);
    CHECK(r.p == NULL);
  }
  run_close(&r);
  CHECK_INT(r.exits, 1);
}

#define CONCURRENT 50

typedef struct {
  Run runs[CONCURRENT];
} Many;

static bool
all_exited(void *ctx)
{
  Many *m = ctx;
  for (int i = 0; i < CONCURRENT; i++) {
    if (m->runs[i].exits == 0)
      return false;
  }
  return true;
}

TEST(fifty_concurrent_children_all_exit)
{
  static Many m;
  memset(&m, 0, sizeof m);
  uv_loop_t loop;
  uv_loop_init(&loop);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  int started = 0;
  for (int i = 0; i < CONCURRENT; i++) {
    char code[16], line[32];
    snprintf(code, sizeof code, "%d", i % 7);
    snprintf(line, sizeof line, "out:child %d", i);
    char *argv[] = {path, code, line, NULL};
    ProcSpawnOptions o = opts_for(argv);
    VigilError err = VIGIL_ERROR_INIT;
    if (proc_spawn(&loop, &o, &callbacks, &m.runs[i], &m.runs[i].p, &err) == 0)
      started++;
    else
      check_fail(__FILE__, __LINE__, "spawn %d: %s", i, err.msg);
  }
  CHECK_INT(started, CONCURRENT);
  if (started == CONCURRENT && RUN_UNTIL(&loop, all_exited, &m, 20000, "50 exits")) {
    for (int i = 0; i < CONCURRENT; i++) {
      char want[32];
      snprintf(want, sizeof want, "child %d\n", i);
      CHECK_INT(m.runs[i].exits, 1);
      CHECK_INT(m.runs[i].x.exit_code, i % 7);
      CHECK_STR(strbuf_cstr(&m.runs[i].out[kStreamStdout]), want);
    }
  }
  for (int i = 0; i < CONCURRENT; i++) {
    if (m.runs[i].p != NULL)
      proc_close(m.runs[i].p);
    strbuf_free(&m.runs[i].out[0]);
    strbuf_free(&m.runs[i].out[1]);
  }
  RUN_UNTIL(&loop, no_children, NULL, 5000, "every child reaped");
  test_loop_close(&loop);
}

/* Ends counted per loop turn (a prepare handle starts each count). */
static int turn_exits, max_turn_exits, total_exits;

static void
count_exit(void *data, const ProcExit *x)
{
  on_exit_cb(data, x);
  total_exits++;
  if (++turn_exits > max_turn_exits)
    max_turn_exits = turn_exits;
}

static void
count_turn(uv_prepare_t *h)
{
  (void)h;
  turn_exits = 0;
}

static bool
all_counted(void *ctx)
{
  return total_exits == *(int *)ctx;
}

TEST(the_ends_of_many_children_are_spread_over_turns)
{
  /* Fifty children killed together, each a zombie before the loop runs:
   * their exits and their pipes' ends are all seen in one turn, and each
   * end is done (reaped, on_exit) a few per turn, not all inside it: a
   * monitor's end is the heaviest thing the loop does for it, and 500 of
   * them in one turn held every other monitor's notifications (issue 27).
   * Before, all fifty on_exit came in one turn. */
  static Many m;
  memset(&m, 0, sizeof m);
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_prepare_t turns;
  uv_prepare_init(&loop, &turns);
  uv_prepare_start(&turns, count_turn);
  uv_unref((uv_handle_t *)&turns);
  turn_exits = max_turn_exits = total_exits = 0;
  const ProcCallbacks counted = {on_output, on_eof, count_exit, NULL, NULL};
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_sleep"));
  char *argv[] = {path, "60000", NULL};
  ProcSpawnOptions o = opts_for(argv);
  int started = 0;
  for (int i = 0; i < CONCURRENT; i++) {
    VigilError err = VIGIL_ERROR_INIT;
    if (proc_spawn(&loop, &o, &counted, &m.runs[i], &m.runs[i].p, &err) != 0) {
      check_fail(__FILE__, __LINE__, "spawn %d: %s", i, err.msg);
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++)
    kill(proc_pid(m.runs[i].p), SIGKILL);
  for (int i = 0; i < started; i++) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    while (waitid(P_PID, (id_t)proc_pid(m.runs[i].p), &info, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
  }
  if (RUN_UNTIL(&loop, all_counted, &started, 20000, "every killed child's end")) {
    CHECK_INT(total_exits, CONCURRENT);
    if (max_turn_exits >= CONCURRENT)
      check_fail(__FILE__, __LINE__, "all %d ends came in one loop turn", max_turn_exits);
    for (int i = 0; i < started; i++)
      CHECK_INT(m.runs[i].x.term_signal, SIGKILL);
  }
  for (int i = 0; i < started; i++) {
    proc_close(m.runs[i].p);
    strbuf_free(&m.runs[i].out[0]);
    strbuf_free(&m.runs[i].out[1]);
  }
  uv_close((uv_handle_t *)&turns, NULL);
  RUN_UNTIL(&loop, no_children, NULL, 5000, "every child reaped");
  test_loop_close(&loop);
}

TEST(spawning_again_after_the_loop_state_is_gone)
{
  /* The per-loop state goes with its last Proc; a new spawn on the same
   * loop makes a new one, and a new loop (maybe at the same address) too. */
  for (int round = 0; round < 3; round++) {
    Run r;
    run_init(&r);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
    char *argv[] = {path, "1", NULL};
    ProcSpawnOptions o = opts_for(argv);
    for (int again = 0; again < 2; again++) {
      r.exits = 0;
      if (run_start(&r, &o) && run_wait(&r, 5000))
        CHECK_INT(r.x.exit_code, 1);
      proc_close(r.p);
      r.p = NULL;
      uv_run(&r.loop, UV_RUN_NOWAIT);
    }
    run_close(&r);
  }
}

static void
close_any(uv_handle_t *h, void *arg)
{
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

TEST(loop_torn_down_under_live_children)
{
  /* A host that closes every handle of its loop at once while a child is
   * still running or not yet reaped: the loop still closes, and the
   * children are killed and reaped later. */
  Run r;
  run_init(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_child_path("child_sleep"));
  char *argv[] = {path, "60000", NULL};
  ProcSpawnOptions o = opts_for(argv);
  Proc *kept = NULL;
  int pids[2] = {0, 0};
  if (run_start(&r, &o)) {
    kept = r.p; /* never closed before the loop goes */
    pids[0] = proc_pid(kept);
  }
  if (run_start(&r, &o)) {
    pids[1] = proc_pid(r.p);
    proc_close(r.p); /* closed: killed, reaped at some later SIGCHLD */
    r.p = NULL;
  }
  uv_walk(&r.loop, close_any, NULL);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  CHECK_INT(uv_loop_close(&r.loop), 0);
  if (kept != NULL)
    proc_close(kept); /* its loop is gone: kills it, frees nothing unsafe */
  CHECK_INT(r.exits, 0);

  /* Another loop's activity reaps what was left. */
  Run r2;
  run_init(&r2);
  snprintf(path, sizeof path, "%s", test_child_path("child_exit"));
  char *argv2[] = {path, "0", NULL};
  o = opts_for(argv2);
  if (run_start(&r2, &o))
    run_wait(&r2, 5000);
  for (int i = 0; i < 2; i++) {
    if (pids[i] > 0)
      RUN_UNTIL(&r2.loop, pid_gone, &pids[i], 5000, "a child of the old loop gone");
  }
  run_close(&r2);
  strbuf_free(&r.out[0]);
  strbuf_free(&r.out[1]);
}

/* --- keeper launches queued ------------------------------------------- */

/* How many descriptors this process has open. */
static int
open_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own */
}

typedef struct {
  int answered; /* on_start calls, with or without an error */
} LaunchRun;

static void
launch_on_start(void *data, const VigilError *err)
{
  (void)err;
  ((LaunchRun *)data)->answered++;
}

static bool
launch_answered_one(void *ctx)
{
  return ((LaunchRun *)ctx)->answered > 0;
}

TEST(queued_keeper_launches_hold_only_what_they_borrow)
{
  /* A burst of keeper starts, the loop not running in between: the first
   * launch goes to the pool, the rest wait in its queue. A waiting launch
   * holds duplicates of what it borrows (the child's directory, the
   * monitor's, its listening socket, its cgroups), not the pipes it is
   * armed with when its turn comes: before, each held about 20 and a burst
   * of 1000 ran out of the engine's descriptors (issue 27). The keeper here
   * is /bin/true, which ends at once: every start fails at its hello, and
   * everything is given back. */
  enum { kLaunches = 16 };
  int before = open_fds();
  uv_loop_t loop;
  uv_loop_init(&loop);
  int state_fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(state_fd >= 0 && listen_fd >= 0);
  ProcKeeperOptions keeper = {"/bin/true", state_fd, listen_fd, 1000, 1000};
  char *argv[] = {"sleep", "600", NULL};
  ProcSpawnOptions o = opts_for(argv);
  o.keeper = &keeper;
  const ProcCallbacks cb = {on_output, on_eof, on_exit_cb, launch_on_start, NULL};
  LaunchRun answers[kLaunches];
  Proc *procs[kLaunches];
  memset(answers, 0, sizeof answers);
  int after_first = -1;
  int started = 0;
  for (int i = 0; i < kLaunches; i++) {
    procs[i] = NULL;
    VigilError err = VIGIL_ERROR_INIT;
    if (proc_spawn(&loop, &o, &cb, &answers[i], &procs[i], &err) != 0) {
      check_fail(__FILE__, __LINE__, "keeper start %d refused: %s", i, err.msg);
      break;
    }
    started++;
    if (i == 0)
      after_first = open_fds();
  }
  int after = open_fds();
  if (started == kLaunches) {
    double each = (double)(after - after_first) / (kLaunches - 1);
    if (each > 10)
      check_fail(__FILE__, __LINE__,
                 "a queued keeper launch holds %.1f descriptors (%d before the burst, %d after "
                 "the first start, %d after %d): more than its borrowed ones (at most 10)",
                 each, before, after_first, after, kLaunches);
  }
  /* Every start is answered (failed: /bin/true said no hello). */
  for (int i = 0; i < started; i++) {
    RUN_UNTIL(&loop, launch_answered_one, &answers[i], 20000, "a queued keeper start answered");
  }
  for (int i = 0; i < started; i++)
    proc_close(procs[i]);
  RUN_UNTIL(&loop, no_children, NULL, 10000, "every keeper reaped");
  test_loop_close(&loop);
  close(state_fd);
  close(listen_fd);
  CHECK_INT(open_fds(), before);
}

/* The kernel's size of this process's descriptor table (FDSize in
 * /proc/self/status), or -1. */
static long
fd_table_size(void)
{
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  long n = -1;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "FDSize:", 7) == 0)
      n = strtol(line + 7, NULL, 10);
  }
  if (f != NULL)
    fclose(f);
  return n;
}

/* proc_reserve_fds sizes the table once (issue 27: grown inside starts, a
 * table shared by threads waited for an RCU grace period each time), within
 * the soft limit, and leaves no descriptor open. */
TEST(reserve_fds_sizes_the_descriptor_table_within_the_limit)
{
  long before = fd_table_size();
  CHECK(before > 0);
  int probe = dup(0 + 2);
  CHECK(probe >= 0);
  close(probe);
  uint64_t got = proc_reserve_fds((uint64_t)before * 4);
  CHECK(got == (uint64_t)before * 4);
  CHECK(fd_table_size() >= before * 4);
  int again = dup(2);
  CHECK(again == probe); /* nothing was left open */
  close(again);
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < PROC_FD_RESERVE_MAX)
    CHECK(proc_reserve_fds((uint64_t)rl.rlim_cur + 1000) == (uint64_t)rl.rlim_cur);
  else
    CHECK(proc_reserve_fds((uint64_t)PROC_FD_RESERVE_MAX * 2) == PROC_FD_RESERVE_MAX);
}

TEST(signal_names)
{
  CHECK_STR(signals_name(SIGTERM), "SIGTERM");
  CHECK_STR(signals_name(SIGKILL), "SIGKILL");
  CHECK_STR(signals_name(SIGHUP), "SIGHUP");
  CHECK(signals_name(0) == NULL);
  CHECK(signals_name(999) == NULL);
  CHECK_INT(signals_number("SIGTERM"), SIGTERM);
  CHECK_INT(signals_number("TERM"), SIGTERM);
  CHECK_INT(signals_number("sigint"), SIGINT);
  CHECK_INT(signals_number("USR1"), SIGUSR1);
  CHECK_INT(signals_number("SIGSTOP"), SIGSTOP);
  CHECK_INT(signals_number("SIGNOPE"), -1);
  CHECK_INT(signals_number(""), -1);
  CHECK_INT(signals_number("SIG"), -1);
  CHECK_INT(signals_number(NULL), -1);
  for (int sig = 1; sig < 32; sig++) {
    const char *name = signals_name(sig);
    if (name != NULL)
      CHECK_INT(signals_number(name), sig);
  }
}

int
main(void)
{
  /* As the engine does; the child must still get SIGPIPE at its default. */
  signal(SIGPIPE, SIG_IGN);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vigil-proc-XXXXXX");
  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  RUN(exit_zero_with_output_collected);
  RUN(nonzero_exit_code);
  RUN(killed_by_its_own_signal);
  RUN(stop_with_sigterm_ends_a_sleeping_child);
  RUN(stop_escalates_to_sigkill_once);
  RUN(a_stronger_stop_goes_through_during_a_grace);
  RUN(a_stop_without_escalation_is_hastened_by_one_with_a_grace);
  RUN(stop_with_zero_grace_kills_at_once);
  RUN(grandchild_holding_the_pipe_is_cut_by_the_drain_bound);
  RUN(zero_drain_still_delivers_what_the_child_wrote);
  RUN(zero_drain_loses_nothing_of_a_fast_writer);
  RUN(a_grandchild_writing_forever_cannot_stall_the_end);
  RUN(unknown_program_is_command_not_found);
  RUN(non_executable_file_is_command_not_found);
  RUN(directory_is_command_not_found);
  RUN(bad_cwd_is_invalid_params);
  RUN(exec_failure_is_spawn_failed_and_leaves_nothing);
  RUN(bad_argv_is_invalid_params);
  RUN(a_script_with_a_shebang_runs);
  RUN(child_environment);
  RUN(engine_with_fd_0_closed);
  RUN(program_found_through_the_search_path_and_relative_to_cwd);
  RUN(the_childs_path_never_chooses_the_program);
  RUN(relative_entries_of_the_engines_path_are_ignored);
  RUN(spawn_check_resolves_without_starting);
  RUN(child_inherits_only_env_inherit);
  RUN(the_opened_directory_is_entered_even_after_its_path_changes);
  RUN(stdin_data_is_delivered);
  RUN(memory_limit_is_enforced);
  RUN(cpu_limit_is_accepted_within_the_machine);
  RUN(resource_usage);
  RUN(raw_bytes_arrive_unchanged);
  RUN(a_full_pipe_is_read_one_buffer_per_loop_turn);
  RUN(close_on_a_running_child_kills_its_group);
  RUN(close_while_draining_kills_the_grandchild);
  RUN(close_from_inside_on_exit);
  RUN(fifty_concurrent_children_all_exit);
  RUN(the_ends_of_many_children_are_spread_over_turns);
  RUN(spawning_again_after_the_loop_state_is_gone);
  RUN(loop_torn_down_under_live_children);
  RUN(reserve_fds_sizes_the_descriptor_table_within_the_limit);
  RUN(queued_keeper_launches_hold_only_what_they_borrow);
  RUN(signal_names);
  rmdir(tmpdir);
  return check_summary();
}
