/*
 * The keeper's arguments, control messages and exit file (keeper_wire.h),
 * shared by the engine (proc_spawn.c, proc.c) and the keeper itself, so
 * that the two cannot disagree on a layout.
 */
#include "proc/keeper_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/memory.h"

/* The numbers a keeper takes before "--", in order. */
#define KEEPER_NUMBERS 10

/* See keeper_wire.h. One allocation: the pointer array, then the digits. */
char **
keeper_args_build(const char *keeper_path, const KeeperArgs *a)
{
  int64_t nums[KEEPER_NUMBERS] = {KEEPER_PROTOCOL, a->njoin, a->rlimit_as, a->rlimit_nproc,
                                  a->nofile_restore, (int64_t)a->nofile_cur,
                                  (int64_t)a->nofile_max, a->unattended_ms, a->kill_grace_ms,
                                  a->drain_ms};
  size_t nargv = 0;
  while (a->argv[nargv] != NULL)
    nargv++;
  size_t nptr = 1 + KEEPER_NUMBERS + 1 + 1 + nargv + 1;
  size_t text = KEEPER_NUMBERS * 24;
  char **out = xmalloc(nptr * sizeof *out + text);
  char *digits = (char *)(out + nptr);
  size_t k = 0;
  out[k++] = (char *)keeper_path;
  for (int i = 0; i < KEEPER_NUMBERS; i++) {
    int n = snprintf(digits, 24, "%" PRId64, nums[i]);
    out[k++] = digits;
    digits += n + 1;
  }
  out[k++] = (char *)"--";
  out[k++] = (char *)a->path;
  for (size_t i = 0; i < nargv; i++)
    out[k++] = a->argv[i];
  out[k] = NULL;
  return out;
}

/* A whole decimal int64, or false. */
static bool
keeper_number(const char *s, int64_t *out)
{
  if (s == NULL || *s == '\0')
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

/* See keeper_wire.h. */
bool
keeper_args_parse(int argc, char **argv, KeeperArgs *a)
{
  if (argc < 1 + KEEPER_NUMBERS + 3)
    return false;
  int64_t v[KEEPER_NUMBERS];
  for (int i = 0; i < KEEPER_NUMBERS; i++) {
    if (!keeper_number(argv[1 + i], &v[i]))
      return false;
  }
  if (v[0] != KEEPER_PROTOCOL || strcmp(argv[1 + KEEPER_NUMBERS], "--") != 0)
    return false;
  if (v[1] < 0 || v[1] > 64 || v[2] < 0 || v[3] < 0 || (v[4] != 0 && v[4] != 1) || v[5] < 0 ||
      v[6] < 0 || v[7] <= 0 || v[8] < 0 || v[9] < 0)
    return false;
  a->njoin = (int)v[1];
  a->rlimit_as = v[2];
  a->rlimit_nproc = v[3];
  a->nofile_restore = v[4] == 1;
  a->nofile_cur = (uint64_t)v[5];
  a->nofile_max = (uint64_t)v[6];
  a->unattended_ms = v[7];
  a->kill_grace_ms = v[8];
  a->drain_ms = v[9];
  a->path = argv[2 + KEEPER_NUMBERS];
  a->argv = argv + 3 + KEEPER_NUMBERS;
  return true;
}

/* See keeper_wire.h. */
size_t
keeper_msg_encode(const KeeperMsg *m, char *buf)
{
  uint32_t n = m->n > KEEPER_MSG_MAX_FIELDS ? KEEPER_MSG_MAX_FIELDS : m->n;
  memcpy(buf, &m->type, 4);
  memcpy(buf + 4, &n, 4);
  memcpy(buf + 8, m->v, 8 * (size_t)n);
  return 8 + 8 * (size_t)n;
}

/* See keeper_wire.h. */
ssize_t
keeper_msg_decode(const char *buf, size_t len, KeeperMsg *out)
{
  if (len < 8)
    return 0;
  memset(out, 0, sizeof *out);
  memcpy(&out->type, buf, 4);
  memcpy(&out->n, buf + 4, 4);
  if (out->n > KEEPER_MSG_MAX_FIELDS)
    return -1;
  size_t size = 8 + 8 * (size_t)out->n;
  if (len < size)
    return 0;
  memcpy(out->v, buf + 8, 8 * (size_t)out->n);
  return (ssize_t)size;
}

/* See keeper_wire.h. MSG_NOSIGNAL: a peer gone is an answer, not a signal. */
bool
keeper_msg_send(int fd, const KeeperMsg *m)
{
  char buf[KEEPER_MSG_MAX_BYTES];
  size_t len = keeper_msg_encode(m, buf);
  ssize_t n;
  do
    n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)len;
}

/* See keeper_wire.h. */
size_t
keeper_exit_format(const KeeperExit *x, char *buf, size_t cap)
{
  int n = snprintf(buf, cap,
                   "vigil-keeper-exit %d\nexited %d\ncode %d\nsignal %d\ncause %s\n"
                   "cpu_us %" PRIu64 "\nmaxrss_kib %" PRIu64 "\nended_unix_ms %" PRId64 "\n",
                   KEEPER_PROTOCOL, x->exited ? 1 : 0, x->exit_code, x->term_signal, x->cause,
                   x->cpu_us, x->maxrss_kib, x->ended_unix_ms);
  return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

/* See keeper_wire.h. Every line must be there, in order, and nothing else. */
bool
keeper_exit_parse(const char *text, size_t len, KeeperExit *x)
{
  static const char *const causes[] = {"exited", "unattended", "stopped", "removed"};
  char buf[KEEPER_EXIT_MAX_BYTES];
  if (len == 0 || len >= sizeof buf || memchr(text, '\0', len) != NULL)
    return false;
  memcpy(buf, text, len);
  buf[len] = '\0';
  int proto, exited, code, sig, consumed = 0;
  char cause[16];
  uint64_t cpu, rss;
  int64_t ended;
  int got = sscanf(buf,
                   "vigil-keeper-exit %d\nexited %d\ncode %d\nsignal %d\ncause %15s\n"
                   "cpu_us %" SCNu64 "\nmaxrss_kib %" SCNu64 "\nended_unix_ms %" SCNd64 "\n%n",
                   &proto, &exited, &code, &sig, cause, &cpu, &rss, &ended, &consumed);
  if (got != 8 || consumed != (int)len || proto != KEEPER_PROTOCOL || (exited != 0 && exited != 1))
    return false;
  x->cause = NULL;
  for (size_t i = 0; i < sizeof causes / sizeof *causes; i++) {
    if (strcmp(cause, causes[i]) == 0)
      x->cause = causes[i];
  }
  if (x->cause == NULL)
    return false;
  x->exited = exited == 1;
  x->exit_code = code;
  x->term_signal = sig;
  x->cpu_us = cpu;
  x->maxrss_kib = rss;
  x->ended_unix_ms = ended;
  return true;
}

/* See keeper_wire.h. */
bool
keeper_msg_send_fds(int fd, const KeeperMsg *m, const int *fds, int nfds)
{
  char buf[KEEPER_MSG_MAX_BYTES];
  size_t len = keeper_msg_encode(m, buf);
  struct iovec iov = {buf, len};
  union {
    char space[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } ctl;
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfds > 0) {
    memset(&ctl, 0, sizeof ctl);
    msg.msg_control = ctl.space;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
  }
  ssize_t n;
  do
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)len;
}

/* See keeper_wire.h. The message is read whole: its header first, then
 * exactly its fields, so nothing after it is taken from the socket. */
bool
keeper_msg_recv_fds(int fd, KeeperMsg *m, int *fds, int *nfds)
{
  int max = *nfds;
  *nfds = 0;
  char buf[KEEPER_MSG_MAX_BYTES];
  size_t have = 0, want = 8;
  while (have < want) {
    struct iovec iov = {buf + have, want - have};
    union {
      char space[CMSG_SPACE(sizeof(int) * 4)];
      struct cmsghdr align;
    } ctl;
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.space;
    msg.msg_controllen = sizeof ctl.space;
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        continue;
      int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < k; i++) {
        int got;
        memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
        if (*nfds < max && got >= 0)
          fds[(*nfds)++] = got;
        else
          close(got);
      }
    }
    have += (size_t)n;
    if (have == 8) {
      uint32_t nf;
      memcpy(&nf, buf + 4, 4);
      if (nf > KEEPER_MSG_MAX_FIELDS)
        return false;
      want = 8 + 8 * (size_t)nf;
    }
  }
  return keeper_msg_decode(buf, have, m) > 0;
}
