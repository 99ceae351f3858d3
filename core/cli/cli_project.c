/*
 * The session of a project directory (see cli_project.h).
 */
#include "cli_project.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

/* How many bytes of the digest name the session: 128 bits. */
#define CLI_PROJECT_HASH_BYTES 16

int
cli_project_session(const char *dir, char *out, size_t cap)
{
  if (cap < CLI_PROJECT_SESSION_SIZE) {
    errno = ERANGE;
    return -1;
  }
  /* realpath(".") is the working directory with every link resolved. */
  char real[PATH_MAX];
  if (realpath(dir != NULL ? dir : ".", real) == NULL)
    return -1;
  unsigned char digest[SHA256_DIGEST_BYTES];
  sha256(real, strlen(real), digest);
  static const char hex[] = "0123456789abcdef";
  memcpy(out, "mcp-", 4);
  for (int i = 0; i < CLI_PROJECT_HASH_BYTES; i++) {
    out[4 + 2 * i] = hex[digest[i] >> 4];
    out[4 + 2 * i + 1] = hex[digest[i] & 15];
  }
  out[4 + 2 * CLI_PROJECT_HASH_BYTES] = '\0';
  return 0;
}
