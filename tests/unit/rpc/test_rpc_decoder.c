/*
 * The msgpack-rpc decoder on its own: framing across feeds of any size, the
 * exact error each wrong shape gets (and whether its msgid was recovered),
 * the fatal limits (depth, bytes that are not msgpack), and the size limit:
 * a message over it is skipped as its bytes come, never buffered, and
 * answered once it has ended, so the connection lives on.
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rpc/decoder.h"

#define LIMIT 1024

/* A packer writing into a fresh sbuffer. */
typedef struct {
  msgpack_sbuffer sb;
  msgpack_packer pk;
} Pack;

static void
pack_init(Pack *p)
{
  msgpack_sbuffer_init(&p->sb);
  msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
}

static void
pack_str(Pack *p, const char *s)
{
  msgpack_pack_str(&p->pk, strlen(s));
  msgpack_pack_str_body(&p->pk, s, strlen(s));
}

static void
pack_free(Pack *p)
{
  msgpack_sbuffer_destroy(&p->sb);
}

/* Packs [0, msgid, method, [{}]] (or [] params when no_args). */
static void
pack_request(Pack *p, uint32_t msgid, const char *method, bool no_args)
{
  msgpack_pack_array(&p->pk, 4);
  msgpack_pack_int(&p->pk, 0);
  msgpack_pack_uint32(&p->pk, msgid);
  pack_str(p, method);
  msgpack_pack_array(&p->pk, no_args ? 0 : 1);
  if (!no_args)
    msgpack_pack_map(&p->pk, 0);
}

/* Feeds bytes whole and returns the first result of next. */
static RpcDecodeResult
decode_one(RpcDecoder *d, const void *data, size_t len, RpcMessage *msg, VigilError *err)
{
  rpc_decoder_feed(d, data, len);
  error_clear(err);
  return rpc_decoder_next(d, msg, err);
}

TEST(request_split_into_single_bytes)
{
  Pack p;
  pack_init(&p);
  msgpack_pack_array(&p.pk, 4);
  msgpack_pack_int(&p.pk, 0);
  msgpack_pack_uint32(&p.pk, 7);
  pack_str(&p, "ping");
  msgpack_pack_array(&p.pk, 1);
  msgpack_pack_map(&p.pk, 1);
  pack_str(&p, "session");
  pack_str(&p, "agent-1");
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  for (size_t i = 0; i + 1 < p.sb.size; i++) {
    rpc_decoder_feed(d, p.sb.data + i, 1);
    CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeNeedMore);
  }
  rpc_decoder_feed(d, p.sb.data + p.sb.size - 1, 1);
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.type, kRpcRequest);
  CHECK(msg.has_msgid);
  CHECK_INT(msg.msgid, 7);
  CHECK_MEM(msg.method, msg.method_len, "ping");
  CHECK(msg.args != NULL);
  if (msg.args) {
    CHECK_INT(msg.args->type, MSGPACK_OBJECT_MAP);
    CHECK_INT(msg.args->via.map.size, 1);
    CHECK_MEM(msg.args->via.map.ptr[0].val.via.str.ptr, msg.args->via.map.ptr[0].val.via.str.size,
              "agent-1");
  }
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeNeedMore);
  CHECK_INT(rpc_decoder_buffered(d), 0);
  CHECK(!err.set);
  rpc_decoder_free(d);
  pack_free(&p);
}

TEST(several_messages_in_one_feed)
{
  Pack p;
  pack_init(&p);
  pack_request(&p, 1, "ping", false);
  msgpack_pack_array(&p.pk, 3);
  msgpack_pack_int(&p.pk, 2);
  pack_str(&p, "nvim_set_client_info");
  msgpack_pack_array(&p.pk, 0);
  pack_request(&p, 4294967295u, "api_info", true);
  /* and the first byte of a fourth */
  msgpack_pack_array(&p.pk, 4);
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  rpc_decoder_feed(d, p.sb.data, p.sb.size);
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.type, kRpcRequest);
  CHECK_INT(msg.msgid, 1);
  CHECK_MEM(msg.method, msg.method_len, "ping");
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.type, kRpcNotification);
  CHECK(!msg.has_msgid);
  CHECK_MEM(msg.method, msg.method_len, "nvim_set_client_info");
  CHECK(msg.args == NULL);
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.type, kRpcRequest);
  CHECK_INT(msg.msgid, 4294967295u);
  CHECK_MEM(msg.method, msg.method_len, "api_info");
  CHECK(msg.args == NULL);
  CHECK_INT(rpc_decoder_next(d, &msg, &err), kDecodeNeedMore);
  CHECK_INT(rpc_decoder_buffered(d), 1);
  CHECK(!err.set);
  /* The rest of the fourth arrives later. */
  const char rest[] = "\x00\x05\xa1m\x90";
  CHECK_INT(decode_one(d, rest, sizeof rest - 1, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.msgid, 5);
  CHECK_MEM(msg.method, msg.method_len, "m");
  rpc_decoder_free(d);
  pack_free(&p);
}

/* One bad-shape case: the bytes, the exact message, the recovered msgid. */
typedef struct {
  const char *bytes;
  size_t len;
  const char *want;
  RpcType type;
  bool has_msgid;
  uint32_t msgid;
} BadCase;

#define BAD(b, w, t, h, id) {b, sizeof b - 1, w, t, h, id}

TEST(bad_shapes_have_exact_messages)
{
  static const BadCase cases[] = {
    BAD("\x81\xa1" "a\x01",
        "invalid_params: message: expected an array of 4 (request) or 3 (notification), got map",
        kRpcNotification, false, 0),
    BAD("\x90",
        "invalid_params: message: expected an array of 4 (request) or 3 (notification), got an "
        "empty array",
        kRpcNotification, false, 0),
    BAD("\xa4ping",
        "invalid_params: message: expected an array of 4 (request) or 3 (notification), got "
        "string",
        kRpcNotification, false, 0),
    BAD("\x94\x05\x01\xa1m\x90",
        "invalid_params: message: element 0 must be 0 (request), 1 (response) or 2 "
        "(notification), got 5",
        kRpcNotification, false, 0),
    BAD("\x94\xa1x\x01\xa1m\x90",
        "invalid_params: message: element 0 must be 0 (request), 1 (response) or 2 "
        "(notification), got \"x\"",
        kRpcNotification, false, 0),
    BAD("\x93\x00\x01\xa1m",
        "invalid_params: message: a request is [0, msgid, method, params], got an array of 3",
        kRpcRequest, true, 1),
    BAD("\x95\x00\x02\xa1m\x90\xc0",
        "invalid_params: message: a request is [0, msgid, method, params], got an array of 5",
        kRpcRequest, true, 2),
    BAD("\x94\x00\xff\xa1m\x90",
        "invalid_params: msgid: expected an unsigned 32-bit integer, got -1", kRpcRequest, false,
        0),
    BAD("\x94\x00\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xa1m\x90",
        "invalid_params: msgid: expected an unsigned 32-bit integer, got 4294967296", kRpcRequest,
        false, 0),
    BAD("\x94\x00\xa2id\xa1m\x90",
        "invalid_params: msgid: expected an unsigned 32-bit integer, got \"id\"", kRpcRequest,
        false, 0),
    BAD("\x94\x00\x09\x2a\x90", "invalid_params: method: expected a string, got integer",
        kRpcRequest, true, 9),
    BAD("\x94\x00\x09\xa1m\x92\x01\x02",
        "invalid_params: params: expected [] or [map], got [1, 2]", kRpcRequest, true, 9),
    BAD("\x94\x00\x09\xa1m\x81\xa1" "a\x01",
        "invalid_params: params: expected [] or [map], got {\"a\": 1}", kRpcRequest, true, 9),
    BAD("\x94\x00\x09\xa1m\xc0", "invalid_params: params: expected [] or [map], got nil",
        kRpcRequest, true, 9),
    BAD("\x94\x00\x09\xa1m\x91\x81\x01\x02",
        "invalid_params: params: every key must be a string, key 0 is an integer", kRpcRequest,
        true, 9),
    BAD("\x94\x00\x09\xa1m\x91\x82\xa1k\x01\xc4\x01k\x02",
        "invalid_params: params: every key must be a string, key 1 is a binary", kRpcRequest,
        true, 9),
    BAD("\x93\x02\xa1m\x91\x01", "invalid_params: params: expected [] or [map], got [1]",
        kRpcNotification, false, 0),
    BAD("\x92\x02\xa1m",
        "invalid_params: message: a notification is [2, method, params], got an array of 2",
        kRpcNotification, false, 0),
    BAD("\x93\x02\xc3\x90", "invalid_params: method: expected a string, got boolean",
        kRpcNotification, false, 0),
    BAD("\x93\x01\x03\xc0",
        "invalid_params: message: a response is [1, msgid, error, result], got an array of 3",
        kRpcResponse, true, 3),
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const BadCase *c = &cases[i];
    RpcDecoder *d = rpc_decoder_new(LIMIT);
    RpcMessage msg;
    VigilError err = VIGIL_ERROR_INIT;
    RpcDecodeResult r = decode_one(d, c->bytes, c->len, &msg, &err);
    if (r != kDecodeBadShape)
      fprintf(stderr, "  case %zu (%s)\n", i, c->want);
    CHECK_INT(r, kDecodeBadShape);
    CHECK_STR(err.msg, c->want);
    CHECK_INT(err.code, kErrInvalidParams);
    CHECK_INT(msg.type, c->type);
    CHECK_INT(msg.has_msgid, c->has_msgid);
    if (c->has_msgid)
      CHECK_INT(msg.msgid, c->msgid);
    /* A bad shape is consumed; the stream goes on. */
    CHECK_INT(rpc_decoder_buffered(d), 0);
    const char good[] = "\x93\x02\xa2ok\x90";
    CHECK_INT(decode_one(d, good, sizeof good - 1, &msg, &err), kDecodeMessage);
    CHECK_MEM(msg.method, msg.method_len, "ok");
    rpc_decoder_free(d);
  }
}

TEST(long_values_are_quoted_short)
{
  /* params: [1, 2, ..., 200] quotes only its start */
  Pack p;
  pack_init(&p);
  msgpack_pack_array(&p.pk, 4);
  msgpack_pack_int(&p.pk, 0);
  msgpack_pack_int(&p.pk, 3);
  pack_str(&p, "m");
  msgpack_pack_array(&p.pk, 200);
  for (int i = 0; i < 200; i++)
    msgpack_pack_int(&p.pk, i);
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(decode_one(d, p.sb.data, p.sb.size, &msg, &err), kDecodeBadShape);
  CHECK_CONTAINS(err.msg, "invalid_params: params: expected [] or [map], got [0, 1, 2, 3, ");
  CHECK_CONTAINS(err.msg, "...]");
  CHECK(strlen(err.msg) < 200);
  CHECK_INT(msg.msgid, 3);
  rpc_decoder_free(d);
  pack_free(&p);
}

TEST(method_as_bin_accepted_and_length_bounded)
{
  char method[RPC_METHOD_MAX + 50];
  memset(method, 'm', sizeof method);
  size_t lens[] = {0, 1, RPC_METHOD_MAX, RPC_METHOD_MAX + 1, 150};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    for (int as_bin = 0; as_bin < 2; as_bin++) {
      Pack p;
      pack_init(&p);
      msgpack_pack_array(&p.pk, 4);
      msgpack_pack_int(&p.pk, 0);
      msgpack_pack_int(&p.pk, 11);
      if (as_bin) {
        msgpack_pack_bin(&p.pk, lens[i]);
        msgpack_pack_bin_body(&p.pk, method, lens[i]);
      } else {
        msgpack_pack_str(&p.pk, lens[i]);
        msgpack_pack_str_body(&p.pk, method, lens[i]);
      }
      msgpack_pack_array(&p.pk, 0);
      RpcDecoder *d = rpc_decoder_new(LIMIT);
      RpcMessage msg;
      VigilError err = VIGIL_ERROR_INIT;
      RpcDecodeResult r = decode_one(d, p.sb.data, p.sb.size, &msg, &err);
      if (lens[i] <= RPC_METHOD_MAX) {
        CHECK_INT(r, kDecodeMessage);
        CHECK_INT(msg.method_len, lens[i]);
        CHECK(lens[i] == 0 || memcmp(msg.method, method, lens[i]) == 0);
      } else {
        char want[128];
        snprintf(want, sizeof want, "invalid_params: method: at most 100 bytes, got %zu", lens[i]);
        CHECK_INT(r, kDecodeBadShape);
        CHECK_STR(err.msg, want);
        CHECK(msg.has_msgid);
        CHECK_INT(msg.msgid, 11);
      }
      rpc_decoder_free(d);
      pack_free(&p);
    }
  }
}

TEST(responses_are_reported_as_responses)
{
  const char resp[] = "\x94\x01\x0c\xc0\x80";
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(decode_one(d, resp, sizeof resp - 1, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.type, kRpcResponse);
  CHECK(msg.has_msgid);
  CHECK_INT(msg.msgid, 12);
  CHECK(msg.method == NULL);
  rpc_decoder_free(d);
}

/* Packs [0, 1, "m", [{"pad": <n bytes>}]]. */
static void
pack_padded(Pack *p, size_t n)
{
  char *pad = malloc(n + 1);
  memset(pad, 'x', n);
  pad[n] = '\0';
  pack_init(p);
  msgpack_pack_array(&p->pk, 4);
  msgpack_pack_int(&p->pk, 0);
  msgpack_pack_int(&p->pk, 1);
  pack_str(p, "m");
  msgpack_pack_array(&p->pk, 1);
  msgpack_pack_map(&p->pk, 1);
  pack_str(p, "pad");
  pack_str(p, pad);
  free(pad);
}

/* Feeds data in chunks of `chunk` bytes, calling next after each, until a
 * result other than kDecodeNeedMore; checks on the way that the decoder
 * never holds more than `most` bytes. Returns that result (kDecodeNeedMore
 * if all was fed) and how much was fed in *fed. */
static RpcDecodeResult
feed_until(RpcDecoder *d, const char *data, size_t len, size_t chunk, size_t most, size_t *fed,
           RpcMessage *msg, VigilError *err)
{
  RpcDecodeResult r = kDecodeNeedMore;
  *fed = 0;
  while (r == kDecodeNeedMore && *fed < len) {
    size_t n = len - *fed < chunk ? len - *fed : chunk;
    rpc_decoder_feed(d, data + *fed, n);
    *fed += n;
    error_clear(err);
    r = rpc_decoder_next(d, msg, err);
    if (rpc_decoder_buffered(d) > most) {
      check_fail(__FILE__, __LINE__, "%zu bytes buffered after %zu fed, at most %zu wanted",
                 rpc_decoder_buffered(d), *fed, most);
      break;
    }
  }
  return r;
}

TEST(message_of_exactly_the_limit_accepted_one_over_skipped_and_answered)
{
  Pack p;
  size_t n = LIMIT;
  for (;;) {
    pack_padded(&p, n);
    if (p.sb.size <= LIMIT)
      break;
    pack_free(&p);
    n--;
  }
  CHECK_INT(p.sb.size, LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, p.sb.data, p.sb.size, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.args->via.map.ptr[0].val.via.str.size, n);
  rpc_decoder_free(d);

  /* The same message against a limit one byte smaller: the string header
   * shows it cannot fit, so its bytes are skipped as they come, never
   * buffered (at most the header being read), and once the message has
   * ended it is answered with its size; the connection goes on. */
  d = rpc_decoder_new(LIMIT - 1);
  size_t fed;
  RpcDecodeResult r = feed_until(d, p.sb.data, p.sb.size, 1, 16, &fed, &msg, &err);
  CHECK_INT(r, kDecodeTooBig);
  CHECK_INT(fed, p.sb.size);
  CHECK_INT(msg.type, kRpcRequest);
  CHECK(msg.has_msgid);
  CHECK_INT(msg.msgid, 1);
  CHECK_STR(err.msg, "limit_exceeded: message: 1024 bytes, over rpc.max_message_bytes (1023); "
                     "it was skipped unread");
  Pack ping;
  pack_init(&ping);
  pack_request(&ping, 2, "ping", true);
  CHECK_INT(decode_one(d, ping.sb.data, ping.sb.size, &msg, &err), kDecodeMessage);
  CHECK_INT(msg.msgid, 2);
  CHECK_INT(rpc_decoder_buffered(d), 0);
  rpc_decoder_free(d);
  pack_free(&ping);
  pack_free(&p);
}

TEST(huge_declared_lengths_are_skipped_without_buffering)
{
  static const struct {
    const char *bytes;
    size_t len;
    bool endless;   /* 4 MiB of filler cannot end it */
    bool msgid;     /* the msgid comes before the huge part */
  } cases[] = {
    {"\x94\x00\x07\xdb\xff\xff\xff\xff", 8, true, true},     /* str32 of 4 GiB as the method */
    {"\x94\x00\x07\xc6\x00\x10\x00\x00", 8, false, true},    /* bin32 of 1 MiB */
    {"\x94\x00\x07\xc9\x7f\xff\xff\xff\x01", 9, true, true}, /* ext32 */
    {"\xdd\xff\xff\xff\xff", 5, true, false},                /* array32 of 4 billion */
    {"\xdf\xff\xff\xff\xff", 5, true, false},                /* map32 of 4 billion entries */
    {"\x94\x00\x07\xa1m\xdc\x04\x01", 8, false, true},       /* array16 of 1025 */
    {"\x94\x00\x07\xa1m\x91\xde\x02\x00", 9, false, true},   /* map16 of 512 entries: 1024 bytes at least */
  };
  static char filler[65536];
  memset(filler, 0x01, sizeof filler); /* positive fixints: one element a byte */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    RpcDecoder *d = rpc_decoder_new(LIMIT);
    RpcMessage msg;
    VigilError err = VIGIL_ERROR_INIT;
    CHECK_INT(decode_one(d, cases[i].bytes, cases[i].len, &msg, &err), kDecodeNeedMore);
    CHECK(!err.set);
    /* Up to 4 MiB more of it: nothing is kept while it lasts. */
    RpcDecodeResult r = kDecodeNeedMore;
    for (int k = 0; k < 64 && r == kDecodeNeedMore; k++) {
      rpc_decoder_feed(d, filler, sizeof filler);
      r = rpc_decoder_next(d, &msg, &err);
      if (r == kDecodeNeedMore)
        CHECK(rpc_decoder_buffered(d) <= 16);
    }
    if (cases[i].endless) {
      CHECK_INT(r, kDecodeNeedMore);
    } else {
      CHECK_INT(r, kDecodeTooBig);
      CHECK(msg.has_msgid && msg.msgid == 7);
      CHECK_CONTAINS(err.msg, "limit_exceeded: message: ");
    }
    rpc_decoder_free(d);
  }
  /* A bin32 of 1 MiB that does end is answered, with its exact size. */
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(decode_one(d, "\x94\x00\x07\xc6\x00\x10\x00\x00", 8, &msg, &err), kDecodeNeedMore);
  RpcDecodeResult r = kDecodeNeedMore;
  for (int k = 0; k < 16 && r == kDecodeNeedMore; k++) {
    rpc_decoder_feed(d, filler, sizeof filler);
    r = rpc_decoder_next(d, &msg, &err);
  }
  CHECK_INT(r, kDecodeNeedMore); /* the method is there; params are not */
  CHECK_INT(decode_one(d, "\x90", 1, &msg, &err), kDecodeTooBig);
  CHECK(msg.has_msgid && msg.msgid == 7);
  CHECK_CONTAINS(err.msg, "message: 1048585 bytes, over rpc.max_message_bytes (1024)");
  rpc_decoder_free(d);
  /* The same limit holds the other way round: a map16 of 500 entries (1000
   * bytes at least) is still possible, so it waits for more. */
  d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, "\x94\x00\x01\xa1m\x91\xde\x01\xf4", 9, &msg, &err), kDecodeNeedMore);
  rpc_decoder_free(d);
}

TEST(message_growing_past_the_limit_is_skipped_and_answered)
{
  /* Each element is small, so no single header is too big; the message
   * grows past the limit. From then on its bytes are dropped as they come
   * (the buffer never holds limit + a chunk), and when it ends the request
   * is answered; the next message decodes. */
  Pack p;
  pack_init(&p);
  msgpack_pack_array(&p.pk, 4);
  msgpack_pack_int(&p.pk, 0);
  msgpack_pack_uint32(&p.pk, 70000);
  pack_str(&p, "m");
  msgpack_pack_array(&p.pk, 1);
  msgpack_pack_map(&p.pk, 100);
  for (int i = 0; i < 100; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%02d", i);
    pack_str(&p, key);
    pack_str(&p, "0123456789abcdef0123");
  }
  size_t size = p.sb.size;
  CHECK(size > 2 * LIMIT);
  pack_request(&p, 9, "ping", true);
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  size_t fed;
  RpcDecodeResult r = feed_until(d, p.sb.data, p.sb.size, 7, LIMIT + 7, &fed, &msg, &err);
  CHECK_INT(r, kDecodeTooBig);
  CHECK(fed >= size && fed < size + 7);
  CHECK(msg.type == kRpcRequest && msg.has_msgid && msg.msgid == 70000);
  char want[128];
  snprintf(want, sizeof want, "limit_exceeded: message: %zu bytes, over rpc.max_message_bytes "
           "(1024); it was skipped unread", size);
  CHECK_STR(err.msg, want);
  /* What is left of the last chunk is the start of the ping. */
  size_t at = fed;
  r = rpc_decoder_next(d, &msg, &err);
  if (r == kDecodeNeedMore)
    r = feed_until(d, p.sb.data + at, p.sb.size - at, 7, LIMIT, &fed, &msg, &err);
  CHECK_INT(r, kDecodeMessage);
  CHECK_INT(msg.msgid, 9);
  rpc_decoder_free(d);
  pack_free(&p);
}

TEST(an_oversized_notification_or_response_is_skipped_too)
{
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  /* [2, "m", [{"p": bin 2000}]] */
  static char body[2000];
  CHECK_INT(decode_one(d, "\x93\x02\xa1m\x91\x81\xa1p\xc5\x07\xd0", 11, &msg, &err),
            kDecodeNeedMore);
  CHECK_INT(decode_one(d, body, sizeof body, &msg, &err), kDecodeTooBig);
  CHECK_INT(msg.type, kRpcNotification);
  CHECK(!msg.has_msgid);
  /* [1, 5, nil, "x" * 2000] */
  CHECK_INT(decode_one(d, "\x94\x01\x05\xc0\xda\x07\xd0", 7, &msg, &err), kDecodeNeedMore);
  CHECK_INT(decode_one(d, body, sizeof body, &msg, &err), kDecodeTooBig);
  CHECK_INT(msg.type, kRpcResponse);
  CHECK(msg.has_msgid && msg.msgid == 5);
  /* Something that is not even an array has nobody to answer. */
  CHECK_INT(decode_one(d, "\xc5\x07\xd0", 3, &msg, &err), kDecodeNeedMore);
  CHECK_INT(decode_one(d, body, sizeof body, &msg, &err), kDecodeTooBig);
  CHECK(!msg.has_msgid);
  rpc_decoder_free(d);
}

TEST(bad_bytes_inside_a_skipped_message_are_still_fatal)
{
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  /* [0, 1, "m", [array32 of 5000 ...: skipping, then 0xc1 */
  CHECK_INT(decode_one(d, "\x94\x00\x01\xa1m\xdd\x00\x00\x13\x88\x01\x02", 12, &msg, &err),
            kDecodeNeedMore);
  CHECK_INT(decode_one(d, "\x03\xc1", 2, &msg, &err), kDecodeFatal);
  CHECK_CONTAINS(err.msg, "not msgpack: reserved byte 0xc1");
  rpc_decoder_free(d);
  /* Nesting deeper than 32 levels inside a skipped message is fatal too. */
  d = rpc_decoder_new(LIMIT);
  char deep[64];
  memset(deep, 0x91, sizeof deep);
  CHECK_INT(decode_one(d, "\x94\x00\x01\xa1m\xdd\x00\x00\x13\x88", 10, &msg, &err),
            kDecodeNeedMore);
  CHECK_INT(decode_one(d, deep, sizeof deep, &msg, &err), kDecodeFatal);
  CHECK_CONTAINS(err.msg, "nested deeper than 32 levels");
  rpc_decoder_free(d);
}

/* Packs [0, 1, "m", [{"k": <levels nested arrays>}]]: 3 + levels deep. */
static void
pack_deep(Pack *p, int levels)
{
  pack_init(p);
  msgpack_pack_array(&p->pk, 4);
  msgpack_pack_int(&p->pk, 0);
  msgpack_pack_int(&p->pk, 1);
  pack_str(p, "m");
  msgpack_pack_array(&p->pk, 1);
  msgpack_pack_map(&p->pk, 1);
  pack_str(p, "k");
  for (int i = 0; i < levels; i++)
    msgpack_pack_array(&p->pk, i + 1 < levels ? 1 : 0);
}

TEST(depth_32_accepted_33_fatal)
{
  Pack p;
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  pack_deep(&p, RPC_MAX_DEPTH - 3);
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, p.sb.data, p.sb.size, &msg, &err), kDecodeMessage);
  CHECK(!err.set);
  rpc_decoder_free(d);
  pack_free(&p);

  pack_deep(&p, RPC_MAX_DEPTH - 2);
  d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, p.sb.data, p.sb.size, &msg, &err), kDecodeFatal);
  CHECK_STR(err.msg, "invalid_params: message nested deeper than 32 levels");
  rpc_decoder_free(d);
  pack_free(&p);

  /* Bare nesting: 32 arrays is a (badly shaped) message, 33 are fatal, even
   * when the innermost is a map and nothing follows the header yet. */
  char deep[40];
  memset(deep, 0x91, sizeof deep);
  deep[RPC_MAX_DEPTH - 1] = (char)0x90;
  error_clear(&err);
  d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, deep, RPC_MAX_DEPTH, &msg, &err), kDecodeBadShape);
  rpc_decoder_free(d);
  deep[RPC_MAX_DEPTH - 1] = (char)0x91;
  deep[RPC_MAX_DEPTH] = (char)0x81;
  error_clear(&err);
  d = rpc_decoder_new(LIMIT);
  CHECK_INT(decode_one(d, deep, RPC_MAX_DEPTH + 1, &msg, &err), kDecodeFatal);
  CHECK_STR(err.msg, "invalid_params: message nested deeper than 32 levels");
  rpc_decoder_free(d);
}

TEST(reserved_byte_is_fatal_and_later_bytes_ignored)
{
  RpcDecoder *d = rpc_decoder_new(LIMIT);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(decode_one(d, "\x94\x00\x01\xc1", 4, &msg, &err), kDecodeFatal);
  CHECK_STR(err.msg, "invalid_params: not msgpack: reserved byte 0xc1 at offset 3 of the message");
  /* A good message after the garbage does not revive the stream. */
  const char good[] = "\x93\x02\xa2ok\x90";
  CHECK_INT(decode_one(d, good, sizeof good - 1, &msg, &err), kDecodeFatal);
  CHECK_STR(err.msg, "invalid_params: not msgpack: reserved byte 0xc1 at offset 3 of the message");
  CHECK_INT(rpc_decoder_buffered(d), 0);
  rpc_decoder_free(d);

  /* Plain text is mostly valid msgpack: "ping\n" is five positive fixints,
   * so five messages of the wrong shape, each answered, none fatal. */
  d = rpc_decoder_new(LIMIT);
  rpc_decoder_feed(d, "ping\n", 5);
  int bad = 0;
  error_clear(&err);
  while (rpc_decoder_next(d, &msg, &err) == kDecodeBadShape) {
    bad++;
    error_clear(&err);
  }
  CHECK_INT(bad, 5);
  rpc_decoder_free(d);
}

TEST(every_msgpack_format_is_walked)
{
  /* An argument map whose values use every format, some in encodings a
   * packer would not choose (str32 for one byte), built by hand. */
  static const struct {
    const char *bytes;
    size_t len;
  } values[] = {
    {"\x00", 1}, {"\x7f", 1}, {"\xe0", 1}, {"\xc0", 1}, {"\xc2", 1}, {"\xc3", 1},
    {"\xcc\xff", 2}, {"\xcd\xff\xff", 3}, {"\xce\xff\xff\xff\xff", 5},
    {"\xcf\x00\x00\x00\x01\x00\x00\x00\x00", 9}, {"\xd0\x80", 2}, {"\xd1\x80\x00", 3},
    {"\xd2\x80\x00\x00\x00", 5}, {"\xd3\x80\x00\x00\x00\x00\x00\x00\x00", 9},
    {"\xca\x3f\x80\x00\x00", 5}, {"\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00", 9},
    {"\xa3" "abc", 4}, {"\xd9\x03" "abc", 5}, {"\xda\x00\x03" "abc", 6},
    {"\xdb\x00\x00\x00\x03" "abc", 8}, {"\xc4\x02\x00\xff", 4}, {"\xc5\x00\x02\x00\xff", 5},
    {"\xc6\x00\x00\x00\x02\x00\xff", 7}, {"\xd4\x01\xaa", 3}, {"\xd5\x01\xaa\xbb", 4},
    {"\xd6\x01\x01\x02\x03\x04", 6}, {"\xd7\x01\x01\x02\x03\x04\x05\x06\x07\x08", 10},
    {"\xd8\x01" "0123456789abcdef", 18}, {"\xc7\x02\x05\xaa\xbb", 5},
    {"\xc8\x00\x02\x05\xaa\xbb", 6}, {"\xc9\x00\x00\x00\x02\x05\xaa\xbb", 8},
    {"\x92\x01\x02", 3}, {"\xdc\x00\x02\x01\x02", 5}, {"\xdd\x00\x00\x00\x02\x01\x02", 7},
    {"\x81\xa1k\x01", 4}, {"\xde\x00\x01\xa1k\x01", 6}, {"\xdf\x00\x00\x00\x01\xa1k\x01", 8},
    {"\x90", 1}, {"\x80", 1}, {"\xdc\x00\x00", 3}, {"\xdf\x00\x00\x00\x00", 5},
  };
  size_t nvalues = sizeof values / sizeof values[0];
  char msgbuf[1024];
  size_t len = 0;
  memcpy(msgbuf, "\x94\x00\x2a\xa1m\x91\xde\x00", 8);
  len = 8;
  msgbuf[len++] = (char)nvalues;
  for (size_t i = 0; i < nvalues; i++) {
    len += (size_t)snprintf(msgbuf + len, sizeof msgbuf - len, "%c%02zu", 0xa2, i);
    memcpy(msgbuf + len, values[i].bytes, values[i].len);
    len += values[i].len;
  }
  /* Twice in a row: the walk must end exactly where the first one ends. */
  memcpy(msgbuf + len, msgbuf, len);
  for (size_t chunk = 1; chunk <= 2 * len; chunk = chunk * 3 + 1) {
    RpcDecoder *d = rpc_decoder_new(LIMIT);
    RpcMessage msg;
    VigilError err = VIGIL_ERROR_INIT;
    int good = 0;
    for (size_t off = 0; off < 2 * len; off += chunk) {
      size_t n = 2 * len - off < chunk ? 2 * len - off : chunk;
      rpc_decoder_feed(d, msgbuf + off, n);
      RpcDecodeResult r;
      while ((r = rpc_decoder_next(d, &msg, &err)) == kDecodeMessage) {
        good++;
        CHECK_INT(msg.msgid, 42);
        CHECK_INT(msg.args->via.map.size, nvalues);
        CHECK_INT(msg.args->via.map.ptr[nvalues - 1].val.type, MSGPACK_OBJECT_MAP);
        CHECK_INT(msg.args->via.map.ptr[19].val.type, MSGPACK_OBJECT_STR);
        CHECK_MEM(msg.args->via.map.ptr[19].val.via.str.ptr,
                  msg.args->via.map.ptr[19].val.via.str.size, "abc");
      }
      CHECK_INT(r, kDecodeNeedMore);
    }
    CHECK_INT(good, 2);
    CHECK(!err.set);
    CHECK_INT(rpc_decoder_buffered(d), 0);
    rpc_decoder_free(d);
  }
}

TEST(large_message_in_read_sized_chunks)
{
  size_t limit = 1 << 20;
  Pack p;
  pack_padded(&p, limit - 64);
  RpcDecoder *d = rpc_decoder_new(limit);
  RpcMessage msg;
  VigilError err = VIGIL_ERROR_INIT;
  int got = 0;
  for (int round = 0; round < 3; round++) {
    for (size_t off = 0; off < p.sb.size; off += 65536) {
      size_t n = p.sb.size - off < 65536 ? p.sb.size - off : 65536;
      rpc_decoder_feed(d, p.sb.data + off, n);
      CHECK(rpc_decoder_buffered(d) <= limit + 65536);
      while (rpc_decoder_next(d, &msg, &err) == kDecodeMessage) {
        got++;
        CHECK_INT(msg.args->via.map.ptr[0].val.via.str.size, limit - 64);
      }
    }
  }
  CHECK_INT(got, 3);
  CHECK(!err.set);
  CHECK_INT(rpc_decoder_buffered(d), 0);
  rpc_decoder_free(d);
  pack_free(&p);
}

int
main(void)
{
  RUN(request_split_into_single_bytes);
  RUN(several_messages_in_one_feed);
  RUN(bad_shapes_have_exact_messages);
  RUN(long_values_are_quoted_short);
  RUN(method_as_bin_accepted_and_length_bounded);
  RUN(responses_are_reported_as_responses);
  RUN(message_of_exactly_the_limit_accepted_one_over_skipped_and_answered);
  RUN(huge_declared_lengths_are_skipped_without_buffering);
  RUN(message_growing_past_the_limit_is_skipped_and_answered);
  RUN(an_oversized_notification_or_response_is_skipped_too);
  RUN(bad_bytes_inside_a_skipped_message_are_still_fatal);
  RUN(depth_32_accepted_33_fatal);
  RUN(reserved_byte_is_fatal_and_later_bytes_ignored);
  RUN(every_msgpack_format_is_walked);
  RUN(large_message_in_read_sized_chunks);
  return check_summary();
}
