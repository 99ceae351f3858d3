/*
 * Unit tests of the child's environment rules: NAME and PREFIX* patterns,
 * which patterns a config list may hold, the deny/allow check on a start's
 * env (with the messages a caller reads), the default lists, the
 * environment a child is given (inherit filter, the engine's line-buffering
 * additions, then the start's env), and which libstdbuf the engine trusts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "proc/childenv.h"

/* Whether the NULL-terminated env has exactly the entry kv. */
static bool
env_has(char **env, const char *kv)
{
  for (size_t i = 0; env[i] != NULL; i++) {
    if (strcmp(env[i], kv) == 0)
      return true;
  }
  return false;
}

/* How many entries of env set the name (the part before '='). */
static size_t
env_count(char **env, const char *name)
{
  size_t n = 0, len = strlen(name);
  for (size_t i = 0; env[i] != NULL; i++)
    n += strncmp(env[i], name, len) == 0 && env[i][len] == '=';
  return n;
}

TEST(patterns_match_a_name_or_a_prefix)
{
  CHECK(childenv_match("PATH", "PATH", 4));
  CHECK(!childenv_match("PATH", "PATHS", 5));
  CHECK(!childenv_match("PATH", "PAT", 3));
  CHECK(!childenv_match("path", "PATH", 4)); /* names are case-sensitive */
  CHECK(childenv_match("LD_*", "LD_PRELOAD", 10));
  CHECK(childenv_match("LD_*", "LD_", 3));
  CHECK(!childenv_match("LD_*", "LD", 2));
  CHECK(!childenv_match("LD_*", "OLD_X", 5));
  CHECK(childenv_match("*", "ANYTHING", 8));
  /* len, not the NUL, ends the name: "PATH=..." is the name PATH. */
  CHECK(childenv_match("PATH", "PATH=/bin", 4));
  const char *const list[] = {"HOME", "LC_*", NULL};
  CHECK_STR(childenv_match_any(list, "LC_ALL", 6), "LC_*");
  CHECK(childenv_match_any(list, "LANG", 4) == NULL);
  CHECK(childenv_match_any(NULL, "LANG", 4) == NULL);
  /* The deny and allow lists' comparison ignores ASCII case only. */
  CHECK_STR(childenv_match_any_nocase(list, "lc_all", 6), "LC_*");
  CHECK_STR(childenv_match_any_nocase(list, "Home", 4), "HOME");
  CHECK(childenv_match_any_nocase(list, "HOMES", 5) == NULL);
  CHECK(childenv_match_any_nocase(list, "LC", 2) == NULL);
  CHECK(childenv_match_any_nocase(list, "HOM\xc5", 4) == NULL);
  CHECK(childenv_match_any_nocase(NULL, "LANG", 4) == NULL);
}

TEST(a_list_entry_is_a_name_or_a_prefix_pattern)
{
  CHECK(childenv_pattern_problem("LD_*") == NULL);
  CHECK(childenv_pattern_problem("*") == NULL);
  CHECK(childenv_pattern_problem("BASH_FUNC_make%%") == NULL);
  CHECK_CONTAINS(childenv_pattern_problem(""), "empty");
  CHECK_CONTAINS(childenv_pattern_problem("A=B"), "\"=\"");
  CHECK_CONTAINS(childenv_pattern_problem("*PATH"), "only as its last");
  CHECK_CONTAINS(childenv_pattern_problem("A*B*"), "only as its last");
  CHECK_CONTAINS(childenv_pattern_problem("A B"), "space");
  CHECK_CONTAINS(childenv_pattern_problem("A\tB"), "control");
  char longest[CHILDENV_PATTERN_MAX + 2];
  memset(longest, 'A', sizeof longest - 1);
  longest[CHILDENV_PATTERN_MAX] = '\0';
  CHECK(childenv_pattern_problem(longest) == NULL);
  longest[CHILDENV_PATTERN_MAX] = 'A';
  longest[CHILDENV_PATTERN_MAX + 1] = '\0';
  CHECK_CONTAINS(childenv_pattern_problem(longest), "at most 256 bytes");
  /* Every default entry is one a config could write. */
  for (size_t i = 0; childenv_default_deny[i] != NULL; i++)
    CHECK(childenv_pattern_problem(childenv_default_deny[i]) == NULL);
  for (size_t i = 0; childenv_default_inherit[i] != NULL; i++)
    CHECK(childenv_pattern_problem(childenv_default_inherit[i]) == NULL);
}

TEST(the_default_deny_list_holds_the_issues_hooks)
{
  static const char *const hooks[] = {
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "GCONV_PATH",
    "PYTHONSTARTUP", "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT",
    "BASH_FUNC_make%%", "GLIBC_TUNABLES", "JAVA_TOOL_OPTIONS", NULL,
  };
  for (size_t i = 0; hooks[i] != NULL; i++) {
    if (childenv_match_any(childenv_default_deny, hooks[i], strlen(hooks[i])) == NULL)
      check_fail(__FILE__, __LINE__, "%s is not in the default deny list", hooks[i]);
  }
  /* What a build or a dev server is commonly given passes (names only
   * close to a denied one included). */
  static const char *const fine[] = {
    "PORT", "NODE_ENV", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING",
    "RUST_LOG", "RUST_BACKTRACE", "ENVIRONMENT", "CI", "NO_COLOR", "FORCE_COLOR", "DEBUG",
    "GOMAXPROCS", "GOGC", "GODEBUG", "GOOS", "GOARCH", "LANG", "LC_ALL", "TZ", "TERM",
    "TMPDIR", "DATABASE_URL", "PATHS", "HOMEPAGE", "EDITOR_THEME", "CODE", "ASSETS", NULL,
  };
  VigilError err = VIGIL_ERROR_INIT;
  for (size_t i = 0; fine[i] != NULL; i++) {
    char kv[128];
    snprintf(kv, sizeof kv, "%s=1", fine[i]);
    char *env[] = {kv, NULL};
    if (childenv_check(env, childenv_default_deny, NULL, &err) != 0)
      check_fail(__FILE__, __LINE__, "%s is denied by default: %s", fine[i], err.msg);
    error_clear(&err);
  }
}

/* Whether the default lists refuse name (set to a path), naming it. */
static bool
denied_by_default(const char *name)
{
  char kv[160];
  snprintf(kv, sizeof kv, "%s=/tmp/x/evil", name);
  char *env[] = {kv, NULL};
  VigilError err = VIGIL_ERROR_INIT;
  bool denied = childenv_check(env, childenv_default_deny, NULL, &err) != 0 &&
                err.code == kErrDenied && strstr(err.msg, name) != NULL;
  error_clear(&err);
  return denied;
}

TEST(the_default_deny_list_refuses_what_chooses_a_program)
{
  /* Issue 22, point 2: a variable that names a program the child runs by
   * name, or a file or directory it reads one from, decides what runs. One
   * name (at least) per default entry; childenv.c says why each is there. */
  static const char *const choosers[] = {
    /* the review's case, and the programs a tool runs by a variable */
    "PATH", "SHELL", "EDITOR", "VISUAL", "SUDO_EDITOR", "PAGER", "MANPAGER", "LESSOPEN",
    "LESS", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS",
    /* shells */
    "PS4", "CDPATH", "ZDOTDIR",
    /* where configuration (that names programs) is read from */
    "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    /* git */
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXEC_PATH", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
    "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_ASKPASS", "GIT_EDITOR",
    "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR", "GIT_PROXY_COMMAND",
    /* node and its package managers; npm reads npm_config_* in any case */
    "npm_config_script_shell", "NPM_CONFIG_SCRIPT_SHELL", "Npm_Config_Script_Shell",
    "npm_config_userconfig", "YARN_RC_FILENAME", "YARN_YARN_PATH", "PNPM_HOME",
    "COREPACK_NPM_REGISTRY", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
    /* python */
    "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTHONEXECUTABLE", "PYTHONBREAKPOINT", "PYTHON",
    "PIP_INDEX_URL", "PIP_CONFIG_FILE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYENV_VERSION",
    "PYENV_ROOT",
    /* make, the C toolchain and what it is given */
    "MAKE", "MAKEFLAGS", "MAKEFILES", "MFLAGS", "GNUMAKEFLAGS", "CC", "CXX", "CPP", "LD", "AR",
    "AS", "FC", "RM", "LEX", "YACC", "M4", "NM", "RANLIB", "STRIP", "OBJCOPY", "PKG_CONFIG",
    "PKG_CONFIG_PATH", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "ARFLAGS",
    "GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH", "CCACHE_PREFIX", "CMAKE_TOOLCHAIN_FILE", "CMAKE_C_COMPILER_LAUNCHER",
    /* rust */
    "RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOC", "RUSTFLAGS",
    "RUSTUP_TOOLCHAIN", "CARGO", "CARGO_HOME", "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
    /* go */
    "GOFLAGS", "GOROOT", "GOPATH", "GOENV", "GOTOOLCHAIN", "GOPROXY", "GOSUMDB", "GONOSUMDB",
    "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOVCS", "GOWORK", "GOCACHE", "GOMODCACHE", "GOBIN",
    "CGO_CFLAGS", "CGO_LDFLAGS",
    /* ruby, the JVM */
    "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "JAVA_HOME", "CLASSPATH", "JAVA_OPTS",
    "MAVEN_OPTS", "GRADLE_OPTS", "GRADLE_USER_HOME",
    /* libraries every program may load or parse */
    "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "TERMINFO", "TERMINFO_DIRS",
    /* the trust anchors of downloads a build makes */
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED", NULL,
  };
  for (size_t i = 0; choosers[i] != NULL; i++) {
    if (!denied_by_default(choosers[i]))
      check_fail(__FILE__, __LINE__, "%s is not refused by default", choosers[i]);
  }
  /* Denied names are compared without regard to case: npm and others read
   * theirs so, and "path" is no reason to let "PATH" through. */
  static const char *const cases[] = {"path", "Path", "ld_preload", "Bash_Env", "git_ssh_command",
                                      "pythonpath", "node_options", NULL};
  for (size_t i = 0; cases[i] != NULL; i++) {
    if (!denied_by_default(cases[i]))
      check_fail(__FILE__, __LINE__, "%s is not refused by default", cases[i]);
  }
  /* The message names the variable as given and the entry that matched. */
  VigilError err = VIGIL_ERROR_INIT;
  char *env[] = {"Npm_Config_Script_Shell=/tmp/x/sh", NULL};
  CHECK_INT(childenv_check(env, childenv_default_deny, NULL, &err), -1);
  CHECK_CONTAINS(err.msg, "env: \"Npm_Config_Script_Shell\" is refused by monitor.env_deny "
                          "(entry \"npm_config_*\")");
  error_clear(&err);
}

TEST(the_default_allow_list_lets_only_harmless_names_of_denied_families_through)
{
  VigilError err = VIGIL_ERROR_INIT;
  static const char *const harmless[] = {
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE", "CARGO_INCREMENTAL", "CARGO_BUILD_JOBS", "CGO_ENABLED",
    "CMAKE_BUILD_PARALLEL_LEVEL", NULL,
  };
  for (size_t i = 0; harmless[i] != NULL; i++) {
    char kv[128];
    snprintf(kv, sizeof kv, "%s=1", harmless[i]);
    char *env[] = {kv, NULL};
    /* Denied by a family, exempted by the default allow list. */
    if (childenv_check(env, childenv_default_deny, NULL, &err) == 0)
      check_fail(__FILE__, __LINE__, "%s is in no denied family", harmless[i]);
    error_clear(&err);
    if (childenv_check(env, childenv_default_deny, childenv_default_allow, &err) != 0)
      check_fail(__FILE__, __LINE__, "%s is denied with the default allow list: %s",
                 harmless[i], err.msg);
    error_clear(&err);
    CHECK(childenv_pattern_problem(harmless[i]) == NULL);
  }
  for (size_t i = 0; childenv_default_allow[i] != NULL; i++)
    CHECK(childenv_pattern_problem(childenv_default_allow[i]) == NULL);
  /* The rest of those families stays denied. */
  char *env[] = {"GIT_AUTHOR_NAME=me", "GIT_SSH_COMMAND=/tmp/x/ssh", NULL};
  CHECK_INT(childenv_check(env, childenv_default_deny, childenv_default_allow, &err), -1);
  CHECK_CONTAINS(err.msg, "\"GIT_SSH_COMMAND\" is refused by monitor.env_deny (entry "
                          "\"GIT_*\")");
  error_clear(&err);
  char *cargo[] = {"CARGO_TARGET_DIR=/tmp/x", NULL};
  CHECK_INT(childenv_check(cargo, childenv_default_deny, childenv_default_allow, &err), -1);
  error_clear(&err);
  /* An allow entry matches without regard to case too. */
  char *lower[] = {"git_author_name=me", NULL};
  CHECK_INT(childenv_check(lower, childenv_default_deny, childenv_default_allow, &err), 0);
}

TEST(check_refuses_a_denied_name_and_names_entry_and_setting)
{
  VigilError err = VIGIL_ERROR_INIT;
  char *env[] = {"PORT=3000", "LD_PRELOAD=/tmp/x/ev.so", NULL};
  CHECK_INT(childenv_check(env, childenv_default_deny, NULL, &err), -1);
  CHECK_INT(err.code, kErrDenied);
  CHECK_CONTAINS(err.msg, "denied: env: \"LD_PRELOAD\" is refused by monitor.env_deny "
                          "(entry \"LD_*\")");
  CHECK_CONTAINS(err.msg, "monitor.env_allow");
  /* The allow list exempts a name; other denied names stay denied. */
  error_clear(&err);
  const char *const allow[] = {"LD_LIBRARY_PATH", NULL};
  char *env2[] = {"LD_LIBRARY_PATH=/opt/lib", NULL};
  CHECK_INT(childenv_check(env2, childenv_default_deny, allow, &err), 0);
  CHECK(!err.set);
  CHECK_INT(childenv_check(env, childenv_default_deny, allow, &err), -1);
  /* No deny list: everything passes; no env at all: nothing to refuse. */
  error_clear(&err);
  CHECK_INT(childenv_check(env, NULL, NULL, &err), 0);
  CHECK_INT(childenv_check(NULL, childenv_default_deny, NULL, &err), 0);
}

TEST(check_refuses_a_malformed_entry_with_the_name_escaped)
{
  VigilError err = VIGIL_ERROR_INIT;
  char *empty[] = {"=value", NULL};
  CHECK_INT(childenv_check(empty, NULL, NULL, &err), -1);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_CONTAINS(err.msg, "env: variable name \"\" must be non-empty");
  error_clear(&err);
  char *no_value[] = {"JUST_A_NAME", NULL};
  CHECK_INT(childenv_check(no_value, NULL, NULL, &err), -1);
  CHECK_CONTAINS(err.msg, "\"JUST_A_NAME\"");
  error_clear(&err);
  const char *const deny[] = {"EVIL*", NULL};
  char *ctl[] = {"EVIL\x1b[31m=x", NULL};
  CHECK_INT(childenv_check(ctl, deny, NULL, &err), -1);
  CHECK_CONTAINS(err.msg, "\"EVIL\\x1b[31m\"");
}

/* A start's env_denied "drop": what check would deny is removed (any case),
 * the allowed and the malformed stay in order, and the names come back. */
TEST(drop_removes_what_check_would_deny_and_names_it)
{
  const char *in[] = {"FOO=1", "ld_preload=x", "=v", "GIT_AUTHOR_NAME=a", "PATH=/tmp", "BAR=2"};
  size_t n = sizeof in / sizeof in[0];
  char **env = calloc(n + 1, sizeof *env);
  for (size_t i = 0; i < n; i++)
    env[i] = strdup(in[i]);
  char **names = NULL;
  CHECK_INT((int)childenv_drop(env, childenv_default_deny, childenv_default_allow, &names), 2);
  CHECK_STR(env[0], "FOO=1");
  CHECK_STR(env[1], "=v");
  CHECK_STR(env[2], "GIT_AUTHOR_NAME=a");
  CHECK_STR(env[3], "BAR=2");
  CHECK(env[4] == NULL);
  CHECK(names != NULL && names[2] == NULL);
  CHECK_STR(names[0], "ld_preload");
  CHECK_STR(names[1], "PATH");
  for (size_t i = 0; names[i] != NULL; i++)
    free(names[i]);
  free(names);
  /* Nothing to drop: nothing changes, and no names. */
  CHECK_INT((int)childenv_drop(env, childenv_default_deny, childenv_default_allow, &names), 0);
  CHECK(names == NULL && env[3] != NULL && env[4] == NULL);
  CHECK_INT((int)childenv_drop(NULL, childenv_default_deny, NULL, &names), 0);
  for (size_t i = 0; env[i] != NULL; i++)
    free(env[i]);
  free(env);
}

TEST(build_inherits_only_what_the_list_names_and_extra_wins)
{
  setenv("VIGIL_CE_SECRET", "sk-123", 1);
  setenv("VIGIL_CE_KEEP_A", "a", 1);
  setenv("VIGIL_CE_OVERRIDE", "engine", 1);
  const char *const inherit[] = {"VIGIL_CE_KEEP_*", "VIGIL_CE_OVERRIDE", NULL};
  char *extra[] = {"VIGIL_CE_OVERRIDE=first", "NEW=1", "VIGIL_CE_OVERRIDE=caller", NULL};
  char **env = childenv_build(inherit, extra, NULL);
  CHECK(env_has(env, "VIGIL_CE_KEEP_A=a"));
  CHECK_INT(env_count(env, "VIGIL_CE_SECRET"), 0);
  CHECK_INT(env_count(env, "VIGIL_CE_OVERRIDE"), 1);
  CHECK(env_has(env, "VIGIL_CE_OVERRIDE=caller")); /* the last setting wins */
  CHECK(env_has(env, "NEW=1"));
  CHECK_INT(env_count(env, "PATH"), 0); /* not in this list */
  free(env);

  /* The default list: PATH passes, the secret does not. */
  env = childenv_build(NULL, NULL, NULL);
  if (getenv("PATH") != NULL)
    CHECK_INT(env_count(env, "PATH"), 1);
  CHECK_INT(env_count(env, "VIGIL_CE_SECRET"), 0);
  CHECK_INT(env_count(env, "VIGIL_CE_KEEP_A"), 0);
  free(env);

  /* An empty list inherits nothing. */
  const char *const none[] = {NULL};
  env = childenv_build(none, NULL, NULL);
  CHECK(env[0] == NULL);
  free(env);
  unsetenv("VIGIL_CE_SECRET");
  unsetenv("VIGIL_CE_KEEP_A");
  unsetenv("VIGIL_CE_OVERRIDE");
}

/* A libstdbuf path for the build tests: childenv_build takes it as given. */
#define FAKE_STDBUF "/opt/x/libstdbuf.so"

TEST(line_buffering_adds_python_and_the_stdbuf_preload)
{
  const char *const none[] = {NULL};
  ChildLineBuffering lb = {true, FAKE_STDBUF};
  char *extra[] = {"PORT=3000", NULL};
  char **env = childenv_build(none, extra, &lb);
  CHECK(env_has(env, "PORT=3000"));
  CHECK(env_has(env, "PYTHONUNBUFFERED=1"));
  CHECK(env_has(env, "_STDBUF_O=L"));
  CHECK(env_has(env, "LD_PRELOAD=" FAKE_STDBUF));
  /* ASan refuses a preload in front of its runtime unless told not to. */
  CHECK(env_has(env, "ASAN_OPTIONS=verify_asan_link_order=0"));
  /* stderr is left as the program has it. */
  CHECK_INT(env_count(env, "_STDBUF_E"), 0);
  free(env);

  /* No libstdbuf on this machine: Python's variable alone. */
  lb.stdbuf = NULL;
  env = childenv_build(none, extra, &lb);
  CHECK(env_has(env, "PYTHONUNBUFFERED=1"));
  CHECK_INT(env_count(env, "_STDBUF_O"), 0);
  CHECK_INT(env_count(env, "LD_PRELOAD"), 0);
  CHECK_INT(env_count(env, "ASAN_OPTIONS"), 0);
  free(env);

  /* line_buffered false: nothing of the engine's. */
  lb = (ChildLineBuffering){false, FAKE_STDBUF};
  env = childenv_build(none, extra, &lb);
  CHECK(env_has(env, "PORT=3000"));
  CHECK(env[1] == NULL);
  free(env);
}

TEST(line_buffering_yields_to_the_start_and_merges_the_preload)
{
  const char *const none[] = {NULL};
  ChildLineBuffering lb = {true, FAKE_STDBUF};
  /* The start's own values win; its LD_PRELOAD (which only gets here
   * through monitor.env_allow) keeps its libraries after ours. */
  char *extra[] = {"PYTHONUNBUFFERED=", "_STDBUF_O=0", "LD_PRELOAD=/a/one.so /a/two.so",
                   "ASAN_OPTIONS=detect_leaks=0", NULL};
  char **env = childenv_build(none, extra, &lb);
  CHECK(env_has(env, "PYTHONUNBUFFERED="));
  CHECK_INT(env_count(env, "PYTHONUNBUFFERED"), 1);
  CHECK(env_has(env, "_STDBUF_O=0"));
  CHECK_INT(env_count(env, "_STDBUF_O"), 1);
  CHECK(env_has(env, "LD_PRELOAD=" FAKE_STDBUF ":/a/one.so /a/two.so"));
  CHECK_INT(env_count(env, "LD_PRELOAD"), 1);
  CHECK(env_has(env, "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"));
  CHECK_INT(env_count(env, "ASAN_OPTIONS"), 1);
  free(env);

  /* Already preloaded: the value stays as it is, the library once. */
  char *again[] = {"LD_PRELOAD=/a/one.so:" FAKE_STDBUF, NULL};
  env = childenv_build(none, again, &lb);
  CHECK(env_has(env, "LD_PRELOAD=/a/one.so:" FAKE_STDBUF));
  CHECK_INT(env_count(env, "LD_PRELOAD"), 1);
  free(env);
}

TEST(line_buffering_merges_an_inherited_preload_only_when_inherited)
{
  setenv("LD_PRELOAD", "/engine/own.so", 1);
  setenv("PYTHONUNBUFFERED", "0", 1);
  ChildLineBuffering lb = {true, FAKE_STDBUF};
  /* Not in env_inherit: the engine's own preload stays with the engine. */
  const char *const plain[] = {"PYTHONUNBUFFERED", NULL};
  char **env = childenv_build(plain, NULL, &lb);
  CHECK(env_has(env, "LD_PRELOAD=" FAKE_STDBUF));
  /* The engine's additions replace an inherited value. */
  CHECK(env_has(env, "PYTHONUNBUFFERED=1"));
  CHECK_INT(env_count(env, "PYTHONUNBUFFERED"), 1);
  free(env);
  /* Inherited: the child would have had it, so it keeps it after ours. */
  const char *const all[] = {"*", NULL};
  env = childenv_build(all, NULL, &lb);
  CHECK(env_has(env, "LD_PRELOAD=" FAKE_STDBUF ":/engine/own.so"));
  CHECK_INT(env_count(env, "LD_PRELOAD"), 1);
  free(env);
  unsetenv("LD_PRELOAD");
  unsetenv("PYTHONUNBUFFERED");
}

TEST(stdbuf_is_a_file_no_other_user_can_change)
{
  char dir[] = "/tmp/vigil-childenv-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    check_fail(__FILE__, __LINE__, "mkdtemp");
    return;
  }
  char lib[sizeof dir + 32], missing[sizeof dir + 32];
  snprintf(lib, sizeof lib, "%s/libstdbuf.so", dir);
  snprintf(missing, sizeof missing, "%s/missing.so", dir);
  FILE *f = fopen(lib, "w");
  CHECK(f != NULL);
  if (f != NULL)
    fclose(f);
  chmod(dir, 0755);
  chmod(lib, 0644);
  const char *const paths[] = {missing, lib, NULL};
  /* The first that exists and is safe. */
  CHECK_STR(childenv_stdbuf_find(paths), lib);
  /* Writable by others, or in a directory others can write: refused. */
  chmod(lib, 0666);
  CHECK(childenv_stdbuf_find(paths) == NULL);
  chmod(lib, 0644);
  chmod(dir, 0777);
  CHECK(childenv_stdbuf_find(paths) == NULL);
  chmod(dir, 0755);
  /* A directory is not a library. */
  const char *const dirs[] = {dir, NULL};
  CHECK(childenv_stdbuf_find(dirs) == NULL);
  CHECK(childenv_stdbuf_find(NULL) == NULL);
  unlink(lib);
  rmdir(dir);
  /* What this machine has, if anything, is one of the known paths. */
  const char *found = childenv_stdbuf();
  if (found != NULL)
    CHECK(childenv_match_any(childenv_stdbuf_paths, found, strlen(found)) != NULL);
}

int
main(void)
{
  RUN(patterns_match_a_name_or_a_prefix);
  RUN(a_list_entry_is_a_name_or_a_prefix_pattern);
  RUN(the_default_deny_list_holds_the_issues_hooks);
  RUN(the_default_deny_list_refuses_what_chooses_a_program);
  RUN(the_default_allow_list_lets_only_harmless_names_of_denied_families_through);
  RUN(check_refuses_a_denied_name_and_names_entry_and_setting);
  RUN(check_refuses_a_malformed_entry_with_the_name_escaped);
  RUN(drop_removes_what_check_would_deny_and_names_it);
  RUN(build_inherits_only_what_the_list_names_and_extra_wins);
  RUN(line_buffering_adds_python_and_the_stdbuf_preload);
  RUN(line_buffering_yields_to_the_start_and_merges_the_preload);
  RUN(line_buffering_merges_an_inherited_preload_only_when_inherited);
  RUN(stdbuf_is_a_file_no_other_user_can_change);
  return check_summary();
}
