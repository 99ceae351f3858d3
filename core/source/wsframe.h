/*
 * WebSocket frames (RFC 6455 section 5), the client's side, pure: a decoder
 * that a connection feeds whatever bytes it read, and the encoder of the
 * few frames a client sends (masked, as section 5.3 demands).
 *
 * The decoder keeps no payload: a data frame's bytes go to on_data as they
 * arrive (a message of any length costs no memory here; its consumer
 * bounds it, the monitor's line buffer at line_max_bytes), and a message
 * ends with on_message_end at the final frame of its fragments. Only a
 * control frame's payload (at most 125 bytes) is held until it is whole.
 * A frame the server masked, a reserved bit, an unknown opcode, a control
 * frame fragmented or over 125 bytes, a continuation outside a message, a
 * new message inside one, a length with its top bit set: a protocol error
 * (wsframe_feed returns -1 with why).
 */
#ifndef VIGIL_WSFRAME_H
#define VIGIL_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_OP_CONT 0x0
#define WS_OP_TEXT 0x1
#define WS_OP_BINARY 0x2
#define WS_OP_CLOSE 0x8
#define WS_OP_PING 0x9
#define WS_OP_PONG 0xA

#define WS_CONTROL_MAX 125
/* The longest frame header: 2 bytes, 8 of length, 4 of mask. */
#define WS_HEADER_MAX 14

typedef struct {
  /* Payload bytes of a text or binary message (any fragment). */
  void (*on_data)(void *ctx, const char *buf, size_t len);
  /* The message's final fragment is over. */
  void (*on_message_end)(void *ctx);
  /* A ping, with its payload (to be answered by a pong of it). */
  void (*on_ping)(void *ctx, const unsigned char *payload, size_t len);
  /* A close frame: its status code, or -1 when it has none. */
  void (*on_close)(void *ctx, int code);
} WsFrameCallbacks;

typedef struct {
  unsigned char hdr[WS_HEADER_MAX];
  size_t hdr_len;                 /* header bytes held */
  bool in_frame;                  /* the header is read; `left` payload bytes follow */
  bool fin;
  int opcode;
  uint64_t left;
  bool in_message;                /* a fragmented data message is open */
  unsigned char ctl[WS_CONTROL_MAX];
  size_t ctl_len;
  bool stop;                      /* set by a callback: feed returns at once */
  uint64_t frames;
  uint64_t messages;
  char why[160];                  /* the protocol error */
} WsDecoder;

void wsframe_decoder_init(WsDecoder *d);

/* Decodes len bytes; the callbacks get what they complete. Returns 0, or
 * -1 on a protocol error (d->why says which; feed nothing more). */
int wsframe_feed(WsDecoder *d, const char *buf, size_t len, const WsFrameCallbacks *cb,
                 void *ctx);

/* A client frame (FIN set, masked with mask) of opcode and payload (at most
 * WS_CONTROL_MAX bytes: the client sends only control frames) into out,
 * which holds WS_HEADER_MAX + WS_CONTROL_MAX bytes. Returns its length. */
size_t wsframe_encode(unsigned char *out, int opcode, const unsigned char *payload, size_t len,
                      const unsigned char mask[4]);

#endif
