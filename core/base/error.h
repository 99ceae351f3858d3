/*
 * Errors a caller can act on. A VigilError carries one of the codes of
 * docs/protocol.md section 4 and a message that starts with the code's name and a
 * colon ("invalid_pattern: patterns[2] ...") and names the argument, the
 * bound and the value. Low-level functions return 0 or -1 and fill the
 * VigilError passed last; the first error set wins, so a caller can pass the
 * same VigilError down several calls.
 */
#ifndef VIGIL_ERROR_H
#define VIGIL_ERROR_H

#include <stdbool.h>

typedef enum {
  kErrInternal = 0,
  kErrInvalidParams = 1,
  kErrNotFound = 2,
  kErrDenied = 3,
  kErrLimitExceeded = 4,
  kErrInvalidPattern = 5,
  kErrCommandNotFound = 6,
  kErrSpawnFailed = 7,
  kErrAlreadyExited = 8,
  kErrDisabled = 9,
  kErrUnknownMethod = 10,
} VigilErrorCode;

#define VIGIL_ERROR_COUNT 11
#define VIGIL_ERROR_MSG_MAX 1024

typedef struct {
  bool set;
  VigilErrorCode code;
  char msg[VIGIL_ERROR_MSG_MAX]; /* "name: what was wrong" */
} VigilError;

#define VIGIL_ERROR_INIT {false, kErrInternal, {0}}

/* Sets err (unless already set) to code and "name: " + the formatted text.
 * Always returns -1 so callers can write `return error_set(...)`. */
int error_set(VigilError *err, VigilErrorCode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The protocol name of a code ("invalid_params"), or "internal" if unknown. */
const char *error_name(int code);

/* Clears err for reuse. */
void error_clear(VigilError *err);

#endif
