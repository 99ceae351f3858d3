/*
 * Writes a realistic application log to stdout as fast as the pipe takes it:
 * timestamped INFO/DEBUG/WARN lines from an HTTP service, a database pool and
 * a job runner, and, rarely, a crash line the default patterns catch
 * ("Error:", "panic:", "uncaught", "UnhandledPromiseRejection"). The text is
 * generated once (a few MiB, deterministic) and written repeatedly until the
 * requested size, so the writer costs almost nothing and the reader is what
 * gets measured.
 *
 *   gen_log [BYTES]   (default 400 MiB; suffixes k, m, g)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK_BYTES (4u << 20)

static uint64_t gen_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: deterministic, so every run writes the same log. */
static uint32_t
gen_rand(uint32_t n)
{
  gen_state ^= gen_state >> 12;
  gen_state ^= gen_state << 25;
  gen_state ^= gen_state >> 27;
  return (uint32_t)((gen_state * 0x2545f4914f6cdd1dull) >> 33) % n;
}

static const char *const methods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
static const char *const paths[] = {"/api/v1/users", "/api/v1/orders", "/static/app.js",
                                    "/healthz", "/api/v1/search", "/login"};
static const char *const levels[] = {"INFO ", "INFO ", "DEBUG", "DEBUG", "WARN "};
static const char *const crashes[] = {
  "Error: connect ECONNREFUSED 127.0.0.1:5432",
  "panic: runtime error: index out of range [3] with length 3",
  "TypeError: Cannot read properties of undefined (uncaught exception in handler)",
  "UnhandledPromiseRejectionWarning: Error: timeout of 5000ms exceeded",
};

static size_t
gen_line(char *out, size_t cap, unsigned n)
{
  unsigned ms = n * 7u;
  int len;
  if (gen_rand(20000) == 0) {
    /* A crash line starts at column 0, as crash output does. */
    len = snprintf(out, cap, "%s\n", crashes[gen_rand(4)]);
  } else if (gen_rand(3) == 0) {
    len = snprintf(out, cap,
                   "2026-11-21T10:%02u:%02u.%03uZ %s [db] pool=main active=%u idle=%u wait=%ums "
                   "query=\"SELECT id, name FROM users WHERE org_id = $1\"\n",
                   (ms / 60000) % 60, (ms / 1000) % 60, ms % 1000, levels[gen_rand(5)],
                   gen_rand(32), gen_rand(16), gen_rand(50));
  } else {
    len = snprintf(out, cap,
                   "2026-11-21T10:%02u:%02u.%03uZ %s [http] %s %s/%u %u %u.%ums "
                   "ua=\"Mozilla/5.0 (X11; Linux x86_64)\" req=%08x\n",
                   (ms / 60000) % 60, (ms / 1000) % 60, ms % 1000, levels[gen_rand(5)],
                   methods[gen_rand(6)], paths[gen_rand(6)], gen_rand(100000),
                   gen_rand(10) ? 200 : 404, gen_rand(200), gen_rand(10), gen_rand(1u << 31));
  }
  return len > 0 ? (size_t)len : 0;
}

static uint64_t
gen_parse_size(const char *s)
{
  char *end;
  uint64_t v = strtoull(s, &end, 10);
  switch (*end) {
  case 'k': case 'K': return v << 10;
  case 'm': case 'M': return v << 20;
  case 'g': case 'G': return v << 30;
  default: return v;
  }
}

int
main(int argc, char **argv)
{
  uint64_t total = argc > 1 ? gen_parse_size(argv[1]) : 400ull << 20;
  char *block = malloc(BLOCK_BYTES + 512);
  size_t len = 0;
  unsigned n = 0;
  /* Whole lines only, so the block can repeat without splitting one. */
  while (len < BLOCK_BYTES) {
    char line[512];
    size_t l = gen_line(line, sizeof line, n++);
    if (len + l > BLOCK_BYTES)
      break;
    memcpy(block + len, line, l);
    len += l;
  }
  uint64_t written = 0;
  while (written < total) {
    size_t want = len;
    if (total - written < want) {
      /* Cut the last block at a line end. */
      want = (size_t)(total - written);
      while (want > 0 && block[want - 1] != '\n')
        want--;
      if (want == 0)
        break;
    }
    size_t off = 0;
    while (off < want) {
      ssize_t w = write(1, block + off, want - off);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return errno == EPIPE ? 0 : 1;
      }
      off += (size_t)w;
    }
    written += want;
    if (want < len)
      break;
  }
  free(block);
  return 0;
}
