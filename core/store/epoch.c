/*
 * The engine's epoch (epoch.h): drawn once from the OS's random source on
 * first use, or taken back from the state directory before any use when an
 * earlier engine's sessions are restored (docs/restart.md), so a host's
 * (epoch, seq) cursor stays valid across the restart.
 */
#include "store/epoch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "store/statefile.h"

/* 64 bits, as hex, and its NUL. */
#define EPOCH_BYTES 8

static char epoch_text[2 * EPOCH_BYTES + 1];
static bool epoch_set;

const char *
epoch_hex(void)
{
  if (!epoch_set) {
    random_hex(epoch_text, EPOCH_BYTES);
    epoch_set = true;
  }
  return epoch_text;
}

bool
epoch_valid(const char *hex)
{
  if (strlen(hex) != 2 * EPOCH_BYTES)
    return false;
  for (const char *p = hex; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

bool
epoch_restore(const char *hex)
{
  if (epoch_set || !epoch_valid(hex))
    return false;
  memcpy(epoch_text, hex, sizeof epoch_text);
  epoch_set = true;
  return true;
}

/* The epoch's file in the state directory: 16 hex digits behind statefile's
 * header. */
static const char epoch_magic[8] = {'V', 'I', 'G', 'L', 'E', 'P', 'C', 'H'};

bool
epoch_keep(int state_fd, VigilError *err)
{
  char *body = NULL;
  size_t len = 0;
  VigilError ignored = VIGIL_ERROR_INIT;
  bool kept = false;
  if (statefile_read(state_fd, EPOCH_FILE_NAME, epoch_magic, 1, 64, "epoch", &body, &len,
                     &ignored) == 0 && len == 2 * EPOCH_BYTES) {
    body[len] = '\0';
    kept = epoch_restore(body);
  }
  free(body);
  if (!kept) {
    const char *hex = epoch_hex();
    statefile_write(state_fd, EPOCH_FILE_NAME, epoch_magic, 1, hex, strlen(hex), "epoch", err);
  }
  return kept;
}
