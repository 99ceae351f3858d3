/*
 * The prefix rule of a policy's body, checked in one pass (see
 * prefixrule.h). The first version searched the body for every occurrence
 * of every line's probe, scanned back to the start of each occurrence's line
 * and formatted every line's prefix with snprintf to compare it: lines x
 * occurrences x (line length + lines), which let a process that prints
 * repetitive lines (or one long one) hold the engine's loop for seconds.
 * Here every structure is built once per check and every body byte is
 * looked at a bounded number of times.
 */
#include "render/prefixrule.h"

#include <endian.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/envelope.h"
#include "base/memory.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* How many bytes of a line's raw text are escaped to make its probe: a
 * probe is the first ENVELOPE_PROBE_BYTES bytes of the escaped text, and
 * escaping a unit (at most 4 bytes) depends only on it and the next unit
 * (a backslash is doubled before some), so every unit that starts in the
 * first ENVELOPE_PROBE_BYTES raw bytes, which alone give at least that many
 * escaped bytes, comes out as it would from the whole text. */
#define PREFIXRULE_RAW_BYTES (ENVELOPE_PROBE_BYTES + 8)

/* The longest "[stdout seq=N] " prefix: 12 + 20 digits + 2. */
#define PREFIXRULE_PREFIX_MAX 34

/* One line prefix of the notification, for the sorted array. */
typedef struct {
  uint64_t seq;
  size_t line; /* index in n->lines */
  bool err;    /* stderr (stream 1); anything else is shown as stdout */
} PrefixKey;

/* One distinct probe, in the open-addressed hash set. */
typedef struct {
  uint64_t hash;
  uint64_t seq; /* the first line with this probe, for the message */
  uint8_t len;  /* 0: an empty slot */
  char text[ENVELOPE_PROBE_BYTES];
} PrefixProbe;

/* A span of the built-in body. */
typedef struct {
  const char *start;
  size_t len;
} PrefixSpan;

typedef struct {
  const Notification *n;
  PrefixKey *keys; /* n's prefixes, sorted by (err, seq) */
  PrefixProbe *slots;
  size_t slot_mask;     /* slots - 1, a power of two less one */
  unsigned slot_shift;  /* 64 - log2(slots) */
  uint32_t lens;        /* bit L set: some probe is L bytes long */
  uint64_t *filter;     /* a bit per hash of a probe's first 8 bytes */
  unsigned filter_shift;
  /* The built-in body, rendered on first need. */
  bool have_builtin;
  StrBuf builtin;
  PrefixSpan *line_spans;   /* the built-in line of each line of n */
  PrefixSpan *other_spans;  /* the built-in lines that are vigil's own words */
  size_t nother;
  uint64_t work;
} PrefixRule;

/* Hash keys, random per process: k[0..2] for the three words of a window,
 * k[3] for its length, k[4] for the filter. Odd, as multiply-shift wants. */
static uint64_t prefixrule_keys[5];
static bool prefixrule_seeded;

static void
prefixrule_seed(void)
{
  if (prefixrule_seeded)
    return;
  random_bytes(prefixrule_keys, sizeof prefixrule_keys);
  for (size_t i = 0; i < 5; i++)
    prefixrule_keys[i] |= 1;
  prefixrule_seeded = true;
}

/* The up to 8 bytes at p (n of them, 0..8) as a little-endian word with the
 * rest zero, so a window and a probe of the same bytes give the same word
 * on any host. */
static uint64_t
prefixrule_word(const char *p, size_t n)
{
  uint64_t w = 0;
  memcpy(&w, p, n > 8 ? 8 : n);
  return le64toh(w);
}

/* The hash of the first len bytes (8..24) given as three words, of which
 * only the first len bytes count: multilinear, keeping the high bits, a
 * near-universal family over the random keys. */
static uint64_t
prefixrule_hash(uint64_t w0, uint64_t w1, uint64_t w2, size_t len)
{
  /* Keep the first len-8 bytes of w1 and the first len-16 of w2. */
  if (len < 16)
    w1 &= (UINT64_C(1) << (8 * (len - 8))) - 1;
  if (len < 24)
    w2 = len <= 16 ? 0 : w2 & ((UINT64_C(1) << (8 * (len - 16))) - 1);
  const uint64_t *k = prefixrule_keys;
  return w0 * k[0] + w1 * k[1] + w2 * k[2] + (uint64_t)len * k[3];
}

static size_t
prefixrule_filter_bit(const PrefixRule *r, uint64_t w0)
{
  return (size_t)((w0 * prefixrule_keys[4]) >> r->filter_shift);
}

static int
prefixrule_key_cmp(const void *a, const void *b)
{
  const PrefixKey *x = a, *y = b;
  if (x->err != y->err)
    return x->err ? 1 : -1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The smallest power of two >= v (v >= 1), and its log2. */
static size_t
prefixrule_pow2(size_t v, unsigned *log2)
{
  size_t p = 1;
  unsigned l = 0;
  while (p < v) {
    p <<= 1;
    l++;
  }
  *log2 = l;
  return p;
}

/* Adds line i's probe to the set, unless it is too short or already there. */
static void
prefixrule_add_probe(PrefixRule *r, StrBuf *scratch, size_t i)
{
  const NoteLine *l = &r->n->lines[i];
  size_t raw = l->len < PREFIXRULE_RAW_BYTES ? l->len : PREFIXRULE_RAW_BYTES;
  strbuf_reset(scratch);
  textfmt_escape(scratch, l->text ? l->text : "", raw);
  r->work += raw;
  size_t len = scratch->len < ENVELOPE_PROBE_BYTES ? scratch->len : ENVELOPE_PROBE_BYTES;
  if (len < ENVELOPE_PROBE_MIN)
    return;
  const char *t = strbuf_cstr(scratch);
  uint64_t w0 = prefixrule_word(t, 8);
  uint64_t h = prefixrule_hash(w0, prefixrule_word(t + 8, len - 8),
                               len > 16 ? prefixrule_word(t + 16, len - 16) : 0, len);
  size_t at = (size_t)(h >> r->slot_shift);
  for (;; at = (at + 1) & r->slot_mask) {
    PrefixProbe *s = &r->slots[at];
    if (s->len == 0) {
      s->hash = h;
      s->seq = l->seq;
      s->len = (uint8_t)len;
      memcpy(s->text, t, len);
      break;
    }
    r->work++;
    if (s->hash == h && s->len == len && memcmp(s->text, t, len) == 0)
      return; /* the same text as an earlier line: that line names it */
  }
  r->lens |= UINT32_C(1) << len;
  size_t bit = prefixrule_filter_bit(r, w0);
  r->filter[bit / 64] |= UINT64_C(1) << (bit % 64);
}

/* Builds the sorted prefixes and the probe set of n. */
static void
prefixrule_init(PrefixRule *r, const Notification *n)
{
  memset(r, 0, sizeof *r);
  prefixrule_seed();
  r->n = n;
  size_t count = n->nlines;
  r->keys = xmalloc((count ? count : 1) * sizeof *r->keys);
  for (size_t i = 0; i < count; i++)
    r->keys[i] = (PrefixKey){n->lines[i].seq, i, n->lines[i].stream == 1};
  qsort(r->keys, count, sizeof *r->keys, prefixrule_key_cmp);
  /* At most half full, so a probe sequence stays short. */
  unsigned log2;
  size_t slots = prefixrule_pow2(2 * count + 16, &log2);
  r->slots = xcalloc(slots, sizeof *r->slots);
  r->slot_mask = slots - 1;
  r->slot_shift = 64 - log2;
  /* About 64 bits per probe, so few windows pass the filter by chance. */
  size_t bits = prefixrule_pow2(64 * count + 512, &log2);
  r->filter = xcalloc(bits / 64, sizeof *r->filter);
  r->filter_shift = 64 - log2;
  StrBuf scratch = STRBUF_INIT;
  for (size_t i = 0; i < count; i++)
    prefixrule_add_probe(r, &scratch, i);
  strbuf_free(&scratch);
  r->work += count + slots / 8 + bits / 512;
}

static void
prefixrule_free(PrefixRule *r)
{
  free(r->keys);
  free(r->slots);
  free(r->filter);
  strbuf_free(&r->builtin);
  free(r->line_spans);
  free(r->other_spans);
}

/* Parses a line prefix "[stdout seq=N] " or "[stderr seq=N] " at the start
 * of [p, p+len), N written as the envelope writes it (no sign, no leading
 * zero, at most UINT64_MAX). Returns its length, or 0 when there is none. */
static size_t
prefixrule_parse_prefix(const char *p, size_t len, bool *err, uint64_t *seq)
{
  if (len < 15)
    return 0;
  if (memcmp(p, "[stdout seq=", 12) == 0)
    *err = false;
  else if (memcmp(p, "[stderr seq=", 12) == 0)
    *err = true;
  else
    return 0;
  size_t i = 12;
  uint64_t v = 0;
  while (i < len && p[i] >= '0' && p[i] <= '9') {
    unsigned d = (unsigned)(p[i] - '0');
    if ((i > 12 && v == 0) || v > (UINT64_MAX - d) / 10)
      return 0; /* a leading zero, or too large */
    v = v * 10 + d;
    i++;
  }
  if (i == 12 || len - i < 2 || p[i] != ']' || p[i + 1] != ' ')
    return 0;
  *seq = v;
  return i + 2;
}

/* The index in r->keys of the first key (err, seq), or SIZE_MAX. */
static size_t
prefixrule_find_key(const PrefixRule *r, bool err, uint64_t seq)
{
  PrefixKey want = {seq, 0, err};
  size_t lo = 0, hi = r->n->nlines;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (prefixrule_key_cmp(&r->keys[mid], &want) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < r->n->nlines && prefixrule_key_cmp(&r->keys[lo], &want) == 0 ? lo : SIZE_MAX;
}

/* Renders the built-in body once and notes which of its lines is the line
 * of each of n's lines (they are written in order, each behind its prefix)
 * and which are vigil's own words (monitor:, event:, status:, ...: a
 * handful, as a line of text holds no newline). */
static void
prefixrule_load_builtin(PrefixRule *r)
{
  if (r->have_builtin)
    return;
  r->have_builtin = true;
  envelope_body(r->n, &r->builtin);
  size_t count = r->n->nlines;
  r->line_spans = xcalloc(count ? count : 1, sizeof *r->line_spans);
  size_t cap = 8;
  r->other_spans = xmalloc(cap * sizeof *r->other_spans);
  const char *p = strbuf_cstr(&r->builtin), *stop = p + r->builtin.len;
  size_t next = 0;
  while (p < stop) {
    const char *nl = memchr(p, '\n', (size_t)(stop - p));
    const char *le = nl ? nl : stop;
    bool err;
    uint64_t seq;
    size_t plen = prefixrule_parse_prefix(p, (size_t)(le - p), &err, &seq);
    if (plen > 0 && next < count && seq == r->n->lines[next].seq &&
        err == (r->n->lines[next].stream == 1)) {
      r->line_spans[next++] = (PrefixSpan){p, (size_t)(le - p)};
    } else {
      if (r->nother == cap) {
        cap *= 2;
        r->other_spans = xrealloc(r->other_spans, cap * sizeof *r->other_spans);
      }
      r->other_spans[r->nother++] = (PrefixSpan){p, (size_t)(le - p)};
    }
    p = nl ? nl + 1 : stop;
  }
  r->work += r->builtin.len;
}

static bool
prefixrule_span_equals(PrefixRule *r, const PrefixSpan *s, const char *start, size_t len)
{
  if (s->len != len)
    return false;
  r->work += len;
  return memcmp(s->start, start, len) == 0;
}

/* Whether the body line [start, start+len), whose prefix is key index k (or
 * SIZE_MAX for none), is word for word a line of the built-in body. A line
 * with a valid prefix can only equal that line's built-in line; one without
 * can only equal one of vigil's own lines. */
static bool
prefixrule_own_line(PrefixRule *r, size_t k, const char *start, size_t len)
{
  prefixrule_load_builtin(r);
  if (k == SIZE_MAX) {
    for (size_t i = 0; i < r->nother; i++)
      if (prefixrule_span_equals(r, &r->other_spans[i], start, len))
        return true;
    return false;
  }
  /* Lines sharing a stream and seq (never made by the core) each count. */
  for (size_t j = k; j < r->n->nlines && prefixrule_key_cmp(&r->keys[j], &r->keys[k]) == 0; j++)
    if (prefixrule_span_equals(r, &r->line_spans[r->keys[j].line], start, len))
      return true;
  return false;
}

/* Whether a probe starts at p, inside the line that ends at le; sets *seq
 * to its line's seq. At most one look-up per probe length present. */
static bool
prefixrule_probe_at(PrefixRule *r, const char *p, const char *le, uint64_t *seq)
{
  size_t room = (size_t)(le - p);
  uint64_t w0 = prefixrule_word(p, 8);
  r->work++;
  size_t bit = prefixrule_filter_bit(r, w0);
  if (!(r->filter[bit / 64] & (UINT64_C(1) << (bit % 64))))
    return false;
  uint64_t w1 = room > 8 ? prefixrule_word(p + 8, room - 8) : 0;
  uint64_t w2 = room > 16 ? prefixrule_word(p + 16, room - 16) : 0;
  size_t most = room < ENVELOPE_PROBE_BYTES ? room : ENVELOPE_PROBE_BYTES;
  for (size_t len = ENVELOPE_PROBE_MIN; len <= most; len++) {
    if (!(r->lens & (UINT32_C(1) << len)))
      continue;
    uint64_t h = prefixrule_hash(w0, w1, w2, len);
    for (size_t at = (size_t)(h >> r->slot_shift);; at = (at + 1) & r->slot_mask) {
      const PrefixProbe *s = &r->slots[at];
      r->work++;
      if (s->len == 0)
        break;
      if (s->hash == h && s->len == len && memcmp(s->text, p, len) == 0) {
        *seq = s->seq;
        return true;
      }
    }
  }
  return false;
}

/* See prefixrule.h. */
int
prefixrule_check(const Notification *n, const char *body, size_t len, PrefixRuleResult *res)
{
  PrefixRule r;
  prefixrule_init(&r, n);
  int rc = 0;
  const char *p = body, *stop = body + len;
  while (rc == 0 && p < stop) {
    const char *nl = memchr(p, '\n', (size_t)(stop - p));
    const char *le = nl ? nl : stop;
    r.work += (size_t)(le - p) + 1;
    /* Where a probe may not start: before the end of a valid prefix, or
     * anywhere on a line without one. */
    bool err;
    uint64_t seq;
    size_t k = SIZE_MAX;
    size_t plen = prefixrule_parse_prefix(p, (size_t)(le - p), &err, &seq);
    if (plen > 0)
      k = prefixrule_find_key(&r, err, seq);
    const char *forbidden_end = k != SIZE_MAX ? p + plen : le;
    for (const char *at = p; at < forbidden_end && le - at >= ENVELOPE_PROBE_MIN; at++) {
      uint64_t bad;
      if (!prefixrule_probe_at(&r, at, le, &bad))
        continue;
      if (!prefixrule_own_line(&r, k, p, (size_t)(le - p))) {
        res->seq = bad;
        rc = -1;
      }
      break; /* one verdict per line */
    }
    p = nl ? nl + 1 : stop;
  }
  res->work = r.work;
  prefixrule_free(&r);
  return rc;
}
