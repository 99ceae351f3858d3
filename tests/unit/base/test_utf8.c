/*
 * Tests of UTF-8 on the wire: the validity check agrees with the tests' own
 * strict checker, the escape of invalid bytes is valid UTF-8 and can be read
 * back to the exact bytes, rpc_pack_str packs only valid UTF-8 strings, and
 * the text check for labels finds the first bad byte.
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/memory.h"
#include "rpc/pack.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "utf8check.h"

/* The escape of s as a NUL-terminated string (caller frees). */
static char *
escape(const char *s, size_t len)
{
  StrBuf sb = STRBUF_INIT;
  utf8_escape_invalid(&sb, s, len);
  return sb.data ? strbuf_take(&sb) : xstrdup("");
}

/* Reads an escaped string back: "\\\\" is a backslash, "\\xNN" a byte. */
static size_t
unescape(const char *e, char *out)
{
  size_t n = 0;
  for (size_t i = 0; e[i]; i++) {
    if (e[i] == '\\' && e[i + 1] == '\\') {
      out[n++] = '\\';
      i++;
    } else if (e[i] == '\\' && e[i + 1] == 'x') {
      unsigned v;
      sscanf(e + i + 2, "%2x", &v);
      out[n++] = (char)v;
      i += 3;
    } else {
      out[n++] = e[i];
    }
  }
  return n;
}

/* Packs s with rpc_pack_str and unpacks it: the str the peer would see. */
static char *
packed(const char *s, size_t len, size_t *outlen)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  rpc_pack_str(&pk, s, len);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  char *out = NULL;
  if (msgpack_unpack_next(&u, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS &&
      u.data.type == MSGPACK_OBJECT_STR) {
    *outlen = u.data.via.str.size;
    out = xmemdupz(*outlen ? u.data.via.str.ptr : "", *outlen);
  }
  msgpack_unpacked_destroy(&u);
  msgpack_sbuffer_destroy(&sb);
  return out;
}

TEST(validity_matches_the_strict_checker)
{
  static const char *const cases[] = {
    "", "plain", "caf\xc3\xa9", "\xe2\x98\x95", "\xf0\x9f\x98\x80", "a\\b",
    "\xff", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
    "\x80", "ok\xe2\x28\xa1", "\xf8\x88\x80\x80\x80",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    CHECK_INT(utf8_valid(cases[i], strlen(cases[i])),
              test_utf8_valid(cases[i], strlen(cases[i])));
}

TEST(invalid_bytes_are_escaped_visibly)
{
  char *e = escape("web\xff", 4);
  CHECK_STR(e, "web\\xff");
  free(e);
  /* Valid sequences stay; a cut one shows its bytes; backslashes double. */
  e = escape("caf\xc3\xa9 \\x\xc3", 9);
  CHECK_STR(e, "caf\xc3\xa9 \\\\x\\xc3");
  free(e);
  /* So the bytes "\xff" (four ASCII characters) and the byte 0xff differ. */
  char *a = escape("\\xff\xfe", 5);
  char *b = escape("\xff\xfe", 2);
  CHECK(strcmp(a, b) != 0);
  free(a);
  free(b);
}

TEST(random_bytes_escape_to_valid_utf8_and_read_back)
{
  srand(7);
  char buf[64], back[256];
  for (int round = 0; round < 20000; round++) {
    size_t len = (size_t)(rand() % 24);
    for (size_t i = 0; i < len; i++) {
      /* Mostly bytes that make or break sequences, some backslashes. */
      static const unsigned char pool[] = {'a', '\\', 'x', 0x80, 0xbf, 0xc3, 0xa9, 0xe2,
                                           0x98, 0xf0, 0x9f, 0xed, 0xa0, 0xff, 0x01};
      buf[i] = (char)pool[rand() % (int)sizeof pool];
    }
    char *e = escape(buf, len);
    CHECK(test_utf8_valid(e, strlen(e)));
    CHECK_INT(unescape(e, back), len);
    CHECK(memcmp(back, buf, len) == 0);
    free(e);
    size_t n = 0;
    char *p = packed(buf, len, &n);
    CHECK(p != NULL);
    if (p) {
      CHECK(test_utf8_valid(p, n));
      if (test_utf8_valid(buf, len)) /* a valid string goes out as it is */
        CHECK(n == len && memcmp(p, buf, len) == 0);
      free(p);
    }
  }
}

TEST(text_check_names_the_first_bad_byte)
{
  size_t at = 99;
  CHECK_INT(utf8_check_text("caf\xc3\xa9 \xe2\x98\x95", 9, &at), kUtf8Text);
  CHECK_INT(utf8_check_text("web\xff", 4, &at), kUtf8Invalid);
  CHECK_INT(at, 3);
  CHECK_INT(utf8_check_text("a\x1b[31m", 6, &at), kUtf8Control);
  CHECK_INT(at, 1);
  CHECK_INT(utf8_check_text("del\x7f", 4, &at), kUtf8Control);
  CHECK_INT(at, 3);
  CHECK_INT(utf8_check_text("c1\xc2\x85", 4, &at), kUtf8Control); /* U+0085 NEL */
  CHECK_INT(at, 2);
  CHECK_INT(utf8_check_text("\xc2\xa0ok", 4, &at), kUtf8Text);      /* U+00A0 is text */
  CHECK_STR(utf8_verdict_name(kUtf8Invalid), "not valid UTF-8");
}

/* A message that does not fit its buffer ends at a character boundary:
 * "%.64s" or a full buffer used to cut a three-byte character in half, and
 * the invalid text made vigil mcp's JSON reply fail (issue 22, point 13). */
TEST(snprintf_cuts_at_a_character_boundary)
{
  char buf[8];
  /* "a" and two euro signs are 7 bytes: they fit with the NUL. */
  CHECK_INT(utf8_snprintf(buf, sizeof buf, "a%s", "\xe2\x82\xac\xe2\x82\xac"), 7);
  CHECK_STR(buf, "a\xe2\x82\xac\xe2\x82\xac");
  /* Three euro signs do not: the third is left out whole, not cut. */
  CHECK_INT(utf8_snprintf(buf, sizeof buf, "a%s", "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"), 7);
  CHECK_STR(buf, "a\xe2\x82\xac\xe2\x82\xac");
  CHECK_INT(utf8_snprintf(buf, sizeof buf, "ab%s", "\xe2\x82\xac\xe2\x82\xac"), 5);
  CHECK_STR(buf, "ab\xe2\x82\xac");
  CHECK(utf8_valid(buf, strlen(buf)));
  /* ASCII is cut where the buffer ends. */
  CHECK_INT(utf8_snprintf(buf, sizeof buf, "%s", "0123456789"), 7);
  CHECK_STR(buf, "0123456");
  char one[1];
  CHECK_INT(utf8_snprintf(one, sizeof one, "%s", "x"), 0);
  CHECK_STR(one, "");
}

int
main(void)
{
  RUN(validity_matches_the_strict_checker);
  RUN(invalid_bytes_are_escaped_visibly);
  RUN(random_bytes_escape_to_valid_utf8_and_read_back);
  RUN(text_check_names_the_first_bad_byte);
  RUN(snprintf_cuts_at_a_character_boundary);
  return check_summary();
}
