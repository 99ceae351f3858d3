/*
 * Filling a vigil_error: every failure of the library goes through here, so
 * every message starts with its error's name, as the engine's do.
 */
#ifndef VIGIL_CLIENT_ERROR_H
#define VIGIL_CLIENT_ERROR_H

#include "vigil/client.h"

/* Sets *err (when err is not NULL) to code and "name: " + the formatted
 * text. Returns -1, for `return client_error(...)`. */
int client_error(vigil_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies src into *err (when err is not NULL). Returns -1. */
int client_error_copy(vigil_error *err, const vigil_error *src);

#endif
