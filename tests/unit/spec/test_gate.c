/*
 * Unit tests of the command gate: how a command line splits into an argv,
 * which command lines are refused (and where the message says the problem
 * is), and which programs the allowlist admits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "spec/gate.h"

/* Checks that command splits into exactly the NULL-terminated want list. */
static void
expect_split(const char *command, const char *const *want, const char *file, int line)
{
  Argv a = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  if (gate_split(command, "command", &a, &err) != 0) {
    check_fail(file, line, "split of [%s] failed: %s", command, err.msg);
    return;
  }
  size_t n = 0;
  while (want[n] != NULL)
    n++;
  if (a.argc != n)
    check_fail(file, line, "split of [%s]: argc %zu, want %zu", command, a.argc, n);
  for (size_t i = 0; i < a.argc && i < n; i++) {
    if (strcmp(a.argv[i], want[i]) != 0)
      check_fail(file, line, "split of [%s]: argv[%zu] = [%s], want [%s]", command, i,
                 a.argv[i], want[i]);
  }
  if (a.argv == NULL || a.argv[a.argc] != NULL)
    check_fail(file, line, "split of [%s]: argv is not NULL-terminated", command);
  if (err.set)
    check_fail(file, line, "split of [%s] succeeded but set err: %s", command, err.msg);
  argv_free(&a);
}

#define SPLIT(command, ...)                                                     \
  do {                                                                          \
    static const char *const want_[] = {__VA_ARGS__, NULL};                     \
    expect_split(command, want_, __FILE__, __LINE__);                           \
  } while (0)

/* Checks that command is refused with invalid_params and exactly want_msg,
 * and that out is left empty. */
static void
expect_refused(const char *command, const char *arg_name, const char *want_msg,
               const char *file, int line)
{
  Argv a = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  int rc = gate_split(command, arg_name, &a, &err);
  if (rc != -1) {
    check_fail(file, line, "split of [%s] returned %d, want -1", command, rc);
    argv_free(&a);
    return;
  }
  if (!err.set || err.code != kErrInvalidParams)
    check_fail(file, line, "split of [%s]: err code %d, want invalid_params", command,
               (int)err.code);
  if (strcmp(err.msg, want_msg) != 0)
    check_fail(file, line, "split of [%s]:\n  got:  \"%s\"\n  want: \"%s\"", command, err.msg,
               want_msg);
  if (a.argc != 0 || a.argv != NULL)
    check_fail(file, line, "split of [%s] failed but left %zu args in out", command, a.argc);
}

#define REFUSED(command, msg) expect_refused(command, "command", msg, __FILE__, __LINE__)

/* ---- splitting ---- */

TEST(plain_words)
{
  SPLIT("make", "make");
  SPLIT("make -j4 all", "make", "-j4", "all");
  SPLIT("tail -f /var/log/syslog", "tail", "-f", "/var/log/syslog");
}

TEST(runs_of_spaces_and_tabs_separate_words)
{
  SPLIT("  ls \t -l\t\t/tmp   ", "ls", "-l", "/tmp");
  SPLIT("\tls", "ls");
}

TEST(carriage_return_is_not_whitespace)
{
  SPLIT("echo a\rb", "echo", "a\rb");
}

TEST(single_quotes_keep_everything_literally)
{
  SPLIT("echo 'hello world'", "echo", "hello world");
  SPLIT("echo 'a\\b'", "echo", "a\\b");
  SPLIT("echo '\\'", "echo", "\\");
  SPLIT("echo '\"'", "echo", "\"");
  SPLIT("echo '$HOME'", "echo", "$HOME");
  SPLIT("echo '  two  spaces  '", "echo", "  two  spaces  ");
}

TEST(double_quotes_keep_spaces)
{
  SPLIT("echo \"hello   world\"", "echo", "hello   world");
  SPLIT("echo \"it's\"", "echo", "it's");
  SPLIT("echo \"$HOME\"", "echo", "$HOME");
}

TEST(backslash_in_double_quotes_escapes_only_five_characters)
{
  SPLIT("echo \"a\\\"b\"", "echo", "a\"b");
  SPLIT("echo \"a\\\\b\"", "echo", "a\\b");
  SPLIT("echo \"\\$HOME\"", "echo", "$HOME");
  SPLIT("echo \"\\`\"", "echo", "`");
  /* Any other backslash stays, as a shell keeps it. */
  SPLIT("echo \"a\\nb\"", "echo", "a\\nb");
  SPLIT("echo \"\\'\"", "echo", "\\'");
  SPLIT("echo \"C:\\temp\"", "echo", "C:\\temp");
  /* An escaped backslash does not escape the quote after it. */
  SPLIT("echo \"x\\\\\" y", "echo", "x\\", "y");
}

TEST(backslash_newline_is_a_line_continuation)
{
  SPLIT("echo \"a\\\nb\"", "echo", "ab");
  SPLIT("echo a\\\nb", "echo", "ab");
  SPLIT("make \\\n  all", "make", "all");
  SPLIT("make all \\\n", "make", "all");
}

TEST(backslash_outside_quotes_escapes_any_character)
{
  SPLIT("echo a\\ b", "echo", "a b");
  SPLIT("echo \\'", "echo", "'");
  SPLIT("echo \\\"", "echo", "\"");
  SPLIT("echo \\\\", "echo", "\\");
  SPLIT("echo \\n", "echo", "n");
  SPLIT("echo a\\|b", "echo", "a|b");
  SPLIT("echo \\;", "echo", ";");
  SPLIT("echo \\&", "echo", "&");
  SPLIT("echo \\<\\>", "echo", "<>");
  SPLIT("echo \\`", "echo", "`");
  SPLIT("echo \\$(x)", "echo", "$(x)");
}

TEST(adjacent_parts_join_into_one_word)
{
  SPLIT("echo \"a\"'b'c", "echo", "abc");
  SPLIT("echo pre\"mid dle\"'post fix'", "echo", "premid dlepost fix");
  SPLIT("grep --include='*.c' x", "grep", "--include=*.c", "x");
  SPLIT("echo a\\ \"b\"", "echo", "a b");
}

TEST(empty_quotes_make_an_empty_argument)
{
  SPLIT("echo ''", "echo", "");
  SPLIT("echo \"\"", "echo", "");
  SPLIT("echo '' \"\" x", "echo", "", "", "x");
  SPLIT("echo a''", "echo", "a");
  SPLIT("''", "");
}

TEST(unsupported_shell_syntax_reaches_the_program_literally)
{
  SPLIT("echo $HOME ~ *.c # x", "echo", "$HOME", "~", "*.c", "#", "x");
  SPLIT("echo ${A} (b) {c}", "echo", "${A}", "(b)", "{c}");
  SPLIT("echo $", "echo", "$");
}

TEST(non_ascii_bytes_are_kept)
{
  SPLIT("echo h\xc3\xa9llo '\xe2\x9c\x93'", "echo", "h\xc3\xa9llo", "\xe2\x9c\x93");
}

TEST(operators_inside_quotes_are_literal)
{
  SPLIT("echo 'a | b' \"c ; d\"", "echo", "a | b", "c ; d");
  SPLIT("echo '&&' \"||\" '<' \">\"", "echo", "&&", "||", "<", ">");
  SPLIT("echo 'line1\nline2'", "echo", "line1\nline2");
  SPLIT("echo \"line1\nline2\"", "echo", "line1\nline2");
}

TEST(substitution_inside_single_quotes_is_literal)
{
  SPLIT("echo '$(date)'", "echo", "$(date)");
  SPLIT("echo '`date`'", "echo", "`date`");
}

/* ---- refusals ---- */

TEST(each_operator_is_refused_at_its_position)
{
  REFUSED("make all | tee log",
          "invalid_params: command: shell operator \"|\" at position 9 is not allowed without "
          "shell mode");
  REFUSED("make && ls",
          "invalid_params: command: shell operator \"&&\" at position 5 is not allowed without "
          "shell mode");
  REFUSED("sleep 5 &",
          "invalid_params: command: shell operator \"&\" at position 8 is not allowed without "
          "shell mode");
  REFUSED("a || b",
          "invalid_params: command: shell operator \"||\" at position 2 is not allowed without "
          "shell mode");
  REFUSED("cd x; ls",
          "invalid_params: command: shell operator \";\" at position 4 is not allowed without "
          "shell mode");
  REFUSED("sort < in",
          "invalid_params: command: shell operator \"<\" at position 5 is not allowed without "
          "shell mode");
  REFUSED("cat <<EOF",
          "invalid_params: command: shell operator \"<<\" at position 4 is not allowed without "
          "shell mode");
  REFUSED("ls > out",
          "invalid_params: command: shell operator \">\" at position 3 is not allowed without "
          "shell mode");
  REFUSED("ls >>out",
          "invalid_params: command: shell operator \">>\" at position 3 is not allowed without "
          "shell mode");
  REFUSED("make 2>&1",
          "invalid_params: command: shell operator \">\" at position 6 is not allowed without "
          "shell mode");
  REFUSED("ls\nrm x",
          "invalid_params: command: shell operator \"\\n\" at position 2 is not allowed without "
          "shell mode");
}

TEST(operator_glued_to_a_word_is_refused)
{
  REFUSED("echo a|b",
          "invalid_params: command: shell operator \"|\" at position 6 is not allowed without "
          "shell mode");
  REFUSED("|x",
          "invalid_params: command: shell operator \"|\" at position 0 is not allowed without "
          "shell mode");
}

TEST(command_substitution_is_refused_outside_quotes)
{
  REFUSED("echo $(date)",
          "invalid_params: command: command substitution \"$(\" at position 5 is not allowed "
          "without shell mode");
  REFUSED("echo `date`",
          "invalid_params: command: command substitution \"`\" at position 5 is not allowed "
          "without shell mode");
  REFUSED("echo x$(date)",
          "invalid_params: command: command substitution \"$(\" at position 6 is not allowed "
          "without shell mode");
}

TEST(command_substitution_is_refused_inside_double_quotes)
{
  REFUSED("echo \"now: $(date)\"",
          "invalid_params: command: command substitution \"$(\" inside double quotes at "
          "position 11 is not allowed without shell mode");
  REFUSED("echo \"`date`\"",
          "invalid_params: command: command substitution \"`\" inside double quotes at "
          "position 6 is not allowed without shell mode");
}

TEST(unbalanced_quotes_name_where_they_opened)
{
  REFUSED("echo \"abc",
          "invalid_params: command: unbalanced double quote opened at position 5");
  REFUSED("echo 'abc",
          "invalid_params: command: unbalanced single quote opened at position 5");
  REFUSED("echo 'ok' \"a'b",
          "invalid_params: command: unbalanced double quote opened at position 10");
  REFUSED("echo \"ok\" 'a\"b",
          "invalid_params: command: unbalanced single quote opened at position 10");
  /* An escaped closing quote does not close. */
  REFUSED("echo \"abc\\\"",
          "invalid_params: command: unbalanced double quote opened at position 5");
  REFUSED("'",
          "invalid_params: command: unbalanced single quote opened at position 0");
}

TEST(first_problem_from_the_left_is_reported)
{
  /* The pipe is inside the unclosed quote, so the quote is the problem. */
  REFUSED("echo \"a | b",
          "invalid_params: command: unbalanced double quote opened at position 5");
  REFUSED("echo | \"a",
          "invalid_params: command: shell operator \"|\" at position 5 is not allowed without "
          "shell mode");
}

TEST(trailing_backslash_is_refused)
{
  REFUSED("echo abc\\",
          "invalid_params: command: trailing backslash at position 8 escapes nothing");
  REFUSED("\\", "invalid_params: command: trailing backslash at position 0 escapes nothing");
  /* An escaped backslash at the end is fine. */
  SPLIT("echo abc\\\\", "echo", "abc\\");
}

TEST(empty_command_is_refused)
{
  REFUSED("", "invalid_params: command: empty command");
  REFUSED("   \t  ", "invalid_params: command: empty command");
  REFUSED("\\\n", "invalid_params: command: empty command");
  REFUSED(NULL, "invalid_params: command: empty command");
}

TEST(message_names_the_argument_given)
{
  expect_refused("a | b", "argv_line",
                 "invalid_params: argv_line: shell operator \"|\" at position 2 is not allowed "
                 "without shell mode",
                 __FILE__, __LINE__);
  expect_refused("", "params.cmd", "invalid_params: params.cmd: empty command", __FILE__,
                 __LINE__);
}

TEST(first_error_already_set_is_kept)
{
  VigilError err = VIGIL_ERROR_INIT;
  error_set(&err, kErrNotFound, "earlier");
  Argv a = ARGV_INIT;
  CHECK_INT(gate_split("a | b", "command", &a, &err), -1);
  CHECK_INT(err.code, kErrNotFound);
  CHECK_STR(err.msg, "not_found: earlier");
  CHECK_INT(a.argc, 0);
}

TEST(split_leaves_out_empty_on_error)
{
  Argv a = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  /* A word is already built when the quote turns out unbalanced. */
  CHECK_INT(gate_split("one two 'three", "command", &a, &err), -1);
  CHECK_INT(a.argc, 0);
  CHECK(a.argv == NULL);
}

/* ---- Argv helpers ---- */

TEST(argv_from_copies_counted_and_null_terminated_lists)
{
  const char *items[] = {"ls", "-l", NULL, "never"};
  Argv a = ARGV_INIT;
  argv_from(&a, items, 2);
  CHECK_INT(a.argc, 2);
  CHECK_STR(a.argv[0], "ls");
  CHECK_STR(a.argv[1], "-l");
  CHECK(a.argv[2] == NULL);
  CHECK(a.argv[0] != items[0]);
  argv_free(&a);

  argv_from(&a, items, SIZE_MAX);
  CHECK_INT(a.argc, 2);
  CHECK(a.argv[2] == NULL);
  argv_free(&a);

  argv_from(&a, items, 1);
  CHECK_INT(a.argc, 1);
  CHECK_STR(a.argv[0], "ls");
  argv_free(&a);

  argv_from(&a, NULL, 0);
  CHECK_INT(a.argc, 0);
  argv_free(&a);
}

TEST(argv_push_copies_and_keeps_null_terminator)
{
  Argv a = ARGV_INIT;
  char buf[8];
  for (int i = 0; i < 100; i++) {
    snprintf(buf, sizeof buf, "a%d", i);
    argv_push(&a, buf);
    CHECK(a.argv[a.argc] == NULL);
  }
  CHECK_INT(a.argc, 100);
  CHECK_STR(a.argv[0], "a0");
  CHECK_STR(a.argv[99], "a99");
  argv_push(&a, "");
  CHECK_STR(a.argv[100], "");
  argv_free(&a);
  CHECK_INT(a.argc, 0);
  CHECK(a.argv == NULL);
  argv_free(&a); /* twice is harmless */
}

/* ---- allowlist ---- */

/* Builds an allowlist from a NULL-terminated list. */
static Allowlist
make_allowlist(const char *const *entries)
{
  Allowlist al = ALLOWLIST_INIT;
  for (size_t i = 0; entries[i] != NULL; i++)
    allowlist_add(&al, entries[i]);
  return al;
}

TEST(bare_entry_matches_bare_name_exactly)
{
  static const char *const entries[] = {"make", "ls", NULL};
  Allowlist al = make_allowlist(entries);
  CHECK(gate_allows(&al, "make"));
  CHECK(gate_allows(&al, "ls"));
  CHECK(!gate_allows(&al, "mak"));
  CHECK(!gate_allows(&al, "makefoo"));
  CHECK(!gate_allows(&al, "Make"));
  CHECK(!gate_allows(&al, "rm"));
  CHECK(!gate_allows(&al, ""));
  CHECK(!gate_allows(&al, NULL));
  allowlist_free(&al);
}

TEST(path_argv0_never_matches_bare_entry)
{
  static const char *const entries[] = {"ls", NULL};
  Allowlist al = make_allowlist(entries);
  CHECK(!gate_allows(&al, "/bin/ls"));
  CHECK(!gate_allows(&al, "./ls"));
  CHECK(!gate_allows(&al, "bin/ls"));
  CHECK(!gate_allows(&al, "/ls"));
  allowlist_free(&al);
}

TEST(path_entry_matches_exactly_that_path)
{
  static const char *const entries[] = {"/usr/bin/make", "./build.sh", NULL};
  Allowlist al = make_allowlist(entries);
  CHECK(gate_allows(&al, "/usr/bin/make"));
  CHECK(gate_allows(&al, "./build.sh"));
  /* Not the bare name, which PATH could resolve to anything. */
  CHECK(!gate_allows(&al, "make"));
  CHECK(!gate_allows(&al, "build.sh"));
  /* No normalisation: another spelling of the path is another path. */
  CHECK(!gate_allows(&al, "/usr/bin/../bin/make"));
  CHECK(!gate_allows(&al, "//usr/bin/make"));
  CHECK(!gate_allows(&al, "/usr/bin/make/"));
  CHECK(!gate_allows(&al, "build.sh/"));
  CHECK(!gate_allows(&al, "/usr/local/bin/make"));
  allowlist_free(&al);
}

TEST(empty_allowlist_denies_everything)
{
  Allowlist al = ALLOWLIST_INIT;
  CHECK(!gate_allows(&al, "ls"));
  CHECK(!gate_allows(&al, "/bin/ls"));

  Argv a = ARGV_INIT;
  argv_push(&a, "ls");
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(gate_check(&al, &a, &err), -1);
  CHECK_INT(err.code, kErrDenied);
  CHECK_STR(err.msg, "denied: command: monitor.allowed_commands is empty, so every command "
                     "is denied (fail closed)");
  argv_free(&a);
}

TEST(gate_check_allows_a_listed_program)
{
  static const char *const entries[] = {"make", "/usr/bin/tail", NULL};
  Allowlist al = make_allowlist(entries);
  Argv a = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(gate_split("make -j4 all", "command", &a, &err), 0);
  CHECK_INT(gate_check(&al, &a, &err), 0);
  CHECK(!err.set);
  argv_free(&a);
  CHECK_INT(gate_split("/usr/bin/tail -f log", "command", &a, &err), 0);
  CHECK_INT(gate_check(&al, &a, &err), 0);
  CHECK(!err.set);
  argv_free(&a);
  allowlist_free(&al);
}

/* The message gate_check gives for argv0 under the given list, or "(allowed)". */
static const char *
check_message(const char *const *entries, const char *argv0, char *buf, size_t cap)
{
  Allowlist al = make_allowlist(entries);
  Argv a = ARGV_INIT;
  argv_push(&a, argv0);
  argv_push(&a, "arg");
  VigilError err = VIGIL_ERROR_INIT;
  int rc = gate_check(&al, &a, &err);
  if (rc == 0)
    snprintf(buf, cap, "(allowed)");
  else
    snprintf(buf, cap, "%s%s", err.code == kErrDenied ? "" : "(wrong code) ", err.msg);
  argv_free(&a);
  allowlist_free(&al);
  return buf;
}

TEST(gate_check_names_the_denied_program)
{
  static const char *const entries[] = {"make", "ls", NULL};
  char buf[VIGIL_ERROR_MSG_MAX + 32];
  CHECK_STR(check_message(entries, "rm", buf, sizeof buf),
            "denied: command: program \"rm\" is not in monitor.allowed_commands");
  CHECK_STR(check_message(entries, "/usr/bin/rm", buf, sizeof buf),
            "denied: command: program \"/usr/bin/rm\" is not in monitor.allowed_commands");
}

TEST(gate_check_says_which_form_is_listed)
{
  static const char *const bare[] = {"rm", NULL};
  static const char *const path[] = {"/usr/bin/make", NULL};
  char buf[VIGIL_ERROR_MSG_MAX + 32];
  CHECK_STR(check_message(bare, "/bin/rm", buf, sizeof buf),
            "denied: command: program \"/bin/rm\" is not in monitor.allowed_commands (the "
            "entry \"rm\" allows only that bare name, found through PATH)");
  CHECK_STR(check_message(path, "make", buf, sizeof buf),
            "denied: command: program \"make\" is not in monitor.allowed_commands (only the "
            "path \"/usr/bin/make\" is listed; give that path as the program)");
  /* A different path to the same name is not given the hint: it is not a
   * form mismatch, just an unlisted path. */
  CHECK_STR(check_message(path, "/bin/make", buf, sizeof buf),
            "denied: command: program \"/bin/make\" is not in monitor.allowed_commands");
}

TEST(gate_check_escapes_and_bounds_the_program_name)
{
  static const char *const entries[] = {"ls", NULL};
  char buf[VIGIL_ERROR_MSG_MAX + 32];
  CHECK_STR(check_message(entries, "a\"b\\c\nd\x01", buf, sizeof buf),
            "denied: command: program \"a\\\"b\\\\c\\nd\\x01\" is not in "
            "monitor.allowed_commands");

  char longname[600];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  check_message(entries, longname, buf, sizeof buf);
  CHECK_CONTAINS(buf, "xxx...\" is not in monitor.allowed_commands");
  CHECK(strlen(buf) < 300);
}

TEST(gate_check_refuses_empty_program)
{
  static const char *const entries[] = {"ls", NULL};
  char buf[VIGIL_ERROR_MSG_MAX + 32];
  CHECK_STR(check_message(entries, "", buf, sizeof buf),
            "denied: command: the program name (argv[0]) is empty");

  Allowlist al = make_allowlist(entries);
  Argv empty = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(gate_check(&al, &empty, &err), -1);
  CHECK_INT(err.code, kErrDenied);
  CHECK_STR(err.msg, "denied: command: no program given (argv is empty)");
  allowlist_free(&al);
}

TEST(allowlist_keeps_its_own_copies)
{
  char entry[] = "make";
  Allowlist al = ALLOWLIST_INIT;
  allowlist_add(&al, entry);
  entry[0] = 'f';
  CHECK(gate_allows(&al, "make"));
  CHECK(!gate_allows(&al, "fake"));
  allowlist_free(&al);
  CHECK_INT(al.n, 0);
  CHECK(!gate_allows(&al, "make"));
}

TEST(shell_mode_passes_the_command_whole_to_sh)
{
  Argv a = ARGV_INIT;
  gate_shell_argv("make 2>&1 | tee log; echo $(date)", &a);
  CHECK_INT(a.argc, 3);
  CHECK_STR(a.argv[0], "/bin/sh");
  CHECK_STR(a.argv[1], "-c");
  CHECK_STR(a.argv[2], "make 2>&1 | tee log; echo $(date)");
  CHECK(a.argv[3] == NULL);
  argv_free(&a);
}

int
main(void)
{
  RUN(plain_words);
  RUN(runs_of_spaces_and_tabs_separate_words);
  RUN(carriage_return_is_not_whitespace);
  RUN(single_quotes_keep_everything_literally);
  RUN(double_quotes_keep_spaces);
  RUN(backslash_in_double_quotes_escapes_only_five_characters);
  RUN(backslash_newline_is_a_line_continuation);
  RUN(backslash_outside_quotes_escapes_any_character);
  RUN(adjacent_parts_join_into_one_word);
  RUN(empty_quotes_make_an_empty_argument);
  RUN(unsupported_shell_syntax_reaches_the_program_literally);
  RUN(non_ascii_bytes_are_kept);
  RUN(operators_inside_quotes_are_literal);
  RUN(substitution_inside_single_quotes_is_literal);
  RUN(each_operator_is_refused_at_its_position);
  RUN(operator_glued_to_a_word_is_refused);
  RUN(command_substitution_is_refused_outside_quotes);
  RUN(command_substitution_is_refused_inside_double_quotes);
  RUN(unbalanced_quotes_name_where_they_opened);
  RUN(first_problem_from_the_left_is_reported);
  RUN(trailing_backslash_is_refused);
  RUN(empty_command_is_refused);
  RUN(message_names_the_argument_given);
  RUN(first_error_already_set_is_kept);
  RUN(split_leaves_out_empty_on_error);
  RUN(argv_from_copies_counted_and_null_terminated_lists);
  RUN(argv_push_copies_and_keeps_null_terminator);
  RUN(bare_entry_matches_bare_name_exactly);
  RUN(path_argv0_never_matches_bare_entry);
  RUN(path_entry_matches_exactly_that_path);
  RUN(empty_allowlist_denies_everything);
  RUN(gate_check_allows_a_listed_program);
  RUN(gate_check_names_the_denied_program);
  RUN(gate_check_says_which_form_is_listed);
  RUN(gate_check_escapes_and_bounds_the_program_name);
  RUN(gate_check_refuses_empty_program);
  RUN(allowlist_keeps_its_own_copies);
  RUN(shell_mode_passes_the_command_whole_to_sh);
  return check_summary();
}
