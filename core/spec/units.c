/*
 * Durations and sizes with units (see units.h): one table of units per
 * kind, largest first, which both the parser and the formatter walk, so
 * that what one writes the other reads.
 *
 * The arithmetic is integral: a number "1.25" with the unit s is
 * 1 * 1000 + 25 * 1000 / 100, refused unless that division is exact, so no
 * value is rounded behind the writer's back. With at most 18 digits before
 * the point and 9 after, and the largest factor a day in milliseconds or a
 * GiB, every product is checked for overflow and none escapes 63 bits.
 */
#include "spec/units.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A unit: its name and how many milliseconds or bytes it is. */
typedef struct {
  const char *name;
  int64_t factor;
} Unit;

/* Largest first: the order a compound duration must follow. */
static const Unit units_durations[] = {
  {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}, {NULL, 0},
};

static const Unit units_sizes[] = {
  {"GiB", 1073741824}, {"MiB", 1048576}, {"KiB", 1024}, {"B", 1}, {NULL, 0},
};

/* The most digits read before the point, and after it. */
#define UNITS_INT_DIGITS_MAX 18
#define UNITS_FRACTION_DIGITS_MAX 9

static const Unit *
units_table(UnitKind kind)
{
  return kind == kUnitMs ? units_durations : kind == kUnitBytes ? units_sizes : NULL;
}

/* The unit of table named by the n bytes at s, or -1. */
static int
units_find(const Unit *table, const char *s, size_t n)
{
  for (int i = 0; table[i].name != NULL; i++) {
    if (strlen(table[i].name) == n && memcmp(table[i].name, s, n) == 0)
      return i;
  }
  return -1;
}

/* Whether c is an ASCII digit (isdigit depends on the locale). */
static bool
units_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* See units.h. */
int
units_parse(UnitKind kind, const char *text, int64_t *out, const char **why)
{
  const Unit *table = units_table(kind);
  const char *no_unit = kind == kUnitMs ? "a unit (ms, s, m, h or d) must follow each number"
                                        : "a unit (B, KiB, MiB or GiB) must follow the number";
  const char *bad_unit = kind == kUnitMs
                             ? "the units are ms, s, m, h and d"
                             : "the units are B, KiB, MiB and GiB (powers of 1024)";
  if (table == NULL) {
    *why = "this value takes a plain number";
    return -1;
  }
  if (*text == '\0') {
    *why = "it is empty";
    return -1;
  }
  int64_t total = 0;
  int last = -1; /* the index of the previous term's unit */
  for (const char *p = text; *p != '\0';) {
    if (kind == kUnitBytes && last >= 0) {
      *why = "a size is one number and one unit";
      return -1;
    }
    /* The number: digits, then optionally '.' and more digits. */
    int64_t whole = 0, fraction = 0, scale = 1;
    size_t digits = 0;
    for (; units_digit(*p); p++, digits++) {
      if (digits == UNITS_INT_DIGITS_MAX) {
        *why = "the number is too large";
        return -1;
      }
      whole = whole * 10 + (*p - '0');
    }
    if (digits == 0) {
      *why = "each part must be a number directly followed by its unit, without a space or sign";
      return -1;
    }
    if (*p == '.') {
      p++;
      size_t fdigits = 0;
      for (; units_digit(*p); p++, fdigits++) {
        if (fdigits == UNITS_FRACTION_DIGITS_MAX) {
          *why = "at most 9 digits may follow the point";
          return -1;
        }
        fraction = fraction * 10 + (*p - '0');
        scale *= 10;
      }
      if (fdigits == 0) {
        *why = "a digit must follow the point";
        return -1;
      }
    }
    /* The unit: the letters up to the next digit or the end. */
    const char *u = p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
      p++;
    if (p == u) {
      *why = *p == ' ' ? "a unit must follow its number without a space" : no_unit;
      return -1;
    }
    int i = units_find(table, u, (size_t)(p - u));
    if (i < 0) {
      *why = bad_unit;
      return -1;
    }
    if (i <= last) {
      *why = "the units must come largest first, each at most once (\"1h30m\")";
      return -1;
    }
    last = i;
    int64_t f = table[i].factor, part = 0, frac_part = fraction * f;
    if (frac_part % scale != 0) {
      *why = kind == kUnitMs ? "it is not a whole number of milliseconds"
                             : "it is not a whole number of bytes";
      return -1;
    }
    if (__builtin_mul_overflow(whole, f, &part) ||
        __builtin_add_overflow(part, frac_part / scale, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      *why = "the value is too large";
      return -1;
    }
  }
  *out = total;
  return 0;
}

/* See units.h. A duration takes every unit that divides what is left,
 * largest first ("1h30m"); a size the largest unit that divides it whole. */
void
units_format(UnitKind kind, int64_t v, char *buf)
{
  const Unit *table = units_table(kind);
  if (table == NULL || v <= 0) {
    snprintf(buf, UNITS_FORMAT_MAX, "%" PRId64, v);
    return;
  }
  size_t len = 0;
  for (int i = 0; table[i].name != NULL && v > 0; i++) {
    int64_t n = v / table[i].factor;
    if (n == 0 || (kind == kUnitBytes && v % table[i].factor != 0))
      continue;
    len += (size_t)snprintf(buf + len, UNITS_FORMAT_MAX - len, "%" PRId64 "%s", n, table[i].name);
    v -= n * table[i].factor;
  }
}

/* See units.h. */
void
units_bounds(UnitKind kind, int64_t min, int64_t max, const char *note, char *buf)
{
  const char *unit = kind == kUnitMs ? "ms" : kind == kUnitBytes ? "bytes" : "";
  int n = snprintf(buf, UNITS_BOUNDS_MAX, "%" PRId64 "..%" PRId64 "%s%s", min, max,
                   *unit ? " " : "", unit);
  if (n < 0 || n >= UNITS_BOUNDS_MAX)
    return;
  char lo[UNITS_FORMAT_MAX], hi[UNITS_FORMAT_MAX];
  units_format(kind, min, lo);
  units_format(kind, max, hi);
  if (kind != kUnitNone && max != INT64_MAX)
    snprintf(buf + n, UNITS_BOUNDS_MAX - (size_t)n, " (%s..%s%s%s)", lo, hi, note ? ", " : "",
             note ? note : "");
  else if (note != NULL)
    snprintf(buf + n, UNITS_BOUNDS_MAX - (size_t)n, " (%s)", note);
}

/* See units.h. */
const char *
units_examples(UnitKind kind)
{
  if (kind == kUnitMs)
    return "\"500ms\", \"30s\", \"5m\", \"1h30m\"";
  if (kind == kUnitBytes)
    return "\"64KiB\", \"16MiB\"";
  return "";
}
