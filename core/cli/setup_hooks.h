/*
 * The pieces every JSON harness shares in `vigil setup`: opening a JSON
 * file of the plan, the MCP server entry, the hooks (vigil's recognised
 * by their command, `<path>/vigil hook HARNESS ...`, whatever path: a vigil
 * that moved is replaced, not added twice) and a list entry (Claude Code's
 * permissions.allow).
 *
 * Two shapes of hooks exist: grouped, hooks.EVENT = [{matcher?, hooks:
 * [{type: "command", command, ...}]}] (Claude Code, Codex, Gemini CLI), and
 * flat, hooks.EVENT = [{command, ...}] (Cursor). A group that holds only
 * vigil's handler is vigil's; a handler of vigil's in a group of the
 * person's is taken out of it on its own.
 */
#ifndef VIGIL_SETUP_HOOKS_H
#define VIGIL_SETUP_HOOKS_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/setup_harness.h"
#include "cli/setup_json.h"
#include "cli/setup_plan.h"

/* A JSON file being edited in a plan. */
typedef struct {
  SetupChange *change;
  SetupJson json;
} SetupJsonFile;

/* Opens path in the plan and parses it. Returns 0, or -1 with err set. */
int setup_jf_open(SetupJsonFile *f, SetupPlan *plan, const char *path, const SetupContext *ctx,
                  StrBuf *err);

/* Ends the edit: the change gets the new text, or, when removing left an
 * empty object ({}, or only keys in `own`, e.g. Cursor's "version") in a
 * file that is not a link, the file goes. */
void setup_jf_close(SetupJsonFile *f, const SetupContext *ctx, const char *const *own);

/* Puts (or, removing, drops) the member at keys[0..n-1] to value (stolen);
 * says so on the change as "added|updated|removed <dotted keys>". Returns
 * 0, or -1 with err set. */
int setup_jf_entry(SetupJsonFile *f, const SetupContext *ctx, const char *const *keys, size_t n,
                   json_t *value, StrBuf *err);

/* The command line of vigil's hook for event: "<vigil> hook HARNESS EVENT"
 * (vigil quoted for a shell when it needs to be), setup's options before
 * "hook". */
void setup_hook_command(StrBuf *out, const SetupContext *ctx, const char *harness,
                        const char *event);

/* The MCP server's arguments: setup's options (ctx->options), then "mcp". */
json_t *setup_mcp_args(const SetupContext *ctx);

/* Whether command runs a vigil's hook for harness: its first shell word
 * names a file called vigil, then vigil's own options (--nats URL, ...),
 * then "hook" and harness. */
bool setup_is_vigil_hook(const char *command, const char *harness);

/* Adds (or removes) vigil's hook for each of events[0..n-1] under hooks in
 * f: grouped (make(event) gives the whole group, stolen) or flat (make
 * gives the handler). Says what changed on the change. Returns 0, or -1
 * with err set. */
int setup_jf_hooks(SetupJsonFile *f, const SetupContext *ctx, const char *harness,
                   const char *const *events, size_t n, bool grouped,
                   json_t *(*make)(const SetupContext *ctx, const char *event), StrBuf *err);

/* Adds (or removes) the string s in the array at keys[0..n-1]. */
int setup_jf_list_item(SetupJsonFile *f, const SetupContext *ctx, const char *const *keys,
                       size_t n, const char *s, StrBuf *err);

#endif
