/*
 * The harnesses' hook events and the form of their answers (see
 * hook_harness.h).
 */
#include "cli/hook_harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Every event vigil answers, grouped by harness, in the order the harness
 * meets them. */
static const HookEvent hook_harness_table[] = {
  /* Claude Code: Stop runs with "asyncRewake": true, in the background
   * after the turn; its exit status 2 wakes the idle agent with its text. */
  {"claude-code", "SessionStart", kHookSessionStart, kHookAnswerContext, 0},
  {"claude-code", "UserPromptSubmit", kHookTurnStart, kHookAnswerContext, 0},
  {"claude-code", "PostToolUse", kHookAfterTool, kHookAnswerContext, 0},
  {"claude-code", "Stop", kHookTurnEnd, kHookAnswerRewake, HOOK_WAIT_DEFAULT_S},
  /* Codex CLI: a Stop that waited would hold the harness; it blocks the
   * end of the turn when something is there now. */
  {"codex", "SessionStart", kHookSessionStart, kHookAnswerContext, 0},
  {"codex", "UserPromptSubmit", kHookTurnStart, kHookAnswerContext, 0},
  {"codex", "PostToolUse", kHookAfterTool, kHookAnswerContext, 0},
  {"codex", "Stop", kHookTurnEnd, kHookAnswerBlock, 0},
  /* Gemini CLI: no way to wake an idle agent; AfterAgent continues a turn
   * that is ending. */
  {"gemini", "SessionStart", kHookSessionStart, kHookAnswerContext, 0},
  {"gemini", "BeforeAgent", kHookTurnStart, kHookAnswerContext, 0},
  {"gemini", "AfterTool", kHookAfterTool, kHookAnswerContext, 0},
  {"gemini", "AfterAgent", kHookTurnEnd, kHookAnswerBlock, 0},
  /* OpenCode: vigil's plugin (plugins/harness/opencode.js) runs these and
   * hands the text on (client.session.promptAsync on session.idle, which
   * it runs with --wait; appended to the tool's output after a tool). */
  {"opencode", "session.status", kHookStatus, kHookAnswerNone, 0},
  {"opencode", "tool.execute.after", kHookAfterTool, kHookAnswerText, 0},
  {"opencode", "session.idle", kHookTurnEnd, kHookAnswerText, 0},
  /* Cursor: a prompt's start can add nothing; stop's followup_message is
   * sent as the next user message (Cursor bounds the loop: loop_limit). */
  {"cursor", "beforeSubmitPrompt", kHookBusyOnly, kHookAnswerNone, 0},
  {"cursor", "stop", kHookTurnEnd, kHookAnswerFollowup, 0},
  /* Qwen Code: Claude Code's events and answers, with a Stop that blocks
   * (not tried with the real CLI). */
  {"qwen", "SessionStart", kHookSessionStart, kHookAnswerContext, 0},
  {"qwen", "UserPromptSubmit", kHookTurnStart, kHookAnswerContext, 0},
  {"qwen", "PostToolUse", kHookAfterTool, kHookAnswerContext, 0},
  {"qwen", "Stop", kHookTurnEnd, kHookAnswerBlock, 0},
};

#define HOOK_HARNESS_ROWS (sizeof hook_harness_table / sizeof hook_harness_table[0])

/* Goose has no hooks: its MCP extension is the whole way in. */
static const char *const hook_harness_names_list[] = {"claude-code", "codex", "gemini",
                                                      "opencode",    "cursor", "qwen",
                                                      "goose",       NULL};

int
hook_harness_known(const char *harness)
{
  for (size_t i = 0; hook_harness_names_list[i]; i++)
    if (strcmp(harness, hook_harness_names_list[i]) == 0)
      return 1;
  return 0;
}

const HookEvent *
hook_harness_find(const char *harness, const char *event)
{
  for (size_t i = 0; i < HOOK_HARNESS_ROWS; i++)
    if (strcmp(hook_harness_table[i].harness, harness) == 0 &&
        strcmp(hook_harness_table[i].event, event) == 0)
      return &hook_harness_table[i];
  return NULL;
}

void
hook_harness_events(FILE *f, const char *harness)
{
  const char *sep = "";
  for (size_t i = 0; i < HOOK_HARNESS_ROWS; i++) {
    if (strcmp(hook_harness_table[i].harness, harness) != 0)
      continue;
    fprintf(f, "%s%s", sep, hook_harness_table[i].event);
    sep = ", ";
  }
  if (sep[0] == '\0')
    fputs("none (Goose has no hooks: its model learns of notifications with vigil's tool "
          "results and notifications_read)",
          f);
}

void
hook_harness_names(FILE *f)
{
  for (size_t i = 0; hook_harness_names_list[i]; i++)
    fprintf(f, "%s%s", i ? ", " : "", hook_harness_names_list[i]);
}

/* Appends the JSON object o (stolen) to out as one line. */
static void
hook_harness_json(StrBuf *out, json_t *o)
{
  /* ASCII only: every harness reads it, whatever its decoder. */
  char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  json_decref(o);
  if (s == NULL) {
    fprintf(stderr, "vigil hook: out of memory\n");
    abort();
  }
  strbuf_puts(out, s);
  strbuf_putc(out, '\n');
  free(s);
}

void
hook_harness_answer(const HookEvent *ev, const char *text, size_t len, HookAnswer *a)
{
  memset(a, 0, sizeof *a);
  if (len == 0)
    return;
  /* The caller's text is valid UTF-8 (hook_harness.h); one that is not is
   * never half-written: the answer is then empty. */
  json_t *t = json_stringn(text, len);
  if (t == NULL)
    return;
  switch (ev->form) {
  case kHookAnswerContext:
    hook_harness_json(&a->out, json_pack("{s:{s:s,s:o}}", "hookSpecificOutput", "hookEventName",
                                         ev->event, "additionalContext", t));
    return;
  case kHookAnswerBlock:
    hook_harness_json(&a->out, json_pack("{s:s,s:o}", "decision", "block", "reason", t));
    return;
  case kHookAnswerFollowup:
    hook_harness_json(&a->out, json_pack("{s:o}", "followup_message", t));
    return;
  case kHookAnswerRewake:
    strbuf_append(&a->err, text, len);
    strbuf_putc(&a->err, '\n');
    a->status = 2;
    break;
  case kHookAnswerText:
    strbuf_append(&a->out, text, len);
    strbuf_putc(&a->out, '\n');
    break;
  case kHookAnswerNone: break;
  }
  json_decref(t);
}

void
hook_harness_answer_free(HookAnswer *a)
{
  strbuf_free(&a->out);
  strbuf_free(&a->err);
}
