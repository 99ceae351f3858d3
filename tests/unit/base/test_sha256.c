/*
 * Tests of SHA-256 against the test vectors of FIPS 180-4's examples (NIST
 * CSRC, "SHA-256" examples), fed whole and in uneven pieces (every split of
 * the input must give the same digest), and the padding's edge: messages of
 * 55, 56, 63, 64 and 65 bytes, where the length goes into the same block or
 * the next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/sha256.h"

/* The digest of len bytes at data as 64 hex digits (out holds 65). */
static void
hex_of(const void *data, size_t len, char *out)
{
  unsigned char d[SHA256_DIGEST_BYTES];
  sha256(data, len, d);
  for (int i = 0; i < SHA256_DIGEST_BYTES; i++)
    snprintf(out + 2 * i, 3, "%02x", d[i]);
}

TEST(test_sha256_standard_vectors)
{
  char hex[65];
  hex_of("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hex_of("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hex_of(two, strlen(two), hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                     "klmnopqrlmnopqrsmnopqrstnopqrstu";
  hex_of(four, strlen(four), hex);
  CHECK_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(test_sha256_million_a_in_pieces)
{
  /* One million 'a', fed in pieces of 1, 2, ..., so block boundaries fall
   * everywhere. */
  static char a[1000];
  memset(a, 'a', sizeof a);
  Sha256 s;
  sha256_init(&s);
  size_t done = 0, piece = 1;
  while (done < 1000000) {
    size_t n = piece < 1000000 - done ? piece : 1000000 - done;
    n = n < sizeof a ? n : sizeof a;
    sha256_update(&s, a, n);
    done += n;
    piece = piece % 997 + 1;
  }
  unsigned char d[SHA256_DIGEST_BYTES];
  sha256_final(&s, d);
  char hex[65];
  for (int i = 0; i < SHA256_DIGEST_BYTES; i++)
    snprintf(hex + 2 * i, 3, "%02x", d[i]);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(test_sha256_padding_edges_and_splits)
{
  /* n bytes of 'x', from coreutils' sha256sum: the length goes into the
   * last block (55), into a block of its own (56, 63, 64) or after a full one
   * (65). */
  static const struct {
    size_t n;
    const char *hex;
  } cases[] = {
    {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
    {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
    {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
    {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
    {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
  };
  char xs[65], hex[65];
  memset(xs, 'x', sizeof xs);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hex_of(xs, cases[i].n, hex);
    CHECK_STR(hex, cases[i].hex);
  }
  /* Every split of a 130-byte message into two updates gives the one-call
   * digest, across the 55/56/63/64/65-byte edges. */
  unsigned char msg[130];
  for (size_t i = 0; i < sizeof msg; i++)
    msg[i] = (unsigned char)(i * 31 + 7);
  for (size_t len = 50; len <= sizeof msg; len++) {
    unsigned char whole[SHA256_DIGEST_BYTES];
    sha256(msg, len, whole);
    for (size_t cut = 0; cut <= len; cut++) {
      Sha256 s;
      sha256_init(&s);
      sha256_update(&s, msg, cut);
      sha256_update(&s, msg + cut, len - cut);
      unsigned char split[SHA256_DIGEST_BYTES];
      sha256_final(&s, split);
      if (memcmp(whole, split, sizeof whole) != 0) {
        check_fail(__FILE__, __LINE__, "len %zu split at %zu differs", len, cut);
        return;
      }
    }
  }
}

int
main(void)
{
  RUN(test_sha256_standard_vectors);
  RUN(test_sha256_million_a_in_pieces);
  RUN(test_sha256_padding_edges_and_splits);
  return check_summary();
}
