/*
 * textfmt: what a reader sees of untrusted text (the escape table, including
 * invalid UTF-8 and the characters that fake how text looks), timestamps in
 * the local zone with milliseconds and offset, nonces and monitor ids drawn
 * from the OS, and durations the way a person reads them.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "signals.h"
#include "textfmt.h"

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

TEST(escape_keeps_plain_text_and_backslashes)
{
  CHECK_ESCAPE("listening on http://localhost:3000", "listening on http://localhost:3000");
  CHECK_ESCAPE("C:\\path\\n", "C:\\path\\n");
  CHECK_ESCAPE("", "");
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

/* Whether s holds a raw control byte, DEL, a C1 code point or a bidi
 * override/isolate. */
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
  static const unsigned char picks[] = {0x00, 0x0a, 0x1b, 0x7f, 0x80, 0x9b, 0xc2,
                                        0xe2, 0x80, 0x81, 0xa8, 0xae, 0xa6, 'a'};
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
  int64_t now = textfmt_now_ms();
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
    textfmt_nonce(nonces[i], 16);
    if (!is_hex(nonces[i], 32))
      check_fail(__FILE__, __LINE__, "nonce %d is not 32 hex digits: %s", i, nonces[i]);
  }
  qsort(nonces, N, sizeof nonces[0], cmp_str);
  for (int i = 1; i < N; i++)
    if (strcmp(nonces[i - 1], nonces[i]) == 0)
      check_fail(__FILE__, __LINE__, "nonce repeated: %s", nonces[i]);

  char small[17];
  textfmt_nonce(small, 8);
  CHECK(is_hex(small, 16));
  char big[2 * 100 + 1]; /* more than one internal chunk */
  textfmt_nonce(big, 100);
  CHECK(is_hex(big, 200));
}

TEST(monitor_id_format_and_spread)
{
  enum { N = 1000 };
  static char ids[N][17];
  int seen[36] = {0};
  for (int i = 0; i < N; i++) {
    memset(ids[i], 'X', sizeof ids[i]);
    textfmt_monitor_id(ids[i]);
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

int
main(void)
{
  RUN(escape_c0_and_del);
  RUN(escape_keeps_plain_text_and_backslashes);
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
  return check_summary();
}
