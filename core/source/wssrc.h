/*
 * A WebSocket followed as a source (docs/sources.md): a minimal RFC 6455
 * client through libuv, on loopback only and without TLS. Each message the
 * server sends is handed on as its bytes followed by a newline, so a
 * message is a line (a message holding newlines is several lines); the
 * consumer's line buffer bounds it (line_max_bytes), and nothing here holds
 * a message: frames are decoded as they stream (wsframe.h).
 *
 * The URL: ws://HOST[:PORT][/PATH], HOST one of 127.0.0.0/8, [::1] or
 * localhost (taken as 127.0.0.1, never looked up); PATH printable ASCII
 * without spaces; at most WSSRC_URL_MAX bytes. wss:// is refused (no TLS),
 * and so is every other host (loopback only).
 *
 * The connection: connect, the opening handshake with a random key whose
 * answer must be a 101 with the right Sec-WebSocket-Accept
 * (wshandshake.h), within WSSRC_HANDSHAKE_MS; then frames: data to
 * on_output, pings answered with pongs, a close answered with a close and
 * the end (on_end, not failed). A protocol error is answered with close
 * 1002 and ends it failed; so does a refused connection or handshake. The
 * client's frames are masked with random keys.
 */
#ifndef VIGIL_WSSRC_H
#define VIGIL_WSSRC_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

#define WSSRC_URL_MAX 2048
#define WSSRC_HANDSHAKE_MS 10000
#define WSSRC_READ_BYTES 65536

typedef struct {
  /* Bytes of a message, then "\n" at its end; buf is only valid during the call. */
  void (*on_output)(void *data, const char *buf, size_t len);
  /* The source is over: the server closed (failed false), or it could not
   * connect, failed the handshake or broke the protocol (failed true). Once;
   * the caller closes the source. */
  void (*on_end)(void *data, bool failed, const char *reason);
} WsSourceCallbacks;

typedef struct {
  uint64_t messages;
  uint64_t bytes;                 /* payload bytes of messages */
  uint64_t pings;
} WsSourceCounters;

typedef struct WsSource WsSource;

/* Whether url is one this client follows. Errors: invalid_params naming
 * source.ws (not ws://, wss://, a bad port or path, too long) and denied
 * (a host off loopback). */
int wssrc_check(const char *url, VigilError *err);

/* Checks url and starts connecting. Errors as wssrc_check's. */
int wssrc_open(uv_loop_t *loop, const char *url, const WsSourceCallbacks *cb, void *data,
               WsSource **out, VigilError *err);

/* Closes the connection (with a close frame when it is open) and frees the
 * source from the loop. No callback fires after it. */
void wssrc_close(WsSource *ws);

const char *wssrc_url(const WsSource *ws);
void wssrc_counters(const WsSource *ws, WsSourceCounters *out);

#endif
