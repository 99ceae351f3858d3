/*
 * Which config `vigil mcp`'s engine runs (docs/mcp.md, "Which config"; the
 * MCP contract's section 5). The adapter finds the config it would give an engine with
 * the shared lookup (config_lookup.h: --config, $VIGIL_CONFIG, the user's
 * ~/.config/vigil/vigil.lua, the bundled file), says on stderr which and
 * why, and gives it to an engine it starts (--config PATH). When it
 * attaches to an engine that was already running, it asks api_info which
 * config that engine loaded and compares: another real path, no config at
 * all, or the same file changed since the engine read it (another SHA-256)
 * makes a warning, said on stderr at once and added to the first tool
 * result as a text item of its own (once: one harness, one model, one
 * reminder), with
 * the command that fixes it: `kill -HUP PID` for a changed file, a restart
 * with the other --config for another path.
 *
 * The check is made once, when the adapter first connects: a reconnection
 * later finds the engine that restarted in place (same config) or one this
 * adapter started itself (its config). The warning is handed over with an
 * atomic exchange, so two tool results finishing at once never both take
 * it.
 */
#ifndef VIGIL_MCP_CONFIG_H
#define VIGIL_MCP_CONFIG_H

#include <jansson.h>

#include "mcp/mcp_engine.h"

/* Looks up the config (given: --config, or NULL), says on stderr which one
 * and why, and returns the path an engine this adapter starts gets, or
 * NULL when none was found (that engine then denies every start, and the
 * message says what file to write). The path lives until the process
 * ends. */
const char *mcp_config_resolve(const char *given);

/* Once the link is up: asks the engine for its config (api_info) and, when
 * it is not the one mcp_config_resolve found, keeps the warning and writes
 * it to stderr. Does nothing when no config was found, or the engine does
 * not say (an older engine). */
void mcp_config_check(McpEngine *m);

/* Adds the kept warning, if any and only the first time, to a tools/call
 * result as a text item of its own after the result's: the first item
 * keeps its contract (an error's "denied: ..." prefix, a seed tool's own
 * text form), which clients parse. */
void mcp_config_note(json_t *result);

#endif
