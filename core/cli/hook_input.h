/*
 * What a harness hands a hook on stdin (the MCP contract's `vigil hook
 * HARNESS EVENT`, built next), read and checked before anything acts on it:
 * one JSON object, read with a bound on its size and on the wait, parsed by
 * jansson (duplicate keys refused, so no field has two values), and each
 * field vigil uses checked for its type and form. A field vigil does not
 * use is ignored, so a harness that adds fields breaks nothing.
 *
 * The fields, by their Claude Code names (Codex and Gemini CLI use the same
 * ones; Cursor's are given as aliases):
 *
 *   session_id       required (Cursor: conversation_id); 1..HOOK_ID_MAX
 *                    characters of [A-Za-z0-9._:-] (the harnesses send
 *                    UUIDs), since it will name vigil's state
 *   hook_event_name  required; 1..HOOK_NAME_MAX of [A-Za-z0-9_.] (the
 *                    dot for OpenCode's events, which vigil's plugin
 *                    passes on: "session.idle")
 *   cwd              an absolute path (Cursor: workspace_roots[0])
 *   transcript_path  an absolute path
 *   tool_name        1..HOOK_TOOL_NAME_MAX bytes of text (no control
 *                    characters)
 *   tool_input       an object (Cursor: its JSON text, a string)
 *   prompt           at most HOOK_PROMPT_MAX bytes
 *   source           SessionStart's: 1..HOOK_NAME_MAX of [A-Za-z0-9_]
 *   status           Cursor's stop: 1..HOOK_NAME_MAX of [A-Za-z0-9_]
 *   stop_hook_active a boolean
 *   cursor_version   Cursor's (it runs Claude Code's hooks too, and a hook
 *                    must know it is not Claude Code then): 1..256 bytes
 *                    of text
 *
 * A path is at most HOOK_PATH_MAX - 1 bytes and holds no control
 * character. Every refusal names the field, the rule and the value (cut and
 * escaped), and starts "hook input: ".
 *
 * Hostile input is the harness's business only in part: a prompt or a tool
 * input comes from the model or the user, so nothing here trusts them.
 */
#ifndef VIGIL_HOOK_INPUT_H
#define VIGIL_HOOK_INPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The most read from stdin: a PostToolUse carries the tool's whole input
 * and response (a file written, a command's output). */
#define HOOK_INPUT_MAX_BYTES ((size_t)8 << 20)
/* How long stdin may take to end: harnesses write the JSON and close. */
#define HOOK_INPUT_WAIT_MS 10000
#define HOOK_ID_MAX 128
#define HOOK_NAME_MAX 64
#define HOOK_TOOL_NAME_MAX 256
#define HOOK_PATH_MAX 4096
#define HOOK_PROMPT_MAX ((size_t)1 << 20)
/* The longest error message. */
#define HOOK_INPUT_ERROR_MAX 512

typedef struct {
  json_t *root;               /* the whole input (owned): the fields point into it */
  const char *session_id;     /* always set after a success */
  const char *event;          /* hook_event_name, always set after a success */
  const char *cwd;            /* or NULL when absent */
  const char *transcript_path; /* or NULL */
  const char *tool_name;      /* or NULL */
  const json_t *tool_input;   /* an object or a string, or NULL */
  const char *prompt;         /* or NULL */
  const char *source;         /* or NULL */
  const char *status;         /* or NULL */
  const char *cursor_version; /* or NULL: set when Cursor runs the hook */
  int stop_hook_active;       /* 1, 0, or -1 when absent */
  size_t bytes;               /* the input's size */
} HookInput;

/* Parses and checks len bytes of JSON into in. Returns 0, or -1 with err (a
 * NUL-terminated message of at most cap bytes) saying what is wrong; in then
 * holds nothing (and needs no hook_input_free). */
int hook_input_parse(const char *data, size_t len, HookInput *in, char *err, size_t cap);

/* Reads fd to its end, at most max bytes and for at most timeout_ms
 * (monotonic), then parses as hook_input_parse. More than max bytes, no end
 * in time, a read error or nothing at all is refused, saying which. */
int hook_input_read(int fd, size_t max, int64_t timeout_ms, HookInput *in, char *err,
                    size_t cap);

void hook_input_free(HookInput *in);

#endif
