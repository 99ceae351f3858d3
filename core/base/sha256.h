/*
 * SHA-256 (FIPS 180-4), for what must be a stable name that nobody can make
 * collide: the default session of a project directory (cli_project.h),
 * where two directories with the same name would share each other's
 * monitors. Not for secrets or speed: a small, plain implementation,
 * checked against the standard's test vectors (tests/unit/test_sha256.c).
 * No library at hand has one: the CLI links jansson, msgpack-c and libuv
 * only.
 */
#ifndef VIGIL_SHA256_H
#define VIGIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32

typedef struct {
  uint32_t h[8];          /* the chaining state */
  uint64_t bytes;         /* how many bytes went in so far */
  unsigned char block[64]; /* the partial block not yet compressed */
  size_t fill;            /* bytes of block in use */
} Sha256;

void sha256_init(Sha256 *s);

/* Adds len bytes at data (any length, in as many calls as wanted). */
void sha256_update(Sha256 *s, const void *data, size_t len);

/* Pads, writes the 32-byte digest to out and leaves s unusable until
 * sha256_init. */
void sha256_final(Sha256 *s, unsigned char out[SHA256_DIGEST_BYTES]);

/* The digest of len bytes at data, in one call. */
void sha256(const void *data, size_t len, unsigned char out[SHA256_DIGEST_BYTES]);

#endif
