/*
 * The session of a project directory: what `vigil mcp` works in when no
 * --session is given (docs/mcp.md), so that the same project in a restarted
 * harness finds its monitors again, and (the next step, in the MCP
 * contract) what the CLI run in that directory uses, so a person sees what
 * the agent runs. Both call cli_project_session, so they always agree.
 *
 * The name is "mcp-" and 32 hex digits: the first 128 bits of SHA-256 of the
 * directory's real path (symbolic links resolved, so a link to a project
 * is that project). 128 bits, because a name that another directory can be
 * made to share is a way into that project's monitors: the former 32-bit
 * FNV-1a of the path was made to collide in about a second.
 */
#ifndef VIGIL_CLI_PROJECT_H
#define VIGIL_CLI_PROJECT_H

#include <stddef.h>

/* "mcp-" and 32 hex digits, and the NUL: fits the engine's 64-byte bound
 * on a session name. */
#define CLI_PROJECT_SESSION_SIZE 37

/* Writes the session name of the project in dir (NULL: the working
 * directory) to out (cap >= CLI_PROJECT_SESSION_SIZE). Returns 0, or -1
 * with errno set when the directory's real path cannot be found (it was
 * removed, or a component cannot be read): no name is made up then, since
 * any stand-in would be shared by every such directory. */
int cli_project_session(const char *dir, char *out, size_t cap);

#endif
