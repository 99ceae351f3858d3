/*
 * A project: the directory a harness, `vigil mcp`, `vigil hook`, `vigil
 * setup` and a person at a terminal all mean when they work "in a
 * project", and the session every vigil process of that project uses, so
 * that a person sees what the agent runs (the MCP contract, section 1).
 * Every caller goes through these two functions and never works it out
 * itself, so they always agree.
 *
 * The root of a project holding directory D (docs/cli.md, "Where and as
 * whom it connects"): walking up from D's real path, the nearest directory
 * holding a version-control marker (.git, .hg, .jj, .svn); else the nearest
 * holding a harness's or a package manager's marker (.mcp.json, .claude,
 * .codex, .gemini, .opencode, opencode.json, .cursor, package.json,
 * Cargo.toml, go.mod, pyproject.toml); else D itself. So a person in a
 * subdirectory of a repository (src/, or a package of a monorepo) is in the
 * repository's project, where the harness was started. The walk never goes
 * up to the home directory or the root: a home directory kept in git (its
 * dotfiles) or holding ~/.claude and ~/.codex is not everybody's project;
 * a directory outside any project is its own.
 *
 * The session is "mcp-" and 32 hex digits: the first 128 bits of SHA-256
 * of the root's real path (symbolic links resolved, so a link to a project
 * is that project). 128 bits, because a name that another directory can be
 * made to share is a way into that project's monitors: the former 32-bit
 * FNV-1a of the path was made to collide in about a second.
 */
#ifndef VIGIL_CLI_PROJECT_H
#define VIGIL_CLI_PROJECT_H

#include <stdbool.h>
#include <stddef.h>

/* "mcp-" and 32 hex digits, and the NUL: fits the engine's 64-byte bound
 * on a session name. */
#define CLI_PROJECT_SESSION_SIZE 37

/* Writes the real path of the root of the project holding dir (NULL: the
 * working directory) to out (cap bytes; PATH_MAX is always enough).
 * Returns 0, or -1 with errno set when dir's real path cannot be found (it
 * was removed, or a component cannot be read) or does not fit
 * (ENAMETOOLONG). *marked (when not NULL) tells whether a marker chose the
 * root, false when the root is dir itself for want of one. */
int cli_project_root(const char *dir, char *out, size_t cap, bool *marked);

/* Writes the session name of the project holding dir (NULL: the working
 * directory) to out (cap >= CLI_PROJECT_SESSION_SIZE). Returns 0, or -1
 * with errno set as cli_project_root does (or ERANGE for a small cap): no
 * name is made up then, since any stand-in would be shared by every such
 * directory. */
int cli_project_session(const char *dir, char *out, size_t cap);

#endif
