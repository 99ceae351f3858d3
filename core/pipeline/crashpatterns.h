/*
 * The built-in crash patterns: what a monitor matches when its start gives
 * no `patterns` (the first stage of incidents). One table, one entry per kind
 * of crash line (Node, Python, Go, Rust, JVM, C and C++, build and test
 * failures, HTTP 5xx), each with its regex, the family of trace that may
 * follow it (trace.h), and the real lines it must and must not match. The
 * unit test holds every entry to its lines, and docs/crash-patterns.md is
 * what the table renders.
 *
 * The table is in match order: core/pipeline/match.c tries patterns in list order
 * and the first that matches wins, so the specific entries come before the
 * general ones. Every entry is anchored (at the start of the message, or on
 * a word that only a failure prints) so that ordinary log lines that
 * mention an error word ("error_count=0", "ErrorBoundary rendered",
 * "0 errors") never fire. Every regex keeps a required literal that
 * core/pipeline/prefilter.c can find, so a log line that holds none of them never
 * reaches PCRE2.
 *
 * The table fits the matcher's defaults: at most CRASHPATTERNS_MAX entries
 * (monitor.max_patterns) of at most CRASHPATTERNS_REGEX_MAX bytes
 * (monitor.pattern_max_length).
 */
#ifndef VIGIL_CRASHPATTERNS_H
#define VIGIL_CRASHPATTERNS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"
#include "pipeline/trace.h"

#define CRASHPATTERNS_MAX 32
#define CRASHPATTERNS_REGEX_MAX 512

typedef struct {
  const char *name;              /* short and stable: "error", "python-traceback" */
  const char *regex;             /* PCRE2 source (UTF mode) */
  TraceFamily family;            /* which continuation rules (trace.h) apply after it */
  bool generic_header;           /* the line says nothing about the failure: the
                                    fingerprint uses the line trace.h marks as naming
                                    it (kTraceJoinsNaming), the header when none came */
  const char *const *must_match; /* NULL-terminated: real lines it matches, and it is the
                                    first entry of the table that does */
  const char *const *must_not;   /* NULL-terminated: lines it must not match */
} CrashPattern;

size_t crashpatterns_count(void);

/* The entry at index (table order), or NULL past the end. */
const CrashPattern *crashpatterns_get(size_t index);

/* The index of the entry named name, or -1. */
int crashpatterns_find(const char *name);

/* The regex sources in table order, NULL-terminated (static storage), for
 * match_compile(); a match's index is an index of this table. */
const char *const *crashpatterns_sources(void);

/* Ordinary lines that no entry may match (NULL-terminated): healthy output
 * that merely mentions an error word. */
const char *const *crashpatterns_never_match(void);

/* Appends the table as Markdown (docs/crash-patterns.md is this output). */
void crashpatterns_render_markdown(StrBuf *out);

#endif
