/*
 * The config loader: the fail-closed defaults, the bundled config/vigil.lua
 * and the examples, every kind of refusal with its exact message (which
 * names the file and the field, the bound and the value, or the line), that
 * a refused config leaves the defaults, and that a full valid config lands in
 * the struct field by field.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "proc/childenv.h"
#include "engine/config.h"
#include "base/strbuf.h"

static char test_dir[64];
static char test_path[PATH_MAX + 64];

/* Writes text to test_dir/name and returns its path (test_path). */
static const char *
write_file(const char *name, const char *text)
{
  snprintf(test_path, sizeof test_path, "%s/%s", test_dir, name);
  FILE *f = fopen(test_path, "w");
  if (f == NULL) {
    check_fail(__FILE__, __LINE__, "cannot write %s", test_path);
    return test_path;
  }
  fputs(text, f);
  fclose(f);
  return test_path;
}

/* Whether the NULL-terminated lists a and b hold the same strings. */
static bool
same_list(char *const *a, const char *const *b)
{
  size_t i = 0;
  for (; a != NULL && a[i] != NULL && b[i] != NULL; i++) {
    if (strcmp(a[i], b[i]) != 0)
      return false;
  }
  return a != NULL && a[i] == NULL && b[i] == NULL;
}

static const char *const no_names[] = {NULL};

/* Whether cfg is exactly the built-in defaults. */
static bool
is_defaults(const VigilConfig *cfg)
{
  VigilSettings d;
  settings_defaults(&d);
  return cfg->path == NULL && memcmp(&cfg->settings, &d, sizeof d) == 0 && cfg->enabled &&
         cfg->search_path == NULL && same_list(cfg->env_deny, childenv_default_deny) &&
         same_list(cfg->env_allow, childenv_default_allow) &&
         same_list(cfg->env_inherit, childenv_default_inherit) &&
         !cfg->live_mode_enabled && !cfg->allow_shell && cfg->allow_persistent &&
         cfg->line_buffered &&
         cfg->allowed_commands.n == 0 && cfg->nroots == 0 && cfg->nplugin_paths == 0 &&
         cfg->nmonitors == 0 && cfg->policy && strcmp(cfg->policy, "envelope") == 0 &&
         cfg->gate == NULL;
}

/* Loads text as test_dir/conf.lua expecting a refusal whose message is
 * want with every "@" replaced by that path; checks cfg is the defaults. */
static void
expect_error(int line, const char *text, const char *want)
{
  const char *path = write_file("conf.lua", text);
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  int rc = config_load(path, &cfg, &err);
  StrBuf w = STRBUF_INIT;
  for (const char *p = want; *p; p++) {
    if (*p == '@')
      strbuf_puts(&w, path);
    else
      strbuf_putc(&w, *p);
  }
  if (rc != -1 || !err.set || err.code != kErrInvalidParams)
    check_fail(__FILE__, line, "config was not refused (rc %d):\n%s", rc, text);
  else if (strcmp(err.msg, strbuf_cstr(&w)) != 0)
    check_fail(__FILE__, line, "message:\n  got:  \"%s\"\n  want: \"%s\"", err.msg,
               strbuf_cstr(&w));
  if (!is_defaults(&cfg))
    check_fail(__FILE__, line, "a refused config did not leave the defaults");
  config_free(&cfg);
  strbuf_free(&w);
}
#define EXPECT_ERROR(text, want) expect_error(__LINE__, text, want)

/* Loads text expecting success into cfg (free it). */
static int
load_ok(int line, const char *text, VigilConfig *cfg)
{
  const char *path = write_file("conf.lua", text);
  VigilError err = VIGIL_ERROR_INIT;
  int rc = config_load(path, cfg, &err);
  if (rc != 0)
    check_fail(__FILE__, line, "config refused: %s", err.msg);
  return rc;
}
#define LOAD_OK(text, cfg) load_ok(__LINE__, text, cfg)

TEST(defaults_fail_closed)
{
  VigilConfig cfg;
  config_defaults(&cfg);
  CHECK(is_defaults(&cfg));
  CHECK_INT(cfg.allowed_commands.n, 0);
  Argv a = ARGV_INIT;
  argv_push(&a, "make");
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(gate_check(&cfg.allowed_commands, &a, &err), -1);
  CHECK_INT(err.code, kErrDenied);
  argv_free(&a);
  CHECK_INT(cfg.settings.flush_interval_ms, 200);
  config_free(&cfg);
  config_free(&cfg); /* harmless */
}

/* The line of text that holds needle, or NULL. */
static const char *
line_with(const char *text, const char *needle, char *buf, size_t bufsize)
{
  const char *p = strstr(text, needle);
  if (p == NULL)
    return NULL;
  const char *start = p, *end = strchr(p, '\n');
  while (start > text && start[-1] != '\n')
    start--;
  size_t n = end ? (size_t)(end - start) : strlen(start);
  if (n >= bufsize)
    n = bufsize - 1;
  memcpy(buf, start, n);
  buf[n] = '\0';
  return buf;
}

TEST(bundled_config_loads_and_documents_every_setting)
{
  const char *path = VIGIL_SOURCE_DIR "/config/vigil.lua";
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(config_load(path, &cfg, &err), 0);
  CHECK_STR(err.msg, "");
  CHECK_STR(cfg.path, path);

  /* Nothing but the allowlist differs from the defaults. */
  VigilSettings d;
  settings_defaults(&d);
  CHECK(memcmp(&cfg.settings, &d, sizeof d) == 0);
  CHECK(cfg.enabled && !cfg.live_mode_enabled && !cfg.allow_shell && cfg.allow_persistent);
  CHECK(cfg.line_buffered);
  CHECK_INT(cfg.nroots, 0);
  CHECK_INT(cfg.nmonitors, 0);
  CHECK_INT(cfg.nplugin_paths, 0);
  CHECK_STR(cfg.policy, "envelope");
  /* The env lists are written out with their defaults. */
  CHECK(cfg.search_path == NULL);
  CHECK(cfg.state_dir == NULL); /* vigild's default: beside the socket */
  CHECK(same_list(cfg.env_deny, childenv_default_deny));
  CHECK(same_list(cfg.env_allow, childenv_default_allow));
  CHECK(same_list(cfg.env_inherit, childenv_default_inherit));
  static const char *const demo[] = {"python3", "tail", "make", "npm",
                                     "node",    "cargo", "go",  "pytest"};
  CHECK_INT(cfg.allowed_commands.n, sizeof demo / sizeof demo[0]);
  for (size_t i = 0; i < cfg.allowed_commands.n && i < sizeof demo / sizeof demo[0]; i++)
    CHECK_STR(cfg.allowed_commands.entries[i], demo[i]);
  static const char *const shells[] = {"sh", "bash", "zsh", "dash", "/bin/sh", "env"};
  for (size_t i = 0; i < sizeof shells / sizeof shells[0]; i++)
    CHECK(!gate_allows(&cfg.allowed_commands, shells[i]));
  config_free(&cfg);

  /* Every setting is written out with its default, and its bounds are in
   * the comment on the same line. */
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (f == NULL)
    return;
  StrBuf text = STRBUF_INIT;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    strbuf_append(&text, buf, n);
  fclose(f);
  for (const SettingSpec *spec = settings_table; spec->name; spec++) {
    const char *key = strchr(spec->name, '.') + 1;
    char assign[128], bounds[128], line[512];
    if (spec->kind == kSettingEnum) {
      snprintf(assign, sizeof assign, "    %s = \"%s\",", key, spec->choices[spec->def]);
      snprintf(bounds, sizeof bounds, "-- \"%s\" | \"%s\"", spec->choices[0], spec->choices[1]);
    } else {
      snprintf(assign, sizeof assign, "    %s = %lld,", key, (long long)spec->def);
      snprintf(bounds, sizeof bounds, "-- %lld..%lld %s", (long long)spec->min,
               (long long)spec->max, spec->unit);
    }
    if (line_with(strbuf_cstr(&text), assign, line, sizeof line) == NULL)
      check_fail(__FILE__, __LINE__, "config/vigil.lua lacks \"%s\"", assign);
    else if (strstr(line, bounds) == NULL)
      check_fail(__FILE__, __LINE__, "config/vigil.lua: \"%s\" lacks its bounds \"%s\"", line,
                 bounds);
  }
  strbuf_free(&text);
}

TEST(example_configs_load)
{
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(config_load(VIGIL_SOURCE_DIR "/examples/configs/minimal.lua", &cfg, &err), 0);
  CHECK_STR(err.msg, "");
  CHECK_INT(cfg.allowed_commands.n, 2);
  CHECK_INT(cfg.nmonitors, 0);
  config_free(&cfg);

  CHECK_INT(config_load(VIGIL_SOURCE_DIR "/examples/configs/dev-server.lua", &cfg, &err), 0);
  CHECK_STR(err.msg, "");
  CHECK_INT(cfg.settings.flush_interval_ms, 500);
  CHECK_INT(cfg.settings.rate_on_overload, kOverloadMute);
  CHECK_INT(cfg.nmonitors, 3);
  if (cfg.nmonitors == 3) {
    CHECK_INT(cfg.monitors[0].req.argv.argc, 3);
    CHECK_STR(cfg.monitors[0].req.argv.argv[0], "npm");
    CHECK_INT(cfg.monitors[0].req.npatterns, 3);
    CHECK_STR(cfg.monitors[1].req.argv.argv[1], "vitest");
    CHECK_INT(cfg.monitors[1].req.npatterns, 1);
    CHECK(cfg.monitors[0].group == NULL);
    CHECK_STR(cfg.monitors[1].group, "tests");
    CHECK(!cfg.monitors[1].autostart);
    CHECK_INT(cfg.monitors[2].req.timeout_ms, 1800000);
    for (size_t i = 0; i < cfg.nmonitors; i++)
      CHECK(gate_allows(&cfg.allowed_commands, cfg.monitors[i].req.argv.argv[0]));
  }
  config_free(&cfg);
}

TEST(settings_errors_name_file_field_bound_and_value)
{
  EXPECT_ERROR("return { monitor = { max_monitors_per_session = 40 } }",
               "invalid_params: @: monitor.max_monitors_per_session must be 1..16, got 40");
  EXPECT_ERROR("return { monitor = { line_max_bytes = 12 } }",
               "invalid_params: @: monitor.line_max_bytes must be 256..1048576, got 12");
  EXPECT_ERROR("return { rate_limit = { max_notifications = 0 } }",
               "invalid_params: @: rate_limit.max_notifications must be 1..1000, got 0");
  EXPECT_ERROR("return { rate_limit = { on_overload = 'explode' } }",
               "invalid_params: @: rate_limit.on_overload must be \"stop\" | \"mute\", got "
               "\"explode\"");
  EXPECT_ERROR("return { rate_limit = { on_overload = 1 } }",
               "invalid_params: @: rate_limit.on_overload must be a string, got number");
  EXPECT_ERROR("return { keeper = { unattended_ms = 999 } }",
               "invalid_params: @: keeper.unattended_ms must be 1000..604800000, got 999");
  /* Numbers as given, never in exponent form. */
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', cpu_limit = 1234567 "
               "} } }",
               "invalid_params: @: monitors[1].cpu_limit must be 0.001..4096, got 1234567");
  EXPECT_ERROR("return { monitor = { line_max_bytes = 1000000000000000.5 } }",
               "invalid_params: @: monitor.line_max_bytes must be an integer, got "
               "1000000000000000.5");
  /* state.dir: an absolute path, not checked on disk by the loader. */
  EXPECT_ERROR("return { state = { dir = 'state' } }",
               "invalid_params: @: state.dir must be an absolute path, got \"state\"");
  EXPECT_ERROR("return { state = { dir = '' } }",
               "invalid_params: @: state.dir must be a non-empty string, got \"\"");
  EXPECT_ERROR("return { state = { dir = 7 } }",
               "invalid_params: @: state.dir must be a non-empty string, got number");
  EXPECT_ERROR("return { state = { dir = '/' .. string.rep('d', 4095) } }",
               "invalid_params: @: state.dir must be at most 4095 bytes, got 4096");
  EXPECT_ERROR("return { state = { path = '/x' } }", "invalid_params: @: state.path: unknown field");
  /* nats: strings checked for their shape; the settings by the table. */
  EXPECT_ERROR("return { nats = { url = 'nats://a:1 nats://b:2' } }",
               "invalid_params: @: nats.url must be one or more URLs (nats://host:port), "
               "comma-separated, without spaces, got \"nats://a:1 nats://b:2\"");
  EXPECT_ERROR("return { nats = { creds = 'engine.creds' } }",
               "invalid_params: @: nats.creds must be an absolute path, got \"engine.creds\"");
  EXPECT_ERROR("return { nats = { tls_ca = 'ca.pem' } }",
               "invalid_params: @: nats.tls_ca must be an absolute path, got \"ca.pem\"");
  EXPECT_ERROR("return { nats = { tls_cert = '/etc/vigil/c.pem' } }",
               "invalid_params: @: nats.tls_cert and nats.tls_key go together (a client "
               "certificate and its private key), got only nats.tls_cert = \"/etc/vigil/c.pem\"");
  EXPECT_ERROR("return { nats = { tls_key = '/etc/vigil/k.pem' } }",
               "invalid_params: @: nats.tls_cert and nats.tls_key go together (a client "
               "certificate and its private key), got only nats.tls_key = \"/etc/vigil/k.pem\"");
  EXPECT_ERROR("return { nats = { engine = 'a.b' } }",
               "invalid_params: @: nats.engine must be 1..64 of A-Z a-z 0-9 _ -, got \"a.b\"");
  EXPECT_ERROR("return { nats = { stream = 'VIGIL>' } }",
               "invalid_params: @: nats.stream must be 1..64 of A-Z a-z 0-9 _ -, got \"VIGIL>\"");
  EXPECT_ERROR("return { nats = { url = 4222 } }",
               "invalid_params: @: nats.url must be a non-empty string, got number");
  EXPECT_ERROR("return { nats = { servers = 'x' } }", "invalid_params: @: nats.servers: unknown field");
  EXPECT_ERROR("return { nats = { ack_timeout_ms = 50 } }",
               "invalid_params: @: nats.ack_timeout_ms must be 100..600000, got 50");
  EXPECT_ERROR("return { nats = { retry_min_ms = 5000, retry_max_ms = 1000 } }",
               "invalid_params: @: nats.retry_max_ms must be at least nats.retry_min_ms (5000), "
               "got 1000");
  /* The cross-field rules of the settings table. */
  EXPECT_ERROR("return { rate_limit = { overload_ms = 5000 } }",
               "invalid_params: @: rate_limit.overload_ms must be at least rate_limit.window_ms "
               "(10000), got 5000");
  EXPECT_ERROR("return { monitor = { line_max_bytes = 65536, ring_max_bytes = 4096 } }",
               "invalid_params: @: monitor.ring_max_bytes must be at least "
               "monitor.line_max_bytes (65536), got 4096");
}

TEST(durations_and_sizes_take_units)
{
  VigilConfig cfg;
  if (LOAD_OK("return {\n"
              "  monitor = { allowed_commands = { 'make' }, flush_interval_ms = '250ms',\n"
              "              capture_max_bytes = '4MiB', max_runtime_ms = '2h' },\n"
              "  keeper = { unattended_ms = '15m' },\n"
              "  session = { linger_ms = '1m30s', max_linger_ms = '7d' },\n"
              "  state = { journal_max_bytes = '1.5MiB' },\n"
              "  monitors = { { session = 's', command = 'make', timeout_ms = '90s',\n"
              "                 idle_timeout_ms = '1m', memory_limit = '512MiB',\n"
              "                 quiet_after_ms = '5m' } },\n"
              "}\n",
              &cfg) != 0)
    return;
  CHECK_INT(cfg.settings.flush_interval_ms, 250);
  CHECK_INT(cfg.settings.capture_max_bytes, 4194304);
  CHECK_INT(cfg.settings.max_runtime_ms, 7200000);
  CHECK_INT(cfg.settings.keeper_unattended_ms, 900000);
  CHECK_INT(cfg.settings.session_linger_ms, 90000);
  CHECK_INT(cfg.settings.session_max_linger_ms, 604800000);
  CHECK_INT(cfg.settings.state_journal_max_bytes, 1572864);
  CHECK_INT(cfg.nmonitors, 1);
  if (cfg.nmonitors == 1) {
    CHECK_INT(cfg.monitors[0].req.timeout_ms, 90000);
    CHECK_INT(cfg.monitors[0].req.idle_timeout_ms, 60000);
    CHECK_INT(cfg.monitors[0].req.memory_limit, 536870912);
    CHECK_INT(cfg.monitors[0].req.quiet_after_ms, 300000);
  }
  config_free(&cfg);

  /* Refusals name the file, the field, the bounds both ways and the string. */
  EXPECT_ERROR("return { keeper = { unattended_ms = '8d' } }",
               "invalid_params: @: keeper.unattended_ms must be 1000..604800000 ms (1s..7d), "
               "got \"8d\" (691200000)");
  EXPECT_ERROR("return { keeper = { unattended_ms = '10 min' } }",
               "invalid_params: @: keeper.unattended_ms must be 1000..604800000 ms (1s..7d), a "
               "number or a string such as \"500ms\", \"30s\", \"5m\", \"1h30m\", got "
               "\"10 min\": a unit must follow its number without a space");
  EXPECT_ERROR("return { session = { linger_ms = '30m1h' } }",
               "invalid_params: @: session.linger_ms must be 0..86400000 ms (0..1d), a number or "
               "a string such as \"500ms\", \"30s\", \"5m\", \"1h30m\", got \"30m1h\": the "
               "units must come largest first, each at most once (\"1h30m\")");
  /* A config monitor's bound may come from a setting: it is named. */
  EXPECT_ERROR("return { monitor = { allowed_commands = { 'make' } },\n"
               "  monitors = { { session = 's', command = 'make', timeout_ms = '2h' } } }",
               "invalid_params: @: monitors[1].timeout_ms must be 1..1800000 ms (1ms..30m, "
               "monitor.max_runtime_ms), got \"2h\" (7200000)");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', idle_timeout_ms = "
               "'1.5ms' } } }",
               "invalid_params: @: monitors[1].idle_timeout_ms must be 0..3600000 ms (0..1h), a "
               "number or a string such as \"500ms\", \"30s\", \"5m\", \"1h30m\", got "
               "\"1.5ms\": it is not a whole number of milliseconds");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', memory_limit = "
               "'512MB' } } }",
               "invalid_params: @: monitors[1].memory_limit must be 1..9223372036854775807 bytes, "
               "a number or a string such as \"64KiB\", \"16MiB\", got \"512MB\": the units "
               "are B, KiB, MiB and GiB (powers of 1024)");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', timeout_ms = true } } }",
               "invalid_params: @: monitors[1].timeout_ms must be an integer or a string such "
               "as \"500ms\", \"30s\", \"5m\", \"1h30m\", got boolean");
}

TEST(unknown_fields_are_refused)
{
  EXPECT_ERROR("return { monitr = {} }", "invalid_params: @: monitr: unknown field");
  EXPECT_ERROR("return { monitor = { flush_intervall_ms = 100 } }",
               "invalid_params: @: monitor.flush_intervall_ms: unknown field");
  /* A field of one group is unknown in another. */
  EXPECT_ERROR("return { rate_limit = { enabled = true } }",
               "invalid_params: @: rate_limit.enabled: unknown field");
  EXPECT_ERROR("return { session = { line_max_bytes = 1024 } }",
               "invalid_params: @: session.line_max_bytes: unknown field");
  EXPECT_ERROR("return { 1, 2 }", "invalid_params: @: [1]: unknown field");
  EXPECT_ERROR("return { monitor = { ['max patterns'] = 3 } }",
               "invalid_params: @: monitor[\"max patterns\"]: unknown field");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', memory_limt = 1 } } }",
               "invalid_params: @: monitors[1].memory_limt: unknown field");
  /* process_run's own arguments are no monitor field. */
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', stdout_lines = 1 } } }",
               "invalid_params: @: monitors[1].stdout_lines: unknown field");
  /* An unknown key is named even when another field is also wrong. */
  EXPECT_ERROR("return { monitor = { line_max_bytes = 1 }, polcy = 'x' }",
               "invalid_params: @: polcy: unknown field");
}

TEST(types_are_checked)
{
  /* A string needs its unit: "8192" could be anything to its writer. */
  EXPECT_ERROR("return { monitor = { line_max_bytes = '8192' } }",
               "invalid_params: @: monitor.line_max_bytes must be 256..1048576 bytes "
               "(256B..1MiB), a number or a string such as \"64KiB\", \"16MiB\", got "
               "\"8192\": a unit (B, KiB, MiB or GiB) must follow the number");
  EXPECT_ERROR("return { monitor = { max_patterns = '4' } }",
               "invalid_params: @: monitor.max_patterns must be an integer, got string");
  EXPECT_ERROR("return { monitor = { flush_interval_ms = true } }",
               "invalid_params: @: monitor.flush_interval_ms must be an integer or a string "
               "such as \"500ms\", \"30s\", \"5m\", \"1h30m\", got boolean");
  EXPECT_ERROR("return { monitor = { line_max_bytes = 1024.5 } }",
               "invalid_params: @: monitor.line_max_bytes must be an integer, got 1024.5");
  EXPECT_ERROR("return { monitor = { line_max_bytes = 1/0 } }",
               "invalid_params: @: monitor.line_max_bytes must be an integer, got inf");
  EXPECT_ERROR("return { monitor = { enabled = 1 } }",
               "invalid_params: @: monitor.enabled must be a boolean, got number");
  EXPECT_ERROR("return { monitor = 'on' }",
               "invalid_params: @: monitor must be a table, got string");
  EXPECT_ERROR("return { monitor = { allowed_commands = 'make' } }",
               "invalid_params: @: monitor.allowed_commands must be an array of strings, got "
               "string");
  EXPECT_ERROR("return { monitor = { allowed_commands = { 'make', '' } } }",
               "invalid_params: @: monitor.allowed_commands[2] must be a non-empty string, got "
               "\"\"");
  EXPECT_ERROR("return { monitor = { allowed_commands = { 'make', 3 } } }",
               "invalid_params: @: monitor.allowed_commands[2] must be a non-empty string, got "
               "number");
  EXPECT_ERROR("return { monitor = { allowed_commands = { 'make', x = 'y' } } }",
               "invalid_params: @: monitor.allowed_commands must be an array of strings, got a "
               "table with the key x");
  EXPECT_ERROR("return { monitor = { allowed_commands = { 'ma\\0ke' } } }",
               "invalid_params: @: monitor.allowed_commands[1] must not contain a NUL byte");
  EXPECT_ERROR("return { policy = '' }",
               "invalid_params: @: policy must be a non-empty string, got \"\"");
  EXPECT_ERROR("return { gate = '' }",
               "invalid_params: @: gate must be a non-empty string, got \"\"");
  EXPECT_ERROR("return { gate = true }",
               "invalid_params: @: gate must be a non-empty string, got boolean");
  EXPECT_ERROR("return { log = { buffer_bytes = 100 } }",
               "invalid_params: @: log.buffer_bytes must be 16384..67108864, got 100");
  EXPECT_ERROR("return { log = { lines = 1 } }", "invalid_params: @: log.lines: unknown field");
  EXPECT_ERROR("return { plugin_paths = { 'a', false } }",
               "invalid_params: @: plugin_paths[2] must be a non-empty string, got boolean");

  /* Integral floats are integers. */
  VigilConfig cfg;
  if (LOAD_OK("return { monitor = { flush_interval_ms = 3e2, max_runtime_ms = 2^20 } }",
              &cfg) == 0) {
    CHECK_INT(cfg.settings.flush_interval_ms, 300);
    CHECK_INT(cfg.settings.max_runtime_ms, 1048576);
  }
  config_free(&cfg);
}

TEST(workspace_roots_are_existing_absolute_directories)
{
  EXPECT_ERROR("return { monitor = { workspace_roots = { 'rel/dir' } } }",
               "invalid_params: @: monitor.workspace_roots[1] must be an absolute path, got "
               "\"rel/dir\"");
  EXPECT_ERROR("return { monitor = { workspace_roots = { '/nonexistent/vigil' } } }",
               "invalid_params: @: monitor.workspace_roots[1]: \"/nonexistent/vigil\": No such "
               "file or directory");
  write_file("plain", "x");
  char text[PATH_MAX * 2 + 200], want[PATH_MAX * 2 + 200];
  snprintf(text, sizeof text, "return { monitor = { workspace_roots = { '%s/plain' } } }",
           test_dir);
  snprintf(want, sizeof want,
           "invalid_params: @: monitor.workspace_roots[1]: \"%s/plain\" is not a directory",
           test_dir);
  EXPECT_ERROR(text, want);

  /* A valid root is kept resolved: through a symlink and a "..". */
  char link[PATH_MAX + 16], real[PATH_MAX];
  snprintf(link, sizeof link, "%s/link", test_dir);
  CHECK(realpath(test_dir, real) != NULL);
  CHECK_INT(symlink(real, link), 0);
  snprintf(text, sizeof text, "return { monitor = { workspace_roots = { '%s/link/..', '/' } } }",
           test_dir);
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", real);
  *strrchr(parent, '/') = '\0';
  VigilConfig cfg;
  if (LOAD_OK(text, &cfg) == 0) {
    CHECK_INT(cfg.nroots, 2);
    CHECK_STR(cfg.workspace_roots[0], parent[0] ? parent : "/");
    CHECK_STR(cfg.workspace_roots[1], "/");
  }
  config_free(&cfg);
  unlink(link);
}

TEST(monitor_path_is_absolute_directories)
{
  VigilConfig cfg;
  if (LOAD_OK("return { monitor = { path = '/opt/tools/bin:/usr/bin:/bin' } }", &cfg) == 0)
    CHECK_STR(cfg.search_path, "/opt/tools/bin:/usr/bin:/bin");
  config_free(&cfg);
  EXPECT_ERROR("return { monitor = { path = 'bin:/usr/bin' } }",
               "invalid_params: @: monitor.path: entry 1, \"bin\", is not an absolute directory "
               "(entries are absolute paths separated by \":\")");
  EXPECT_ERROR("return { monitor = { path = '/usr/bin::/bin' } }",
               "invalid_params: @: monitor.path: entry 2, \"\", is not an absolute directory "
               "(entries are absolute paths separated by \":\")");
  EXPECT_ERROR("return { monitor = { path = '/usr/bin:' } }",
               "invalid_params: @: monitor.path: entry 2, \"\", is not an absolute directory "
               "(entries are absolute paths separated by \":\")");
  EXPECT_ERROR("return { monitor = { path = '' } }",
               "invalid_params: @: monitor.path: entry 1, \"\", is not an absolute directory "
               "(entries are absolute paths separated by \":\")");
  EXPECT_ERROR("return { monitor = { path = { '/bin' } } }",
               "invalid_params: @: monitor.path must be a string, got table");
  EXPECT_ERROR("return { monitor = { path = '/' .. string.rep('a', 16384) } }",
               "invalid_params: @: monitor.path must be at most 16384 bytes, got 16385");
}

TEST(env_lists_replace_their_defaults_and_are_checked)
{
  VigilConfig cfg;
  if (LOAD_OK("return { monitor = { env_deny = { 'LD_*', 'SECRET_*' }, env_allow = { 'LD_X' },"
              " env_inherit = {} } }",
              &cfg) == 0) {
    static const char *const deny[] = {"LD_*", "SECRET_*", NULL};
    static const char *const allow[] = {"LD_X", NULL};
    CHECK(same_list(cfg.env_deny, deny));
    CHECK(same_list(cfg.env_allow, allow));
    CHECK(same_list(cfg.env_inherit, no_names));
  }
  config_free(&cfg);
  EXPECT_ERROR("return { monitor = { env_deny = { 'LD_*', '' } } }",
               "invalid_params: @: monitor.env_deny[2] must not be empty, got \"\"");
  EXPECT_ERROR("return { monitor = { env_allow = { 'A=B' } } }",
               "invalid_params: @: monitor.env_allow[1] must not contain \"=\" (it names a "
               "variable, without a value), got \"A=B\"");
  EXPECT_ERROR("return { monitor = { env_inherit = { '*_KEY' } } }",
               "invalid_params: @: monitor.env_inherit[1] may hold \"*\" only as its last "
               "character (NAME or PREFIX*), got \"*_KEY\"");
  EXPECT_ERROR("return { monitor = { env_inherit = 'PATH' } }",
               "invalid_params: @: monitor.env_inherit must be an array of strings, got string");
  EXPECT_ERROR("local t = {} for i = 1, 1025 do t[i] = 'V' .. i end "
               "return { monitor = { env_deny = t } }",
               "invalid_params: @: monitor.env_deny must have at most 1024 entries, got 1025");
}

TEST(monitor_entries_are_checked)
{
  EXPECT_ERROR("return { monitors = { { command = 'make' } } }",
               "invalid_params: @: monitors[1].session is required");
  EXPECT_ERROR("return { monitors = { { session = '', command = 'make' } } }",
               "invalid_params: @: monitors[1].session must be a non-empty string, got \"\"");
  /* A session's name is part of its journal's file name (docs/restart.md). */
  EXPECT_ERROR("return { monitors = { { session = '../up', command = 'make' } } }",
               "invalid_params: @: monitors[1].session must be 1..64 of A-Z a-z 0-9 . _ - : and "
               "not start with \"anon-\", got \"../up\"");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', argv = { 'make' } } } }",
               "invalid_params: @: monitors[1] must give exactly one of command and argv, got "
               "both");
  EXPECT_ERROR("return { monitors = { { session = 's' } } }",
               "invalid_params: @: monitors[1] must give exactly one of command and argv, got "
               "neither");
  EXPECT_ERROR("return { monitors = { { session = 's', argv = {} } } }",
               "invalid_params: @: monitors[1].argv must have at least one entry");
  EXPECT_ERROR("return { monitors = { { session = 's', argv = { 'make' }, shell = true } } }",
               "invalid_params: @: monitors[1].shell needs command, not argv");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make' },\n"
               "  { session = 's', command = 'make', notify = 'all' } } }",
               "invalid_params: @: monitors[2].notify must be \"auto\" | \"matches\" | \"lines\" "
               "| \"exit\" | \"none\", got \"all\"");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', mode = 'live' } } }",
               "invalid_params: @: monitors[1].mode must be \"idle\" | \"live_safe\", got "
               "\"live\"");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', match_streams = 1 } } }",
               "invalid_params: @: monitors[1].match_streams must be a string, got number");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make | tee log' } } }",
               "invalid_params: @: monitors[1].command: shell operator \"|\" at position 5 is "
               "not allowed without shell mode");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', env = { PORT = 3000 } } "
               "} }",
               "invalid_params: @: monitors[1].env.PORT must be a string, got number");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', env = { 'x' } } } }",
               "invalid_params: @: monitors[1].env[1]: an environment variable name must be a "
               "non-empty string without \"=\"");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', timeout_ms = 0 } } }",
               "invalid_params: @: monitors[1].timeout_ms must be 1..1800000 "
               "(monitor.max_runtime_ms), got 0");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', idle_timeout_ms = -1 } "
               "} }",
               "invalid_params: @: monitors[1].idle_timeout_ms must be 0..3600000, got -1");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', persistent = true,\n"
               "  timeout_ms = 5000 } } }",
               "invalid_params: @: monitors[1] must give at most one of timeout_ms and "
               "persistent, got both");
  EXPECT_ERROR("return { monitor = { allow_persistent = false },\n"
               "  monitors = { { session = 's', command = 'make', persistent = true } } }",
               "invalid_params: @: monitors[1].persistent is true but monitor.allow_persistent "
               "is false");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', label = '' } } }",
               "invalid_params: @: monitors[1].label must be a non-empty string, got \"\"");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', label = "
               "string.rep('x', 129) } } }",
               "invalid_params: @: monitors[1].label must be at most 128 bytes, got 129");
  EXPECT_ERROR("return { monitors = { 'make' } }",
               "invalid_params: @: monitors[1] must be a table, got string");
  EXPECT_ERROR("return { monitors = { [2] = {} } }",
               "invalid_params: @: monitors must be an array of tables, got a table with the "
               "key [2]");
}

TEST(patterns_are_bounded)
{
  EXPECT_ERROR("local p = {} for i = 1, 33 do p[i] = 'x' .. i end\n"
               "return { monitors = { { session = 's', command = 'make', patterns = p } } }",
               "invalid_params: @: monitors[1].patterns must have at most 32 entries "
               "(monitor.max_patterns), got 33");
  /* The bound is the config's own setting, whatever order the file gives. */
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', patterns = { 'a', "
               "'b', 'c' } } },\n  monitor = { max_patterns = 2 } }",
               "invalid_params: @: monitors[1].patterns must have at most 2 entries "
               "(monitor.max_patterns), got 3");
  EXPECT_ERROR("return { monitor = { pattern_max_length = 4 }, monitors = { { session = 's', "
               "command = 'make', patterns = { 'ok', 'toolong' } } } }",
               "invalid_params: @: monitors[1].patterns[2] must be at most 4 bytes "
               "(monitor.pattern_max_length), got 7");
  EXPECT_ERROR("return { monitor = { pattern_max_length = 4 }, monitors = { { session = 's', "
               "command = 'make', match_pattern = 'toolong' } } }",
               "invalid_params: @: monitors[1].match_pattern must be at most 4 bytes "
               "(monitor.pattern_max_length), got 7");
  EXPECT_ERROR("return { monitors = { { session = 's', command = 'make', patterns = { 'a' }, "
               "match_pattern = 'b' } } }",
               "invalid_params: @: monitors[1] must give at most one of patterns and "
               "match_pattern, got both");
  /* Patterns are not compiled here: the engine does that at start. */
  VigilConfig cfg;
  if (LOAD_OK("return { monitors = { { session = 's', command = 'make', match_pattern = '(' } } "
              "}",
              &cfg) == 0) {
    CHECK_INT(cfg.monitors[0].req.npatterns, 1);
    CHECK_STR(cfg.monitors[0].req.patterns[0], "(");
  }
  config_free(&cfg);
}

TEST(lua_errors_name_file_and_line)
{
  EXPECT_ERROR("return {\n  monitor = {\n    enabled = = true,\n  },\n}\n",
               "invalid_params: @:3: unexpected symbol near '='");
  EXPECT_ERROR("local t = nil\nreturn { monitor = t.x }",
               "invalid_params: @:2: attempt to index a nil value (local 't')");
  EXPECT_ERROR("error('no config today')", "invalid_params: @:1: no config today");
  EXPECT_ERROR("error('bare', 0)", "invalid_params: @: bare");
  EXPECT_ERROR("return 'hello'", "invalid_params: @: the config must return a table, got string");
  EXPECT_ERROR("x = 1", "invalid_params: @: the config must return a table, got nothing");
  EXPECT_ERROR("return {}, {}", "invalid_params: @: the config must return one table, got 2 "
                                "values");
  EXPECT_ERROR("local n = 0\nwhile true do n = n + 1 end",
               "invalid_params: @:2: instruction budget of 10000000 exceeded");
  EXPECT_ERROR("local f = io.open('/etc/passwd')",
               "invalid_params: @:1: attempt to index a nil value (global 'io')");
  EXPECT_ERROR("return { monitor = { allowed_commands = { os.getenv('USER') } } }",
               "invalid_params: @:1: attempt to index a nil value (global 'os')");
  /* One allocation past the limit: refused at once, however slow the machine
   * (a loop of small ones could meet the wall clock first under load). */
  EXPECT_ERROR("local s = string.rep('x', 1 << 25) return {}",
               "invalid_params: @: memory limit of 16777216 bytes exceeded");
  EXPECT_ERROR("return require('vigil')",
               "invalid_params: @:1: attempt to call a nil value (global 'require')");

  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(config_load("/nonexistent/vigil.lua", &cfg, &err), -1);
  CHECK_STR(err.msg, "invalid_params: /nonexistent/vigil.lua: cannot open: No such file or "
                     "directory");
  CHECK(is_defaults(&cfg));
  config_free(&cfg);

  /* A long path is named whole, though Lua shortens it to 60 bytes. */
  char name[200];
  snprintf(name, sizeof name, "%s", "a-config-file-with-a-name-long-enough-to-be-shortened.lua");
  const char *path = write_file(name, "\nreturn { = }");
  error_clear(&err);
  CHECK_INT(config_load(path, &cfg, &err), -1);
  char want[PATH_MAX + 300];
  snprintf(want, sizeof want, "invalid_params: %s:2: unexpected symbol near '='", path);
  CHECK_STR(err.msg, want);
  config_free(&cfg);
}

/* SIGALRM: a config load did not come back; fail the whole program. */
static void
watchdog_fired(int sig)
{
  (void)sig;
  static const char msg[] = "FAIL: a config load did not return within the watchdog's "
                            "bound: Lua code escaped the instruction budget\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* The config runs in the sandbox too: xpcall's message handler, which Lua
 * runs inside the count hook for the budget's error, cannot loop there (the
 * issue's reproduction hung `vigild --check-config`). From a file and from
 * memory; 60 s is tens of times what the slowest build needs. */
TEST(a_config_looping_in_an_xpcall_handler_is_refused)
{
  signal(SIGALRM, watchdog_fired);
  alarm(60);
  EXPECT_ERROR("xpcall(function() while true do end end, function(e) while true do end end)"
               " return {}",
               "invalid_params: @:1: instruction budget of 10000000 exceeded");
  EXPECT_ERROR("xpcall(function() error('x') end, function(e) while true do end end) return {}",
               "invalid_params: @:1: instruction budget of 10000000 exceeded");
  const char *text = "return { monitor = { allowed_commands = {\n"
                     "  xpcall(function() while true do end end,\n"
                     "         function(e) while true do end end) } } }\n";
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(config_load_buffer(text, strlen(text), "mem.lua", &cfg, &err), -1);
  CHECK_CONTAINS(err.msg, "invalid_params: mem.lua:");
  CHECK_CONTAINS(err.msg, "instruction budget of 10000000 exceeded");
  CHECK(is_defaults(&cfg));
  config_free(&cfg);
  alarm(0);
}

TEST(a_refused_config_frees_what_it_built)
{
  /* Settings, the allowlist, roots and monitors are built, then one fails. */
  EXPECT_ERROR("return {\n"
               "  monitor = { allowed_commands = { 'make', 'npm' }, workspace_roots = { '/' },\n"
               "              line_max_bytes = 1024, enabled = false },\n"
               "  policy = 'xml', plugin_paths = { '/p' },\n"
               "  monitors = {\n"
               "    { session = 'a', command = 'make -j4', env = { A = '1' }, patterns = { 'x' } },\n"
               "    { session = 'b', argv = { 'npm', 'test' }, label = 'l', description = 'd' },\n"
               "    { session = 'c', command = 'make', notify = 'loud' },\n"
               "  },\n"
               "}\n",
               "invalid_params: @: monitors[3].notify must be \"auto\" | \"matches\" | "
               "\"lines\" | \"exit\" | \"none\", got \"loud\"");
}

TEST(full_config_round_trips)
{
  char text[4096];
  snprintf(text, sizeof text,
           "-- a config using every kind of field\n"
           "local ms = 1000\n"
           "return {\n"
           "  monitor = {\n"
           "    enabled = true, live_mode_enabled = true, allow_shell = true,\n"
           "    allow_persistent = true, line_buffered = false,\n"
           "    allowed_commands = { 'make', '/usr/bin/tail' },\n"
           "    workspace_roots = { '%s' },\n"
           "    line_max_bytes = 4096, flush_interval_ms = 5 * 100, max_patterns = 4,\n"
           "    max_monitors_per_session = 16,\n"
           "  },\n"
           "  rate_limit = { max_notifications = 3, window_ms = 2 * ms, overload_ms = 6e3,\n"
           "                 on_overload = 'mute' },\n"
           "  session = { queue_max = 10, linger_ms = 0 },\n"
           "  rpc = { max_message_bytes = 4096, max_pending = 2 },\n"
           "  log = { buffer_bytes = 65536, policy_lines_per_s = 7, policy_lines_per_call = 3 },\n"
           "  keeper = { unattended_ms = 60 * ms },\n"
           "  state = { dir = '/var/lib/vigil/state' },\n"
           "  nats = { url = 'nats://u:p@n1:4222,nats://n2:4222', creds = '/etc/vigil/e.creds',\n"
           "           stream = 'FLEET', engine = 'build-1', ack_timeout_ms = '2s',\n"
           "           tls_ca = '/etc/vigil/ca.pem', tls_cert = '/etc/vigil/e.pem',\n"
           "           tls_key = '/etc/vigil/e.key' },\n"
           "  policy = 'xml', gate = 'gate',\n"
           "  plugin_paths = { '/opt/vigil/plugins', 'plugins' },\n"
           "  monitors = {\n"
           "    {\n"
           "      session = 'dev', label = 'server', description = 'the dev server',\n"
           "      command = \"make 'run server' PORT=3000\", cwd = '/tmp',\n"
           "      env = { PORT = '3000', DEBUG = '' , B = 'x=y' },\n"
           "      patterns = { 'error', '^panic:' },\n"
           "      match_streams = 'stderr', notify = 'matches', mode = 'live_safe',\n"
           "      policy = 'envelope', timeout_ms = 60 * ms, idle_timeout_ms = 30000,\n"
           "    },\n"
           "    {\n"
           "      session = 'ops', command = 'tail -f log | grep x', shell = true,\n"
           "      match_pattern = 'x', notify = 'exit', persistent = true, line_buffered = true,\n"
           "    },\n"
           "    { session = 'ops', argv = { '/usr/bin/tail', '-n', '0', 'a b' } },\n"
           "  },\n"
           "}\n",
           test_dir);
  VigilConfig cfg;
  if (LOAD_OK(text, &cfg) != 0)
    return;
  CHECK_STR(cfg.path, test_path);
  CHECK(cfg.enabled && cfg.live_mode_enabled && cfg.allow_shell && cfg.allow_persistent);
  CHECK(!cfg.line_buffered);
  CHECK_INT(cfg.allowed_commands.n, 2);
  CHECK_STR(cfg.allowed_commands.entries[1], "/usr/bin/tail");
  char real[PATH_MAX];
  CHECK(realpath(test_dir, real) != NULL);
  CHECK_INT(cfg.nroots, 1);
  CHECK_STR(cfg.workspace_roots[0], real);

  CHECK_INT(cfg.settings.line_max_bytes, 4096);
  CHECK_INT(cfg.settings.flush_interval_ms, 500);
  CHECK_INT(cfg.settings.max_patterns, 4);
  CHECK_INT(cfg.settings.max_monitors_per_session, 16);
  CHECK_INT(cfg.settings.rate_max_notifications, 3);
  CHECK_INT(cfg.settings.rate_window_ms, 2000);
  CHECK_INT(cfg.settings.rate_overload_ms, 6000);
  CHECK_INT(cfg.settings.rate_on_overload, kOverloadMute);
  CHECK_INT(cfg.settings.session_queue_max, 10);
  CHECK_INT(cfg.settings.session_linger_ms, 0);
  CHECK_INT(cfg.settings.rpc_max_message_bytes, 4096);
  CHECK_INT(cfg.settings.rpc_max_pending, 2);
  CHECK_INT(cfg.settings.batch_max_lines, 50); /* untouched: default */
  CHECK_STR(cfg.policy, "xml");
  CHECK_STR(cfg.gate, "gate");
  CHECK_INT(cfg.settings.log_buffer_bytes, 65536);
  CHECK_INT(cfg.settings.log_policy_lines_per_s, 7);
  CHECK_INT(cfg.settings.log_policy_lines_per_call, 3);
  CHECK_INT(cfg.settings.keeper_unattended_ms, 60000);
  CHECK_STR(cfg.state_dir, "/var/lib/vigil/state");
  CHECK_STR(cfg.nats_url, "nats://u:p@n1:4222,nats://n2:4222");
  CHECK_STR(cfg.nats_creds, "/etc/vigil/e.creds");
  CHECK_STR(cfg.nats_tls_ca, "/etc/vigil/ca.pem");
  CHECK_STR(cfg.nats_tls_cert, "/etc/vigil/e.pem");
  CHECK_STR(cfg.nats_tls_key, "/etc/vigil/e.key");
  CHECK_STR(cfg.nats_stream, "FLEET");
  CHECK_STR(cfg.nats_engine, "build-1");
  CHECK_INT(cfg.settings.nats_ack_timeout_ms, 2000);
  CHECK_INT(cfg.settings.nats_retry_min_ms, 100); /* untouched: default */
  CHECK_INT(cfg.nplugin_paths, 2);
  CHECK_STR(cfg.plugin_paths[1], "plugins");

  CHECK_INT(cfg.nmonitors, 3);
  if (cfg.nmonitors != 3) {
    config_free(&cfg);
    return;
  }
  const ConfigMonitor *m = &cfg.monitors[0];
  CHECK_STR(m->session, "dev");
  CHECK_STR(m->req.label, "server");
  CHECK_STR(m->req.description, "the dev server");
  CHECK(!m->req.shell);
  CHECK_INT(m->req.argv.argc, 3);
  CHECK_STR(m->req.argv.argv[0], "make");
  CHECK_STR(m->req.argv.argv[1], "run server");
  CHECK_STR(m->req.argv.argv[2], "PORT=3000");
  CHECK(m->req.argv.argv[3] == NULL);
  CHECK_STR(m->req.cwd, "/tmp");
  CHECK(m->req.env != NULL);
  if (m->req.env) {
    /* Sorted, so the order does not depend on the hash table. */
    CHECK_STR(m->req.env[0], "B=x=y");
    CHECK_STR(m->req.env[1], "DEBUG=");
    CHECK_STR(m->req.env[2], "PORT=3000");
    CHECK(m->req.env[3] == NULL);
  }
  CHECK_INT(m->req.npatterns, 2);
  CHECK_STR(m->req.patterns[1], "^panic:");
  CHECK_INT(m->req.match_streams, kStreamsStderr);
  CHECK_INT(m->req.notify, kNotifyMatches);
  CHECK_INT(m->req.mode, kModeLiveSafe);
  CHECK_STR(m->req.policy, "envelope");
  CHECK_INT(m->req.timeout_ms, 60000);
  CHECK(!m->req.persistent);
  CHECK_INT(m->req.idle_timeout_ms, 30000);
  CHECK(!m->req.line_buffered_given); /* monitor.line_buffered decides */

  m = &cfg.monitors[1];
  CHECK(m->req.shell);
  CHECK_INT(m->req.argv.argc, 3);
  CHECK_STR(m->req.argv.argv[0], "/bin/sh");
  CHECK_STR(m->req.argv.argv[1], "-c");
  CHECK_STR(m->req.argv.argv[2], "tail -f log | grep x");
  CHECK_INT(m->req.npatterns, 1);
  CHECK_STR(m->req.patterns[0], "x");
  CHECK_INT(m->req.notify, kNotifyExit);
  CHECK(m->req.persistent);
  CHECK(m->req.line_buffered_given && m->req.line_buffered);
  CHECK_INT(m->req.timeout_ms, 0);
  CHECK(m->req.env == NULL && m->req.label == NULL && m->req.cwd == NULL && m->req.policy == NULL);

  m = &cfg.monitors[2];
  CHECK_INT(m->req.argv.argc, 4);
  CHECK_STR(m->req.argv.argv[3], "a b");
  CHECK_INT(m->req.npatterns, 0);
  CHECK_INT(m->req.notify, kNotifyAuto);
  CHECK_INT(m->req.mode, kModeIdle);
  CHECK_INT(m->req.match_streams, kStreamsBoth);
  config_free(&cfg);
}

TEST(buffer_loading_matches_file_loading)
{
  const char *text = "return { monitor = { max_monitors_per_session = 40 } }";
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(config_load_buffer(text, strlen(text), "inline.lua", &cfg, &err), -1);
  CHECK_STR(err.msg,
            "invalid_params: inline.lua: monitor.max_monitors_per_session must be 1..16, got 40");
  CHECK(is_defaults(&cfg));
  config_free(&cfg);

  text = "return {\n monitor = { allowed_commands = { 'make' } } }";
  error_clear(&err);
  CHECK_INT(config_load_buffer(text, strlen(text), "inline.lua", &cfg, &err), 0);
  CHECK_STR(cfg.path, "inline.lua");
  CHECK_INT(cfg.allowed_commands.n, 1);
  config_free(&cfg);

  text = "return {\n = }";
  CHECK_INT(config_load_buffer(text, strlen(text), "inline.lua", &cfg, &err), -1);
  CHECK_STR(err.msg, "invalid_params: inline.lua:2: unexpected symbol near '='");
  config_free(&cfg);

  /* A metatable on the returned table is never consulted. */
  error_clear(&err);
  text = "return setmetatable({}, { __index = function() while true do end end,\n"
         "  __pairs = function() error('no') end })";
  CHECK_INT(config_load_buffer(text, strlen(text), "meta.lua", &cfg, &err), 0);
  CHECK_STR(err.msg, "");
  config_free(&cfg);
}

int
main(void)
{
  snprintf(test_dir, sizeof test_dir, "/tmp/vigil_cfg_XXXXXX");
  if (mkdtemp(test_dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  RUN(defaults_fail_closed);
  RUN(bundled_config_loads_and_documents_every_setting);
  RUN(example_configs_load);
  RUN(settings_errors_name_file_field_bound_and_value);
  RUN(durations_and_sizes_take_units);
  RUN(unknown_fields_are_refused);
  RUN(types_are_checked);
  RUN(workspace_roots_are_existing_absolute_directories);
  RUN(monitor_path_is_absolute_directories);
  RUN(env_lists_replace_their_defaults_and_are_checked);
  RUN(monitor_entries_are_checked);
  RUN(patterns_are_bounded);
  RUN(lua_errors_name_file_and_line);
  RUN(a_config_looping_in_an_xpcall_handler_is_refused);
  RUN(a_refused_config_frees_what_it_built);
  RUN(full_config_round_trips);
  RUN(buffer_loading_matches_file_loading);
  /* Clean up the scratch directory. */
  char path[PATH_MAX + 64];
  static const char *const files[] = {
    "conf.lua", "plain", "a-config-file-with-a-name-long-enough-to-be-shortened.lua"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", test_dir, files[i]);
    unlink(path);
  }
  rmdir(test_dir);
  return check_summary();
}
