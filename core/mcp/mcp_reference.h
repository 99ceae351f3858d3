/*
 * The short form of a notification in a tool result under `--delivery
 * auto` (docs/mcp.md, "Which delivery mode"): what the next tool result
 * carries for a notification this adapter already pushed as a channel
 * message. A harness that showed
 * the push must not give the model the whole envelope twice; one that
 * dropped it (every harness but Claude Code with channels enabled) must
 * still let the model see what happened. So the reference names the seq,
 * the monitor, the type and where the whole text is (vigil's words), and
 * quotes what says what happened (the incident's first line, and its last
 * when it has more; else the first matched line; else how it ended), framed
 * as an untrusted observation and escaped like every text of process origin.
 */
#ifndef VIGIL_MCP_REFERENCE_H
#define VIGIL_MCP_REFERENCE_H

#include <jansson.h>

/* The most bytes of a process line a reference quotes (cut on a UTF-8
 * boundary, then escaped): enough for a crash's first line, short enough
 * that a result of many references stays small. */
#define MCP_REFERENCE_LINE_MAX 240

/* The text item ({type: "text", text}) referring to the engine's
 * notification n (borrowed), owned by the caller. */
json_t *mcp_reference_item(const json_t *n);

#endif
