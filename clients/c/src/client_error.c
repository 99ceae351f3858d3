/*
 * Errors (see client_error.h): the names of the engine's codes
 * (docs/protocol.md section 4) and of the library's own, side by side.
 */
#include "client_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
  int code;
  const char *name;
} client_error_names[] = {
  {VIGIL_ERR_INTERNAL, "internal"},
  {VIGIL_ERR_INVALID_PARAMS, "invalid_params"},
  {VIGIL_ERR_NOT_FOUND, "not_found"},
  {VIGIL_ERR_DENIED, "denied"},
  {VIGIL_ERR_LIMIT_EXCEEDED, "limit_exceeded"},
  {VIGIL_ERR_INVALID_PATTERN, "invalid_pattern"},
  {VIGIL_ERR_COMMAND_NOT_FOUND, "command_not_found"},
  {VIGIL_ERR_SPAWN_FAILED, "spawn_failed"},
  {VIGIL_ERR_ALREADY_EXITED, "already_exited"},
  {VIGIL_ERR_DISABLED, "disabled"},
  {VIGIL_ERR_UNKNOWN_METHOD, "unknown_method"},
  {VIGIL_ERR_USAGE, "usage"},
  {VIGIL_ERR_NO_ENGINE, "no_engine"},
  {VIGIL_ERR_CONNECTION, "connection"},
  {VIGIL_ERR_PROTOCOL, "protocol"},
  {VIGIL_ERR_TIMEOUT, "timeout"},
};

const char *
vigil_error_name(int code)
{
  for (size_t i = 0; i < sizeof client_error_names / sizeof client_error_names[0]; i++)
    if (client_error_names[i].code == code)
      return client_error_names[i].name;
  return "unknown";
}

int
client_error(vigil_error *err, int code, const char *fmt, ...)
{
  if (err == NULL)
    return -1;
  err->code = code;
  int n = snprintf(err->message, sizeof err->message, "%s: ", vigil_error_name(code));
  if (n < 0 || (size_t)n >= sizeof err->message)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

int
client_error_copy(vigil_error *err, const vigil_error *src)
{
  if (err != NULL && err != src)
    *err = *src;
  return -1;
}
