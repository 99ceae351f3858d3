/*
 * The engine's log: lines reach stderr whole and in order, a stderr nobody
 * reads never blocks the caller (the lines that do not fit the bounded
 * buffer are dropped, counted, and told about once there is room again),
 * and log_flush writes what is buffered.
 *
 * Each test points fd 2 at a pipe of its own and puts it back before
 * checking anything (check_fail writes to stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"
#include "base/strbuf.h"

/* The bound on a test that must not block: tens of times what it takes on
 * the slowest build, so only a log_msg that blocked reaches it. */
#define WATCHDOG_S 60

static int saved_stderr = -1;

/* SIGALRM: log_msg blocked. Put stderr back, say so, fail the program. */
static void
watchdog_fired(int sig)
{
  (void)sig;
  if (saved_stderr >= 0)
    dup2(saved_stderr, 2);
  static const char msg[] = "FAIL: log_msg blocked on a stderr nobody reads (watchdog)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* Points fd 2 at a new pipe; returns its read end (non-blocking). */
static int
stderr_to_pipe(void)
{
  int fds[2];
  if (pipe(fds) != 0)
    abort();
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  saved_stderr = dup(2);
  dup2(fds[1], 2);
  close(fds[1]);
  return fds[0];
}

/* Puts fd 2 back. */
static void
stderr_back(void)
{
  dup2(saved_stderr, 2);
  close(saved_stderr);
  saved_stderr = -1;
}

/* Reads what the pipe holds now into out. */
static void
read_available(int fd, StrBuf *out)
{
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    strbuf_append(out, buf, (size_t)n);
}

/* Reads the pipe until the log has written everything it holds and the
 * pipe is empty, for at most max_ms. Whether it got there. */
static bool
read_until_flushed(int fd, StrBuf *out, uint64_t max_ms)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    read_available(fd, out);
    if (log_flush(20)) {
      read_available(fd, out);
      return true;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000 > max_ms)
      return false;
  }
}

static size_t
count_lines(const char *s)
{
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

TEST(lines_are_written_whole_and_in_order)
{
  int fd = stderr_to_pipe();
  uint64_t before = log_lines_written();
  LOG_WARN("test", "first %d", 1);
  LOG_ERROR("test", "second with a bell \a and ESC \x1b[2J");
  LOG_INFO("other module", "third");
  LOG_DEBUG("test", "below the level: not written");
  StrBuf out = STRBUF_INIT;
  bool flushed = read_until_flushed(fd, &out, 10000);
  stderr_back();
  close(fd);
  CHECK(flushed);
  const char *s = strbuf_cstr(&out);
  CHECK_INT(count_lines(s), 3);
  const char *a = strstr(s, " vigild warn test: first 1\n");
  const char *b = strstr(s, " vigild error test: second with a bell \\x07 and ESC \\e[2J\n");
  const char *c = strstr(s, " vigild info other module: third\n");
  CHECK(a && b && c && a < b && b < c);
  CHECK(strstr(s, "below the level") == NULL);
  CHECK_INT(log_lines_written(), before + 3);
  strbuf_free(&out);
}

TEST(a_stderr_nobody_reads_never_blocks_the_caller)
{
  enum { kLines = 20000, kBuffer = 16384 };
  log_set_buffer_max(kBuffer);
  int fd = stderr_to_pipe();
  int pipe_size = fcntl(fd, F_GETPIPE_SZ);
  uint64_t dropped_before = log_lines_dropped();
  signal(SIGALRM, watchdog_fired);
  alarm(WATCHDOG_S);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 1; i <= kLines; i++)
    LOG_INFO("flood", "line %06d of a stderr that nobody reads, padded to about a hundred "
                      "bytes", i);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  uint64_t dropped = log_lines_dropped() - dropped_before;
  /* The writer is stuck in write(2): a short flush gives up. */
  bool flushed_while_stuck = log_flush(50);

  /* Now read: the writer gets going again and says what it dropped. */
  StrBuf out = STRBUF_INIT;
  bool flushed = read_until_flushed(fd, &out, 30000);
  stderr_back();
  close(fd);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("     %d lines logged in %.1f ms with stderr blocked, %llu dropped\n", kLines, ms,
         (unsigned long long)dropped);
  CHECK(!flushed_while_stuck);
  CHECK(flushed);
  CHECK(dropped > 0 && dropped < kLines);

  /* Every line that was not dropped arrived once and in order, and each gap
   * is told by exactly one line, where the gap is, with its size and the
   * bound: "N log lines dropped ... (log.buffer_bytes = B) ...". */
  const char *s = strbuf_cstr(&out);
  long last = 0;
  unsigned long long told = 0, gap_told = 0;
  size_t lines = 0, notices = 0, bad = 0;
  char notice[160];
  snprintf(notice, sizeof notice,
           " log lines dropped: stderr was not read fast enough and the log buffer "
           "(log.buffer_bytes = %d) was full\n",
           kBuffer);
  for (const char *p = s, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    lines++;
    const char *flood = strstr(p, " vigild info flood: line ");
    const char *warn = strstr(p, " vigild warn log: ");
    if (flood && flood < nl) {
      long i = strtol(flood + strlen(" vigild info flood: line "), NULL, 10);
      /* The gap before this line was told, and told right. */
      bad += i <= last || (unsigned long long)(i - last - 1) != gap_told;
      last = i;
      gap_told = 0;
    } else if (warn && warn < nl) {
      char *end;
      unsigned long long n = strtoull(warn + strlen(" vigild warn log: "), &end, 10);
      bad += gap_told != 0 || strncmp(end, notice, strlen(notice)) != 0;
      gap_told = n;
      told += n;
      notices++;
    } else {
      bad++;
    }
  }
  /* The last gap runs to the end. */
  bad += (unsigned long long)(kLines - last) != gap_told;
  CHECK_INT(bad, 0);
  CHECK_INT(told, dropped);
  CHECK(told > 0);
  CHECK_INT(lines, kLines - dropped + notices);
  /* While nobody read, what was not dropped sat in the pipe or in the
   * buffer: never more than the two bounds. */
  CHECK((kLines - dropped) * 100 <= (uint64_t)pipe_size + kBuffer);
  strbuf_free(&out);
  log_set_buffer_max(LOG_BUFFER_DEFAULT);
}

TEST(logging_goes_on_after_a_drop)
{
  int fd = stderr_to_pipe();
  LOG_INFO("test", "after the flood");
  StrBuf out = STRBUF_INIT;
  bool flushed = read_until_flushed(fd, &out, 10000);
  stderr_back();
  close(fd);
  CHECK(flushed);
  CHECK_CONTAINS(strbuf_cstr(&out), " vigild info test: after the flood\n");
  CHECK_INT(count_lines(strbuf_cstr(&out)), 1);
  strbuf_free(&out);
}

int
main(void)
{
  log_set_level(kLogInfo);
  RUN(lines_are_written_whole_and_in_order);
  RUN(a_stderr_nobody_reads_never_blocks_the_caller);
  RUN(logging_goes_on_after_a_drop);
  return check_summary();
}
