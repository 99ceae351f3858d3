/*
 * A running child (see proc.h for the lifecycle, proc_internal.h for the
 * module's other files): its output read in the loop, its exit, the drain
 * bound, stop with a grace period, reaping, close, and resource usage.
 *
 * An exited child is left a zombie (waitid with WNOWAIT) until its streams
 * are done, so its pid and its process group id cannot be reused while the
 * group may still be signalled; then everything the child started is sent
 * SIGKILL (nothing is left behind), the child is reaped with wait4 for its
 * resource usage, and on_exit is called once.
 *
 * "Everything the child started" is contain.c's business: each Proc has a
 * Contain that joined the child to its cgroups between fork and exec,
 * signals the group and every descendant that left it, and at each SIGCHLD
 * reaps the orphans the engine adopted as a subreaper (those are not Procs).
 */
#include "proc/proc_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "proc/reaper.h"

/* --- freeing ------------------------------------------------------------- */

/* See proc_internal.h. */
void
proc__free_if_done(Proc *p)
{
  if (!p->closed || !p->reaped || p->handles > 0 || (p->keeper > 0 && !p->keeper_reaped) ||
      p->launching || p->finish_queued)
    return;
  proc_loop__unpause(p);
  proc_loop__remove(p);
  contain_free(p->contain);
  free(p->keeper_program);
  free(p->start_dir);
  free(p->in_data);
  free(p->program);
  free(p);
}

/* Close callback of every handle of a Proc: frees it after the last one. */
static void
proc_handle_closed(uv_handle_t *h)
{
  Proc *p = h->data;
  p->handles--;
  proc__free_if_done(p);
}

/* See proc_internal.h. A handle never initialised (the Proc is zeroed, so
 * its loop is NULL: a pipe an adopted child had already closed, or a
 * keeper gone before the take-over) has nothing to close. */
void
proc__close_handle(Proc *p, uv_handle_t *h)
{
  if (h->loop != NULL && !uv_is_closing(h))
    uv_close(h, proc_handle_closed);
}

/* --- figures from /proc ------------------------------------------------- */

/* Fills io_read_bytes and io_write_bytes from /proc/PID/io (0 if unreadable;
 * it is readable for a zombie, which is when the final figures are taken). */
static void
proc_sample_io(pid_t pid, ProcExit *x)
{
  char buf[1024];
  if (procfs_read_pid(pid, "io", buf, sizeof buf) <= 0)
    return;
  x->io_read_bytes = procfs_value(buf, "rchar:");
  x->io_write_bytes = procfs_value(buf, "wchar:");
}

/* CPU time so far of pid and its reaped children (utime stime cutime
 * cstime of /proc/PID/stat), in ms; 0 if unreadable. */
static uint64_t
proc_sample_cpu(pid_t pid)
{
  ReaperProc rp;
  long hz = sysconf(_SC_CLK_TCK);
  if (!reaper_read(pid, &rp) || hz <= 0)
    return 0;
  return rp.cpu_ticks * 1000 / (uint64_t)hz;
}

/* --- output, exit, drain ------------------------------------------------- */

/* Stops reading stream id and closes its pipe; calls on_eof. */
static void
proc_stream_end(Proc *p, StreamId id)
{
  if (!p->reading[id])
    return;
  p->reading[id] = false;
  if (p->grown[id]) {
    p->grown[id] = false;
    proc__pipe_release();
  }
  proc__close_handle(p, (uv_handle_t *)&p->out[id]);
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
  if (!p->contain_finished) {
    ContainReport report;
    contain_finish(p->contain, p->exit.exited, p->exit.exit_code, p->exit.term_signal, &report);
    p->exit.exceeded = report.exceeded;
    p->exit.oom_kills = report.oom_kills;
    p->exit.forks_refused = report.forks_refused;
    p->contain_finished = true;
  }
  /* With a keeper, the child is the keeper's to reap: it is told the
   * survivors are dead, and answers with the usage (proc_keeper.c). */
  if (p->keeper > 0 && !p->keeper_reaped) {
    if (!p->reap_asked)
      p->reap_asked = proc_keeper__ack_exit(p);
    if (p->reap_asked)
      return;
  }
  struct rusage ru;
  int status;
  pid_t r;
  do
    r = wait4(p->pid, &status, WNOHANG, &ru);
  while (r < 0 && errno == EINTR);
  if (r == 0)
    return; /* cannot happen after waitid saw the exit; retried at SIGCHLD */
  p->reaped = true;
  proc_loop__sweep_soon(p->pl); /* this monitor's orphans are now killed on sight */
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

/* Ends p, in its turn (proc_loop__finish_soon): kills the group, reaps,
 * and calls on_exit once (when a keeper reaps, once it has:
 * proc__on_reaped). */
static void
proc_finish(Proc *p)
{
  if (p->finished || p->finish_pending || p->finish_queued)
    return;
  uv_timer_stop(&p->drain_timer);
  uv_timer_stop(&p->grace_timer);
  proc_loop__finish_soon(p);
}

/* See proc_internal.h. */
void
proc__finish_now(Proc *p)
{
  if (p->finished || p->finish_pending)
    return;
  proc_reap(p);
  if (p->reap_asked && !p->reaped) {
    p->finish_pending = true;
    return;
  }
  p->finished = true;
  if (!p->closed && p->cb.on_exit != NULL)
    p->cb.on_exit(p->data, &p->exit);
}

/* See proc_internal.h. */
void
proc__on_reaped(Proc *p)
{
  if (!p->reaped || !p->finish_pending)
    return;
  p->finish_pending = false;
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
void
proc__check(Proc *p)
{
  /* Before its hello, a keeper's end is read as its socket's EOF (which
   * comes after whatever it said): reaping it here would close the socket
   * unread. */
  if (p->starting)
    return;
  /* While the keeper lives, the child is its child: its messages tell. */
  if (p->keeper > 0 && !proc_keeper__check(p))
    return;
  if (p->reaped) {
    proc__on_reaped(p);
    proc__free_if_done(p);
    return;
  }
  bool seen_before = p->exit_seen;
  if (!proc_poll_exit(p))
    return;
  if (p->closed) {
    proc_reap(p);
    proc__free_if_done(p);
    return;
  }
  if (seen_before) {
    if (p->finished || p->finish_pending) {
      proc_reap(p); /* an earlier wait4 said "not yet", or the keeper is gone */
      proc__on_reaped(p);
    }
    return;
  }
  proc__on_exit_seen(p);
}

/* See proc_internal.h. */
void
proc__on_exit_seen(Proc *p)
{
  uv_timer_stop(&p->grace_timer);
  if (!p->reading[0] && !p->reading[1]) {
    proc_finish(p);
    return;
  }
  uv_timer_start(&p->drain_timer, proc_drain_cb, p->drain_ms, 0);
}

/* See proc_internal.h. The zombie is still there (the keeper keeps it until
 * told), so its io counters can be read. */
void
proc__note_exit(Proc *p, bool exited, int code, int sig)
{
  if (p->exit_seen)
    return;
  p->exit_seen = true;
  p->exit.duration_ms = (uv_hrtime() - p->start_ns) / 1000000;
  p->exit.exited = true;
  p->exit.exit_code = exited ? code : -1;
  p->exit.term_signal = exited ? 0 : sig;
  proc_sample_io(p->pid, &p->exit);
}

/* Hands out the loop's shared buffer. read_cb consumes every chunk
 * synchronously (on_output copies what it keeps) before libuv asks for the
 * next buffer, so one buffer serves every pipe of the loop. */
void
proc__alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  Proc *p = h->data;
  *buf = uv_buf_init(p->pl->buf, PROC_READ_BUF_SIZE);
}

/* A chunk, EOF or a read error on stdout or stderr.
 *
 * libuv reads a stream again at once while its reads fill the buffer; a
 * short read ends its run for this turn. So the bytes of one run of full
 * reads are what this stream takes of one turn, and past
 * PROC_READ_TURN_BYTES the stream waits for the next turn (proc_loop__pause):
 * the chunks still come in order, and EOF after them. */
void
proc__read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  Proc *p = s->data;
  StreamId id = s == (uv_stream_t *)&p->out[kStreamStdout] ? kStreamStdout : kStreamStderr;
  if (nread > 0) {
    if (!p->closed && p->cb.on_output != NULL)
      p->cb.on_output(p->data, id, buf->base, (size_t)nread);
    /* on_output may have closed p or ended the stream. */
    if (p->closed || !p->reading[id])
      return;
    if ((size_t)nread < buf->len) {
      p->turn_bytes[id] = 0; /* the pipe is empty: libuv stops here */
    } else if ((p->turn_bytes[id] += (size_t)nread) >= PROC_READ_TURN_BYTES) {
      proc_loop__pause(p, id);
    }
    return;
  }
  if (nread == 0) {
    p->turn_bytes[id] = 0; /* EAGAIN: the run of reads is over */
    return;
  }
  /* UV_EOF, or a read error, which ends the stream the same way. */
  proc_stream_end(p, id);
  proc_finish_if_done(p);
}

/* The stdin_data write is done: closes the pipe so the child reads EOF. */
void
proc__stdin_written(uv_write_t *req, int status)
{
  /* EPIPE (the child exited without reading) and ECANCELED (proc_close) are
   * both fine: there is nothing more to deliver. */
  Proc *p = req->data;
  free(p->in_data);
  p->in_data = NULL;
  if (p->in_open) {
    p->in_open = false;
    proc__close_handle(p, (uv_handle_t *)&p->in);
  }
}

/* --- stop and close ------------------------------------------------------ */

/* The stop grace period is over: SIGKILL to the group and its descendants. */
static void
proc_grace_cb(uv_timer_t *t)
{
  Proc *p = t->data;
  p->kill_at = 0;
  /* Even after the exit (a grandchild holding the pipe), the unreaped zombie
   * keeps the group id ours, and survivors are sent SIGKILL at finish anyway. */
  if (!p->reaped)
    contain_signal(p->contain, SIGKILL);
}

/* See proc.h. */
ProcStopResult
proc_stop(Proc *p, int sig, uint64_t grace_ms)
{
  if (p->exit_seen || p->reaped)
    return kProcStopExited;
  if (p->starting) {
    /* No pid to signal yet: the stop is applied at the hello, the strongest
     * one asked for. */
    bool stronger = !p->stop_pending || sig == SIGKILL || grace_ms < p->stop_grace_ms;
    ProcStopResult r = !p->stop_pending ? kProcStopping
                       : stronger       ? kProcStopHastened
                                        : kProcStopPending;
    if (stronger) {
      /* Not stop_requested yet: proc_stop at the hello sets it, and would
       * otherwise take this stop for one already under way. */
      p->stop_pending = true;
      p->stop_sig = sig;
      p->stop_grace_ms = sig == SIGKILL ? 0 : grace_ms;
    }
    return r;
  }
  /* An exit the SIGCHLD handler has not seen yet still counts; the handler
   * acts on it later (peeking here changes nothing). A keeper's child is
   * not ours to peek at: its exit comes as a message. */
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if ((p->keeper == 0 || p->keeper_reaped) &&
      waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0)
    return kProcStopExited;
  /* When this stop's SIGKILL would come: the strength of a stop. */
  uint64_t now = uv_now(p->pl->loop);
  uint64_t kill_at = sig == SIGKILL || grace_ms == 0   ? now
                     : grace_ms >= UINT64_MAX - now ? UINT64_MAX
                                                    : now + grace_ms;
  ProcStopResult result = kProcStopping;
  if (p->stop_requested) {
    if (kill_at >= p->kill_at)
      return kProcStopPending;
    result = kProcStopHastened;
  }
  p->stop_requested = true;
  contain_signal(p->contain, sig);
  /* A stopped process acts on nothing but SIGKILL until continued, so the
   * group is woken to act on sig now, not at the grace deadline. */
  if (sig != SIGKILL && sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU &&
      sig != SIGCONT)
    contain_signal(p->contain, SIGCONT);
  if (kill_at == now) {
    uv_timer_stop(&p->grace_timer);
    if (sig != SIGKILL)
      contain_signal(p->contain, SIGKILL);
    p->kill_at = 0;
  } else {
    p->kill_at = kill_at;
    if (kill_at != UINT64_MAX)
      uv_timer_start(&p->grace_timer, proc_grace_cb, kill_at - now, 0); /* re-arms */
  }
  return result;
}

/* See proc.h. Never frees synchronously (handles close first), which is
 * what makes it safe inside any callback. */
void
proc_close(Proc *p)
{
  if (p == NULL || p->closed)
    return;
  p->closed = true;
  /* A loop torn down under it (its handles closed by someone else): its
   * children are killed and left to be reaped; nothing more to close. */
  if (proc_loop__abandon_if_gone(p))
    return;
  if (p->starting) {
    /* No hello yet, so no pid of the child: its keeper is told to stop
     * everything (it reads that once it has started the child) or killed,
     * and is reaped at its SIGCHLD. */
    p->starting = false;
    p->reaped = true;
    proc_keeper__stop(p);
  } else if (!p->reaped) {
    if (p->keeper > 0 && !p->keeper_reaped) {
      /* Everything killed, then the keeper told to reap and go; the Proc
       * is freed when the keeper is reaped. */
      contain_end(p->contain);
      proc_loop__sweep_soon(p->pl);
      proc_keeper__stop(p);
    } else if (p->exit_seen) {
      proc_reap(p); /* a zombie: kill survivors and reap now */
    } else {
      contain_end(p->contain); /* reaped by a later SIGCHLD */
      proc_loop__sweep_soon(p->pl);
    }
  }
  for (int i = 0; i < 2; i++) {
    p->reading[i] = false;
    if (p->grown[i]) {
      p->grown[i] = false;
      proc__pipe_release();
    }
    proc__close_handle(p, (uv_handle_t *)&p->out[i]);
  }
  if (p->in_open) {
    p->in_open = false;
    proc__close_handle(p, (uv_handle_t *)&p->in); /* cancels a pending write */
  }
  if (p->ctl_open) {
    p->ctl_open = false;
    proc__close_handle(p, (uv_handle_t *)&p->ctl);
  }
  proc__close_handle(p, (uv_handle_t *)&p->drain_timer);
  proc__close_handle(p, (uv_handle_t *)&p->grace_timer);
  proc__close_handle(p, (uv_handle_t *)&p->hello_timer);
  /* Freed by the last close callback (or the SIGCHLD that reaps it). */
}

/* --- what it is and what it used ----------------------------------------- */

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

/* See proc.h. */
bool
proc_starting(const Proc *p)
{
  return p->starting;
}

/* See proc.h. */
pid_t
proc_keeper_pid(const Proc *p)
{
  return p->keeper_reaped ? 0 : p->keeper;
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

/* See proc.h. */
void
proc_members(const Proc *p, ReaperTable *procs, PidList *out)
{
  if (p->finished || p->reaped || p->exit_seen || p->starting || p->contain == NULL)
    return;
  contain_members_in(p->contain, procs, out);
}

/* See proc.h. The live sample reads /proc (Linux); zeros elsewhere. */
void
proc_usage(const Proc *p, ProcExit *out)
{
  if (p->finished || p->reaped || p->starting) {
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
  if (procfs_read_pid(p->pid, "status", buf, sizeof buf) > 0)
    out->memory_peak_bytes = procfs_value(buf, "VmHWM:") * 1024; /* kB */
  proc_sample_io(p->pid, out);
}
