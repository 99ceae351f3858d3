/*
 * A stand-in for libFuzzer, so every fuzz harness also runs as a quick,
 * deterministic ctest smoke test under gcc and the sanitizers: it feeds the
 * harness a few thousand inputs made from a seed corpus of tricky fragments
 * (quotes, escapes, operators, CR/LF, ESC sequences, NUL, invalid UTF-8,
 * line prefixes, format characters, Lua pattern items, JSON-RPC and hook
 * keys and messages, real hook inputs of each harness),
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
  /* For the fleet's messages: a subject, headers, an epoch. */
  "vigil.hostb.s%2E1.n", "vigil.", ".n", "%2E", "s.1", "3f9c2a61d07be485", "7", "hostb",
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
  /* Real hook inputs (tests/harness/samples/, paths shortened): Claude
   * Code's Stop, Codex's PostToolUse, Gemini CLI's AfterTool, and what
   * vigil's OpenCode plugin passes on. */
  "{\"session_id\":\"53f31650-d7d1-4e78-98be-2e552efe30d5\",\"transcript_path\":\"/h/t.json"
  "l\",\"cwd\":\"/h/proj\",\"prompt_id\":\"4e30cd09-089e-4b1d-ba2f-4346d4af39af\",\"permiss"
  "ion_mode\":\"auto\",\"effort\":{\"level\":\"high\"},\"hook_event_name\":\"Stop\",\"stop_"
  "hook_active\":false,\"last_assistant_message\":\"LISTED-OK\",\"background_tasks\":[],\"s"
  "ession_crons\":[]}",
  "{\"session_id\":\"01a220b7-9d2e-7ec2-baeb-b9519aad6da9\",\"turn_id\":\"01a220b7-9d43-744"
  "1-9c56-2363a68cff07\",\"transcript_path\":\"/h/t.jsonl\",\"cwd\":\"/h/proj\",\"hook_even"
  "t_name\":\"PostToolUse\",\"model\":\"gpt-fake\",\"permission_mode\":\"bypassPermissions"
  "\",\"tool_name\":\"mcp__vigil__monitor_list\",\"tool_input\":{},\"tool_response\":{\"con"
  "tent\":[{\"type\":\"text\",\"text\":\"{\\n  \\\"monitors\\\": [],\\n  \\\"total\\\": 0"
  "\\n}\"}],\"structuredContent\":{\"monitors\":[],\"total\":0}},\"tool_use_id\":\"call_mwz"
  "zvuzn1\"}",
  "{\"session_id\":\"4def0e56-da35-411a-94b0-db058123fe15\",\"transcript_path\":\"/h/t.json"
  "l\",\"cwd\":\"/h/proj\",\"hook_event_name\":\"AfterTool\",\"timestamp\":\"2026-11-28T05:"
  "53:59.081Z\",\"tool_name\":\"mcp_vigil_monitor_list\",\"tool_input\":{},\"tool_response"
  "\":{\"llmContent\":[{\"text\":\"<untrusted_context>\\n{\\n  \\\"monitors\\\": [],\\n  "
  "\\\"total\\\": 0\\n}\\n</untrusted_context>\"}],\"returnDisplay\":\"{\\n  \\\"monitors"
  "\\\": [],\\n  \\\"total\\\": 0\\n}\"},\"mcp_context\":{\"server_name\":\"vigil\",\"tool_"
  "name\":\"monitor_list\",\"command\":\"/b/vigil\",\"args\":[\"mcp\"]}}",
  "{\"session_id\":\"ses_ddf48317bffeCEYS5T2KGZRLCJ\",\"hook_event_name\":\"session.idle\","
  "\"cwd\":\"/h/proj\"}",
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
