/*
 * The WebSocket opening handshake, the client's side (RFC 6455 section 4),
 * pure: the request for a path with a fresh random key, and the check of
 * the server's answer: status 101, Upgrade: websocket, Connection: Upgrade,
 * and Sec-WebSocket-Accept equal to base64(SHA-1(key + the RFC's GUID)),
 * so that an HTTP server that merely echoes is not taken for a WebSocket
 * one. The answer's head is bounded (WS_HANDSHAKE_MAX).
 */
#ifndef VIGIL_WSHANDSHAKE_H
#define VIGIL_WSHANDSHAKE_H

#include <stddef.h>

#include "base/strbuf.h"

#define WS_HANDSHAKE_MAX 8192
#define WS_KEY_LEN 24 /* base64 of 16 bytes */

/* The request for host:port and path, with key (WS_KEY_LEN characters and
 * a NUL) made from 16 random bytes. */
void wshandshake_request(StrBuf *out, const char *host, int port, const char *path,
                         char key[WS_KEY_LEN + 1]);

/* Looks for the end of the answer's head in buf: returns its length
 * (through the blank line), 0 while it is not whole. */
size_t wshandshake_head_len(const char *buf, size_t len);

/* Checks the answer's head (head_len bytes) for key. Returns NULL when it
 * accepts, else why not, in words. */
const char *wshandshake_check(const char *head, size_t head_len, const char *key);

/* base64(SHA-1(key + GUID)): what Sec-WebSocket-Accept must say (out holds
 * 29 bytes). */
void wshandshake_accept(const char *key, char out[29]);

#endif
