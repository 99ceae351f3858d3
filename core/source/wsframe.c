/*
 * WebSocket frames, the client's side (see wsframe.h): the decoder of what
 * a server sends, streaming, and the encoder of the client's control
 * frames.
 */
#include "source/wsframe.h"

#include <stdio.h>
#include <string.h>

void
wsframe_decoder_init(WsDecoder *d)
{
  memset(d, 0, sizeof *d);
}

static int
wsframe_fail(WsDecoder *d, const char *why)
{
  snprintf(d->why, sizeof d->why, "%s", why);
  return -1;
}

/* How many header bytes the held ones say the header has (2 until the
 * second byte is there). */
static size_t
wsframe_header_need(const WsDecoder *d)
{
  if (d->hdr_len < 2)
    return 2;
  size_t n = 2;
  unsigned len7 = d->hdr[1] & 0x7F;
  if (len7 == 126)
    n += 2;
  else if (len7 == 127)
    n += 8;
  if (d->hdr[1] & 0x80)
    n += 4;
  return n;
}

/* The header is whole: check it and start the frame. */
static int
wsframe_begin(WsDecoder *d)
{
  unsigned char b0 = d->hdr[0], b1 = d->hdr[1];
  if (b0 & 0x70)
    return wsframe_fail(d, "a reserved bit (RSV1-3) is set, and no extension was agreed");
  if (b1 & 0x80)
    return wsframe_fail(d, "the server masked a frame (RFC 6455 5.1: it must not)");
  d->fin = (b0 & 0x80) != 0;
  d->opcode = b0 & 0x0F;
  unsigned len7 = b1 & 0x7F;
  uint64_t len = len7;
  if (len7 == 126) {
    len = ((uint64_t)d->hdr[2] << 8) | d->hdr[3];
  } else if (len7 == 127) {
    len = 0;
    for (int i = 0; i < 8; i++)
      len = (len << 8) | d->hdr[2 + i];
    if (len >> 63)
      return wsframe_fail(d, "a frame length has its most significant bit set");
  }
  bool control = (d->opcode & 0x8) != 0;
  if (control) {
    if (d->opcode != WS_OP_CLOSE && d->opcode != WS_OP_PING && d->opcode != WS_OP_PONG)
      return wsframe_fail(d, "an unknown control opcode");
    if (!d->fin)
      return wsframe_fail(d, "a fragmented control frame");
    if (len > WS_CONTROL_MAX)
      return wsframe_fail(d, "a control frame over 125 bytes");
    d->ctl_len = 0;
  } else if (d->opcode == WS_OP_CONT) {
    if (!d->in_message)
      return wsframe_fail(d, "a continuation frame outside a message");
  } else if (d->opcode == WS_OP_TEXT || d->opcode == WS_OP_BINARY) {
    if (d->in_message)
      return wsframe_fail(d, "a new message before the last one's final fragment");
    d->in_message = true;
  } else {
    return wsframe_fail(d, "an unknown data opcode");
  }
  d->left = len;
  d->in_frame = true;
  d->frames++;
  return 0;
}

/* The frame's payload is all there. */
static void
wsframe_end(WsDecoder *d, const WsFrameCallbacks *cb, void *ctx)
{
  d->in_frame = false;
  d->hdr_len = 0;
  switch (d->opcode) {
  case WS_OP_PING:
    cb->on_ping(ctx, d->ctl, d->ctl_len);
    break;
  case WS_OP_CLOSE:
    cb->on_close(ctx, d->ctl_len >= 2 ? (d->ctl[0] << 8) | d->ctl[1] : -1);
    break;
  case WS_OP_PONG:
    break;
  default:
    if (d->fin) {
      d->in_message = false;
      d->messages++;
      cb->on_message_end(ctx);
    }
    break;
  }
}

/* See wsframe.h. */
int
wsframe_feed(WsDecoder *d, const char *buf, size_t len, const WsFrameCallbacks *cb, void *ctx)
{
  size_t at = 0;
  while (!d->stop && (at < len || (d->in_frame && d->left == 0))) {
    if (!d->in_frame) {
      size_t need = wsframe_header_need(d);
      while (d->hdr_len < need && at < len) {
        d->hdr[d->hdr_len++] = (unsigned char)buf[at++];
        need = wsframe_header_need(d);
      }
      if (d->hdr_len < need)
        return 0;
      if (wsframe_begin(d) != 0)
        return -1;
      continue;
    }
    size_t take = len - at;
    if ((uint64_t)take > d->left)
      take = (size_t)d->left;
    if (take > 0) {
      if (d->opcode & 0x8) {
        memcpy(d->ctl + d->ctl_len, buf + at, take);
        d->ctl_len += take;
      } else {
        cb->on_data(ctx, buf + at, take);
      }
      at += take;
      d->left -= take;
    }
    if (d->left == 0)
      wsframe_end(d, cb, ctx);
  }
  return 0;
}

/* See wsframe.h. */
size_t
wsframe_encode(unsigned char *out, int opcode, const unsigned char *payload, size_t len,
               const unsigned char mask[4])
{
  if (len > WS_CONTROL_MAX)
    len = WS_CONTROL_MAX;
  out[0] = (unsigned char)(0x80 | (opcode & 0x0F));
  out[1] = (unsigned char)(0x80 | len);
  memcpy(out + 2, mask, 4);
  for (size_t i = 0; i < len; i++)
    out[6 + i] = payload[i] ^ mask[i % 4];
  return 6 + len;
}
