/*
 * The WebSocket opening handshake, the client's side (see wshandshake.h),
 * with the SHA-1 and base64 it needs (SHA-1 only here: RFC 6455 names it
 * for the accept key; vigil uses it for nothing else).
 */
#include "source/wshandshake.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/random.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

static uint32_t
ws_rol(uint32_t x, int n)
{
  return (x << n) | (x >> (32 - n));
}

/* SHA-1 (FIPS 180-4) of a short message. */
static void
ws_sha1(const unsigned char *msg, size_t len, unsigned char out[20])
{
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  uint64_t bits = (uint64_t)len * 8;
  size_t total = ((len + 8) / 64 + 1) * 64;
  for (size_t block = 0; block < total; block += 64) {
    unsigned char b[64];
    for (size_t i = 0; i < 64; i++) {
      size_t at = block + i;
      if (at < len)
        b[i] = msg[at];
      else if (at == len)
        b[i] = 0x80;
      else if (at >= total - 8)
        b[i] = (unsigned char)(bits >> (8 * (total - 1 - at)));
      else
        b[i] = 0;
    }
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
      w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
             (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 80; i++)
      w[i] = ws_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
      uint32_t f, k;
      if (i < 20)
        f = (bb & c) | (~bb & d), k = 0x5A827999;
      else if (i < 40)
        f = bb ^ c ^ d, k = 0x6ED9EBA1;
      else if (i < 60)
        f = (bb & c) | (bb & d) | (c & d), k = 0x8F1BBCDC;
      else
        f = bb ^ c ^ d, k = 0xCA62C1D6;
      uint32_t t = ws_rol(a, 5) + f + e + k + w[i];
      e = d, d = c, c = ws_rol(bb, 30), bb = a, a = t;
    }
    h[0] += a, h[1] += bb, h[2] += c, h[3] += d, h[4] += e;
  }
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 4; j++)
      out[4 * i + j] = (unsigned char)(h[i] >> (24 - 8 * j));
}

/* base64 of len bytes into out (4 * ceil(len / 3) + 1 bytes). */
static void
ws_base64(const unsigned char *in, size_t len, char *out)
{
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) |
                 (i + 2 < len ? in[i + 2] : 0);
    out[o++] = t[(v >> 18) & 63];
    out[o++] = t[(v >> 12) & 63];
    out[o++] = i + 1 < len ? t[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < len ? t[v & 63] : '=';
  }
  out[o] = '\0';
}

/* See wshandshake.h. */
void
wshandshake_accept(const char *key, char out[29])
{
  unsigned char msg[WS_KEY_LEN + sizeof WS_GUID];
  size_t n = strlen(key);
  if (n > WS_KEY_LEN)
    n = WS_KEY_LEN;
  memcpy(msg, key, n);
  memcpy(msg + n, WS_GUID, sizeof WS_GUID - 1);
  unsigned char digest[20];
  ws_sha1(msg, n + sizeof WS_GUID - 1, digest);
  ws_base64(digest, 20, out);
}

/* See wshandshake.h. */
void
wshandshake_request(StrBuf *out, const char *host, int port, const char *path,
                    char key[WS_KEY_LEN + 1])
{
  unsigned char nonce[16];
  random_bytes(nonce, sizeof nonce);
  ws_base64(nonce, sizeof nonce, key);
  strbuf_printf(out,
                "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: vigil\r\n\r\n",
                path, host, port, key);
}

/* See wshandshake.h. */
size_t
wshandshake_head_len(const char *buf, size_t len)
{
  for (size_t i = 3; i < len; i++)
    if (buf[i - 3] == '\r' && buf[i - 2] == '\n' && buf[i - 1] == '\r' && buf[i] == '\n')
      return i + 1;
  return 0;
}

/* The value of header name in head (its first occurrence), trimmed, into
 * out (cap bytes); false when absent. */
static bool
ws_header(const char *head, size_t len, const char *name, char *out, size_t cap)
{
  size_t n = strlen(name);
  const char *line = memchr(head, '\n', len);
  while (line != NULL && (size_t)(line - head) + 1 < len) {
    line++;
    size_t rest = len - (size_t)(line - head);
    const char *eol = memchr(line, '\n', rest);
    size_t ll = eol ? (size_t)(eol - line) : rest;
    if (ll > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      size_t vl = ll - n - 1;
      while (vl > 0 && (*v == ' ' || *v == '\t'))
        v++, vl--;
      while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
      snprintf(out, cap, "%.*s", (int)(vl < cap ? vl : cap - 1), v);
      return true;
    }
    line = eol;
  }
  return false;
}

/* See wshandshake.h. */
const char *
wshandshake_check(const char *head, size_t len, const char *key)
{
  if (len < 12 || strncmp(head, "HTTP/1.1 101", 12) != 0)
    return "the server did not switch protocols (no HTTP/1.1 101 answer)";
  char v[128];
  if (!ws_header(head, len, "Upgrade", v, sizeof v) || strcasecmp(v, "websocket") != 0)
    return "the answer has no Upgrade: websocket";
  bool upgrade = false;
  if (ws_header(head, len, "Connection", v, sizeof v))
    for (size_t i = 0; v[i] && !upgrade; i++)
      upgrade = strncasecmp(v + i, "upgrade", 7) == 0;
  if (!upgrade)
    return "the answer has no Connection: Upgrade";
  char want[29];
  wshandshake_accept(key, want);
  if (!ws_header(head, len, "Sec-WebSocket-Accept", v, sizeof v) || strcmp(v, want) != 0)
    return "its Sec-WebSocket-Accept does not answer the key sent";
  return NULL;
}
