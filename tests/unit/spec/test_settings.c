/*
 * The settings table: defaults, bounds, refusals that name the setting, the
 * bound and the value and change nothing, durations and sizes written with
 * units, the cross-field rules, and that docs/settings.md is exactly what
 * the table renders.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "spec/settings.h"
#include "base/strbuf.h"

TEST(defaults_are_the_documented_ones)
{
  VigilSettings s;
  settings_defaults(&s);
  CHECK_INT(s.flush_interval_ms, 200);
  CHECK_INT(s.batch_max_lines, 50);
  CHECK_INT(s.batch_max_bytes, 16384);
  CHECK_INT(s.rate_max_notifications, 8);
  CHECK_INT(s.rate_window_ms, 10000);
  CHECK_INT(s.rate_overload_ms, 45000);
  CHECK_INT(s.rate_on_overload, kOverloadStop);
  CHECK_INT(s.event_log_max, 1024);
  CHECK_INT(s.capture_max_bytes, 1048576);
  CHECK_INT(s.max_patterns, 32);
  CHECK_INT(s.line_max_bytes, 8192);
  CHECK_INT(s.keeper_unattended_ms, 900000); /* docs/restart.md: 15 minutes */
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(settings_check(&s, &err), 0);
}

TEST(out_of_range_is_refused_naming_setting_bound_and_value)
{
  VigilSettings s;
  settings_defaults(&s);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(settings_set_int(&s, "monitor.line_max_bytes", 12, &err), -1);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_STR(err.msg, "invalid_params: monitor.line_max_bytes must be 256..1048576, got 12");
  CHECK_INT(s.line_max_bytes, 8192); /* unchanged */

  error_clear(&err);
  CHECK_INT(settings_set_int(&s, "rate_limit.max_notifications", 1001, &err), -1);
  CHECK_STR(err.msg, "invalid_params: rate_limit.max_notifications must be 1..1000, got 1001");

  error_clear(&err);
  CHECK_INT(settings_set_int(&s, "monitor.no_such_thing", 1, &err), -1);
  CHECK_CONTAINS(err.msg, "monitor.no_such_thing: unknown setting");

  error_clear(&err);
  CHECK_INT(settings_set_int(&s, "monitor.line_max_bytes", 256, &err), 0); /* the bound itself */
  CHECK_INT(s.line_max_bytes, 256);
}

TEST(choices_are_checked_by_name)
{
  VigilSettings s;
  settings_defaults(&s);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(settings_set_choice(&s, "rate_limit.on_overload", "mute", &err), 0);
  CHECK_INT(s.rate_on_overload, kOverloadMute);
  CHECK_INT(settings_set_choice(&s, "rate_limit.on_overload", "explode", &err), -1);
  CHECK_STR(err.msg,
            "invalid_params: rate_limit.on_overload must be \"stop\" | \"mute\", got \"explode\"");
  CHECK_INT(s.rate_on_overload, kOverloadMute);
}

TEST(durations_and_sizes_may_be_written_with_units)
{
  VigilSettings s;
  settings_defaults(&s);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(settings_set_text(&s, "keeper.unattended_ms", "1h30m", &err), 0);
  CHECK_INT(s.keeper_unattended_ms, 5400000);
  CHECK_INT(settings_set_text(&s, "session.linger_ms", "1.5s", &err), 0);
  CHECK_INT(s.session_linger_ms, 1500);
  CHECK_INT(settings_set_text(&s, "state.journal_max_bytes", "16MiB", &err), 0);
  CHECK_INT(s.state_journal_max_bytes, 16777216);
  CHECK_INT(settings_set_text(&s, "rpc.max_message_bytes", "64KiB", &err), 0);
  CHECK_INT(s.rpc_max_message_bytes, 65536);
  /* An enum takes its choice by the same door. */
  CHECK_INT(settings_set_text(&s, "rate_limit.on_overload", "mute", &err), 0);
  CHECK_INT(s.rate_on_overload, kOverloadMute);
  CHECK(!err.set);

  /* Out of range: the setting, its bounds both ways, the string and its value. */
  CHECK_INT(settings_set_text(&s, "keeper.unattended_ms", "8d", &err), -1);
  CHECK_STR(err.msg, "invalid_params: keeper.unattended_ms must be 1000..604800000 ms "
                     "(1s..7d), got \"8d\" (691200000)");
  CHECK_INT(s.keeper_unattended_ms, 5400000); /* unchanged */
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "monitor.line_max_bytes", "2MiB", &err), -1);
  CHECK_STR(err.msg, "invalid_params: monitor.line_max_bytes must be 256..1048576 bytes "
                     "(256B..1MiB), got \"2MiB\" (2097152)");
  /* Malformed: the same, with what is wrong. */
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "session.linger_ms", "5 min", &err), -1);
  CHECK_STR(err.msg, "invalid_params: session.linger_ms must be 0..86400000 ms (0..1d), a "
                     "number or a string such as \"500ms\", \"30s\", \"5m\", \"1h30m\", got "
                     "\"5 min\": a unit must follow its number without a space");
  CHECK_INT(s.session_linger_ms, 1500);
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "session.linger_ms", "300000", &err), -1);
  CHECK_CONTAINS(err.msg, "got \"300000\": a unit (ms, s, m, h or d) must follow each number");
  /* A count has no units; the string is quoted safely. */
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "monitor.max_patterns", "4", &err), -1);
  CHECK_STR(err.msg, "invalid_params: monitor.max_patterns must be an integer, got \"4\"");
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "session.linger_ms", "5\x1bm", &err), -1);
  CHECK_CONTAINS(err.msg, "got \"5\\x1bm\"");
  error_clear(&err);
  CHECK_INT(settings_set_text(&s, "monitor.no_such_ms", "5s", &err), -1);
  CHECK_CONTAINS(err.msg, "monitor.no_such_ms: unknown setting");

  /* Which settings take which units. */
  CHECK_INT(settings_unit_kind(settings_find("monitor.flush_interval_ms")), kUnitMs);
  CHECK_INT(settings_unit_kind(settings_find("log.buffer_bytes")), kUnitBytes);
  CHECK_INT(settings_unit_kind(settings_find("monitor.ring_max_lines")), kUnitNone);
  CHECK_INT(settings_unit_kind(settings_find("envelope.style")), kUnitNone);
}

TEST(cross_field_rules)
{
  VigilSettings s;
  settings_defaults(&s);
  VigilError err = VIGIL_ERROR_INIT;
  s.rate_overload_ms = 5000; /* below the 10 s window */
  CHECK_INT(settings_check(&s, &err), -1);
  CHECK_STR(err.msg, "invalid_params: rate_limit.overload_ms must be at least "
                     "rate_limit.window_ms (10000), got 5000");
  settings_defaults(&s);
  error_clear(&err);
  s.line_max_bytes = 65536;
  s.ring_max_bytes = 4096;
  CHECK_INT(settings_check(&s, &err), -1);
  CHECK_CONTAINS(err.msg, "monitor.ring_max_bytes must be at least monitor.line_max_bytes");
}

TEST(every_setting_has_a_default_within_its_bounds_and_a_doc)
{
  for (const SettingSpec *spec = settings_table; spec->name; spec++) {
    CHECK(spec->def >= spec->min && spec->def <= spec->max);
    CHECK(spec->doc != NULL && spec->doc[0] != '\0');
    CHECK(settings_find(spec->name) == spec);
  }
}

TEST(docs_settings_md_is_what_the_table_renders)
{
  StrBuf want = STRBUF_INIT;
  settings_render_markdown(&want);
  CHECK_GENERATED(VIGIL_SOURCE_DIR "/docs/settings.md", strbuf_cstr(&want), want.len,
                  "VIGIL_WRITE_SETTINGS_DOC",
                  "VIGIL_WRITE_SETTINGS_DOC=1 build/tests/test_settings");
  strbuf_free(&want);
}

int
main(void)
{
  RUN(defaults_are_the_documented_ones);
  RUN(out_of_range_is_refused_naming_setting_bound_and_value);
  RUN(choices_are_checked_by_name);
  RUN(durations_and_sizes_may_be_written_with_units);
  RUN(cross_field_rules);
  RUN(every_setting_has_a_default_within_its_bounds_and_a_doc);
  RUN(docs_settings_md_is_what_the_table_renders);
  return check_summary();
}
