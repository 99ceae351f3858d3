/*
 * The line splitter: turns one stream's bytes into sanitized lines (see
 * linebuf.h). It owns the held partial line (raw bytes, at most line_max + 1
 * of them) and a scratch buffer for sanitized text; both are allocated on
 * first use, so a stream that only ever sees whole plain lines costs nothing.
 *
 * This is the ingest hot path. A chunk is scanned once, 64 bytes at a time,
 * for line ends and "special" bytes (ESC, NUL, anything >= 0x80) together;
 * a line without a special byte is handed on as a pointer into the chunk.
 * Only lines with special bytes, lines split across reads and cut lines are
 * copied. With linebuf_feed_runs the plain lines (clean, whole, not cut)
 * are gathered in runs on the stack and handed on together, so a run of
 * ordinary log lines costs its owner one call, not one per line. The
 * 64-byte masks take two AVX2 compares where the machine has
 * AVX2 (chosen once, at the first chunk; VIGIL_LINEBUF_NO_AVX2 forces the
 * SSE2 path, which the tests also run), else four SSE2 ones.
 *
 * Decisions the header leaves open:
 * - The trailing CR is dropped before the length cap is applied, so a CRLF
 *   line whose text is exactly line_max bytes is not cut. A cut line's CR lies
 *   past the cut; it is discarded (and counted) with the rest of the line.
 * - A cut line is handed on when its newline arrives (or at finish), not when
 *   it passes line_max, so lines keep their order and flags are final.
 * - A line ending in CR with no LF (only possible at finish) keeps its CR.
 * - Escapes: besides CSI, OSC and two-byte ESC sequences, the other string
 *   sequences (DCS ESC P, SOS ESC X, PM ESC ^, APC ESC _) are removed up to
 *   their terminator like OSC, and ESC with intermediate bytes (ESC ( B, the
 *   charset selection tput sgr0 prints) is removed whole, so no fragment of
 *   a well-formed sequence reaches the agent. A sequence cut short by a byte
 *   that cannot belong to it ends there and that byte is kept. ESC followed
 *   by a control or non-ASCII byte loses only the ESC.
 */
#include "pipeline/linebuf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LINEBUF_AVX2 1
#endif

#include "base/memory.h"
#include "base/utf8.h"

#define LINEBUF_ESC 0x1B
#define LINEBUF_BEL 0x07

/* The smallest scratch buffer worth allocating; it doubles from here. */
#define LINEBUF_SCRATCH_MIN 256

static const char linebuf_replacement[3] = {'\xEF', '\xBF', '\xBD'}; /* U+FFFD */

/* Returns the first byte in [p, end) that is ESC, NUL or >= 0x80, or end.
 * A line without one needs no sanitizing. */
static const char *
linebuf_find_special(const char *p, const char *end)
{
#ifdef __SSE2__
  const __m128i esc = _mm_set1_epi8(LINEBUF_ESC);
  const __m128i zero = _mm_setzero_si128();
  /* Two vectors per round: the loop overhead matters at this speed. */
  while (end - p >= 32) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    /* The high bit of each byte of a | eq(a, ESC) | eq(a, 0) is set exactly
     * for the special bytes; movemask collects the high bits. */
    __m128i ma = _mm_or_si128(a, _mm_or_si128(_mm_cmpeq_epi8(a, esc), _mm_cmpeq_epi8(a, zero)));
    __m128i mb = _mm_or_si128(b, _mm_or_si128(_mm_cmpeq_epi8(b, esc), _mm_cmpeq_epi8(b, zero)));
    unsigned bits = (unsigned)_mm_movemask_epi8(ma) | ((unsigned)_mm_movemask_epi8(mb) << 16);
    if (bits != 0)
      return p + __builtin_ctz(bits);
    p += 32;
  }
  while (end - p >= 16) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i ma = _mm_or_si128(a, _mm_or_si128(_mm_cmpeq_epi8(a, esc), _mm_cmpeq_epi8(a, zero)));
    unsigned bits = (unsigned)_mm_movemask_epi8(ma);
    if (bits != 0)
      return p + __builtin_ctz(bits);
    p += 16;
  }
#else
  /* SWAR: eight bytes per step. has_zero(x) is nonzero iff a byte of x is 0
   * (its false positives only sit above a real zero byte, and we only ask
   * yes or no); a byte equal to ESC is a zero byte of x ^ ESC*8. */
  const uint64_t ones = 0x0101010101010101ull;
  const uint64_t highs = 0x8080808080808080ull;
  const uint64_t escs = ones * LINEBUF_ESC;
  while (end - p >= 8) {
    uint64_t x;
    memcpy(&x, p, sizeof x);
    uint64_t y = x ^ escs;
    uint64_t hit = (x | ((x - ones) & ~x) | ((y - ones) & ~y)) & highs;
    if (hit != 0)
      break; /* the byte loop below finds which one, whatever the byte order */
    p += 8;
  }
#endif
  for (; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == 0 || c == LINEBUF_ESC || c >= 0x80)
      return p;
  }
  return end;
}

/* The newlines and the special bytes (ESC, NUL, >= 0x80) among the n <= 64
 * bytes at p, as bit masks (bit i for p[i]; bits from n up are 0): the one
 * pass over a chunk that splits it into lines and tells which lines need
 * sanitizing. */
static inline void
linebuf_masks(const char *p, size_t n, uint64_t *newlines, uint64_t *specials)
{
  uint64_t nl = 0, sp = 0;
  size_t i = 0;
#ifdef __SSE2__
  const __m128i lf = _mm_set1_epi8('\n');
  const __m128i esc = _mm_set1_epi8(LINEBUF_ESC);
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
    __m128i special = _mm_or_si128(v, _mm_or_si128(_mm_cmpeq_epi8(v, esc), _mm_cmpeq_epi8(v, zero)));
    nl |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf)) << i;
    sp |= (uint64_t)(unsigned)_mm_movemask_epi8(special) << i;
  }
#endif
  for (; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '\n')
      nl |= (uint64_t)1 << i;
    else if (c == 0 || c == LINEBUF_ESC || c >= 0x80)
      sp |= (uint64_t)1 << i;
  }
  *newlines = nl;
  *specials = sp;
}

/* Skips the escape sequence whose ESC is at p and returns the first byte
 * after it (the line end, for a sequence the line cuts short). */
static const unsigned char *
linebuf_skip_escape(const unsigned char *p, const unsigned char *end)
{
  p++;
  if (p == end)
    return p; /* a lone ESC at the end of the line */
  unsigned char kind = *p;
  if (kind == '[') {
    /* CSI: parameter (0x30..0x3F) and intermediate (0x20..0x2F) bytes, then
     * one final byte. */
    p++;
    while (p < end && *p >= 0x20 && *p <= 0x3F)
      p++;
    if (p < end && *p >= 0x40 && *p <= 0x7E)
      p++;
    return p;
  }
  if (kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {
    /* OSC and the other string sequences: up to BEL or ST (ESC \). Any other
     * ESC ends the string and starts a sequence of its own. */
    p++;
    for (; p < end; p++) {
      if (*p == LINEBUF_BEL)
        return p + 1;
      if (*p == LINEBUF_ESC)
        return (p + 1 < end && p[1] == '\\') ? p + 2 : p;
    }
    return p;
  }
  if (kind >= 0x20 && kind <= 0x2F) {
    /* ESC, intermediates, final (ESC ( B and friends). */
    while (p < end && *p >= 0x20 && *p <= 0x2F)
      p++;
    if (p < end && *p >= 0x30 && *p <= 0x7E)
      p++;
    return p;
  }
  if (kind >= 0x30 && kind <= 0x7E)
    return p + 1; /* a two-byte sequence (ESC 7, ESC =, ESC M, ...) */
  return p; /* ESC before a control or a non-ASCII byte: drop the ESC only */
}

/* Writes the sanitized form of raw[0..len) to out (see linebuf.h): runs of
 * plain bytes are copied whole, escapes are skipped, NUL and invalid UTF-8
 * become U+FFFD. Returns the output length; *repaired says whether the
 * output differs from raw (valid UTF-8 without ESC or NUL is copied as
 * it is). */
static size_t
linebuf_sanitize_into(const char *raw, size_t len, char *out, unsigned *flags, bool *repaired)
{
  const unsigned char *p = (const unsigned char *)raw;
  const unsigned char *end = p + len;
  char *o = out;
  while (p < end) {
    const unsigned char *s =
        (const unsigned char *)linebuf_find_special((const char *)p, (const char *)end);
    if (s > p) {
      memcpy(o, p, (size_t)(s - p));
      o += s - p;
      p = s;
    }
    if (p == end)
      break;
    if (*p == 0) {
      memcpy(o, linebuf_replacement, 3);
      o += 3;
      *flags |= kLineBinary;
      *repaired = true;
      p++;
    } else if (*p == LINEBUF_ESC) {
      p = linebuf_skip_escape(p, end);
      *repaired = true;
    } else {
      /* An invalid sequence spans its maximal subpart, which becomes one
       * U+FFFD, as Unicode and WHATWG recommend. */
      uint32_t cp;
      size_t n = utf8_next(p, (size_t)(end - p), &cp);
      if (cp != UTF8_BAD) {
        memcpy(o, p, n);
        o += n;
      } else {
        memcpy(o, linebuf_replacement, 3);
        o += 3;
        *repaired = true;
      }
      p += n;
    }
  }
  return (size_t)(o - out);
}

/* See linebuf.h. */
size_t
linebuf_sanitize(const char *raw, size_t len, char *out, unsigned *flags)
{
  bool repaired = false;
  return linebuf_sanitize_into(raw, len, out, flags, &repaired);
}

/* The most bytes linebuf_sanitize can write for len input bytes: every byte
 * may become a 3-byte U+FFFD. */
size_t
linebuf_sanitized_max(size_t len)
{
  return len * 3;
}

/* Sets a Linebuf to its empty state for lines of at most line_max_bytes.
 * Nothing is allocated until a line needs it. */
void
linebuf_init(Linebuf *lb, size_t line_max_bytes)
{
  memset(lb, 0, sizeof *lb);
  lb->line_max = line_max_bytes;
}

/* Hands text[0..n), the stream's bytes from offset, on as one line,
 * sanitizing it into scratch unless the caller knows it holds no special
 * byte. Counts it. */
static void
linebuf_emit_text(Linebuf *lb, const char *text, size_t n, uint64_t offset, unsigned flags,
                  bool clean, LinebufEmit emit, void *ctx)
{
  Line line;
  line.offset = offset;
  line.raw = (flags & kLineTruncated) == 0;
  if (clean || linebuf_find_special(text, text + n) == text + n) {
    line.text = text;
    line.len = n;
  } else {
    size_t need = linebuf_sanitized_max(n);
    if (lb->scratch_cap < need) {
      /* Doubling keeps a stream of slowly longer lines from reallocating
       * often; n never exceeds line_max, so neither does the buffer's use. */
      size_t cap = lb->scratch_cap ? lb->scratch_cap : LINEBUF_SCRATCH_MIN;
      while (cap < need)
        cap *= 2;
      free(lb->scratch);
      lb->scratch = xmalloc(cap);
      lb->scratch_cap = cap;
    }
    bool repaired = false;
    line.len = linebuf_sanitize_into(text, n, lb->scratch, &flags, &repaired);
    line.text = lb->scratch;
    line.raw = line.raw && !repaired;
  }
  line.flags = flags;
  lb->lines++;
  if (flags & kLineTruncated)
    lb->truncated_lines++;
  emit(ctx, &line);
}

/* Adds p[0..n) to the held partial line. Past line_max the line is cut (at
 * a character boundary) and everything after the cut, now and until the
 * newline, is counted as discarded instead of held. One byte over line_max is
 * still held when it is a CR: it may be the CR of a CRLF, which does not
 * count towards the line's length. */
static void
linebuf_hold_append(Linebuf *lb, const char *p, size_t n)
{
  if (n == 0)
    return;
  if (lb->hold_flags & kLineTruncated) {
    lb->discarded_bytes += n;
    return;
  }
  if (lb->hold == NULL)
    lb->hold = xmalloc(lb->line_max + 1);
  size_t total = lb->hold_len + n;
  if (total <= lb->line_max || (total == lb->line_max + 1 && p[n - 1] == '\r')) {
    memcpy(lb->hold + lb->hold_len, p, n);
    lb->hold_len = total;
    return;
  }
  if (lb->hold_len < lb->line_max)
    memcpy(lb->hold + lb->hold_len, p, lb->line_max - lb->hold_len);
  size_t keep = utf8_cut(lb->hold, total, lb->line_max);
  lb->discarded_bytes += total - keep;
  lb->hold_len = keep;
  lb->hold_flags |= kLineTruncated;
}

/* Hands on the held line: at its newline (drop one trailing CR) or at the end
 * of the stream (kLineUnterminated, CR kept). Empties the hold. */
static void
linebuf_emit_held(Linebuf *lb, bool at_eof, LinebufEmit emit, void *ctx)
{
  size_t n = lb->hold_len;
  unsigned flags = lb->hold_flags;
  const char *text = lb->hold ? lb->hold : "";
  if (!(flags & kLineTruncated)) {
    if (!at_eof && n > 0 && text[n - 1] == '\r')
      n--;
    if (n > lb->line_max) {
      /* The byte held past line_max was a CR with no LF after it after all. */
      size_t keep = utf8_cut(text, n, lb->line_max);
      lb->discarded_bytes += n - keep;
      n = keep;
      flags |= kLineTruncated;
    }
  }
  if (at_eof)
    flags |= kLineUnterminated;
  lb->hold_len = 0;
  lb->hold_flags = 0;
  linebuf_emit_text(lb, text, n, lb->hold_offset, flags, false, emit, ctx);
}

/* Hands on the raw line p[0, raw) (its newline not included), which lies
 * whole in the chunk: drops one trailing CR, cuts it at line_max. clean
 * says no special byte lies in it. */
static inline void
linebuf_emit_line(Linebuf *lb, const char *p, size_t raw, bool clean, LinebufEmit emit,
                  void *ctx)
{
  size_t n = raw;
  unsigned flags = 0;
  if (n > 0 && p[n - 1] == '\r')
    n--;
  if (n > lb->line_max) {
    n = utf8_cut(p, n, lb->line_max);
    lb->discarded_bytes += raw - n;
    flags = kLineTruncated;
  }
  linebuf_emit_text(lb, p, n, lb->offset + (uint64_t)(p - lb->chunk), flags, clean, emit, ctx);
}

/* The plain lines gathered for one LineRun (linebuf_feed_runs), on the
 * feeding stack. */
typedef struct {
  LinebufEmitRun emit; /* NULL: every line goes to the Line callback */
  size_t n;
  uint32_t start[LINEBUF_RUN_MAX];
  uint32_t len[LINEBUF_RUN_MAX];
} LinebufRun;

/* Hands on the lines gathered so far, if any, and counts them. */
static void
linebuf_run_flush(Linebuf *lb, LinebufRun *run, void *ctx)
{
  if (run->n == 0)
    return;
  LineRun r = {lb->chunk, lb->offset, run->n, run->start, run->len};
  lb->lines += run->n;
  run->n = 0;
  run->emit(ctx, &r);
}

/* Adds the clean line p[0, raw) (its newline not included) to run when it
 * is plain (see LineRun: not cut once a CRLF's CR is dropped), handing the
 * run on when full. Returns false, having handed on the lines before it,
 * when the line must go to the Line callback instead. */
static inline bool
linebuf_run_add(Linebuf *lb, LinebufRun *run, const char *p, size_t raw, void *ctx)
{
  size_t n = raw;
  if (n > 0 && p[n - 1] == '\r')
    n--;
  if (n > lb->line_max) {
    linebuf_run_flush(lb, run, ctx);
    return false;
  }
  run->start[run->n] = (uint32_t)(p - lb->chunk);
  run->len[run->n] = (uint32_t)n;
  if (++run->n == LINEBUF_RUN_MAX)
    linebuf_run_flush(lb, run, ctx);
  return true;
}

#ifdef LINEBUF_AVX2
/* linebuf_masks for a whole block of 64 bytes, with two AVX2 loads. */
__attribute__((target("avx2"))) static inline void
linebuf_masks64_avx2(const char *p, uint64_t *newlines, uint64_t *specials)
{
  const __m256i lf = _mm256_set1_epi8('\n');
  const __m256i esc = _mm256_set1_epi8(LINEBUF_ESC);
  const __m256i zero = _mm256_setzero_si256();
  __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
  __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
  /* As the SSE2 path: a byte's high bit, or its equality with ESC or 0. */
  __m256i sa = _mm256_or_si256(a, _mm256_or_si256(_mm256_cmpeq_epi8(a, esc),
                                                  _mm256_cmpeq_epi8(a, zero)));
  __m256i sb = _mm256_or_si256(b, _mm256_or_si256(_mm256_cmpeq_epi8(b, esc),
                                                  _mm256_cmpeq_epi8(b, zero)));
  *newlines = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, lf)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, lf)) << 32;
  *specials = (uint64_t)(uint32_t)_mm256_movemask_epi8(sa) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(sb) << 32;
}
#endif

/* linebuf_masks for a whole block of 64 bytes, portable. */
static inline void
linebuf_masks64(const char *p, uint64_t *newlines, uint64_t *specials)
{
  linebuf_masks(p, 64, newlines, specials);
}

/* The one pass of linebuf_feed over [p, end), 64 bytes at a time, with
 * masks64 for whole blocks: each block's newlines end lines, and a line is
 * clean (handed on as it lies in data) when no special byte lies between
 * its start and its newline. `from` masks off the bits of the block before
 * the current line's start; `dirty` says a special byte lay in the line's
 * earlier blocks. With run->emit set, plain lines gather in run and the
 * others go to emit, the run before them handed on first. Returns where
 * the trailing partial line starts, every line before it handed on.
 * Inlined into each instruction set's copy, so that masks64 is too. */
__attribute__((always_inline)) static inline const char *
linebuf_split(Linebuf *lb, const char *p, const char *end, LinebufEmit emit, LinebufRun *run,
              void *ctx, void (*masks64)(const char *, uint64_t *, uint64_t *))
{
  bool dirty = false;
  for (const char *blk = p; blk < end; blk += 64) {
    size_t n = (size_t)(end - blk) < 64 ? (size_t)(end - blk) : 64;
    uint64_t nl, sp;
    if (n == 64)
      masks64(blk, &nl, &sp);
    else
      linebuf_masks(blk, n, &nl, &sp);
    uint64_t from = ~(uint64_t)0; /* the line began in this block or before */
    while (nl != 0) {
      unsigned i = (unsigned)__builtin_ctzll(nl);
      nl &= nl - 1;
      bool clean = !dirty && (sp & from & (((uint64_t)1 << i) - 1)) == 0;
      size_t raw = (size_t)(blk + i - p);
      if (run->emit == NULL || !(clean ? linebuf_run_add(lb, run, p, raw, ctx)
                                       : (linebuf_run_flush(lb, run, ctx), false)))
        linebuf_emit_line(lb, p, raw, clean, emit, ctx);
      p = blk + i + 1;
      dirty = false;
      from = i == 63 ? 0 : ~(uint64_t)0 << (i + 1);
    }
    if (sp & from)
      dirty = true;
  }
  if (run->emit != NULL)
    linebuf_run_flush(lb, run, ctx);
  return p;
}

static const char *
linebuf_split_portable(Linebuf *lb, const char *p, const char *end, LinebufEmit emit,
                       LinebufRun *run, void *ctx)
{
  return linebuf_split(lb, p, end, emit, run, ctx, linebuf_masks64);
}

#ifdef LINEBUF_AVX2
__attribute__((target("avx2"))) static const char *
linebuf_split_avx2(Linebuf *lb, const char *p, const char *end, LinebufEmit emit,
                   LinebufRun *run, void *ctx)
{
  return linebuf_split(lb, p, end, emit, run, ctx, linebuf_masks64_avx2);
}
#endif

/* -1: not chosen yet; 0: SSE2 (or portable); 1: AVX2. */
static int linebuf_avx2 = -1;

/* See linebuf.h. */
bool
linebuf_use_avx2(int want)
{
#ifdef LINEBUF_AVX2
  if (want >= 0 || linebuf_avx2 < 0) {
    __builtin_cpu_init();
    bool can = __builtin_cpu_supports("avx2");
    if (want < 0)
      can = can && getenv("VIGIL_LINEBUF_NO_AVX2") == NULL;
    linebuf_avx2 = can && want != 0;
  }
  return linebuf_avx2 == 1;
#else
  (void)want;
  linebuf_avx2 = 0;
  return false;
#endif
}

/* Splits data into lines and calls emit for each completed one, in order;
 * the trailing partial line is held for the next call. The Line passed to
 * emit points into data, hold or scratch and is valid only during the call. */
void
linebuf_feed(Linebuf *lb, const char *data, size_t len, LinebufEmit emit, void *ctx)
{
  linebuf_feed_runs(lb, data, len, emit, NULL, ctx);
}

/* See linebuf.h: linebuf_feed, plain lines gathered in runs on the stack
 * when emit_run is given. */
void
linebuf_feed_runs(Linebuf *lb, const char *data, size_t len, LinebufEmit emit,
                  LinebufEmitRun emit_run, void *ctx)
{
  LinebufRun run;
  run.emit = len <= UINT32_MAX ? emit_run : NULL;
  run.n = 0;
  const char *p = data;
  const char *end = data + len;
  if (len == 0)
    return;
  lb->chunk = data;
  if (lb->hold_len > 0 || (lb->hold_flags & kLineTruncated)) {
    const char *nl = memchr(p, '\n', len);
    linebuf_hold_append(lb, p, (size_t)((nl ? nl : end) - p));
    if (nl == NULL) {
      lb->offset += len;
      lb->chunk = NULL;
      return;
    }
    linebuf_emit_held(lb, false, emit, ctx);
    p = nl + 1;
  }
  if (linebuf_avx2 < 0)
    linebuf_use_avx2(-1);
#ifdef LINEBUF_AVX2
  if (linebuf_avx2 == 1)
    p = linebuf_split_avx2(lb, p, end, emit, &run, ctx);
  else
#endif
    p = linebuf_split_portable(lb, p, end, emit, &run, ctx);
  if (p < end) {
    if (lb->hold_len == 0 && !(lb->hold_flags & kLineTruncated))
      lb->hold_offset = lb->offset + (uint64_t)(p - data);
    linebuf_hold_append(lb, p, (size_t)(end - p));
  }
  lb->offset += len;
  lb->chunk = NULL;
}

/* Hands on the held partial line, if any, marked kLineUnterminated; the
 * Linebuf is then empty and may take a new stream. */
void
linebuf_finish(Linebuf *lb, LinebufEmit emit, void *ctx)
{
  if (lb->hold_len > 0 || (lb->hold_flags & kLineTruncated))
    linebuf_emit_held(lb, true, emit, ctx);
}

/* Frees the hold and scratch buffers; counters stay readable. */
void
linebuf_free(Linebuf *lb)
{
  free(lb->hold);
  free(lb->scratch);
  lb->hold = NULL;
  lb->scratch = NULL;
  lb->hold_len = 0;
  lb->hold_flags = 0;
  lb->scratch_cap = 0;
}
