/*
 * Which config file a vigil program means when none is named on its
 * command line: the one lookup vigild's starters (`vigil mcp`, `vigil
 * setup`) and the CLI's "no engine" hint share, so that all of them name
 * the same file. In order:
 *
 *   1. the path given (a --config argument), taken as given;
 *   2. $VIGIL_CONFIG when set and non-empty, taken as given;
 *   3. the user's own: $XDG_CONFIG_HOME/vigil/vigil.lua when
 *      XDG_CONFIG_HOME is an absolute path, else ~/.config/vigil/vigil.lua
 *      ($HOME), when it is a regular file;
 *   4. the bundled config of the data directory (datadir.h): vigil.lua in
 *      an install's share/vigil, config/vigil.lua in a source tree, when it
 *      is a regular file.
 *
 * A path taken as given (1., 2.) is not checked: a named file that does
 * not exist is an error its reader reports, naming it, never a silent
 * fall-through to another config. Every path returned is absolute (a
 * relative one is joined to the working directory), so a daemon that
 * changes directory reads the same file.
 *
 * vigild itself does not look: without --config it runs with no config and
 * denies every start (fail closed).
 */
#ifndef VIGIL_CONFIG_LOOKUP_H
#define VIGIL_CONFIG_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>

/* The longest path handled; a longer one counts as not found. */
#define CONFIG_LOOKUP_PATH_MAX 4096

/* Finds the config (see above). given: a path named on the command line, or
 * NULL. Writes the path (at most n bytes) to out and, when why is not NULL,
 * sets *why to a static phrase saying how it was found ("--config",
 * "$VIGIL_CONFIG", "the user's config", "the bundled config"). Returns true
 * when a config was found; false when none was, with out the user's own
 * path (3.), the file to create, and *why "no config found". Reads the
 * environment and stats files; creates nothing. */
bool config_lookup(const char *given, char *out, size_t n, const char **why);

#endif
