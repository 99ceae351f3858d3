/*
 * libFuzzer harness for what a WebSocket server sends (core/source/wsframe.c,
 * wshandshake.c): the first byte chooses a chunk size, then the rest is an
 * answer's head and frames. The head is checked as the client checks it
 * (wshandshake_head_len, wshandshake_check with a fixed key); the bytes are
 * fed to the frame decoder in chunks and whole. Both feedings must agree
 * (the same data bytes, messages, pings, close code, and the same verdict),
 * a control payload never exceeds 125 bytes, and a decoder that reported an
 * error reports why.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Icore \
 *   tests/fuzz/fuzz_wsframe.c core/source/wsframe.c core/source/wshandshake.c \
 *   core/base/random.c core/base/strbuf.c core/base/memory.c
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/wsframe.h"
#include "source/wshandshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  uint64_t bytes;
  uint64_t hash;
  uint64_t messages;
  uint64_t pings;
  int close_code;
} FuzzSeen;

static void
fuzz_hash(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 1099511628211ull;
  }
}

static void
fuzz_data(void *ctx, const char *buf, size_t len)
{
  FuzzSeen *s = ctx;
  s->bytes += len;
  fuzz_hash(&s->hash, buf, len);
}

static void
fuzz_end(void *ctx)
{
  FuzzSeen *s = ctx;
  s->messages++;
  fuzz_hash(&s->hash, "|", 1);
}

static void
fuzz_ping(void *ctx, const unsigned char *payload, size_t len)
{
  FuzzSeen *s = ctx;
  if (len > WS_CONTROL_MAX)
    abort();
  s->pings++;
  fuzz_hash(&s->hash, payload, len);
}

static void
fuzz_close(void *ctx, int code)
{
  FuzzSeen *s = ctx;
  if (code < -1 || code > 65535)
    abort();
  s->close_code = code;
}

static const WsFrameCallbacks fuzz_cbs = {fuzz_data, fuzz_end, fuzz_ping, fuzz_close};

static int
fuzz_feed(const uint8_t *data, size_t size, size_t chunk, FuzzSeen *seen, WsDecoder *d)
{
  wsframe_decoder_init(d);
  memset(seen, 0, sizeof *seen);
  seen->close_code = -2;
  for (size_t at = 0; at < size; at += chunk) {
    size_t n = size - at < chunk ? size - at : chunk;
    if (wsframe_feed(d, (const char *)data + at, n, &fuzz_cbs, seen) != 0) {
      if (d->why[0] == '\0')
        abort();
      return -1;
    }
  }
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  size_t chunk = (size_t)data[0] % 17 + 1;
  data++, size--;

  size_t head = wshandshake_head_len((const char *)data, size);
  if (head > size)
    abort();
  if (head > 0)
    (void)wshandshake_check((const char *)data, head, "dGhlIHNhbXBsZSBub25jZQ==");

  FuzzSeen a, b;
  WsDecoder da, db;
  int ra = fuzz_feed(data, size, chunk, &a, &da);
  int rb = fuzz_feed(data, size, size > 0 ? size : 1, &b, &db);
  if (ra != rb)
    abort();
  if (ra == 0 && (a.bytes != b.bytes || a.hash != b.hash || a.messages != b.messages ||
                  a.pings != b.pings || a.close_code != b.close_code))
    abort();
  return 0;
}
