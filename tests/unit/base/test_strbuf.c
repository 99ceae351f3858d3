/*
 * Tests of the growable string (strbuf.h): what it builds, what taking it
 * hands over, and that a text taken to be kept long (strbuf_take_fit) holds
 * no more than itself (issue 27: a session keeps every notification's
 * rendered envelope for resume, and the doubling's slack went with it).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/strbuf.h"

TEST(builds_and_takes)
{
  StrBuf sb = STRBUF_INIT;
  CHECK_STR(strbuf_cstr(&sb), "");
  strbuf_puts(&sb, "abc");
  strbuf_putc(&sb, '-');
  strbuf_printf(&sb, "%d", 42);
  CHECK_STR(strbuf_cstr(&sb), "abc-42");
  char *s = strbuf_take(&sb);
  CHECK_STR(s, "abc-42");
  CHECK(sb.data == NULL && sb.len == 0 && sb.cap == 0);
  free(s);
  char *empty = strbuf_take(&sb);
  CHECK_STR(empty, "");
  free(empty);
}

TEST(a_text_taken_to_be_kept_holds_no_slack)
{
  /* 600 bytes built a piece at a time: the buffer doubled past them. */
  StrBuf sb = STRBUF_INIT;
  for (int i = 0; i < 60; i++)
    strbuf_puts(&sb, "0123456789");
  CHECK_INT(sb.len, 600);
  CHECK(sb.cap >= 601);
  char *kept = strbuf_take_fit(&sb);
  CHECK_INT(strlen(kept), 600);
  CHECK(kept[0] == '0' && kept[599] == '9');
  /* malloc rounds a block up to its granule (16 bytes) and a header word. */
  CHECK(malloc_usable_size(kept) < 601 + 32);
  CHECK(sb.data == NULL && sb.len == 0 && sb.cap == 0);
  free(kept);
  char *empty = strbuf_take_fit(&sb);
  CHECK_STR(empty, "");
  free(empty);
}

int
main(void)
{
  RUN(builds_and_takes);
  RUN(a_text_taken_to_be_kept_holds_no_slack);
  return check_summary();
}
