/*
 * The tools `vigil mcp` lists and calls (MCP.md section 3), and the server
 * state a tool works with. A tool is a row: its name, its profile, a
 * description written for a model, its inputSchema and outputSchema (JSON
 * text, parsed once), its annotations, and a function that turns checked
 * arguments into a structured result by calling the engine. Profiles live
 * in files of their own (mcp_vigil.c, ...); mcp_tools.c lists, checks and
 * dispatches.
 */
#ifndef VIGIL_MCP_TOOLS_H
#define VIGIL_MCP_TOOLS_H

#include <jansson.h>
#include <stdbool.h>

#include "mcp_engine.h"

/* How notifications reach the harness (MCP.md section 4). */
typedef enum { kMcpChannel = 0, kMcpPiggyback, kMcpPoll } McpDelivery;

/* Profiles, as bits (MCP.md section 3). */
enum {
  kMcpProfileVigil = 1 << 0,
  kMcpProfileWatchProcess = 1 << 1,
  kMcpProfileProcess = 1 << 2,
  kMcpProfileMonitor = 1 << 3,
  kMcpProfileHermes = 1 << 4,
};

typedef struct {
  McpEngine engine;
  McpDelivery delivery;
  unsigned profiles;
  bool underscore;         /* --tool-names underscore: process.run as process_run */
  int log_level;           /* the lowest level notifications/message is sent at */
  char cwd[4096];          /* the adapter's working directory: a start's default cwd */
} McpServer;

/* What a tool produced. */
typedef struct {
  json_t *structured;      /* the structured result (owned), or NULL on error */
  char *error;             /* the error text (owned; "denied: ...") when it failed */
} McpResult;

typedef void (*McpToolFn)(McpServer *s, json_t *args, McpResult *out);

enum {
  kMcpReadOnly = 1 << 0,
  kMcpDestructive = 1 << 1,
  kMcpIdempotent = 1 << 2,
};

typedef struct {
  const char *name;
  unsigned profile;
  const char *description;
  const char *input_schema;   /* JSON text */
  const char *output_schema;  /* JSON text */
  unsigned hints;
  McpToolFn fn;
} McpTool;

/* The tools of each profile file, NULL-name terminated. */
extern const McpTool mcp_vigil_tools[];
extern const McpTool mcp_process_tools[];
extern const McpTool mcp_hermes_tools[];

/* tools/list's `tools` for the server's profiles (owned). */
json_t *mcp_tools_list(const McpServer *s);

/* tools/call: finds name among the listed tools, checks args against its
 * schema and runs it. Returns the CallToolResult (owned), or NULL with
 * *code (-32602) and msg set when the tool is unknown or an argument fails
 * its schema. */
json_t *mcp_tools_call(McpServer *s, const char *name, json_t *args, int *code, char *msg,
                       size_t cap);

/* A failed engine call as a tool error: the engine's message, which starts
 * with the error's name. */
void mcp_result_engine_error(McpServer *s, McpResult *out);

/* A result from an engine call of method with args (borrowed). */
void mcp_result_call(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                     McpResult *out);

/* --- helpers for the seed profiles --------------------------------------
 * Added with the process and hermes profiles (docs/mcp-mapping.md C1, C2,
 * C3, C13, C14); general, so any profile's start tool may use them. */

/* Whether two listed tools have the same name (--tool-names underscore lists
 * the process profile's process.run as process_run, which the vigil profile
 * has too): a harness could reach only one of them, so the server refuses to
 * start. Returns 0, or -1 with msg saying which name and profiles clash. */
int mcp_tools_name_clash(const McpServer *s, char *msg, size_t cap);

/* Starts a command with method (monitor_start or process_run) and args (an
 * object the engine takes; changed in place): `cwd` defaults to the
 * adapter's directory and a relative one is taken from there (C1); `label`
 * defaults to the program's file name, never its arguments (C3). A command
 * string the engine refuses for a shell operator runs again with shell: true
 * when the operator allows shell commands, else the refusal says how to run
 * it (C2). */
void mcp_tools_start(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                     McpResult *out);

/* A setting in force in the engine (api_info's limits), as a new reference,
 * or NULL when it cannot be learned. */
json_t *mcp_tools_engine_limit(McpServer *s, const char *key);

/* Adds a line to a tool error's text. */
void mcp_result_error_append(McpResult *out, const char *line);

/* What the engine never sends back (it keeps raw commands off the wire) but
 * seed results name: the command and directory a monitor was started with,
 * remembered by this adapter for its last MCP_REMEMBER_MAX starts (C13; kept
 * in memory only, so a monitor of an earlier adapter is not here). */
#define MCP_REMEMBER_MAX 256
void mcp_tools_remember(const char *monitor_id, const char *command, const char *cwd);
/* The command (or, with want_cwd, the directory) remembered, or NULL. */
const char *mcp_tools_recall(const char *monitor_id, bool want_cwd);

#endif
