/*
 * Descriptors closed off the loop (fdcloser.h). The loop collects them in
 * a batch; when no batch is in the pool, the collected one goes there and
 * a new one starts. What the pool closes is counted when its batch is
 * done, on the loop: no state is shared with the pool's thread but the
 * batch it was given.
 */
#include "base/fdcloser.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/memory.h"

typedef struct {
  uv_work_t req;
  int *fds;
  size_t n;
} FdCloserBatch;

static struct {
  uv_loop_t *loop;        /* fdcloser_use_loop's, or NULL */
  int *fds;               /* collected, not yet in the pool */
  size_t n, cap;
  FdCloserBatch *running; /* in the pool, or NULL */
  FdCloserStats stats;
} fdcloser;

static void fdcloser_send(void);

/* In a pool thread. */
static void
fdcloser_work(uv_work_t *req)
{
  FdCloserBatch *b = req->data;
  for (size_t i = 0; i < b->n; i++)
    close(b->fds[i]);
}

/* On the loop: the batch is closed; the next goes. */
static void
fdcloser_done(uv_work_t *req, int status)
{
  FdCloserBatch *b = req->data;
  if (status != 0)
    fdcloser_work(req); /* cancelled: closed here after all */
  fdcloser.stats.closed += b->n;
  fdcloser.stats.pending -= b->n;
  fdcloser.running = NULL;
  free(b->fds);
  free(b);
  fdcloser_send();
}

/* Sends the collected batch to the pool if none is there. */
static void
fdcloser_send(void)
{
  if (fdcloser.running != NULL || fdcloser.n == 0)
    return;
  FdCloserBatch *b = xmalloc(sizeof *b);
  b->fds = fdcloser.fds;
  b->n = fdcloser.n;
  b->req.data = b;
  fdcloser.fds = NULL;
  fdcloser.n = fdcloser.cap = 0;
  fdcloser.running = b;
  /* No loop any more (taken back meanwhile), or no pool: closed here, as
   * it would have been without this module. */
  if (fdcloser.loop == NULL ||
      uv_queue_work(fdcloser.loop, &b->req, fdcloser_work, fdcloser_done) != 0) {
    fdcloser_work(&b->req);
    fdcloser.stats.closed_inline += b->n;
    fdcloser.stats.pending -= b->n;
    fdcloser.running = NULL;
    free(b->fds);
    free(b);
  }
}

/* See fdcloser.h. */
void
fdcloser_use_loop(uv_loop_t *loop)
{
  fdcloser.loop = loop;
}

/* See fdcloser.h. */
void
fdcloser_close(int fd)
{
  if (fd < 0)
    return;
  if (fdcloser.loop == NULL || fdcloser.stats.pending >= FDCLOSER_MAX_PENDING) {
    close(fd);
    fdcloser.stats.closed_inline++;
    return;
  }
  if (fdcloser.n == fdcloser.cap) {
    fdcloser.cap = fdcloser.cap ? fdcloser.cap * 2 : 16;
    fdcloser.fds = xrealloc(fdcloser.fds, fdcloser.cap * sizeof *fdcloser.fds);
  }
  fdcloser.fds[fdcloser.n++] = fd;
  fdcloser.stats.pending++;
  fdcloser_send();
}

/* See fdcloser.h. */
void
fdcloser_hold(int fd)
{
  if (fd < 0 || fdcloser.loop == NULL)
    return;
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (dup >= 0)
    fdcloser_close(dup);
}

/* See fdcloser.h. */
int
fdcloser_open_held(int dir_fd, const char *name)
{
  return openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

/* See fdcloser.h. */
void
fdcloser_stats(FdCloserStats *out)
{
  *out = fdcloser.stats;
}
