/*
 * Small text helpers for everything that renders for an agent or a person.
 *
 * Escaping is the one that carries a guarantee: process output is untrusted,
 * and the envelope's promise that no raw control character or ANSI escape
 * reaches the agent, and that a line cannot fake a marker line, rests on
 * textfmt_escape letting through only printable text. Randomness comes from
 * the OS (getrandom, else /dev/urandom) and its absence is fatal, because a
 * predictable envelope nonce would let a process forge an end marker.
 */
#include "textfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const char textfmt_hex[] = "0123456789abcdef";

/* Whether a decoded code point (>= U+0080) must be shown escaped. C1 controls
 * include U+009B, the 8-bit CSI that starts an ANSI sequence on terminals that
 * honour it. The bidi overrides and isolates (the "Trojan Source" characters)
 * reorder how the text around them is displayed, and the line and paragraph
 * separators display as line breaks in some renderers: both let a line look
 * like something it is not (an unprefixed line, a different command), so a
 * reader sees them named instead. */
static bool
textfmt_cp_needs_escape(uint32_t cp)
{
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

/* Decodes one well-formed UTF-8 sequence at s (len bytes available, s[0] >=
 * 0x80). Returns its length and sets *cp, or 0 when the bytes are not valid
 * UTF-8 (stray continuation, overlong form, surrogate, above U+10FFFF, or cut
 * short), in which case the caller shows s[0] as \xNN and moves on by one. */
static size_t
textfmt_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
  unsigned char b = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
  uint32_t c;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
    c = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    c = b & 0x0F;
    if (b == 0xE0)
      lo = 0xA0; /* overlong */
    else if (b == 0xED)
      hi = 0x9F; /* surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    c = b & 0x07;
    if (b == 0xF0)
      lo = 0x90; /* overlong */
    else if (b == 0xF4)
      hi = 0x8F; /* above U+10FFFF */
  } else {
    return 0;
  }
  if (len < n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3F);
  }
  *cp = c;
  return n;
}

/* Appends the escape for one byte below 0x20 or 0x7F, or an invalid byte. */
static void
textfmt_escape_byte(StrBuf *out, unsigned char b)
{
  switch (b) {
  case '\t':
    strbuf_append(out, "\\t", 2);
    return;
  case '\n':
    strbuf_append(out, "\\n", 2);
    return;
  case '\r':
    strbuf_append(out, "\\r", 2);
    return;
  case 0x1B:
    strbuf_append(out, "\\e", 2);
    return;
  default: {
    char esc[4] = {'\\', 'x', textfmt_hex[b >> 4], textfmt_hex[b & 0xF]};
    strbuf_append(out, esc, sizeof esc);
    return;
  }
  }
}

/* See textfmt.h. Safe bytes are copied in runs, so plain text costs one
 * append per stretch rather than one per byte. */
void
textfmt_escape(StrBuf *out, const char *text, size_t len)
{
  const unsigned char *s = (const unsigned char *)text;
  size_t run = 0; /* start of the pending run of bytes that pass through */
  size_t i = 0;
  while (i < len) {
    unsigned char b = s[i];
    if (b >= 0x20 && b < 0x7F) {
      i++;
      continue;
    }
    if (b >= 0x80) {
      uint32_t cp = 0;
      size_t n = textfmt_utf8_decode(s + i, len - i, &cp);
      if (n > 0 && !textfmt_cp_needs_escape(cp)) {
        i += n;
        continue;
      }
      strbuf_append(out, text + run, i - run);
      if (n > 0)
        strbuf_printf(out, "\\u{%x}", (unsigned)cp);
      else
        textfmt_escape_byte(out, b);
      i += n > 0 ? n : 1;
      run = i;
      continue;
    }
    strbuf_append(out, text + run, i - run);
    textfmt_escape_byte(out, b);
    i++;
    run = i;
  }
  strbuf_append(out, text + run, len - run);
}

/* See textfmt.h. The offset is the one in force at that instant (tm_gmtoff),
 * so a timestamp from before a DST change carries its own offset. An instant
 * the C library cannot represent is shown as "@<ms>" rather than a wrong
 * date. Offsets with a seconds part (pre-1900 local mean time) lose it, as
 * RFC 3339 has no place for it. */
void
textfmt_time(StrBuf *out, int64_t epoch_ms)
{
  int64_t secs = epoch_ms / 1000;
  int64_t ms = epoch_ms % 1000;
  if (ms < 0) { /* floor, so 1969 instants keep a positive millisecond part */
    ms += 1000;
    secs--;
  }
  time_t t = (time_t)secs;
  struct tm tm;
  if (localtime_r(&t, &tm) == NULL) {
    strbuf_printf(out, "@%lld", (long long)epoch_ms);
    return;
  }
  long off = tm.tm_gmtoff;
  char sign = off < 0 ? '-' : '+';
  if (off < 0)
    off = -off;
  strbuf_printf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02ld:%02ld", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms, sign,
                off / 3600, (off % 3600) / 60);
}

/* Fills buf from /dev/urandom; false if it cannot be opened or read. */
static bool
textfmt_urandom(unsigned char *buf, size_t len)
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

/* Fills buf with len bytes from the OS's random source, or aborts. getrandom
 * with GRND_NONBLOCK never blocks the loop: it fails with EAGAIN only before
 * the kernel's pool is first seeded (early boot) and with ENOSYS on kernels
 * before 3.17; /dev/urandom covers both (its early-boot output is still
 * unpredictable to the process we are watching, which is what matters). With
 * neither there is no safe nonce, so vigil stops rather than run forgeable. */
static void
textfmt_random(void *buf, size_t len)
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
  if (got < len && !textfmt_urandom(p + got, len - got)) {
    fprintf(stderr, "vigil: no source of randomness (getrandom: %s; /dev/urandom: %s)\n",
            strerror(err), strerror(errno));
    abort();
  }
}

/* See textfmt.h. */
void
textfmt_nonce(char *out, size_t nbytes)
{
  unsigned char raw[64];
  size_t done = 0;
  while (done < nbytes) { /* in chunks, so any nbytes works without a heap copy */
    size_t n = nbytes - done < sizeof raw ? nbytes - done : sizeof raw;
    textfmt_random(raw, n);
    for (size_t i = 0; i < n; i++) {
      out[2 * (done + i)] = textfmt_hex[raw[i] >> 4];
      out[2 * (done + i) + 1] = textfmt_hex[raw[i] & 0xF];
    }
    done += n;
  }
  out[2 * nbytes] = '\0';
}

/* See textfmt.h. 12 base-36 digits are drawn from one 64-bit value with
 * rejection sampling: values at or above the largest multiple of 36^12 that
 * fits in 64 bits are redrawn (about 1 in 4), so every id is exactly equally
 * likely. */
void
textfmt_monitor_id(char *out)
{
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint64_t space = 1;
  for (int i = 0; i < 12; i++)
    space *= 36;
  uint64_t limit = (UINT64_MAX / space) * space;
  uint64_t v;
  do
    textfmt_random(&v, sizeof v);
  while (v >= limit);
  memcpy(out, "mon_", 4);
  for (int i = 0; i < 12; i++) {
    out[4 + i] = digits[v % 36];
    v /= 36;
  }
  out[16] = '\0';
}

/* See textfmt.h. */
int64_t
textfmt_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* See textfmt.h. Two units at most, the smaller zero-padded, so widths stay
 * steady in a list and "2h05m" cannot be misread as 2h50m. */
void
textfmt_duration(StrBuf *out, uint64_t ms)
{
  unsigned long long v = ms;
  if (v < 1000)
    strbuf_printf(out, "%llums", v);
  else if (v < 60ULL * 1000)
    strbuf_printf(out, "%llu.%llus", v / 1000, v % 1000 / 100);
  else if (v < 3600ULL * 1000)
    strbuf_printf(out, "%llum%02llus", v / 60000, v / 1000 % 60);
  else if (v < 86400ULL * 1000)
    strbuf_printf(out, "%lluh%02llum", v / 3600000, v / 60000 % 60);
  else
    strbuf_printf(out, "%llud%02lluh", v / 86400000, v / 3600000 % 24);
}
