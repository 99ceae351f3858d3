/*
 * The harnesses `vigil hook HARNESS EVENT` answers (docs/mcp.md, "Wake
 * paths"): one table of every event vigil installs a hook for, each with
 * the moment of an agent's life it marks and the form its answer takes in
 * that harness, and the writer of those answers. One row per event, so
 * what each harness does is read in one place, next to its format.
 *
 * The moments, and what the hook does at each (cli_hook.c):
 * - session start: the session goes idle (no turn runs yet), then what is
 *   above the model cursor (what arrived while the harness was closed);
 * - turn start: busy, then what is above the cursor;
 * - after a tool: what is above the cursor (live_safe ones, which go while
 *   busy);
 * - turn end: idle (which releases the idle ones held during the turn),
 *   then what is above the cursor, waiting for it where the row says so;
 * - status (OpenCode's session.status): busy or idle, from the input;
 * - busy only (Cursor's beforeSubmitPrompt, which can add nothing).
 *
 * The answers, as seen working with each harness (tests/harness/README.md):
 * - context: {"hookSpecificOutput": {"hookEventName": EVENT,
 *   "additionalContext": TEXT}} on stdout (Claude Code, Codex, Gemini CLI);
 * - block: {"decision": "block", "reason": TEXT} on stdout, which continues
 *   a turn that is ending with TEXT (Codex Stop, Gemini CLI AfterAgent);
 * - rewake: TEXT on stderr and exit status 2, which wakes an idle Claude
 *   Code through a Stop hook with "asyncRewake": true;
 * - followup: {"followup_message": TEXT} (Cursor's stop);
 * - text: TEXT on stdout, for vigil's OpenCode plugin to hand on;
 * - none: nothing (the event can carry nothing to the model; nothing is
 *   taken from the cursor there).
 * With nothing to give, every answer is nothing on stdout and status 0.
 */
#ifndef VIGIL_HOOK_HARNESS_H
#define VIGIL_HOOK_HARNESS_H

#include <stdint.h>
#include <stdio.h>

#include "base/strbuf.h"

/* When a turn end waits by default (Claude Code's Stop with asyncRewake):
 * an hour, so its hook entry's "timeout" is 3660 (vigil setup writes it). */
#define HOOK_WAIT_DEFAULT_S 3600
/* The longest --wait. */
#define HOOK_WAIT_MAX_S 86400

typedef enum {
  kHookSessionStart,
  kHookTurnStart,
  kHookAfterTool,
  kHookTurnEnd,
  kHookStatus,
  kHookBusyOnly,
} HookMoment;

typedef enum {
  kHookAnswerContext,
  kHookAnswerBlock,
  kHookAnswerRewake,
  kHookAnswerFollowup,
  kHookAnswerText,
  kHookAnswerNone,
} HookAnswerForm;

typedef struct {
  const char *harness; /* as `vigil hook` names it: "claude-code" */
  const char *event;   /* as the harness spells it: "Stop" */
  HookMoment moment;
  HookAnswerForm form;
  uint32_t wait_s;     /* how long it waits when nothing is above the
                          cursor, unless --wait says otherwise (0: no wait) */
} HookEvent;

/* Whether harness is one `vigil hook` knows (goose included, which has no
 * events). */
int hook_harness_known(const char *harness);

/* The row of harness's event, or NULL. */
const HookEvent *hook_harness_find(const char *harness, const char *event);

/* Writes to f the events harness has ("SessionStart, UserPromptSubmit,
 * PostToolUse, Stop"), or why it has none. */
void hook_harness_events(FILE *f, const char *harness);

/* Writes to f every harness name, comma-separated. */
void hook_harness_names(FILE *f);

/* An answer: what goes to stdout and to stderr, and the exit status. */
typedef struct {
  StrBuf out;
  StrBuf err;
  int status;
} HookAnswer;

/* Fills a (zeroed first) with ev's answer carrying text[0..len) (valid
 * UTF-8: the envelopes, the hook's own words); len 0: the empty answer
 * (nothing, status 0). Free with hook_harness_answer_free. */
void hook_harness_answer(const HookEvent *ev, const char *text, size_t len, HookAnswer *a);

void hook_harness_answer_free(HookAnswer *a);

#endif
