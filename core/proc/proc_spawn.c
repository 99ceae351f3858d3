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

static pid_t proc_clone(int (*entry)(void *), void *arg);

/* What the child is given (proc_child.h): its program, arguments,
 * descriptors, containment and environment. The environment is what the
 * engine passes on (env_inherit), its line-buffering additions, then the
 * caller's variables and the monitor's id (contain_env), which replace
 * both; built here, as the child may not allocate (child->envp is the
 * caller's to free). */
static void
proc_launch_child(ProcLaunch *l, const ProcSpawnOptions *opts, ProcChild *child)
{
  ChildLineBuffering lb = {opts->line_buffered, opts->line_buffered ? childenv_stdbuf() : NULL};
  char **envp = childenv_build(opts->env_inherit, contain_env(l->contain), &lb);
  *child = (ProcChild){l->path,
                       opts->argv,
                       envp,
                       l->dir->fd,
                       {l->in[0], l->out[0][1], l->out[1][1]},
                       l->report[1],
                       contain_child(l->contain),
                       proc_child_open_max(),
                       false,
                       {0, 0}};
  child->nofile_restore = proc__child_nofile(&child->nofile);
}

/* Forks the child, which runs proc_child and never returns here, or with a
 * keeper the keeper, which starts the child. Returns its pid, or -1 with
 * errno set. */
static pid_t
proc_launch_fork(ProcLaunch *l, const ProcSpawnOptions *opts)
{
  ProcChild child;
  proc_launch_child(l, opts, &child);
  char **envp = child.envp;
  int (*entry)(void *) = proc_child_entry;
  void *arg = &child;
  ProcKeeperExec kx = {0};
  if (opts->keeper != NULL) {
    proc_launch_keeper_exec(l, opts, &child, &kx);
    entry = proc_keeper__entry;
    arg = &kx;
  }
  l->start_ns = uv_hrtime();
  pid_t pid = proc_clone(entry, arg);
  int saved = errno;
  free(kx.argv);
  free(envp);
  errno = saved;
  return pid;
}

/* Clones a child that runs entry(arg) and execs, as vfork does: this thread
 * waits until it has exec'd or exited. Returns its pid, or -1 with errno
 * set. Any thread may call it (proc_keeper_launch_work does, from the
 * thread pool). */
static pid_t
proc_clone(int (*entry)(void *), void *arg)
{
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
  if (opts->keeper != NULL && l->pid <= 0) {
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

/* --- a keeper's launch, off the loop -------------------------------------- */

/* A keeper's clone waits (CLONE_VFORK) until the keeper has exec'd: a
 * fraction of a millisecond on a quiet machine, 3 to 5 ms measured while a
 * burst of 1000 starts loaded it (issue 27), and all of it a stop of the
 * loop when the loop waited. So a keeper start is launched from libuv's
 * thread pool: the loop makes the Proc; when the launch's turn comes it
 * makes the pipes and their handles (arming it), a pool thread clones and
 * waits for the exec's report, and the loop takes the answer (the keeper's
 * pid, or why it did not start). The Proc is starting all the while, as it
 * is until the hello, and launching until the answer, with no keeper pid:
 * every path that signals or reaps a keeper checks for one. The clone's
 * child reads only the launch's own copies (arguments, environment,
 * descriptors), since the caller's options and descriptors may be gone by
 * then (the monitor closes its listening socket once proc_spawn returns).
 *
 * A launch waiting in the queue holds no pipe: only duplicates of the
 * descriptors it borrows (the child's directory, the monitor's, its
 * listening socket, its cgroups). A burst of 1000 starts queued with their
 * pipes made held about 17 descriptors each, and ran out of the engine's
 * limit where the launches fell behind (bench/scale on tmpfs: 46 of 1000
 * refused with "dup: Too many open files"). */

/* x.src's first entries (keeper_wire.h's order): the child's stdin, stdout
 * and stderr ends and the keeper's end of the control socket, which are the
 * launch's own (in l); then the read ends of the output pipes, which are
 * the Proc's and duplicated for the launch when it is armed; then what it
 * borrows, duplicated when it is queued. */
#define PROC_LAUNCH_OWN_SRCS 4
#define PROC_LAUNCH_READ_SRCS 6

typedef struct ProcKeeperLaunch {
  uv_work_t req;
  ProcLaunch l;            /* made when armed: the pipes' child ends, the report pipe */
  ProcKeeperExec x;        /* argv, envp and src are the launch's own */
  char *stdin_data;        /* a copy of what the child is given on stdin, or NULL */
  size_t stdin_len;
  Proc *p;
  pid_t pid;               /* the keeper, once cloned */
  int step, e;             /* why it did not start */
  const char *what;
  bool failed;
  struct ProcKeeperLaunch *next; /* the launch queued after this one */
} ProcKeeperLaunch;

/* One launch in the pool at a time, the rest queued in order: each keeper's
 * exec competes with the loop for the machine's CPUs, so launching several
 * at once only stops the loop's thread more often (measured on 2 cores).
 * The queue is bounded by monitor.max_monitors: each launch is a monitor
 * counted against it from its start request. */
static ProcKeeperLaunch *proc_launch_running, *proc_launch_head, *proc_launch_tail;
/* Who waits for no launch to be in flight (proc_keeper_launches_settled). */
static void (*proc_launch_settled_cb)(void *data);
static void *proc_launch_settled_data;

/* See proc.h. */
void
proc_keeper_launches_settled(void (*cb)(void *data), void *data)
{
  if (proc_launch_running == NULL && proc_launch_head == NULL) {
    cb(data);
    return;
  }
  proc_launch_settled_cb = cb;
  proc_launch_settled_data = data;
}

/* Whether a keeper is launched from the pool: yes, unless
 * VIGIL_TEST_SYNC_KEEPER_LAUNCH is set (the launch on the loop as before,
 * for the A/B of bench/scale's start burst). */
static bool
proc_keeper_launch_async(void)
{
  static int async = -1;
  if (async < 0)
    async = getenv("VIGIL_TEST_SYNC_KEEPER_LAUNCH") == NULL;
  return async == 1;
}

/* A copy of the NULL-terminated v in one allocation (the pointers, then the
 * strings). */
static char **
proc_strv_copy(char *const *v)
{
  size_t n = 0, bytes = 0;
  while (v[n] != NULL)
    bytes += strlen(v[n++]) + 1;
  char **out = xmalloc((n + 1) * sizeof *out + bytes);
  char *text = (char *)(out + n + 1);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(v[i]) + 1;
    memcpy(text, v[i], len);
    out[i] = text;
    text += len;
  }
  out[n] = NULL;
  return out;
}

/* Frees what the launch owns: its duplicates, and whatever of its pipes is
 * still its own (the keeper has its copies by now, or never will). */
static void
proc_keeper_launch_free(ProcKeeperLaunch *k)
{
  for (int i = PROC_LAUNCH_OWN_SRCS; i < k->x.nsrc; i++)
    proc_close_fd(&k->x.src[i]);
  proc_launch_abort(&k->l);
  free(k->x.argv);
  free(k->x.envp);
  free(k->stdin_data);
  free(k);
}

/* The launch is over, run or not: p may go once nothing else holds it. */
static void
proc_keeper_launch_end(ProcKeeperLaunch *k)
{
  Proc *p = k->p;
  p->launching = false;
  contain_set_launching(p->contain, false);
  proc_keeper_launch_free(k);
  proc__free_if_done(p);
}

/* Arms a launch whose turn has come, on the loop: the pipes and the
 * control socket, their handles on the Proc, and the descriptors the
 * keeper is given. Returns 0, or -1 with errno set and *what naming the
 * call (what is made stays k's, freed with it). */
static int
proc_keeper_launch_arm(ProcKeeperLaunch *k, const char **what)
{
  ProcLaunch *l = &k->l;
  if (proc_launch_pipes(l, k->stdin_data != NULL, true, what) != 0)
    return -1;
  int own[PROC_LAUNCH_OWN_SRCS] = {l->in[0], l->out[0][1], l->out[1][1], l->ctl[1]};
  memcpy(k->x.src, own, sizeof own);
  k->x.report_fd = l->report[1];
  /* The read ends become the Proc's handles', which a close on the loop
   * may close while the pool thread clones: the keeper gets duplicates. */
  *what = "dup";
  for (int i = PROC_LAUNCH_OWN_SRCS; i < PROC_LAUNCH_READ_SRCS; i++) {
    k->x.src[i] = fcntl(l->out[i - PROC_LAUNCH_OWN_SRCS][0], F_DUPFD_CLOEXEC, 3);
    if (k->x.src[i] < 0)
      return -1;
  }
  ProcSpawnOptions stdin_opts = {.stdin_data = k->stdin_data, .stdin_len = k->stdin_len};
  int rc = proc_watch(k->p, l, &stdin_opts);
  if (rc != 0) {
    *what = "watching the child's pipes";
    errno = -rc;
    return -1;
  }
  return 0;
}

static void proc_keeper_launch_work(uv_work_t *req);
static void proc_keeper_launch_done(uv_work_t *req, int status);

/* Sends the next queued launch to the pool, if none runs: one whose Proc
 * was closed while it waited ends without running, and one that cannot be
 * armed fails its start. */
static void
proc_keeper_launch_next(uv_loop_t *loop)
{
  while (proc_launch_running == NULL && proc_launch_head != NULL) {
    ProcKeeperLaunch *k = proc_launch_head;
    proc_launch_head = k->next;
    if (proc_launch_head == NULL)
      proc_launch_tail = NULL;
    k->next = NULL;
    Proc *p = k->p;
    if (p->closed || !p->starting) {
      proc_keeper_launch_end(k);
      continue;
    }
    const char *what = "launch";
    if (proc_keeper_launch_arm(k, &what) != 0) {
      int e = errno;
      proc_keeper__start_failed(p, 0, what, e);
      proc_keeper_launch_end(k);
      continue;
    }
    proc_launch_running = k;
    if (uv_queue_work(loop, &k->req, proc_keeper_launch_work, proc_keeper_launch_done) != 0) {
      /* No pool: the launch waits here, as it did before it had one. */
      proc_keeper_launch_work(&k->req);
      proc_keeper_launch_done(&k->req, 0);
    }
  }
}

/* In a pool thread: the clone, and the wait for the exec's report. */
static void
proc_keeper_launch_work(uv_work_t *req)
{
  ProcKeeperLaunch *k = req->data;
  k->pid = proc_clone(proc_keeper__entry, &k->x);
  k->e = errno;
  proc_close_fd(&k->l.report[1]); /* so its read sees the exec's close */
  if (k->pid <= 0) {
    k->failed = true;
    k->what = "fork";
    return;
  }
  k->l.pid = k->pid;
  if (proc_launch_failed(&k->l, &k->step, &k->e))
    k->failed = true; /* reaped there */
}

/* On the loop: the launch's answer. A Proc closed meanwhile, or whose
 * hello bound passed, is not started after all: its keeper is killed and
 * left to be reaped. */
static void
proc_keeper_launch_done(uv_work_t *req, int status)
{
  ProcKeeperLaunch *k = req->data;
  Proc *p = k->p;
  p->launching = false;
  if (status != 0 && !k->failed && k->pid == 0) {
    k->failed = true; /* cancelled before it ran */
    k->what = "launch";
    k->e = ECANCELED;
  }
  if (!k->failed && (p->closed || !p->starting)) {
    kill(k->pid, SIGKILL);
    proc__leftovers_add(k->pid);
    p->keeper_reaped = true;
  } else if (!k->failed) {
    p->keeper = k->pid;
    contain_set_keeper(p->contain, p->keeper);
    /* Its hello (which names its pid) is read from now on. */
    int rc = p->ctl_open ? proc_keeper__read_start(p) : UV_EBADF;
    if (rc != 0)
      proc_keeper__start_failed(p, kChildKeeper, NULL, -rc);
    else if (p->cb.on_launched != NULL)
      p->cb.on_launched(p->data);
  } else if (p->starting && !p->closed) {
    proc_keeper__start_failed(p, k->step, k->step != 0 ? NULL : k->what, k->e);
  }
  uv_loop_t *loop = p->pl->loop;
  proc_launch_running = NULL;
  proc_keeper_launch_end(k);
  proc_keeper_launch_next(loop);
  if (proc_launch_running == NULL && proc_launch_settled_cb != NULL) {
    void (*cb)(void *) = proc_launch_settled_cb;
    proc_launch_settled_cb = NULL;
    cb(proc_launch_settled_data);
  }
}

/* proc_spawn with a keeper (see the top of this section): 0 with *out
 * starting, its keeper launched from the pool (at once, or queued behind
 * the launches before it), or -1 with err set and nothing left (what can be
 * refused is refused here, before the launch; a launch armed at once that
 * cannot be is refused too). */
static int
proc_keeper_launch(ProcLaunch *l, uv_loop_t *loop, const ProcSpawnOptions *opts,
                   const ProcCallbacks *cb, void *data, Proc **out, VigilError *err)
{
  if (proc_launch_prepare(l, loop, opts, err) != 0) {
    proc_launch_abort(l);
    return -1;
  }
  ProcKeeperLaunch *k = xcalloc(1, sizeof *k);
  k->l = (ProcLaunch){.own_dir = PROC_DIR_INIT,
                      .out = {{-1, -1}, {-1, -1}},
                      .in = {-1, -1},
                      .report = {-1, -1},
                      .ctl = {-1, -1},
                      .pid = -1};
  ProcChild child;
  proc_launch_child(l, opts, &child);
  proc_launch_keeper_exec(l, opts, &child, &k->x);
  char **argv = k->x.argv, **envp = child.envp;
  k->x.argv = proc_strv_copy(argv);
  k->x.envp = proc_strv_copy(envp);
  k->x.path = k->x.argv[0];
  free(argv);
  free(envp);
  if (opts->stdin_data != NULL) {
    k->stdin_data = xmemdupz(opts->stdin_data, opts->stdin_len);
    k->stdin_len = opts->stdin_len;
  }
  /* Not made yet: armed when the launch's turn comes. */
  for (int i = 0; i < PROC_LAUNCH_READ_SRCS; i++)
    k->x.src[i] = -1;
  /* What it borrows, duplicated: the launch's own until it ends. */
  for (int i = PROC_LAUNCH_READ_SRCS; i < k->x.nsrc; i++) {
    int fd = fcntl(k->x.src[i], F_DUPFD_CLOEXEC, 3);
    k->x.src[i] = fd;
    if (fd < 0) {
      proc__start_error(err, 0, "dup", errno, l->path, opts->keeper->program, l->dir->path);
      proc_keeper_launch_free(k);
      proc_launch_abort(l);
      return -1;
    }
  }
  l->start_ns = uv_hrtime();
  l->pid = 0; /* the child's pid comes with the hello */
  Proc *p = proc_launch_adopt(l, opts, cb, data);
  p->launching = true;
  proc_keeper__hello_begin(p);
  k->p = p;
  k->req.data = k;
  contain_set_launching(p->contain, true);
  if (proc_launch_running == NULL && proc_launch_head == NULL) {
    /* Its turn is now: armed here, so that a failure is the caller's
     * answer (a callback must not run inside proc_spawn). */
    const char *what = "launch";
    if (proc_keeper_launch_arm(k, &what) != 0) {
      int e = errno;
      proc_keeper_launch_free(k);
      p->launching = false;
      contain_set_launching(p->contain, false);
      proc_close(p);
      return error_set(err, kErrSpawnFailed, "%s: %s", what, strerror(e));
    }
    proc_loop__update_ref(p->pl);
    proc_launch_running = k;
    if (uv_queue_work(loop, &k->req, proc_keeper_launch_work, proc_keeper_launch_done) != 0) {
      proc_keeper_launch_work(&k->req);
      proc_keeper_launch_done(&k->req, 0);
    }
    *out = p;
    return 0;
  }
  proc_loop__update_ref(p->pl);
  if (proc_launch_tail != NULL)
    proc_launch_tail->next = k;
  else
    proc_launch_head = k;
  proc_launch_tail = k;
  *out = p;
  return 0;
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
  if (opts->keeper != NULL && proc_keeper_launch_async())
    return proc_keeper_launch(&l, loop, opts, cb, data, out, err);
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
