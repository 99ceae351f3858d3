/*
 * The process module's per-loop bookkeeping (see proc_internal.h): one
 * SIGCHLD handle and one read buffer per libuv loop with the list of its
 * Procs, what is left when a loop is torn down under live children, and the
 * budget of output pipes grown past the default size.
 *
 * A stream whose reads filled PROC_READ_TURN_BYTES in one turn is paused
 * (proc__read_cb) and restarted by the loop's check handle, which runs after
 * the poll phase: the next turn runs the due timers first and then polls
 * the stream again with every other descriptor, so a flooding child gets
 * one buffer per turn and the others their turn in between. The check is
 * active only while something is paused, so an idle loop never runs it, and
 * a paused stream that turns out to be empty costs one blocking poll, not
 * a spin.
 *
 * The parent learns of every exit from one SIGCHLD handle per loop, which
 * checks each Proc of the loop (proc__check) and lets contain.c reap the
 * orphans the engine adopted as a subreaper. The handle is referenced only
 * while some exit is still to be seen, and closed with the loop's last Proc,
 * so an embedder's loop can end.
 *
 * Threads: the loops may differ but every call into this module comes from
 * one thread; the per-loop states are a plain list, and the statics below
 * are the module's only file-level state.
 */
#include "proc/proc_internal.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/memory.h"
#include "proc/procfs.h"

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

/* --- children whose loop is gone ----------------------------------------- */

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

/* See proc_internal.h: pid is reaped at a later SIGCHLD, if it is ours. */
void
proc__leftovers_add(pid_t pid)
{
  if (proc_nleftovers == proc_leftovers_cap) {
    proc_leftovers_cap = proc_leftovers_cap ? proc_leftovers_cap * 2 : 8;
    proc_leftovers = xrealloc(proc_leftovers, proc_leftovers_cap * sizeof *proc_leftovers);
  }
  proc_leftovers[proc_nleftovers++] = pid;
}

/* Kills p's group (if its pid is still ours) and leaves the reaping to
 * proc_leftovers_reap: for a Proc whose loop is gone. */
static void
proc_loop_abandon(Proc *p)
{
  if (p->keeper > 0 && !p->keeper_reaped) {
    kill(p->keeper, SIGKILL); /* a keeper with no loop to answer to */
    p->keeper_reaped = true;
    proc__leftovers_add(p->keeper);
  }
  if (p->reaped)
    return;
  contain_end(p->contain);
  proc__leftovers_add(p->pid);
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
      proc_loop_abandon(p);
    /* No pipe of a closed loop reads again, so the buffer can go. */
    free(pl->buf);
    pl->buf = NULL;
    pl->next = proc_graveyard;
    proc_graveyard = pl;
  }
}

/* See proc_internal.h. The memory of such a Proc stays with the dead state. */
bool
proc_loop__abandon_if_gone(Proc *p)
{
  proc_loop_purge();
  for (const ProcLoop *pl = proc_graveyard; pl != NULL; pl = pl->next) {
    if (pl == p->pl) {
      proc_loop_abandon(p);
      return true;
    }
  }
  return false;
}

/* --- the SIGCHLD handle -------------------------------------------------- */

/* See proc_internal.h. Without the reference, a loop whose pipes have all
 * reached EOF could have nothing active left and return from uv_run before
 * reading the SIGCHLD that reports the exit (an embedder that runs the loop
 * until a monitor ends would spin or stop early); with it, an idle engine
 * still wakes for nothing but that signal. */
void
proc_loop__update_ref(ProcLoop *pl)
{
  /* Adopted orphans (contain.c) are waited for too: each is reaped at the
   * SIGCHLD that reports it. */
  bool waiting = contain_adopted() > 0;
  for (const Proc *p = pl->procs; p != NULL && !waiting; p = p->next)
    waiting = (!p->exit_seen && !p->reaped) || (p->keeper > 0 && !p->keeper_reaped);
  if (waiting)
    uv_ref((uv_handle_t *)&pl->sigchld);
  else
    uv_unref((uv_handle_t *)&pl->sigchld);
}

/* SIGCHLD on this loop (coalesced: one may stand for many exits): checks
 * every Proc of the loop, and the leftovers. */
static void
proc_loop_on_sigchld(uv_signal_t *h, int signum)
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
    proc__check(p);
  }
  contain_sweep();
  proc_loop__update_ref(pl);
  if (pl->procs == NULL)
    proc_loop__release_if_empty(pl);
}

/* Frees a state once its signal and check handles are closed. */
static void
proc_loop_closed(uv_handle_t *h)
{
  ProcLoop *pl = h->data;
  if (--pl->handles > 0)
    return;
  free(pl->buf);
  free(pl);
}

/* --- streams paused for the rest of a turn -------------------------------- */

/* The check after the poll: restarts every stream paused in this turn
 * (unless it ended or its Proc closed meanwhile), then goes inactive. */
static void
proc_loop_on_resume(uv_check_t *h)
{
  ProcLoop *pl = h->data;
  Proc *p = pl->paused;
  pl->paused = NULL;
  uv_check_stop(h);
  while (p != NULL) {
    Proc *next = p->paused_next;
    p->paused_next = NULL;
    p->on_paused = false;
    for (int id = 0; id < 2; id++) {
      if (!p->paused[id])
        continue;
      p->paused[id] = false;
      p->turn_bytes[id] = 0;
      if (!p->closed && p->reading[id])
        uv_read_start((uv_stream_t *)&p->out[id], proc__alloc_cb, proc__read_cb);
    }
    p = next;
  }
}

/* How long the ends waiting for their turn may take of one turn (at least
 * one is done per turn): the rpc channel's budget for calls is the same;
 * and how many, at most, however quick. */
#define PROC_FINISH_TURN_NS 1000000
#define PROC_FINISH_TURN_MAX 16

/* What was left for a later turn: the ends, within their budget, then the
 * sweep they and others asked for. Idle while nothing waits. The handle is
 * referenced only while ends wait: a wanted sweep alone keeps no loop
 * alive. */
static void proc_loop_on_later(uv_idle_t *h);

static void
proc_loop_later_update(ProcLoop *pl)
{
  uv_handle_t *h = (uv_handle_t *)&pl->later;
  if (uv_is_closing(h))
    return;
  if (pl->finishing == NULL && !pl->sweep_wanted) {
    uv_idle_stop(&pl->later);
    return;
  }
  if (!uv_is_active(h))
    uv_idle_start(&pl->later, proc_loop_on_later);
  if (pl->finishing != NULL)
    uv_ref(h);
  else
    uv_unref(h);
}

static void
proc_loop_on_later(uv_idle_t *h)
{
  ProcLoop *pl = h->data;
  uint64_t t0 = uv_hrtime();
  int done = 0;
  while (pl->finishing != NULL && done < PROC_FINISH_TURN_MAX &&
         (done == 0 || uv_hrtime() - t0 < PROC_FINISH_TURN_NS)) {
    Proc *p = pl->finishing;
    pl->finishing = p->finishing_next;
    if (pl->finishing == NULL)
      pl->finishing_tail = NULL;
    p->finishing_next = NULL;
    p->finish_queued = false;
    done++;
    if (p->closed)
      proc__free_if_done(p);
    else
      proc__finish_now(p);
  }
  if (pl->sweep_wanted) {
    pl->sweep_wanted = false;
    contain_sweep();
  }
  proc_loop_later_update(pl);
}

/* See proc_internal.h. An idle handle, so that the poll of a turn that
 * asked for it does not wait: it runs before the next one. */
void
proc_loop__sweep_soon(ProcLoop *pl)
{
  pl->sweep_wanted = true;
  proc_loop_later_update(pl);
}

/* See proc_internal.h. */
void
proc_loop__finish_soon(Proc *p)
{
  ProcLoop *pl = p->pl;
  if (p->finish_queued)
    return;
  p->finish_queued = true;
  p->finishing_next = NULL;
  if (pl->finishing_tail != NULL)
    pl->finishing_tail->finishing_next = p;
  else
    pl->finishing = p;
  pl->finishing_tail = p;
  proc_loop_later_update(pl);
}

/* See proc_internal.h. */
void
proc_loop__pause(Proc *p, StreamId id)
{
  ProcLoop *pl = p->pl;
  uv_read_stop((uv_stream_t *)&p->out[id]);
  p->paused[id] = true;
  if (!p->on_paused) {
    p->on_paused = true;
    p->paused_next = pl->paused;
    pl->paused = p;
  }
  if (!uv_is_active((uv_handle_t *)&pl->resume))
    uv_check_start(&pl->resume, proc_loop_on_resume);
}

/* See proc_internal.h. A Proc is freed only after the close callbacks of
 * its handles, which run after the check of the turn that paused it, so
 * this finds it there only if a loop stopped between the two. */
void
proc_loop__unpause(Proc *p)
{
  if (!p->on_paused)
    return;
  for (Proc **pp = &p->pl->paused; *pp != NULL; pp = &(*pp)->paused_next) {
    if (*pp == p) {
      *pp = p->paused_next;
      break;
    }
  }
  p->on_paused = false;
  p->paused_next = NULL;
}

/* See proc_internal.h. */
ProcLoop *
proc_loop__get(uv_loop_t *loop, VigilError *err)
{
  proc_loop_purge();
  proc_leftovers_reap();
  for (ProcLoop *pl = proc_loops; pl != NULL; pl = pl->next) {
    if (pl->loop == loop)
      return pl;
  }
  ProcLoop *pl = xcalloc(1, sizeof *pl);
  pl->loop = loop;
  /* Neither init can fail on Unix; uv_signal_start can (sigaction). The
   * check never keeps a loop alive by itself: it is active only between a
   * pause and the end of the same turn. */
  uv_signal_init(loop, &pl->sigchld);
  uv_check_init(loop, &pl->resume);
  uv_unref((uv_handle_t *)&pl->resume);
  uv_idle_init(loop, &pl->later);
  uv_unref((uv_handle_t *)&pl->later);
  pl->sigchld.data = pl->resume.data = pl->later.data = pl;
  pl->handles = 3;
  int rc = uv_signal_start(&pl->sigchld, proc_loop_on_sigchld, SIGCHLD);
  if (rc != 0) {
    error_set(err, kErrSpawnFailed, "cannot watch SIGCHLD: %s", uv_strerror(rc));
    uv_close((uv_handle_t *)&pl->sigchld, proc_loop_closed);
    uv_close((uv_handle_t *)&pl->resume, proc_loop_closed);
    uv_close((uv_handle_t *)&pl->later, proc_loop_closed);
    return NULL;
  }
  uv_unref((uv_handle_t *)&pl->sigchld);
  pl->buf = xmalloc(PROC_READ_BUF_SIZE);
  pl->next = proc_loops;
  proc_loops = pl;
  return pl;
}

/* See proc_internal.h. Not while an adopted orphan or the cgroup of an
 * ended monitor is still to be seen gone: their SIGCHLD must still find the
 * handle, or they would stay zombies. */
void
proc_loop__release_if_empty(ProcLoop *pl)
{
  if (pl->procs != NULL || uv_is_closing((uv_handle_t *)&pl->sigchld))
    return;
  if (contain_sweep() > 0 || contain_pending()) {
    proc_loop__update_ref(pl);
    return;
  }
  for (ProcLoop **pp = &proc_loops; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == pl) {
      *pp = pl->next;
      break;
    }
  }
  uv_close((uv_handle_t *)&pl->sigchld, proc_loop_closed);
  uv_close((uv_handle_t *)&pl->resume, proc_loop_closed);
  uv_close((uv_handle_t *)&pl->later, proc_loop_closed);
}

/* See proc_internal.h. At the head: a SIGCHLD walk in progress does not
 * visit it (it cannot have exited before it was on the list). */
void
proc_loop__add(Proc *p)
{
  ProcLoop *pl = p->pl;
  p->prev = NULL;
  p->next = pl->procs;
  if (pl->procs != NULL)
    pl->procs->prev = p;
  pl->procs = p;
}

/* See proc_internal.h. */
void
proc_loop__remove(Proc *p)
{
  ProcLoop *pl = p->pl;
  if (p->prev != NULL)
    p->prev->next = p->next;
  else
    pl->procs = p->next;
  if (p->next != NULL)
    p->next->prev = p->prev;
  proc_loop__release_if_empty(pl);
}

/* --- the descriptor limit ------------------------------------------------- */

/* The limit children start with once proc_raise_nofile raised ours. */
static struct rlimit proc_nofile_child;
static bool proc_nofile_raised;

/* See proc.h. */
bool
proc_raise_nofile(uint64_t *was, uint64_t *now)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return false;
  *was = *now = (uint64_t)rl.rlim_cur;
  if (rl.rlim_cur == rl.rlim_max)
    return true;
  /* An unlimited hard limit (where the OS has one) is not a soft limit the
   * kernel takes: Linux's own ceiling (fs.nr_open) defaults to 2^20. */
  rlim_t want = rl.rlim_max == RLIM_INFINITY ? (rlim_t)1 << 20 : rl.rlim_max;
#if defined(__APPLE__) && defined(OPEN_MAX)
  if (want > OPEN_MAX)
    want = OPEN_MAX; /* macOS refuses more for RLIMIT_NOFILE */
#endif
  struct rlimit raised = {want, rl.rlim_max};
  if (want <= rl.rlim_cur || setrlimit(RLIMIT_NOFILE, &raised) != 0)
    return want <= rl.rlim_cur;
  proc_nofile_child = rl;
  proc_nofile_raised = true;
  *now = (uint64_t)raised.rlim_cur;
  return true;
}

/* See proc.h. F_DUPFD takes the lowest free number at or above its
 * argument, so a duplicate at want - 1 makes the kernel size the table
 * for it; the table never shrinks, so closing it again keeps the room. */
uint64_t
proc_reserve_fds(uint64_t want)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      want > (uint64_t)rl.rlim_cur)
    want = (uint64_t)rl.rlim_cur;
  if (want > PROC_FD_RESERVE_MAX)
    want = PROC_FD_RESERVE_MAX;
  if (want < 2)
    return want;
  int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, (int)(want - 1));
  if (fd < 0)
    return 0;
  close(fd);
  return want;
}

/* See proc_internal.h. */
bool
proc__child_nofile(struct rlimit *rl)
{
  if (proc_nofile_raised)
    *rl = proc_nofile_child;
  return proc_nofile_raised;
}

/* --- the grown-pipe budget ----------------------------------------------- */

/* See proc_internal.h and proc_pipe_grown. */
bool
proc__pipe_grow(int fd)
{
#ifdef F_SETPIPE_SZ
  if (proc_pipe_grow_max < 0) {
    char buf[64];
    long soft_pages = 0;
    if (procfs_read("/proc/sys/fs/pipe-user-pages-soft", buf, sizeof buf) > 0)
      soft_pages = strtol(buf, NULL, 10);
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

/* See proc_internal.h. */
void
proc__pipe_release(void)
{
  proc_pipe_grown--;
}
