/*
 * Starting a child (see proc.h and proc_internal.h), once proc_resolve.c has
 * decided what runs and where: its pipes, the fork, the child's side up to
 * exec, the report of a failure from child to parent, and the handles that
 * watch the running child. libuv's uv_spawn is not used: it cannot set
 * limits between fork and exec and does not hand back the child's rusage.
 *
 * The child leads its own session and process group, has stdin on
 * /dev/null (or a pipe fed with the given bytes), stdout and stderr on two
 * pipes and no other descriptor, joins its cgroups and gets its limits
 * (contain.c) before exec, and reports the step that failed and its errno
 * on a close-on-exec pipe, so the parent can name it in spawn_failed (libuv
 * reports the errno only).
 *
 * The engine must ignore SIGPIPE: writing stdin_data to a child that exited
 * without reading it would otherwise kill the engine. (The child gets SIGPIPE
 * back at its default disposition before exec.)
 */
#include "proc/proc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/childenv.h"
#include "base/clock.h"
#include "proc/proc_child.h"
#include "base/memory.h"

/* --- descriptors --------------------------------------------------------- */

/* See proc_internal.h. A descriptor lands on 0, 1 or 2 when the engine
 * runs with one of them closed; libuv will not close a handle's descriptor
 * there, and the child's dup2s are clearer without. */
int
proc__fd_lift(int fd)
{
  if (fd < 0 || fd > 2)
    return fd;
  int lifted = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int saved = errno;
  close(fd);
  errno = saved;
  return lifted;
}

/* Creates a pipe whose two ends are close-on-exec and above 2. */
static int
proc_pipe(int fds[2])
{
#ifdef __APPLE__
  if (pipe(fds) != 0)
    return -1;
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#else
  if (pipe2(fds, O_CLOEXEC) != 0)
    return -1;
#endif
  /* Lifting both at once: a freed low number is not reused in between. */
  int lo = fds[0], hi = fds[1];
  fds[0] = lo <= 2 ? fcntl(lo, F_DUPFD_CLOEXEC, 3) : lo;
  fds[1] = hi <= 2 ? fcntl(hi, F_DUPFD_CLOEXEC, 3) : hi;
  int saved = errno;
  if (fds[0] != lo)
    close(lo);
  if (fds[1] != hi)
    close(hi);
  if (fds[0] < 0 || fds[1] < 0) {
    if (fds[0] >= 0)
      close(fds[0]);
    if (fds[1] >= 0)
      close(fds[1]);
    fds[0] = fds[1] = -1;
    errno = saved;
    return -1;
  }
  return 0;
}

/* Closes fd if it is open (>= 0) and marks it closed. */
static void
proc_close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

#ifdef __linux__
/* The stack proc_child runs on after clone: what it and the system calls'
 * wrappers need, with a wide margin (glibc's posix_spawn gives its child
 * 32 KiB plus the size of argv). */
#define PROC_CHILD_STACK (64 * 1024)

/* clone's entry point: the child, which execs or exits. */
static int
proc_child_entry(void *arg)
{
  proc_child(arg);
  return 127; /* not reached: proc_child never returns */
}
#endif

/* --- the parent's side: prepare, fork, watch ------------------------------ */

/* A child being started: what proc_spawn has made so far, so that one
 * function (proc_launch_abort) undoes whatever step failed. */
typedef struct {
  ProcLoop *pl;
  ProcDir own_dir;        /* the directory opened here when opts->dir is NULL */
  const ProcDir *dir;     /* the directory the child runs in */
  char *path;             /* the program; the Proc's once there is one */
  Contain *contain;       /* likewise */
  int out[2][2];          /* stdout and stderr: [0] ours, [1] the child's */
  bool grown[2];          /* out[i][0] counts against the grown-pipe budget */
  int in[2];              /* stdin: [0] the child's (a pipe or /dev/null),
                             [1] ours (a pipe only) */
  int report[2];          /* the failure report: [0] ours, [1] the child's */
  int ctl[2];             /* with a keeper: its control socket, [0] ours */
  pid_t pid;              /* the child */
  pid_t keeper;           /* with a keeper: its pid (the one forked here) */
  uint64_t start_ns;
} ProcLaunch;

/* Closes and frees whatever of l is still l's, leaving nothing behind. */
static void
proc_launch_abort(ProcLaunch *l)
{
  for (int i = 0; i < 2; i++) {
    if (l->grown[i])
      proc__pipe_release();
    l->grown[i] = false;
    proc_close_fd(&l->out[i][0]);
    proc_close_fd(&l->out[i][1]);
  }
  proc_close_fd(&l->in[0]);
  proc_close_fd(&l->in[1]);
  proc_close_fd(&l->report[0]);
  proc_close_fd(&l->report[1]);
  proc_close_fd(&l->ctl[0]);
  proc_close_fd(&l->ctl[1]);
  free(l->path);
  l->path = NULL;
  proc_dir_close(&l->own_dir);
  contain_free(l->contain);
  l->contain = NULL;
  if (l->pl != NULL)
    proc_loop__release_if_empty(l->pl);
  l->pl = NULL;
}

/* The prepare step: everything that can be refused without a fork (the
 * options, the directory, the program), then the loop's state and the
 * child's containment. Returns 0, or -1 with err set. */
static int
proc_launch_prepare(ProcLaunch *l, uv_loop_t *loop, const ProcSpawnOptions *opts,
                    VigilError *err)
{
  if (proc__prepare(opts, &l->own_dir, &l->dir, &l->path, err) != 0)
    return -1;
  l->pl = proc_loop__get(loop, err);
  if (l->pl == NULL)
    return -1;
  ContainOptions copts = {opts->tag, opts->env_extra, opts->memory_limit, opts->cpu_limit,
                          opts->max_processes, false, opts->group};
  l->contain = contain_new(loop, &copts, err);
  return l->contain != NULL ? 0 : -1;
}

/* Makes the child's pipes (stdout, stderr, the report, then stdin or
 * /dev/null) and grows the output pipes within the budget. Returns 0, or -1
 * with errno set and *what naming the call that failed. */
static int
proc_launch_pipes(ProcLaunch *l, bool want_stdin, bool keeper, const char **what)
{
  *what = "pipe";
  if (proc_pipe(l->out[0]) != 0 || proc_pipe(l->out[1]) != 0 || proc_pipe(l->report) != 0)
    return -1;
  if (keeper) {
    *what = "socketpair";
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, l->ctl) != 0)
      return -1;
    *what = "pipe";
  }
  if (want_stdin) {
    if (proc_pipe(l->in) != 0)
      return -1;
  } else {
    *what = "open /dev/null";
    if ((l->in[0] = proc__fd_lift(open("/dev/null", O_RDONLY | O_CLOEXEC))) < 0)
      return -1;
  }
  l->grown[0] = proc__pipe_grow(l->out[0][0]);
  l->grown[1] = proc__pipe_grow(l->out[1][0]);
  return 0;
}

/* What the clone of a keeper launch is given: the keeper's descriptors in
 * the order of their numbers (keeper_wire.h), its arguments, and the
 * child's environment as its own. */
static void
proc_launch_keeper_exec(ProcLaunch *l, const ProcSpawnOptions *opts, const ProcChild *child,
                        ProcKeeperExec *x)
{
  const ProcKeeperOptions *k = opts->keeper;
  const ContainChild *cc = child->contain;
  KeeperArgs a = {(int)cc->njoin, cc->rlimit_as, cc->rlimit_nproc, child->nofile_restore,
                  (uint64_t)child->nofile.rlim_cur, (uint64_t)child->nofile.rlim_max,
                  k->unattended_ms, k->kill_grace_ms, opts->exit_drain_ms, l->path, opts->argv};
  int src[KEEPER_FD_JOIN] = {l->in[0], l->out[0][1], l->out[1][1], l->ctl[1], l->out[0][0],
                             l->out[1][0], l->dir->fd, k->state_fd, k->listen_fd};
  x->path = k->program;
  x->argv = keeper_args_build(k->program, &a);
  x->envp = child->envp;
  memcpy(x->src, src, sizeof src);
  x->nsrc = KEEPER_FD_JOIN;
  for (size_t i = 0; i < cc->njoin; i++)
    x->src[x->nsrc++] = cc->join_fds[i];
  x->report_fd = l->report[1];
}

/* Forks the child, which runs proc_child and never returns here, or with a
 * keeper the keeper, which starts the child. Returns its pid, or -1 with
 * errno set. */
static pid_t
proc_launch_fork(ProcLaunch *l, const ProcSpawnOptions *opts)
{
  /* What the engine passes on (env_inherit), its line-buffering
   * additions, then the caller's variables and the monitor's id
   * (contain_env), which replace both. Built here: the child may not
   * allocate. */
  ChildLineBuffering lb = {opts->line_buffered, opts->line_buffered ? childenv_stdbuf() : NULL};
  char **envp = childenv_build(opts->env_inherit, contain_env(l->contain), &lb);
  long open_max = proc_child_open_max();
  ProcChild child = {l->path,
                     opts->argv,
                     envp,
                     l->dir->fd,
                     {l->in[0], l->out[0][1], l->out[1][1]},
                     l->report[1],
                     contain_child(l->contain),
                     open_max,
                     false,
                     {0, 0}};
  child.nofile_restore = proc__child_nofile(&child.nofile);
  int (*entry)(void *) = proc_child_entry;
  void *arg = &child;
  ProcKeeperExec kx = {0};
  if (opts->keeper != NULL) {
    proc_launch_keeper_exec(l, opts, &child, &kx);
    entry = proc_keeper__entry;
    arg = &kx;
  }
  l->start_ns = uv_hrtime();
  /* Every signal blocked across fork: the child must not run the engine's
   * handlers (libuv's would write into the loop's signal pipe) before it
   * has reset them. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
#ifdef __linux__
  /* The child shares our memory until it execs, on a stack of its own,
   * and this thread waits for that (what glibc's posix_spawn does). fork()
   * copies the page tables of the whole engine and write-protects every page
   * of it, so that each page the engine writes afterwards faults once more:
   * a cost in proportion to the engine's memory, paid again at every start.
   * bench/scale took 80 to 180 s to start 1000 monitors that way on the
   * project's 2-core machine (6 ms a start at first, over 100 ms at the
   * end), 6 to 9 s with this. What proc_child writes in our memory is only
   * child's fields and this thread's errno, neither read after a successful
   * clone; its signal handlers are its own (no CLONE_SIGHAND), and every
   * signal stays blocked until it has reset them. */
  /* The stack is mapped for this start and unmapped after it (as
   * posix_spawn's is), not taken from the heap: the pages the child touched
   * go back at once instead of staying among the engine's allocations. */
  pid_t pid = -1;
  char *stack = mmap(NULL, PROC_CHILD_STACK, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack != MAP_FAILED) {
    pid = clone(entry, stack + PROC_CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  }
  int saved = errno;
  if (stack != MAP_FAILED)
    munmap(stack, PROC_CHILD_STACK);
#else
  pid_t pid = fork();
  if (pid == 0)
    _exit(entry(arg));
  int saved = errno;
#endif
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(kx.argv);
  free(envp);
  errno = saved;
  return pid;
}

/* Waits for the child's report. Returns false when it reached exec, which
 * closes the report pipe (close-on-exec) with nothing written; else true,
 * with the failed step and its errno, and the child reaped. This is the
 * same short wait posix_spawn does to report an exec failure, and the one
 * place the loop waits on the child. */
static bool
proc_launch_failed(ProcLaunch *l, int *step, int *child_errno)
{
  int report[2] = {0, 0};
  size_t got = 0;
  while (got < sizeof report) {
    ssize_t n = read(l->report[0], (char *)report + got, sizeof report - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  if (got == 0)
    return false;
  /* The child has written its report and is in _exit: reaping it returns
   * at once and leaves nothing behind. */
  while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  *step = report[0];
  *child_errno = got == sizeof report ? report[1] : EIO;
  return true;
}

/* The fork step: pipes, the child, its report. Returns 0 with l->pid set,
 * or -1 with err set to spawn_failed naming the call or the child's step
 * and the OS error (the caller aborts l; no child is left). */
static int
proc_launch_start(ProcLaunch *l, const ProcSpawnOptions *opts, VigilError *err)
{
  const char *what;
  int step = 0, e = 0;
  bool failed = proc_launch_pipes(l, opts->stdin_data != NULL, opts->keeper != NULL, &what) != 0;
  if (failed) {
    e = errno;
  } else if ((l->pid = proc_launch_fork(l, opts)) <= 0) {
    e = errno;
    what = "fork";
    failed = true;
  }
  /* The child's ends are the child's now. */
  proc_close_fd(&l->in[0]);
  proc_close_fd(&l->out[0][1]);
  proc_close_fd(&l->out[1][1]);
  proc_close_fd(&l->report[1]);
  proc_close_fd(&l->ctl[1]);
  if (!failed && proc_launch_failed(l, &step, &e))
    failed = true;
  proc_close_fd(&l->report[0]);
  if (!failed && opts->keeper != NULL) {
    /* The pid forked is the keeper's; the child's is its first word, read
     * from the loop (proc_keeper.c), not waited for here. */
    l->keeper = l->pid;
    l->pid = 0;
  }
  if (!failed)
    return 0;
  return proc__start_error(err, step, what, e, l->path,
                           opts->keeper != NULL ? opts->keeper->program : NULL, l->dir->path);
}

/* See proc_internal.h. */
int
proc__start_error(VigilError *err, int step, const char *what, int e, const char *program,
                  const char *keeper, const char *dir)
{
  if (step == kChildKeeper)
    return error_set(err, kErrSpawnFailed, "keeper \"%s\": %s", keeper ? keeper : "?",
                     strerror(e));
  if (step == kChildExec)
    return error_set(err, kErrSpawnFailed, "exec \"%s\": %s", program, strerror(e));
  if (step == kChildChdir)
    return error_set(err, kErrSpawnFailed, "chdir \"%s\": %s", dir, strerror(e));
  return error_set(err, kErrSpawnFailed, "%s: %s", step != 0 ? proc_step_name(step) : what,
                   strerror(e));
}

/* The Proc of the started child, with the program, the containment and the
 * loop handed over from l, on the loop's list. SIGCHLD is watched since
 * before the fork: an early exit is already queued for the loop's handler,
 * which now finds it on the list. */
static Proc *
proc_launch_adopt(ProcLaunch *l, const ProcSpawnOptions *opts, const ProcCallbacks *cb,
                  void *data)
{
  Proc *p = xcalloc(1, sizeof *p);
  if (l->keeper > 0 && l->pid <= 0) {
    /* A keeper start: the child's pid comes with the hello, and a failure
     * then names the keeper or the directory. */
    p->keeper_program = xstrdup(opts->keeper->program);
    p->start_dir = xstrdup(l->dir->path);
  } else {
    contain_started(l->contain, l->pid);
  }
  proc_dir_close(&l->own_dir); /* the child is in it now */
  p->pl = l->pl;
  p->pid = l->pid;
  p->program = l->path;
  p->contain = l->contain;
  p->cb = *cb;
  p->data = data;
  p->start_ns = l->start_ns;
  p->drain_ms = opts->exit_drain_ms > 0 ? (uint64_t)opts->exit_drain_ms : 0;
  p->exit.exit_code = -1;
  p->keeper = l->keeper > 0 ? l->keeper : 0;
  if (p->keeper > 0)
    contain_set_keeper(l->contain, p->keeper);
  l->pl = NULL;
  l->path = NULL;
  l->contain = NULL;
  proc_loop__add(p);
  uv_timer_init(p->pl->loop, &p->drain_timer);
  uv_timer_init(p->pl->loop, &p->grace_timer);
  p->drain_timer.data = p->grace_timer.data = p;
  p->handles += 2;
  return p;
}

/* Wraps fd in a pipe handle of p (counted in p->handles). */
static int
proc_pipe_handle(Proc *p, uv_pipe_t *h, int fd)
{
  uv_pipe_init(p->pl->loop, h, 0);
  h->data = p;
  p->handles++;
  return uv_pipe_open(h, fd);
}

/* Starts writing stdin_data to the stdin pipe (l->in[1]), which becomes
 * p's. Returns 0 or a libuv error. */
static int
proc_watch_stdin(Proc *p, ProcLaunch *l, const ProcSpawnOptions *opts)
{
  if (opts->stdin_len == 0) {
    proc_close_fd(&l->in[1]); /* nothing to write: the child reads EOF */
    return 0;
  }
  int rc = proc_pipe_handle(p, &p->in, l->in[1]);
  p->in_open = true; /* initialized: proc_close must close it */
  if (rc != 0)
    return rc;
  l->in[1] = -1;
  p->in_data = xmemdupz(opts->stdin_data, opts->stdin_len);
  p->in_req.data = p;
  uv_buf_t b = uv_buf_init(p->in_data, (unsigned)opts->stdin_len);
  rc = uv_write(&p->in_req, (uv_stream_t *)&p->in, &b, 1, proc__stdin_written);
  if (rc != 0) {
    free(p->in_data);
    p->in_data = NULL;
  }
  return rc;
}

/* The watch step: reads both output pipes and writes stdin_data, each
 * descriptor becoming p's as its handle opens. Returns 0 or the first
 * libuv error (what is not p's is still l's then). */
static int
proc_watch(Proc *p, ProcLaunch *l, const ProcSpawnOptions *opts)
{
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    int r = proc_pipe_handle(p, &p->out[i], l->out[i][0]);
    if (r == 0) {
      l->out[i][0] = -1; /* owned by the handle now */
      p->reading[i] = true;
      p->grown[i] = l->grown[i];
      l->grown[i] = false;
      /* A keeper start's pipes are read once its hello came. */
      if (!p->starting)
        r = uv_read_start((uv_stream_t *)&p->out[i], proc__alloc_cb, proc__read_cb);
    }
    if (rc == 0)
      rc = r;
  }
  if (rc == 0 && l->in[1] >= 0)
    rc = proc_watch_stdin(p, l, opts);
  if (rc == 0 && l->ctl[0] >= 0) {
    rc = proc_keeper__watch(p, l->ctl[0]);
    l->ctl[0] = -1; /* the handle's, opened or not (proc_close closes it) */
  }
  return rc;
}

/* See proc_internal.h. */
void
proc__read_start(Proc *p)
{
  for (int i = 0; i < 2; i++) {
    if (p->reading[i] &&
        uv_read_start((uv_stream_t *)&p->out[i], proc__alloc_cb, proc__read_cb) != 0) {
      /* Cannot happen to an open pipe handle; were it to, the stream is
       * taken as ended rather than never read. */
      p->reading[i] = false;
    }
  }
}

/* See proc.h. Everything that can be refused is checked before the fork
 * (prepare); after it, a failure reaps the child before returning (fork);
 * a child that runs but cannot be watched is killed and reaped by the
 * SIGCHLD handler, with no callback (watch). */
int
proc_spawn(uv_loop_t *loop, const ProcSpawnOptions *opts, const ProcCallbacks *cb,
           void *data, Proc **out, VigilError *err)
{
  *out = NULL;
  ProcLaunch l = {.own_dir = PROC_DIR_INIT,
                  .out = {{-1, -1}, {-1, -1}},
                  .in = {-1, -1},
                  .report = {-1, -1},
                  .ctl = {-1, -1},
                  .pid = -1};
  if (proc_launch_prepare(&l, loop, opts, err) != 0 || proc_launch_start(&l, opts, err) != 0) {
    proc_launch_abort(&l);
    return -1;
  }
  Proc *p = proc_launch_adopt(&l, opts, cb, data);
  if (opts->keeper != NULL)
    proc_keeper__hello_begin(p);
  int rc = proc_watch(p, &l, opts);
  if (rc != 0) {
    proc_launch_abort(&l);
    proc_close(p);
    return error_set(err, kErrSpawnFailed, "watching the child's pipes: %s", uv_strerror(rc));
  }
  proc_loop__update_ref(p->pl);
  *out = p;
  return 0;
}

/* An adopted child that had already ended: acted on from the loop, not
 * inside proc_adopt (on_exit must not run before the caller has its Proc). */
static void
proc_adopted_exit_cb(uv_timer_t *t)
{
  proc__on_exit_seen(t->data);
}

/* See proc.h. */
int
proc_adopt(uv_loop_t *loop, const ProcAdoptOptions *o, const ProcCallbacks *cb, void *data,
           Proc **out, VigilError *err)
{
  *out = NULL;
  ProcLaunch l = {.own_dir = PROC_DIR_INIT,
                  .out = {{o->out[0], -1}, {o->out[1], -1}},
                  .in = {-1, -1},
                  .report = {-1, -1},
                  .ctl = {o->ctl, -1},
                  .pid = o->pid,
                  .keeper = o->keeper};
  l.path = xstrdup(o->program);
  l.pl = proc_loop__get(loop, err);
  ContainOptions copts = {o->tag, NULL, 0, 0, 0, true, NULL};
  if (l.pl == NULL || (l.contain = contain_new(loop, &copts, err)) == NULL) {
    proc_launch_abort(&l);
    return -1;
  }
  int64_t age_ms = clock_now_ms() - o->started_at_ms;
  l.start_ns = uv_hrtime() - (uint64_t)(age_ms > 0 ? age_ms : 0) * 1000000;
  ProcSpawnOptions opts = {.exit_drain_ms = o->exit_drain_ms};
  Proc *p = proc_launch_adopt(&l, &opts, cb, data);
  p->keeper_adopted = true;
  /* Only the pipes still open are read; one at EOF is done already. */
  int rc = 0;
  for (int i = 0; i < 2 && rc == 0; i++) {
    if (l.out[i][0] < 0)
      continue;
    rc = proc_pipe_handle(p, &p->out[i], l.out[i][0]);
    if (rc == 0) {
      l.out[i][0] = -1;
      p->reading[i] = true;
      rc = uv_read_start((uv_stream_t *)&p->out[i], proc__alloc_cb, proc__read_cb);
    }
  }
  if (rc == 0) {
    rc = proc_keeper__watch(p, l.ctl[0]);
    l.ctl[0] = -1;
  }
  if (rc != 0) {
    proc_launch_abort(&l);
    proc_close(p);
    return error_set(err, kErrSpawnFailed, "taking over %s: %s", o->tag, uv_strerror(rc));
  }
  if (o->keeper_gone) {
    /* Nothing to wait for and nothing to signal or read in /proc: no
     * keeper holds the pids for us any more, and they may be in use by
     * others already. */
    p->keeper_reaped = true;
    p->reaped = true;
    p->exit_seen = true;
    p->exit.exited = !o->status_unknown;
    p->exit.exit_code = o->status_unknown || o->term_signal != 0 ? -1 : o->exit_code;
    p->exit.term_signal = o->status_unknown ? 0 : o->term_signal;
    p->exit.duration_ms = o->ended_at_ms > o->started_at_ms
                              ? (uint64_t)(o->ended_at_ms - o->started_at_ms)
                              : (uv_hrtime() - p->start_ns) / 1000000;
    uv_timer_start(&p->drain_timer, proc_adopted_exit_cb, 0, 0);
  } else if (o->exited) {
    /* It ended while no engine was there, and its keeper (attached) still
     * holds the zombie. */
    proc__note_exit(p, o->term_signal == 0, o->exit_code, o->term_signal);
    uv_timer_start(&p->drain_timer, proc_adopted_exit_cb, 0, 0);
  }
  proc_loop__update_ref(p->pl);
  *out = p;
  return 0;
}

/* See proc.h. */
void
proc_adopt_discard(ProcAdoptOptions *o)
{
  proc_close_fd(&o->ctl);
  proc_close_fd(&o->out[0]);
  proc_close_fd(&o->out[1]);
}
