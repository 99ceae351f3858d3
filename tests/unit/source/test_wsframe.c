/*
 * Tests of the WebSocket frame decoder and the handshake's accept key
 * (core/source/wsframe.c, wshandshake.c): frames split at every byte give
 * the same messages, what a server must not send is a protocol error, the
 * client's frames are masked, and the accept key is RFC 6455's example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "source/wsframe.h"
#include "source/wshandshake.h"

typedef struct {
  char data[256];
  size_t len;
  int messages;
  int pings;
  int close_code;
} Got;

static void
got_data(void *ctx, const char *buf, size_t len)
{
  Got *g = ctx;
  if (g->len + len < sizeof g->data) {
    memcpy(g->data + g->len, buf, len);
    g->len += len;
  }
}

static void
got_end(void *ctx)
{
  Got *g = ctx;
  g->messages++;
  got_data(ctx, "|", 1);
}

static void
got_ping(void *ctx, const unsigned char *payload, size_t len)
{
  Got *g = ctx;
  g->pings++;
  got_data(ctx, (const char *)payload, len);
}

static void
got_close(void *ctx, int code)
{
  Got *g = ctx;
  g->close_code = code;
}

static const WsFrameCallbacks cbs = {got_data, got_end, got_ping, got_close};

/* "hi" text; "fra"+"g" fragmented with a ping between; an empty binary; close 1001. */
static const unsigned char stream[] = {
  0x81, 0x02, 'h', 'i',
  0x01, 0x03, 'f', 'r', 'a',
  0x89, 0x01, 'p',
  0x80, 0x01, 'g',
  0x82, 0x00,
  0x88, 0x02, 0x03, 0xE9,
};

TEST(frames_split_anywhere_give_the_same_messages)
{
  for (size_t step = 1; step <= sizeof stream; step++) {
    WsDecoder d;
    wsframe_decoder_init(&d);
    Got g = {.close_code = -2};
    for (size_t at = 0; at < sizeof stream; at += step) {
      size_t n = sizeof stream - at < step ? sizeof stream - at : step;
      CHECK_INT(wsframe_feed(&d, (const char *)stream + at, n, &cbs, &g), 0);
    }
    CHECK_MEM(g.data, g.len, "hi|frapg||");
    CHECK_INT(g.messages, 3);
    CHECK_INT(g.pings, 1);
    CHECK_INT(g.close_code, 1001);
  }
}

/* One frame that must be refused, and words its error holds. */
static void
refused(const unsigned char *bytes, size_t n, const char *words)
{
  WsDecoder d;
  wsframe_decoder_init(&d);
  Got g = {0};
  CHECK_INT(wsframe_feed(&d, (const char *)bytes, n, &cbs, &g), -1);
  CHECK_CONTAINS(d.why, words);
}

TEST(what_a_server_must_not_send_is_refused)
{
  static const unsigned char masked[] = {0x81, 0x81, 1, 2, 3, 4, 'x'};
  refused(masked, sizeof masked, "masked");
  static const unsigned char rsv[] = {0xC1, 0x00};
  refused(rsv, sizeof rsv, "reserved");
  static const unsigned char big_ping[] = {0x89, 0x7E, 0x00, 0x80};
  refused(big_ping, sizeof big_ping, "over 125");
  static const unsigned char frag_ping[] = {0x09, 0x00};
  refused(frag_ping, sizeof frag_ping, "fragmented control");
  static const unsigned char cont[] = {0x80, 0x00};
  refused(cont, sizeof cont, "outside a message");
  static const unsigned char nested[] = {0x01, 0x00, 0x81, 0x00};
  refused(nested, sizeof nested, "new message");
  static const unsigned char opcode[] = {0x83, 0x00};
  refused(opcode, sizeof opcode, "unknown data opcode");
  static const unsigned char huge[] = {0x81, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0};
  refused(huge, sizeof huge, "most significant bit");
}

TEST(a_long_frame_streams_without_being_held)
{
  /* A 64-bit length: 70000 bytes, fed in pieces, handed on as they come. */
  size_t n = 70000;
  unsigned char *f = calloc(1, n + 10);
  f[0] = 0x82;
  f[1] = 0x7F;
  for (int i = 0; i < 8; i++)
    f[2 + i] = (unsigned char)((uint64_t)n >> (8 * (7 - i)));
  WsDecoder d;
  wsframe_decoder_init(&d);
  Got g = {0};
  CHECK_INT(wsframe_feed(&d, (const char *)f, 10 + 1000, &cbs, &g), 0);
  CHECK_INT(g.messages, 0);
  CHECK_INT(wsframe_feed(&d, (const char *)f + 1010, n - 1000, &cbs, &g), 0);
  CHECK_INT(g.messages, 1);
  CHECK_INT(d.messages, 1);
  free(f);
}

TEST(client_frames_are_masked)
{
  unsigned char out[WS_HEADER_MAX + WS_CONTROL_MAX];
  const unsigned char mask[4] = {0x11, 0x22, 0x33, 0x44};
  size_t n = wsframe_encode(out, WS_OP_PONG, (const unsigned char *)"abc", 3, mask);
  CHECK_INT(n, 9);
  CHECK_INT(out[0], 0x8A);
  CHECK_INT(out[1], 0x83);
  CHECK_INT(out[6], 'a' ^ 0x11);
  CHECK_INT(out[8], 'c' ^ 0x33);
}

TEST(the_accept_key_is_the_rfcs_example)
{
  char accept[29];
  wshandshake_accept("dGhlIHNhbXBsZSBub25jZQ==", accept);
  CHECK_STR(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(the_answer_is_checked)
{
  char head[512];
  char accept[29];
  wshandshake_accept("dGhlIHNhbXBsZSBub25jZQ==", accept);
  snprintf(head, sizeof head, "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\n"
           "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
  size_t len = wshandshake_head_len(head, strlen(head));
  CHECK_INT(len, strlen(head));
  CHECK(wshandshake_check(head, len, "dGhlIHNhbXBsZSBub25jZQ==") == NULL);
  CHECK_CONTAINS(wshandshake_check(head, len, "AAAAAAAAAAAAAAAAAAAAAA=="), "Accept");
  const char *ok200 = "HTTP/1.1 200 OK\r\n\r\n";
  CHECK_CONTAINS(wshandshake_check(ok200, strlen(ok200), "x"), "101");
  CHECK_INT(wshandshake_head_len("HTTP/1.1 101\r\n", 14), 0);
}

int
main(void)
{
  RUN(frames_split_anywhere_give_the_same_messages);
  RUN(what_a_server_must_not_send_is_refused);
  RUN(a_long_frame_streams_without_being_held);
  RUN(client_frames_are_masked);
  RUN(the_accept_key_is_the_rfcs_example);
  RUN(the_answer_is_checked);
  return check_summary();
}
