/*
 * Tests of the harnesses' hook answers (hook_harness.h): each event vigil
 * installs has its row, and the answer carrying a text is exactly the form
 * each harness was seen to take (tests/harness/README.md, "Hook output"):
 * Claude Code, Codex and Gemini CLI additionalContext under their own
 * event name, a Stop or AfterAgent block with the text as the reason,
 * Claude Code's Stop wake on stderr with status 2, Cursor's followup
 * message, the OpenCode plugin's plain text; with nothing to give, every
 * answer is nothing with status 0. JSON is ASCII, and the text survives
 * the round trip byte for byte, envelope markers and escapes included.
 */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "cli/hook_harness.h"

/* A text like a notification's: an envelope with escapes and non-ASCII. */
static const char envelope[] =
    "<<<VIGIL OBSERVATION 1b297ad8355fe755aeed2b12b610fa3a BEGIN>>>\n"
    "stream_policy: untrusted_observation\n"
    "[stderr seq=2] ERROR: disk \\\"full\\\" \\x1b caf\xc3\xa9 \"quoted\"\n"
    "<<<VIGIL OBSERVATION 1b297ad8355fe755aeed2b12b610fa3a END>>>";

/* The string at key of o, or "". */
static const char *
text_of(const json_t *o, const char *key)
{
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* The answer of harness's event carrying the envelope. */
static void
answer(const char *harness, const char *event, HookAnswer *a)
{
  const HookEvent *ev = hook_harness_find(harness, event);
  if (ev == NULL) {
    check_fail(__FILE__, __LINE__, "no row for %s %s", harness, event);
    memset(a, 0, sizeof *a);
    return;
  }
  hook_harness_answer(ev, envelope, strlen(envelope), a);
}

/* a's stdout as one JSON object (one line), or NULL after failing. */
static json_t *
answer_json(const HookAnswer *a, int line)
{
  if (a->out.len == 0 || a->out.data[a->out.len - 1] != '\n' ||
      memchr(a->out.data, '\n', a->out.len - 1) != NULL) {
    check_fail(__FILE__, line, "not one line: %s", a->out.data ? a->out.data : "(nothing)");
    return NULL;
  }
  for (size_t i = 0; i < a->out.len; i++)
    if ((unsigned char)a->out.data[i] >= 0x80) {
      check_fail(__FILE__, line, "not ASCII: %s", a->out.data);
      return NULL;
    }
  json_error_t e;
  json_t *o = json_loadb(a->out.data, a->out.len, JSON_REJECT_DUPLICATES, &e);
  if (!json_is_object(o))
    check_fail(__FILE__, line, "not a JSON object (%s): %s", e.text, a->out.data);
  return o;
}

/* The additionalContext answer of a Claude-style event. */
static void
check_context(const char *harness, const char *event, int line)
{
  HookAnswer a;
  answer(harness, event, &a);
  json_t *o = answer_json(&a, line);
  json_t *spec = json_object_get(o, "hookSpecificOutput");
  if (json_object_size(o) != 1 || json_object_size(spec) != 2 ||
      strcmp(text_of(spec, "hookEventName"), event) != 0 ||
      strcmp(text_of(spec, "additionalContext"), envelope) !=
          0)
    check_fail(__FILE__, line, "%s %s: not its additionalContext answer: %s", harness, event,
               a.out.data);
  if (a.status != 0 || a.err.len != 0)
    check_fail(__FILE__, line, "%s %s: status %d, stderr %s", harness, event, a.status,
               a.err.data ? a.err.data : "");
  json_decref(o);
  hook_harness_answer_free(&a);
}

/* The {"decision": "block", "reason": TEXT} answer. */
static void
check_block(const char *harness, const char *event, int line)
{
  HookAnswer a;
  answer(harness, event, &a);
  json_t *o = answer_json(&a, line);
  if (json_object_size(o) != 2 ||
      strcmp(text_of(o, "decision"), "block") != 0 ||
      strcmp(text_of(o, "reason"), envelope) != 0 ||
      a.status != 0 || a.err.len != 0)
    check_fail(__FILE__, line, "%s %s: not a block with the text: %s", harness, event,
               a.out.data);
  json_decref(o);
  hook_harness_answer_free(&a);
}

TEST(test_hook_harness_context_answers)
{
  check_context("claude-code", "SessionStart", __LINE__);
  check_context("claude-code", "UserPromptSubmit", __LINE__);
  check_context("claude-code", "PostToolUse", __LINE__);
  check_context("codex", "SessionStart", __LINE__);
  check_context("codex", "UserPromptSubmit", __LINE__);
  check_context("codex", "PostToolUse", __LINE__);
  check_context("gemini", "SessionStart", __LINE__);
  check_context("gemini", "BeforeAgent", __LINE__);
  check_context("gemini", "AfterTool", __LINE__);
  check_context("qwen", "PostToolUse", __LINE__);
}

TEST(test_hook_harness_turn_end_answers)
{
  check_block("codex", "Stop", __LINE__);
  check_block("gemini", "AfterAgent", __LINE__);
  check_block("qwen", "Stop", __LINE__);
  /* Claude Code's Stop (asyncRewake): the text on stderr, status 2. */
  HookAnswer a;
  answer("claude-code", "Stop", &a);
  CHECK_INT(a.status, 2);
  CHECK_INT(a.out.len, 0);
  CHECK_MEM(a.err.data, a.err.len, "<<<VIGIL OBSERVATION 1b297ad8355fe755aeed2b12b610fa3a BEGIN>>>\n"
                                   "stream_policy: untrusted_observation\n"
                                   "[stderr seq=2] ERROR: disk \\\"full\\\" \\x1b caf\xc3\xa9 "
                                   "\"quoted\"\n"
                                   "<<<VIGIL OBSERVATION 1b297ad8355fe755aeed2b12b610fa3a END>>>\n");
  hook_harness_answer_free(&a);
  /* Cursor's stop: a follow-up message. */
  answer("cursor", "stop", &a);
  json_t *o = answer_json(&a, __LINE__);
  CHECK_INT(json_object_size(o), 1);
  CHECK_STR(json_string_value(json_object_get(o, "followup_message")), envelope);
  CHECK_INT(a.status, 0);
  json_decref(o);
  hook_harness_answer_free(&a);
  /* OpenCode's plugin gets the text itself. */
  answer("opencode", "session.idle", &a);
  CHECK_INT(a.status, 0);
  CHECK_INT(a.err.len, 0);
  CHECK_INT(a.out.len, strlen(envelope) + 1);
  CHECK(memcmp(a.out.data, envelope, strlen(envelope)) == 0);
  hook_harness_answer_free(&a);
}

TEST(test_hook_harness_nothing_to_give_is_nothing)
{
  static const char *const rows[][2] = {
    {"claude-code", "Stop"}, {"claude-code", "PostToolUse"}, {"codex", "Stop"},
    {"gemini", "AfterAgent"}, {"opencode", "tool.execute.after"}, {"cursor", "stop"},
    {"cursor", "beforeSubmitPrompt"}, {"opencode", "session.status"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    HookAnswer a;
    hook_harness_answer(hook_harness_find(rows[i][0], rows[i][1]), "", 0, &a);
    if (a.out.len != 0 || a.err.len != 0 || a.status != 0)
      check_fail(__FILE__, __LINE__, "%s %s answered with nothing to give", rows[i][0],
                 rows[i][1]);
    hook_harness_answer_free(&a);
  }
  /* Where nothing can be said, a text is not said either. */
  HookAnswer a;
  answer("cursor", "beforeSubmitPrompt", &a);
  CHECK(a.out.len == 0 && a.err.len == 0 && a.status == 0);
  hook_harness_answer_free(&a);
}

TEST(test_hook_harness_rows)
{
  /* The contract with vigil setup: these events are installed. */
  static const char *const installed[][2] = {
    {"claude-code", "SessionStart"}, {"claude-code", "UserPromptSubmit"},
    {"claude-code", "PostToolUse"},  {"claude-code", "Stop"},
    {"codex", "SessionStart"},       {"codex", "UserPromptSubmit"},
    {"codex", "PostToolUse"},        {"codex", "Stop"},
    {"gemini", "SessionStart"},      {"gemini", "BeforeAgent"},
    {"gemini", "AfterTool"},         {"gemini", "AfterAgent"},
    {"opencode", "session.idle"},    {"opencode", "tool.execute.after"},
    {"opencode", "session.status"},  {"cursor", "stop"},
    {"cursor", "beforeSubmitPrompt"},
  };
  for (size_t i = 0; i < sizeof installed / sizeof installed[0]; i++)
    if (hook_harness_find(installed[i][0], installed[i][1]) == NULL)
      check_fail(__FILE__, __LINE__, "no row for %s %s", installed[i][0], installed[i][1]);
  /* Only Claude Code's Stop waits unless told: elsewhere a wait would hold
   * the harness. */
  CHECK_INT(hook_harness_find("claude-code", "Stop")->wait_s, HOOK_WAIT_DEFAULT_S);
  CHECK_INT(hook_harness_find("codex", "Stop")->wait_s, 0);
  CHECK_INT(hook_harness_find("opencode", "session.idle")->wait_s, 0);
  /* Spelled as the harness spells it. */
  CHECK(hook_harness_find("claude-code", "stop") == NULL);
  CHECK(hook_harness_find("cursor", "Stop") == NULL);
  CHECK(hook_harness_known("goose"));
  CHECK(hook_harness_find("goose", "Stop") == NULL);
  CHECK(!hook_harness_known("claude"));
}

int
main(void)
{
  RUN(test_hook_harness_context_answers);
  RUN(test_hook_harness_turn_end_answers);
  RUN(test_hook_harness_nothing_to_give_is_nothing);
  RUN(test_hook_harness_rows);
  return check_summary();
}
