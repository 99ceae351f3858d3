/*
 * Unit tests of a session's silenced fingerprints (ignorelist.c): only 16
 * hex digits parse; the list holds at most its bound (one more is refused
 * and counted, the same fingerprint again replaces); a hit counts on a live
 * entry and drops an expired one, which then silences nothing.
 */
#include <string.h>

#include "check.h"
#include "pipeline/ignorelist.h"

TEST(only_sixteen_hex_digits_parse)
{
  uint64_t fp = 0;
  CHECK(ignorelist_parse("34cf0394e012a611", &fp));
  CHECK(fp == 0x34cf0394e012a611ULL);
  CHECK(ignorelist_parse("34CF0394E012A611", &fp));
  CHECK(fp == 0x34cf0394e012a611ULL);
  CHECK(!ignorelist_parse("34cf0394e012a61", &fp));
  CHECK(!ignorelist_parse("34cf0394e012a6110", &fp));
  CHECK(!ignorelist_parse("34cf0394e012a61g", &fp));
  CHECK(!ignorelist_parse("", &fp));
  CHECK(!ignorelist_parse(" 34cf0394e012a61", &fp));
}

TEST(the_bound_refuses_one_more_and_the_same_replaces)
{
  IgnoreList l;
  ignorelist_init(&l, 2);
  VigilError err = VIGIL_ERROR_INIT;
  bool replaced = true;
  CHECK_INT(ignorelist_add(&l, 1, 0, "a", 1000, &replaced, &err), 0);
  CHECK(!replaced);
  CHECK_INT(ignorelist_add(&l, 2, 0, NULL, 1000, &replaced, &err), 0);
  CHECK_INT(ignorelist_add(&l, 2, 5000, "again", 1001, &replaced, &err), 0);
  CHECK(replaced);
  CHECK_INT(l.n, 2);
  CHECK(strcmp(l.v[1].reason, "again") == 0 && l.v[1].expires_at == 5000);
  CHECK_INT(ignorelist_add(&l, 3, 0, NULL, 1002, &replaced, &err), -1);
  CHECK(err.code == kErrLimitExceeded && strstr(err.msg, "incident.ignore_max 2") != NULL);
  CHECK_INT(l.refused, 1);
  CHECK_INT(l.n, 2);
  CHECK(ignorelist_remove(&l, 1, 1003));
  CHECK(!ignorelist_remove(&l, 1, 1003));
  CHECK_INT(l.n, 1);
  ignorelist_free(&l);
}

TEST(a_hit_counts_and_an_expired_entry_is_dropped_where_met)
{
  IgnoreList l;
  ignorelist_init(&l, 8);
  VigilError err = VIGIL_ERROR_INIT;
  bool replaced;
  CHECK_INT(ignorelist_add(&l, 7, 2000, NULL, 1000, &replaced, &err), 0); /* until 2000 */
  CHECK_INT(ignorelist_add(&l, 8, 0, NULL, 1000, &replaced, &err), 0);    /* always */
  CHECK(ignorelist_hit(&l, 7, 1500));
  CHECK(ignorelist_hit(&l, 7, 1999));
  CHECK_INT(l.v[0].hits, 2);
  CHECK(l.v[0].last_hit_at == 1999);
  CHECK(!ignorelist_hit(&l, 9, 1999)); /* never ignored */
  CHECK(!ignorelist_hit(&l, 7, 2000)); /* at its expiry: gone */
  CHECK_INT(l.n, 1);
  CHECK_INT(l.expired, 1);
  CHECK(!ignorelist_hit(&l, 7, 2001));
  CHECK(ignorelist_hit(&l, 8, INT64_MAX / 2));
  CHECK_INT(ignorelist_expire(&l, INT64_MAX / 2), 0);
  ignorelist_free(&l);
}

int
main(void)
{
  RUN(only_sixteen_hex_digits_parse);
  RUN(the_bound_refuses_one_more_and_the_same_replaces);
  RUN(a_hit_counts_and_an_expired_entry_is_dropped_where_met);
  return check_summary();
}
