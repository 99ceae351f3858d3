/*
 * The multi-literal search (see teddy.h).
 *
 * Building: each literal's fingerprint is its rarest window
 * (teddy_rarest_window), and the literals are put into at most eight
 * buckets so that the nibble tables let through as few positions of a
 * typical log as they can (teddy_assign_buckets). Each fingerprint byte k (the
 * literals' k-th byte, k < m) gets three tables: by low nibble and by high
 * nibble for the SIMD loop, and by the whole byte for the portable one.
 *
 * The SIMD loop: at position p, for each k, the 32 bytes at p + k are split
 * into nibbles, each nibble looks up its table (vpshufb: a 16-entry table
 * per 128-bit lane, so each table is broadcast to both lanes), and the two
 * results are ANDed: bit b of result byte i says "fingerprint byte k of some
 * literal of bucket b may equal text[p + i + k]". ANDing over k leaves, for each of the
 * 32 positions, the buckets whose fingerprint may start there. Nibble tables
 * of a bucket with several literals allow mixtures (the low nibble of one,
 * the high of another), which is why every candidate is verified.
 */
#include "pipeline/teddy.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TEDDY_AVX2 1
#endif

/* A rough share of byte b in log text: the space, lowercase letters by their
 * English frequency, digits, capitals (logs are full of level names, HTTP
 * verbs and SQL), the punctuation of timestamps and paths, then the rest.
 * Only the order of magnitude matters: it tells which windows and buckets
 * would let through many positions of a typical log. */
static double
teddy_byte_share(unsigned char b)
{
  static const char english[] = "etaoinshrdlcumwfgypbvkjxqz";
  if (b == ' ')
    return 0.15;
  if (b >= 'a' && b <= 'z')
    return 0.05 - 0.0015 * (double)(strchr(english, b) - english);
  if (b >= '0' && b <= '9')
    return 0.03;
  if (b != '\0' && strchr("-:./=_,\"", b) != NULL)
    return 0.015;
  if (b >= 'A' && b <= 'Z')
    return 0.02 - 0.0005 * (double)(strchr(english, b - 'A' + 'a') - english);
  if (b >= 0x21 && b <= 0x7E)
    return 0.003;
  return 0.001;
}

/* The offset of the m bytes of lit that are rarest together in log text
 * (by teddy_byte_share), the first such window on a tie. Windows start
 * within the first 255 bytes (a uint8_t), which the 32 longest literals
 * of any set fit well within. */
static uint8_t
teddy_rarest_window(const TeddyLiteral *lit, size_t m)
{
  size_t best_at = 0;
  double best = 2;
  for (size_t at = 0; at + m <= lit->len && at <= UINT8_MAX; at++) {
    double share = 1;
    for (size_t k = 0; k < m; k++)
      share *= teddy_byte_share((unsigned char)lit->text[at + k]);
    if (share < best) {
      best = share;
      best_at = at;
    }
  }
  return (uint8_t)best_at;
}

/* A bucket being formed: its literals and, per fingerprint byte, the low and
 * high nibbles its tables will accept. */
typedef struct {
  uint32_t lits;                           /* bit i: literal i */
  uint16_t lo[TEDDY_MAX_FINGERPRINT];
  uint16_t hi[TEDDY_MAX_FINGERPRINT];
} TeddyGroup;

/* The share of log positions a bucket with these nibble sets would stop at:
 * per fingerprint byte, the share of the bytes whose nibbles both pass,
 * multiplied over the bytes. */
static double
teddy_group_cost(const uint16_t *lo, const uint16_t *hi, size_t m, const double share[256])
{
  double cost = 1;
  for (size_t k = 0; k < m; k++) {
    double pass = 0;
    for (unsigned h = 0; h < 16; h++) {
      if (!((hi[k] >> h) & 1))
        continue;
      for (unsigned l = 0; l < 16; l++)
        if ((lo[k] >> l) & 1)
          pass += share[h << 4 | l];
    }
    cost *= pass;
  }
  return cost;
}

/* What merging groups a and b adds to the positions the search stops at. */
static double
teddy_merge_cost(const TeddyGroup *a, const TeddyGroup *b, size_t m, const double share[256])
{
  uint16_t lo[TEDDY_MAX_FINGERPRINT], hi[TEDDY_MAX_FINGERPRINT];
  uint16_t alo[TEDDY_MAX_FINGERPRINT], ahi[TEDDY_MAX_FINGERPRINT];
  for (size_t k = 0; k < m; k++) {
    lo[k] = a->lo[k] | b->lo[k];
    hi[k] = a->hi[k] | b->hi[k];
    alo[k] = a->lo[k];
    ahi[k] = a->hi[k];
  }
  return teddy_group_cost(lo, hi, m, share) - teddy_group_cost(alo, ahi, m, share) -
         teddy_group_cost(b->lo, b->hi, m, share);
}

/* Puts the literals into at most TEDDY_BUCKETS buckets: each starts alone,
 * and the two whose merge lets the fewest extra positions through (by
 * teddy_byte_share) merge until the buckets are few enough. Literals with
 * the same first bytes merge for free; the blur of nibble tables falls on
 * rare bytes where it can. */
static void
teddy_assign_buckets(Teddy *t)
{
  double share[256];
  for (unsigned b = 0; b < 256; b++)
    share[b] = teddy_byte_share((unsigned char)b);
  TeddyGroup g[TEDDY_MAX_LITERALS];
  size_t n = t->nlits;
  for (size_t i = 0; i < n; i++) {
    memset(&g[i], 0, sizeof g[i]);
    g[i].lits = UINT32_C(1) << i;
    for (size_t k = 0; k < t->m; k++) {
      unsigned char c = (unsigned char)t->lits[i].text[t->window[i] + k];
      g[i].lo[k] = (uint16_t)(1u << (c & 0x0F));
      g[i].hi[k] = (uint16_t)(1u << (c >> 4));
    }
  }
  /* cost[i][j] (i < j): teddy_merge_cost of groups i and j, kept up to date
   * for the groups still alive so each round costs one row. */
  double cost[TEDDY_MAX_LITERALS][TEDDY_MAX_LITERALS];
  bool alive[TEDDY_MAX_LITERALS];
  for (size_t i = 0; i < n; i++) {
    alive[i] = true;
    for (size_t j = i + 1; j < n; j++)
      cost[i][j] = teddy_merge_cost(&g[i], &g[j], t->m, share);
  }
  for (size_t groups = n; groups > TEDDY_BUCKETS; groups--) {
    size_t bi = 0, bj = 0;
    double best = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n && alive[i]; j++)
        if (alive[j] && (!any || cost[i][j] < best)) {
          best = cost[i][j];
          bi = i;
          bj = j;
          any = true;
        }
    g[bi].lits |= g[bj].lits;
    for (size_t k = 0; k < t->m; k++) {
      g[bi].lo[k] |= g[bj].lo[k];
      g[bi].hi[k] |= g[bj].hi[k];
    }
    alive[bj] = false;
    for (size_t o = 0; o < n; o++) {
      if (!alive[o] || o == bi)
        continue;
      double c = teddy_merge_cost(&g[bi], &g[o], t->m, share);
      if (o < bi)
        cost[o][bi] = c;
      else
        cost[bi][o] = c;
    }
  }
  size_t bucket = 0;
  for (size_t i = 0; i < n; i++) {
    if (!alive[i])
      continue;
    for (size_t l = 0; l < n; l++)
      if ((g[i].lits >> l) & 1)
        t->bucket_of[l] = (uint8_t)bucket;
    bucket++;
  }
}

bool
teddy_build(Teddy *t, const TeddyLiteral *lits, size_t n)
{
  memset(t, 0, sizeof *t);
  if (n == 0 || n > TEDDY_MAX_LITERALS)
    return false;
  size_t shortest = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    if (lits[i].len == 0)
      return false;
    t->lits[i] = lits[i];
    if (lits[i].len < shortest)
      shortest = lits[i].len;
  }
  t->nlits = n;
  t->m = shortest < TEDDY_MAX_FINGERPRINT ? shortest : TEDDY_MAX_FINGERPRINT;
  for (size_t i = 0; i < n; i++)
    t->window[i] = teddy_rarest_window(&t->lits[i], t->m);
  teddy_assign_buckets(t);
  for (size_t i = 0; i < n; i++) {
    uint8_t bit = (uint8_t)(1u << t->bucket_of[i]);
    size_t b = t->bucket_of[i];
    t->bucket_lits[b][t->bucket_n[b]++] = (uint8_t)i;
    size_t h = lits[i].len < 8 ? lits[i].len : 8;
    for (size_t k = 0; k < h; k++) {
      t->head[i] |= (uint64_t)(unsigned char)t->lits[i].text[k] << (8 * k);
      t->head_mask[i] |= (uint64_t)0xFF << (8 * k);
    }
    for (size_t k = 0; k < t->m; k++) {
      unsigned char c = (unsigned char)t->lits[i].text[t->window[i] + k];
      t->fingerprint[i] |= (uint32_t)c << (8 * k);
      t->lo[k][c & 0x0F] |= bit;
      t->hi[k][c >> 4] |= bit;
      t->exact[k][c] |= bit;
    }
  }
  return true;
}

/* Whether literal i lies at start in text (start + its length <= len):
 * its first eight bytes in one comparison where the text allows, then the
 * rest. Most candidates fail the first comparison. */
static bool
teddy_is_at(const Teddy *t, size_t i, const char *text, size_t len, size_t start)
{
  const TeddyLiteral *l = &t->lits[i];
  if (len - start >= 8) {
    uint64_t w;
    memcpy(&w, text + start, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    if ((w & t->head_mask[i]) != t->head[i])
      return false;
    return l->len <= 8 || memcmp(text + start + 8, l->text + 8, l->len - 8) == 0;
  }
  return memcmp(text + start, l->text, l->len) == 0;
}

/* Whether a literal of one of the buckets in `buckets` has its fingerprint
 * at `at`, starts at or after lo and fits in text; fills hit with the one
 * that ends first. */
static bool
teddy_verify(const Teddy *t, const char *text, size_t len, size_t at, size_t lo,
             unsigned buckets, TeddyHit *hit)
{
  /* The m bytes at `at` (a candidate's fingerprint lies in the text). */
  const unsigned char *s = (const unsigned char *)text + at;
  uint32_t fp = s[0];
  if (t->m > 1)
    fp |= (uint32_t)s[1] << 8;
  if (t->m > 2)
    fp |= (uint32_t)s[2] << 16;
  bool found = false;
  while (buckets != 0) {
    unsigned b = (unsigned)__builtin_ctz(buckets);
    buckets &= buckets - 1;
    for (size_t k = 0; k < t->bucket_n[b]; k++) {
      size_t i = t->bucket_lits[b][k];
      if (t->fingerprint[i] != fp)
        continue;
      size_t w = t->window[i], n = t->lits[i].len;
      if (at < w)
        continue;
      size_t start = at - w;
      if (start < lo || n > len - start || (found && start + n >= hit->end))
        continue;
      if (teddy_is_at(t, i, text, len, start)) {
        hit->at = at;
        hit->start = start;
        hit->end = start + n;
        found = true;
      }
    }
  }
  return found;
}

/* The portable search from `from`, one position at a time with the exact
 * byte tables. */
static bool
teddy_find_portable(const Teddy *t, const char *text, size_t len, size_t from, size_t lo,
                    TeddyHit *hit)
{
  const unsigned char *s = (const unsigned char *)text;
  size_t m = t->m;
  if (len < m)
    return false;
  for (size_t p = from; p + m <= len; p++) {
    unsigned b = t->exact[0][s[p]];
    if (b == 0)
      continue;
    if (m > 1)
      b &= t->exact[1][s[p + 1]];
    if (m > 2)
      b &= t->exact[2][s[p + 2]];
    if (b != 0 && teddy_verify(t, text, len, p, lo, b, hit))
      return true;
  }
  return false;
}

#ifdef TEDDY_AVX2
/* The buckets that may start at each of the 32 positions from s, for
 * fingerprint byte k (its tables lo and hi, broadcast to both lanes). */
__attribute__((target("avx2"), always_inline)) static inline __m256i
teddy_lookup(const unsigned char *s, __m256i lo, __m256i hi, __m256i nibble)
{
  __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)s);
  __m256i lo_n = _mm256_and_si256(v, nibble);
  __m256i hi_n = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
  return _mm256_and_si256(_mm256_shuffle_epi8(lo, lo_n), _mm256_shuffle_epi8(hi, hi_n));
}

/* A table of 16 bytes in both 128-bit lanes. */
__attribute__((target("avx2"))) static __m256i
teddy_table(const uint8_t table[16])
{
  return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)table));
}

/* Verifies, in order, the candidates of the block of 32 positions at `at`
 * (acc: the buckets that may start at each; keep: the positions that
 * count). */
__attribute__((target("avx2"), always_inline)) static inline bool
teddy_verify_block(const Teddy *t, const char *text, size_t len, size_t at, size_t lo,
                   __m256i acc, uint32_t keep, TeddyHit *hit)
{
  uint32_t bits =
      ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(acc, _mm256_setzero_si256())) & keep;
  if (bits == 0)
    return false;
  uint8_t buckets[32];
  _mm256_storeu_si256((__m256i *)(void *)buckets, acc);
  do {
    unsigned i = (unsigned)__builtin_ctz(bits);
    if (teddy_verify(t, text, len, at + i, lo, buckets[i], hit))
      return true;
    bits &= bits - 1;
  } while (bits != 0);
  return false;
}

/* The SIMD search (file comment), 32 positions per step. m is a constant at
 * each call, so the loop is unrolled for it. */
__attribute__((target("avx2"), always_inline)) static inline bool
teddy_find_avx2_m(const Teddy *t, const char *text, size_t len, size_t from, size_t lo,
                  TeddyHit *hit, size_t m)
{
  const unsigned char *s = (const unsigned char *)text;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i zero = _mm256_setzero_si256();
  __m256i lo0 = teddy_table(t->lo[0]), hi0 = teddy_table(t->hi[0]);
  __m256i lo1 = m > 1 ? teddy_table(t->lo[1]) : zero, hi1 = m > 1 ? teddy_table(t->hi[1]) : zero;
  __m256i lo2 = m > 2 ? teddy_table(t->lo[2]) : zero, hi2 = m > 2 ? teddy_table(t->hi[2]) : zero;
  /* len - from >= 32 + m - 1 (teddy_find checks): at least one whole block.
   * The last block is moved back to end at the text's end, and its positions
   * that the block before already covered are masked off, so no position is
   * left to a byte-at-a-time loop. */
  size_t last = len - (32 + m - 1);
  size_t p = from;
  /* Two whole blocks a step while both fit before the last one: one test
   * for 64 positions, the rare candidates sorted out by teddy_verify_block
   * in order. Most of a chunk goes this way. */
  for (; last >= 32 && p <= last - 32; p += 64) {
    __m256i a = teddy_lookup(s + p, lo0, hi0, nibble);
    __m256i b = teddy_lookup(s + p + 32, lo0, hi0, nibble);
    if (m > 1) {
      a = _mm256_and_si256(a, teddy_lookup(s + p + 1, lo1, hi1, nibble));
      b = _mm256_and_si256(b, teddy_lookup(s + p + 33, lo1, hi1, nibble));
    }
    if (m > 2) {
      a = _mm256_and_si256(a, teddy_lookup(s + p + 2, lo2, hi2, nibble));
      b = _mm256_and_si256(b, teddy_lookup(s + p + 34, lo2, hi2, nibble));
    }
    if (_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_or_si256(a, b)))
      continue;
    if (teddy_verify_block(t, text, len, p, lo, a, ~UINT32_C(0), hit) ||
        teddy_verify_block(t, text, len, p + 32, lo, b, ~UINT32_C(0), hit))
      return true;
  }
  if (p > last + 31)
    return false; /* the two blocks covered every position */
  for (;; p += 32) {
    size_t at = p <= last ? p : last;
    __m256i acc = teddy_lookup(s + at, lo0, hi0, nibble);
    if (m > 1)
      acc = _mm256_and_si256(acc, teddy_lookup(s + at + 1, lo1, hi1, nibble));
    if (m > 2)
      acc = _mm256_and_si256(acc, teddy_lookup(s + at + 2, lo2, hi2, nibble));
    uint32_t keep = at < p ? ~UINT32_C(0) << (p - at) : ~UINT32_C(0);
    if (teddy_verify_block(t, text, len, at, lo, acc, keep, hit))
      return true;
    if (at == last)
      return false;
  }
}

__attribute__((target("avx2"))) static bool
teddy_find_avx2(const Teddy *t, const char *text, size_t len, size_t from, size_t lo,
                TeddyHit *hit)
{
  switch (t->m) {
  case 1:
    return teddy_find_avx2_m(t, text, len, from, lo, hit, 1);
  case 2:
    return teddy_find_avx2_m(t, text, len, from, lo, hit, 2);
  default:
    return teddy_find_avx2_m(t, text, len, from, lo, hit, 3);
  }
}

/* Whether this CPU runs the AVX2 loop (asked once; see teddy.h for the
 * environment variable). */
static bool
teddy_use_avx2(void)
{
  static int use = -1;
  if (use < 0) {
    __builtin_cpu_init();
    use = __builtin_cpu_supports("avx2") && getenv("VIGIL_PREFILTER_NO_AVX2") == NULL;
  }
  return use == 1;
}
#endif

bool
teddy_find(const Teddy *t, const char *text, size_t len, size_t from, size_t lo, TeddyHit *hit)
{
  if (from >= len)
    return false;
#ifdef TEDDY_AVX2
  if (len - from >= 32 + TEDDY_MAX_FINGERPRINT && teddy_use_avx2())
    return teddy_find_avx2(t, text, len, from, lo, hit);
#endif
  return teddy_find_portable(t, text, len, from, lo, hit);
}
