/*
 * The engine's side of a keeper (keeper_wire.h, docs/restart.md): the
 * clone that puts a keeper's descriptors in place and execs it, the wait
 * for its first word (the child's pid, or why the child did not start),
 * and the control socket of a running child: its exit, the reap, the stop.
 *
 * With a keeper the engine still reads the child's pipes and signals its
 * group itself (proc.c, contain.c); what changes is who is the parent. The
 * keeper is, so the exit comes as a message (kKeeperExit) instead of from
 * waitid, the keeper keeps the zombie until the engine has killed the
 * survivors (kKeeperExitAck, as the engine's own waitid(WNOWAIT) did), and
 * the usage comes back with kKeeperReaped. If the keeper dies, the child is
 * re-parented to the engine (a subreaper): once the keeper is reaped,
 * proc.c goes on as the child's parent, with nothing lost but the keeper.
 */
#include "proc/proc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/contain.h"
#include "proc/proc_child.h"

/* Where the launch moves every descriptor before putting it in place, so
 * that no source is overwritten by another's dup2. */
#define PROC_KEEPER_LIFT 64
/* How long the engine waits for a keeper's first word: a fork and a
 * report read, on a loaded machine. The wait is the loop's (a timer), never
 * a blocking one: a start used to poll for the hello inside the request,
 * about 35 ms each, and a burst of starts held every other monitor's lines
 * and every other connection's requests behind it (issue 27). */
#define PROC_KEEPER_HELLO_MS 30000

static int64_t proc_keeper_hello_ms = PROC_KEEPER_HELLO_MS;
static uint64_t proc_keeper_hello_timeouts_n;

/* See proc.h. */
void
proc_keeper_set_hello_ms(int64_t ms)
{
  proc_keeper_hello_ms = ms > 0 ? ms : PROC_KEEPER_HELLO_MS;
}

/* See proc.h. */
uint64_t
proc_keeper_hello_timeouts(void)
{
  return proc_keeper_hello_timeouts_n;
}

/* See proc_internal.h. The clone's side: only system calls, nothing
 * written in the engine's memory but errno (CLONE_VM), as proc_child. */
int
proc_keeper__entry(void *arg)
{
  const ProcKeeperExec *x = arg;
  int lifted[KEEPER_FD_JOIN + CGROUP_JOIN_MAX];
  int report[2] = {kChildKeeper, 0};
  proc_child_reset_signals();
  int rep = fcntl(x->report_fd, F_DUPFD_CLOEXEC, PROC_KEEPER_LIFT);
  if (rep < 0)
    _exit(127);
  for (int i = 0; i < x->nsrc; i++) {
    if ((lifted[i] = fcntl(x->src[i], F_DUPFD_CLOEXEC, PROC_KEEPER_LIFT)) < 0)
      goto fail;
  }
  for (int i = 0; i < x->nsrc; i++) {
    if (dup2(lifted[i], i) < 0)
      goto fail;
  }
  /* Everything past the keeper's numbers goes, but the report (which exec
   * closes). */
#ifdef __linux__
  if (close_range((unsigned)x->nsrc, (unsigned)rep - 1, 0) != 0 ||
      close_range((unsigned)rep + 1, ~0U, 0) != 0)
#endif
  {
    for (long fd = x->nsrc; fd < proc_child_open_max(); fd++) {
      if (fd != rep)
        close((int)fd);
    }
  }
  execve(x->path, x->argv, x->envp);
fail:
  report[1] = errno;
  while (write(rep, report, sizeof report) < 0 && errno == EINTR) {
  }
  _exit(127);
}

static void proc_keeper_lost(Proc *p);

/* An adopted keeper is not waited for: once it has said its last word or
 * been told to stop, it is taken as gone (its pid is reaped later only if
 * it is our child after all: a keeper that crossed a SIGUSR2 exec). Its
 * socket is closed with the Proc, so its EOF may never be read. */
static void
proc_keeper_gone(Proc *p)
{
  p->keeper_reaped = true;
  proc__leftovers_add(p->keeper);
}

/* Hands out the rest of p's message buffer. */
static void
proc_keeper_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  Proc *p = h->data;
  *buf = uv_buf_init(p->ctlbuf + p->ctllen, (unsigned)(sizeof p->ctlbuf - p->ctllen));
}

/* The start failed before or at the hello (step: the child's failed step,
 * or 0 with what naming the cause; e its errno): the keeper is killed (one
 * that said so exits anyway) and reaped at its SIGCHLD, or now if it has
 * already gone; nothing of the child is ours; on_start says why. */
static void
proc_keeper_start_failed(Proc *p, int step, const char *what, int e)
{
  p->starting = false;
  uv_timer_stop(&p->hello_timer);
  if (p->keeper > 0) /* none yet while it is launched (proc_spawn.c) */
    kill(p->keeper, SIGKILL);
  p->exit_seen = p->reaped = p->finished = true; /* no child, no on_exit */
  if (p->ctl_open) {
    p->ctl_open = false;
    proc__close_handle(p, (uv_handle_t *)&p->ctl);
  }
  proc_keeper__check(p);
  VigilError err = VIGIL_ERROR_INIT;
  proc__start_error(&err, step, what, e, p->program, p->keeper_program, p->start_dir);
  free(p->keeper_program);
  free(p->start_dir);
  p->keeper_program = p->start_dir = NULL;
  if (p->cb.on_start != NULL)
    p->cb.on_start(p->data, &err);
}

/* See proc_internal.h. */
void
proc_keeper__start_failed(Proc *p, int step, const char *what, int e)
{
  proc_keeper_start_failed(p, step, what, e);
}

/* The hello bound passed: the keeper said nothing. */
static void
proc_keeper_hello_timeout(uv_timer_t *t)
{
  Proc *p = t->data;
  if (!p->starting || p->closed)
    return;
  proc_keeper_hello_timeouts_n++;
  char what[96];
  snprintf(what, sizeof what, "keeper \"%s\": no hello within %lld ms (killed)",
           p->keeper_program ? p->keeper_program : "?", (long long)proc_keeper_hello_ms);
  proc_keeper_start_failed(p, 0, what, ETIMEDOUT);
}

/* See proc_internal.h. */
void
proc_keeper__hello_begin(Proc *p)
{
  p->starting = true;
  uv_timer_init(p->pl->loop, &p->hello_timer);
  p->hello_timer.data = p;
  p->handles++;
  uv_timer_start(&p->hello_timer, proc_keeper_hello_timeout, (uint64_t)proc_keeper_hello_ms, 0);
}

/* The keeper's first word, m: the child runs (its pid), or why not. */
static void
proc_keeper_on_hello(Proc *p, const KeeperMsg *m)
{
  if (m->type == kKeeperHello && m->n >= 3 && m->v[0] == KEEPER_PROTOCOL &&
      m->v[1] == p->keeper && m->v[2] > 1) {
    p->starting = false;
    uv_timer_stop(&p->hello_timer);
    p->pid = (pid_t)m->v[2];
    contain_started(p->contain, p->pid);
    free(p->keeper_program);
    free(p->start_dir);
    p->keeper_program = p->start_dir = NULL;
    proc__read_start(p);
    if (p->cb.on_start != NULL)
      p->cb.on_start(p->data, NULL);
    /* A stop asked for meanwhile (proc_stop recorded it). */
    if (!p->closed && p->stop_pending) {
      p->stop_pending = false;
      proc_stop(p, p->stop_sig, p->stop_grace_ms);
    }
    return;
  }
  if (m->type == kKeeperFailed && m->n >= 2)
    proc_keeper_start_failed(p, (int)m->v[0], NULL, (int)m->v[1]);
  else
    proc_keeper_start_failed(p, kChildKeeper, NULL, EPROTO);
}

/* Acts on one message of p's keeper. */
static void
proc_keeper_on_msg(Proc *p, const KeeperMsg *m)
{
  if (p->starting) {
    proc_keeper_on_hello(p, m);
  } else if (m->type == kKeeperExit && m->n >= 2 && !p->exit_seen) {
    proc__note_exit(p, m->v[0] == 1, (int)m->v[1], (int)m->v[1]);
    if (p->closed)
      return;
    proc__on_exit_seen(p);
  } else if (m->type == kKeeperReaped && m->n >= 2 && p->reap_asked && !p->reaped) {
    p->exit.cpu_ms = (uint64_t)m->v[0] / 1000;
    p->exit.memory_peak_bytes = (uint64_t)m->v[1] * 1024;
    p->reaped = true;
    proc_loop__sweep_soon(p->pl); /* this monitor's orphans are now killed on sight */
    if (p->keeper_adopted)
      proc_keeper_gone(p); /* it exits after this word, and no SIGCHLD says so */
    proc__on_reaped(p);
  }
}

/* The control socket's bytes, EOF or error. At EOF the keeper is gone or
 * going: its SIGCHLD follows, and proc__check takes over. */
static void
proc_keeper_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  Proc *p = s->data;
  if (nread == 0)
    return;
  if (nread < 0 && p->starting) {
    /* It went (or its socket failed) before saying anything. */
    proc_keeper_start_failed(p, kChildKeeper, NULL, nread == UV_EOF ? ECONNRESET : -(int)nread);
    return;
  }
  if (nread < 0) {
    if (p->ctl_open) {
      p->ctl_open = false;
      proc__close_handle(p, (uv_handle_t *)&p->ctl);
    }
    if (p->keeper_adopted && !p->keeper_reaped)
      proc_keeper_lost(p);
    return;
  }
  p->ctllen += (size_t)nread;
  size_t off = 0;
  while (!p->closed) {
    KeeperMsg m;
    ssize_t used = keeper_msg_decode(p->ctlbuf + off, p->ctllen - off, &m);
    if (used <= 0) {
      if (used < 0 && p->starting) {
        proc_keeper_start_failed(p, kChildKeeper, NULL, EPROTO);
        return;
      }
      if (used < 0) /* nonsense: a keeper that says it is not ours */
        p->ctllen = off = 0;
      break;
    }
    off += (size_t)used;
    proc_keeper_on_msg(p, &m);
    if (!p->ctl_open) /* a failed start closed it */
      return;
  }
  if (off > 0 && off <= p->ctllen) {
    memmove(p->ctlbuf, p->ctlbuf + off, p->ctllen - off);
    p->ctllen -= off;
  }
}

/* See proc_internal.h. */
int
proc_keeper__watch(Proc *p, int fd)
{
  uv_pipe_init(p->pl->loop, &p->ctl, 0);
  p->ctl.data = p;
  p->handles++;
  p->ctl_open = true;
  int rc = uv_pipe_open(&p->ctl, fd);
  if (rc != 0)
    close(fd); /* not the handle's */
  else if (!p->launching) /* else once its pid is known: the hello must name it */
    rc = proc_keeper__read_start(p);
  return rc;
}

/* See proc_internal.h. */
int
proc_keeper__read_start(Proc *p)
{
  return uv_read_start((uv_stream_t *)&p->ctl, proc_keeper_alloc, proc_keeper_read);
}

/* An adopted keeper's socket closed: the keeper is gone (it is not our
 * child, so no SIGCHLD says so). A child it had not reported is lost to
 * us: killed, and its exit unknown. */
static void
proc_keeper_lost(Proc *p)
{
  proc_keeper_gone(p);
  if (p->closed) {
    p->reaped = true;
    return;
  }
  if (!p->exit_seen) {
    contain_end(p->contain);
    p->exit_seen = true;
    p->exit.exited = false;
    p->exit.exit_code = -1;
    p->exit.duration_ms = (uv_hrtime() - p->start_ns) / 1000000;
    proc__on_exit_seen(p);
  } else if (!p->reaped) {
    p->reaped = true; /* no usage: its keeper took it */
    proc__on_reaped(p);
  }
}

/* See proc_internal.h. */
bool
proc_keeper__check(Proc *p)
{
  if (p->keeper_reaped || p->keeper_adopted)
    return p->keeper_reaped;
  if (p->keeper <= 0) /* still being launched: nothing to wait for yet */
    return !p->launching;
  pid_t r;
  do
    r = waitpid(p->keeper, NULL, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0)
    return false;
  p->keeper_reaped = true;
  if (p->ctl_open) {
    p->ctl_open = false;
    proc__close_handle(p, (uv_handle_t *)&p->ctl);
  }
  if (p->closed && !p->reaped) {
    /* It was told to stop: it reaped the child, or died and the child is
     * ours now (killed by contain_end, reaped here or at its SIGCHLD). */
    if (waitpid(p->pid, NULL, WNOHANG) != 0)
      p->reaped = true;
  }
  return true;
}

/* Sends m to p's keeper. */
static bool
proc_keeper_send(Proc *p, uint32_t type)
{
  uv_os_fd_t fd;
  if (!p->ctl_open || uv_fileno((uv_handle_t *)&p->ctl, &fd) != 0)
    return false;
  KeeperMsg m = {type, 0, {0}};
  return keeper_msg_send(fd, &m);
}

/* See proc_internal.h. */
bool
proc_keeper__ack_exit(Proc *p)
{
  return !p->keeper_reaped && proc_keeper_send(p, kKeeperExitAck);
}

/* See proc_internal.h. A keeper that cannot be told is killed: the child,
 * re-parented to the engine, is then reaped by proc.c. */
void
proc_keeper__stop(Proc *p)
{
  if (p->keeper_reaped)
    return;
  if (p->keeper <= 0)
    return; /* still being launched: the launch's end kills it (proc_spawn.c) */
  bool told = proc_keeper_send(p, kKeeperStop);
  if (p->keeper_adopted) {
    /* It kills everything, reaps the child and exits; an adopted keeper
     * that cannot be told is already gone (its socket is what failed). */
    proc_keeper_gone(p);
    p->reaped = true;
  } else if (!told) {
    kill(p->keeper, SIGKILL);
  }
}
