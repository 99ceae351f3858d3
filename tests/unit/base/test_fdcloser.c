/*
 * Descriptors closed off the loop (fdcloser.c): with a loop, each is closed
 * by the pool once the loop has run (counted as closed, none left
 * pending), the ones given while a batch is in the pool go in the next;
 * a held duplicate's close is the pool's, after its original's; with no
 * loop each is closed at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"
#include "base/fdcloser.h"

static bool
is_open(int fd)
{
  return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* How many of the n descriptors in fds are still open. */
static int
still_open(const int *fds, int n)
{
  int k = 0;
  for (int i = 0; i < n; i++)
    k += is_open(fds[i]);
  return k;
}

static bool
none_pending(void *ctx)
{
  (void)ctx;
  FdCloserStats s;
  fdcloser_stats(&s);
  return s.pending == 0;
}

TEST(with_a_loop_the_pool_closes_every_one)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  fdcloser_use_loop(&loop);
  FdCloserStats before;
  fdcloser_stats(&before);
  enum { kPipes = 40 };
  int fds[2 * kPipes];
  for (int i = 0; i < kPipes; i++)
    CHECK(pipe(&fds[2 * i]) == 0);
  for (int i = 0; i < 2 * kPipes; i++)
    fdcloser_close(fds[i]);
  FdCloserStats queued;
  fdcloser_stats(&queued);
  CHECK_INT((long long)queued.pending, 2 * kPipes);
  RUN_UNTIL(&loop, none_pending, NULL, 10000, "every descriptor closed by the pool");
  FdCloserStats after;
  fdcloser_stats(&after);
  CHECK_INT((long long)(after.closed - before.closed), 2 * kPipes);
  CHECK_INT((long long)(after.closed_inline - before.closed_inline), 0);
  CHECK_INT(still_open(fds, 2 * kPipes), 0);
  fdcloser_use_loop(NULL);
  test_loop_close(&loop);
}

TEST(a_held_duplicate_is_the_last_close_and_the_pools)
{
  /* The owner closes its own descriptor after handing a duplicate over:
   * the pool's close of the duplicate is then the last one (counted as the
   * pool's, none inline), after which the reader sees the end. */
  uv_loop_t loop;
  uv_loop_init(&loop);
  fdcloser_use_loop(&loop);
  FdCloserStats before;
  fdcloser_stats(&before);
  int p[2];
  CHECK(pipe(p) == 0);
  fdcloser_hold(p[1]);
  close(p[1]);
  RUN_UNTIL(&loop, none_pending, NULL, 10000, "the duplicate closed by the pool");
  FdCloserStats after;
  fdcloser_stats(&after);
  CHECK_INT((long long)(after.closed - before.closed), 1);
  CHECK_INT((long long)(after.closed_inline - before.closed_inline), 0);
  char c;
  CHECK(read(p[0], &c, 1) == 0);
  close(p[0]);
  fdcloser_use_loop(NULL);
  test_loop_close(&loop);
}

TEST(without_a_loop_each_is_closed_at_once)
{
  fdcloser_use_loop(NULL);
  FdCloserStats before;
  fdcloser_stats(&before);
  int p[2];
  CHECK(pipe(p) == 0);
  fdcloser_close(p[0]);
  fdcloser_close(p[1]);
  CHECK(!is_open(p[0]) && !is_open(p[1]));
  FdCloserStats after;
  fdcloser_stats(&after);
  CHECK_INT((long long)(after.closed_inline - before.closed_inline), 2);
  CHECK_INT((long long)after.pending, 0);
}

int
main(void)
{
  RUN(with_a_loop_the_pool_closes_every_one);
  RUN(a_held_duplicate_is_the_last_close_and_the_pools);
  RUN(without_a_loop_each_is_closed_at_once);
  return check_summary();
}
