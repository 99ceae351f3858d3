/*
 * The engine's epoch (see epoch.h). One process is one engine, so the
 * epoch is process-wide; engine_new draws it at start.
 */
#include "epoch.h"

#include <stdbool.h>

#include "random.h"

/* 64 bits, as hex, and its NUL. */
#define EPOCH_BYTES 8

const char *
epoch_hex(void)
{
  static char hex[2 * EPOCH_BYTES + 1];
  static bool drawn;
  if (!drawn) {
    random_hex(hex, EPOCH_BYTES);
    drawn = true;
  }
  return hex;
}
