/*
 * The tools `vigil mcp` lists and calls (docs/mcp.md, "Profiles"), and the server
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

/* How notifications reach the harness (docs/mcp.md, "Which delivery mode"). */
typedef enum { kMcpChannel = 0, kMcpPiggyback, kMcpPoll } McpDelivery;

/* Profiles, as bits (docs/mcp.md, "Profiles"). */
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
  bool ready;              /* the harness sent notifications/initialized: pushing may begin */
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

#endif
