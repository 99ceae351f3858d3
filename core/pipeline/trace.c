/*
 * The continuation rules of crash traces (see trace.h): which lines after a
 * crash line belong to it, one small state machine per family. Each rule
 * names the real output it is for; a line no rule of the current state
 * takes ends the trace, so a trace is never longer than the shapes below
 * allow, and an ordinary log line after a crash is judged on its own.
 *
 * Every function here reads a line by pointer and length (lines are not
 * NUL-terminated) and keeps nothing but the fixed TraceState.
 */
#include "pipeline/trace.h"

#include <string.h>

/* The state of a trace that is over: every later line ends it. */
#define TRACE_OVER (-1)

/* Node: where the trace is, after "/app/x.js:12" (a source excerpt) or
 * after the error line itself. */
enum {
  kNodeSource,  /* next: the source line of the excerpt */
  kNodeCaret,   /* next: the "    ^" under it */
  kNodeThrown,  /* next: (a blank, then) the thrown value, which names the failure */
  kNodeMessage, /* after the error line, before any frame */
  kNodeFrames,  /* among "    at" frames and the error's own properties */
  kNodeBlank,   /* after a blank line that follows the frames */
};

/* Python. */
enum {
  kPyFrames,     /* "  File ..." and source lines, until the final exception line */
  kPyGroup,      /* an exception group: every line is indented; one that is not ends it */
  kPyFinal,      /* after the final line: only a chained traceback may follow */
  kPyChainBlank, /* the blank line after a final line */
  kPyChainLine,  /* after "During handling of the above exception..." */
  kPyChainTrace, /* the blank line before the next "Traceback" */
};

/* Go. */
enum {
  kGoHead,   /* after "panic: x": "[signal ...]", re-panics, then a blank */
  kGoBlank,  /* after a blank line: a goroutine dump may follow */
  kGoFrames, /* inside "goroutine 1 [running]:" dumps */
  kGoExit,   /* after "exit status 2": only go test's "FAIL" line */
};

/* Rust. */
enum {
  kRustMessage1,  /* after "thread 'main' panicked at src/main.rs:2:5:": the message */
  kRustMessage,   /* the message's indented lines, then the note or the backtrace */
  kRustAfter,     /* after an old-style header that holds the message: note or backtrace */
  kRustBacktrace, /* "   0: std::..." and "             at /rustc/..." */
  kRustDiag,      /* a compiler diagnostic: " --> ", "  |", "4 |", "help:" */
};

/* Whether s (n bytes) starts with the literal lit. */
static bool
trace_starts(const char *s, size_t n, const char *lit)
{
  size_t k = strlen(lit);
  return n >= k && memcmp(s, lit, k) == 0;
}

/* Whether s ends with the literal lit. */
static bool
trace_ends(const char *s, size_t n, const char *lit)
{
  size_t k = strlen(lit);
  return n >= k && memcmp(s + n - k, lit, k) == 0;
}

/* Whether s contains the literal lit. */
static bool
trace_contains(const char *s, size_t n, const char *lit)
{
  return memmem(s, n, lit, strlen(lit)) != NULL;
}

/* A blank inside a line: space or tab. */
static bool
trace_is_space(char c)
{
  return c == ' ' || c == '\t';
}

/* An ASCII digit. */
static bool
trace_is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* A character of an identifier: ASCII letter, digit or underscore. */
static bool
trace_is_word(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || trace_is_digit(c) || c == '_';
}

/* The number of leading spaces and tabs. */
static size_t
trace_indent(const char *s, size_t n)
{
  size_t i = 0;
  while (i < n && trace_is_space(s[i]))
    i++;
  return i;
}

/* Whether the line is empty or only blanks. */
static bool
trace_blank(const char *s, size_t n)
{
  return trace_indent(s, n) == n;
}

/* The number of digits at s. */
static size_t
trace_digits(const char *s, size_t n)
{
  size_t i = 0;
  while (i < n && trace_is_digit(s[i]))
    i++;
  return i;
}

/* The length of a process manager's tag at s, 0 when there is none, with
 * one blank after it (more blanks are the line's own indentation):
 * "[0] " or "[web] " (concurrently), "web-1  | " (docker compose),
 * "0|app  | " (pm2). The same shapes as the built-in patterns' prefix. */
static size_t
trace_tag_len(const char *s, size_t n)
{
  if (n > 0 && s[0] == '[') {
    size_t i = 1;
    while (i < n && i <= 41 && s[i] != ']')
      i++;
    if (i < n && s[i] == ']' && i >= 2 && i <= 41 && i + 1 < n && trace_is_space(s[i + 1]))
      return i + 2;
    return 0;
  }
  size_t i = 0, last_bar = 0;
  while (i < n && i < 40 &&
         (trace_is_word(s[i]) || strchr(".@/|-", s[i]) != NULL) && s[i] != '\0') {
    if (s[i] == '|')
      last_bar = i;
    i++;
  }
  size_t name = i;
  while (i < n && trace_is_space(s[i]))
    i++;
  if (name > 0 && i < n && s[i] == '|') {
    i++;
  } else if (last_bar > 0) {
    i = last_bar + 1; /* "0|app" with no blank before its own bar: the bar ends the tag */
  } else {
    return 0;
  }
  if (i < n && trace_is_space(s[i]))
    i++;
  return i;
}

/* The length of "d{n}" at s (exactly n digits), or 0. */
static size_t
trace_fixed_digits(const char *s, size_t len, size_t n)
{
  return len >= n && trace_digits(s, n) == n ? n : 0;
}

/* The length of a timestamp at s with one blank after it, 0 when there is
 * none: an ISO 8601 date and time or a time of day, with fractions and a
 * zone, perhaps in brackets ("2026-01-01T10:00:00.123Z ", "[10:00:00] "). */
static size_t
trace_time_len(const char *s, size_t n)
{
  size_t i = 0;
  if (i < n && s[i] == '[')
    i++;
  if (trace_fixed_digits(s + i, n - i, 4) && i + 10 < n && s[i + 4] == '-' &&
      trace_fixed_digits(s + i + 5, n - i - 5, 2) && s[i + 7] == '-' &&
      trace_fixed_digits(s + i + 8, n - i - 8, 2) && (s[i + 10] == 'T' || s[i + 10] == ' '))
    i += 11;
  if (!(trace_fixed_digits(s + i, n - i, 2) && i + 8 <= n && s[i + 2] == ':' &&
        trace_fixed_digits(s + i + 3, n - i - 3, 2) && s[i + 5] == ':' &&
        trace_fixed_digits(s + i + 6, n - i - 6, 2)))
    return 0;
  i += 8;
  if (i < n && (s[i] == '.' || s[i] == ',') && i + 1 < n && trace_is_digit(s[i + 1]))
    i += 1 + trace_digits(s + i + 1, n - i - 1);
  if (i < n && s[i] == 'Z') {
    i++;
  } else if (i < n && (s[i] == '+' || s[i] == '-') && trace_digits(s + i + 1, n - i - 1) >= 2) {
    i += 1 + trace_digits(s + i + 1, n - i - 1);
    if (i < n && s[i] == ':')
      i += 1 + trace_digits(s + i + 1, n - i - 1);
  }
  if (i < n && s[i] == ']')
    i++;
  if (i < n && trace_is_space(s[i]))
    return i + 1;
  return 0;
}

/* Python's final line: a dotted name, alone or followed by ": message"
 * ("KeyboardInterrupt", "ValueError: x", "requests.exceptions.
 * ConnectionError: ..."). */
static bool
trace_py_exception_line(const char *s, size_t n)
{
  if (n == 0 || !(trace_is_word(s[0]) && !trace_is_digit(s[0])))
    return false;
  size_t i = 0;
  while (i < n && (trace_is_word(s[i]) || s[i] == '.'))
    i++;
  return i == n || s[i] == ':';
}

/* Python's "Traceback (most recent call last):" (or an exception group's). */
static bool
trace_py_traceback(const char *s, size_t n)
{
  return trace_contains(s, n, "Traceback (most recent call last):");
}

/* Python's lines between two exceptions of a chain. */
static bool
trace_py_chain_line(const char *s, size_t n)
{
  return trace_starts(s, n,
                      "During handling of the above exception, another exception occurred:") ||
         trace_starts(s, n,
                      "The above exception was the direct cause of the following exception:");
}

/* Node's caret line under the source excerpt: "          ^". */
static bool
trace_node_caret(const char *s, size_t n)
{
  size_t i = trace_indent(s, n);
  size_t carets = 0;
  while (i < n && s[i] == '^') {
    i++;
    carets++;
  }
  return carets > 0 && trace_blank(s + i, n - i);
}

/* A line that closes a dumped object or array: "}", "]", "})". */
static bool
trace_closer(const char *s, size_t n)
{
  if (n == 0 || (s[0] != '}' && s[0] != ']'))
    return false;
  for (size_t i = 1; i < n; i++)
    if (strchr("}]),; \t", s[i]) == NULL)
      return false;
  return true;
}

/* Node's header is a source location ("/app/server.js:12",
 * "node:internal/modules/cjs/loader:1080") rather than the error: no blank
 * in it, and ":digits" at its end. */
static bool
trace_node_location(const char *s, size_t n)
{
  if (n == 0 || memchr(s, ' ', n) != NULL || memchr(s, '\t', n) != NULL)
    return false;
  size_t d = 0;
  while (d < n && trace_is_digit(s[n - 1 - d]))
    d++;
  return d > 0 && d < n && s[n - 1 - d] == ':';
}

/* Node. */
static TraceVerdict
trace_node(TraceState *st, const char *s, size_t n)
{
  bool blank = trace_blank(s, n);
  size_t ind = trace_indent(s, n);
  switch (st->state) {
  case kNodeSource:
    if (blank)
      return kTraceEnds;
    st->state = kNodeCaret;
    return kTraceJoins;
  case kNodeCaret:
    if (!trace_node_caret(s, n))
      return kTraceEnds;
    st->state = kNodeThrown;
    return kTraceJoins;
  case kNodeThrown:
    if (blank)
      return kTraceMaybe;
    st->state = kNodeMessage;
    return kTraceJoinsNaming;
  default:
    break;
  }
  if (trace_starts(s, n, "Node.js v"))
    return kTraceJoinsLast;
  if (blank) {
    if (st->state != kNodeMessage)
      st->state = kNodeBlank;
    return kTraceMaybe;
  }
  /* Frames ("    at f (file:1:2)", "    at async g"), the error's own
   * properties ("  code: 'ERR_X'", "  [cause]: Error: inner") and
   * "    ... 4 lines matching cause stack trace ...". */
  if (ind > 0 || trace_closer(s, n)) {
    st->state = kNodeFrames;
    return kTraceJoins;
  }
  /* An 'error' event nobody listened to (its own frames follow), and the
   * hint Node prints after a thrown value that is not an Error. */
  if (trace_starts(s, n, "Emitted 'error' event") || trace_starts(s, n, "(Use `node --trace-"))
    return kTraceJoins;
  /* MODULE_NOT_FOUND: "Require stack:" and "- /app/x.js" before the frames. */
  if (st->state == kNodeMessage &&
      (trace_starts(s, n, "Require stack:") || trace_starts(s, n, "- ")))
    return kTraceJoins;
  return kTraceEnds;
}

/* Python. */
static TraceVerdict
trace_python(TraceState *st, const char *s, size_t n)
{
  bool blank = trace_blank(s, n);
  size_t ind = trace_indent(s, n);
  switch (st->state) {
  case kPyFrames:
    if (blank)
      return kTraceMaybe;
    if (ind > 0)
      return kTraceJoins; /* "  File ...", source, "    ^^^^", "[Previous line repeated...]" */
    if (trace_py_exception_line(s, n)) {
      st->state = kPyFinal;
      return kTraceJoinsNaming;
    }
    return kTraceEnds;
  case kPyGroup:
    return ind > 0 && !blank ? kTraceJoins : kTraceEnds;
  case kPyFinal:
    if (!blank)
      return kTraceEnds;
    st->state = kPyChainBlank;
    return kTraceMaybe;
  case kPyChainBlank:
    if (!trace_py_chain_line(s, n))
      return kTraceEnds;
    st->state = kPyChainLine;
    return kTraceJoins;
  case kPyChainLine:
  case kPyChainTrace:
    if (trace_py_traceback(s, n)) {
      st->state = kPyFrames;
      return kTraceJoins;
    }
    if (blank && st->state == kPyChainLine) {
      st->state = kPyChainTrace;
      return kTraceMaybe;
    }
    return kTraceEnds;
  default:
    return kTraceEnds;
  }
}

/* A frame's function line of a goroutine dump: "main.main()",
 * "main.(*Server).handle(0xc000010000, {0x4b5e20, 0x5})", "panic({0x...})":
 * no blank before the first parenthesis, and a closing one at the end. */
static bool
trace_go_function(const char *s, size_t n)
{
  const char *paren = memchr(s, '(', n);
  if (paren == NULL || paren == s || !trace_ends(s, n, ")"))
    return false;
  size_t k = (size_t)(paren - s);
  return memchr(s, ' ', k) == NULL && memchr(s, '\t', k) == NULL;
}

/* go test's closing line: "FAIL" or "FAIL\tpkg\t0.01s". */
static bool
trace_go_fail(const char *s, size_t n)
{
  return (n == 4 && memcmp(s, "FAIL", 4) == 0) || trace_starts(s, n, "FAIL\t");
}

/* Go. */
static TraceVerdict
trace_go(TraceState *st, const char *s, size_t n)
{
  bool blank = trace_blank(s, n);
  bool dump = (trace_starts(s, n, "goroutine ") && trace_ends(s, n, ":")) ||
              trace_starts(s, n, "runtime stack:");
  if (st->state == kGoExit)
    return trace_go_fail(s, n) ? kTraceJoinsLast : kTraceEnds;
  if (trace_starts(s, n, "exit status ")) {
    st->state = kGoExit;
    return kTraceJoins;
  }
  if (dump) {
    st->state = kGoFrames;
    return kTraceJoins;
  }
  if (blank) {
    if (st->state == kGoBlank)
      return kTraceEnds;
    st->state = kGoBlank;
    return kTraceMaybe;
  }
  switch (st->state) {
  case kGoHead:
    /* "[signal SIGSEGV: segmentation violation ...]", "\tpanic: x" after
     * "panic: x [recovered]". */
    if (trace_starts(s, n, "[signal ") || trace_indent(s, n) > 0)
      return kTraceJoins;
    return kTraceEnds;
  case kGoFrames:
    if (trace_indent(s, n) > 0 || trace_go_function(s, n) || trace_starts(s, n, "created by ") ||
        trace_starts(s, n, "...additional frames elided..."))
      return kTraceJoins;
    if (trace_go_fail(s, n))
      return kTraceJoinsLast;
    return kTraceEnds;
  default:
    return kTraceEnds;
  }
}

/* Rust's "note:" after a panic: the one that says how to get a backtrace,
 * or the one after a backtrace, is the last line of the report. */
static TraceVerdict
trace_rust_note(const char *s, size_t n)
{
  return trace_contains(s, n, "RUST_BACKTRACE") ? kTraceJoinsLast : kTraceJoins;
}

/* Rust. */
static TraceVerdict
trace_rust(TraceState *st, const char *s, size_t n)
{
  bool blank = trace_blank(s, n);
  size_t ind = trace_indent(s, n);
  switch (st->state) {
  case kRustMessage1:
    st->state = kRustMessage;
    return blank ? kTraceMaybe : kTraceJoinsNaming;
  case kRustMessage:
  case kRustAfter:
    if (trace_starts(s, n, "note: "))
      return trace_rust_note(s, n);
    if (trace_starts(s, n, "stack backtrace:")) {
      st->state = kRustBacktrace;
      return kTraceJoins;
    }
    if (st->state == kRustAfter)
      return kTraceEnds;
    /* assert_eq!'s "  left: 1" / " right: 2"; a blank line inside the
     * message, if the note follows. */
    if (blank)
      return kTraceMaybe;
    return ind > 0 ? kTraceJoins : kTraceEnds;
  case kRustBacktrace: {
    size_t d = trace_digits(s + ind, n - ind);
    if (ind > 0 && d > 0 && trace_starts(s + ind + d, n - ind - d, ": "))
      return kTraceJoins; /* "   0: std::panicking::begin_panic" */
    if (ind > 0 && trace_starts(s + ind, n - ind, "at "))
      return kTraceJoins; /* "             at /rustc/.../panicking.rs:645:5" */
    if (trace_starts(s, n, "note: "))
      return kTraceJoinsLast;
    return kTraceEnds;
  }
  case kRustDiag: {
    if (blank)
      return kTraceMaybe;
    if (trace_starts(s, n, "For more information about this error"))
      return kTraceJoinsLast;
    size_t d = trace_digits(s, n);
    size_t after = d + trace_indent(s + d, n - d);
    /* " --> src/main.rs:4:20", "  |", "  = note: ...", "4 |     x", "help: ...". */
    if (ind > 0 || (d > 0 && after < n && s[after] == '|') || trace_starts(s, n, "help:") ||
        trace_starts(s, n, "note:") || trace_starts(s, n, "..."))
      return kTraceJoins;
    return kTraceEnds;
  }
  default:
    return kTraceEnds;
  }
}

/* JVM (and .NET, whose frames read alike). */
static TraceVerdict
trace_jvm(TraceState *st, const char *s, size_t n)
{
  (void)st;
  size_t ind = trace_indent(s, n);
  const char *t = s + ind;
  size_t tn = n - ind;
  /* "\tat com.x.Y.f(Y.java:12)", "\t... 12 more", "... 5 common frames
   * omitted", .NET's "   at P.Main() in /app/P.cs:line 5". */
  if ((ind > 0 && (trace_starts(t, tn, "at ") || trace_starts(t, tn, "... "))) ||
      trace_starts(t, tn, "--- End of ") || trace_starts(t, tn, "Caused by: ") ||
      trace_starts(t, tn, "Suppressed: "))
    return kTraceJoins;
  return kTraceEnds;
}

/* Sanitizers' report lines that start at the left margin. */
static const char *const trace_native_prefixes[] = {
  "==", "=>", "0x", "#", "SUMMARY: ", "HINT: ", "Hint: ", "Direct leak of ",
  "Indirect leak of ", "The signal is caused by ", "Address 0x", "Thread T", "Location is ",
  "Mutex ", "AddressSanitizer", NULL,
};

/* Native: a sanitizer's report (ASan, LSan, TSan, UBSan). */
static TraceVerdict
trace_native(TraceState *st, const char *s, size_t n)
{
  (void)st;
  if (trace_blank(s, n))
    return kTraceMaybe;
  if (trace_starts(s, n, "==") && trace_contains(s, n, "==ABORTING"))
    return kTraceJoinsLast;
  if (trace_indent(s, n) > 0)
    return kTraceJoins; /* "    #0 0x4f5 in main x.c:3", shadow bytes, the legend */
  for (size_t i = 0; trace_native_prefixes[i]; i++)
    if (trace_starts(s, n, trace_native_prefixes[i]))
      return kTraceJoins;
  /* "READ of size 4 at 0x602000000010 thread T0", "freed by thread T0 here:",
   * "Shadow bytes around the buggy address:". */
  if (trace_contains(s, n, " of size ") || trace_ends(s, n, ":") ||
      trace_contains(s, n, "Sanitizer"))
    return kTraceJoins;
  return kTraceEnds;
}

/* npm's own lines, which repeat its prefix. */
static bool
trace_npm_line(const char *s, size_t n)
{
  return trace_starts(s, n, "npm ERR!") || trace_starts(s, n, "npm error");
}

/* Generic: indented lines, "at ..." lines, blank lines between them. */
static TraceVerdict
trace_generic(TraceState *st, const char *s, size_t n)
{
  size_t ind = trace_indent(s, n);
  if (ind == n)
    return kTraceMaybe;
  if (ind >= 2 || (ind > 0 && s[0] == '\t') || trace_starts(s + ind, n - ind, "at "))
    return kTraceJoins;
  if (st->npm && trace_npm_line(s, n))
    return kTraceJoins;
  return kTraceEnds;
}

/* Where the message of a header starts: after the indentation, the tag and
 * the timestamp the patterns allow in front of it. Records the tag and
 * whether there was a timestamp, so that later lines lose the same. */
static size_t
trace_header_prefix(TraceState *st, const char *s, size_t n)
{
  size_t i = 0;
  while (i < n && i < 3 && trace_is_space(s[i]))
    i++;
  size_t tag = trace_tag_len(s + i, n - i);
  if (tag > 0) {
    i += tag;
    if (i <= TRACE_TAG_MAX) {
      memcpy(st->tag, s, i);
      st->tag_len = i;
    }
  }
  size_t j = i;
  while (j < n && j - i < 3 && trace_is_space(s[j]))
    j++;
  size_t time = trace_time_len(s + j, n - j);
  if (time > 0) {
    st->timestamped = true;
    j += time;
  } else {
    j = i;
  }
  return j + trace_indent(s + j, n - j);
}

void
trace_begin(TraceState *st, TraceFamily family, const char *header, size_t len)
{
  memset(st, 0, sizeof(*st));
  st->family = family;
  size_t at = trace_header_prefix(st, header, len);
  const char *m = header + at;
  size_t mn = len - at;
  switch (family) {
  case kTraceNone:
    st->state = TRACE_OVER;
    break;
  case kTraceNode:
    st->state = trace_node_location(m, mn) ? kNodeSource : kNodeMessage;
    break;
  case kTracePython:
    if (trace_contains(m, mn, "Exception Group Traceback"))
      st->state = kPyGroup;
    else if (trace_py_traceback(m, mn) || trace_starts(m, mn, "File \""))
      st->state = kPyFrames;
    else
      st->state = kPyFinal; /* a final line whose traceback was not seen */
    break;
  case kTraceGo:
    st->state = kGoHead;
    break;
  case kTraceRust:
    if (!trace_contains(m, mn, " panicked at "))
      st->state = kRustDiag;
    else
      st->state = trace_ends(m, mn, ":") ? kRustMessage1 : kRustAfter;
    break;
  case kTraceGeneric:
    st->npm = trace_npm_line(m, mn);
    break;
  default:
    break;
  }
}

TraceVerdict
trace_next(TraceState *st, const char *line, size_t len)
{
  if (st->state == TRACE_OVER)
    return kTraceEnds;
  if (st->tag_len > 0 && len >= st->tag_len && memcmp(line, st->tag, st->tag_len) == 0) {
    line += st->tag_len;
    len -= st->tag_len;
  }
  if (st->timestamped) {
    size_t time = trace_time_len(line, len);
    line += time;
    len -= time;
  }
  TraceVerdict v;
  switch (st->family) {
  case kTraceNode:
    v = trace_node(st, line, len);
    break;
  case kTracePython:
    v = trace_python(st, line, len);
    break;
  case kTraceGo:
    v = trace_go(st, line, len);
    break;
  case kTraceRust:
    v = trace_rust(st, line, len);
    break;
  case kTraceJvm:
    v = trace_jvm(st, line, len);
    break;
  case kTraceNative:
    v = trace_native(st, line, len);
    break;
  case kTraceGeneric:
    v = trace_generic(st, line, len);
    break;
  default:
    v = kTraceEnds;
    break;
  }
  if (v == kTraceMaybe && ++st->maybes > TRACE_MAYBE_MAX)
    v = kTraceEnds; /* what the caller holds stays bounded */
  else if (v != kTraceMaybe)
    st->maybes = 0;
  if (v == kTraceEnds || v == kTraceJoinsLast)
    st->state = TRACE_OVER;
  return v;
}

const char *
trace_family_name(TraceFamily family)
{
  switch (family) {
  case kTraceNone:
    return "none";
  case kTraceNode:
    return "node";
  case kTracePython:
    return "python";
  case kTraceGo:
    return "go";
  case kTraceRust:
    return "rust";
  case kTraceJvm:
    return "jvm";
  case kTraceNative:
    return "native";
  case kTraceGeneric:
    return "generic";
  }
  return NULL;
}

const char *
trace_verdict_name(TraceVerdict verdict)
{
  switch (verdict) {
  case kTraceEnds:
    return "ends";
  case kTraceJoins:
    return "joins";
  case kTraceJoinsNaming:
    return "joins-naming";
  case kTraceMaybe:
    return "maybe";
  case kTraceJoinsLast:
    return "joins-last";
  }
  return "?";
}
