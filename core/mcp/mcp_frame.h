/*
 * What a model reads of a process through `vigil mcp` (docs/mcp.md, "What a
 * model reads of a process"): the one place where text of process origin is
 * framed and escaped on its way into a tool result or a push.
 *
 * - In a tool result's text, process text stands inside one frame per
 *   result (obsframe.h: BEGIN and END markers with a nonce drawn once the
 *   frame's content is complete, the untrusted-observation declaration),
 *   escaped like the envelope (textfmt_escape), each line behind a prefix
 *   vigil wrote ("[stdout seq=4] ", "[stdout_summary] ", "[event 3 line] "),
 *   so a marker the process prints is just another prefixed line.
 * - In structuredContent, in notifications/message's data and in
 *   structuredContent.notifications, the same strings are escaped the same
 *   way but not framed: they are data a program reads by key (a frame
 *   around a value would make it another value), and a harness that shows
 *   them to a model shows them as JSON, where a string cannot leave its
 *   quotes; the result's text item beside them holds them framed.
 * - Nothing in a text item is a raw control, invisible or private use
 *   character, whatever its origin (mcp_frame_clean).
 */
#ifndef VIGIL_MCP_FRAME_H
#define VIGIL_MCP_FRAME_H

#include <jansson.h>

#include "base/strbuf.h"

/* A frame being filled: the lines so far. MCP_FRAME_INIT, then lines, then
 * mcp_frame_finish. */
typedef struct {
  StrBuf body;
} McpFrame;

#define MCP_FRAME_INIT {STRBUF_INIT}

/* Adds raw process text (len bytes, any bytes): each line of it (split at
 * newlines; a final newline adds no empty line) as prefix and the line
 * escaped with textfmt_escape. prefix is vigil's own words ("" for none). */
void mcp_frame_text(McpFrame *f, const char *prefix, const char *text, size_t len);

/* Adds text that is already escaped (by the engine, or by mcp_frame_escape)
 * or is vigil's own: each line as prefix and the line with any raw control
 * or invisible character still escaped (textfmt_sanitize), backslashes kept,
 * so escaping twice never doubles them. */
void mcp_frame_escaped(McpFrame *f, const char *prefix, const char *text, size_t len);

/* Appends the frame to out: the BEGIN marker with a fresh nonce, the
 * declaration, the lines, the END marker; nothing when no line was added.
 * Frees f's lines. */
void mcp_frame_finish(McpFrame *f, StrBuf *out);

/* Escapes in place the strings of process origin in a tool's structured
 * result, found by key (docs/mcp.md lists them): a line's `text`,
 * `last_line`, an event's `line` and `reason` whole (textfmt_escape); the
 * multi-line `stdout`, `stderr`, `stdout_summary`, `stderr_summary`,
 * `output` and `output_preview` line by line, their newlines kept; any other
 * `text` (an envelope, an event log, rendered by the engine) through
 * textfmt_sanitize, line by line. A `notifications` list gets copies made
 * by mcp_frame_notification (its maps may be shared with the adapter's
 * queue); `start` (the caller's own start request) is left as it is. */
void mcp_frame_escape(json_t *structured);

/* A notification (borrowed) as a model may read it: a copy with its
 * process text escaped as mcp_frame_escape does, its envelope unchanged
 * (the engine escaped and framed it already). */
json_t *mcp_frame_notification(const json_t *n);

/* The text item of an escaped structured result that has no rendering of
 * its own (owned): the result as indented JSON with every string of
 * process origin replaced by where it went, then one frame holding them,
 * each line behind a prefix naming it ("[stdout seq=4] ", "[mon_x
 * last_line] ", "[event line] "); a line list is followed by a "matched:"
 * line naming the lines a pattern matched. */
char *mcp_frame_render(const json_t *structured);

/* Makes a text item fit for a model, in place: valid UTF-8, and no raw
 * control (but the newline), ANSI, invisible or private use character
 * (textfmt_sanitize, line by line; escaped text stays as it is). */
void mcp_frame_clean(char **text);

#endif
