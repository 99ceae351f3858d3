/*
 * msgpack objects as JSON text (see cli_json.h). Recursion follows the
 * object's nesting, which the unpacker bounds (msgpack-c refuses nesting
 * deeper than its fixed stack), so it cannot run away.
 */
#include "cli_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "utf8.h"

/* Appends a JSON string literal of len bytes at s; invalid UTF-8 bytes
 * become U+FFFD, control characters \n-style or \u00XX escapes. */
static void
cli_json_string(StrBuf *out, const char *s, size_t len)
{
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  strbuf_putc(out, '"');
  size_t i = 0;
  while (i < len) {
    unsigned char ch = p[i];
    if (ch >= 0x80) {
      uint32_t cp;
      size_t n = utf8_decode(p + i, len - i, &cp);
      if (n == 0) {
        strbuf_puts(out, "\xEF\xBF\xBD");
        i++;
      } else {
        strbuf_append(out, s + i, n);
        i += n;
      }
      continue;
    }
    i++;
    switch (ch) {
    case '"':
      strbuf_puts(out, "\\\"");
      break;
    case '\\':
      strbuf_puts(out, "\\\\");
      break;
    case '\n':
      strbuf_puts(out, "\\n");
      break;
    case '\r':
      strbuf_puts(out, "\\r");
      break;
    case '\t':
      strbuf_puts(out, "\\t");
      break;
    case '\b':
      strbuf_puts(out, "\\b");
      break;
    case '\f':
      strbuf_puts(out, "\\f");
      break;
    default:
      if (ch < 0x20 || ch == 0x7F) {
        strbuf_puts(out, "\\u00");
        strbuf_putc(out, hex[ch >> 4]);
        strbuf_putc(out, hex[ch & 15]);
      } else {
        strbuf_putc(out, (char)ch);
      }
    }
  }
  strbuf_putc(out, '"');
}

/* Appends len bytes at s as a quoted base64 string (RFC 4648, padded). */
static void
cli_json_base64(StrBuf *out, const char *s, size_t len)
{
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *p = (const unsigned char *)s;
  strbuf_putc(out, '"');
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
    strbuf_append(out, q, 4);
  }
  if (len - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], '=', '='};
    strbuf_append(out, q, 4);
  } else if (len - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], '='};
    strbuf_append(out, q, 4);
  }
  strbuf_putc(out, '"');
}

void
cli_json_append(StrBuf *out, const msgpack_object *o)
{
  switch (o->type) {
  case MSGPACK_OBJECT_NIL:
    strbuf_puts(out, "null");
    break;
  case MSGPACK_OBJECT_BOOLEAN:
    strbuf_puts(out, o->via.boolean ? "true" : "false");
    break;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    strbuf_printf(out, "%" PRIu64, o->via.u64);
    break;
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    strbuf_printf(out, "%" PRId64, o->via.i64);
    break;
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    if (isfinite(o->via.f64))
      strbuf_printf(out, "%.17g", o->via.f64);
    else
      strbuf_puts(out, "null");
    break;
  case MSGPACK_OBJECT_STR:
    cli_json_string(out, o->via.str.ptr, o->via.str.size);
    break;
  case MSGPACK_OBJECT_BIN:
    if (utf8_valid(o->via.bin.ptr, o->via.bin.size)) {
      cli_json_string(out, o->via.bin.ptr, o->via.bin.size);
    } else {
      strbuf_puts(out, "{\"base64\":");
      cli_json_base64(out, o->via.bin.ptr, o->via.bin.size);
      strbuf_putc(out, '}');
    }
    break;
  case MSGPACK_OBJECT_EXT:
    strbuf_printf(out, "{\"ext\":%d,\"base64\":", (int)o->via.ext.type);
    cli_json_base64(out, o->via.ext.ptr, o->via.ext.size);
    strbuf_putc(out, '}');
    break;
  case MSGPACK_OBJECT_ARRAY:
    strbuf_putc(out, '[');
    for (uint32_t i = 0; i < o->via.array.size; i++) {
      if (i)
        strbuf_putc(out, ',');
      cli_json_append(out, &o->via.array.ptr[i]);
    }
    strbuf_putc(out, ']');
    break;
  case MSGPACK_OBJECT_MAP:
    strbuf_putc(out, '{');
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      const msgpack_object_kv *kv = &o->via.map.ptr[i];
      if (i)
        strbuf_putc(out, ',');
      if (kv->key.type == MSGPACK_OBJECT_STR) {
        cli_json_string(out, kv->key.via.str.ptr, kv->key.via.str.size);
      } else {
        /* JSON keys are strings: quote the key's own JSON text. */
        StrBuf k = STRBUF_INIT;
        cli_json_append(&k, &kv->key);
        cli_json_string(out, strbuf_cstr(&k), k.len);
        strbuf_free(&k);
      }
      strbuf_putc(out, ':');
      cli_json_append(out, &kv->val);
    }
    strbuf_putc(out, '}');
    break;
  }
}
