/*
 * The table of a monitor's start fields (core/engine/monitor_fields.c): the names
 * each form accepts, and docs/monitor-fields.md being exactly what the table
 * renders, so the docs cannot drift from what the parsers accept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/monitor_fields.h"

static bool
in_list(const char *const *list, const char *name)
{
  for (size_t i = 0; list[i]; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

TEST(each_form_accepts_its_fields_and_no_other)
{
  const char *const *start = monitor_fields_names(kFormStart, "session");
  const char *const *run = monitor_fields_names(kFormRun, "session");
  CHECK_STR(start[0], "session");
  CHECK(in_list(start, "patterns") && in_list(start, "memory_limit"));
  CHECK(!in_list(start, "stdin") && !in_list(start, "timeout_s"));
  CHECK(in_list(run, "stdin") && in_list(run, "label") && !in_list(run, "patterns"));
  /* A config entry takes exactly what monitor_start takes, plus its session
   * (on the wire `session` is every call's, not the start's) and its group
   * keys, which the wire refuses. */
  for (const MonitorField *f = monitor_fields; f->name; f++) {
    bool config_only = strcmp(f->name, "session") == 0 || strcmp(f->name, "group") == 0 ||
                       strcmp(f->name, "autostart") == 0;
    CHECK(monitor_fields_accepts(kFormConfig, f->name) ==
          (config_only || monitor_fields_accepts(kFormStart, f->name)));
  }
  CHECK(!in_list(start, "group") && !in_list(start, "autostart"));
  CHECK(!monitor_fields_accepts(kFormConfig, "stdout_lines"));
}

TEST(docs_monitor_fields_md_is_what_the_table_renders)
{
  StrBuf want = STRBUF_INIT;
  monitor_fields_render_markdown(&want);
  CHECK_GENERATED(VIGIL_SOURCE_DIR "/docs/monitor-fields.md", strbuf_cstr(&want), want.len,
                  "VIGIL_WRITE_FIELDS_DOC",
                  "VIGIL_WRITE_FIELDS_DOC=1 build/tests/test_monitor_fields");
  strbuf_free(&want);
}

int
main(void)
{
  RUN(each_form_accepts_its_fields_and_no_other);
  RUN(docs_monitor_fields_md_is_what_the_table_renders);
  return check_summary();
}
