/*
 * A monitor's pattern set (see match.h): PCRE2 regexes compiled in UTF mode
 * with PCRE2_MATCH_INVALID_UTF, so any bytes a child prints can be matched
 * without a UTF check or a crash, JIT-compiled where the platform allows.
 *
 * Every match runs under one match context per set: the match limit and the
 * depth limit from the settings, a heap limit of 20 MiB (the interpreter's
 * backtracking frames; JIT ignores it), and a JIT stack of 32 KiB growing to
 * at most 512 KiB. Whichever limit a line hits, the line counts as
 * unmatched for that pattern and as one match error.
 *
 * The patterns that can safely be wrapped as "(?:p)" are also compiled as one
 * alternation. A line that misses the alternation cannot match any of them,
 * so most lines of a log cost one JIT call. A pattern whose meaning could
 * change inside the alternation (numbered back references, recursion and
 * subroutine calls, backtracking verbs such as (*COMMIT), conditions on
 * group numbers) is left out of it and always tried on its own; if the
 * alternation does not compile at all (too big, or an (?x) comment that
 * swallows the closing parentheses) every pattern is tried on its own.
 *
 * Sets compiled from the same list of patterns under the same match limits
 * share one compiled core (the codes, the JIT code, the match context, the
 * JIT stack, the match data and the prefilter), reference-counted: a
 * thousand monitors started with the same patterns, or none (the built-in
 * set), compile them once and cost a few bytes each. Each set keeps its own
 * error count. Like the rest of the core, this is used from one thread: the
 * list of cores and the shared match data are not locked.
 *
 * PCRE2 allocates through xmalloc, so running out of memory is fatal here as
 * everywhere in vigil, and no pcre2_*_create call needs a NULL check.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "pipeline/match.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "pipeline/prefilter.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* The interpreter's backtracking memory per match, in KiB. It bounds memory
 * when JIT is unavailable; the depth limit alone would allow more on a
 * pattern with large frames. */
#define MATCH_HEAP_LIMIT_KIB (20 * 1024)

/* The JIT stack per set: small to start, and a bound on what a hostile line
 * can make a pattern use. */
#define MATCH_JIT_STACK_START (32 * 1024)
#define MATCH_JIT_STACK_MAX (512 * 1024)

/* How much of a bad pattern's source an error message shows. */
#define MATCH_SHOW_MAX 120

/* The compiled form of a list of patterns, shared by every set compiled
 * from the same list under the same match limits (file comment). */
typedef struct MatchCore MatchCore;
struct MatchCore {
  MatchCore *next;           /* in match_cores */
  size_t refs;               /* PatternSets using it */
  uint32_t match_limit;      /* the limits it was made with (part of the key) */
  uint32_t depth_limit;
  size_t n;
  char **sources;            /* n copies of the sources */
  pcre2_code **codes;        /* n compiled patterns */
  bool *in_combined;         /* whether pattern i is part of `combined` */
  pcre2_code *combined;      /* the alternation, or NULL when not worth it or not possible */
  pcre2_general_context *gctx;
  pcre2_match_context *mctx;
  pcre2_jit_stack *jit_stack; /* NULL when no pattern was JIT-compiled */
  pcre2_match_data *md;      /* one for every match of the set */
  Prefilter prefilter;       /* every pattern's required literal */
  bool has_prefilter;        /* false when some pattern has none */
};

/* One user's handle on a core: what it counts is its own. */
struct PatternSet {
  MatchCore *core;           /* NULL for an empty set */
  uint64_t errors;
};

/* Every core in use. A handful of distinct lists serve any number of
 * monitors (most start with the same patterns, or the built-in set), so a
 * list is walked rather than hashed. */
static MatchCore *match_cores;

/* PCRE2's allocator: xmalloc, so that PCRE2 never sees a NULL. */
static void *
match_alloc(size_t size, void *data)
{
  (void)data;
  return xmalloc(size);
}

/* PCRE2's deallocator. */
static void
match_dealloc(void *ptr, void *data)
{
  (void)data;
  free(ptr);
}

/* Whether a source can be shown between quotes as it is: no control
 * characters, no quotes and valid UTF-8. Backslashes are left alone then,
 * so a regex reads as the user wrote it. */
static bool
match_plain(const char *src, size_t len)
{
  const unsigned char *s = (const unsigned char *)src;
  for (size_t i = 0; i < len;) {
    if (s[i] < 0x20 || s[i] == 0x7F || s[i] == '"')
      return false;
    uint32_t cp;
    size_t k = utf8_next(s + i, len - i, &cp);
    if (cp == UTF8_BAD) /* as PCRE2 sees it too: no overlong, surrogate, > U+10FFFF */
      return false;
    i += k;
  }
  return true;
}

/* Appends src to out between double quotes, escaped C-style (\\, \", \n,
 * \t, \r, \xNN) if it is not plain, and cut to about MATCH_SHOW_MAX bytes
 * (at a character boundary, with "...") if longer. */
static void
match_quote(StrBuf *out, const char *src, size_t len)
{
  const unsigned char *s = (const unsigned char *)src;
  size_t show = len;
  bool cut = false;
  if (show > MATCH_SHOW_MAX) {
    show = utf8_cut(src, len, MATCH_SHOW_MAX);
    cut = true;
  }
  strbuf_putc(out, '"');
  if (match_plain(src, show)) {
    strbuf_append(out, src, show);
  } else {
    for (size_t i = 0; i < show;) {
      unsigned c = s[i];
      uint32_t cp;
      size_t k = utf8_next(s + i, show - i, &cp);
      if (c == '"' || c == '\\') {
        strbuf_putc(out, '\\');
        strbuf_putc(out, (char)c);
      } else if (c == '\n') {
        strbuf_puts(out, "\\n");
      } else if (c == '\t') {
        strbuf_puts(out, "\\t");
      } else if (c == '\r') {
        strbuf_puts(out, "\\r");
      } else if (c < 0x20 || c == 0x7F || cp == UTF8_BAD) {
        strbuf_printf(out, "\\x%02X", c);
      } else {
        strbuf_append(out, src + i, k);
        i += k;
        continue;
      }
      i++;
    }
  }
  if (cut)
    strbuf_puts(out, "...");
  strbuf_putc(out, '"');
}

/* Whether a pattern means the same wrapped as "(?:p)" inside an alternation
 * after other patterns. Group numbers shift there, so numbered references,
 * recursion, subroutine calls and conditions on groups may refer to another
 * pattern's groups, and a backtracking verb could cut off the alternatives
 * after it. The scan of the source is deliberately crude: a false "no" only
 * costs speed (the pattern is then tried on its own). */
static bool
match_combinable(const char *src, const pcre2_code *code)
{
  uint32_t backrefmax = 0;
  pcre2_pattern_info(code, PCRE2_INFO_BACKREFMAX, &backrefmax);
  if (backrefmax > 0)
    return false;
  static const char *const risky[] = {"(*", "(?R", "(?&", "(?P>", "(?(", "(?+", "\\g", NULL};
  for (size_t i = 0; risky[i]; i++)
    if (strstr(src, risky[i]))
      return false;
  for (const char *p = strstr(src, "(?"); p; p = strstr(p + 2, "(?")) {
    char c = p[2];
    if ((c >= '0' && c <= '9') || (c == '-' && p[3] >= '0' && p[3] <= '9'))
      return false;
  }
  return true;
}

/* Compiles src with the set's options, or returns NULL and fills *errcode
 * and *erroffset. */
static pcre2_code *
match_compile_one(const char *src, size_t len, pcre2_compile_context *cctx, int *errcode,
                  PCRE2_SIZE *erroffset)
{
  return pcre2_compile((PCRE2_SPTR)src, len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, errcode,
                       erroffset, cctx);
}

/* JIT-compiles code; returns whether that worked. Failure (no JIT on this
 * platform, or a pattern JIT cannot handle) leaves the interpreter, which
 * is slower but equivalent. */
static bool
match_jit(pcre2_code *code)
{
  return pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

/* The number of capture groups of code. */
static uint32_t
match_captures(const pcre2_code *code)
{
  uint32_t n = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &n);
  return n;
}

/* Builds and compiles the alternation of the patterns marked in_combined,
 * when there are at least two; leaves ps->combined NULL otherwise or when
 * it does not compile (the patterns are then all tried on their own). */
static void
match_build_combined(MatchCore *ps, pcre2_compile_context *cctx)
{
  size_t k = 0;
  for (size_t i = 0; i < ps->n; i++)
    k += ps->in_combined[i];
  if (k >= 2) {
    StrBuf alt = STRBUF_INIT;
    for (size_t i = 0; i < ps->n; i++) {
      if (!ps->in_combined[i])
        continue;
      if (alt.len)
        strbuf_putc(&alt, '|');
      strbuf_puts(&alt, "(?:");
      strbuf_puts(&alt, ps->sources[i]);
      strbuf_putc(&alt, ')');
    }
    int errcode;
    PCRE2_SIZE erroffset;
    ps->combined = match_compile_one(alt.data, alt.len, cctx, &errcode, &erroffset);
    strbuf_free(&alt);
  }
  if (ps->combined == NULL) {
    for (size_t i = 0; i < ps->n; i++)
      ps->in_combined[i] = false;
  }
}

/* Makes what every match of the set runs with (file comment): the match
 * context with the limits, the JIT stack when any pattern was JIT-compiled,
 * and the one match data, sized for max_captures groups. */
static void
match_setup_matching(MatchCore *ps, const MatchLimits *lim, bool any_jit,
                     uint32_t max_captures)
{
  ps->mctx = pcre2_match_context_create(ps->gctx);
  pcre2_set_match_limit(ps->mctx, lim->match_limit);
  pcre2_set_depth_limit(ps->mctx, lim->depth_limit);
  pcre2_set_heap_limit(ps->mctx, MATCH_HEAP_LIMIT_KIB);
  if (any_jit) {
    /* Without an assigned stack JIT uses 32 KiB on the machine stack; a
     * stack of our own lets a deep but legitimate match succeed. If it
     * cannot be made, the default still works, only with less room. */
    ps->jit_stack = pcre2_jit_stack_create(MATCH_JIT_STACK_START, MATCH_JIT_STACK_MAX, ps->gctx);
    if (ps->jit_stack)
      pcre2_jit_stack_assign(ps->mctx, NULL, ps->jit_stack);
  }
  /* One match data serves every pattern of the set, so it is sized for the
   * one with the most groups (the alternation holds them all); the
   * interpreter keeps its backtracking frames in it from line to line. */
  ps->md = pcre2_match_data_create(max_captures + 1, ps->gctx);
}

/* Frees a core and everything it holds; NULL is allowed. */
static void
match_core_free(MatchCore *ps)
{
  if (ps == NULL)
    return;
  for (size_t i = 0; i < ps->n; i++) {
    pcre2_code_free(ps->codes[i]);
    free(ps->sources[i]);
  }
  free(ps->codes);
  free(ps->sources);
  free(ps->in_combined);
  pcre2_code_free(ps->combined);
  pcre2_match_data_free(ps->md);
  pcre2_match_context_free(ps->mctx);
  pcre2_jit_stack_free(ps->jit_stack);
  pcre2_general_context_free(ps->gctx);
  prefilter_free(&ps->prefilter);
  free(ps);
}

/* Compiles a core from n >= 1 patterns already checked for length. On
 * error returns NULL with err filled and everything allocated so far freed. */
static MatchCore *
match_core_compile(const char *const *patterns, size_t n, const MatchLimits *lim,
                   const char *arg_name, VigilError *err)
{
  MatchCore *ps = xcalloc(1, sizeof *ps);
  ps->match_limit = lim->match_limit;
  ps->depth_limit = lim->depth_limit;
  ps->n = n;
  ps->sources = xcalloc(n, sizeof *ps->sources);
  ps->codes = xcalloc(n, sizeof *ps->codes);
  ps->in_combined = xcalloc(n, sizeof *ps->in_combined);
  ps->gctx = pcre2_general_context_create(match_alloc, match_dealloc, NULL);
  pcre2_compile_context *cctx = pcre2_compile_context_create(ps->gctx);

  bool any_jit = false;
  uint32_t max_captures = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(patterns[i]);
    int errcode;
    PCRE2_SIZE erroffset;
    ps->codes[i] = match_compile_one(patterns[i], len, cctx, &errcode, &erroffset);
    if (ps->codes[i] == NULL) {
      char msg[256];
      if (pcre2_get_error_message(errcode, (PCRE2_UCHAR *)msg, sizeof msg) < 0)
        strcpy(msg, "does not compile");
      StrBuf shown = STRBUF_INIT;
      match_quote(&shown, patterns[i], len);
      error_set(err, kErrInvalidPattern, "%s[%zu] %s: %s at offset %zu", arg_name, i,
                strbuf_cstr(&shown), msg, (size_t)erroffset);
      strbuf_free(&shown);
      pcre2_compile_context_free(cctx);
      match_core_free(ps);
      return NULL;
    }
    ps->sources[i] = xmemdupz(patterns[i], len);
    ps->in_combined[i] = match_combinable(ps->sources[i], ps->codes[i]);
    any_jit |= match_jit(ps->codes[i]);
    uint32_t c = match_captures(ps->codes[i]);
    if (c > max_captures)
      max_captures = c;
  }

  match_build_combined(ps, cctx);
  pcre2_compile_context_free(cctx);
  if (ps->combined) {
    any_jit |= match_jit(ps->combined);
    uint32_t c = match_captures(ps->combined);
    if (c > max_captures)
      max_captures = c;
  }

  match_setup_matching(ps, lim, any_jit, max_captures);
  ps->has_prefilter = prefilter_build(&ps->prefilter, (const char *const *)ps->sources, ps->n);
  return ps;
}

/* The core in use for exactly these patterns under these limits, or NULL. */
static MatchCore *
match_core_find(const char *const *patterns, size_t n, const MatchLimits *lim)
{
  for (MatchCore *c = match_cores; c != NULL; c = c->next) {
    if (c->n != n || c->match_limit != lim->match_limit || c->depth_limit != lim->depth_limit)
      continue;
    size_t i = 0;
    while (i < n && strcmp(c->sources[i], patterns[i]) == 0)
      i++;
    if (i == n)
      return c;
  }
  return NULL;
}

/* Compiles the set, or takes a core already compiled from the same list
 * (file comment). On error returns NULL with err filled and nothing
 * allocated. The returned set is the caller's (match_free). */
PatternSet *
match_compile(const char *const *patterns, size_t n, const MatchLimits *lim,
              const char *arg_name, VigilError *err)
{
  if (n > lim->max_patterns) {
    error_set(err, kErrLimitExceeded, "%s: at most %zu patterns, got %zu", arg_name,
              lim->max_patterns, n);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(patterns[i]);
    if (len > lim->pattern_max_length) {
      error_set(err, kErrInvalidPattern,
                "%s[%zu]: %zu bytes, longer than monitor.pattern_max_length (%zu)", arg_name, i,
                len, lim->pattern_max_length);
      return NULL;
    }
  }
  PatternSet *ps = xcalloc(1, sizeof *ps);
  if (n == 0)
    return ps;
  MatchCore *core = match_core_find(patterns, n, lim);
  if (core == NULL) {
    core = match_core_compile(patterns, n, lim, arg_name, err);
    if (core == NULL) {
      free(ps);
      return NULL;
    }
    core->next = match_cores;
    match_cores = core;
  }
  core->refs++;
  ps->core = core;
  return ps;
}

/* Runs one compiled pattern over text; returns PCRE2's result (>= 0 is a
 * match, PCRE2_ERROR_NOMATCH none, anything else a runtime error). */
static int
match_run(MatchCore *ps, const pcre2_code *code, const char *text, size_t len)
{
  return pcre2_match(code, (PCRE2_SPTR)text, len, 0, 0, ps->md, ps->mctx);
}

/* The index of the first pattern in list order that matches text, or -1,
 * by PCRE2 alone (the caller has looked at the literals). A line on which
 * any pattern (not the alternation) hits a limit counts as one match error;
 * that pattern counts as not matching. */
static int
match_patterns(PatternSet *set, const char *text, size_t len)
{
  MatchCore *ps = set->core;
  bool try_combined = true;
  if (ps->combined) {
    int rc = match_run(ps, ps->combined, text, len);
    /* A hit says some pattern of the alternation matches, not which: the
     * leftmost hit may belong to a later pattern. A limit error on the
     * alternation says nothing, so its patterns are then tried one by one,
     * each under its own limit. */
    if (rc == PCRE2_ERROR_NOMATCH)
      try_combined = false;
  }
  bool failed = false;
  int found = -1;
  for (size_t i = 0; i < ps->n; i++) {
    if (ps->in_combined[i] && !try_combined)
      continue;
    int rc = match_run(ps, ps->codes[i], text, len);
    if (rc >= 0) {
      found = (int)i;
      break;
    }
    if (rc != PCRE2_ERROR_NOMATCH)
      failed = true;
  }
  if (failed)
    set->errors++;
  return found;
}

/* See match.h. */
int
match_line(PatternSet *ps, const char *text, size_t len)
{
  const MatchCore *core = ps->core;
  if (core == NULL)
    return -1;
  /* A line without any pattern's required literal cannot match: most lines
   * of a log stop here, without a call into PCRE2. */
  if (core->has_prefilter && !prefilter_hit(&core->prefilter, text, len))
    return -1;
  return match_patterns(ps, text, len);
}

/* See match.h. */
void
match_chunk_begin(MatchChunk *c, const char *base, size_t len)
{
  c->base = base;
  c->len = len;
  c->searched = false;
}

/* Searches c for the first literal whose fingerprint is at or after `from`
 * and that starts at or after lo; none is recorded as a hit at the chunk's
 * end. */
static void
match_chunk_search(const MatchCore *ps, MatchChunk *c, size_t from, size_t lo)
{
  if (!prefilter_find(&ps->prefilter, c->base, c->len, from, lo, &c->hit))
    c->hit.at = c->hit.start = c->hit.end = c->len;
  c->searched = true;
}

/* Makes c->hit the first literal for lines from chunk position start on:
 * its fingerprint at or after start, the literal starting at or after it.
 * A hit found for an earlier line that still qualifies is kept. */
static void
match_chunk_seek(const MatchCore *core, MatchChunk *c, size_t start)
{
  if (!c->searched || c->hit.at < start)
    match_chunk_search(core, c, start, start);
  else if (c->hit.start < start)
    match_chunk_search(core, c, c->hit.at, start);
}

/* See match.h: by the same search as match_line_in_chunk's, a line from
 * text on that ends at or before the next literal's fingerprint holds no
 * literal. */
const char *
match_chunk_clear(PatternSet *ps, MatchChunk *c, const char *text)
{
  const MatchCore *core = ps->core;
  uintptr_t at = (uintptr_t)text, base = (uintptr_t)c->base;
  if (core == NULL || !core->has_prefilter || c->base == NULL || at < base ||
      at - base > c->len)
    return text;
  match_chunk_seek(core, c, at - base);
  return c->base + c->hit.at;
}

/* See match.h. The chunk is searched lazily, by fingerprint position (see
 * teddy.h): every literal lying whole in a line [start, end) has its
 * fingerprint in [start, end), so a line whose start is past the last hit
 * searches on from its start, and a line that ends before the next hit
 * holds no literal. A hit that starts before the line (it was found for an
 * earlier one) is searched again at the same position for this line; one
 * that runs past the line's end makes the search go on from the next
 * position. So a line is told exactly whether it holds a literal, as
 * prefilter_hit would say, and the chunk is searched about once in all. */
int
match_line_in_chunk(PatternSet *ps, MatchChunk *c, const char *text, size_t len)
{
  const MatchCore *core = ps->core;
  uintptr_t at = (uintptr_t)text, base = (uintptr_t)c->base;
  if (core == NULL || !core->has_prefilter || c->base == NULL || at < base ||
      at - base > c->len || len > c->len - (at - base))
    return match_line(ps, text, len);
  size_t start = at - base, end = start + len;
  match_chunk_seek(core, c, start);
  for (;;) {
    if (c->hit.at >= end)
      return -1;
    if (c->hit.end <= end)
      return match_patterns(ps, text, len);
    match_chunk_search(core, c, c->hit.at + 1, start);
  }
}

/* The number of patterns. */
size_t
match_count(const PatternSet *ps)
{
  return ps->core ? ps->core->n : 0;
}

/* The source of pattern index (owned by the set), or NULL if out of range. */
const char *
match_source(const PatternSet *ps, size_t index)
{
  return index < match_count(ps) ? ps->core->sources[index] : NULL;
}

/* The sources, in list order (owned by the set); an empty set gives an
 * empty array. */
const char *const *
match_sources(const PatternSet *ps)
{
  static const char *const none[1] = {NULL};
  return ps->core ? (const char *const *)ps->core->sources : none;
}

/* Lines that hit a limit or another PCRE2 runtime error so far, in this
 * set's lines (not those of other sets sharing its core). */
uint64_t
match_errors(const PatternSet *ps)
{
  return ps->errors;
}

/* Frees the set, and its core when no other set uses it; NULL is allowed. */
void
match_free(PatternSet *ps)
{
  if (ps == NULL)
    return;
  MatchCore *core = ps->core;
  free(ps);
  if (core == NULL || --core->refs > 0)
    return;
  for (MatchCore **pp = &match_cores; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == core) {
      *pp = core->next;
      break;
    }
  }
  match_core_free(core);
}
