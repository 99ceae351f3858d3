/*
 * The client's display width (cli_width.c) and what is built on it: a CJK
 * character or an emoji takes two columns, a combining mark none, so that
 * list's columns and the follow view's label prefixes line up; a cut never
 * splits a character and never passes its width.
 */
#include <string.h>

#include "check.h"
#include "cli/cli_fmt.h"
#include "cli/cli_width.h"

static size_t
width(const char *s)
{
  return cli_width_text(s, strlen(s));
}

TEST(wide_narrow_and_zero_width_characters)
{
  CHECK_INT(width("api"), 3);
  CHECK_INT(width("サーバー"), 8);        /* katakana and the long vowel mark */
  CHECK_INT(width("服务器"), 6);          /* CJK ideographs */
  CHECK_INT(width("서버"), 4);            /* Hangul syllables */
  CHECK_INT(width("ｗｅｂ"), 6);          /* fullwidth Latin */
  CHECK_INT(width("\xF0\x9F\x9A\x80"), 2); /* U+1F680 rocket */
  CHECK_INT(width("e\xCC\x81"), 1);       /* e + combining acute */
  CHECK_INT(width("caf\xC3\xA9"), 4);     /* precomposed é */
  CHECK_INT(width("a\xE2\x80\x8B" "b"), 2); /* zero-width space */
  CHECK_INT(width("\xFF" "a"), 2);        /* a bad byte takes one */
}

TEST(a_cut_counts_columns_and_never_splits_a_character)
{
  size_t used;
  /* Five columns hold two wide characters, not two and a half. */
  CHECK_INT(cli_width_fit("サーバー", strlen("サーバー"), 5, &used), 6);
  CHECK_INT(used, 4);
  StrBuf out = STRBUF_INIT;
  cli_fmt_cut(&out, "サーバー", strlen("サーバー"), 5);
  CHECK_STR(out.data, "サー\xE2\x80\xA6"); /* 4 columns and the ellipsis */
  strbuf_reset(&out);
  cli_fmt_cut(&out, "サーバー", strlen("サーバー"), 8);
  CHECK_STR(out.data, "サーバー");
  strbuf_free(&out);
  CHECK_INT(cli_fmt_text_width("サーバー", strlen("サーバー")), 8);
}

int
main(void)
{
  RUN(wide_narrow_and_zero_width_characters);
  RUN(a_cut_counts_columns_and_never_splits_a_character);
  return check_summary();
}
