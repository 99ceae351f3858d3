/*
 * textfmt: what a reader sees of untrusted text (the escape table, including
 * invalid UTF-8 and the characters that fake how text looks), timestamps in
 * the local zone with milliseconds and offset, nonces and monitor ids drawn
 * from the OS, and durations the way a person reads them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/clock.h"
#include "base/random.h"
#include "base/signals.h"
#include "base/textfmt.h"

/* textfmt_escape of len bytes, as a malloc'd string. */
static char *
escape(const char *text, size_t len)
{
  StrBuf sb = STRBUF_INIT;
  textfmt_escape(&sb, text, len);
  return strbuf_take(&sb);
}

#define CHECK_ESCAPE(in, want)                   \
  do {                                           \
    char *got_ = escape(in, sizeof(in) - 1);     \
    CHECK_STR(got_, want);                       \
    free(got_);                                  \
  } while (0)

TEST(escape_c0_and_del)
{
  CHECK_ESCAPE("a\tb\nc\rd", "a\\tb\\nc\\rd");
  CHECK_ESCAPE("\x1b[31mred\x1b[0m", "\\e[31mred\\e[0m");
  CHECK_ESCAPE("bell\x07 del\x7f", "bell\\x07 del\\x7f");
  CHECK_ESCAPE("\x01\x1f", "\\x01\\x1f");
  CHECK_ESCAPE("nul\0inside", "nul\\x00inside");
}

TEST(escape_keeps_plain_text_and_most_backslashes)
{
  CHECK_ESCAPE("listening on http://localhost:3000", "listening on http://localhost:3000");
  CHECK_ESCAPE("regex \\d+\\s*\\(", "regex \\d+\\s*\\(");
  CHECK_ESCAPE("C:\\path\\dir", "C:\\path\\dir");
  CHECK_ESCAPE("", "");
}

/* Injective: a backslash that could be read as the start of an escape is
 * doubled, so text that prints an escape never looks like the character. */
TEST(escape_is_injective_a_printed_escape_differs_from_the_character)
{
  CHECK_ESCAPE("\xe2\x80\xae", "\\u{202e}");         /* the real RLO */
  CHECK_ESCAPE("\\u{202e}", "\\\\u{202e}");         /* a process printing its escape */
  CHECK_ESCAPE("\\x1b[31m", "\\\\x1b[31m");
  CHECK_ESCAPE("\\e[0m \\t \\n \\r", "\\\\e[0m \\\\t \\\\n \\\\r");
  CHECK_ESCAPE("C:\\path\\new", "C:\\path\\\\new");   /* \n would read as a newline */
  CHECK_ESCAPE("ends with\\", "ends with\\\\");       /* so pieces can be joined */
  CHECK_ESCAPE("\\\\", "\\\\\\\\");                     /* two backslashes */
  CHECK_ESCAPE("\\\t", "\\\\\\t");                      /* a backslash, then a tab */
  CHECK_ESCAPE("\\\xe2\x80\x8b", "\\\\\\u{200b}");     /* a backslash, then a ZWSP */
  CHECK_ESCAPE("\\\xff", "\\\\\\xff");                  /* a backslash, then a bad byte */
}

TEST(escape_c1_as_code_points)
{
  CHECK_ESCAPE("x\xc2\x85y", "x\\u{85}y");
  CHECK_ESCAPE("\xc2\x9b" "31m", "\\u{9b}31m"); /* the 8-bit CSI */
  CHECK_ESCAPE("\xc2\x80\xc2\x9f", "\\u{80}\\u{9f}");
  CHECK_ESCAPE("nbsp\xc2\xa0ok", "nbsp\xc2\xa0ok"); /* U+00A0 is printable */
}

TEST(escape_invalid_utf8_per_byte)
{
  CHECK_ESCAPE("\xff\xfe", "\\xff\\xfe");
  CHECK_ESCAPE("a\x80z", "a\\x80z");             /* stray continuation */
  CHECK_ESCAPE("\xc0\xaf", "\\xc0\\xaf");        /* overlong '/' */
  CHECK_ESCAPE("\xe0\x80\xaf", "\\xe0\\x80\\xaf"); /* overlong, 3 bytes */
  CHECK_ESCAPE("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
  CHECK_ESCAPE("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
  CHECK_ESCAPE("end\xe2\x82", "end\\xe2\\x82");  /* cut short */
  CHECK_ESCAPE("\xe2\x82z", "\\xe2\\x82z");      /* cut by an ASCII byte */
}

TEST(escape_valid_utf8_passes)
{
  CHECK_ESCAPE("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac",
               "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac");
}

TEST(escape_bidi_and_line_separators)
{
  CHECK_ESCAPE("safe\xe2\x80\xae" "txt.exe", "safe\\u{202e}txt.exe"); /* RLO */
  CHECK_ESCAPE("\xe2\x80\xaa\xe2\x80\xac", "\\u{202a}\\u{202c}");
  CHECK_ESCAPE("\xe2\x81\xa6x\xe2\x81\xa9", "\\u{2066}x\\u{2069}");
  CHECK_ESCAPE("one\xe2\x80\xa8two\xe2\x80\xa9", "one\\u{2028}two\\u{2029}");
  CHECK_ESCAPE("\xe2\x80\xa9\xe2\x80\xaf", "\\u{2029}\xe2\x80\xaf"); /* U+202F passes */
}

/* Every general category Cf character that hides text or changes how it
 * looks, and the other invisible code points, are shown as escapes. */
TEST(escape_format_characters_and_other_invisibles)
{
  /* "ASCII smuggling": tag characters spelling "hi" a person cannot see. */
  CHECK_ESCAPE("ok\xf3\xa0\x81\xa8\xf3\xa0\x81\xa9", "ok\\u{e0068}\\u{e0069}");
  /* LANGUAGE TAG, CANCEL TAG */
  CHECK_ESCAPE("\xf3\xa0\x80\x81\xf3\xa0\x81\xbf", "\\u{e0001}\\u{e007f}");
  CHECK_ESCAPE("a\xe2\x80\x8b" "b\xe2\x80\x8c" "c\xe2\x80\x8d" "d",
               "a\\u{200b}b\\u{200c}c\\u{200d}d");                    /* ZWSP ZWNJ ZWJ */
  CHECK_ESCAPE("\xef\xbb\xbf" "bom", "\\u{feff}bom");                   /* BOM */
  CHECK_ESCAPE("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u{200e}\\u{200f}\\u{61c}"); /* LRM RLM ALM */
  CHECK_ESCAPE("soft\xc2\xad" "hyphen", "soft\\u{ad}hyphen");
  /* WORD JOINER, INVISIBLE TIMES, INVISIBLE PLUS */
  CHECK_ESCAPE("\xe2\x81\xa0\xe2\x81\xa2\xe2\x81\xa4", "\\u{2060}\\u{2062}\\u{2064}");
  CHECK_ESCAPE("\xd8\x80\xdb\x9d", "\\u{600}\\u{6dd}");                 /* prepended marks */
  CHECK_ESCAPE("\xef\xbf\xb9\xef\xbf\xbb", "\\u{fff9}\\u{fffb}");       /* annotation */
  CHECK_ESCAPE("\xf0\x9d\x85\xb3", "\\u{1d173}");                       /* musical format */
  /* Variation selectors, standard and supplement. */
  CHECK_ESCAPE("\xe2\x9d\xa4\xef\xb8\x8f", "\xe2\x9d\xa4\\u{fe0f}");
  CHECK_ESCAPE("\xe8\xbe\xbb\xf3\xa0\x84\x80", "\xe8\xbe\xbb\\u{e0100}");
  CHECK_ESCAPE("\xe1\xa0\x8b", "\\u{180b}");                            /* Mongolian FVS1 */
  /* Blank-looking letters, CGJ, Khmer inherent vowels. */
  CHECK_ESCAPE("\xe1\x85\x9f\xe1\x85\xa0\xe3\x85\xa4\xef\xbe\xa0",
               "\\u{115f}\\u{1160}\\u{3164}\\u{ffa0}");
  CHECK_ESCAPE("\xcd\x8f\xe1\x9e\xb4", "\\u{34f}\\u{17b4}");
  /* Noncharacters. */
  CHECK_ESCAPE("\xef\xb7\x90\xef\xbf\xbe\xf4\x8f\xbf\xbf", "\\u{fdd0}\\u{fffe}\\u{10ffff}");
  /* Visible neighbours pass: NBSP, ideographic space, replacement char, emoji. */
  CHECK_ESCAPE("\xc2\xa0\xe3\x80\x80\xef\xbf\xbd\xf0\x9f\x98\x80",
               "\xc2\xa0\xe3\x80\x80\xef\xbf\xbd\xf0\x9f\x98\x80");
}

/* Private Use Area code points (U+E000..U+F8FF and planes 15 and 16) mean
 * nothing standard: most fonts show nothing, a font the attacker chose shows
 * whatever it likes, and tokenizers map them unpredictably. They are shown
 * escaped, like the invisible classes (issue 22, point 17). */
TEST(escape_private_use_area)
{
  CHECK_ESCAPE("a\xee\x80\x80" "b\xef\xa3\xbf" "c", "a\\u{e000}b\\u{f8ff}c");
  CHECK_ESCAPE("\xf3\xb0\x80\x80\xf3\xbf\xbf\xbd", "\\u{f0000}\\u{ffffd}"); /* plane 15 */
  CHECK_ESCAPE("\xf4\x80\x80\x80\xf4\x8f\xbf\xbd", "\\u{100000}\\u{10fffd}"); /* plane 16 */
  /* Their valid neighbours pass: U+D7FF (a Hangul letter, the last code
   * point before the surrogates that precede U+E000) and U+F900 (a CJK
   * compatibility ideograph). */
  CHECK_ESCAPE("\xed\x9f\xbf\xef\xa4\x80", "\xed\x9f\xbf\xef\xa4\x80");
}

/* The inverse of textfmt_escape, following the grammar textfmt.h gives:
 * \\ a backslash, \t \n \r \e, \xNN a byte, \u{H..} a code point as UTF-8,
 * and a backslash before anything else itself. Returns the decoded length,
 * or (size_t)-1 if text is not something textfmt_escape could write. */
static size_t
unescape(const char *text, unsigned char *out)
{
  size_t o = 0;
  for (const char *p = text; *p;) {
    if (*p != '\\') {
      out[o++] = (unsigned char)*p++;
      continue;
    }
    char c = p[1];
    if (c == '\\' || c == 't' || c == 'n' || c == 'r' || c == 'e') {
      out[o++] = c == '\\' ? '\\' : c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : 0x1b;
      p += 2;
    } else if (c == 'x') {
      unsigned v;
      if (sscanf(p + 2, "%2x", &v) != 1)
        return (size_t)-1;
      out[o++] = (unsigned char)v;
      p += 4;
    } else if (c == 'u') {
      unsigned cp;
      int used = 0;
      if (sscanf(p, "\\u{%x}%n", &cp, &used) != 1 || used == 0)
        return (size_t)-1;
      if (cp < 0x800) {
        out[o++] = (unsigned char)(0xc0 | cp >> 6);
      } else if (cp < 0x10000) {
        out[o++] = (unsigned char)(0xe0 | cp >> 12);
        out[o++] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
      } else {
        out[o++] = (unsigned char)(0xf0 | cp >> 18);
        out[o++] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        out[o++] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
      }
      out[o++] = (unsigned char)(0x80 | (cp & 0x3f));
      p += used;
    } else {
      out[o++] = '\\'; /* a lone backslash before a character no escape starts with */
      p++;
    }
  }
  return o;
}

/* Property: decoding the escape gives the input back, for random inputs made
 * of backslashes, the letters escapes start with, braces, hex digits,
 * controls, format characters and invalid bytes, so distinct inputs always
 * escape to distinct texts. Also for two escaped pieces joined. */
TEST(escape_decodes_back_to_its_input)
{
  static const char *const picks[] = {"\\", "\\", "u", "x", "t", "n", "r", "e", "{", "}",
                                      "2", "0", "e", "a", "\t", "\n", "\x1b", "\xff",
                                      "\xe2\x80\xae", "\xe2\x80\x8b", "\xf3\xa0\x81\xa8",
                                      "\xc2\x85", "\xe2", "\x80", "\xc3\xa9", " "};
  srand(4321);
  unsigned char in[64], back[256];
  for (int round = 0; round < 50000; round++) {
    size_t len = 0, cut = 0;
    size_t pieces = 1 + (size_t)(rand() % 12);
    for (size_t i = 0; i < pieces; i++) {
      const char *f = picks[rand() % (int)(sizeof picks / sizeof picks[0])];
      memcpy(in + len, f, strlen(f));
      len += strlen(f);
      if (i == pieces / 2)
        cut = len;
    }
    StrBuf sb = STRBUF_INIT;
    textfmt_escape(&sb, (const char *)in, len);
    size_t n = unescape(strbuf_cstr(&sb), back);
    if (n != len || memcmp(in, back, len) != 0) {
      check_fail(__FILE__, __LINE__, "round %d: \"%s\" does not decode to its input", round,
                 strbuf_cstr(&sb));
      strbuf_free(&sb);
      return;
    }
    /* Escaped in two pieces and joined (a line, then more text). */
    strbuf_reset(&sb);
    textfmt_escape(&sb, (const char *)in, cut);
    textfmt_escape(&sb, (const char *)in + cut, len - cut);
    n = unescape(strbuf_cstr(&sb), back);
    if (n != len || memcmp(in, back, len) != 0) {
      check_fail(__FILE__, __LINE__, "round %d: joined \"%s\" does not decode to its input",
                 round, strbuf_cstr(&sb));
      strbuf_free(&sb);
      return;
    }
    strbuf_free(&sb);
  }
}

/* textfmt_sanitize: the same characters escaped, backslashes kept, so text
 * that is already escaped comes out unchanged. */
TEST(sanitize_escapes_raw_characters_and_keeps_escaped_text)
{
  StrBuf sb = STRBUF_INIT;
  static const char mixed[] = "a\tb\xe2\x80\x8b\\u{202e}\\";
  textfmt_sanitize(&sb, mixed, sizeof mixed - 1);
  CHECK_STR(strbuf_cstr(&sb), "a\\tb\\u{200b}\\u{202e}\\");
  srand(99);
  for (int round = 0; round < 5000; round++) {
    unsigned char in[16];
    for (size_t i = 0; i < sizeof in; i++)
      in[i] = rand() % 3 ? (unsigned char)"\\ux{}e\xe2\x80\x8b\xf3\xa0"[rand() % 12]
                         : (unsigned char)rand();
    StrBuf once = STRBUF_INIT, twice = STRBUF_INIT, esc = STRBUF_INIT, esc2 = STRBUF_INIT;
    textfmt_sanitize(&once, (const char *)in, sizeof in);
    textfmt_sanitize(&twice, strbuf_cstr(&once), once.len);
    textfmt_escape(&esc, (const char *)in, sizeof in);
    textfmt_sanitize(&esc2, strbuf_cstr(&esc), esc.len);
    bool ok = strcmp(strbuf_cstr(&once), strbuf_cstr(&twice)) == 0 &&
              strcmp(strbuf_cstr(&esc), strbuf_cstr(&esc2)) == 0;
    strbuf_free(&once);
    strbuf_free(&twice);
    strbuf_free(&esc);
    strbuf_free(&esc2);
    if (!ok) {
      check_fail(__FILE__, __LINE__, "round %d: sanitize changed sanitized or escaped text",
                 round);
      break;
    }
  }
  strbuf_free(&sb);
}

/* Whether textfmt_escape shows code point cp as \u{...}. */
static bool
escapes_cp(StrBuf *sb, uint32_t cp)
{
  char u[4];
  size_t n;
  if (cp < 0x800) {
    u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  } else {
    u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
  }
  strbuf_reset(sb);
  textfmt_escape(sb, u, n);
  return sb->len > 3 && memcmp(sb->data, "\\u{", 3) == 0;
}

/* The hand-kept table against the Unicode data of the Python running the
 * tests: every code point of category Cc (C1), Cf, Zl, Zp or Co (private
 * use), every noncharacter, variation selector and Hangul filler, and
 * U+034F, U+17B4, U+17B5 (default-ignorable) must be escaped, and nothing else that Python
 * knows as assigned. Code points unassigned in Python's Unicode version may
 * go either way (the table may come from a newer one). */
TEST(escape_table_agrees_with_python_unicodedata)
{
  static const char script[] =
      "python3 -c '\n"
      "import unicodedata as u\n"
      "print(\"version\", u.unidata_version)\n"
      "def kind(c):\n"
      "    ch = chr(c); cat = u.category(ch); name = u.name(ch, \"\")\n"
      "    if cat in (\"Cc\", \"Cf\", \"Zl\", \"Zp\", \"Co\") \\\n"
      "       or (c & 0xFFFE) == 0xFFFE or 0xFDD0 <= c <= 0xFDEF \\\n"
      "       or \"VARIATION SELECTOR\" in name or (\"HANGUL\" in name and \"FILLER\" in name) \\\n"
      "       or c in (0x34F, 0x17B4, 0x17B5):\n"
      "        return \"M\"\n"
      "    return \"N\" if cat in (\"Cn\", \"Cs\") else \"-\"\n"
      "start, last = 0x80, kind(0x80)\n"
      "for c in range(0x81, 0x110001):\n"
      "    k = kind(c) if c < 0x110000 else \"end\"\n"
      "    if k != last:\n"
      "        print(last, start, c - 1)\n"
      "        start, last = c, k\n"
      "'";
  FILE *f = popen(script, "r");
  if (f == NULL) {
    check_fail(__FILE__, __LINE__, "cannot run python3");
    return;
  }
  static char kinds[0x110000];
  memset(kinds, '?', sizeof kinds);
  char word[16], version[32] = "";
  unsigned long a, b;
  if (fscanf(f, "version %31s", version) != 1)
    check_fail(__FILE__, __LINE__, "python3 printed no Unicode version");
  while (fscanf(f, "%15s %lu %lu", word, &a, &b) == 3 && b < 0x110000 && a <= b)
    memset(kinds + a, word[0], b - a + 1);
  int rc = pclose(f);
  CHECK_INT(rc, 0);
  StrBuf sb = STRBUF_INIT;
  int bad = 0;
  for (uint32_t cp = 0x80; cp < 0x110000 && bad < 10; cp++) {
    if (cp >= 0xD800 && cp <= 0xDFFF)
      continue;
    char k = kinds[cp];
    bool esc = escapes_cp(&sb, cp);
    if ((k == 'M' && !esc) || (k == '-' && esc) || k == '?') {
      check_fail(__FILE__, __LINE__, "U+%04X (python %s says %c) is %s", (unsigned)cp, version,
                 k, esc ? "escaped" : "not escaped");
      bad++;
    }
  }
  strbuf_free(&sb);
}

/* Whether s holds a raw control byte, DEL, a C1 code point, a bidi
 * override/isolate, a zero-width character or a tag character. */
static bool
has_raw_control(const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  for (; *p; p++) {
    if (*p < 0x20 || *p == 0x7f)
      return true;
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
      return true;
    if (p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xa8 && p[2] <= 0xae)
      return true;
    if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
      return true;
    if (p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0x8b && p[2] <= 0x8f) /* ZWSP..RLM */
      return true;
    if (p[0] == 0xf3 && p[1] == 0xa0 && p[2] >= 0x80 && p[2] <= 0x81) /* tags */
      return true;
  }
  return false;
}

TEST(escape_never_lets_a_control_through)
{
  for (int b = 0; b < 256; b++) {
    char in[1] = {(char)b};
    char *got = escape(in, 1);
    if (has_raw_control(got))
      check_fail(__FILE__, __LINE__, "byte 0x%02x came through raw", b);
    free(got);
  }
  /* Random byte strings, biased towards the interesting lead bytes. */
  srand(1234);
  static const unsigned char picks[] = {0x00, 0x0a, 0x1b, 0x7f, 0x80, 0x9b, 0xc2, 0xe2, 0x80,
                                        0x81, 0xa8, 0xae, 0xa6, 0x8b, 0xf3, 0xa0, 'a', '\\'};
  for (int round = 0; round < 20000; round++) {
    unsigned char in[12];
    for (size_t i = 0; i < sizeof in; i++)
      in[i] = rand() % 2 ? picks[rand() % sizeof picks] : (unsigned char)rand();
    char *got = escape((const char *)in, sizeof in);
    if (has_raw_control(got)) {
      check_fail(__FILE__, __LINE__, "round %d: a control came through: %s", round, got);
      free(got);
      break;
    }
    free(got);
  }
}

/* textfmt_time in the zone tz (a POSIX TZ string or a zoneinfo name). */
static char *
time_in(const char *tz, int64_t ms)
{
  setenv("TZ", tz, 1);
  tzset();
  StrBuf sb = STRBUF_INIT;
  textfmt_time(&sb, ms);
  return strbuf_take(&sb);
}

#define CHECK_TIME(tz, ms, want)       \
  do {                                 \
    char *got_ = time_in(tz, ms);      \
    CHECK_STR(got_, want);             \
    free(got_);                        \
  } while (0)

/* 2026-04-24T14:59:59.120Z */
#define T0 1777042799120LL

TEST(time_rfc3339_with_ms_and_offset)
{
  CHECK_TIME("UTC", T0, "2026-04-24T14:59:59.120+00:00");
  CHECK_TIME("CET-1", T0, "2026-04-24T15:59:59.120+01:00");
  CHECK_TIME("EST5", T0, "2026-04-24T09:59:59.120-05:00");
  CHECK_TIME("IST-5:30", T0, "2026-04-24T20:29:59.120+05:30");
  CHECK_TIME("UTC", T0 - 115, "2026-04-24T14:59:59.005+00:00");
  CHECK_TIME("UTC", 0, "1970-01-01T00:00:00.000+00:00");
  CHECK_TIME("UTC", -1, "1969-12-31T23:59:59.999+00:00");
}

TEST(time_offset_follows_dst)
{
  if (access("/usr/share/zoneinfo/Europe/Paris", R_OK) != 0) {
    /* Without tzdata, a POSIX rule with DST exercises the same path. */
    CHECK_TIME("CET-1CEST,M3.5.0,M10.5.0/3", T0, "2026-04-24T16:59:59.120+02:00");
    CHECK_TIME("CET-1CEST,M3.5.0,M10.5.0/3", 1767225600000LL, "2026-01-01T01:00:00.000+01:00");
  } else {
    CHECK_TIME("Europe/Paris", T0, "2026-04-24T16:59:59.120+02:00");
    CHECK_TIME("Europe/Paris", 1767225600000LL, "2026-01-01T01:00:00.000+01:00");
  }
  setenv("TZ", "UTC", 1);
  tzset();
}

TEST(now_ms_is_the_wall_clock)
{
  int64_t before = (int64_t)time(NULL) * 1000;
  int64_t now = clock_now_ms();
  int64_t after = (int64_t)time(NULL) * 1000 + 1000;
  CHECK(now >= before && now <= after);
}

/* Whether s is n lowercase hex digits. */
static bool
is_hex(const char *s, size_t n)
{
  if (strlen(s) != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789abcdef", s[i]))
      return false;
  return true;
}

static int
cmp_str(const void *a, const void *b)
{
  return strcmp((const char *)a, (const char *)b);
}

TEST(nonce_is_hex_of_the_right_length_and_unique)
{
  enum { N = 1000 };
  static char nonces[N][33];
  for (int i = 0; i < N; i++) {
    memset(nonces[i], 'X', sizeof nonces[i]);
    random_hex(nonces[i], 16);
    if (!is_hex(nonces[i], 32))
      check_fail(__FILE__, __LINE__, "nonce %d is not 32 hex digits: %s", i, nonces[i]);
  }
  qsort(nonces, N, sizeof nonces[0], cmp_str);
  for (int i = 1; i < N; i++)
    if (strcmp(nonces[i - 1], nonces[i]) == 0)
      check_fail(__FILE__, __LINE__, "nonce repeated: %s", nonces[i]);

  char small[17];
  random_hex(small, 8);
  CHECK(is_hex(small, 16));
  char big[2 * 100 + 1]; /* more than one internal chunk */
  random_hex(big, 100);
  CHECK(is_hex(big, 200));
}

TEST(monitor_id_format_and_spread)
{
  enum { N = 1000 };
  static char ids[N][17];
  int seen[36] = {0};
  for (int i = 0; i < N; i++) {
    memset(ids[i], 'X', sizeof ids[i]);
    random_monitor_id(ids[i]);
    bool ok = strlen(ids[i]) == 16 && strncmp(ids[i], "mon_", 4) == 0;
    for (int j = 4; ok && j < 16; j++) {
      char c = ids[i][j];
      if (c >= '0' && c <= '9')
        seen[c - '0']++;
      else if (c >= 'a' && c <= 'z')
        seen[10 + c - 'a']++;
      else
        ok = false;
    }
    if (!ok)
      check_fail(__FILE__, __LINE__, "bad monitor id: %s", ids[i]);
  }
  /* 12000 digits, ~333 of each: every digit shows up, none dominates. */
  for (int d = 0; d < 36; d++)
    if (seen[d] < 150 || seen[d] > 600)
      check_fail(__FILE__, __LINE__, "digit %d seen %d times in 12000", d, seen[d]);
  qsort(ids, N, sizeof ids[0], cmp_str);
  for (int i = 1; i < N; i++)
    if (strcmp(ids[i - 1], ids[i]) == 0)
      check_fail(__FILE__, __LINE__, "monitor id repeated: %s", ids[i]);
}

#define CHECK_DURATION(ms, want)             \
  do {                                       \
    StrBuf sb_ = STRBUF_INIT;                \
    textfmt_duration(&sb_, ms);              \
    CHECK_STR(strbuf_cstr(&sb_), want);      \
    strbuf_free(&sb_);                       \
  } while (0)

TEST(durations_read_like_a_person_writes_them)
{
  CHECK_DURATION(0, "0ms");
  CHECK_DURATION(850, "850ms");
  CHECK_DURATION(999, "999ms");
  CHECK_DURATION(1000, "1.0s");
  CHECK_DURATION(12345, "12.3s");
  CHECK_DURATION(59999, "59.9s");
  CHECK_DURATION(60000, "1m00s");
  CHECK_DURATION(192000, "3m12s");
  CHECK_DURATION(185000, "3m05s");
  CHECK_DURATION(3599999, "59m59s");
  CHECK_DURATION(3600000, "1h00m");
  CHECK_DURATION(7500000, "2h05m");
  CHECK_DURATION(86399999, "23h59m");
  CHECK_DURATION(86400000, "1d00h");
  CHECK_DURATION(273600000, "3d04h");
}

TEST(signal_names)
{
  CHECK_STR(signals_name(SIGKILL), "SIGKILL");
  CHECK_STR(signals_name(SIGTERM), "SIGTERM");
  CHECK_STR(signals_name(SIGSEGV), "SIGSEGV");
  CHECK_STR(signals_name(SIGINT), "SIGINT");
  CHECK(signals_name(0) == NULL);
  CHECK(signals_name(1000) == NULL);
}

/* textfmt_number of d, as a malloc'd string. */
static char *
number(double d)
{
  StrBuf sb = STRBUF_INIT;
  textfmt_number(&sb, d);
  return strbuf_take(&sb);
}

#define CHECK_NUMBER(d, want)    \
  do {                           \
    char *got_ = number(d);      \
    CHECK_STR(got_, want);       \
    free(got_);                  \
  } while (0)

TEST(numbers_read_back_as_the_value_given)
{
  /* Whole numbers as integers, never in exponent form (%g gave 3.6e+06). */
  CHECK_NUMBER(3600000, "3600000");
  CHECK_NUMBER(3600001, "3600001");
  CHECK_NUMBER(1234567, "1234567");
  CHECK_NUMBER(0, "0");
  CHECK_NUMBER(-0.0, "0");
  CHECK_NUMBER(-42, "-42");
  CHECK_NUMBER(9007199254740993.0, "9007199254740992"); /* the double it is */
  CHECK_NUMBER(1e20, "100000000000000000000");
  /* Fractions with the fewest digits that read back as the same double. */
  CHECK_NUMBER(3600001.5, "3600001.5");
  CHECK_NUMBER(0.1, "0.1");
  CHECK_NUMBER(0.001, "0.001");
  CHECK_NUMBER(5000.25, "5000.25");
  CHECK_NUMBER(1.0 / 3, "0.3333333333333333");
  CHECK_NUMBER(1e-7, "1e-07");
  CHECK_NUMBER(1e300, "1e+300");
  CHECK_NUMBER(1.0 / 0.0, "inf");
  CHECK_NUMBER(-1.0 / 0.0, "-inf");
}

int
main(void)
{
  RUN(escape_c0_and_del);
  RUN(escape_keeps_plain_text_and_most_backslashes);
  RUN(escape_is_injective_a_printed_escape_differs_from_the_character);
  RUN(escape_format_characters_and_other_invisibles);
  RUN(escape_private_use_area);
  RUN(escape_decodes_back_to_its_input);
  RUN(sanitize_escapes_raw_characters_and_keeps_escaped_text);
  RUN(escape_table_agrees_with_python_unicodedata);
  RUN(escape_c1_as_code_points);
  RUN(escape_invalid_utf8_per_byte);
  RUN(escape_valid_utf8_passes);
  RUN(escape_bidi_and_line_separators);
  RUN(escape_never_lets_a_control_through);
  RUN(time_rfc3339_with_ms_and_offset);
  RUN(time_offset_follows_dst);
  RUN(now_ms_is_the_wall_clock);
  RUN(nonce_is_hex_of_the_right_length_and_unique);
  RUN(monitor_id_format_and_spread);
  RUN(durations_read_like_a_person_writes_them);
  RUN(signal_names);
  RUN(numbers_read_back_as_the_value_given);
  return check_summary();
}
