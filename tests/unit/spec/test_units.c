/*
 * Durations and sizes with units (units.c): what a person may write, what
 * it is worth, every way a string is refused (with the phrase a message
 * carries), and that the formatter writes what the parser reads back.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "spec/units.h"

/* The value of text as kind, or -1 when refused. */
static int64_t
parse(UnitKind kind, const char *text)
{
  int64_t v = 0;
  const char *why = NULL;
  if (units_parse(kind, text, &v, &why) != 0) {
    CHECK(why != NULL && why[0] != '\0');
    return -1;
  }
  return v;
}

/* Why text is refused as kind ("" when it is not). */
static const char *
why(UnitKind kind, const char *text)
{
  int64_t v = 0;
  const char *reason = "";
  return units_parse(kind, text, &v, &reason) == 0 ? "" : reason;
}

TEST(durations_as_a_person_writes_them)
{
  CHECK_INT(parse(kUnitMs, "500ms"), 500);
  CHECK_INT(parse(kUnitMs, "30s"), 30000);
  CHECK_INT(parse(kUnitMs, "5m"), 300000);
  CHECK_INT(parse(kUnitMs, "2h"), 7200000);
  CHECK_INT(parse(kUnitMs, "7d"), 604800000);
  CHECK_INT(parse(kUnitMs, "1m30s"), 90000);
  CHECK_INT(parse(kUnitMs, "1h30m"), 5400000);
  CHECK_INT(parse(kUnitMs, "1d2h3m4s5ms"), 93784005);
  CHECK_INT(parse(kUnitMs, "1.5s"), 1500);
  CHECK_INT(parse(kUnitMs, "0.25h"), 900000);
  CHECK_INT(parse(kUnitMs, "0.001s"), 1);
  CHECK_INT(parse(kUnitMs, "0s"), 0);
  CHECK_INT(parse(kUnitMs, "15m"), 900000); /* keeper.unattended_ms's default */
}

TEST(a_malformed_duration_is_refused_saying_why)
{
  CHECK_CONTAINS(why(kUnitMs, ""), "empty");
  CHECK_CONTAINS(why(kUnitMs, "500"), "a unit (ms, s, m, h or d) must follow");
  CHECK_CONTAINS(why(kUnitMs, "1m30"), "must follow");
  CHECK_CONTAINS(why(kUnitMs, "5 min"), "without a space");
  CHECK_CONTAINS(why(kUnitMs, "1m 30s"), "without a space");
  CHECK_CONTAINS(why(kUnitMs, " 5m"), "without a space");
  CHECK_CONTAINS(why(kUnitMs, "-5s"), "sign");
  CHECK_CONTAINS(why(kUnitMs, "5min"), "the units are ms, s, m, h and d");
  CHECK_CONTAINS(why(kUnitMs, "5S"), "the units are");
  CHECK_CONTAINS(why(kUnitMs, "30m1h"), "largest first");
  CHECK_CONTAINS(why(kUnitMs, "5m5m"), "at most once");
  CHECK_CONTAINS(why(kUnitMs, "1.5ms"), "whole number of milliseconds");
  CHECK_CONTAINS(why(kUnitMs, "1.s"), "a digit must follow the point");
  CHECK_CONTAINS(why(kUnitMs, ".5s"), "number");
  CHECK_CONTAINS(why(kUnitMs, "0.0000000001s"), "at most 9 digits");
  CHECK_CONTAINS(why(kUnitMs, "9999999999999999999ms"), "too large");
  CHECK_CONTAINS(why(kUnitMs, "999999999999999999d"), "too large");
  CHECK_CONTAINS(why(kUnitNone, "5"), "plain number");
}

TEST(sizes_in_powers_of_1024)
{
  CHECK_INT(parse(kUnitBytes, "64KiB"), 65536);
  CHECK_INT(parse(kUnitBytes, "16MiB"), 16777216);
  CHECK_INT(parse(kUnitBytes, "1GiB"), 1073741824);
  CHECK_INT(parse(kUnitBytes, "1.5MiB"), 1572864);
  CHECK_INT(parse(kUnitBytes, "300B"), 300);
  CHECK_CONTAINS(why(kUnitBytes, "64KB"), "powers of 1024");
  CHECK_CONTAINS(why(kUnitBytes, "64k"), "powers of 1024");
  CHECK_CONTAINS(why(kUnitBytes, "8192"), "a unit (B, KiB, MiB or GiB) must follow");
  CHECK_CONTAINS(why(kUnitBytes, "1MiB512KiB"), "one number and one unit");
  CHECK_CONTAINS(why(kUnitBytes, "0.3KiB"), "whole number of bytes");
  CHECK_CONTAINS(why(kUnitBytes, "8589934592GiB"), "too large");
}

TEST(the_formatter_writes_what_the_parser_reads)
{
  char buf[UNITS_FORMAT_MAX];
  static const struct {
    UnitKind kind;
    int64_t v;
    const char *text;
  } cases[] = {
    {kUnitMs, 900000, "15m"},        {kUnitMs, 604800000, "7d"},  {kUnitMs, 5400000, "1h30m"},
    {kUnitMs, 1500, "1s500ms"},      {kUnitMs, 10, "10ms"},       {kUnitMs, 0, "0"},
    {kUnitBytes, 1073741824, "1GiB"}, {kUnitBytes, 4096, "4KiB"}, {kUnitBytes, 1000, "1000B"},
    {kUnitBytes, 1572864, "1536KiB"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    units_format(cases[i].kind, cases[i].v, buf);
    CHECK_STR(buf, cases[i].text);
    if (cases[i].v > 0)
      CHECK_INT(parse(cases[i].kind, buf), cases[i].v);
  }
  /* The largest value still fits the buffer and reads back. */
  units_format(kUnitMs, INT64_MAX, buf);
  CHECK(strlen(buf) < UNITS_FORMAT_MAX);
  CHECK_INT(parse(kUnitMs, buf), INT64_MAX);
}

TEST(bounds_for_messages)
{
  char buf[UNITS_BOUNDS_MAX];
  units_bounds(kUnitMs, 1000, 604800000, NULL, buf);
  CHECK_STR(buf, "1000..604800000 ms (1s..7d)");
  units_bounds(kUnitMs, 1, 1800000, "monitor.max_runtime_ms", buf);
  CHECK_STR(buf, "1..1800000 ms (1ms..30m, monitor.max_runtime_ms)");
  units_bounds(kUnitBytes, 4096, 1073741824, NULL, buf);
  CHECK_STR(buf, "4096..1073741824 bytes (4KiB..1GiB)");
  units_bounds(kUnitBytes, 1, INT64_MAX, NULL, buf);
  CHECK_STR(buf, "1..9223372036854775807 bytes");
}

int
main(void)
{
  RUN(durations_as_a_person_writes_them);
  RUN(a_malformed_duration_is_refused_saying_why);
  RUN(sizes_in_powers_of_1024);
  RUN(the_formatter_writes_what_the_parser_reads);
  RUN(bounds_for_messages);
  return check_summary();
}
