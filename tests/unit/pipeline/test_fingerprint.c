/*
 * Unit tests of incident fingerprints: the 40 restarts of a crash loop,
 * differing in everything that varies from run to run, fingerprint alike;
 * two different failures (type, words, file, pattern) never do; the normal
 * form of typical lines is checked exactly, so a change of a rule shows
 * here first; a 1 MiB line costs a bounded scan; odd lines are handled;
 * and one known line keeps a known hash across releases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/fingerprint.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* The normal form of s (static storage, overwritten per call). */
static const char *
norm(const char *s)
{
  static StrBuf sb = STRBUF_INIT;
  strbuf_reset(&sb);
  fingerprint_normalise(s, strlen(s), &sb);
  return strbuf_cstr(&sb);
}

static uint64_t
fp(const char *s, int pattern)
{
  return fingerprint_of(s, strlen(s), pattern);
}

/* One restart of a crash loop: everything that changes between restarts
 * is drawn from i. */
static void
crash_line(StrBuf *sb, int i)
{
  static const char *const stamps[] = {
      "2024-01-05T12:03:%02d.%03dZ", "2024-01-05 12:03:%02d,%03d", "12:03:%02d.%03d",
      "Jan  5 12:03:%02d", "2024-01-05T12:03:%02d.%03d+01:00"};
  static const char *const inputs[] = {"hello", "", "42", "ünïcode", "a b c", "x'y",
                                       "DROP TABLE"};
  char stamp[64];
  snprintf(stamp, sizeof stamp, stamps[i % 5], i % 60, (i * 37) % 1000);
  strbuf_reset(sb);
  strbuf_printf(sb,
                "%s [app:%d] req-%08x at 0x%x failed after %d%s on :%d: TypeError: Cannot read "
                "properties of undefined (reading '%s') at /tmp/tmp.%06x/dist/server.js:%d:%d "
                "(request %s, user input \"%s\", %d retries)",
                stamp, 1000 + i * 131, 0xa1000000u + (unsigned)i * 7919u,
                0x7f00u + (unsigned)i * 977u, i * 13 + 1, i % 3 ? "ms" : "s", 3000 + i,
                i % 2 ? "id" : "name", (unsigned)i * 104729u, 10 + i % 4, 5 + i % 9,
                i % 2 ? "550e8400-e29b-41d4-a716-446655440000"
                      : "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                inputs[i % 7], i);
}

TEST(crash_loop_variants_fingerprint_alike)
{
  StrBuf line = STRBUF_INIT;
  crash_line(&line, 0);
  uint64_t first = fingerprint_of(line.data, line.len, 3);
  CHECK_STR(norm(line.data),
            "<T> [app:<N>] req-<H> at <H> failed after <D> on :<N>: TypeError: Cannot read "
            "properties of undefined (reading '<Q>') at /tmp/<P>/dist/server.js:<N>:<N> "
            "(request <U>, user input \"<Q>\", <N> retries)");
  for (int i = 1; i < 40; i++) {
    crash_line(&line, i);
    uint64_t h = fingerprint_of(line.data, line.len, 3);
    if (h != first)
      check_fail(__FILE__, __LINE__, "variant %d differs:\n  %s\n  -> %s", i, line.data,
                 norm(line.data));
  }
  strbuf_free(&line);
}

/* Pairs that must fingerprint alike, one varying part each. */
TEST(pairs_alike)
{
  static const char *const pairs[][2] = {
      {"worker 1234 exited", "worker 99 exited"},
      {"listening on http://localhost:3000/", "listening on http://localhost:51234/"},
      {"at /app/a.js:12:5", "at /app/a.js:140:17"},
      {"[2024-01-05T12:03:04Z] boom", "[2023-12-31T23:59:59.999999+05:30] boom"},
      {"[2024-01-05 12:03:04] boom", "[2024/02/06 01:02:03] boom"},
      {"Nov 24 06:48:01 host boom", "Dec  1 23:00:09 host boom"},
      {"12:03:04.123 boom", "01:00:00 boom"},
      {"took 12ms", "took 250\xc2\xb5s"},
      {"took 1.5s", "took 3m12s"},
      {"commit 1a2b3c4d5e6f7a8b9c0d", "commit 0f9e8d7c6b5a4f3e2d1c"},
      {"at 0x7f3a2b1c", "at 0xDEADBEEF"},
      {"id 550e8400-e29b-41d4-a716-446655440000", "id 6BA7B810-9DAD-11D1-80B4-00C04FD430C8"},
      {"key 'abc' missing", "key 'x y z' missing"},
      {"key \"abc\" missing", "key \"\" missing"},
      {"ran `npm test`", "ran `make`"},
      {"/tmp/tmp.abc123/server.js failed", "/tmp/tmp.Zq9/server.js failed"},
      {"/home/alice/app/server.js failed", "/home/bob/app/server.js failed"},
      {"/Users/alice/app/x.js", "/Users/carol/app/x.js"},
      {"/home/u/.nvm/versions/node/v18.17.1/lib/a.js",
       "/home/v/.nvm/versions/node/v20.1.0/lib/a.js"},
      {"node_modules/.pnpm/pkg@1.2.3/node_modules/pkg/a.js",
       "node_modules/.pnpm/pkg@1.2.4_peer@2.0.0/node_modules/pkg/a.js"},
      {"node_modules/pkg@1.2.3/a.js", "node_modules/pkg@10.0.0/a.js"},
      {"  spaced \t out  ", "spaced out"},
      {"{\"pid\":12,\"msg\":\"boom\"}", "{\"pid\":13,\"msg\":\"boom\"}"},
      {"level=error msg=\"boom\" port=5432", "level=error msg=\"boom\" port=6543"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
    if (fp(pairs[i][0], 0) != fp(pairs[i][1], 0)) {
      char a[FINGERPRINT_MAX_BYTES + 1];
      snprintf(a, sizeof a, "%s", norm(pairs[i][0]));
      check_fail(__FILE__, __LINE__, "pair %zu should be alike:\n  %s\n  %s", i, a,
                 norm(pairs[i][1]));
    }
  }
}

/* Pairs that must fingerprint differently: another failure each time. */
TEST(pairs_different)
{
  static const char *const pairs[][2] = {
      {"TypeError: x is not a function", "RangeError: x is not a function"},
      {"Error: connect ECONNREFUSED 127.0.0.1:5432", "Error: connect ETIMEDOUT 127.0.0.1:5432"},
      {"cannot open database", "cannot open socket"},
      {"at /app/server.js:12:5", "at /app/worker.js:12:5"},
      {"/tmp/tmp.abc/server.js", "/tmp/tmp.abc/worker.js"},
      {"/tmp/server.log", "/tmp/worker.log"},
      {"File \"server.py\", line 3", "File \"worker.py\", line 3"},
      {"Cannot find module '/app/a.js'", "Cannot find module '/app/b.js'"},
      {"error TS2345: bad", "error TS2322: bad"},
      {"error[E0308]: mismatched types", "error[E0277]: mismatched types"},
      {"not a Uint8Array", "not a Float64Array"},
      {"magic deadbeef", "magic cafebabe"},
      {"{\"msg\":\"connection refused\"}", "{\"msg\":\"out of memory\"}"},
      {"level=error msg=\"connection refused\"", "level=error msg=\"out of memory\""},
      {"panic: boom", "panic: boom:"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
    if (fp(pairs[i][0], 0) == fp(pairs[i][1], 0))
      check_fail(__FILE__, __LINE__, "pair %zu should differ:\n  %s\n  %s", i, pairs[i][0],
                 pairs[i][1]);
  }
  /* The same line under another pattern is another incident. */
  CHECK(fp("TypeError: boom", 0) != fp("TypeError: boom", 1));
  CHECK(fp("TypeError: boom", -1) != fp("TypeError: boom", 0));
  CHECK(fp("TypeError: boom", 256) != fp("TypeError: boom", 1));
}

/* The normal form, exactly, rule by rule. */
TEST(normal_forms)
{
  static const char *const cases[][2] = {
      /* timestamps */
      {"2024-01-05T12:03:04.123Z start", "<T> start"},
      {"2024-01-05 12:03:04,123 INFO x", "<T> INFO x"},
      {"2024-01-05T12:03:04+0100|2024-01-05T12:03-05:00|2024-01-05", "<T>|<T>|<T>"},
      {"[12:03:04.123] x", "[<T>] x"},
      {"Nov 24 06:48:01 host sshd[812]: x", "<T> host sshd[<N>]: x"},
      {"Sat Nov 24 06:48:01 2024 x", "<T> x"},
      {"Mon Jan 01 2024 12:00:00 GMT+0000 (Coordinated Universal Time)",
       "<T> (Coordinated Universal Time)"},
      {"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 500 12",
       "<V> - - [<T>] \"<Q>\" <N> <N>"},
      {"12:03:04 UTC x", "<T> x"},
      /* line and column are numbers, not a time */
      {"at f (/app/a.js:12:5)", "at f (/app/a.js:<N>:<N>)"},
      /* ids */
      {"id=550e8400-e29b-41d4-a716-446655440000.", "id=<U>."},
      {"sha 1a2b3c4d5e6f7a8b, ptr 0x7ffd1234, 0XAB", "sha <H>, ptr <H>, <H>"},
      /* 8+ hex digits with a digit are an id even when all are digits (a
       * random request id sometimes is); 7 are not. */
      {"deadbeef cafebabe 12345678 1a2b3c4", "deadbeef cafebabe <H> <N>a2b3c4"},
      {"req_f7b77e90 req_19461922 1234567", "req_<H> req_<H> <N>"},
      {"req_8f3a2b1c chunk-5f3a9b2c.js", "req_<H> chunk-<H>.js"},
      /* versions and addresses */
      {"node v18.17.1 at 127.0.0.1:3000, pkg@1.2.3", "node <V> at <V>:<N>, pkg@<V>"},
      {"python3.11 v1", "python3.<N> v1"},
      /* durations */
      {"12ms 1.5s 250\xc2\xb5s 250\xce\xbcs 3m12s 1h2m3.5s 5min 7d",
       "<D> <D> <D> <D> <D> <D> <D> <D>"},
      {"12 ms", "<N> ms"},
      /* numbers */
      {"pid 4242 port :3000 -5 3.14 1,024 #7", "pid <N> port :<N> -<N> <N> <N>,<N> #<N>"},
      {"512MB 3rd user_12 pool-1-thread-2", "<N>MB <N>rd user_<N> pool-<N>-thread-<N>"},
      {"TS2345 E0308 worker3 ERR_HTTP2_HEADERS", "TS2345 E0308 worker3 ERR_HTTP2_HEADERS"},
      /* quotes */
      {"reading 'id' of \"x\" in `y`", "reading '<Q>' of \"<Q>\" in `<Q>`"},
      {"don't 'can't stop' the users' table", "don't '<Q>' the users' table"},
      {"esc \"a \\\" b\" end", "esc \"<Q>\" end"},
      {"Cannot find module '/tmp/t.1/a.js' from 'src/b.ts'",
       "Cannot find module '/tmp/<P>/a.js' from 'src/b.ts'"},
      {"bad email 'bob@x.com', bad 'x.js'", "bad email '<Q>', bad 'x.js'"},
      {"thread 'main' panicked at src/main.rs:12:5:",
       "thread '<Q>' panicked at src/main.rs:<N>:<N>:"},
      /* structured records keep double quotes as punctuation */
      {"{\"level\":50,\"time\":1700000000000,\"msg\":\"boom 'x'\"}",
       "{\"level\":<N>,\"time\":<H>,\"msg\":\"boom '<Q>'\"}"},
      {"time=\"2024-01-05T12:03:04Z\" level=error msg=\"dial tcp :5432\"",
       "time=\"<T>\" level=error msg=\"dial tcp :<N>\""},
      /* paths */
      {"/tmp/tmp.abc123/server.js /tmp/server.log", "/tmp/<P>/server.js /tmp/server.log"},
      {"/var/folders/xy/ab_12/T/tmp.X9/a.js", "/var/folders/<P>/<P>/<P>/<P>/a.js"},
      {"/home/alice/.cache/x /Users/bob/src/y.ts", "/home/<P>/.cache/x /Users/<P>/src/y.ts"},
      {"node_modules/.pnpm/a@1.0.0_b@2.0.0/node_modules/a/i.js",
       "node_modules/.pnpm/<P>/node_modules/a/i.js"},
      {"./tmp/x/y /app/tmp/x/y", "./tmp/x/y /app/tmp/x/y"},
      /* whitespace */
      {" \t lead  and\ttrail \r ", "lead and trail"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_STR(norm(cases[i][0]), cases[i][1]);
}

/* A normal form equal to another means an equal fingerprint, and the
 * fingerprint does not depend on what out held before. */
TEST(normalise_appends_and_agrees_with_hash)
{
  StrBuf sb = STRBUF_INIT;
  strbuf_puts(&sb, "prefix:");
  fingerprint_normalise("pid 12", 6, &sb);
  CHECK_STR(strbuf_cstr(&sb), "prefix:pid <N>");
  strbuf_free(&sb);
  CHECK(fp("pid 12", 0) == fp("pid   99999 ", 0));
  CHECK(fp("pid 12", 0) != fp("pid", 0));
}

/* Lines at the edges: nothing, blanks, all digits, lone and unterminated
 * quotes, a quote at the very end. */
TEST(odd_input)
{
  StrBuf sb = STRBUF_INIT;
  fingerprint_normalise(NULL, 0, &sb);
  CHECK_INT(sb.len, 0);
  fingerprint_normalise("   \t ", 5, &sb);
  CHECK_INT(sb.len, 0);
  strbuf_free(&sb);
  CHECK(fingerprint_of(NULL, 0, 0) == fp("  ", 0));

  CHECK_STR(norm("1234567890123456789012345678901234567890"), "<H>");
  CHECK_STR(norm("0"), "<N>");
  CHECK_STR(norm("'"), "'");
  CHECK_STR(norm("\""), "\"");
  CHECK_STR(norm("`"), "`");
  CHECK_STR(norm("''"), "'<Q>'");
  CHECK_STR(norm("it said 'hello and more"), "it said 'hello and more");
  CHECK_STR(norm("a \"b 'c' d"), "a \"b '<Q>' d");
  CHECK_STR(norm("x \"y\\"), "x \"y\\");
  CHECK_STR(norm("end '"), "end '");
  CHECK_STR(norm("0x"), "<N>x");
  CHECK_STR(norm("v1. 1. .5 1.2."), "v1. <N>. .<N> <N>.");
  CHECK_STR(norm("2024-01-05T"), "<N>-<N>-<N>T");
  CHECK_STR(norm("Nov 24"), "Nov <N>");
  CHECK_STR(norm("/tmp/"), "/tmp/");
  CHECK_STR(norm("/home/"), "/home/");
  /* Words differing only in quotes closed nowhere stay apart. */
  CHECK(fp("unexpected \" in expression", 0) != fp("unexpected \" in statement", 0));
}

/* The normal form is cut at FINGERPRINT_MAX_BYTES, never inside a
 * character, and a long varying part before the cut changes nothing. */
TEST(normal_form_is_bounded)
{
  StrBuf line = STRBUF_INIT;
  for (int i = 0; i < 200; i++)
    strbuf_puts(&line, "\xe2\x82\xac"); /* 600 bytes of euro signs */
  const char *n = norm(line.data);
  CHECK_INT(strlen(n), 510); /* 170 whole signs; the 171st does not fit */
  CHECK(utf8_valid(n, strlen(n)));

  strbuf_reset(&line);
  for (int i = 0; i < 100; i++)
    strbuf_puts(&line, "abcdefghij");
  n = norm(line.data);
  CHECK_INT(strlen(n), FINGERPRINT_MAX_BYTES); /* a word is cut to fit */

  /* Two long lines that differ only in the width of a pid: the 512 bytes
   * hashed are the same, since the bound is on the normal form. */
  StrBuf a = STRBUF_INIT, b = STRBUF_INIT;
  strbuf_puts(&a, "pid 1 crashed:");
  strbuf_puts(&b, "pid 1234567 crashed:");
  for (int i = 0; i < 300; i++) {
    strbuf_printf(&a, " word%d", i);
    strbuf_printf(&b, " word%d", i);
  }
  CHECK(fingerprint_of(a.data, a.len, 0) == fingerprint_of(b.data, b.len, 0));
  strbuf_free(&a);
  strbuf_free(&b);
  strbuf_free(&line);
}

/* A 1 MiB line: the scan stops after FINGERPRINT_SCAN_BYTES. Each line is
 * built so that reading its end would change the output, and the output
 * shows it was not read. */
TEST(one_mebibyte_line_is_bounded)
{
  size_t len = 1u << 20;
  char *s = malloc(len);
  CHECK(s != NULL);
  if (s == NULL)
    return;
  StrBuf sb = STRBUF_INIT;

  /* Blanks, then a word at the end: the word is never reached. */
  memset(s, ' ', len);
  s[len - 1] = 'x';
  fingerprint_normalise(s, len, &sb);
  CHECK_INT(sb.len, 0);

  /* A quote opened at the start and closed at the end: the close is never
   * seen, so the value runs to the end of the scan. */
  memset(s, 'a', len);
  s[0] = '\'';
  s[len - 1] = '\'';
  strbuf_reset(&sb);
  fingerprint_normalise(s, len, &sb);
  CHECK_STR(strbuf_cstr(&sb), "'<Q>");

  /* Digits, and a letter at the end that would make them a word with a
   * unit: only the digits of the scan are read (a run that long is an id). */
  memset(s, '7', len);
  s[len - 1] = 'x';
  strbuf_reset(&sb);
  fingerprint_normalise(s, len, &sb);
  CHECK_STR(strbuf_cstr(&sb), "<H>");

  /* Mixed text: the normal form stops at its bound. */
  for (size_t i = 0; i < len; i++)
    s[i] = "ab1 '\"x/:0.9-"[i % 13];
  strbuf_reset(&sb);
  fingerprint_normalise(s, len, &sb);
  CHECK(sb.len > 0 && sb.len <= FINGERPRINT_MAX_BYTES);

  strbuf_free(&sb);
  free(s);
}

/* The one hard-coded value: fingerprints go on the wire and into event
 * logs, and a host compares them across engine restarts and releases, so
 * a change of the hash or of a rule that moves this line must be a
 * decision, noticed here, not an accident. The value was computed once
 * (FNV-1a 64 over the pattern's 4 bytes, little-endian, then the normal
 * form below; a separate Python FNV-1a gave the same). */
TEST(hash_is_stable)
{
  const char *line = "2024-01-05T12:03:04.123Z [pid 4242] TypeError: Cannot read properties of "
                     "undefined (reading 'id') at /tmp/tmp.abc123/server.js:12:5";
  CHECK_STR(norm(line), "<T> [pid <N>] TypeError: Cannot read properties of undefined "
                        "(reading '<Q>') at /tmp/<P>/server.js:<N>:<N>");
  char hex[17];
  fingerprint_hex(fp(line, 2), hex);
  CHECK_STR(hex, "06199619f59193d2");

  fingerprint_hex(0, hex);
  CHECK_STR(hex, "0000000000000000");
  fingerprint_hex(0x0123456789abcdefULL, hex);
  CHECK_STR(hex, "0123456789abcdef");
  fingerprint_hex(UINT64_MAX, hex);
  CHECK_STR(hex, "ffffffffffffffff");
}

int
main(void)
{
  RUN(crash_loop_variants_fingerprint_alike);
  RUN(pairs_alike);
  RUN(pairs_different);
  RUN(normal_forms);
  RUN(normalise_appends_and_agrees_with_hash);
  RUN(odd_input);
  RUN(normal_form_is_bounded);
  RUN(one_mebibyte_line_is_bounded);
  RUN(hash_is_stable);
  return check_summary();
}
