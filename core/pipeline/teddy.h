/*
 * A multi-literal search in the manner of Teddy (Hyperscan's literal
 * matcher, also in Rust's aho-corasick): up to TEDDY_MAX_LITERALS literals
 * are spread over eight buckets, and a SIMD loop finds the positions where
 * the fingerprint of some bucket's literal could be, 32 positions per step,
 * with two table lookups per byte (one by the low nibble, one by the high).
 * A literal's fingerprint is `m` of its bytes in a row (m = 1..3, the
 * shortest literal's length at most): not its first ones, as in Teddy, but
 * the window of its rarest bytes in log text ("Err" would stop at every
 * "ers" of "users"; "or:" is rare), so a literal is found at its
 * fingerprint's position minus the window's offset. Each candidate is
 * checked against the literals of its buckets, so what teddy_find reports
 * is exact: a whole literal, where it starts and ends.
 *
 * This is what lets a monitor scan a whole read chunk for its patterns'
 * required literals at memory speed, instead of line by line (prefilter.c
 * owns the literals; match.c uses the result to skip lines without one).
 *
 * The AVX2 loop runs where the CPU has it (checked once at run time); the
 * portable loop uses one exact 256-entry table per fingerprint byte, and
 * also finishes the last few positions of a text. Both give the same
 * answers. VIGIL_PREFILTER_NO_AVX2 in the environment turns the AVX2 loop
 * off, so the tests cover both.
 */
#ifndef VIGIL_TEDDY_H
#define VIGIL_TEDDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEDDY_MAX_LITERALS 32
#define TEDDY_BUCKETS 8
#define TEDDY_MAX_FINGERPRINT 3

typedef struct {
  const char *text;  /* not owned: the caller keeps it alive while the Teddy lives */
  size_t len;        /* >= 1 */
} TeddyLiteral;

/* A literal found: its fingerprint's position, and where it starts and
 * ends. */
typedef struct {
  size_t at;
  size_t start;
  size_t end;
} TeddyHit;

typedef struct {
  size_t m;                                  /* fingerprint length, 1..3 */
  size_t nlits;
  TeddyLiteral lits[TEDDY_MAX_LITERALS];
  uint8_t window[TEDDY_MAX_LITERALS];        /* offset of lits[i]'s fingerprint in it */
  uint8_t bucket_of[TEDDY_MAX_LITERALS];     /* lits[i]'s bucket */
  /* For verifying a candidate quickly: each literal's first (up to) eight
   * bytes as a little-endian word and the mask of those that count, and
   * each bucket's literals. */
  uint64_t head[TEDDY_MAX_LITERALS];
  uint64_t head_mask[TEDDY_MAX_LITERALS];
  /* Each literal's fingerprint (its m window bytes, little-endian): a
   * candidate whose m bytes are not a literal's own is no hit for it, the
   * first test for the candidates that nibble tables of several literals
   * let through. */
  uint32_t fingerprint[TEDDY_MAX_LITERALS];
  uint8_t bucket_lits[TEDDY_BUCKETS][TEDDY_MAX_LITERALS];
  uint8_t bucket_n[TEDDY_BUCKETS];
  /* SIMD tables: for fingerprint byte k, the buckets whose literals may have
   * a byte with this low (lo) or high (hi) nibble there. */
  uint8_t lo[TEDDY_MAX_FINGERPRINT][16];
  uint8_t hi[TEDDY_MAX_FINGERPRINT][16];
  /* Portable tables: for fingerprint byte k, the buckets whose literals have
   * exactly this byte there. */
  uint8_t exact[TEDDY_MAX_FINGERPRINT][256];
} Teddy;

/* Builds the search over n literals (1 <= n <= TEDDY_MAX_LITERALS, each at
 * least one byte). The literals' text must outlive t. Returns false (and t
 * is unusable) when n is out of range or a literal is empty. */
bool teddy_build(Teddy *t, const TeddyLiteral *lits, size_t n);

/* Finds the first fingerprint position at >= from where a literal lies whole
 * in text[0, len) and starts at or after lo; of the literals found there,
 * the one that ends first. Returns false when there is none. Searching from
 * 0 with lo 0 tells whether text holds any literal. */
bool teddy_find(const Teddy *t, const char *text, size_t len, size_t from, size_t lo,
                TeddyHit *hit);

#endif
