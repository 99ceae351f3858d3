/*
 * Which lines after a crash line belong to its incident: one small state
 * machine per family of trace (Node, Python, Go, Rust, JVM, native
 * sanitizers, a generic indented one). A matching line opens an incident
 * (crashpatterns.h names the family of each built-in pattern); every line
 * after it is handed to trace_next, which says whether it belongs, in the
 * order the lines came. Pure: no time, no I/O, no allocation, and a fixed
 * size, so the caller keeps one per open incident and tests drive it with
 * lists of lines. The quiet gap and the size bound of an incident are the
 * caller's; a trace only knows the shape of its lines.
 *
 * The line prefix. The built-in patterns accept a crash line behind a
 * process manager's tag ("[0] ", "web-1  | ") and a timestamp
 * (crashpatterns.c). When the header carried a tag, a later line that
 * starts with the very same tag is judged without it; when the header
 * carried a timestamp, a timestamp at the start of a later line (behind the
 * tag) is judged without it. Everything else of a line, its indentation
 * above all, is judged as it is.
 *
 * How the caller uses the verdicts:
 *  - kTraceJoins, kTraceJoinsNaming: the line joins (after any held lines).
 *  - kTraceMaybe: hold the line. A later Joins* verdict joins every held
 *    line and then itself; kTraceEnds lets every held line go, and so does
 *    closing the incident for a quiet gap or a bound. Only a blank line is
 *    ever held, so a line let go is never a crash line that should have
 *    opened an incident. trace_next never answers kTraceMaybe more than
 *    TRACE_MAYBE_MAX times in a row.
 *  - kTraceJoinsLast: the line joins and the incident is complete.
 *  - kTraceEnds: the line is not part of it (it is judged on its own, and
 *    may open the next incident) and the trace is over; every later call
 *    answers kTraceEnds too.
 * A line that a pattern matches but that fits the open trace (Python's
 * final "ValueError: x", a JVM "Caused by:") gets a Joins* verdict here;
 * the caller lets it join rather than open a new incident.
 *
 * The naming line. Some headers say nothing about the failure (Python's
 * "Traceback (most recent call last):", Node's "/app/server.js:12", Rust's
 * "thread 'main' panicked at src/main.rs:2:5:"); crashpatterns.h marks
 * their patterns generic_header. kTraceJoinsNaming marks the line that
 * names the failure instead (Python's final exception line, the thrown
 * value after Node's source excerpt, Rust's panic message). A chained
 * Python traceback has one per exception: the last one names what
 * propagated. The fingerprint of an incident whose header is generic uses
 * the last naming line it got, or the header when none came.
 */
#ifndef VIGIL_TRACE_H
#define VIGIL_TRACE_H

#include <stdbool.h>
#include <stddef.h>

/* Which continuation rules follow a crash line. */
typedef enum {
  kTraceNone = 0, /* a one-line message: nothing follows (a build error, an HTTP 5xx) */
  kTraceNode,     /* "    at f (file:1:2)", object dumps, "Node.js v20.1.0" */
  kTracePython,   /* "  File ...", the final exception line, chained tracebacks */
  kTraceGo,       /* goroutine dumps, "\t/path/file.go:12 +0x1d", "exit status 2" */
  kTraceRust,     /* a panic's message, note and backtrace; rustc's diagnostics */
  kTraceJvm,      /* "\tat ...", "\t... 12 more", "Caused by:", "Suppressed:" */
  kTraceNative,   /* a sanitizer's report, up to "==123==ABORTING" */
  kTraceGeneric,  /* indented lines, "at ...", npm's own lines after npm's */
} TraceFamily;

#define TRACE_FAMILY_COUNT 8

typedef enum {
  kTraceEnds,        /* the line does not belong: the incident is over */
  kTraceJoins,       /* the line belongs */
  kTraceJoinsNaming, /* it belongs and names the failure (see above) */
  kTraceMaybe,       /* it belongs only if a later line joins: hold it */
  kTraceJoinsLast,   /* it belongs and nothing after it can */
} TraceVerdict;

/* The most kTraceMaybe verdicts trace_next gives in a row (what the caller
 * may have to hold). */
#define TRACE_MAYBE_MAX 3

/* The longest process-manager tag a trace remembers; a longer one is not
 * stripped from the lines that follow. */
#define TRACE_TAG_MAX 48

typedef struct {
  TraceFamily family;
  int state;          /* the family's state (trace.c) */
  int maybes;         /* kTraceMaybe verdicts in a row */
  bool npm;           /* generic: the header was npm's, so npm's lines join */
  bool timestamped;   /* the header carried a timestamp */
  size_t tag_len;     /* the header's tag, 0 when none */
  char tag[TRACE_TAG_MAX];
} TraceState;

/* Starts a trace after `header`, the line a pattern of `family` matched
 * (not NUL-terminated; ANSI escapes already removed). The header's own
 * shape picks where some families start (Node's source excerpt or its
 * error line, Rust's panic or compiler diagnostic). */
void trace_begin(TraceState *st, TraceFamily family, const char *header, size_t len);

/* Judges the next line of the stream after the header (and after every
 * line judged before). */
TraceVerdict trace_next(TraceState *st, const char *line, size_t len);

/* The family's short name ("node", "python", ...), for documents and logs;
 * NULL for a value out of range. */
const char *trace_family_name(TraceFamily family);

/* The verdict's name ("joins-naming", ...), for test messages and logs. */
const char *trace_verdict_name(TraceVerdict verdict);

#endif
