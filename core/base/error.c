/*
 * Error codes and their protocol names, and the one function that fills a
 * VigilError. Messages are truncated at VIGIL_ERROR_MSG_MAX bytes.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const error_names[VIGIL_ERROR_COUNT] = {
  "internal",        "invalid_params",    "not_found",    "denied",
  "limit_exceeded",  "invalid_pattern",   "command_not_found",
  "spawn_failed",    "already_exited",    "disabled",     "unknown_method",
};

const char *
error_name(int code)
{
  if (code < 0 || code >= VIGIL_ERROR_COUNT)
    return "internal";
  return error_names[code];
}

int
error_set(VigilError *err, VigilErrorCode code, const char *fmt, ...)
{
  if (err == NULL || err->set)
    return -1;
  err->set = true;
  err->code = code;
  int n = snprintf(err->msg, sizeof err->msg, "%s: ", error_name(code));
  if (n < 0 || (size_t)n >= sizeof err->msg)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

void
error_clear(VigilError *err)
{
  err->set = false;
  err->code = kErrInternal;
  err->msg[0] = '\0';
}
