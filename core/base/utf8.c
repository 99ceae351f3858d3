/*
 * UTF-8 validity, escaping of what is not, the text check for labels and
 * the cut at a character boundary (see utf8.h). One decoder (utf8_next, in
 * the header) serves them all and every other module, so "valid" means the
 * same thing to the check on the way in, to the escape on the way out and to
 * the line splitter.
 */
#include "base/utf8.h"

#include <stdio.h>

static const char utf8_hex[] = "0123456789abcdef";

/* See utf8.h. */
size_t
utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
  uint32_t c;
  size_t n = utf8_next(s, len, &c);
  if (c == UTF8_BAD)
    return 0;
  *cp = c;
  return n;
}

/* See utf8.h. Reads only s[0..max), so a caller may cut a buffer whose
 * bytes past max are not filled in (linebuf's hold). */
size_t
utf8_cut(const char *s, size_t len, size_t max)
{
  if (len <= max)
    return len;
  const unsigned char *u = (const unsigned char *)s;
  size_t i = max, cont = 0;
  while (cont < 3 && i > 0 && (u[i - 1] & 0xC0) == 0x80) {
    i--;
    cont++;
  }
  if (i == 0)
    return max;
  unsigned char lo, hi;
  size_t want = utf8_lead(u[i - 1], &lo, &hi);
  /* Anything else before the continuation bytes (ASCII, an invalid lead)
   * is no character to protect: it is invalid text either way. */
  if (want > cont + 1)
    return i - 1;
  return max;
}

/* See utf8.h. utf8_cut reads only buf[0..cap - 1), what vsnprintf wrote. */
size_t
utf8_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
  int n = vsnprintf(buf, cap, fmt, ap);
  if (n < 0) {
    buf[0] = '\0';
    return 0;
  }
  if ((size_t)n < cap)
    return (size_t)n;
  size_t keep = utf8_cut(buf, (size_t)n, cap - 1);
  buf[keep] = '\0';
  return keep;
}

/* See utf8.h. */
size_t
utf8_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  size_t n = utf8_vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

bool
utf8_valid(const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    uint32_t cp;
    size_t n = utf8_decode(p + i, len - i, &cp);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

/* See utf8.h. Valid stretches are copied in runs. */
void
utf8_escape_invalid(StrBuf *out, const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t run = 0; /* start of the pending run of bytes that pass through */
  size_t i = 0;
  while (i < len) {
    if (p[i] < 0x80 && p[i] != '\\') {
      i++;
      continue;
    }
    uint32_t cp;
    size_t n = p[i] < 0x80 ? 0 : utf8_decode(p + i, len - i, &cp);
    if (n > 0) {
      i += n;
      continue;
    }
    strbuf_append(out, s + run, i - run);
    if (p[i] == '\\') {
      strbuf_append(out, "\\\\", 2);
    } else {
      char esc[4] = {'\\', 'x', utf8_hex[p[i] >> 4], utf8_hex[p[i] & 0xF]};
      strbuf_append(out, esc, sizeof esc);
    }
    i++;
    run = i;
  }
  strbuf_append(out, s + run, len - run);
}

Utf8Verdict
utf8_check_text(const char *s, size_t len, size_t *offset)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    uint32_t cp = p[i];
    size_t n = 1;
    if (cp >= 0x80) {
      n = utf8_decode(p + i, len - i, &cp);
      if (n == 0) {
        *offset = i;
        return kUtf8Invalid;
      }
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
      *offset = i;
      return kUtf8Control;
    }
    i += n;
  }
  return kUtf8Text;
}

const char *
utf8_verdict_name(Utf8Verdict v)
{
  switch (v) {
  case kUtf8Text: return "text";
  case kUtf8Invalid: return "not valid UTF-8";
  case kUtf8Control: return "control character";
  }
  return "unknown";
}
