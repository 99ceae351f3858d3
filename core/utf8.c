/*
 * UTF-8 validity, escaping of what is not, and the text check for labels
 * (see utf8.h). One decoder serves all three, so "valid" means the same
 * thing to the check on the way in and to the escape on the way out.
 */
#include "utf8.h"

static const char utf8_hex[] = "0123456789abcdef";

size_t
utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
  unsigned char b = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
  uint32_t c;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
    c = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    c = b & 0x0F;
    if (b == 0xE0)
      lo = 0xA0; /* overlong */
    else if (b == 0xED)
      hi = 0x9F; /* surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    c = b & 0x07;
    if (b == 0xF0)
      lo = 0x90; /* overlong */
    else if (b == 0xF4)
      hi = 0x8F; /* above U+10FFFF */
  } else {
    return 0; /* a continuation byte, C0/C1 (overlong 2-byte), or F5..FF */
  }
  if (len < n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3F);
  }
  *cp = c;
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
