/*
 * libFuzzer harness for the msgpack-rpc decoder. The first bytes choose the
 * size limit (small, so the size checks trip), a cycle of chunk sizes and
 * an optional well-formed message put in front of the rest (so good
 * messages and their neighbours are reached even from text-like inputs).
 * The stream is fed in those chunks and drained after each feed until
 * kDecodeNeedMore or kDecodeFatal. A message over the limit must be skipped
 * (kDecodeTooBig, limit_exceeded) with the stream going on. Every good
 * message must have the shape
 * decoder.h promises (method at most 100 bytes, params a map with string
 * keys or none, a msgid on every request), every error must be set and
 * named, nothing is decoded after a fatal result, an unfinished message
 * never holds more than the limit in the buffer, and the same stream fed whole must give the
 * same outcomes.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Icore \
 *   tests/fuzz/fuzz_rpc_decoder.c core/rpc/decoder.c core/base/error.c \
 *   core/base/memory.c core/base/strbuf.c $(pkg-config --cflags --libs msgpack)
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/decoder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEED(lit) lit, sizeof lit - 1

/* Well-formed messages one of which may lead the stream. */
static const struct {
  const char *bytes;
  size_t len;
} fuzz_seeds[] = {
  {SEED("\x94\x00\x07\xa4ping\x90")},
  {SEED("\x94\x00\x01\xa4ping\x91\x80")},
  {SEED("\x93\x02\xa6status\x91\x81\xa1k\x01")},
  {SEED("\x94\x00\xce\xff\xff\xff\xff\xc4\x04ping\x91\x82\xa1" "a\x92\x01\xc0\xa1" "b\xcb\x3f\xf0\0\0\0\0\0\0")},
  {SEED("\x94\x01\x05\xc0\x80")},
  {SEED("\x94\x00\x09\xa1m\x91\x81\xa3pad\xda\x00\x20" "0123456789abcdef0123456789abcdef")},
  {SEED("\x94\x00\x02\xa1m\x91\x81\xa1x\x91\x91\x91\x91\x91\x91\x91\x91\x90")},
};

/* What one run saw, to compare chunked and whole feeding. */
typedef struct {
  uint64_t hash;
  uint64_t results;
  bool fatal;
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

/* Checks a good message against decoder.h's promises; aborts on a breach. */
static void
fuzz_check_message(const RpcMessage *m)
{
  if (m->type == kRpcResponse)
    return;
  if (m->type != kRpcRequest && m->type != kRpcNotification)
    abort();
  if (m->method_len > RPC_METHOD_MAX || (m->method == NULL && m->method_len > 0))
    abort();
  if (m->type == kRpcRequest && !m->has_msgid)
    abort();
  if (m->type == kRpcNotification && m->has_msgid)
    abort();
  if (m->args != NULL) {
    if (m->args->type != MSGPACK_OBJECT_MAP)
      abort();
    for (uint32_t i = 0; i < m->args->via.map.size; i++)
      if (m->args->via.map.ptr[i].key.type != MSGPACK_OBJECT_STR)
        abort();
  }
}

/* Drains every result now available and folds it into seen. */
static void
fuzz_drain(RpcDecoder *d, FuzzSeen *seen, size_t limit)
{
  for (;;) {
    RpcMessage msg;
    VigilError err = VIGIL_ERROR_INIT;
    RpcDecodeResult r = rpc_decoder_next(d, &msg, &err);
    if (seen->fatal) {
      /* Dead for good: the same answer, and nothing buffered. */
      if (r != kDecodeFatal || !err.set || rpc_decoder_buffered(d) != 0)
        abort();
      return;
    }
    if (r == kDecodeNeedMore) {
      /* An unfinished message is never kept past the limit. */
      if (err.set || rpc_decoder_buffered(d) > limit)
        abort();
      return;
    }
    seen->results++;
    fuzz_hash(&seen->hash, &r, sizeof r);
    if (r == kDecodeMessage) {
      if (err.set)
        abort();
      fuzz_check_message(&msg);
      fuzz_hash(&seen->hash, &msg.type, sizeof msg.type);
      fuzz_hash(&seen->hash, &msg.msgid, sizeof msg.msgid);
      if (msg.method)
        fuzz_hash(&seen->hash, msg.method, msg.method_len);
      continue;
    }
    if (r == kDecodeTooBig) {
      /* Skipped and survived: named, and answerable only by what its
       * first bytes said. */
      if (!err.set || strncmp(err.msg, "limit_exceeded: message: ", 25) != 0 ||
          (msg.has_msgid && msg.type == kRpcNotification))
        abort();
      fuzz_hash(&seen->hash, err.msg, strlen(err.msg));
      fuzz_hash(&seen->hash, &msg.type, sizeof msg.type);
      fuzz_hash(&seen->hash, &msg.msgid, sizeof msg.msgid);
      continue;
    }
    if (!err.set || strncmp(err.msg, "invalid_params: ", 16) != 0)
      abort();
    fuzz_hash(&seen->hash, err.msg, strlen(err.msg));
    if (r == kDecodeBadShape) {
      fuzz_hash(&seen->hash, &msg.has_msgid, sizeof msg.has_msgid);
      continue;
    }
    if (r != kDecodeFatal)
      abort();
    if (rpc_decoder_buffered(d) != 0)
      abort();
    seen->fatal = true;
    return;
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  enum { kHeader = 5 };
  if (size < kHeader)
    return 0;
  /* Byte 0: the limit. Bytes 1..3: chunk sizes (0 means 1). Byte 4: with
   * its high bit set, 1 + bits 4..5 copies of seed (byte 4 % seeds) lead
   * the stream, and with bit 3 also set, the first two bytes after the
   * header flip one bit pattern inside those copies (a well-formed message
   * broken in one place). */
  static const size_t limits[] = {16, 40, 64, 256, 4096};
  size_t limit = limits[data[0] % (sizeof limits / sizeof limits[0])];
  size_t chunks[3];
  for (size_t i = 0; i < 3; i++)
    chunks[i] = data[1 + i] ? data[1 + i] : 1;
  const uint8_t *body = data + kHeader;
  size_t body_len = size - kHeader;
  size_t nseeds = sizeof fuzz_seeds / sizeof fuzz_seeds[0];
  size_t seed = data[4] % nseeds;
  size_t copies = (data[4] & 0x80) ? 1 + ((data[4] >> 4) & 3u) : 0;
  size_t lead = copies * fuzz_seeds[seed].len;
  size_t len = lead + body_len;
  char *stream = malloc(len ? len : 1);
  if (stream == NULL)
    abort();
  for (size_t i = 0; i < copies; i++)
    memcpy(stream + i * fuzz_seeds[seed].len, fuzz_seeds[seed].bytes, fuzz_seeds[seed].len);
  if (body_len)
    memcpy(stream + lead, body, body_len);
  if (lead > 0 && (data[4] & 0x08) && body_len >= 2)
    stream[body[0] % lead] ^= (char)(body[1] | 1);

  FuzzSeen chunked = {1469598103934665603ull, 0, false};
  RpcDecoder *d = rpc_decoder_new(limit);
  size_t off = 0;
  for (size_t turn = 0; off < len; turn++) {
    size_t n = chunks[turn % 3];
    if (n > len - off)
      n = len - off;
    /* A private copy, so a pointer kept past the call would be caught. */
    char *copy = malloc(n);
    if (copy == NULL)
      abort();
    memcpy(copy, stream + off, n);
    rpc_decoder_feed(d, copy, n);
    free(copy);
    off += n;
    fuzz_drain(d, &chunked, limit);
  }
  rpc_decoder_free(d);

  FuzzSeen whole = {1469598103934665603ull, 0, false};
  d = rpc_decoder_new(limit);
  rpc_decoder_feed(d, stream, len);
  fuzz_drain(d, &whole, limit);
  rpc_decoder_free(d);
  if (whole.hash != chunked.hash || whole.results != chunked.results ||
      whole.fatal != chunked.fatal)
    abort();
  free(stream);
  return 0;
}
