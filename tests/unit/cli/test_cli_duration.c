/*
 * The client's durations (cli_fmt_parse_duration) read the config's grammar
 * (units.c): units ms, s, m, h and d, largest first, each at most once; the
 * one thing of the command line's own is a bare number, which is seconds
 * as sleep(1) reads it. A refusal says why, for a message that names the
 * option and the value.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "cli/cli_fmt.h"
#include "spec/units.h"

/* The value of text, or -1 when refused. */
static int64_t
parse(const char *text)
{
  uint64_t ms = 0;
  const char *why = NULL;
  if (cli_fmt_parse_duration(text, &ms, &why) != 0) {
    CHECK(why != NULL && why[0] != '\0');
    return -1;
  }
  return (int64_t)ms;
}

/* Why text is refused ("" when it is not). */
static const char *
why(const char *text)
{
  uint64_t ms = 0;
  const char *reason = "";
  return cli_fmt_parse_duration(text, &ms, &reason) == 0 ? "" : reason;
}

TEST(the_units_of_the_config_and_days)
{
  CHECK_INT(parse("500ms"), 500);
  CHECK_INT(parse("30s"), 30000);
  CHECK_INT(parse("5m"), 300000);
  CHECK_INT(parse("2h"), 7200000);
  CHECK_INT(parse("1d"), 86400000);
  CHECK_INT(parse("1h30m"), 5400000);
  CHECK_INT(parse("1d2h3m4s5ms"), 93784005);
  CHECK_INT(parse("1.5s"), 1500);
}

TEST(a_bare_number_is_seconds)
{
  CHECK_INT(parse("5"), 5000);
  CHECK_INT(parse("0.3"), 300);
  CHECK_INT(parse("0"), 0);
  CHECK_INT(parse("1.5"), 1500);
}

TEST(the_units_come_largest_first_each_once)
{
  CHECK_INT(parse("30m1h"), -1);
  CHECK(strstr(why("30m1h"), "largest first") != NULL);
  CHECK_INT(parse("5m5m"), -1);
  CHECK_INT(parse("1s500ms"), 1500);
}

TEST(what_is_refused_says_why)
{
  CHECK_INT(parse(""), -1);
  CHECK_INT(parse("5 s"), -1);
  CHECK(strstr(why("5 s"), "without a space") != NULL);
  CHECK_INT(parse("1w"), -1);
  CHECK(strstr(why("1w"), "ms, s, m, h and d") != NULL);
  CHECK_INT(parse("-5s"), -1);
  CHECK_INT(parse("5s."), -1);
  CHECK_INT(parse("."), -1);
  CHECK_INT(parse("1.0005s"), -1); /* not a whole number of ms: never rounded */
  CHECK_INT(parse("99999999999999999d"), -1);
  /* Past the client's ceiling (CLI_DURATION_MAX_MS, 10^15 ms). */
  CHECK_INT(parse("12000000d"), -1);
  CHECK(strstr(why("12000000d"), "too large") != NULL);
}

TEST(the_same_text_means_the_same_as_in_the_config)
{
  static const char *const texts[] = {"250ms", "1m30s", "7d", "0.25h", "1d12h", "30m1h",
                                      "1h1h",  "5 m",   "1x", "",      "2h5"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    int64_t v = 0;
    const char *w = NULL;
    int64_t config = units_parse(kUnitMs, texts[i], &v, &w) == 0 ? v : -1;
    CHECK_INT(parse(texts[i]), config);
  }
}

int
main(void)
{
  RUN(the_units_of_the_config_and_days);
  RUN(a_bare_number_is_seconds);
  RUN(the_units_come_largest_first_each_once);
  RUN(what_is_refused_says_why);
  RUN(the_same_text_means_the_same_as_in_the_config);
  return check_summary();
}
