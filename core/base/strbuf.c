/*
 * A growable NUL-terminated byte string (see strbuf.h).
 */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "base/memory.h"

static void
strbuf_reserve(StrBuf *sb, size_t extra)
{
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap)
    return;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need)
    cap *= 2;
  sb->data = xrealloc(sb->data, cap);
  sb->cap = cap;
}

void
strbuf_append(StrBuf *sb, const char *s, size_t len)
{
  strbuf_reserve(sb, len);
  if (len)
    memcpy(sb->data + sb->len, s, len);
  sb->len += len;
  sb->data[sb->len] = '\0';
}

void
strbuf_puts(StrBuf *sb, const char *s)
{
  strbuf_append(sb, s, strlen(s));
}

void
strbuf_putc(StrBuf *sb, char c)
{
  strbuf_append(sb, &c, 1);
}

void
strbuf_printf(StrBuf *sb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0)
    return;
  strbuf_reserve(sb, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

const char *
strbuf_cstr(const StrBuf *sb)
{
  return sb->data ? sb->data : "";
}

char *
strbuf_take(StrBuf *sb)
{
  char *s = sb->data ? sb->data : xstrdup("");
  sb->data = NULL;
  sb->len = sb->cap = 0;
  return s;
}

/* See strbuf.h. */
char *
strbuf_take_fit(StrBuf *sb)
{
  if (sb->data != NULL && sb->cap > sb->len + 1)
    sb->data = xrealloc(sb->data, sb->len + 1);
  return strbuf_take(sb);
}

void
strbuf_reset(StrBuf *sb)
{
  sb->len = 0;
  if (sb->data)
    sb->data[0] = '\0';
}

void
strbuf_free(StrBuf *sb)
{
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
}
