/*
 * A stand-in for libFuzzer, so every fuzz harness also runs as a quick,
 * deterministic ctest smoke test under gcc and the sanitizers: it feeds the
 * harness a few thousand inputs made from a seed corpus of tricky fragments
 * (quotes, escapes, operators, CR/LF, ESC sequences, NUL, invalid UTF-8,
 * line prefixes, format characters, Lua pattern items, JSON-RPC and hook
 * keys and messages),
 * spliced, mutated and cut at random places. A harness reports a bug by
 * aborting, so the test fails on the first bad input, which is printed in
 * hex first. Real coverage-guided fuzzing: configure with clang and
 * -DVIGIL_FUZZ=ON.
 *
 *   fuzz_NAME [ITERATIONS]   (default 20000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fragments[] = {
  "echo", " ", "\t", "'", "\"", "\\", "\\\n", "$(", "`", "|", "&&", ";", "<", ">", "\n",
  "\r\n", "\r", "a b", "'x y'", "\"x \\\" y\"", "\x1b[31m", "\x1b[0m", "\x1b]0;title\x07",
  "\x1b", "\x1bP", "\x1b\\", "\0", "\xff", "\xc3", "\xc3\xa9", "\xe2\x82", "\xf0\x9f\x98\x80",
  "\xed\xa0\x80", "Error: boom", "panic:", "x", "0123456789", "{", "}", "[", "]", "(", ")",
  /* For the envelope: prefixes, vigil's words, escapes printed, invisibles. */
  "[stdout seq=1] ", "[stderr seq=2] ", "[stdout seq=8] ", "status: running", "\\u{202e}",
  "\\x1b", "\\n", "\xe2\x80\xae", "\xe2\x80\x8b", "\xef\xbb\xbf", "\xf3\xa0\x81\x81",
  "\xe2\x80\xa8", "\xc2\x85", "yyyyyyyyyyyy",
  /* For the chunk-wide literal search: literals, near misses, long runs. */
  "uncaught", "uncaugh", "caf\xc3\xa9", "xxxy", "12ms", "seq=", "Error: boom",
  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  /* For Lua patterns: classes, quantifiers, anchors, captures, %b, %f. */
  "%", "%a", "%d+", "%s*", "[^%]]", ".-", ".*", "^", "$", "%b()", "%f[%w]", "(%w+)", "%1",
  "()", "[a-z]", "+", "?",
  /* For setup's editors: TOML, YAML and JSON structure, and the keys. */
  "[mcp_servers]", "[mcp_servers.vigil]", "[[a]]", " = ", "\"\"\"", "'''", "# c\n",
  "mcp_servers.vigil.x = 1\n", "extensions:\n", "  vigil:\n", "- ", ": ", "---\n", "&a ",
  "*a", "{}", "\"mcpServers\": {", "\"vigil\": 1", ",\n  ",
  /* For the signal stage: crash headers, trace lines, chaining words. */
  "Traceback (most recent call last):", "  File \"/app/x.py\", line 3, in f", "KeyError: 'id'",
  "During handling of the above exception, another exception occurred:",
  "TypeError: x is undefined", "    at f (/app/x.js:1:2)", "Node.js v20.1.0",
  "goroutine 1 [running]:", "\t/app/main.go:12 +0x1d", "Caused by: java.io.IOException",
  "\tat com.x.A.f(A.java:3)", "thread 'main' panicked at src/main.rs:2:5:",
  "==42==ERROR: AddressSanitizer: heap-use-after-free", "    #0 0x4005 in f a.c:3",
  /* For JSON-RPC (vigil mcp) and hook input: keys, values, whole messages. */
  "{\"jsonrpc\":\"2.0\",", "\"id\":", "1", "-7.5", "\"x\"", "null", "true", ",", ":",
  "\"method\":", "\"tools/call\"", "\"tools/list\"", "\"ping\"", "\"initialize\"",
  "\"notifications/initialized\"", "\"logging/setLevel\"", "\"params\":{", "\"name\":",
  "\"monitor_start\"", "\"monitor_list\"", "\"notifications_read\"", "\"process.run\"",
  "\"Monitor\"", "\"terminal\"", "\"arguments\":{", "\"command\":", "\"wait_ms\":",
  "\"result\":", "\"\\u00e9\"", "\"\\ud800\"", "\"\\u0000\"",
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
  "\"monitor_start\",\"arguments\":{\"command\":\"sleep 1\"}}}\n",
  "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\"}\n",
  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
  "\"session_id\":", "\"conversation_id\":", "\"hook_event_name\":", "\"cwd\":",
  "\"/tmp/p\"", "\"Stop\"", "\"stop_hook_active\":", "\"tool_input\":", "\"workspace_roots\":",
  "{\"session_id\":\"abc-1\",\"hook_event_name\":\"Stop\",\"cwd\":\"/p\","
  "\"stop_hook_active\":false}",
};

static uint64_t driver_state = 0x2545f4914f6cdd1dull;

static uint32_t
driver_rand(uint32_t n)
{
  driver_state ^= driver_state << 13;
  driver_state ^= driver_state >> 7;
  driver_state ^= driver_state << 17;
  return (uint32_t)(driver_state % n);
}

int
main(int argc, char **argv)
{
  long iterations = argc > 1 ? atol(argv[1]) : 20000;
  static uint8_t buf[1 << 16];
  size_t nfrag = sizeof fragments / sizeof fragments[0];
  for (long it = 0; it < iterations; it++) {
    size_t len = 0;
    size_t pieces = 1 + driver_rand(it % 97 == 0 ? 400 : 24);
    for (size_t i = 0; i < pieces && len < sizeof buf - 64; i++) {
      const char *f = fragments[driver_rand((uint32_t)nfrag)];
      size_t flen = f[0] == '\0' ? 1 : strlen(f); /* the "\0" fragment is one NUL */
      memcpy(buf + len, f, flen);
      len += flen;
    }
    /* A few random byte flips and a random cut. */
    for (uint32_t k = driver_rand(3); k > 0 && len > 0; k--)
      buf[driver_rand((uint32_t)len)] = (uint8_t)driver_rand(256);
    if (len > 0 && driver_rand(4) == 0)
      len = driver_rand((uint32_t)len);
    /* Print the input first, so a crash leaves it in the log. */
    if (getenv("FUZZ_VERBOSE")) {
      for (size_t i = 0; i < len; i++)
        fprintf(stderr, "%02x", buf[i]);
      fputc('\n', stderr);
    }
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("%ld inputs, no failure\n", iterations);
  return 0;
}
