/*
 * Randomness from the OS (see random.h). Its absence is fatal, because a
 * predictable envelope nonce would let a process forge an end marker: with
 * neither getrandom nor /dev/urandom, vigil stops rather than run forgeable.
 */
#include "base/random.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static const char random_hexdigits[] = "0123456789abcdef";

/* Fills buf from /dev/urandom; false if it cannot be opened or read. */
static bool
random_urandom(unsigned char *buf, size_t len)
{
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  return got == len;
}

/* See random.h. getrandom with GRND_NONBLOCK never blocks the loop: it
 * fails with EAGAIN only before the kernel's pool is first seeded (early
 * boot) and with ENOSYS on kernels before 3.17; /dev/urandom covers both
 * (its early-boot output is still unpredictable to the process we are
 * watching, which is what matters). With neither there is no safe nonce,
 * so vigil stops rather than run forgeable. */
void
random_bytes(void *buf, size_t len)
{
  unsigned char *p = buf;
  size_t got = 0;
  int err = 0;
  while (got < len) {
    ssize_t n = getrandom(p + got, len - got, GRND_NONBLOCK);
    if (n > 0) {
      got += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    err = n < 0 ? errno : EIO;
    break;
  }
  if (got < len && !random_urandom(p + got, len - got)) {
    fprintf(stderr, "vigil: no source of randomness (getrandom: %s; /dev/urandom: %s)\n",
            strerror(err), strerror(errno));
    abort();
  }
}

/* See random.h. */
void
random_hex(char *out, size_t nbytes)
{
  unsigned char raw[64];
  size_t done = 0;
  while (done < nbytes) { /* in chunks, so any nbytes works without a heap copy */
    size_t n = nbytes - done < sizeof raw ? nbytes - done : sizeof raw;
    random_bytes(raw, n);
    for (size_t i = 0; i < n; i++) {
      out[2 * (done + i)] = random_hexdigits[raw[i] >> 4];
      out[2 * (done + i) + 1] = random_hexdigits[raw[i] & 0xF];
    }
    done += n;
  }
  out[2 * nbytes] = '\0';
}

/* See random.h. 12 base-36 digits are drawn from one 64-bit value with
 * rejection sampling: values at or above the largest multiple of 36^12 that
 * fits in 64 bits are redrawn (about 1 in 4), so every id is exactly equally
 * likely. */
void
random_monitor_id(char *out)
{
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint64_t space = 1;
  for (int i = 0; i < 12; i++)
    space *= 36;
  uint64_t limit = (UINT64_MAX / space) * space;
  uint64_t v;
  do
    random_bytes(&v, sizeof v);
  while (v >= limit);
  memcpy(out, "mon_", 4);
  for (int i = 0; i < 12; i++) {
    out[4 + i] = digits[v % 36];
    v /= 36;
  }
  out[16] = '\0';
}
