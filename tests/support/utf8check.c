/*
 * The strict UTF-8 check shared by the unit tests and the fuzz harnesses
 * (utf8check.h). It walks the bytes once, decoding each sequence and
 * rejecting every form RFC 3629 forbids.
 */
#include "utf8check.h"

#include <stdint.h>

/* Whether s[0..len) is valid UTF-8: no overlongs, surrogates, values past
 * U+10FFFF or truncated sequences. */
bool
test_utf8_valid(const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  while (p < end) {
    unsigned c = *p;
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      p++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if ((size_t)(end - p) < n)
      return false;
    for (size_t i = 1; i < n; i++) {
      if ((p[i] & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
      return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    p += n;
  }
  return true;
}
