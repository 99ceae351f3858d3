/*
 * Durations and sizes as a person writes them in a config: "500ms", "30s",
 * "1m30s", "1.5h", "7d"; "64KiB", "16MiB", "1.5GiB". A config is typed by
 * hand, and 900000 is harder to read (and to get right) than "15m".
 *
 * A duration is one or more terms, each a number (digits, optionally a '.'
 * and up to 9 more) directly followed by a unit, ms, s, m, h or d, with the
 * units in decreasing order and each at most once ("1h30m", never "30m1h"
 * or "5m5m"); no sign, no space. A size is one such term with B, KiB, MiB
 * or GiB (powers of 1024; "KB" and "MB" are refused rather than guessed).
 * The value must be a whole number of milliseconds or bytes and fit in 63
 * bits. A string without a unit is refused: "500" could mean seconds to
 * its writer, and a plain number already means milliseconds or bytes.
 *
 * The config reads these (settings.c for the settings whose unit is "ms"
 * or "bytes", config_monitors.c for a config monitor's timeouts and
 * memory_limit), and so does the command line's every duration option
 * (cli_fmt_parse_duration, which adds only that a bare number is seconds):
 * one grammar for both. The wire takes numbers.
 */
#ifndef VIGIL_UNITS_H
#define VIGIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  kUnitNone = 0,  /* a plain count: no string form */
  kUnitMs,        /* a duration, in milliseconds */
  kUnitBytes,     /* a size, in bytes */
} UnitKind;

/* The longest text units_format writes, its NUL included. */
#define UNITS_FORMAT_MAX 48

/* Parses text as a value of kind. Returns 0 with *out set, or -1 with *why
 * set to a phrase saying what is wrong ("no unit after 500"), for a
 * message that has already quoted the text. */
int units_parse(UnitKind kind, const char *text, int64_t *out, const char **why);

/* Writes v (>= 0) into buf (UNITS_FORMAT_MAX bytes) the way a person would
 * write it, exactly: "1h30m", "7d", "250ms", "64KiB", "1GiB", "1000B".
 * Zero is "0". */
void units_format(UnitKind kind, int64_t v, char *buf);

/* The longest text units_bounds writes, its NUL included. */
#define UNITS_BOUNDS_MAX 192

/* Writes into buf (UNITS_BOUNDS_MAX bytes) the range [min, max] of kind
 * for a message, as numbers and as a person writes them, with note (may be
 * NULL) in the parentheses: "1000..604800000 ms (1s..7d)",
 * "1..1800000 ms (1ms..30m, monitor.max_runtime_ms)". An unbounded
 * maximum (INT64_MAX) is given as a number only. */
void units_bounds(UnitKind kind, int64_t min, int64_t max, const char *note, char *buf);

/* A few examples of the string form, for messages: "\"500ms\", \"30s\",
 * \"5m\", \"1h30m\"" or "\"64KiB\", \"16MiB\"". */
const char *units_examples(UnitKind kind);

#endif
