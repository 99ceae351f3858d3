/*
 * Child processes (see proc.h for the lifecycle).
 *
 * proc_spawn resolves the program first, so "no such program" is a clean
 * command_not_found and not a child that dies at exec; proc_spawn_check
 * makes the same checks without the fork (vigild --check-config). A bare
 * name is searched in the search path the caller gives or the engine's PATH,
 * never in a PATH the child's environment sets: with PATH=. or a directory
 * of the caller's choosing, that variable would decide what runs. The
 * directory the child runs in is opened before the fork and entered with
 * fchdir, so it is the directory that was checked. It then forks a child
 * that leads its own session and process group, has stdin on /dev/null (or a
 * pipe fed with the given bytes), stdout and stderr on two pipes and no other
 * descriptor, and execs. libuv's uv_spawn is not used: it cannot set limits
 * between fork and exec and does not hand back the child's rusage.
 *
 * The parent reads both pipes in the loop and learns of the exit from one
 * SIGCHLD handle per loop. An exited child is left a zombie (waitid with
 * WNOWAIT) until its streams are done, so its pid and its process group id
 * cannot be reused while the group may still be signalled; then everything
 * the child started is sent SIGKILL (nothing is left behind), the child is
 * reaped with wait4 for its resource usage, and on_exit is called once.
 *
 * "Everything the child started" is contain.c's business: each Proc has a
 * Contain that joins the child to its cgroups between fork and exec, signals
 * the group and every descendant that left it, and at each SIGCHLD reaps the
 * orphans the engine adopted as a subreaper (those are not Procs).
 *
 * Threads: the loops may differ but every call into this module comes from
 * one thread; the per-loop states are a plain list.
 *
 * The engine must ignore SIGPIPE: writing stdin_data to a child that exited
 * without reading it would otherwise kill the engine. (The child gets SIGPIPE
 * back at its default disposition before exec.)
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "childenv.h"
#include "contain.h"
#include "memory.h"

/* One read buffer per loop, shared by every pipe on it (see proc_alloc_cb). */
#define PROC_READ_BUF_SIZE (256 * 1024)
/* What the stdout/stderr pipes are grown to, so a fast writer needs fewer
 * reads; also the most a stream is drained at the drain deadline. */
#define PROC_PIPE_SIZE (1024 * 1024)
/* Below this an address-space limit cannot even load a dynamic executable. */
#define PROC_MIN_MEMORY_LIMIT (1024 * 1024)
/* The search path when the caller gives none and the engine's PATH has no
 * absolute directory. */
#define PROC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

typedef struct ProcLoop ProcLoop;

/* What the module keeps per libuv loop. Created at the first spawn on the
 * loop; its signal handle is closed when its last Proc is freed, so the loop
 * can be closed. */
struct ProcLoop {
  uv_loop_t *loop;
  uv_signal_t sigchld; /* ref'd only while some child's exit is still to be
                          seen (proc_loop_update_ref) */
  char *buf;           /* the read buffer shared by every pipe of this loop */
  Proc *procs;         /* every Proc not yet freed, closed ones awaiting reaping too */
  ProcLoop *next;
};

struct Proc {
  ProcLoop *pl;
  Proc *prev, *next; /* in pl->procs */
  pid_t pid;
  char *program;     /* the path that was executed */
  Contain *contain;  /* the child's group, descendants and limits */
  ProcCallbacks cb;
  void *data;
  uv_pipe_t out[2];  /* indexed by StreamId */
  bool reading[2];   /* out[i] is open: neither EOF nor cut yet */
  bool grown[2];     /* out[i]'s pipe counts against proc_pipe_grown */
  uv_pipe_t in;      /* stdin_data's write end, while the write is pending */
  bool in_open;
  uv_write_t in_req;
  char *in_data;     /* our copy of stdin_data until the write is done */
  uv_timer_t drain_timer;
  uv_timer_t grace_timer;
  int handles;       /* handles not yet through their close callback */
  uint64_t start_ns;
  uint64_t drain_ms;
  bool exit_seen;    /* waitid saw the exit; the zombie holds pid and pgid */
  bool reaped;       /* wait4 is done (or someone else reaped it) */
  bool finished;     /* on_exit has been called */
  bool stop_requested;
  bool closed;       /* proc_close was called: no more callbacks */
  ProcExit exit;
};

static ProcLoop *proc_loops;
/* States whose signal handle someone else closed (a loop torn down with live
 * procs on it). Their memory may still be in the loop's closing queue, so it
 * is kept here, reachable, and never touched again but to reap. */
static ProcLoop *proc_graveyard;
/* Killed children whose loop is gone, reaped at the next chance. */
static pid_t *proc_leftovers;
static size_t proc_nleftovers, proc_leftovers_cap;
/* Pipes grown to PROC_PIPE_SIZE and still open, and how many may be. Past the
 * per-user soft limit (fs.pipe-user-pages-soft) Linux refuses to grow pipes
 * and creates new ones with two pages only, so growing every pipe would make
 * the 33rd monitor read 8 KiB at a time; we stay within half of that limit. */
static long proc_pipe_grown;
static long proc_pipe_grow_max = -1;

static void proc_handle_closed(uv_handle_t *h);
static void proc_check(Proc *p);
static void proc_loop_release_if_empty(ProcLoop *pl);

/* Reads up to cap-1 bytes of /proc/PID/NAME into buf, NUL-terminated.
 * Returns the length, 0 when unreadable. */
static size_t
proc_read_procfile(pid_t pid, const char *name, char *buf, size_t cap)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t len = 0;
  while (len < cap - 1) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  return len;
}

/* The number after "key" (e.g. "rchar:") in a /proc text, or 0. */
static uint64_t
proc_field(const char *text, const char *key)
{
  const char *s = strstr(text, key);
  return s ? strtoull(s + strlen(key), NULL, 10) : 0;
}

/* Fills io_read_bytes and io_write_bytes from /proc/PID/io (0 if unreadable;
 * it is readable for a zombie, which is when the final figures are taken). */
static void
proc_sample_io(pid_t pid, ProcExit *x)
{
  char buf[1024];
  if (proc_read_procfile(pid, "io", buf, sizeof buf) == 0)
    return;
  x->io_read_bytes = proc_field(buf, "rchar:");
  x->io_write_bytes = proc_field(buf, "wchar:");
}

/* CPU time so far of pid and its reaped children, from /proc/PID/stat, in
 * ms (0 if unreadable). */
static uint64_t
proc_sample_cpu(pid_t pid)
{
  char buf[1024];
  if (proc_read_procfile(pid, "stat", buf, sizeof buf) == 0)
    return 0;
  /* The command name may hold spaces and parens: fields count from the last
   * ')'. Field 3 (state) follows it; 14-17 are utime stime cutime cstime. */
  char *s = strrchr(buf, ')');
  if (s == NULL)
    return 0;
  s++;
  for (int field = 3; field < 14; field++) {
    s = strchr(s + 1, ' ');
    if (s == NULL)
      return 0;
  }
  uint64_t ticks = 0;
  for (int i = 0; i < 4; i++)
    ticks += strtoull(s, &s, 10);
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? ticks * 1000 / (uint64_t)hz : 0;
}

/* Removes reaped pids from the leftovers (children killed after their loop
 * was torn down). */
static void
proc_leftovers_reap(void)
{
  size_t k = 0;
  for (size_t i = 0; i < proc_nleftovers; i++) {
    if (waitpid(proc_leftovers[i], NULL, WNOHANG) == 0)
      proc_leftovers[k++] = proc_leftovers[i];
  }
  proc_nleftovers = k;
  if (k == 0) {
    free(proc_leftovers);
    proc_leftovers = NULL;
    proc_leftovers_cap = 0;
  }
}

/* Kills p's group (if its pid is still ours) and leaves the reaping to
 * proc_leftovers_reap: for a Proc whose loop is gone. */
static void
proc_abandon(Proc *p)
{
  if (p->reaped)
    return;
  contain_end(p->contain);
  if (proc_nleftovers == proc_leftovers_cap) {
    proc_leftovers_cap = proc_leftovers_cap ? proc_leftovers_cap * 2 : 8;
    proc_leftovers = xrealloc(proc_leftovers, proc_leftovers_cap * sizeof *proc_leftovers);
  }
  proc_leftovers[proc_nleftovers++] = p->pid;
  p->reaped = true;
}

/* Moves every state whose signal handle someone else closed (we unlink a
 * state before closing it ourselves) to the graveyard, killing its children:
 * their loop is gone, and a new loop may get the same address. */
static void
proc_loop_purge(void)
{
  ProcLoop **pp = &proc_loops;
  while (*pp != NULL) {
    ProcLoop *pl = *pp;
    if (!uv_is_closing((uv_handle_t *)&pl->sigchld)) {
      pp = &pl->next;
      continue;
    }
    *pp = pl->next;
    for (Proc *p = pl->procs; p != NULL; p = p->next)
      proc_abandon(p);
    /* No pipe of a closed loop reads again, so the buffer can go. */
    free(pl->buf);
    pl->buf = NULL;
    pl->next = proc_graveyard;
    proc_graveyard = pl;
  }
}

/* Whether p's loop state was torn down under it. */
static bool
proc_loop_gone(const Proc *p)
{
  for (const ProcLoop *pl = proc_graveyard; pl != NULL; pl = pl->next) {
    if (pl == p->pl)
      return true;
  }
  return false;
}

/* Keeps the SIGCHLD handle referenced exactly while some child of the loop
 * has not been seen to exit. Without that, a loop whose pipes have all
 * reached EOF could have nothing active left and return from uv_run before
 * reading the SIGCHLD that reports the exit (an embedder that runs the loop
 * until a monitor ends would spin or stop early); with it, an idle engine
 * still wakes for nothing but that signal. */
static void
proc_loop_update_ref(ProcLoop *pl)
{
  /* Adopted orphans (contain.c) are waited for too: each is reaped at the
   * SIGCHLD that reports it. */
  bool waiting = contain_adopted() > 0;
  for (const Proc *p = pl->procs; p != NULL && !waiting; p = p->next)
    waiting = !p->exit_seen && !p->reaped;
  if (waiting)
    uv_ref((uv_handle_t *)&pl->sigchld);
  else
    uv_unref((uv_handle_t *)&pl->sigchld);
}

/* SIGCHLD on this loop (coalesced: one may stand for many exits): checks
 * every Proc of the loop, and the leftovers. */
static void
proc_on_sigchld(uv_signal_t *h, int signum)
{
  ProcLoop *pl = h->data;
  proc_leftovers_reap();
  /* Nothing on the list is freed during this walk except the Proc being
   * checked (an orphan reaped here); callbacks may add Procs at the head
   * (not visited: they cannot have exited yet) or close others, whose memory
   * goes only in close callbacks, later in the loop iteration. */
  Proc *next;
  for (Proc *p = pl->procs; p != NULL; p = next) {
    next = p->next;
    proc_check(p);
  }
  contain_sweep();
  proc_loop_update_ref(pl);
  if (pl->procs == NULL)
    proc_loop_release_if_empty(pl);
}

/* Frees a state once its signal handle is closed. */
static void
proc_loop_closed(uv_handle_t *h)
{
  ProcLoop *pl = h->data;
  free(pl->buf);
  free(pl);
}

/* The state for loop, created (with its SIGCHLD handle started) if needed.
 * Returns NULL if the signal handle cannot be started. */
static ProcLoop *
proc_loop_get(uv_loop_t *loop, VigilError *err)
{
  proc_loop_purge();
  proc_leftovers_reap();
  for (ProcLoop *pl = proc_loops; pl != NULL; pl = pl->next) {
    if (pl->loop == loop)
      return pl;
  }
  ProcLoop *pl = xcalloc(1, sizeof *pl);
  pl->loop = loop;
  /* uv_signal_init cannot fail on Unix; uv_signal_start can (sigaction). */
  uv_signal_init(loop, &pl->sigchld);
  pl->sigchld.data = pl;
  int rc = uv_signal_start(&pl->sigchld, proc_on_sigchld, SIGCHLD);
  if (rc != 0) {
    error_set(err, kErrSpawnFailed, "cannot watch SIGCHLD: %s", uv_strerror(rc));
    uv_close((uv_handle_t *)&pl->sigchld, proc_loop_closed);
    return NULL;
  }
  uv_unref((uv_handle_t *)&pl->sigchld);
  pl->buf = xmalloc(PROC_READ_BUF_SIZE);
  pl->next = proc_loops;
  proc_loops = pl;
  return pl;
}

/* Closes pl's signal handle (freeing pl) once it has no Proc left and no
 * adopted orphan or cgroup of an ended monitor is still to be seen gone:
 * their SIGCHLD must still find the handle, or they would stay zombies. */
static void
proc_loop_release_if_empty(ProcLoop *pl)
{
  if (pl->procs != NULL || uv_is_closing((uv_handle_t *)&pl->sigchld))
    return;
  if (contain_sweep() > 0 || contain_pending()) {
    proc_loop_update_ref(pl);
    return;
  }
  for (ProcLoop **pp = &proc_loops; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == pl) {
      *pp = pl->next;
      break;
    }
  }
  uv_close((uv_handle_t *)&pl->sigchld, proc_loop_closed);
}

/* Frees p once it is closed, reaped and every handle is through its close
 * callback. */
static void
proc_free_if_done(Proc *p)
{
  if (!p->closed || !p->reaped || p->handles > 0)
    return;
  ProcLoop *pl = p->pl;
  if (p->prev != NULL)
    p->prev->next = p->next;
  else
    pl->procs = p->next;
  if (p->next != NULL)
    p->next->prev = p->prev;
  contain_free(p->contain);
  free(p->in_data);
  free(p->program);
  free(p);
  proc_loop_release_if_empty(pl);
}

/* Close callback of every handle of a Proc: frees it after the last one. */
static void
proc_handle_closed(uv_handle_t *h)
{
  Proc *p = h->data;
  p->handles--;
  proc_free_if_done(p);
}

/* Closes a handle of p unless it is already closing. */
static void
proc_close_handle(Proc *p, uv_handle_t *h)
{
  if (!uv_is_closing(h))
    uv_close(h, proc_handle_closed);
}

/* Stops reading stream id and closes its pipe; calls on_eof. */
static void
proc_stream_end(Proc *p, StreamId id)
{
  if (!p->reading[id])
    return;
  p->reading[id] = false;
  if (p->grown[id]) {
    p->grown[id] = false;
    proc_pipe_grown--;
  }
  proc_close_handle(p, (uv_handle_t *)&p->out[id]);
  if (!p->closed && p->cb.on_eof != NULL)
    p->cb.on_eof(p->data, id);
}

/* Sends SIGKILL to every survivor (contain_finish: the group and every
 * descendant that left it), then reaps the (zombie) child and records its
 * rusage. Only called once the exit has been seen, so the zombie still
 * reserves the group id the kill is sent to. */
static void
proc_reap(Proc *p)
{
  if (p->reaped)
    return;
  ContainReport report;
  contain_finish(p->contain, p->exit.exited, p->exit.exit_code, p->exit.term_signal, &report);
  p->exit.exceeded = report.exceeded;
  p->exit.oom_kills = report.oom_kills;
  p->exit.forks_refused = report.forks_refused;
  struct rusage ru;
  int status;
  pid_t r;
  do
    r = wait4(p->pid, &status, WNOHANG, &ru);
  while (r < 0 && errno == EINTR);
  if (r == 0)
    return; /* cannot happen after waitid saw the exit; retried at SIGCHLD */
  p->reaped = true;
  contain_sweep(); /* this monitor's orphans are now killed on sight */
  if (r != p->pid)
    return; /* ECHILD: someone else reaped it; the exit info is waitid's */
  uint64_t us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
                (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
  p->exit.cpu_ms = us / 1000;
#ifdef __APPLE__
  p->exit.memory_peak_bytes = (uint64_t)ru.ru_maxrss; /* bytes there */
#else
  p->exit.memory_peak_bytes = (uint64_t)ru.ru_maxrss * 1024; /* KiB on Linux */
#endif
}

/* Ends p: kills the group, reaps, and calls on_exit once. */
static void
proc_finish(Proc *p)
{
  if (p->finished)
    return;
  uv_timer_stop(&p->drain_timer);
  uv_timer_stop(&p->grace_timer);
  proc_reap(p);
  p->finished = true;
  if (!p->closed && p->cb.on_exit != NULL)
    p->cb.on_exit(p->data, &p->exit);
}

/* Finishes p if the child has exited and both streams are done. */
static void
proc_finish_if_done(Proc *p)
{
  if (p->closed || p->finished || !p->exit_seen || p->reading[0] || p->reading[1])
    return;
  proc_finish(p);
}

/* Asks the OS whether p's child has exited, without reaping it. On the first
 * yes it records the exit status, duration and io counters (read from the
 * zombie). Returns whether the exit is seen. */
static bool
proc_poll_exit(Proc *p)
{
  if (p->exit_seen)
    return true;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  int r;
  do
    r = waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT);
  while (r < 0 && errno == EINTR);
  if (r == 0 && info.si_pid == 0)
    return false;
  p->exit_seen = true;
  p->exit.duration_ms = (uv_hrtime() - p->start_ns) / 1000000;
  if (r < 0) {
    /* ECHILD: someone else reaped it, so the status is lost, and its pid
     * must not be signalled any more. */
    p->reaped = true;
    p->exit.exited = false;
    p->exit.exit_code = -1;
    return true;
  }
  p->exit.exited = true;
  if (info.si_code == CLD_EXITED) {
    p->exit.exit_code = info.si_status;
    p->exit.term_signal = 0;
  } else {
    p->exit.exit_code = -1;
    p->exit.term_signal = info.si_status;
  }
  proc_sample_io(p->pid, &p->exit);
  return true;
}

/* Drain deadline: reads what is left in each open pipe (at most one pipe
 * buffer, so a grandchild writing on cannot hold us), then closes it. The
 * child's own output is all in the pipe by now (its writes completed before
 * it exited), so the cut only loses what a survivor writes later. */
static void
proc_drain_cb(uv_timer_t *t)
{
  Proc *p = t->data;
  for (int id = 0; id < 2; id++) {
    size_t total = 0;
    uv_os_fd_t fd;
    if (!p->reading[id] || uv_fileno((uv_handle_t *)&p->out[id], &fd) != 0)
      continue;
    while (total < PROC_PIPE_SIZE && !p->closed) {
      ssize_t n = read(fd, p->pl->buf, PROC_READ_BUF_SIZE);
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 0) {
        proc_stream_end(p, (StreamId)id); /* a real EOF after all */
        break;
      }
      if (n < 0)
        break; /* EAGAIN: empty, the writer is still there */
      total += (size_t)n;
      if (p->cb.on_output != NULL)
        p->cb.on_output(p->data, (StreamId)id, p->pl->buf, (size_t)n);
    }
    if (p->closed)
      return;
    if (p->reading[id]) {
      p->exit.drain_cut = true;
      proc_stream_end(p, (StreamId)id);
      if (p->closed)
        return;
    }
  }
  proc_finish_if_done(p);
}

/* Acts on p's state after a SIGCHLD: notes the exit, finishes or starts the
 * drain bound; reaps a closed Proc silently. */
static void
proc_check(Proc *p)
{
  if (p->reaped)
    return;
  bool seen_before = p->exit_seen;
  if (!proc_poll_exit(p))
    return;
  if (p->closed) {
    proc_reap(p);
    proc_free_if_done(p);
    return;
  }
  if (seen_before) {
    if (p->finished)
      proc_reap(p); /* only if an earlier wait4 said "not yet" */
    return;
  }
  uv_timer_stop(&p->grace_timer);
  if (!p->reading[0] && !p->reading[1]) {
    proc_finish(p);
    return;
  }
  uv_timer_start(&p->drain_timer, proc_drain_cb, p->drain_ms, 0);
}

/* Hands out the loop's shared buffer. read_cb consumes every chunk
 * synchronously (on_output copies what it keeps) before libuv asks for the
 * next buffer, so one buffer serves every pipe of the loop. */
static void
proc_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  Proc *p = h->data;
  *buf = uv_buf_init(p->pl->buf, PROC_READ_BUF_SIZE);
}

/* A chunk, EOF or a read error on stdout or stderr. */
static void
proc_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  Proc *p = s->data;
  StreamId id = s == (uv_stream_t *)&p->out[kStreamStdout] ? kStreamStdout : kStreamStderr;
  if (nread > 0) {
    if (!p->closed && p->cb.on_output != NULL)
      p->cb.on_output(p->data, id, buf->base, (size_t)nread);
    return;
  }
  if (nread == 0)
    return; /* EAGAIN */
  /* UV_EOF, or a read error, which ends the stream the same way. */
  proc_stream_end(p, id);
  proc_finish_if_done(p);
}

/* The stdin_data write is done: closes the pipe so the child reads EOF. */
static void
proc_stdin_written(uv_write_t *req, int status)
{
  /* EPIPE (the child exited without reading) and ECANCELED (proc_close) are
   * both fine: there is nothing more to deliver. */
  Proc *p = req->data;
  free(p->in_data);
  p->in_data = NULL;
  if (p->in_open) {
    p->in_open = false;
    proc_close_handle(p, (uv_handle_t *)&p->in);
  }
}

/* The stop grace period is over: SIGKILL to the group and its descendants. */
static void
proc_grace_cb(uv_timer_t *t)
{
  Proc *p = t->data;
  /* Even after the exit (a grandchild holding the pipe), the unreaped zombie
   * keeps the group id ours, and survivors are sent SIGKILL at finish anyway. */
  if (!p->reaped)
    contain_signal(p->contain, SIGKILL);
}

/* Moves a new close-on-exec descriptor that landed on 0, 1 or 2 (the engine
 * runs with one of them closed) above 2: libuv will not close a handle's
 * descriptor there, and the child's dup2s are clearer without. Returns the
 * descriptor, or -1 (the original closed) with errno set. */
static int
proc_fd_lift(int fd)
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

/* Grows an output pipe so a fast writer needs fewer reads, within the
 * budget described at proc_pipe_grown. Returns whether it grew. */
static bool
proc_pipe_grow(int fd)
{
#ifdef F_SETPIPE_SZ
  if (proc_pipe_grow_max < 0) {
    char buf[64] = {0};
    long soft_pages = 0;
    int f = open("/proc/sys/fs/pipe-user-pages-soft", O_RDONLY | O_CLOEXEC);
    if (f >= 0) {
      ssize_t n = read(f, buf, sizeof buf - 1);
      if (n > 0)
        soft_pages = strtol(buf, NULL, 10);
      close(f);
    }
    long page = sysconf(_SC_PAGESIZE);
    /* 0 means no soft limit; root (CAP_SYS_RESOURCE) is not held to it. */
    if (soft_pages <= 0 || page <= 0 || geteuid() == 0)
      proc_pipe_grow_max = LONG_MAX;
    else
      proc_pipe_grow_max = soft_pages / 2 / (PROC_PIPE_SIZE / page);
  }
  if (proc_pipe_grown >= proc_pipe_grow_max)
    return false;
  if (fcntl(fd, F_SETPIPE_SZ, PROC_PIPE_SIZE) < 0)
    return false;
  proc_pipe_grown++;
  return true;
#else
  (void)fd;
  return false;
#endif
}

/* The directories a bare program name is searched in, as a new string: the
 * caller's search path, else the engine's PATH, else the default. Entries
 * that are not absolute are dropped (an empty entry or "." would be the
 * child's cwd, which a caller of the engine picks), and the engine's PATH
 * is passed over when nothing absolute is left of it. */
static char *
proc_search_path(const char *given)
{
  const char *path = given;
  if (path == NULL)
    path = getenv("PATH");
  for (int pass = 0; pass < 2; pass++) {
    size_t len = path ? strlen(path) : 0;
    char *out = xmalloc(len + 1);
    size_t o = 0;
    for (const char *s = path; s != NULL;) {
      const char *colon = strchr(s, ':');
      size_t n = colon ? (size_t)(colon - s) : strlen(s);
      if (n > 0 && s[0] == '/') {
        if (o > 0)
          out[o++] = ':';
        memcpy(out + o, s, n);
        o += n;
      }
      s = colon ? colon + 1 : NULL;
    }
    out[o] = '\0';
    if (o > 0 || given != NULL)
      return out; /* a given path with nothing absolute searches nothing */
    free(out);
    path = PROC_DEFAULT_PATH;
  }
  return xstrdup(PROC_DEFAULT_PATH); /* not reached: the default is absolute */
}

/* dir + "/" + name, in a new string. */
static char *
proc_join(const char *dir, size_t dir_len, const char *name)
{
  size_t name_len = strlen(name);
  char *s = xmalloc(dir_len + 1 + name_len + 1);
  memcpy(s, dir, dir_len);
  s[dir_len] = '/';
  memcpy(s + dir_len + 1, name, name_len + 1);
  return s;
}

/* Checks that path is an executable regular file. Returns 0, or -1 with why
 * describing the problem ("is not executable"). */
static int
proc_check_exec(const char *path, char *why, size_t why_len)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      snprintf(why, why_len, "does not exist (no such file)");
    else
      snprintf(why, why_len, "cannot be accessed: %s", strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(why, why_len, "is a directory, not a regular file");
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_len, "is not a regular file");
    return -1;
  }
  if (access(path, X_OK) != 0) {
    snprintf(why, why_len, "is not executable");
    return -1;
  }
  return 0;
}

/* Resolves argv0 to the absolute path the child will exec: with a '/',
 * relative to dir (the real path of the directory it runs in); else looked
 * up in search (absolute directories separated by ':', see
 * proc_search_path). Returns a new string, or NULL with err set to
 * command_not_found naming the program and why. */
static char *
proc_resolve(const char *argv0, const char *dir, const char *search, VigilError *err)
{
  char why[256];
  if (strchr(argv0, '/') != NULL) {
    char *path = argv0[0] == '/' ? xstrdup(argv0) : proc_join(dir, strlen(dir), argv0);
    if (proc_check_exec(path, why, sizeof why) == 0)
      return path;
    free(path);
    error_set(err, kErrCommandNotFound, "command: \"%s\" %s", argv0, why);
    return NULL;
  }
  char *found_unusable = NULL; /* the first candidate that exists but cannot run */
  char found_why[256] = "";
  for (const char *s = search; s[0] != '\0';) {
    const char *colon = strchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    char *cand = proc_join(s, len, argv0);
    if (proc_check_exec(cand, why, sizeof why) == 0) {
      free(found_unusable);
      return cand;
    }
    if (found_unusable == NULL && strncmp(why, "does not exist", 14) != 0) {
      found_unusable = cand;
      snprintf(found_why, sizeof found_why, "%s", why);
    } else {
      free(cand);
    }
    if (colon == NULL)
      break;
    s = colon + 1;
  }
  if (found_unusable != NULL) {
    error_set(err, kErrCommandNotFound, "command: \"%s\" was found in PATH at \"%s\", which %s",
              argv0, found_unusable, found_why);
    free(found_unusable);
  } else {
    error_set(err, kErrCommandNotFound,
              "command: \"%s\" was not found in PATH (searched \"%s\"; a PATH in env does "
              "not choose the program)",
              argv0, search);
  }
  return NULL;
}

/* The child-side steps that can fail, for the spawn_failed message; a
 * failed step of contain_child_enter is reported as kChildContain plus its
 * ContainStep. */
typedef enum {
  kChildSetsid = 1,
  kChildChdir,
  kChildDup,
  kChildExec,
  kChildContain = 100,
} ProcChildStep;

/* What the child needs, all prepared before fork. */
typedef struct {
  const char *path;
  char *const *argv;
  char **envp;
  int dir_fd;     /* the directory to enter (fchdir) */
  int fds[3];     /* become 0, 1, 2 */
  int report_fd;  /* exec-error pipe's write end (close-on-exec) */
  const ContainChild *contain; /* cgroups to join, rlimits */
  long open_max;  /* for the close loop when close_range is missing */
} ProcChild;

/* In the child: reports the failed step and errno to the parent and exits. */
static void
proc_child_fail(const ProcChild *c, int step)
{
  int report[2] = {(int)step, errno};
  ssize_t n;
  do
    n = write(c->report_fd, report, sizeof report);
  while (n < 0 && errno == EINTR);
  _exit(127);
}

/* Closes every descriptor from 3 up except keep. */
static void
proc_child_close_fds(int keep, long open_max)
{
#ifdef __linux__
  bool ok = true;
  if (keep > 3)
    ok = close_range(3, (unsigned)keep - 1, 0) == 0;
  if (ok && close_range((unsigned)keep + 1, ~0U, 0) == 0)
    return;
#endif
  for (long fd = 3; fd < open_max; fd++) {
    if (fd != keep)
      close((int)fd);
  }
}

/* The child between fork and exec: only async-signal-safe calls (the engine
 * may have threads, so no malloc and no locks). Never returns. */
static void
proc_child(ProcChild *c)
{
  /* Default dispositions (an ignored SIGPIPE would survive exec) before
   * unblocking, so nothing reaches the engine's handlers here. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &sa, NULL); /* EINVAL for KILL, STOP and libc's own: fine */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  if (setsid() < 0)
    proc_child_fail(c, kChildSetsid);
  /* Into the monitor's cgroups first, while their descriptors are intact
   * (the dup2s below may land on them), and with the limits set before
   * anything of the program runs. */
  int step = contain_child_enter(c->contain);
  if (step != 0)
    proc_child_fail(c, kChildContain + step);
  /* The opened directory, not its path: the path may lead elsewhere now. */
  if (fchdir(c->dir_fd) != 0)
    proc_child_fail(c, kChildChdir);

  /* If the engine runs with 0, 1 or 2 closed, a pipe end may sit on one of
   * them: lift every descriptor we still need above 2 before the dup2s. */
  if (c->report_fd < 3) {
    int fd = fcntl(c->report_fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
      _exit(127); /* cannot even report */
    c->report_fd = fd;
  }
  for (int i = 0; i < 3; i++) {
    if (c->fds[i] < 3 && (c->fds[i] = fcntl(c->fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
      proc_child_fail(c, kChildDup);
  }
  for (int i = 0; i < 3; i++) {
    if (dup2(c->fds[i], i) < 0)
      proc_child_fail(c, kChildDup);
  }
  /* The report pipe stays until exec closes it (close-on-exec). */
  proc_child_close_fds(c->report_fd, c->open_max);

  execve(c->path, c->argv, c->envp);
  proc_child_fail(c, kChildExec);
}

/* Closes fd if it is open (>= 0) and marks it closed. */
static void
proc_close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* Checks argv and the limits (the directory is proc_dir_open's). Returns 0,
 * or -1 with err set. */
static int
proc_check_options(const ProcSpawnOptions *opts, VigilError *err)
{
  if (opts->argv == NULL || opts->argv[0] == NULL || opts->argv[0][0] == '\0')
    return error_set(err, kErrInvalidParams,
                     "argv: must name a program (argv[0] is missing or empty)");
  if (opts->stdin_data != NULL && opts->stdin_len > UINT_MAX) /* one libuv write */
    return error_set(err, kErrInvalidParams, "stdin: must be at most %u bytes, got %zu",
                     UINT_MAX, opts->stdin_len);
  if (opts->memory_limit < 0 ||
      (opts->memory_limit > 0 && opts->memory_limit < PROC_MIN_MEMORY_LIMIT))
    return error_set(err, kErrInvalidParams,
                     "memory_limit: must be 0 (none) or at least %d bytes (1 MiB), got %lld",
                     PROC_MIN_MEMORY_LIMIT, (long long)opts->memory_limit);
  if (!(opts->cpu_limit >= 0)) /* also NaN */
    return error_set(err, kErrInvalidParams,
                     "cpu_limit: must be 0 (none) or a positive number of cores, got %g",
                     opts->cpu_limit);
  /* A share above what the machine has cannot be enforced (nor exceeded). */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && opts->cpu_limit > (double)cores)
    return error_set(err, kErrInvalidParams,
                     "cpu_limit: must be at most this machine's %ld cores, got %g", cores,
                     opts->cpu_limit);
  if (opts->max_processes < 0)
    return error_set(err, kErrInvalidParams,
                     "max_processes: must be 0 (none) or a positive count, got %lld",
                     (long long)opts->max_processes);
  return 0;
}

/* The real path of the open directory fd into a new string, or NULL with
 * errno set. Read from the descriptor, never from the path it was opened
 * by. */
static char *
proc_dir_path(int fd)
{
#if defined(__APPLE__)
  char buf[PATH_MAX];
  if (fcntl(fd, F_GETPATH, buf) != 0)
    return NULL;
  return xstrdup(buf);
#else
  char link[64], buf[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, sizeof buf);
  if (n < 0)
    return NULL;
  if ((size_t)n >= sizeof buf || buf[0] != '/') {
    errno = ENAMETOOLONG; /* or no path at all: nothing that could be checked */
    return NULL;
  }
  return xmemdupz(buf, (size_t)n);
#endif
}

/* See proc.h. */
int
proc_dir_open(const char *cwd, ProcDir *out, VigilError *err)
{
  *out = (ProcDir)PROC_DIR_INIT;
  if (cwd != NULL && cwd[0] == '\0')
    return error_set(err, kErrInvalidParams, "cwd: must not be empty");
#ifdef O_PATH
  /* A directory the engine may enter (x) but not list (r) works as it does
   * with chdir: fchdir takes an O_PATH descriptor. */
  int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
#else
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
#endif
  int fd = proc_fd_lift(open(cwd != NULL ? cwd : ".", flags));
  char *path = NULL;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    if (st.st_nlink == 0)
      errno = ENOENT; /* removed: its path would end in " (deleted)" */
    else
      path = proc_dir_path(fd);
  }
  if (path == NULL) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    if (cwd == NULL)
      return error_set(err, kErrInternal, "cannot read the engine's cwd: %s", strerror(e));
    if (e == ENOENT)
      return error_set(err, kErrInvalidParams, "cwd: \"%s\" does not exist", cwd);
    if (e == ENOTDIR)
      return error_set(err, kErrInvalidParams, "cwd: \"%s\" is not a directory", cwd);
    return error_set(err, kErrInvalidParams, "cwd: \"%s\" cannot be used: %s", cwd,
                     strerror(e));
  }
  out->fd = fd;
  out->path = path;
  return 0;
}

/* See proc.h. */
void
proc_dir_close(ProcDir *d)
{
  if (d->fd >= 0)
    close(d->fd);
  free(d->path);
  *d = (ProcDir)PROC_DIR_INIT;
}

/* What proc_spawn checks before it forks. *dir is opts->dir or, when that
 * is NULL, the directory opened into *own (the caller closes it, also on
 * error); *program is the path to execute (the caller frees it). */
static int
proc_prepare(const ProcSpawnOptions *opts, ProcDir *own, const ProcDir **dir, char **program,
             VigilError *err)
{
  *own = (ProcDir)PROC_DIR_INIT;
  *dir = NULL;
  *program = NULL;
  if (proc_check_options(opts, err) != 0)
    return -1;
  if (opts->dir == NULL && proc_dir_open(opts->cwd, own, err) != 0)
    return -1;
  *dir = opts->dir != NULL ? opts->dir : own;
  char *search = proc_search_path(opts->search_path);
  *program = proc_resolve(opts->argv[0], (*dir)->path, search, err);
  free(search);
  return *program != NULL ? 0 : -1;
}

/* See proc.h. */
int
proc_spawn_check(const ProcSpawnOptions *opts, char **program, VigilError *err)
{
  ProcDir own;
  const ProcDir *dir;
  int rc = proc_prepare(opts, &own, &dir, program, err);
  proc_dir_close(&own);
  return rc;
}

/* The name of a child-side step for the spawn_failed message. */
static const char *
proc_step_name(int step)
{
  switch (step) {
  case kChildSetsid: return "setsid";
  case kChildChdir: return "chdir";
  case kChildDup: return "dup2";
  case kChildExec: return "exec";
  default: return step > kChildContain ? contain_step_name(step - kChildContain) : "exec";
  }
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

/* See proc.h. Everything that can be refused is checked before the fork;
 * after it, a failure reaps the child before returning. */
int
proc_spawn(uv_loop_t *loop, const ProcSpawnOptions *opts, const ProcCallbacks *cb,
           void *data, Proc **out, VigilError *err)
{
  *out = NULL;
  ProcDir own_dir;
  const ProcDir *dir;
  char *path;
  if (proc_prepare(opts, &own_dir, &dir, &path, err) != 0) {
    proc_dir_close(&own_dir);
    return -1;
  }
  ProcLoop *pl = proc_loop_get(loop, err);
  if (pl == NULL) {
    proc_dir_close(&own_dir);
    free(path);
    return -1;
  }
  ContainOptions copts = {opts->tag, opts->env_extra, opts->memory_limit, opts->cpu_limit,
                          opts->max_processes};
  Contain *contain = contain_new(loop, &copts, err);
  if (contain == NULL) {
    proc_dir_close(&own_dir);
    free(path);
    proc_loop_release_if_empty(pl);
    return -1;
  }

  /* Parent ends: 0 of out/err pipes, 1 of the stdin pipe, 0 of report. */
  int outp[2][2] = {{-1, -1}, {-1, -1}}, inp[2] = {-1, -1}, rep[2] = {-1, -1};
  const char *what = "pipe";
  bool ok = proc_pipe(outp[0]) == 0 && proc_pipe(outp[1]) == 0 && proc_pipe(rep) == 0;
  if (ok && opts->stdin_data != NULL) {
    ok = proc_pipe(inp) == 0;
  } else if (ok) {
    what = "open /dev/null";
    ok = (inp[0] = proc_fd_lift(open("/dev/null", O_RDONLY | O_CLOEXEC))) >= 0;
  }
  int saved_errno = errno;
  bool grown[2] = {false, false};
  if (ok) {
    grown[0] = proc_pipe_grow(outp[0][0]);
    grown[1] = proc_pipe_grow(outp[1][0]);
  }
  /* What the engine passes on (env_inherit), then the caller's variables
   * and the monitor's id (contain_env), which replace inherited ones. */
  char **envp = ok ? childenv_build(opts->env_inherit, contain_env(contain)) : NULL;
  long open_max = sysconf(_SC_OPEN_MAX);
  if (open_max < 0 || open_max > (1L << 20))
    open_max = 1L << 20;

  pid_t pid = -1;
  uint64_t start_ns = uv_hrtime();
  if (ok) {
    ProcChild child = {path,   opts->argv, envp, dir->fd, {inp[0], outp[0][1], outp[1][1]},
                       rep[1], contain_child(contain), open_max};
    /* Every signal blocked across fork: the child must not run the engine's
     * handlers (libuv's would write into the loop's signal pipe) before it
     * has reset them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0)
      proc_child(&child);
    saved_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    what = "fork";
    ok = pid > 0;
  }
  free(envp);
  proc_close_fd(&inp[0]);
  proc_close_fd(&outp[0][1]);
  proc_close_fd(&outp[1][1]);
  proc_close_fd(&rep[1]);

  int report[2] = {0, 0};
  if (ok) {
    /* Returns at exec, which closes the report pipe (close-on-exec), or with
     * the child's errno: the same short wait posix_spawn does to report an
     * exec failure. It is the one place the loop waits on the child. */
    size_t got = 0;
    while (got < sizeof report) {
      ssize_t n = read(rep[0], (char *)report + got, sizeof report - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    if (got > 0) {
      /* The child has written its report and is in _exit: reaping it
       * returns at once and leaves nothing behind. */
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
      }
      ok = false;
      what = proc_step_name(report[0]);
      saved_errno = got == sizeof report ? report[1] : EIO;
    }
  }
  proc_close_fd(&rep[0]);
  if (!ok) {
    if (report[0] == kChildExec)
      error_set(err, kErrSpawnFailed, "exec \"%s\": %s", path, strerror(saved_errno));
    else if (report[0] == kChildChdir)
      error_set(err, kErrSpawnFailed, "chdir \"%s\": %s", dir->path, strerror(saved_errno));
    else
      error_set(err, kErrSpawnFailed, "%s: %s", what, strerror(saved_errno));
    for (int i = 0; i < 2; i++) {
      if (grown[i])
        proc_pipe_grown--;
      proc_close_fd(&outp[i][0]);
    }
    proc_close_fd(&inp[1]);
    free(path);
    proc_dir_close(&own_dir);
    contain_free(contain);
    proc_loop_release_if_empty(pl);
    return -1;
  }
  proc_dir_close(&own_dir); /* the child is in it now */
  contain_started(contain, pid);

  Proc *p = xcalloc(1, sizeof *p);
  p->pl = pl;
  p->pid = pid;
  p->program = path;
  p->contain = contain;
  p->cb = *cb;
  p->data = data;
  p->start_ns = start_ns;
  p->drain_ms = opts->exit_drain_ms > 0 ? (uint64_t)opts->exit_drain_ms : 0;
  p->exit.exit_code = -1;
  p->next = pl->procs;
  if (pl->procs != NULL)
    pl->procs->prev = p;
  pl->procs = p;
  /* SIGCHLD is watched since before the fork: an early exit is already
   * queued for proc_on_sigchld, which now finds p on the list. */

  uv_timer_init(loop, &p->drain_timer);
  uv_timer_init(loop, &p->grace_timer);
  p->drain_timer.data = p->grace_timer.data = p;
  p->handles += 2;
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    int r = proc_pipe_handle(p, &p->out[i], outp[i][0]);
    if (r == 0) {
      outp[i][0] = -1; /* owned by the handle now */
      p->reading[i] = true;
      p->grown[i] = grown[i];
      grown[i] = false;
      r = uv_read_start((uv_stream_t *)&p->out[i], proc_alloc_cb, proc_read_cb);
    }
    if (rc == 0)
      rc = r;
  }
  if (rc == 0 && inp[1] >= 0) {
    if (opts->stdin_len == 0) {
      proc_close_fd(&inp[1]); /* nothing to write: the child reads EOF */
    } else {
      rc = proc_pipe_handle(p, &p->in, inp[1]);
      p->in_open = true; /* initialized: proc_close must close it */
      if (rc == 0) {
        inp[1] = -1;
        p->in_data = xmemdupz(opts->stdin_data, opts->stdin_len);
        p->in_req.data = p;
        uv_buf_t b = uv_buf_init(p->in_data, (unsigned)opts->stdin_len);
        rc = uv_write(&p->in_req, (uv_stream_t *)&p->in, &b, 1, proc_stdin_written);
        if (rc != 0) {
          free(p->in_data);
          p->in_data = NULL;
        }
      }
    }
  }
  if (rc != 0) {
    /* The child runs but cannot be watched: kill it and let the SIGCHLD
     * handler reap it, with no callback. */
    for (int i = 0; i < 2; i++) {
      if (grown[i])
        proc_pipe_grown--;
      proc_close_fd(&outp[i][0]);
    }
    proc_close_fd(&inp[1]);
    proc_close(p);
    return error_set(err, kErrSpawnFailed, "watching the child's pipes: %s", uv_strerror(rc));
  }
  proc_loop_update_ref(pl);
  *out = p;
  return 0;
}

/* See proc.h. */
int
proc_stop(Proc *p, int sig, uint64_t grace_ms)
{
  if (p->exit_seen || p->reaped)
    return 1;
  /* An exit the SIGCHLD handler has not seen yet still counts; the handler
   * acts on it later (peeking here changes nothing). */
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0)
    return 1;
  if (p->stop_requested)
    return 0;
  p->stop_requested = true;
  contain_signal(p->contain, sig);
  if (sig == SIGKILL)
    return 0;
  /* A stopped process acts on nothing but SIGKILL until continued, so the
   * group is woken to act on sig now, not at the grace deadline. */
  if (sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU && sig != SIGCONT)
    contain_signal(p->contain, SIGCONT);
  if (grace_ms == 0)
    contain_signal(p->contain, SIGKILL);
  else
    uv_timer_start(&p->grace_timer, proc_grace_cb, grace_ms, 0);
  return 0;
}

/* See proc.h. Never frees synchronously (handles close first), which is
 * what makes it safe inside any callback. */
void
proc_close(Proc *p)
{
  if (p == NULL || p->closed)
    return;
  p->closed = true;
  proc_loop_purge();
  if (proc_loop_gone(p)) {
    /* Its loop was torn down (its handles closed by someone else): kill and
     * leave the pid to be reaped; the memory stays with the dead state. */
    proc_abandon(p);
    return;
  }
  if (!p->reaped) {
    if (p->exit_seen) {
      proc_reap(p); /* a zombie: kill survivors and reap now */
    } else {
      contain_end(p->contain); /* reaped by a later SIGCHLD */
      contain_sweep();
    }
  }
  for (int i = 0; i < 2; i++) {
    p->reading[i] = false;
    if (p->grown[i]) {
      p->grown[i] = false;
      proc_pipe_grown--;
    }
    proc_close_handle(p, (uv_handle_t *)&p->out[i]);
  }
  if (p->in_open) {
    p->in_open = false;
    proc_close_handle(p, (uv_handle_t *)&p->in); /* cancels a pending write */
  }
  proc_close_handle(p, (uv_handle_t *)&p->drain_timer);
  proc_close_handle(p, (uv_handle_t *)&p->grace_timer);
  /* Freed by the last close callback (or the SIGCHLD that reaps it). */
}

/* See proc.h. */
const char *
proc_program(const Proc *p)
{
  return p->program;
}

/* The child's pid, which is also its process group and session id. */
pid_t
proc_pid(const Proc *p)
{
  return p->pid;
}

/* Whether on_exit has been called. */
bool
proc_exited(const Proc *p)
{
  return p->finished;
}

/* Whether proc_stop was called (and sent something) before the exit. */
bool
proc_stop_requested(const Proc *p)
{
  return p->stop_requested;
}

/* See proc.h. The live sample reads /proc (Linux); zeros elsewhere. */
void
proc_usage(const Proc *p, ProcExit *out)
{
  if (p->finished || p->reaped) {
    *out = p->exit;
    return;
  }
  if (p->exit_seen) {
    /* Exited, streams still draining: status and io are known; cpu comes
     * from the zombie; its memory is gone until wait4 reports the peak. */
    *out = p->exit;
    out->cpu_ms = proc_sample_cpu(p->pid);
    return;
  }
  memset(out, 0, sizeof *out);
  out->exit_code = -1; /* none yet */
  out->duration_ms = (uv_hrtime() - p->start_ns) / 1000000;
  out->cpu_ms = proc_sample_cpu(p->pid);
  char buf[2048];
  if (proc_read_procfile(p->pid, "status", buf, sizeof buf) > 0)
    out->memory_peak_bytes = proc_field(buf, "VmHWM:") * 1024; /* kB */
  proc_sample_io(p->pid, out);
}
