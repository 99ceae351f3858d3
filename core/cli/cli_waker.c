/*
 * The waker's thread (see cli_waker.h): poll() on a signalfd, on the
 * hangup fd (asking for no event, so that only POLLERR, POLLHUP or POLLNVAL
 * end it: a terminal or a file there is never "ready") and on a pipe the
 * owner writes to when it is done.
 */
#include "cli/cli_waker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct CliWaker {
  pthread_t thread;
  int sigfd;
  int hangup_fd;
  int done[2]; /* the owner writes to done[1] to end the thread */
  void (*wake)(void *ctx);
  void *ctx;
  CliWakeReason reason; /* written by the thread, read after the join */
  int signo;
};

/* The signals that stop a waiting command. */
static void
waker_stop_signals(sigset_t *set)
{
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
}

void
cli_waker_block_signals(void)
{
  sigset_t set;
  waker_stop_signals(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The thread: waits for the first reason, calls wake, then waits for the
 * end, exiting the process at a second signal. */
static void *
waker_main(void *arg)
{
  CliWaker *w = arg;
  for (;;) {
    struct pollfd p[3] = {
      {w->done[0], POLLIN, 0},
      {w->sigfd, POLLIN, 0},
      {w->reason == kCliWakeNone ? w->hangup_fd : -1, 0, 0},
    };
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      return NULL;
    }
    if (p[0].revents != 0)
      return NULL;
    CliWakeReason now = kCliWakeNone;
    if (p[1].revents != 0) {
      struct signalfd_siginfo si;
      if (read(w->sigfd, &si, sizeof si) != (ssize_t)sizeof si)
        continue;
      if (w->reason != kCliWakeNone)
        _exit(128 + (int)si.ssi_signo); /* the second: the first did not end the wait */
      w->signo = (int)si.ssi_signo;
      now = kCliWakeSignal;
    } else if (p[2].revents != 0) {
      now = kCliWakeHangup;
    }
    if (now != kCliWakeNone && w->reason == kCliWakeNone) {
      w->reason = now;
      w->wake(w->ctx);
    }
  }
}

CliWaker *
cli_waker_start(int hangup_fd, void (*wake)(void *ctx), void *ctx)
{
  CliWaker *w = calloc(1, sizeof *w);
  if (w == NULL)
    return NULL;
  sigset_t set;
  waker_stop_signals(&set);
  w->hangup_fd = hangup_fd;
  w->wake = wake;
  w->ctx = ctx;
  w->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (w->sigfd < 0 || pipe2(w->done, O_CLOEXEC) != 0) {
    int e = errno;
    if (w->sigfd >= 0)
      close(w->sigfd);
    free(w);
    errno = e;
    return NULL;
  }
  int rc = pthread_create(&w->thread, NULL, waker_main, w);
  if (rc != 0) {
    close(w->sigfd);
    close(w->done[0]);
    close(w->done[1]);
    free(w);
    errno = rc;
    return NULL;
  }
  return w;
}

CliWakeReason
cli_waker_finish(CliWaker *w, int *signo)
{
  char byte = 0;
  while (write(w->done[1], &byte, 1) < 0 && errno == EINTR) {
  }
  pthread_join(w->thread, NULL);
  CliWakeReason reason = w->reason;
  *signo = w->signo;
  close(w->sigfd);
  close(w->done[0]);
  close(w->done[1]);
  free(w);
  return reason;
}
