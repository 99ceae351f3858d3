/*
 * The child of the scale benchmark (bench/scale.c), in one of two roles:
 *
 *   scale_child quiet LINES_PER_S SECONDS MATCH_MS OFFSET_MS PHASE_MS
 *   scale_child flood SECONDS
 *
 * quiet: a process that talks a little. It writes LINES_PER_S ordinary lines
 * a second (the first PHASE_MS after its start; 0: none) that no pattern of
 * the benchmark matches, and a matching line
 *
 *   Error: <k> <CLOCK_MONOTONIC nanoseconds at the write>
 *
 * at OFFSET_MS + k * MATCH_MS (k = 0, 1, ...), but none in the last second of
 * its run, so every one of them is delivered when its batch window closes and
 * not early because the process ended. It exits after SECONDS. The stamp is
 * what latency_child writes: a reader on the same machine times the line as
 * (when its bytes arrived - stamp). The schedule is absolute
 * (clock_nanosleep to start + t), so it does not drift with the writes, and
 * every line is one write(2) of a whole line.
 *
 * The benchmark computes how many matching lines a quiet child writes from
 * the same arguments (scale_matches_expected in scale.c), so the two must
 * keep the same rule: k counts while OFFSET_MS + k * MATCH_MS <= SECONDS *
 * 1000 - 1000.
 *
 * lend: (bench/capacity.c) a process that costs nothing: it hands its
 * stdout to the benchmark over the Unix socket SOCK_PATH (SCM_RIGHTS), so
 * that one process there writes for every monitor's pipe, then sleeps in
 * the kernel (pause) until it is signalled.
 *
 *   scale_child lend SOCK_PATH
 *
 * flood: a process that writes ordinary lines as fast as the pipe takes them
 * for SECONDS: a 64 KiB block of 100-byte lines prepared once, written again
 * and again (the writer costs almost nothing, so the reader is what is
 * measured), the clock checked after every block.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SCALE_FLOOD_BLOCK (64 * 1024)
#define SCALE_FLOOD_LINE 100

/* CLOCK_MONOTONIC in nanoseconds. */
static int64_t
scale_child_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleeps until the absolute CLOCK_MONOTONIC time t_ns (restarting on EINTR). */
static void
scale_child_sleep_until(int64_t t_ns)
{
  struct timespec t = {(time_t)(t_ns / 1000000000LL), (long)(t_ns % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
    ;
}

/* Writes all of buf; false when the reader is gone. */
static int
scale_child_write(const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write(STDOUT_FILENO, buf, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return 0;
    buf += w;
    len -= (size_t)w;
  }
  return 1;
}

/* The quiet role: ordinary lines at a steady rate, a stamped match now and
 * then. */
static int
scale_child_quiet(long lines_per_s, long seconds, long match_ms, long offset_ms, long phase_ms)
{
  int64_t start = scale_child_now_ns();
  int64_t end = start + (int64_t)seconds * 1000000000LL;
  int64_t last_match = end - 1000000000LL; /* the rule in the header */
  int64_t line_period = lines_per_s > 0 ? 1000000000LL / lines_per_s : 0;
  int64_t next_line = lines_per_s > 0 ? start + (int64_t)phase_ms * 1000000LL : INT64_MAX;
  int64_t next_match = start + (int64_t)offset_ms * 1000000LL;
  if (next_match > last_match)
    next_match = INT64_MAX;
  long n = 0, k = 0;
  char line[128];
  for (;;) {
    int64_t next = next_line < next_match ? next_line : next_match;
    if (next >= end)
      break;
    scale_child_sleep_until(next);
    int len;
    if (next == next_match) {
      len = snprintf(line, sizeof line, "Error: %ld %lld\n", k++, (long long)scale_child_now_ns());
      next_match += (int64_t)match_ms * 1000000LL;
      if (next_match > last_match)
        next_match = INT64_MAX;
    } else {
      len = snprintf(line, sizeof line, "info %ld: request handled in 12 ms, status ok\n", n++);
      next_line += line_period;
    }
    if (!scale_child_write(line, (size_t)len))
      return 1;
  }
  scale_child_sleep_until(end);
  return 0;
}

/* The flood role: ordinary lines as fast as the pipe takes them. */
static int
scale_child_flood(long seconds)
{
  static char block[SCALE_FLOOD_BLOCK];
  for (size_t off = 0; off + SCALE_FLOOD_LINE <= sizeof block; off += SCALE_FLOOD_LINE) {
    int len = snprintf(block + off, SCALE_FLOOD_LINE, "flood %08zu ", off / SCALE_FLOOD_LINE);
    memset(block + off + len, 'x', SCALE_FLOOD_LINE - 1 - (size_t)len);
    block[off + SCALE_FLOOD_LINE - 1] = '\n';
  }
  size_t used = sizeof block / SCALE_FLOOD_LINE * SCALE_FLOOD_LINE;
  int64_t end = scale_child_now_ns() + (int64_t)seconds * 1000000000LL;
  while (scale_child_now_ns() < end) {
    if (!scale_child_write(block, used))
      return 1;
  }
  return 0;
}

/* The lend role: stdout to the benchmark's socket, then nothing. */
static int
scale_child_lend(const char *path)
{
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path)
    return 2;
  strcpy(addr.sun_path, path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) != 0)
    return 1;
  char byte = 'f';
  struct iovec iov = {&byte, 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int fd = STDOUT_FILENO;
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(s, &msg, 0) != 1)
    return 1;
  close(s);
  for (;;)
    pause();
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "lend") == 0)
    return scale_child_lend(argv[2]);
  if (argc == 7 && strcmp(argv[1], "quiet") == 0) {
    long v[5];
    for (int i = 0; i < 5; i++)
      v[i] = strtol(argv[2 + i], NULL, 10);
    if (v[0] < 0 || v[0] > 1000 || v[1] < 1 || v[2] < 1 || v[3] < 0 || v[4] < 0) {
      fprintf(stderr, "scale_child: bad quiet arguments\n");
      return 2;
    }
    return scale_child_quiet(v[0], v[1], v[2], v[3], v[4]);
  }
  if (argc == 3 && strcmp(argv[1], "flood") == 0) {
    long seconds = strtol(argv[2], NULL, 10);
    if (seconds < 1) {
      fprintf(stderr, "scale_child: bad flood arguments\n");
      return 2;
    }
    return scale_child_flood(seconds);
  }
  fprintf(stderr, "usage: scale_child quiet LINES_PER_S SECONDS MATCH_MS OFFSET_MS PHASE_MS\n"
                  "       scale_child flood SECONDS\n"
                  "       scale_child lend SOCK_PATH\n");
  return 2;
}
