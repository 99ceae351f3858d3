/*
 * The child's side of a spawn (proc_child.h): from fork (or clone) to exec,
 * shared by the engine's own spawn and the keeper's.
 */
#include "proc/proc_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

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

/* See proc_child.h. */
void
proc_child_close_fds(int keep, long open_max)
{
#ifdef __linux__
  if (keep < 3)
    keep = 2; /* nothing to keep: close 3 and up */
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

/* See proc_child.h. Default dispositions (an ignored SIGPIPE would
 * survive exec) before unblocking, so nothing reaches the parent's
 * handlers here. */
void
proc_child_reset_signals(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &sa, NULL); /* EINVAL for KILL, STOP and libc's own: fine */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The child between fork (clone on Linux: in the engine's memory) and exec:
 * only async-signal-safe calls (the engine may have threads, so no malloc
 * and no locks), and no write to the engine's data but c's fields and
 * errno. Never returns. */
void
proc_child(ProcChild *c)
{
  proc_child_reset_signals();

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
  /* Lowering the soft limit cannot fail; the descriptors above it (the
   * report pipe) are closed by exec. */
  if (c->nofile_restore)
    setrlimit(RLIMIT_NOFILE, &c->nofile);

  execve(c->path, c->argv, c->envp);
  proc_child_fail(c, kChildExec);
}

/* The name of a child-side step for the spawn_failed message. */
const char *
proc_step_name(int step)
{
  switch (step) {
  case kChildSetsid: return "setsid";
  case kChildChdir: return "chdir";
  case kChildDup: return "dup2";
  case kChildExec: return "exec";
  case kChildKeeper: return "keeper";
  default: return step > kChildContain ? contain_step_name(step - kChildContain) : "exec";
  }
}

/* See proc_child.h. */
long
proc_child_open_max(void)
{
  long open_max = sysconf(_SC_OPEN_MAX);
  if (open_max < 0 || open_max > (1L << 20))
    open_max = 1L << 20;
  return open_max;
}
