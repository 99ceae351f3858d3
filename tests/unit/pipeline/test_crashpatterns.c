/*
 * Unit tests of the built-in crash pattern table (core/pipeline/crashpatterns.c):
 * it compiles as a monitor compiles it (match_compile with the settings'
 * defaults), every entry matches its own lines and is the first entry that
 * does, no entry matches a line that must not fire, every regex keeps a
 * literal for the prefilter, hostile lines cost no match error, and
 * docs/crash-patterns.md is what the table renders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/crashpatterns.h"
#include "pipeline/match.h"
#include "base/memory.h"
#include "pipeline/prefilter.h"
#include "spec/settings.h"
#include "base/strbuf.h"

/* The matcher's limits from the settings' defaults, as a monitor gets them. */
static MatchLimits
default_limits(void)
{
  VigilSettings s;
  settings_defaults(&s);
  MatchLimits lim = {(size_t)s.max_patterns, (size_t)s.pattern_max_length,
                     (uint32_t)s.match_limit, (uint32_t)s.depth_limit};
  return lim;
}

/* The whole table, compiled; fails the test when it does not compile. */
static PatternSet *
compile_table(void)
{
  MatchLimits lim = default_limits();
  VigilError err = VIGIL_ERROR_INIT;
  PatternSet *ps = match_compile(crashpatterns_sources(), crashpatterns_count(), &lim,
                                 "patterns", &err);
  CHECK(ps != NULL);
  if (err.set)
    fprintf(stderr, "  %s\n", err.msg);
  return ps;
}

/* The name of the entry that matches line first, or "(none)". */
static const char *
first_match(PatternSet *ps, const char *line)
{
  int i = match_line(ps, line, strlen(line));
  return i < 0 ? "(none)" : crashpatterns_get((size_t)i)->name;
}

TEST(table_fits_the_defaults_and_is_complete)
{
  MatchLimits lim = default_limits();
  size_t n = crashpatterns_count();
  CHECK(n > 0);
  CHECK(n <= lim.max_patterns);
  CHECK(n <= CRASHPATTERNS_MAX);
  CHECK_INT(lim.max_patterns, CRASHPATTERNS_MAX);
  CHECK_INT(lim.pattern_max_length, CRASHPATTERNS_REGEX_MAX);
  const char *const *sources = crashpatterns_sources();
  for (size_t i = 0; i < n; i++) {
    const CrashPattern *cp = crashpatterns_get(i);
    CHECK(cp->name != NULL && cp->name[0] != '\0');
    CHECK_INT(crashpatterns_find(cp->name), (long long)i); /* names are unique */
    CHECK(strlen(cp->regex) <= lim.pattern_max_length);
    CHECK(sources[i] == cp->regex);
    CHECK(trace_family_name(cp->family) != NULL);
    CHECK(cp->must_match != NULL && cp->must_match[0] != NULL);
    CHECK(cp->must_not != NULL && cp->must_not[0] != NULL);
    if (strlen(cp->regex) > lim.pattern_max_length)
      fprintf(stderr, "  %s: %zu bytes\n", cp->name, strlen(cp->regex));
  }
  CHECK(sources[n] == NULL);
  CHECK(crashpatterns_get(n) == NULL);
  CHECK_INT(crashpatterns_find("no-such-pattern"), -1);
}

TEST(every_entry_matches_its_lines_first)
{
  PatternSet *ps = compile_table();
  if (ps == NULL)
    return;
  for (size_t i = 0; i < crashpatterns_count(); i++) {
    const CrashPattern *cp = crashpatterns_get(i);
    for (size_t k = 0; cp->must_match[k]; k++) {
      const char *got = first_match(ps, cp->must_match[k]);
      if (strcmp(got, cp->name) != 0)
        check_fail(__FILE__, __LINE__, "%s must match \"%s\" first; got %s", cp->name,
                   cp->must_match[k], got);
    }
  }
  CHECK_INT(match_errors(ps), 0);
  match_free(ps);
}

TEST(no_entry_matches_a_line_that_must_not_fire)
{
  PatternSet *ps = compile_table();
  if (ps == NULL)
    return;
  for (size_t i = 0; i < crashpatterns_count(); i++) {
    const CrashPattern *cp = crashpatterns_get(i);
    for (size_t k = 0; cp->must_not[k]; k++) {
      const char *got = first_match(ps, cp->must_not[k]);
      if (strcmp(got, "(none)") != 0)
        check_fail(__FILE__, __LINE__, "%s's must_not \"%s\" is matched by %s", cp->name,
                   cp->must_not[k], got);
    }
  }
  const char *const *never = crashpatterns_never_match();
  CHECK(never[0] != NULL);
  for (size_t k = 0; never[k]; k++) {
    const char *got = first_match(ps, never[k]);
    if (strcmp(got, "(none)") != 0)
      check_fail(__FILE__, __LINE__, "\"%s\" must match no entry; %s matches it", never[k], got);
  }
  CHECK_INT(match_errors(ps), 0);
  match_free(ps);
}

/* Each entry compiled alone matches its own lines (a must_match line is not
 * won only because of how the set was combined), and no line that must not
 * fire: its own, any other entry's, or the table-wide list. */
TEST(every_entry_alone_matches_its_lines_and_no_other)
{
  MatchLimits lim = default_limits();
  for (size_t i = 0; i < crashpatterns_count(); i++) {
    const CrashPattern *cp = crashpatterns_get(i);
    VigilError err = VIGIL_ERROR_INIT;
    PatternSet *one = match_compile(&cp->regex, 1, &lim, cp->name, &err);
    CHECK(one != NULL);
    if (one == NULL) {
      fprintf(stderr, "  %s\n", err.msg);
      continue;
    }
    for (size_t k = 0; cp->must_match[k]; k++)
      if (match_line(one, cp->must_match[k], strlen(cp->must_match[k])) != 0)
        check_fail(__FILE__, __LINE__, "%s alone does not match \"%s\"", cp->name,
                   cp->must_match[k]);
    for (size_t j = 0; j < crashpatterns_count(); j++) {
      const char *const *must_not = crashpatterns_get(j)->must_not;
      for (size_t k = 0; must_not[k]; k++)
        if (match_line(one, must_not[k], strlen(must_not[k])) != -1)
          check_fail(__FILE__, __LINE__, "%s alone matches \"%s\"", cp->name, must_not[k]);
    }
    const char *const *never = crashpatterns_never_match();
    for (size_t k = 0; never[k]; k++)
      if (match_line(one, never[k], strlen(never[k])) != -1)
        check_fail(__FILE__, __LINE__, "%s alone matches \"%s\"", cp->name, never[k]);
    CHECK_INT(match_errors(one), 0);
    match_free(one);
  }
}

/* The built-in set must not turn the prefilter off: one regex without a
 * required literal would send every line of every monitor through PCRE2. */
TEST(every_entry_keeps_a_literal_for_the_prefilter)
{
  for (size_t i = 0; i < crashpatterns_count(); i++) {
    const CrashPattern *cp = crashpatterns_get(i);
    char *lit = xmalloc(strlen(cp->regex) + 1);
    size_t n = prefilter_required_literal(cp->regex, lit);
    if (n < PREFILTER_MIN_LITERAL)
      check_fail(__FILE__, __LINE__, "%s has no required literal the prefilter can use",
                 cp->name);
    free(lit);
  }
  Prefilter pf;
  CHECK(prefilter_build(&pf, crashpatterns_sources(), crashpatterns_count()));
  /* Most log lines hold none of the literals, so they never reach PCRE2. */
  static const char *const quiet[] = {
    "2026-01-01T10:00:00Z INFO user 42 logged in from 10.0.0.7",
    "2026-11-21T10:00:41.433Z DEBUG [http] POST /api/v1/users/77742 200 52.9ms "
    "ua=\"Mozilla/5.0 (X11; Linux x86_64)\" req=5a3e84e5",
    "2026-11-21T10:02:50.681Z WARN  [db] pool=main active=21 idle=0 wait=14ms "
    "query=\"SELECT id, name FROM users WHERE org_id = $1\"",
    "[nodemon] restarting due to changes...",
    "items: 12, pages: 3, cache hits: 97%",
  };
  for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
    if (prefilter_hit(&pf, quiet[i], strlen(quiet[i])))
      check_fail(__FILE__, __LINE__, "\"%s\" passes the prefilter", quiet[i]);
  const char *loud = "TypeError: x is not a function";
  CHECK(prefilter_hit(&pf, loud, strlen(loud)));
  prefilter_free(&pf);
}

/* Seed 000's five defaults keep their behaviour: what they matched still
 * matches (by the entry that took each over). */
TEST(seed_defaults_still_fire)
{
  PatternSet *ps = compile_table();
  if (ps == NULL)
    return;
  CHECK_STR(first_match(ps, "Error: connect ECONNREFUSED 127.0.0.1:5432"), "error");
  CHECK_STR(first_match(ps, "Fatal: unable to access 'https://example.com/repo.git/'"), "fatal");
  CHECK_STR(first_match(ps, "panic: runtime error: index out of range [3] with length 3"),
            "go-panic");
  CHECK_STR(first_match(ps, "Exception in worker: uncaught TypeError: x is undefined"),
            "uncaught");
  CHECK_STR(first_match(ps, "(node:4242) UnhandledPromiseRejectionWarning: Error: boom"),
            "node-unhandled-rejection");
  /* Seed 000 did not anchor \buncaught\b; the table does. */
  CHECK_STR(first_match(ps, "process.on('uncaughtException') handler installed"), "(none)");
  CHECK_STR(first_match(ps, "goroutine 1 [running]:"), "(none)");
  CHECK_STR(first_match(ps, ""), "(none)");
  match_free(ps);
}

/* The line start: tags, timestamps, levels and marks in front of a crash
 * line, and the same in front of ordinary words. */
TEST(line_start_prefixes)
{
  PatternSet *ps = compile_table();
  if (ps == NULL)
    return;
  CHECK_STR(first_match(ps, "[0] TypeError: x is not a function"), "error");
  CHECK_STR(first_match(ps, "[api] panic: boom"), "go-panic");
  CHECK_STR(first_match(ps, "web-1  | Traceback (most recent call last):"), "python-traceback");
  CHECK_STR(first_match(ps, "0|api   | Error: boom"), "error");
  CHECK_STR(first_match(ps, "api-1  | 2026-01-01T10:00:00.123456789Z panic: boom"), "go-panic");
  CHECK_STR(first_match(ps, "[2026-01-01 10:00:00] Error: boom"), "error");
  CHECK_STR(first_match(ps, "10:00:00 FATAL Fatal: disk full"), "fatal");
  CHECK_STR(first_match(ps, "2026-01-01T10:00:00+02:00 [ERROR] thread 'main' panicked at "
                            "src/main.rs:2:5:"),
            "rust-panic");
  CHECK_STR(first_match(ps, " ⨯ Error: Cannot find module './db'"), "error");
  CHECK_STR(first_match(ps, "\tError: tab-indented"), "error");
  /* A frame is indented four: never a header. */
  CHECK_STR(first_match(ps, "    Error: inside a dump"), "(none)");
  CHECK_STR(first_match(ps, "[0] retrying after Error: timeout"), "(none)");
  CHECK_STR(first_match(ps, "web-1  | errors: 0"), "(none)");
  CHECK_STR(first_match(ps, "2026-01-01T10:00:00Z ERROR payment declined"), "(none)");
  CHECK_STR(first_match(ps, "[ERROR] request to /api failed with 404"), "(none)");
  match_free(ps);
}

/* Lines built to make a regex backtrack, at the default longest line:
 * each is answered within the match limit (no match error). */
TEST(hostile_lines_cost_no_match_error)
{
  PatternSet *ps = compile_table();
  if (ps == NULL)
    return;
  static const char *const pieces[] = {
    "a.", "Error", "aE", "GET ", "\"GET ", ": uncaught ", "[", "web-1 | ", "00:00:00 ",
    "\"status", " 500 ", "FAILED ", "x.js:1", "[GIN] | ", "Ab.", "   ", "GET /a 500 1 ",
  };
  VigilSettings s;
  settings_defaults(&s);
  size_t max = (size_t)s.line_max_bytes;
  char *line = xmalloc(max + 1);
  for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
    size_t k = strlen(pieces[p]), n = 0;
    while (n + k <= max) {
      memcpy(line + n, pieces[p], k);
      n += k;
    }
    line[n] = '\0';
    (void)match_line(ps, line, n);
    if (match_errors(ps) != 0) {
      check_fail(__FILE__, __LINE__, "a line of \"%s\" repeated hits a match limit", pieces[p]);
      break;
    }
  }
  free(line);
  match_free(ps);
}

TEST(docs_crash_patterns_md_is_what_the_table_renders)
{
  StrBuf want = STRBUF_INIT;
  crashpatterns_render_markdown(&want);
  CHECK_CONTAINS(strbuf_cstr(&want), "| 0 | `node-internal-header` | node | no |");
  CHECK_GENERATED(VIGIL_SOURCE_DIR "/docs/crash-patterns.md", strbuf_cstr(&want), want.len,
                  "VIGIL_WRITE_CRASH_PATTERNS_DOC",
                  "VIGIL_WRITE_CRASH_PATTERNS_DOC=1 build/tests/test_crashpatterns");
  strbuf_free(&want);
}

int
main(void)
{
  RUN(table_fits_the_defaults_and_is_complete);
  RUN(every_entry_matches_its_lines_first);
  RUN(no_entry_matches_a_line_that_must_not_fire);
  RUN(every_entry_alone_matches_its_lines_and_no_other);
  RUN(every_entry_keeps_a_literal_for_the_prefilter);
  RUN(seed_defaults_still_fire);
  RUN(line_start_prefixes);
  RUN(hostile_lines_cost_no_match_error);
  RUN(docs_crash_patterns_md_is_what_the_table_renders);
  return check_summary();
}
