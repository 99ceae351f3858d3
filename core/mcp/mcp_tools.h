/*
 * The tools `vigil mcp` lists and calls (docs/mcp.md, "Profiles"), and the server
 * state a tool works with. A tool is a row: its name, its profile, a
 * description written for a model, its inputSchema and outputSchema (JSON
 * text, parsed once), its annotations, and either a function that turns
 * checked arguments into a structured result by calling the engine or, for
 * a tool that only passes its arguments on, the engine method it passes
 * them to. Profiles live in files of their own (mcp_vigil.c, ...);
 * mcp_tools.c lists, checks and dispatches.
 */
#ifndef VIGIL_MCP_TOOLS_H
#define VIGIL_MCP_TOOLS_H

#include <jansson.h>
#include <stdbool.h>

#include "mcp/mcp_engine.h"
#include "base/strbuf.h"

/* How notifications reach the harness (docs/mcp.md, "Which delivery mode"). */
/* auto (the default): pushed, and carried by the next tool result from the
 * model cursor; channel: pushed, the push trusted (it moves the cursor);
 * piggyback: tool results only; poll: notifications_read only. */
typedef enum { kMcpAuto = 0, kMcpChannel, kMcpPiggyback, kMcpPoll } McpDelivery;

/* Profiles, as bits (docs/mcp.md, "Profiles"). */
enum {
  kMcpProfileVigil = 1 << 0,
  kMcpProfileWatchProcess = 1 << 1,
  kMcpProfileProcess = 1 << 2,
  kMcpProfileMonitor = 1 << 3,
  kMcpProfileHermes = 1 << 4,
  /* A tool every profile lists (notifications_read, docs/mcp.md). */
  kMcpProfileAll = (1 << 5) - 1,
};

typedef struct {
  McpEngine engine;
  McpDelivery delivery;
  unsigned profiles;
  bool underscore;         /* --tool-names underscore: process.run as process_run */
  _Atomic int log_level;   /* the lowest level notifications/message is sent at */
  char cwd[4096];          /* the adapter's working directory: a start's default cwd */
  bool initialized;        /* initialize was answered: requests other than ping are served */
  _Atomic bool ready;      /* the harness sent notifications/initialized: pushing may begin
                            * (read by the link's thread, mcp_engine.h) */
} McpServer;

/* What a tool produced. */
typedef struct {
  json_t *structured;      /* the structured result (owned), or NULL on error */
  char *error;             /* the error text (owned; "denied: ...") when it failed */
  char *text;              /* the text item (owned), when the tool renders its result itself
                            * (a seed's own text form); NULL: the structured result as JSON */
  bool reads;              /* the call is its profile's own poll for notifications (Hermes'
                            * process(action="poll")): it carries them in every mode */
} McpResult;

typedef void (*McpToolFn)(McpServer *s, json_t *args, McpResult *out);

enum {
  kMcpReadOnly = 1 << 0,
  kMcpDestructive = 1 << 1,
  kMcpIdempotent = 1 << 2,
};

/* A row, written with named fields (`.name = ..., .fn = ...`); a field
 * left out is 0, NULL or false. A tool is either a function (fn) or a
 * pass-through (method): the engine's method called with the checked
 * arguments as they are, its result the tool's. */
typedef struct {
  const char *name;
  unsigned profile;
  const char *description;
  const char *input_schema;   /* JSON text */
  const char *output_schema;  /* JSON text */
  unsigned hints;             /* kMcpReadOnly | ... */
  McpToolFn fn;               /* NULL: a pass-through of method */
  /* A pass-through's engine method, and how it is called: */
  const char *method;
  bool default_cwd;           /* `cwd` defaults to the adapter's directory */
  const char *wait_arg;       /* an argument that says how long the engine may take to
                                 answer, added to the call's timeout (NULL: none) */
  int64_t wait_default;       /* its value when absent */
  bool wait_in_s;             /* it counts seconds (else milliseconds) */
} McpTool;

/* The tools of each profile file, NULL-name terminated. */
extern const McpTool mcp_vigil_tools[];
extern const McpTool mcp_watch_process_tools[];
extern const McpTool mcp_monitor_tools[];
extern const McpTool mcp_process_tools[];
extern const McpTool mcp_hermes_tools[];
extern const McpTool mcp_ignore_tools[]; /* every profile's, in its words */

/* The engine's incident_ignore ("ignore"), incident_unignore ("unignore")
 * or incident_ignored ("list" or "ignored") with args' fingerprint, for and
 * reason (mcp_ignore.c); a seed's ignore tool and Hermes' process action. */
void mcp_ignore_act(McpServer *s, const char *action, json_t *args, McpResult *out);

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

/* Calls the engine's method with args (taken: freed here whatever happens;
 * NULL for none). Returns 0 with *result (owned), or -1 with the engine's
 * error as out's tool error (mcp_result_engine_error) when out is not NULL,
 * and in mcp_engine_error() either way. The one way a tool asks the engine
 * for something it goes on to use. */
int mcp_result_ask(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                   json_t **result, McpResult *out);

/* --- Helpers for the seed profiles (added with watch_process and monitor) ---
 * What every seed's start tool needs the same way (docs/mcp-mapping.md
 * section 0): the engine's limits in force, a seed's free text made fit for
 * a label, a command string started with vigil's rules, and the seeds'
 * four-word status of a monitor. */

/* api_info's `limits` (owned), or NULL when the engine did not answer. */
json_t *mcp_engine_limits(McpServer *s);

/* text with control characters as spaces, cut to at most max bytes at a
 * character boundary: a seed's description made fit for `label` (128) or
 * `description` (1024), which refuse control characters. */
json_t *mcp_seed_text(const char *text, size_t max);

/* monitor_start with args (borrowed; `command` a seed's command string,
 * `cwd` defaulted to the adapter's). The string is tokenized by the engine,
 * never by a shell; when it fails only for a shell operator, it is retried
 * with `shell: true` if the operator allows shell commands, else the error
 * says how to run it. Returns 0 with *result (owned), or -1 with out->error
 * set. */
int mcp_seed_start(McpServer *s, json_t *args, McpResult *out, json_t **result);

/* Adds the engine's `note` of a start result (a downgraded mode, ...) to the
 * adapter's own note, "; "-separated. */
void mcp_seed_note_engine(StrBuf *note, const json_t *result);

/* A monitor state (and exit code) as the seeds' task status: running,
 * completed (exited 0), failed (exited otherwise, or the engine's state
 * failed: the program lost across a restart), killed (every other
 * ending). */
const char *mcp_seed_status(const char *state, const json_t *exit_code);

/* Appends the bytes of a monitor_logs stream value: the engine's bin
 * arrives as a JSON string when it was UTF-8, else as {"base64": ...}
 * (cli_json.h), which is decoded here. */
void mcp_logs_bytes(const json_t *v, StrBuf *out);

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
/* The command (or, with want_cwd, the directory) remembered, as a copy
 * (free it), or NULL. */
char *mcp_tools_recall(const char *monitor_id, bool want_cwd);

/* --- process output in a seed's text --------------------------------------
 * Added with the monitor profile's TaskOutput; BashOutput and the hermes
 * profile use them too. */

/* A monitor's lines (both streams, in the order written, ANSI removed, from
 * the engine's ring) as an array (owned), the last `limit` of them when
 * limit > 0; NULL with the error in s->engine. */
json_t *mcp_tools_lines(McpServer *s, const char *id, int limit);

/* The text of lines [from, to) joined with newlines (owned, never NULL). */
char *mcp_tools_join(const json_t *lines, size_t from, size_t to);

/* --- a monitor's command, as given --------------------------------------- */

/* Whether a word reaches the program unchanged both through vigil's
 * splitter and through /bin/sh, so it needs no quotes. */
bool mcp_tools_plain(const char *word);

/* Appends a word quoted so that vigil's splitter and /bin/sh both read it
 * back as one literal word: as it is when plain, else '...' with each ' as
 * '\''. */
void mcp_tools_quote(StrBuf *b, const char *word);

/* The command monitor id was started with, as given (owned), and its
 * directory in *cwd (owned, or NULL) when cwd is not NULL: what this
 * adapter remembers, else what the engine keeps, monitor_status's `start`
 * (asked with include_start; an engine older than that argument refuses it
 * and sends `start` anyway): its command for a shell start, else its argv
 * quoted back into one line, never its environment. The answer is
 * remembered. NULL when neither says (the caller shows the program). */
char *mcp_tools_command(McpServer *s, const char *id, char **cwd);

/* Claude Code's BashOutput (mcp_bash_output.c), listed by watch_process. */
void mcp_bash_output(McpServer *s, json_t *args, McpResult *out);

#endif
